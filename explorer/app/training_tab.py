"""Training tab."""

from __future__ import annotations

from explorer.app import engines
from explorer.app.tab import Tab


class TrainingTab(Tab):
    """Training view of the selection."""

    title = "Training"
    key = "training"
    fields = ("policies",)
    needs_tensorflow = True

    def render(self) -> None:
        engines.module("analysis.training")
