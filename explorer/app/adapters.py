"""Small adapters between the app and the engine modules, for what the engines do not provide."""

from __future__ import annotations

from typing import Any

import numpy as np

from explorer.app import engines
from explorer.app.context import AppContext


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


def kernel_counts_figure(summary: Any) -> Any:
    """Grouped bars: per dtype, how many TensorFlow ops have a kernel on each registry device type."""
    from matplotlib.figure import Figure

    columns = [c for c in summary.columns if c.startswith("ops with a ")]
    devices = [c.removeprefix("ops with a ").removesuffix(" kernel") for c in columns]
    fig = Figure(figsize=(8.0, 3.0))
    (ax,) = stacked_axes(fig, [2.0], left=0.9, right=0.3, top=0.4, bottom=0.6)
    width = 0.8 / max(len(summary), 1)
    x = np.arange(len(devices))
    for i, row in enumerate(summary.to_dict("records")):
        values = [row[c] for c in columns]
        bars = ax.bar(x + (i - (len(summary) - 1) / 2) * width, values, width, label=row["dtype"])
        ax.bar_label(bars, fontsize=7)
    ax.set_xticks(x, devices, fontsize=8)
    ax.set_ylabel("ops with a kernel", fontsize=8)
    ax.set_title(
        "TensorFlow's kernel registry: ops with a kernel per device type (read without a GPU)", fontsize=9
    )
    ax.legend(fontsize=7)
    return fig


def status_heatmap_axes(rows: Any, ax: Any) -> Any:
    """op × dtype status image with plots.availability's colours, drawn lean for interactive use.

    Same data (``plots.availability.status_grid``) and colours as ``plots.availability.heatmap``,
    but cell borders are two line collections instead of minor ticks: creating a matplotlib Tick
    per row and column made each redraw ~1.7x slower, which matters when a widget changes.
    """
    from matplotlib.colors import ListedColormap

    from explorer.outcome import STATUSES

    plots = engines.module("plots.availability")
    first = rows.iloc[0]
    grid = plots.status_grid(rows, first["backend"], first["device"], first["mode"])
    codes = {s: i for i, s in enumerate(STATUSES)}
    cells = grid.to_numpy(dtype=object)
    values = np.array(
        [
            [codes.get(s, len(STATUSES)) if isinstance(s, str) else len(STATUSES) for s in line]
            for line in cells
        ],
        dtype=float,
    ).reshape(grid.shape)
    cmap = ListedColormap([plots.STATUS_COLORS[s] for s in STATUSES] + [plots.EMPTY_COLOR])
    ax.imshow(values, cmap=cmap, vmin=-0.5, vmax=len(STATUSES) + 0.5, aspect="auto", interpolation="nearest")
    n_rows, n_cols = grid.shape
    ax.set_xticks(range(n_cols), list(grid.columns), rotation=90, fontsize=7)
    ax.set_yticks(range(n_rows), list(grid.index), fontsize=7)
    ax.hlines(np.arange(-0.5, n_rows), -0.5, n_cols - 0.5, color="white", linewidth=0.6)
    ax.vlines(np.arange(-0.5, n_cols), -0.5, n_rows - 0.5, color="white", linewidth=0.6)
    return ax
