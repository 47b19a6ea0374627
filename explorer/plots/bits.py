"""Plot of :mod:`explorer.analysis.bits`: the bit fields of one or more values.

Pure function; no pyplot.  Returns the Figure.
"""

from __future__ import annotations

from typing import Any

from explorer.plots.palette import BIT_FIELD_COLORS as FIELD_COLORS
from explorer.plots.palette import PAPER


def plot_bit_fields(infos: Any, ax: Any = None) -> Any:
    """One row of boxes per :class:`~explorer.analysis.bits.BitInfo`: sign, exponent and
    mantissa bits, labelled with the format and the stored value."""
    from matplotlib.patches import Patch, Rectangle

    if not isinstance(infos, list | tuple):
        infos = [infos]
    if not infos:
        raise ValueError("no values to draw")
    width = max(len(i.bits) for i in infos)
    if ax is None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(min(3.0 + 0.25 * width, 14.0), 0.6 * len(infos) + 0.9), layout="constrained")
        ax = fig.add_subplot()
    for row, info in enumerate(infos):
        y = len(infos) - 1 - row
        n_sign = 0 if info.sign is None else 1
        fields = (
            ["sign"] * n_sign
            + ["exponent"] * len(info.exponent_bits)
            + ["mantissa"] * len(info.mantissa_bits)
        )
        for col, (bit, field) in enumerate(zip(info.bits, fields, strict=True)):
            ax.add_patch(Rectangle((col, y - 0.4), 0.95, 0.8, color=FIELD_COLORS[field], alpha=0.85))
            ax.text(col + 0.475, y, bit, ha="center", va="center", color=PAPER, fontsize=8, fontweight="bold")
        ax.text(len(info.bits) + 0.4, y, f"= {info.value!r} ({info.kind})", va="center", fontsize=8)
    ax.set_xlim(-0.2, width + 9)
    ax.set_ylim(-0.7, len(infos) - 0.3)
    ax.set_yticks(range(len(infos)), [i.format for i in reversed(infos)], fontsize=8)
    ax.set_xticks([])
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    ax.legend(
        handles=[Patch(color=c, label=f) for f, c in FIELD_COLORS.items()],
        fontsize=7,
        loc="lower center",
        bbox_to_anchor=(0.5, 1.0),
        ncol=3,
        frameon=False,
    )
    return ax.figure
