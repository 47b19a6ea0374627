"""Issue #28, Accuracy and Ranges in a real browser (Voila + Debian's Chromium), one page at
1400x1000 and 1024x768:

* item 6: switching Op from exp to tanh never shows exp's figure, answer or tables once the
  kernel has answered the switch (every DOM state of the tab recorded by a MutationObserver),
  and the tab says what it computes ("Computing tanh in float16 …");
* item 5: every table of the Accuracy and Ranges tabs (the folds opened) fits its panel;
* item 9: the Accuracy figure is vector, its legend text at least 12 px as drawn;
* the values shown are those of NumPy run here against the exactly rounded reference;
* axe: no serious or critical violation on the Accuracy tab.

Screenshots: artifacts/stories/accuracy-{1400,1024}.png, ranges-tables-1400.png.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.support import page as bs
from tests.support.browser import BLOCKING_IMPACTS, axe_source, run_axe
from tests.support.page import open_tab, select_op
from tests.support.voila import VoilaServer

pytestmark = [pytest.mark.browser, pytest.mark.slow]

VIEWPORTS = bs.STORY_VIEWPORTS
#: generous bounds for a Voila page and a view to update under load (not measurements)
LOAD_MS = 120_000
UPDATE_S = 120.0
DTYPES = ["float16", "bfloat16"]
BACKENDS = ["numpy", "emulated"]

#: records every state of the Accuracy tab after a mutation: answer, status, figure titles
#: (an SVG's <title>, an image's src), the tables' headings
_RECORD = """() => {
    const tab = document.querySelector('.px-tab-accuracy');
    const seen = e => e && e.checkVisibility();  // drawn: no display:none on it or above it
    const text = sel => { const e = tab.querySelector(sel); return seen(e) ? e.innerText : ''; };
    const snap = () => ({
        answer: text('.px-answer'),
        status: text('.px-status'),
        figures: [...tab.querySelectorAll('.px-plot svg, .px-plot img')].filter(seen)
            .map(e => e.tagName === 'IMG' ? e.getAttribute('src').slice(-200)
                                          : (e.querySelector('title') || {}).textContent),
        headings: [...tab.querySelectorAll('h4')].filter(seen).map(h => h.textContent).join(' | '),
    });
    window.__pxStates = [];
    window.__pxObserver = new MutationObserver(() => window.__pxStates.push(snap()));
    window.__pxObserver.observe(tab, {subtree: true, childList: true, characterData: true,
                                      attributes: true});
    return snap();
}"""

#: every table of a tab (its folds opened) with its width and its panel's inner width
_TABLE_FIT = """(key) => {
    const tab = document.querySelector('.px-tab-' + key);
    tab.querySelectorAll('details').forEach(d => { d.open = true; });
    return [...tab.querySelectorAll('table')].filter(t => t.getClientRects().length).map(t => {
        const box = t.closest('.px-panel') || t.closest('.px-details');
        const style = getComputedStyle(box);
        const inner = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
        return {headers: [...t.querySelectorAll('th')].map(h => h.textContent).join('|'),
                width: t.scrollWidth, panel: inner};
    });
}"""

#: the drawn size in px of each legend text of the Accuracy figures
_LEGEND_PX = """() => [...document.querySelectorAll('.px-tab-accuracy svg [id^=legend] text')].map(t => {
    const size = parseFloat(t.style.fontSize || getComputedStyle(t).fontSize);
    return [t.textContent, size * t.getScreenCTM().a];
})"""


def numpy_tanh_facts(name: str) -> dict[str, float]:
    """NumPy's tanh over every distinct finite value of ``name`` against tanh rounded exactly
    (tests/support/oracles.py): the input count, the largest ulp_steps, the share correctly rounded."""
    from tests.support import oracles

    x = oracles.finite_values(name)
    got = np.tanh(x.astype(np.float16)).astype(np.float64)
    want = oracles.round_array(np.tanh(x), name)
    steps = np.abs(oracles.number_line_index(got, name) - oracles.number_line_index(want, name))
    return {
        "inputs": float(x.size),
        "max_ulp_steps": float(steps.max()),
        "fraction": float(np.mean(steps == 0)),
    }


def test_story_accuracy_switch_tables_and_figures(browser: Any, voila_server: VoilaServer) -> None:
    import ml_dtypes

    page = browser.new_page(viewport=VIEWPORTS[1])
    try:
        page.goto(voila_server.url, timeout=LOAD_MS)
        page.wait_for_selector(".px-app", timeout=LOAD_MS)
        page.wait_for_function(bs.KERNELS_VIEW_READY, timeout=LOAD_MS)
        open_tab(page, "Accuracy")  # first: Kernels in mode registry hides Backends
        bs.choose(page, ".px-backends", BACKENDS)
        bs.choose(page, ".px-dtypes", DTYPES)
        select_op(page, "exp")
        page.wait_for_function(
            """() => { const t = document.querySelector('.px-tab-accuracy');
                return t && /exp in float16/.test(t.querySelector('.px-answer').innerText)
                    && t.querySelectorAll('.px-plot svg, .px-plot img').length >= 2
                    && !t.querySelector('.px-status .px-msg-loading'); }""",
            timeout=LOAD_MS,
        )
        before = page.evaluate(_RECORD)
        exp_figures = set(before["figures"])

        # item 6: exp -> tanh; every state the kernel writes is about tanh (or says it computes)
        select_op(page, "tanh")
        page.wait_for_function(
            """() => { const t = document.querySelector('.px-tab-accuracy');
                return /tanh in float16/.test(t.querySelector('.px-answer').innerText)
                    && t.querySelectorAll('.px-plot svg, .px-plot img').length >= 2
                    && !t.querySelector('.px-status .px-msg-loading'); }""",
            timeout=LOAD_MS,
        )
        states = page.evaluate("() => { window.__pxObserver.disconnect(); return window.__pxStates; }")
        assert states, "the tab did not change after the switch"
        stale = [
            s
            for s in states
            if exp_figures & set(s["figures"]) or "exp in" in s["answer"] or "exp in" in s["headings"]
        ]
        assert not stale, f"exp's results shown after the switch to tanh: {stale[:2]}"
        computing = [s["status"] for s in states if "Computing tanh in float16" in s["status"]]
        assert computing, f"no computing note; statuses: {[s['status'] for s in states][:5]}"

        # the values shown against NumPy run here and the exactly rounded reference
        facts = numpy_tanh_facts("float16")
        finfo = ml_dtypes.finfo(np.float16)  # finite codes of one sign: (2^nexp - 1) * 2^nmant
        positive = (2 ** int(finfo.nexp) - 1) * 2 ** int(finfo.nmant) - 1
        assert facts["inputs"] == 2 * positive + 1  # and zero once
        page.wait_for_function(  # the NumPy row may land after the table it belongs to
            """() => [...document.querySelectorAll(
                    '.px-tab-accuracy .px-panel[data-dtype=float16] :is(td, th)')]
                .some(cell => cell.innerText.trim() === 'numpy')""",
            timeout=LOAD_MS,
        )
        rows = [
            {bs.norm(k): c for k, c in r.items()}
            for t in bs.read_tables(page, ".px-tab-accuracy .px-panel[data-dtype=float16]")
            if t.column("max_ulp_steps")
            for r in t.records()
        ]
        numpy_row = next(r for r in rows if r["backend"].text == "numpy")
        assert bs.shows_value([numpy_row["ninputs"].text], facts["inputs"]), numpy_row["ninputs"]
        assert bs.shows_value([numpy_row["maxulpsteps"].text], facts["max_ulp_steps"])
        fraction = numpy_row["correctlyroundedfraction"]
        assert bs.shows_value([fraction.text, fraction.title], facts["fraction"]), fraction

        for viewport in VIEWPORTS:  # items 5 and 9 at both widths
            page.set_viewport_size(viewport)
            page.wait_for_timeout(200)  # one layout at the new width
            legend = page.evaluate(_LEGEND_PX)
            assert legend and min(px for _, px in legend) >= 12, legend
            wide = [t for t in page.evaluate(_TABLE_FIT, "accuracy") if t["width"] > t["panel"] + 0.5]
            assert not wide, f"{viewport['width']} px: tables wider than their panels: {wide}"
            bs.shoot_story(page, f"accuracy-{viewport['width']}")

        violations = run_axe(page, axe_source(), ".px-tab-accuracy")
        violations = [v for v in violations if v.impact in BLOCKING_IMPACTS]
        assert not violations, "\n".join(v.line() for v in violations)

        open_tab(page, "Ranges")
        page.wait_for_function(
            """() => document.querySelectorAll('.px-tab-ranges .px-panel table').length >= 2""",
            timeout=LOAD_MS,
        )
        for viewport in reversed(VIEWPORTS):
            page.set_viewport_size(viewport)
            page.wait_for_timeout(200)
            wide = [t for t in page.evaluate(_TABLE_FIT, "ranges") if t["width"] > t["panel"] + 0.5]
            assert not wide, f"{viewport['width']} px: Ranges tables wider than their panels: {wide}"
        bs.shoot_story(page, "ranges-tables-1400")
    finally:
        page.close(run_before_unload=True)
