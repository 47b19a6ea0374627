"""Plots of :mod:`explorer.queries.accuracy`: the error against the input, backends overlaid,
by either named measure (ulp_error by default, or ulp_steps).

Pure functions; no pyplot.  Each takes an optional ``ax`` and returns the Figure.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from explorer.plots.palette import BACKEND_STYLES, GUIDE_LINE

#: the y axis of each measure (one line each, as ``explorer.queries.accuracy.DEFINITIONS``)
MEASURE_LABELS: dict[str, str] = {
    "ulp_error": "ulp_error = |y - f(x)| / ulp(f(x))",
    "ulp_steps": "ulp_steps (representable values from the correctly rounded one)",
}


#: font sizes in points (SVG user units): at the narrowest panel (about 450 px for a 468 pt
#: figure, 0.96 px a point) the legend is still 12 px or more
LEGEND_PT = 13
TICK_PT = 12
LABEL_PT = 12
TITLE_PT = 13
#: the figure's width in inches (468 pt: the SVG's own width, 624 px, shrinks to fit a panel)
FIGURE_WIDTH_IN = 6.5


def _label(name: str, summary: Any) -> str:
    """A legend entry: the backend and its largest error by both measures (the table has the rest).

    >>> from types import SimpleNamespace
    >>> _label("numpy", SimpleNamespace(max_ulp_error=0.5001, max_ulp_steps=1.0))
    'numpy: ulp_error max 0.5001 · ulp_steps max 1'
    """

    def figure(value: float | None, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    return (
        f"{name}: ulp_error max {figure(summary.max_ulp_error, '.4g')} · "
        f"ulp_steps max {figure(summary.max_ulp_steps, 'g')}"
    )


def plot_ulp_error(result: Any, ax: Any = None, max_points: int = 20_000, measure: str = "ulp_error") -> Any:
    """The error of each backend against the input (symmetric log axes), one series per backend,
    by ``measure``: ``"ulp_error"`` (real-valued; at most 0.5 when correctly rounded, the dashed
    line) or ``"ulp_steps"`` (integers; correctly rounded results on the bottom line).  Binary ops
    are plotted against their first operand.  At most ``max_points`` points per backend are drawn
    (every input that is not correctly rounded first); the legend gives both measures.
    """
    if measure not in MEASURE_LABELS:
        raise ValueError(f"unknown measure {measure!r}; valid: {', '.join(MEASURE_LABELS)}")
    if ax is None:
        from matplotlib.figure import Figure

        ax = Figure(figsize=(FIGURE_WIDTH_IN, 3.6), layout="constrained").add_subplot()
    x = result.inputs[0]
    values = result.ulp_errors if measure == "ulp_error" else result.ulp_steps
    for k, (name, errors) in enumerate(values.items()):
        colour, marker = BACKEND_STYLES.get(name, (f"C{k}", "."))
        steps = result.ulp_steps[name]
        finite = np.isfinite(errors)
        wrong = np.nonzero(finite & (steps > 0))[0]
        right = np.nonzero(finite & (steps == 0))[0]
        keep = max(max_points - wrong.size, 0)
        if right.size > keep:  # evenly over the whole input range, both ends kept
            right = right[np.unique(np.linspace(0, right.size - 1, max(keep, 2)).astype(np.int64))]
        idx = np.concatenate([wrong[:max_points], right])
        ax.plot(
            x[idx],
            errors[idx],
            linestyle="none",
            marker=marker,
            markersize=3,
            color=colour,
            alpha=0.7,
            label=_label(name, result.by_backend(name)),
            rasterized=True,  # thousands of points: one image inside a vector figure
        )
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    from explorer.formats import resolve
    from explorer.plots._layout import plain_number, symlog_ticks

    if measure == "ulp_error" and values:
        ax.axhline(0.5, color=GUIDE_LINE, linestyle="--", linewidth=0.8)
    # linear through the subnormals, logarithmic from the smallest normal on
    linthresh = resolve(result.format).smallest_normal
    ax.set_xscale("symlog", linthresh=linthresh)
    # linear up to 1 (where every correctly rounded ulp_error lies), logarithmic above
    ax.set_yscale("symlog", linthresh=1.0, linscale=1.0 if measure == "ulp_steps" else 2.0)
    # both measures are distances: the y axis starts at 0 and ends on a round value
    finite = [e[np.isfinite(e)] for e in values.values()]
    top = max((float(e.max()) for e in finite if e.size), default=1.0)
    y_ticks = [t for t in symlog_ticks(0.0, max(top, 1.0) * 1.5, 1.0) if t >= 0]
    if measure == "ulp_error":
        y_ticks = sorted({*y_ticks, 0.5})
    ax.set_ylim(0.0, max(y_ticks[-1], top) * (1.6 if top > 1 else 1.15))
    ax.yaxis.set_major_locator(FixedLocator(y_ticks))
    shown_x = x[np.isfinite(x)]  # inputs may hold inf and nan: the ticks span the finite ones
    lo, hi = (float(shown_x.min()), float(shown_x.max())) if shown_x.size else (-1.0, 1.0)
    ax.xaxis.set_major_locator(FixedLocator(symlog_ticks(lo, hi, linthresh, per_side=3)))
    if lo < hi:
        ax.set_xlim(lo, hi)  # every input's place, whichever points were drawn
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(FuncFormatter(plain_number))
        axis.set_minor_locator(NullLocator())
    ax.tick_params(labelsize=TICK_PT)
    ax.set_xlabel("input x" if len(result.inputs) == 1 else "first input a", fontsize=LABEL_PT)
    ax.set_ylabel(measure, fontsize=LABEL_PT)
    ax.set_title(f"{result.op} in {result.format}: {measure} per input", fontsize=TITLE_PT, loc="left")
    if values:
        ax.legend(
            fontsize=LEGEND_PT,
            loc="upper left",
            bbox_to_anchor=(-0.12, -0.3),
            ncol=1,
            frameon=False,
            borderaxespad=0.0,
            markerscale=3,
        )
    else:
        ax.text(0.5, 0.5, "no backend ran", transform=ax.transAxes, ha="center")
    return ax.figure


def accuracy_figure(result: Any, study: Any) -> Any:
    """The Accuracy view: the ulp_error per backend (:func:`plot_ulp_error`, both measures in its
    legend; left out when ``result`` is None) above the running sum of the accumulation ``study``.

    Fixed-layout axes (no layout engine), so a re-render is one draw; returns the Figure.
    """
    from matplotlib.figure import Figure

    from explorer.plots._layout import stacked_axes
    from explorer.plots.accumulation import plot_running_sum

    fig = Figure(figsize=(FIGURE_WIDTH_IN, 4.0))
    margins = {"left": 0.85, "right": 0.4, "top": 0.4, "bottom": 0.6}
    if result is None:
        (sum_ax,) = stacked_axes(fig, [2.4], **margins)
    else:
        # below the ulp plot: its x label, then one legend line per backend, then the sum's title
        gap = 1.3 + 0.26 * max(len(result.ulp_errors), 1)
        ulp_ax, sum_ax = stacked_axes(fig, [2.2, 2.4], gap=gap, **margins)
        plot_ulp_error(result, ulp_ax, max_points=6000)
    plot_running_sum(study, sum_ax)
    return fig
