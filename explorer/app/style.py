"""The app's own stylesheet, injected once with the app (a ``<style>`` in an HTML widget) and
scoped to ``.px-app``: buttons as wide as their labels, toolbars that wrap instead of
truncating, details tables not clipped in an inner scroll, disabled buttons that look
disabled, selected toggle buttons that stand out, side-by-side panels that wrap on narrow
screens, and text colours that meet WCAG AA contrast (4.5:1) where the widgets' defaults do not:
the labels of the unselected tabs and the white text of coloured buttons."""

from __future__ import annotations

import ipywidgets as widgets

from explorer.app.numbers import MAX_ALIGNED_COLUMNS

#: text of an unselected tab label; the widgets' default (black at 54 % on #eeeeee, #6d6d6d)
#: measured 4.45:1 in axe-core, under the 4.5:1 of WCAG AA
TAB_LABEL_TEXT = "#424242"
#: background of the unselected tabs (the widgets' default, ``--jp-layout-color2`` in Voila's
#: light theme) and of a hovered one
TAB_BACKGROUNDS = ("#eeeeee", "#ffffff")
#: background of each coloured button style behind its white label, then when hovered or
#: pressed (darker); the widgets' defaults (e.g. info #0097a7, 3.5:1) are under 4.5:1
BUTTON_BACKGROUNDS: dict[str, tuple[str, str]] = {
    "primary": ("#1565c0", "#0d47a1"),
    "success": ("#2e7d32", "#1b5e20"),
    "info": ("#00707c", "#005f68"),
    "warning": ("#a04a00", "#7a3800"),
    "danger": ("#c62828", "#8e1c1c"),
}
BUTTON_TEXT = "#ffffff"

# --- a11y: focus ring, skip link, disabled buttons, table alignment (WCAG 2.2 AA) ---
#: colour of the focus ring on every focusable element of the app: at least 3:1 against the white
#: page, the tab bar and every coloured button (WCAG 1.4.11 / 2.4.13); the ring is 3 px, 2 px off
#: the element, over a white halo
FOCUS_RING = "#000000"
#: backgrounds the focus ring is drawn beside: the page, the unselected tabs, a selected toggle
#: button and each coloured button style
FOCUS_NEIGHBOURS: tuple[str, ...] = (
    "#ffffff",
    TAB_BACKGROUNDS[0],
    "#1f5fa8",
    *(base for base, _ in BUTTON_BACKGROUNDS.values()),
)
#: a disabled button: grey on light grey (still 4.5:1, as its label must be read), no hover colour
DISABLED_BACKGROUND, DISABLED_TEXT = "#f5f5f5", "#595959"
#: the skip link, the app's first focusable element: Enter moves the focus to the selected tab
SKIP_LINK = (
    "<a class='px-skip' href='#' onclick=\"var t=this.closest('.px-app')"
    ".querySelector('.px-tabs .lm-TabBar-tab.lm-mod-current');if(t){t.focus();}return false;\">"
    "Skip to the tabs</a>"
)


def contrast_ratio(a: str, b: str) -> float:
    """WCAG contrast ratio of two ``#rrggbb`` colours.

    >>> round(contrast_ratio("#6d6d6d", "#eeeeee"), 2), round(contrast_ratio("#ffffff", "#0097a7"), 2)
    (4.46, 3.51)
    >>> min(contrast_ratio(TAB_LABEL_TEXT, bg) for bg in TAB_BACKGROUNDS) >= 4.5
    True
    >>> min(contrast_ratio(BUTTON_TEXT, bg) for pair in BUTTON_BACKGROUNDS.values() for bg in pair) >= 4.5
    True
    """
    from explorer.plots.palette import relative_luminance

    darker, lighter = sorted((relative_luminance(a), relative_luminance(b)))
    return (lighter + 0.05) / (darker + 0.05)


def _contrast_css() -> str:
    rules = [
        f".px-app .px-tabs > .lm-TabBar .lm-TabBar-tab:not(.lm-mod-current) {{ color: {TAB_LABEL_TEXT}; }}"
    ]
    for kind, (base, dark) in BUTTON_BACKGROUNDS.items():
        rules.append(
            f".px-app .jupyter-button.mod-{kind} {{ color: {BUTTON_TEXT}; background-color: {base}; }}"
        )
        rules.append(
            f".px-app .jupyter-button.mod-{kind}:hover:enabled, .px-app .jupyter-button.mod-{kind}:active, "
            f".px-app .jupyter-button.mod-{kind}.mod-active "
            f"{{ color: {BUTTON_TEXT}; background-color: {dark}; }}"
        )
    return "\n".join(rules) + "\n"


def _a11y_css() -> str:
    """/* --- a11y --- */: the focus ring, the skip link, disabled buttons, numbers right-aligned."""
    numeric = ", ".join(
        f".px-app table.px-num-col-{n} > * > tr > :nth-child({n})" for n in range(1, MAX_ALIGNED_COLUMNS + 1)
    )
    return f"""/* --- a11y: focus ring, skip link, disabled buttons, table alignment --- */
.px-app :focus-visible, .px-app .jupyter-button:focus-visible, .px-app .widget-toggle-button:focus-visible,
.px-app select:focus-visible, .px-app input:focus-visible, .px-app textarea:focus-visible,
.px-app .lm-TabBar-tab:focus-visible, .px-app summary:focus-visible, .px-app a:focus-visible {{
  outline: 3px solid {FOCUS_RING} !important; outline-offset: 2px !important;
  box-shadow: 0 0 0 2px #ffffff !important;
}}
.px-app a.px-skip {{
  position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap;
}}
.px-app a.px-skip:focus {{
  position: static; width: auto; height: auto; overflow: visible; clip-path: none;
  display: inline-block; margin: 2px 4px; padding: 2px 8px; background: #ffffff; color: #0b4f9c;
}}
.px-app .jupyter-button:disabled, .px-app .jupyter-button.mod-disabled, .px-app button:disabled {{
  background: {DISABLED_BACKGROUND} !important; color: {DISABLED_TEXT} !important;
  border: 1px solid #c4c4c4 !important; opacity: 1 !important; filter: none !important;
  cursor: not-allowed !important; box-shadow: none !important;
}}
{numeric} {{ text-align: right; font-variant-numeric: tabular-nums; }}
/* --- end a11y --- */
"""


#: The rules; every selector starts with ``.px-app`` so nothing outside the app changes.
CSS = (
    """
.px-app .jupyter-button, .px-app .widget-toggle-button, .px-app .widget-upload {
  width: auto !important; min-width: max-content; max-width: none;
  overflow: visible; text-overflow: clip; white-space: nowrap; padding: 0 10px;
}
.px-app .widget-toggle-buttons .widget-toggle-button { width: auto !important; }
.px-app .widget-hbox { flex-wrap: wrap; row-gap: 4px; align-items: center; }
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
.px-app .px-plot .jp-OutputArea-output { max-height: none; }
.px-app .px-details > .widget-html-content { line-height: normal; white-space: normal; }
.px-app .px-table { border-collapse: collapse; font-size: 90%; }
.px-app .px-table th, .px-app .px-table td { padding: 2px 6px; text-align: left; white-space: nowrap; }
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
.px-app .px-answer > .widget-html-content, .px-app .px-intro > .widget-html-content,
.px-app .px-glossary-box > .widget-html-content { line-height: 1.4; white-space: normal; }
.px-app .px-answer-box {
  border-left: 4px solid #1f5fa8; background: #f3f7fc; padding: 4px 10px; margin: 4px 0;
  font-size: 110%; color: #1a1a1a;
}
.px-app .px-answer-sentence { margin: 2px 0; overflow-wrap: anywhere; }
.px-app .px-intro-text { color: #444; }
.px-app a.px-term { color: #0b4f9c; text-decoration: underline dotted; }
.px-app .px-glossary { border-top: 1px solid #ddd; margin-top: 12px; padding-top: 4px; font-size: 95%; }
.px-app .px-glossary dt { font-weight: 600; margin-top: 6px; }
.px-app .px-glossary dt:target { background: #fff3c4; }
.px-app .px-glossary dd { margin: 0 0 0 1.5em; color: #333; }
.px-app .px-kernels-main {
  display: grid !important; grid-template-columns: minmax(0, 1fr); align-items: start; gap: 8px 12px;
}
.px-app .px-kernels-main:has(.px-cell-details) {
  grid-template-columns: minmax(0, 1fr) minmax(260px, 420px);
}
@media (max-width: 1100px) {
  .px-app .px-kernels-main:has(.px-cell-details) { grid-template-columns: minmax(0, 1fr); }
}
.px-app .px-kernels-main > * { min-width: 0; max-width: 100%; }
.px-app .px-kernels-cell > .widget-html-content { white-space: normal; line-height: 1.35; }
.px-app .px-explain-result { max-width: 100%; }
.px-app .px-explain-facts { width: 100%; }
.px-app .px-explain-facts td, .px-app .px-explain-result p, .px-app .px-explain-result code {
  overflow-wrap: anywhere;
}
.px-app .px-explain-history {
  display: flex; flex-wrap: wrap; gap: 2px; margin-bottom: 2px; font-size: 85%; line-height: 1.25;
}
.px-app .px-explain-chip { padding: 2px 6px; }
.px-app pre, .px-app code, .px-app .px-code {
  font-family: var(--jp-code-font-family, ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace);
}
.px-app .px-code {
  background: #f6f8fa; padding: 8px; white-space: pre-wrap; overflow-wrap: anywhere; font-size: 90%;
}
/* --- kernels: the side panel (cell picker, details) beside the heatmap, below it when narrow --- */
.px-app .px-kernels-main { grid-template-columns: minmax(0, 1fr) minmax(260px, 420px); }
@media (max-width: 1100px) { .px-app .px-kernels-main { grid-template-columns: minmax(0, 1fr); } }
.px-app .px-kernels-side { min-width: 0; max-width: 100%; }
.px-app .px-kernels-side .widget-html-content { white-space: normal; line-height: 1.35; }
.px-app .px-kernels-side pre { white-space: pre-wrap; overflow-wrap: anywhere; }
.px-app .px-cell-picker .widget-dropdown { max-width: 100%; }
.px-app .px-cell-picker select { max-width: 260px; }
.px-app .px-kernels-details > .widget-html-content { white-space: normal; min-width: 0; max-width: 100%; }
.px-app .px-kernels-details table { max-width: 100%; }
.px-app .px-kernels-details .px-table th, .px-app .px-kernels-details .px-table td {
  white-space: normal; text-align: left; overflow-wrap: anywhere;
}
.px-app .px-scroll-handle {
  position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap;
}
.px-app .px-scroll-handle:focus {
  position: static; width: auto; height: auto; clip: auto; outline: 3px solid #0b4f9c; font-size: 85%;
}
/* --- accuracy: tables that fit their panels, inline SVG figures --- */
.px-app .px-fit th { white-space: normal; overflow-wrap: break-word; vertical-align: bottom; }
.px-app .px-fit td { white-space: normal; overflow-wrap: break-word; }
.px-app .px-fit td:first-child, .px-app .px-fit th:first-child { text-align: left; }
.px-app .px-status-word { color: #555; font-size: 90%; }
.px-app .px-more-columns > summary { cursor: pointer; color: #0b4f9c; margin: 4px 0; }
.px-app .px-more-columns .px-table { margin-bottom: 6px; }
.px-app .px-computing > .px-answer, .px-app .px-computing > .px-plot,
.px-app .px-computing > .px-details { display: none !important; }
.px-app svg.px-svg text { font-family: "DejaVu Sans", Verdana, Arial, sans-serif; }
/* --- explain: text wraps in every tab, code a click selects whole, glossary links --- */
.px-app .widget-html-content { white-space: normal; overflow-wrap: break-word; }
.px-app .px-tab-slot p, .px-app .px-tab-slot li, .px-app .px-tab-slot dd,
.px-app .px-tab-slot .px-msg, .px-app .px-controls .widget-html-content {
  white-space: normal; overflow-wrap: anywhere; max-width: 100%;
}
.px-app .px-explain-facts th { white-space: nowrap; }
.px-app pre.px-code { user-select: all; -webkit-user-select: all; cursor: copy; margin: 4px 0; }
.px-app .px-mode-help { font-size: 90%; margin-left: 8px; }
.px-app [style*="background"] a.px-term { color: inherit; }
.px-app .px-explain-toolbar { align-items: stretch; }
.px-app .px-explain-text { width: auto !important; max-width: 100%; box-sizing: border-box; }
"""
    + _contrast_css()
    + _a11y_css()
)


def stylesheet() -> widgets.HTML:
    """The HTML widget that carries :data:`CSS` and the :data:`SKIP_LINK` (add it once, first in
    the ``.px-app`` box: the skip link is then the app's first focusable element)."""
    return widgets.HTML(f"<style>{CSS}</style>{SKIP_LINK}").add_class("px-style")
