"""The interactive kernels heatmap: a bqplot ``GridHeatMap`` of a :class:`~explorer.plots.kernel_grid.
KernelGrid`, a glyph in every cell, op labels on the left, each column's panel and dtype in a header
that stays in view above the scrolling body; hovering a cell shows its summary, clicking it calls
back with the cell.

bqplot's JavaScript is a prebuilt lab extension served by Jupyter Server and Voila (nothing is
fetched from outside).  The widgets are built once; :meth:`KernelHeatmap.show` only changes
their data (it says in which order, and why).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import numpy as np

from explorer.outcome import STATUSES
from explorer.plots.kernel_grid import KernelGrid, ratio_text
from explorer.plots.palette import (
    EMPTY_COLOR,
    INK,
    MUTED_TEXT,
    SPEED_SPAN,
    SPEED_STEPS,
    STATUS_COLORS,
    speed_band_colors,
    speed_level,
    text_color,
)

#: pixels per row and per column of the body
ROW_PX, COLUMN_PX = 22, 62
#: the body scrolls inside a box this tall (the header stays above it)
MAX_BODY_PX = 560
#: margins (px): the op labels on the left, the rotated dtype labels in the header (at most)
LEFT_PX, RIGHT_PX, HEADER_PX = 170, 150, 160
#: pixels of page the heatmap leaves to the controls above it (its box: at most 100vh minus this)
PAGE_CHROME_PX = 140


def header_height(labels: list[str]) -> int:
    """The header's height (px) for column ``labels`` drawn at 12 px, rotated 40 degrees: the
    longest label's rise, plus room for the axis (at most :data:`HEADER_PX`).

    >>> header_height(["CPU declared · float16"]), header_height(["x" * 80])
    (117, 160)
    """
    longest = max((len(label) for label in labels), default=0)
    return min(HEADER_PX, 24 + round(longest * 6.6 * 0.643))


#: CSS that lets clicks and hovers on a cell's glyph through to the cell under it
GLYPH_CSS = ".px-heatmap-body text.label, .px-heatmap-header text.label { pointer-events: none; }"
#: the colour scale's codes: a status's index in STATUSES, then an empty cell, then the speed bands
EMPTY_CODE = len(STATUSES)
#: the code of speed band 0 (1x); band k (:func:`~explorer.plots.palette.speed_level`) is this + k
SPEED_CENTRE_CODE = EMPTY_CODE + 1 + SPEED_STEPS


def speed_legend_html() -> str:
    """The speed layer's legend: one swatch per band, its ratio to float32 printed on it."""
    swatches = []
    for k, colour in enumerate(speed_band_colors(), start=-SPEED_STEPS):
        label = ratio_text(SPEED_SPAN ** (k / SPEED_STEPS))
        swatches.append(
            f"<span style='display:inline-block;min-width:40px;text-align:center;background:{colour};"
            f"color:{text_color(colour)};font-size:11px;padding:1px 2px'>{label}</span>"
        )
    return (
        "<div class='px-speed-legend'>time per call ÷ float32's (same backend, mode, shapes): "
        f"faster ← {''.join(swatches)} → slower; cells without a ratio keep their status</div>"
    )


def _tick_key(value: float) -> str:
    """The key bqplot's ``tick_labels`` looks a tick up by (JavaScript's ``String(value)``)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _import_bqplot() -> Any:
    """bqplot, imported without its import-time DeprecationWarning (bqscales passes trait metadata
    the way traitlets 4.1 deprecated; nothing this app does)."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "metadata .* was set from the constructor", DeprecationWarning)
        import bqplot
    return bqplot


def _figure(marks: list[Any], axes: list[Any], top: int, bottom: int) -> Any:
    """A bqplot figure of the heatmap: no toolbar, padding or animation, any aspect ratio (its
    size is set in pixels), the left and right margins the rows' labels need."""
    return _import_bqplot().Figure(
        marks=marks,
        axes=axes,
        fig_margin={"top": top, "bottom": bottom, "left": LEFT_PX, "right": RIGHT_PX},
        display_toolbar=False,
        padding_x=0.0,
        padding_y=0.0,
        animation_duration=0,
        min_aspect_ratio=0.001,
        max_aspect_ratio=1000.0,
    )


class KernelHeatmap:
    """The heatmap widget (``.widget``), redrawn by :meth:`show`; ``on_click(i, j)`` is called
    with a clicked cell's row and column."""

    def __init__(self, on_click: Callable[[int, int], None] | None = None) -> None:
        bqplot = _import_bqplot()
        self.on_click = on_click
        self.grid: KernelGrid | None = None
        #: the colour code of each shown cell (see :data:`EMPTY_CODE`, :data:`SPEED_CENTRE_CODE`)
        self.codes = np.zeros((0, 0))
        #: each cell's ratio to float32 when coloured by speed (None: by availability)
        self.ratios: list[list[float | None]] | None = None
        # fixed domains: rows and columns are placed within them (see show)
        self.x = bqplot.LinearScale(min=0.0, max=1.0)
        self.y = bqplot.LinearScale(min=0.0, max=1.0, reverse=True)
        self.colour = bqplot.ColorScale(
            colors=[STATUS_COLORS[s] for s in STATUSES] + [EMPTY_COLOR] + speed_band_colors(),
            min=0.0,
            max=float(SPEED_CENTRE_CODE + SPEED_STEPS),
        )
        self.tip = widgets.HTML("").add_class("px-heatmap-tip")
        self.cells = bqplot.GridHeatMap(
            color=np.full((2, 2), float(len(STATUSES))),
            row=np.arange(3.0),
            column=np.arange(3.0),
            apply_clip=True,
            scales={"row": self.y, "column": self.x, "color": self.colour},
            stroke="white",
            interactions={"hover": "tooltip"},
            tooltip=self.tip,
        )
        self.glyphs = bqplot.Label(
            x=[],
            y=[],
            text=[],
            colors=[INK],
            scales={"x": self.x, "y": self.y},
            align="middle",
            default_size=12,
            font_weight="bold",
            y_offset=4,
            enable_hover=False,
        )
        self.row_axis = bqplot.Axis(
            scale=self.y, orientation="vertical", side="left", tick_style={"font-size": "12px"}
        )
        self.bottom_axis = bqplot.Axis(scale=self.x, side="bottom", tick_style={"font-size": "12px"})
        self.body = self._new_body()
        self.top_axis = bqplot.Axis(
            scale=self.x,
            side="top",
            tick_rotate=-40,
            tick_style={"font-size": "12px", "text-anchor": "start"},
        )
        self.header = _figure([], [self.top_axis], top=HEADER_PX - 4, bottom=0)
        self.header.add_class("px-heatmap-header")
        self.cells.on_element_click(self._clicked)
        self.cells.on_hover(self._hovered)
        # a Box's view ignores ``tabbable``: a focusable handle inside the box lets a keyboard
        # scroll it (arrow keys scroll the box around the focused element; axe's
        # scrollable-region-focusable asks for this); it shows only while focused
        self.scroll_handle = widgets.HTML(
            "<span class='px-scroll-handle' tabindex='0'>Heatmap rows: the arrow keys scroll this box</span>"
        ).add_class("px-scroll-handle-box")
        self.scroller = widgets.Box(
            [self.scroll_handle, self.body], layout=widgets.Layout(overflow="auto", flex_flow="column")
        )
        self.scroller.add_class("px-heatmap-scroll")
        self.note = widgets.HTML("").add_class("px-heatmap-note")
        # the glyphs sit on the cells: without this a pointer on a glyph never reaches its cell
        style = widgets.HTML(f"<style>{GLYPH_CSS}</style>").add_class("px-heatmap-style")
        #: the axes named in words: rows are ops, columns say where (device, mode) and the dtype
        self.axes = widgets.HTML(
            "<div class='px-heatmap-axes' style='font-size:90%'><b>Rows</b>: ops (▶ the selected one) · "
            "<b>Columns</b> (rotated labels above): where it runs or is declared · dtype</div>"
        )
        self.widget = widgets.VBox([style, self.axes, self.header, self.scroller, self.note])
        self.widget.add_class("px-heatmap")

    def _new_body(self) -> Any:
        """The figure of the cells, the glyphs, the row axis and the bottom axis."""
        body = _figure([self.cells, self.glyphs], [self.row_axis, self.bottom_axis], top=2, bottom=24)
        body.add_class("px-heatmap-body")
        body.layout.flex = "0 0 auto"  # a column box would shrink it to fit: it scrolls instead
        return body

    def _resize_body(self, width: str, height: str) -> None:
        """Give the body figure this size.  bqplot's figure view does not lay itself out again when
        its height grows (from an op's group to the whole catalog its axes and cells stayed at
        the old height, squeezed into the top of a tall figure): a new height gets a new figure,
        drawn at that size from the start, in place of the old one."""
        if self.body.layout.height in (None, height):
            self.body.layout.width, self.body.layout.height = width, height
            return
        old, self.body = self.body, self._new_body()
        self.body.layout.width, self.body.layout.height = width, height
        self.scroller.children = [self.scroll_handle, self.body]
        old.marks, old.axes = [], []  # the marks and axes live on in the new figure
        old.close()

    # ------------------------------------------------------------------ events

    @staticmethod
    def _cell_of(content: dict[str, Any]) -> tuple[int, int] | None:
        datum = content.get("data") or content.get("point") or {}
        if not isinstance(datum, dict):
            return None
        try:
            return int(datum["rowNum"]), int(datum["columnNum"])
        except (KeyError, TypeError, ValueError):
            return None

    def _clicked(self, _mark: Any, content: dict[str, Any]) -> None:
        cell = self._cell_of(content)
        if cell is not None:
            self.click(*cell)

    def _hovered(self, _mark: Any, content: dict[str, Any]) -> None:
        cell = self._cell_of(content)
        if cell is not None:
            self.hover(*cell)

    def click(self, i: int, j: int) -> None:
        """What a click on cell ``(i, j)`` does: the hover summary, then ``on_click(i, j)``."""
        if self.grid is None or not (0 <= i < self.grid.shape[0] and 0 <= j < self.grid.shape[1]):
            return
        self.hover(i, j)
        if self.on_click is not None:
            self.on_click(i, j)

    def hover(self, i: int, j: int) -> None:
        """Put cell ``(i, j)``'s summary in the tooltip (escaped; line breaks kept)."""
        if self.grid is None or not (0 <= i < self.grid.shape[0] and 0 <= j < self.grid.shape[1]):
            return
        summary = self.grid.summary(i, j)
        ratio = self.ratios[i][j] if self.ratios is not None else None
        if ratio is not None:
            summary += f"\ntime per call: {ratio_text(ratio)} float32's (slowest of its shapes)"
        text = html.escape(summary).replace("\n", "<br>")
        self.tip.value = (
            "<div class='px-heatmap-tip-text' style='max-width:420px;font-size:12px;background:#ffffff;"
            f"color:{INK};border:1px solid {MUTED_TEXT};padding:4px;white-space:normal'>{text}</div>"
        )

    def cell_colour(self, i: int, j: int) -> str:
        """The colour cell ``(i, j)`` is drawn in (its code looked up on the colour scale)."""
        return str(self.colour.colors[int(self.codes[i, j])])

    # ------------------------------------------------------------------ drawing

    def show(
        self,
        grid: KernelGrid,
        highlight: str | None = None,
        note: str = "",
        ratios: list[list[float | None]] | None = None,
    ) -> None:
        """Draw ``grid`` (the ``highlight`` op's label marked with ▶); ``note`` (HTML) goes below.
        With ``ratios`` (:func:`~explorer.plots.kernel_grid.speed_ratios`) a cell with a ratio is
        coloured by its speed band and shows the ratio; the others keep their status.

        The scales keep their domain (0 to 1): a row or column sits at ``(k + 0.5) / count``, so a
        redraw sends no scale change (a scale change redraws every mark and axis once more).  Each
        mark's data goes in one message (``hold_sync``).  An axis gets its ``tick_labels`` in one
        message and then its ``tick_values`` in another, in that order: bqplot's axis view redraws
        on ``tick_values`` through a d3 transition (asynchronous, even of duration 0) that keeps
        the tick formatter of the moment it was made, so ticks sent before their labels are drawn,
        a frame later, with the previous labels (or bare numbers) over the new ones.
        """
        self.grid = grid
        self.ratios = ratios
        n_rows, n_cols = grid.shape
        width = LEFT_PX + RIGHT_PX + COLUMN_PX * max(n_cols, 1)
        body_height = 26 + ROW_PX * max(n_rows, 1)
        rows = _centres(n_rows)
        columns = _centres(n_cols)
        # bqplot squeezes a colour matrix with one row or column to 1-D (drawn wrongly): such a
        # grid gets a row or column of empty cells beyond the scale's end, clipped away
        padded = np.full((max(n_rows, 2), max(n_cols, 2)), float(EMPTY_CODE))
        if n_rows and n_cols:
            padded[:n_rows, :n_cols] = np.asarray(grid.codes(), dtype=float)
        glyphs = grid.glyphs()
        colours = grid.glyph_colors()
        if ratios is not None:
            bands = speed_band_colors()
            for i, j in ((i, j) for i in range(n_rows) for j in range(n_cols)):
                ratio = ratios[i][j]
                if ratio is not None:
                    level = speed_level(ratio)
                    padded[i, j] = SPEED_CENTRE_CODE + level
                    glyphs[i][j] = ratio_text(ratio)
                    colours[i][j] = text_color(bands[level + SPEED_STEPS])
        # validated together (row and column must fit color), sent as one message
        with self.cells.hold_sync(), self.cells.hold_trait_notifications():
            self.cells.row = np.arange(padded.shape[0] + 1.0) / max(n_rows, 1)
            self.cells.column = np.arange(padded.shape[1] + 1.0) / max(n_cols, 1)
            self.cells.color = padded
        self.codes = padded[:n_rows, :n_cols]
        xs, ys, texts, text_colours = [], [], [], []
        for i in range(n_rows):
            for j in range(n_cols):
                if glyphs[i][j]:
                    xs.append(columns[j])
                    ys.append(rows[i])
                    texts.append(glyphs[i][j])
                    text_colours.append(colours[i][j])
        with self.glyphs.hold_sync():
            self.glyphs.x, self.glyphs.y = xs, ys
            self.glyphs.text = texts
            self.glyphs.colors = text_colours or [INK]
        _set_ticks(self.row_axis, rows, [f"▶ {op}" if op == highlight else op for op in grid.ops])
        # the header names each column's panel and dtype (rotated, so long names stay apart);
        # the bottom axis repeats the dtype under the last row
        _set_ticks(self.top_axis, columns, [f"{c.panel_label} · {c.dtype}" for c in grid.columns])
        _set_ticks(self.bottom_axis, columns, [c.label for c in grid.columns])
        # layout traits only send a message when their value changes
        header = header_height([f"{c.panel_label} · {c.dtype}" for c in grid.columns])
        if self.header.fig_margin.get("top") != header - 4:
            self.header.fig_margin = {**self.header.fig_margin, "top": header - 4}
        self.header.layout.width, self.header.layout.height = f"{width}px", f"{header}px"
        self._resize_body(f"{width}px", f"{body_height}px")
        # header and body together: at most 560 px + the header, and never taller than the window
        self.scroller.layout.max_height = f"min({MAX_BODY_PX}px, calc(100vh - {PAGE_CHROME_PX + header}px))"
        self.scroller.layout.width = f"{width + 24}px"
        self.scroller.layout.max_width = "100%"
        self.note.value = note


def _centres(count: int) -> list[float]:
    """Where the ``count`` rows (or columns) sit on a scale from 0 to 1: their centres.

    >>> _centres(4)
    [0.125, 0.375, 0.625, 0.875]
    """
    return [(k + 0.5) / count for k in range(count)]


def _set_ticks(axis: Any, values: list[float], labels: list[str]) -> None:
    """Put ``labels`` at ``values`` on ``axis``: the labels first, then the values (two messages,
    in this order; see :meth:`KernelHeatmap.show`)."""
    axis.tick_labels = {_tick_key(v): label for v, label in zip(values, labels, strict=True)}
    axis.tick_values = np.asarray(values, dtype=float)
