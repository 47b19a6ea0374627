"""Issue 34 (3): every workaround is checked, not only run, on inputs laid out as the user's
framework lays them out.

Oracles: a float64 cross-correlation written out here on NCHW / OIHW arrays (PyTorch's conv2d,
stride 1, VALID), rounded to float16 by NumPy; NumPy's ``arange`` for ``tf.range``; float16 steps
from ``np.nextafter``; the old channels-last code exactly as the generator wrote it before."""

from __future__ import annotations

import inspect
import re
from typing import Any

import numpy as np
import pytest

#: the PyTorch error the layout bug was found on
SLOW_CONV = "RuntimeError: \"slow_conv2d_cpu\" not implemented for 'Half'"
#: the last line of the workaround explain wrote for SLOW_CONV before: it permutes the user's
#: tensors as if they were TensorFlow's NHWC / HWIO
OLD_CHANNELS_LAST = (
    "    result = (torch.nn.functional.conv2d(x.to(torch.float32).permute(0, 3, 1, 2), "
    "f.to(torch.float32).permute(3, 2, 0, 1)).permute(0, 2, 3, 1)).to(torch.float16)"
)


def _correlate_nchw(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """PyTorch's conv2d (cross-correlation, stride 1, no padding) in float64, by explicit loops
    over the output positions: x (N, C, H, W), w (O, C, kH, kW) -> (N, O, H-kH+1, W-kW+1)."""
    n, c, h, wd = x.shape
    o, c2, kh, kw = w.shape
    assert c == c2
    out = np.zeros((n, o, h - kh + 1, wd - kw + 1))
    for i in range(out.shape[2]):
        for j in range(out.shape[3]):
            patch = x[:, :, i : i + kh, j : j + kw]  # (N, C, kH, kW)
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out


def _float16_steps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """How many float16 values lie between ``got`` and ``want`` (both float16-valued), counted
    with np.nextafter (an oracle independent of explorer's ulp arithmetic)."""
    steps = np.zeros(got.shape, dtype=int)
    for index in np.ndindex(got.shape):
        a, b = np.float16(got[index]), np.float16(want[index])
        while a != b and steps[index] < 100:
            a = np.nextafter(a, b)
            steps[index] += 1
    return steps


def _without_inputs(code: str, names: tuple[str, ...]) -> str:
    """The code less its literal input lines (the test gives its own tensors in the namespace)."""
    return "\n".join(line for line in code.splitlines() if not any(line.startswith(f"{n} = ") for n in names))


def test_the_conv_workaround_on_nchw_float16_returns_the_float64_reference() -> None:
    torch = pytest.importorskip("torch")
    from explorer.queries.diagnose import diagnose

    code = diagnose(SLOW_CONV, run_workaround=False)["workaround"]["code"]
    assert "permute" not in code  # the user's NCHW tensors are taken as they are
    rng = np.random.default_rng(34)
    x16 = rng.uniform(-1, 1, (2, 3, 5, 7)).astype(np.float16)  # N=2, C=3, H=5, W=7
    w16 = rng.uniform(-0.5, 0.5, (4, 3, 2, 3)).astype(np.float16)  # O=4, C=3, kH=2, kW=3
    scope: dict[str, Any] = {"x": torch.from_numpy(x16), "f": torch.from_numpy(w16)}
    exec(_without_inputs(code, ("x", "f")), scope)
    got = scope["result"]
    assert got.dtype == torch.float16 and tuple(got.shape) == (2, 4, 4, 5)
    reference = _correlate_nchw(x16.astype(np.float64), w16.astype(np.float64)).astype(np.float16)
    steps = _float16_steps(got.numpy(), reference)
    # float32 accumulation, rounded once: at most one float16 step from the rounded reference
    assert steps.max() <= 1, steps.max()
    assert np.mean(steps == 0) > 0.9


def test_the_check_runs_the_conv_workaround_on_non_square_nchw_inputs() -> None:
    pytest.importorskip("torch")
    from explorer.queries.diagnose import plain_code
    from explorer.runtime.workaround_check import TOLERANCE_ULPS, run_and_check

    code, _ = plain_code("torch", "conv2d", "float16")
    check = run_and_check(code, "torch", "conv2d", "float16")
    assert check["status"] == "passed", check["summary"]
    assert [[2, 3, 5, 7], [4, 3, 2, 3]] in [case["shapes"] for case in check["cases"]]
    assert check["max_ulps"] is not None and check["max_ulps"] <= TOLERANCE_ULPS
    assert "NCHW" in check["summary"] and "ulps of float16" in check["summary"]


def test_a_wrong_layout_is_caught_by_the_check() -> None:
    pytest.importorskip("torch")
    from explorer.queries.diagnose import plain_code
    from explorer.runtime.workaround_check import run_and_check

    good, _ = plain_code("torch", "conv2d", "float16")
    last = good.rstrip("\n").splitlines()[-1]
    old = good.replace(last, OLD_CHANNELS_LAST)
    check = run_and_check(old, "torch", "conv2d", "float16")
    assert check["status"] == "failed", check["summary"]
    assert check["summary"].startswith("check failed")
    # a wrong computation that runs on every shape (convolution, the kernel flipped, where
    # PyTorch computes a correlation) is refused by its numbers
    flipped = good.replace("f.to(torch.float32)", "f.to(torch.float32).flip(2, 3)")
    assert flipped != good
    check = run_and_check(flipped, "torch", "conv2d", "float16")
    assert check["status"] == "failed" and check["max_ulps"] > 100, check["summary"]


def test_every_permuting_torch_call_has_a_native_layout() -> None:
    """An op whose catalog PyTorch call permutes (it takes the catalog's channels-last layout)
    gets its workaround written from a call on PyTorch's own layout."""
    from explorer.ops import catalog, get_op
    from explorer.runtime.workaround_layout import native_layout

    permuting = [
        name
        for name in catalog()
        if get_op(name).torch and ".permute(" in inspect.getsource(get_op(name).torch)
    ]
    assert "conv2d" in permuting
    assert [name for name in permuting if native_layout("torch", name) is None] == []


@pytest.mark.slow
def test_the_tensorflow_range_workaround_is_checked_against_numpy() -> None:
    pytest.importorskip("tensorflow")
    from explorer.runtime.workaround_check import run_and_check
    from explorer.runtime.workaround_exec import execute_workaround
    from explorer.runtime.workarounds import tensorflow_code

    code = tensorflow_code("range", "float16", compute="float32")
    check = run_and_check(code, "tensorflow", "range", "float16")
    assert check["status"] == "passed" and check["max_ulps"] == 0.0, check["summary"]
    count = int(re.search(r"tf\.range\((\d+)", code)[1])  # type: ignore[index]
    got = execute_workaround(code).numpy()
    assert got.dtype == np.float16
    assert np.array_equal(got, np.arange(count, dtype=np.float64).astype(np.float16))
    wrong = code.replace(f"tf.range({count},", f"tf.range(1, {count + 1},")
    assert wrong != code
    check = run_and_check(wrong, "tensorflow", "range", "float16")
    assert check["status"] == "failed", check["summary"]


def test_error_in_ulps_counts_float16_steps() -> None:
    from explorer.runtime.workaround_check import error_ulps

    reference = np.array([1.0, -3.0, 0.25, 1000.0])
    exact = reference.astype(np.float16)
    assert error_ulps(exact.astype(np.float64), reference, "float16") == 0.0
    one_off = exact.copy()
    one_off[1] = np.nextafter(exact[1], np.float16(-np.inf))
    assert error_ulps(one_off.astype(np.float64), reference, "float16") == 1.0
    three_off = exact.copy()
    for _ in range(3):
        three_off[3] = np.nextafter(three_off[3], np.float16(np.inf))
    assert error_ulps(three_off.astype(np.float64), reference, "float16") == 3.0
    nan = exact.astype(np.float64)
    nan[0] = np.nan
    assert error_ulps(nan, reference, "float16") == float("inf")


def test_no_catalog_op_means_not_checked_said_so() -> None:
    from explorer.runtime.workaround_check import run_and_check

    check = run_and_check("import numpy as np\nresult = np.ones(3, np.float16)\n", "numpy", None, "float16")
    assert check["status"] == "not checked" and check["summary"].startswith("not checked: ")
    assert check["max_ulps"] is None and check["result_dtype"] == "float16"
