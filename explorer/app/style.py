"""The app's own stylesheet, injected once with the app (a ``<style>`` in an HTML widget) and
scoped to ``.px-app``: buttons as wide as their labels, toolbars that wrap instead of
truncating, details tables not clipped in an inner scroll, disabled buttons that look
disabled, selected toggle buttons that stand out, side-by-side panels that wrap on narrow
screens."""

from __future__ import annotations

import ipywidgets as widgets

#: The rules; every selector starts with ``.px-app`` so nothing outside the app changes.
CSS = """
.px-app .jupyter-button, .px-app .widget-toggle-button, .px-app .widget-upload {
  width: auto !important; min-width: max-content; max-width: none;
  overflow: visible; text-overflow: clip; white-space: nowrap; padding: 0 10px;
}
.px-app .widget-toggle-buttons .widget-toggle-button { width: auto !important; }
.px-app .widget-hbox { flex-wrap: wrap; row-gap: 4px; align-items: center; }
.px-app .jupyter-button:disabled, .px-app .jupyter-button.mod-disabled,
.px-app button:disabled {
  opacity: 0.4 !important; cursor: not-allowed !important; box-shadow: none !important;
  filter: grayscale(60%);
}
.px-app .px-toggle { margin: 1px 2px; }
.px-app .px-toggle.mod-active {
  background: #1f5fa8 !important; color: #fff !important; font-weight: 600;
  box-shadow: inset 0 0 0 1px #123d6e;
}
.px-app .px-toggle-row { margin-left: 8px; }
.px-app .px-toggle-label { display: inline-block; min-width: 72px; color: #555; font-size: 90%; }
.px-app .px-toggle-title { display: inline-block; margin-top: 4px; }
.px-app .px-details div[style*="max-height"] { max-height: none !important; }
.px-app .px-details, .px-app .px-plot { overflow-x: auto; }
.px-app .px-details .jp-OutputArea-output, .px-app .px-plot .jp-OutputArea-output { max-height: none; }
.px-app .px-table { border-collapse: collapse; font-size: 90%; }
.px-app .px-table th, .px-app .px-table td { padding: 2px 6px; text-align: right; white-space: nowrap; }
.px-app .px-table span[title] { text-decoration: underline dotted #999; cursor: help; }
.px-app .px-download { white-space: nowrap; display: inline-block; margin-right: 12px; }
.px-app .px-export-link, .px-app .px-snapshot-link { flex: 1 1 auto; min-width: 0; }
.px-app .px-panels {
  display: grid; grid-template-columns: repeat(auto-fit, minmax(440px, 1fr)); gap: 12px;
}
.px-app .px-panel {
  border: 1px solid #ddd; border-radius: 4px; padding: 6px; min-width: 0; overflow-x: auto;
}
.px-app .px-format-facts { margin: 2px 0 6px; }
.px-app .px-fact[title] { text-decoration: underline dotted #999; cursor: help; }
"""


def stylesheet() -> widgets.HTML:
    """The HTML widget that carries :data:`CSS` (add it once, inside the ``.px-app`` box)."""
    return widgets.HTML(f"<style>{CSS}</style>").add_class("px-style")
