"""The Your model tab's "Keep in higher precision" panel: which layers of the model picked to
keep in higher precision for a low-precision format, under a budget.

Formats and a keep-budget slider, a Run button; the advice
(:func:`explorer.queries.advise_view.advise_builtin`, or
:func:`explorer.queries.advise.advise_precision` for ``explorer.App(model=...)``) runs in a
background :class:`~explorer.app.jobs.Job` with its progress and a Cancel button; then the
sensitivity plot (:func:`explorer.plots.advise.plot_sensitivity`), per format the recipe and
its measured metric beside the three baselines, and the recipe as code.  Every string shown is
escaped.
"""

from __future__ import annotations

import contextlib
import html
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from explorer.app.jobs import Job

if TYPE_CHECKING:
    from explorer.queries.advise import PrecisionAdvice

#: the formats ticked at first
DEFAULT_FORMATS: tuple[str, ...] = ("mxfp4_e2m1", "nvfp4")


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _n(value: float) -> str:
    """A number as the table writes it (6 significant digits; inf and nan as words)."""
    return _e(f"{value:.6g}")


def choices_html(advice: PrecisionAdvice) -> str:
    """Per format: the recipe and the three baselines (kept layers, kept share, bits per
    weight, the metric measured and its error), then the recipe as code."""
    from explorer.queries.advise_view import choice_rows, metric_words

    parts = [
        f"<p class='px-advise-metric'>{_e(metric_words(advice))}. Budget: {_e(advice.budget.describe())}; "
        f"kept layers run in {_e(advice.keep)}. Covered layers: {_e(advice.covered)}.</p>"
    ]
    for fmt in advice.formats:
        rows = [
            f"<tr><td>{_e(r.choice)}</td><td>{_e(', '.join(r.kept) or 'none')}</td>"
            f"<td>{_n(r.kept_fraction)}</td><td>{_n(r.bits_per_param)}</td>"
            f"<td>{_n(r.value)}</td><td>{_n(r.error)}</td></tr>"
            for r in choice_rows(advice, fmt)
        ]
        code = advice.for_format(fmt).code
        parts.append(
            f"<h4 class='px-advise-format'>{_e(fmt)}</h4>"
            f"<table class='px-advise-table' data-format='{_e(fmt)}' style='border-collapse:collapse;"
            "font-size:85%'><tr><th>choice</th><th>kept in higher precision</th><th>kept share</th>"
            f"<th>bits per weight</th><th>value</th><th>error</th></tr>{''.join(rows)}</table>"
            f"<p>The recipe as code to paste:</p><pre class='px-advise-code'>{_e(code)}</pre>"
        )
    return "".join(parts)


class AdvicePanel:
    """Controls, progress and results of the advice for the tab's model picked."""

    def __init__(self, tab: Any) -> None:
        from explorer.analysis.precision_advice import ADVICE_FORMATS

        self.tab = tab
        self.formats = widgets.SelectMultiple(
            options=list(ADVICE_FORMATS), value=DEFAULT_FORMATS, rows=5, description="Formats"
        )
        self.formats.add_class("px-advise-formats")
        self.budget = widgets.FloatSlider(
            value=0.1, min=0.0, max=0.5, step=0.01, description="Keep budget", readout_format=".2f",
            tooltip="the largest share of the covered weights kept in higher precision",
        )  # fmt: skip
        self.budget.add_class("px-advise-budget")
        self.trained = widgets.Checkbox(value=True, description="cnn: trained on the digits (accuracy)")
        self.trained.add_class("px-advise-trained")
        self.run_button = widgets.Button(
            description="Run", button_style="info", tooltip="find which layers to keep"
        )
        self.run_button.add_class("px-advise-run")
        self.run_button.on_click(lambda _: self.run())
        self.job_panel = tab.job_panel()
        self.message = widgets.HTML("").add_class("px-advise-message")
        self.plot = widgets.Output().add_class("px-advise-plot")
        self.details = widgets.HTML("").add_class("px-advise-details")
        intro = widgets.HTML(
            "<h3>Keep in higher precision</h3><p>Which layers to keep in higher precision when the "
            "others go to a low-precision format: each covered layer alone quantized (its error "
            "against the float32 model), the layers to keep under the budget found by an integer "
            "program, then that recipe run with all its layers quantized together, beside every "
            "layer quantized, the first and last kept, and a random choice of the same budget.</p>"
        )
        self.widget = widgets.VBox(
            [
                intro,
                widgets.HBox([self.formats, widgets.VBox([self.budget, self.trained, self.run_button])]),
                self.job_panel.widget,
                self.message,
                self.plot,
                self.details,
            ]
        )
        self.widget.add_class("px-advise")
        self.job: Job | None = None
        #: the advice shown, and what it was run on
        self.advice: PrecisionAdvice | None = None
        self.figure: Any = None
        #: what the last run was asked for, in words
        self.what = ""
        tab.source.observe(lambda _: self._source_changed(), names="value")
        self._source_changed()

    def _source_changed(self) -> None:
        self.trained.disabled = self.tab.source.value != "cnn"

    def run(self, wait: bool = False) -> Job | None:
        """Advise on the tab's model picked, in the background (``wait``: until shown).
        Returns the job, or None when one runs already (the click is ignored)."""
        if self.job is not None and self.job.running:
            return None
        from explorer.app.model_tab import USER_MODEL

        source, framework = self.tab.picked
        formats = tuple(self.formats.value)
        budget = float(self.budget.value)
        if not formats:
            self.message.value = "<div class='px-msg px-msg-warning'>Pick at least one format.</div>"
            return None
        trained = source == "cnn" and bool(self.trained.value)
        user = self.tab.ctx.user_model if source == USER_MODEL else None

        def work(ctx: Any) -> PrecisionAdvice:
            from explorer.queries.advise import advise_precision
            from explorer.queries.advise_view import advise_builtin

            def progress(done: int, total: int, what: str) -> None:
                ctx.check()  # a Cancel ends the advice here
                ctx.progress_steps(done, total, what)

            if user is not None:
                model, inputs = user
                try:
                    return advise_precision(model, inputs, formats=formats, budget=budget, progress=progress)
                except (KeyboardInterrupt, Exception):
                    raise
                except BaseException as exc:  # SystemExit... from the user's code: a failure shown
                    raise RuntimeError(f"your model raised {type(exc).__name__}: {exc}") from None
            return advise_builtin(
                source, framework, trained=trained, formats=formats, budget=budget, progress=progress
            )

        what = "your model" if user is not None else f"{source}{' trained' if trained else ''} ({framework})"
        self.what = f"{what}, {', '.join(formats)}, keep budget {budget:.2f}"
        self.run_button.disabled = True
        self.message.value = (
            f"<div class='px-msg px-msg-loading'>Advising on {_e(self.what)} in a background thread: "
            "each layer alone in each format, then four choices per format…</div>"
        )
        self.job = Job("keep in higher precision", work)
        self.job_panel.attach(self.job)
        self.job.on_done(self._done)
        self.job.start()
        if wait:
            with contextlib.suppress(Exception):  # a failure is shown in the panel
                self.job.wait()
        return self.job

    def _done(self, job: Job) -> None:
        self.run_button.disabled = False
        if job.status != "done":
            self.message.value = (
                f"<div class='px-msg px-msg-error'>The advice did not finish ({_e(job.status)}): "
                f"{_e(job.error or '')}</div>"
            )
            return
        self.show(job.result)

    def show(self, advice: PrecisionAdvice) -> None:
        """Show ``advice``: the sensitivity plot, the table per format and the code."""
        from explorer.app import render
        from explorer.plots.advise import plot_sensitivity
        from explorer.queries.advise_view import sensitivity_grid

        layers, formats, errors = sensitivity_grid(advice)
        fig = plot_sensitivity(layers, formats, errors, metric=advice.metric)
        self.advice, self.figure = advice, fig
        self.plot.outputs = (render.figure_bundle(fig, "the error each layer adds alone in each format"),)
        self.details.value = choices_html(advice)
        self.message.value = (
            f"<div class='px-msg px-msg-info'>Advice for {_e(self.what)}: "
            f"{len(layers)} covered layers, {advice.seconds.get('total', 0.0):.1f} s.</div>"
        )
