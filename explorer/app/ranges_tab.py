"""Ranges tab: number lines of the selected formats, and where the selected op overflows,
underflows, goes subnormal or NaN, per backend, with exact thresholds: one panel per selected
dtype, side by side (at most :data:`~explorer.app.tab.MAX_PANELS`, the others named)."""

from __future__ import annotations

import html
from typing import Any

from explorer.app import numbers
from explorer.app.render import message_html
from explorer.app.sweeps import cached_sweep, elementwise_op, sweep_backends
from explorer.app.tab import Panel, Tab, shown_dtypes

#: hover text of the threshold table's empty cells, by column
MISSING_REASONS = {
    "first positive": "no positive input of this kind",
    "last positive": "no positive input of this kind",
    "first negative": "no negative input of this kind",
    "last negative": "no negative input of this kind",
    "rule (bounds included)": "no rule: the backend did not run",
    "returns": "more distinct results than listed",
}


#: the threshold table's columns a newcomer needs (the table fits a panel at 1024 px)
NEWCOMER_COLUMNS = ("backend", "kind", "first positive", "first negative", "inputs")
#: the others, in two folded tables below it (each fits a panel at 1024 px)
MORE_COLUMNS = ("last positive", "last negative", "rule (bounds included)", "returns")
MORE_TABLES = (("last positive", "last negative"), ("rule (bounds included)", "returns"))


class RangesTab(Tab):
    """Number lines + op-aware regions, one panel per selected dtype."""

    title = "Ranges"
    key = "ranges"
    fields = ("op", "dtypes", "backends")
    intro = (
        "Where does this format break? Its number line, and which inputs of the op overflow, "
        "underflow, go subnormal or NaN, with exact thresholds (every value of formats up to 16 "
        "bits), one panel per selected dtype."
    )

    clears_at_once = True

    def build(self) -> None:
        from explorer.app.block_widgets import BlockRangeView

        #: a block format's range for a chosen block max (its own controls)
        self.block_range = BlockRangeView()
        self.widget.children = (*self.widget.children, self.block_range.widget)

    def on_tensorflow_loaded(self, app: Any) -> None:
        if "tensorflow" in self.state.backends:
            self.dirty = True

    def render(self) -> None:
        from explorer.plots.ranges import ranges_figure
        from explorer.queries import ranges

        state = self.state
        lines = self.ctx.cache.get(("lines", state.dtypes), lambda: ranges.number_lines(list(state.dtypes)))
        op = elementwise_op(state.op)
        if op is None:
            self.show_cached_figure(("lines", state.dtypes), lambda: ranges_figure(lines), "number lines")
            self.show_html("".join(self.casts_html(d) for d in shown_dtypes(state.dtypes)[0]))
            self.show_message(
                f"{state.op} is not an elementwise op, so only the formats' number lines are shown; "
                "pick an elementwise op (exp, square, add, mul, …) for op-aware regions.",
                "info",
            )
            return
        backends, note = sweep_backends(self.ctx)
        dtypes, cap_note = shown_dtypes(state.dtypes)
        self._answers: list[str] = []
        panels = [self._panel(op, dtype, backends) for dtype in dtypes]
        self.show_answer(self._answers)
        if len(panels) == 1:
            panel = panels[0]
            self.show_cached_figure(panel.key, panel.build, "ranges")
            self.show_html(format_heading(dtypes[0]) + self.casts_html(dtypes[0]) + panel.details)
        else:
            self.show_panels(panels, "ranges")
            self.show_html("")
        notes = " ".join(n for n in (cap_note, note) if n)
        if notes:
            self.show_message(notes, "info")
        else:
            self.clear_message()

    def _panel(self, op: Any, dtype: str, backends: tuple[str, ...]) -> Panel:
        from explorer.plots.ranges import ranges_figure
        from explorer.queries import ranges

        line = self.ctx.cache.get(("lines", (dtype,)), lambda: ranges.number_lines([dtype]))
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
            details = self.ctx.cache.get(
                ("thresholds-html", op.name, dtype, backends), lambda: thresholds_html(regions)
            )
            from explorer.queries.answers import ranges_answer

            self._answers.append(ranges_answer(op.name, dtype, regions))
            return Panel(
                dtype,
                ("unary", dtype, op.name, backends),
                lambda: ranges_figure(line, regions, title),
                format_heading(dtype) + self.casts_html(dtype),
                details,
            )
        first = next((b for b, r in sweep.runs.items() if r.ran), None)
        if first is None:
            raise ValueError(
                f"no selected backend ran {op.name} in {dtype}: "
                + "; ".join(f"{b}: {r.status}" for b, r in sweep.runs.items())
            )
        bmap = self.ctx.cache.get(
            ("bmap", op.name, dtype, first), lambda: ranges.binary_map_from_sweep(sweep, first)
        )
        return Panel(
            dtype,
            ("binary", dtype, op.name, first),
            lambda: ranges_figure(line, bmap),
            format_heading(dtype),
            numbers.table_html([{"backend": first, **bmap.counts()}]),
        )

    def casts_html(self, dtype: str) -> str:
        """What each selected backend's cast to ``dtype`` does above its max, for inf and below its
        smallest subnormal, and where the backends disagree.  Measured where the sweeps run each
        backend: here at once, or, when one runs in a worker (TensorFlow), in the background (the
        tab redraws when the measurement arrives)."""
        from explorer.formats import resolve

        if resolve(dtype).name == "float64":
            return ""
        from explorer.queries.cast_behaviour import cast_behaviours, measured_in_workers

        key = ("casts", dtype, self.state.backends)
        backends = list(self.state.backends)
        if not measured_in_workers(backends, dtype):  # measured here, as the sweeps run them: no wait
            return casts_table_html(
                dtype, self.ctx.cache.get(key, lambda: cast_behaviours([dtype], backends))
            )
        rows = self.ctx.cache.peek(key)
        if rows is None:
            failure = self.ctx.background.failure(key)
            if failure:
                return message_html(f"Casts to {dtype} could not be measured: {failure}", "info")

            def measure() -> None:
                found = cast_behaviours([dtype], backends=backends)
                self.ctx.cache.get(key, lambda: found)

            self.ctx.background.start(key, measure, self.key)
            return message_html(
                f"Casts to {dtype}: being measured in each selected backend's worker…", "info"
            )
        return casts_table_html(dtype, rows)


def casts_table_html(dtype: str, rows: list[dict[str, Any]]) -> str:
    """The measured casts to ``dtype`` (one row per backend) and the backends' disagreement."""
    from explorer.queries.cast_behaviour import WORDS, disagreement

    if not rows:
        return message_html(f"No selected backend has a cast to {dtype}.", "info")
    table = numbers.table_html(
        [
            {
                "backend": r["backend"],
                "above max": numbers.Markup(numbers.text_html(r["above_max"], WORDS.get(r["above_max"], ""))),
                "inf": numbers.Markup(numbers.text_html(r["inf"], WORDS.get(r["inf"], ""))),
                "below smallest subnormal": numbers.Markup(
                    numbers.text_html(r["below_subnormal"], WORDS.get(r["below_subnormal"], ""))
                ),
                "gives": r["gives"],
            }
            for r in rows
        ],
        css_class="px-table px-fit",
    )
    differ = disagreement(rows, dtype)
    return (
        f"<h4>Casts to {html.escape(dtype)} (measured: each backend's own cast)</h4>"
        + table
        + (message_html(differ, "warning") if differ else "")
    )


def format_heading(dtype: str) -> str:
    """A dtype's facts in one line (readable values, exact ones on hover): its largest finite
    value, where rounding overflows and to what, its smallest subnormal and smallest normal."""
    from explorer.queries.ranges import number_line

    line = number_line(dtype)
    digits = numbers.digits_for(_mantissa_bits(dtype))

    def fact(name: str, label: str, value: float) -> str:
        return (
            f"{html.escape(label)} <span class='px-fact px-fact-{name}' "
            f"title='{html.escape(numbers.exact(value))}'>"
            f"{html.escape(numbers.readable(value, digits))}</span>"
        )

    gives = {"inf": "inf", "nan": "NaN (no infinity)", "saturate": "max (saturates)"}[line.overflow_gives]
    facts = [
        fact("max", "max", line.max),
        fact(
            "overflow",
            f"overflow to {gives} from |x| {'≥' if line.overflow_bound_included else '>'}",
            line.overflow_bound,
        ),
        fact("smallest-subnormal", "smallest subnormal", line.smallest_subnormal),
        fact("smallest-normal", "smallest normal", line.smallest_normal),
    ]
    return (
        f"<div class='px-format-facts' data-dtype='{html.escape(dtype, quote=True)}'>"
        f"<b>{html.escape(dtype)}</b>: {' · '.join(facts)}</div>"
    )


def _mantissa_bits(dtype: str) -> int:
    from explorer.formats import resolve

    return resolve(dtype).mantissa_bits


def thresholds_html(regions: dict[str, Any]) -> str:
    """The thresholds table of one dtype's regions (readable values, exact ones on hover), its
    number-line rules, flush-to-zero named where it happens, and the backends' disagreements."""
    from explorer.queries.ranges import (
        KIND_DEFINITIONS,
        number_line,
        region_disagreements,
        threshold_rule,
    )

    first = next(iter(regions.values()))
    digits = numbers.digits_for(_mantissa_bits(first.format))

    def value(column: str, number: Any) -> numbers.Markup:
        return numbers.Markup(numbers.cell_html(number, MISSING_REASONS.get(column, ""), digits))

    def kind_cell(kind: str) -> numbers.Markup:
        return numbers.Markup(numbers.text_html(kind, KIND_DEFINITIONS.get(kind, "")))

    rows: list[dict[str, Any]] = []
    for name, reg in regions.items():
        if not reg.ran:
            reason = f"{name} did not run: {reg.status}"
            rows.append(
                {
                    "backend": name,
                    "kind": reg.status,
                    **{
                        c: numbers.Markup(numbers.cell_html(None, reason))
                        for c in ("first positive", "last positive", "first negative", "last negative")
                    },
                    "inputs": None,
                    "error": reg.error[:160],
                    "rule (bounds included)": None,
                    "returns": None,
                }
            )
            continue
        for kind, entry in reg.thresholds.items():
            pos, neg = entry.get("positive") or {}, entry.get("negative") or {}
            few = entry.get("returns_distinct", 0) == len(entry.get("returns", []))
            rows.append(
                {
                    "backend": name,
                    "kind": kind_cell(kind),
                    "first positive": value("first positive", pos.get("min")),
                    "last positive": value("last positive", pos.get("max")),
                    "first negative": value("first negative", neg.get("max")),
                    "last negative": value("last negative", neg.get("min")),
                    "inputs": entry.get("count"),
                    "rule (bounds included)": threshold_rule(entry) or None,
                    "returns": ", ".join(entry.get("returns", [])) if few else None,
                }
            )
    disagreements = region_disagreements(regions)
    line = number_line(first.format)
    flushed = sorted(name for name, reg in regions.items() if reg.ran and "flush_to_zero" in reg.thresholds)
    main = [{c: row[c] for c in NEWCOMER_COLUMNS} for row in rows]
    more = [
        numbers.table_html(
            [{c: row[c] for c in ("backend", "kind", *columns)} for row in rows],
            missing_reasons=MISSING_REASONS,
            css_class="px-table px-fit",
        )
        for columns in MORE_TABLES
    ]
    failures = "".join(
        message_html(f"{row['backend']} did not run: {row['error']}", "info")
        for row in rows
        if row.get("error")
    )
    return (
        "<h4>Thresholds (the first inputs of each kind, from zero outwards; hover a value for its "
        "exact value, a kind for its definition)</h4>"
        + numbers.table_html(main, missing_reasons=MISSING_REASONS, css_class="px-table px-fit")
        + failures
        + "<details class='px-more-columns'><summary>more columns: the last inputs of each kind, "
        "the rule in words, the results</summary>"
        + "".join(more)
        + "</details>"
        + message_html(f"{first.format}: {line.underflow_rule}; {line.overflow_rule}", "info")
        + (
            message_html(
                f"flush-to-zero on {', '.join(flushed)}: {KIND_DEFINITIONS['flush_to_zero']}", "info"
            )
            if flushed
            else ""
        )
        + _disagreement_note(regions, disagreements)
    )


def _disagreement_note(regions: dict[str, Any], disagreements: list[dict[str, Any]]) -> str:
    """How many inputs the backends that ran disagree on; with one backend, that nothing was compared."""
    ran = [name for name, reg in regions.items() if reg.ran]
    if len(ran) < 2:
        return message_html(
            f"Only {ran[0] if ran else 'no backend'} ran, so there is no other backend to compare with.",
            "info",
        )
    example = (
        f", e.g. x = {disagreements[0]['input']!r}: {disagreements[0]['kinds']}" if disagreements else ""
    )
    return message_html(
        f"{len(disagreements)} inputs where {', '.join(ran)} disagree on the kind{example}", "info"
    )
