"""Several training runs side by side, each in its own worker process, through a shared queue.

:func:`train_in_workers` takes one ticket per run in the machine-wide
:class:`~explorer.training.queue.TrainingQueue` (all at once,
so a comparison's runs queue together), starts a
:class:`~explorer.training.workers.TrainingWorker` for each ticket as soon as it gets a
slot, and forwards every record as it arrives, so the runs' curves grow together.  Each run's
state is one :class:`RunStatus` (queued with its place, starting, training step i/n, done,
cancelled, failed), handed to ``on_status`` on every change: the single source of progress
for whoever shows it (:func:`overall_line` and :func:`overall_fraction` summarise them).

Cancel (``cancel.set()``) removes the waiting tickets, asks the running workers to stop between
two steps, and kills those that have not answered within :data:`CANCEL_GRACE_S`.  Whatever
ends the call (done, cancel, an exception, Ctrl-C), no worker and no ticket outlives it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from multiprocessing.connection import wait as wait_for_connections
from typing import Any

from explorer.training.config import FP8_POLICY
from explorer.training.queue import Place, Ticket, TrainingQueue, available_cores
from explorer.training.workers import TrainingWorker, WorkerJob

#: the states a run goes through
RUN_STATES: tuple[str, ...] = ("queued", "starting", "training", "done", "cancelled", "failed")
#: states a run ends in
FINAL_STATES: frozenset[str] = frozenset({"done", "cancelled", "failed"})
#: seconds between two looks at the queue while runs wait
QUEUE_POLL_S = 1.0
#: seconds the loop sleeps at most between two checks of the cancel flag
TICK_S = 0.25
#: seconds a worker gets to answer a cancel with its (cancelled) result before it is killed
CANCEL_GRACE_S = 3.0


@dataclass(frozen=True)
class RunStatus:
    """Where one run stands."""

    policy: str
    #: one of :data:`RUN_STATES`
    state: str = "queued"
    #: steps done and the run's total (0 until the worker reports its first step)
    done: int = 0
    total: int = 0
    #: the queue's answer while it waits
    place: Place | None = None
    #: the worker process, once started
    pid: int | None = None
    #: one line, for a failed run
    error: str = ""
    #: the worker's last output, for a failed run
    detail: str = ""
    #: what the run returned (``TrainingResult`` / ``Fp8Result``), once done or cancelled
    result: Any = None

    @property
    def finished(self) -> bool:
        """Whether the run has ended (done, cancelled or failed)."""
        return self.state in FINAL_STATES

    @property
    def fraction(self) -> float:
        """Steps done over the run's total (1 once done; 0 while the total is unknown)."""
        if self.state == "done":
            return 1.0
        return self.done / self.total if self.total else 0.0

    def describe(self) -> str:
        """One line: ``step 220/660``, ``waiting: 2nd in the queue, 1 run training (1 slot)``...

        >>> RunStatus("float32", "training", 220, 660).describe()
        'step 220/660'
        """
        steps = f"step {self.done}/{self.total}" if self.total else "before its first step"
        if self.state == "queued":
            return self.place.describe() if self.place is not None else "entering the queue"
        if self.state == "starting":
            return (
                "starting its worker" + ("" if self.policy == FP8_POLICY else " (loading TensorFlow)") + "…"
            )
        if self.state == "training":
            return steps
        if self.state == "done":
            return f"done: {self.total} steps" if self.total else "done"
        if self.state == "cancelled":
            return f"cancelled at {steps}" if self.total else "cancelled before its first step"
        return f"failed: {self.error}"


def overall_fraction(statuses: Sequence[RunStatus]) -> float:
    """The mean of the runs' fractions (0 without runs).

    >>> overall_fraction([RunStatus("a", "done", 10, 10), RunStatus("b", "training", 5, 10)])
    0.75
    """
    return sum(s.fraction for s in statuses) / len(statuses) if statuses else 0.0


def overall_line(statuses: Sequence[RunStatus]) -> str:
    """One line over all runs, derived from their statuses alone.

    >>> overall_line([RunStatus("a", "done", 10, 10), RunStatus("b", "training", 5, 10)])
    '1 training, 1 done: 75% of the steps'
    >>> overall_line([RunStatus("float16"), RunStatus("float32", "starting")])
    '1 queued, 1 starting: 0% of the steps (1 worker loading TensorFlow; the steps count after)'
    """
    if not statuses:
        return "no runs"
    counts = {state: sum(s.state == state for s in statuses) for state in RUN_STATES}
    parts = [f"{n} {state}" for state, n in counts.items() if n]
    line = ", ".join(parts)
    if not all(s.finished for s in statuses):
        line += f": {overall_fraction(statuses):.0%} of the steps"
    loading = sum(s.state == "starting" and s.policy != FP8_POLICY for s in statuses)
    if loading:
        workers = "1 worker" if loading == 1 else f"{loading} workers"
        line += f" ({workers} loading TensorFlow; the steps count after)"
    return line


def train_in_workers(
    jobs: Sequence[WorkerJob],
    *,
    queue: TrainingQueue | None = None,
    on_record: Callable[[str, Any], None] | None = None,
    on_status: Callable[[RunStatus], None] | None = None,
    cancel: threading.Event | None = None,
    threads: int | None = None,
    poll: float = QUEUE_POLL_S,
) -> list[RunStatus]:
    """Train every job in a worker process of its own, ``queue.slots`` at most at once on the
    machine; returns the final :class:`RunStatus` of each job, in order.

    ``on_record(policy, record)`` gets every record as it arrives and ``on_status(status)``
    every change of a run's status, both in the calling thread.  ``threads`` is each worker's
    thread-pool size (default: the cores over the slots).  Two jobs may not share a policy.
    """
    policies = [job.policy for job in jobs]
    if len(set(policies)) != len(policies):
        raise ValueError(f"each policy may run once per call, got {policies}")
    if not jobs:
        return []
    queue = queue if queue is not None else TrainingQueue()
    cancel = cancel if cancel is not None else threading.Event()
    per_worker = threads if threads is not None else max(1, available_cores() // queue.slots)
    statuses = [RunStatus(p) for p in policies]
    tickets: dict[int, Ticket] = {}
    waiting: list[int] = []
    workers: dict[int, TrainingWorker] = {}

    def update(index: int, **changes: Any) -> None:
        statuses[index] = replace(statuses[index], **changes)
        if on_status is not None:
            on_status(statuses[index])

    def handle(index: int, worker: TrainingWorker) -> None:
        for message in worker.messages():
            kind = message[0]
            if kind == "record" and on_record is not None:
                on_record(policies[index], message[1])
            elif kind == "progress":
                update(index, state="training", done=int(message[1]), total=int(message[2]))
            elif kind == "result":
                result = message[1]
                done = "cancelled" if getattr(result, "cancelled", False) else "done"
                update(index, state=done, result=result)
            elif kind == "error":
                if cancel.is_set():
                    update(index, state="cancelled")
                else:
                    update(index, state="failed", error=str(message[1]), detail=str(message[2]))

    def finish(index: int) -> None:
        worker = workers.pop(index)
        worker.close()
        queue.leave(tickets[index])

    try:
        for index, policy in enumerate(policies):
            tickets[index] = queue.enter(policy)
            waiting.append(index)
        next_look = 0.0
        while (waiting or workers) and not cancel.is_set():
            if waiting and time.monotonic() >= next_look:
                places = queue.try_start_many([tickets[i] for i in waiting])
                for index, place in zip(list(waiting), places, strict=True):
                    if place.state == "running":
                        waiting.remove(index)
                        update(index, state="starting", place=None)
                        try:
                            worker = TrainingWorker(jobs[index], per_worker)
                        except BaseException:
                            queue.leave(tickets[index])
                            update(index, state="failed", error="its worker process could not start")
                            raise
                        workers[index] = worker
                        queue.set_worker(tickets[index], worker.pid)
                        update(index, pid=worker.pid)
                    elif place.state == "gone":  # the database was replaced: enter again
                        tickets[index] = queue.enter(policies[index])
                    elif place != statuses[index].place:
                        update(index, place=place)
                next_look = time.monotonic() + poll
            timeout = min(TICK_S, max(0.0, next_look - time.monotonic())) if waiting else TICK_S
            if workers:
                wait_for_connections([w.conn for w in workers.values()], timeout)
            else:
                cancel.wait(timeout)
            for index, worker in list(workers.items()):
                handle(index, worker)
                if worker.finished:
                    finish(index)
                    next_look = 0.0  # a slot is free: look at the queue at once
    finally:
        _stop(queue, tickets, waiting, workers, handle, update)
    return statuses


def _stop(
    queue: TrainingQueue,
    tickets: dict[int, Ticket],
    waiting: list[int],
    workers: dict[int, TrainingWorker],
    handle: Callable[[int, TrainingWorker], None],
    update: Callable[..., None],
) -> None:
    """Leave the waiting tickets, give running workers CANCEL_GRACE_S to answer a cancel, kill
    the rest, leave their tickets."""
    try:
        for index in waiting:
            queue.leave(tickets[index])
            update(index, state="cancelled", place=None)
        for worker in workers.values():
            worker.cancel()
        deadline = time.monotonic() + CANCEL_GRACE_S
        while any(not w.finished for w in workers.values()) and time.monotonic() < deadline:
            open_ = [w.conn for w in workers.values() if not w.finished]
            wait_for_connections(open_, max(0.0, deadline - time.monotonic()))
            for index, worker in workers.items():
                handle(index, worker)
    finally:
        for index, worker in list(workers.items()):
            worker.kill()
            if not worker.finished:
                update(index, state="cancelled")
            queue.leave(tickets[index])
        workers.clear()
