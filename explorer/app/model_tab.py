"""Your model tab: a built-in model (or the user's own, ``explorer.App(model=m, example_inputs=x)``)
checked under each precision policy: the first problem in words, the largest |activation| per
layer against each format's range, the ops grouped by layer with the verdict per policy, and,
for the op picked, its kernel history and the workaround that was run.

The check is :func:`explorer.queries.model_check.check_model` (through
:mod:`explorer.queries.model_view`); it runs in a background :class:`Job`, and the tab says so
while it runs.  Every string shown is escaped.
"""

from __future__ import annotations

import contextlib
import html
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from explorer.app.jobs import Job
from explorer.app.tab import Tab

if TYPE_CHECKING:
    from explorer.queries.model_check import ModelCheck
    from explorer.queries.model_view import OpDetail

#: the source value of the model passed to ``explorer.App(model=...)``
USER_MODEL = "your model"
#: background and text colour of each verdict word in the table
VERDICT_COLORS: dict[str, tuple[str, str]] = {
    "fits": ("#e6f4ea", "#1e4620"),
    "float32": ("#eef2f7", "#333333"),
    "underflows": ("#fff4ce", "#5c4400"),
    "loses_gradients": ("#ffe0b2", "#6b3a00"),
    "overflows": ("#fde0e0", "#8b0000"),
    "fails": ("#cc0000", "#ffffff"),
}


def _e(value: Any) -> str:
    """Escaped text of any value (None as an em dash)."""
    return "—" if value is None or value == "" else html.escape(str(value), quote=True)


def _number(value: float | None) -> str:
    from explorer.analysis.model_numerics import number_text

    return "—" if value is None else _e(number_text(value))


def _verdict_cell(word: str) -> str:
    background, ink = VERDICT_COLORS.get(word, ("transparent", "#333333"))
    return f"<td style='background:{background};color:{ink};padding:1px 6px'>{_e(word)}</td>"


def table_html(check: ModelCheck) -> str:
    """The ops grouped by layer: a row per layer (its largest |activation| and worst verdict per
    policy), then its op instances (dtype and verdict per policy)."""
    from explorer.queries.model_view import layer_groups, policy_verdict

    policies = check.policies
    head = "".join(f"<th>{_e(p)}</th>" for p in policies)
    rows = [
        "<table class='px-model-table' style='border-collapse:collapse;font-size:85%'>"
        "<tr><th>#</th><th>layer / raw op</th><th>op</th><th>dtype per policy</th><th>max |act|</th>"
        f"{head}</tr>"
    ]
    for group in layer_groups(check):
        cells = "".join(_verdict_cell(group.verdicts[p]) for p in policies)
        rows.append(
            f"<tr class='px-model-layer' style='border-top:1px solid #999;font-weight:bold'>"
            f"<td></td><td colspan='3'>{_e(group.layer)}</td><td>{_number(group.max_abs)}</td>{cells}</tr>"
        )
        for op in group.ops:
            dtypes = " / ".join(str(op.dtype.get(p) or "-") for p in policies)
            verdicts = "".join(_verdict_cell(policy_verdict(op, p)) for p in policies)
            moved = " <span style='color:#777'>(data movement)</span>" if op.data_movement else ""
            rows.append(
                f"<tr class='px-model-op' data-index='{op.index}'><td>{op.index}</td>"
                f"<td style='padding-left:14px'>{_e(op.raw_op)}{moved}</td><td>{_e(op.op)}</td>"
                f"<td>{_e(dtypes)}</td><td>{_number(op.max_abs)}</td>{verdicts}</tr>"
            )
    rows.append("</table>")
    return "".join(rows)


def detail_html(detail: OpDetail, policies: tuple[str, ...]) -> str:
    """One op instance: its kernel per policy and device, its history across TensorFlow
    releases, and the problems found at it with the workaround that was run."""
    from explorer.app.explain_tab import history_colors

    op = detail.op
    parts = [
        f"<div class='px-model-op-detail'><p><b>#{op.index} {_e(op.raw_op)}</b> in layer "
        f"<code>{_e(op.layer or '(model)')}</code> (catalog op: {_e(op.op)})</p><ul>"
    ]
    for policy in policies:
        for device, kernel in op.kernel.get(policy, {}).items():
            release = (
                f", first shipped release with a kernel: {kernel.first_release}"
                if kernel.first_release
                else ""
            )
            error = f" — {kernel.error.splitlines()[0]}" if kernel.error else ""
            parts.append(
                f"<li>{_e(policy)} on {_e(device)} ({_e(op.dtype.get(policy))}): declared "
                f"{_e(kernel.declared or 'no declaration')}, run {_e(kernel.run)}"
                f"{html.escape(release + error)}</li>"
            )
    parts.append("</ul>")
    for cell in detail.history:
        strip = []
        for entry in cell.history:
            background, ink = history_colors(str(entry.status))
            strip.append(
                f"<td style='padding:1px 4px;background:{background};color:{ink}'>{_e(entry.version)}</td>"
            )
        first = cell.first_release_with_kernel or "none"
        parts.append(
            f"<p class='px-model-history'>{_e(cell.title)}: first release with a kernel <b>{_e(first)}</b>"
            f"<table style='border-collapse:separate;border-spacing:2px;font-size:80%'><tr>{''.join(strip)}"
            "</tr></table></p>"
        )
    if detail.history_note:
        parts.append(f"<p style='color:#555'>{_e(detail.history_note)}</p>")
    if detail.problems:
        for problem in detail.problems:
            fix = problem.workaround or "no workaround was run that works"
            parts.append(
                f"<p class='px-model-workaround'><b>{_e(problem.kind)} under {_e(problem.policy)}</b>: "
                f"{_e(problem.detail)}. <b>Workaround:</b> {_e(fix)}</p>"
            )
    else:
        parts.append("<p class='px-model-workaround'>No problem found at this op or its layer.</p>")
    parts.append("</div>")
    return "".join(parts)


class ModelTab(Tab):
    """Pick a model, press Check; the first problem, the plot, the table and one op's details."""

    title = "Your model"
    key = "model"
    fields: tuple[str, ...] = ()
    intro = (
        "Will my model run, and where does it break? Each op of a model under each precision policy: "
        "its kernel, what mixed precision does to it, its largest value against each format, the first "
        "problem and a workaround that was run here."
    )

    def build(self) -> None:
        from explorer.queries.model_view import builtin_choices

        user = self.ctx.user_model
        options, frameworks = builtin_choices()
        if user is not None:
            options.insert(0, (f"{USER_MODEL} (explorer.App(model=...))", USER_MODEL))
        self.source = widgets.Dropdown(
            options=options, description="Model", layout=widgets.Layout(width="560px")
        )
        self.source.add_class("px-model-source")
        self.framework = widgets.Dropdown(options=list(frameworks), description="Framework")
        self.framework.add_class("px-model-framework")
        self.check_button = widgets.Button(
            description="Check", button_style="info", tooltip="check the model"
        )
        self.check_button.add_class("px-model-check")
        self.check_button.on_click(lambda _: self.check())
        self.working = widgets.Label("").add_class("px-model-working")
        self.problem = widgets.HTML("").add_class("px-model-problem")
        self.op_picker = widgets.Select(
            options=[], description="Op", rows=8, layout=widgets.Layout(width="560px")
        )
        self.op_picker.add_class("px-model-op-picker")
        self.op_picker.observe(lambda _: self._show_op(), names="value")
        self.op_details = widgets.HTML("").add_class("px-model-op-details")
        self.source.observe(self._source_changed, names="value")
        self.framework.observe(lambda _: self._source_changed(), names="value")
        self.toolbar.layout = widgets.Layout(flex_flow="column", width="100%")
        self.toolbar.children = [
            widgets.HBox([self.source, self.framework]),
            widgets.HBox([self.check_button, self.working]),
            self.problem,
        ]
        self.picker_box = widgets.VBox([self.op_picker, self.op_details])
        self.widget.children = (*self.widget.children, self.picker_box)
        from explorer.app.advise_panel import AdvicePanel

        #: "Keep in higher precision" (explorer/app/advise_panel.py)
        self.advise_panel = AdvicePanel(self)
        self.widget.children = (*self.widget.children, self.advise_panel.widget)
        #: the checks made, by (source, framework)
        self.checks: dict[tuple[str, str], ModelCheck] = {}
        self.failures: dict[tuple[str, str], str] = {}
        self.job: Job | None = None
        self._source_changed()

    @property
    def picked(self) -> tuple[str, str]:
        """(source, framework) of the model picked."""
        if self.source.value == USER_MODEL:
            return USER_MODEL, ""
        return str(self.source.value), str(self.framework.value)

    @property
    def result(self) -> ModelCheck | None:
        """The check of the model picked, once made."""
        return self.checks.get(self.picked)

    def _source_changed(self, _: object = None) -> None:
        self.framework.disabled = self.source.value == USER_MODEL
        self.dirty = True
        self.refresh()

    def check(self, wait: bool = False) -> Job | None:
        """Check the model picked in the background (``wait``: until it is shown).  Returns the
        job, or None when a check runs already (the click is ignored)."""
        if self.job is not None and self.job.running:
            return None
        from explorer.queries.model_check import check_model
        from explorer.queries.model_view import check_builtin

        key = self.picked
        source, framework = key
        if source == USER_MODEL:
            assert self.ctx.user_model is not None  # the source is offered only then
            model, inputs = self.ctx.user_model

            def work(ctx: Any) -> ModelCheck:
                try:
                    return check_model(model, inputs)
                except KeyboardInterrupt:
                    raise
                except Exception:
                    raise
                except BaseException as exc:  # SystemExit, GeneratorExit... from the user's code:
                    # a failure the tab shows (the job, catching Exception, would never finish)
                    raise RuntimeError(f"your model raised {type(exc).__name__}: {exc}") from None
        else:

            def work(ctx: Any) -> ModelCheck:
                return check_builtin(source, framework, in_worker=True)

        if source == USER_MODEL:
            where = "your model, in this kernel (a background thread)"
        else:
            where = f"{source} ({framework}) in a sandbox worker process, from a background thread"
        self.check_button.disabled = True
        self.working.value = (
            f"checking {where}: a forward and backward pass per policy, and the framework's import "
            "the first time; the other tabs stay usable…"
        )
        self.failures.pop(key, None)
        self.job = Job("model check", work)
        self.job.on_done(lambda job: self._done(job, key))
        self.show_message(self.working.value, "loading")
        self.job.start()
        if wait:
            with contextlib.suppress(RuntimeError):  # a failure is shown in the tab
                self.job.wait()
        return self.job

    def _done(self, job: Job, key: tuple[str, str]) -> None:
        if job.status == "done":
            self.checks[key] = job.result
        else:
            self.failures[key] = job.error or job.status
        self.check_button.disabled = False
        self.working.value = ""
        self.dirty = True
        self.refresh()

    def render(self) -> None:
        from explorer.plots.model import plot_layer_maxima
        from explorer.queries.model_view import first_problem_text, layer_maxima

        key = self.picked
        check = self.checks.get(key)
        if self.job is not None and self.job.running:
            self.show_message(self.working.value, "loading")
            return
        if key in self.failures:
            self._clear()
            self.show_message(f"The model could not be checked: {self.failures[key]}", "error")
            return
        if check is None:
            self._clear()
            if key[0] == USER_MODEL and self.job is None:
                self.check()  # the model passed to App(model=...) is checked when first shown
                return
            self.show_message("Pick a model and press Check.", "info")
            return
        problem = check.first_problem
        kind = "info" if problem is None else "warning"
        self.problem.value = (
            f"<div class='px-msg px-msg-{kind}' style='font-size:110%;padding:4px 0'>"
            f"<b>{'First problem' if problem else 'Result'}:</b> {_e(first_problem_text(check))}</div>"
        )
        layers, maxima = layer_maxima(check)
        self.show_cached_figure(
            (key, check.formats, tuple(layers)),
            lambda: plot_layer_maxima(layers, maxima, check.formats),
            "Largest |activation| per layer against each format's max and smallest normal",
        )
        notes = "".join(f"<li>{_e(n)}</li>" for n in check.notes)
        sentences = "".join(f"<li>{_e(s)}</li>" for s in check.summary)
        self.show_html(
            f"<p><b>{_e(check.framework_version)}</b>, per policy and device:</p><ul>{sentences}</ul>"
            + table_html(check)
            + (
                f"<p style='color:#555'>Notes (what was and was not observed here):</p><ul>{notes}</ul>"
                if notes
                else ""
            )
        )
        options = [
            (
                f"#{op.index} {op.layer or '(model)'} · {op.raw_op}"
                + (" (data movement)" if op.data_movement else ""),
                op.index,
            )
            for op in check.ops
        ]
        if list(self.op_picker.options) != options:
            self.op_picker.options = options
            first = problem.index if problem is not None and problem.index is not None else options[0][1]
            self.op_picker.value = first
        self._show_op()

    def _clear(self) -> None:
        self.problem.value = ""
        self.clear_figure()
        self.show_html("")
        self.op_picker.options = []
        self.op_details.value = ""

    def _show_op(self) -> None:
        from explorer.queries.model_view import op_detail

        check = self.result
        index = self.op_picker.value
        if check is None or index is None:
            self.op_details.value = ""
            return
        self.op_details.value = detail_html(op_detail(check, int(index)), check.policies)
