"""Kernels tab."""

from __future__ import annotations

from explorer.app import engines
from explorer.app.tab import Tab


class KernelsTab(Tab):
    """Kernels view of the selection."""

    title = "Kernels"
    key = "kernels"
    fields = ("op", "dtypes", "device", "backends", "mode")
    needs_tensorflow = True

    def render(self) -> None:
        engines.module("analysis.availability")

    def load_snapshot_file(self, path: str) -> None:
        """Load a snapshot JSON saved on another machine."""
        raise engines.NotAvailableYet("snapshots are not wired yet")
