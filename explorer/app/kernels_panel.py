"""The Kernels tab's details panel, beside the heatmap (below it on a narrow screen): what a
click on a heatmap cell or a press of a release chip tells — the cell's status, error and
workaround, the release's status, the float dtypes that release registers and the workaround —
and "every cell explained" below the heatmap following the op clicked.

A mixin of :class:`~explorer.app.kernels_tab.KernelsTab` (it uses the tab's ``heatmap``,
``history``, ``chips``, ``cell_details``, ``rows`` and ``state``)."""

from __future__ import annotations

from typing import Any

from explorer.app.kernels_details import cell_html, details_html, release_html
from explorer.app.render import message_html
from explorer.ops import catalog


class CellPanel:
    """Fills ``cell_details`` from a heatmap cell or a release chip."""

    heatmap: Any
    history: Any
    chips: Any
    cell_details: Any
    rows: Any
    state: Any
    ctx: Any
    _shown: Any

    def select_cell(self, i: int, j: int) -> None:
        """Show cell ``(i, j)`` of the heatmap (what a click does) beside it: its status, full
        error, explanation, workaround, what the installed release registers and the cell's
        release history; "every cell explained" below then follows the clicked op."""
        grid = self.heatmap.grid
        if grid is None or not (0 <= i < grid.shape[0] and 0 <= j < grid.shape[1]):
            return
        self.chips.release()
        column = grid.columns[j]
        raws = [str(r["raw_op"]) for r in grid.records(i, j) if r.get("raw_op")]
        raw_ops = tuple(dict.fromkeys(x for raw in raws for x in raw.split(",") if x))
        extra = ""
        if column.backend == "tensorflow" and raw_ops:
            from explorer.runtime.registry import registry_device

            device_type = column.device if column.declared else registry_device(column.device, column.mode)
            try:
                if grid.status(i, j) != "ok":
                    extra += self._release_markup(grid.ops[i], raw_ops[0], column.dtype, device_type)
                extra += self.history.html(raw_ops, (column.dtype,), device_type)
            except Exception as exc:
                extra += message_html(f"No release history for this cell: {exc}", "warning")
        # beside the heatmap, not above it: the heatmap stays where it is
        self.cell_details.value = cell_html(grid, i, j) + extra
        self._follow(grid.ops[i])

    def pick_release(self, cell: Any, entry: Any) -> None:
        """Tell release ``entry`` of history ``cell`` (a pressed chip) in the details panel."""
        try:
            markup = self._release_markup(self.state.op, cell.raw_op, cell.dtype, cell.device, entry.version)
        except Exception as exc:
            markup = message_html(f"No details for TensorFlow {entry.version}: {exc}", "warning")
        self.cell_details.value = markup
        self._follow(self.state.op)

    def _release_markup(
        self, op: str, raw_op: str, dtype: str, device_type: str, version: str | None = None
    ) -> str:
        """The release panel of ``raw_op`` × ``dtype`` × ``device_type`` in ``version`` (default:
        the installed release when its registry ships, else the newest shipped one)."""
        from explorer.analysis.releases import shipped_releases
        from explorer.queries.kernel_release import release_cell

        installed = str(self.rows.registry().tf_version)
        shipped = shipped_releases()
        version = version or (installed if installed in shipped else shipped[-1])
        name = op if op in catalog() else None
        cell = self.ctx.cache.get(
            ("release-cell", name, raw_op, dtype, device_type, version),
            lambda: release_cell(name, raw_op, dtype, device_type, version),
        )
        tested = self._tested(op, raw_op, dtype, device_type) if version == installed else None
        return release_html(cell, tested, installed)

    def _tested(self, op: str, raw_op: str, dtype: str, device_type: str) -> dict[str, Any] | None:
        """The shown probed row of TensorFlow for the cell with a workaround that ran, or None."""
        if self._shown is None:
            return None
        from explorer.runtime.registry import registry_device

        rows = self._shown[0]
        for r in rows.to_dict("records"):
            if r.get("backend") != "tensorflow" or r.get("mode") == "registry" or not r.get("workaround"):
                continue
            if r.get("op") != op or r.get("dtype") != dtype or raw_op not in str(r.get("raw_op")).split(","):
                continue
            if registry_device(str(r.get("device")), str(r.get("mode"))) == device_type:
                return dict(r)
        return None

    def _follow(self, op: str) -> None:
        """ "Every cell explained" below the heatmap tells ``op`` (the op clicked)."""
        if self._shown is not None:
            self.show_html(details_html(self._shown[0], op))  # type: ignore[attr-defined]
