"""Environment tab: framework versions, devices, and what the registry says about GPU kernels."""

from __future__ import annotations

import html
from importlib import metadata

from explorer.app.render import message_html, table_html
from explorer.app.tab import Tab

#: Distributions whose versions the tab lists.
PACKAGES: tuple[str, ...] = (
    "numpy",
    "ml_dtypes",
    "tensorflow",
    "keras",
    "torch",
    "jax",
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
        parts = [self._system_html(), self._backends_html(), self._registry_html()]
        self.show_html("".join(parts))
        self.clear_message()

    def _system_html(self) -> str:
        from explorer.analysis.envcache import environment

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

    def _backends_html(self) -> str:
        from explorer.backends import BACKEND_NAMES, get_backend

        rows = []
        for name in BACKEND_NAMES:
            backend = get_backend(name)
            installed = backend.is_installed()
            if name == "tensorflow" and not self.ctx.tf_ready:
                devices = self.ctx.tf_loader.describe()
            elif installed:
                try:
                    devices = ", ".join(backend.devices())
                except Exception as exc:
                    devices = f"unknown ({type(exc).__name__})"
            else:
                devices = "—"
            rows.append({"backend": name, "installed": "yes" if installed else "no", "devices": devices})
        gpu = ""
        if self.ctx.tf_ready:
            tf = self.ctx.tf_loader.result
            gpus = tf.config.list_physical_devices("GPU")
            gpu = (
                f"<p>{len(gpus)} GPU(s) visible to TensorFlow; built with CUDA: "
                f"{html.escape(str(tf.test.is_built_with_cuda()))}.</p>"
            )
        return "<h4>Backends and devices</h4>" + table_html(rows) + gpu

    def _registry_html(self) -> str:
        if not self.ctx.tf_ready:
            return message_html(
                "The TensorFlow kernel registry is read once TensorFlow has loaded.", "loading"
            )
        from explorer.analysis.registry import get_registry
        from explorer.analysis.registry_summary import device_summary, op_declared, registry_dtypes
        from explorer.plots.registry import plot_kernel_counts

        reg = self.ctx.cache.get(("registry",), get_registry)
        op, tf_dtypes = self.state.op, tuple(registry_dtypes(reg, self.state.dtypes))
        summary = self.ctx.cache.get(("registry-summary", tf_dtypes), lambda: device_summary(reg, tf_dtypes))
        per_op = self.ctx.cache.get(("registry-op", op, tf_dtypes), lambda: op_declared(reg, op, tf_dtypes))
        self.show_cached_figure(
            ("counts", tuple(summary["dtype"])),
            lambda: plot_kernel_counts(summary),
            "kernels per device type",
        )
        intro = (
            "<h4>What the kernel registry declares</h4><p>Read from the installed TensorFlow wheel's own "
            "kernel registry — so a machine without a GPU can still say which ops have GPU kernels.</p>"
        )
        return intro + table_html(summary) + f"<h4>{html.escape(self.state.op)}</h4>" + table_html(per_op)
