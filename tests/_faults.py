"""Functions that misbehave on purpose, run inside sandbox workers by test_sandbox.py."""

from __future__ import annotations

import ctypes
import os
import time

from explorer.outcome import Outcome, Status


def segfault() -> Outcome:
    ctypes.string_at(0)  # reads address 0: SIGSEGV
    return Outcome(Status.OK)


def abort() -> Outcome:
    os.abort()


def hang() -> Outcome:
    while True:
        time.sleep(0.01)


def fine(value: int) -> Outcome:
    return Outcome(Status.OK, detail=f"pid {os.getpid()} got {value}")


def pid() -> int:
    return os.getpid()


def raise_value_error() -> None:
    raise ValueError("bad value inside the worker")
