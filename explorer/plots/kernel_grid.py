"""The kernels heatmap as data: ops × (panel × dtype) cells, each with its status, colour, glyph,
hover summary and the availability rows behind it.

A pure function of availability rows (:func:`explorer.queries.availability.availability`'s
``rows``); the app's interactive heatmap (:mod:`explorer.app.heatmap`) draws it, and a click on a
cell looks its rows up here.  A panel is one ``(backend, device, mode)``; panels are ordered by
:func:`explorer.plots.availability.kernel_panels` (TensorFlow first; CPU before GPU), so the CPU
and GPU columns of a dtype sit side by side.  A cell of mode ``registry`` is *declared* (read from
a registry, nothing ran); its glyph is shown in brackets.

>>> import pandas as pd
>>> rows = pd.DataFrame({"backend": ["tensorflow"] * 2, "op": ["exp", "exp"], "raw_op": ["Exp", "Exp"],
...     "dtype": ["float16", "float16"], "device": ["CPU", "GPU"], "mode": ["eager", "registry"],
...     "status": ["ok", "no_kernel"], "error": ["", ""], "explanation": ["", "no GPU kernel"],
...     "workaround": ["", ""]})
>>> grid = kernel_grid(rows)
>>> [c.label for c in grid.columns], grid.glyphs()
(['float16', 'float16'], [['+', '(N)']])
>>> grid.columns[1].panel_label
'GPU declared'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from explorer.outcome import STATUSES
from explorer.plots.availability import kernel_panels
from explorer.plots.palette import EMPTY_COLOR, STATUS_COLORS, status_color, status_glyph, text_color

#: most characters of an error shown in a hover summary
HOVER_ERROR_CHARS = 160
#: order in which the statuses of a cell's several rows (a catalog op's raw ops) decide the cell:
#: the first found wins, so a cell is ``ok`` only when every row is
_CELL_PRECEDENCE: tuple[str, ...] = (
    "wrong_result",
    "crashed",
    "timeout",
    "error",
    "unsupported_dtype",
    "no_kernel",
    "fallback",
    "no_device",
    "not_installed",
    "ok",
)


@dataclass(frozen=True)
class Column:
    """One column of the heatmap: a dtype in one ``(backend, device, mode)`` panel."""

    backend: str
    device: str
    mode: str
    dtype: str
    #: the panel's short name (``"CPU eager"``, ``"GPU declared"``; the backend first when several)
    panel_label: str

    @property
    def declared(self) -> bool:
        """True when the column was read from a registry (nothing ran)."""
        return self.mode == "registry"

    @property
    def label(self) -> str:
        """The column's tick label: its dtype."""
        return self.dtype


@dataclass
class KernelGrid:
    """The cells of the kernels heatmap (see the module docstring)."""

    ops: list[str]
    columns: list[Column]
    #: ``cells[i][j]``: the rows (plain dicts) of op ``i`` in column ``j`` (empty: no row)
    cells: list[list[list[dict[str, Any]]]] = field(default_factory=list)

    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, columns)``."""
        return len(self.ops), len(self.columns)

    def status(self, i: int, j: int) -> str | None:
        """The status of cell ``(i, j)`` (None: no row); several rows: the first of
        ``_CELL_PRECEDENCE`` among them."""
        found = {str(r["status"]) for r in self.cells[i][j]}
        if not found:
            return None
        for status in _CELL_PRECEDENCE:
            if status in found:
                return status
        return sorted(found)[0]

    def statuses(self) -> list[list[str | None]]:
        """Every cell's status."""
        return [[self.status(i, j) for j in range(len(self.columns))] for i in range(len(self.ops))]

    def codes(self) -> list[list[int]]:
        """Every cell's status as its index in ``STATUSES`` (``len(STATUSES)``: no row, or unknown)."""
        index = {s: k for k, s in enumerate(STATUSES)}
        return [[index.get(s or "", len(STATUSES)) for s in line] for line in self.statuses()]

    def colors(self) -> list[list[str]]:
        """Every cell's colour (:data:`explorer.plots.palette.EMPTY_COLOR` where there is no row)."""
        return [[EMPTY_COLOR if s is None else status_color(s) for s in line] for line in self.statuses()]

    def glyph(self, i: int, j: int) -> str:
        """The cell's glyph; in brackets when the column is declared (nothing ran); ``""`` for no row."""
        status = self.status(i, j)
        if status is None:
            return ""
        glyph = status_glyph(status)
        return f"({glyph})" if self.columns[j].declared else glyph

    def glyphs(self) -> list[list[str]]:
        """Every cell's glyph."""
        return [[self.glyph(i, j) for j in range(len(self.columns))] for i in range(len(self.ops))]

    def glyph_colors(self) -> list[list[str]]:
        """The text colour that reads on each cell's colour."""
        return [[text_color(c) for c in line] for line in self.colors()]

    def summary(self, i: int, j: int) -> str:
        """The hover text of a cell: op, column, status (declared or ran), explanation and the first
        line of the error (plain text: the caller escapes it)."""
        column = self.columns[j]
        label = column.panel_label
        where = label if label.startswith(f"{column.backend} ") else f"{column.backend} {label}"
        head = f"{self.ops[i]} · {column.dtype} · {where}"
        status = self.status(i, j)
        if status is None:
            return f"{head}: not asked for"
        how = f"declared by {declared_by(column.backend)}, not run here" if column.declared else "ran here"
        lines = [f"{head}: {status} ({how})"]
        for r in self.cells[i][j][:3]:
            if r.get("explanation"):
                lines.append(str(r["explanation"]))
            first = str(r.get("error") or "").strip().splitlines()[:1]
            if first:
                text = first[0]
                lines.append(
                    "error: " + (text[:HOVER_ERROR_CHARS] + "…" if len(text) > HOVER_ERROR_CHARS else text)
                )
        return "\n".join(lines)

    def records(self, i: int, j: int) -> list[dict[str, Any]]:
        """The availability rows behind cell ``(i, j)``."""
        return list(self.cells[i][j])

    def present_statuses(self) -> list[str]:
        """The statuses shown, in ``STATUSES`` order (for a legend)."""
        seen = {s for line in self.statuses() for s in line if s is not None}
        return [s for s in STATUSES if s in seen] + sorted(seen - set(STATUS_COLORS))


def declared_by(backend: str) -> str:
    """What declares a cell of ``backend`` without running it.

    >>> declared_by("tensorflow"), declared_by("torch")
    ("TensorFlow's kernel registry", "PyTorch's OpInfo test database")
    """
    return "PyTorch's OpInfo test database" if backend == "torch" else "TensorFlow's kernel registry"


def _panel_label(backend: str, device: str, mode: str, several_backends: bool) -> str:
    where = f"{device} declared" if mode == "registry" else f"{device} {mode}"
    return f"{backend} {where}" if several_backends else where


def kernel_grid(result: Any, panels: Sequence[tuple[str, str, str]] | None = None) -> KernelGrid:
    """The :class:`KernelGrid` of availability rows: ops in row order, one column per panel ×
    dtype (dtypes in row order), panels from :func:`kernel_panels` unless given."""
    rows = result.rows if hasattr(result, "rows") else result
    if panels is None:
        panels = kernel_panels(rows)
    records = rows.to_dict("records")
    ops = list(dict.fromkeys(str(r["op"]) for r in records))
    dtypes = list(dict.fromkeys(str(r["dtype"]) for r in records))
    several = len({p[0] for p in panels}) > 1
    present = {(str(r["backend"]), str(r["device"]), str(r["mode"]), str(r["dtype"])) for r in records}
    columns = [
        Column(backend, device, mode, dtype, _panel_label(backend, device, mode, several))
        for backend, device, mode in panels
        for dtype in dtypes
        if (backend, device, mode, dtype) in present
    ]
    where = {(c.backend, c.device, c.mode, c.dtype): j for j, c in enumerate(columns)}
    row_of = {op: i for i, op in enumerate(ops)}
    cells: list[list[list[dict[str, Any]]]] = [[[] for _ in columns] for _ in ops]
    for r in records:
        j = where.get((str(r["backend"]), str(r["device"]), str(r["mode"]), str(r["dtype"])))
        if j is not None:
            cells[row_of[str(r["op"])]][j].append(r)
    return KernelGrid(ops, columns, cells)


def speed_ratios(grid: KernelGrid, speed_rows: Sequence[Any]) -> list[list[float | None]]:
    """Each cell's ratio to float32 from speed rows (:class:`explorer.queries.speed.SpeedRow` or
    their dicts) of the same op, backend, device, mode and dtype; a cell timed at several shapes
    gets its largest (slowest) ratio; None where no row of it ran (the cell keeps its status).

    >>> import pandas as pd
    >>> rows = pd.DataFrame({"backend": ["numpy"] * 2, "op": ["exp"] * 2, "dtype": ["float16", "float32"],
    ...     "device": ["CPU"] * 2, "mode": ["eager"] * 2, "status": ["ok", "ok"]})
    >>> timed = [dict(backend="numpy", op="exp", dtype="float16", device="CPU", mode="eager",
    ...     status="ok", ratio_to_float32=r) for r in (1.5, 2.5)]
    >>> speed_ratios(kernel_grid(rows), timed)
    [[2.5, None]]
    """
    where = {(c.backend, c.device, c.mode, c.dtype): j for j, c in enumerate(grid.columns)}
    row_of = {op: i for i, op in enumerate(grid.ops)}
    ratios: list[list[float | None]] = [[None for _ in grid.columns] for _ in grid.ops]
    for row in speed_rows:
        r = row.to_dict() if hasattr(row, "to_dict") else dict(row)
        ratio = r.get("ratio_to_float32")
        if r.get("status") != "ok" or ratio is None or not ratio > 0:
            continue
        i = row_of.get(str(r["op"]))
        j = where.get((str(r["backend"]), str(r["device"]), str(r["mode"]), str(r["dtype"])))
        if i is not None and j is not None:
            ratios[i][j] = max(float(ratio), ratios[i][j] or 0.0)
    return ratios


def ratio_text(ratio: float) -> str:
    """A ratio to float32 as printed in a cell: two significant digits and ``×``.

    >>> ratio_text(1.0), ratio_text(0.4567), ratio_text(12.34), ratio_text(250.0)
    ('1.0×', '0.46×', '12×', '250×')
    """
    if ratio >= 10:
        return f"{ratio:.0f}×"
    return f"{ratio:.2g}×" if ratio < 1 else f"{ratio:.1f}×"
