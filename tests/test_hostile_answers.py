"""Wrong answers of issue 39 item 7: a GPU timing without a GPU, a TeX-like layer name that broke
the Your model plot, a forward raising SystemExit that left the tab checking for good."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest

from explorer.backends import get_backend
from explorer.outcome import Status
from explorer.runtime.speed import measure_group


def test_speed_on_a_device_the_backend_lacks_is_no_device_not_a_cpu_timing() -> None:
    """NumPy has no GPU: the backend's own run says no_device, and so must the timing."""
    direct = get_backend("numpy").run("exp", "float16", device="GPU")
    assert direct.status == Status.NO_DEVICE
    cells = measure_group("numpy", "exp", ("float32", "float16"), "GPU", "eager", ((64,),), min_time=0.001)
    assert {cell["status"] for cell in cells.values()} == {"no_device"}
    assert all(cell["timing"] is None for cell in cells.values())
    on_cpu = measure_group("numpy", "exp", ("float16",), "CPU", "eager", ((64,),), min_time=0.001)
    assert on_cpu["float16"]["status"] == "ok" and on_cpu["float16"]["timing"] is not None


def test_a_layer_named_like_tex_is_drawn_as_its_text() -> None:
    from explorer.plots.model import plot_layer_maxima

    names = [r"$\frac{a}{$", "$x$", "plain"]
    fig = plot_layer_maxima(names, [1.0, 2.0, 3.0], ["float16"])
    fig.savefig(io.BytesIO(), format="png")  # mathtext raised ValueError here
    labels = fig.axes[0].get_xticklabels()
    assert [t.get_text() for t in labels] == names
    assert not any(t.get_parse_math() for t in labels)


def test_a_forward_raising_system_exit_is_a_failure_the_tab_shows(monkeypatch: Any) -> None:
    import explorer
    import explorer.queries.model_check as model_check

    def exits(model: Any, inputs: Any, **_: Any) -> Any:
        raise SystemExit(3)  # what a user's forward calling sys.exit does inside the check

    monkeypatch.setattr(model_check, "check_model", exits)
    app = explorer.App(load_tensorflow=False, model=lambda x: x, example_inputs=np.ones((1, 2), np.float32))
    tab = app.selected_tab
    assert tab.key == "model" and tab.job is not None
    with pytest.raises(RuntimeError, match="SystemExit"):
        tab.job.wait(60)
    assert tab.job.status == "failed"
    assert "could not be checked" in tab.status.value and "SystemExit: 3" in tab.status.value
    assert tab.check_button.disabled is False
