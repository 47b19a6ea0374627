"""Environment tab: framework versions, devices, and what the registry says about GPU kernels.

Versions come from package metadata.  The devices of TensorFlow, PyTorch and JAX are asked of a
sandboxed worker process (:func:`explorer.runtime.sweep_store.worker_call`), never imported in
the kernel; TensorFlow's are kept in the probe store (the record probes write too), so a later
visitor reads them without a worker.  The registry summary comes from the registry data shipped
for the installed release (or its disk cache).
"""

from __future__ import annotations

import html
from importlib import metadata
from typing import Any

from explorer.app.render import message_html, table_html
from explorer.app.tab import Tab

#: ``ctx.background`` topic of device lists that arrived from a worker
ENV_TOPIC = "environment"
#: backends whose devices are asked of a worker process (their frameworks are heavy imports)
WORKER_DEVICE_BACKENDS: tuple[str, ...] = ("tensorflow", "torch", "jax", "onnxruntime")

#: Distributions whose versions the tab lists.
PACKAGES: tuple[str, ...] = (
    "numpy",
    "ml_dtypes",
    "tensorflow",
    "keras",
    "torch",
    "jax",
    "onnxruntime",
    "onnx",
    "scipy",
    "pandas",
    "matplotlib",
    "ipywidgets",
    "jupyterlab",
    "voila",
    "precision-explorer",
)


def package_versions() -> dict[str, str]:
    """Installed version of each package in :data:`PACKAGES` ("not installed" otherwise)."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


class EnvironmentTab(Tab):
    """Versions, devices, backends, and the registry's GPU kernels on a machine without a GPU."""

    title = "Environment"
    key = "environment"
    fields = ("op", "dtypes")
    needs_tensorflow = False
    intro = (
        "What is this machine? Framework versions and devices, and what the registry says about GPU "
        "kernels even without a GPU."
    )

    def on_tensorflow_loaded(self, app: object) -> None:
        self.dirty = True

    def render(self) -> None:
        note = self.ctx.runtime_note
        how = f"<h4>How this app runs</h4><p class='px-runtime-note'>{html.escape(note)}</p>" if note else ""
        parts = [
            self._system_html(),
            self._cpu_features_html(),
            self._backends_html(),
            self._registry_html(),
            how,
        ]
        self.show_html("".join(parts))
        self.clear_message()

    def _system_html(self) -> str:
        from explorer.runtime.envcache import environment

        env = environment()  # the same facts a kernel snapshot records
        rows = [
            {"what": "python", "version": env["python"]},
            {"what": "platform", "version": env["platform"]},
            {"what": "CPU", "version": env["cpu"]},
            {"what": "CPU cores", "version": str(env["cpu_count"])},
            {"what": "GPUs (driver)", "version": ", ".join(env["gpus"]) or "none found"},
        ]
        rows += [{"what": k, "version": v} for k, v in package_versions().items()]
        return "<h4>Software</h4>" + table_html(rows)

    def _cpu_features_html(self) -> str:
        """The CPU's flags for low-precision arithmetic, with what each means and what follows
        (``precision-explorer hardware`` adds what PyTorch and oneDNN report)."""
        from explorer.queries.hardware import feature_rows, hardware

        report = hardware(probe_libraries=False)  # /proc/cpuinfo and nvidia-smi: no framework import
        notes = "".join(f"<li>{html.escape(note)}</li>" for note in report.notes)
        return (
            "<h4>CPU features for low precision</h4>"
            + table_html(feature_rows(report.cpu))
            + f"<ul>{notes}</ul>"
        )

    def _backends_html(self) -> str:
        from explorer.backends import BACKEND_NAMES, get_backend

        rows = []
        for name in BACKEND_NAMES:
            backend = get_backend(name)
            installed = backend.is_installed()
            if not installed:
                devices = "—"
            elif name in WORKER_DEVICE_BACKENDS and not (name == "tensorflow" and self.ctx.tf_ready):
                devices = self._worker_devices_text(name)
            else:
                try:
                    devices = ", ".join(backend.devices())
                except Exception as exc:
                    devices = f"unknown ({type(exc).__name__})"
            rows.append({"backend": name, "installed": "yes" if installed else "no", "devices": devices})
        gpu = ""
        if self.ctx.tf_ready:
            tf = self.ctx.tf_loader.result
            gpus = tf.config.list_physical_devices("GPU")
            gpu = (
                f"<p>{len(gpus)} GPU(s) visible to TensorFlow; built with CUDA: "
                f"{html.escape(str(tf.test.is_built_with_cuda()))}.</p>"
            )
        else:
            record = self.tensorflow_devices()
            if isinstance(record, dict) and isinstance(record.get("gpus"), list):
                gpu = (
                    f"<p>{len(record['gpus'])} GPU(s) visible to TensorFlow (asked in a worker process).</p>"
                )
        return "<h4>Backends and devices</h4>" + table_html(rows) + gpu

    # ------------------------------------------------------------------ devices from workers

    def tensorflow_devices(self) -> dict[str, Any] | None:
        """TensorFlow's device record (``availability.worker_devices()``): from the probe store,
        else asked of a worker in the background (None until it answers)."""
        from explorer.runtime import probe_store as probe_cache

        env_key = self.ctx.env_key()
        key = ("tf-devices", env_key)
        held = self.ctx.cache.peek(key)
        if held is not None:
            return dict(held)

        def read() -> dict[str, Any]:
            with probe_cache.open_store() as store:
                return store.devices(env_key)

        stored = self.ctx.cache.get(("tf-devices-stored", env_key, probe_cache.store_stamp()), read)
        if isinstance(stored.get("tensorflow"), list):
            return dict(stored)

        def ask() -> None:
            from explorer.queries.availability_probes import worker_devices
            from explorer.runtime.sweep_store import worker_call

            record = dict(worker_call("tensorflow", worker_devices, timeout=120.0))
            with probe_cache.open_store() as store:
                store.save_devices(env_key, record)
            self.ctx.cache.get(key, lambda: record)

        self.ctx.background.start(key, ask, ENV_TOPIC)
        return None

    def _worker_devices_text(self, name: str) -> str:
        """The device list of ``name`` for the table, or what is being done to get it."""
        key: tuple[str, ...] = (
            ("tf-devices", self.ctx.env_key()) if name == "tensorflow" else ("devices", name)
        )
        failure = self.ctx.background.failure(key)
        if failure:
            return f"unknown (the worker failed: {failure[:200]})"
        if name == "tensorflow":
            record = self.tensorflow_devices()
            if record is None:
                return "being asked of a worker process…"
            names = record.get("tensorflow")
            return (
                ", ".join(str(d).removeprefix("/device:") for d in names)
                if isinstance(names, list)
                else "unknown"
            )
        held = self.ctx.cache.peek(key)
        if held is None:
            held = _read_devices(name, self.ctx.env_key())
        if held is not None:
            return ", ".join(held)

        def ask() -> None:
            from explorer.runtime.sandbox import warm_backend
            from explorer.runtime.sweep_store import worker_call

            found = [str(d) for d in worker_call(name, warm_backend, name, timeout=120.0)]
            _write_devices(name, self.ctx.env_key(), found)
            self.ctx.cache.get(key, lambda: found)

        self.ctx.background.start(key, ask, ENV_TOPIC)
        return "being asked of a worker process…"

    def _registry_html(self) -> str:
        from explorer.runtime.registry import available_without_tensorflow

        if not (self.ctx.tf_ready or available_without_tensorflow()):
            return message_html(
                "The TensorFlow kernel registry is read once TensorFlow has loaded (no registry data "
                "ships for the installed release and none is cached).",
                "info",
            )
        from explorer.analysis.registry_summary import device_summary, op_declared, registry_dtypes
        from explorer.plots.registry import plot_kernel_counts
        from explorer.runtime.registry import get_registry

        reg = self.ctx.cache.get(("registry",), get_registry)
        op, tf_dtypes = self.state.op, tuple(registry_dtypes(reg, self.state.dtypes))
        summary = self.ctx.cache.get(("registry-summary", tf_dtypes), lambda: device_summary(reg, tf_dtypes))
        per_op = self.ctx.cache.get(("registry-op", op, tf_dtypes), lambda: op_declared(reg, op, tf_dtypes))
        self.show_cached_figure(
            ("counts", tuple(summary["dtype"])),
            lambda: plot_kernel_counts(summary),
            "Grouped bars: how many TensorFlow ops have a kernel on each device type, for "
            + ", ".join(str(d) for d in summary["dtype"]),
        )
        intro = (
            "<h4>What the kernel registry declares</h4><p>Read from the installed TensorFlow wheel's own "
            "kernel registry — so a machine without a GPU can still say which ops have GPU kernels.</p>"
        )
        return intro + table_html(summary) + f"<h4>{html.escape(self.state.op)}</h4>" + table_html(per_op)


def _devices_path(name: str, env_key: str) -> Any:
    from explorer.runtime.envcache import cache_dir_or_none

    directory = cache_dir_or_none()
    return None if directory is None else directory / f"devices-{name}-{env_key}.json"


def _read_devices(name: str, env_key: str) -> list[str] | None:
    """A backend's device types from its cache file (None when missing or not a short list of
    short names: such a file is removed)."""
    from explorer.runtime.envcache import read_cache_json, remove_or_move_aside

    path = _devices_path(name, env_key)
    data = None if path is None else read_cache_json(path, expect={"backend": str, "devices": list})
    if data is None:
        return None
    devices = data["devices"]
    if (
        data["backend"] != name
        or len(devices) > 16
        or not all(isinstance(d, str) and 0 < len(d) <= 40 and d.isalnum() for d in devices)
    ):
        remove_or_move_aside(path)
        return None
    return list(devices)


def _write_devices(name: str, env_key: str, devices: list[str]) -> None:
    from explorer.runtime.envcache import write_cache_json

    path = _devices_path(name, env_key)
    if path is not None:
        write_cache_json(path, {"backend": name, "devices": devices})
