"""Function calls in a worker process: both ends of the sandbox's request and reply messages.

A :class:`CallWorker` is a :class:`~explorer.runtime.process.WorkerProcess` serving
:func:`serve_calls`.  A request is ``(id, pickled func, [pickled args, ...])``; the worker
answers once per item, ``(id, index, "ok", value)`` or ``(id, index, "raise", exception)``, or
once ``(id, 0, "reject", exception)`` when the function itself could not be unpickled.  Every
reply names the request (and item) it answers, so an answer can only reach the call that asked
for it (:meth:`CallWorker.receive` discards replies to earlier requests).  Exceptions, SystemExit
and KeyboardInterrupt included, come back as replies; a reply that cannot be pickled becomes a
:class:`SandboxError`.  What to do with a worker that died or did not answer in time is the
caller's (:class:`explorer.runtime.sandbox.Sandbox`).

>>> import math, pickle
>>> worker = CallWorker("doc")
>>> request = worker.send(pickle.dumps(math.sqrt), [pickle.dumps((4.0,)), pickle.dumps((9.0,))])
>>> [worker.receive(request, 60) for _ in range(2)]
[(0, 'ok', 2.0), (1, 'ok', 3.0)]
>>> worker.kill()
"""

from __future__ import annotations

import itertools
import os
import pickle
import time
import traceback
from collections.abc import Callable
from typing import Any

from explorer.runtime.process import ParentPipe, WorkerGone, WorkerProcess, describe_exit

#: Environment variable: set to 1 to let workers write their stderr to the caller's stderr.
STDERR_ENV = "PX_SANDBOX_STDERR"


class SandboxError(RuntimeError):
    """A call did not return normally from its worker."""


class SandboxCrash(SandboxError):
    """The worker process died during the call."""

    def __init__(self, key: str, exitcode: int | None, output: str = "", during: str = "the call") -> None:
        self.exitcode = exitcode
        self.output = output
        #: what the worker was doing: "the call", or "its setup" (see Sandbox.map)
        self.during = during
        message = f"worker {key!r} died during {during} ({describe_exit(exitcode)})"
        if output.strip():
            message += f"; its last output:\n{output.strip()}"
        super().__init__(message)


class SandboxTimeout(SandboxError):
    """The call did not finish in time; the worker was killed."""

    def __init__(self, key: str, timeout: float, during: str = "") -> None:
        self.timeout = timeout
        #: "" for the call itself, "its setup" for a Sandbox.map setup
        self.during = during
        where = f" during {during}" if during else ""
        super().__init__(f"worker {key!r} did not answer within {timeout:g} s{where} and was killed")


# ---------------------------------------------------------------- worker side


def serve_calls(pipe: ParentPipe) -> None:
    """Loop in the worker: receive ``(id, pickled func, [pickled args, ...])``, reply once per item."""
    while True:
        try:
            request_id, func_bytes, items = pipe.recv()
        except EOFError:
            return
        try:
            func = pickle.loads(func_bytes)
        except BaseException as exc:
            error = SandboxError(
                f"the worker could not unpickle the function ({type(exc).__name__}: {exc}); "
                "it must be an importable top-level function"
            )
            _reply(pipe, request_id, 0, "reject", error)
            continue
        for index, args_bytes in enumerate(items):
            _reply(pipe, request_id, index, *_apply(func, args_bytes))


def _apply(func: Callable[..., Any], args_bytes: bytes) -> tuple[str, Any]:
    """Run ``func(*args)``; exceptions become replies, SystemExit and KeyboardInterrupt included."""
    try:
        return "ok", func(*pickle.loads(args_bytes))
    except Exception as exc:
        exc.add_note("in the sandbox worker:\n" + "".join(traceback.format_exception(exc)).rstrip())
        return "raise", _picklable(exc)
    except BaseException as exc:  # SystemExit, KeyboardInterrupt, GeneratorExit: never passed on as such
        name = getattr(func, "__qualname__", repr(func))
        raised = f"{type(exc).__name__}({', '.join(map(repr, exc.args))})"
        error = SandboxError(f"{name} raised {raised} in the worker")
        error.add_note("in the sandbox worker:\n" + "".join(traceback.format_exception(exc)).rstrip())
        return "raise", error


def _reply(pipe: ParentPipe, request_id: int, index: int, kind: str, value: Any) -> None:
    try:
        pipe.send((request_id, index, kind, value))  # the parent gone ends the process there
    except Exception as exc:  # an unpicklable return value
        error = SandboxError(f"the result could not be sent back: {type(exc).__name__}: {exc}")
        pipe.send((request_id, index, "raise", error))


def _picklable(exc: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        text = "".join(traceback.format_exception(exc))
        return SandboxError(f"{type(exc).__name__}: {exc}\n{text}")


# ---------------------------------------------------------------- caller side

_REQUEST_IDS = itertools.count(1)


class CallWorker(WorkerProcess):
    """One worker process serving :func:`serve_calls`, known by its ``key`` (for messages)."""

    def __init__(self, key: str) -> None:
        super().__init__(
            "explorer.runtime.call_worker:serve_calls", show_stderr=os.environ.get(STDERR_ENV) == "1"
        )
        self.key = key
        #: requests sent so far
        self.calls = 0

    def send(self, func_bytes: bytes, items: list[bytes]) -> int:
        """Send one request (a pickled function and its pickled argument tuples); returns its id."""
        request_id = next(_REQUEST_IDS)
        self.calls += 1
        self.forget_output()
        self.send_message((request_id, func_bytes, items))  # a dead worker is reported by receive()
        return request_id

    def receive(self, request_id: int, timeout: float, during: str = "") -> tuple[int, str, Any]:
        """The next reply to request ``request_id``: ``(index, kind, value)``; replies to other
        requests are discarded.  Raises SandboxTimeout or SandboxCrash (the worker is then useless)."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                if remaining <= 0 or not self.wait_message(remaining):
                    raise SandboxTimeout(self.key, timeout, during)
                reply_id, index, kind, value = self.recv_message()
            except WorkerGone as gone:  # also a pipe closed by Sandbox.close from another thread
                raise SandboxCrash(self.key, gone.exitcode, gone.output, during or "the call") from None
            if reply_id == request_id:
                self.forget_output()
                return index, kind, value
