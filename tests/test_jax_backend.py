"""The JAX backend: every catalog op with a JAX call, in every format JAX takes, on CPU, under
``jax.jit`` and op by op, against the float64 reference; its failures against direct runs of
the same calls; and the silent-wrong-result judge (:mod:`explorer.backends.silent`), which
every backend's results go through.

Oracles: the inputs are rounded to the format by :mod:`oracles` (nothing of explorer), the
reference is the op's float64 reference on those inputs, a failure's text is what the call
raises when this file jits and runs it directly.  The tables are jax 0.10's CPU behaviour; a
kernel that appears or vanishes fails a test until the table is updated.  The tests that run
JAX need it (``pip install jax``): without it they fail, they are not skipped.  The tests of the
judge alone need no framework.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest

from explorer.backends import get_backend
from explorer.backends.jax_backend import JAX_CALLS, classify_error, jax_call
from explorer.backends.silent import DISCONTINUOUS, judge, tolerance, wrong_result_reason
from explorer.formats import resolve
from explorer.ops import catalog, get_op
from explorer.outcome import Outcome, Phase, Status
from tests.support import oracles
from tests.support.require import require_module

#: slow tier: JAX's matrix: every op in every format, eagerly and under jit
pytestmark = pytest.mark.slow

WIDE = ("float16", "bfloat16", "float32", "float64")
#: the narrow formats XLA's CPU client holds (float6 it cannot: see the float6 tests)
NARROW = (
    *("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e4m3b11fnuz"),
    *("float8_e3m4", "float8_e4m3", "float8_e8m0fnu", "float4_e2m1fn"),
)
FLOAT6 = ("float6_e2m3fn", "float6_e3m2fn")
JAX_OPS = tuple(name for name, op in catalog().items() if jax_call(op) is not None)

#: every format below 32 bits, on CPU (jax 0.10): LAPACK has no routine for the dtype (jaxlib's
#: lowering finds none: no_kernel), the real FFT refuses it (unsupported_dtype), the complex FFT
#: and the DCT compute in complex64 (fallback: the result is float32)
CPU_GAPS: dict[str, Status] = {
    **dict.fromkeys(
        ("cholesky", "det", "slogdet", "inv", "solve", "lstsq", "qr", "svd", "eigh"), Status.NO_KERNEL
    ),
    **dict.fromkeys(("rfft", "rfft2d"), Status.UNSUPPORTED_DTYPE),
    **dict.fromkeys(("fft", "ifft", "fft2d", "dct"), Status.FALLBACK),
}
#: and in the float8 and float4 formats: XLA cannot legalize chlo.erfc and chlo.bessel_i1e
#: (gelu is built on erfc) for them
CPU_GAPS_NARROW: dict[str, Status] = {
    **CPU_GAPS,
    **dict.fromkeys(("erfc", "bessel_i1", "gelu"), Status.NO_KERNEL),
}
#: silent wrong results on CPU, seed 0 (jax 0.10): NaN or inf where the reference is finite, or far
#: off (float8_e4m3b11fnuz has no infinity: exp(3.5) passes its largest value, 30, and sigmoid turns
#: NaN; float8_e3m4's mean comes back 0, its variance NaN)
#: Integer outputs, compared exactly: saturate_cast's clip bound 255 is NaN in the fnuz formats
#: whose max is 240 and 30 (no infinity), so the clip gives NaN and the cast to uint8 0.  (Under
#: XLA's default flags, not the probe flags these tests run with, float4_e2m1fn's -6.0 and 6.0 cast
#: to int32 also come back as -2**31, and 6.0 to uint8 as 255.)
WRONG: dict[str, set[str]] = {
    "float8_e4m3fnuz": {"saturate_cast"},
    "float8_e4m3b11fnuz": {"sigmoid", "silu", "saturate_cast"},
    "float8_e3m4": {
        "bessel_i0",
        "igamma",
        "igammac",
        "mean",
        "variance",
        "std",
        "layer_norm",
        "adjust_contrast",
    },
    "float8_e8m0fnu": {"linspace", "igamma", "igammac", "resize", "adjust_contrast"},
}
#: at most this many eps of the format, normwise (largest error over largest reference
#: magnitude).  Measured over 2 seeds on an x86-64 CPU: float16 1.0 (cumprod), bfloat16 1.2,
#: float32 9.3 (igammac; lgamma 9.1), float64 19.1 (log1p; atanh 16.3, dct 15.9), float8 and
#: float4 2.6 (igamma in float4)
NORMWISE_EPS = {"float16": 4, "bfloat16": 4, "float32": 32, "float64": 64, **dict.fromkeys(NARROW, 4)}


@pytest.fixture(scope="module")
def jax() -> Any:
    require_module("jax")
    require_module("jaxlib")
    import jax

    return jax


def rounded_inputs(op_name: str, fmt: str, seed: int) -> tuple[np.ndarray, ...]:
    return tuple(oracles.round_array(x, fmt) for x in get_op(op_name).inputs(seed))


def normwise_eps(got: np.ndarray, want: np.ndarray, fmt: str) -> float:
    """Normwise error in eps, where the format holds the reference (float8_e8m0fnu has no 0)."""
    held = np.isfinite(oracles.round_array(want, fmt))
    got, want = np.asarray(got, dtype=np.float64)[held], want[held]
    scale = max(float(np.max(np.abs(want), initial=0.0)), resolve(fmt).smallest_normal)
    return float(np.max(np.abs(got - want), initial=0.0)) / scale / resolve(fmt).eps


def direct_error(jax: Any, op_name: str, fmt: str, inputs: tuple[np.ndarray, ...]) -> str | None:
    """What the op's JAX call raises when jitted and run here (None: it ran)."""
    dtype = np.dtype(getattr(jax.numpy, fmt))
    call = jax_call(get_op(op_name))
    assert call is not None
    with jax.enable_x64(True):
        arrays = [jax.numpy.asarray(x.astype(dtype)) for x in inputs]
        try:
            jax.block_until_ready(jax.jit(lambda *a: call(jax, dtype, *a))(*arrays))
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
    return None


def expected_status(op_name: str, fmt: str) -> Status:
    if op_name in WRONG.get(fmt, ()):
        return Status.WRONG_RESULT
    gaps = CPU_GAPS_NARROW if fmt in NARROW else CPU_GAPS if fmt in ("float16", "bfloat16") else {}
    return gaps.get(op_name, Status.OK)


def check_op(jax: Any, op_name: str, fmt: str, mode: str, seeds: int) -> None:
    """Run ``op_name`` in ``fmt`` and check it against the tables, the direct run and the reference."""
    op, f = get_op(op_name), resolve(fmt)
    expected = expected_status(op_name, fmt)
    for seed in range(seeds):
        inputs = rounded_inputs(op_name, fmt, seed)
        outcome = get_backend("jax").run(op, fmt, mode=mode, inputs=inputs)
        if expected in (Status.NO_KERNEL, Status.UNSUPPORTED_DTYPE):
            assert outcome.status is expected, (outcome.status, outcome.error[:500])
            if mode == "xla":
                direct = direct_error(jax, op_name, fmt, inputs)
                assert direct is not None and outcome.error.splitlines()[0] == direct.splitlines()[0]
                assert outcome.phase is (
                    Phase.OP_BUILD if expected is Status.UNSUPPORTED_DTYPE else Phase.XLA_COMPILE
                )
            continue
        assert outcome.status in (Status.OK, Status.FALLBACK), (outcome.status, outcome.error[:500])
        assert (outcome.status is Status.FALLBACK) == (expected is Status.FALLBACK), outcome.detail
        assert outcome.result is not None and outcome.device == "CPU"
        if not all(np.isfinite(x).all() for x in inputs):
            continue  # (signed inputs are NaN in the unsigned float8_e8m0fnu)
        want = np.asarray(op.reference(*inputs), dtype=np.float64)
        judged = judge(outcome, op, inputs, f)
        if expected is Status.WRONG_RESULT and seed == 0:
            assert judged.status is Status.WRONG_RESULT, judged.detail
            assert "silently wrong" in judged.detail and judged.result is outcome.result
            continue
        assert judged.status is outcome.status, judged.detail
        if not op.float_output:  # compared exactly by the judge; the reference here agrees
            assert np.array_equal(outcome.result, want), (op_name, fmt, seed)
            continue
        if expected is Status.FALLBACK:
            assert outcome.result.dtype == np.float32 and "came back in float32" in outcome.detail
            continue
        assert outcome.result.dtype == f.storage_dtype
        error = normwise_eps(outcome.result, want, fmt)
        assert error <= NORMWISE_EPS[fmt], f"{op_name} in {fmt}, seed {seed}: {error:.3g} eps normwise"


@pytest.mark.parametrize("fmt", WIDE)
@pytest.mark.parametrize("op_name", JAX_OPS)
def test_every_op_under_jit(jax, op_name, fmt):
    check_op(jax, op_name, fmt, "xla", seeds=2)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", NARROW)
@pytest.mark.parametrize("op_name", JAX_OPS)
def test_every_op_under_jit_in_narrow_formats(jax, op_name, fmt):
    check_op(jax, op_name, fmt, "xla", seeds=1)


@pytest.mark.parametrize("fmt", ("float16", "bfloat16", "float8_e4m3fn"))
@pytest.mark.parametrize("op_name", JAX_OPS)
def test_every_op_eagerly(jax, op_name, fmt):
    """Op by op, each primitive compiled on its own: the same statuses as under jit."""
    check_op(jax, op_name, fmt, "eager", seeds=1)


def test_ops_jax_lacks_are_errors_that_say_so(jax):
    for name in ("rgb_to_hsv", "hsv_to_rgb", "per_image_standardization", "fused_batch_norm"):
        outcome = get_backend("jax").run(name, "float32", mode="xla")
        assert outcome.status is Status.ERROR and f"JAX has no implementation of {name}" in outcome.error


def test_float6_cannot_be_held_and_its_creation_ops_abort(jax):
    """XLA's CPU client has no float6 buffers: an array input is refused (unsupported_dtype); the
    creation ops abort the process (a C++ CHECK), which the sandbox records as ``crashed``."""
    for fmt in FLOAT6:
        outcome = get_backend("jax").run("exp", fmt, mode="xla")
        assert outcome.status is Status.UNSUPPORTED_DTYPE and outcome.phase is Phase.OP_BUILD
        assert "Unknown NumPy dtype" in outcome.error or "Invalid XLA PrimitiveType" in outcome.error
    from explorer.runtime.sandbox import Sandbox

    box = Sandbox()
    try:
        crashed = box.run("jax", "zeros", "float6_e2m3fn", mode="xla", timeout=120)
        after = box.run("jax", "exp", "float32", mode="xla", timeout=120)
    finally:
        box.close()
    assert crashed.status is Status.CRASHED and "SIGABRT" in crashed.error
    assert after.status is Status.OK  # a fresh worker took over


@pytest.mark.parametrize(
    ("text", "phase", "status"),
    [
        (
            "NotImplementedError: (KeyError(<class 'numpy.float16'>), 'Unsupported dtype float16.')",
            Phase.XLA_COMPILE,
            Status.NO_KERNEL,
        ),
        (
            "JaxRuntimeError: UNKNOWN: error: failed to legalize operation 'chlo.erfc'",
            Phase.XLA_COMPILE,
            Status.NO_KERNEL,
        ),
        (
            "ValueError: RFFT input must be float32 or float64, got bfloat16",
            Phase.OP_BUILD,
            Status.UNSUPPORTED_DTYPE,
        ),
        (
            "JaxRuntimeError: INVALID_ARGUMENT: Invalid XLA PrimitiveType: 36 (F6E2M3FN)",
            Phase.OP_BUILD,
            Status.UNSUPPORTED_DTYPE,
        ),
        (
            "TypeError: dot_general requires contracting dimensions to have the same shape",
            Phase.OP_BUILD,
            Status.ERROR,
        ),
    ],
)
def test_classify_error(text, phase, status):
    assert classify_error(text, phase) is status


def test_override_table_names_catalog_ops():
    assert set(JAX_CALLS) <= set(catalog())
    for name, call in JAX_CALLS.items():
        if call is None:
            assert get_op(name).numpy is None, f"{name}: the NumPy call would work with jax.numpy"


def test_jax_reports_not_installed_when_absent():
    backend = get_backend("jax")
    if importlib.util.find_spec("jax") is not None:
        assert backend.is_installed() and backend.devices()[0] == "CPU"
        return
    assert not backend.is_installed() and backend.version() is None
    outcome = backend.run("exp", "float16")
    assert outcome.status is Status.NOT_INSTALLED and "jax is not installed" in outcome.error


# ---------------------------------------------------------------- the silent-wrong-result judge


F16 = resolve("float16")


def test_nan_or_inf_where_the_reference_is_finite_is_wrong():
    want = np.array([1.0, 2.0, 3.0])
    nan = wrong_result_reason(np.array([1.0, np.nan, 3.0], np.float16), want, F16)
    assert nan.startswith("NaN where the float64 reference is finite (1 of 3 elements; first at index 1")
    inf = wrong_result_reason(np.array([1.0, 2.0, -np.inf], np.float16), want, F16)
    assert inf.startswith("-inf where")


def test_what_the_format_cannot_hold_is_not_judged():
    """Overflow of the exact value (float16's max is 65504) and a NaN reference are not errors."""
    assert wrong_result_reason(np.array([np.inf, np.nan], np.float16), np.array([1e5, np.nan]), F16) == ""
    e4m3 = resolve("float8_e4m3fn")  # no infinity: overflow is NaN
    assert wrong_result_reason(np.array([np.nan], e4m3.storage_dtype), np.array([1000.0]), e4m3) == ""
    # at the format's max, an inf is a rounding of a value just above it, not a wrong result
    assert wrong_result_reason(np.array([np.inf], np.float16), np.array([65519.0]), F16) == ""


def test_far_off_is_wrong_and_a_few_ulps_is_not():
    want = np.array([1.0, 2.0, 4.0])
    assert wrong_result_reason((want + 3 * F16.eps * 4).astype(np.float16), want, F16) == ""
    off = wrong_result_reason(np.array([1.0, 2.0, 2.0], np.float16), want, F16)
    assert off.startswith("off by 2 where the reference has magnitude up to 4 (0.5 > 0.25 normwise")
    # normwise: a result near zero (a cancelling sum) is judged by the output's scale
    assert wrong_result_reason(np.array([0.001, 4.0], np.float16), np.array([0.0, 4.0]), F16) == ""


def test_tolerances_are_far_above_each_formats_precision():
    for fmt in ("float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float4_e2m1fn"):
        f = resolve(fmt)
        assert tolerance(f) >= 4 * f.eps
    # float64 is judged as float32 is (TensorFlow computes some float64 ops with float32 constants)
    assert tolerance(resolve("float64")) == tolerance(resolve("float32")) < 1e-3


def test_shapes_integers_and_discontinuous_ops():
    assert wrong_result_reason(np.zeros(3, np.float16), np.zeros(4), F16).startswith("shape (3,)")
    # an integer output is compared exactly: 7 for 1 is wrong, 1 for 1 is right
    assert wrong_result_reason(np.array([7], np.int32), np.array([1.0]), F16).startswith("differs from")
    assert wrong_result_reason(np.array([1], np.int32), np.array([1.0]), F16) == ""
    assert set(catalog()) >= DISCONTINUOUS
    assert wrong_result_reason(np.array([2.0], np.float16), np.array([3.0]), F16, numeric=False) == ""


def test_judge_marks_a_wrong_run_loudly_and_keeps_the_rest():
    op, x = get_op("exp"), (np.array([0.5, 1.0]),)
    right = Outcome(Status.OK, np.exp(x[0]).astype(np.float16), "CPU")
    assert judge(right, op, x, F16) is right
    garbage = Outcome(Status.FALLBACK, np.array([1.0, np.nan]), "CPU", detail="result came back in float32")
    judged = judge(garbage, op, x, F16)
    assert judged.status is Status.WRONG_RESULT
    assert judged.detail.startswith("result came back in float32; silently wrong: NaN where")
    assert judged.extra["ran_as"] == "fallback" and judged.result is garbage.result
    failed = Outcome(Status.NO_KERNEL, error="no kernel")
    assert judge(failed, op, x, F16) is failed
    argmax = Outcome(Status.OK, np.array([0]), "CPU")
    assert judge(argmax, get_op("argmax"), (np.ones((1, 4)),), F16) is argmax
    off = judge(Outcome(Status.OK, np.array([3]), "CPU"), get_op("argmax"), (np.ones((1, 4)),), F16)
    assert off.status is Status.WRONG_RESULT and "differs from the exact reference" in off.detail


def test_judge_passes_every_numpy_and_emulated_result():
    """No false alarms on the reference backends: every catalog op NumPy and the emulation run."""
    for backend, formats in (
        ("numpy", ("float16", "float32", "float64")),
        ("emulated", ("bfloat16", "float8_e4m3fn")),
    ):
        for name, op in catalog().items():
            for fmt in formats:
                with np.errstate(all="ignore"):
                    inputs = rounded_inputs(name, fmt, 0)
                    outcome = get_backend(backend).run(op, fmt, inputs=inputs)
                    judged = judge(outcome, op, inputs, resolve(fmt))
                assert judged.status is outcome.status, (backend, name, fmt, judged.detail)


# ---------------------------------------------------------------- probes: lowered, not compiled


@pytest.mark.parametrize(
    ("name", "dtype"),
    [("exp", "float32"), ("exp", "bfloat16"), ("matmul", "float8_e5m2"), ("cholesky", "float16"),
     ("rfft", "float16"), ("cast_to_int32", "float16"), ("range", "float16")],
)  # fmt: skip
def test_an_xla_run_lowered_only_has_the_status_of_compiling_and_running_here(
    jax: Any, name: str, dtype: str
) -> None:
    """``execute=False`` stops after lowering to StableHLO (no result) when tracing and lowering
    pass, and otherwise fails as a run that compiles does: same status, phase, error, dtype."""
    backend = get_backend("jax")
    lowered = backend.run(name, dtype, mode="xla", execute=False)
    ran = backend.run(name, dtype, mode="xla", execute=True)
    assert (lowered.status, lowered.phase, lowered.error) == (ran.status, ran.phase, ran.error)
    if ran.ran:
        assert lowered.result is None and ran.result is not None
        assert lowered.extra["result_dtype"] == str(ran.result.dtype)
        assert "lowered to StableHLO only" in lowered.detail
    else:
        assert lowered.result is None and "lowered" not in lowered.detail


def test_jax_probes_compile_because_some_cells_lower_but_do_not_compile(jax: Any) -> None:
    """What ``--prove-flags jax`` found: erfc in float8_e4m3fn lowers to StableHLO (``chlo.erfc``)
    and XLA:CPU then cannot legalize it, so lowering alone would say ``ok``; the probe record (as
    the sweep makes it) compiles and says ``no_kernel`` at ``xla_compile``, as jitting and
    running it directly does."""
    from explorer.runtime.probe import Probe, probe_record

    lowered = get_backend("jax").run("erfc", "float8_e4m3fn", mode="xla", execute=False)
    assert lowered.status is Status.OK and lowered.result is None
    direct = direct_error(jax, "erfc", "float8_e4m3fn", rounded_inputs("erfc", "float8_e4m3fn", 0))
    assert direct is not None and "chlo.erfc" in direct
    record = probe_record(Probe("jax", "erfc", "float8_e4m3fn", "CPU", "xla"), present=["CPU"])
    assert (record["status"], record["phase"]) == ("no_kernel", "xla_compile")
    assert "chlo.erfc" in record["error"]


def test_an_eager_probe_always_executes(jax: Any) -> None:
    """``execute=False`` changes nothing for an eager cell: its call is dispatched and returns."""
    outcome = get_backend("jax").run("exp", "bfloat16", mode="eager", execute=False)
    assert outcome.status is Status.OK and outcome.result is not None
    assert str(outcome.result.dtype) == "bfloat16"
