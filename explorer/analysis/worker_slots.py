"""A machine-wide cap on framework worker processes, shared by every kernel of a workshop server.

Each visitor's kernel may start a worker that imports TensorFlow (~0.5-0.8 GB) to compute
TensorFlow's Ranges/Accuracy results.  Forty visitors opening Ranges at once on a cold
cache would start forty such workers.  :class:`WorkerSlots` is ``count`` lock files in one
directory: holding a worker means holding an exclusive ``flock`` on one of them, taken
before the worker starts and released when it stops.  The kernel releases a lock when its
process ends, however it ends, so a killed kernel never keeps a slot.

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
import time
from pathlib import Path

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
