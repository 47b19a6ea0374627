"""Training tab: pick policies, train in the background, watch the curves live, cancel."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as widgets

from explorer.analysis.training import FP8_POLICY, POLICIES, run_policies
from explorer.app.jobs import Job, JobContext
from explorer.app.render import message_html, table_html
from explorer.app.tab import Tab

#: Seconds between two live redraws while training.
REDRAW_INTERVAL = 1.5


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
        self.train_button.on_click(lambda _: self.start())
        self.policies.observe(self._policies_changed, names="value")
        self.state.observe(self._follow_state, names=("policies",))
        self.toolbar.children = [
            widgets.HBox(
                [self.policies, widgets.VBox([self.model, self.scenario, self.epochs, self.train_button])]
            ),
            self.panel.widget,
        ]
        self.runs: dict[str, LiveRun] = {}
        self.results: list[Any] = []
        self.job: Job | None = None
        self._runs_lock = threading.Lock()

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
        """Train the selected policies in the background (returns the job; ``wait=True`` joins it)."""
        if self.job is not None and self.job.running:
            raise RuntimeError("a training run is already going; cancel it first")
        policies = tuple(self.state.policies)
        config = {
            "model": self.model.value,
            "scenario": self.scenario.value,
            "epochs": int(self.epochs.value),
        }
        with self._runs_lock:
            self.runs = {p: LiveRun(p) for p in policies}
            self.results = []
        self.job = Job("training", lambda ctx: self._train(ctx, policies, config))
        self.panel.attach(self.job)
        self.job.on_done(self._finished)
        self.train_button.disabled = True
        self.show_message(f"Training {', '.join(policies)}…", "loading")
        self.job.start()
        threading.Thread(
            target=self._redraw_loop, args=(self.job,), name="px-training-redraw", daemon=True
        ).start()
        if wait:
            self.job.wait()
        return self.job

    def cancel(self) -> None:
        """Stop the running training between two steps."""
        if self.job is not None:
            self.job.cancel()

    def _train(self, ctx: JobContext, policies: tuple[str, ...], config: dict[str, Any]) -> list[Any]:
        keras_policies = [p for p in policies if p != FP8_POLICY]
        results: list[Any] = []
        if keras_policies:
            self.ctx.tf_loader.start()
            self.ctx.tf_loader.wait()
            results += run_policies(
                keras_policies,
                callback=self._record,
                cancel=ctx.cancel_event,
                progress=lambda done, total: ctx.progress(
                    done / total * len(keras_policies) / len(policies), f"step {done}/{total}"
                ),
                **config,
            )
        if FP8_POLICY in policies and not ctx.cancelled:
            from explorer.analysis.fp8_training import train_fp8

            share = len(keras_policies) / len(policies)
            result = train_fp8(
                scaling="delayed",
                epochs=config["epochs"],
                callback=self._record_fp8,
                cancel=ctx.cancel_event,
                progress=lambda done, total: ctx.progress(
                    share + (1 - share) * done / total, f"fp8 step {done}/{total}"
                ),
            )
            results.append(result)
        return results

    def _record(self, record: Any) -> None:
        self._add(record.policy, record)

    def _record_fp8(self, record: Any) -> None:
        self._add(FP8_POLICY, record)

    def _add(self, policy: str, record: Any) -> None:
        with self._runs_lock:
            run = self.runs.setdefault(policy, LiveRun(policy))
            kind = getattr(record, "kind", "")
            {"epoch": run.epochs, "step": run.steps, "histogram": run.histograms}.get(kind, run.steps).append(
                record
            )

    def _redraw_loop(self, job: Job) -> None:
        """Redraw the live curves every REDRAW_INTERVAL s while ``job`` runs (off the training thread)."""
        drawn = -1
        while job.running:
            time.sleep(REDRAW_INTERVAL)
            with self._runs_lock:
                count = sum(len(r.steps) + len(r.epochs) for r in self.runs.values())
            if job.running and count != drawn:
                drawn = count
                self.refresh()

    def _finished(self, job: Job) -> None:
        self.train_button.disabled = False
        if job.status == "done" and job.result is not None:
            self.results = list(job.result)
        self.refresh()
        if job.status == "failed":
            self.show_message(f"Training failed: {job.error}", "error")
        elif job.status == "cancelled":
            self.show_message("Training cancelled; the curves show what ran.", "warning")

    # ------------------------------------------------------------------ drawing

    def render(self) -> None:
        from explorer.plots.training import live_training_figure

        with self._runs_lock:
            runs = [
                LiveRun(r.policy, list(r.epochs), list(r.steps), list(r.histograms))
                for r in self.runs.values()
            ]
        if not any(r.steps or r.epochs for r in runs):
            self.clear_figure()
            self.show_message(
                "Pick policies and press Train: a small model learns scikit-learn's digits under "
                "each precision policy; curves appear live.",
                "info",
            )
            self.show_html(self._policy_table())
            return
        self.show_figure(live_training_figure(runs, without_loss_scale=(FP8_POLICY,)), "training curves")
        running = self.job is not None and self.job.running
        if running:
            self.show_message(f"Training… {self.panel.label.value}", "loading")
        else:
            self.clear_message()
        self.show_html(self._summary_table(runs))

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

    def _summary_table(self, runs: list[LiveRun]) -> str:
        rows = []
        for r in runs:
            last = r.epochs[-1] if r.epochs else None
            rows.append(
                {
                    "policy": r.policy,
                    "epochs": len(r.epochs),
                    "loss": getattr(last, "loss", None),
                    "val_accuracy": getattr(last, "val_accuracy", None),
                    "loss_scale": getattr(last, "loss_scale", None),
                    "grad zero fraction": getattr(
                        last, "grad_zero_fraction", getattr(last, "grad_underflow_fraction", None)
                    ),
                }
            )
        return table_html(rows) + message_html(
            "Loss scale: Keras' LossScaleOptimizer (dynamic). Histograms: log2 |g| "
            "of all gradient elements vs each format's range.",
            "info",
        )
