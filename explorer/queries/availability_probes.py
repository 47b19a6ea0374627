"""The probes of an availability query: which to run, and running them through the probe store.

:func:`probes_for` plans a selection's probes; :func:`sweep_probes` takes this environment's
stored records and runs the rest in sandbox workers, saving each record as it arrives (see
:mod:`explorer.runtime.probe_store`), so an interrupted sweep keeps what finished.
:class:`InBackground` reads PyTorch's OpInfo table (:func:`torch_declarations`) while they run.

>>> [p.key for p in probes_for(["exp"], ["float16"], ["tensorflow"], ["CPU"], ["eager", "xla"])]
['tensorflow|exp|float16|CPU|eager', 'tensorflow|exp|float16|CPU|xla']
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from explorer.outcome import Status
from explorer.queries.availability_build import Target, declared_for
from explorer.runtime import envcache
from explorer.runtime import probe_store as probe_cache
from explorer.runtime.probe import Probe, failure_record, run_probes, warm_worker
from explorer.runtime.registry import REGISTRY_DEVICE, Registry
from explorer.runtime.threads import start_daemon

if TYPE_CHECKING:
    from explorer.runtime.sandbox import Sandbox

#: probe store format version (the store's SQLite schema version)
CACHE_VERSION = probe_cache.SCHEMA_VERSION


# ---------------------------------------------------------------- what to run


def probes_for(
    targets: Iterable[Target | str],
    dtypes: Iterable[str],
    backends: Iterable[str],
    devices: Iterable[str],
    modes: Iterable[str],
) -> list[Probe]:
    """The probes a selection runs: backend × catalog op × dtype × device × mode, in that order.

    ``targets`` are :class:`Target`\\ s (raw ops without a catalog entry are skipped: they have
    registry rows only) or catalog op names (other names are skipped).  A mode a backend does
    not have is skipped for it, and so is ``registry`` (read from the registry, not run).
    Names are taken as given (normalise them first).

    >>> [p.key for p in probes_for(["exp", "Cholesky"], ["float16"], ["numpy", "tensorflow"],
    ...                            ["CPU"], ["registry", "eager", "xla"])]
    ['numpy|exp|float16|CPU|eager', 'tensorflow|exp|float16|CPU|eager', 'tensorflow|exp|float16|CPU|xla']
    """
    from explorer.backends import get_backend
    from explorer.ops import catalog

    names = [
        t.name if isinstance(t, Target) else t
        for t in targets
        if (t.catalog if isinstance(t, Target) else t in catalog())
    ]
    dtypes, devices, modes = list(dtypes), list(devices), [m for m in modes if m != "registry"]
    probes: list[Probe] = []
    for backend in backends:
        backend_modes = get_backend(backend).modes
        for name in names:
            for dtype in dtypes:
                for device in devices:
                    for mode in modes:
                        if mode in backend_modes:
                            probes.append(Probe(backend, name, dtype, device, mode))
    return probes


def _kernel_places(reg: Registry, p: Probe) -> list[tuple[str, str]]:
    """``(device, mode)`` pairs where the registry has a kernel for TensorFlow probe ``p``'s op
    and dtype (where its workarounds may run it instead)."""
    from explorer.ops import get_op

    raws = get_op(p.op).tf_raw_ops
    if p.dtype not in reg.float_dtypes:
        return []
    return [
        (dev, mode)
        for (dev, mode), dev_type in REGISTRY_DEVICE.items()
        if dev_type in reg.device_types and declared_for(reg, raws, p.dtype, dev_type) == "ok"
    ]


# ---------------------------------------------------------------- the store


def cache_path(env: dict[str, Any] | None = None) -> Path | None:
    """The probe store's database file (see :mod:`explorer.runtime.probe_store`), shared by
    every environment; None when there is no usable cache directory.  ``env`` is accepted
    for compatibility and ignored: records are keyed by the environment inside the store."""
    directory = envcache.cache_dir_or_none()
    return None if directory is None else directory / probe_cache.DB_NAME


def _load_cache(env: dict[str, Any] | None = None) -> dict[str, Any]:
    """This environment's stored probe records and device description (validated)."""
    env_key = envcache.environment_key(env)
    with probe_cache.open_store() as store:
        return {"version": CACHE_VERSION, "records": store.load(env_key), "devices": store.devices(env_key)}


def clear_cache() -> int:
    """Remove every stored probe record (every environment); returns how many were removed."""
    with probe_cache.open_store() as store:
        removed = store.clear()
    directory = envcache.cache_dir_or_none()
    if directory is not None:
        for legacy in directory.glob("availability-*.json"):  # the store before SQLite
            with contextlib.suppress(OSError):
                legacy.unlink()
    return removed


# ---------------------------------------------------------------- running


@dataclass
class SweptProbes:
    """What :func:`sweep_probes` found: a record per probe key, and where each came from."""

    #: probe key -> record (stored, run now, or ``not_installed`` made here)
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: keys of the probes run now (and stored)
    fresh: set[str] = field(default_factory=set)
    #: keys of the probes of backends not installed (recorded here, never stored)
    local: set[str] = field(default_factory=set)
    #: the stored TensorFlow device description (:func:`worker_devices`), refreshed when run now
    devices: dict[str, Any] = field(default_factory=dict)

    def from_store(self, key: str) -> bool:
        """Whether the record of probe ``key`` was taken from the store (neither run nor local)."""
        return key not in self.fresh and key not in self.local


def sweep_probes(
    probes: list[Probe],
    reg: Registry,
    env: dict[str, Any],
    use_cache: bool = True,
    progress: bool = True,
    probe_timeout: float = 60.0,
    sandbox: Sandbox | None = None,
) -> SweptProbes:
    """A record for every probe in ``probes``: this environment's stored ones (unless not
    ``use_cache``), ``not_installed`` for backends not installed, and the rest run in
    ``sandbox``'s workers, each saved to the store as it arrives (an interrupted sweep keeps
    what finished)."""
    from explorer.backends import get_backend

    env_key = envcache.environment_key(env)
    out = SweptProbes()
    with probe_cache.open_store() as store:
        wanted = {p.key for p in probes}
        stored = store.load(env_key, wanted) if use_cache and probes else {}
        # a timeout says how busy the machine was, not what the op does: never served, run again
        stored = {k: r for k, r in stored.items() if r.get("status") != Status.TIMEOUT.value}
        out.records.update(stored)
        installed = {b: get_backend(b).is_installed() for b in {p.backend for p in probes}}
        todo = list({p.key: p for p in probes if p.key not in out.records}.values())
        out.local = {p.key for p in todo if not installed[p.backend]}
        for p in todo:  # nothing to run: recorded here, never stored, counted neither probed nor cached
            if p.key in out.local:
                out.records[p.key] = failure_record(Status.NOT_INSTALLED, f"{p.backend} is not installed")
        remote = [p for p in todo if installed[p.backend]]
        if remote:
            places = {p.key: _kernel_places(reg, p) for p in remote if p.backend == "tensorflow"}
            bar = _progress_bar(len(remote), progress)

            def keep(key: str, record: dict[str, Any]) -> None:
                """Save each record as it arrives (an interrupted sweep keeps what finished)."""
                out.records[key] = record
                out.fresh.add(key)
                store.save(env_key, key, record)

            try:
                got = run_probes(
                    remote,
                    probe_timeout=probe_timeout,
                    places=places,
                    on_progress=bar.update if bar is not None else None,
                    sandbox=sandbox,
                    on_record=keep,
                )
            finally:
                if bar is not None:
                    bar.close()
            for key, record in got.items():  # any record not reported through on_record
                if key not in out.fresh:
                    keep(key, record)
        out.devices = store.devices(env_key)
        if "tensorflow" in {p.backend for p in remote}:
            out.devices = _tensorflow_devices(sandbox)
            store.save_devices(env_key, out.devices)
    return out


def _progress_bar(total: int, enabled: bool) -> Any:
    if not enabled or total == 0:
        return None
    # plain tqdm on stderr: tqdm.auto picks its notebook bar whenever an IPython shell exists in the
    # process, and that bar, with no widget front end, prints to stdout among the CLI's table
    from tqdm import tqdm

    return tqdm(total=total, desc="probing kernels", unit="probe", file=sys.stderr)


def worker_devices() -> dict[str, Any]:
    """Worker side: TensorFlow's device names and details (for snapshots)."""
    from explorer.backends.tensorflow_backend import import_tensorflow

    tf = import_tensorflow()
    out = {"tensorflow": [d.name for d in tf.config.list_logical_devices()]}
    gpus = []
    for gpu in tf.config.list_physical_devices("GPU"):
        try:
            details = tf.config.experimental.get_device_details(gpu)
        except Exception:
            details = {}
        gpus.append({"name": gpu.name, **{k: str(v) for k, v in details.items()}})
    out["gpus"] = gpus
    return out


def _tensorflow_devices(sandbox: Sandbox | None = None) -> dict[str, Any]:
    """:func:`worker_devices` from the TensorFlow probe worker of ``sandbox`` (default: the
    process-wide one); ``{"error": ...}`` when that fails."""
    from explorer.runtime.sandbox import default_sandbox

    try:
        box = sandbox if sandbox is not None else default_sandbox()
        return dict(box.call(warm_worker(box, "tensorflow"), worker_devices, timeout=120.0))
    except Exception as exc:  # the device list is informative only
        return {"error": str(exc)}


# ---------------------------------------------------------------- PyTorch's OpInfo, meanwhile


class InBackground:
    """``func(*args)`` run in a daemon thread at once; :meth:`result` waits for its value (or
    re-raises its exception).  A daemon thread, so that an interrupted sweep does not wait for it.

    >>> InBackground(sum, [1, 2]).result()
    3
    """

    def __init__(self, func: Any, *args: Any) -> None:
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = start_daemon(self._run, func, *args, name="explorer-background")

    def _run(self, func: Any, *args: Any) -> None:
        try:
            self._value = func(*args)
        except BaseException as exc:  # re-raised in the caller's thread
            self._error = exc

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


def torch_declarations(targets: list[Target], dtypes: list[str]) -> tuple[Any, dict] | None:
    """PyTorch's OpInfo data and its rows per (catalog op, format) for the selection; None when
    PyTorch is not installed (nothing is declared then)."""
    from explorer.backends import get_backend
    from explorer.runtime import torch_declared

    if not get_backend("torch").is_installed():
        return None
    data = torch_declared.opinfo_data()
    names = [t.name for t in targets if t.catalog]
    formats = [d for d in dtypes if d in torch_declared.TORCH_FORMATS]
    table = {(r["op"], r["format"]): r for r in torch_declared.declared_rows(data, names, formats)}
    return data, table
