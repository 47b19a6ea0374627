"""The sweep the Ranges and Accuracy tabs share: one op in one format on the selected backends, cached.

TensorFlow's part of a sweep is never run in the kernel: it comes from the sweep cache on
disk, else from a sandboxed worker process (:mod:`explorer.runtime.sweep_store`).  While
the worker works, the tabs show the other backends' results with a note, and fill in
TensorFlow's when it answers (topic :data:`SWEEP_TOPIC` of ``ctx.background``).
"""

from __future__ import annotations

from typing import Any

from explorer.app.context import AppContext
from explorer.app.tab import NotAvailableYet
from explorer.ops import catalog

#: ``ctx.background`` topic of finished worker sweeps (the tabs in :data:`SWEEP_TABS` redraw)
SWEEP_TOPIC = "sweeps"
#: the tabs that show sweeps
SWEEP_TABS: tuple[str, ...] = ("ranges", "accuracy")
#: what the note says while a worker computes TensorFlow's results
PENDING_NOTE = (
    "TensorFlow's results are being computed in a sandboxed worker process (TensorFlow is not "
    "imported in this kernel); the other backends are shown now, TensorFlow's fill in when the "
    "worker answers."
)


def sweep_backends(ctx: AppContext) -> tuple[tuple[str, ...], str]:
    """The selected backends to sweep now, and a note on any left out: TensorFlow while a worker
    computes its results for the op and the selected dtypes (started here), or when it could not.

    Every result drawn from the sweep is cached under these backends, so TensorFlow is in them
    only once its results are at hand for every selected dtype."""
    backends = tuple(ctx.state.backends)
    entry = elementwise_op(ctx.state.op)
    remote = _worker_backends(backends)
    note = ""
    if entry is not None and remote:
        states = {dtype: ensure_sweep(ctx, entry.name, dtype, backends) for dtype in ctx.state.dtypes}
        failures = [f"{d}: {s.removeprefix('failed: ')}" for d, s in states.items() if s.startswith("failed")]
        if failures:
            note = "TensorFlow's results could not be computed in a worker: " + "; ".join(failures)
        elif any(s == "pending" for s in states.values()):
            note = PENDING_NOTE
        if note:
            backends = tuple(b for b in backends if b not in remote)
    if not backends:
        raise NotAvailableYet(note or "Select at least one backend.")
    return backends, note


def elementwise_op(op: str) -> Any:
    """The catalog op if it can be swept (elementwise, one or two inputs), else None."""
    entry = catalog().get(op)
    if entry is None or not entry.elementwise or entry.arity not in (1, 2):
        return None
    return entry


def _worker_backends(backends: tuple[str, ...]) -> tuple[str, ...]:
    from explorer.runtime.sweep_store import WORKER_BACKENDS

    return tuple(b for b in backends if b in WORKER_BACKENDS)


def _compute(op: str, dtype: str, backends: tuple[str, ...], runner: Any = None) -> Any:
    from explorer.queries.ranges import binary_sweep, sweep

    entry = elementwise_op(op)
    if entry is None:
        raise ValueError(f"{op} is not an elementwise op")
    if entry.arity == 1:
        return sweep(op, dtype, backends, runner=runner)
    return binary_sweep(op, dtype, backends, 129, runner=runner)


def _runner(ctx: AppContext) -> Any:
    from explorer.runtime.sweep_store import WorkerRunner, open_store

    return ctx.cache.get(("sweep-runner",), lambda: WorkerRunner(open_store(), ctx.env_key()))


def ensure_sweep(ctx: AppContext, op: str, dtype: str, backends: tuple[str, ...]) -> str:
    """``"ready"`` when the sweep with every backend is at hand (in memory, or rebuilt from the
    sweep cache on disk without a worker); else starts it in the background and says
    ``"pending"``, or ``"failed: why"`` when that failed."""
    from explorer.runtime.sweep_store import NotCachedYet

    key = ("sweep", op, dtype, backends)
    if ctx.cache.peek(key) is not None:
        return "ready"
    failure = ctx.background.failure(key)
    if failure:
        return f"failed: {failure}"
    if ctx.background.pending(key):
        return "pending"
    runner = _runner(ctx)
    try:
        ctx.cache.get(key, lambda: _compute(op, dtype, backends, runner.cached_only()))
        return "ready"
    except NotCachedYet:
        pass

    def work() -> None:
        result = _compute(op, dtype, backends, runner)
        ctx.cache.get(key, lambda: result)

    ctx.background.start(key, work, SWEEP_TOPIC)
    return "ready" if ctx.cache.peek(key) is not None else "pending"


def cached_sweep(ctx: AppContext, op: str, dtype: str, backends: tuple[str, ...]) -> Any:
    """``ranges.sweep`` (unary) or ``ranges.binary_sweep`` (binary), cached per selection.

    TensorFlow's run comes from the sweep cache or a worker process (:func:`ensure_sweep`);
    :func:`sweep_backends` leaves it out until it is at hand.  Asked for it while a worker
    still works, this raises NotAvailableYet with the note."""
    if elementwise_op(op) is None:
        raise ValueError(f"{op} is not an elementwise op")
    if _worker_backends(backends):
        state = ensure_sweep(ctx, op, dtype, backends)
        if state != "ready":
            raise NotAvailableYet(PENDING_NOTE if state == "pending" else f"TensorFlow's results: {state}")
        runner = _runner(ctx)
        return ctx.cache.get(("sweep", op, dtype, backends), lambda: _compute(op, dtype, backends, runner))
    return ctx.cache.get(("sweep", op, dtype, backends), lambda: _compute(op, dtype, backends))
