"""The app's first view as static HTML (:meth:`explorer.App.preview_html`): what marks and
styles it, and the file the Voila server includes at the top of every page.

No widgets at import: ``precision-explorer app`` reads :data:`PREVIEW_METADATA` for its Voila
template.  ``python -m explorer.app.preview FILE`` (which ``precision-explorer app`` starts
beside Voila) builds the default app once, without TensorFlow, and writes its first view to
``FILE`` for the template to include (:func:`write_first_view`).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

#: metadata key of the display that carries the app's preview
PREVIEW_METADATA = "precision-explorer/preview"
#: the class of the server's copy of the first view (the one before the notebook's cells)
FIRST_VIEW_CLASS = "px-first-view"
#: the preview's own rules: hidden once the app is drawn; tables as the app draws them
PREVIEW_CSS = (
    "body:has(.px-app) .px-preview{display:none}"
    ".px-preview{font-family:var(--jp-ui-font-family,sans-serif);font-size:13px;margin:4px}"
    ".px-preview table{border-collapse:collapse}"
    ".px-preview th,.px-preview td{border:1px solid #ccc;padding:2px 6px;text-align:left}"
)
#: most bytes of a first-view file the template includes
MAX_FIRST_VIEW_BYTES = 1 << 20
#: what would end the template's ``{% raw %}`` block around the first view early
_ENDS_RAW = re.compile(r"\{%[-+]?\s*endraw")


def first_view_template(preview: str) -> str:
    """``preview`` as a Jinja template that renders it verbatim (inside a ``{% raw %}`` block),
    wrapped in a div of class :data:`FIRST_VIEW_CLASS`.

    ValueError when the HTML is over :data:`MAX_FIRST_VIEW_BYTES` or holds a ``{% endraw``
    that would let the rest run as template code.

    >>> first_view_template("<p>{{ 7 * 7 }}</p>")
    "{% raw %}<div class='px-first-view'><p>{{ 7 * 7 }}</p></div>{% endraw %}"
    """
    if len(preview.encode("utf-8")) > MAX_FIRST_VIEW_BYTES:
        raise ValueError(f"the first view is over {MAX_FIRST_VIEW_BYTES} bytes")
    if _ENDS_RAW.search(preview):
        raise ValueError("the first view holds '{% endraw', which would end its raw block")
    return f"{{% raw %}}<div class='{FIRST_VIEW_CLASS}'>{preview}</div>{{% endraw %}}"


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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
