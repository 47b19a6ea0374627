"""The status vocabulary and the result of one run, shared by every backend, the CLI and the app.

Two small vocabularies describe a run: :class:`Status` says *what* happened (``ok``,
``fallback``, ``no_kernel``, ``unsupported_dtype``, ``no_device``, ``not_installed``,
``crashed``, ``timeout``, ``error``, ``wrong_result``) and :class:`Phase` says *where* it got to
(``op_build``, ``xla_compile``, ``kernel_lookup``, ``kernel_run``, ``ok``, or ``""`` when
not known).  The phase is decided from the step that raised, not from the message.

>>> Outcome(Status.NO_KERNEL, phase=Phase.KERNEL_LOOKUP).phase.value
'kernel_lookup'
>>> PHASES
('ok', 'op_build', 'xla_compile', 'kernel_lookup', 'kernel_run', '')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np


class Status(StrEnum):
    """What happened when an op was asked for in a dtype on a device."""

    #: ran natively, on the device asked for, in the dtype asked for
    OK = "ok"
    #: ran, but on another device than asked, or computed in another dtype
    FALLBACK = "fallback"
    #: the op accepts the dtype, but no kernel exists for it on that device
    NO_KERNEL = "no_kernel"
    #: the op does not accept the dtype at all
    UNSUPPORTED_DTYPE = "unsupported_dtype"
    #: the device asked for is not present on this machine
    NO_DEVICE = "no_device"
    #: the backend's framework is not installed
    NOT_INSTALLED = "not_installed"
    #: the worker process died (segfault, abort) while running
    CRASHED = "crashed"
    #: the run did not finish within its time limit
    TIMEOUT = "timeout"
    #: any other failure
    ERROR = "error"
    #: ran without an error, but the result is silently wrong: NaN or inf where the float64
    #: reference is finite, or off by far more than the format's precision
    #: (:mod:`explorer.backends.silent`)
    WRONG_RESULT = "wrong_result"


STATUSES: tuple[str, ...] = tuple(s.value for s in Status)


class Phase(StrEnum):
    """Where a run got to: the step that failed, or ``ok`` (kept apart from :class:`Status`,
    which says *what* happened; the phase says *where*).

    The steps, in the order TensorFlow takes them: building the op (eagerly, or into a graph
    while tracing), compiling with XLA (``xla`` mode only), looking the kernel up for the
    device and dtype, running it.
    """

    #: it ran (or, for a probe that only lowers to XLA's HLO, it lowered)
    OK = "ok"
    #: building the op failed, before any kernel was looked up: the public function's Python
    #: code, the op's signature (its dtype attribute), or, while tracing a graph, its shape function
    OP_BUILD = "op_build"
    #: the graph was built, but XLA could not compile it (no XLA lowering of an op in that dtype)
    XLA_COMPILE = "xla_compile"
    #: the op was built, but no kernel is registered for it on that device in that dtype
    KERNEL_LOOKUP = "kernel_lookup"
    #: a kernel was found, but raised when it was created or run
    KERNEL_RUN = "kernel_run"
    #: not known: the run never started (no device, not installed) or its worker died or hung
    UNKNOWN = ""


PHASES: tuple[str, ...] = tuple(p.value for p in Phase)


@dataclass
class Outcome:
    """The result of running one op in one format on one device with one backend."""

    status: Status
    #: the (first) output, as a NumPy array in the dtype it came back in; None on failure
    result: np.ndarray | None = None
    #: the device the result was actually computed on, e.g. "CPU"
    device: str | None = None
    #: the real error text, in full ("" when none)
    error: str = ""
    #: what happened beyond the status, e.g. "computed in float32, not float16", or for a
    #: failure where it was raised ("the op's signature, checked while building the graph")
    detail: str = ""
    #: where the run got to (see :class:`Phase`): ``ok``, or the step that failed
    phase: Phase = Phase.UNKNOWN
    #: extra facts for the caller (mode, seconds, ...)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ran(self) -> bool:
        return self.status in (Status.OK, Status.FALLBACK)

    @property
    def error_first_line(self) -> str:
        return self.error.strip().splitlines()[0] if self.error.strip() else ""
