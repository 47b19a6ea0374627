"""The one interface every backend implements."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from explorer.backends.silent import judge
from explorer.formats import Format, resolve
from explorer.ops import Op, get_op
from explorer.outcome import Outcome, Phase, Status

#: Device types a user may ask for.
DEVICE_TYPES: tuple[str, ...] = ("CPU", "GPU")
#: Ways of running an op.  ``eager`` everywhere; ``xla`` where the backend compiles.
MODES: tuple[str, ...] = ("eager", "xla")


def normalize_device(device: str) -> str:
    """``"cpu"``, ``"/GPU"``, ``"device:gpu"`` -> ``"CPU"``, ``"GPU"``; anything else is a ValueError.

    Device indices (``"GPU:1"``, even ``"GPU:0"``) are refused: the explorer uses the first
    device of each type, and silently reading ``GPU:7`` as ``GPU`` would mislead.

    >>> normalize_device(" gpu ")
    'GPU'
    """
    if not isinstance(device, str):
        raise TypeError(f"device must be a string such as 'CPU' or 'GPU', got {device!r}")
    key = device.strip().upper().lstrip("/").removeprefix("DEVICE:")
    if key in DEVICE_TYPES:
        return key
    shown = device if len(device) <= 40 else device[:40] + "..."
    hint = " (no device index: the first device of each type is used)" if ":" in key else ""
    raise ValueError(f"unknown device {shown!r}; valid devices: {', '.join(DEVICE_TYPES)}{hint}")


class Backend(ABC):
    """A framework that can run catalog ops.

    Subclasses import their framework lazily (never at ``import explorer``) and
    implement :meth:`_run`; the checks common to all (names, modes, devices,
    installation) live here.
    """

    #: registry name, e.g. "numpy"
    name: str = ""
    #: modes this backend can run in
    modes: tuple[str, ...] = ("eager",)

    @abstractmethod
    def is_installed(self) -> bool:
        """True when the framework can be imported."""

    @abstractmethod
    def version(self) -> str | None:
        """The framework's version, or None when not installed."""

    @abstractmethod
    def devices(self) -> list[str]:
        """Device types present on this machine, e.g. ``["CPU"]``."""

    @abstractmethod
    def supports_format(self, fmt: Format) -> bool:
        """True when the backend has a dtype for ``fmt`` at all."""

    @abstractmethod
    def _run(self, op: Op, inputs: tuple[np.ndarray, ...], fmt: Format, device: str, mode: str) -> Outcome:
        """Run ``op`` on inputs (float64) in ``fmt``; the checks are already done."""

    def _probe(self, op: Op, inputs: tuple[np.ndarray, ...], fmt: Format, device: str, mode: str) -> Outcome:
        """Whether ``op`` runs (``Backend.run(..., execute=False)``); by default it is run."""
        return self._run(op, inputs, fmt, device, mode)

    def run(
        self,
        op: str | Op,
        fmt: Any,
        device: str = "CPU",
        mode: str = "eager",
        inputs: tuple[np.ndarray, ...] | None = None,
        seed: int = 0,
        execute: bool = True,
    ) -> Outcome:
        """Run ``op`` in format ``fmt`` on ``device``; never raises for a failed run.

        Bad names (op, format, device, mode) raise ValueError; everything that
        goes wrong while running becomes the Outcome's status and error, and the
        Outcome's phase says which step failed.  A run on the catalog's own inputs (``inputs``
        not given) whose result is silently wrong (:func:`explorer.backends.silent.judge`) is
        ``wrong_result``.  ``execute=False`` asks only
        whether the op *would* run (availability): a backend may then answer without
        computing a result (TensorFlow lowers an XLA probe to HLO and stops there;
        the result is None); eager runs always execute.
        """
        op = get_op(op)
        fmt = resolve(fmt)
        device = normalize_device(device)
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; valid modes: {', '.join(MODES)}")
        judged = inputs is None  # the catalog's own inputs: a probe, judged for silent wrong results
        if inputs is None:
            inputs = op.inputs(seed)
        if len(inputs) != op.arity:
            raise ValueError(f"op {op.name} takes {op.arity} inputs, got {len(inputs)}")
        extra = {"backend": self.name, "mode": mode}
        if not self.is_installed():
            return Outcome(Status.NOT_INSTALLED, error=f"{self.name} is not installed", extra=extra)
        if mode not in self.modes:
            return Outcome(
                Status.ERROR,
                error=f"the {self.name} backend has no {mode} mode (it has: {', '.join(self.modes)})",
                extra=extra,
            )
        if device not in self.devices():
            return Outcome(
                Status.NO_DEVICE,
                error=f"no {device} device is present for {self.name} on this machine",
                extra=extra,
            )
        if not self.supports_format(fmt):
            return Outcome(
                Status.UNSUPPORTED_DTYPE,
                error=f"{self.name} has no {fmt.name} dtype",
                detail=f"{self.name} has no {fmt.name} dtype, so no op can be built in it",
                phase=Phase.OP_BUILD,
                extra=extra,
            )
        start = time.perf_counter()
        try:
            outcome = (
                self._run(op, inputs, fmt, device, mode)
                if execute
                else self._probe(op, inputs, fmt, device, mode)
            )
        except Exception as exc:  # a failed run is an outcome, never an exception
            outcome = Outcome(Status.ERROR, error=f"{type(exc).__name__}: {exc}")
        if outcome.ran and outcome.phase is Phase.UNKNOWN:
            outcome.phase = Phase.OK
        if judged:  # callers passing their own inputs (range sweeps) classify every value themselves
            outcome = judge(outcome, op, inputs, fmt)
        outcome.extra.update(extra)
        outcome.extra["seconds"] = time.perf_counter() - start
        return outcome


def first_output(value: Any) -> Any:
    """The first element of a tuple/list of outputs, or the value itself."""
    if isinstance(value, tuple | list):
        return value[0]
    return value
