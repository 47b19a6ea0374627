"""The app's page in a real browser: driving its controls and reading what a user sees.

For the real-browser tests (tests/test_browser.py, tests/test_stories.py) and the browser
benchmarks; the browser itself (Chromium, its flags, axe-core) is :mod:`tests.support.browser`.

* the app's controls: :data:`TABS`, :func:`open_tab`, :func:`select_op`, :func:`set_dtypes`,
  :func:`choose` / :func:`chosen`, the Kernels heatmap (:data:`HEATMAP_CELL`,
  :func:`heatmap_signature`, :func:`wait_for_heatmap_change`), :func:`wait_for_tab_content`;
* :func:`shoot` / :func:`shoot_story`: screenshots to ``artifacts/screenshots/`` and
  ``artifacts/stories/<story>.png``;
* :func:`read_tables`, :func:`visible_text`, :func:`numbers_in`, :func:`shows_value`: what the
  page shows, as text and numbers;
* :class:`Latency` / :func:`measure`: the time from a user action to a DOM condition, both
  stamped inside the page with ``performance.now()`` (a capturing listener stamps the first
  pointer/key/input/change event after arming; a MutationObserver stamps the first mutation after
  which the condition holds), so Playwright's own round trips are not counted.
* :data:`PAINT_INIT_SCRIPT` / :func:`paint_times`: stamps, from navigation start, when ``.px-app``
  first becomes visible and when the Kernels view first has content.

Nothing here imports explorer, Playwright or pytest.

>>> norm("Max ulp_steps")
'maxulpsteps'
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
STORIES = ROOT / "artifacts" / "stories"
#: the viewports of the issue-28 stories: a laptop, then a small projector
STORY_VIEWPORTS = ({"width": 1400, "height": 1000}, {"width": 1024, "height": 768})
#: a generous bound for a Voila page to load under load (not a measurement)
STORY_LOAD_MS = 120_000
#: Tabs in app order: (key, title).
TABS = [
    ("kernels", "Kernels"),
    ("ranges", "Ranges"),
    ("accuracy", "Accuracy"),
    ("bits", "Bits"),
    ("blocks", "Blocks"),
    ("training", "Training"),
    ("environment", "Environment"),
    ("explain", "Explain"),
]
#: the error this project started from (TensorFlow 2.4.1), pasted into the Explain tab
ORIGINAL_ERROR = (
    "NotFoundError: Could not find device for node: {{node Range}} = Range[Tidx=DT_HALF]\n"
    "All kernels registered for op Range:\n"
    "  device='CPU'; Tidx in [DT_INT64]\n  device='CPU'; Tidx in [DT_INT32]\n"
    "  device='CPU'; Tidx in [DT_DOUBLE]\n  device='CPU'; Tidx in [DT_FLOAT]\n [Op:Range]"
)


# ------------------------------------------------------------------------------ the app's controls

#: a cell of the Kernels heatmap (bqplot GridHeatMap rects)
HEATMAP_CELL = ".px-kernels-plot .px-heatmap-body rect.heatmapcell"

#: in the page: what the Kernels heatmap shows (column and row labels, cell fills, glyphs)
_HEATMAP_SIGNATURE = """() => {
    const h = document.querySelector('.px-kernels-plot .px-heatmap');
    if (h === null) return '';
    const texts = sel => [...h.querySelectorAll(sel)].map(t => t.textContent).join('|');
    const fills = [...h.querySelectorAll('rect.heatmapcell')].map(r => r.style.fill).join(',');
    return [texts('.px-heatmap-header .tick text'), texts('.px-heatmap-body .tick text'), fills,
            texts('.px-heatmap-body text.label, .px-heatmap-body .label text')].join('#');
}"""


def heatmap_signature(page: Any) -> str:
    """What the Kernels heatmap shows, as one string (labels, fills, glyphs)."""
    return str(page.evaluate(_HEATMAP_SIGNATURE))


def wait_for_heatmap_change(page: Any, before: str, timeout_ms: int = 60_000) -> None:
    """Until :func:`heatmap_signature` differs from ``before``."""
    page.wait_for_function(f"before => ({_HEATMAP_SIGNATURE})() !== before", arg=before, timeout=timeout_ms)


def set_dtypes(page: Any, dtypes: list[str]) -> None:
    """Select exactly ``dtypes``: in a multi-select, or by clicking toggle buttons (``.px-dtype-NAME``)."""
    if page.locator(".px-dtypes select").count():
        page.select_option(".px-dtypes select", dtypes)
        return
    for name in dtypes:  # select the wanted ones first: the selection is never empty
        button = page.locator(f".px-dtype-{name}").first
        if "mod-active" not in (button.get_attribute("class") or ""):
            button.click()
    active = page.eval_on_selector_all(
        ".px-dtypes .px-toggle.mod-active",
        "els => els.map(e => [...e.classList].find(c => c.startsWith('px-dtype-')).slice(9))",
    )
    for name in active:
        if name not in dtypes:
            page.locator(f".px-dtype-{name}").first.click()


def select_op(page: Any, op: str) -> None:
    """Pick ``op`` in the op dropdown (its labels read ``name  ·  group``)."""
    value = page.eval_on_selector(
        ".px-op select",
        "(el, op) => [...el.options].find(o => o.textContent.trim().split(/\\s/)[0] === op).value",
        op,
    )
    page.select_option(".px-op select", value=value)


def open_tab(page: Any, title: str) -> None:
    """Click the app's tab titled ``title``."""
    page.locator(".px-tabs .lm-TabBar-tab", has_text=title).first.click()


def wait_for_tab_content(page: Any, key: str, timeout_ms: int) -> None:
    """Until the tab shows a figure, a table, or a message that is not 'loading'."""
    page.wait_for_function(
        """key => {
            const tab = document.querySelector('.px-tab-' + key);
            if (!tab) return false;
            const shown = '.px-plot img, .px-plot svg.px-figure, .px-plot .px-heatmap, .px-details table, '
                + '.px-details .px-msg';
            if (tab.querySelector(shown)) return true;
            const msg = tab.querySelector('.px-status .px-msg');
            return msg !== null && !msg.classList.contains('px-msg-loading');
        }""",
        arg=key,
        timeout=timeout_ms,
    )


def img_src(page: Any, selector: str) -> str:
    """The ``src`` of the image ``selector`` (an inline plot: it changes when the plot does)."""
    return str(page.eval_on_selector(selector, "el => el.getAttribute('src')"))


# ------------------------------------------------------------------------------------------ screenshots


def shoot(page: Any, name: str) -> Path:
    """A full-page screenshot to ``artifacts/screenshots/<name>.png``; returns its path."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


#: height in CSS pixels the whole app needs (Voila scrolls an inner element, so a full-page
#: screenshot alone shows only the viewport): scrolls that element to the top first
_APP_HEIGHT = """() => {
    const app = document.querySelector('.px-app');
    if (!app) return 0;
    for (let el = app.parentElement; el; el = el.parentElement) {
        if (el.scrollHeight > el.clientHeight + 1) el.scrollTop = 0;
    }
    window.scrollTo(0, 0);
    const r = app.getBoundingClientRect();
    return Math.ceil(r.top + window.scrollY + app.scrollHeight + 24);
}"""

#: tallest screenshot taken (CSS pixels)
MAX_SHOT_HEIGHT = 6000


def shoot_story(page: Any, story: str) -> Path:
    """A screenshot of the whole app to ``artifacts/stories/<story>.png``; returns its path.

    The viewport is made as tall as the app for the shot (at most :data:`MAX_SHOT_HEIGHT`)
    and put back afterwards; its width stays."""
    STORIES.mkdir(parents=True, exist_ok=True)
    path = STORIES / f"{story}.png"
    size = page.viewport_size
    height = min(MAX_SHOT_HEIGHT, max(int(page.evaluate(_APP_HEIGHT)), size["height"] if size else 0))
    try:
        if size:
            page.set_viewport_size({"width": size["width"], "height": height})
            page.wait_for_timeout(300)  # let the layout settle at the new height
        page.screenshot(path=str(path), full_page=True)
    finally:
        if size:
            page.set_viewport_size(size)
    return path


# ------------------------------------------------------------------------------------------ reading the page

_TABLES = """(scope) => {
    const root = document.querySelector(scope);
    if (!root) return [];
    const isHeading = el => /^H[1-6]$/.test(el.tagName) || el.tagName === 'SUMMARY'
        || el.tagName === 'CAPTION' || el.tagName === 'LEGEND';
    const headingOf = table => {
        for (let el = table; el && el !== root; el = el.parentElement) {
            for (let s = el.previousElementSibling; s; s = s.previousElementSibling) {
                if (isHeading(s)) return s.textContent.trim();
                const inner = s.querySelectorAll ? s.querySelectorAll('h1,h2,h3,h4,h5,h6,summary') : [];
                if (inner.length) return inner[inner.length - 1].textContent.trim();
            }
        }
        return '';
    };
    const cell = c => {
        const titled = c.title ? c : c.querySelector('[title]');
        return {text: c.innerText.trim(), title: titled ? titled.getAttribute('title') : ''};
    };
    const before = table => {  // texts of the elements above the table, nearest first
        const out = [];
        for (let el = table; el && el !== root && out.length < 40; el = el.parentElement) {
            for (let s = el.previousElementSibling; s && out.length < 40; s = s.previousElementSibling) {
                const text = (s.innerText || '').trim();
                if (text) out.push(text.slice(0, 300));
            }
        }
        return out;
    };
    return [...root.querySelectorAll('table')].map(t => {
        const head = t.tHead && t.tHead.rows.length ? t.tHead.rows[t.tHead.rows.length - 1] : null;
        const body = [...t.tBodies].flatMap(b => [...b.rows]);
        return {
            before: before(t),
            heading: headingOf(t),
            caption: t.caption ? t.caption.textContent.trim() : '',
            visible: t.getClientRects().length > 0,
            headers: head ? [...head.cells].map(c => c.textContent.trim()) : [],
            rows: body.map(r => [...r.cells].map(cell)),
        };
    });
}"""


@dataclass(frozen=True)
class Cell:
    """A table cell as shown: its text, and the tooltip (title) on it or inside it."""

    text: str
    title: str = ""


@dataclass(frozen=True)
class Table:
    """A table on the page, with the heading (h1-h6, summary, caption) nearest above it."""

    heading: str
    caption: str
    visible: bool
    headers: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    #: texts of the elements above the table (its siblings, then its ancestors' siblings), nearest first
    before: tuple[str, ...] = ()

    def records(self) -> list[dict[str, Cell]]:
        """Rows as ``{header: Cell}`` (headers as shown)."""
        return [dict(zip(self.headers, row, strict=False)) for row in self.rows]

    def column(self, *names: str) -> str | None:
        """The first header whose letters and digits match one of ``names`` (same normalisation)."""
        wanted = [norm(n) for n in names]
        for header in self.headers:
            if norm(header) in wanted:
                return header
        return None

    def about(self, names: list[str]) -> str | None:
        """Which of ``names`` the table is about: the first of them that the nearest text above the
        table starting with one of them starts with (a panel's title, ``"float16: max 65504..."``)."""
        for text in self.before:
            for name in sorted(names, key=len, reverse=True):
                if re.match(rf"{re.escape(name)}\b", text):
                    return name
        return None

    def label(self) -> str:
        """Heading and caption, for matching a table to what it is about."""
        return f"{self.heading} {self.caption}".strip()


def norm(text: str) -> str:
    """Lower-case letters and digits only: ``"Max ulp_steps"`` -> ``"maxulpsteps"``."""
    return re.sub(r"[^0-9a-z]", "", text.lower())


def read_tables(page: Any, scope: str, visible_only: bool = True) -> list[Table]:
    """The tables under ``scope`` (a CSS selector), visible ones only by default (a table in a
    closed <details> is not visible)."""
    raw = page.evaluate(_TABLES, scope)
    tables = [
        Table(
            t["heading"],
            t["caption"],
            bool(t["visible"]),
            tuple(t["headers"]),
            tuple(tuple(Cell(c["text"], c["title"] or "") for c in row) for row in t["rows"]),
            tuple(t["before"]),
        )
        for t in raw
    ]
    return [t for t in tables if t.visible or not visible_only]


_VISIBLE_TEXT = """([scope, exclude]) => {
    const root = document.querySelector(scope);
    if (!root) return '';
    const parts = [];
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const el = node.parentElement;
        if (!el || (exclude && el.closest(exclude)) || el.closest('style,script')) continue;
        if (el.getClientRects().length === 0) continue;
        const text = node.textContent.trim();
        if (text) parts.push(text);
    }
    return parts.join(' ');
}"""


def chunks_about(text: str, names: list[str]) -> dict[str, list[str]]:
    """``text`` cut where one of ``names`` starts a word: the pieces that start with each name
    (``"float16: max 65504 · ... bfloat16: max 3.39e+38"`` -> one piece per format)."""
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    out: dict[str, list[str]] = {n: [] for n in names}
    starts = [(m.start(), m.group(0)) for m in re.finditer(rf"(?<![\w-])(?:{alternatives})\b", text)]
    for k, (start, name) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(text)
        out[name].append(text[start:end])
    return out


def visible_text(page: Any, scope: str, exclude: str = "") -> str:
    """The text a user can see under ``scope`` (rendered elements only), leaving out what is
    inside elements matching ``exclude`` (a CSS selector, e.g. ``"table"``)."""
    return str(page.evaluate(_VISIBLE_TEXT, [scope, exclude]))


_OPTIONS = """(scope) => {
    const root = document.querySelector(scope);
    if (!root) return null;
    const select = root.querySelector('select');
    if (select) {
        return {kind: 'select', options: [...select.options].map(o => [o.textContent.trim(), o.selected])};
    }
    const boxes = [...root.querySelectorAll('input[type=checkbox]')];
    if (boxes.length) return {kind: 'checkbox', options: boxes.map(b => {
        const label = b.closest('label') || b.parentElement;
        return [label ? label.textContent.trim() : '', b.checked];
    })};
    const buttons = [...root.querySelectorAll('button')];
    return {kind: 'button', options: buttons.map(b => [b.textContent.trim(),
        b.classList.contains('mod-active') || b.getAttribute('aria-pressed') === 'true']) };
}"""


def chosen(page: Any, scope: str) -> list[str]:
    """The options chosen in the multi-choice widget under ``scope`` (a select, checkboxes or
    toggle buttons)."""
    got = page.evaluate(_OPTIONS, scope)
    if got is None:
        raise AssertionError(f"no widget {scope} on the page")
    return [text for text, on in got["options"] if on]


def choose(page: Any, scope: str, names: list[str]) -> None:
    """Choose exactly ``names`` in the multi-choice widget under ``scope``, as a user would: a
    <select multiple> gets them selected; checkboxes or toggle buttons are clicked (the wanted ones
    first, then the others off, so the choice is never empty on the way)."""
    got = page.evaluate(_OPTIONS, scope)
    if got is None:
        raise AssertionError(f"no widget {scope} on the page")
    texts = [text for text, _ in got["options"]]
    missing = [n for n in names if n not in texts]
    if missing:
        raise AssertionError(f"{scope} offers no {missing}; it offers {texts}")
    if got["kind"] == "select":
        page.select_option(f"{scope} select", label=names)
        return
    target = "input[type=checkbox]" if got["kind"] == "checkbox" else "button"
    items = page.locator(f"{scope} {target}")
    for wanted in (True, False):
        state = {text: on for text, on in page.evaluate(_OPTIONS, scope)["options"]}
        for i, text in enumerate(texts):
            if (text in names) == wanted and state[text] != wanted:
                items.nth(i).click()
                page.wait_for_timeout(150)


# ------------------------------------------------------------------------------------------ numbers

_NUMBER = re.compile(
    r"(?<![\w.])([-+\u2212]?)(\d[\d,\u202f\u2009]*(?:\.\d+)?)(?:\s*(?:[eE]([-+\u2212]?\d+)|"
    r"[\u00d7x]\s*10\s*\^?\s*([-+\u2212]?\d+)))?"
)


def numbers_in(text: str) -> list[tuple[float, float]]:
    """Every number written in ``text`` with the half-width of its last shown digit:
    ``"65,520"`` -> ``(65520.0, 0.5)``; ``"1.5e-3"`` -> ``(0.0015, 5e-05)``;
    ``"3.4 × 10^38"`` -> ``(3.4e38, 5e36)``."""
    found = []
    for m in _NUMBER.finditer(text):
        sign, digits, e1, e2 = m.groups()
        digits = re.sub(r"[,\u202f\u2009]", "", digits)
        exponent = int((e1 or e2 or "0").replace("\u2212", "-"))
        decimals = len(digits.split(".")[1]) if "." in digits else 0
        value = float(digits) * 10.0**exponent
        if sign in ("-", "\u2212"):
            value = -value
        found.append((value, 0.5 * 10.0 ** (exponent - decimals)))
    return found


def shows_value(texts: list[str], expected: float) -> bool:
    """True when one of ``texts`` writes ``expected`` to the precision it is written with (a
    number within half its last digit: ``"11.09"`` shows 11.09375; ``"11.1"`` does too;
    ``"11.2"`` does not), or writes it exactly."""
    for text in texts:
        for value, half in numbers_in(text):
            if value == expected or abs(value - expected) <= half * (1 + 1e-9):
                return True
    return False


# ------------------------------------------------------------------------------------------ waiting

T = TypeVar("T")


def poll(page: Any, probe: Callable[[], T | None], timeout_s: float, what: str) -> T:
    """Call ``probe`` every 0.3 s until it returns something truthy; returns it.  After
    ``timeout_s`` (a generous bound, not a measurement) raise AssertionError with ``what`` and
    the last value ``probe`` returned (or the AssertionError it raised last)."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while True:
        try:
            last = probe()
        except AssertionError as exc:
            last = exc
            if time.monotonic() > deadline:
                raise
        else:
            if last:
                return last
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not seen after {timeout_s:.0f} s (last: {last!r})")
        page.wait_for_timeout(300)


# ------------------------------------------------------------------------------------------ latency

_ARM = """([conditionSource, arg]) => {
    const condition = eval('(' + conditionSource + ')');
    const m = {t0: null, t1: null, error: null, events: []};
    const kinds = ['pointerdown', 'mousedown', 'keydown', 'input', 'change', 'click'];
    const stamp = ev => { if (m.t0 === null) { m.t0 = performance.now(); } m.events.push(ev.type); };
    const check = () => {
        if (m.t0 === null || m.t1 !== null) return;
        try { if (condition(arg)) m.t1 = performance.now(); } catch (e) { m.error = String(e); }
    };
    const observer = new MutationObserver(check);
    observer.observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true});
    kinds.forEach(k => document.addEventListener(k, stamp, true));
    m.check = check;
    m.stop = () => {
        observer.disconnect();
        kinds.forEach(k => document.removeEventListener(k, stamp, true));
    };
    window.__pxMeasure = m;
}"""

_DONE = "() => { const m = window.__pxMeasure; m.check(); return m.t1 !== null; }"


@dataclass(frozen=True)
class Latency:
    """One measured interaction: milliseconds from the first input event to the condition."""

    ms: float
    events: tuple[str, ...]


def measure(
    page: Any, action: Callable[[], None], condition: str, arg: Any = None, timeout_ms: float = 120_000
) -> Latency:
    """Arm the in-page stamps, run ``action`` (Playwright calls that click, select or type), and
    wait until ``condition`` (a JS function source, called with ``arg``) holds after the action.

    The start is the first pointerdown/mousedown/keydown/input/change/click event the page sees
    after arming; the end is the first DOM mutation after which ``condition(arg)`` is true (checked
    again when polled, for changes no mutation announces)."""
    page.evaluate(_ARM, [condition, arg])
    try:
        action()
        page.wait_for_function(_DONE, timeout=timeout_ms, polling=50)
        got = page.evaluate("() => { const m = window.__pxMeasure; return [m.t0, m.t1, m.events, m.error]; }")
    finally:
        page.evaluate("() => window.__pxMeasure && window.__pxMeasure.stop()")
    t0, t1, events, error = got
    if error:
        raise RuntimeError(f"the condition raised in the page: {error}")
    return Latency(float(t1) - float(t0), tuple(dict.fromkeys(events)))


# ------------------------------------------------------------------------------------------ first paint

#: the Kernels view has content: a figure (img, svg or canvas) with an area, or a details table
KERNELS_VIEW_READY = """() => {
    const tab = document.querySelector('.px-tab-kernels');
    if (!tab) return false;
    const shown = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
    const figure = [...tab.querySelectorAll(
        '.px-kernels-plot img, .px-kernels-plot svg, .px-kernels-plot canvas')];
    return figure.some(shown) || [...tab.querySelectorAll('.px-kernels-details table')].some(shown);
}"""

#: the app's element is visible
APP_VISIBLE = """() => {
    const app = document.querySelector('.px-app');
    if (!app) return false;
    const r = app.getBoundingClientRect();
    return r.width > 0 && r.height > 0;
}"""

#: the app's static preview (explorer.App.preview_html) shows its table
PREVIEW_VISIBLE = """() => [...document.querySelectorAll('.px-preview table')].some(el => {
    const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; })"""

#: stamps window.__pxPaint.preview, .app and .view (ms since navigation start) on the first
#: mutation after which each holds; runs before the page's own scripts (page.add_init_script)
PAINT_INIT_SCRIPT = (
    "(() => { const preview = "
    + PREVIEW_VISIBLE
    + "; const app = "
    + APP_VISIBLE
    + "; const view = "
    + KERNELS_VIEW_READY
    + """;
    const p = {preview: null, app: null, view: null};
    window.__pxPaint = p;
    const check = () => {
        if (p.preview === null && p.app === null && preview()) p.preview = performance.now();
        if (p.app === null && app()) p.app = performance.now();
        if (p.view === null && view()) p.view = performance.now();
        if (p.app !== null && p.view !== null) observer.disconnect();
    };
    const observer = new MutationObserver(check);
    const start = () => observer.observe(document, {subtree: true, childList: true, attributes: true});
    start();
    window.__pxPaintCheck = check;
})();"""
)


def paint_times(page: Any, timeout_ms: float = 120_000) -> dict[str, float]:
    """After ``page.goto(..., wait_until="commit")`` on a page with :data:`PAINT_INIT_SCRIPT`:
    milliseconds from navigation start until the app's static preview shows its table (None
    when it never showed before the app), until the app is visible and until the Kernels view
    has content."""
    page.wait_for_function(
        "() => { window.__pxPaintCheck && window.__pxPaintCheck(); const p = window.__pxPaint;"
        " return p && p.app !== null && p.view !== null; }",
        timeout=timeout_ms,
        polling=50,
    )
    got = page.evaluate("() => window.__pxPaint")
    preview = got["preview"]
    return {
        "preview_ms": None if preview is None else float(preview),
        "app_visible_ms": float(got["app"]),
        "kernels_view_ms": float(got["view"]),
    }


def as_json(value: Any) -> str:
    """``json.dumps`` with indentation (for printing results)."""
    return json.dumps(value, indent=2, sort_keys=True, default=str)
