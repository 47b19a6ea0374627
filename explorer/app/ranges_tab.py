"""Ranges tab: number lines of the selected formats, and where the selected op overflows,
underflows, goes subnormal or NaN, per backend, with exact thresholds."""

from __future__ import annotations

from typing import Any

from explorer.app import adapters, engines
from explorer.app.render import message_html, table_html
from explorer.app.sweeps import cached_sweep, elementwise_op, sweep_backends
from explorer.app.tab import Tab


class RangesTab(Tab):
    """Number lines + op-aware regions for the first selected dtype."""

    title = "Ranges"
    key = "ranges"
    fields = ("op", "dtypes", "backends")
    intro = (
        "Where does this format break? Its number line, and which inputs of the op overflow, "
        "underflow, go subnormal or NaN, with exact thresholds (every value of formats up to 16 "
        "bits)."
    )

    def on_tensorflow_loaded(self, app: Any) -> None:
        if "tensorflow" in self.state.backends:
            self.dirty = True

    def render(self) -> None:
        ranges = engines.module("analysis.ranges")
        state = self.state
        lines = self.ctx.cache.get(("lines", state.dtypes), lambda: ranges.number_lines(list(state.dtypes)))
        op = elementwise_op(state.op)
        if op is None:
            self.show_cached_figure(
                ("lines", state.dtypes), lambda: self._draw(lines, None, None), "number lines"
            )
            self.show_html("")
            self.show_message(
                f"{state.op} is not an elementwise op, so only the formats' number lines are shown; "
                "pick an elementwise op (exp, square, add, mul, …) for op-aware regions.",
                "info",
            )
            return
        backends, note = sweep_backends(self.ctx)
        dtype = state.dtype
        sweep = cached_sweep(self.ctx, op.name, dtype, backends)
        if op.arity == 1:
            regions = self.ctx.cache.get(
                ("regions", op.name, dtype, backends),
                lambda: {b: ranges.regions_from_sweep(sweep, b) for b in sweep.runs},
            )
            title = (
                f"{op.name}(x) in {dtype}: kind of every {'' if sweep.exhaustive else 'sampled '}"
                f"input ({sweep.n_inputs:,} inputs)"
            )
            self.show_cached_figure(
                ("unary", state.dtypes, op.name, backends),
                lambda: self._draw(lines, regions, title),
                "ranges",
            )
            self.show_html(
                self.ctx.cache.get(
                    ("thresholds-html", op.name, dtype, backends),
                    lambda: self._thresholds_html(regions, ranges),
                )
            )
        else:
            first = next((b for b, r in sweep.runs.items() if r.ran), None)
            if first is None:
                raise ValueError(
                    f"no selected backend ran {op.name} in {dtype}: "
                    + "; ".join(f"{b}: {r.status}" for b, r in sweep.runs.items())
                )
            bmap = self.ctx.cache.get(
                ("bmap", op.name, dtype, first), lambda: ranges.binary_map(op.name, dtype, first, 129)
            )
            self.show_cached_figure(
                ("binary", state.dtypes, op.name, first), lambda: self._draw(lines, bmap, ""), "ranges"
            )
            self.show_html(table_html([{"backend": first, **bmap.counts()}]))
        if note:
            self.show_message(note, "info")
        else:
            self.clear_message()

    def _draw(self, lines: list[Any], detail: Any, title: str | None) -> Any:
        """plots.ranges on fixed-layout axes (no layout engine: one draw per render)."""
        from matplotlib.figure import Figure

        plots = engines.module("plots.ranges")
        fig = Figure(figsize=(10.0, 4.0))
        lines_height = 0.32 * len(lines) + 0.2
        if detail is None:
            plots.plot_number_lines(lines, adapters.stacked_axes(fig, [lines_height], top=0.5)[0])
            return fig
        if isinstance(detail, dict):
            lines_ax, ax = adapters.stacked_axes(
                fig, [lines_height, 0.45 * len(detail) + 0.4], gap=1.5, top=0.5, bottom=0.8
            )
            plots.plot_regions(detail, ax)
            ax.set_title(title, fontsize=9, pad=22)
        else:
            lines_ax, ax = adapters.stacked_axes(fig, [lines_height, 3.2], gap=1.2, top=0.5, right=1.6)
            plots.plot_binary_map(detail, ax)
        plots.plot_number_lines(lines, lines_ax)
        return fig

    def _thresholds_html(self, regions: dict[str, Any], ranges: Any) -> str:
        rows = []
        for name, reg in regions.items():
            if not reg.ran:
                rows.append(
                    {
                        "backend": name,
                        "kind": reg.status,
                        "first positive": "",
                        "last positive": "",
                        "first negative": "",
                        "last negative": "",
                        "inputs": reg.error[:120],
                    }
                )
                continue
            for kind, entry in reg.thresholds.items():
                pos, neg = entry.get("positive") or {}, entry.get("negative") or {}
                rows.append(
                    {
                        "backend": name,
                        "kind": kind,
                        "first positive": pos.get("min"),
                        "last positive": pos.get("max"),
                        "first negative": neg.get("max"),
                        "last negative": neg.get("min"),
                        "inputs": entry.get("count"),
                    }
                )
        disagreements = ranges.region_disagreements(regions)
        text = (
            f"<h4>Thresholds (inputs where each kind starts and ends)</h4>{table_html(rows)}"
            + message_html(
                f"{len(disagreements)} inputs where backends disagree on the kind"
                + (
                    f", e.g. x = {disagreements[0]['input']!r}: {disagreements[0]['kinds']}"
                    if disagreements
                    else ""
                ),
                "info",
            )
        )
        return text
