"""Warm worker processes by key, so a crash or hang never takes the caller with it: the engine
of :class:`explorer.runtime.sandbox.Sandbox`.

One worker per key, started on first use as a fresh Python process
(:class:`~explorer.runtime.call_worker.CallWorker`) and reused.  Every call has a timeout.  A
worker that segfaults, aborts or hangs is discarded; the caller gets ``SandboxCrash`` /
``SandboxTimeout`` and the next call starts a fresh worker.  :meth:`WorkerPool.map` runs a
batch, one item after the other, with a time limit per item: a crash or hang costs only the
item it happened in, and the rest continue in a fresh worker; :meth:`WorkerPool.map_parallel`
shares the items of several batches among several workers at once (one thread per worker,
results delivered in the calling thread).  A call that does not complete (interrupted by
Ctrl-C, or by an error in a progress callback) replaces its worker, so that its answer never
reaches a later call.
"""

from __future__ import annotations

import math
import numbers
import pickle
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from queue import SimpleQueue
from typing import Any

from explorer.runtime.call_worker import CallWorker, SandboxError
from explorer.runtime.threads import start_daemon

#: Seconds a fresh worker may take to import its framework (TensorFlow takes ~5 s).
WARMUP_TIMEOUT = 300.0


@dataclass(frozen=True)
class ItemResult:
    """What one item of :meth:`WorkerPool.map` came back with."""

    #: the item's position in the batch
    index: int
    #: what ``func(item)`` returned (None when it failed)
    value: Any = None
    #: None when it returned; else the exception it raised, or SandboxCrash / SandboxTimeout
    error: BaseException | None = None
    #: seconds from the previous reply (or the start) to this one
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether ``func(item)`` returned a value."""
        return self.error is None


@dataclass(frozen=True)
class Group:
    """Items for :meth:`WorkerPool.map_parallel` and the workers that share them."""

    #: the keys of the workers the items are shared among (one thread each)
    keys: tuple[str, ...]
    #: the items, each passed to the function alone
    items: Sequence[Any]
    #: run first in every worker this call starts (see :meth:`WorkerPool.map`)
    setup: Callable[[], Any] | None = None


def check_timeout(value: Any, name: str = "timeout") -> float:
    """``value`` as float seconds; ValueError unless it is a finite positive real number.

    >>> check_timeout(2)
    2.0
    >>> check_timeout(float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: timeout must be a finite positive number of seconds, got nan
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{name} must be a finite positive number of seconds, got {value!r}")
    return float(value)


class WorkerPool:
    """A set of warm worker processes, one per key."""

    def __init__(self) -> None:
        self._workers: dict[str, CallWorker] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        #: keys of workers replaced after a crash, timeout or interrupted call, with the reason (newest last)
        self.replaced: list[tuple[str, str]] = []

    def _lock(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def call(self, key: str, func: Callable[..., Any], *args: Any, timeout: float = 60.0) -> Any:
        """Run ``func(*args)`` in worker ``key`` and return its value.

        ``func`` must be an importable top-level function.  Exceptions raised by
        ``func`` are re-raised here (SystemExit and KeyboardInterrupt as
        :class:`SandboxError`); a dead worker raises :class:`SandboxCrash`, a slow
        one :class:`SandboxTimeout`; either way the worker is replaced.  A call
        interrupted here (Ctrl-C) replaces its worker too, so its answer never
        reaches a later call.
        """
        [result] = self._run(key, func, [args], timeout)
        if result.error is not None:
            raise result.error
        return result.value

    def map(
        self,
        key: str,
        func: Callable[[Any], Any],
        items: Iterable[Any],
        timeout_per_item: float,
        on_result: Callable[[ItemResult], None] | None = None,
        setup: Callable[[], Any] | None = None,
    ) -> list[ItemResult]:
        """Run ``func(item)`` for each item, in order, in worker ``key``; one ItemResult per item.

        Each item has ``timeout_per_item`` seconds.  A crash or hang costs only the
        item it happened in (its error is SandboxCrash / SandboxTimeout); the rest
        continue in a fresh worker.  ``on_result`` gets each result as it arrives
        (it must not call this pool).  ``setup()`` runs first in every worker this
        call starts (within WARMUP_TIMEOUT); if it fails, every item left gets its error.

        >>> import math
        >>> pool = WorkerPool()
        >>> [r.value for r in pool.map("doc", math.sqrt, [4.0, 9.0], timeout_per_item=60)]
        [2.0, 3.0]
        >>> pool.close()
        """
        return self._run(key, func, [(item,) for item in items], timeout_per_item, on_result, setup)

    def map_parallel(
        self,
        func: Callable[[Any], Any],
        groups: Sequence[Group],
        timeout_per_item: float,
        on_result: Callable[[int, ItemResult], None] | None = None,
        batch: int = 16,
    ) -> list[list[ItemResult]]:
        """Run ``func(item)`` for the items of every group at once, each group's items shared
        among its workers (one thread per worker key, ``batch`` items handed out at a time to
        whichever of a group's workers is free); returns each group's results in item order.

        As in :meth:`map`, each item has ``timeout_per_item`` seconds and a crash or hang
        costs only the item it happened in.  ``on_result(group_index, result)`` is called in
        the calling thread as each result arrives (``result.index`` is the item's position in
        its group).  An interrupted call (Ctrl-C) stops its workers before it re-raises.

        >>> import math
        >>> pool = WorkerPool()
        >>> out = pool.map_parallel(math.sqrt, [Group(("a", "b"), [4.0, 9.0, 16.0])], 60, batch=1)
        >>> [r.value for r in out[0]]
        [2.0, 3.0, 4.0]
        >>> pool.close()
        """
        timeout_per_item = check_timeout(timeout_per_item, "timeout_per_item")
        if batch < 1:
            raise ValueError(f"batch must be at least 1, got {batch!r}")
        arrived: SimpleQueue[tuple[int, ItemResult] | BaseException | None] = SimpleQueue()
        pending = [list(range(0, len(g.items), batch)) for g in groups]
        guard = threading.Lock()
        stop = threading.Event()

        def serve(g: int, key: str) -> None:
            group = groups[g]
            try:
                while not stop.is_set():
                    with guard:
                        if not pending[g]:
                            break
                        start = pending[g].pop(0)
                    chunk = group.items[start : start + batch]

                    def forward(result: ItemResult, start: int = start) -> None:
                        arrived.put(
                            (g, ItemResult(start + result.index, result.value, result.error, result.seconds))
                        )

                    self._run(key, func, [(item,) for item in chunk], timeout_per_item, forward, group.setup)
            except BaseException as exc:  # reported in the calling thread
                arrived.put(exc)
            finally:
                arrived.put(None)

        results: list[list[ItemResult]] = [[] for _ in groups]
        threads = [
            start_daemon(serve, g, key, name=f"explorer-sandbox-{key}")
            for g, group in enumerate(groups)
            if group.items
            for key in dict.fromkeys(group.keys)
        ]
        running, failure = len(threads), None
        try:
            while running:
                got = arrived.get()
                if got is None:
                    running -= 1
                elif isinstance(got, BaseException):
                    failure = failure or got
                    stop.set()
                else:
                    results[got[0]].append(got[1])
                    if on_result is not None:
                        on_result(*got)
        except BaseException:  # interrupted: stop handing out items, and stop the workers
            stop.set()
            for key in {k for g in groups for k in g.keys}:
                worker = self._workers.get(key)
                if worker is not None:
                    self._discard(key, worker, "map_parallel interrupted")
            raise
        if failure is not None:
            raise failure
        return [sorted(r, key=lambda r: r.index) for r in results]

    def _run(
        self,
        key: str,
        func: Callable[..., Any],
        arg_tuples: list[tuple[Any, ...]],
        timeout: float,
        on_result: Callable[[ItemResult], None] | None = None,
        setup: Callable[[], Any] | None = None,
    ) -> list[ItemResult]:
        """Run ``func(*args)`` for each args tuple: the one engine behind call and map."""
        if not callable(func):
            raise TypeError(f"func must be callable, got {func!r}")
        timeout = check_timeout(timeout)
        # pickled here, so that what cannot be sent fails before anything is sent
        func_bytes = pickle.dumps(func)
        items = [pickle.dumps(args) for args in arg_tuples]
        setup_bytes = None if setup is None else pickle.dumps(setup)
        results: list[ItemResult] = []

        def deliver(result: ItemResult) -> None:
            results.append(result)
            if on_result is not None:
                on_result(result)

        with self._lock(key):
            worker: CallWorker | None = None
            try:
                while len(results) < len(items):
                    worker = self._workers.get(key)
                    if worker is None or not worker.alive():
                        worker = self._workers[key] = CallWorker(key)
                        error = self._setup(key, worker, setup_bytes)
                        if error is not None:
                            for index in range(len(results), len(items)):
                                deliver(ItemResult(index, error=error))
                            break
                    self._serve(key, worker, func_bytes, items, len(results), timeout, deliver)
            except BaseException as exc:  # interrupted: no later answer may reach anyone
                if worker is not None:
                    self._discard(key, worker, f"call interrupted by {type(exc).__name__}")
                raise
        return results

    def _setup(self, key: str, worker: CallWorker, setup_bytes: bytes | None) -> BaseException | None:
        """Run the pickled ``setup()`` in a fresh worker; returns its error if it failed (and the
        worker is then gone)."""
        if setup_bytes is None:
            return None
        request_id = worker.send(setup_bytes, [pickle.dumps(())])
        try:
            _, kind, value = worker.receive(request_id, WARMUP_TIMEOUT, during="its setup")
        except SandboxError as exc:
            self._discard(key, worker, str(exc))
            return exc
        if kind == "ok":
            return None
        self._discard(key, worker, f"its setup failed: {value}")
        return value

    def _serve(
        self,
        key: str,
        worker: CallWorker,
        func_bytes: bytes,
        items: list[bytes],
        start: int,
        timeout: float,
        deliver: Callable[[ItemResult], None],
    ) -> None:
        """Send items ``start:`` to ``worker`` and deliver their replies until all came or one was lost."""
        request_id = worker.send(func_bytes, items[start:])
        for index in range(start, len(items)):
            began = time.perf_counter()
            try:
                offset, kind, value = worker.receive(request_id, timeout)
            except SandboxError as exc:  # crash or timeout: this item is lost, the rest go on elsewhere
                self._discard(key, worker, str(exc))
                deliver(ItemResult(index, error=exc, seconds=time.perf_counter() - began))
                return
            seconds = time.perf_counter() - began
            if kind == "reject":  # the worker could not unpickle the function: no item can run
                for rest in range(index, len(items)):
                    deliver(ItemResult(rest, error=value, seconds=seconds))
                return
            if offset != index - start:
                raise SandboxError(f"worker {key!r} answered item {start + offset}, expected {index}")
            if kind == "ok":
                deliver(ItemResult(index, value=value, seconds=seconds))
            else:
                deliver(ItemResult(index, error=value, seconds=seconds))

    def _discard(self, key: str, worker: CallWorker, reason: str) -> None:
        """Kill ``worker`` and forget it (the next call starts a fresh one)."""
        worker.kill()
        with self._guard:
            if self._workers.get(key) is worker:
                del self._workers[key]
                self.replaced.append((key, reason))

    def close(self) -> None:
        """Stop every worker."""
        with self._guard:
            workers, self._workers = self._workers, {}
        for worker in workers.values():
            worker.kill()

    def workers(self) -> dict[str, int | None]:
        """Live workers by key, with their process ids."""
        return {k: w.process.pid for k, w in list(self._workers.items()) if w.alive()}

    def calls(self, key: str) -> int:
        """Requests sent to the live worker ``key`` (0 when it has none)."""
        worker = self._workers.get(key)
        return worker.calls if worker is not None and worker.alive() else 0
