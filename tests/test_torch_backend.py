"""The PyTorch backend: every catalog op with a torch call, in every format PyTorch has, on CPU,
against the float64 reference, and its failures against direct runs of the same torch calls.

Oracles: the inputs are rounded to the format by :mod:`oracles` (nothing of explorer), the
reference is the op's float64 reference on those inputs, and a failure's text is what the
torch call raises when this file runs it directly.  The tables below are torch 2.13's CPU
behaviour; a kernel that appears or vanishes in another release fails a test until the table
is updated.  These tests need torch (``pip install torch``): without it they fail, they are not
skipped.
"""

from __future__ import annotations

import shutil
import warnings
from typing import Any

import numpy as np
import pytest

from explorer.backends import get_backend
from explorer.backends.silent import judge
from explorer.backends.torch_backend import COMPILE, classify_error
from explorer.formats import resolve
from explorer.ops import catalog, get_op
from explorer.outcome import Phase, Status
from tests.support import oracles
from tests.support.require import require, require_module

#: slow tier: PyTorch's matrix: every op in every format, eager and torch.compile
pytestmark = pytest.mark.slow

#: the formats PyTorch has a dtype for
WIDE = ("float16", "bfloat16", "float32", "float64")
FLOAT8 = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu")
#: catalog ops with a torch call
TORCH_OPS = tuple(name for name, op in catalog().items() if op.torch is not None)

#: float16 and bfloat16 on CPU, torch 2.13: the ops that do not run, and how they fail.  LAPACK
#: and PocketFFT have no half-precision routines: the linalg kernels' dispatch has no case for
#: the dtype (no_kernel), or the op refuses it before dispatching (unsupported_dtype)
CPU_GAPS_16: dict[str, Status] = {
    **dict.fromkeys(("cholesky", "det", "solve", "triangular_solve", "qr", "svd", "eigh"), Status.NO_KERNEL),
    **dict.fromkeys(
        ("slogdet", "inv", "lstsq", "fft", "ifft", "rfft", "fft2d", "rfft2d"), Status.UNSUPPORTED_DTYPE
    ),
}
#: the float8 formats on CPU: the ops that run (everything else fails)
CPU_RUNS_FLOAT8: dict[str, set[str]] = {
    **{
        fmt: {
            "zeros",
            "ones",
            "fill",
            "eye",
            "abs",
            "mul",
            "matmul",
            "cast",
            "cast_to_int32",
            "cast_from_int32",
        }
        for fmt in FLOAT8[:4]
    },
    "float8_e8m0fnu": {"zeros", "ones", "fill", "eye", "mul", "cast", "cast_to_int32", "cast_from_int32"},
}
#: at most this many eps of the format, normwise (the largest error over all outputs divided by
#: the largest magnitude of the reference), over 4 seeds.  Measured on an x86-64 CPU (AVX2):
#: float16 1.1, bfloat16 1.3 (prod, batch_norm: half ops compute in float32 and round once),
#: float32 7.0 (slogdet), float64 8.5 (lstsq), float8 0.4 (matmul)
NORMWISE_EPS = {"float16": 4, "bfloat16": 4, "float32": 32, "float64": 32, **dict.fromkeys(FLOAT8, 1)}
SEEDS = 4


@pytest.fixture(scope="module")
def torch() -> Any:
    require_module("torch")
    import torch

    return torch


def rounded_inputs(op_name: str, fmt: str, seed: int) -> tuple[np.ndarray, ...]:
    """The op's inputs, rounded to the format by the oracle (float64 arrays the format holds)."""
    return tuple(oracles.round_array(x, fmt) for x in get_op(op_name).inputs(seed))


def normwise_eps(got: np.ndarray, want: np.ndarray, fmt: str) -> float:
    """The largest error over the largest reference magnitude, in eps of the format."""
    got = np.asarray(got, dtype=np.float64)
    scale = max(float(np.max(np.abs(want), initial=0.0)), resolve(fmt).smallest_normal)
    return float(np.max(np.abs(got - want), initial=0.0)) / scale / resolve(fmt).eps


def direct_error(torch: Any, op_name: str, fmt: str, inputs: tuple[np.ndarray, ...]) -> str | None:
    """What the op's torch call raises when run here directly (None: it ran)."""
    dtype = getattr(torch, fmt)
    tensors = [torch.from_numpy(x).to(dtype) for x in inputs]
    try:
        get_op(op_name).torch(torch, dtype, *tensors)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _expected(fmt: str, op_name: str) -> Status | None:
    """The failure the tables expect (None: the op runs)."""
    if fmt in CPU_RUNS_FLOAT8:  # the ops refused in 16 bits are refused in 8; the rest have no kernel
        if op_name in CPU_RUNS_FLOAT8[fmt]:
            return None
        refused = CPU_GAPS_16.get(op_name) is Status.UNSUPPORTED_DTYPE
        return Status.UNSUPPORTED_DTYPE if refused else Status.NO_KERNEL
    return CPU_GAPS_16.get(op_name) if fmt in ("float16", "bfloat16") else None


@pytest.mark.parametrize("fmt", WIDE + FLOAT8)
@pytest.mark.parametrize("op_name", TORCH_OPS)
def test_every_op_against_the_reference(torch, op_name, fmt):
    op = get_op(op_name)
    backend = get_backend("torch")
    expected = _expected(fmt, op_name)
    for seed in range(SEEDS):
        inputs = rounded_inputs(op_name, fmt, seed)
        outcome = backend.run(op, fmt, inputs=inputs)
        direct = direct_error(torch, op_name, fmt, inputs)
        if direct is not None:
            assert expected is not None, f"{op_name} fails in {fmt} (the table says it runs): {direct}"
            assert outcome.status is expected, (outcome.status, outcome.error)
            assert outcome.error == direct  # the real error text, whole
            continue
        assert expected is None, f"{op_name} runs in {fmt} (the table says {expected})"
        assert outcome.status is Status.OK, (outcome.status, outcome.detail)
        assert outcome.device == "CPU" and outcome.phase is Phase.OK
        if not op.float_output or not all(np.isfinite(x).all() for x in inputs):
            assert outcome.result is not None  # (signed inputs are NaN in the unsigned float8_e8m0fnu)
            continue
        assert outcome.result is not None and outcome.result.dtype == resolve(fmt).storage_dtype
        want = np.asarray(op.reference(*inputs), dtype=np.float64)
        assert outcome.result.shape == want.shape
        error = normwise_eps(outcome.result, want, fmt)
        assert error <= NORMWISE_EPS[fmt], f"{op_name} in {fmt}, seed {seed}: {error:.3g} eps normwise"
        assert judge(outcome, op, inputs, resolve(fmt)).status is Status.OK


def test_failures_have_their_phase(torch):
    """A kernel without a case for the dtype fails at the kernel lookup; a dtype refused by the op's
    own checks, before any kernel is chosen, while building the op."""
    backend = get_backend("torch")
    cholesky = backend.run("cholesky", "float16")
    assert cholesky.status is Status.NO_KERNEL and cholesky.phase is Phase.KERNEL_LOOKUP
    assert "\"cholesky_cpu\" not implemented for 'Half'" in cholesky.error
    inv = backend.run("inv", "bfloat16")
    assert inv.status is Status.UNSUPPORTED_DTYPE and inv.phase is Phase.OP_BUILD
    assert "Low precision dtypes not supported" in inv.error


@pytest.mark.parametrize(
    ("call", "status"),
    [
        (lambda t: t.linalg.cholesky(t.eye(2, dtype=t.float16)), Status.NO_KERNEL),
        (lambda t: t.exp(t.ones(2, dtype=t.float8_e4m3fn)), Status.NO_KERNEL),
        (lambda t: t.linalg.inv(t.eye(2, dtype=t.float16)), Status.UNSUPPORTED_DTYPE),
        (lambda t: t.fft.fft(t.ones(4, dtype=t.bfloat16)), Status.UNSUPPORTED_DTYPE),
        (
            lambda t: t.linalg.lstsq(t.eye(2, dtype=t.float16), t.ones(2, 1, dtype=t.float16)),
            Status.UNSUPPORTED_DTYPE,
        ),
        (lambda t: t.ones(3).reshape(2), Status.ERROR),
    ],
    ids=["cholesky", "exp-float8", "inv", "fft", "lstsq", "shape"],
)
def test_classify_real_error_texts(torch, call, status):
    with pytest.raises(Exception) as info:
        call(torch)
    assert classify_error(f"{type(info.value).__name__}: {info.value}") is status


def test_formats_torch_lacks(torch):
    backend = get_backend("torch")
    assert not backend.supports_format(resolve("float8_e4m3b11fnuz"))
    assert not backend.supports_format(resolve("tf32"))
    outcome = backend.run("exp", "float6_e2m3fn")
    assert outcome.status is Status.UNSUPPORTED_DTYPE and "torch has no float6_e2m3fn dtype" in outcome.error
    assert backend.version() == torch.__version__.split("+")[0] or backend.version() == torch.__version__


# ---------------------------------------------------------------- torch.compile on CPU


@pytest.fixture(scope="module")
def compiler(torch) -> None:
    needs = "torch.compile on CPU needs a C++ compiler (apt-get install g++)"
    require(shutil.which("g++") or shutil.which("c++"), needs)


#: (op, format) -> status under torch.compile on CPU, torch 2.13: Inductor generates C++ for
#: elementwise ops (float16 and bfloat16 computed in float32); its float8 code for exp does not
#: compile (no Vectorized<Float8_e4m3fn> math) and its reductions have no float8 entry (KeyError),
#: while float8 add, which eager PyTorch has no kernel for, compiles (computed in float32, rounded
#: once); LAPACK calls stay ATen kernels; lstsq cannot be traced whole (its output shape depends on
#: the data: Dynamo's "Dynamic shape operator"), in any dtype
COMPILED = {
    ("exp", "float16"): Status.OK,
    ("sum", "bfloat16"): Status.OK,
    ("add", "float8_e4m3fn"): Status.OK,
    ("exp", "float8_e4m3fn"): Status.NO_KERNEL,
    ("cholesky", "float16"): Status.NO_KERNEL,
    ("sum", "float8_e4m3fn"): Status.NO_KERNEL,
    ("lstsq", "float32"): Status.ERROR,
}


@pytest.mark.slow
@pytest.mark.parametrize(("op_name", "fmt"), list(COMPILED), ids=[f"{o}-{f}" for o, f in COMPILED])
def test_torch_compile_on_cpu(torch, compiler, op_name, fmt):
    op, f = get_op(op_name), resolve(fmt)
    inputs = rounded_inputs(op_name, fmt, 0)
    outcome = get_backend("torch")._run(op, inputs, f, "CPU", COMPILE)
    assert outcome.status is COMPILED[(op_name, fmt)], (outcome.status, outcome.error[:2000])
    if outcome.status is Status.OK:
        assert outcome.result is not None and outcome.result.dtype == f.storage_dtype
        want = np.asarray(op.reference(*inputs), dtype=np.float64)
        assert normwise_eps(outcome.result, want, fmt) <= NORMWISE_EPS[fmt]
        assert "torch.compile" in outcome.detail
    elif op_name == "exp":
        assert outcome.phase is Phase.XLA_COMPILE and "C++ compile error" in outcome.error
        assert "does not compile" in outcome.detail
    elif op_name == "sum":
        assert outcome.phase is Phase.XLA_COMPILE and "KeyError: torch.float8_e4m3fn" in outcome.error
    elif op_name == "lstsq":
        assert outcome.phase is Phase.OP_BUILD and "Dynamic shape operator" in outcome.error
    else:
        assert outcome.phase is Phase.KERNEL_LOOKUP and "not implemented for 'Half'" in outcome.error


#: the torch functions of a few catalog ops, written here (not the catalog's calls): an elementwise
#: op, a reduction, and a LAPACK call that Inductor leaves to ATen
DIRECT_CALLS = {
    "exp": lambda torch, x: torch.exp(x),
    "sum": lambda torch, x: torch.sum(x, dim=-1),
    "cholesky": lambda torch, a: torch.linalg.cholesky(a),
}


def direct_compile(torch: Any, op_name: str, fmt: str, inputs: tuple[np.ndarray, ...]) -> tuple[Any, str]:
    """``torch.compile`` of the op's torch function, called here on CPU: (result as float64, "") or
    (None, the error's type name) when compiling or running it raises."""
    dtype = getattr(torch, fmt)
    call = DIRECT_CALLS[op_name]
    torch._dynamo.reset()
    compiled = torch.compile(lambda *tensors: call(torch, *tensors), fullgraph=True)
    try:
        with warnings.catch_warnings():  # Inductor's own imports warn (torch.jit deprecations)
            warnings.simplefilter("ignore", DeprecationWarning)
            out = compiled(*[torch.from_numpy(x).to(dtype) for x in inputs])
    except Exception as exc:
        return None, type(exc).__name__
    assert out.dtype == dtype
    return out.to(torch.float64).numpy(), ""


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ("float16", "bfloat16", "float32"))
@pytest.mark.parametrize("op_name", list(DIRECT_CALLS))
def test_run_in_compile_mode_matches_a_direct_torch_compile(torch, compiler, op_name, fmt):
    """``Backend.run(mode="compile")`` against ``torch.compile`` called here: the same failure, or
    the same values, within the format's tolerance of the float64 reference."""
    inputs = rounded_inputs(op_name, fmt, 0)
    outcome = get_backend("torch").run(op_name, fmt, mode=COMPILE, inputs=inputs)
    want, error = direct_compile(torch, op_name, fmt, inputs)
    assert outcome.extra["mode"] == COMPILE
    if error:
        assert not outcome.ran and outcome.error.startswith(f"{error}: "), (error, outcome.error[:500])
        return
    assert outcome.status is Status.OK, outcome.error[:2000]
    assert outcome.result.dtype == resolve(fmt).storage_dtype and "torch.compile" in outcome.detail
    np.testing.assert_array_equal(outcome.result.astype(np.float64), want)
    reference = np.asarray(get_op(op_name).reference(*inputs), dtype=np.float64)
    assert normwise_eps(want, reference, fmt) <= NORMWISE_EPS[fmt]


def test_torch_runs_eager_and_compile_only(torch):
    backend = get_backend("torch")
    assert backend.modes == ("eager", COMPILE)
    with pytest.raises(ValueError, match=r"^the torch backend has no xla mode; its modes: eager, compile$"):
        backend.run("exp", "float16", mode="xla")
