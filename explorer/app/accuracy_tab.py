"""Accuracy tab: the error against the correctly rounded float64 reference, per backend, by two
named measures (ulp_steps and ulp_error), and accumulation: the running sum of 10,000 terms in a
low-precision accumulator vs float32."""

from __future__ import annotations

import html
from typing import Any

from explorer.app.render import table_html
from explorer.app.sweeps import cached_sweep, elementwise_op, sweep_backends
from explorer.app.tab import Tab


class AccuracyTab(Tab):
    """ULP error per backend for the selected op in the first selected dtype, and the
    accumulation study (sequential sum in the dtype's own accumulator) for that dtype."""

    title = "Accuracy"
    key = "accuracy"
    fields = ("op", "dtypes", "backends")
    intro = (
        "How accurate is each backend? Its error against the correctly rounded float64 reference, in "
        "ulp_steps (representable values apart) and ulp_error (|y - f(x)| / ulp(f(x)), at most 0.5 "
        "when correctly rounded), and what a low-precision accumulator does to a long sum."
    )

    def on_tensorflow_loaded(self, app: Any) -> None:
        if "tensorflow" in self.state.backends:
            self.dirty = True

    def render(self) -> None:
        from explorer.analysis.accumulation import summation_study
        from explorer.plots.accuracy import accuracy_figure

        dtype = self.state.dtype
        study = self.ctx.cache.get(("summation", dtype), lambda: summation_study(dtype))
        op = elementwise_op(self.state.op)
        parts: list[str] = []
        note = ""
        result = None
        backends: tuple[str, ...] = ()
        if op is None:
            note = (
                f"{self.state.op} is not an elementwise op: ULP accuracy is measured for elementwise ops "
                "(exp, log, tanh, add, mul, …); the accumulation study below is for any op."
            )
        else:
            from explorer.analysis.accuracy import DEFINITIONS, accuracy_from_sweep

            backends, note = sweep_backends(self.ctx)
            sweep = cached_sweep(self.ctx, op.name, dtype, backends)
            result = self.ctx.cache.get(
                ("accuracy", op.name, dtype, backends), lambda: accuracy_from_sweep(sweep)
            )
            disagreements = result.disagreements(limit=30)
            parts += [
                "<h4>Error per backend: ulp_steps and ulp_error</h4>",
                table_html([b.to_dict() for b in result.backends]),
                "<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in DEFINITIONS.values()) + "</ul>",
                f"<h4>Inputs where backends give different results ({result.n_disagreements()})</h4>",
                table_html(disagreements) if disagreements else "<p>none: every backend that ran agrees.</p>",
            ]
        key = ("accuracy", op.name if op else None, dtype, backends)
        self.show_cached_figure(key, lambda: accuracy_figure(result, study), "accuracy")
        parts += [
            f"<h4>Summing {study.n:,} {study.distribution} terms in {dtype}</h4>",
            table_html(
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
                ]
            ),
        ]
        self.show_html("".join(parts))
        if note:
            self.show_message(note, "info")
