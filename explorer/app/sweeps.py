"""The sweep the Ranges and Accuracy tabs share: one op in one format on the selected backends, cached."""

from __future__ import annotations

from typing import Any

from explorer.app.context import AppContext
from explorer.app.tab import NotAvailableYet
from explorer.ops import catalog


def sweep_backends(ctx: AppContext) -> tuple[tuple[str, ...], str]:
    """The selected backends to sweep now, and a note on any left out (TensorFlow still loading)."""
    backends = tuple(ctx.state.backends)
    note = ""
    if "tensorflow" in backends and not ctx.tf_ready:
        backends = tuple(b for b in backends if b != "tensorflow")
        note = "TensorFlow is still loading in the background; its results appear when it is ready."
    if not backends:
        raise NotAvailableYet(note or "Select at least one backend.")
    return backends, note


def elementwise_op(op: str) -> Any:
    """The catalog op if it can be swept (elementwise, one or two inputs), else None."""
    entry = catalog().get(op)
    if entry is None or not entry.elementwise or entry.arity not in (1, 2):
        return None
    return entry


def cached_sweep(ctx: AppContext, op: str, dtype: str, backends: tuple[str, ...]) -> Any:
    """``ranges.sweep`` (unary) or ``ranges.binary_sweep`` (binary), cached per selection."""
    from explorer.analysis.ranges import binary_sweep, sweep

    entry = elementwise_op(op)
    if entry is None:
        raise ValueError(f"{op} is not an elementwise op")

    def compute() -> Any:
        if entry.arity == 1:
            return sweep(op, dtype, backends)
        return binary_sweep(op, dtype, backends, 129)

    return ctx.cache.get(("sweep", op, dtype, backends), compute)
