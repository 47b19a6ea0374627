"""The status vocabulary and the result of one run, shared by every backend, the CLI and the app."""

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


STATUSES: tuple[str, ...] = tuple(s.value for s in Status)


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
    #: what happened beyond the status, e.g. "computed in float32, not float16"
    detail: str = ""
    #: extra facts for the caller (mode, seconds, ...)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ran(self) -> bool:
        return self.status in (Status.OK, Status.FALLBACK)

    @property
    def error_first_line(self) -> str:
        return self.error.strip().splitlines()[0] if self.error.strip() else ""
