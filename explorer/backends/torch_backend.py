"""PyTorch (optional): eager, and compiled with ``torch.compile`` (Inductor).

PyTorch is imported on first use, never at ``import explorer``.  What PyTorch *declares* per op
and dtype (its OpInfo test database) is read by :mod:`explorer.runtime.torch_declared`; this
module only runs ops.

How a run is made:

- **eager**: the op's ``torch`` call on tensors of the dtype, on the device asked for.  A CPU
  kernel is one C++ function with a ``switch`` over the dtypes it was built for
  (``AT_DISPATCH_...``); a dtype without a case raises ``"exp_vml_cpu" not implemented for
  'Half'`` -- ``no_kernel``, found at :attr:`~explorer.outcome.Phase.KERNEL_LOOKUP`.  A dtype the
  op's own code refuses before it dispatches (``linalg.inv: Low precision dtypes not
  supported``, ``Unsupported dtype Half`` in the FFT's type promotion) is ``unsupported_dtype``,
  at ``op_build``.
- **compile**: ``torch.compile(call, fullgraph=True)`` (Inductor: C++ code generated and built with
  the machine's compiler on CPU), compiled afresh for every run (Dynamo's caches are reset, so a
  recompilation limit can never send the call back to eager unnoticed).  Tracing with fake
  tensors fails at ``op_build``; Inductor's code that does not compile for the dtype (C++ has
  no ``Vectorized<Float8_e4m3fn>`` math) is ``no_kernel`` at ``xla_compile`` (the compile step);
  a kernel the compiled code calls (ATen fallbacks, e.g. LAPACK) fails as in eager.

``Backend.run(..., mode="compile")`` runs it (:data:`COMPILE`); the other backends refuse that mode.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import warnings
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from explorer.backends.base import Backend, first_output
from explorer.backends.silent import held_in
from explorer.formats import Format
from explorer.ops import Op
from explorer.outcome import Outcome, Phase, Status

#: the mode that runs ``torch.compile``
COMPILE = "compile"


@cache
def import_torch() -> Any:
    """Import ``torch``."""
    import torch

    return torch


def torch_dtype(fmt: Format) -> Any | None:
    """The ``torch.dtype`` of a format (``torch.float8_e4m3fn`` ...), or None when PyTorch has none."""
    if fmt.emulated:
        return None
    value = getattr(import_torch(), fmt.name, None)
    return value if isinstance(value, import_torch().dtype) else None


#: a kernel has no case for the dtype: the dispatch macro's message, or the dispatcher's
_NO_KERNEL = re.compile(
    r"not implemented for '|Could not run '[^']+' with arguments from the '\w+' backend|"
    r"C\+\+ compile error",
)
#: the op's own code refused the dtype before choosing a kernel
_UNSUPPORTED = re.compile(
    r"Unsupported dtype|dtypes? (?:is |are )?not supported|Low precision dtypes not supported|"
    r"doesn't handle types other than|expected scalar type|Promotion for .* not supported|"
    r"must be (?:a )?(?:floating|float)|only supports? .*(?:float|dtype)|got unsupported ScalarType|"
    r"unsupported ScalarType|can't be cast to the desired output type|"
    r"expected (?:both )?(?:tensors|inputs|vectors) to have (?:the )?same dtype",
    re.IGNORECASE,
)


def classify_error(text: str) -> Status:
    """Status of a PyTorch error text.

    >>> classify_error("NotImplementedError: \\"cholesky_cpu\\" not implemented for 'Half'")
    <Status.NO_KERNEL: 'no_kernel'>
    >>> classify_error("RuntimeError: linalg.inv: Low precision dtypes not supported. Got Half")
    <Status.UNSUPPORTED_DTYPE: 'unsupported_dtype'>
    >>> classify_error("RuntimeError: This function doesn't handle types other than float and double")
    <Status.UNSUPPORTED_DTYPE: 'unsupported_dtype'>
    >>> classify_error("RuntimeError: shape '[3]' is invalid for input of size 4")
    <Status.ERROR: 'error'>
    """
    if _NO_KERNEL.search(text):
        return Status.NO_KERNEL
    if _UNSUPPORTED.search(text):
        return Status.UNSUPPORTED_DTYPE
    return Status.ERROR


def error_phase(status: Status) -> tuple[Phase, str]:
    """Where an eager failure of ``status`` happened, and what that means."""
    if status is Status.NO_KERNEL:
        return Phase.KERNEL_LOOKUP, "the op's kernel has no case for this dtype on this device"
    if status is Status.UNSUPPORTED_DTYPE:
        return Phase.OP_BUILD, "the op refused the dtype before choosing a kernel"
    return Phase.KERNEL_RUN, "the op raised while it ran"


def compile_phase(torch: Any, exc: BaseException, status: Status, dtype: Any) -> tuple[Status, Phase, str]:
    """Status, phase and detail of a failed ``torch.compile`` run, from the exception's type.

    Inductor failing on the dtype itself -- C++ it generated that does not compile, or a table
    of its code generator without the dtype (``KeyError: torch.float8_e4m3fn``) -- is ``no_kernel``:
    the compiler has no kernel for the op in that dtype."""
    dynamo = torch._dynamo.exc
    inductor = getattr(torch._inductor, "exc", None)
    compile_errors: tuple[type, ...] = (dynamo.BackendCompilerFailed,)
    if inductor is not None and hasattr(inductor, "InductorError"):
        compile_errors += (inductor.InductorError,)
    if isinstance(exc, compile_errors):
        text = str(exc)
        if status is Status.ERROR and ("C++ compile error" in text or f"KeyError: {dtype}" in text):
            status = Status.NO_KERNEL
        first = next((line.strip() for line in text.splitlines() if ": error:" in line), "")
        if "C++ compile error" in text:
            detail = "Inductor generated C++ code for the dtype that does not compile"
        elif f"KeyError: {dtype}" in text:
            detail = f"Inductor's code generator has no entry for {dtype}"
        else:
            detail = "Inductor could not compile the call"
        return status, Phase.XLA_COMPILE, f"{detail} ({first[-300:]})" if first else detail
    if isinstance(exc, dynamo.TorchRuntimeError | dynamo.Unsupported):
        return status, Phase.OP_BUILD, "tracing the call with fake tensors (Dynamo) failed"
    phase, detail = error_phase(status)
    return status, phase, f"in the compiled call: {detail}"


def _compiled(torch: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.compile`` of ``fn`` with Dynamo's caches reset (a fresh compilation every time)."""
    torch._dynamo.reset()
    compiled: Callable[..., Any] = torch.compile(fn, backend="inductor", fullgraph=True, dynamic=False)
    return compiled


class TorchBackend(Backend):
    """Runs each op's PyTorch call on CPU or CUDA, eagerly or compiled."""

    name = "torch"
    modes = ("eager", COMPILE)

    def is_installed(self) -> bool:
        return importlib.util.find_spec("torch") is not None

    def version(self) -> str | None:
        if not self.is_installed():
            return None
        try:
            return importlib.metadata.version("torch")
        except importlib.metadata.PackageNotFoundError:
            return str(import_torch().__version__)

    def devices(self) -> list[str]:
        torch = import_torch()
        return ["CPU", "GPU"] if torch.cuda.is_available() else ["CPU"]

    def supports_format(self, fmt: Format) -> bool:
        return torch_dtype(fmt) is not None

    def cast_values(self, values: np.ndarray, fmt: Format) -> tuple[np.ndarray, str] | None:
        """``Tensor.to(dtype)`` of a float64 CPU tensor."""
        if not self.is_installed() or torch_dtype(fmt) is None:
            return None
        torch = import_torch()
        cast = torch.from_numpy(np.ascontiguousarray(values)).to(torch_dtype(fmt))
        return cast.to(torch.float64).numpy(), ""

    def _run(self, op: Op, inputs: tuple[np.ndarray, ...], fmt: Format, device: str, mode: str) -> Outcome:
        if op.torch is None:
            return Outcome(Status.ERROR, error=f"PyTorch has no implementation of {op.name}")
        torch = import_torch()
        dtype = torch_dtype(fmt)
        target = "cuda" if device == "GPU" else "cpu"
        call = op.torch

        def fn(*tensors: Any) -> Any:
            return first_output(call(torch, dtype, *tensors))

        tensors = [torch.from_numpy(held_in(fmt, x)).to(target).to(dtype) for x in inputs]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                out = (_compiled(torch, fn) if mode == COMPILE else fn)(*tensors)
            except Exception as exc:  # PyTorch raises many types; the text says what happened
                text = f"{type(exc).__name__}: {exc}"
                status = classify_error(text)
                if mode == COMPILE:
                    status, phase, detail = compile_phase(torch, exc, status, dtype)
                else:
                    phase, detail = error_phase(status)
                return Outcome(status, error=text, detail=detail, phase=phase, extra=_warned(caught))
        outcome = _ran(torch, op, fmt, device, out)
        outcome.extra.update(_warned(caught))
        if mode == COMPILE:
            outcome.detail = "; ".join(
                d for d in (outcome.detail, "compiled with torch.compile (Inductor)") if d
            )
        return outcome


def _warned(caught: list[warnings.WarningMessage]) -> dict[str, Any]:
    """The warnings a run raised, as ``{"warnings": [...]}`` (empty dict when none)."""
    lines = list(dict.fromkeys(f"{w.category.__name__}: {str(w.message).splitlines()[0]}" for w in caught))
    return {"warnings": lines[:5]} if lines else {}


def _ran(torch: Any, op: Op, fmt: Format, device: str, out: Any) -> Outcome:
    """``ok``, or ``fallback`` when the result came back in another dtype or on another device."""
    ran_on = "GPU" if out.device.type == "cuda" else "CPU"
    details = []
    status = Status.OK
    if ran_on != device:
        status = Status.FALLBACK
        details.append(f"asked for {device}, ran on {ran_on}")
    wide = out.detach().cpu()
    if wide.dtype.is_floating_point:
        result = wide.to(torch.float64).numpy()
        if wide.dtype == torch_dtype(fmt):
            result = result.astype(fmt.storage_dtype)
    else:
        result = wide.numpy()
    if op.float_output and out.dtype != torch_dtype(fmt):
        status = Status.FALLBACK
        details.append(f"result came back in {str(out.dtype).removeprefix('torch.')}, not {fmt.name}")
    return Outcome(status, result, ran_on, detail="; ".join(details), phase=Phase.OK)
