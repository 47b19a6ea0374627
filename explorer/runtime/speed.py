"""Speed measurements in the sandbox's worker processes: one cell (an op at one workload, in one
dtype, backend, device and mode) timed by :func:`explorer.runtime.timing.measure` inside the
backend's worker (:func:`measure_cell`), and a list of cells measured one after the other
within a time budget (:func:`measure_cells`).

A worker that crashes or hangs costs only its cell (status ``crashed`` / ``timeout``); the next
cell starts a fresh worker.  The float32 cell of a group and the others are timed in the same
worker process, so that they share the process's threads and caches.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from explorer.outcome import Status
from explorer.runtime.call_worker import SandboxCrash, SandboxError, SandboxTimeout
from explorer.runtime.sandbox import Sandbox, default_sandbox, warm_backend
from explorer.runtime.worker_pool import WARMUP_TIMEOUT

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
    torch_threads: int | None = None,
) -> dict[str, Any]:
    """Worker side: time one cell (``torch_threads``: PyTorch's intra-op threads in this worker,
    ``torch.set_num_threads``; None leaves PyTorch's default).

    Returns ``status`` (``ok``; ``fallback`` when the result came
    back in another dtype; else the status :meth:`explorer.backends.base.Backend.run` gives the
    same inputs), ``error``, ``result_dtype``, ``first_call_seconds`` (the first call, compilation
    included) and ``timing`` (:class:`~explorer.analysis.speed.TimingSummary` fields, or None)."""
    from explorer.backends import get_backend
    from explorer.formats import resolve
    from explorer.ops import get_op
    from explorer.runtime.speed_calls import inputs_for, output_dtype, prepared_call
    from explorer.runtime.timing import measure

    op = get_op(op_name)
    fmt = resolve(dtype)
    inputs = inputs_for(op, shapes)
    if torch_threads is not None and backend == "torch":
        from explorer.backends.torch_backend import import_torch

        import_torch().set_num_threads(torch_threads)
    try:
        with prepared_call(backend, op, fmt, device, mode, inputs) as call:
            start = time.perf_counter()
            out = call()
            first = time.perf_counter() - start
            result_dtype = output_dtype(out)
            timing = measure(call, warmup=1, min_time=min_time, min_count=min_count, max_time=max_time)
    except Exception as exc:  # the backend's own run says what failed, as availability does
        outcome = get_backend(backend).run(op, fmt, device=device, mode=mode, inputs=inputs)
        failed = outcome.status if not outcome.ran else Status.ERROR
        error = outcome.error if not outcome.ran else f"{type(exc).__name__}: {exc}"
        return {"status": failed.value, "error": error, "result_dtype": None, "timing": None}
    status = Status.OK if (result_dtype == fmt.name or not op.float_output) else Status.FALLBACK
    return {
        "status": status.value,
        "error": "",
        "result_dtype": result_dtype,
        "first_call_seconds": first,
        "timing": timing.to_dict(),
    }


def measure_cells(
    cells: list[Cell],
    *,
    sandbox: Sandbox | None = None,
    budget: float | None = None,
    min_time: float = MIN_TIME,
    min_count: int = MIN_COUNT,
    max_time: float = MAX_TIME,
    cell_timeout: float = CELL_TIMEOUT,
    torch_threads: int | None = None,
    on_cell: Callable[[Cell, dict[str, Any]], None] | None = None,
) -> CellRun:
    """Measure ``cells`` in order, each in its backend's worker; with ``budget`` (seconds) the
    whole run, worker start-up included, stops within it (a cell that would run past it is
    cut off: the worker is stopped, and the cell is not counted as measured).  ``torch_threads``:
    see :func:`measure_cell`."""
    pool = sandbox if sandbox is not None else default_sandbox()
    start = time.perf_counter()
    deadline = None if budget is None else start + budget
    run = CellRun(planned=len(cells))
    for cell in cells:
        limit = cell_timeout
        if deadline is not None:
            left = deadline - time.perf_counter()
            if left < MIN_CELL_SECONDS:
                run.complete = False
                break
            limit = min(cell_timeout, left)
        key = f"{cell.backend}-speed"
        how = (min_time, min_count, max_time, torch_threads)
        answer = _call(pool, key, cell, limit, limit < cell_timeout, how)
        if answer is None:  # cut off by the budget
            run.complete = False
            break
        run.measured.append((cell, answer))
        if on_cell is not None:
            on_cell(cell, answer)
    run.seconds = time.perf_counter() - start
    return run


def _call(
    pool: Sandbox,
    key: str,
    cell: Cell,
    limit: float,
    by_budget: bool,
    how: tuple[float, int, float, int | None],
) -> dict[str, Any] | None:
    """The worker's answer for ``cell`` (``how``: min_time, min_count, max_time, torch_threads); a
    crash or hang becomes its status; None when the time limit was the budget's (``by_budget``)
    and ran out."""
    began = time.perf_counter()
    try:
        if pool.calls(key) == 0:
            pool.call(key, warm_backend, cell.backend, timeout=min(WARMUP_TIMEOUT, limit))
        left = limit - (time.perf_counter() - began)
        if left <= 0:
            return None if by_budget else _failed(Status.TIMEOUT, "starting the worker took the cell's time")
        answer: dict[str, Any] = pool.call(
            key,
            measure_cell,
            cell.backend,
            cell.op,
            cell.dtype,
            cell.device,
            cell.mode,
            cell.shapes,
            *how,
            timeout=left,
        )
        return answer
    except SandboxTimeout as exc:
        return None if by_budget else _failed(Status.TIMEOUT, str(exc))
    except SandboxCrash as exc:
        return _failed(Status.CRASHED, str(exc))
    except SandboxError as exc:
        return _failed(Status.ERROR, str(exc))


def _failed(status: Status, error: str) -> dict[str, Any]:
    return {"status": status.value, "error": error, "result_dtype": None, "timing": None}
