"""JAX (optional): the catalog's NumPy calls run with ``jax.numpy``, op by op or under ``jax.jit``.

JAX is imported on first use, never at ``import explorer``.  Every run is made with 64-bit
types enabled (``jax.enable_x64``, for that run only), so that float64 is float64.

How a run is made:

- **the call**: the catalog has no JAX field; each op's NumPy call is called with ``jax.numpy``
  as its ``np`` (``numpy(jnp, dtype, *arrays)``: ``jnp.exp``, ``jnp.linalg.cholesky``,
  ``jnp.fft.rfft`` ...).  :data:`JAX_CALLS` overrides that for the ops NumPy has no call for
  (``numpy=None``: the SciPy functions, which ``jax.scipy`` has, the convolutions through
  ``jax.lax``) and says which have no JAX call at all.
- **eager**: the call on device arrays of the format, as a user types it: JAX dispatches each
  primitive on its own (each one compiled by XLA for its dtype, and cached).
- **xla**: ``jax.jit`` of the call, one step at a time, and the step that raises is the run's
  :class:`~explorer.outcome.Phase`: tracing (``op_build``: the Python functions of
  ``jax.numpy`` check their arguments there), lowering to StableHLO (``xla_compile``: where a
  primitive's lowering picks its kernel, e.g. LAPACK's for ``cholesky``, and finds none for the
  dtype), compiling, running (``kernel_run``).  ``execute=False`` stops after lowering when
  tracing and lowering pass (no result; the lowered call's dtype), and compiles and runs when
  either fails.  The availability probes do not use it: ``benchmarks/bench_catalog_sweep.py
  --prove-flags jax`` compares both ways over the whole catalog, and some cells lower but do not
  compile (``chlo.erfc`` in float8), or compile and run silently wrong.

JAX declares no dtypes per op (it has no kernel registry and no OpInfo-like table), so there is
no *declared* side for JAX: only what the probe finds.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import traceback
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from explorer.backends.base import LoweringBackend, first_output
from explorer.backends.silent import held_in
from explorer.formats import Format
from explorer.ops import Call, Op
from explorer.outcome import Outcome, Phase, Status


@cache
def import_jax() -> Any:
    """Import ``jax`` (and ``jax.numpy``, ``jax.scipy.special``, ``jax.scipy.linalg``, ``jax.image``)."""
    import jax
    import jax.image
    import jax.numpy
    import jax.scipy.fft
    import jax.scipy.linalg
    import jax.scipy.special

    return jax


def jax_dtype(fmt: Format) -> Any | None:
    """The NumPy dtype JAX uses for ``fmt`` (``jax.numpy.float8_e4m3fn`` ...), or None.

    JAX's dtypes are NumPy's and ml_dtypes': a format's storage dtype, when ``jax.numpy`` has it.
    """
    if fmt.emulated:
        return None
    scalar = getattr(import_jax().numpy, fmt.name, None)
    return None if scalar is None else np.dtype(scalar)


def _conv(jax: Any, x: Any, f: Any, spec: tuple[str, str, str], groups: int = 1) -> Any:
    """``jax.lax.conv_general_dilated`` with stride 1, VALID padding, channels last."""
    strides = (1,) * (x.ndim - 2)
    return jax.lax.conv_general_dilated(
        x, f, strides, "VALID", dimension_numbers=spec, feature_group_count=groups
    )


def _depthwise(jax: Any, x: Any, f: Any) -> Any:
    """TensorFlow's depthwise filter (H, W, C, M) as a grouped HWIO filter (H, W, 1, C*M)."""
    h, w, c, m = f.shape
    return _conv(jax, x, f.reshape(h, w, 1, c * m), ("NHWC", "HWIO", "NHWC"), groups=c)


def _resize(jax: Any, x: Any, method: str) -> Any:
    """``jax.image.resize`` of an NHWC batch to 8x8 (half-pixel centres, as the catalog's)."""
    return jax.image.resize(x, (x.shape[0], 8, 8, x.shape[3]), method=method)


#: op -> ``call(jax, dtype, *arrays)`` where ``jax.numpy`` with the op's NumPy call is not the
#: call, or None where JAX has no such op (a public function of its own, not a formula of them).
#: Ops not named here run their NumPy call with ``jax.numpy``.
JAX_CALLS: dict[str, Call | None] = {
    "erf": lambda jax, dt, x: jax.scipy.special.erf(x),
    "erfc": lambda jax, dt, x: jax.scipy.special.erfc(x),
    "erfinv": lambda jax, dt, x: jax.scipy.special.erfinv(x),
    "lgamma": lambda jax, dt, x: jax.scipy.special.gammaln(x),
    "digamma": lambda jax, dt, x: jax.scipy.special.digamma(x),
    "bessel_i0e": lambda jax, dt, x: jax.scipy.special.i0e(x),
    "bessel_i1": lambda jax, dt, x: jax.scipy.special.i1(x),
    "igamma": lambda jax, dt, a, x: jax.scipy.special.gammainc(a, x),
    "igammac": lambda jax, dt, a, x: jax.scipy.special.gammaincc(a, x),
    "gelu": lambda jax, dt, x: jax.nn.gelu(x, approximate=False),
    "triangular_solve": lambda jax, dt, a, b: jax.scipy.linalg.solve_triangular(a, b, lower=True),
    "conv1d": lambda jax, dt, x, f: _conv(jax, x, f, ("NWC", "WIO", "NWC")),
    "conv2d": lambda jax, dt, x, f: _conv(jax, x, f, ("NHWC", "HWIO", "NHWC")),
    "conv3d": lambda jax, dt, x, f: _conv(jax, x, f, ("NDHWC", "DHWIO", "NDHWC")),
    "depthwise_conv2d": lambda jax, dt, x, f: _depthwise(jax, x, f),
    "resize": lambda jax, dt, x: _resize(jax, x, "bilinear"),
    "resize_nearest": lambda jax, dt, x: _resize(jax, x, "nearest"),
    "dct": lambda jax, dt, x: jax.scipy.fft.dct(x, type=2),
    # no JAX function (TensorFlow's image and fused ops): a formula would test the formula
    "rgb_to_hsv": None,
    "hsv_to_rgb": None,
    "per_image_standardization": None,
    "fused_batch_norm": None,
}


def jax_call(op: Op) -> Callable[..., Any] | None:
    """``call(jax, dtype, *arrays)`` for ``op``: its :data:`JAX_CALLS` entry, else its NumPy call
    with ``jax.numpy`` as the module; None when JAX has no such op.

    >>> from explorer.ops import get_op
    >>> jax_call(get_op("rgb_to_hsv")) is None, jax_call(get_op("exp")) is not None
    (True, True)
    """
    if op.name in JAX_CALLS:
        return JAX_CALLS[op.name]
    numpy_call = op.numpy
    if numpy_call is None:
        return None
    return lambda jax, dtype, *arrays: numpy_call(jax.numpy, dtype, *arrays)


#: a primitive's lowering or XLA found no kernel for the dtype: LAPACK's table (``Unsupported
#: dtype float16.``), XLA's ``UNIMPLEMENTED``, a missing lowering rule
_NO_KERNEL = re.compile(
    r"Unsupported dtype|UNIMPLEMENTED|not implemented|No (?:registered )?(?:lowering|implementation)|"
    r"MLIR translation rule for primitive .* not found|failed to legalize operation",
    re.IGNORECASE,
)
#: a Python function of jax.numpy / jax.scipy refused the dtype before any primitive was bound
_UNSUPPORTED = re.compile(
    r"must be (?:a )?float|must be float32 or float64|dtype .* (?:is )?not supported|"
    r"unsupported (?:d)?type|not supported for dtype|requires .*float|only supports? .*float|"
    r"invalid dtype|input must be|Invalid XLA PrimitiveType|Unknown NumPy dtype",
    re.IGNORECASE,
)


def classify_error(text: str, phase: Phase) -> Status:
    """Status of a JAX error text raised in ``phase``.

    A failure while lowering or compiling (the primitive was built, its kernel is missing for the
    dtype) is ``no_kernel``; a dtype refused while tracing, before any primitive was bound, is
    ``unsupported_dtype``; anything else ``error``.

    >>> classify_error("NotImplementedError: 'Unsupported dtype float16.'", Phase.XLA_COMPILE)
    <Status.NO_KERNEL: 'no_kernel'>
    >>> classify_error("ValueError: RFFT input must be float32 or float64, got float16", Phase.OP_BUILD)
    <Status.UNSUPPORTED_DTYPE: 'unsupported_dtype'>
    >>> classify_error("ValueError: shapes do not match", Phase.OP_BUILD)
    <Status.ERROR: 'error'>
    """
    if phase in (Phase.XLA_COMPILE, Phase.KERNEL_LOOKUP) and _NO_KERNEL.search(text):
        return Status.NO_KERNEL
    if _UNSUPPORTED.search(text):
        return Status.UNSUPPORTED_DTYPE
    if _NO_KERNEL.search(text):
        return Status.NO_KERNEL
    return Status.ERROR


def _lowering_frames(exc: BaseException) -> bool:
    """True when ``exc`` was raised while lowering a primitive (JAX's MLIR lowering, or jaxlib's
    kernel tables): the frames that remain after JAX's traceback filtering say so."""
    for frame in traceback.extract_tb(exc.__traceback__):
        path = frame.filename.replace("\\", "/")
        if "/jaxlib/" in path or "interpreters/mlir" in path or "lowering" in frame.name:
            return True
    return False


def eager_phase(jax: Any, exc: BaseException) -> tuple[Phase, str]:
    """The phase and detail of a failed eager call, from what raised it."""
    if isinstance(exc, jax.errors.JaxRuntimeError):
        if _NO_KERNEL.search(str(exc)):  # a primitive is compiled when first dispatched
            return Phase.XLA_COMPILE, "XLA could not compile a primitive of the call for the dtype"
        return Phase.KERNEL_RUN, "XLA compiled the primitive, but running it raised"
    if _lowering_frames(exc):
        return Phase.XLA_COMPILE, "lowering a primitive to XLA found no kernel for the dtype"
    return Phase.OP_BUILD, "a jax.numpy function refused the input before any primitive ran"


def _failed(exc: BaseException, phase: Phase, detail: str) -> Outcome:
    text = f"{type(exc).__name__}: {exc}"
    return Outcome(classify_error(text, phase), error=text, detail=detail, phase=phase)


class JaxBackend(LoweringBackend):
    """Runs each op's JAX call (:func:`jax_call`) on CPU or GPU, op by op or under ``jax.jit``."""

    name = "jax"
    modes = ("eager", "xla")

    def is_installed(self) -> bool:
        return importlib.util.find_spec("jax") is not None and importlib.util.find_spec("jaxlib") is not None

    def version(self) -> str | None:
        if not self.is_installed():
            return None
        try:
            return importlib.metadata.version("jax")
        except importlib.metadata.PackageNotFoundError:
            return str(import_jax().__version__)

    def devices(self) -> list[str]:
        jax = import_jax()
        found = ["CPU"]
        try:
            if jax.devices("gpu"):
                found.append("GPU")
        except RuntimeError:  # "Unknown backend: 'gpu' requested, but no platforms ..."
            pass
        return found

    def supports_format(self, fmt: Format) -> bool:
        return jax_dtype(fmt) is not None

    def cast_values(self, values: np.ndarray, fmt: Format) -> tuple[np.ndarray, str] | None:
        """``astype`` of a float64 ``jax.numpy`` array on the CPU (XLA's convert)."""
        if not self.is_installed() or jax_dtype(fmt) is None:
            return None
        jax = import_jax()
        with jax.enable_x64(True), jax.default_device(jax.devices("cpu")[0]):
            try:
                cast = jax.numpy.asarray(values, dtype=np.float64).astype(jax_dtype(fmt))
                return np.asarray(cast.astype(np.float64)), ""
            except jax.errors.JaxRuntimeError:  # a dtype XLA's CPU client cannot hold (float6)
                return None

    def _attempt(
        self, op: Op, inputs: tuple[np.ndarray, ...], fmt: Format, device: str, mode: str, execute: bool
    ) -> Outcome:
        """Run the call; for an ``xla`` probe that need not ``execute``, trace and lower it to
        StableHLO and stop there when both pass (the result is None; the result dtype is the
        lowered call's); when either fails, the call is compiled and run, as a run is."""
        call = jax_call(op)
        if call is None:
            return Outcome(Status.ERROR, error=f"JAX has no implementation of {op.name}")
        jax = import_jax()
        target = jax.devices("gpu" if device == "GPU" else "cpu")[0]
        fn = _function(op.name, fmt.name, mode == "xla")
        with jax.enable_x64(True), jax.default_device(target):
            try:
                arrays = [jax.device_put(held_in(fmt, x).astype(fmt.storage_dtype), target) for x in inputs]
            except jax.errors.JaxRuntimeError as exc:  # "Invalid XLA PrimitiveType: 36 (F6E2M3FN)"
                text = f"{type(exc).__name__}: {exc}"
                detail = f"JAX has the dtype, but XLA cannot hold an array of it on the {device}"
                return Outcome(Status.UNSUPPORTED_DTYPE, error=text, detail=detail, phase=Phase.OP_BUILD)
            if mode == "xla" and not execute:
                lowered = _lowered_dtype(fn, arrays)
                if lowered is not None:
                    outcome = _returned(op, fmt, device, device, lowered, None)
                    outcome.detail = "; ".join(d for d in (outcome.detail, LOWERED) if d)
                    return outcome
            try:
                out = jax.block_until_ready(fn(*arrays))
                result = np.asarray(out)
            except Exception as exc:  # JAX raises many types; what raised tells the phase
                if mode == "xla":
                    return _staged(jax, fn, arrays, exc)
                return _failed(exc, *eager_phase(jax, exc))
        return _returned(op, fmt, device, _device_type(out), result.dtype, result)


#: the detail an ``xla`` probe's record carries when it was lowered to StableHLO and not compiled
LOWERED = "lowered to StableHLO only (not compiled or run)"


def _lowered_dtype(jitted: Any, arrays: list[Any]) -> np.dtype | None:
    """The dtype ``jitted`` returns for ``arrays``, once traced and lowered to StableHLO; None
    when either step raised or the call returns no single array (the caller then compiles and
    runs, for the error's own text)."""
    try:
        return np.dtype(jitted.trace(*arrays).lower().out_info.dtype)
    except Exception:
        return None


@cache
def _function(op_name: str, fmt_name: str, jit: bool) -> Callable[..., Any]:
    """The op's JAX call on arrays of the format (``jax.jit`` of it for ``jit``), made once per
    op and format so that JAX's own caches (of the jitted call, of each primitive) serve later runs."""
    from explorer.formats import resolve
    from explorer.ops import get_op

    jax = import_jax()
    call = jax_call(get_op(op_name))
    dtype = jax_dtype(resolve(fmt_name))
    assert call is not None

    def fn(*arrays: Any) -> Any:
        return first_output(call(jax, dtype, *arrays))

    fn.__name__ = f"px_{op_name}"
    return jax.jit(fn) if jit else fn


def _staged(jax: Any, jitted: Any, arrays: list[Any], exc: BaseException) -> Outcome:
    """The failed jitted call taken again one step at a time (trace, lower, compile, run): the step
    that raises is the phase; ``exc`` (the whole call's error) when every step passes this time."""
    steps: list[Any] = [jitted]
    stages = (
        (Phase.OP_BUILD, "tracing the call refused the input", lambda: steps[-1].trace(*arrays)),
        (Phase.XLA_COMPILE, "lowering to StableHLO found no kernel for the dtype", lambda: steps[-1].lower()),
        (
            Phase.XLA_COMPILE,
            "XLA lowered the call, but could not compile it for the dtype",
            lambda: steps[-1].compile(),
        ),
        (Phase.KERNEL_RUN, "XLA compiled the call, but running it raised", lambda: steps[-1](*arrays)),
    )
    for phase, detail, step in stages:
        try:
            steps.append(jax.block_until_ready(step()))
        except Exception as failure:
            return _failed(failure, phase, detail)
    return _failed(
        exc, Phase.KERNEL_RUN, "the jitted call raised, but not when its steps were taken one by one"
    )


def _device_type(out: Any) -> str:
    platforms = {d.platform for d in out.devices()}
    return "CPU" if platforms == {"cpu"} else "GPU"


def _returned(
    op: Op, fmt: Format, device: str, ran_on: str, dtype: np.dtype, result: np.ndarray | None
) -> Outcome:
    """``ok``, or ``fallback`` when the result came (or, lowered, would come) back in another dtype
    or on another device; ``result_dtype`` in the extras."""
    details = []
    status = Status.OK
    if ran_on != device:
        status = Status.FALLBACK
        details.append(f"asked for {device}, ran on {ran_on}")
    if op.float_output and dtype != fmt.storage_dtype:
        status = Status.FALLBACK
        details.append(f"result came back in {dtype}, not {fmt.name}")
    return Outcome(
        status, result, ran_on, detail="; ".join(details), phase=Phase.OK, extra={"result_dtype": str(dtype)}
    )
