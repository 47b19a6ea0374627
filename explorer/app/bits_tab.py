"""Bits tab."""

from __future__ import annotations

from explorer.app import engines
from explorer.app.tab import Tab


class BitsTab(Tab):
    """Bits view of the selection."""

    title = "Bits"
    key = "bits"
    fields = ("dtypes", "value")
    needs_tensorflow = False

    def render(self) -> None:
        engines.module("analysis.bits")
