"""Backends x formats x elementwise ops against an independent oracle, with the ULP bound
of each backend stated and justified; bad input to ``backend.run`` and a missing framework.

The oracle (:mod:`oracles`, nothing of :mod:`explorer` in it): the inputs are rounded to the
format by its own integer rounding, the op is evaluated exactly (Fractions: + - * / square
reciprocal maximum) or with mpmath at 200 bits (400 where 200 cannot decide), and the result
is correctly rounded to the format from the format's spec table.  ULP distances count code
points on the number line built from the same table.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest
from numpy._core._multiarray_umath import __cpu_features__

from explorer.backends import BACKEND_NAMES, get_backend
from explorer.backends.emulated import EmulatedBackend
from explorer.formats import Format, all_formats, resolve
from explorer.ops import Op, get_op, inputs_fit
from explorer.outcome import Status
from tests.support import oracles

#: elementwise ops checked on every backend (unary, then binary)
ELEMENTWISE = (
    *("exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "square", "reciprocal", "sin", "cos"),
    *("tanh", "sigmoid", "erf", "atan", "add", "sub", "mul", "div", "maximum", "atan2"),
)

#: IEEE 754-2019 section 5.4 requires these correctly rounded.  float16 and bfloat16 computed
#: in float32 and rounded once stay correct: 24 >= 2p + 2 bits makes the double rounding
#: innocuous for + - * / sqrt (Figueroa 1995).  ``square`` is a multiplication, ``reciprocal``
#: a division, ``maximum`` exact.
CORRECTLY_ROUNDED = ("add", "sub", "mul", "div", "sqrt", "square", "reciprocal", "maximum")

#: At most this many ULPs of the format against the correctly rounded mpmath value, per
#: backend and format; ops not named: 0.  Measured max over 2,048 inputs per op (32 seeds,
#: 8x the 256 the test runs), NumPy 2.4 / glibc / TensorFlow 2.21 on an x86-64 CPU (AVX2,
#: FMA, no AVX512), in the comments.  Asserted: the measured max, or a library's documented
#: bound where there is one.  A different CPU path (AVX512, another libm, a GPU) may need
#: its own entry; the failure names the op, the input and both values.
ULP_BOUNDS: dict[tuple[str, str], dict[str, int]] = {
    # glibc's libm (NumPy has no float64 SIMD path without AVX512F): faithful, <= 1 ULP from
    # the correctly rounded value (measured 1 for exp, expm1, log1p, sin, cos, tanh, atan,
    # atan2; log 0).  rsqrt = 1/sqrt(x) rounds twice (< 1.5 ULP, measured 1); sigmoid =
    # 1/(1 + exp(-x)) rounds three times after exp's error (measured 2).
    ("numpy", "float64"): {
        **dict.fromkeys(("exp", "expm1", "log", "log1p", "sin", "cos", "tanh", "atan", "atan2"), 1),
        "rsqrt": 1,
        "sigmoid": 2,
    },
    # NumPy's float32 exp/log SIMD kernels: max 2.52 / 3.83 ULP from the exact value (NumPy
    # 1.17 release notes), so <= 3 / 4 from the correctly rounded one (measured 2, 2); the
    # others call libm's float32 functions (measured 1); sigmoid as in float64 (measured 3).
    ("numpy", "float32"): {
        "exp": 3,
        "log": 4,
        **dict.fromkeys(("expm1", "log1p", "sin", "cos", "tanh", "atan", "atan2", "rsqrt"), 1),
        "sigmoid": 3,
    },
    # float16 ufuncs compute in float32 and round once: correctly rounded unless float32's
    # error crosses a float16 midpoint (measured 0); the formulas round in float16 between
    # steps (rsqrt measured 1, sigmoid 2).
    ("numpy", "float16"): {"rsqrt": 1, "sigmoid": 2},
    # Eigen evaluates half and bfloat16 in float32 and rounds once (measured 0), except its
    # logistic, a float32 rational approximation a few float32 ULP off (measured 2).
    ("tensorflow", "float16"): {"sigmoid": 2},
    ("tensorflow", "bfloat16"): {"sigmoid": 2},
    # Eigen's vectorised float32 polynomials (no documented bound; measured: sigmoid 5,
    # log1p/erf 4, expm1/tanh/atan/atan2 3, log/rsqrt 2, exp/sin/cos 1).  reciprocal is
    # Eigen's rcp estimate plus a Newton step, not a correctly rounded division (measured 2).
    ("tensorflow", "float32"): {
        "sigmoid": 5,
        **dict.fromkeys(("log1p", "erf"), 4),
        **dict.fromkeys(("expm1", "tanh", "atan", "atan2"), 3),
        **dict.fromkeys(("log", "rsqrt", "reciprocal"), 2),
        **dict.fromkeys(("exp", "sin", "cos"), 1),
    },
    # Eigen's float64 paths are not libm either (measured: expm1/atan/atan2 3, log1p/tanh/
    # sigmoid/erf 2, exp/log/sin/cos/rsqrt 1)
    ("tensorflow", "float64"): {
        **dict.fromkeys(("expm1", "atan", "atan2"), 3),
        **dict.fromkeys(("log1p", "tanh", "sigmoid", "erf"), 2),
        **dict.fromkeys(("exp", "log", "sin", "cos", "rsqrt"), 1),
    },
    # The emulation computes in float64 and rounds once: correctly rounded in every narrower
    # format (a float64 result within its 1-2 ULP of a midpoint of the format: never seen,
    # about 2**-28 per input in float32; measured 0 in all 15).  In float64 itself it is
    # NumPy's float64 (the functions above) and SciPy's erf (measured 2).
    ("emulated", "float64"): {
        **dict.fromkeys(("exp", "expm1", "log", "log1p", "sin", "cos", "tanh", "atan", "atan2"), 1),
        **dict.fromkeys(("rsqrt", "erf", "sigmoid"), 2),
    },
}

#: formats each native backend is checked in (the emulation: every format the inputs fit)
NATIVE_FORMATS = {
    "numpy": ("float16", "float32", "float64"),
    "tensorflow": ("float16", "bfloat16", "float32", "float64"),
}

#: (backend, format, op) that do not run here, and why: each is an xfail(strict=True), so a
#: kernel that appears fails the test until it is removed from here; any other case that
#: does not return OK fails.
NOT_RUNNING: dict[tuple[str, str, str], str] = {}

#: seeds of each op's input builder used (64 inputs each): 256 inputs per op and format
SEEDS = 4


#: NumPy's own dispatch: on a CPU with AVX512_SKX its float32 transcendental ufuncs run the
#: SVML kernels it vendors (numpy/SVML) instead of libm's
NUMPY_AVX512_SKX = bool(__cpu_features__.get("AVX512_SKX"))
#: what differs there, measured as above on an AMD EPYC with AVX512_SKX (no AVX512FP16):
#: atan2 2 (the rest within the AVX2 figures)
ULP_BOUNDS_AVX512_SKX: dict[tuple[str, str], dict[str, int]] = {("numpy", "float32"): {"atan2": 2}}


def ulp_bound(backend: str, fmt: Format, op: str) -> int:
    """The stated bound for ``op`` in ``fmt`` on ``backend`` on this CPU (0 unless
    :data:`ULP_BOUNDS`, or on AVX512_SKX :data:`ULP_BOUNDS_AVX512_SKX`, says)."""
    if NUMPY_AVX512_SKX and op in ULP_BOUNDS_AVX512_SKX.get((backend, fmt.name), {}):
        return ULP_BOUNDS_AVX512_SKX[(backend, fmt.name)][op]
    return ULP_BOUNDS.get((backend, fmt.name), {}).get(op, 0)


def ulp_distance(got: np.ndarray, want: np.ndarray, fmt: Format) -> np.ndarray:
    """Distance in ULPs of ``fmt`` between two arrays of values of ``fmt``, on the oracle's
    number line (not the implementation's encode).

    NaN: 0 when both are NaN, infinite when only one is.  Infinities: 0 when equal,
    infinite otherwise (an infinity is never "1 ULP above max").
    """
    a = np.asarray(got, dtype=np.float64)
    b = np.asarray(want, dtype=np.float64)
    finite = np.isfinite(a) & np.isfinite(b)
    distance = np.full(a.shape, np.inf)
    index_a = oracles.number_line_index(a[finite], fmt.name)
    index_b = oracles.number_line_index(b[finite], fmt.name)
    opposite = (index_a < 0) != (index_b < 0)  # |a| + |b| may not fit in int64 (float64 +-max)
    with np.errstate(over="ignore"):
        same_side = np.abs(index_a - index_b).astype(np.float64)
    across = np.abs(index_a).astype(np.float64) + np.abs(index_b).astype(np.float64)
    distance[finite] = np.where(opposite, across, same_side)
    distance[np.isnan(a) & np.isnan(b)] = 0.0
    distance[np.isinf(a) & (a == b)] = 0.0
    return distance


# ---------------------------------------------------------------- the ULP measure itself


def _every_finite_value(fmt: Format) -> np.ndarray:
    """Every finite value of ``fmt`` (<= 19 bits), sorted, -0 merged with 0, from the oracle's decoder."""
    spec = oracles.SPECS[fmt.name]
    values = oracles.decode_bits(np.arange(1 << spec.bits), spec)
    return np.unique(values[np.isfinite(values)])


@pytest.mark.parametrize("fmt", [f for f in all_formats() if f.bits <= 19], ids=str)
def test_ulp_distance_of_neighbours_is_one(fmt):
    finite = _every_finite_value(fmt)
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
    assert ulp_distance(np.array([-f64.max]), np.array([f64.max]), f64)[0] == 2.0 * (2**63 - 2**52 - 1)
    with pytest.raises(ValueError, match="not in float16"):
        ulp_distance(np.array([1.0 + 2**-12]), np.array([1.0]), f16)


# ---------------------------------------------------------------- backend x format x op


def sample_inputs(op: Op, seeds: int = SEEDS) -> tuple[np.ndarray, ...]:
    """The op's inputs for seeds 0..seeds-1, concatenated (64 values per seed and input)."""
    parts = [op.inputs(seed) for seed in range(seeds)]
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(op.arity))


#: (op, format) -> the inputs rounded to the format by the oracle (float64 arrays)
_INPUTS: dict[tuple[str, str], tuple[np.ndarray, ...]] = {}


def inputs_in_format(op: Op, fmt: Format) -> tuple[np.ndarray, ...]:
    """The sample inputs rounded to ``fmt`` by the oracle: every backend gets values the
    format holds exactly, so its own input conversion cannot round (TensorFlow's cast from
    float64 to bfloat16 goes through float32, rounding twice)."""
    key = (op.name, fmt.name)
    if key not in _INPUTS:
        _INPUTS[key] = tuple(oracles.round_array(x, fmt.name) for x in sample_inputs(op))
    return _INPUTS[key]


def _case(backend: str, fmt_name: str, op_name: str) -> Any:
    reason = NOT_RUNNING.get((backend, fmt_name, op_name))
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(backend, fmt_name, op_name, id=f"{backend}-{fmt_name}-{op_name}", marks=marks)


def _cases() -> list[Any]:
    cases: list[Any] = []
    for name in ELEMENTWISE:
        op = get_op(name)
        cases.extend(_case("emulated", fmt.name, name) for fmt in all_formats() if inputs_fit(op, fmt))
        for backend, formats in NATIVE_FORMATS.items():
            if backend == "numpy" and op.numpy is None:
                continue
            cases.extend(_case(backend, f, name) for f in formats)
    return cases


def assert_within(
    backend: str,
    op_name: str,
    fmt: Format,
    inputs: tuple[np.ndarray, ...],
    got: np.ndarray,
    want: np.ndarray,
    bound: int,
) -> None:
    """Fail naming the worst input when ``got`` is more than ``bound`` ULPs from ``want``."""
    distance = ulp_distance(got, want, fmt)
    worst = int(np.argmax(distance))
    assert distance[worst] <= bound, (
        f"{backend} {op_name} in {fmt.name}: {distance[worst]} ULP > {bound} at input "
        f"{[float(x[worst]) for x in inputs]}: got {float(got[worst])!r}, correctly rounded {want[worst]!r}"
    )


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
@pytest.mark.parametrize(("backend", "fmt_name", "op_name"), _cases())
def test_elementwise_within_ulp_bound(backend, fmt_name, op_name):
    op, fmt = get_op(op_name), resolve(fmt_name)
    inputs = inputs_in_format(op, fmt)
    outcome = get_backend(backend).run(op, fmt, inputs=inputs)
    assert outcome.status is Status.OK, (outcome.status, outcome.error, outcome.detail)
    assert outcome.result is not None
    assert outcome.result.dtype == fmt.storage_dtype
    assert outcome.result.shape == inputs[0].shape
    want = oracles.correctly_rounded(op_name, inputs, fmt_name)
    assert_within(backend, op_name, fmt, inputs, outcome.result, want, ulp_bound(backend, fmt, op_name))


@pytest.mark.parametrize("fmt", [f for f in all_formats() if f.name != "float64"], ids=str)
def test_emulated_toward_zero_is_the_truncation_of_the_exact_value(fmt):
    """Toward zero, the emulation (float64 compute, then :func:`explorer.rounding.round_to`)
    equals the exact value truncated to the format, for every op whose inputs fit."""
    backend = EmulatedBackend(rounding="toward_zero")
    for name in ELEMENTWISE:
        op = get_op(name)
        if not inputs_fit(op, fmt):
            continue
        inputs = inputs_in_format(op, fmt)
        got = backend.compute_op(op, inputs, fmt).astype(np.float64)
        want = oracles.correctly_rounded(name, inputs, fmt.name, "toward_zero")
        assert_within("emulated toward_zero", name, fmt, inputs, got, want, 0)


@pytest.mark.parametrize("fmt", [f for f in all_formats() if f.name != "float64"], ids=str)
def test_emulated_stochastic_rounding_picks_a_neighbour_of_the_exact_value(fmt):
    """Stochastic rounding gives one of the two neighbours of the exact value (the value
    itself when the format holds it), and each neighbour for some inputs."""
    backend = EmulatedBackend(rounding="stochastic", seed=7)
    picked_up = picked_down = 0
    for name in ("exp", "sqrt", "div", "mul", "sin", "log"):
        op = get_op(name)
        if not inputs_fit(op, fmt):
            continue
        inputs = inputs_in_format(op, fmt)
        got = backend.compute_op(op, inputs, fmt).astype(np.float64)
        down = oracles.correctly_rounded(name, inputs, fmt.name, "toward_zero")
        up = oracles.correctly_rounded(name, inputs, fmt.name, "away_from_zero")
        neighbour = (got == down) | (got == up) | (np.isnan(got) & np.isnan(down))
        worst = int(np.argmin(neighbour))
        assert neighbour.all(), (
            f"{name} in {fmt} at {[float(x[worst]) for x in inputs]}: got {got[worst]}, "
            f"neighbours {down[worst]}, {up[worst]}"
        )
        inexact = down != up
        picked_up += int(np.sum(inexact & (got == up)))
        picked_down += int(np.sum(inexact & (got == down)))
    assert picked_up > 0 and picked_down > 0, (picked_up, picked_down)


def test_emulated_covers_every_narrow_format():
    """The emulation is checked in float8, float6 and float4 formats, not only the wide ones."""
    names = {p.values[1] for p in _cases() if p.values[0] == "emulated"}
    assert {"float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e4m3fn", "float8_e5m2"} <= names
    assert len(names) == len(all_formats())


def test_bounds_name_known_backends_formats_and_ops():
    """A typo in :data:`ULP_BOUNDS` would silently leave a case at 0 or unbounded."""
    for (backend, fmt_name), per_op in ULP_BOUNDS.items():
        assert backend in BACKEND_NAMES or backend == "emulated"
        assert fmt_name in NATIVE_FORMATS.get(backend, (fmt_name,))
        assert set(per_op) <= set(ELEMENTWISE) - set(CORRECTLY_ROUNDED) | {"reciprocal"}
    for backend, fmt_name, op_name in NOT_RUNNING:
        assert fmt_name in NATIVE_FORMATS[backend] and op_name in ELEMENTWISE


def test_the_oracle_catches_a_one_ulp_error():
    """The comparison has teeth: the emulation's result moved by one code point fails."""
    fmt, op = resolve("float8_e4m3fn"), get_op("exp")
    inputs = inputs_in_format(op, fmt)
    got = EmulatedBackend().compute_op(op, inputs, fmt).astype(np.float64)
    want = oracles.correctly_rounded("exp", inputs, fmt.name)
    values = _every_finite_value(fmt)
    off_by_one = got.copy()
    off_by_one[3] = values[np.searchsorted(values, got[3]) + 1]
    assert ulp_distance(off_by_one, want, fmt)[3] == 1
    with pytest.raises(AssertionError, match=r"1\.0 ULP > 0"):
        assert_within("emulated", "exp", fmt, inputs, off_by_one, want, 0)


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
        get_backend("mxnet")
    with pytest.raises(TypeError, match="must be a string"):
        get_backend(None)  # type: ignore[arg-type]
    assert get_backend("TF") is get_backend("tensorflow")


def test_emulated_bad_settings():
    with pytest.raises(ValueError, match="valid: float64, float32"):
        EmulatedBackend(compute="float16")
    with pytest.raises(ValueError, match="valid: nearest_even, toward_zero, stochastic"):
        EmulatedBackend(rounding="up")


#: the modes each backend runs in, written here: eager everywhere, XLA for TensorFlow
#: (jit_compile) and JAX (jax.jit), torch.compile for PyTorch
EXPECTED_MODES = {
    "tensorflow": ("eager", "xla"),
    "numpy": ("eager",),
    "emulated": ("eager",),
    "torch": ("eager", "compile"),
    "jax": ("eager", "xla"),
    "onnxruntime": ("eager",),
}


def test_each_backend_declares_its_modes_and_run_refuses_the_others():
    from explorer.backends import MODES, backend_modes

    assert set(MODES) == {"eager", "xla", "compile"}
    assert backend_modes() == EXPECTED_MODES
    for name, modes in EXPECTED_MODES.items():
        backend = get_backend(name)
        assert backend.modes == modes
        for mode in sorted(set(MODES) - set(modes)):
            with pytest.raises(ValueError) as refused:
                backend.run("exp", "float32", mode=mode)
            want = f"the {name} backend has no {mode} mode; its modes: {', '.join(modes)}"
            assert str(refused.value) == want
    with pytest.raises(ValueError, match=r"^unknown mode 'jit'; valid modes: eager, xla, compile$"):
        get_backend("numpy").run("exp", "float32", mode="jit")


def test_failures_are_outcomes_not_exceptions():
    assert get_backend("numpy").run("exp", "bfloat16").status is Status.UNSUPPORTED_DTYPE
    assert get_backend("tensorflow").run("exp", "tf32").status is Status.UNSUPPORTED_DTYPE
    erf = get_backend("numpy").run("erf", "float32")  # NumPy has no erf
    assert erf.status is Status.ERROR and "NumPy has no" in (erf.error or "")
    if "GPU" not in get_backend("tensorflow").devices():
        assert get_backend("tensorflow").run("exp", "float32", device="GPU").status is Status.NO_DEVICE


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
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


def test_every_outcome_says_where_the_run_got_to():
    """The phase: ``ok`` for a run that returned, the step that failed otherwise, "" when nothing ran."""
    from explorer.outcome import Phase

    assert get_backend("numpy").run("exp", "float16").phase is Phase.OK
    assert get_backend("tensorflow").run("exp", "float16").phase is Phase.OK
    no_dtype = get_backend("tensorflow").run("exp", "tf32")  # TensorFlow has no tf32 dtype to build in
    assert no_dtype.phase is Phase.OP_BUILD and "no tf32 dtype" in no_dtype.detail
    if importlib.util.find_spec("torch") is None:
        assert get_backend("torch").run("exp", "float16").phase is Phase.UNKNOWN


def test_an_xla_probe_that_does_not_execute_lowers_only():
    """``execute=False`` (availability) stops after lowering to HLO: no result, the dtype the traced
    function returns; ``execute=True`` compiles and runs, and equals TensorFlow's jit call run here."""
    import tensorflow as tf

    backend = get_backend("tensorflow")
    lowered = backend.run("exp", "float16", mode="xla", execute=False)
    assert lowered.status is Status.OK and lowered.result is None
    assert lowered.extra["result_dtype"] == "float16" and "lowered to HLO" in lowered.detail
    ran = backend.run("exp", "float16", mode="xla", execute=True)
    x = tf.constant(get_op("exp").inputs(0)[0], tf.float16)
    with tf.device("/CPU:0"):
        direct = tf.function(tf.math.exp, jit_compile=True)(x).numpy()
    np.testing.assert_array_equal(ran.result, direct)
    eager = backend.run("exp", "float16", execute=False)  # eager probes always run
    assert eager.result is not None and eager.result.dtype == np.float16
