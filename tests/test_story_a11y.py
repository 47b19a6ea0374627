"""Issue 28, items 10 and 12 in a real browser (Voila + Debian's Chromium, 1400x1000 and 1024x768):
a keyboard user and a reader of the tables and of the Training output.

One page for the whole module (one kernel), in this order:

1. from page load, at most 3 Tab presses reach the skip link, whose Enter puts the focus on the
   selected tab; each focused element's outline (computed style) is at least 2 px wide and its
   colour has 3:1 against the page and every coloured button on the page (WCAG formula, here);
   the arrow keys and Enter switch tabs;
2. the Training tab's disabled Cancel is grey (computed colours) with a not-allowed cursor, and a
   one-policy, one-epoch run (the smallest the tab allows; the emulated fp8 policy, which loads
   no TensorFlow) starts;
3. every tab: in every table, the cells of a column of numbers are right-aligned and those of a
   column of words left-aligned (computed style; columns read here from the shown texts), and
   axe-core finds no serious or critical violation;
4. the run's results table shows no raw float (more than 6 significant digits) and no "None";
5. at 1024x768 the keyboard path and the alignment hold too.

Screenshots: artifacts/stories/a11y-*.png.  The legend and curves of the training figure are
checked headless on the drawn figure (tests/test_a11y.py).
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from tests.support import page as bs
from tests.support.browser import BLOCKING_IMPACTS, axe_source, run_axe
from tests.support.page import TABS, open_tab

pytestmark = [pytest.mark.browser, pytest.mark.slow]

VIEWPORTS = bs.STORY_VIEWPORTS
#: generous bounds for a Voila page, a view and a short training run under load (not measurements)
LOAD_MS = 120_000
TRAIN_S = 240.0
MAX_TABS_TO_THE_TAB_BAR = 3


@pytest.fixture(scope="module")
def page(app_page: Any) -> Any:
    """The module's one visitor page (tests/conftest.py)."""
    return app_page


# ------------------------------------------------------------------------------------------ colours


def _rgb(css: str) -> tuple[float, float, float]:
    values = [float(v) for v in re.findall(r"[\d.]+", css)[:3]]
    assert len(values) == 3, css
    return values[0], values[1], values[2]


def luminance(css: str) -> float:
    """WCAG 2 relative luminance of a computed ``rgb(r, g, b)``."""
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (v / 255 for v in _rgb(css))]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    la, lb = sorted((luminance(a), luminance(b)))
    return (lb + 0.05) / (la + 0.05)


# ------------------------------------------------------------------------------------------ keyboard

_FOCUSED = """() => {
    const e = document.activeElement;
    if (!e || e === document.body) return null;
    const s = getComputedStyle(e);
    return {tag: e.tagName, cls: String(e.className), text: (e.innerText || '').trim().slice(0, 40),
            inTabBar: !!e.closest('.px-tabs .lm-TabBar'), skip: e.classList.contains('px-skip'),
            width: parseFloat(s.outlineWidth), style: s.outlineStyle, colour: s.outlineColor};
}"""

#: computed backgrounds of the coloured buttons shown (the ring is drawn beside them)
_BUTTON_COLOURS = """() => [...document.querySelectorAll('.px-app .jupyter-button')]
    .filter(b => !b.disabled && b.getClientRects().length
        && /mod-(primary|success|info|warning|danger|active)/.test(b.className))
    .map(b => getComputedStyle(b).backgroundColor)"""


def assert_ring_reads(page: Any, focused: dict[str, Any]) -> None:
    assert focused["style"] != "none" and focused["width"] >= 2, f"no visible focus ring: {focused}"
    page_bg = "rgb(255, 255, 255)"
    neighbours = [page_bg, *set(page.evaluate(_BUTTON_COLOURS))]
    low = {
        n: round(contrast(focused["colour"], n), 2) for n in neighbours if contrast(focused["colour"], n) < 3
    }
    assert not low, f"the focus ring {focused['colour']} has under 3:1 against {low} ({focused})"


def reach_the_tab_bar(page: Any, viewport: str) -> dict[str, Any]:
    """From the top of the page: Tab until the skip link (at most 3 presses), Enter; returns the
    focused element (the selected tab), every focused element's ring checked on the way."""
    seen = []
    for _ in range(MAX_TABS_TO_THE_TAB_BAR):
        page.keyboard.press("Tab")
        focused = page.evaluate(_FOCUSED)
        seen.append(focused)
        if focused and (focused["skip"] or focused["inTabBar"]):
            break
    focused = seen[-1]
    assert focused and (focused["skip"] or focused["inTabBar"]), (
        f"{viewport}: {MAX_TABS_TO_THE_TAB_BAR} Tab presses from the top reach neither a skip link nor "
        f"the tab bar: {seen}"
    )
    assert_ring_reads(page, focused)
    if focused["skip"]:
        if viewport == "1400":
            bs.shoot_story(page, "a11y-skip-link-1400")
        page.keyboard.press("Enter")
        focused = page.evaluate(_FOCUSED)
        assert focused and focused["inTabBar"], (
            f"{viewport}: Enter on the skip link leaves the focus on {focused}"
        )
        assert_ring_reads(page, focused)
    return focused


def to_the_top(page: Any) -> None:
    """Put the sequential focus starting point at the top of the page (a click on its corner)."""
    page.evaluate(
        "() => { if (document.activeElement) document.activeElement.blur(); window.scrollTo(0, 0); }"
    )
    page.mouse.click(2, 2)


def test_keyboard_reaches_the_tabs_at_once_with_a_visible_ring(page: Any) -> None:
    open_tab(page, "Kernels")  # the page as loaded, whatever an earlier test left selected
    to_the_top(page)
    focused = reach_the_tab_bar(page, "1400")
    assert focused["text"] == "Kernels"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    page.wait_for_selector(".px-tab-ranges", state="visible", timeout=LOAD_MS)
    focused = page.evaluate(_FOCUSED)
    assert focused and focused["inTabBar"] and focused["text"] == "Ranges", focused
    assert_ring_reads(page, focused)


# ------------------------------------------------------------------------------------------ tables

#: per visible table under a tab: per column, the shown texts and computed alignments of its cells
_COLUMNS = """(scope) => {
    const root = document.querySelector(scope);
    if (!root) return [];
    return [...root.querySelectorAll('table')].filter(t => t.getClientRects().length).map(t => {
        const columns = [];
        for (const body of t.tBodies) for (const row of body.rows) [...row.cells].forEach((c, i) => {
            if (c.tagName !== 'TD' || c.colSpan > 1) return;
            (columns[i] = columns[i] || []).push([c.innerText.trim(), getComputedStyle(c).textAlign]);
        });
        return {cls: String(t.className), columns: columns.filter(Boolean)};
    });
}"""

_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d+)?\s*[%×]?")
_SPECIAL = {"nan", "inf", "-inf", "+inf"}


def is_number(text: str) -> bool:
    """A cell's text is a number (read here: digits, sign, point, exponent, separators, % or ×)."""
    text = text.replace("\u2212", "-").strip()
    return text.lower() in _SPECIAL or (bool(re.search(r"\d", text)) and _NUMBER.fullmatch(text) is not None)


def misaligned(page: Any, key: str, checked: dict[str, int] | None = None) -> list[str]:
    """Cells of the tab's tables on the wrong side: a column whose every cell with a value is a
    number is right-aligned, one whose every such cell holds a word (and is not a number) left.
    ``checked`` counts the columns of numbers and of words seen."""
    bad = []
    checked = {} if checked is None else checked
    for table in page.evaluate(_COLUMNS, f".px-tab-{key}"):
        for i, cells in enumerate(table["columns"], start=1):
            given = [(t, a) for t, a in cells if t not in ("", "—")]
            if not given:
                continue
            if all(is_number(t) for t, _ in given):
                want = ("right", "end")
            elif all(re.search(r"[A-Za-z]", t) and not is_number(t) for t, _ in given):
                want = ("left", "start")
            else:
                continue  # mixed: neither rule applies
            kind = "numbers" if want[0] == "right" else "words"
            checked[kind] = checked.get(kind, 0) + 1
            wrong = [(t, a) for t, a in given if a not in want]
            if wrong:
                bad.append(f"{key} table '{table['cls']}' column {i}: want {want[0]}, got {wrong[:3]}")
    return bad


def start_short_run(page: Any) -> None:
    """Start the smallest run the Training tab allows (the emulated fp8 policy, which loads no
    TensorFlow, one epoch) and wait until it is running."""
    open_tab(page, "Training")
    page.wait_for_selector(".px-policies", timeout=LOAD_MS)
    bs.choose(page, ".px-policies", ["fp8_emulated"])
    page.fill(".px-epochs input", "1")
    page.press(".px-epochs input", "Enter")
    page.click(".px-train")
    bs.poll(
        page, lambda: not page.is_disabled(".px-tab-training .px-cancel"), 60, "Cancel enabled while training"
    )


def wait_for_the_run(page: Any) -> None:
    """Wait until the Training tab's run has ended and its results table is shown."""
    bs.poll(page, lambda: page.is_enabled(".px-train"), TRAIN_S, "the short training run ends")
    page.wait_for_selector(".px-tab-training .px-details table", timeout=LOAD_MS)


def test_disabled_cancel_looks_disabled_and_a_short_run_starts(page: Any) -> None:
    open_tab(page, "Training")
    page.wait_for_selector(".px-policies", timeout=LOAD_MS)
    cancel = page.locator(".px-tab-training .px-cancel").first
    assert cancel.is_disabled()
    look = cancel.evaluate(
        "b => { const s = getComputedStyle(b); return [s.backgroundColor, s.color, s.cursor, s.opacity]; }"
    )
    background, colour, cursor, opacity = look
    assert _rgb(background) == (245, 245, 245) and _rgb(colour) == (89, 89, 89), look
    assert cursor == "not-allowed" and float(opacity) == 1.0, look
    assert contrast(colour, background) >= 4.5
    start_short_run(page)


def test_every_tab_aligns_its_tables_and_passes_axe(page: Any) -> None:
    """Training last: its short run goes on meanwhile."""
    source = axe_source()
    bad: list[str] = []
    serious: dict[str, list[str]] = {}
    checked: dict[str, int] = {}
    order = [t for t in TABS if t[0] != "training"] + [t for t in TABS if t[0] == "training"]
    for key, title in order:
        start = time.monotonic()
        open_tab(page, title)
        page.wait_for_selector(f".px-tab-{key}", state="visible", timeout=LOAD_MS)
        if key == "training":
            wait_for_the_run(page)
        else:
            bs.wait_for_tab_content(page, key, LOAD_MS)
        bad += misaligned(page, key, checked)
        # the whole app once (controls, tab bar, glossary), then each tab's own panel
        found = run_axe(page, source, ".px-app" if key == order[0][0] else f".px-tab-{key}")
        serious[key] = [f"{v.impact} {v.id} ({v.nodes})" for v in found if v.impact in BLOCKING_IMPACTS]
        print(f"{key}: {time.monotonic() - start:.1f} s, {len(found)} axe violations")
    bs.shoot_story(page, "a11y-training-1400")
    assert not bad, "\n".join(bad)
    print(f"columns checked: {checked}")
    assert checked.get("numbers", 0) >= 10 and checked.get("words", 0) >= 10, checked  # not vacuous
    assert not {k: v for k, v in serious.items() if v}, serious


def test_training_results_read_as_numbers_and_words(page: Any) -> None:
    """Runs on its own: when no earlier test of the module left a run behind (the order is free,
    an earlier one may have skipped), it starts the short run itself."""
    open_tab(page, "Training")
    page.wait_for_selector(".px-policies", timeout=LOAD_MS)
    if not page.locator(".px-tab-training .px-details table").count() and page.is_enabled(".px-train"):
        start_short_run(page)
    wait_for_the_run(page)
    tables = bs.read_tables(page, ".px-tab-training .px-details")
    results = [t for t in tables if t.column("loss")]
    assert results, f"no results table: {[t.headers for t in tables]}"
    texts = [c.text for t in results for row in t.records() for c in row.values()]
    raw = [t for t in texts if re.search(r"\d\.\d{7,}", t) or re.fullmatch(r"\d{8,}", t)]
    assert not raw, f"raw floats in the Training results: {raw}"
    assert not [t for t in texts if re.search(r"\bNone\b|\bnan\b", t)], texts
    said = bs.visible_text(page, ".px-tab-training")
    assert "starting its worker" not in said


def test_the_1024_viewport_keeps_the_keyboard_path_and_alignment(page: Any) -> None:
    page.set_viewport_size(VIEWPORTS[1])
    open_tab(page, "Training")  # the tab the keyboard path is read on, whatever came before
    to_the_top(page)
    focused = reach_the_tab_bar(page, "1024")
    assert focused["text"] == "Training"
    assert not misaligned(page, "training")
    bs.shoot_story(page, "a11y-training-1024")
