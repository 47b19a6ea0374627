"""Accuracy tab: the error against the correctly rounded float64 reference, per backend, by two
named measures (ulp_steps and ulp_error), and accumulation: the running sum of 10,000 terms in a
low-precision accumulator vs float32.  One panel per selected dtype, side by side (at most
:data:`~explorer.app.tab.MAX_PANELS`, the others named)."""

from __future__ import annotations

import html
import re
from typing import Any

from explorer.app import numbers
from explorer.app.sweeps import cached_sweep, elementwise_op, sweep_backends
from explorer.app.tab import Panel, Tab, shown_dtypes

#: hover text of the tables' empty cells, by column
MISSING_REASONS = {
    "max_ulp_steps": "the backend did not run",
    "mean_ulp_steps": "the backend did not run",
    "max_ulp_error": "the backend did not run",
    "mean_ulp_error": "the backend did not run",
    "correctly_rounded_fraction": "the backend did not run",
    "error": "no error",
    "pairwise sum": "no pairwise sum for this accumulator",
    "stagnated at": "the sum never stopped growing",
}


#: the per-backend table's columns a newcomer needs (the table fits a panel at 1024 px)
NEWCOMER_COLUMNS = ("backend", "max_ulp_steps", "max_ulp_error", "correctly_rounded_fraction", "n_inputs")
#: the others, in a folded table below it
MORE_COLUMNS = ("status", "mean_ulp_steps", "mean_ulp_error", "n_nan_mismatch")
#: the summation table's columns a newcomer needs; the pairwise sum is folded below
SUM_COLUMNS = ("accumulator", "sequential sum", "exact", "stagnated at")


#: the tables' classes: headers and text wrap so that a table fits its panel (style.py)
FIT = "px-table px-fit"

#: accuracy measures are read near 0.5 and 1: six significant digits keep 0.500028 from reading 0.5
MEASURE_DIGITS = 6


class AccuracyTab(Tab):
    """ULP error per backend for the selected op, and the accumulation study (sequential sum in
    the dtype's own accumulator), one panel per selected dtype."""

    title = "Accuracy"
    key = "accuracy"
    fields = ("op", "dtypes", "backends")
    intro = (
        "How accurate is each backend? Its error against the correctly rounded float64 reference, in "
        "ulp_steps (representable values apart) and ulp_error (|y - f(x)| / ulp(f(x)), at most 0.5 "
        "when correctly rounded), and what a low-precision accumulator does to a long sum; one panel "
        "per selected dtype."
    )

    clears_at_once = True

    def on_tensorflow_loaded(self, app: Any) -> None:
        if "tensorflow" in self.state.backends:
            self.dirty = True

    def render(self) -> None:
        op = elementwise_op(self.state.op)
        notes: list[str] = []
        backends: tuple[str, ...] = ()
        if op is None:
            notes.append(
                f"{self.state.op} is not an elementwise op: ULP accuracy is measured for elementwise ops "
                "(exp, log, tanh, add, mul, …); the accumulation study below is for any op."
            )
        else:
            backends, note = sweep_backends(self.ctx)
            if note:
                notes.append(note)
        dtypes, cap_note = shown_dtypes(self.state.dtypes)
        if cap_note:
            notes.insert(0, cap_note)
        # everything is computed and drawn first, then written together: the answer, the
        # figures and the tables of one selection appear at once, never beside another's
        self._answers: list[str] = []
        panels = []
        for k, dtype in enumerate(dtypes):
            self.progress = f"{dtype}: sweeping" + (f" ({k} of {len(dtypes)} dtypes done)" if k else "")
            panels.append(self._panel(op, dtype, backends))
        self.progress = "drawing the figures"
        drawn = [self._drawn(panel) for panel in panels]
        definitions = ""
        if op is not None:
            from explorer.queries.accuracy import DEFINITIONS

            definitions = (
                "<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in DEFINITIONS.values()) + "</ul>"
            )
        if not self.still_current():  # the selection changed meanwhile: its own render follows
            self.dirty = True
            return
        if len(panels) == 1:
            markup, details = drawn[0][1], panels[0].details + definitions
        else:
            markup = (
                "<div class='px-panels'>"
                + "".join(
                    f"<div class='px-panel' data-dtype='{html.escape(p.dtype, quote=True)}'>"
                    f"<div class='px-panel-heading'>{p.heading}</div>{svg}"
                    f"<div class='px-panel-details'>{p.details}</div></div>"
                    for p, (_, svg) in zip(panels, drawn, strict=True)
                )
                + "</div>"
            )
            details = definitions
        self._show_vector(dict(zip(dtypes, (fig for fig, _ in drawn), strict=True)), markup, len(panels) > 1)
        self.show_answer(self._answers)
        self.show_html(details)
        if notes:
            self.show_message(" ".join(notes), "info")

    def _drawn(self, panel: Panel) -> tuple[Any, str]:
        """The panel's figure and its inline SVG, drawn once per panel key."""
        from explorer.app.render import as_figure
        from explorer.app.vector import svg_html

        op = panel.key[1] if isinstance(panel.key, tuple) else None
        title = f"{op} in {panel.dtype}" if op else f"sums in {panel.dtype}"

        def draw() -> tuple[Any, str]:
            fig = as_figure(panel.build())
            return fig, svg_html(fig, f"Accuracy figure: {title}")

        drawn: tuple[Any, str] = self.ctx.figures.get((self.key, "svg", panel.key), draw)
        return drawn

    def _show_vector(self, figures: dict[str, Any], markup: str, side_by_side: bool) -> None:
        """Show the figures (inline SVG in ``markup``); export offers each of them."""
        from explorer.app.render import html_bundle

        self._figures = figures if side_by_side else {}
        self._figure = next(iter(figures.values()))
        self._wrote()
        self.plot.outputs = (html_bundle(markup, f"Accuracy figures: {', '.join(figures)}"),)
        self.export_link.value = ""

    def _panel(self, op: Any, dtype: str, backends: tuple[str, ...]) -> Panel:
        from explorer.analysis.accumulation import summation_study
        from explorer.plots.accuracy import accuracy_figure

        study = self.ctx.cache.get(("summation", dtype), lambda: summation_study(dtype))
        parts: list[str] = []
        result = None
        if op is not None:
            from explorer.queries.accuracy import accuracy_from_sweep

            sweep = cached_sweep(self.ctx, op.name, dtype, backends)
            self.progress = f"{dtype}: comparing with the correctly rounded results"
            result = self.ctx.cache.get(
                ("accuracy", op.name, dtype, backends), lambda: accuracy_from_sweep(sweep)
            )
            from explorer.queries.answers import accuracy_answer

            self._answers.append(accuracy_answer(op.name, dtype, result.backends))
            parts += [
                f"<h4>Error of {html.escape(op.name)} in {html.escape(dtype)} per backend</h4>",
                *backend_tables(result.backends),
                disagreements_html(result),
            ]
        parts += [
            f"<h4>Summing {study.n:,} {html.escape(study.distribution)} terms in {html.escape(dtype)}</h4>",
            *summation_tables(study),
        ]
        key = ("accuracy", op.name if op else None, dtype, backends)
        return Panel(
            dtype,
            key,
            lambda: accuracy_figure(result, study),
            f"<div class='px-format-facts' data-dtype='{html.escape(dtype, quote=True)}'>"
            f"<b>{html.escape(dtype)}</b></div>",
            "".join(parts),
        )


def table(rows: list[dict[str, Any]], digits: int = MEASURE_DIGITS) -> str:
    """:func:`numbers.table_html` of ``rows`` whose headers and words may wrap after an underscore
    (``max_ulp_steps`` over two lines, never cut inside a word), so that the table fits its panel.

    >>> table([{"max_ulp_steps": 1}]).split("<tbody>")[0]
    '<table class="px-table px-fit px-num-col-1"><thead><tr><th>max_<wbr>ulp_<wbr>steps</th></tr></thead>'
    """
    markup = numbers.table_html(rows, missing_reasons=MISSING_REASONS, digits=digits, css_class=FIT)
    return re.sub(r">[^<>]+<", lambda m: m.group(0).replace("_", "_<wbr>"), markup)


def fold(summary: str, markup: str) -> str:
    """``markup`` in a closed details element whose summary is ``summary`` (escaped)."""
    return f"<details class='px-more-columns'><summary>{html.escape(summary)}</summary>{markup}</details>"


def backend_tables(summaries: list[Any]) -> list[str]:
    """The per-backend table (:data:`NEWCOMER_COLUMNS`; a backend that did not run has its status
    beside its name and its error below the table) and the other columns folded below it."""
    rows = [b.to_dict() for b in summaries]
    main = []
    for row in rows:
        name = str(row["backend"])
        if row.get("status") != "ok":
            name = numbers.Markup(
                f"{html.escape(name)} <span class='px-status-word'>"
                f"({html.escape(str(row.get('status')))})</span>"
            )
        main.append({"backend": name, **{c: row.get(c) for c in NEWCOMER_COLUMNS[1:]}})
    more = [{"backend": row["backend"], **{c: row.get(c) for c in MORE_COLUMNS}} for row in rows]
    failed = "".join(
        f"<p class='px-compare-note'>{html.escape(str(row['backend']))} did not run "
        f"({html.escape(str(row.get('status')))}): {html.escape(str(row.get('error') or ''))}</p>"
        for row in rows
        if row.get("status") != "ok"
    )
    return [table(main), failed, fold("more columns: status, means, NaN mismatches", table(more))]


def disagreements_html(result: Any) -> str:
    """How many inputs the backends that ran disagree on (the first 30 folded), or, with fewer
    than two backends that ran, that nothing was compared."""
    ran = list(result.results)
    if len(ran) < 2:
        who = ran[0] if ran else "no backend"
        return (
            f"<p class='px-compare-note'>Only {html.escape(who)} ran, so there is no other backend "
            "to compare with.</p>"
        )
    count = result.n_disagreements()
    if not count:
        same = html.escape(", ".join(ran))
        return f"<p class='px-compare-note'>{same} give the same result on every input.</p>"
    first = table(result.disagreements(limit=30), digits=numbers.DIGITS)
    return (
        f"<p class='px-compare-note'>{count:,} input{'' if count == 1 else 's'} where "
        f"{html.escape(', '.join(ran))} give different results.</p>"
        + fold(f"the first {min(count, 30)} of them, with the correctly rounded reference", first)
    )


def summation_tables(study: Any) -> list[str]:
    """The summation table (:data:`SUM_COLUMNS`) and the pairwise sums folded below it."""
    rows = [
        {
            "accumulator": acc,
            "sequential sum": study.final[acc],
            "pairwise sum": study.pairwise.get(acc),
            "exact": study.exact_final,
            "stagnated at": study.stagnation[acc].value if study.stagnation[acc].stagnated else None,
        }
        for acc in study.running
    ]
    main = [{c: row[c] for c in SUM_COLUMNS} for row in rows]
    more = [{c: row[c] for c in ("accumulator", "pairwise sum")} for row in rows]
    # the sums differ in their last digits
    return [table(main, digits=8), fold("more columns: the pairwise sum", table(more, digits=8))]
