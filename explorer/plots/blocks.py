"""Plots of :mod:`explorer.queries.blocks`: each format's relative errors as a histogram.

Pure functions; no pyplot.  Each takes an optional ``ax`` and returns the Figure.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from explorer.plots.palette import BLOCK_FORMAT_COLORS

#: the histogram's range of log10(relative error): 1e-8 to 1 (a flush to zero is 1)
LOG10_RANGE: tuple[float, float] = (-8.0, 0.5)
BINS = 68


def plot_error_histogram(dist: Any, ax: Any = None) -> Any:
    """One step histogram per format of log10(|q - x| / |x|) over the tensor's nonzero
    elements, counts on a log axis; the legend gives each format's RMS relative error and
    its share of exact elements (error 0, which a log axis cannot show).  Block formats are
    solid lines, per-tensor scaling dashed grey shades.
    """
    if ax is None:
        from matplotlib.figure import Figure

        ax = Figure(figsize=(9.0, 3.8), layout="constrained").add_subplot()
    edges = np.linspace(*LOG10_RANGE, BINS + 1)
    greys = iter(("#555555", "#999999", "#000000", "#BBBBBB"))
    for name, errors in dist.errors.items():
        finite = errors[np.isfinite(errors)]
        exact = float(np.mean(finite == 0)) if finite.size else 0.0
        logs = np.log10(np.clip(finite[finite > 0], 10.0 ** LOG10_RANGE[0], None))
        counts, _ = np.histogram(logs, bins=edges)
        rms = float(np.sqrt(np.mean(finite**2))) if finite.size else float("nan")
        block = name in BLOCK_FORMAT_COLORS
        ax.stairs(
            counts,
            edges,
            color=BLOCK_FORMAT_COLORS[name] if block else next(greys, "#777777"),
            linestyle="-" if block else "--",
            linewidth=1.6,
            label=f"{name}: RMS {rms:.3g}, exact {exact:.1%}",
        )
    ax.set_yscale("log")
    ax.set_xlabel("log10 of the relative error |q - x| / |x|  (0: flushed to zero)")
    ax.set_ylabel("elements")
    shape = " x ".join(map(str, dist.shape))
    ax.set_title(f"Relative error per element on {dist.tensor} ({shape})", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", frameon=False)
    return ax.figure
