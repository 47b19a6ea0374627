"""The Your model tab's "Keep in higher precision" panel, headless: set the controls, press
Run, and check that it shows the answer of ``advise_precision`` called directly on the same
built-in model (the numbers themselves are checked against independent runs in
tests/test_advise.py), with progress while it runs and every layer name escaped."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from tests.support.require import require_module


def _table_rows(markup: str, fmt: str) -> list[list[str]]:
    """The cells of each data row of the panel's table for ``fmt`` (HTML entities decoded)."""
    import html

    table = re.search(rf"<table class='px-advise-table' data-format='{fmt}'.*?</table>", markup, re.S)
    assert table is not None, fmt
    rows = re.findall(r"<tr>(<td>.*?)</tr>", table.group(0), re.S)
    return [[html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", row, re.S)] for row in rows]


@pytest.mark.slow  # an advise run in the background (a few seconds)
def test_run_shows_the_advice_of_a_direct_call_with_progress() -> None:
    require_module("torch")
    import explorer
    from explorer.queries.advise import advise_precision
    from explorer.runtime import model_builtin

    app = explorer.App(load_tensorflow=False, tab="model")
    tab = app.tab("model")
    panel = tab.advise_panel
    tab.source.value = "cnn"
    assert not panel.trained.disabled
    tab.source.value = "mlp"
    tab.framework.value = "torch"
    assert panel.trained.disabled  # the trained variant is the CNN's only
    panel.formats.value = ("mxfp4_e2m1", "float8_e4m3fn")
    panel.budget.value = 0.3
    fractions: list[float] = []
    panel.job_panel.progress.observe(lambda change: fractions.append(change["new"]), names="value")
    panel.run_button.click()
    assert panel.job is not None and "px-msg-loading" in panel.message.value
    panel.job.wait(600)
    assert panel.job.status == "done" and not panel.run_button.disabled
    # progress: every run counted, the bar full at the end
    assert fractions[-1] == 1.0 and any(0.0 < f < 1.0 for f in fractions)
    assert panel.job.progress == (2 * (3 + 3 + 5), 2 * (3 + 3 + 5))

    direct = advise_precision(
        model_builtin.build("mlp", "torch"),
        model_builtin.example_inputs("mlp", "torch"),
        formats=["mxfp4_e2m1", "float8_e4m3fn"],
        budget=0.3,
    )
    markup = panel.details.value
    for fmt in ("mxfp4_e2m1", "float8_e4m3fn"):
        a = direct.for_format(fmt)
        rows = _table_rows(markup, fmt)
        assert len(rows) == 4
        for row, choice in zip(rows, a.choices, strict=True):
            assert row[1] == (", ".join(choice.kept) or "none"), (fmt, choice.name)
            got = [float(v) for v in row[2:]]
            want = [choice.kept_fraction, choice.bits_per_param, choice.value, choice.error]
            assert got == pytest.approx(want, rel=1e-5), (fmt, choice.name)
        assert a.code.splitlines()[0] in markup.replace("&#x27;", "'")
    (ax, _colorbar) = panel.figure.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == [layer.name for layer in direct.layers]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["mxfp4_e2m1", "float8_e4m3fn"]


def test_layer_names_are_escaped_in_the_table_and_the_code() -> None:
    require_module("torch")
    import torch

    from explorer.app.advise_panel import choices_html
    from explorer.queries.advise import advise_precision

    hostile_text = "<img src=x onerror=alert(1)>"
    model = torch.nn.Sequential()
    model.add_module(hostile_text, torch.nn.Linear(32, 32))
    model.add_module("relu", torch.nn.ReLU())
    model.add_module("out", torch.nn.Linear(32, 4))
    x = np.random.default_rng(0).standard_normal((8, 32)).astype(np.float32)
    advice = advise_precision(model, x, formats=["nvfp4"], budget=0.5, seeds=1)
    assert hostile_text in advice.for_format("nvfp4").code  # the names reach the view
    markup = choices_html(advice)
    assert "<img" not in markup and "&lt;img src=x onerror=alert(1)&gt;" in markup
    from tests.support import hostile  # read with the standard library's HTML parser

    assert hostile.dangerous_markup(markup) == []
    assert hostile.visible_text(markup).count(hostile_text) >= 2  # in the table and the code, as text


@pytest.mark.slow  # builds the app (over a second)
def test_an_advice_that_fails_is_shown_in_the_panel() -> None:
    """A JAX-like object (not a Keras model or PyTorch module) passed to the App, then a module
    whose forward exits: the panel says why, and the Run button comes back each time."""
    import explorer

    class NotAModel:
        def __call__(self, x: Any) -> Any:
            return x

    app = explorer.App(load_tensorflow=False, tab="environment")
    tab = app.tab("model")
    tab.ctx.user_model = (NotAModel(), np.ones((1, 2), np.float32))
    tab.source.options = [("your model", "your model")]
    tab.source.value = "your model"
    job = tab.advise_panel.run(wait=True)
    assert job is not None and job.status == "failed"
    message = tab.advise_panel.message.value
    assert "did not finish" in message and "NotAModel" in message
    assert tab.advise_panel.run_button.disabled is False
    require_module("torch")
    import torch

    class Exits(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(2, 2)

        def forward(self, x: Any) -> Any:
            raise SystemExit("<b>bye</b>")

    tab.ctx.user_model = (Exits(), np.ones((1, 2), np.float32))
    job = tab.advise_panel.run(wait=True)
    assert job is not None and job.status == "failed"
    message = tab.advise_panel.message.value
    assert "SystemExit" in message and "&lt;b&gt;bye" in message and "<b>bye" not in message
    assert tab.advise_panel.run_button.disabled is False
