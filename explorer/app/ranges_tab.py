"""Ranges tab: number lines of the selected formats, and where the selected op overflows,
underflows, goes subnormal or NaN, per backend, with exact thresholds."""

from __future__ import annotations

from typing import Any

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
        from explorer.analysis import ranges
        from explorer.plots.ranges import ranges_figure

        state = self.state
        lines = self.ctx.cache.get(("lines", state.dtypes), lambda: ranges.number_lines(list(state.dtypes)))
        op = elementwise_op(state.op)
        if op is None:
            self.show_cached_figure(("lines", state.dtypes), lambda: ranges_figure(lines), "number lines")
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
                lambda: ranges_figure(lines, regions, title),
                "ranges",
            )
            self.show_html(
                self.ctx.cache.get(
                    ("thresholds-html", op.name, dtype, backends),
                    lambda: self._thresholds_html(regions),
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
                ("binary", state.dtypes, op.name, first), lambda: ranges_figure(lines, bmap), "ranges"
            )
            self.show_html(table_html([{"backend": first, **bmap.counts()}]))
        if note:
            self.show_message(note, "info")
        else:
            self.clear_message()

    def _thresholds_html(self, regions: dict[str, Any]) -> str:
        from explorer.analysis.ranges import (
            KIND_DEFINITIONS,
            number_line,
            region_disagreements,
            threshold_rule,
        )

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
                        "rule (bounds included)": "",
                        "returns": "",
                    }
                )
                continue
            for kind, entry in reg.thresholds.items():
                pos, neg = entry.get("positive") or {}, entry.get("negative") or {}
                few = entry.get("returns_distinct", 0) == len(entry.get("returns", []))
                rows.append(
                    {
                        "backend": name,
                        "kind": kind,
                        "first positive": pos.get("min"),
                        "last positive": pos.get("max"),
                        "first negative": neg.get("max"),
                        "last negative": neg.get("min"),
                        "inputs": entry.get("count"),
                        "rule (bounds included)": threshold_rule(entry),
                        "returns": ", ".join(entry.get("returns", [])) if few else "",
                    }
                )
        disagreements = region_disagreements(regions)
        first = next(iter(regions.values()))
        line = number_line(first.format)
        flushed = any("flush_to_zero" in reg.thresholds for reg in regions.values() if reg.ran)
        text = (
            "<h4>Thresholds (exact first and last inputs of each kind; the neighbouring inputs are "
            f"of another kind)</h4>{table_html(rows)}"
            + message_html(f"{first.format}: {line.underflow_rule}; {line.overflow_rule}", "info")
            + (message_html(f"flush_to_zero: {KIND_DEFINITIONS['flush_to_zero']}", "info") if flushed else "")
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
