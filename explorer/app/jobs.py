"""Long work (probe sweeps, training) in a background thread, with progress and cancel.

The work function receives a :class:`JobContext`: it reports progress with
``ctx.progress(fraction, message)`` and checks ``ctx.cancelled`` between steps.

>>> from explorer.app.jobs import Job
>>> job = Job("count", lambda ctx: sum(range(10))).start()
>>> job.wait(5), job.status
(45, 'done')
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

#: The statuses a job goes through.
JOB_STATUSES: tuple[str, ...] = ("pending", "running", "done", "cancelled", "failed")


class JobCancelled(Exception):
    """Raised inside a job's work function (by ``ctx.check()``) once cancel was asked for."""


class JobContext:
    """What a job's work function gets: progress reporting and the cancel flag."""

    def __init__(self, job: Job) -> None:
        self._job = job

    @property
    def cancelled(self) -> bool:
        """True once someone asked the job to stop."""
        return self._job._cancel.is_set()

    @property
    def cancel_event(self) -> threading.Event:
        """The event set on cancel (for engines that take a ``threading.Event``)."""
        return self._job._cancel

    def check(self) -> None:
        """Raise :class:`JobCancelled` if cancel was asked for."""
        if self.cancelled:
            raise JobCancelled()

    def progress(self, fraction: float, message: str = "") -> None:
        """Report progress in [0, 1] with a short message."""
        self._job._set_progress(min(max(float(fraction), 0.0), 1.0), message)


class Job:
    """One piece of background work; ``on_progress`` / ``on_done`` callbacks drive the UI."""

    def __init__(self, name: str, work: Callable[[JobContext], Any]) -> None:
        if not callable(work):
            raise TypeError(f"work must be callable, got {type(work).__name__}")
        self.name = name
        self._work = work
        self._cancel = threading.Event()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._progress_callbacks: list[Callable[[Job], None]] = []
        self._done_callbacks: list[Callable[[Job], None]] = []
        self.status = "pending"
        self.fraction = 0.0
        self.message = ""
        self.result: Any = None
        self.error = ""
        self.seconds: float | None = None

    def on_progress(self, callback: Callable[[Job], None]) -> Job:
        """Call ``callback(job)`` on each progress report."""
        self._progress_callbacks.append(callback)
        return self

    def on_done(self, callback: Callable[[Job], None]) -> Job:
        """Call ``callback(job)`` when the job ends (done, cancelled or failed)."""
        self._done_callbacks.append(callback)
        return self

    def start(self) -> Job:
        """Start the work in a daemon thread; returns self."""
        if self._thread is not None:
            raise RuntimeError(f"job {self.name!r} was already started")
        self.status = "running"
        self._thread = threading.Thread(target=self._run, name=f"job-{self.name}", daemon=True)
        self._thread.start()
        return self

    def cancel(self) -> None:
        """Ask the work to stop at its next check."""
        self._cancel.set()
        if self.status == "running":
            self.message = "cancelling…"
            self._fire(self._progress_callbacks)

    @property
    def running(self) -> bool:
        """True between start() and the end of the work."""
        return self.status == "running"

    def wait(self, timeout: float | None = None) -> Any:
        """Wait for the end; return the result (None if cancelled); RuntimeError if it failed."""
        if not self._done.wait(timeout):
            raise RuntimeError(f"job {self.name!r} still running after {timeout} s")
        if self.status == "failed":
            raise RuntimeError(f"job {self.name!r} failed: {self.error}")
        return self.result

    def _set_progress(self, fraction: float, message: str) -> None:
        self.fraction = fraction
        self.message = message
        self._fire(self._progress_callbacks)

    def _run(self) -> None:
        start = time.perf_counter()
        try:
            self.result = self._work(JobContext(self))
            self.status = "cancelled" if self._cancel.is_set() else "done"
        except JobCancelled:
            self.status = "cancelled"
        except Exception as exc:  # shown in the tab as a message, never a traceback
            self.error = f"{type(exc).__name__}: {exc}"
            self.status = "failed"
        self.seconds = time.perf_counter() - start
        if self.status == "done":
            self.fraction = 1.0
        try:
            self._fire(self._done_callbacks)  # the UI is up to date when wait() returns
        finally:
            self._done.set()

    def _fire(self, callbacks: list[Callable[[Job], None]]) -> None:
        for callback in list(callbacks):
            try:
                callback(self)
            except Exception as exc:  # a UI callback failing must not kill the job
                import sys

                print(f"explorer: job callback failed: {exc!r}", file=sys.stderr)
