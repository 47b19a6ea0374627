"""Accuracy tab: the error against the correctly rounded float64 reference, per backend, by two
named measures (ulp_steps and ulp_error), and accumulation: the running sum of 10,000 terms in a
low-precision accumulator vs float32.  One panel per selected dtype, side by side (at most
:data:`~explorer.app.tab.MAX_PANELS`, the others named)."""

from __future__ import annotations

import html
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
        self._answers: list[str] = []
        panels = [self._panel(op, dtype, backends) for dtype in dtypes]
        self.show_answer(self._answers)
        definitions = ""
        if op is not None:
            from explorer.queries.accuracy import DEFINITIONS

            definitions = (
                "<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in DEFINITIONS.values()) + "</ul>"
            )
        if len(panels) == 1:
            self.show_cached_figure(panels[0].key, panels[0].build, "accuracy")
            self.show_html(panels[0].details + definitions)
        else:
            self.show_panels(panels, "accuracy")
            self.show_html(definitions)
        if notes:
            self.show_message(" ".join(notes), "info")

    def _panel(self, op: Any, dtype: str, backends: tuple[str, ...]) -> Panel:
        from explorer.analysis.accumulation import summation_study
        from explorer.plots.accuracy import accuracy_figure

        study = self.ctx.cache.get(("summation", dtype), lambda: summation_study(dtype))
        parts: list[str] = []
        result = None
        if op is not None:
            from explorer.queries.accuracy import accuracy_from_sweep

            sweep = cached_sweep(self.ctx, op.name, dtype, backends)
            result = self.ctx.cache.get(
                ("accuracy", op.name, dtype, backends), lambda: accuracy_from_sweep(sweep)
            )
            from explorer.queries.answers import accuracy_answer

            self._answers.append(accuracy_answer(op.name, dtype, result.backends))
            disagreements = result.disagreements(limit=30)
            parts += [
                f"<h4>Error of {html.escape(op.name)} in {html.escape(dtype)} per backend: "
                "ulp_steps and ulp_error</h4>",
                numbers.table_html(
                    [b.to_dict() for b in result.backends],
                    missing_reasons=MISSING_REASONS,
                    digits=MEASURE_DIGITS,
                ),
                f"<h4>Inputs where backends give different results ({result.n_disagreements()})</h4>",
                numbers.table_html(disagreements)
                if disagreements
                else "<p>none: every backend that ran agrees.</p>",
            ]
        parts += [
            f"<h4>Summing {study.n:,} {html.escape(study.distribution)} terms in {html.escape(dtype)}</h4>",
            numbers.table_html(
                [
                    {
                        "accumulator": acc,
                        "sequential sum": study.final[acc],
                        "pairwise sum": study.pairwise.get(acc),
                        "exact": study.exact_final,
                        "stagnated at": (
                            study.stagnation[acc].value if study.stagnation[acc].stagnated else None
                        ),
                    }
                    for acc in study.running
                ],
                missing_reasons=MISSING_REASONS,
                digits=8,  # the sums differ in their last digits
            ),
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
