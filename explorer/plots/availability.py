"""Availability plots: op × dtype heatmaps with one colour per status, and an HTML table.

Pure functions of :class:`explorer.queries.availability_result.AvailabilityResult`
(or its ``rows`` DataFrame).  No pyplot: figures are ``matplotlib.figure.Figure``.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from explorer.outcome import STATUSES
from explorer.plots.palette import EMPTY_COLOR, HIGHLIGHT, INK, OUTLINE, PAPER, STATUS_COLORS, text_color

__all__ = [
    "EMPTY_COLOR",
    "STATUS_COLORS",
    "heatmap",
    "heatmaps",
    "kernel_heatmap",
    "styled_table",
    "title_text",
]


def title_text(text: str) -> str:
    r"""``text`` ready for a ``title="..."`` attribute: HTML-escaped (quotes included), and each line
    break and other control character written as a character reference, so the attribute holds
    no raw newline.

    >>> title_text('a <b> "c"\nerror: x')
    'a &lt;b&gt; &quot;c&quot;&#10;error: x'
    """
    escaped = html.escape(str(text), quote=True)
    return "".join(f"&#{ord(ch)};" if ord(ch) < 32 or ord(ch) == 127 else ch for ch in escaped)


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

    handles = [Patch(facecolor=STATUS_COLORS[s], edgecolor=OUTLINE, label=s) for s in statuses]
    if isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine):
        fig.legend(
            handles=handles, loc="outside upper center", ncol=min(len(handles), 5), frameon=False, fontsize=8
        )
    else:
        fig.legend(handles=handles, loc="upper right", frameon=False, fontsize=8)


def status_codes(grid: Any) -> Any:
    """A status grid (:func:`status_grid`) as float codes: the index in ``STATUSES``, and
    ``len(STATUSES)`` for an empty cell (or a status not in ``STATUSES``)."""
    import numpy as np

    codes = {s: i for i, s in enumerate(STATUSES)}
    empty = len(STATUSES)
    cells = grid.to_numpy(dtype=object)
    return np.array(
        [[codes.get(s, empty) if isinstance(s, str) else empty for s in line] for line in cells],
        dtype=float,
    ).reshape(grid.shape)


def draw_status_grid(
    grid: Any, ax: Any, x_rotation: float = 60, x_align: str = "right", x_fontsize: float = 8
) -> Any:
    """Draw a status grid (rows × columns of status names) on ``ax``, one colour per status;
    returns the Axes.

    Cell borders are two line collections, not minor ticks and a grid: a matplotlib Tick per
    row and column made each redraw ~1.7x slower, which matters when a widget changes.
    """
    import numpy as np
    from matplotlib.colors import ListedColormap

    cmap = ListedColormap([STATUS_COLORS[s] for s in STATUSES] + [EMPTY_COLOR])
    ax.imshow(
        status_codes(grid),
        cmap=cmap,
        vmin=-0.5,
        vmax=len(STATUSES) + 0.5,
        aspect="auto",
        interpolation="nearest",
    )
    n_rows, n_cols = grid.shape
    ax.set_xticks(range(n_cols), list(grid.columns), rotation=x_rotation, ha=x_align, fontsize=x_fontsize)
    ax.set_yticks(range(n_rows), list(grid.index), fontsize=7)
    ax.hlines(np.arange(-0.5, n_rows), -0.5, n_cols - 0.5, color=PAPER, linewidth=0.6)
    ax.vlines(np.arange(-0.5, n_cols), -0.5, n_rows - 0.5, color=PAPER, linewidth=0.6)
    _draw_glyphs(grid, ax)
    return ax


def _draw_glyphs(grid: Any, ax: Any) -> None:
    """Each status's glyph in its cell (colour is never the only cue)."""
    from explorer.plots.palette import status_glyph

    cells = grid.to_numpy(dtype=object)
    for i, line in enumerate(cells):
        for j, status in enumerate(line):
            if isinstance(status, str):
                ax.text(
                    j,
                    i,
                    status_glyph(status),
                    ha="center",
                    va="center",
                    fontsize=6,
                    color=text_color(STATUS_COLORS.get(status, EMPTY_COLOR)),
                )


def heatmap(
    result: Any,
    backend: str = "tensorflow",
    device: str = "CPU",
    mode: str = "eager",
    ax: Any = None,
    legend: bool = True,
) -> Any:
    """op × dtype heatmap for one backend/device/mode, one colour per status; returns the Axes."""
    from matplotlib.figure import Figure

    grid = status_grid(result, backend, device, mode)
    if ax is None:
        fig = Figure(figsize=(1.0 + 0.55 * grid.shape[1], 1.2 + 0.22 * grid.shape[0]), layout="constrained")
        ax = fig.add_subplot()
    draw_status_grid(grid, ax)
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
        draw_status_grid(grid, ax)
        ax.set_title(f"{backend} · {device} · {mode}", fontsize=9)
        seen.update(grid.stack().dropna())
    _legend(fig, [s for s in STATUSES if s in seen])
    return fig


#: order of device types in :func:`kernel_panels`: each device, then its XLA compilation device
PANEL_DEVICE_ORDER: tuple[str, ...] = ("CPU", "XLA_CPU_JIT", "GPU", "XLA_GPU_JIT")


def kernel_panels(result: Any) -> list[tuple[str, str, str]]:
    """The ``(backend, device, mode)`` panels present in the rows, in a stable order: TensorFlow
    first, then the other backends by name; devices in :data:`PANEL_DEVICE_ORDER` (others last).

    >>> import pandas as pd
    >>> rows = pd.DataFrame({"backend": ["numpy", "tensorflow", "tensorflow"],
    ...                      "device": ["CPU", "GPU", "CPU"], "mode": ["eager", "registry", "registry"]})
    >>> kernel_panels(rows)
    [('tensorflow', 'CPU', 'registry'), ('tensorflow', 'GPU', 'registry'), ('numpy', 'CPU', 'eager')]
    """
    rows = _rows(result)
    seen = list(dict.fromkeys(zip(rows["backend"], rows["device"], rows["mode"], strict=True)))
    order = {d: i for i, d in enumerate(PANEL_DEVICE_ORDER)}
    return sorted(seen, key=lambda p: (p[0] != "tensorflow", p[0], order.get(p[1], len(order)), p[2]))


def kernel_heatmap(
    result: Any,
    panels: Sequence[tuple[str, str, str]] | None = None,
    highlight: str | None = None,
) -> Any:
    """One heatmap of ops × (panel × dtype): the dtypes of each ``(backend, device, mode)`` panel
    side by side (default: :func:`kernel_panels`), panels split by black lines, one Axes and one
    image; the ``highlight`` op's row label in bold red.  Returns the Figure.

    Drawn without a layout engine (fixed margins), so a re-render is one draw.
    """
    import pandas as pd
    from matplotlib.figure import Figure

    rows = _rows(result)
    if panels is None:
        panels = kernel_panels(rows)
    ops = list(dict.fromkeys(rows["op"]))
    dtypes = list(dict.fromkeys(rows["dtype"]))
    backends = {p[0] for p in panels}
    parts = []
    for backend, device, mode in panels:
        sub = rows[(rows["backend"] == backend) & (rows["device"] == device) & (rows["mode"] == mode)].copy()
        where = device if mode == "registry" else f"{device} {mode}"
        label = where if len(backends) == 1 else f"{backend}\n{where}"
        sub["dtype"] = pd.Categorical(sub["dtype"], categories=dtypes, ordered=True)
        sub = sub.sort_values("dtype", kind="stable")
        sub["dtype"] = sub["dtype"].astype(str) + "\n" + label
        parts.append(sub.assign(backend="all", device="all", mode="all"))
    grid = status_grid(pd.concat(parts, ignore_index=True), "all", "all", "all")
    n_cols = grid.shape[1]
    width, height = max(1.6 + 0.62 * n_cols, 4.0), 1.9 + 0.2 * len(ops)
    fig = Figure(figsize=(width, height))
    ax = fig.add_axes((1.4 / width, 1.35 / height, 0.62 * n_cols / width, (0.2 * len(ops)) / height))
    draw_status_grid(grid, ax, x_rotation=90, x_align="center", x_fontsize=7)
    for boundary in range(len(dtypes), n_cols, len(dtypes)):
        ax.axvline(boundary - 0.5, color=INK, linewidth=1.5)
    source = "declared (registry)" if all(p[2] == "registry" for p in panels) else "probed"
    ax.set_title(f"{', '.join(sorted(backends))} · {source}", fontsize=8)
    if highlight is not None:
        for tick_label in ax.get_yticklabels():
            if tick_label.get_text() == highlight:
                tick_label.set_fontweight("bold")
                tick_label.set_color(HIGHLIGHT)
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
    import pandas as pd

    texts: dict[tuple[str, str], str] = {}
    for r in sel.drop_duplicates(["op", "dtype"]).to_dict("records"):
        parts = [str(r["status"]), str(r["explanation"] or "")]
        first = str(r["error"] or "").strip().splitlines()[:1]
        if first:
            parts.append(f"error: {first[0][:300]}")
        if r.get("workaround_how"):
            parts.append(f"workaround: {r['workaround_how']}\n{r['workaround']}")
        texts[(r["op"], r["dtype"])] = "\n".join(p for p in parts if p)
    tips = pd.DataFrame(
        [[texts.get((op, dtype), "") for dtype in grid.columns] for op in grid.index],
        index=grid.index,
        columns=grid.columns,
    )

    def colour(status: Any) -> str:
        if not isinstance(status, str):
            return ""
        background = STATUS_COLORS.get(status, EMPTY_COLOR)
        return f"background-color: {background}; color: {text_color(background)}"

    # Every cell, label, tooltip and the caption is escaped here: rows may come from a snapshot
    # someone else made, and the pandas Styler escapes nothing by default.
    styler = grid.fillna("").style.map(colour)
    styler = styler.format(escape="html").format_index(escape="html", axis=0)
    styler = styler.format_index(escape="html", axis=1)
    # Tooltips as title attributes (pandas inserts them unescaped): escaped here, quotes included,
    # line breaks as character references (a raw newline in the attribute showed an empty tooltip)
    styler = styler.set_tooltips(tips.map(title_text), as_title_attribute=True)
    caption = f"{backend} · {device} · {mode} — hover a cell for the error and workaround"
    return styler.set_caption(html.escape(caption))
