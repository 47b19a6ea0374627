"""Accuracy tab."""

from __future__ import annotations

from explorer.app import engines
from explorer.app.tab import Tab


class AccuracyTab(Tab):
    """Accuracy view of the selection."""

    title = "Accuracy"
    key = "accuracy"
    fields = ("op", "dtypes", "backends")
    needs_tensorflow = False

    def render(self) -> None:
        engines.module("analysis.accuracy")
