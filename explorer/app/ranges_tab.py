"""Ranges tab."""

from __future__ import annotations

from explorer.app import engines
from explorer.app.tab import Tab


class RangesTab(Tab):
    """Ranges view of the selection."""

    title = "Ranges"
    key = "ranges"
    fields = ("op", "dtypes", "backends")
    needs_tensorflow = False

    def render(self) -> None:
        engines.module("analysis.ranges")
