"""Bits tab: a value in each selected format, field by field, with neighbours and rounding error."""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets

from explorer.app.render import table_html
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

    def _value_changed(self, change: dict[str, Any]) -> None:
        try:
            self.state.set(value=change["new"])
        except (ValueError, TypeError) as exc:
            self.show_message(str(exc), "warning")

    def render(self) -> None:
        from explorer.analysis.bits import inspect_value, value_table
        from explorer.plots.bits import plot_bit_fields

        value = self.state.value
        infos = [inspect_value(value, d) for d in self.state.dtypes]
        self.show_figure(plot_bit_fields(infos), "bit fields")
        rows = [
            {
                "format": i.format,
                "stored value": i.value,
                "exact decimal": i.exact,
                "bits": i.bits,
                "hex": i.hex,
                "class": i.kind,
                "exponent": i.exponent,
                "below": i.below,
                "above": i.above,
                "rounding error": i.rounding_error,
                "relative error": i.relative_error,
            }
            for i in infos
        ]
        parts = [f"<h4>{html.escape(value)} in each format</h4>", table_html(rows)]
        small = [d for d in self.state.dtypes if _bits_of(d) <= 8]
        if small:
            table = value_table(small[0])
            parts += [
                f"<h4>Every value of {html.escape(small[0])} ({len(table)} code points)</h4>",
                table_html(table, max_rows=256),
            ]
        self.show_html("".join(parts))
        self.clear_message()


def _bits_of(dtype: str) -> int:
    return resolve(dtype).bits
