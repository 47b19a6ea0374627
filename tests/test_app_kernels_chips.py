"""The Kernels tab's release chips and details panel, headless (issue 28, items 1 and 3): a
pressed chip (a button) tells that release beside the heatmap — status, registered float
dtypes, workaround — checked against the shipped registry JSON read here
(:mod:`tests.support.shipped_registries`), never against the code's own answer."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import hostile
from tests.support import shipped_registries as shipped
from tests.support.probed import one_ok_numpy_cell


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    import explorer

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PX_CACHE_DIR", str(tmp_path_factory.mktemp("chips") / "cache"))
        yield explorer.App(
            load_tensorflow=False, tab="kernels", op="range", dtypes=["float16"], backends=["tensorflow"]
        )


def text_of(markup: str) -> str:
    """The text a browser shows, whitespace collapsed (no space before a colon)."""
    text = html.unescape(re.sub(r"<[^>]+>", " ", markup))
    return re.sub(r"\s+", " ", text).replace(" :", ":").replace(" .", ".")


def releases() -> list[str]:
    return [entry["release"] for entry in shipped.index()["releases"]]


def registered(release: str, raw_op: str, attr: str, device: str) -> list[str]:
    """The float dtypes ``release``'s JSON declares a kernel for (raw op × device)."""
    data = shipped.raw(release)
    return [d for d in data["float_dtypes"] if shipped.expected_status(data, raw_op, attr, d, device) == "ok"]


def first_ok_and_before(raw_op: str, attr: str, dtype: str, device: str) -> tuple[str, str]:
    statuses = [(r, shipped.expected_status(shipped.raw(r), raw_op, attr, dtype, device)) for r in releases()]
    k = next(i for i, (_, s) in enumerate(statuses) if s == "ok")
    assert k > 0 and all(s == "ok" for _, s in statuses[k:]), statuses
    return statuses[k][0], statuses[k - 1][0]


def test_pressing_a_chip_tells_the_release_beside_the_heatmap(app: Any) -> None:
    tab = app.select("kernels")
    app.state.set(op="range", dtypes=["float16"], mode="registry", backends=["tensorflow"], device="CPU")
    first, before = first_ok_and_before("Range", "Tidx", "float16", "CPU")
    chips = tab.chips.strips.children[1]
    assert [v for _, v in chips.options] == releases()
    chips.value = before  # what a click, Enter or Space on the chip does
    panel = text_of(tab.cell_details.value)
    assert f"Range · float16 · CPU in TensorFlow {before}" in panel
    data = shipped.raw(before)
    assert f": {shipped.expected_status(data, 'Range', 'Tidx', 'float16', 'CPU')} " in panel
    listed = re.search(rf"Float dtypes with a CPU kernel in {re.escape(before)}: ([^.]*)\.", panel)
    assert listed is not None, panel
    assert set(listed.group(1).split(", ")) == set(registered(before, "Range", "Tidx", "CPU"))
    # float32 has a kernel there: the workaround creates in float32 and casts, as code to copy
    assert "float32" in registered(before, "Range", "Tidx", "CPU")
    assert "Workaround" in panel and "tf.cast(tf.range(" in panel and "tf.float32" in panel
    # the release with the kernel says so, and names no workaround
    chips.value = first
    panel = text_of(tab.cell_details.value)
    assert f"TensorFlow {first} has a kernel for Range in float16 on CPU" in panel
    assert "Workaround" not in panel
    assert "<h4>range: every cell explained</h4>" in tab.details.value  # the table follows the op


def test_one_chip_pressed_at_a_time_and_none_after_a_new_selection(app: Any) -> None:
    tab = app.select("kernels")
    app.state.set(op="range", dtypes=["float16", "bfloat16"], mode="registry", backends=["tensorflow"])
    a, b = tab.chips.strips.children[1], tab.chips.strips.children[4]
    a.value = releases()[0]
    b.value = releases()[-1]
    assert a.value is None and b.value == releases()[-1]
    assert "bfloat16" in text_of(tab.cell_details.value)
    app.state.set(dtypes=["float16"])
    assert all(w.value is None for w in tab.chips.strips.children[1::3])


def test_a_non_ok_cell_shows_the_installed_release_and_its_workaround(app: Any) -> None:
    tab = app.select("kernels")
    app.state.set(op="cholesky", dtypes=["bfloat16"], mode="registry", backends=["tensorflow"])
    grid = tab.heatmap.grid
    i = grid.ops.index("cholesky")
    j = next(k for k, c in enumerate(grid.columns) if c.device == "CPU")
    installed = str(tab.registry().tf_version)
    if installed not in releases():
        pytest.skip(f"TensorFlow {installed} has no shipped registry")
    want = shipped.expected_status(shipped.raw(installed), "Cholesky", "T", "bfloat16", "CPU")
    assert want != "ok"
    tab.heatmap.click(i, j)
    panel = text_of(tab.cell_details.value)
    assert f"Cholesky · bfloat16 · CPU in TensorFlow {installed}: {want}" in panel
    listed = re.search(rf"Float dtypes with a CPU kernel in {re.escape(installed)}: ([^.]*)\.", panel)
    assert listed is not None and set(listed.group(1).split(", ")) == set(
        registered(installed, "Cholesky", "T", "CPU")
    )
    assert "tf.linalg.cholesky(tf.cast(" in panel  # compute in float32, then cast


def test_the_panel_escapes_what_it_shows() -> None:
    from explorer.app.kernels_details import release_html
    from explorer.queries.kernel_release import ReleaseCell

    payload = hostile.ALL_PAYLOADS
    cell = ReleaseCell(
        payload, payload, payload, payload, "no_kernel", payload, (payload,), "float32", payload, payload
    )
    assert (
        hostile.dangerous_markup(release_html(cell, {"workaround": payload, "workaround_how": payload})) == []
    )


def test_a_keyboard_reaches_any_cell_through_the_picker(app: Any) -> None:
    tab = app.select("kernels")
    app.state.set(op="cholesky", dtypes=["bfloat16"], mode="registry", backends=["tensorflow"])
    grid = tab.heatmap.grid
    picker = tab.picker
    assert [label for label, _ in picker.row.options] == list(grid.ops)
    assert len(picker.column.options) == grid.shape[1]
    assert grid.ops[picker.row.value] == "cholesky"  # the selected op is picked first
    other = next(i for i, op in enumerate(grid.ops) if op != "cholesky")
    picker.row.value, picker.column.value = other, grid.shape[1] - 1
    picker.button.click()
    column = grid.columns[grid.shape[1] - 1]
    assert f"{grid.ops[other]} · bfloat16 · tensorflow · {column.panel_label}" in text_of(
        tab.cell_details.value
    )
    assert f"<h4>{grid.ops[other]}: every cell explained</h4>" in tab.details.value
    # its scroll box holds a focusable handle: a keyboard focuses it, then arrow keys scroll
    assert tab.heatmap.scroll_handle in tab.heatmap.scroller.children
    assert "tabindex='0'" in tab.heatmap.scroll_handle.value


def test_heatmap_names_its_axes_and_sizes_its_header_and_scroll_box(app: Any) -> None:
    """Issue 28, item 9: axis titles; a header as tall as its rotated labels need (no empty
    band); in "whole catalog" a scroll box never taller than the window allows."""
    from explorer.ops import catalog

    tab = app.select("kernels")
    app.state.set(op="range", dtypes=["float16"], mode="registry", backends=["tensorflow"])
    heatmap = tab.heatmap
    assert "Rows" in heatmap.axes.value and "Columns" in heatmap.axes.value
    labels = list(heatmap.top_axis.tick_labels.values())
    header = int(heatmap.header.layout.height.removesuffix("px"))
    longest = max(len(label) for label in labels)
    # 12 px text at 40 degrees rises about 4.3 px per character: enough room, and not much more
    assert longest * 4.0 <= header - 20 <= longest * 4.6 + 4, (header, longest)
    tab.scope.value = "all"
    try:
        assert len(heatmap.grid.ops) >= len(catalog())
        box = heatmap.scroller.layout.max_height
        assert box.startswith("min(560px, calc(100vh - ") and box.endswith("px))"), box
        assert int(box.split("- ")[1].split("px")[0]) == 140 + int(heatmap.header.layout.height[:-2])
    finally:
        tab.scope.value = "group"


def test_nothing_probed_never_sits_beside_a_finished_probe(app: Any) -> None:
    """Issue 28, item 6: "probing: done in 7.9 s" beside "Nothing probed yet" is gone."""
    tab = app.select("kernels")
    app.state.set(op="range", dtypes=["float16"], mode="registry", backends=["tensorflow"], device="CPU")
    tab.panel.label.value = "probing: done in 7.9 s"  # what a finished job left in its bar
    tab.panel.progress.value = 1.0
    app.state.set(op="linspace", mode="eager", backends=["numpy"])  # nothing probed in this cache
    assert "Nothing probed yet" in text_of(tab.status.value)
    assert tab.panel.label.value == "" and tab.panel.progress.value == 0.0


def test_probed_status_names_no_implementation(app: Any, monkeypatch: Any) -> None:
    """Issue 28, item 13: the eager status said "sandboxed worker (cached on disk)"."""
    tab = app.select("kernels")
    probed = one_ok_numpy_cell()
    monkeypatch.setattr(tab.rows, "probed_frame", lambda ops, dtypes, mode: (probed, 0))
    app.state.set(op="range", dtypes=["float16"], backends=["numpy"], mode="eager", device="CPU")
    status = text_of(tab.status.value)
    assert "Showing 1 ops" in status and "really run on this machine" in status
    assert "sandbox" not in status and "cached on disk" not in status
    app.state.set(mode="registry")


def test_probe_now_says_when_it_switches_mode(app: Any) -> None:
    """Issue 28, item 4: Probe now in mode registry shows its probes in mode eager, and says so."""
    from types import SimpleNamespace

    tab = app.select("kernels")
    app.state.set(op="range", dtypes=["float16"], mode="registry", backends=["numpy"], device="CPU")
    assert "backends" not in app.controls.visible_fields()
    tab._probe_done(SimpleNamespace(status="done", error=None))  # what a finished probe job calls
    assert app.state.mode == "eager" and "backends" in app.controls.visible_fields()
    said = text_of(tab.status.value)
    assert "Mode changed from registry to eager" in said and "ran numpy" in said, said
    app.state.set(mode="registry")
