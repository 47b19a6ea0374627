"""Run probes in warm worker processes, so a crash or hang never takes the caller with it.

One worker per key (one per backend), started on first use with the ``spawn``
method and reused.  Every call has a timeout.  A worker that segfaults, aborts
or hangs is discarded; the caller gets ``SandboxCrash`` / ``SandboxTimeout``
(or, from :meth:`Sandbox.run`, an Outcome with status ``crashed`` / ``timeout``)
and the next call starts a fresh worker.

>>> from explorer.sandbox import default_sandbox
>>> default_sandbox().run("numpy", "exp", "float16").status.value
'ok'
"""

from __future__ import annotations

import atexit
import multiprocessing
import signal
import threading
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from explorer.outcome import Outcome, Status

#: Seconds a fresh worker may take to import its framework (TensorFlow takes ~5 s).
WARMUP_TIMEOUT = 300.0


class SandboxError(RuntimeError):
    """A call did not return normally from its worker."""


class SandboxCrash(SandboxError):
    """The worker process died during the call."""

    def __init__(self, key: str, exitcode: int | None) -> None:
        self.exitcode = exitcode
        super().__init__(f"worker {key!r} died during the call ({describe_exit(exitcode)})")


class SandboxTimeout(SandboxError):
    """The call did not finish in time; the worker was killed."""

    def __init__(self, key: str, timeout: float) -> None:
        self.timeout = timeout
        super().__init__(f"worker {key!r} did not answer within {timeout:g} s and was killed")


def describe_exit(exitcode: int | None) -> str:
    """``-11`` -> ``"killed by signal SIGSEGV"``."""
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        try:
            return f"killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit status {exitcode}"


def _worker_main(conn: Connection) -> None:
    """Loop in the child: receive ``(func, args)``, send back ``("ok", value)`` or ``("raise", exc)``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in a notebook must not kill workers
    while True:
        try:
            func, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply: tuple[str, Any] = ("ok", func(*args))
        except BaseException as exc:
            reply = ("raise", _picklable(exc))
        try:
            conn.send(reply)
        except Exception as exc:  # an unpicklable return value
            conn.send(("raise", SandboxError(f"result could not be sent back: {exc!r}")))


def _picklable(exc: BaseException) -> BaseException:
    import pickle

    try:
        pickle.dumps(exc)
        return exc
    except Exception:
        text = "".join(traceback.format_exception(exc))
        return SandboxError(f"{type(exc).__name__}: {exc}\n{text}")


class _Worker:
    def __init__(self, key: str) -> None:
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        self.key = key
        self.conn = parent
        self.process = context.Process(
            target=_worker_main, args=(child,), daemon=True, name=f"explorer-sandbox-{key}"
        )
        self.process.start()
        child.close()
        self.calls = 0

    def call(self, func: Callable[..., Any], args: tuple[Any, ...], timeout: float) -> Any:
        self.calls += 1
        try:
            self.conn.send((func, args))
        except (BrokenPipeError, OSError):
            self.process.join(1)
            raise SandboxCrash(self.key, self.process.exitcode) from None
        if not self.conn.poll(timeout):
            self.kill()
            raise SandboxTimeout(self.key, timeout)
        try:
            kind, value = self.conn.recv()
        except (EOFError, OSError):
            self.process.join(5)
            raise SandboxCrash(self.key, self.process.exitcode) from None
        if kind == "raise":
            raise value
        return value

    def alive(self) -> bool:
        return self.process.is_alive()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self.conn.close()


class Sandbox:
    """A set of warm worker processes, one per key."""

    def __init__(self) -> None:
        self._workers: dict[str, _Worker] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        #: keys of workers replaced after a crash or timeout, with the reason (newest last)
        self.replaced: list[tuple[str, str]] = []

    def _lock(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def call(self, key: str, func: Callable[..., Any], *args: Any, timeout: float = 60.0) -> Any:
        """Run ``func(*args)`` in worker ``key`` and return its value.

        ``func`` must be an importable top-level function.  Exceptions raised by
        ``func`` are re-raised here; a dead worker raises :class:`SandboxCrash`, a
        slow one :class:`SandboxTimeout`; either way the worker is replaced.
        """
        if not callable(func):
            raise TypeError(f"func must be callable, got {func!r}")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        with self._lock(key):
            worker = self._workers.get(key)
            if worker is None or not worker.alive():
                worker = self._workers[key] = _Worker(key)
            try:
                return worker.call(func, args, timeout)
            except (SandboxCrash, SandboxTimeout) as exc:
                worker.kill()
                self._workers.pop(key, None)
                self.replaced.append((key, str(exc)))
                raise

    def run(
        self,
        backend: str,
        op: str,
        fmt: str,
        device: str = "CPU",
        mode: str = "eager",
        timeout: float = 60.0,
        seed: int = 0,
    ) -> Outcome:
        """Run one op in the backend's worker; a crash or hang becomes the Outcome's status.

        Bad names raise ValueError here, before anything is sent to a worker.
        """
        from explorer.backends import get_backend, normalize_device
        from explorer.formats import resolve
        from explorer.ops import get_op

        backend_name = get_backend(backend).name
        op_name = get_op(op).name
        fmt_name = resolve(fmt).name
        device = normalize_device(device)
        try:
            self.warm(backend_name)
        except (SandboxCrash, SandboxTimeout) as exc:
            status = Status.CRASHED if isinstance(exc, SandboxCrash) else Status.TIMEOUT
            return Outcome(
                status,
                error=f"starting the {backend_name} worker failed: {exc}",
                extra={"backend": backend_name, "mode": mode},
            )
        return self.outcome(
            backend_name, probe, backend_name, op_name, fmt_name, device, mode, seed, timeout=timeout
        )

    def outcome(self, key: str, func: Callable[..., Outcome], *args: Any, timeout: float = 60.0) -> Outcome:
        """Like :meth:`call` for a function that returns an Outcome; a crash or hang
        becomes an Outcome with status ``crashed`` or ``timeout`` instead of raising."""
        start = time.perf_counter()
        try:
            return self.call(key, func, *args, timeout=timeout)
        except SandboxCrash as exc:
            status, error = Status.CRASHED, str(exc)
        except SandboxTimeout as exc:
            status, error = Status.TIMEOUT, str(exc)
        return Outcome(status, error=error, extra={"worker": key, "seconds": time.perf_counter() - start})

    def warm(self, backend: str) -> None:
        """Start ``backend``'s worker and import its framework there (not counted in probe timeouts)."""
        worker = self._workers.get(backend)
        if worker is None or not worker.alive() or worker.calls == 0:
            self.call(backend, warm_backend, backend, timeout=WARMUP_TIMEOUT)

    def close(self) -> None:
        """Stop every worker."""
        with self._guard:
            workers, self._workers = self._workers, {}
        for worker in workers.values():
            worker.kill()

    def workers(self) -> dict[str, int | None]:
        """Live workers by key, with their process ids."""
        return {k: w.process.pid for k, w in self._workers.items() if w.alive()}


def warm_backend(backend: str) -> list[str]:
    """Worker side: import the backend's framework; returns its device types."""
    from explorer.backends import get_backend

    b = get_backend(backend)
    return b.devices() if b.is_installed() else []


def probe(backend: str, op: str, fmt: str, device: str, mode: str, seed: int) -> Outcome:
    """Worker side: run one op with one backend."""
    from explorer.backends import get_backend

    return get_backend(backend).run(op, fmt, device=device, mode=mode, seed=seed)


_DEFAULT: Sandbox | None = None


def default_sandbox() -> Sandbox:
    """The process-wide sandbox (workers shut down at exit)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Sandbox()
        atexit.register(_DEFAULT.close)
    return _DEFAULT
