"""The one interface every backend implements."""

from __future__ import annotations

import dataclasses
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

from explorer.backends.cast_behaviour import CastBehaviour, measure
from explorer.backends.silent import judge
from explorer.formats import Format, resolve
from explorer.ops import Op, get_op
from explorer.outcome import Outcome, Phase, Status

#: Device types a user may ask for.
DEVICE_TYPES: tuple[str, ...] = ("CPU", "GPU")
#: Every way of running an op, across the backends: ``eager`` (op by op, every backend), ``xla``
#: (TensorFlow's ``jit_compile=True``, JAX's ``jax.jit``), ``compile`` (PyTorch's ``torch.compile``
#: with Inductor).  Each backend runs in the ones its :attr:`Backend.modes` lists.
MODES: tuple[str, ...] = ("eager", "xla", "compile")


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


def check_mode(backend: Backend, mode: str) -> str:
    """``mode`` when ``backend`` runs in it; ValueError naming the valid modes otherwise.

    >>> from explorer.backends import get_backend
    >>> check_mode(get_backend("torch"), "compile")
    'compile'
    >>> check_mode(get_backend("numpy"), "xla")
    Traceback (most recent call last):
    ...
    ValueError: the numpy backend has no xla mode; its modes: eager
    """
    if not isinstance(mode, str) or mode not in MODES:
        shown = mode if not isinstance(mode, str) or len(mode) <= 40 else mode[:40] + "..."
        raise ValueError(f"unknown mode {shown!r}; valid modes: {', '.join(MODES)}")
    if mode not in backend.modes:
        raise ValueError(
            f"the {backend.name} backend has no {mode} mode; its modes: {', '.join(backend.modes)}"
        )
    return mode


class Backend(ABC):
    """A framework that can run catalog ops.

    Subclasses import their framework lazily (never at ``import explorer``) and
    implement :meth:`_run`; the checks common to all (names, modes, devices,
    installation) live here.
    """

    #: registry name, e.g. "numpy"
    name: str = ""
    #: the modes of :data:`MODES` this backend runs in (:meth:`run` refuses the others)
    modes: tuple[str, ...] = ("eager",)
    #: the command that installs the framework ("" where no hint is kept here)
    install_hint: str = ""

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

    def declared(self, op_name: str, dtype: str, device: str) -> dict[str, str] | None:
        """What the framework's own declaration (its kernel registry) says for catalog op
        ``op_name`` in ``dtype`` on ``device``: ``status`` (a :class:`Status` value), ``raw_op``
        (the framework's op names it read) and ``explanation`` (one sentence); None where it
        declares nothing for the cell.  By default a backend declares nothing.
        """
        return None

    def declared_disagreement(self, declared: str, record: dict[str, Any]) -> str:
        """Why probe ``record`` (``status``, ``detail`` ...) disagrees with the ``declared`` status
        of its cell; ``""`` when they agree.  By default they agree."""
        return ""

    def timed_call(
        self, op: Op, fmt: Format, device: str, mode: str, inputs: tuple[np.ndarray, ...]
    ) -> Callable[[], Any] | None:
        """A call without arguments that runs ``op`` once on ``inputs`` in ``fmt`` and returns its
        output when the device is done, everything else prepared beforehand (what the speed
        measurements time); exceptions of a failed run propagate from it.  None where the
        backend keeps no timed call of its own (:mod:`explorer.runtime.speed_calls` has the
        older backends')."""
        return None

    def cast_values(self, values: np.ndarray, fmt: Format) -> tuple[np.ndarray, str] | None:
        """``values`` (float64) cast to ``fmt`` by the framework's own cast, read back as float64,
        and a note (what else was measured, or ""); None where the backend has no such cast
        (not installed, no dtype for the format, or no cast written here)."""
        return None

    def cast_behaviour(self, fmt: Any) -> CastBehaviour | None:
        """What this backend's cast to ``fmt`` does above its max, for inf, and below its
        smallest subnormal (:func:`explorer.backends.cast_behaviour.measure`), measured at the
        first call for the format and kept; None where the backend has no cast to ``fmt``."""
        fmt = resolve(fmt)
        cache: dict[str, CastBehaviour | None] = self.__dict__.setdefault("_cast_behaviours", {})
        if fmt.name not in cache:
            notes: list[str] = []

            def cast(values: np.ndarray) -> np.ndarray:
                done = self.cast_values(values, fmt)
                if done is None:
                    raise LookupError(fmt.name)
                notes.append(done[1])
                return done[0]

            try:
                cache[fmt.name] = None if fmt.name == "float64" else measure(fmt, cast)
            except Exception:  # no cast to the format here, or the framework's cast raised
                cache[fmt.name] = None
            if notes and notes[0] and cache[fmt.name] is not None:
                cache[fmt.name] = dataclasses.replace(cache[fmt.name], note=notes[0])  # type: ignore[type-var]
        return cache[fmt.name]

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

        Bad names (op, format, device, mode) raise ValueError, and so does a mode of
        :data:`MODES` that this backend does not list in :attr:`modes`; everything that
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
        check_mode(self, mode)
        judged = inputs is None  # the catalog's own inputs: a probe, judged for silent wrong results
        if inputs is None:
            inputs = op.inputs(seed)
        if len(inputs) != op.arity:
            raise ValueError(f"op {op.name} takes {op.arity} inputs, got {len(inputs)}")
        extra = {"backend": self.name, "mode": mode}
        if not self.is_installed():
            hint = f" (install it: {self.install_hint})" if self.install_hint else ""
            return Outcome(Status.NOT_INSTALLED, error=f"{self.name} is not installed{hint}", extra=extra)
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


class LoweringBackend(Backend):
    """A backend whose probe may stop before running (XLA: traced and lowered, not executed):
    both a run and a probe are one :meth:`_attempt`, told whether to ``execute``."""

    @abstractmethod
    def _attempt(
        self, op: Op, inputs: tuple[np.ndarray, ...], fmt: Format, device: str, mode: str, execute: bool
    ) -> Outcome:
        """Run ``op`` (``execute``) or only build and lower it where the mode allows."""

    def _run(self, op: Op, inputs: tuple[np.ndarray, ...], fmt: Format, device: str, mode: str) -> Outcome:
        return self._attempt(op, inputs, fmt, device, mode, execute=True)

    def _probe(self, op: Op, inputs: tuple[np.ndarray, ...], fmt: Format, device: str, mode: str) -> Outcome:
        return self._attempt(op, inputs, fmt, device, mode, execute=False)
