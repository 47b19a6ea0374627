"""Plot of :mod:`explorer.analysis.accumulation`: running sums against N.

Pure function; no pyplot.  Returns the Figure.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from explorer.plots.palette import ACCUMULATOR_COLORS, GUIDE_LINE


def plot_running_sum(study: Any, ax: Any = None) -> Any:
    """Running sum (or dot product) against the number of terms, one line per accumulator,
    the exact value, and a mark where each accumulator stagnated.

    ``study``: a :class:`~explorer.analysis.accumulation.SummationStudy` or ``DotStudy`` (each
    holds its running sums and where each accumulator stagnated).
    """
    if ax is None:
        from matplotlib.figure import Figure

        ax = Figure(figsize=(8.0, 3.8), layout="constrained").add_subplot()
    n = np.arange(1, study.n + 1)
    # at most ~2,000 vertices a line (every k-th running sum and the last): the same curve at
    # any screen width, and a small vector figure
    shown = np.unique(np.r_[np.arange(0, study.n, max(study.n // 2000, 1)), study.n - 1])
    for name, sums in study.running.items():
        label = f"{study.format} accumulator" if name == "format" else f"{name} accumulator"
        colour = ACCUMULATOR_COLORS.get(name)
        ax.plot(
            n[shown],
            sums[shown],
            label=f"{label}: {sums[-1]:.6g}",
            color=colour,
            linestyle="--" if name == "float64" else "-",
            linewidth=1.3,
        )
        stuck = study.stagnation[name]
        if stuck.stagnated and stuck.at_n is not None:
            ax.plot([stuck.at_n], [stuck.value], marker="o", color=colour)
            ax.annotate(
                f"stuck at {stuck.value:g} after {stuck.at_n} terms",
                (stuck.at_n, stuck.value),
                textcoords="offset points",
                xytext=(8, 8),
                fontsize=12,
                color=colour,
            )
    ax.axhline(
        study.exact_final,
        color=GUIDE_LINE,
        linewidth=0.8,
        linestyle=":",
        label=f"exact: {study.exact_final:.6g}",
    )
    ax.set_xlim(0, study.n)
    if min(float(np.min(sums)) for sums in study.running.values()) >= 0 and study.exact_final >= 0:
        ax.set_ylim(bottom=0)  # a sum of non-negative terms: the axis does not run below zero
    ax.set_xlabel("number of terms N", fontsize=12)
    ax.set_ylabel("running sum" if hasattr(study, "distribution") else "running dot product", fontsize=12)
    ax.tick_params(labelsize=12)
    what = getattr(study, "distribution", "uniform")
    ax.set_title(f"{study.n:,} {what} terms rounded to {study.format}", fontsize=13, loc="left")
    ax.legend(fontsize=13, loc="upper left", frameon=False)
    return ax.figure
