"""Plots of :mod:`explorer.queries.ranges`: number lines, op-aware regions, binary maps.

Pure functions of the analysis results; no pyplot.  Each takes an optional
``ax`` and returns the ``matplotlib.figure.Figure`` it drew on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from explorer.plots.palette import INK, PAPER
from explorer.plots.palette import RANGE_KIND_COLORS as KIND_COLORS

#: ``KIND_COLORS``: one colour per kind of input, in the order of
#: :data:`explorer.analysis.regions.KINDS` (from :mod:`explorer.plots.palette`)


def _new_ax(ax: Any, figsize: tuple[float, float]) -> Any:
    if ax is not None:
        return ax
    from matplotlib.figure import Figure

    return Figure(figsize=figsize, layout="constrained").add_subplot()


def _legend(ax: Any, kinds: list[str] | None = None, right: bool = False) -> None:
    from matplotlib.patches import Patch

    kinds = kinds or list(KIND_COLORS)
    handles = [Patch(color=KIND_COLORS[k], label=k) for k in kinds]
    if right:
        ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)
    else:
        ax.legend(
            handles=handles,
            loc="lower center",
            bbox_to_anchor=(0.5, 1.0),
            ncol=len(kinds),
            fontsize=8,
            frameon=False,
        )


def plot_number_lines(lines: Any, ax: Any = None) -> Any:
    """Stacked number lines on a log2 |x| axis: underflow to zero, subnormal, normal,
    overflow, with marks at the smallest subnormal, smallest normal, eps and max.

    ``lines``: a :class:`~explorer.queries.ranges.NumberLine` or a list of them.
    """
    if not isinstance(lines, list | tuple):
        lines = [lines]
    if not lines:
        raise ValueError("no number lines to draw")
    ax = _new_ax(ax, (9.0, 0.45 * len(lines) + 1.2))
    bounds = [line.log2_bounds() for line in lines]
    lo = min(b["smallest_subnormal"] for b in bounds) - 6
    hi = max(b["overflow_bound"] for b in bounds) + 6
    for row, (line, b) in enumerate(zip(lines, bounds, strict=True)):
        y = len(lines) - 1 - row
        zero_edge = b.get("zero_bound", b["smallest_subnormal"])
        normal = b["smallest_normal"]
        top = b["overflow_bound"]
        ax.barh(y, zero_edge - lo, left=lo, color=KIND_COLORS["underflow"], height=0.6)
        ax.barh(y, normal - zero_edge, left=zero_edge, color=KIND_COLORS["subnormal"], height=0.6)
        ax.barh(y, top - normal, left=normal, color=KIND_COLORS["ok"], height=0.6)
        ax.barh(y, hi - top, left=top, color=KIND_COLORS["overflow"], height=0.6)
        for key, marker in (
            ("smallest_subnormal", "|"),
            ("smallest_normal", "|"),
            ("max", "|"),
            ("eps", "v"),
        ):
            ax.plot(
                [b[key]],
                [y + (0.38 if key == "eps" else 0)],
                marker=marker,
                color=INK,
                markersize=7 if key == "eps" else 12,
            )
        label = f"overflow → {line.overflow_gives}"
        inside = _fits(ax, label, 7, hi - top - 1.0, hi - lo)
        ax.text(
            hi - 0.5 if inside else top - 0.5,
            y,
            label,
            va="center",
            ha="right",
            fontsize=7,
            color=PAPER if inside else INK,  # white on the red band, else ink on the pale "ok" band
        )
    ax.set_yticks(range(len(lines)), [line.format for line in reversed(lines)], fontsize=8)
    ax.set_xlim(lo, hi)
    ax.set_xlabel("log2 |x|   (| marks: smallest subnormal, smallest normal, max; ▼ eps)")
    _legend(ax, ["underflow", "subnormal", "ok", "overflow"])
    return ax.figure


def _fits(ax: Any, text: str, size: float, span: float, full: float) -> bool:
    """True when ``text`` at ``size`` points is narrower than ``span`` data units of an x axis
    ``full`` units wide (the axes' width read from its figure, no drawing needed)."""
    from matplotlib.textpath import TextPath

    width_pt = ax.get_position().width * ax.figure.get_figwidth() * 72.0
    return float(TextPath((0, 0), text, size=size).get_extents().width) < span / full * width_pt


def _index_ticks(ax: Any, inputs: np.ndarray, axis: str = "x", count: int = 9) -> None:
    """Label an axis of input indices with the input values at a few positions."""
    if inputs.size == 0:
        return
    pos = np.unique(np.linspace(0, inputs.size - 1, count).astype(int))
    labels = [f"{inputs[p]:.3g}" for p in pos]
    if axis == "x":
        ax.set_xticks(pos, labels, fontsize=7, rotation=30)
    else:
        ax.set_yticks(pos, labels, fontsize=7)


def plot_regions(regions: Any, ax: Any = None) -> Any:
    """One row per backend: the kind of every swept input, inputs in value order (evenly
    spaced code points, so the x axis is logarithmic on each side of zero).

    ``regions``: an :class:`~explorer.queries.ranges.OpRegions` or a dict of them by backend.
    """
    if not isinstance(regions, dict):
        regions = {regions.backend: regions}
    if not regions:
        raise ValueError("no regions to draw")
    ax = _new_ax(ax, (9.0, 0.5 * len(regions) + 1.6))
    names = list(regions)
    first = next(iter(regions.values()))
    for row, name in enumerate(names):
        reg = regions[name]
        y = len(names) - 1 - row
        if not reg.ran:
            ax.text(
                first.inputs.size / 2,
                y,
                f"{reg.status}: {reg.error[:80]}",
                ha="center",
                va="center",
                fontsize=7,
            )
            continue
        starts = np.concatenate([[0], np.nonzero(np.diff(reg.kinds))[0] + 1])
        ends = np.concatenate([starts[1:], [reg.kinds.size]])
        narrow = reg.kinds.size / 250  # runs thinner than a pixel or two get a visible mark
        for s, e in zip(starts, ends, strict=True):
            kind = list(KIND_COLORS)[int(reg.kinds[s])]
            ax.barh(y, max(e - s, 1), left=s, color=KIND_COLORS[kind], height=0.7)
            if kind != "ok" and e - s < narrow:
                ax.plot([(s + e) / 2] * 2, [y - 0.35, y + 0.35], color=KIND_COLORS[kind], linewidth=2.5)
    ax.set_yticks(range(len(names)), list(reversed(names)), fontsize=8)
    ax.set_xlim(0, max(first.inputs.size, 1))
    _index_ticks(ax, first.inputs)
    scope = "every finite value" if first.exhaustive else "sampled inputs"
    ax.set_xlabel(f"input x of {first.op} in {first.format} ({scope}, in value order)")
    present = {int(k) for reg in regions.values() if reg.ran for k in np.unique(reg.kinds)}
    _legend(ax, [k for i, k in enumerate(KIND_COLORS) if i in present or i < 5])
    return ax.figure


def plot_binary_map(bmap: Any, ax: Any = None) -> Any:
    """The kind of every (a, b) pair of a binary op as an image; the axes hold the grid's
    values in order (evenly spaced code points)."""
    from matplotlib.colors import ListedColormap

    ax = _new_ax(ax, (5.5, 5.0))
    if bmap.kinds.size == 0:
        ax.text(
            0.5, 0.5, f"{bmap.backend}: {bmap.status}\n{bmap.error[:80]}", ha="center", transform=ax.transAxes
        )
        return ax.figure
    cmap = ListedColormap(list(KIND_COLORS.values()))
    ax.imshow(
        bmap.kinds.T,
        origin="lower",
        cmap=cmap,
        vmin=-0.5,
        vmax=len(KIND_COLORS) - 0.5,
        interpolation="nearest",
        aspect="auto",
    )
    _index_ticks(ax, bmap.a, "x", 7)
    _index_ticks(ax, bmap.b, "y", 7)
    ax.set_xlabel("a")
    ax.set_ylabel("b")
    ax.set_title(f"{bmap.op}(a, b) in {bmap.format} on {bmap.backend}", fontsize=9)
    _legend(ax, right=True)
    return ax.figure


def ranges_figure(lines: Any, detail: Any = None, title: str | None = None) -> Any:
    """The Ranges view: the formats' number lines, above the op's regions (``detail`` a dict of
    ``OpRegions`` by backend, titled ``title``) or its binary map (``detail`` a ``BinaryMap``).

    Fixed-layout axes (no layout engine), so a re-render is one draw; returns the Figure.
    """
    from matplotlib.figure import Figure

    from explorer.plots._layout import stacked_axes

    fig = Figure(figsize=(10.0, 4.0))
    lines_height = 0.32 * len(lines) + 0.2
    if detail is None:
        plot_number_lines(lines, stacked_axes(fig, [lines_height], top=0.5)[0])
        return fig
    if isinstance(detail, dict):
        lines_ax, ax = stacked_axes(
            fig, [lines_height, 0.45 * len(detail) + 0.4], gap=1.5, top=0.5, bottom=0.8
        )
        plot_regions(detail, ax)
        ax.set_title(title, fontsize=9, pad=22)
    else:
        lines_ax, ax = stacked_axes(fig, [lines_height, 3.2], gap=1.2, top=0.5, right=1.6)
        plot_binary_map(detail, ax)
    plot_number_lines(lines, lines_ax)
    return fig
