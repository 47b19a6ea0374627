"""TensorFlow: eager, and XLA through ``tf.function(jit_compile=True)``.

TensorFlow is imported on first use, never at ``import explorer``.

How a run is made, so that the kernel asked about is the one that runs:

- **eager**: the op's public call on tensors of the dtype (creation ops: with their Python
  parameters, as a user writes ``tf.range(12, dtype=tf.float16)``).  Eager execution does
  not fold constants: the op's own kernel is looked up and run.
- **xla**: ``tf.function(call, jit_compile=True)`` with *every* input an argument of the
  traced function, creation ops' parameters included (0-d tensors, see ``Op.tf_params``):
  nothing inside the graph is a constant, so neither TensorFlow's constant folding nor
  XLA's can replace the op by its value before XLA lowers it.  The graph is traced, then
  compiled and run; the step that raises is the run's :class:`~explorer.outcome.Phase`:
  tracing (``op_build``), lowering to XLA's HLO or compiling (``xla_compile``; a run that
  raised is then lowered on its own to tell which), running (``kernel_run``).
  ``execute=False`` stops after the lowering, before any code is generated; availability
  probes compile and run (``python benchmarks/bench_catalog_sweep.py --prove-lowering``
  compares both ways over the whole catalog: svd in float16 lowers, but returns NaN when run).
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import os
import re
import traceback
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import numpy as np

from explorer.backends.base import LoweringBackend, first_output
from explorer.formats import Format
from explorer.ops import Op
from explorer.outcome import Outcome, Phase, Status


@cache
def import_tensorflow() -> Any:
    """Import TensorFlow quietly: its C++ start-up chatter (written before logging is
    configured, so TF_CPP_MIN_LOG_LEVEL cannot stop it) is sent to /dev/null."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with _stderr_silenced():
        import tensorflow as tf

        tf.config.list_logical_devices()  # device discovery prints too
    return tf


@contextlib.contextmanager
def _stderr_silenced() -> Iterator[None]:
    try:
        saved = os.dup(2)
    except OSError:  # no real stderr (some embedded interpreters)
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def tf_dtype(fmt: Format) -> Any | None:
    """The ``tf.DType`` for a format, or None when TensorFlow has none."""
    if fmt.emulated:
        return None
    from tensorflow.python.framework import dtypes

    return getattr(dtypes, fmt.name, None)


_NO_KERNEL = re.compile(
    r"Could not find device for node|No registered '.*' OpKernel|"
    r"no kernel|Detected unsupported operations",
    re.IGNORECASE,
)
_UNSUPPORTED = re.compile(
    r"not in the list of allowed values|not in list of allowed values|"
    r"allowed values|Could not satisfy dtype|unsupported type|"
    r"Unsupported dtype|is not a supported|is not supported|requires tf\.float|"
    r"Invalid dtype|one of \[tf\.float",
    re.IGNORECASE,
)


def classify_error(text: str) -> Status:
    """Status for a TensorFlow error message (the registry refines this in analysis)."""
    if _UNSUPPORTED.search(text) and not _NO_KERNEL.search(text.split("\n")[0]):
        return Status.UNSUPPORTED_DTYPE
    if _NO_KERNEL.search(text):
        return Status.NO_KERNEL
    if _UNSUPPORTED.search(text):
        return Status.UNSUPPORTED_DTYPE
    return Status.ERROR


def device_type_of(device_name: str) -> str:
    """``"/job:localhost/replica:0/task:0/device:GPU:0"`` -> ``"GPU"``."""
    match = re.search(r"device:([A-Z_]+):\d+", device_name)
    return match.group(1) if match else device_name


#: the detail of an XLA probe decided by lowering to HLO
LOWERED = "lowered to HLO (not compiled or run)"
#: TensorFlow's mark on an error raised by a kernel that ran (eager ops run as functions)
_KERNEL_MARK = "{{function_node __wrapped__"
#: TensorFlow's mark on an error raised while checking a node against its op's definition
_OPDEF_MARK = "; Op<name="


def param_values(op: Op) -> dict[str, Any]:
    """A creation op's scalar parameters with their values: the defaults of its ``tf`` call.

    >>> from explorer.ops import get_op
    >>> param_values(get_op("range")), param_values(get_op("exp"))
    ({'limit': 12}, {})
    """
    if not op.tf_params:
        return {}
    parameters = inspect.signature(op.tf).parameters
    return {name: parameters[name].default for name, _ in op.tf_params}


def traced_arguments(op: Op, inputs: tuple[np.ndarray, ...], fmt: Format) -> list[np.ndarray]:
    """Every argument of the traced call: the inputs in ``fmt``'s storage dtype, then the creation
    op's parameters as arrays (in ``fmt`` or the dtype ``tf_params`` names).

    >>> from explorer.formats import resolve
    >>> from explorer.ops import get_op
    >>> [(a.shape, a.dtype.name) for a in traced_arguments(get_op("fill"), (), resolve("float16"))]
    [((1,), 'int32'), ((), 'float16')]
    """
    out = [np.asarray(x).astype(fmt.storage_dtype) for x in inputs]
    values = param_values(op)
    for name, kind in op.tf_params:
        out.append(np.asarray(values[name], dtype=fmt.storage_dtype if kind == "dtype" else kind))
    return out


def traced_function(op: Op, tf: Any, dtype: Any, jit_compile: bool) -> Any:
    """``tf.function`` of the op's call taking every argument of :func:`traced_arguments`."""
    names = [name for name, _ in op.tf_params]

    def call(*args: Any) -> Any:
        tensors, params = args[: op.arity], args[op.arity :]
        return first_output(op.tf(tf, dtype, *tensors, **dict(zip(names, params, strict=True))))

    call.__name__ = f"px_{op.name}"
    return tf.function(call, jit_compile=jit_compile, autograph=False)


def raised_in(exc: BaseException) -> str:
    """``module.function`` of the innermost TensorFlow frame (outside its error helpers) that
    raised ``exc``, or "" when it was not raised in TensorFlow's Python code."""
    helpers = ("raise_from_not_ok_status", "quick_execute", "__exit__", "error_handler", "wrapper")
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        path = frame.filename.replace("\\", "/")
        if "/tensorflow/" not in path or frame.name in helpers:
            continue
        module = path.rsplit("/tensorflow/", 1)[1].removesuffix(".py").replace("/", ".")
        return f"{module.rsplit('.', 1)[-1]}.{frame.name}"
    return ""


def build_detail(exc: BaseException) -> str:
    """Where building the op failed, from the frame that raised (see :func:`raised_in`)."""
    where = raised_in(exc)
    if where.startswith("op_def_library."):
        return "the op's signature refused the dtype (checked in Python while building the op)"
    if where == "ops._create_c_op":
        return "TensorFlow's graph builder refused the op (its shape function or attribute checks)"
    if _OPDEF_MARK in str(exc):
        return "the op's signature refused the dtype (checked by the runtime before looking a kernel up)"
    if where:
        return f"TensorFlow's Python function {where} refused the input before any op was built"
    return "building the op failed before any kernel was looked up"


def eager_phase(tf: Any, exc: BaseException) -> tuple[Phase, str]:
    """The phase and detail of a failed eager call, from what raised: the kernel lookup
    (NotFoundError), a kernel that ran (TensorFlow marks its errors), the check of the op
    against its definition, or TensorFlow's Python code."""
    text = str(exc)
    if isinstance(exc, tf.errors.NotFoundError):
        return Phase.KERNEL_LOOKUP, "no kernel is registered for the op on this device in this dtype"
    if _OPDEF_MARK in text:
        return Phase.OP_BUILD, build_detail(exc)
    if _KERNEL_MARK in text:
        kernel = text.split(_KERNEL_MARK, 1)[1].split("_device_", 1)[0]
        return Phase.KERNEL_RUN, f"the {kernel} kernel was found, but raised when it ran"
    if isinstance(exc, tf.errors.OpError):
        return Phase.KERNEL_RUN, "a kernel was found, but raised when it ran"
    return Phase.OP_BUILD, build_detail(exc)


def failed(tf: Any, exc: BaseException, phase: Phase, detail: str) -> Outcome:
    """The Outcome of a run that raised ``exc`` in ``phase`` (re-raises what TensorFlow did not raise)."""
    if not isinstance(exc, TypeError | ValueError | tf.errors.OpError):
        raise exc
    text = f"{type(exc).__name__}: {exc}"
    return Outcome(classify_error(text), error=text, detail=detail, phase=phase)


def _stage(tf: Any, step: Callable[[], Any]) -> BaseException | None:
    """Run one step; the TensorFlow error it raised (None when it did not)."""
    try:
        step()
    except (TypeError, ValueError, tf.errors.OpError) as exc:
        return exc
    return None


class TensorflowBackend(LoweringBackend):
    """Runs each op's TensorFlow call, eagerly or compiled with XLA."""

    name = "tensorflow"
    modes = ("eager", "xla")

    def is_installed(self) -> bool:
        return importlib.util.find_spec("tensorflow") is not None

    def version(self) -> str | None:
        return str(import_tensorflow().__version__) if self.is_installed() else None

    def devices(self) -> list[str]:
        tf = import_tensorflow()
        return sorted(
            {d.device_type for d in tf.config.list_logical_devices() if d.device_type in ("CPU", "GPU")}
        )

    def supports_format(self, fmt: Format) -> bool:
        return tf_dtype(fmt) is not None

    def cast_values(self, values: np.ndarray, fmt: Format) -> tuple[np.ndarray, str] | None:
        """``tf.cast`` of a float64 tensor on the CPU, eagerly."""
        if not self.is_installed():
            return None
        tf = import_tensorflow()
        dtype = tf_dtype(fmt)
        if dtype is None:
            return None
        with tf.device("/CPU:0"):
            cast = tf.cast(tf.constant(values, dtype=tf.float64), dtype)
            return tf.cast(cast, tf.float64).numpy(), ""

    def _attempt(
        self, op: Op, inputs: tuple[np.ndarray, ...], fmt: Format, device: str, mode: str, execute: bool
    ) -> Outcome:
        tf = import_tensorflow()
        dtype = tf_dtype(fmt)
        with tf.device(f"/{device}:0"):
            if mode == "xla":
                return self._xla(tf, op, inputs, fmt, device, execute)
            tensors = [tf.constant(x.astype(fmt.storage_dtype)) for x in inputs]
            try:
                out = first_output(op.tf(tf, dtype, *tensors))
                result = out.numpy()
            except Exception as exc:  # TF raises many types; what raised tells the phase
                return failed(tf, exc, *eager_phase(tf, exc))
        return _ran(op, fmt, device, result, out.dtype, device_type_of(out.device))

    def _xla(
        self, tf: Any, op: Op, inputs: tuple[np.ndarray, ...], fmt: Format, device: str, execute: bool
    ) -> Outcome:
        """Trace, then compile and run (``execute``) or lower to HLO only: the step that fails is
        the phase.  A compiled run that raises is lowered after the fact, to tell a graph XLA
        cannot lower from one it lowers but cannot compile, or compiles but cannot run."""
        args = [tf.constant(a) for a in traced_arguments(op, inputs, fmt)]
        fn = traced_function(op, tf, tf_dtype(fmt), jit_compile=True)
        concrete: list[Any] = []
        building = _stage(tf, lambda: concrete.append(fn.get_concrete_function(*args)))
        if building is not None:
            return failed(tf, building, Phase.OP_BUILD, build_detail(building))

        def lower(stage: str) -> BaseException | None:
            ir = fn.experimental_get_compiler_ir
            return _stage(tf, lambda: ir(*args)(stage=stage, platform_name=device))

        lowering = None if execute else lower("hlo")
        if not execute and lowering is None:
            out = concrete[0].structured_outputs
            outcome = _ran(op, fmt, device, None, out.dtype, device)
            outcome.detail = "; ".join(d for d in (outcome.detail, LOWERED) if d)
            return outcome
        try:  # compile and run (after a failed lowering too: its error is TensorFlow's own text)
            out = fn(*args)
            result = out.numpy()
        except Exception as exc:
            if execute:
                lowering = lower("hlo")
            if lowering is not None:
                return failed(tf, exc, Phase.XLA_COMPILE, "XLA could not lower the graph to HLO")
            if lower("optimized_hlo"):
                return failed(tf, exc, Phase.XLA_COMPILE, "XLA lowered the graph, but could not compile it")
            return failed(tf, exc, Phase.KERNEL_RUN, "XLA compiled the graph, but running it raised")
        outcome = _ran(op, fmt, device, result, out.dtype, device_type_of(out.device))
        if lowering is not None:
            outcome.detail = "; ".join(
                d for d in (outcome.detail, f"lowering to HLO alone failed ({lowering})") if d
            )
        return outcome


def _ran(op: Op, fmt: Format, device: str, result: Any, out_dtype: Any, ran_on: str) -> Outcome:
    """The Outcome of a run that returned: ``ok``, or ``fallback`` (another device, another dtype)."""
    details = []
    status = Status.OK
    if ran_on != device:
        status = Status.FALLBACK
        details.append(f"asked for {device}, ran on {ran_on}")
    if op.float_output and out_dtype.name != fmt.name:
        status = Status.FALLBACK
        details.append(f"result came back in {out_dtype.name}, not {fmt.name}")
    array = None if result is None else np.asarray(result)
    return Outcome(
        status,
        array,
        ran_on,
        detail="; ".join(details),
        phase=Phase.OK,
        extra={"result_dtype": out_dtype.name},
    )
