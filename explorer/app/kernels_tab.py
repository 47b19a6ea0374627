"""Kernels tab: which ops have kernels in which dtype on which device — declared by TensorFlow's
registry (instant) and probed by running (cached; new probes on demand, in the background).

The heatmap shows the selected op's group × the selected dtypes; the table below
explains every non-ok cell of the selected op (error, plain sentence, workaround).
A snapshot from another machine (``precision-explorer kernels --save``) can be
loaded and is shown instead of this machine's results.

Above the heatmap, the selected cells (the op's raw ops × the selected dtypes × the
registry device type of the device and mode) have their history: one box per TensorFlow
release whose registry ships with explorer, changes outlined.  It is read from the shipped
registries, so it shows while TensorFlow is still loading.
"""

from __future__ import annotations

import html
import tempfile
import warnings
from pathlib import Path
from typing import Any

import ipywidgets as widgets

from explorer.app.heatmap import KernelHeatmap
from explorer.app.jobs import Job, JobContext
from explorer.app.render import message_html, table_html
from explorer.app.tab import NotAvailableYet, Tab
from explorer.backends import MODES
from explorer.ops import catalog
from explorer.plots.availability import kernel_heatmap, kernel_panels, styled_table
from explorer.plots.kernel_grid import KernelGrid, kernel_grid
from explorer.plots.palette import OUTLINE, STATUS_COLORS, STATUS_GLYPHS, text_color
from explorer.textsafety import strip_control

#: most history strips shown at once (an op with many raw ops x many dtypes)
MAX_HISTORY_STRIPS = 8
#: seconds "Probe now" waits for a free worker slot of the machine before it fails
PROBE_SLOT_WAIT_S = 600.0

#: Columns of the details table.
DETAIL_COLUMNS = (
    "backend",
    "raw_op",
    "dtype",
    "device",
    "mode",
    "status",
    "explanation",
    "error",
    "workaround",
)


class KernelsTab(Tab):
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
        self.probe_button = widgets.Button(
            description="Probe now",
            button_style="info",
            tooltip="run the shown ops × dtypes in sandboxed workers (cached)",
        )
        self.probe_button.add_class("px-probe")
        self.probe_button.on_click(lambda _: self.start_probe())
        self.panel = self.job_panel()
        self.upload = self._new_upload()
        self.use_local = widgets.Button(description="Back to this machine", disabled=True)
        self.use_local.add_class("px-snapshot-clear")
        self.use_local.on_click(lambda _: self.clear_snapshot())
        self.snapshot_label = widgets.HTML("")
        self.save_button = widgets.Button(
            description="Save snapshot",
            tooltip="download the shown rows (registry + probed) with this machine's "
            "environment, to load on another machine",
        )
        self.save_button.add_class("px-snapshot-save")
        self.save_button.on_click(lambda _: self._offer_snapshot())
        self.save_link = widgets.HTML("").add_class("px-snapshot-link")
        self.key_html = widgets.HTML(_status_key_html())
        self.snapshot_bar = widgets.HBox([self.upload, self.use_local, self.save_button, self.save_link])
        self.toolbar.children = [
            widgets.HBox([self.scope, self.probe_button]),
            self.panel.widget,
            self.snapshot_bar,
            self.snapshot_label,
            self.key_html,
        ]
        self.history_box = widgets.HTML("").add_class("px-kernels-history")
        #: the interactive heatmap (shown in ``self.plot``); a click shows the cell in ``cell_details``
        self.heatmap = KernelHeatmap(on_click=self.select_cell)
        self.cell_details = widgets.HTML("").add_class("px-kernels-cell")
        self._heatmap_shown = False
        self._shown: tuple[Any, list[tuple[str, str, str]], str] | None = None
        children = list(self.widget.children)
        children.insert(children.index(self.status) + 1, self.history_box)
        children.insert(children.index(self.plot) + 1, self.cell_details)
        self.widget.children = tuple(children)
        self.job: Job | None = None
        self.snapshot: Any = None
        from explorer.runtime.registry import available_without_tensorflow

        # the registry view is served from the shipped (or cached) registry of the installed
        # release while TensorFlow still imports; probes run in sandbox workers either way
        self.needs_tensorflow = not available_without_tensorflow()

    # ------------------------------------------------------------------ data

    def registry(self) -> Any:
        """TensorFlow's kernel registry (read once per process; disk-cached)."""
        from explorer.runtime.registry import get_registry

        return self.ctx.cache.get(("registry",), get_registry)

    def on_registry_ready(self, app: Any) -> None:
        """Let the op box take TensorFlow's raw op names once the registry is at hand."""
        reg = self.registry()
        self.state.set_raw_op_checker(reg.has_op)
        app.controls.set_raw_ops(reg.op_names)

    def on_tensorflow_loaded(self, app: Any) -> None:
        self.on_registry_ready(app)

    def shown_ops(self) -> list[str]:
        """Catalog ops (or the raw op) shown as heatmap rows."""
        op = self.state.op
        entry = catalog().get(op)
        if self.scope.value == "all":
            names = list(catalog())
            return names if entry is not None else [op, *names]
        if entry is None:
            return [op]
        return [name for name, o in catalog().items() if o.group == entry.group]

    def _targets(self, ops: list[str]) -> list[Any]:
        from explorer.queries import availability

        return self.ctx.cache.get(
            ("targets", tuple(ops)), lambda: availability.resolve_targets(ops, self.registry())
        )

    def declared_frame(
        self, ops: list[str], dtypes: tuple[str, ...], devices: tuple[str, ...] | None = None
    ) -> Any:
        """Registry rows (mode ``registry``) for ``ops`` × TensorFlow's dtypes among ``dtypes`` on
        ``devices`` (default: the selected device)."""
        import pandas as pd

        from explorer.queries import availability

        reg = self.registry()
        tf_dtypes = [d for d in dtypes if d in reg.float_dtypes]
        devices = devices or (self.state.device,)
        key = ("declared", tuple(ops), tuple(tf_dtypes), tuple(devices))

        def compute() -> Any:
            rows = availability.declared_rows(reg, self._targets(ops), tf_dtypes, list(devices))
            return pd.DataFrame(rows, columns=list(availability.ROW_KEYS) + list(availability.EXTRA_KEYS))

        return self.ctx.cache.get(key, compute)

    def torch_declared_frame(self, ops: list[str], dtypes: tuple[str, ...], devices: tuple[str, ...]) -> Any:
        """What PyTorch's OpInfo declares (rows of backend ``torch``, mode ``registry``) for the
        catalog ops among ``ops`` × ``dtypes`` on ``devices``; None when PyTorch is not installed."""
        import pandas as pd

        from explorer.backends import get_backend
        from explorer.queries import availability
        from explorer.runtime import torch_declared

        if not get_backend("torch").is_installed():
            return None

        def compute() -> Any:
            data = torch_declared.opinfo_data()
            names = [o for o in ops if o in catalog()]
            formats = [d for d in dtypes if d in torch_declared.TORCH_FORMATS]
            table = {(r["op"], r["format"]): r for r in torch_declared.declared_rows(data, names, formats)}
            targets = [t for t in self._targets(ops) if t.catalog]
            rows = availability.torch_declared_rows(targets, list(dtypes), list(devices), table)
            return pd.DataFrame(rows, columns=list(availability.ROW_KEYS) + list(availability.EXTRA_KEYS))

        return self.ctx.cache.get(("torch-declared", tuple(ops), tuple(dtypes), tuple(devices)), compute)

    def machine_has_gpu(self) -> bool:
        """Whether this machine has a GPU (a driver lists one:
        :func:`explorer.runtime.envcache.environment`)."""
        from explorer.runtime import envcache

        return bool(
            self.ctx.cache.get(("machine-gpus",), lambda: tuple(envcache.environment().get("gpus") or ()))
        )

    def declared_beside(self, ops: list[str], dtypes: tuple[str, ...], devices: tuple[str, ...]) -> list[Any]:
        """Declared frames (TensorFlow's registry, PyTorch's OpInfo) of the selected backends on
        ``devices``."""
        frames = []
        if "tensorflow" in self.state.backends:
            frames.append(self.declared_frame(ops, dtypes, devices))
        if "torch" in self.state.backends:
            try:
                torch_rows = self.torch_declared_frame(ops, dtypes, devices)
            except RuntimeError:
                torch_rows = None
            if torch_rows is not None:
                frames.append(torch_rows)
        return [f for f in frames if len(f)]

    def probes(self, ops: list[str], dtypes: tuple[str, ...], mode: str) -> list[Any]:
        """The probes (backend × catalog op × dtype × device × mode) the selection shows."""
        from explorer.queries.availability_probes import probes_for

        return probes_for(ops, dtypes, self.state.backends, [self.state.device], [mode])

    def cached_probe_keys(self) -> set[str]:
        """Keys of the probes with a valid record for this environment in the probe store
        (read again only when the store changed: its files' size and mtime are the stamp)."""
        from explorer.runtime import envcache
        from explorer.runtime import probe_store as probe_cache

        env_key = self.ctx.cache.get(("probe-env-key",), lambda: envcache.environment_key())

        def read() -> frozenset[str]:
            with probe_cache.open_store() as store:
                return frozenset(store.keys(env_key))

        return set(self.ctx.cache.get(("probe-keys", env_key, probe_cache.store_stamp()), read))

    def probed_frame(self, ops: list[str], dtypes: tuple[str, ...], mode: str) -> tuple[Any, int]:
        """Probed rows from the cache only (never runs anything); and how many cells are missing."""
        from explorer.queries import availability

        probes = self.probes(ops, dtypes, mode)
        have = self.cached_probe_keys()
        incomplete = {p.op for p in probes if p.key not in have}
        complete = [o for o in dict.fromkeys(p.op for p in probes) if o not in incomplete]  # catalog order
        missing = sum(p.key not in have for p in probes)
        if not complete:
            return None, missing
        key = ("probed", tuple(complete), dtypes, self.state.backends, self.state.device, mode, len(have))
        result = self.ctx.cache.get(
            key,
            lambda: availability.availability(
                ops=complete,
                dtypes=list(dtypes),
                backends=list(self.state.backends),
                devices=[self.state.device],
                modes=[mode],
                progress=False,
                registry=self.registry(),
            ),
        )
        return result.rows, missing

    # ------------------------------------------------------------------ history

    def history_html(self) -> str:
        """The history strips of the selected cells: the op's raw ops (a catalog op's, or the raw
        op itself) × the selected dtypes × :attr:`AppState.registry_device_type`, across every
        shipped TensorFlow release (no TensorFlow import; cached per selection)."""
        entry = catalog().get(self.state.op)
        raw_ops = tuple(entry.tf_raw_ops) if entry is not None else (self.state.op,)
        device_type = self.state.registry_device_type
        key = ("history", raw_ops, self.state.dtypes, device_type)
        return str(self.ctx.cache.get(key, lambda: _history_strips(raw_ops, self.state.dtypes, device_type)))

    def update_history(self) -> None:
        """Redraw the history strips (a failure is a message in their place, never an error)."""
        try:
            self.history_box.value = self.history_html()
        except Exception as exc:
            self.history_box.value = message_html(f"No release history for this selection: {exc}", "warning")

    def refresh(self) -> None:
        """The history strips first (they need no TensorFlow), then the tab."""
        self.update_history()
        super().refresh()

    # ------------------------------------------------------------------ drawing

    def render(self) -> None:
        if self.snapshot is not None:
            self._render_rows(self._snapshot_rows(), source=f"snapshot {self.ctx.snapshot_name}")
            return
        ops = self.shown_ops()
        dtypes = self.state.dtypes
        mode = self.state.mode
        if mode == "registry":
            if "tensorflow" not in self.state.backends:
                self.show_message(
                    "The registry is TensorFlow's: select the tensorflow backend, or pick mode "
                    "eager/xla to see probed runs of the other backends.",
                    "info",
                )
            import pandas as pd

            frames = [self.declared_frame(ops, dtypes, ("CPU", "GPU"))]
            frames += [
                f
                for f in self.declared_beside(ops, dtypes, ("CPU", "GPU"))
                if set(f["backend"]) != {"tensorflow"}
            ]
            frame = pd.concat([f for f in frames if len(f)] or frames[:1], ignore_index=True)
            non_tf = [d for d in dtypes if d not in self.registry().float_dtypes]
            note = f"TensorFlow has no dtype for {', '.join(non_tf)}. " if non_tf else ""
            self._render_rows(frame, source="registry", note=note + self._gpu_note(frame))
            return
        if self.state.op not in catalog():
            raise NotAvailableYet(
                f"{self.state.op} is a raw TensorFlow op without a catalog entry: the registry "
                "describes it (mode registry), but there is no catalog call to probe."
            )
        frame, missing = self.probed_frame(ops, dtypes, mode)
        frame = self._with_declared_gpu(frame, ops, dtypes, mode)
        note = (
            f"{missing} cells are not probed yet on this machine — press “Probe now” "
            "(runs in the background, results are cached). "
            if missing
            else ""
        )
        if frame is None:
            self.clear_figure()
            self.show_html("")
            self.show_message(note + "Nothing probed yet for this selection.", "info")
            return
        self._render_rows(frame, source="probed", note=note + self._gpu_note(frame))

    def _with_declared_gpu(self, frame: Any, ops: list[str], dtypes: tuple[str, ...], mode: str) -> Any:
        """Probed rows with the declared GPU rows beside them (TensorFlow's registry for ``mode``'s
        GPU device type, PyTorch's OpInfo for CUDA) when the probes ran on the CPU of a machine
        without a GPU; the rows themselves are unchanged."""
        import pandas as pd

        from explorer.runtime.registry import registry_device

        if self.state.device != "CPU" or self.machine_has_gpu():
            return frame
        device_type = registry_device("GPU", mode)
        beside = [
            f[(f["backend"] != "tensorflow") | (f["device"] == device_type)]
            for f in self.declared_beside(ops, dtypes, ("GPU",))
        ]
        beside = [f for f in beside if len(f)]
        if not beside or frame is None:
            return frame
        return pd.concat([frame, *beside], ignore_index=True)

    def _gpu_note(self, rows: Any) -> str:
        """Said once, when GPU cells are shown on a machine without a GPU."""
        if rows is None or not len(rows) or self.machine_has_gpu():
            return ""
        if not rows["device"].astype(str).str.contains("GPU").any():
            return ""
        return (
            "GPU cells are declared by the registry (TensorFlow's kernel registry, PyTorch's OpInfo), "
            "not run: this machine has no GPU; declared cells show their letter in brackets. "
        )

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
        self.show_heatmap(grid, rows, panels)
        self.show_html(self.ctx.cache.get(("kernels-details", key), lambda: self._details_html(rows, source)))
        what = {
            "registry": "declared by TensorFlow's kernel registry (device types as the registry names them)",
            "probed": "probed by running each op in a sandboxed worker (cached on disk)",
        }.get(source, source)
        self.show_message(f"{note}Showing {len(ops)} ops × {len(self.state.dtypes)} dtypes, {what}.", "info")

    def show_heatmap(self, grid: KernelGrid, rows: Any, panels: list[tuple[str, str, str]]) -> None:
        """Redraw the interactive heatmap with ``grid`` (its widget is put in the plot area once);
        the figure for export is drawn only when asked for (:meth:`export`)."""
        self.heatmap.show(grid, highlight=self.state.op)
        self._shown = (rows, panels, self.state.op)
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

    def select_cell(self, i: int, j: int) -> None:
        """Show cell ``(i, j)`` of the heatmap (what a click does): its status, full error,
        explanation and workaround below the heatmap, and its release history."""
        grid = self.heatmap.grid
        if grid is None or not (0 <= i < grid.shape[0] and 0 <= j < grid.shape[1]):
            return
        self.cell_details.value = _cell_html(grid, i, j)
        column = grid.columns[j]
        raws = [str(r["raw_op"]) for r in grid.records(i, j) if r.get("raw_op")]
        raw_ops = tuple(dict.fromkeys(x for raw in raws for x in raw.split(",") if x))
        if column.backend != "tensorflow" or not raw_ops:
            return
        from explorer.runtime.registry import registry_device

        device_type = column.device if column.declared else registry_device(column.device, column.mode)
        try:
            key = ("history", raw_ops, (column.dtype,), device_type)
            self.history_box.value = str(
                self.ctx.cache.get(key, lambda: _history_strips(raw_ops, (column.dtype,), device_type))
            )
        except Exception as exc:
            self.history_box.value = message_html(f"No release history for this cell: {exc}", "warning")

    def _details_html(self, rows: Any, source: str) -> str:
        op = self.state.op
        mine = rows[rows["op"] == op]
        if mine.empty:
            mine = rows[rows["raw_op"].astype(str).str.split(",").apply(lambda r: op in r)]
        parts = [f"<h4>{html.escape(op)}: every cell explained</h4>"]
        if mine.empty:
            parts.append("<p>No rows for this op in the selection.</p>")
        else:
            cells = []
            for r in mine.to_dict("records"):
                cells.append(
                    {
                        "backend": r["backend"],
                        "raw_op": r["raw_op"],
                        "dtype": r["dtype"],
                        "device": r["device"],
                        "mode": r["mode"],
                        "status": r["status"],
                        "explanation": r["explanation"],
                        "error": str(r["error"] or "").strip().splitlines()[0][:240] if r["error"] else "",
                    }
                )
            parts.append(table_html(cells, max_rows=200))
            workarounds = [r for r in mine.to_dict("records") if r.get("workaround")]
            for r in workarounds[:6]:
                parts.append(
                    f"<p><b>Workaround</b> for {_cell(r, 'backend', 'dtype', 'device', 'mode')}: "
                    f"{html.escape(str(r.get('workaround_how') or ''))}</p>"
                    f"<pre style='background:#f6f6f6;padding:6px'>{html.escape(str(r['workaround']))}</pre>"
                )
            errors = [r for r in mine.to_dict("records") if r.get("error")]
            for r in errors[:3]:
                parts.append(
                    f"<details><summary>full error {_cell(r, 'backend', 'dtype', 'mode')}</summary>"
                    "<pre style='white-space:pre-wrap;font-size:85%'>"
                    f"{html.escape(str(r['error']))}</pre></details>"
                )
        for backend, device, mode in kernel_panels(rows)[:4]:
            try:
                table = styled_table(rows, backend, device, mode).to_html()
            except ValueError:
                continue
            parts.append(
                f"<details><summary>{html.escape(f'{backend} · {device} · {mode}')}: table "
                f"(hover a cell for its error and workaround)</summary>{table}</details>"
            )
        if "disagreement" in rows:
            dis = rows[rows["disagreement"].astype(bool)]
            if len(dis):
                parts.append(f"<h4>Declared vs probed disagreements ({len(dis)})</h4>")
                parts.append(
                    table_html(
                        dis[
                            ["backend", "op", "dtype", "device", "mode", "declared", "status", "disagreement"]
                        ]
                    )
                )
        return "".join(parts)

    # ------------------------------------------------------------------ probing

    def start_probe(self, wait: bool = False) -> Job:
        """Probe the shown ops × dtypes × backends for the device and mode (eager and xla when mode is
        registry) in the background; results land in the on-disk cache and the view redraws."""
        if self.job is not None and self.job.running:
            raise RuntimeError("a probe sweep is already running; cancel it first")
        ops = [o for o in self.shown_ops() if o in catalog()]
        if not ops:
            raise ValueError(
                f"{self.state.op} is a raw TensorFlow op without a catalog entry: it has registry rows "
                "only, nothing to probe"
            )
        from explorer.analysis.availability_rows import DEFAULT_AVAILABILITY_MODES

        # in registry mode, probe the default modes (torch.compile takes seconds per op: asked for only)
        defaults = [m for m in DEFAULT_AVAILABILITY_MODES if m != "registry"]
        modes = defaults if self.state.mode == "registry" else [self.state.mode]
        selection = (list(self.state.dtypes), list(self.state.backends), [self.state.device], modes)
        self.job = Job("probing", lambda ctx: self._probe(ctx, ops, *selection))
        self.panel.attach(self.job)
        self.job.on_done(self._probe_done)
        self.probe_button.disabled = True
        self.job.start()
        if wait:
            self.job.wait()
        return self.job

    def _probe(
        self,
        ctx: JobContext,
        ops: list[str],
        dtypes: list[str],
        backends: list[str],
        devices: list[str],
        modes: list[str],
    ) -> int:
        """Probe ``ops`` one at a time, in the kernel's probe sandbox
        (:func:`~explorer.runtime.probe.app_probe_sandbox`): while every worker slot of the
        machine is taken (other visitors probing) the job waits for one, saying so, and can be
        cancelled."""
        from explorer.queries import availability
        from explorer.runtime.probe import app_probe_sandbox

        def waiting() -> None:
            ctx.check()
            ctx.progress(0.0, "waiting for a free worker slot (other visitors' probes are running)")

        reg = self.registry()
        done = 0
        with app_probe_sandbox().held(PROBE_SLOT_WAIT_S, waiting) as box:
            for i, op in enumerate(ops):
                ctx.check()
                ctx.progress(i / len(ops), f"{op} ({i + 1}/{len(ops)})")
                result = availability.availability(
                    ops=[op],
                    dtypes=dtypes,
                    backends=backends,
                    devices=devices,
                    modes=modes,
                    progress=False,
                    registry=reg,
                    sandbox=box,
                )
                done += result.probed
        ctx.progress(1.0, f"{done} new probes")
        return done

    def _probe_done(self, job: Job) -> None:
        self.probe_button.disabled = False
        if self.state.mode == "registry" and job.status == "done":
            self.state.set(mode="eager")  # show what was just probed
        self.dirty = True
        self.refresh()
        if job.status == "failed":
            self.show_message(f"Probing failed: {job.error}", "error")

    # ------------------------------------------------------------------ snapshots

    def snapshot_bytes(self) -> bytes:
        """The shown ops × dtypes (registry rows and cached probes) as a snapshot JSON, with this
        machine's environment (``precision-explorer kernels --load`` and the app read it)."""
        import pandas as pd

        from explorer.queries import availability, snapshot
        from explorer.runtime import envcache
        from explorer.runtime.registry import registry_source

        ops, dtypes = self.shown_ops(), self.state.dtypes
        frames = [self.declared_frame(ops, dtypes)]
        for mode in MODES:
            probed, _ = self.probed_frame(ops, dtypes, mode) if self.state.op in catalog() else (None, 0)
            if probed is not None:
                frames.append(probed)
        rows = pd.concat([f for f in frames if len(f)], ignore_index=True)
        reg = self.registry()
        env = dict(envcache.environment(), tf_version=reg.tf_version, registry_source=registry_source())
        result = availability.AvailabilityResult(rows, env)
        with tempfile.TemporaryDirectory() as tmp:
            path = snapshot.save_snapshot(result, Path(tmp) / "snapshot.json")
            return Path(path).read_bytes()

    def _offer_snapshot(self) -> None:
        from explorer.app.render import download_link, error_message

        try:
            data = self.snapshot_bytes()
        except Exception as exc:
            self.save_link.value = message_html(error_message(exc, "could not save a snapshot"), "warning")
            return
        name = f"kernels-{self.state.op}-{self.state.device}.json"
        self.save_link.value = download_link(data, name, "application/json")

    def _new_upload(self) -> widgets.FileUpload:
        """A fresh upload button.  Each upload gets a new one: resetting ``value`` from Python does
        not reach the page (ipywidgets drops a kernel update of a value the page has just sent), so
        the page kept the old file and the same file uploaded again changed nothing."""
        upload = widgets.FileUpload(
            accept=".json",
            multiple=False,
            description="Load snapshot",
            tooltip="load a kernels snapshot (.json) saved on another machine with Save snapshot "
            "or precision-explorer kernels --save",
        )
        upload.add_class("px-snapshot-upload")
        upload.observe(self._uploaded, names="value")
        return upload

    def _replace_upload(self) -> None:
        old, self.upload = self.upload, self._new_upload()
        self.snapshot_bar.children = tuple(self.upload if c is old else c for c in self.snapshot_bar.children)
        old.unobserve(self._uploaded, names="value")
        old.close()

    def _uploaded(self, change: dict[str, Any]) -> None:
        files = change["new"]
        if not files:
            return
        item = files[0]
        name = strip_control(Path(str(item.get("name") or "snapshot.json")).name)[:200] or "snapshot.json"
        try:
            from explorer.queries.snapshot import parse_snapshot

            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                result = parse_snapshot(bytes(item.get("content", b"")), name)
            self.show_snapshot(result, name, [str(w.message) for w in caught])
        except Exception as exc:
            self.show_error(exc, f"could not load {name}")
        finally:
            self._replace_upload()  # uploading the same file again is a new upload

    def load_snapshot_file(self, path: str | Path, name: str | None = None) -> None:
        """Show a snapshot JSON saved on another machine (``precision-explorer kernels --save``);
        the file is only read."""
        from explorer.queries.snapshot import load_snapshot

        shown = name or Path(path).name
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = load_snapshot(path)
            except (ValueError, OSError) as exc:  # name the user's file, not where it was stored
                text = str(exc).replace(str(path), shown).replace(str(Path(path).parent), "")
                raise ValueError(text) from None
        notes = [str(w.message).replace(str(path), shown) for w in caught]
        self.show_snapshot(result, shown, notes)

    def show_snapshot(self, result: Any, name: str, notes: list[str] | None = None) -> None:
        """Show a checked snapshot (an AvailabilityResult) instead of this machine's results."""
        self.snapshot = result
        self.ctx.snapshot = result
        self.ctx.snapshot_name = name
        self.snapshot_label.value = message_html(
            f"Showing snapshot {name}: {len(result.rows)} rows; {_environment_summary(result.environment)}."
            + "".join(f" {note}" for note in notes or []),
            "info",
        )
        self.use_local.disabled = False
        self.dirty = True
        self.refresh()

    def clear_snapshot(self) -> None:
        """Go back to this machine's results."""
        self.snapshot = None
        self.ctx.snapshot = None
        self.ctx.snapshot_name = ""
        self.snapshot_label.value = ""
        self.use_local.disabled = True
        self.dirty = True
        self.refresh()

    def _snapshot_rows(self) -> Any:
        rows = self.snapshot.rows
        ops = set(self.shown_ops())
        sel = rows[rows["op"].isin(ops) & rows["dtype"].isin(self.state.dtypes)]
        if self.state.mode != "registry":
            sel = sel[(sel["mode"] == self.state.mode) & (sel["device"] == self.state.device)]
        else:
            sel = sel[sel["mode"] == "registry"]
        if sel.empty:
            have = sorted(set(zip(rows["device"], rows["mode"], strict=True)))
            raise NotAvailableYet(
                f"The snapshot has no rows for {self.state.op}'s ops in {', '.join(self.state.dtypes)} "
                f"({self.state.device}, {self.state.mode}); it has device/mode: "
                + ", ".join(f"{d}/{m}" for d, m in have)
            )
        return sel


def _history_strips(raw_ops: tuple[str, ...], dtypes: tuple[str, ...], device_type: str) -> str:
    """The strips of :func:`explorer.plots.history.history_strip_html` for raw ops × dtypes on
    ``device_type``, under one heading with the key (at most :data:`MAX_HISTORY_STRIPS`)."""
    from explorer.analysis import releases
    from explorer.plots.history import history_legend_html, history_strip_html

    shipped = releases.shipped_releases()
    strips: list[str] = []
    notes: list[str] = []
    cells = [(raw, dtype) for raw in raw_ops for dtype in dtypes]
    for raw, dtype in cells[:MAX_HISTORY_STRIPS]:
        known = releases.known_op(raw)
        if known is None:
            notes.append(f"No shipped TensorFlow release has the raw op {raw}.")
            continue
        entries = releases.history(known, dtype, device_type)
        strips.append(history_strip_html(entries, f"{known} · {dtype} · {device_type}"))
    if len(cells) > MAX_HISTORY_STRIPS:
        notes.append(f"{len(cells) - MAX_HISTORY_STRIPS} more raw op × dtype cells not shown.")
    summary = (
        f"History across TensorFlow releases: {device_type}, from the registries shipped with explorer "
        f"({len(shipped)} releases, {shipped[0]} to {shipped[-1]})"
    )
    return (
        f"<details class='px-history-panel' open><summary>{html.escape(summary)}</summary>"
        f"{history_legend_html()}{''.join(strips)}"
        + "".join(f"<p style='font-size:85%'>{html.escape(n)}</p>" for n in notes)
        + "</details>"
    )


def _environment_summary(env: dict[str, Any]) -> str:
    """``"tensorflow 2.21.0, numpy 2.4.6; devices CPU:0, GPU:0"`` from a snapshot's environment
    (plain text: the caller escapes it)."""
    versions = env.get("versions")
    named = [f"{k} {v}" for k, v in versions.items() if v is not None] if isinstance(versions, dict) else []
    if not named and env.get("tf_version"):
        named = [f"tensorflow {env['tf_version']}"]
    devices = env.get("devices")
    names = devices.get("tensorflow") if isinstance(devices, dict) else None
    where = ", ".join(str(d).removeprefix("/device:") for d in names[:8]) if isinstance(names, list) else ""
    text = ", ".join(named[:6]) or "versions not recorded"
    return strip_control(text + (f"; devices {where}" if where else ""))[:400]


def _cell(row: dict[str, Any], *keys: str) -> str:
    return html.escape(" ".join(str(row[k]) for k in keys))


def _frame_stamp(rows: Any) -> tuple[int, int]:
    """A cheap fingerprint of a rows frame for figure caching."""
    return len(rows), hash(tuple(rows["status"].astype(str))) if len(rows) else 0


def _status_key_html() -> str:
    """The key: each status's colour and glyph, and how a declared cell is marked."""
    items = "".join(
        f"<span style='display:inline-block;min-width:16px;text-align:center;background:{c};"
        f"color:{text_color(c)};margin:0 4px 0 10px;border:1px solid {OUTLINE};font-weight:bold'>"
        f"{html.escape(STATUS_GLYPHS[s])}</span>{html.escape(s)}"
        for s, c in STATUS_COLORS.items()
    )
    declared = (
        "<span style='margin-left:10px'><b>(+)</b> letter in brackets: declared by a registry, not run</span>"
    )
    return f"<div class='px-key' style='font-size:85%'>{items}{declared}</div>"


def _cell_html(grid: KernelGrid, i: int, j: int) -> str:
    """One clicked cell: where it is, its status (declared or ran), and for every row behind it the
    explanation, the full error and the workaround (all escaped)."""
    column = grid.columns[j]
    status = grid.status(i, j)
    where = f"{grid.ops[i]} · {column.dtype} · {column.backend} · {column.panel_label}"
    how = "declared by the registry, not run here" if column.declared else "ran here"
    parts = [
        f"<div class='px-cell-details' style='border:1px solid {OUTLINE};padding:6px;margin:4px 0'>"
        f"<b>{html.escape(where)}</b>: "
        f"<span class='px-cell-status'>{html.escape(status or 'not asked for')}</span> ({html.escape(how)})"
    ]
    for r in grid.records(i, j)[:6]:
        raw = html.escape(str(r.get("raw_op") or ""))
        parts.append(f"<div class='px-cell-row'><i>{raw}</i> {html.escape(str(r.get('status') or ''))}")
        if r.get("explanation"):
            parts.append(f"<p class='px-cell-explanation'>{html.escape(str(r['explanation']))}</p>")
        if r.get("error"):
            parts.append(
                "<pre class='px-cell-error' style='white-space:pre-wrap;font-size:85%;max-height:240px;"
                f"overflow:auto'>{html.escape(str(r['error']))}</pre>"
            )
        if r.get("workaround"):
            parts.append(
                f"<p><b>Workaround</b>: {html.escape(str(r.get('workaround_how') or ''))}</p>"
                "<pre class='px-cell-workaround' style='background:#f6f6f6;padding:6px'>"
                f"{html.escape(str(r['workaround']))}</pre>"
            )
        parts.append("</div>")
    return "".join(parts) + "</div>"
