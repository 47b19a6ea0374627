"""What marks and styles the app's first view as static HTML (:meth:`explorer.App.preview_html`).

No widgets here: ``precision-explorer app`` reads :data:`PREVIEW_METADATA` for its Voila template.
"""

from __future__ import annotations

#: metadata key of the display that carries the app's preview
PREVIEW_METADATA = "precision-explorer/preview"
#: the preview's own rules: hidden once the app is drawn; tables as the app draws them
PREVIEW_CSS = (
    "body:has(.px-app) .px-preview{display:none}"
    ".px-preview{font-family:var(--jp-ui-font-family,sans-serif);font-size:13px;margin:4px}"
    ".px-preview table{border-collapse:collapse}"
    ".px-preview th,.px-preview td{border:1px solid #ccc;padding:2px 6px;text-align:left}"
)
