"""What marks and styles the app's first view, and the template the Voila server includes it in.

A leaf: no widgets and no app at import, so the app (:mod:`explorer.app.main`), the script
that writes the server's copy (:mod:`explorer.app.preview`) and ``precision-explorer app``
all read it without importing each other.
"""

from __future__ import annotations

import re

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


__all__ = [
    "FIRST_VIEW_CLASS",
    "MAX_FIRST_VIEW_BYTES",
    "PREVIEW_CSS",
    "PREVIEW_METADATA",
    "first_view_template",
]
