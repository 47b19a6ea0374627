"""The file the Voila server includes at the top of every page: the app's first view as static
HTML (:meth:`explorer.App.preview_html`).

What marks and styles the first view lives in :mod:`explorer.app.first_view`; no widgets at
import.  ``python -m explorer.app.preview FILE`` (which ``precision-explorer
app`` starts beside Voila) builds the default app once, without TensorFlow, and writes its first
view to ``FILE`` for the template to include (:func:`write_first_view`).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from explorer.app.first_view import (
    first_view_template,
)


def write_first_view(path: Path) -> None:
    """Build the default app (TensorFlow not loaded) and write its first view to ``path`` as a
    template (:func:`first_view_template`), whole or not at all: a temporary file beside it,
    renamed over it once written."""
    from explorer.app.main import App

    text = first_view_template(App(load_tensorflow=False).preview_html())
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=".first-view-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv: list[str]) -> int:
    """``python -m explorer.app.preview FILE``; a failure is one line on stderr and status 1
    (the server then serves its pages without this copy of the first view)."""
    if len(argv) != 1:
        print("usage: python -m explorer.app.preview FILE", file=sys.stderr)
        return 2
    try:
        write_first_view(Path(argv[0]))
    except Exception as exc:  # the app still works: its pages get the notebook's own first view
        print(
            f"precision-explorer: the server's copy of the first view was not written "
            f"({type(exc).__name__}: {exc}); pages show the first view once the notebook has run",
            file=sys.stderr,
        )
        return 1
    return 0


__all__ = ["main", "write_first_view"]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
