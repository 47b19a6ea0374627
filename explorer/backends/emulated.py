"""Emulation with ml_dtypes: compute wide, round to the target format after the op."""

from __future__ import annotations

import numpy as np

from explorer.backends.base import Backend, first_output
from explorer.formats import Format
from explorer.ops import Op
from explorer.outcome import Outcome, Status
from explorer.rounding import ROUNDING_MODES, round_to

COMPUTE_DTYPES: tuple[str, ...] = ("float64", "float32")


class EmulatedBackend(Backend):
    """Any format: inputs rounded to it, the op computed in float64 (or float32),
    the result rounded to it with the chosen rounding mode.

    >>> from explorer.backends.emulated import EmulatedBackend
    >>> EmulatedBackend().run("exp", "float8_e4m3fn").status.value
    'ok'
    """

    name = "emulated"
    modes = ("eager",)

    def __init__(self, compute: str = "float64", rounding: str = "nearest_even", seed: int = 0) -> None:
        if compute not in COMPUTE_DTYPES:
            raise ValueError(f"unknown compute dtype {compute!r}; valid: {', '.join(COMPUTE_DTYPES)}")
        if rounding not in ROUNDING_MODES:
            raise ValueError(f"unknown rounding {rounding!r}; valid: {', '.join(ROUNDING_MODES)}")
        self.compute = np.dtype(compute)
        self.rounding = rounding
        self.seed = seed

    def is_installed(self) -> bool:
        return True

    def version(self) -> str | None:
        import ml_dtypes

        return str(ml_dtypes.__version__)

    def devices(self) -> list[str]:
        return ["CPU"]

    def supports_format(self, fmt: Format) -> bool:
        return True

    def cast_values(self, values: np.ndarray, fmt: Format) -> tuple[np.ndarray, str] | None:
        """The format's rounding (:meth:`~explorer.formats.Format.round`: ml_dtypes' ``astype``,
        in one step from float64), as every emulated op's inputs and results are rounded."""
        if not self.supports_format(fmt):
            return None
        with np.errstate(over="ignore", invalid="ignore"):
            return fmt.round(values).astype(np.float64), ""

    def compute_op(self, op: Op, inputs: tuple[np.ndarray, ...], fmt: Format) -> np.ndarray:
        """The op's result in ``fmt`` (storage dtype) for inputs given in any float dtype."""
        rounded = [fmt.round(np.asarray(x, dtype=np.float64)).astype(self.compute) for x in inputs]
        with np.errstate(all="ignore"):
            if self.compute == np.float64 or op.numpy is None:
                wide = np.asarray(op.reference(*rounded))
            else:
                wide = np.asarray(first_output(op.numpy(np, self.compute, *rounded)))
            if not op.float_output:
                return wide
            wide = wide.astype(self.compute)
            return round_to(wide, fmt, self.rounding, np.random.default_rng(self.seed))

    def _run(self, op: Op, inputs: tuple[np.ndarray, ...], fmt: Format, device: str, mode: str) -> Outcome:
        result = self.compute_op(op, inputs, fmt)
        return Outcome(
            Status.OK, result, "CPU", detail=f"computed in {self.compute.name}, rounded {self.rounding}"
        )
