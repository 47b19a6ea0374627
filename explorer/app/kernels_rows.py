"""The rows the Kernels tab shows, asked of :func:`explorer.queries.availability.availability`
(the function ``precision-explorer kernels`` asks) and kept per selection in the app's cache.

Declared rows (TensorFlow's registry, PyTorch's OpInfo) are answered at once; probed rows come
from the probe store only (this never runs a probe: "Probe now" does,
:mod:`explorer.app.kernels_probe`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from explorer.backends import MODES
from explorer.ops import catalog

if TYPE_CHECKING:
    from explorer.app.context import AppContext
    from explorer.queries.availability_result import AvailabilityResult


class KernelRows:
    """Availability rows of the app's selection: the op's group (or the whole catalog, as
    ``scope()`` says) × the selected dtypes, backends, device and mode."""

    def __init__(self, ctx: AppContext, scope: Callable[[], str]) -> None:
        self.ctx = ctx
        self.state = ctx.state
        self._scope = scope

    def registry(self) -> Any:
        """TensorFlow's kernel registry (read once per process; disk-cached)."""
        from explorer.runtime.registry import get_registry

        return self.ctx.cache.get(("registry",), get_registry)

    def shown_ops(self) -> list[str]:
        """Catalog ops (or the raw op) shown as heatmap rows."""
        op = self.state.op
        entry = catalog().get(op)
        if self._scope() == "all":
            names = list(catalog())
            return names if entry is not None else [op, *names]
        if entry is None:
            return [op]
        return [name for name, o in catalog().items() if o.group == entry.group]

    def _targets(self, ops: list[str]) -> list[Any]:
        from explorer.queries.availability_build import resolve_targets

        return self.ctx.cache.get(("targets", tuple(ops)), lambda: resolve_targets(ops, self.registry()))

    def _declared(self, ops: list[str], dtypes: list[str], backend: str, devices: tuple[str, ...]) -> Any:
        """:func:`~explorer.queries.availability.availability`'s rows of ``backend`` in mode registry."""
        from explorer.queries import availability

        result = availability.availability(
            ops=ops,
            dtypes=dtypes,
            backends=[backend],
            devices=list(devices),
            modes=["registry"],
            progress=False,
            registry=self.registry(),
        )
        return result.rows

    def declared_frame(
        self, ops: list[str], dtypes: tuple[str, ...], devices: tuple[str, ...] | None = None
    ) -> Any:
        """Registry rows (mode ``registry``) for ``ops`` × TensorFlow's dtypes among ``dtypes`` on
        ``devices`` (default: the selected device)."""
        reg = self.registry()
        tf_dtypes = [d for d in dtypes if d in reg.float_dtypes]
        devices = devices or (self.state.device,)
        key = ("declared", tuple(ops), tuple(tf_dtypes), tuple(devices))
        # all of ``dtypes``: availability() keeps TensorFlow's (no dtypes at all would mean every one)
        return self.ctx.cache.get(key, lambda: self._declared(list(ops), list(dtypes), "tensorflow", devices))

    def torch_declared_frame(self, ops: list[str], dtypes: tuple[str, ...], devices: tuple[str, ...]) -> Any:
        """What PyTorch's OpInfo declares (rows of backend ``torch``, mode ``registry``) for the
        catalog ops among ``ops`` × ``dtypes`` on ``devices``; None when PyTorch is not installed.

        Only ops named in ``ops``: a raw op shown on its own gets no rows for the catalog ops that
        run it (``availability(["Qr"])`` would give them)."""
        from explorer.backends import get_backend

        if not get_backend("torch").is_installed():
            return None

        def compute() -> Any:
            named = [t.name for t in self._targets(ops) if t.catalog and t.name in ops]
            return self._declared(named, list(dtypes), "torch", devices)

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

    def registry_view(self, ops: list[str], dtypes: tuple[str, ...], opinfo: bool = False) -> Any:
        """The rows of mode registry on CPU and GPU: TensorFlow's registry, and PyTorch's OpInfo
        beside it when ``opinfo`` (and PyTorch is installed).  Mode registry ignores the Backends
        control (the tab hides it there): only these two declare."""
        import pandas as pd

        frames = [self.declared_frame(ops, dtypes, ("CPU", "GPU"))]
        if opinfo:
            try:
                torch_rows = self.torch_declared_frame(ops, dtypes, ("CPU", "GPU"))
            except RuntimeError:
                torch_rows = None
            if torch_rows is not None and len(torch_rows):
                frames.append(torch_rows)
        return pd.concat([f for f in frames if len(f)] or frames[:1], ignore_index=True)

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

    def with_declared_gpu(self, frame: Any, ops: list[str], dtypes: tuple[str, ...], mode: str) -> Any:
        """With Device = GPU on a machine without a GPU, the probed rows (none ran on a GPU) with
        the declared GPU rows beside them (TensorFlow's registry for ``mode``'s GPU device type,
        PyTorch's OpInfo for CUDA, of the selected backends); otherwise ``frame`` itself: with
        Device = CPU no GPU column is shown."""
        import pandas as pd

        from explorer.runtime.registry import registry_device

        if self.state.device != "GPU" or self.machine_has_gpu():
            return frame
        device_type = registry_device("GPU", mode)
        beside = [
            f[(f["backend"] != "tensorflow") | (f["device"] == device_type)]
            for f in self.declared_beside(ops, dtypes, ("GPU",))
        ]
        beside = [f for f in beside if len(f)]
        if not beside:
            return frame
        return pd.concat([f for f in (frame, *beside) if f is not None], ignore_index=True)

    def gpu_note(self, rows: Any) -> str:
        """Said once, when GPU cells are shown on a machine without a GPU."""
        if rows is None or not len(rows) or self.machine_has_gpu():
            return ""
        if not rows["device"].astype(str).str.contains("GPU").any():
            return ""
        return (
            "GPU cells are declared, not run: this machine has no GPU. TensorFlow's come from its "
            "kernel registry, PyTorch's from its OpInfo test database (PyTorch has no kernel "
            "registry); declared cells show their letter in brackets. "
        )

    def shown_result(self) -> AvailabilityResult:
        """The shown ops × dtypes (registry rows and cached probes) with this machine's
        environment and the registry that answered: what a snapshot saves."""
        import pandas as pd

        from explorer.queries.availability_result import AvailabilityResult
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
        return AvailabilityResult(rows, env)
