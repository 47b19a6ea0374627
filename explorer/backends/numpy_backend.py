"""NumPy: native float16, float32 and float64 on the CPU."""

from __future__ import annotations

import numpy as np

from explorer.backends.base import Backend, first_output
from explorer.formats import NUMPY_NATIVE_FORMATS, Format
from explorer.ops import Op
from explorer.outcome import Outcome, Status


class NumpyBackend(Backend):
    """Runs each op's NumPy call on inputs cast to a native NumPy float dtype."""

    name = "numpy"
    modes = ("eager",)

    def is_installed(self) -> bool:
        return True

    def version(self) -> str | None:
        return np.__version__

    def devices(self) -> list[str]:
        return ["CPU"]

    def supports_format(self, fmt: Format) -> bool:
        return fmt.name in NUMPY_NATIVE_FORMATS

    def cast_values(self, values: np.ndarray, fmt: Format) -> tuple[np.ndarray, str] | None:
        """NumPy's ``astype`` to the format's dtype."""
        if not self.supports_format(fmt):
            return None
        with np.errstate(over="ignore", invalid="ignore"):
            return values.astype(fmt.storage_dtype).astype(np.float64), ""

    def _run(self, op: Op, inputs: tuple[np.ndarray, ...], fmt: Format, device: str, mode: str) -> Outcome:
        if op.numpy is None:
            return Outcome(Status.ERROR, error=f"NumPy has no implementation of {op.name}")
        dtype = fmt.storage_dtype
        args = [x.astype(dtype) for x in inputs]
        try:
            with np.errstate(all="ignore"):
                result = np.asarray(first_output(op.numpy(np, dtype, *args)))
        except TypeError as exc:
            # np.linalg: "array type float16 is unsupported in linalg"
            if "unsupported" in str(exc) or "not supported" in str(exc):
                return Outcome(Status.UNSUPPORTED_DTYPE, error=f"TypeError: {exc}", device="CPU")
            raise
        if op.float_output and result.dtype != dtype:
            return Outcome(
                Status.FALLBACK, result, "CPU", detail=f"computed in {result.dtype}, not {fmt.name}"
            )
        return Outcome(Status.OK, result, "CPU")
