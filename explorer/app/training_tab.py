"""Training tab: pick policies, train them side by side in worker processes, watch the curves live, cancel.

Each selected policy trains in a worker process of its own
(:func:`explorer.training.parallel.train_in_workers`): the visitor's kernel never
imports TensorFlow, the runs' curves grow together, and the machine-wide queue
(:mod:`explorer.training.queue`, ``$PX_TRAINING_SLOTS`` slots) keeps a room of
visitors from training more runs at once than the machine holds; a run that waits shows its
place in the queue.

One source of truth per run: its :class:`~explorer.training.parallel.RunStatus`.
The run's progress bar and line, the overall progress bar, its line and the status message
are all derived from the same snapshot of those statuses (:meth:`TrainingTab.sync_progress`).

The gradient-histogram panel compares the runs at one step: the latest step at which every
Keras run that has taken a histogram has one (:func:`comparable_histograms`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import ipywidgets as widgets

from explorer.app.jobs import Job, JobContext
from explorer.app.render import message_html, table_html
from explorer.app.tab import Tab
from explorer.runtime.threads import start_daemon
from explorer.training import FP8_POLICY, POLICIES
from explorer.training.parallel import RunStatus, overall_fraction, overall_line, train_in_workers
from explorer.training.queue import TrainingQueue
from explorer.training.workers import WorkerJob

#: Seconds between two live redraws while training.
REDRAW_INTERVAL = 1.5
_BAR_STYLES = {"done": "success", "cancelled": "warning", "failed": "danger", "queued": "info"}


@dataclass
class LiveRun:
    """The records of one run so far, in the shape the training plots read."""

    policy: str
    epochs: list[Any] = field(default_factory=list)
    steps: list[Any] = field(default_factory=list)
    histograms: list[Any] = field(default_factory=list)

    @property
    def label(self) -> str:
        """The legend label (the policy)."""
        return self.policy


def comparable_histograms(runs: Sequence[LiveRun]) -> tuple[int | None, list[LiveRun]]:
    """``(step, runs)``: the latest step at which every run that has a histogram has one, and
    the runs with only that step's histogram kept (None and empty histograms when there is
    no such step).

    >>> from types import SimpleNamespace as H
    >>> a = LiveRun("a", histograms=[H(step=0), H(step=10), H(step=20)])
    >>> b = LiveRun("b", histograms=[H(step=0), H(step=10)])
    >>> step, shown = comparable_histograms([a, b, LiveRun("fp8")])
    >>> step, [[h.step for h in r.histograms] for r in shown]
    (10, [[10], [10], []])
    """
    taken = [{h.step for h in r.histograms} for r in runs if r.histograms]
    common = set.intersection(*taken) if taken else set()
    step = max(common) if common else None
    return step, [
        LiveRun(r.policy, r.epochs, r.steps, [h for h in r.histograms if h.step == step]) for r in runs
    ]


#: hover text of the results table's empty cells, by column
SUMMARY_MISSING = {
    "loss": "no epoch finished yet",
    "val_accuracy": "no epoch finished yet",
    "loss_scale": "this policy trains without loss scaling",
    "grad zero fraction": "not recorded for this run",
}


class TrainingTab(Tab):
    """Mixed-precision training of a small model on scikit-learn's digits, under each policy."""

    title = "Training"
    key = "training"
    fields = ("policies",)
    intro = (
        "Will it still train? A small model on scikit-learn's digits under each precision policy: "
        "loss, accuracy, loss scale, gradients that underflow."
    )

    def build(self) -> None:
        self.policies = widgets.SelectMultiple(
            options=list(self.state.policy_choices),
            value=self.state.policies,
            description="Policies",
            rows=7,
            layout=widgets.Layout(width="330px"),
        )
        self.policies.add_class("px-policies")
        self.model = widgets.Dropdown(
            options=["mlp", "cnn"], value="mlp", description="Model", layout=widgets.Layout(width="180px")
        )
        self.model.add_class("px-model")
        self.scenario = widgets.Dropdown(
            options=["default", "underflow"],
            value="default",
            description="Scenario",
            layout=widgets.Layout(width="220px"),
        )
        self.scenario.add_class("px-scenario")
        self.epochs = widgets.BoundedIntText(
            value=5, min=1, max=50, description="Epochs", layout=widgets.Layout(width="160px")
        )
        self.epochs.add_class("px-epochs")
        self.train_button = widgets.Button(
            description="Train", button_style="primary", tooltip="train the model under each selected policy"
        )
        self.train_button.add_class("px-train")
        self.panel = self.job_panel()
        #: one progress bar and line per run
        self.run_bars = widgets.VBox([])
        self.run_bars.add_class("px-training-runs")
        self.train_button.on_click(lambda _: self.start())
        self.policies.observe(self._policies_changed, names="value")
        self.state.observe(self._follow_state, names=("policies",))
        self.toolbar.children = [
            widgets.HBox(
                [self.policies, widgets.VBox([self.model, self.scenario, self.epochs, self.train_button])]
            ),
            widgets.VBox([self.panel.widget, self.run_bars]),
        ]
        self.runs: dict[str, LiveRun] = {}
        self.results: list[Any] = []
        self.job: Job | None = None
        #: each run's status (the one source of its progress)
        self.statuses: dict[str, RunStatus] = {}
        #: the queue runs go through (None: the machine-wide one, made when a run starts)
        self.queue: TrainingQueue | None = None
        #: extra TrainingConfig fields for every run (tests: ``max_train_samples``)
        self.extra_config: dict[str, Any] = {}
        self._bars: dict[str, tuple[widgets.FloatProgress, widgets.Label]] = {}
        self._overall = ""
        self._runs_lock = threading.Lock()
        #: orders the progress writes as their snapshots (a redraw's older one never lands last)
        self._progress_lock = threading.RLock()

    # ------------------------------------------------------------------ state binding

    def _policies_changed(self, change: dict[str, Any]) -> None:
        try:
            self.state.set(policies=change["new"])
        except ValueError as exc:
            self.show_message(str(exc), "warning")
            self.policies.value = self.state.policies

    def _follow_state(self, changes: dict[str, Any]) -> None:
        if tuple(self.policies.value) != self.state.policies:
            self.policies.value = self.state.policies

    # ------------------------------------------------------------------ training

    def start(self, wait: bool = False) -> Job:
        """Train the selected policies in worker processes (returns the job; ``wait=True`` joins it)."""
        if self.job is not None and self.job.running:
            raise RuntimeError("a training run is already going; cancel it first")
        policies = tuple(self.state.policies)
        config = {
            "model": self.model.value,
            "scenario": self.scenario.value,
            "epochs": int(self.epochs.value),
            **self.extra_config,
        }
        jobs = [WorkerJob(p, config) for p in policies]
        with self._runs_lock:
            self.runs = {p: LiveRun(p) for p in policies}
            self.statuses = {p: RunStatus(p) for p in policies}
            self.results = []
        self._build_bars(policies)
        self.job = Job("training", lambda ctx: self._train(ctx, jobs))
        self.panel.attach(self.job)
        self.job.on_done(self._finished)
        self.train_button.disabled = True
        self.sync_progress()
        self.job.start()
        self.sync_progress()
        if wait:
            self.job.wait()
        return self.job

    def cancel(self) -> None:
        """Stop the runs: waiting ones leave the queue, running workers stop (killed if slow)."""
        if self.job is not None:
            self.job.cancel()

    def _build_bars(self, policies: Sequence[str]) -> None:
        self._bars = {}
        rows = []
        for policy in policies:
            bar = widgets.FloatProgress(value=0.0, min=0.0, max=1.0, layout=widgets.Layout(width="160px"))
            bar.add_class("px-training-run-progress").add_class(f"px-run-{policy}")
            label = widgets.Label("").add_class("px-training-run-label")
            self._bars[policy] = (bar, label)
            rows.append(
                widgets.HBox([widgets.Label(policy, layout=widgets.Layout(width="200px")), bar, label])
            )
        self.run_bars.children = rows

    def _train(self, ctx: JobContext, jobs: list[WorkerJob]) -> list[Any]:
        start_daemon(self._redraw_loop, ctx, name="px-training-redraw")
        queue = self.queue if self.queue is not None else TrainingQueue()

        def on_status(status: RunStatus) -> None:
            with self._runs_lock:
                before = self.statuses.get(status.policy)
                self.statuses[status.policy] = status
            if before is None or before.state != status.state or before.place != status.place:
                self.sync_progress(ctx)  # state changes at once; step counts with each redraw

        final = train_in_workers(
            jobs, queue=queue, on_record=self._add, on_status=on_status, cancel=ctx.cancel_event
        )
        results = [s.result for s in final if s.result is not None]
        with self._runs_lock:
            self.results = results
        failed = [s for s in final if s.state == "failed"]
        if failed:
            raise RuntimeError("; ".join(f"{s.policy}: {s.error}" for s in failed))
        return results

    def _add(self, policy: str, record: Any) -> None:
        with self._runs_lock:
            run = self.runs.setdefault(policy, LiveRun(policy))
            kind = getattr(record, "kind", "")
            {"epoch": run.epochs, "step": run.steps, "histogram": run.histograms}.get(kind, run.steps).append(
                record
            )

    def sync_progress(self, ctx: JobContext | None = None) -> str:
        """Draw every run's bar and line, the overall bar and line, and the status message from one
        snapshot of the runs' statuses; returns the overall line."""
        with self._progress_lock:
            with self._runs_lock:
                statuses = list(self.statuses.values())
            line = overall_line(statuses)
            self._overall = line
            for status in statuses:
                pair = self._bars.get(status.policy)
                if pair is not None:
                    bar, label = pair
                    bar.value = status.fraction
                    bar.bar_style = _BAR_STYLES.get(status.state, "")
                    label.value = status.describe()
            if ctx is not None:
                ctx.progress(overall_fraction(statuses), line)  # ignored once the job has ended
            if self.job is not None and self.job.running:
                self.show_message(f"Training: {line}", "loading")
        return line

    def _redraw_loop(self, ctx: JobContext) -> None:
        """Every REDRAW_INTERVAL s while the job runs: the progress, and the figure when records came."""
        drawn = -1
        job = self.job
        while job is not None and not job.done:
            time.sleep(REDRAW_INTERVAL)
            if not job.running:
                break
            self.sync_progress(ctx)
            with self._runs_lock:
                count = sum(len(r.steps) + len(r.epochs) for r in self.runs.values())
            if count != drawn:
                drawn = count
                self.refresh()

    def _finished(self, job: Job) -> None:
        with self._runs_lock:  # no run is left "starting its worker" once the job has ended
            for policy, status in self.statuses.items():
                if not status.finished:
                    ended = "failed" if job.status == "failed" else "cancelled"
                    self.statuses[policy] = replace(status, state=ended, error=job.error)
        self.sync_progress()
        self.refresh()
        if job.status == "failed":
            self.show_message(f"Training failed: {job.error}", "error")
        elif job.status == "cancelled":
            self.show_message("Training cancelled; the curves show what ran.", "warning")
        self.train_button.disabled = False  # last: once Train is back, the view is final

    # ------------------------------------------------------------------ drawing

    def render(self) -> None:
        from explorer.plots.training import live_training_figure

        with self._runs_lock:
            runs = [
                LiveRun(r.policy, list(r.epochs), list(r.steps), list(r.histograms))
                for r in self.runs.values()
            ]
            statuses = dict(self.statuses)
        running = self.job is not None and self.job.running
        if running:
            self.show_message(f"Training: {self._overall}", "loading")
        if not any(r.steps or r.epochs for r in runs):
            self.clear_figure()
            if not running:
                self.show_message(
                    "Pick policies and press Train: a small model learns scikit-learn's digits under "
                    "each precision policy, each in a process of its own; curves appear live.",
                    "info",
                )
            self.show_html(self._policy_table())
            return
        step, shown = comparable_histograms(runs)
        self.show_figure(live_training_figure(shown, without_loss_scale=(FP8_POLICY,)), "training curves")
        self.show_html(self._summary_table(runs, statuses, step))

    def _policy_table(self) -> str:
        rows = [{"policy": s.name, "what it does": s.doc} for s in POLICIES.values()]
        rows.append(
            {
                "policy": FP8_POLICY,
                "what it does": "emulated fp8 (NumPy + ml_dtypes): E4M3 forward, "
                "E5M2 gradients, per-tensor delayed scaling",
            }
        )
        return table_html(rows)

    def _summary_table(self, runs: list[LiveRun], statuses: dict[str, RunStatus], step: int | None) -> str:
        rows = []
        for r in runs:
            last = r.epochs[-1] if r.epochs else None
            status = statuses.get(r.policy)
            rows.append(
                {
                    "policy": r.policy,
                    "run": status.describe() if status is not None else "",
                    "epochs": len(r.epochs),
                    "loss": getattr(last, "loss", None),
                    "val_accuracy": getattr(last, "val_accuracy", None),
                    "loss_scale": getattr(last, "loss_scale", None),
                    "grad zero fraction": getattr(
                        last, "grad_zero_fraction", getattr(last, "grad_underflow_fraction", None)
                    ),
                }
            )
        where = (
            f"all at step {step}, the latest step every Keras run with a histogram has reached"
            if step is not None
            else "none yet"
        )
        from explorer.app import numbers

        return numbers.table_html(rows, missing_reasons=SUMMARY_MISSING, digits=4) + message_html(
            "Loss scale: Keras' LossScaleOptimizer (dynamic). Histograms: log2 |g| "
            f"of all gradient elements vs each format's range ({where}; the emulated fp8 run records none).",
            "info",
        )
