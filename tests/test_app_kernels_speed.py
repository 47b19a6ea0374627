"""The Kernels tab's "Colour by: speed" (issue #27 item 4): the control shows only in the modes
that run, choosing speed times the shown cells through the speed query in the tab's job, and each
timed cell is coloured by its ratio to float32 (band computed here from log2) with the ratio
printed; cells that did not run keep their status.  The availability under the layer is a real
numpy probe; the ratios come from an injected query (no timing thresholds), and one real tiny
measurement checks the wiring to :func:`explorer.queries.speed.speed`."""

from __future__ import annotations

import math
import threading
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from explorer.plots import palette
from explorer.queries.speed import SpeedResult, SpeedRow, plan

#: the ratios the injected query answers, by dtype (float32 is 1 by definition)
FAKE_RATIOS = {"float32": 1.0, "float16": 2.0, "bfloat16": 0.25}


def _fake_speed(
    ops: list[str],
    dtypes: list[str],
    backends: list[str],
    modes: list[str],
    device: str,
    on_row: Any = None,
    **_: Any,
) -> SpeedResult:
    """The speed query's signature: each planned cell's status is a direct run of the backend here
    (numpy has no bfloat16 cast: unsupported_dtype, no ratio); a cell that ran gets FAKE_RATIOS."""
    from explorer.backends import get_backend

    result = SpeedResult()
    for cell in plan(ops, dtypes, backends, modes, device):
        status = get_backend(cell.backend).run(cell.op, cell.dtype).status.value
        ran = status == "ok"
        row = SpeedRow(
            cell.backend,
            cell.op,
            "x",
            cell.dtype,
            cell.device,
            cell.mode,
            status=status,
            ratio_to_float32=FAKE_RATIOS[cell.dtype] if ran else None,
        )
        result.rows.append(row)
        if on_row is not None:
            on_row(row)
    result.cells_planned = result.cells_measured = len(result.rows)
    return result


@pytest.fixture(scope="module")
def probed_tab(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A Kernels tab on numpy, eager, after a real "Probe now" of cast's group (4 ops; a private
    cache)."""
    from explorer import App
    from explorer.runtime.probe import app_probe_sandbox

    mp = pytest.MonkeyPatch()
    mp.setenv("PX_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    app_probe_sandbox().close()
    app = App(op="cast", dtypes=["float16", "bfloat16"], backends=["numpy"], load_tensorflow=False)
    tab = app.select("kernels")
    try:
        job = tab.start_probe(wait=True)
        assert job.status == "done", job.error
        app.state.set(mode="eager")
        yield app, tab
    finally:
        app_probe_sandbox().close()
        mp.undo()


def _band_colour(ratio: float) -> str:
    """The band of a ratio, computed here: log2(ratio) / log2(8) in 6 steps a side."""
    band = max(-6, min(6, round(math.log2(ratio) / 3 * 6)))
    return palette.speed_band_colors()[band + 6]


def test_colour_by_speed_colours_timed_cells_and_keeps_the_others(probed_tab: Any) -> None:
    app, tab = probed_tab
    assert tab.colour_by.layout.display != "none"
    app.state.set(mode="registry")
    assert tab.colour_by.layout.display == "none", "hidden where nothing runs, as Device is"
    app.state.set(mode="eager")
    assert tab.colour_by.layout.display != "none"
    status_before = tab.heatmap.grid.statuses()

    tab.speed.speed_query = _fake_speed
    tab.colour_by.value = "speed"
    job = tab.speed.job
    job.wait(60)
    assert job.status == "done", job.error
    assert f"{job.progress[0]}/{job.progress[1]} cells" in job.message or "measured" in job.message
    grid, heatmap = tab.heatmap.grid, tab.heatmap
    assert grid.statuses() == status_before
    texts = dict(zip(zip(heatmap.glyphs.x, heatmap.glyphs.y, strict=True), heatmap.glyphs.text, strict=True))
    checked = 0
    for i, op in enumerate(grid.ops):
        for j, column in enumerate(grid.columns):
            status = grid.status(i, j)
            x, y = (j + 0.5) / grid.shape[1], (i + 0.5) / grid.shape[0]
            ratio = FAKE_RATIOS[column.dtype] if column.dtype == "float16" else None  # bfloat16 fails
            if ratio is not None:
                assert status == "ok", (op, column)
                assert heatmap.cell_colour(i, j) == _band_colour(ratio), (op, column)
                assert texts[(x, y)] == "2.0×"
                checked += 1
            elif status is not None:
                assert heatmap.cell_colour(i, j) == palette.status_color(status), (op, column)
                assert texts[(x, y)] == palette.status_glyph(status)
    assert checked == len(grid.ops) == 4
    heatmap.hover(0, [c.dtype for c in grid.columns].index("float16"))
    assert "time per call: 2.0× float32&#x27;s" in heatmap.tip.value
    assert "faster" in heatmap.note.value and "slower" in heatmap.note.value
    assert "relative to float32" in tab.status.value

    app.state.set(dtypes=("float16",))  # a new selection is timed in its turn
    job = tab.speed.job
    job.wait(60)
    assert job.status == "done", job.error
    assert [c.dtype for c in tab.heatmap.grid.columns] == ["float16"]
    assert heatmap.cell_colour(0, 0) == _band_colour(FAKE_RATIOS["float16"])
    app.state.set(dtypes=("float16", "bfloat16"))
    assert tab.speed.job is job, "measured before: no new run"

    tab.colour_by.value = "availability"
    assert heatmap.note.value == ""
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            status = tab.heatmap.grid.status(i, j)
            if status is not None:
                assert heatmap.cell_colour(i, j) == palette.status_color(status)


def test_a_speed_measurement_says_its_progress_and_can_be_cancelled_between_cells(probed_tab: Any) -> None:
    from tests.support.processes import wait_until

    app, tab = probed_tab
    tab.colour_by.value = "availability"
    release = threading.Event()
    seen: list[Any] = []

    def slow_query(on_row: Any = None, **kw: Any) -> SpeedResult:
        def first_then_wait(row: Any) -> None:
            if seen:
                release.wait(30)
            seen.append(row)
            on_row(row)

        return _fake_speed(on_row=first_then_wait, **kw)

    tab.speed.speed_query = slow_query
    tab.speed.measured.clear()
    job = tab.speed.start()
    try:
        wait_until(lambda: "(1/" in job.message, 30, "the first cell's progress")
        said = job.message
    finally:
        job.cancel()
        release.set()
    job.wait(30)
    total = len(plan(tab.shown_ops(), list(app.state.dtypes), ["numpy"], ["eager"], "CPU"))
    first = seen[0]
    assert job.status == "cancelled"
    assert len(seen) == 2, "stopped at the next cell"
    assert said == f"timed {first.op} in {first.dtype} on numpy eager (1/{total} cells)"
    assert tab.speed.rows() is None


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_a_real_tiny_measurement_on_numpy(probed_tab: Any, tmp_path: Path) -> None:
    """The real query (numpy cast only, tiny timing budget): float32's cell is 1x exactly, the
    others carry the ratio the query returned, coloured by its band."""
    from explorer.queries.speed import speed

    _, tab = probed_tab
    tab.colour_by.value = "availability"
    tab.speed.measured.clear()
    tab.speed.speed_query = partial(speed, min_time=0.005, min_count=3, max_time=0.05)
    tab.speed._shown_ops = lambda: ["cast"]  # one op: one worker start
    job = tab.speed.start(wait=True)
    assert job.status == "done", job.error
    rows = {r.dtype: r for r in tab.speed.rows() or []}
    assert set(rows) == {"float32", "float16", "bfloat16"} - ({"bfloat16"} - set(rows))
    assert rows["float32"].ratio_to_float32 == 1.0
    tab.colour_by.value = "speed"
    grid = tab.heatmap.grid
    i = grid.ops.index("cast")
    for j, column in enumerate(grid.columns):
        row = rows.get(column.dtype)
        if row is not None and row.status == "ok" and grid.status(i, j) == "ok":
            assert row.ratio_to_float32 is not None
            assert tab.heatmap.cell_colour(i, j) == _band_colour(row.ratio_to_float32)
