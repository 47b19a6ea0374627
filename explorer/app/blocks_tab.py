"""Blocks tab: the block-scaled formats (OCP MX, NVFP4) compared on a tensor.

Its own controls (a tensor, the block formats): the shared dtype, op and backend controls
do not apply.  The numbers come from :mod:`explorer.queries.blocks`, the figure from
:mod:`explorer.plots.blocks`.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

import ipywidgets as widgets

from explorer.app.tab import Tab

if TYPE_CHECKING:
    from explorer.queries.blocks import BlocksComparison

#: the block formats selected when the tab opens
DEFAULT_SELECTION: tuple[str, ...] = ("mxfp8_e4m3", "mxfp4_e2m1", "nvfp4")
_TABLE_COLUMNS = ("format", "scaling", "bits_per_element", "rel_rms", "rel_max", "flushed", "saturated")
#: the per-tensor baselines drawn beside the block formats
BASELINES: tuple[str, ...] = ("float8_e4m3fn", "float4_e2m1fn")


class BlocksTab(Tab):
    """Error histogram and cost table of the selected block formats on the chosen tensor."""

    title = "Blocks"
    key = "blocks"
    fields = ()
    intro = (
        "What does a block-scaled format (MXFP8, MXFP6, MXFP4, MXINT8, NVFP4) cost on a tensor? "
        "Each element's relative error, and the share flushed to zero or saturated, against "
        "per-tensor scaling."
    )

    def build(self) -> None:
        from explorer.analysis.block_errors import SYNTHETIC_TENSORS

        #: True while :meth:`select_formats` sets several buttons (one redraw, at the end)
        self._quiet = False
        from explorer.blocks import BLOCK_FORMAT_NAMES

        self.tensor = widgets.Dropdown(
            options=list(SYNTHETIC_TENSORS),
            value="outliers",
            description="Tensor",
            layout=widgets.Layout(width="220px"),
        )
        self.tensor.add_class("px-blocks-tensor")
        self.formats = {
            name: widgets.ToggleButton(
                value=name in DEFAULT_SELECTION, description=name, layout=widgets.Layout(width="auto")
            )
            for name in BLOCK_FORMAT_NAMES
        }
        for name, button in self.formats.items():
            button.add_class(f"px-blocks-format-{name}")
            button.observe(self._format_toggled, names="value")
        self.tensor.observe(lambda _: self.refresh(), names="value")
        self.toolbar.children = [widgets.VBox([self.tensor, widgets.HBox(list(self.formats.values()))])]

    @property
    def selected(self) -> list[str]:
        """The block formats switched on, in their listing order."""
        return [name for name, button in self.formats.items() if button.value]

    def _format_toggled(self, _: object) -> None:
        if not self._quiet:
            self.refresh()

    def select_formats(self, names: list[str]) -> None:
        """Switch on exactly ``names`` (block format names), with one redraw."""
        from explorer.blocks import block_format

        wanted = {block_format(n).name for n in names}
        self._quiet = True
        try:
            for name, button in self.formats.items():
                button.value = name in wanted
        finally:
            self._quiet = False
        self.refresh()

    def render(self) -> None:
        from explorer.plots.blocks import plot_error_histogram
        from explorer.queries.blocks import compare_blocks, error_distribution

        names = self.selected
        if not names:
            self.clear_figure()
            self.show_html("")
            self.show_message("Select at least one block format.", "info")
            return
        tensor = self.tensor.value
        key = ("blocks", tensor, tuple(names))
        self.show_cached_figure(
            key,
            lambda: plot_error_histogram(error_distribution(tensor, names, per_tensor=BASELINES)),
            f"Relative error per element of {', '.join(names)} on the {tensor} tensor",
        )
        result = self.ctx.cache.get(
            key, lambda: compare_blocks(tensor, names, block_sizes=[], per_tensor=BASELINES)
        )
        self.show_html(blocks_table_html(result))


def blocks_table_html(result: BlocksComparison) -> str:
    """The cost table (block formats, then per-tensor scaling) as escaped HTML."""
    from explorer.app import numbers

    rows = [
        {column: cost.to_dict()[column] for column in _TABLE_COLUMNS}
        for cost in [*result.rows, *result.per_tensor]
    ]
    shape = " x ".join(map(str, result.shape))
    heading = f"<h4>{html.escape(result.tensor)} ({html.escape(shape)}): what each format costs</h4>"
    note = (
        "<p class='px-number-key'>rel_rms, rel_max: |q - x| / |x| over the nonzero elements (a flush "
        "to zero is 1); flushed: share of nonzero elements stored as 0; saturated: share clamped at "
        "the format's largest element.</p>"
    )
    return heading + numbers.table_html(rows) + note
