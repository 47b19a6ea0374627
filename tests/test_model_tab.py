"""The Your model tab headless (set widget values, press Check, assert on what it shows), its
view queries and its plot, against oracles written here: a direct PyTorch forward pass, the
module's own layers, ml_dtypes' format limits, the shipped release history."""

from __future__ import annotations

import math
import os
import re
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from tests.support.require import require_module

FORMATS = ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")


def _finfo(name: str) -> Any:
    return ml_dtypes.finfo(getattr(ml_dtypes, name, None) or np.dtype(name))


# ------------------------------------------------------------------ the plot (pure, fast)


def test_plot_draws_each_formats_limits_and_each_layers_maximum() -> None:
    from explorer.plots.model import plot_layer_maxima

    layers, maxima = ["dense", "amplify", "empty", "broken"], [3.0, 2.0e5, 0.0, math.inf]
    fig = plot_layer_maxima(layers, maxima, FORMATS)
    (ax,) = fig.axes
    assert ax.get_yscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == layers
    levels = sorted(float(line.get_ydata()[0]) for line in ax.get_lines() if len(line.get_xdata()) == 2)
    expected = sorted(
        v for name in FORMATS for v in (float(_finfo(name).max), float(_finfo(name).smallest_normal))
    )
    assert levels == pytest.approx(expected)
    points = {
        int(line.get_xdata()[0]): float(line.get_ydata()[0])
        for line in ax.get_lines()
        if len(line.get_xdata()) == 1
    }
    low, high = ax.get_ylim()
    assert points[0] == 3.0 and points[1] == 2.0e5
    assert points[2] == pytest.approx(low) and points[3] == pytest.approx(high)  # zero and inf at the edges
    bands = [(p.get_extents(), p) for p in ax.patches]
    assert len(bands) == len(FORMATS)
    with pytest.raises(ValueError, match="2 layers but 1 maxima"):
        plot_layer_maxima(["a", "b"], [1.0], FORMATS)


# ------------------------------------------------------------------ the tab, on PyTorch models


@pytest.fixture(scope="module")
def overflow_tab() -> Any:
    """The tab after checking the built-in overflow model in PyTorch (one check for the module),
    with every status text it showed."""
    require_module("torch")
    import explorer

    app = explorer.App(load_tensorflow=False, tab="model")
    tab = app.tab("model")
    shown: list[str] = []
    tab.status.observe(lambda change: shown.append(str(change["new"])), names="value")
    tab.source.value = "overflow"
    tab.framework.value = "torch"
    tab.check_button.click()
    assert tab.job is not None
    tab.job.wait(600)
    return app, tab, shown


def _direct_maxima() -> dict[str, float]:
    """The largest |output| of each top-level module of the overflow model in float32, read with
    forward hooks on the module itself."""
    import torch

    from explorer.runtime import model_builtin

    model = model_builtin.build("overflow", "torch").eval()
    (x,) = model_builtin.example_inputs("overflow", "torch")
    seen: dict[str, float] = {}
    hooks = [
        m.register_forward_hook(lambda mod, a, out, name=name: seen.__setitem__(name, float(out.abs().max())))
        for name, m in model.named_children()
    ]
    with torch.no_grad():
        model(torch.tensor(x))
    for h in hooks:
        h.remove()
    return seen


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_tab_says_it_checks_in_the_background_then_shows_the_first_problem(overflow_tab: Any) -> None:
    app, tab, shown = overflow_tab
    running = [s for s in shown if "px-msg-loading" in s]
    assert running and "in a sandbox worker process" in running[0]
    from explorer.runtime.model_builtin import model_sandbox

    workers = model_sandbox().workers()  # the check ran there, not in this process
    assert workers.get("torch") not in (None, os.getpid())
    assert app.selected_tab is tab and "px-msg-error" not in tab.status.value
    top = tab.problem.value
    amplify = _direct_maxima()["amplify"]
    assert amplify > float(_finfo("float16").max) > _direct_maxima()["dense_1"]
    assert "First problem" in top and "autocast_float16" in top and "`amplify`" in top
    assert "overflows float16" in top and "was run on CPU and gives finite values" in top


def test_tab_table_groups_ops_by_the_modules_that_ran_them(overflow_tab: Any) -> None:
    import re

    _, tab, _ = overflow_tab
    markup = tab.details.value
    layers = re.findall(r"<tr class='px-model-layer'[^>]*><td></td><td colspan='3'>([^<]*)</td>", markup)
    assert layers == list(_direct_maxima())  # every module, in the order it ran
    check = tab.result
    assert markup.count("class='px-model-op'") == len(check.ops)  # none dropped, data movement too
    for policy in check.policies:
        assert f"<th>{policy}</th>" in markup


def test_tab_plot_shows_each_layers_maximum_against_the_formats(overflow_tab: Any) -> None:
    _, tab, _ = overflow_tab
    (ax,) = tab.figure.axes
    labels = [t.get_text() for t in ax.get_xticklabels()]
    points = {
        labels[int(line.get_xdata()[0])]: float(line.get_ydata()[0])
        for line in ax.get_lines()
        if len(line.get_xdata()) == 1
    }
    for layer, value in _direct_maxima().items():
        assert points[layer] == pytest.approx(value, rel=1e-5), layer
    levels = {float(line.get_ydata()[0]) for line in ax.get_lines() if len(line.get_xdata()) == 2}
    assert float(_finfo("float16").max) in levels and float(_finfo("float16").smallest_normal) in levels


def test_picking_an_op_shows_its_kernels_and_the_workaround(overflow_tab: Any) -> None:
    import torch

    _, tab, _ = overflow_tab
    check = tab.result
    mul = next(op for op in check.ops if op.layer == "amplify" and op.raw_op == "aten.mul")
    assert tab.op_picker.value == mul.index  # the first problem's op is picked at once
    detail = re.sub(r"<[^>]+>", "", tab.op_details.value)  # words only: terms are glossary links
    assert "keeping `amplify` in float32 was run on CPU and gives finite values" in detail
    # the kernel shown against a direct run of that op in that dtype on this CPU
    assert (torch.ones(2, dtype=torch.float16) * 2).dtype == torch.float16
    assert "autocast_float16 on CPU (float16): declared ok, run ran" in detail
    norm = next(op for op in check.ops if op.layer == "norm" and not op.data_movement)
    tab.op_picker.value = norm.index
    assert f"#{norm.index} {norm.raw_op}" in tab.op_details.value
    assert "overflow under autocast_float16" not in tab.op_details.value
    assert "PyTorch: no release history" in tab.op_details.value


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_app_checks_the_users_own_module_when_shown() -> None:
    require_module("torch")
    import torch

    import explorer

    class Loud(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(4, 3)

        def forward(self, x: Any) -> Any:
            return self.proj(x) * 1e6

    x = np.ones((2, 4), np.float32)
    model = Loud()
    with torch.no_grad():
        direct = float(model(torch.tensor(x)).abs().max())
    app = explorer.App(load_tensorflow=False, model=model, example_inputs=x)
    tab = app.selected_tab
    assert tab.key == "model" and tab.source.value == "your model" and tab.framework.disabled
    assert tab.job is not None
    tab.job.wait(600)
    check = tab.result
    mul = next(op for op in check.ops if op.raw_op == "aten.mul")
    assert mul.max_abs == pytest.approx(direct, rel=1e-6)
    expect = "overflows" if direct > float(_finfo("float16").max) else "fits"
    assert mul.verdict["float16"] == expect


# ------------------------------------------------------------------ the view queries, on Keras


@pytest.mark.slow
def test_op_detail_history_is_the_shipped_release_history() -> None:
    require_module("tensorflow")
    from explorer.analysis import releases
    from explorer.queries.model_view import check_builtin, layer_groups, op_detail

    check = check_builtin("mlp", "keras", policies=["float32", "mixed_float16"], devices=["CPU"])

    def model_layers(name: str) -> list[Any]:  # the Keras model's own layers, the input left out
        from explorer.runtime import model_builtin

        return [
            layer for layer in model_builtin.build(name).layers if layer.__class__.__name__ != "InputLayer"
        ]

    matmul = next(op for op in check.ops if op.layer == "dense_1" and op.raw_op == "MatMul")
    detail = op_detail(check, matmul.index)
    cells = {(c.dtype, c.device): c for c in detail.history}
    assert set(cells) == {(d, dev) for d in ("float32", "float16") for dev in ("CPU", "GPU")}
    for (dtype, device), cell in cells.items():
        direct = list(releases.history("MatMul", dtype, device))
        assert [e.status for e in cell.history] == [e.status for e in direct]
        first = next((e.version for e in direct if e.status == "ok"), None)
        assert cell.first_release_with_kernel == first
    named = [g.layer for g in layer_groups(check) if g.layer != "(model)"]
    assert named == [layer.name for layer in model_layers("mlp")]
    with pytest.raises(IndexError, match="out of range"):
        op_detail(check, len(check.ops))


def test_a_check_that_fails_is_shown_in_the_tab_not_raised() -> None:
    require_module("torch")
    import torch

    import explorer

    class Broken(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            raise KeyError("<img src=x onerror=alert(1)>")  # hostile text: shown escaped

    app = explorer.App(load_tensorflow=False, model=Broken(), example_inputs=np.ones((1, 2), np.float32))
    tab = app.selected_tab
    assert tab.job is not None
    tab.job.wait(600)  # the forward's exception is each policy's answer, not the check's failure
    assert tab.job.status == "done"
    assert "fails: KeyError" in tab.problem.value and "(forward)" in tab.problem.value
    for shown in (tab.problem.value, tab.details.value):
        assert "<img" not in shown and "&lt;img" in shown
    assert tab.check_button.disabled is False
