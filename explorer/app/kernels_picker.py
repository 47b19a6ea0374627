"""A keyboard way to a heatmap cell: the heatmap's cells are SVG shapes a keyboard cannot reach, so
beside it a row (op) and a column (panel · dtype) are picked from two dropdowns and "Show cell
details" tells that cell in the details panel, as a click on it does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as widgets


class CellPicker:
    """Two dropdowns and a button (``.widget``); ``on_pick(i, j)`` is called with the picked cell."""

    def __init__(self, on_pick: Callable[[int, int], None]) -> None:
        self.on_pick = on_pick
        self.row = widgets.Dropdown(options=[], description="Op", layout=widgets.Layout(width="auto"))
        self.column = widgets.Dropdown(options=[], description="Column", layout=widgets.Layout(width="auto"))
        self.button = widgets.Button(
            description="Show cell details",
            tooltip="tell the picked heatmap cell in the details panel, as a click on it does",
        )
        self.button.on_click(lambda _: self.show())
        self.widget = widgets.HBox(
            [self.row, self.column, self.button], layout=widgets.Layout(flex_flow="row wrap")
        )
        self.widget.add_class("px-cell-picker")

    def set_grid(self, grid: Any, highlight: str | None = None) -> None:
        """Offer ``grid``'s ops and columns; the highlighted op and its first non-ok column first picked."""
        self.row.options = [(op, i) for i, op in enumerate(grid.ops)]
        self.column.options = [(f"{c.panel_label} · {c.dtype}", j) for j, c in enumerate(grid.columns)]
        if grid.ops:
            i = grid.ops.index(highlight) if highlight in grid.ops else 0
            self.row.value = i
            shape = grid.shape
            bad = [j for j in range(shape[1]) if grid.status(i, j) not in (None, "ok")]
            if shape[1]:
                self.column.value = bad[0] if bad else 0

    def show(self) -> None:
        """What the button does: tell the picked cell."""
        if self.row.value is not None and self.column.value is not None:
            self.on_pick(int(self.row.value), int(self.column.value))
