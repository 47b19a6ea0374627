"""Availability plots: op × dtype heatmaps with one colour per status, and an HTML table.

Pure functions of :class:`explorer.analysis.availability.AvailabilityResult`
(or its ``rows`` DataFrame).  No pyplot: figures are ``matplotlib.figure.Figure``.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from explorer.outcome import STATUSES

#: one colour per status (colour-blind-friendly where it matters: ok vs failures)
STATUS_COLORS: dict[str, str] = {
    "ok": "#1a9850",
    "fallback": "#a6d96a",
    "no_kernel": "#d73027",
    "unsupported_dtype": "#7f3b08",
    "no_device": "#bababa",
    "not_installed": "#e0e0e0",
    "crashed": "#000000",
    "timeout": "#542788",
    "error": "#fdae61",
}
#: colour of cells with no row (op not asked for in that dtype)
EMPTY_COLOR = "#ffffff"


def _rows(result: Any) -> Any:
    return result.rows if hasattr(result, "rows") else result


def status_grid(result: Any, backend: str = "tensorflow", device: str = "CPU", mode: str = "eager") -> Any:
    """op × dtype DataFrame of statuses for one backend, device and mode (catalog order kept)."""
    rows = _rows(result)
    sel = rows[(rows["backend"] == backend) & (rows["device"] == device) & (rows["mode"] == mode)]
    if sel.empty:
        have = sorted(
            {(b, d, m) for b, d, m in zip(rows["backend"], rows["device"], rows["mode"], strict=True)}
        )
        raise ValueError(
            f"no rows for backend={backend!r}, device={device!r}, mode={mode!r}; "
            f"valid: {', '.join('/'.join(h) for h in have)}"
        )
    sel = sel.drop_duplicates(["op", "dtype"])
    grid = sel.pivot(index="op", columns="dtype", values="status")
    ops = list(dict.fromkeys(sel["op"]))
    dtypes = list(dict.fromkeys(sel["dtype"]))
    return grid.reindex(index=ops, columns=dtypes)


def _legend(fig: Any, statuses: Sequence[str]) -> None:
    from matplotlib.layout_engine import ConstrainedLayoutEngine
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=STATUS_COLORS[s], edgecolor="#555555", label=s) for s in statuses]
    if isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine):
        fig.legend(
            handles=handles, loc="outside upper center", ncol=min(len(handles), 5), frameon=False, fontsize=8
        )
    else:
        fig.legend(handles=handles, loc="upper right", frameon=False, fontsize=8)


def heatmap(
    result: Any,
    backend: str = "tensorflow",
    device: str = "CPU",
    mode: str = "eager",
    ax: Any = None,
    legend: bool = True,
) -> Any:
    """op × dtype heatmap for one backend/device/mode, one colour per status; returns the Axes."""
    import numpy as np
    from matplotlib.colors import ListedColormap
    from matplotlib.figure import Figure

    grid = status_grid(result, backend, device, mode)
    codes = {s: i for i, s in enumerate(STATUSES)}
    values = np.full(grid.shape, len(STATUSES), dtype=float)
    for (i, j), status in np.ndenumerate(grid.to_numpy(dtype=object)):
        if isinstance(status, str):
            values[i, j] = codes[status]
    cmap = ListedColormap([STATUS_COLORS[s] for s in STATUSES] + [EMPTY_COLOR])
    if ax is None:
        fig = Figure(figsize=(1.0 + 0.55 * grid.shape[1], 1.2 + 0.22 * grid.shape[0]), layout="constrained")
        ax = fig.add_subplot()
    ax.imshow(values, cmap=cmap, vmin=-0.5, vmax=len(STATUSES) + 0.5, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(grid.shape[1]), list(grid.columns), rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(grid.shape[0]), list(grid.index), fontsize=7)
    ax.set_xticks(np.arange(-0.5, grid.shape[1]), minor=True)
    ax.set_yticks(np.arange(-0.5, grid.shape[0]), minor=True)
    ax.grid(which="minor", color="white", linewidth=0.6)
    ax.tick_params(which="minor", length=0)
    ax.set_title(f"{backend} · {device} · {mode}", fontsize=9)
    if legend:
        present = [s for s in STATUSES if s in set(grid.stack().dropna())]
        _legend(ax.figure, present)
    return ax


def heatmaps(result: Any, panels: Sequence[tuple[str, str]] | None = None, device: str = "CPU") -> Any:
    """Side-by-side heatmaps, one per ``(backend, mode)`` panel (default: every backend and mode
    with rows for ``device``), sharing the op axis and one legend; returns the Figure."""
    from matplotlib.figure import Figure

    rows = _rows(result)
    rows = rows[(rows["device"] == device) & (rows["mode"] != "registry")]
    if panels is None:
        panels = list(dict.fromkeys(zip(rows["backend"], rows["mode"], strict=True)))
    if not panels:
        raise ValueError(f"no probed rows for device {device!r}")
    grids = [status_grid(rows, b, device, m) for b, m in panels]
    n_ops = max(g.shape[0] for g in grids)
    width = sum(1.0 + 0.45 * g.shape[1] for g in grids) + 1.5
    fig = Figure(figsize=(width, 1.6 + 0.2 * n_ops), layout="constrained")
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    seen: set[str] = set()
    for ax, (backend, mode), grid in zip(axes, panels, grids, strict=True):
        heatmap(rows, backend, device, mode, ax=ax, legend=False)
        seen.update(grid.stack().dropna())
    _legend(fig, [s for s in STATUSES if s in seen])
    return fig


def styled_table(
    result: Any,
    backend: str = "tensorflow",
    device: str = "CPU",
    mode: str = "eager",
) -> Any:
    """op × dtype pandas Styler: cells coloured by status; hovering shows the explanation, the
    first line of the error and the workaround.  Filter first (``result.filter(group=...)``) to
    show fewer ops."""
    rows = _rows(result)
    grid = status_grid(rows, backend, device, mode)
    sel = rows[(rows["backend"] == backend) & (rows["device"] == device) & (rows["mode"] == mode)]
    tips = grid.copy().astype(object)
    tips.loc[:, :] = ""
    for r in sel.itertuples(index=False):
        parts = [r.explanation]
        first = str(r.error).strip().splitlines()[:1]
        if first:
            parts.append(f"error: {first[0][:300]}")
        if r.workaround_how:
            parts.append(f"workaround: {r.workaround_how}\n{r.workaround}")
        tips.loc[r.op, r.dtype] = "\n".join(parts)

    def colour(status: Any) -> str:
        if not isinstance(status, str):
            return ""
        text = (
            "white" if status in ("no_kernel", "unsupported_dtype", "crashed", "timeout", "ok") else "black"
        )
        return f"background-color: {STATUS_COLORS.get(status, EMPTY_COLOR)}; color: {text}"

    # Every cell, label, tooltip and the caption is escaped here: rows may come from a snapshot
    # someone else made, and the pandas Styler escapes nothing by default.
    styler = grid.fillna("").style.map(colour)
    styler = styler.format(escape="html").format_index(escape="html", axis=0)
    styler = styler.format_index(escape="html", axis=1)
    # Tooltips as title attributes (pandas inserts them unescaped: escaped here, quotes included);
    # a title keeps its line breaks, where a CSS ``content`` string with a raw newline shows nothing.
    styler = styler.set_tooltips(tips.map(lambda s: html.escape(str(s), quote=True)), as_title_attribute=True)
    caption = f"{backend} · {device} · {mode} — hover a cell for the error and workaround"
    return styler.set_caption(html.escape(caption))
