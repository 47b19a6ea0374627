"""The block formats in the Bits and Ranges tabs: one block element by element
(:class:`BlockInspector`, in the Bits tab) and a block's range for a chosen block max
(:class:`BlockRangeView`, in the Ranges tab).

Each has its own controls and draws into its own HTML widget when they change: the shared
dtype selection does not apply.  The numbers come from :mod:`explorer.analysis.block_view`.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets

from explorer.app import numbers
from explorer.app.render import message_html

#: hover text of the empty cells of a block's table
MISSING_REASONS = {"relative error": "no relative error: the input is 0 or not finite"}


def _format_dropdown(css: str, value: str) -> widgets.Dropdown:
    from explorer.blocks import BLOCK_FORMAT_NAMES

    dropdown = widgets.Dropdown(
        options=list(BLOCK_FORMAT_NAMES),
        value=value,
        description="Block format",
        style={"description_width": "initial"},
        layout=widgets.Layout(width="260px"),
    )
    dropdown.add_class(css)
    return dropdown


def _bits_html(bits: str | None) -> numbers.Markup:
    return numbers.Markup(f"<code>{html.escape(bits or '')}</code>")


def block_html(view: Any) -> str:
    """One block (an :class:`~explorer.analysis.block_view.BlockView`) as escaped HTML: the
    scale's bits in a line, then a row per element."""
    scale = (
        f"shared scale ({html.escape(view.scale_format)}): "
        f"<code class='px-block-scale-bits'>{html.escape(view.scale_bits)}</code> = "
        f"{numbers.cell_html(view.scale)}"
    )
    if view.tensor_scale is not None:
        scale += (
            f" · tensor scale (float32): <code class='px-block-tensor-scale-bits'>"
            f"{html.escape(view.tensor_scale_bits or '')}</code> = {numbers.cell_html(view.tensor_scale)}"
        )
    rows = [
        {
            "#": r.index,
            "input": r.input,
            f"element ({view.element_format})": r.element,
            "element bits": _bits_html(r.element_bits),
            "value": r.value,
            "error": r.error,
            "relative error": r.relative_error,
        }
        for r in view.rows
    ]
    return (
        f"<h4>One block of {html.escape(view.format)}: {len(view.rows)} elements</h4>"
        f"<p class='px-block-scale'>{scale}</p>"
        f"{numbers.table_html(rows, max_rows=64, missing_reasons=MISSING_REASONS)}"
        "<p class='px-number-key'>value = element × scale; error = value − input.</p>"
    )


class BlockInspector:
    """A block format and values (or a seeded sample): the block's scale and elements, bit by bit."""

    def __init__(self) -> None:
        self.format = _format_dropdown("px-block-format", "mxfp4_e2m1")
        self.values = widgets.Text(
            value="",
            description="Block values",
            placeholder="e.g. 0.1, 2, -3.5 (empty: a seeded sample)",
            continuous_update=False,
            style={"description_width": "initial"},
            layout=widgets.Layout(width="420px"),
        )
        self.values.add_class("px-block-values")
        self.seed = widgets.BoundedIntText(
            value=0, min=0, max=2**31 - 1, description="Seed", layout=widgets.Layout(width="160px")
        )
        self.seed.add_class("px-block-seed")
        self.output = widgets.HTML("").add_class("px-block-details")
        for control in (self.format, self.values, self.seed):
            control.observe(lambda _: self.refresh(), names="value")
        self.widget = widgets.VBox(
            [widgets.HBox([self.format, self.values, self.seed]), self.output]
        ).add_class("px-block-inspector")
        self.refresh()

    def refresh(self) -> None:
        """Draw the block from the controls (an invalid entry becomes a message)."""
        from explorer.analysis.block_view import SAMPLE_NOTE, inspect_block, parse_values, sample_block

        try:
            given = parse_values(self.values.value)
            values = given or sample_block(self.format.value, self.seed.value)
            note = "" if given else f"<p>a seeded sample: {SAMPLE_NOTE}, seed {self.seed.value}</p>"
            self.output.value = block_html(inspect_block(self.format.value, values)) + note
        except (ValueError, TypeError) as exc:
            self.output.value = message_html(str(exc), "warning")


def range_html(r: Any) -> str:
    """A :class:`~explorer.analysis.block_view.BlockRange` as one escaped line of facts."""

    def fact(name: str, label: str, value: float) -> str:
        return f"{html.escape(label)} <span class='px-fact px-block-{name}'>{numbers.cell_html(value)}</span>"

    facts = [
        fact("scale", "scale", r.scale),
        fact("largest", "largest (above it: saturates)", r.largest),
        fact("smallest", "smallest nonzero", r.smallest_nonzero),
        fact("flush", "flushes to zero at |x| ≤", r.flush_below),
    ]
    tensor = "" if r.tensor_max is None else f" (tensor max {numbers.cell_html(r.tensor_max)})"
    return (
        f"<div class='px-block-range'><b>{html.escape(r.format)}</b>, a block whose max |x| is "
        f"{numbers.cell_html(r.block_max)}{tensor}: {' · '.join(facts)}</div>"
    )


class BlockRangeView:
    """A block format and a block max: the magnitudes one such block represents."""

    def __init__(self) -> None:
        self.format = _format_dropdown("px-block-range-format", "mxfp8_e4m3")
        self.block_max = widgets.FloatText(
            value=1.0,
            description="Block max |x|",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="220px"),
        )
        self.block_max.add_class("px-block-max")
        self.output = widgets.HTML("").add_class("px-block-range-details")
        for control in (self.format, self.block_max):
            control.observe(lambda _: self.refresh(), names="value")
        self.widget = widgets.VBox([widgets.HBox([self.format, self.block_max]), self.output])
        self.widget.add_class("px-block-range-view")
        self.refresh()

    def refresh(self) -> None:
        """Draw the range from the controls (an invalid block max becomes a message)."""
        from explorer.analysis.block_view import block_range

        try:
            self.output.value = range_html(block_range(self.format.value, float(self.block_max.value)))
        except (ValueError, TypeError) as exc:
            self.output.value = message_html(str(exc), "warning")
