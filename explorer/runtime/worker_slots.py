"""A machine-wide cap on framework worker processes, shared by every kernel of a workshop server.

Each visitor's kernel may start workers that import TensorFlow (~0.5-0.8 GB each) to compute
TensorFlow's Ranges/Accuracy results, to probe ("Probe now") or to run a pasted error's
workaround.  Forty visitors opening Ranges at once on a cold cache would start forty such
workers.  :class:`WorkerSlots` is ``count`` lock files in one directory: holding a worker
means holding an exclusive ``flock`` on one of them, taken before the worker starts and
released when it stops (:class:`SlottedSandbox` holds one for all of its workers).  The
kernel releases a lock when its process ends, however it ends, so a killed kernel never
keeps a slot.

>>> import tempfile
>>> slots = WorkerSlots(tempfile.mkdtemp(), count=1)
>>> first = slots.acquire(timeout=1)
>>> slots.acquire(timeout=0.2) is None  # the only slot is held
True
>>> first.release()
>>> second = slots.acquire(timeout=1)
>>> second is not None
True
>>> second.release()
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from explorer.runtime.threads import call_later

#: environment variable with the number of slots
SLOTS_ENV = "PX_WORKER_SLOTS"
#: seconds between two tries while every slot is held
POLL_S = 0.2
#: most slots a setting may ask for
MAX_SLOTS = 256


def default_worker_slots() -> int:
    """``$PX_WORKER_SLOTS`` if set (1 to :data:`MAX_SLOTS`), else the cores, at least 2.

    >>> import os; os.environ.pop(SLOTS_ENV, None) and None
    >>> default_worker_slots() >= 2
    True
    """
    value = os.environ.get(SLOTS_ENV, "").strip()
    if value:
        if not value.isdigit() or not 1 <= int(value) <= MAX_SLOTS:
            raise ValueError(f"{SLOTS_ENV} must be an integer from 1 to {MAX_SLOTS}, got {value!r}")
        return int(value)
    return max(2, os.cpu_count() or 1)


class Slot:
    """One held slot: an open file with an exclusive ``flock``."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd: int | None = fd
        self.path = path

    def release(self) -> None:
        """Give the slot back (once; later calls do nothing)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


class WorkerSlots:
    """``count`` slots in ``directory``, taken first-free (``acquire``) by any process."""

    def __init__(self, directory: str | Path, count: int) -> None:
        if not isinstance(count, int) or not 1 <= count <= MAX_SLOTS:
            raise ValueError(f"count must be an integer from 1 to {MAX_SLOTS}, got {count!r}")
        self.directory = Path(directory)
        self.count = count

    def acquire(self, timeout: float) -> Slot | None:
        """A free slot, waiting up to ``timeout`` seconds for one; None if none came free."""
        self.directory.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + timeout
        while True:
            for index in range(self.count):
                path = self.directory / f"slot-{index}.lock"
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                return Slot(fd, path)
            if time.monotonic() >= deadline:
                return None
            time.sleep(POLL_S)


class WorkersBusy(RuntimeError):
    """Every machine-wide worker slot stayed taken for the wait's timeout."""


def machine_slots() -> WorkerSlots:
    """The machine-wide slots of framework workers, in the cache directory every kernel of this
    user shares (``worker-slots``; the temp directory's ``px-worker-slots`` without one)."""
    from explorer.runtime import envcache

    root = envcache.cache_dir_or_none()
    directory = root / "worker-slots" if root is not None else Path(tempfile.gettempdir()) / "px-worker-slots"
    return WorkerSlots(directory, default_worker_slots())


class SlottedSandbox:
    """A sandbox whose workers live only while it holds one of the :func:`machine_slots`, and are
    stopped (the slot given back) after ``idle_release_s`` seconds without a caller.

    So the kernels of one server together run at most that many such sandboxes; a caller that
    finds every slot taken waits for one (:meth:`held`, :meth:`call`).
    """

    def __init__(self, idle_release_s: float) -> None:
        self.idle_release_s = idle_release_s
        self._lock = threading.Lock()
        self._start_lock = threading.Lock()
        self._box: Any = None
        self._slot: Slot | None = None
        self._busy = 0
        self._timer: threading.Timer | None = None

    def _started(self, timeout: float, waiting: Callable[[], None] | None) -> Any:
        """The sandbox, started (with a slot) if it was not running; ``waiting()`` is called about
        once a second while every slot is taken (it may raise to stop waiting)."""
        from explorer.runtime.sandbox import Sandbox

        with self._start_lock:
            with self._lock:
                if self._box is not None:
                    return self._box
            slots = machine_slots()
            deadline = time.monotonic() + timeout
            slot = slots.acquire(0 if waiting is not None else timeout)
            while slot is None and waiting is not None and time.monotonic() < deadline:
                waiting()
                slot = slots.acquire(min(1.0, max(0.0, deadline - time.monotonic())))
            if slot is None:
                raise WorkersBusy(
                    f"all {slots.count} worker slots of this machine stayed busy for {timeout:.0f} s "
                    f"(other visitors' workers; ${SLOTS_ENV} sets how many)"
                )
            with self._lock:
                self._box, self._slot = Sandbox(), slot
                return self._box

    @contextlib.contextmanager
    def held(self, timeout: float, waiting: Callable[[], None] | None = None) -> Iterator[Any]:
        """The running sandbox (started, with a slot, if need be: :class:`WorkersBusy` when no slot
        came free within ``timeout``), kept from the idle release until the block ends."""
        with self._lock:
            self._busy += 1
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        try:
            yield self._started(timeout, waiting)
        finally:
            with self._lock:
                self._busy -= 1
                if self._busy == 0:
                    self._timer = call_later(
                        self.idle_release_s, self._release, name="explorer-worker-slot-release"
                    )

    def call(self, key: str, func: Callable[..., Any], *args: Any, timeout: float) -> Any:
        """``func(*args)`` in the worker ``key`` (its framework imported first, not counted in
        ``timeout``); waits up to ``timeout`` for a slot."""
        from explorer.runtime.sandbox import WARMUP_TIMEOUT, warm_backend

        with self.held(timeout) as box:
            if key not in box.workers():
                box.call(key, warm_backend, key, timeout=WARMUP_TIMEOUT)  # the import is not the run
            return box.call(key, func, *args, timeout=timeout)

    def _release(self) -> None:
        with self._lock:
            if self._busy or self._box is None:
                return
            box, self._box, self._timer = self._box, None, None
            slot, self._slot = self._slot, None
        box.close()
        if slot is not None:
            slot.release()

    def workers(self) -> dict[str, int | None]:
        """Live workers by key, with their process ids."""
        with self._lock:
            return {} if self._box is None else dict(self._box.workers())

    def close(self) -> None:
        """Stop the workers now and give the slot back."""
        with self._lock:
            box, self._box = self._box, None
            slot, self._slot = self._slot, None
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        if box is not None:
            box.close()
        if slot is not None:
            slot.release()
