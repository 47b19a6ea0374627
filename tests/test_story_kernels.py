"""The Kernels tab in a browser (issue 28, items 1, 3, 4 and 12): the first words answer
range × float16 × CPU as the shipped registry JSON says; in mode registry no Backends control
(it would do nothing there); a release chip pressed with the
keyboard tells that release and its workaround beside the heatmap; from page load a keyboard
alone reaches the tab bar, the Kernels tab and a heatmap cell's details; the details panel and
"every cell explained" fit their panel at 1024 px; the whole catalog's rows fill its figure;
axe finds nothing serious or critical.

One page, both viewports (1400x1000, then 1024x768 on the same page)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import browser as browser_support
from tests.support import page as bs
from tests.support import shipped_registries as shipped
from tests.support.voila import VoilaServer

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LOAD_MS = 120_000
UPDATE_S = 60.0

#: the element focused now, described: its tag, classes, text and whether it is inside the tab bar
_FOCUSED = """() => {
    const el = document.activeElement;
    if (!el) return null;
    return {tag: el.tagName, cls: String(el.className || ''), text: (el.innerText || el.value || '').trim(),
            tabbar: !!el.closest('.lm-TabBar'), chip: !!el.closest('.px-chips'),
            picker: !!el.closest('.px-cell-picker')};
}"""

#: elements inside ``selector`` that stick out of it on the right (1 px of rounding allowed)
_WIDER_THAN = """(selector) => {
    const out = [];
    for (const box of document.querySelectorAll(selector)) {
        const edge = box.getBoundingClientRect().right + 1;
        for (const el of box.querySelectorAll('*')) {
            const r = el.getBoundingClientRect();
            if (r.width > 0 && r.right > edge) {
                out.push(`${el.tagName}.${el.className} right ${Math.round(r.right)} > ${Math.round(edge)}`);
            }
        }
        if (box.scrollWidth > box.clientWidth + 1) out.push(`${selector} scrolls sideways`);
    }
    return out.slice(0, 8);
}"""


def shipped_answer(raw_op: str, attr: str, dtype: str, device: str) -> tuple[str, str, str]:
    """(installed status, first release with a kernel, the release before it) from the JSON files."""
    releases = [entry["release"] for entry in shipped.index()["releases"]]
    statuses = [shipped.expected_status(shipped.raw(r), raw_op, attr, dtype, device) for r in releases]
    first = next(k for k, s in enumerate(statuses) if s == "ok")
    return statuses[-1], releases[first], releases[first - 1]


def tab_until(page: Any, want: str, limit: int) -> int:
    """Press Tab until the focused element has key ``want`` true; how many presses it took."""
    for n in range(1, limit + 1):
        page.keyboard.press("Tab")
        focused = page.evaluate(_FOCUSED)
        if focused and focused.get(want):
            return n
    raise AssertionError(f"{limit} Tab presses never reached {want}; last focus {page.evaluate(_FOCUSED)}")


def test_story_kernels_answer_chips_keyboard_and_fit(browser: Any, voila_server: VoilaServer) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(voila_server.url, timeout=LOAD_MS)
        page.wait_for_selector(".px-app", timeout=LOAD_MS)
        page.wait_for_function(bs.KERNELS_VIEW_READY, timeout=LOAD_MS)

        # (1) the first words answer range × float16 × CPU, as the shipped files say
        now, first, before = shipped_answer("Range", "Tidx", "float16", "CPU")
        answer = bs.poll(
            page,
            lambda: next(
                (
                    s
                    for s in page.locator(".px-kernels-answer .px-answer-sentence").all_inner_texts()
                    if " float16 CPU kernel" in s
                ),
                None,
            ),
            UPDATE_S,
            "the float16 CPU answer",
        )
        assert answer.startswith("Yes:" if now == "ok" else "No:"), answer
        assert f"since {first}; on {before} and earlier" in answer, answer
        assert "workaround: create in float32, then tf.cast to float16" in answer, answer

        # (4) mode registry shows TensorFlow's registry whatever Backends say: the control is hidden
        backends = page.locator(".px-backends")
        assert backends.count() == 1 and not backends.is_visible()

        # (12) keyboard only, from page load: the tab bar, the Kernels tab, a cell's details
        page.evaluate("() => document.activeElement && document.activeElement.blur()")
        tab_until(page, "tabbar", 40)
        page.keyboard.press("Home")
        page.keyboard.press("Enter")
        assert "Kernels" in page.evaluate(_FOCUSED)["text"]
        tab_until(page, "picker", 120)
        while page.evaluate(_FOCUSED)["tag"] != "BUTTON":
            page.keyboard.press("Tab")
        page.keyboard.press("Enter")
        details = bs.poll(
            page,
            lambda: bs.visible_text(page, ".px-tab-kernels .px-cell-details") or None,
            UPDATE_S,
            "the picked cell's details",
        )
        assert details.startswith("range · "), details

        # (3) a release chip pressed by keyboard: the release and its workaround, beside the heatmap
        chip = page.locator(".px-tab-kernels .px-chips button", has_text=f"{before} ").first
        chip.focus()
        page.keyboard.press("Enter")
        panel = bs.poll(
            page,
            lambda: bs.visible_text(page, ".px-tab-kernels .px-release-details") or None,
            UPDATE_S,
            "the release panel",
        )
        assert f"Range · float16 · CPU in TensorFlow {before}" in panel, panel
        assert "Workaround" in panel and "tf.cast(tf.range(" in panel, panel
        plot, side = page.evaluate(
            "() => ['.px-tab-kernels .px-kernels-plot', '.px-tab-kernels .px-kernels-side']"
            ".map(s => { const r = document.querySelector(s).getBoundingClientRect(); "
            "return [r.left, r.top, r.right, r.bottom]; })"
        )
        assert side[0] >= plot[2] - 1 and side[1] < plot[3], (plot, side)  # beside, not above
        bs.shoot_story(page, "kernels-1400")

        # (9) whole catalog: the header stays above a scroll box that fits the window
        page.locator(".px-kernels-scope button", has_text="whole catalog").press("Enter")
        page.wait_for_function(  # the catalog's rows drawn: the box now scrolls
            "() => { const s = document.querySelector('.px-tab-kernels .px-heatmap-scroll'); "
            "return s && s.scrollHeight > s.clientHeight + 200; }",
            timeout=LOAD_MS,
        )
        box = page.evaluate(
            "() => { const s = document.querySelector('.px-tab-kernels .px-heatmap-scroll'); "
            "const h = document.querySelector('.px-tab-kernels .px-heatmap-header'); "
            "return [s.getBoundingClientRect().height, h.getBoundingClientRect().height, innerHeight, "
            "s.scrollHeight > s.clientHeight, s.querySelector('.px-scroll-handle').tabIndex]; }"
        )
        body, header, window, scrolls, tab_index = box
        assert scrolls and tab_index == 0, box  # it scrolls, and a keyboard can focus it to scroll it
        assert body + header <= min(560 + header, window - 140) + 2, box
        # the rows fill the tall figure: its row axis runs its whole height (bqplot kept the
        # op's group's height once, the catalog's 128 rows squeezed into its top 132 px)
        page.wait_for_function(
            "() => { const b = document.querySelector('.px-tab-kernels .px-heatmap-body'); "
            "const axis = Math.max(...[...b.querySelectorAll('.axis path.domain')]"
            ".map(d => d.getBBox().height)); "
            "return axis >= b.getBoundingClientRect().height - 40; }",
            timeout=10_000,
        )
        violations = browser_support.blocking(
            browser_support.run_axe(page, browser_support.axe_source(), ".px-tab-kernels")
        )
        assert not violations, "\n".join(v.line() for v in violations)

        # at 1024 px: the panel and "every cell explained" fit their panels
        page.set_viewport_size({"width": 1024, "height": 768})
        bs.poll(
            page,
            lambda: page.evaluate("() => innerWidth") == 1024 or None,
            UPDATE_S,
            "the narrow viewport",
        )
        for selector in (".px-tab-kernels .px-kernels-side", ".px-tab-kernels .px-kernels-details"):
            seen: list[Any] = []

            def fits(s: str = selector, seen: list[Any] = seen) -> bool:
                seen[:] = page.evaluate(_WIDER_THAN, s)
                return not seen

            try:
                bs.poll(page, fits, 10, f"{selector} fits")
            except AssertionError:
                raise AssertionError(f"{selector} does not fit at 1024 px: {seen}") from None
        bs.shoot_story(page, "kernels-1024")
    finally:
        page.close(run_before_unload=True)
