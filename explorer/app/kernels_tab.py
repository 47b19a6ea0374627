"""Kernels tab: which ops have kernels in which dtype on which device — declared by TensorFlow's
registry (instant) and probed by running (cached; new probes on demand, in the background).

First the answer in words (one sentence per shown dtype and device); then, above the
heatmap, the selected cells (the op's raw ops × the selected dtypes × the registry device
type of the device and mode) across every TensorFlow release whose registry ships with
explorer, one chip (a button) per release: pressing one tells that release in the details
panel beside the heatmap.  The heatmap shows the selected op's group (or the whole catalog)
× the selected dtypes; beside it an Op and Column picker reaches any cell by keyboard; the
table below explains every cell of the op last clicked (error, plain sentence, workaround).
A snapshot from another machine (``precision-explorer kernels --save``) can be loaded and is
shown instead of this machine's results.

The tab draws; its collaborators do one job each: :class:`~explorer.app.kernels_rows.KernelRows`
asks the queries for the rows, :class:`~explorer.app.kernels_chips.ReleaseChips` draws the
release chips, :class:`~explorer.app.kernels_panel.CellPanel` fills the details panel,
:class:`~explorer.app.kernels_picker.CellPicker` picks a cell by keyboard,
:class:`~explorer.app.kernels_probe.ProbeController` runs "Probe now",
:class:`~explorer.app.kernels_snapshot.SnapshotPanel` loads and saves snapshots, and
:mod:`explorer.app.kernels_details` words the cells.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import ipywidgets as widgets

from explorer.app.heatmap import KernelHeatmap, speed_legend_html
from explorer.app.jobs import Job
from explorer.app.kernels_chips import ReleaseChips
from explorer.app.kernels_details import details_html, status_key_html
from explorer.app.kernels_history import HistoryStrip
from explorer.app.kernels_panel import CellPanel
from explorer.app.kernels_picker import CellPicker
from explorer.app.kernels_probe import ProbeController
from explorer.app.kernels_rows import KernelRows
from explorer.app.kernels_snapshot import SnapshotPanel
from explorer.app.kernels_speed import SpeedLayer
from explorer.app.render import message_html
from explorer.app.tab import NotAvailableYet, Tab, shown_dtypes
from explorer.ops import catalog
from explorer.plots.availability import kernel_heatmap, kernel_panels
from explorer.plots.kernel_grid import KernelGrid, kernel_grid, speed_ratios


class KernelsTab(CellPanel, Tab):
    """Declared (registry) and probed kernel availability for the selection."""

    title = "Kernels"
    key = "kernels"
    fields = ("op", "dtypes", "device", "backends", "mode")
    needs_tensorflow = True
    intro = (
        "Does this op run in this dtype on this device? Declared by TensorFlow's own kernel registry "
        "(instant, GPU included), probed by really running it (Probe now), with the error, why, and a "
        "workaround."
    )

    def build(self) -> None:
        self.scope = widgets.ToggleButtons(
            options=[("op's group", "group"), ("whole catalog", "all")],
            value="group",
            description="Show",
            style={"button_width": "110px"},
        )
        self.scope.add_class("px-kernels-scope")
        self.scope.observe(lambda _: self.refresh(), names="value")
        self.rows = KernelRows(self.ctx, lambda: str(self.scope.value))
        self.panel = self.job_panel()
        self.prober = ProbeController(
            self.state, self.panel, self.rows.shown_ops, self.rows.registry, self._probe_done
        )
        self.probe_button = self.prober.button
        #: "Colour by: availability | speed" and the speed measurement (:mod:`explorer.app.kernels_speed`)
        self.speed = SpeedLayer(self.state, self.panel, self.rows.shown_ops, self._speed_changed)
        self.colour_by = self.speed.control
        self.snapshots = SnapshotPanel(
            self.ctx, self.rows.shown_result, self._snapshot_changed, self.show_error
        )
        self.use_local = self.snapshots.use_local
        self.snapshot_label = self.snapshots.label
        self.save_button = self.snapshots.save_button
        self.save_link = self.snapshots.save_link
        self.snapshot_bar = self.snapshots.bar
        self.key_html = widgets.HTML(status_key_html())
        from explorer.backends import get_backend

        self._torch_installed = get_backend("torch").is_installed()
        #: mode registry: PyTorch's OpInfo declarations beside TensorFlow's registry
        self.opinfo = widgets.Checkbox(
            value=False,
            description="also PyTorch's OpInfo (declared dtypes)",
            indent=False,
            layout=widgets.Layout(width="auto"),
        )
        self.opinfo.add_class("px-kernels-opinfo")
        self.opinfo.observe(lambda _: self._opinfo_changed(), names="value")
        self.toolbar.children = [
            widgets.HBox([self.scope, self.probe_button, self.colour_by, self.opinfo]),
            self.panel.widget,
            self.snapshot_bar,
            self.snapshot_label,
            self.key_html,
        ]
        #: the clicked cell's history strip (in the details panel)
        self.history = HistoryStrip(self.ctx)
        #: the selection's release chips above the heatmap (buttons: a press tells the release)
        self.chips = ReleaseChips(self.ctx, self.pick_release)
        self.history_box = self.chips.widget
        #: the interactive heatmap (shown in ``self.plot``); a click shows the cell in ``cell_details``
        self.heatmap = KernelHeatmap(on_click=self.select_cell)
        self.cell_details = widgets.HTML("").add_class("px-kernels-cell")
        self._heatmap_shown = False
        self._shown: tuple[Any, list[tuple[str, str, str]], str] | None = None
        children = list(self.widget.children)
        children.insert(children.index(self.status) + 1, self.history_box)
        #: the heatmap and, beside it (below on a narrow screen), the clicked cell's details
        #: the keyboard's way to a cell: pick its op and column, then "Show cell details"
        self.picker = CellPicker(self.select_cell)
        self.side = widgets.VBox([self.picker.widget, self.cell_details]).add_class("px-kernels-side")
        self.main = widgets.HBox([self.plot, self.side]).add_class("px-kernels-main")
        children[children.index(self.plot)] = self.main
        self.widget.children = tuple(children)
        from explorer.runtime.registry import available_without_tensorflow

        # the registry view is served from the shipped (or cached) registry of the installed
        # release while TensorFlow still imports; probes run in sandbox workers either way
        self.needs_tensorflow = not available_without_tensorflow()

    def shown_fields(self) -> tuple[str, ...]:
        """In mode registry the Device and Backends controls are hidden: the registry view shows
        CPU and GPU side by side, and only TensorFlow's registry (and PyTorch's OpInfo, its own
        checkbox) declare, so neither would change anything.  The OpInfo checkbox shows there
        only."""
        registry = self.state.mode == "registry"
        self.opinfo.layout.display = None if registry and self._torch_installed else "none"
        if registry:
            return tuple(f for f in self.fields if f not in ("device", "backends"))
        return self.fields

    # ------------------------------------------------------------------ what the collaborators hold

    def registry(self) -> Any:
        """TensorFlow's kernel registry (read once per process; disk-cached)."""
        return self.rows.registry()

    def shown_ops(self) -> list[str]:
        """Catalog ops (or the raw op) shown as heatmap rows."""
        return self.rows.shown_ops()

    def declared_frame(
        self, ops: list[str], dtypes: tuple[str, ...], devices: tuple[str, ...] | None = None
    ) -> Any:
        """TensorFlow's registry rows (:meth:`KernelRows.declared_frame`)."""
        return self.rows.declared_frame(ops, dtypes, devices)

    def cached_probe_keys(self) -> set[str]:
        """Keys of the probes stored for this environment (:meth:`KernelRows.cached_probe_keys`)."""
        return self.rows.cached_probe_keys()

    @property
    def job(self) -> Job | None:
        """The last "Probe now" job (None before the first)."""
        return self.prober.job

    @property
    def upload(self) -> widgets.FileUpload:
        """The snapshot upload button (a fresh one after each upload)."""
        return self.snapshots.upload

    @property
    def snapshot(self) -> Any:
        """The snapshot shown (an AvailabilityResult), None for this machine's rows."""
        return self.snapshots.snapshot

    def start_probe(self, wait: bool = False) -> Job:
        """ "Probe now" (:meth:`ProbeController.start`)."""
        return self.prober.start(wait)

    def snapshot_bytes(self) -> bytes:
        """The shown rows as a snapshot JSON (:meth:`SnapshotPanel.snapshot_bytes`)."""
        return self.snapshots.snapshot_bytes()

    def load_snapshot_file(self, path: str | Path, name: str | None = None) -> None:
        """Show a snapshot JSON saved on another machine (:meth:`SnapshotPanel.load_file`)."""
        self.snapshots.load_file(path, name)

    def show_snapshot(self, result: Any, name: str, notes: list[str] | None = None) -> None:
        """Show a checked snapshot (an AvailabilityResult) instead of this machine's results."""
        self.snapshots.show(result, name, notes)

    def clear_snapshot(self) -> None:
        """Go back to this machine's results."""
        self.snapshots.clear()

    # ------------------------------------------------------------------ reactions

    def on_registry_ready(self, app: Any) -> None:
        """Let the op box take TensorFlow's raw op names once the registry is at hand."""
        reg = self.registry()
        self.state.set_raw_op_checker(reg.has_op)
        app.controls.set_raw_ops(reg.op_names)

    def on_tensorflow_loaded(self, app: Any) -> None:
        self.on_registry_ready(app)

    def _snapshot_changed(self) -> None:
        self.dirty = True
        self.refresh()

    def _probe_done(self, job: Job) -> None:
        switched = self.state.mode == "registry" and job.status == "done"
        job_backends = list(self.state.backends)
        if switched:
            self.state.set(mode="eager")  # show what was just probed, and say so
        self.dirty = True
        self.refresh()
        if job.status == "failed":
            self.show_message(f"Probing failed: {job.error}", "error")
        elif switched:
            self.status.value = (
                message_html(
                    f"Mode changed from registry to eager: Probe now ran {', '.join(job_backends)} "
                    "eagerly and under XLA, and eager shows what was just probed (the Backends "
                    "control is back). Pick registry in Mode to see the declared view again.",
                    "info",
                )
                + self.status.value
            )

    def _opinfo_changed(self) -> None:
        self.dirty = True
        self.refresh()

    def _speed_changed(self) -> None:
        job = self.speed.job
        self.dirty = True
        self.refresh()
        if job is not None and job.status == "failed" and self.speed.active:
            self.show_message(f"Timing failed: {job.error}", "error")

    def refresh(self) -> None:
        """The release chips first (they need no TensorFlow), then the tab."""
        self.chips.update()
        super().refresh()

    # ------------------------------------------------------------------ drawing

    def answer_sentences(self, probed: Any = None) -> list[str]:
        """The answer for each shown dtype and device (:func:`kernels_answers`)."""
        return kernels_answers(self.state, self.registry(), self.ctx.cache, probed)

    def render(self) -> None:
        self.speed.show_control()
        if self.prober.probed_for is not None and self.prober.probed_for != self.prober.selection():
            self.panel.forget()  # "probing: done" was about another selection
        answerable = self.state.mode == "registry" or (
            self.state.mode in ("eager", "xla") and "tensorflow" in self.state.backends
        )
        if self.snapshot is None and answerable:
            self.show_answer(self.answer_sentences())
        if self.snapshot is not None:
            rows = self.snapshots.selected_rows(self.shown_ops())
            self._render_rows(rows, source=f"snapshot {self.ctx.snapshot_name}")
            return
        ops = self.shown_ops()
        dtypes = self.state.dtypes
        mode = self.state.mode
        if mode == "registry":
            frame = self.rows.registry_view(ops, dtypes, opinfo=bool(self.opinfo.value))
            non_tf = [d for d in dtypes if d not in self.registry().float_dtypes]
            note = f"TensorFlow has no dtype for {', '.join(non_tf)}. " if non_tf else ""
            self._render_rows(frame, source="registry", note=note + self.rows.gpu_note(frame))
            return
        if self.state.op not in catalog():
            raise NotAvailableYet(
                f"{self.state.op} is a raw TensorFlow op without a catalog entry: the registry "
                "describes it (mode registry), but there is no catalog call to probe."
            )
        frame, missing = self.rows.probed_frame(ops, dtypes, mode)
        if frame is not None:
            self.show_answer(self.answer_sentences(frame))
        frame = self.rows.with_declared_gpu(frame, ops, dtypes, mode)
        note = (
            f"{missing} cells are not probed yet on this machine — press “Probe now” "
            "(runs in the background, results are cached). "
            if missing
            else ""
        )
        if frame is None:
            self.clear_figure()
            self.show_html("")
            self.panel.forget()  # a finished probe's "done" beside "nothing probed" contradicts it
            self.show_message(note + "Nothing probed yet for this selection.", "info")
            return
        self._render_rows(frame, source="probed", note=note + self.rows.gpu_note(frame))

    def _render_rows(self, rows: Any, source: str, note: str = "") -> None:
        if rows is None or len(rows) == 0:
            self.clear_figure()
            self.show_html("")
            self.show_message(
                note + f"No {source} rows for {self.state.op} in {', '.join(self.state.dtypes)}.", "info"
            )
            return
        panels = kernel_panels(rows)
        ops = list(dict.fromkeys(rows["op"]))
        key = (
            source,
            self.ctx.snapshot_name if source.startswith("snapshot") else "",
            tuple(ops),
            self.state.dtypes,
            tuple(panels),
            self.state.op,
            _frame_stamp(rows),
        )
        grid = self.ctx.cache.get(("kernels-grid", key), lambda: kernel_grid(rows, panels))
        self.show_heatmap(grid, rows, panels, by_speed=source == "probed")
        op = self.state.op
        self.show_html(self.ctx.cache.get(("kernels-details", key), lambda: details_html(rows, op)))
        what = {
            "registry": "declared by TensorFlow's kernel registry (device types as the registry names them)",
            "probed": "probed: each op really run on this machine (kept for later visits)",
        }.get(source, source)
        self.show_message(
            f"{note}Showing {len(ops)} ops × {len(self.state.dtypes)} dtypes, {what}."
            + self._speed_words(source),
            "info",
        )

    def _speed_words(self, source: str) -> str:
        """What the speed layer shows, in words (empty when colouring by availability)."""
        if not self.speed.active:
            return ""
        if source != "probed":
            return " Speed is measured on this machine only: the cells show their status."
        rows = self.speed.rows()
        if rows is None:
            running = self.speed.job is not None and self.speed.job.running
            return " Timing the shown cells against float32…" if running else " Speed not measured yet."
        coverage = self.speed.coverage.get(self.speed.selection(), "")
        return f" Coloured by time per call relative to float32 ({coverage})."

    def show_heatmap(
        self, grid: KernelGrid, rows: Any, panels: list[tuple[str, str, str]], by_speed: bool = False
    ) -> None:
        """Redraw the interactive heatmap with ``grid`` (its widget is put in the plot area once),
        coloured by speed when ``by_speed`` and the speed layer has rows for the selection;
        the figure for export is drawn only when asked for (:meth:`export`)."""
        self._wrote()
        if by_speed:
            self.speed.ensure_measured()
        timed = self.speed.rows() if by_speed and self.speed.active else None
        if timed is None:
            self.heatmap.show(grid, highlight=self.state.op)
        else:
            ratios = speed_ratios(grid, timed)
            self.heatmap.show(grid, highlight=self.state.op, note=speed_legend_html(), ratios=ratios)
        self._shown = (rows, panels, self.state.op)
        self.picker.set_grid(grid, self.state.op)
        self._figure = None
        self.cell_details.value = ""
        if not self._heatmap_shown:
            self.plot.outputs = (
                {
                    "output_type": "display_data",
                    "data": {
                        "application/vnd.jupyter.widget-view+json": {
                            "model_id": self.heatmap.widget.model_id,
                            "version_major": 2,
                            "version_minor": 0,
                        },
                        "text/plain": f"<kernels heatmap: {grid.shape[0]} ops x {grid.shape[1]} columns>",
                    },
                    "metadata": {},
                },
            )
            self._heatmap_shown = True
        self.export_link.value = ""

    def clear_figure(self) -> None:
        """Remove the heatmap (and the figure for export)."""
        super().clear_figure()
        self._heatmap_shown = False
        self._shown = None
        self.cell_details.value = ""

    def export(self, fmt: str = "png", dtype: str | None = None) -> bytes:
        """The shown heatmap as a PNG or SVG figure (matplotlib, drawn now from the shown rows)."""
        if self._shown is not None and self._figure is None:
            rows, panels, op = self._shown
            self._figure = kernel_heatmap(rows, panels, highlight=op)
        return super().export(fmt, dtype)


def kernels_answers(state: Any, registry: Any, cache: Any, probed: Any = None) -> list[str]:
    """The answer for each shown dtype (:func:`explorer.queries.answers.kernels_answer`), on CPU
    and GPU in mode registry (shown side by side there), else on the selected device; with the
    status a probe of TensorFlow recorded here when ``probed`` rows are given."""
    from explorer.queries.answers import kernels_answer

    dtypes, _ = shown_dtypes(state.dtypes)
    devices = ("CPU", "GPU") if state.mode == "registry" else (state.device,)
    sentences: list[str] = []
    op, mode = state.op, state.mode
    for dtype, device in ((d, v) for d in dtypes for v in devices):
        status: str | None = None
        if probed is not None and len(probed):
            mine = probed[
                (probed["backend"] == "tensorflow")
                & (probed["op"] == op)
                & (probed["dtype"] == dtype)
                & (probed["device"] == device)
                & (probed["mode"] == mode)
            ]
            status = str(mine["status"].iloc[0]) if len(mine) else None
        key = ("kernels-answer", op, dtype, device, mode, status)
        sentences.append(cache.get(key, partial(kernels_answer, op, dtype, device, mode, registry, status)))
    return sentences


def _frame_stamp(rows: Any) -> tuple[int, int]:
    """A cheap fingerprint of a rows frame for figure caching."""
    return len(rows), hash(tuple(rows["status"].astype(str))) if len(rows) else 0
