"""Speed measurements in the sandbox's worker processes: an op at one workload in several dtypes
(one backend, device and mode), their timed calls interleaved in rounds
(:func:`explorer.runtime.timing.measure_paired`) inside the backend's worker
(:func:`measure_group`), and a list of cells measured group after group within a time budget
(:func:`measure_cells`).

Interleaving puts a change in the machine's load on every dtype of the group alike, so that the
ratios to float32 stay fair on a shared machine.  A worker that crashes or hangs costs its group
one try; the group is then measured cell by cell in fresh workers, so that the failure costs
only its own cell (status ``crashed`` / ``timeout``).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from explorer.outcome import Status
from explorer.runtime.call_worker import SandboxCrash, SandboxError, SandboxTimeout
from explorer.runtime.sandbox import Sandbox, default_sandbox, warm_backend
from explorer.runtime.worker_pool import WARMUP_TIMEOUT

#: the intra-op threads of PyTorch and TensorFlow in a speed worker unless asked otherwise: one
#: thread was faster than every core at 64x64 and 512x512 matmul on the 2-core machine this was
#: chosen on (benchmarks/results/threads.md, ``python -m benchmarks.bench_threads``)
DEFAULT_THREADS = 1
#: the default minimum seconds of timed calls per cell
MIN_TIME = 0.2
#: the default minimum number of timing samples per cell
MIN_COUNT = 5
#: the default cap on the seconds of timed calls per cell
MAX_TIME = 2.0
#: the default time limit of one cell in its worker (seconds; compilation included)
CELL_TIMEOUT = 300.0
#: a cell is not started with less than this many seconds of the budget left
MIN_CELL_SECONDS = 0.5
#: seconds of a budget kept for stopping a worker cut off by it
STOP_MARGIN = 1.0


@dataclass(frozen=True)
class Cell:
    """One measurement asked for."""

    backend: str
    op: str
    dtype: str
    device: str
    mode: str
    #: one shape per input of the op
    shapes: tuple[tuple[int, ...], ...]


@dataclass
class CellRun:
    """The cells measured (each with its worker's answer, see :func:`measure_cell`), in order."""

    measured: list[tuple[Cell, dict[str, Any]]] = field(default_factory=list)
    #: how many cells were asked for
    planned: int = 0
    #: seconds the whole run took
    seconds: float = 0.0
    #: False when the budget ran out before every cell was measured
    complete: bool = True


def measure_group(
    backend: str,
    op_name: str,
    dtypes: tuple[str, ...],
    device: str,
    mode: str,
    shapes: tuple[tuple[int, ...], ...],
    min_time: float = MIN_TIME,
    min_count: int = MIN_COUNT,
    max_time: float = MAX_TIME,
    threads: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Worker side: time one op at one workload in several dtypes in interleaved rounds
    (:func:`explorer.runtime.timing.measure_paired`), each compared with the first dtype (the
    baseline), so that the machine's load falls on every dtype alike.  ``threads``: the
    intra-op threads of PyTorch (``torch.set_num_threads``) and TensorFlow in this worker
    (None: :data:`DEFAULT_THREADS`); ``max_time``: seconds of timed calls per dtype at most.

    A ``device`` the backend does not have here is ``no_device`` for every dtype, untimed.
    Per dtype: ``status`` (``ok``; ``fallback`` when the result came back in another dtype; else
    the status :meth:`explorer.backends.base.Backend.run` gives the same inputs), ``error``,
    ``result_dtype``, ``first_call_seconds`` (the first call, compilation included), ``timing``
    (:class:`~explorer.analysis.speed.TimingSummary` fields, or None), ``ratio`` (the
    :class:`~explorer.analysis.paired_ratio.PairedRatio` fields against the baseline, or None),
    ``machine`` (the :class:`~explorer.analysis.paired_ratio.MachineState` fields of the rounds)
    and ``threads`` (the intra-op threads each framework ran with, as it reports them)."""
    from explorer.backends import get_backend
    from explorer.formats import resolve
    from explorer.ops import get_op
    from explorer.runtime.speed_calls import inputs_for, output_dtype, prepared_call
    from explorer.runtime.timing import measure_paired

    op = get_op(op_name)
    chosen = get_backend(backend)
    if chosen.is_installed() and device not in chosen.devices():  # NumPy has no GPU; TensorFlow
        # would place the op on the CPU and time that
        missing = _failed(Status.NO_DEVICE, f"no {device} device is present for {backend} on this machine")
        return {dtype: dict(missing) for dtype in dtypes}
    inputs = inputs_for(op, shapes)
    stated = set_threads(backend, DEFAULT_THREADS if threads is None else threads)
    answers: dict[str, dict[str, Any]] = {}
    calls: dict[str, Callable[[], Any]] = {}
    with contextlib.ExitStack() as stack:
        for dtype in dtypes:
            fmt = resolve(dtype)
            try:
                call = stack.enter_context(prepared_call(backend, op, fmt, device, mode, inputs))
                start = time.perf_counter()
                out = call()
                first = time.perf_counter() - start
            except Exception as exc:  # the backend's own run says what failed, as availability does
                outcome = get_backend(backend).run(op, fmt, device=device, mode=mode, inputs=inputs)
                failed = outcome.status if not outcome.ran else Status.ERROR
                error = outcome.error if not outcome.ran else f"{type(exc).__name__}: {exc}"
                answers[dtype] = _failed(failed, error)
                continue
            result_dtype = output_dtype(out)
            status = Status.OK if (result_dtype == fmt.name or not op.float_output) else Status.FALLBACK
            answers[dtype] = {
                "status": status.value,
                "error": "",
                "result_dtype": result_dtype,
                "first_call_seconds": first,
                "timing": None,
                "ratio": None,
                "threads": stated,
            }
            calls[dtype] = call
        if calls:
            baseline = dtypes[0] if dtypes[0] in calls else next(iter(calls))
            timed = measure_paired(
                calls,
                baseline,
                warmup=1,
                min_time=min_time,
                min_count=min_count,
                max_time=max_time * len(calls),
                threads=stated.get(backend),
            )
            machine = timed.machine.to_dict()
            for dtype, timing in timed.summaries.items():
                answers[dtype]["timing"] = timing.to_dict()
                answers[dtype]["machine"] = machine
                if dtype in timed.ratios and baseline == dtypes[0]:
                    answers[dtype]["ratio"] = timed.ratios[dtype].to_dict()
    return {dtype: answers[dtype] for dtype in dtypes}


def set_threads(backend: str, threads: int) -> dict[str, int]:
    """Worker side: ``threads`` intra-op threads for the backend's framework where it can still
    take them (PyTorch at any time; TensorFlow only before its runtime starts, so a worker keeps
    the first count it was given); returns the count each framework reports using (TensorFlow's
    0, its own default, stated as the logical CPUs).  JAX's threads are XLA's, set at start-up
    only: not stated."""
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    stated: dict[str, int] = {}
    if backend == "torch":
        from explorer.backends.torch_backend import import_torch

        torch = import_torch()
        torch.set_num_threads(threads)
        stated["torch"] = int(torch.get_num_threads())
    elif backend == "tensorflow":
        from explorer.backends.tensorflow_backend import import_tensorflow

        threading = import_tensorflow().config.threading
        with contextlib.suppress(RuntimeError):  # the runtime has started: its count stays
            threading.set_intra_op_parallelism_threads(threads)
        stated["tensorflow"] = int(threading.get_intra_op_parallelism_threads()) or (os.cpu_count() or 1)
    return stated


@contextlib.contextmanager
def held_threads(threads: int) -> Iterator[dict[str, int]]:
    """In this process, PyTorch's intra-op threads set to ``threads`` while the context lasts
    (restored after) when PyTorch is already imported; yields the counts each imported
    framework runs with (TensorFlow's as it reports it: it cannot change once started)."""
    import sys

    stated: dict[str, int] = {}
    torch = sys.modules.get("torch")
    before = None
    if torch is not None:
        before = int(torch.get_num_threads())
        torch.set_num_threads(threads)
        stated["torch"] = int(torch.get_num_threads())
    tf = sys.modules.get("tensorflow")
    if tf is not None and hasattr(tf, "config"):
        stated["tensorflow"] = int(tf.config.threading.get_intra_op_parallelism_threads()) or (
            os.cpu_count() or 1
        )
    try:
        yield stated
    finally:
        if torch is not None and before is not None:
            torch.set_num_threads(before)


def measure_cell(
    backend: str,
    op_name: str,
    dtype: str,
    device: str,
    mode: str,
    shapes: tuple[tuple[int, ...], ...],
    min_time: float = MIN_TIME,
    min_count: int = MIN_COUNT,
    max_time: float = MAX_TIME,
    threads: int | None = None,
) -> dict[str, Any]:
    """Worker side: time one cell alone (:func:`measure_group` of one dtype; no ratio)."""
    group = measure_group(
        backend, op_name, (dtype,), device, mode, shapes, min_time, min_count, max_time, threads
    )
    return group[dtype]


def groups_of(cells: list[Cell]) -> list[list[Cell]]:
    """Consecutive cells that differ only in dtype, together (timed interleaved in one call).

    >>> a = Cell("torch", "exp", "float32", "CPU", "eager", ((8,),))
    >>> b = Cell("torch", "exp", "float16", "CPU", "eager", ((8,),))
    >>> c = Cell("torch", "log", "float32", "CPU", "eager", ((8,),))
    >>> [[x.dtype for x in g] for g in groups_of([a, b, c])]
    [['float32', 'float16'], ['float32']]
    """
    groups: list[list[Cell]] = []
    for cell in cells:
        if groups and _same_group(groups[-1][0], cell):
            groups[-1].append(cell)
        else:
            groups.append([cell])
    return groups


def _same_group(a: Cell, b: Cell) -> bool:
    return (a.backend, a.op, a.device, a.mode, a.shapes) == (b.backend, b.op, b.device, b.mode, b.shapes)


def measure_cells(
    cells: list[Cell],
    *,
    sandbox: Sandbox | None = None,
    budget: float | None = None,
    min_time: float = MIN_TIME,
    min_count: int = MIN_COUNT,
    max_time: float = MAX_TIME,
    cell_timeout: float = CELL_TIMEOUT,
    threads: int | None = None,
    on_cell: Callable[[Cell, dict[str, Any]], None] | None = None,
) -> CellRun:
    """Measure ``cells`` in order in their backend's worker, the dtypes of one op and workload
    together (:func:`groups_of`, :func:`measure_group`); a group whose worker crashed or hung
    is measured again cell by cell, so that the failure costs only its own cell.  With
    ``budget`` (seconds) the whole run, worker start-up included, stops within it (a group that
    would run past it is cut off: the worker is stopped, and its cells are not counted as
    measured).  ``threads``: see :func:`measure_group`."""
    pool = sandbox if sandbox is not None else default_sandbox()
    start = time.perf_counter()
    deadline = None if budget is None else start + budget
    run = CellRun(planned=len(cells))
    how = (min_time, min_count, max_time, threads)

    def limit() -> float | None:
        """The time limit of the next call; None when the budget is spent."""
        if deadline is None:
            return cell_timeout * 2
        left = deadline - time.perf_counter() - STOP_MARGIN
        return None if left < MIN_CELL_SECONDS else min(cell_timeout * 2, left)

    for group in groups_of(cells):
        first = group[0]
        key = f"{first.backend}-speed"
        dtypes = tuple(c.dtype for c in group)
        seconds = limit()
        if seconds is None:
            run.complete = False
            break
        args = (first.backend, first.op, dtypes, first.device, first.mode, first.shapes, *how)
        answer = _call(pool, key, first.backend, measure_group, args, seconds, seconds < cell_timeout * 2)
        if answer is None:  # cut off by the budget
            run.complete = False
            break
        if "status" in answer:  # the worker crashed or hung: each cell on its own
            answers: dict[str, Any] = {}
            for cell in group:
                seconds = limit()
                single = None
                if seconds is not None:
                    one = (cell.backend, cell.op, cell.dtype, cell.device, cell.mode, cell.shapes, *how)
                    single = _call(
                        pool, key, cell.backend, measure_cell, one, seconds, seconds < cell_timeout * 2
                    )
                if single is None:
                    break
                answers[cell.dtype] = single
            answer = answers
        for cell in group:
            if cell.dtype not in answer:
                run.complete = False
                break
            run.measured.append((cell, answer[cell.dtype]))
            if on_cell is not None:
                on_cell(cell, answer[cell.dtype])
        if not run.complete:
            break
    run.seconds = time.perf_counter() - start
    return run


def _call(
    pool: Sandbox,
    key: str,
    backend: str,
    func: Callable[..., dict[str, Any]],
    args: tuple[Any, ...],
    limit: float,
    by_budget: bool,
) -> dict[str, Any] | None:
    """``func(*args)`` in worker ``key`` (started and warmed first, within ``limit``); a crash or
    hang becomes one failed answer (a dict with ``status``); None when the time limit was the
    budget's (``by_budget``) and ran out."""
    began = time.perf_counter()
    try:
        if pool.calls(key) == 0:
            pool.call(key, warm_backend, backend, timeout=min(WARMUP_TIMEOUT, limit))
        left = limit - (time.perf_counter() - began)
        if left <= 0:
            return None if by_budget else _failed(Status.TIMEOUT, "starting the worker took the cell's time")
        answer: dict[str, Any] = pool.call(key, func, *args, timeout=left)
        return answer
    except SandboxTimeout as exc:
        return None if by_budget else _failed(Status.TIMEOUT, str(exc))
    except SandboxCrash as exc:
        return _failed(Status.CRASHED, str(exc))
    except SandboxError as exc:
        return _failed(Status.ERROR, str(exc))


def _failed(status: Status, error: str) -> dict[str, Any]:
    return {"status": status.value, "error": error, "result_dtype": None, "timing": None, "ratio": None}
