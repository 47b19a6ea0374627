"""Functions that misbehave on purpose, run inside sandbox workers by test_sandbox.py."""

from __future__ import annotations

import ctypes
import os
import sys
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


def echo(value: object) -> object:
    return value


def sleep_then(value: object, seconds: float) -> object:
    time.sleep(seconds)
    return value


def mark_then_sleep(mark: str, value: object, seconds: float) -> object:
    """Create the file ``mark`` (the caller waits for it: the call is under way), then sleep."""
    with open(mark, "w"):
        pass
    time.sleep(seconds)
    return value


def chatter(value: object) -> object:
    """Write to the worker's stdout and stderr at the Python and at the C level, then return."""
    print("chatter: python print")
    sys.stderr.write("chatter: python stderr\n")
    os.write(1, b"chatter: fd 1\n")
    os.write(2, b"chatter: fd 2\n")
    return value


def say_then_abort(text: str) -> None:
    os.write(2, text.encode() + b"\n")
    os.abort()


def raise_base(name: str) -> None:
    """Raise SystemExit(7), KeyboardInterrupt or GeneratorExit."""
    errors = {"SystemExit": SystemExit(7), "KeyboardInterrupt": KeyboardInterrupt()}
    raise errors.get(name, GeneratorExit())


def set_env(name: str, value: str) -> None:
    os.environ[name] = value


def behave(item: object) -> object:
    """One item of a Sandbox.map batch: "hang", "segfault", "raise", ("wait_for", path) or a value.

    Returns ``(item, pid, os.environ.get("PX_FAULT_MARK"))`` for the items that return.
    """
    if item == "hang":
        hang()
    elif item == "segfault":
        segfault()
    elif item == "raise":
        raise_value_error()
    elif isinstance(item, tuple) and item[0] == "wait_for":
        deadline = time.monotonic() + 30
        while not os.path.exists(item[1]) and time.monotonic() < deadline:
            time.sleep(0.01)
        item = ("found" if os.path.exists(item[1]) else "not found", item[1])
    return item, os.getpid(), os.environ.get("PX_FAULT_MARK")


def misbehave_in_backend(backend: str, faults: dict[str, str]) -> None:
    """In this worker, make ``backend``'s run misbehave for some ops: ``{"log": "hang"}``.

    Faults: "hang", "segfault", "exit" (sys.exit(7)), "chatter" (print, then run normally).
    A replacement worker is not patched, so only this worker's probes misbehave.
    """
    from explorer.backends import get_backend

    instance = get_backend(backend)
    original = instance.run

    def run(op, *args, **kwargs):  # type: ignore[no-untyped-def]
        fault = faults.get(str(op))
        if fault == "hang":
            hang()
        elif fault == "segfault":
            segfault()
        elif fault == "exit":
            sys.exit(7)
        elif fault == "chatter":
            chatter(None)
        return original(op, *args, **kwargs)

    instance.run = run  # type: ignore[method-assign]
