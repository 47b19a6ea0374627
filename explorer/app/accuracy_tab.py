"""Accuracy tab: error in ULPs against the correctly rounded float64 reference, per backend."""

from __future__ import annotations

from typing import Any

from explorer.app import adapters, engines
from explorer.app.render import table_html
from explorer.app.sweeps import cached_sweep, elementwise_op, sweep_backends
from explorer.app.tab import NotAvailableYet, Tab


class AccuracyTab(Tab):
    """ULP error per backend for the selected op in the first selected dtype."""

    title = "Accuracy"
    key = "accuracy"
    fields = ("op", "dtypes", "backends")

    def on_tensorflow_loaded(self, app: Any) -> None:
        if "tensorflow" in self.state.backends:
            self.dirty = True

    def render(self) -> None:
        accuracy = engines.module("analysis.accuracy")
        from matplotlib.figure import Figure

        op = elementwise_op(self.state.op)
        if op is None:
            raise NotAvailableYet(
                f"{self.state.op} is not an elementwise op: ULP accuracy is measured for "
                "elementwise ops (exp, log, tanh, add, mul, …). Pick one above."
            )
        backends, note = sweep_backends(self.ctx)
        dtype = self.state.dtype
        sweep = cached_sweep(self.ctx, op.name, dtype, backends)
        result = self.ctx.cache.get(
            ("accuracy", op.name, dtype, backends), lambda: accuracy.accuracy_from_sweep(sweep)
        )
        plots = engines.module("plots.accuracy")

        def draw() -> Any:
            fig = Figure(figsize=(10.0, 4.0))
            (ax,) = adapters.stacked_axes(fig, [2.6], bottom=1.1, top=0.4)
            plots.plot_ulp_error(result, ax, max_points=6000)
            return fig

        self.show_cached_figure(("ulp", op.name, dtype, backends), draw, "ulp error")
        summary = [b.to_dict() for b in result.backends]
        disagreements = result.disagreements(limit=30)
        parts = ["<h4>Per backend</h4>", table_html(summary)]
        parts.append(f"<h4>Inputs where backends give different results ({result.n_disagreements()})</h4>")
        parts.append(
            table_html(disagreements) if disagreements else "<p>none: every backend that ran agrees.</p>"
        )
        self.show_html("".join(parts))
        if note:
            self.show_message(note, "info")
        else:
            self.clear_message()
