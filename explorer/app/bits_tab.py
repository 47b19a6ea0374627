"""Bits tab: a value in each selected format, field by field, with neighbours and rounding error."""

from __future__ import annotations

import html
import math
from typing import Any

import ipywidgets as widgets

from explorer.app.tab import Tab
from explorer.formats import resolve


class BitsTab(Tab):
    """The bit inspector for ``state.value`` in every selected dtype; all values of small formats."""

    title = "Bits"
    key = "bits"
    fields = ("dtypes", "value")
    intro = (
        "What is this number in this format? Sign, exponent and mantissa bits, the value actually "
        "stored, its neighbours and the rounding error."
    )

    def build(self) -> None:
        self.value = widgets.Text(
            value=self.state.value,
            description="Value",
            continuous_update=False,
            placeholder="e.g. 0.1, 65519, 1e-8, inf",
            layout=widgets.Layout(width="300px"),
        )
        self.value.add_class("px-value")
        self.value.observe(self._value_changed, names="value")
        self.state.observe(lambda ch: setattr(self.value, "value", self.state.value), names=("value",))
        self.toolbar.children = [
            widgets.HBox(
                [
                    self.value,
                    widgets.HTML(
                        "<span style='color:#555'>decimal text gives the exact rounding error</span>"
                    ),
                ]
            )
        ]
        from explorer.app.block_widgets import BlockInspector

        #: one block of a block format, element by element (its own controls)
        self.block = BlockInspector()
        self.widget.children = (*self.widget.children, self.block.widget)

    def _value_changed(self, change: dict[str, Any]) -> None:
        try:
            self.state.set(value=change["new"])
        except (ValueError, TypeError) as exc:
            self.show_message(str(exc), "warning")

    def render(self) -> None:
        from explorer.analysis.bits import explain_value, inspect_value, value_table
        from explorer.plots.bits import plot_bit_fields

        value = self.state.value
        infos = [inspect_value(value, d) for d in self.state.dtypes]
        explanations = [explain_value(i) for i in infos]
        self.show_answer([f"{i.format}: {text}" for i, text in zip(infos, explanations, strict=True)])
        formats = ", ".join(i.format for i in infos)
        self.show_figure(plot_bit_fields(infos), f"Sign, exponent and mantissa bits of {value} in {formats}")
        self.show_html(bits_details_html(value, infos, explanations, value_table))
        self.clear_message()


#: hover text of the cells that have no value, by column
MISSING_REASONS = {
    "exponent": "no exponent: the stored value is zero, inf or NaN",
    "below": "no smaller value: the lowest value of the format, or NaN",
    "above": "no larger value: the highest value of the format, or NaN",
    "relative error": "no relative error: the input is 0, inf or NaN, or the result is not finite",
}


def bits_details_html(value: str, infos: list[Any], explanations: list[str], value_table: Any) -> str:
    """The Bits tab's details: one row per format (readable values, exact ones on hover), a
    sentence per format saying what happened to the value, and every code point of the first
    format of 8 bits or fewer."""
    from explorer.app import numbers

    def near(
        i: Any, column: str, number: Any
    ) -> Any:  # values of the format: digits that tell neighbours apart
        from explorer.analysis.bits import value_text

        if isinstance(number, float) and math.isfinite(number):  # as the sentence writes it
            text = html.escape(value_text(number, resolve(i.format).mantissa_bits))
            if text.startswith("≈"):  # shortened: the exact value on hover
                return numbers.Markup(f'<span title="{html.escape(repr(number), quote=True)}">{text}</span>')
            return numbers.Markup(text)
        digits = numbers.digits_for(resolve(i.format).mantissa_bits)
        return numbers.Markup(numbers.cell_html(number, MISSING_REASONS.get(column, ""), digits))

    rows = [
        {
            "format": i.format,
            "stored value": near(i, "stored value", i.value),
            "exact decimal": i.exact,
            "bits": i.bits,
            "hex": i.hex,
            "class": i.kind,
            "exponent": i.exponent,
            "below": near(i, "below", i.below),
            "above": near(i, "above", i.above),
            "rounding error": i.rounding_error,
            "relative error": i.relative_error,
        }
        for i in infos
    ]
    said = "".join(
        f"<li><b>{html.escape(i.format)}</b>: {html.escape(text)}</li>"
        for i, text in zip(infos, explanations, strict=True)
    )
    parts = [
        f"<h4>{html.escape(value)} in each format</h4>",
        numbers.table_html(rows, missing_reasons=MISSING_REASONS),
        f"<ul class='px-bits-explain'>{said}</ul>",
        f"<p class='px-number-key'>Numbers are shortened: hover one for its exact value. "
        f"{numbers.MISSING} marks a cell with no value (hover it for why).</p>",
    ]
    small = [i.format for i in infos if _bits_of(i.format) <= 8]
    if small:
        table = value_table(small[0]).astype({"value": object})
        digits = numbers.digits_for(resolve(small[0]).mantissa_bits)
        table["value"] = [numbers.Markup(numbers.cell_html(v, digits=digits)) for v in table["value"]]
        parts += [
            f"<h4>Every value of {html.escape(small[0])} ({len(table)} code points)</h4>",
            numbers.table_html(table, max_rows=256),
        ]
    return "".join(parts)


def _bits_of(dtype: str) -> int:
    return resolve(dtype).bits
