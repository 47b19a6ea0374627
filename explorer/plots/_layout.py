"""Figure layout helpers shared by the plots (no layout engine: one draw per render)."""

from __future__ import annotations

from typing import Any


def stacked_axes(
    fig: Any,
    heights: list[float],
    left: float = 1.5,
    right: float = 0.9,
    top: float = 0.55,
    gap: float = 0.85,
    bottom: float = 0.55,
) -> list[Any]:
    """Axes stacked top to bottom with fixed margins in inches (no layout engine: one draw only).

    ``heights`` are the axes' heights in inches; the figure is resized to fit them.

    >>> from matplotlib.figure import Figure
    >>> fig = Figure(figsize=(8.0, 1.0))
    >>> top_ax, bottom_ax = stacked_axes(fig, [1.0, 2.0])
    >>> round(float(fig.get_figheight()), 2)  # 0.55 + 1.0 + 0.85 + 2.0 + 0.55
    4.95
    """
    width = fig.get_figwidth()
    total = top + sum(heights) + gap * (len(heights) - 1) + bottom
    fig.set_size_inches(width, total)
    axes, y = [], total - top
    for h in heights:
        y -= h
        axes.append(fig.add_axes((left / width, y / total, 1 - (left + right) / width, h / total)))
        y -= gap
    return axes


def symlog_ticks(lo: float, hi: float, linthresh: float, per_side: int = 5) -> list[float]:
    """Round tick values for a symlog axis over ``[lo, hi]``: 0 and signed powers of ten from
    ``linthresh`` out, every k-th decade so each side has at most ``per_side`` ticks.

    >>> symlog_ticks(-1e4, 1e4, 1e-4, per_side=3)
    [-10000.0, -10.0, -0.01, 0.0, 0.01, 10.0, 10000.0]
    >>> symlog_ticks(0.0, 300.0, 1.0)
    [0.0, 1.0, 10.0, 100.0]
    """
    import math

    def side(limit: float) -> list[float]:
        if limit < linthresh:
            return []
        first, last = math.ceil(math.log10(linthresh)), math.floor(math.log10(limit))
        step = max(1, math.ceil((last - first + 1) / per_side))
        return [10.0**k for k in reversed(range(last, first - 1, -step))]

    return [-v for v in reversed(side(-lo))] + [0.0] + side(hi)


def plain_number(value: float, _pos: Any = None) -> str:
    """A tick label in the shortest plain form (``%g``), for FuncFormatter.

    >>> plain_number(0.5), plain_number(1e-05), plain_number(1000.0), plain_number(-0.0)
    ('0.5', '1e-05', '1000', '0')
    """
    return format(value + 0.0, "g")
