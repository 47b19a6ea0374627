"""Long work (probe sweeps, training) in a background thread, with progress and cancel.

The one job class of the project: the app's tabs run their work in a :class:`Job`
(re-exported by :mod:`explorer.app.jobs`), and
:func:`explorer.training.start_training` returns one.  It lives here, below
the app, so that analysis can use it too.

The work function receives a :class:`JobContext`: it reports progress with
``ctx.progress(fraction, message)`` (or ``ctx.progress_steps(done, total)``),
hands out records as they happen with ``ctx.emit(record)``, and checks
``ctx.cancelled`` (or calls ``ctx.check()``) between steps.

>>> from explorer.runtime.jobs import Job
>>> job = Job("count", lambda ctx: sum(range(10))).start()
>>> job.wait(5), job.status
(45, 'done')
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from explorer.runtime.threads import start_daemon

#: The statuses a job goes through.
JOB_STATUSES: tuple[str, ...] = ("pending", "running", "done", "cancelled", "failed")


class JobCancelled(Exception):
    """Raised inside a job's work function (by ``ctx.check()``) once cancel was asked for."""


class JobContext:
    """What a job's work function gets: progress reporting, records, and the cancel flag."""

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

    def progress_steps(self, done: int, total: int, message: str = "") -> None:
        """Report progress as ``done`` of ``total`` steps: sets ``job.progress`` and the fraction.

        >>> job = Job("steps", lambda ctx: ctx.progress_steps(3, 4, "step 3/4")).start()
        >>> _ = job.wait(5)
        >>> job.progress, job.message
        ((3, 4), 'step 3/4')
        """
        self._job.progress = (int(done), int(total))
        self.progress(done / total if total else 0.0, message)

    def emit(self, record: Any) -> None:
        """Append ``record`` to ``job.records`` (a live list, readable while the job runs).

        >>> def work(ctx):
        ...     for i in range(3):
        ...         ctx.emit(i)
        >>> job = Job("emit", work).start()
        >>> _ = job.wait(5)
        >>> job.records
        [0, 1, 2]
        """
        self._job.records.append(record)


class Job:
    """One piece of background work; ``on_progress`` / ``on_done`` callbacks drive the UI.

    ``status`` is one of :data:`JOB_STATUSES`; ``fraction`` and ``message`` are the
    last progress report, ``progress`` the last (done, total) steps reported with
    :meth:`JobContext.progress_steps` ((0, 0) until then); ``records`` what the work
    emitted so far; ``result`` what it returned; ``error`` a one-line message when
    it failed (``exception`` the exception itself).
    """

    def __init__(self, name: str, work: Callable[[JobContext], Any]) -> None:
        if not callable(work):
            raise TypeError(f"work must be callable, got {type(work).__name__}")
        self.name = name
        self._work = work
        self._cancel = threading.Event()
        self._done = threading.Event()
        #: orders progress reports against the job's end: none is shown after it
        self._end_lock = threading.RLock()
        self._thread: threading.Thread | None = None
        self._progress_callbacks: list[Callable[[Job], None]] = []
        self._done_callbacks: list[Callable[[Job], None]] = []
        self.status = "pending"
        self.fraction = 0.0
        self.message = ""
        self.progress: tuple[int, int] = (0, 0)
        self.records: list[Any] = []
        self.result: Any = None
        self.error = ""
        self.exception: Exception | None = None
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
        self._thread = start_daemon(self._run, name=f"job-{self.name}")
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

    @property
    def done(self) -> bool:
        """True once the work has ended (done, cancelled or failed) and the callbacks ran."""
        return self._done.is_set()

    @property
    def cancelled(self) -> bool:
        """True once cancel() was called (the work may still be finishing its step)."""
        return self._cancel.is_set()

    def wait(self, timeout: float | None = None) -> Any:
        """Wait for the end; return the result (None if cancelled); RuntimeError if it failed."""
        if not self._done.wait(timeout):
            raise RuntimeError(f"job {self.name!r} still running after {timeout} s")
        if self.status == "failed":
            raise RuntimeError(f"job {self.name!r} failed: {self.error}") from self.exception
        return self.result

    def _set_progress(self, fraction: float, message: str) -> None:
        with self._end_lock:
            if self.status != "running":  # a late report (another thread) must not undo the end
                return
            self.fraction = fraction
            self.message = message
            self._fire(self._progress_callbacks)

    def _run(self) -> None:
        start = time.perf_counter()
        status = "done"
        try:
            self.result = self._work(JobContext(self))
            status = "cancelled" if self._cancel.is_set() else "done"
        except JobCancelled:
            status = "cancelled"
        except Exception as exc:  # shown in the tab as a message, never a traceback
            self.error = f"{type(exc).__name__}: {exc}"
            self.exception = exc
            status = "failed"
        with self._end_lock:
            self.status = status
            self.seconds = time.perf_counter() - start
            if status == "done":
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
