"""The app's stories in a real browser (Voila + Debian's Chromium at 1400x1000), asserting what a
user sees against independent readings, with a screenshot per story in artifacts/stories/ (axe-core
on every tab: tests/test_story_a11y.py).

Stories:

1. the original question: ``tf.range(12, dtype=tf.float16)`` on CPU — the Kernels view's status
   for Range/float16/CPU is what TensorFlow's live registry says (tests/support/registry_oracle.py), and
   the history strip shows each shipped release's status as read here from the shipped registry
   files, with the change at the first release that has the kernel;
2. dtypes across CPU and GPU: MatrixInverse in float16, bfloat16 and float32 on CPU and GPU at
   once, each status as the live registry says, and one note that GPU cells are declared only;
3. ranges for two dtypes: exp in float16 and bfloat16 side by side, each with its format's
   overflow threshold (ml_dtypes.finfo) and exp's first overflowing input (found here by rounding
   exp of every finite value exactly, tests/support/oracles.py);
4. accuracy for two dtypes: NumPy's exp, its input count and largest ulp_steps per format, from
   NumPy run here against the exactly rounded reference;
5. bits: 1000 in float8_e4m3fn is NaN, and the tab says why (its largest value, 448);
6. training with cancel: progress shows, Cancel stops it, "cancelled" shows;
7. pasting the original error into the Explain tab: Range, float16, CPU, the history and the
   first release with the kernel (read here from the shipped files).

Servers and pages come from tests/conftest.py's fixtures (one Voila server per module).
Without Chromium, Playwright or axe-core these tests skip, and fail in CI (tests/support/require.py).
"""

from __future__ import annotations

import gzip
import importlib.metadata
import json
import re
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support import page as bs
from tests.support.page import ORIGINAL_ERROR, open_tab, select_op
from tests.support.voila import VoilaServer

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
REGISTRIES = ROOT / "explorer" / "data" / "registries"
VIEWPORT = {"width": 1400, "height": 1000}
#: generous bounds for a Voila page and for a view to update under load (not measurements)
LOAD_MS = 120_000
UPDATE_S = 120.0
#: a hover whose tooltip has not come in this long is made again (off the heatmap and back)
REHOVER_S = 10.0


# ---------------------------------------------------------------------------------------- oracles


@cache
def shipped_history(raw_op: str, attr: str, dtype: str, device_type: str) -> tuple[tuple[str, str], ...]:
    """``(release, status)`` for every shipped registry file, oldest first, read here from the
    JSON files (not through explorer): ``absent`` without the op, ``unsupported_dtype`` when the
    attribute's allowed list leaves the dtype out, ``ok`` when a kernel registered for the device
    type (or DEFAULT, for a non-JIT device type) has no constraint on ``attr`` or lists the dtype,
    else ``no_kernel``."""
    index = json.loads((REGISTRIES / "index.json").read_text())
    out = []
    for entry in index["releases"]:
        data = json.loads(gzip.decompress((REGISTRIES / entry["file"]).read_bytes()))
        op = data["ops"].get(raw_op)
        if op is None:
            out.append((entry["release"], "absent"))
            continue
        allowed = (op["attrs"].get(attr) or {}).get("allowed")
        if allowed and dtype not in allowed:
            out.append((entry["release"], "unsupported_dtype"))
            continue
        ok = any(
            dev == device_type or (dev == "DEFAULT" and not device_type.endswith("_JIT"))
            for dev, constraints in data["kernels"].get(raw_op, [])
            if dtype in constraints.get(attr, [dtype])
        )
        out.append((entry["release"], "ok" if ok else "no_kernel"))
    return tuple(out)


def first_ok(history: tuple[tuple[str, str], ...]) -> str:
    return next(release for release, status in history if status == "ok")


@cache
def live_registry() -> Any:
    """tests/support/registry_oracle.py's reading of the installed TensorFlow (imports it: seconds)."""
    from tests.support import registry_oracle

    return registry_oracle.oracle()


def format_facts(name: str) -> dict[str, float]:
    """ml_dtypes' max and the overflow threshold ``max + ulp(max) / 2`` (values from there up
    round to inf, or NaN in formats without inf)."""
    import ml_dtypes

    info = ml_dtypes.finfo(getattr(ml_dtypes, name) if name != "float16" else np.float16)
    top = float(info.max)
    return {"max": top, "overflow": top + 2.0 ** (int(info.maxexp) - 1 - int(info.nmant) - 1)}


def _dtype(name: str) -> Any:
    import ml_dtypes

    return np.float16 if name == "float16" else getattr(ml_dtypes, name)


def _run_exp(x: np.ndarray, name: str, backend: str) -> np.ndarray:
    """exp of ``x`` (values of format ``name``) computed by ``backend`` here, as float64."""
    with np.errstate(all="ignore"):
        if backend == "numpy":
            return np.exp(x.astype(_dtype(name))).astype(np.float64)
        if backend == "tensorflow":
            import tensorflow as tf

            with tf.device("/CPU:0"):
                return tf.cast(tf.exp(tf.constant(x, dtype=getattr(tf, name))), tf.float64).numpy()
    raise ValueError(backend)


@cache
def exp_facts(name: str, backend: str = "numpy") -> dict[str, float]:
    """For exp over every distinct finite value of ``name``: the first positive input whose exactly
    rounded result overflows, the input count, and ``backend``'s largest ulp_steps (the framework
    run here; inf one step past max; inputs where only one side is NaN left out)."""
    from tests.support import oracles

    x = oracles.finite_values(name)
    top = int(oracles.number_line_index(np.array([x.max()]), name)[0])
    got = _run_exp(x, name, backend)
    with np.errstate(all="ignore"):
        ref = oracles.round_array(np.exp(x), name)

    def index(v: np.ndarray) -> np.ndarray:
        out = np.zeros(v.shape, np.int64)
        finite = np.isfinite(v)
        out[finite] = oracles.number_line_index(v[finite], name)
        out[np.isposinf(v)] = top + 1
        out[np.isneginf(v)] = -(top + 1)
        return out

    both = ~np.isnan(got) & ~np.isnan(ref)
    steps = np.abs(index(got[both]) - index(ref[both]))
    return {
        "first_overflow": float(x[(x > 0) & np.isinf(ref)].min()),
        "inputs": float(x.size),
        "max_ulp_steps": float(steps.max()),
    }


# ---------------------------------------------------------------------------------------- page


@pytest.fixture()
def app(browser: Any, voila_server: VoilaServer) -> Iterator[Any]:
    """A fresh visitor: a new page (its own kernel) showing the app."""
    url = voila_server.url
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(url, timeout=LOAD_MS)
        try:
            page.wait_for_selector(".px-app", timeout=LOAD_MS)
            page.wait_for_function(bs.KERNELS_VIEW_READY, timeout=LOAD_MS)
        except Exception as exc:  # say what the page shows instead
            shown = page.evaluate("() => document.body ? document.body.innerText.slice(-3000) : ''")
            raise AssertionError(f"the app did not show: {exc}\nthe page shows:\n{shown}") from None
        yield page
    finally:
        page.close(run_before_unload=True)


def set_selection(page: Any, op: str | None = None, dtypes: list[str] | None = None) -> None:
    if op is not None:
        select_op(page, op)
    if dtypes is not None:
        bs.choose(page, ".px-dtypes", dtypes)
        bs.poll(
            page, lambda: set(bs.chosen(page, ".px-dtypes")) == set(dtypes), 30, f"dtypes {dtypes} chosen"
        )


def kernel_rows(page: Any) -> list[dict[str, bs.Cell]]:
    """Rows of the visible Kernels tables with raw_op, dtype, device and status columns, keyed by
    header letters (``rawop``, ``dtype``, ``device``, ``status``, ``explanation``...)."""
    rows = []
    for table in bs.read_tables(page, ".px-tab-kernels"):
        if all(table.column(c) for c in ("raw_op", "dtype", "device", "status")):
            rows += [{bs.norm(k): c for k, c in r.items()} for r in table.records()]
    return rows


def kernel_row(page: Any, raw_op: str, dtype: str, device: str) -> dict[str, bs.Cell] | None:
    """The visible row of one cell (raw op, dtype, device), or None."""
    for r in kernel_rows(page):
        if (r["rawop"].text, r["dtype"].text, r["device"].text) == (raw_op, dtype, device):
            return r
    return None


def status_shown(page: Any, raw_op: str, dtype: str, device: str) -> str | None:
    row = kernel_row(page, raw_op, dtype, device)
    return row["status"].text if row else None


def tables_about(page: Any, scope: str, dtype: str, dtypes: list[str]) -> list[bs.Table]:
    """Visible tables under ``scope`` about ``dtype`` (one of the selected ``dtypes``): the nearest
    text above them that starts with a selected dtype's name starts with ``dtype`` (a panel's
    title), or they have a format/dtype column (then only the rows holding ``dtype`` are kept)."""
    out = []
    for table in bs.read_tables(page, scope):
        col = table.column("format", "dtype")
        if col is not None:
            pairs = zip(table.rows, table.records(), strict=True)
            rows = tuple(r for r, rec in pairs if rec[col].text == dtype)
            if rows:
                out.append(bs.Table(table.heading, table.caption, True, table.headers, rows, table.before))
        elif table.about(dtypes) == dtype:
            out.append(table)
    return out


#: the glyph and status pairs of the Kernels tab's key (``+`` ok, ``N`` no_kernel...), read on screen
_KEY = """() => {
    const key = document.querySelector('.px-tab-kernels .px-key');
    if (!key) return [];
    return [...key.querySelectorAll('span')]
        .filter(s => s.nextSibling && (s.nextSibling.nodeType === 3 || s.nextSibling.tagName === 'A')
            && s.textContent.trim().length <= 2)
        .map(s => [s.textContent.trim(), s.nextSibling.textContent.trim()]);
}"""

#: the heatmap cells (rects) of the row labelled ``op``, with the glyph drawn inside each
_ROW_CELLS = """(op) => {
    const heatmap = document.querySelector('.px-kernels-plot .px-heatmap');
    if (!heatmap) return null;
    const label = [...heatmap.querySelectorAll('.px-heatmap-body .tick text')]
        .find(t => t.textContent.replace('\u25b6', '').trim() === op);
    if (!label) return null;
    const lb = label.getBoundingClientRect();
    const y = lb.top + lb.height / 2;
    const rects = [...heatmap.querySelectorAll('rect.heatmapcell')];
    const texts = [...heatmap.querySelectorAll('.px-heatmap-body text')];
    const out = [];
    rects.forEach((r, index) => {
        const b = r.getBoundingClientRect();
        if (b.width === 0 || y < b.top || y > b.bottom) return;
        const glyph = texts.find(t => {
            const g = t.getBoundingClientRect(), cx = g.left + g.width / 2, cy = g.top + g.height / 2;
            return cx > b.left && cx < b.right && cy > b.top && cy < b.bottom;
        });
        out.push({index, glyph: glyph ? glyph.textContent.trim() : ''});
    });
    return out;
}"""


def heatmap_key(page: Any) -> dict[str, str]:
    """Glyph -> status as the Kernels tab's key shows them."""
    return dict(page.evaluate(_KEY))


#: the boxes (rounded to 0.1 px) of the heatmap body's cells, or null when there are none
_CELL_BOXES = """() => {
    const rects = [...document.querySelectorAll('.px-kernels-plot .px-heatmap-body rect.heatmapcell')];
    if (!rects.length) return null;
    return rects.map(r => {
        const b = r.getBoundingClientRect();
        return [b.left, b.top, b.width, b.height].map(v => Math.round(v * 10) / 10);
    });
}"""

#: the heatmap tooltip's text while it is shown (its box drawn, not transparent), else ''
_SHOWN_TIP = """() => {
    const text = document.querySelector('.px-heatmap-tip-text');
    if (!text) return '';
    const box = text.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) return '';
    for (let el = text; el; el = el.parentElement) {
        const style = getComputedStyle(el);
        if (style.display === 'none' || style.visibility === 'hidden' || Number(style.opacity) === 0) {
            return '';
        }
    }
    return text.innerText || '';
}"""


#: what lies at a cell's hover point (3, 3), for a failure message
_UNDER_POINTER = """(index) => {
    const rect = document.querySelectorAll('.px-kernels-plot .px-heatmap rect.heatmapcell')[index];
    const b = rect.getBoundingClientRect();
    const top = document.elementFromPoint(b.left + 3, b.top + 3);
    const name = top ? top.tagName + '.' + (top.getAttribute('class') || '') : 'nothing';
    const box = [b.left, b.top, b.width, b.height].map(Math.round);
    return `rect ${index} at ${box}; at its hover point: ${name}`
        + (top === rect ? ' (the rect itself)' : '');
}"""


def heatmap_in_view(page: Any) -> None:
    """Scroll the heatmap body into view, as a user does before hovering it, and wait until its
    cells stop moving: bqplot lays a figure out again after a size change only while it is on
    screen (300 ms after it appears), so cells drawn off screen keep their old size until then.
    Stable means the same cell boxes in three readings 0.4 s apart."""
    page.locator(".px-kernels-plot .px-heatmap-body").first.scroll_into_view_if_needed(timeout=LOAD_MS)
    readings: list[Any] = []

    def settled() -> bool:
        readings.append(page.evaluate(_CELL_BOXES))
        page.wait_for_timeout(100)  # with poll's 0.3 s: readings 0.4 s apart
        last = readings[-3:]
        return len(last) == 3 and last[0] is not None and last[0] == last[1] == last[2]

    bs.poll(page, settled, UPDATE_S, "the heatmap's cells at rest after scrolling it into view")


def hover_row(page: Any, op: str) -> dict[str, tuple[int, str, str]]:
    """Hover every heatmap cell in ``op``'s row, as a user would (the heatmap scrolled into view
    first): ``{tooltip head: (rect index, glyph drawn in the cell, whole tooltip)}`` where the head
    is the tooltip's text before the status (``"range · float16 · tensorflow CPU declared"``).

    A cell's tooltip is the one shown after the pointer moved onto it whose text differs from the
    previous cell's (every cell of a row has its own text; the tooltip shows the previous cell's
    text until the kernel answers the hover).  Each cell is hovered from outside the heatmap once
    the tooltip is hidden (moving straight from one cell to the next sometimes left bqplot's
    tooltip hidden over the new cell), and again after ``REHOVER_S`` without its tooltip."""
    heatmap_in_view(page)
    cells = bs.poll(page, lambda: page.evaluate(_ROW_CELLS, op), UPDATE_S, f"heatmap row {op}")
    rects = page.locator(".px-kernels-plot .px-heatmap rect.heatmapcell")
    seen: dict[str, tuple[int, str, str]] = {}
    previous = ""
    for cell in cells:
        shown: list[str] = []
        hovered: list[float] = []

        def tip(
            previous: str = previous,
            cell: Any = cell,
            shown: list[str] = shown,
            hovered: list[float] = hovered,
        ) -> str | None:
            if not hovered or time.monotonic() - hovered[0] > REHOVER_S:
                # from outside the heatmap, once its tooltip is gone, onto the cell (again)
                page.mouse.move(1, 1)
                bs.poll(page, lambda: page.evaluate(_SHOWN_TIP) == "", UPDATE_S, "the tooltip hidden")
                rects.nth(cell["index"]).hover(position={"x": 3, "y": 3}, force=True)
                hovered[:] = [time.monotonic()]
            text = page.evaluate(_SHOWN_TIP)
            shown[:] = [text]
            return text if text and text != previous and text.startswith(f"{op} ") else None

        what = f"a new tooltip on {op}'s cell (rect {cell['index']}) after {previous!r}"
        try:
            text = bs.poll(page, tip, UPDATE_S, what)
        except AssertionError as exc:
            under = page.evaluate(_UNDER_POINTER, cell["index"])
            raise AssertionError(f"{exc}\nthe tooltip shows {shown!r}; {under}") from None
        previous = text
        head = text.split(":", 1)[0].strip()
        if head in seen:  # two cells with one tooltip: kept apart so that a failure shows it
            head = f"{head} (again, from rect {cell['index']})"
        seen[head] = (cell["index"], cell["glyph"], text)
    return seen


def cell_of(cells: dict[str, tuple[int, str, str]], op: str, dtype: str, device: str) -> tuple[int, str, str]:
    """The hovered cell of ``op`` in ``dtype`` whose panel names ``device`` (a word of its head)."""
    for head, cell in cells.items():
        parts = [p.strip() for p in head.split("·")]
        if parts[:2] == [op, dtype] and device in " ".join(parts[2:]).split():
            return cell
    raise AssertionError(f"no heatmap cell for {op} · {dtype} · {device}; hovered: {list(cells)}")


def tooltip_status(text: str) -> str:
    """``ok`` from ``"range · float16 · tensorflow CPU declared: ok (declared ...)"``."""
    return text.split(":", 1)[1].split()[0]


# ---------------------------------------------------------------------------------------- stories


def test_story_original_question_range_float16_cpu(app: Any) -> None:
    """tf.range(12, dtype=tf.float16) on CPU: does it run, and since which release?"""
    page = app
    set_selection(page, op="range", dtypes=["float16"])
    want = live_registry().declared("Range", "float16", "CPU")
    shown = bs.poll(
        page, lambda: status_shown(page, "Range", "float16", "CPU"), UPDATE_S, "Range/float16/CPU row"
    )
    assert shown == want, f"the Kernels view says {shown}; TensorFlow's registry says {want}"
    row = kernel_row(page, "Range", "float16", "CPU")
    explanation = row["explanation"].text if row and "explanation" in row else ""
    assert "Range" in explanation and "float16" in explanation, explanation

    # the heatmap cell: its tooltip and glyph say the same, and a click shows the cell's details
    index, glyph, tip = cell_of(hover_row(page, "range"), "range", "float16", "CPU")
    assert tooltip_status(tip) == want, tip
    key = heatmap_key(page)
    assert key.get(glyph.strip("()")) == want, f"the cell shows {glyph!r}; the key on screen: {key}"
    page.locator(".px-kernels-plot .px-heatmap rect.heatmapcell").nth(index).click(position={"x": 3, "y": 3})

    def cell_details() -> str | None:
        text = bs.visible_text(page, ".px-tab-kernels .px-cell-details")
        return text if want in text and "float16" in text else None

    details = bs.poll(page, cell_details, UPDATE_S, "the clicked cell's details")
    assert details.startswith("range · float16"), details
    # beside the heatmap at this width, not pushed above or below it (issue 28, item 3)
    boxes = page.evaluate(
        "() => ['.px-tab-kernels .px-kernels-plot', '.px-tab-kernels .px-kernels-cell']"
        ".map(s => { const r = document.querySelector(s).getBoundingClientRect(); "
        "return [r.left, r.top, r.right, r.bottom]; })"
    )
    (plot_box, cell_box) = boxes
    assert cell_box[0] >= plot_box[2] - 1 and cell_box[1] < plot_box[3], boxes

    # the history strip of the selected cell: each release's status, as the legend on screen reads
    history = shipped_history("Range", "Tidx", "float16", "CPU")
    strip = page.locator(".px-tab-kernels .px-history", has_text="Range · float16 · CPU").first
    strip.wait_for(timeout=LOAD_MS)
    legend = page.eval_on_selector(
        ".px-history-key",
        "el => [...el.querySelectorAll('span')].filter(s => s.nextSibling"
        " && (s.nextSibling.nodeType === 3 || s.nextSibling.tagName === 'A'))"
        ".map(s => [s.textContent.trim(), s.nextSibling.textContent.trim()])",
    )
    letter_to_status = dict(legend)
    boxes = strip.locator(".px-history-box").all_inner_texts()
    seen = []
    for text in boxes:
        version, letter = text.split()[0], text.split()[1].rstrip("\u25b2")
        seen.append((version, letter_to_status.get(letter, f"letter {letter!r}")))
    assert tuple(seen) == history, f"history on screen {seen}\nshipped files say {history}"
    first = first_ok(history)
    note = strip.locator(".px-history-note").inner_text()
    assert f"changed in {first}" in note, note

    # the tab's first words answer the question, as the shipped files say (issue 28, item 1)
    answer = bs.visible_text(page, ".px-kernels-answer")
    releases = [release for release, _ in history]
    before = releases[releases.index(first) - 1]
    assert answer.startswith("Yes:" if want == "ok" else "No:"), answer
    assert all(status == "ok" for _, status in history[releases.index(first) :]), history
    assert f"since {first}; on {before} and earlier" in answer, answer
    top = page.eval_on_selector(".px-tab-kernels .px-kernels-answer", "el => el.getBoundingClientRect().top")
    plot = page.eval_on_selector(".px-tab-kernels .px-kernels-plot", "el => el.getBoundingClientRect().top")
    assert top < plot, "the answer is above the heatmap"
    # no implementation note on the page (item 7); the Kernels intro's jargon opens the glossary
    # from the keyboard: focus the link, press Enter, the entry is the target and on screen
    assert "not imported" not in bs.visible_text(page, ".px-app", exclude=".px-tab-environment"), "note"
    link = page.locator(".px-tab-kernels .px-intro a.px-term", has_text="registry").first
    link.focus()
    page.keyboard.press("Enter")
    bs.poll(page, lambda: page.evaluate("() => location.hash") == "#px-term-registry", 10, "the glossary")
    entry = page.eval_on_selector(
        "#px-term-registry",
        "el => { const r = el.getBoundingClientRect(); "
        "return [r.top >= 0 && r.bottom <= innerHeight, el.nextElementSibling.textContent]; }",
    )
    assert entry[0] and "kernel registry" in entry[1], entry
    bs.shoot_story(page, "original-question")


def test_story_dtypes_across_cpu_and_gpu(app: Any) -> None:
    """MatrixInverse in three dtypes on CPU and GPU, side by side without switching device."""
    page = app
    dtypes = ["float16", "bfloat16", "float32"]
    set_selection(page, op="inv", dtypes=dtypes)
    oracle = live_registry()
    want = {(d, dev): oracle.declared("MatrixInverse", d, dev) for d in dtypes for dev in ("CPU", "GPU")}
    assert len(set(want.values())) > 1, want  # the op was chosen because its cells differ

    def all_shown() -> dict[tuple[str, str], str | None] | None:
        got = {key: status_shown(page, "MatrixInverse", *key) for key in want}
        return got if all(got.values()) else None

    try:
        got = bs.poll(page, all_shown, UPDATE_S, "a status for every dtype on CPU and on GPU at once")
    finally:
        bs.shoot_story(page, "dtypes-cpu-gpu")
    assert got == want, f"shown {got}\nregistry {want}"
    cells = hover_row(page, "inv")
    key = heatmap_key(page)
    on_map = {}
    for dtype, device in want:
        _, glyph, tip = cell_of(cells, "inv", dtype, device)
        on_map[dtype, device] = (tooltip_status(tip), key.get(glyph.strip("()"), glyph))
    assert on_map == {k: (v, v) for k, v in want.items()}, (
        f"heatmap (tooltip, glyph): {on_map}\nregistry {want}"
    )
    text = bs.visible_text(page, ".px-tab-kernels")
    notes = re.findall(r"no GPU", text, flags=re.IGNORECASE)
    assert len(notes) == 1, f"the page should say once that GPU cells are declared only: {len(notes)} times"


def test_story_ranges_for_two_dtypes(app: Any) -> None:
    """exp in float16 and bfloat16: a panel each, with that format's thresholds."""
    page = app
    dtypes = ["float16", "bfloat16"]
    set_selection(page, op="exp", dtypes=dtypes)
    open_tab(page, "Ranges")

    def per_dtype() -> dict[str, list[bs.Table]] | None:
        found = {
            d: [t for t in tables_about(page, ".px-tab-ranges", d, dtypes) if t.column("first positive")]
            for d in dtypes
        }
        return found if all(found.values()) else None

    try:
        found = bs.poll(page, per_dtype, UPDATE_S, "a thresholds table in a panel of each selected dtype")
    finally:
        bs.shoot_story(page, "ranges-two-dtypes")
    for dtype, tables in found.items():
        first = exp_facts(dtype)["first_overflow"]
        shown = [
            [rec[t.column("first positive") or ""].text, rec[t.column("first positive") or ""].title]
            for t in tables
            for rec in t.records()
            if rec[t.column("kind") or ""].text.startswith("overflow")
        ]
        assert shown, f"{dtype}: no overflow row in {[t.headers for t in tables]}"
        assert all(bs.shows_value(texts, first) for texts in shown), (
            f"{dtype}: exp's first overflowing input is {first}; each backend's overflow row shows {shown}"
        )
    pieces = bs.chunks_about(bs.visible_text(page, ".px-tab-ranges", exclude="table"), dtypes)
    for dtype in dtypes:
        facts = format_facts(dtype)
        said = [piece for piece in pieces[dtype] if re.search(r"\binf\b|\bNaN\b", piece)]
        assert any(bs.shows_value([piece], facts["overflow"]) for piece in said), (
            f"{dtype}: overflow threshold {facts['overflow']} (ml_dtypes max {facts['max']} + half an ulp) "
            f"not stated; what the tab says about {dtype}: {pieces[dtype]}"
        )


def test_story_accuracy_for_two_dtypes(app: Any) -> None:
    """exp in float16 and bfloat16 on the Accuracy tab, a panel each: NumPy's row for float16 and
    TensorFlow's for bfloat16 (NumPy has no bfloat16 of its own), with the input count and the
    largest ulp_steps computed here by running the same framework."""
    page = app
    dtypes = ["float16", "bfloat16"]
    checked = {"float16": "numpy", "bfloat16": "tensorflow"}
    set_selection(page, op="exp", dtypes=dtypes)
    open_tab(page, "Accuracy")

    def backend_rows() -> dict[str, dict[str, bs.Cell]] | None:
        found = {}
        for dtype in dtypes:
            for table in tables_about(page, ".px-tab-accuracy", dtype, dtypes):
                col = table.column("backend")
                if col and table.column("max_ulp_steps"):
                    for r in table.records():
                        if r[col].text == checked[dtype]:
                            found[dtype] = r
        return found if len(found) == len(dtypes) else None

    try:
        rows = bs.poll(page, backend_rows, UPDATE_S, "an accuracy table in a panel of each selected dtype")
    finally:
        bs.shoot_story(page, "accuracy-two-dtypes")
    for dtype, row in rows.items():
        backend = checked[dtype]
        facts = exp_facts(dtype, backend)
        cells = {bs.norm(k): [c.text, c.title] for k, c in row.items()}
        inputs = cells.get("ninputs") or cells.get("inputs")
        assert inputs and bs.shows_value(inputs, facts["inputs"]), (
            f"{dtype}: {facts['inputs']} inputs; shown {inputs}"
        )
        steps = cells["maxulpsteps"]
        assert bs.shows_value(steps, facts["max_ulp_steps"]), (
            f"{dtype}: {backend}'s largest ulp_steps is {facts['max_ulp_steps']} here; shown {steps}"
        )


def test_story_bits_value_beyond_the_format(app: Any) -> None:
    """1000 in float8_e4m3fn: NaN, and the tab says the format's max is 448."""
    import ml_dtypes

    page = app
    set_selection(page, dtypes=["float16", "float8_e4m3fn"])
    open_tab(page, "Bits")
    in_float8 = float(np.array(1000.0).astype(ml_dtypes.float8_e4m3fn).astype(np.float64))
    top = float(ml_dtypes.finfo(ml_dtypes.float8_e4m3fn).max)
    assert np.isnan(in_float8) and top == 448.0
    page.fill(".px-value input", "1000")
    page.press(".px-value input", "Enter")

    def rows() -> dict[str, dict[str, bs.Cell]] | None:
        found = {}
        for table in bs.read_tables(page, ".px-tab-bits"):
            fmt, value = table.column("format"), table.column("stored value", "stored")
            if fmt and value and "1000" in table.label():
                found.update({r[fmt].text: r for r in table.records()})
        return found if {"float16", "float8_e4m3fn"} <= set(found) else None

    try:
        found = bs.poll(page, rows, UPDATE_S, "the value table for 1000")
    finally:
        bs.shoot_story(page, "bits-1000-float8")

    def stored(row: dict[str, bs.Cell]) -> str:
        return next(c.text for k, c in row.items() if bs.norm(k) in ("storedvalue", "stored"))

    assert stored(found["float8_e4m3fn"]).lower() == "nan", found["float8_e4m3fn"]
    assert bs.shows_value([stored(found["float16"])], 1000.0), found["float16"]
    said = bs.visible_text(page, ".px-tab-bits", exclude="table")
    assert re.search(r"\b448\b", said) and "float8_e4m3fn" in said, (
        f"the Bits tab should explain that 1000 is beyond float8_e4m3fn's max 448: {said[:1500]}"
    )


def test_story_training_with_cancel(app: Any) -> None:
    """Start training two policies, see both progress together (issue 11, item 9), cancel, see that
    it was cancelled and the curves of what ran."""
    page = app
    policies = ["float32", "mixed_float16"]
    open_tab(page, "Training")
    page.wait_for_selector(".px-policies", timeout=120_000)  # tabs are built when first shown
    bs.choose(page, ".px-policies", policies)
    page.fill(".px-epochs input", "50")
    page.press(".px-epochs input", "Enter")
    page.click(".px-train")

    def steps_of(text: str) -> dict[str, int]:
        """The largest step n of an "n/N" (0 < n < N) said about each policy."""
        out = {}
        for policy, pieces in bs.chunks_about(text, policies).items():
            done = [
                int(n)
                for piece in pieces
                for n, total in re.findall(r"(\d+)\s*/\s*(\d+)", piece)
                if 0 < int(n) < int(total)
            ]
            if done:
                out[policy] = max(done)
        return out

    shown = [""]

    def every_policy_progresses() -> dict[str, int] | None:
        shown[0] = bs.visible_text(page, ".px-tab-training", exclude="table, select")
        seen = steps_of(shown[0])
        return seen if set(seen) == set(policies) else None

    try:
        bs.poll(page, every_policy_progresses, 300, f"progress (step n/N, 0 < n < N) of each of {policies}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nthe Training tab shows:\n{shown[0][-3000:]}") from None
    finally:
        bs.shoot_story(page, "training-progress")
    page.locator(".px-tab-training button", has_text="Cancel").first.click()
    said = bs.poll(
        page,
        lambda: (t := bs.visible_text(page, ".px-tab-training")) and re.search(r"cancelled", t, re.I) and t,
        UPDATE_S,
        "'cancelled' after Cancel",
    )
    assert "cancelled" in said.lower()
    bs.poll(page, lambda: page.is_enabled(".px-train"), UPDATE_S, "Train enabled again")
    bs.shoot_story(page, "training-cancelled")
    curves = page.locator(".px-training-plot img, .px-training-plot svg, .px-training-plot canvas")
    assert curves.count() > 0 and curves.first.is_visible(), (
        "after Cancel the curves of the steps that ran are gone"
    )


def assert_range_rows_match_the_shipped_registry(page: Any, scope: str) -> None:
    """The visible tables under ``scope`` have Range's registry rows for float16 and bfloat16 on
    CPU and GPU, each with the status a separate reading of the shipped registry of the installed
    TensorFlow release gives."""
    release = importlib.metadata.version("tensorflow")
    rows = [
        {bs.norm(k): c.text for k, c in r.items()}
        for table in bs.read_tables(page, scope)
        if table.column("status")
        for r in table.records()
    ]
    shown = {
        (r["dtype"], r["device"]): r["status"]
        for r in rows
        if (r["backend"], r["rawop"], r["mode"]) == ("tensorflow", "Range", "registry")
    }
    expected = {(d, dev): dict(shipped_history("Range", "Tidx", d, dev))[release] for d, dev in shown}
    wanted = {(d, dev) for d in ("float16", "bfloat16") for dev in ("CPU", "GPU")}
    assert wanted <= set(shown), f"rows under {scope}: {rows}"
    assert shown == expected, f"TensorFlow {release}: shown {shown}, shipped registry {expected}"


def test_the_first_view_is_in_the_page_itself_and_gives_way_to_the_app(
    browser: Any,
    voila_server: VoilaServer,
) -> None:
    """Issue 11, item 12: the server writes the Kernels tab's first view into the page, so it
    shows with JavaScript off, and each of its registry rows says what a separate reading of the
    shipped registry of the installed TensorFlow release says; with JavaScript on, it is hidden
    once the app is drawn."""
    url = voila_server.url
    context = browser.new_context(java_script_enabled=False, viewport=VIEWPORT)
    try:
        page = context.new_page()
        page.goto(url, timeout=LOAD_MS)
        assert_range_rows_match_the_shipped_registry(page, "[cell-index] .px-preview")  # the notebook's copy
        bs.shoot_story(page, "first-view-without-javascript")
    finally:
        context.close()
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(url, timeout=LOAD_MS)
        page.wait_for_selector(".px-app", timeout=LOAD_MS)
        bs.poll(
            page,
            lambda: not page.locator(".px-preview").first.is_visible(),
            UPDATE_S,
            "the first view hidden once the app is drawn",
        )
    finally:
        page.close(run_before_unload=True)


def _page_until(url: str, marker: bytes) -> bytes:
    """The HTML Voila has sent for ``url`` before ``marker`` (read as the page streams in);
    AssertionError when the whole page came without it."""
    import http.client
    from urllib.parse import urlsplit

    where = urlsplit(url)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=LOAD_MS / 1000)
    try:
        connection.request("GET", where.path or "/")
        response = connection.getresponse()
        got = b""
        while marker not in got:
            chunk = response.read1(65536)
            assert chunk, f"the page ended without {marker!r}"
            got += chunk
        return got[: got.index(marker)]
    finally:
        connection.close()


def test_the_server_sends_the_first_view_before_the_kernel_starts(
    browser: Any,
    voila_server: VoilaServer,
) -> None:
    """Issue 11, item 12, on a kernel that has not run the notebook yet: what the browser has
    when Voila starts the visitor's kernel (the page up to the kernel's id, which Voila writes
    once the kernel has started) already shows the first view, with the statuses a separate
    reading of the shipped registry gives; once the notebook's own copy has come, the server's
    copy is hidden and one first view shows."""
    url = voila_server.url
    before_kernel = _page_until(url, b'id="jupyter-config-data"')
    assert b"px-first-view" in before_kernel, "no first view before the kernel started"
    context = browser.new_context(java_script_enabled=False, viewport=VIEWPORT)
    try:
        page = context.new_page()
        # the page as it stood when the kernel started; its styles and fonts from the server
        page.route(url, lambda route: route.fulfill(body=before_kernel, content_type="text/html"))
        page.goto(url, timeout=LOAD_MS)
        assert_range_rows_match_the_shipped_registry(page, ".px-first-view")
        bs.shoot_story(page, "first-view-before-the-kernel-starts")
        page.unroute(url)
        page.goto(url, timeout=LOAD_MS)  # the whole page: the notebook's copy has come too
        assert page.locator(".px-first-view").count() == 1
        assert not page.locator(".px-first-view").is_visible(), "the server's copy still shows"
        shown_previews = [p for p in page.locator(".px-preview").all() if p.is_visible()]
        assert len(shown_previews) == 1, f"{len(shown_previews)} first views show at once"
    finally:
        context.close()


def test_story_explain_the_original_error(app: Any) -> None:
    """Paste the error this project started from: the tab names Range, float16, CPU and the first
    release with the kernel."""
    page = app
    open_tab(page, "Explain")
    page.fill(".px-explain-text textarea", ORIGINAL_ERROR)
    page.click(".px-explain-button")
    history = shipped_history("Range", "Tidx", "float16", "CPU")
    first = first_ok(history)

    def facts() -> dict[str, str] | None:
        for table in bs.read_tables(page, ".px-tab-explain"):
            got = {}
            for row in table.rows:
                if len(row) >= 2:
                    got[row[0].text] = row[1].text
            if "op" in got and "dtype" in got:
                return got
        return None

    try:
        shown = bs.poll(page, facts, UPDATE_S, "the explanation's facts")
    finally:
        bs.shoot_story(page, "explain-original-error")
    assert "Range" in shown["op"] and shown["dtype"].startswith("float16"), shown
    assert shown.get("device", "").startswith("CPU"), shown
    hist = next((v for k, v in shown.items() if k.startswith("history")), "")
    assert f"first release with a kernel: {first}" in hist, hist
    boxes = page.locator(".px-explain-facts .px-explain-chip").all_inner_texts()
    on_screen = tuple(tuple(b.split()[:2]) for b in boxes)
    assert on_screen == history, f"history on screen {on_screen}\nshipped files {history}"
    text = bs.visible_text(page, ".px-tab-explain")
    explanation = page.inner_text(".px-explain-explanation")
    assert "Range" in explanation and first in text, explanation
