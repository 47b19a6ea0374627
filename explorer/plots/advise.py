"""The sensitivity plot: the error each layer adds when it alone is quantized, layers in
execution order (columns) by formats (rows), a heatmap on a log colour scale with each cell's
value written in it.

Pure: it takes names and numbers (as :func:`explorer.queries.advise.advise_precision` gives
them).  No pyplot; the Figure is returned.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def plot_sensitivity(
    layers: Sequence[str], formats: Sequence[str], errors: Sequence[Sequence[float]], metric: str = ""
) -> Any:
    """A heatmap of ``errors[format][layer]`` (rows: ``formats``; columns: ``layers`` in
    execution order), log colour scale; cells with an error of zero or below drawn in the
    lowest colour, non-finite ones hatched grey and marked ``inf``.  Returns the Figure.

    >>> fig = plot_sensitivity(["a", "b"], ["mxfp4_e2m1"], [[0.1, 0.01]], metric="relative_rms")
    >>> [t.get_text() for t in fig.axes[0].get_xticklabels()]
    ['a', 'b']
    """
    import numpy as np
    from matplotlib.colors import LogNorm
    from matplotlib.figure import Figure

    if len(errors) != len(formats) or any(len(row) != len(layers) for row in errors):
        raise ValueError(f"errors must be {len(formats)} rows of {len(layers)} values")
    grid = np.array(errors, dtype=np.float64).reshape(len(formats), len(layers))
    finite_positive = grid[np.isfinite(grid) & (grid > 0)]
    low = float(finite_positive.min()) if finite_positive.size else 1e-6
    high = float(finite_positive.max()) if finite_positive.size else 1.0
    if high <= low:
        high = low * 10
    shown = np.where(np.isfinite(grid), np.clip(grid, low, high), np.nan)
    fig = Figure(
        figsize=(max(6.0, 0.45 * len(layers) + 3.0), 1.2 + 0.5 * max(1, len(formats))), layout="constrained"
    )
    ax = fig.add_subplot()
    image = ax.imshow(
        np.ma.masked_invalid(shown), aspect="auto", cmap="viridis", norm=LogNorm(vmin=low, vmax=high)
    )
    for row in range(grid.shape[0]):
        for col in range(grid.shape[1]):
            value = grid[row, col]
            text = f"{value:.2g}" if math.isfinite(value) else "inf"
            if not math.isfinite(value):
                ax.add_patch(_hatched(col, row))
            if len(layers) <= 40:
                bright = math.isfinite(value) and math.log(max(value, low) / low) > 0.6 * math.log(high / low)
                color = "black" if bright or not math.isfinite(value) else "white"
                ax.text(col, row, text, ha="center", va="center", fontsize=6, color=color)
    ax.set_xticks(range(len(layers)), [str(n) for n in layers], rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(len(formats)), [str(f) for f in formats], fontsize=8)
    ax.set_xlabel("covered layers, in execution order")
    fig.colorbar(image, ax=ax, label="error added")
    title = "Each layer alone quantized: the error it adds"
    ax.set_title(f"{title} ({metric})" if metric else title, fontsize=10)
    return fig


def _hatched(col: int, row: int) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle((col - 0.5, row - 0.5), 1, 1, facecolor="#bbbbbb", hatch="//", edgecolor="#666666")


__all__ = ["plot_sensitivity"]
