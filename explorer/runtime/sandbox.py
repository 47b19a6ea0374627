"""Run probes in warm worker processes, so a crash or hang never takes the caller with it.

One worker per key (one per backend), started on first use as a fresh Python
process and reused.  Every call has a timeout.  A worker that segfaults, aborts
or hangs is discarded; the caller gets ``SandboxCrash`` / ``SandboxTimeout``
(or, from :meth:`Sandbox.run`, an Outcome with status ``crashed`` / ``timeout``)
and the next call starts a fresh worker.  :meth:`Sandbox.map` runs a batch, one
item after the other, with a time limit per item: a crash or hang costs only
the item it happened in, and the rest continue in a fresh worker;
:meth:`Sandbox.map_parallel` shares the items of several batches among several
workers at once (one thread per worker, results delivered in the calling thread).

Every request carries an id and every reply names the request (and item) it
answers, so an answer can only reach the call that asked for it; a call that
does not complete (interrupted by Ctrl-C, or by an error in a progress
callback) also replaces its worker.  Workers write their output (``print``, and
C-level writes to fd 1 and 2) to a private unlinked file, never to the
caller's stdout or stderr; set ``PX_SANDBOX_STDERR=1`` to see their stderr.  A
worker dies with its parent process.

The code is split by job, and the names callers use are re-exported here:

- :mod:`~explorer.runtime.process`: starting, talking to and killing a worker process (the
  one protocol of every worker, training's too);
- :mod:`~explorer.runtime.call_worker`: function calls in a worker, both ends of the
  request and reply messages, and the errors (``SandboxError``, ``SandboxCrash``,
  ``SandboxTimeout``);
- :mod:`~explorer.runtime.worker_pool`: warm workers by key, ``call``, ``map`` and
  ``map_parallel`` (``ItemResult``, ``Group``, ``check_timeout``);
- this module: :class:`Sandbox`, the pool that runs probes (``run``, ``outcome``, ``warm``).

>>> from explorer.runtime.sandbox import default_sandbox
>>> default_sandbox().run("numpy", "exp", "float16").status.value
'ok'
"""

from __future__ import annotations

import atexit
import time
from collections.abc import Callable
from typing import Any

from explorer.outcome import Outcome, Status
from explorer.runtime.call_worker import STDERR_ENV, SandboxCrash, SandboxError, SandboxTimeout
from explorer.runtime.process import OUTPUT_TAIL
from explorer.runtime.worker_pool import WARMUP_TIMEOUT, Group, ItemResult, WorkerPool, check_timeout

__all__ = [
    "OUTPUT_TAIL",
    "STDERR_ENV",
    "WARMUP_TIMEOUT",
    "Group",
    "ItemResult",
    "Sandbox",
    "SandboxCrash",
    "SandboxError",
    "SandboxTimeout",
    "check_timeout",
    "default_sandbox",
    "probe",
    "warm_backend",
]


class Sandbox(WorkerPool):
    """A set of warm worker processes, one per key, that runs probes (:meth:`run`) and any
    importable function (:meth:`~explorer.runtime.worker_pool.WorkerPool.call`, ``map``,
    ``map_parallel``)."""

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
        timeout = check_timeout(timeout)
        try:
            self.warm(backend_name)
        except SandboxError as exc:
            status = Status.TIMEOUT if isinstance(exc, SandboxTimeout) else Status.CRASHED
            return Outcome(
                status,
                error=f"starting the {backend_name} worker failed: {exc}",
                extra={"backend": backend_name, "mode": mode},
            )
        return self.outcome(
            backend_name, probe, backend_name, op_name, fmt_name, device, mode, seed, timeout=timeout
        )

    def outcome(self, key: str, func: Callable[..., Outcome], *args: Any, timeout: float = 60.0) -> Outcome:
        """Like :meth:`call` for a function that returns an Outcome; a crash, hang or escaped
        SystemExit becomes an Outcome with status ``crashed``, ``timeout`` or ``error`` instead
        of raising."""
        start = time.perf_counter()
        try:
            return self.call(key, func, *args, timeout=timeout)
        except SandboxCrash as exc:
            status, error = Status.CRASHED, str(exc)
        except SandboxTimeout as exc:
            status, error = Status.TIMEOUT, str(exc)
        except SandboxError as exc:
            status, error = Status.ERROR, str(exc)
        return Outcome(status, error=error, extra={"worker": key, "seconds": time.perf_counter() - start})

    def warm(self, backend: str) -> None:
        """Start ``backend``'s worker and import its framework there (not counted in probe timeouts)."""
        if self.calls(backend) == 0:
            self.call(backend, warm_backend, backend, timeout=WARMUP_TIMEOUT)


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
