"""The model check's plot: the largest |activation| of each layer against each format's range.

Pure: it takes the layers' names and maxima (as :func:`explorer.queries.model_view.layer_maxima`
gives them) and the format names, and draws on a log scale one point per layer, each format's
max and smallest normal as lines, and the band between them (its normal range) shaded.  No
pyplot; the optional ``ax`` is drawn on, and the Figure returned.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from explorer.formats import resolve
from explorer.plots.palette import INK

#: one colour per format band, in the order the formats are given (cycled)
BAND_COLORS: tuple[str, ...] = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2")


def format_limits(formats: Sequence[str]) -> list[tuple[str, float, float]]:
    """(name, smallest normal, max) of each format, as the plot draws them.

    >>> format_limits(["fp16"])
    [('float16', 6.103515625e-05, 65504.0)]
    """
    out = []
    for name in formats:
        fmt = resolve(name)
        out.append((fmt.name, float(fmt.smallest_normal), float(fmt.max)))
    return out


def plot_layer_maxima(
    layers: Sequence[str], max_abs: Sequence[float | None], formats: Sequence[str], ax: Any = None
) -> Any:
    """Max |activation| per layer (points, log scale) against each format's max and smallest
    normal (horizontal lines, the normal range between them a shaded band).  A layer whose
    maximum is zero or unknown is drawn at the bottom edge as a hollow mark; an inf/NaN one at
    the top edge.  Returns the Figure.

    >>> fig = plot_layer_maxima(["dense", "amplify"], [3.0, 2e5], ["float16"])
    >>> ax = fig.axes[0]
    >>> ax.get_yscale(), [t.get_text() for t in ax.get_xticklabels()]
    ('log', ['dense', 'amplify'])
    """
    if len(layers) != len(max_abs):
        raise ValueError(f"{len(layers)} layers but {len(max_abs)} maxima")
    if ax is None:
        from matplotlib.figure import Figure

        ax = Figure(figsize=(max(6.0, 0.7 * len(layers) + 3.0), 4.2), layout="constrained").add_subplot()
    limits = format_limits(formats)
    finite = [v for v in max_abs if v is not None and math.isfinite(v) and v > 0]
    values = finite + [v for _, lo, hi in limits for v in (lo, hi)]
    bottom = min(values) / 10 if values else 1e-3
    top = max(values) * 10 if values else 1e3
    for i, (name, tiny, big) in enumerate(limits):
        color = BAND_COLORS[i % len(BAND_COLORS)]
        ax.axhspan(tiny, big, color=color, alpha=0.08, zorder=0)
        ax.axhline(big, color=color, linewidth=1.4, label=f"{name} max {big:.4g}")
        ax.axhline(
            tiny, color=color, linewidth=1.0, linestyle="--", label=f"{name} smallest normal {tiny:.3g}"
        )
    xs = list(range(len(layers)))
    for x, v in zip(xs, max_abs, strict=True):
        if v is not None and math.isfinite(v) and v > 0:
            ax.plot([x], [v], "o", color=INK, markersize=7, zorder=3)
        elif v is not None and not math.isfinite(v):
            ax.plot([x], [top], "^", color="#cc0000", markersize=8, zorder=3, clip_on=False)
        else:
            ax.plot([x], [bottom], "o", mfc="none", color=INK, markersize=7, zorder=3, clip_on=False)
    ax.set_yscale("log")
    ax.set_ylim(bottom, top)
    # parse_math=False: a layer named like TeX (`$\\frac{a}{$`) is drawn as its text, never parsed
    labels = [str(name) for name in layers]
    ax.set_xticks(xs, labels, rotation=30, ha="right", fontsize=8, parse_math=False)
    ax.set_xlim(-0.6, len(layers) - 0.4 if layers else 0.6)
    ax.set_ylabel("max |activation| (float32 pass)")
    ax.set_title("Largest |activation| per layer against each format's range", fontsize=10)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    return ax.figure


__all__ = ["BAND_COLORS", "format_limits", "plot_layer_maxima"]
