"""Plots of :mod:`explorer.analysis.accuracy`: ULP error against input, backends overlaid.

Pure functions; no pyplot.  Each takes an optional ``ax`` and returns the Figure.
"""

from __future__ import annotations

from typing import Any

import numpy as np

BACKEND_STYLES: dict[str, tuple[str, str]] = {
    "numpy": ("#1f77b4", "o"),
    "tensorflow": ("#ff7f0e", "x"),
    "emulated": ("#2ca02c", "+"),
    "torch": ("#d62728", "s"),
}


def plot_ulp_error(result: Any, ax: Any = None, max_points: int = 20_000) -> Any:
    """Error in ULPs against the input (symmetric log axis), one series per backend;
    correctly rounded results (0 ULP) sit on the bottom line.  Binary ops are plotted
    against their first operand.  At most ``max_points`` points per backend are drawn
    (every nonzero error first)."""
    if ax is None:
        from matplotlib.figure import Figure

        ax = Figure(figsize=(9.0, 3.6), layout="constrained").add_subplot()
    x = result.inputs[0]
    for k, (name, ulps) in enumerate(result.ulps.items()):
        colour, marker = BACKEND_STYLES.get(name, (f"C{k}", "."))
        finite = np.isfinite(ulps)
        wrong = np.nonzero(finite & (ulps > 0))[0]
        right = np.nonzero(finite & (ulps == 0))[0]
        keep = max(max_points - wrong.size, 0)
        if right.size > keep:
            right = right[:: max(right.size // max(keep, 1), 1)][:keep]
        idx = np.concatenate([wrong[:max_points], right])
        summary = result.by_backend(name)
        label = (
            f"{name}: max {summary.max_ulp:g}, mean {summary.mean_ulp:.3g}, "
            f"{100 * summary.correctly_rounded_fraction:.2f}% correctly rounded"
        )
        ax.plot(
            x[idx],
            ulps[idx],
            linestyle="none",
            marker=marker,
            markersize=3,
            color=colour,
            alpha=0.7,
            label=label,
        )
    from explorer.formats import resolve

    # linear through the subnormals, logarithmic from the smallest normal on
    ax.set_xscale("symlog", linthresh=resolve(result.format).smallest_normal)
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_xlabel("input x" if len(result.inputs) == 1 else "first input a")
    ax.set_ylabel(f"error (ulps of {result.format})")
    ax.set_title(f"{result.op} in {result.format}: error against float64 correctly rounded", fontsize=9)
    if result.ulps:
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    else:
        ax.text(0.5, 0.5, "no backend ran", transform=ax.transAxes, ha="center")
    return ax.figure


def accuracy_figure(result: Any, study: Any) -> Any:
    """The Accuracy view: the ULP error per backend (:func:`plot_ulp_error`; left out when
    ``result`` is None) above the running sum of the accumulation ``study``.

    Fixed-layout axes (no layout engine), so a re-render is one draw; returns the Figure.
    """
    from matplotlib.figure import Figure

    from explorer.plots._layout import stacked_axes
    from explorer.plots.accumulation import plot_running_sum

    fig = Figure(figsize=(10.0, 4.0))
    if result is None:
        (sum_ax,) = stacked_axes(fig, [2.6], top=0.4)
    else:
        ulp_ax, sum_ax = stacked_axes(fig, [2.4, 2.6], gap=1.6, top=0.4)
        plot_ulp_error(result, ulp_ax, max_points=6000)
    plot_running_sum(study, sum_ax)
    return fig
