"""Small adapters between the app and the engine modules, for what the engines do not provide."""

from __future__ import annotations

from typing import Any

import numpy as np

from explorer.app import engines
from explorer.app.context import AppContext

#: Colours of the sign, exponent and mantissa fields.
FIELD_COLOURS = {"sign": "#d9534f", "exponent": "#5b8def", "mantissa": "#5cb85c"}


def bit_fields_figure(infos: list[Any]) -> Any:
    """One row of boxes per ``BitInfo``: sign, exponent and mantissa bits, with the stored value."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    if not infos:
        raise ValueError("no values to draw")
    width = max(len(i.bits) for i in infos)
    fig = Figure(figsize=(min(2.8 + 0.24 * width, 12.0), 0.62 * len(infos) + 0.5), layout="constrained")
    ax = fig.add_subplot()
    for row, info in enumerate(infos):
        y = len(infos) - 1 - row
        n_sign = 0 if info.sign is None else 1
        n_exp = len(info.exponent_bits)
        for k, bit in enumerate(info.bits):
            part = "sign" if k < n_sign else "exponent" if k < n_sign + n_exp else "mantissa"
            ax.add_patch(Rectangle((k, y + 0.1), 0.92, 0.8, color=FIELD_COLOURS[part], alpha=0.85))
            ax.text(
                k + 0.46, y + 0.5, bit, ha="center", va="center", color="white", fontsize=9, fontweight="bold"
            )
        ax.text(-0.4, y + 0.5, info.format, ha="right", va="center", fontsize=9)
        ax.text(
            width + 0.4, y + 0.5, f"= {info.value:.10g}  ({info.kind})", ha="left", va="center", fontsize=9
        )
    ax.set_xlim(-7.5, width + 10)
    ax.set_ylim(0, len(infos))
    ax.set_axis_off()
    handles = [Rectangle((0, 0), 1, 1, color=c) for c in FIELD_COLOURS.values()]
    ax.legend(
        handles,
        list(FIELD_COLOURS),
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=3,
        fontsize=8,
        frameon=False,
    )
    return fig


def registry_device_summary(ctx: AppContext, op: str, dtypes: tuple[str, ...]) -> tuple[Any, Any]:
    """From TensorFlow's kernel registry: (per dtype, how many ops have a kernel on each device type,
    and how many only on GPU; the selected op's status per device type × dtype)."""
    import pandas as pd

    registry = engines.module("analysis.registry")
    reg = ctx.cache.get(("registry",), lambda: registry.get_registry())
    tf_dtypes = [d for d in dtypes if d in reg.float_dtypes] or ["float16"]
    devices = [d for d in registry.COMPUTE_DEVICE_TYPES if d in reg.device_types]

    def summary() -> Any:
        frame = reg.matrix(ops=reg.ops_with_kernels(), dtypes=tf_dtypes, device_types=devices)
        rows = []
        for dtype in tf_dtypes:
            sub = frame[frame["dtype"] == dtype]
            wide = sub.pivot(index="op", columns="device_type", values="status")
            row: dict[str, Any] = {"dtype": dtype}
            for device in devices:
                row[f"ops with a {device} kernel"] = int((wide[device] == "ok").sum())
            if "GPU" in wide and "CPU" in wide:
                row["only on GPU (not CPU)"] = int(((wide["GPU"] == "ok") & (wide["CPU"] != "ok")).sum())
                row["only on CPU (not GPU)"] = int(((wide["CPU"] == "ok") & (wide["GPU"] != "ok")).sum())
            rows.append(row)
        return pd.DataFrame(rows)

    def per_op() -> Any:
        from explorer.ops import catalog

        entry = catalog().get(op)
        raws = entry.tf_raw_ops if entry is not None else (op,)
        rows = []
        for raw in raws:
            if not reg.has_op(raw):
                continue
            for dtype in tf_dtypes:
                row = {"raw op": raw, "dtype": dtype}
                row.update({device: reg.declared(raw, dtype, device).value for device in devices})
                rows.append(row)
        return pd.DataFrame(rows)

    return (
        ctx.cache.get(("registry-summary", tuple(tf_dtypes)), summary),
        ctx.cache.get(("registry-op", op, tuple(tf_dtypes)), per_op),
    )


#: Colours of the region kinds (ok, overflow, underflow, subnormal, nan).
KIND_COLOURS = {
    "ok": "#8fd18f",
    "overflow": "#e0534f",
    "underflow": "#5b8def",
    "subnormal": "#f0ad4e",
    "nan": "#8e44ad",
}


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


def number_lines_axes(lines: list[Any], ax: Any) -> Any:
    """Stacked number lines on a log2 |x| axis: zero, subnormal, normal and overflow regions."""
    lo = min(np.log2(line.smallest_subnormal) for line in lines) - 4
    hi = max(np.log2(line.overflow_above) for line in lines) + 4
    for row, line in enumerate(lines):
        y = len(lines) - 1 - row
        sub, norm = np.log2(line.smallest_subnormal), np.log2(line.smallest_normal)
        top = np.log2(line.overflow_above)
        ax.barh(y, sub - 1 - lo, left=lo, color=KIND_COLOURS["underflow"], height=0.6)
        if line.has_subnormals:
            ax.barh(y, norm - (sub - 1), left=sub - 1, color=KIND_COLOURS["subnormal"], height=0.6)
        ax.barh(y, top - norm, left=norm, color=KIND_COLOURS["ok"], height=0.6)
        ax.barh(y, hi - top, left=top, color=KIND_COLOURS["overflow"], height=0.6)
        ax.text(hi, y, f" → {line.overflow_gives}", va="center", fontsize=8)
        ax.plot([np.log2(line.eps)], [y], marker="|", color="black", markersize=10)
    ax.set_yticks(range(len(lines)), [line.format for line in reversed(lines)], fontsize=8)
    ax.set_xlim(lo, hi + 8)
    ax.set_xlabel("log2 |x|   (| = eps)", fontsize=8)
    ax.set_title("number lines: zero · subnormal · normal · overflow", fontsize=9)
    return ax


def colour_key_html(labels: dict[str, str] | None = None) -> str:
    """The colours of the region kinds as an HTML line (cheaper than a legend in every redraw)."""
    labels = labels or {
        "ok": "ok / normal",
        "overflow": "overflow",
        "underflow": "underflow / rounds to zero",
        "subnormal": "subnormal",
        "nan": "NaN",
    }
    items = "".join(
        f"<span style='display:inline-block;width:12px;height:12px;background:{KIND_COLOURS[k]};"
        f"margin:0 4px 0 12px;vertical-align:middle'></span>{text}"
        for k, text in labels.items()
    )
    return f"<div class='px-key' style='font-size:90%'>{items}</div>"


def plain_ticks(ax: Any, linthresh: float, per_side: int = 3) -> None:
    """Few plain-text ticks on a symlog x axis: 0 and up to ``per_side`` powers of ten each side.

    (Matplotlib's default symlog labels are mathtext: each redraw ~10x slower, and they crowd near 0.)
    """
    from matplotlib.ticker import FixedLocator, NullLocator

    ax.autoscale_view()
    lo, hi = ax.get_xlim()
    ticks: list[float] = [0.0]
    for sign, end in ((1.0, hi), (-1.0, -lo)):
        if end <= linthresh * 10:
            continue
        first, last = int(np.ceil(np.log10(linthresh * 10))), int(np.floor(np.log10(end)))
        exps: Any = (
            np.unique(np.linspace(first, last, per_side + 1)[1:].round().astype(int)) if last >= first else []
        )
        ticks += [sign * 10.0**e for e in exps]
    ticks.sort()
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([_tick_text(t) for t in ticks])


def _tick_text(v: float) -> str:
    if v == 0:
        return "0"
    if 1e-2 <= abs(v) < 1e4:
        return f"{v:g}"
    mantissa, exponent = f"{v:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def regions_axes(regions: dict[str, Any], ax: Any) -> Any:
    """One row per backend: the kind of each input interval, on a symmetric log x axis."""
    names = list(regions)
    lin = None
    for row, name in enumerate(names):
        reg = regions[name]
        y = len(names) - 1 - row
        if not reg.ran:
            ax.text(
                0.5,
                y,
                f"{name}: {reg.status}",
                ha="center",
                va="center",
                fontsize=8,
                transform=ax.get_yaxis_transform(),
            )
            continue
        for kind, colour in KIND_COLOURS.items():
            spans = [(iv.lo, max(iv.hi - iv.lo, 0.0)) for iv in reg.intervals if iv.kind == kind]
            if spans:  # zero-width spans (one input) still show through their edge
                ax.broken_barh(spans, (y - 0.3, 0.6), facecolors=colour, edgecolors=colour, linewidth=0.8)
        positive = np.abs(reg.inputs[reg.inputs != 0])
        if positive.size:
            lin = float(positive.min()) if lin is None else min(lin, float(positive.min()))
    ax.set_xscale("symlog", linthresh=lin or 1e-3)
    plain_ticks(ax, lin or 1e-3)
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.set_yticks(range(len(names)), list(reversed(names)), fontsize=8)
    ax.set_xlabel("input x (symmetric log scale)", fontsize=8)
    return ax


def binary_map_axes(bmap: Any, ax: Any) -> Any:
    """The kind of every (a, b) pair of a binary op, as an image over the two input axes."""
    from matplotlib.colors import ListedColormap

    if bmap.kinds.size == 0:
        ax.text(0.5, 0.5, f"{bmap.backend}: {bmap.status}", ha="center", transform=ax.transAxes)
        return ax
    cmap = ListedColormap(list(KIND_COLOURS.values()))
    ax.imshow(
        bmap.kinds.T,
        origin="lower",
        cmap=cmap,
        vmin=-0.5,
        vmax=len(KIND_COLOURS) - 0.5,
        aspect="auto",
        interpolation="nearest",
    )
    ticks = np.linspace(0, bmap.a.size - 1, 7).astype(int)
    ax.set_xticks(ticks, [f"{bmap.a[t]:.2g}" for t in ticks], fontsize=7)
    ax.set_yticks(ticks, [f"{bmap.b[t]:.2g}" for t in ticks], fontsize=7)
    ax.set_xlabel("a (bit-pattern order)", fontsize=8)
    ax.set_ylabel("b", fontsize=8)
    ax.set_title(f"{bmap.op}(a, b) in {bmap.format} on {bmap.backend}", fontsize=9)
    return ax


def ulp_axes(result: Any, ax: Any) -> Any:
    """ULP error against input, one series per backend (inputs on a symmetric log axis)."""
    x = result.inputs[0]
    markers = ["o", "x", "+", "s"]
    drawn = False
    positive = np.abs(x[x != 0])
    for k, (name, ulps) in enumerate(result.ulps.items()):
        finite = np.isfinite(ulps)
        if not finite.any():
            continue
        step = max(int(finite.sum() // 6000), 1)  # at most ~6,000 points per backend: fast to draw
        xs, ys = x[finite][::step], ulps[finite][::step]
        ax.plot(
            xs,
            ys + 0.04 * k,
            linestyle="none",
            marker=markers[k % 4],
            markersize=2.5,
            alpha=0.6,
            label=f"{name} (max {np.max(ulps[finite]):g} ulp)",
            rasterized=True,
        )
        drawn = True
    linthresh = float(positive.min()) if positive.size else 1e-3
    ax.set_xscale("symlog", linthresh=linthresh)
    plain_ticks(ax, linthresh)
    ax.set_xlabel("input x (symmetric log scale)", fontsize=8)
    ax.set_ylabel(f"error in ulps of {result.format}", fontsize=8)
    ax.set_title(
        f"{result.op} in {result.format}: ULP error vs the correctly rounded float64 reference", fontsize=9
    )
    if drawn:
        ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return ax
