"""The app headless: set widget values, assert on the state and on what the tabs render."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from explorer.app.jobs import Job
from explorer.app.loader import BackgroundLoader
from explorer.app.state import AppState


def png_of(tab: Any) -> str:
    assert "px-msg-error" not in tab.status.value, tab.status.value
    (bundle,) = tab.plot.outputs
    return str(bundle["data"]["image/png"])


def html_of(out: Any) -> str:
    """The HTML an Output widget or an HTML widget shows."""
    if hasattr(out, "outputs"):
        return "".join(str(o["data"].get("text/html", "")) for o in out.outputs)
    return str(out.value)


@pytest.fixture
def app() -> Any:
    import explorer

    return explorer.App(
        load_tensorflow=False, tab="ranges", op="exp", dtypes=["float16"], backends=["numpy", "emulated"]
    )


# ------------------------------------------------------------------------------------- state


def test_state_validates_normalises_and_notifies_once() -> None:
    state = AppState()
    seen: list[dict[str, Any]] = []
    state.observe(seen.append)
    state.set(dtypes=["bf16", "half", "fp16"], device="gpu")
    assert state.dtypes == ("bfloat16", "float16")
    assert state.device == "GPU"
    assert len(seen) == 1 and set(seen[0]) == {"dtypes", "device"}
    state.set(dtypes=("bfloat16", "float16"))  # no change, no notification
    assert len(seen) == 1


@pytest.mark.parametrize(
    ("field", "value", "listed"),
    [
        ("op", "expp", "exp"),
        ("dtypes", ["float17"], "float16"),
        ("device", "TPU", "GPU"),
        ("backends", ["mxnet"], "emulated"),
        ("mode", "jit", "xla"),
        ("value", "one", "nan"),
        ("policies", ["float8"], "mixed_float16"),
    ],
)
def test_state_rejects_bad_values_listing_the_choices(field: str, value: Any, listed: str) -> None:
    state = AppState()
    before = state.as_dict()
    with pytest.raises(ValueError, match=listed):
        state.set(**{field: value, "mode": "eager"} if field != "mode" else {field: value})
    assert state.as_dict() == before  # nothing half-written


def test_state_unknown_field_and_observer_names() -> None:
    state = AppState()
    with pytest.raises(ValueError, match="valid fields"):
        state.set(colour="red")
    with pytest.raises(ValueError, match="valid fields"):
        state.observe(lambda c: None, names=["colour"])
    with pytest.raises(TypeError):
        state.observe("not callable")  # type: ignore[arg-type]


def test_state_observer_filter_and_unobserve() -> None:
    state = AppState()
    ops: list[Any] = []
    stop = state.observe(lambda ch: ops.append(ch["op"]), names=["op"])
    state.set(dtypes=["float32"])
    state.set(op="log")
    stop()
    state.set(op="exp")
    assert ops == [("range", "log")]


# ------------------------------------------------------------------------------------- widgets <-> state


@pytest.mark.slow
def test_import_app_is_light_and_app_without_tensorflow_does_not_import_it() -> None:
    code = (
        "import sys, explorer; assert 'ipywidgets' not in sys.modules; "
        "app = explorer.App(load_tensorflow=False); "
        "print(sorted(m for m in ('tensorflow', 'keras', 'torch', 'matplotlib.pyplot') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_widgets_write_to_state_and_follow_it(app: Any) -> None:
    c = app.controls
    c.dtypes.value = ("bfloat16", "float8_e4m3fn")
    assert app.state.dtypes == ("bfloat16", "float8_e4m3fn")
    c.op.value = "log"
    assert app.state.op == "log"
    c.mode.value = "xla"
    assert app.state.mode == "xla"
    app.state.set(dtypes=["float16"], device="GPU", backends=["numpy"])
    assert tuple(c.dtypes.value) == ("float16",)
    assert c.device.value == "GPU"
    assert tuple(c.backends.value) == ("numpy",)


def test_empty_selection_is_refused_with_a_message_and_widget_restored(app: Any) -> None:
    app.controls.dtypes.value = ()
    assert app.state.dtypes == ("float16",)
    assert tuple(app.controls.dtypes.value) == ("float16",)
    assert "at least one dtype" in app.controls.message.value


def test_op_search_narrows_the_dropdown(app: Any) -> None:
    from explorer.ops import catalog

    app.controls.op_search.value = "lo"  # several matches: the list narrows
    names = [v for _, v in app.controls.op.options]
    assert "log" in names and all("lo" in n.lower() or n == app.state.op for n in names)  # raw ops too
    assert not any(n.startswith("_") for n in names)  # TensorFlow's internal raw ops are not offered
    app.controls.op_search.value = "log"
    assert app.state.op == "log"  # the op named exactly is selected, and the list is not trapped
    names = [v for _, v in app.controls.op.options]
    assert set(catalog()) <= set(names)


def test_every_widget_has_a_stable_css_class(app: Any) -> None:
    c = app.controls
    for widget, css in [
        (c.op, "px-op"),
        (c.dtypes, "px-dtypes"),
        (c.device, "px-device"),
        (c.backends, "px-backends"),
        (c.mode, "px-mode"),
        (c.op_search, "px-op-search"),
    ]:
        assert css in widget._dom_classes
    for key, tab in app.tabs.items():
        assert "px-plot" in tab.plot._dom_classes and f"px-{key}-plot" in tab.plot._dom_classes


# ------------------------------------------------------------------------------------- newcomer controls


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_each_tab_shows_exactly_the_controls_of_its_fields(app: Any) -> None:
    from explorer.app.main import _tab_classes

    c = app.controls
    controlled = set(c.by_field)
    for cls in _tab_classes():
        app.select(cls.key)
        shown = {f for f, ws in c.by_field.items() if all(w.layout.display != "none" for w in ws)}
        hidden = {f for f, ws in c.by_field.items() if all(w.layout.display == "none" for w in ws)}
        # mode registry shows CPU and GPU side by side and only TensorFlow's registry declares:
        # the Kernels tab hides Device and Backends there
        fields = set(cls.fields) - ({"device", "backends"} if cls.key == "kernels" else set())
        assert shown == fields & controlled, cls.key
        assert hidden == controlled - fields, cls.key
    app.select("training")  # policies only: op, dtypes, device, backends and mode are all hidden
    assert c.op.layout.display == "none" and c.dtypes.layout.display == "none"
    assert c.device.layout.display == "none" and c.mode.layout.display == "none"


def test_dtype_and_backend_toggles_need_no_modifier_key(app: Any) -> None:
    from explorer.formats import FORMAT_NAMES

    c = app.controls
    app.select("explain")  # a tab that draws nothing for these fields: only the binding is timed here
    assert sorted(c.dtypes.buttons) == sorted(FORMAT_NAMES)  # all 16 formats, each its own button
    assert [b.value for b in c.dtypes.buttons.values()] == [n == "float16" for n in c.dtypes.buttons]
    c.dtypes.buttons["bfloat16"].value = True  # one click adds
    c.dtypes.buttons["float8_e4m3fn"].value = True
    assert app.state.dtypes == ("float16", "bfloat16", "float8_e4m3fn")
    c.dtypes.buttons["float16"].value = False  # one click removes
    assert app.state.dtypes == ("bfloat16", "float8_e4m3fn")
    app.state.set(dtypes=["float32"])  # the buttons follow the state
    assert [n for n, b in c.dtypes.buttons.items() if b.value] == ["float32"]
    c.dtypes.buttons["float32"].value = False  # the last one cannot go: refused, button back on
    assert app.state.dtypes == ("float32",) and c.dtypes.buttons["float32"].value
    assert "at least one dtype" in c.message.value
    c.backends.buttons["torch"].value = True
    assert app.state.backends == ("numpy", "emulated", "torch")
    assert "px-dtype-float8_e4m3fn" in c.dtypes.buttons["float8_e4m3fn"]._dom_classes


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_find_op_selects_its_match(app: Any) -> None:
    from explorer.ops import catalog

    c = app.controls
    c.op_search.value = "tanh"  # an op's exact name: selected at once
    assert app.state.op == "tanh" and c.op.value == "tanh"
    only = [n for n in catalog() if "squared_diff" in n]
    assert len(only) == 1
    c.op_search.value = "squared_diff"  # the only match: selected at once
    assert app.state.op == only[0] == c.op.value
    c.op_search.value = "sq"  # several matches: the list narrows, Enter picks the top one
    assert app.state.op == only[0]
    top = c.op.options[0][1] if c.op.options[0][1] != only[0] else c.op.options[1][1]
    first_match = next(n for n in catalog() if "sq" in f"{n}  ·  {catalog()[n].group}".lower())
    c.submit_search()
    assert app.state.op == first_match == c.op.value
    assert top in (first_match, only[0])


def _panels(markup: str) -> dict[str, str]:
    import re

    starts = [
        (m.start(), m.group(1)) for m in re.finditer(r"<div class='px-panel' data-dtype='([^']+)'>", markup)
    ]
    return {
        d: markup[a : (starts[i + 1][0] if i + 1 < len(starts) else len(markup))]
        for i, (a, d) in enumerate(starts)
    }


def _title_of(markup: str, css: str) -> float:
    import html as html_module
    import re

    match = re.search(rf"class='px-fact {css}' title='([^']+)'", markup)
    assert match, css
    return float(html_module.unescape(match.group(1)))


def _dtype_of(name: str) -> Any:
    return np.dtype(np.float16) if name == "float16" else np.dtype(getattr(ml_dtypes, name))


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_ranges_shows_one_panel_per_selected_dtype_with_its_own_limits(app: Any) -> None:
    dtypes = ["float16", "bfloat16", "float8_e4m3fn"]
    app.state.set(op="exp", dtypes=dtypes)
    tab = app.select("ranges")
    panels = _panels(html_of(tab.plot))
    assert list(panels) == dtypes and list(tab.figures) == dtypes
    for name, markup in panels.items():
        info = ml_dtypes.finfo(_dtype_of(name))  # independent: ml_dtypes' own facts
        assert _title_of(markup, "px-fact-max") == float(info.max)
        assert _title_of(markup, "px-fact-smallest-subnormal") == float(info.smallest_subnormal)
        bits = 8 if info.bits == 8 else 16  # every finite value, exp in float64, rounded back
        codes = np.arange(2**bits, dtype=np.uint8 if bits == 8 else np.uint16)
        with np.errstate(invalid="ignore"):
            xs = codes.view(_dtype_of(name)).astype(np.float64)
        xs = xs[np.isfinite(xs)]
        with np.errstate(over="ignore", invalid="ignore"):
            rounded = np.exp(xs).astype(_dtype_of(name)).astype(np.float64)
        first_overflow = float(xs[~np.isfinite(rounded) & (xs > 0)].min())
        shown = f'title="{first_overflow!r}"' in markup or f"<td>{first_overflow:g}</td>" in markup
        assert shown, (name, first_overflow)  # exact on hover, or already exact as shown
        assert "data:image/png;base64," in markup
    assert tab.export("png", "bfloat16").startswith(b"\x89PNG")
    tab.export_png.click()
    assert tab.export_link.value.count("download=") == 3


@pytest.mark.slow
def test_side_by_side_caps_the_panels_with_a_note(app: Any) -> None:
    from explorer.app.tab import MAX_PANELS

    many = ["float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float4_e2m1fn"]
    app.state.set(op="exp", dtypes=many)
    for key in ("ranges", "accuracy"):
        tab = app.select(key)
        assert list(_panels(html_of(tab.plot))) == many[:MAX_PANELS] == list(tab.figures)
        status = re.sub(r"<[^>]+>", "", tab.status.value)  # words: a format's fnuz is a link
        assert f"first {MAX_PANELS} of {len(many)}" in status
        assert all(d in status for d in many[MAX_PANELS:]), status


@pytest.mark.slow
def test_accuracy_shows_one_panel_per_dtype_with_its_own_numbers(app: Any) -> None:
    dtypes = ["float16", "bfloat16"]
    app.state.set(op="exp", dtypes=dtypes, backends=["numpy"])
    tab = app.select("accuracy")
    panels = _panels(html_of(tab.plot))
    assert list(panels) == dtypes
    terms = np.random.default_rng(0).uniform(0, 1, 10_000)
    for name, markup in panels.items():
        dtype = _dtype_of(name)
        acc = dtype.type(0)
        for t in terms.astype(dtype):  # independent: an accumulator in the format, rounded every step
            acc = dtype.type(np.float32(acc) + np.float32(t))
        assert f"<td>format</td><td>{float(acc):g}</td>" in markup, (name, float(acc))
    # numpy's exp in float16, every input, against float64's exp correctly rounded to float16
    codes = np.arange(2**16, dtype=np.uint16)
    xs = codes.view(np.float16)
    xs = np.unique(xs[np.isfinite(xs)].astype(np.float64)).astype(np.float16)  # -0 and 0: one input
    with np.errstate(over="ignore", under="ignore"):
        got = np.exp(xs).astype(np.float64)
        want = np.exp(xs.astype(np.float64)).astype(np.float16).astype(np.float64)
    n = xs.size
    fraction = (n - int(np.sum(got != want))) / n
    assert f'title="{fraction!r}"' in panels["float16"], fraction
    assert not hasattr(np, "bfloat16") and "unsupported_dtype" in panels["bfloat16"]  # numpy cannot


def test_readable_numbers_keep_the_exact_value_on_hover() -> None:
    import html as html_module
    import re

    from explorer.app import numbers

    rng = np.random.default_rng(0)
    samples = [0.2490234225401737, 3.4028234663852886e38, 5.960464477539063e-08, -1e-300, 11.09375]
    samples += list(rng.standard_normal(50) * 10.0 ** rng.integers(-30, 30, 50))
    for value in samples:
        cell = numbers.cell_html(float(value))
        match = re.fullmatch(r'<span title="([^"]+)">([^<]+)</span>', cell)
        if match is None:  # short form already exact: it reads back as the same float
            assert float(html_module.unescape(cell)) == value
            continue
        assert float(html_module.unescape(match.group(1))) == value  # the exact value round-trips
        assert len(match.group(2)) < len(repr(float(value)))
    assert numbers.readable(0.2490234225401737) == "0.249"
    assert numbers.readable(3.4028234663852886e38) == "3.403e+38"
    assert numbers.readable(9.0) == "9" and numbers.readable(None) == numbers.readable("") == "—"
    assert "&lt;script&gt;" in numbers.table_html([{"x": "<script>"}])
    assert 'title="a &quot;reason&quot;"' in numbers.cell_html(None, 'a "reason"')


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_bits_tab_shows_missing_values_one_way_and_exponents_as_integers(app: Any) -> None:
    app.state.set(dtypes=["float16", "float8_e4m3fn"], value="1000")
    markup = html_of(app.select("bits").details)
    assert "None" not in markup and "9.0" not in markup
    assert "<td>9</td>" in markup  # 1000 = 1.953125 * 2**9 in float16
    assert "—" in markup  # float8_e4m3fn's NaN has no exponent, no neighbours, no relative error


@pytest.mark.parametrize(
    ("text", "name", "expect"),
    [("1000", "float8_e4m3fn", "nan"), ("1e6", "float16", "inf"), ("1e-9", "float16", "zero")],
)
def test_bits_explains_values_beyond_the_format(app: Any, text: str, name: str, expect: str) -> None:
    import math

    info = ml_dtypes.finfo(_dtype_of(name))  # independent: the format's facts from ml_dtypes
    with np.errstate(over="ignore", invalid="ignore"):  # expected: the value is beyond the format
        stored = float(np.array([float(text)]).astype(_dtype_of(name)).astype(np.float64)[0])
    app.state.set(dtypes=[name], value=text)
    markup = html_of(app.select("bits").details)
    import re

    (said,) = re.findall(rf"<li><b>{name}</b>: ([^<]+)</li>", markup)
    if expect == "nan":
        assert math.isnan(stored)
        assert f"{float(info.max):g}" in said and "no infinity" in said and "NaN" in said
    elif expect == "inf":
        assert math.isinf(stored)
        assert f"{float(info.max):g}" in said and said.rstrip(".").endswith("inf")
    else:
        assert stored == 0.0
        exponent = int(math.log2(float(info.smallest_subnormal)))
        assert 2.0**exponent == float(info.smallest_subnormal)
        assert "underflows to 0" in said and f"2**{exponent}" in said


# ------------------------------------------------------------------------------------- rendering


def test_ranges_tab_shows_the_exact_float16_exp_overflow_threshold(app: Any) -> None:
    tab = app.tabs["ranges"]
    assert app.selected_tab is tab and not tab.dirty
    assert png_of(tab)
    values = np.arange(2**16, dtype=np.uint16).view(np.float16)
    finite = values[np.isfinite(values)]
    with np.errstate(over="ignore"):
        first_inf = float(finite[np.isinf(np.exp(finite))].min())  # independent: every float16 input
    assert first_inf == 11.09375
    assert repr(first_inf) in html_of(tab.details)


def test_changing_dtype_or_op_rerenders_ranges(app: Any) -> None:
    tab = app.tabs["ranges"]
    before = png_of(tab)
    app.controls.dtypes.value = ("bfloat16",)
    after_dtype = png_of(tab)
    assert after_dtype != before
    app.controls.op.value = "square"
    assert png_of(tab) != after_dtype
    assert "square" in str(tab.figure.axes[1].get_title())


def test_non_elementwise_op_shows_number_lines_and_a_note(app: Any) -> None:
    app.controls.op.value = "cholesky"
    tab = app.tabs["ranges"]
    assert png_of(tab)
    assert "not an elementwise op" in tab.status.value


def test_tabs_render_lazily_when_selected(app: Any) -> None:
    bits = app.tabs["bits"]
    app.state.set(value="65519")
    assert bits.dirty and bits.render_count == 0
    app.select("bits")
    assert not bits.dirty and bits.render_count == 1


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_bits_tab_agrees_with_ml_dtypes(app: Any) -> None:
    app.state.set(dtypes=["float16", "bfloat16", "float8_e4m3fn"], value="0.1")
    tab = app.select("bits")
    markup = html_of(tab.details)
    for dtype, width in ((np.float16, 16), (ml_dtypes.bfloat16, 16), (ml_dtypes.float8_e4m3fn, 8)):
        pattern = np.array([0.1]).astype(dtype).view(np.uint16 if width == 16 else np.uint8)[0]
        assert format(int(pattern), f"0{width}b") in markup
    assert "Every value of float8_e4m3fn (256 code points)" in markup
    tab.value.value = "not a number"
    assert app.state.value == "0.1"
    assert "must be a number" in tab.status.value


def test_accuracy_tab_lists_each_backend(app: Any) -> None:
    tab = app.select("accuracy")
    assert "<svg" in html_of(tab.plot)  # a vector figure
    markup = html_of(tab.details).replace("<wbr>", "")  # headers may wrap after "_"
    assert "numpy" in markup and "emulated" in markup and "max_ulp" in markup


def test_accuracy_tab_shows_where_a_bfloat16_sum_stagnates(app: Any) -> None:
    app.state.set(dtypes=["bfloat16"], op="cholesky")  # accumulation is shown for any op
    tab = app.select("accuracy")
    assert "<svg" in html_of(tab.plot) and "not an elementwise op" in tab.status.value
    terms = np.random.default_rng(0).uniform(0, 1, 10_000).astype(ml_dtypes.bfloat16)
    acc = ml_dtypes.bfloat16(0)
    for t in terms:  # independent: a bfloat16 accumulator, rounded after every addition
        acc = ml_dtypes.bfloat16(np.float32(acc) + np.float32(t))
    assert float(acc) == 256.0
    assert "<td>256</td>" in html_of(tab.details)


def test_errors_are_shown_as_a_readable_message(app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    tab = app.tabs["accuracy"]

    def boom() -> None:
        raise RuntimeError("the engine fell over\nsecond line of detail")

    monkeypatch.setattr(tab, "render", boom)
    tab.refresh()
    assert "the engine fell over" in tab.status.value
    assert "px-msg-error" in tab.status.value
    assert "Traceback" not in tab.status.value


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_figure_export_png_and_svg(app: Any, tmp_path: Path) -> None:
    tab = app.tabs["ranges"]
    assert tab.export("png").startswith(b"\x89PNG")
    assert b"<svg" in tab.export("svg")[:2000]
    with pytest.raises(ValueError, match="png, svg"):
        tab.export("gif")
    path = app.export("ranges", str(tmp_path / "ranges.svg"))
    assert Path(path).read_bytes().lstrip().startswith(b"<?xml")
    tab.export_png.click()
    assert "download=" in tab.export_link.value and "data:image/png;base64," in tab.export_link.value


def test_kernels_tab_shows_the_registry_before_tensorflow_loads(app: Any) -> None:
    """The installed release's shipped registry answers while TensorFlow is not loaded (the
    fixture's App never loads it): cholesky's declared rows are those of a separate reading of
    TensorFlow's registry (tests/support/registry_oracle.py)."""
    from tests.support.registry_oracle import oracle

    tab = app.select("kernels")
    assert not tab.needs_tensorflow
    app.state.set(op="cholesky", dtypes=("float16", "bfloat16"), backends=("tensorflow",), mode="registry")
    tab.refresh()
    assert "px-msg-loading" not in tab.status.value, tab.status.value
    assert app.ctx.tf_loader.status == "idle"
    rows = tab.declared_frame(["cholesky"], ("float16", "bfloat16"))
    truth = oracle()
    for dtype in ("float16", "bfloat16"):
        for device in ("CPU", "XLA_CPU_JIT"):
            cell = (rows["raw_op"] == "Cholesky") & (rows["dtype"] == dtype) & (rows["device"] == device)
            got = rows[cell]["status"].tolist()
            assert got == [truth.declared("Cholesky", dtype, device)], (dtype, device, got)


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_kernels_heatmap_cells_match_a_separate_reading_of_the_registry(app: Any) -> None:
    """Every cell of the interactive heatmap (colour, glyph, hover text) against the registry read
    by tests/support/registry_oracle.py; CPU and GPU columns side by side, GPU cells marked declared."""
    from explorer.ops import catalog
    from explorer.outcome import STATUSES
    from explorer.runtime.registry import get_registry
    from tests.support.registry_oracle import oracle

    glyphs = {"ok": "+", "no_kernel": "N", "unsupported_dtype": "U"}
    colours = {"ok": "#44bbee", "no_kernel": "#cc0000", "unsupported_dtype": "#552211"}
    tab = app.select("kernels")
    app.state.set(op="cholesky", dtypes=("float16", "bfloat16"), backends=("tensorflow",), mode="registry")
    grid = tab.heatmap.grid
    truth = oracle()
    group = [n for n, o in catalog().items() if o.group == catalog()["cholesky"].group]
    shipped = get_registry()
    ops = [n for n in group if any(shipped.has_op(r) for r in catalog()[n].tf_raw_ops)]
    assert grid.ops == ops
    devices = [(c.device, c.dtype) for c in grid.columns]
    assert devices == [
        (d, t) for d in ("CPU", "XLA_CPU_JIT", "GPU", "XLA_GPU_JIT") for t in ("float16", "bfloat16")
    ]
    codes = tab.heatmap.cells.color
    labels = dict(
        zip(
            tab.heatmap.glyphs.text,
            zip(tab.heatmap.glyphs.x, tab.heatmap.glyphs.y, strict=True),
            strict=False,
        )
    )
    assert labels  # the glyphs are drawn
    for i, op in enumerate(ops):
        for j, column in enumerate(grid.columns):
            said = [
                truth.declared(r, column.dtype, column.device)
                for r in catalog()[op].tf_raw_ops
                if shipped.has_op(r)
            ]
            want = next((s for s in ("unsupported_dtype", "no_kernel") if s in said), "ok")
            assert grid.status(i, j) == want, (op, column)
            assert STATUSES[int(codes[i][j])] == want  # the colour index bqplot draws
            assert grid.colors()[i][j] == colours[want]
            assert grid.glyph(i, j) == f"({glyphs[want]})"  # declared: the letter in brackets
            assert f"{op} · {column.dtype}" in grid.summary(i, j) and want in grid.summary(i, j)
    assert "this machine has no GPU" in tab.status.value
    # a click (bqplot's element_click message) shows the cell and its release history
    j = [c.device for c in grid.columns].index("GPU")
    tab.heatmap.cells._handle_custom_msgs(
        None, {"event": "element_click", "data": {"rowNum": 0, "columnNum": j}}
    )
    shown = re.sub(r"<[^>]+>", "", tab.cell_details.value)  # the words, glossary links aside
    assert f"{ops[0]} · float16 · tensorflow · GPU declared" in shown
    assert grid.records(0, j)[0]["explanation"].replace("'", "&#x27;") in shown
    assert "float16 · GPU" in tab.cell_details.value  # beside the heatmap, not in the strip above it
    assert tab.export("png").startswith(b"\x89PNG") and b"<svg" in tab.export("svg")[:2000]


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_kernels_heatmap_follows_each_op_and_dtypes_change(app: Any, monkeypatch: Any) -> None:
    """Op and dtypes changed several times: after each change every heatmap label sits on the cells
    it names, and each cell's colour, glyph and hover text are those of ``availability()``'s rows
    for that selection, computed here apart from the app; each axis gets its tick labels before
    its tick values (bqplot's axis view draws tick values sent first with the old labels)."""
    from explorer.ops import catalog
    from explorer.outcome import STATUSES
    from explorer.queries.availability import availability
    from explorer.runtime.registry import get_registry

    glyphs = {"ok": "+", "no_kernel": "N", "unsupported_dtype": "U"}
    colours = {"ok": "#44bbee", "no_kernel": "#cc0000", "unsupported_dtype": "#552211"}
    worst_first = ("unsupported_dtype", "no_kernel", "ok")
    tab = app.select("kernels")
    heatmap = tab.heatmap
    sent: list[tuple[str, list[str]]] = []
    for name in ("row_axis", "top_axis", "bottom_axis"):
        axis = getattr(heatmap, name)

        def record(key: Any = None, axis: Any = axis, name: str = name) -> None:
            sent.append((name, [key] if isinstance(key, str) else list(key or [])))
            type(axis).send_state(axis, key)

        monkeypatch.setattr(axis, "send_state", record)
    selections = [
        ("range", ("float16",)),
        ("inv", ("float16", "bfloat16", "float32")),
        ("exp", ("bfloat16",)),
        ("range", ("float16", "bfloat16")),
        ("inv", ("float32", "float16")),
    ]
    for op, dtypes in selections:
        sent.clear()
        app.state.set(op=op, dtypes=dtypes, backends=("tensorflow",), mode="registry")
        group = [n for n, o in catalog().items() if o.group == catalog()[op].group]
        rows = availability(
            group,
            list(dtypes),
            "tensorflow",
            ["CPU", "GPU"],
            "registry",
            progress=False,
            registry=get_registry(),
        ).rows
        truth: dict[tuple[str, str, str], set[str]] = {}
        for r in rows.to_dict("records"):
            truth.setdefault((r["op"], r["dtype"], r["device"]), set()).add(r["status"])
        # what the widgets hold: labels at tick values, cell boundaries, colour codes, glyphs
        row_ticks = {v: heatmap.row_axis.tick_labels[_js_number(v)] for v in heatmap.row_axis.tick_values}
        top_ticks = {v: heatmap.top_axis.tick_labels[_js_number(v)] for v in heatmap.top_axis.tick_values}
        bottom_ticks = {
            v: heatmap.bottom_axis.tick_labels[_js_number(v)] for v in heatmap.bottom_axis.tick_values
        }
        assert sorted(top_ticks) == sorted(bottom_ticks)
        shown_ops = [label.removeprefix("▶ ") for label in row_ticks.values()]
        assert sorted(shown_ops) == sorted({k[0] for k in truth}), (op, dtypes, shown_ops)
        assert [label for label in row_ticks.values() if label.startswith("▶ ")] == [f"▶ {op}"]
        columns = {(t.split(" declared · ")[1], t.split(" declared · ")[0]) for t in top_ticks.values()}
        assert columns == {(d, dev) for _, d, dev in truth}, (op, dtypes, top_ticks)
        drawn = {
            (float(x), float(y)): text
            for x, y, text in zip(heatmap.glyphs.x, heatmap.glyphs.y, heatmap.glyphs.text, strict=True)
        }
        assert len(drawn) == len(truth)  # one glyph a cell, none left over from another selection
        codes = np.asarray(heatmap.cells.color)
        row_edges, column_edges = np.asarray(heatmap.cells.row), np.asarray(heatmap.cells.column)
        for y, row_label in row_ticks.items():
            i = int(np.searchsorted(row_edges, y)) - 1  # the cell row under the label
            for x, column_label in top_ticks.items():
                j = int(np.searchsorted(column_edges, x)) - 1
                device, dtype = column_label.split(" declared · ")
                assert bottom_ticks[x] == dtype
                cell_op = row_label.removeprefix("▶ ")
                found = truth[cell_op, dtype, device]
                assert found <= set(worst_first), found
                want = next(s for s in worst_first if s in found)
                where = (op, dtypes, cell_op, dtype, device)
                assert STATUSES[int(codes[i, j])] == want, where
                assert heatmap.colour.colors[int(codes[i, j])] == colours[want], where
                assert drawn[float(x), float(y)] == f"({glyphs[want]})", where
                heatmap.cells._handle_custom_msgs(
                    None, {"event": "hover", "data": {"rowNum": i, "columnNum": j}}
                )
                assert f"{cell_op} · {dtype} · tensorflow {device} declared: {want} (" in heatmap.tip.value, (
                    where
                )
        for name in ("row_axis", "top_axis", "bottom_axis"):
            keys = [k for axis, message in sent if axis == name for k in message]
            if "tick_values" in keys:
                assert "tick_labels" in keys[: keys.index("tick_values")], (name, sent)


def _js_number(value: float) -> str:
    """``String(value)`` in JavaScript, the key bqplot looks a tick label up by (shortest
    round-trip digits, no trailing ``.0``)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def test_kernels_heatmap_click_shows_the_real_error_and_workaround_escaped(app: Any) -> None:
    """A snapshot row with an error and a workaround: the hover text and the click show them,
    escaped; the hover table's title attribute holds the error with no raw newline."""
    import pandas as pd

    from explorer.analysis.availability_rows import EXTRA_DEFAULTS
    from explorer.queries.availability_result import AvailabilityResult

    error = 'NotFoundError: no <kernel> for "Exp"\nsecond line & more'
    base = dict(EXTRA_DEFAULTS, backend="tensorflow", op="exp", raw_op="Exp", device="CPU", mode="eager")
    rows = pd.DataFrame(
        [
            dict(
                base,
                dtype="float16",
                status="error",
                error=error,
                explanation="it failed <here>",
                workaround="tf.cast(x, 'float32')",
                workaround_how="compute in float32",
            ),
            dict(base, dtype="float32", status="ok", error="", explanation="ran", workaround=""),
        ]
    )
    tab = app.select("kernels")
    app.state.set(
        op="exp", dtypes=("float16", "float32"), backends=("tensorflow",), mode="eager", device="CPU"
    )
    tab.show_snapshot(AvailabilityResult(rows, {}), "mine.json")
    grid = tab.heatmap.grid
    assert grid.ops == ["exp"] and [c.dtype for c in grid.columns] == ["float16", "float32"]
    assert grid.glyphs() == [["E", "+"]]  # ran: no brackets
    tab.heatmap.hover(0, 0)
    assert "error: NotFoundError: no &lt;kernel&gt; for &quot;Exp&quot;" in tab.heatmap.tip.value
    tab.heatmap.cells._handle_custom_msgs(
        None, {"event": "element_click", "data": {"rowNum": 0, "columnNum": 0}}
    )
    shown = tab.cell_details.value
    assert "NotFoundError: no &lt;kernel&gt; for &quot;Exp&quot;\nsecond line &amp; more" in shown
    assert "it failed &lt;here&gt;" in shown and "compute in float32" in shown
    assert "tf.cast(x, &#x27;float32&#x27;)" in shown and "<kernel>" not in shown
    import re

    titles = re.findall(r'title="([^"]*)"', html_of(tab.details))
    errors = [t for t in titles if "NotFoundError" in t]
    assert errors and "\n" not in errors[0]
    assert "no &lt;kernel&gt; for &quot;Exp&quot;" in errors[0] and "&#10;" in errors[0]


def test_kernels_snapshot_upload_twice_and_errors_name_the_file(app: Any, tmp_path: Path) -> None:
    """Each upload gets a fresh button (so the same file again is a new upload), with a tooltip;
    a bad file is named by the user's file name, not where it was stored."""
    tab = app.select("kernels")
    first = tab.upload
    assert first.tooltip and "snapshot" in first.tooltip
    bad = json.dumps({"kind": "nope"}).encode()
    import datetime

    when = datetime.datetime.now(datetime.UTC)
    first.value = (
        {
            "name": "mine.json",
            "content": bad,
            "type": "application/json",
            "size": len(bad),
            "last_modified": when,
        },
    )
    assert "could not load mine.json" in tab.status.value
    assert tab.upload is not first and tab.upload in tab.snapshot_bar.children and tab.upload.value == ()
    stored = tmp_path / "deep" / "stored-copy.json"
    stored.parent.mkdir()
    stored.write_bytes(bad)
    with pytest.raises(ValueError) as info:
        tab.load_snapshot_file(stored, "mine.json")
    assert "mine.json" in str(info.value) and str(tmp_path) not in str(info.value)


@pytest.mark.parametrize("registry_at_hand", [False, True])
def test_failed_tensorflow_load_is_reported_readably(registry_at_hand: bool, monkeypatch: Any) -> None:
    """Without a registry at hand the kernels tab says it needs TensorFlow; with the shipped one
    it still shows the declared rows.  Either way the banner gives the import error, no traceback."""
    import explorer
    from explorer.runtime import registry

    monkeypatch.setattr(registry, "available_without_tensorflow", lambda: registry_at_hand)

    def fail() -> None:
        raise ImportError("libcudart.so.12: cannot open shared object file")

    loader = BackgroundLoader("TensorFlow", fail)
    app = explorer.App(tf_loader=loader, tab="kernels")
    if registry_at_hand:  # no tab needs TensorFlow in the kernel: nothing starts the import but a user
        assert loader.status == "idle"
        loader.start()
    deadline = time.monotonic() + 10
    while "could not be loaded" not in app.banner.value and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "could not be loaded" in app.banner.value and "libcudart" in app.banner.value
    app.selected_tab.refresh()
    status = app.selected_tab.status.value
    if registry_at_hand:
        words = re.sub(r"<[^>]+>", "", status)  # glossary links aside
        assert "declared by TensorFlow" in words and "px-msg-error" not in status, status
    else:
        assert "needs TensorFlow, which could not be loaded" in status
    assert "Traceback" not in status


# ------------------------------------------------------------------------------------- jobs and loader


def test_job_reports_progress_and_can_be_cancelled() -> None:
    started = threading.Event()
    seen: list[float] = []

    def work(ctx: Any) -> int:
        for i in range(10_000):
            ctx.progress(i / 10_000, f"step {i}")
            started.set()
            ctx.check()
            time.sleep(0.001)
        return 1

    job = Job("loop", work).on_progress(lambda j: seen.append(j.fraction))
    job.start()
    assert started.wait(5)
    job.cancel()
    job.wait(5)
    assert job.status == "cancelled" and job.result is None
    assert seen and max(seen) < 1.0


def test_failed_job_keeps_a_readable_error() -> None:
    job = Job("bad", lambda ctx: 1 / 0).start()
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        job.wait(5)
    assert job.status == "failed"


def test_loader_runs_once_and_calls_back() -> None:
    calls: list[str] = []
    loader = BackgroundLoader("x", lambda: calls.append("ran") or 7)
    got: list[int] = []
    loader.add_done_callback(lambda ld: got.append(ld.result))
    loader.start().start()
    assert loader.wait(5) == 7
    loader.add_done_callback(lambda ld: got.append(ld.result))  # already done: called at once
    assert calls == ["ran"] and got == [7, 7]


# ------------------------------------------------------------------------------------- launchers


def test_voila_launcher_is_workshop_mode_and_offline(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "explorer", "app", "--dry-run", "--no-browser"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=Path(__file__).parents[1],
    )
    cmd = out.stdout
    for part in (
        "voila",
        "explorer.ipynb",
        "--Voila.ip=127.0.0.1",
        "disable_check_xsrf",
        "cull_idle_timeout=900",
        "cull_interval=60",
        "--template=px-offline",
        "--no-browser",
    ):
        assert part in cmd
    from explorer.cli.app import write_offline_template

    root = write_offline_template(tmp_path)
    template = (root / "voila" / "templates" / "px-offline" / "index.html.j2").read_text()
    assert "https://" not in template and "super.super()" in template
    assert json.loads((root / "voila" / "templates" / "px-offline" / "conf.json").read_text()) == {
        "base_template": "lab"
    }


def test_the_first_view_file_renders_verbatim_through_jinja(tmp_path: Path) -> None:
    """The server's first view goes into the page as written: Jinja syntax in it is text, not
    template code; what would end its raw block, or an oversized view, is refused."""
    import jinja2

    from explorer.app.first_view import MAX_FIRST_VIEW_BYTES, first_view_template

    html = "<style>a{b:c}</style><p>{{ 7 * 7 }} {% for x in y %}{# c #}</p>"
    env = jinja2.Environment(loader=jinja2.DictLoader({"view.html": first_view_template(html)}))
    page = env.from_string(
        "<body>{% include 'view.html' ignore missing %}{% include 'no.html' ignore missing %}"
    )
    assert page.render() == f"<body><div class='px-first-view'>{html}</div>"
    for hostile in ("{% endraw %}{{ cycler.__init__ }}", "{%- endraw -%}", "{%+endraw%}"):
        with pytest.raises(ValueError, match="endraw"):
            first_view_template(hostile)
    with pytest.raises(ValueError, match="bytes"):
        first_view_template("x" * (MAX_FIRST_VIEW_BYTES + 1))


@pytest.mark.slow
def test_the_first_view_file_is_the_default_apps_preview(tmp_path: Path) -> None:
    """``python -m explorer.app.preview FILE`` writes the default app's preview (its tables as
    ``App().preview_html()`` has them in this process) and leaves no temporary file; TensorFlow is
    not imported for it."""
    from explorer.app import App

    target = tmp_path / "px-first-view.html"
    code = (
        "import sys; from explorer.app.preview import main; rc = main([sys.argv[1]]); "
        "assert 'tensorflow' not in sys.modules; sys.exit(rc)"
    )
    subprocess.run([sys.executable, "-c", code, str(target)], check=True, timeout=120)
    written = target.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["px-first-view.html"]
    ours = App(load_tensorflow=False).preview_html()

    def without_ids(text: str) -> str:  # pandas' Styler gives each table a random id
        return re.sub(r"T_[0-9a-f]{5}", "T_id", text)

    assert without_ids(written) == without_ids(
        "{% raw %}<div class='px-first-view'>" + ours + "</div>{% endraw %}"
    )
    failed = subprocess.run(
        [sys.executable, "-m", "explorer.app.preview", str(tmp_path / "missing" / "view.html")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert failed.returncode == 1 and not (tmp_path / "missing").exists()
    assert failed.stderr.count("\n") == 1 and "first view was not written" in failed.stderr


def test_app_launcher_writes_the_first_view_only_for_the_shipped_notebook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``precision-explorer app`` starts the first-view writer beside Voila for its own notebook
    (whose app is the default one), not for one the user names, nor with the CDN template; a
    writer still running when Voila stops is stopped."""
    import explorer.cli.app as app_cli
    import explorer.server.process_tree as process_tree
    from explorer.cli import build_parser

    started: list[Path] = []
    writers: list[subprocess.Popen[bytes]] = []

    def fake_writer(root: Path) -> subprocess.Popen[bytes]:
        started.append(root)
        writers.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]))
        return writers[-1]

    monkeypatch.setattr(app_cli, "start_first_view", fake_writer)
    monkeypatch.setattr(process_tree, "supervise", lambda cmd, env: 0)
    own = tmp_path / "mine.ipynb"
    own.write_text("{}")
    for extra, expected in (([], 1), (["--notebook", str(own)], 0), (["--cdn-template"], 0)):
        started.clear()
        args = build_parser().parse_args(["app", "--no-browser", *extra])
        assert app_cli.run(args) == 0
        assert len(started) == expected, extra
    assert len(writers) == 1 and writers[0].poll() is not None, "the writer was left running"


def test_lab_launcher_opens_the_explorer_notebook() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "explorer", "lab", "--dry-run"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=Path(__file__).parents[1],
    )
    assert "--LabApp.default_url=/lab/tree/notebooks/explorer.ipynb" in out.stdout
    assert "--ip=127.0.0.1" in out.stdout


def test_lab_runs_with_a_workspace_of_its_own_removed_after(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``precision-explorer lab`` gives Lab a fresh workspace directory (a user's saved workspace
    for another folder would reopen files this server lacks: 404s) and removes it afterwards;
    notebook_shim stays unloaded (its loading printed a DeprecationWarning)."""
    import argparse

    from explorer.cli import lab as lab_cli

    seen: list[tuple[list[str], bool]] = []

    pages: list[dict[str, Any]] = []

    def call(cmd: list[str], env: dict[str, str]) -> int:
        [workspace] = [a.split("=", 1)[1] for a in cmd if a.startswith("--LabApp.workspaces_dir=")]
        seen.append((cmd, Path(workspace).is_dir() and not any(Path(workspace).iterdir())))
        first = Path(env["JUPYTER_CONFIG_PATH"].split(os.pathsep)[0])
        pages.append(json.loads((first / "labconfig" / "page_config.json").read_text()))
        return 0

    monkeypatch.setattr(lab_cli, "_run_lab", call)
    notebook = tmp_path / "notebooks" / "explorer.ipynb"
    notebook.parent.mkdir()
    notebook.write_text('{"cells": [], "metadata": {"language_info": {"name": "python", "version": "0.1"}}}')
    args = argparse.Namespace(notebook=notebook, port=8890, no_browser=True, dry_run=False, json=False)
    assert lab_cli.run(args) == 0
    [(cmd, fresh)] = seen
    assert fresh, "the workspace directory must exist, empty, while Lab runs"
    workspace = next(a.split("=", 1)[1] for a in cmd if a.startswith("--LabApp.workspaces_dir="))
    assert not Path(workspace).exists()
    assert "--ServerApp.jpserver_extensions=notebook_shim=False" in cmd
    # Lab's news toast (it covered the app at 1024 px) is off: the first config dir disables it
    assert pages == [{"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}]
    # Lab writes the kernel's language_info into a notebook that has another (and marks it unsaved)
    from ipykernel.ipkernel import IPythonKernel

    assert json.loads(notebook.read_text())["metadata"]["language_info"] == IPythonKernel.language_info
    before = notebook.stat().st_mtime_ns
    assert lab_cli.run(args) == 0
    assert notebook.stat().st_mtime_ns == before, "a notebook that matches is not rewritten"


def test_launchers_reject_bad_ports() -> None:
    from explorer.cli.app import voila_command
    from explorer.cli.lab import lab_command

    with pytest.raises(ValueError, match="port"):
        voila_command(Path("x.ipynb"), 0)
    with pytest.raises(ValueError, match="port"):
        lab_command(Path("."), Path("./x.ipynb"), 70000)


# ------------------------------------------------------------------------------------- with TensorFlow


@pytest.fixture(scope="module")
def tf_app() -> Any:
    import explorer

    app = explorer.App(
        tab="kernels",
        op="cholesky",
        dtypes=["float16", "bfloat16"],
        backends=["tensorflow", "numpy", "emulated"],
    )
    app.ctx.tf_loader.wait(300)
    deadline = time.monotonic() + 60
    while (app.tabs["kernels"].dirty or not app.tabs["kernels"].plot.outputs) and time.monotonic() < deadline:
        time.sleep(0.1)
    return app


@pytest.mark.slow
def test_kernels_tab_shows_the_registry_and_follows_the_dtype(tf_app: Any) -> None:
    from explorer.runtime.registry import get_registry

    tab = tf_app.select("kernels")
    before = (tab.heatmap.grid.columns, tab.heatmap.cells.color.tolist())
    markup = html_of(tab.details)
    reg = get_registry()
    for dtype in ("float16", "bfloat16"):
        assert reg.declared("Cholesky", dtype, "CPU").value in markup
    tf_app.controls.dtypes.value = ("float32",)
    assert "px-msg-error" not in tab.status.value, tab.status.value
    assert (tab.heatmap.grid.columns, tab.heatmap.cells.color.tolist()) != before
    assert {c.dtype for c in tab.heatmap.grid.columns} == {"float32"}
    assert "ok" in html_of(tab.details)
    # raw ops are searchable once the registry has loaded
    tf_app.controls.op_search.value = "BatchMatMulV"
    assert any(v.startswith("BatchMatMulV") for _, v in tf_app.controls.op.options)


@pytest.mark.slow
def test_kernels_tab_loads_a_snapshot_from_another_machine(tf_app: Any, tmp_path: Path) -> None:
    from explorer.queries.availability import availability
    from explorer.queries.snapshot import save_snapshot

    result = availability(
        ops=["cholesky", "matmul"],
        dtypes=["float16", "bfloat16"],
        backends=["tensorflow"],
        devices=["GPU"],
        modes=["registry"],
        progress=False,
    )
    result.environment["hostname"] = "gpu-box"
    path = save_snapshot(result, tmp_path / "gpu.json")
    tf_app.state.set(op="cholesky", dtypes=["float16", "bfloat16"], mode="registry", device="GPU")
    tf_app.load_snapshot(str(path))
    tab = tf_app.tabs["kernels"]
    assert "gpu.json" in tab.snapshot_label.value
    assert tab.heatmap.grid.shape[0] and "snapshot" in tab.status.value
    assert {c.device for c in tab.heatmap.grid.columns} <= {"GPU", "XLA_GPU_JIT"}  # the snapshot's rows
    tab.clear_snapshot()
    assert tab.snapshot is None
    saved = json.loads(tab.snapshot_bytes())  # this machine's rows, loadable elsewhere
    assert saved["kind"] == "precision-explorer/kernels" and saved["rows"]
    assert {r["op"] for r in saved["rows"]} >= {"cholesky"}
    tab.save_button.click()
    assert "download=" in tab.save_link.value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"kind": "something else"}))
    with pytest.raises(ValueError, match="not a precision-explorer kernels snapshot"):
        tf_app.load_snapshot(str(bad))
    tf_app.state.set(device="CPU")


@pytest.mark.slow
def test_environment_tab_counts_gpu_kernels_from_the_registry(tf_app: Any) -> None:
    from explorer.runtime.registry import get_registry

    tab = tf_app.select("environment")
    assert png_of(tab)
    markup = html_of(tab.details)
    reg = get_registry()
    frame = reg.matrix(ops=reg.ops_with_kernels(), dtypes=[tf_app.state.dtype], device_types=["GPU"])
    assert f"<td>{int((frame['status'] == 'ok').sum())}</td>" in markup
    assert "tensorflow" in markup
    assert "CPU features for low precision" in markup  # each flag with what it means (queries.hardware)
    assert "<td>avx512_bf16</td>" in markup or "<td>bf16</td>" in markup


@pytest.mark.slow
def test_training_tab_trains_live_and_cancels(tf_app: Any, tmp_path: Path) -> None:
    from explorer.training.queue import TrainingQueue

    tab = tf_app.select("training")
    tab.queue = TrainingQueue(tmp_path, slots=2)  # a queue of its own: no other run on the machine waits
    tf_app.state.set(policies=["float32", "fp8_emulated"])
    tab.epochs.value = 1
    job = tab.start(wait=True)
    assert job.status == "done", job.error
    assert png_of(tab)
    markup = html_of(tab.details)
    assert "float32" in markup and "fp8_emulated" in markup
    assert all(len(r.epochs) == 1 for r in tab.runs.values())
    assert [s.state for s in tab.statuses.values()] == ["done", "done"]
    tab.epochs.value = 50
    job = tab.start()
    time.sleep(0.5)
    tab.cancel()
    job.wait(120)
    assert job.status in ("cancelled", "done")
    assert "cancelled" in tab.status.value or job.status == "done"
    pids = [s.pid for s in tab.statuses.values() if s.pid is not None]
    assert not [pid for pid in pids if Path(f"/proc/{pid}").exists()]  # the workers are gone
    assert tab.queue.tickets() == []


@pytest.mark.slow
def test_probe_now_runs_in_the_background_and_explains_failures(tf_app: Any) -> None:
    tf_app.state.set(
        op="cholesky", dtypes=["float16"], backends=["tensorflow"], mode="registry", device="CPU"
    )
    tab = tf_app.select("kernels")
    job = tab.start_probe()
    assert job.running or job.status == "done"  # the call returns at once
    job.wait(600)
    assert job.status == "done", job.error
    assert tf_app.state.mode == "eager"  # the view switches to what was probed
    markup = html_of(tab.details)
    from explorer.backends import get_backend

    outcome = get_backend("tensorflow").run("cholesky", "float16")  # independent: a real run here
    assert outcome.status.value in markup
    grid = tab.heatmap.grid  # the heatmap shows the probed cell with that status
    i = grid.ops.index("cholesky")
    (j,) = [
        k
        for k, c in enumerate(grid.columns)
        if (c.backend, c.device, c.mode, c.dtype) == ("tensorflow", "CPU", "eager", "float16")
    ]
    assert grid.status(i, j) == outcome.status.value
    if not outcome.ran:
        assert "<b>Workaround</b>" in markup
    tf_app.state.set(mode="registry", backends=["tensorflow", "numpy", "emulated"])


@pytest.mark.slow
def test_probe_now_waits_for_a_worker_slot_of_the_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Probe now starts its workers only under one of the machine's worker slots: while another
    process (another visitor's kernel) holds the only one, the job waits and says so, starts no
    worker, and can be cancelled; once that process is gone it probes, the cell has the status a
    direct run gives, and the slot stays held while the probe workers live."""
    from explorer.app import App
    from explorer.backends import get_backend
    from explorer.runtime.probe import app_probe_sandbox
    from explorer.runtime.worker_slots import machine_slots
    from tests.support.processes import HOLD_A_SLOT, wait_until

    monkeypatch.setenv("PX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PX_WORKER_SLOTS", "1")
    app_probe_sandbox().close()
    slot_file = machine_slots().directory / "slot-0.lock"
    slot_file.parent.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", HOLD_A_SLOT, str(slot_file)], stdout=subprocess.PIPE)
    app = App(op="exp", dtypes=["float16"], backends=["numpy"], load_tensorflow=False)
    tab = app.select("kernels")
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        cancelled = tab.start_probe()
        wait_until(lambda: "waiting for a free worker slot" in cancelled.message, 30, "the wait said")
        assert app_probe_sandbox().workers() == {}, "a worker started without a slot"
        cancelled.cancel()
        cancelled.wait(30)
        assert cancelled.status == "cancelled"
        job = tab.start_probe()
        wait_until(lambda: "waiting for a free worker slot" in job.message, 30, "the wait said again")
    finally:
        holder.kill()
        holder.wait(10)
        assert holder.stdout is not None
        holder.stdout.close()
    try:
        job.wait(120)
        assert job.status == "done", job.error
        assert app_probe_sandbox().workers(), "the probe workers are kept for the next probe"
        assert machine_slots().acquire(timeout=0) is None, "the workers live without the slot"
        expected = get_backend("numpy").run("exp", "float16").status.value  # a direct run here
        grid = tab.heatmap.grid
        (j,) = [
            k
            for k, c in enumerate(grid.columns)
            if (c.backend, c.mode, c.dtype) == ("numpy", "eager", "float16")
        ]
        assert grid.status(grid.ops.index("exp"), j) == expected
    finally:
        app_probe_sandbox().close()
    free = machine_slots().acquire(timeout=0)
    assert free is not None, "closing the probe sandbox gave the slot back"
    free.release()


def test_binder_installs_every_runtime_dependency_and_fails_on_errors() -> None:
    import re
    import tomllib

    root = Path(__file__).parents[1]
    deps = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=!~ \[]", d)[0].lower().replace("_", "-") for d in deps}
    env = (root / "binder" / "environment.yml").read_text()
    listed = {
        re.split(r"[<>=!~ ]", line.strip()[2:])[0].lower().replace("_", "-")
        for line in env.splitlines()
        if line.strip().startswith("- ")
    }
    assert names <= listed, f"binder/environment.yml misses {sorted(names - listed)}"
    post = (root / "binder" / "postBuild").read_text()
    assert "set -e" in post or "set -euo pipefail" in post
    assert "pip install -e ." in post


def _all_markup(widget: Any) -> list[str]:
    """Every piece of HTML the widget tree sends to the browser: HTML widgets' values and the
    text/html of Output widgets, depth first."""
    import ipywidgets as widgets

    found: list[str] = []
    if isinstance(widget, widgets.HTML | widgets.HTMLMath):
        found.append(str(widget.value))
    if isinstance(widget, widgets.Output):
        found.extend(str(o.get("data", {}).get("text/html", "")) for o in widget.outputs)
    for child in getattr(widget, "children", ()) or ():
        found.extend(_all_markup(child))
    return found


@pytest.mark.slow
def test_hostile_snapshot_reaches_the_page_escaped(tf_app: Any, tmp_path: Path) -> None:
    """Payloads in every free-text column and the environment are shown as text, never as markup
    (checked with the standard library's HTML parser, not with the app's own escaping)."""
    from explorer.app.style import SKIP_LINK
    from tests.support import hostile

    tab = tf_app.tabs["kernels"]
    tf_app.state.set(op="range", dtypes=["float16", "bfloat16"], mode="registry", device="CPU")
    path = hostile.write(tmp_path / "hostile.json", hostile.hostile_valid_snapshot())
    try:
        tf_app.load_snapshot(str(path))
        assert tab.snapshot is not None
        for mode in ("registry", "eager"):
            tf_app.state.set(mode=mode)
            tab.refresh()
            # the app's own skip link is its one inline handler (explorer/app/style.py), not data
            markup = "".join(_all_markup(tf_app.widget)).replace(SKIP_LINK, "", 1)
            assert hostile.dangerous_markup(markup) == [], mode
            # the payloads are there, as text: escaped, not dropped
            assert "onerror=" in hostile.visible_text(markup), mode
    finally:
        tab.clear_snapshot()
        tf_app.state.set(mode="registry")


@pytest.mark.slow
@pytest.mark.parametrize("column", ["backend", "dtype", "device", "mode", "status"])
def test_hostile_snapshot_with_a_bad_name_is_refused_and_named(
    tf_app: Any, tmp_path: Path, column: str
) -> None:
    from tests.support import hostile

    path = hostile.write(tmp_path / f"bad-{column}.json", hostile.hostile_invalid_snapshots()[column])
    before = path.read_bytes()
    with pytest.raises(ValueError, match=rf"rows\[0\]\.{column}"):
        tf_app.load_snapshot(str(path))
    assert path.read_bytes() == before  # the user's file is left as it was
    assert tf_app.tabs["kernels"].snapshot is None


# ----------------------------------------------------------------------- no TensorFlow in the kernel

_VIEWING_VISITOR = r"""
import json, sys, time
import ipywidgets as widgets
import explorer
from explorer.runtime.sweep_store import sweep_sandbox

def markup(widget):
    found = []
    if isinstance(widget, (widgets.HTML, widgets.HTMLMath)):
        found.append(str(widget.value))
    if isinstance(widget, widgets.Output):
        found.extend(str(o.get("data", {}).get("text/html", "")) for o in widget.outputs)
    for child in getattr(widget, "children", ()) or ():
        found.extend(markup(child))
    return found

app = explorer.App(tab="kernels", op="exp", dtypes=["float16"], backends=["tensorflow", "numpy", "emulated"])
first = {}
for key in ("kernels", "ranges", "accuracy", "bits", "environment", "explain"):
    tab = app.select(key)
    first[key] = "".join(markup(tab.widget))
assert app.ctx.background.wait(600), "the workers did not answer"
shown = {key: "".join(markup(app.select(key).widget)) for key in ("ranges", "accuracy", "environment")}
print(json.dumps({
    "tensorflow_imported": "tensorflow" in sys.modules,
    "loader": app.ctx.tf_loader.status,
    "banner": app.banner.value,
    "first": first,
    "shown": shown,
    "sweep_workers": sorted(sweep_sandbox().workers()),
}))
"""


def _visit(cache: Path) -> dict[str, Any]:
    import os

    out = subprocess.run(
        [sys.executable, "-c", _VIEWING_VISITOR],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PX_CACHE_DIR": str(cache), "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    assert out.returncode == 0, out.stderr[-4000:]
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _tables(markup: str) -> list[list[dict[str, str]]]:
    """Every <table> of ``markup`` as rows of {header: cell text} (the standard library's parser)."""
    from html.parser import HTMLParser

    class Tables(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.tables: list[list[list[str]]] = []
            self.cell: list[str] | None = None

        def handle_starttag(self, tag: str, attrs: Any) -> None:
            if tag == "table":
                self.tables.append([])
            elif tag == "tr" and self.tables:
                self.tables[-1].append([])
            elif tag in ("td", "th"):
                self.cell = []

        def handle_endtag(self, tag: str) -> None:
            if tag in ("td", "th") and self.cell is not None and self.tables and self.tables[-1]:
                self.tables[-1][-1].append("".join(self.cell).strip())
                self.cell = None

        def handle_data(self, data: str) -> None:
            if self.cell is not None:
                self.cell.append(data)

    parser = Tables()
    parser.feed(markup)
    out = []
    for rows in parser.tables:
        rows = [r for r in rows if r]
        if len(rows) > 1:
            out.append([dict(zip(rows[0], r, strict=False)) for r in rows[1:]])
    return out


def _tensorflow_float16_exp() -> tuple[np.ndarray, np.ndarray]:
    """Independent oracle: TensorFlow called directly here, on every finite float16."""
    from explorer.backends.tensorflow_backend import import_tensorflow

    tf = import_tensorflow()
    bits = np.arange(2**16, dtype=np.uint16).view(np.float16)
    x = np.unique(bits[np.isfinite(bits)].astype(np.float64))
    y = tf.math.exp(tf.constant(x.astype(np.float16))).numpy().astype(np.float64)
    return x, y


def _float16_ordinal(v: np.ndarray) -> np.ndarray:
    b = v.astype(np.float16).view(np.int16).astype(np.int64)
    return np.where(b < 0, -(b & 0x7FFF), b)


@pytest.mark.slow
def test_a_viewing_visitor_never_imports_tensorflow_and_sees_tensorflows_own_numbers(tmp_path: Path) -> None:
    """A fresh kernel renders every viewing tab (Ranges and Accuracy sweep exp in float16 with
    tensorflow selected): TensorFlow is never imported there, its numbers arrive from a worker and
    equal a direct TensorFlow run in this process; a second visitor gets them from the disk cache
    at the first render, without any worker."""
    first_visit = _visit(tmp_path)
    assert first_visit["tensorflow_imported"] is False
    assert first_visit["loader"] == "idle"
    assert first_visit["banner"] == ""  # how the app runs is said in the Environment tab, not on every tab
    assert "not imported in this kernel" in first_visit["first"]["environment"]
    assert "worker process" in first_visit["first"]["ranges"]  # the note while the worker works

    x, y = _tensorflow_float16_exp()
    with np.errstate(over="ignore"):
        reference = np.exp(x).astype(np.float16).astype(np.float64)
    steps = np.abs(_float16_ordinal(y) - _float16_ordinal(reference))
    first_overflow = float(x[(x > 0) & np.isinf(y)].min())

    for visit in (first_visit, second_visit := _visit(tmp_path)):
        ranges = [r for t in _tables(visit["shown"]["ranges"]) for r in t if r.get("backend") == "tensorflow"]
        overflow = [r for r in ranges if r.get("kind") == "overflow"]
        # one row per kind and table: its columns split between the table and the folded ones
        assert len(overflow) == 3 and "inputs" in overflow[0] and "rule (bounds included)" in overflow[2]
        overflow = [overflow[0] | overflow[1] | overflow[2]]
        # the exact threshold is in the rule ("x >= 11.09375 (not ..., the neighbouring input)")
        assert any(f"x >= {first_overflow!r} " in cell for cell in overflow[0].values()), overflow
        assert int(overflow[0]["inputs"].replace(",", "")) == int(np.isinf(y).sum())
        tables = _tables(visit["shown"]["accuracy"])
        accuracy = [r for t in tables for r in t if r.get("backend") == "tensorflow"]
        assert accuracy, visit["shown"]["accuracy"][:2000]
        assert float(accuracy[0]["max_ulp_steps"]) == float(steps.max())
        assert float(accuracy[0]["correctly_rounded_fraction"]) == pytest.approx(
            float(np.mean(steps == 0)), abs=5e-3
        )
        assert "TensorFlow&#x27;s results are being computed" not in visit["shown"]["ranges"]
        tables = _tables(visit["shown"]["environment"])
        tf_devices = [r for t in tables for r in t if r.get("backend") == "tensorflow"]
        assert tf_devices and "CPU:0" in tf_devices[0]["devices"], tf_devices
    assert second_visit["tensorflow_imported"] is False
    assert "worker process" not in second_visit["first"]["ranges"]  # at hand at the first render
    assert "tensorflow" not in second_visit["sweep_workers"]  # no TensorFlow worker was started
