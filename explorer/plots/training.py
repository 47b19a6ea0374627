"""Plots of training runs: curves, loss scale, gradient underflow, gradient histograms.

Pure functions of ``explorer.training`` / ``fp8_training`` results;
each takes an optional ``ax`` and returns it (or a new ``Figure``).  No pyplot.

The gradient histogram is drawn against each format's representable range as
in Micikevicius et al. 2018, "Mixed Precision Training", Fig. 3: for every
format a band from its smallest subnormal to its max (lighter where values are
subnormal), so one sees which gradients would flush to zero or overflow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from explorer.formats import resolve
from explorer.plots.palette import (
    HIGHLIGHT,
    INK,
    MUTED_TEXT,
    format_color,
    policy_color,
    policy_marker_style,
    policy_style,
)

#: formats drawn under gradient histograms by default
HISTOGRAM_FORMATS: tuple[str, ...] = ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")
#: the log2 range shown under gradient histograms (bands are clipped to it)
HISTOGRAM_XLIM: tuple[float, float] = (-66.0, 22.0)
CURVE_METRICS: tuple[str, ...] = (
    "loss",
    "accuracy",
    "val_loss",
    "val_accuracy",
    "grad_zero_fraction",
    "grad_subnormal_fraction",
    "seconds_per_step",
)


def _new_ax(ax: Any, figsize: tuple[float, float] = (6.0, 3.8)) -> Any:
    if ax is not None:
        return ax
    from matplotlib.figure import Figure

    return Figure(figsize=figsize, layout="constrained").add_subplot()


def _label(result: Any) -> str:
    return str(getattr(result, "policy", None) or getattr(result, "label", "run"))


def _as_list(results: Any) -> list[Any]:
    if isinstance(results, (list, tuple)):
        return list(results)
    return [results]


#: two curves whose every point lies closer than this fraction of the panel's value span (on the
#: panel's scale: log10 for a log axis) are drawn on top of each other: the panel says so
COINCIDE_FRACTION = 0.005


def coinciding(
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]], log: bool = False
) -> list[list[str]]:
    """Groups (two or more labels, in the given order) of curves ``{label: (xs, ys)}`` that would
    be drawn on top of each other: the same xs, and every y closer than :data:`COINCIDE_FRACTION`
    of the span of all ys (on a log10 scale when ``log``; for a flat panel, 1e-3 of the values).

    >>> coinciding({"float32": ([1, 2], [2.0, 1.0]), "mixed_float16": ([1, 2], [2.0, 1.0001]),
    ...             "float16": ([1, 2], [40.0, 9.0])}, log=True)
    [['float32', 'mixed_float16']]
    """

    def scaled(ys: Sequence[float]) -> np.ndarray:
        values = np.asarray(ys, dtype=float)
        if log:
            with np.errstate(divide="ignore", invalid="ignore"):
                values = np.log10(values)
        return values

    curves = {k: (tuple(xs), scaled(ys)) for k, (xs, ys) in series.items() if len(xs)}
    finite = [v[np.isfinite(v)] for _, v in curves.values()]
    every = np.concatenate(finite) if finite else np.zeros(0)
    if every.size == 0:
        return []
    span = float(every.max() - every.min())
    tol = max(span * COINCIDE_FRACTION, 1e-3 * float(np.abs(every).max()), 1e-12)
    groups: list[list[str]] = []
    for label, (xs, ys) in curves.items():
        for group in groups:
            other_xs, other_ys = curves[group[0]]
            if other_xs == xs and bool(np.all(np.abs(other_ys - ys) <= tol)):
                group.append(label)
                break
        else:
            groups.append([label])
    return [g for g in groups if len(g) > 1]


def _note_coinciding(
    ax: Any, series: Mapping[str, tuple[Sequence[float], Sequence[float]]], log: bool
) -> None:
    """Say above the panel which curves lie on top of each other (one drawn over the other)."""
    groups = coinciding(series, log)
    if groups:  # as the panel's title: above the data, it covers none of it
        ax.set_title("; ".join(_and(g) + " coincide" for g in groups), fontsize="small", loc="left")


def _and(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def plot_curves(results: Any, metric: str = "loss", ax: Any = None) -> Any:
    """One line per run of an epoch metric (``loss``, ``val_accuracy``...); returns the Axes.
    Each policy has its own marker and line style, float32 open on top, and curves that lie on
    top of each other are named in the panel (:func:`coinciding`)."""
    if metric not in CURVE_METRICS:
        raise ValueError(f"unknown metric {metric!r}; valid metrics: {', '.join(CURVE_METRICS)}")
    from matplotlib.ticker import MaxNLocator

    ax = _new_ax(ax)
    log = metric.endswith("loss")
    series = {}
    for r in _as_list(results):
        xs = [e.epoch + 1 for e in r.epochs if hasattr(e, metric)]
        ys = [getattr(e, metric) for e in r.epochs if hasattr(e, metric)]
        if xs:
            label = _label(r)
            ax.plot(xs, ys, label=label, **policy_style(label), **policy_marker_style(label))
            series[label] = (xs, ys)
    ax.set_xlabel("epoch")
    ax.set_ylabel(metric.replace("_", " "))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    if series:  # whole epochs, half an epoch of margin: one epoch is one tick, not 0.96 ... 1.04
        ax.set_xlim(0.5, max(max(xs) for xs, _ in series.values()) + 0.5)
    if log:
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    _note_coinciding(ax, series, log)
    return ax


def plot_loss_scale(results: Any, ax: Any = None) -> Any:
    """The LossScaleOptimizer's scale per step (runs without loss scaling are skipped)."""
    ax = _new_ax(ax)
    drawn = False
    for r in _as_list(results):
        pts = [(s.step, s.loss_scale) for s in getattr(r, "steps", []) if s.loss_scale is not None]
        if not pts:
            pts = [(e.epoch, e.loss_scale) for e in r.epochs if getattr(e, "loss_scale", None) is not None]
        if pts:
            xs, ys = zip(*pts, strict=True)
            ax.step(xs, ys, where="post", label=_label(r), **policy_style(_label(r)))
            skipped = [s.step for s in getattr(r, "steps", []) if s.skipped]
            if skipped:
                by_step = dict(pts)
                ax.plot(skipped, [by_step[s] for s in skipped], "x", color=HIGHLIGHT, label="skipped step")
            drawn = True
    ax.set_yscale("log", base=2)
    ax.set_xlabel("step")
    ax.set_ylabel("loss scale")
    if drawn:
        ax.legend(fontsize="small")
    else:
        ax.text(0.5, 0.5, "no run used loss scaling", ha="center", va="center", transform=ax.transAxes)
    ax.grid(alpha=0.3)
    return ax


def plot_grad_zero_fraction(results: Any, ax: Any = None, kind: str = "zero") -> Any:
    """Per step, the fraction of gradient elements that are zero (``kind="zero"``), subnormal
    or non-finite in the compute dtype; for fp8 runs, the e5m2 underflow fraction."""
    kinds = ("zero", "subnormal", "nonfinite")
    if kind not in kinds:
        raise ValueError(f"unknown kind {kind!r}; valid kinds: {', '.join(kinds)}")
    ax = _new_ax(ax)
    series = {}
    for r in _as_list(results):
        steps = getattr(r, "steps", [])
        attr = f"grad_{kind}_fraction"
        if not steps:
            continue
        if not hasattr(steps[0], attr):
            attr = "grad_underflow_fraction"
            if not hasattr(steps[0], attr):
                continue
        xs, ys = [s.step for s in steps], [getattr(s, attr) for s in steps]
        ax.plot(xs, ys, label=_label(r), **policy_style(_label(r)))
        series[_label(r)] = (xs, ys)
    _note_coinciding(ax, series, log=False)
    ax.set_xlabel("step")
    ax.set_ylabel(f"fraction of gradient elements {kind}")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    return ax


def plot_gradient_histogram(
    histogram: Any, ax: Any = None, formats: Sequence[str] = HISTOGRAM_FORMATS, unscale: bool = False
) -> Any:
    """Bars of log2|g| (one ``GradientHistogram`` or several) over the formats' ranges.

    Each format gets a horizontal band from log2 of its smallest subnormal to
    log2 of its max; the subnormal part is lighter, and the region below the
    smallest subnormal ("becomes zero") is left open.  ``unscale=True`` shifts
    loss-scaled gradients back by log2(loss_scale).  Zero elements are noted in
    the legend.
    """
    fmts = [resolve(f) for f in formats]
    ax = _new_ax(ax, (7.0, 4.2))
    hists = _as_list(histogram)
    if not hists:
        raise ValueError("no histogram to draw")
    top = 0.0
    for h in hists:
        edges = np.asarray(h.edges, dtype=float)
        counts = np.asarray(h.counts, dtype=float)
        shift = np.log2(h.loss_scale) if unscale and h.loss_scale else 0.0
        frac = counts / max(h.total, 1)
        top = max(top, float(frac.max(initial=0.0)))
        zero_pct = 100.0 * h.zero_count / max(h.total, 1)
        label = f"{h.policy} step {h.step} ({h.compute_dtype}; {zero_pct:.1f}% zero"
        label += f", scale 2^{np.log2(h.loss_scale):.0f})" if h.loss_scale else ")"
        style = policy_style(str(h.policy))
        ax.stairs(
            frac,
            edges - shift,
            fill=len(hists) == 1,
            alpha=0.6 if len(hists) == 1 else 0.85,
            label=label,
            color=policy_color(str(h.policy)),
            linestyle=style["linestyle"],
            linewidth=style["linewidth"],
            zorder=style["zorder"],
        )
    top = top or 1.0
    x_lo, x_hi = HISTOGRAM_XLIM
    band = top * 0.07
    for i, f in enumerate(fmts):
        y0 = top * 1.08 + i * band * 1.5
        lo_sub, lo_norm, hi = (np.log2(f.smallest_subnormal), np.log2(f.smallest_normal), np.log2(f.max))
        c = format_color(f.name)
        ax.fill_between(
            [max(lo_sub, x_lo), max(lo_norm, x_lo)], y0, y0 + band, color=c, alpha=0.25, linewidth=0
        )
        ax.fill_between([max(lo_norm, x_lo), min(hi, x_hi)], y0, y0 + band, color=c, alpha=0.7, linewidth=0)
        ax.text(
            min(hi, x_hi) - 0.5,
            y0 + band / 2,
            f.name,
            va="center",
            ha="right",
            fontsize="x-small",
            color=INK,
        )
        if lo_sub > x_lo:
            ax.axvline(lo_sub, color=c, linestyle=":", linewidth=0.8)
    ax.set_xlim(x_lo, x_hi)
    ax.set_xlabel("log2 |gradient|" + (" (unscaled)" if unscale else ""))
    ax.set_ylabel("fraction of gradient elements")
    ax.set_ylim(0, top * 1.1 + len(fmts) * band * 1.5 + band)
    ax.set_title("gradients vs representable ranges (light: subnormal; left of band: zero)", fontsize="small")
    # below the axes, under the x label: inside, it covered the bands it is read against
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    ax.grid(alpha=0.2)
    return ax


def plot_fp8_scales(result: Any, ax: Any = None) -> Any:
    """The per-tensor fp8 scales of an ``Fp8Result`` over steps (log2)."""
    ax = _new_ax(ax)
    steps = getattr(result, "steps", [])
    sites = sorted(steps[0].scales) if steps and steps[0].scales else []
    for site in sites:
        ax.plot([s.step for s in steps], [np.log2(s.scales[site]) for s in steps], label=site)
    ax.set_xlabel("step")
    ax.set_ylabel("log2 scale")
    ax.set_title(f"{_label(result)}: per-tensor scales", fontsize="small")
    ax.grid(alpha=0.3)
    if sites:
        ax.legend(fontsize="xx-small", ncol=3)
    return ax


def training_figure(results: Any) -> Any:
    """A 2x2 summary Figure: training loss, held-out accuracy, loss scale, zero-gradient fraction."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11.0, 7.0), layout="constrained")
    axes = fig.subplots(2, 2)
    plot_curves(results, "loss", axes[0, 0])
    plot_curves(results, "val_accuracy", axes[0, 1])
    plot_loss_scale(results, axes[1, 0])
    plot_grad_zero_fraction(results, axes[1, 1])
    return fig


def _placeholder(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color=MUTED_TEXT)
    ax.set_axis_off()


def live_training_figure(runs: Sequence[Any], without_loss_scale: Sequence[str] = ()) -> Any:
    """The Training view while runs go on: loss and held-out accuracy per epoch, loss scale,
    zero-gradient fraction per step, and the latest gradient histogram of each run; a panel
    with nothing to show yet says when it fills in.

    ``runs`` have ``policy``, ``epochs``, ``steps`` and ``histograms`` (records so far);
    runs whose policy is in ``without_loss_scale`` (no loss scale: the emulated fp8 run) are
    left out of the loss-scale panel.  Returns the Figure.
    """
    import warnings

    from matplotlib.figure import Figure

    fig = Figure(figsize=(11.0, 9.5), layout="constrained")
    axes = fig.subplots(3, 2)
    with warnings.catch_warnings():
        # a legend with no line yet (first epoch still running) is expected while training
        warnings.filterwarnings("ignore", "No artists with labels", UserWarning)
        with_epochs = [r for r in runs if r.epochs]
        for ax, metric in ((axes[0, 0], "loss"), (axes[0, 1], "val_accuracy")):
            if with_epochs:
                plot_curves(with_epochs, metric, ax)
            else:
                _placeholder(ax, f"{metric.replace('_', ' ')}: after the first epoch")
        plot_loss_scale([r for r in runs if r.policy not in without_loss_scale], axes[1, 0])
        plot_grad_zero_fraction([r for r in runs if r.steps], axes[1, 1])
        hists = [h for r in runs for h in r.histograms[-1:]]
        grid = axes[2, 0].get_gridspec()
        axes[2, 0].remove()
        axes[2, 1].remove()
        hist_ax = fig.add_subplot(grid[2, :])
        if hists:
            plot_gradient_histogram(hists, hist_ax)
        else:
            _placeholder(hist_ax, "gradient histograms appear after the first step (Keras policies)")
    return fig
