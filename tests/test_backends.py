"""Backends x formats x elementwise ops against the float64 reference correctly rounded
to the format, with the ULP bound of each backend stated and justified; bad input to
``backend.run`` and a missing framework."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from explorer.backends import BACKEND_NAMES, get_backend
from explorer.backends.emulated import EmulatedBackend
from explorer.formats import Format, all_formats, all_values, encode, resolve
from explorer.ops import Op, get_op, inputs_fit
from explorer.outcome import Status

#: elementwise ops checked on every backend (unary, then binary)
ELEMENTWISE = (
    *("exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "square", "reciprocal", "sin", "cos"),
    *("tanh", "sigmoid", "erf", "atan", "add", "sub", "mul", "div", "maximum", "atan2"),
)

#: Largest error in ULPs of the target format allowed per backend and format, against the
#: float64 reference (on the inputs rounded to the format) correctly rounded to the format.
#: Measured on 2,048 inputs per op (32 seeds of each op's builder), TensorFlow 2.21 and
#: NumPy 2.4 on x86-64; why each figure is what it is:
ULP_BOUNDS: dict[tuple[str, str], int] = {
    # compute in float64, round once to the format: exactly the correctly rounded reference
    ("emulated", "*"): 0,
    # NumPy float64 calls are the very functions of the reference
    ("numpy", "float64"): 0,
    # NumPy's float32 SIMD exp/log/atan2 are within 2-3 ULP; sigmoid = 1/(1+exp(-x)) is
    # three float32 roundings (measured max 3: sigmoid, atan2)
    ("numpy", "float32"): 3,
    # float16 ufuncs compute in float32 and round once (<= 1 ULP, exp measured 1); the
    # formulas rsqrt = 1/sqrt and sigmoid round 2-3 times in float16 (sigmoid measured 2)
    ("numpy", "float16"): 2,
    # Eigen evaluates half and bfloat16 in float32 and rounds once (measured 0 everywhere
    # except sigmoid, 2 ULP: Eigen's logistic in float32 is itself a few float32 ULP off
    # near the rounding boundaries)
    ("tensorflow", "float16"): 2,
    ("tensorflow", "bfloat16"): 2,
    # Eigen's vectorised float32 polynomials (measured: sigmoid 5, log1p/erf/atan 4,
    # expm1/tanh/atan2 3, log/rsqrt/reciprocal 2, exp/sin/cos 1; +-*/ sqrt square max exact)
    ("tensorflow", "float32"): 5,
    # Eigen's float64 paths are not libm either (measured: expm1/sigmoid/erf/atan/atan2 3,
    # tanh/log1p 2, exp/log 1)
    ("tensorflow", "float64"): 3,
}

#: formats each native backend is checked in (the emulation: every format the inputs fit)
NATIVE_FORMATS = {
    "numpy": ("float16", "float32", "float64"),
    "tensorflow": ("float16", "bfloat16", "float32", "float64"),
}


def ulp_bound(backend: str, fmt: Format) -> int:
    """The stated bound for ``backend`` in ``fmt``."""
    return ULP_BOUNDS.get((backend, fmt.name), ULP_BOUNDS.get((backend, "*"), 0))


def ordered_index(values: np.ndarray, fmt: Format) -> np.ndarray:
    """Position of each value on the format's number line: consecutive finite values
    differ by 1, +0 and -0 share 0 (bit patterns read as sign and magnitude)."""
    bits = encode(values, fmt).astype(np.uint64)
    if not fmt.has_sign:
        return bits.astype(np.int64)
    negative = (bits >> np.uint64(fmt.bits - 1)) & np.uint64(1)
    magnitude = (bits & np.uint64((1 << (fmt.bits - 1)) - 1)).astype(np.int64)
    return np.where(negative == 1, -magnitude, magnitude)


def ulp_distance(got: np.ndarray, want: np.ndarray, fmt: Format) -> np.ndarray:
    """Distance in ULPs of ``fmt`` between two arrays of values of ``fmt``.

    NaN: 0 when both are NaN, infinite when only one is.  Infinities: 0 when equal,
    infinite otherwise (an infinity is never "1 ULP above max").
    """
    a = np.asarray(got, dtype=np.float64)
    b = np.asarray(want, dtype=np.float64)
    distance = np.abs(ordered_index(a, fmt) - ordered_index(b, fmt)).astype(np.float64)
    a_nan, b_nan = np.isnan(a), np.isnan(b)
    distance = np.where(a_nan | b_nan, np.where(a_nan & b_nan, 0.0, np.inf), distance)
    either_inf = (np.isinf(a) | np.isinf(b)) & ~(a_nan | b_nan)
    return np.where(either_inf, np.where(a == b, 0.0, np.inf), distance)


# ---------------------------------------------------------------- the ULP measure itself


@pytest.mark.parametrize("fmt", [f for f in all_formats() if f.enumerable], ids=str)
def test_ulp_distance_of_neighbours_is_one(fmt):
    with np.errstate(invalid="ignore"):  # NaN patterns of bfloat16 widen with a warning
        values = np.unique(all_values(fmt).astype(np.float64))  # sorted, -0 == +0 merged
    finite = values[np.isfinite(values)]
    assert np.all(ulp_distance(finite[1:], finite[:-1], fmt) == 1)
    assert np.all(ulp_distance(finite, finite, fmt) == 0)
    assert ulp_distance(finite[:1], finite[-1:], fmt)[0] == finite.size - 1


def test_ulp_distance_specials():
    f16 = resolve("float16")
    tiny = f16.smallest_subnormal
    assert ulp_distance(np.array([-tiny]), np.array([tiny]), f16)[0] == 2
    assert ulp_distance(np.array([-0.0]), np.array([0.0]), f16)[0] == 0
    nan, inf = np.nan, np.inf
    got = np.array([nan, nan, 1.0, inf, inf, f16.max, -inf])
    want = np.array([nan, 1.0, nan, inf, f16.max, inf, inf])
    assert ulp_distance(got, want, f16).tolist() == [0, inf, inf, 0, inf, inf, inf]
    f64 = resolve("float64")
    assert ulp_distance(np.array([1.0]), np.array([np.nextafter(1.0, 2.0)]), f64)[0] == 1


# ---------------------------------------------------------------- backend x format x op


def sample_inputs(op: Op, seeds: int = 32) -> tuple[np.ndarray, ...]:
    """The op's inputs for seeds 0..seeds-1, concatenated (2,048 values per input)."""
    parts = [op.inputs(seed) for seed in range(seeds)]
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(op.arity))


def rounded_reference(op: Op, inputs: tuple[np.ndarray, ...], fmt: Format) -> np.ndarray:
    """The float64 reference on the inputs as the format holds them, rounded to the format."""
    in_format = [fmt.round(x).astype(np.float64) for x in inputs]
    with np.errstate(over="ignore", invalid="ignore"):
        return fmt.round(np.asarray(op.reference(*in_format), dtype=np.float64))


def _cases() -> list:
    cases = []
    for name in ELEMENTWISE:
        op = get_op(name)
        for fmt in all_formats():
            if inputs_fit(op, fmt):
                cases.append(pytest.param("emulated", fmt.name, name, id=f"emulated-{fmt}-{name}"))
        for backend, formats in NATIVE_FORMATS.items():
            if backend == "numpy" and op.numpy is None:
                continue
            cases.extend(pytest.param(backend, f, name, id=f"{backend}-{f}-{name}") for f in formats)
    return cases


@pytest.mark.parametrize(("backend", "fmt_name", "op_name"), _cases())
def test_elementwise_within_ulp_bound(backend, fmt_name, op_name):
    op, fmt = get_op(op_name), resolve(fmt_name)
    inputs = sample_inputs(op)
    outcome = get_backend(backend).run(op, fmt, inputs=inputs)
    if outcome.status in (Status.NO_KERNEL, Status.UNSUPPORTED_DTYPE) and fmt.bits < 32:
        pytest.skip(f"{backend} cannot run {op_name} in {fmt_name}: {outcome.status.value}")
    assert outcome.status is Status.OK, (outcome.status, outcome.error, outcome.detail)
    assert outcome.result is not None
    assert outcome.result.dtype == fmt.storage_dtype
    want = rounded_reference(op, inputs, fmt)
    distance = ulp_distance(outcome.result, want, fmt)
    worst = int(np.argmax(distance))
    bound = ulp_bound(backend, fmt)
    assert distance[worst] <= bound, (
        f"{backend} {op_name} in {fmt_name}: {distance[worst]} ULP > {bound} at input "
        f"{[float(x[worst]) for x in inputs]}: got {outcome.result[worst]}, want {want[worst]}"
    )


def test_emulated_covers_every_narrow_format():
    """The emulation is checked in float8, float6 and float4 formats, not only the wide ones."""
    names = {p.values[1] for p in _cases() if p.values[0] == "emulated"}
    assert {"float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e4m3fn", "float8_e5m2"} <= names
    assert len(names) == len(all_formats())


def test_bounds_cover_every_native_format():
    for backend, formats in NATIVE_FORMATS.items():
        for name in formats:
            assert (backend, name) in ULP_BOUNDS


# ---------------------------------------------------------------- bad input and missing frameworks


@pytest.mark.parametrize("backend", BACKEND_NAMES)
def test_run_bad_names(backend):
    b = get_backend(backend)
    with pytest.raises(ValueError, match=r"unknown op 'expp'; did you mean 'exp'.*Valid ops:"):
        b.run("expp", "float16")
    with pytest.raises(ValueError, match=r"unknown format 'float7'.*Valid names: float64"):
        b.run("exp", "float7")
    with pytest.raises(ValueError, match=r"unknown device 'TPU'; valid devices: CPU, GPU"):
        b.run("exp", "float16", device="TPU")
    with pytest.raises(ValueError, match=r"unknown mode 'jit'; valid modes: eager, xla"):
        b.run("exp", "float16", mode="jit")
    with pytest.raises(ValueError, match=r"add takes 2 inputs, got 1"):
        b.run("add", "float16", inputs=(np.ones(3),))
    with pytest.raises(TypeError, match="device must be a string"):
        b.run("exp", "float16", device=0)  # type: ignore[arg-type]


def test_get_backend_bad_names():
    with pytest.raises(ValueError, match=r"did you mean 'tensorflow'\?.*Valid backends: tensorflow, numpy"):
        get_backend("tensorflw")
    with pytest.raises(ValueError, match="Valid backends"):
        get_backend("jax")
    with pytest.raises(TypeError, match="must be a string"):
        get_backend(None)  # type: ignore[arg-type]
    assert get_backend("TF") is get_backend("tensorflow")


def test_emulated_bad_settings():
    with pytest.raises(ValueError, match="valid: float64, float32"):
        EmulatedBackend(compute="float16")
    with pytest.raises(ValueError, match="valid: nearest_even, toward_zero, stochastic"):
        EmulatedBackend(rounding="up")


def test_failures_are_outcomes_not_exceptions():
    assert get_backend("numpy").run("exp", "float16", mode="xla").status is Status.ERROR
    assert get_backend("numpy").run("exp", "bfloat16").status is Status.UNSUPPORTED_DTYPE
    assert get_backend("tensorflow").run("exp", "tf32").status is Status.UNSUPPORTED_DTYPE
    erf = get_backend("numpy").run("erf", "float32")  # NumPy has no erf
    assert erf.status is Status.ERROR and "NumPy has no" in (erf.error or "")
    if "GPU" not in get_backend("tensorflow").devices():
        assert get_backend("tensorflow").run("exp", "float32", device="GPU").status is Status.NO_DEVICE


def test_torch_reports_not_installed_when_absent():
    torch_backend = get_backend("torch")
    if importlib.util.find_spec("torch") is not None:
        assert torch_backend.is_installed()
        assert torch_backend.run("exp", "float32").status is Status.OK
        return
    assert not torch_backend.is_installed()
    assert torch_backend.version() is None
    outcome = torch_backend.run("exp", "float16")
    assert outcome.status is Status.NOT_INSTALLED
    assert outcome.result is None and "torch is not installed" in (outcome.error or "")
