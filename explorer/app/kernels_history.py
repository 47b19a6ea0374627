"""The Kernels tab's history strips: the selected cells across every TensorFlow release whose
registry ships with explorer, one strip per cell (:func:`explorer.plots.history.history_strip_html`).

The answer is :func:`explorer.queries.history.release_history`'s, the one
``precision-explorer kernels --history`` prints; it is read from the shipped registries, so
it shows while TensorFlow is still loading.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

import ipywidgets as widgets

from explorer.app.render import message_html

if TYPE_CHECKING:
    from explorer.app.context import AppContext
    from explorer.queries.history import ReleaseHistory

#: most history strips shown at once (an op with many raw ops x many dtypes)
MAX_HISTORY_STRIPS = 8


def strips_html(answer: ReleaseHistory, device_type: str) -> str:
    """``answer``'s strips under one heading with the key, and a note for each raw op no shipped
    release has and for the cells left out (:data:`MAX_HISTORY_STRIPS`)."""
    from explorer.plots.history import history_legend_html, history_strip_html

    shipped = answer.releases
    strips = [history_strip_html(cell.history, cell.title) for cell in answer.cells]
    notes = [f"No shipped TensorFlow release has the raw op {raw}." for raw, _ in answer.unknown]
    if answer.not_shown:
        notes.append(f"{answer.not_shown} more raw op × dtype cells not shown.")
    summary = (
        f"History across TensorFlow releases: {device_type}, from the registries shipped with explorer "
        f"({len(shipped)} releases, {shipped[0]} to {shipped[-1]})"
    )
    return (
        f"<details class='px-history-panel' open><summary>{html.escape(summary)}</summary>"
        f"{history_legend_html()}{''.join(strips)}"
        + "".join(f"<p style='font-size:85%'>{html.escape(n)}</p>" for n in notes)
        + "</details>"
    )


class HistoryStrip:
    """History strips as HTML: one clicked cell's, in the details panel (the selection's cells
    are :class:`~explorer.app.kernels_chips.ReleaseChips`, buttons)."""

    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx
        self.state = ctx.state
        self.widget = widgets.HTML("").add_class("px-kernels-history")

    def html(self, raw_ops: tuple[str, ...], dtypes: tuple[str, ...], device_type: str) -> str:
        """The strips of ``raw_ops`` × ``dtypes`` on ``device_type`` (cached per cell set)."""
        from explorer.queries.history import release_history

        def draw() -> str:
            return strips_html(
                release_history(raw_ops, dtypes, [device_type], MAX_HISTORY_STRIPS), device_type
            )

        return str(self.ctx.cache.get(("history", raw_ops, dtypes, device_type), draw))

    def selection_html(self) -> str:
        """The strips of the selected cells: the op's raw ops (a catalog op's, or the raw op
        itself) × the selected dtypes × :attr:`AppState.registry_device_type`, across every
        shipped TensorFlow release (no TensorFlow import; cached per selection)."""
        from explorer.queries.history import selected_raw_ops

        return self.html(selected_raw_ops(self.state.op), self.state.dtypes, self.state.registry_device_type)

    def update(self) -> None:
        """Redraw the selection's strips (a failure is a message in their place, never an error)."""
        try:
            self.widget.value = self.selection_html()
        except Exception as exc:
            self.widget.value = message_html(f"No release history for this selection: {exc}", "warning")

    def show_cell(self, raw_ops: tuple[str, ...], dtype: str, device_type: str) -> None:
        """Show one cell's strips (a clicked heatmap cell); a failure is a message in their place."""
        try:
            self.widget.value = self.html(raw_ops, (dtype,), device_type)
        except Exception as exc:
            self.widget.value = message_html(f"No release history for this cell: {exc}", "warning")
