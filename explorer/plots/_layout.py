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
