"""Kernel availability: declared by TensorFlow's registry, probed by running, explained.

>>> from explorer.queries.availability import availability
>>> res = availability(ops=["cholesky"], dtypes=["float16"], backends=["tensorflow"], progress=False)
>>> sorted(res.rows["mode"].unique())
['eager', 'registry', 'xla']

Every row has the keys of :data:`ROW_KEYS` (what the CLI prints with ``--json``)
plus :data:`EXTRA_KEYS`.  In mode ``registry`` the device is the registry device
type (``CPU``, ``XLA_CPU_JIT``, ``GPU``, ``XLA_GPU_JIT``) and ``ok`` means a kernel
is registered.  Probed rows come from running the catalog op in a sandbox worker;
they are stored as they arrive, per environment (see :mod:`explorer.runtime.probe_store`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from explorer.analysis.availability_rows import (
    AVAILABILITY_MODES,
    DEFAULT_AVAILABILITY_MODES,
    EXTRA_DEFAULTS,
    EXTRA_KEYS,
    ROW_KEYS,
)
from explorer.analysis.explain import disagreement, explain, refine_status
from explorer.backends.base import MODES
from explorer.outcome import Status
from explorer.runtime import envcache
from explorer.runtime import probe_store as probe_cache
from explorer.runtime.probe import (
    Probe,
    failure_record,
    run_probes,
    warm_worker,
)
from explorer.runtime.registry import REGISTRY_DEVICE, Registry, get_registry, registry_device

if TYPE_CHECKING:
    from explorer.runtime.sandbox import Sandbox

#: probe store format version (the store's SQLite schema version)
CACHE_VERSION = probe_cache.SCHEMA_VERSION


@dataclass
class AvailabilityResult:
    """Rows (a DataFrame with :data:`ROW_KEYS` + :data:`EXTRA_KEYS`) and where they come from."""

    rows: Any
    #: versions, platform, CPU model, device names
    environment: dict[str, Any] = field(default_factory=dict)
    #: wall-clock seconds the sweep took
    seconds: float = 0.0
    #: probes actually run now (not from the cache; rows of backends not installed are neither)
    probed: int = 0
    #: probe rows taken from the cache
    cached: int = 0

    def disagreements(self) -> Any:
        """Rows where the registry and the run disagree, with the reason."""
        return self.rows[self.rows["disagreement"].astype(bool)]

    def records(self, full: bool = False) -> list[dict[str, Any]]:
        """Rows as plain dicts (only :data:`ROW_KEYS` unless ``full``)."""
        cols = list(ROW_KEYS) + (list(EXTRA_KEYS) if full else [])
        frame = self.rows[cols]  # column by column: DataFrame.to_dict boxes every value on its own
        columns = [[_plain(v) for v in frame[c].tolist()] for c in cols]
        return [dict(zip(cols, values, strict=True)) for values in zip(*columns, strict=True)]

    def filter(self, group: str | None = None, name: str | None = None, **equal: Any) -> AvailabilityResult:
        """Rows of one op group and/or whose op or raw op contains ``name``; ``equal``
        keeps rows whose column equals the value (e.g. ``mode="eager"``)."""
        rows = filter_rows(self.rows, group=group, name=name, **equal)
        return AvailabilityResult(rows, self.environment, self.seconds, self.probed, self.cached)


#: types a row value already has when it needs no conversion (the common case, checked first)
_PLAIN_TYPES = frozenset({str, bool, int, type(None)})


def _plain(value: Any) -> Any:
    if type(value) in _PLAIN_TYPES:
        return value
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, float) and value != value:  # NaN from pandas
        return None
    return value


def filter_rows(rows: Any, group: str | None = None, name: str | None = None, **equal: Any) -> Any:
    """Filter an availability DataFrame by op group, name substring and column values."""
    from explorer.ops import GROUPS

    mask = rows["op"].notna()
    if group is not None:
        if group not in GROUPS:
            raise ValueError(f"unknown group {group!r}; valid groups: {', '.join(GROUPS)}")
        mask &= rows["group"] == group
    if name:
        key = name.lower()
        mask &= rows["op"].str.lower().str.contains(key, regex=False) | rows[
            "raw_op"
        ].str.lower().str.contains(key, regex=False)
    for column, value in equal.items():
        if column not in rows.columns:
            raise ValueError(f"unknown column {column!r}; valid: {', '.join(rows.columns)}")
        mask &= rows[column] == value
    return rows[mask].reset_index(drop=True)


# ---------------------------------------------------------------- what to run


@dataclass(frozen=True)
class Target:
    """An op asked for: a catalog op (with its raw ops) or a raw op without a catalog entry."""

    name: str
    raw_ops: tuple[str, ...]
    catalog: bool
    group: str = ""
    tf_public: str = ""


def resolve_targets(names: list[str] | None, reg: Registry | None) -> list[Target]:
    """Catalog ops by name (all when None) and raw TensorFlow ops by name.

    A raw op name selects the catalog ops that run it, or, when none does, the raw
    op itself (registry rows only).  Unknown names raise ValueError.
    """
    from explorer.ops import catalog, find_by_raw_op, get_op

    def of(op: Any) -> Target:
        return Target(op.name, tuple(op.tf_raw_ops), True, op.group, op.tf_public)

    if names is None:
        return [of(op) for op in catalog().values()]
    out: list[Target] = []
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"op names must be strings, got {name!r}")
        found = catalog().get(name) or catalog().get(name.strip().lower())
        if found is not None:
            out.append(of(found))
            continue
        if reg is not None and reg.has_op(name):
            raw = reg.op(name).name
            users = find_by_raw_op(raw)
            out.extend(of(op) for op in users) if users else out.append(Target(raw, (raw,), False))
            continue
        get_op(name)  # raises the catalog's ValueError with close matches
    seen: set[str] = set()
    return [t for t in out if not (t.name in seen or seen.add(t.name))]  # type: ignore[func-returns-value]


def _check_list(values: list[str] | None, valid: tuple[str, ...], what: str) -> list[str] | None:
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    bad = [v for v in values if v not in valid]
    if bad:
        raise ValueError(f"unknown {what} {', '.join(map(repr, bad))}; valid: {', '.join(valid)}")
    return list(values)


# ---------------------------------------------------------------- registry rows


def _declared_for(reg: Registry, raws: tuple[str, ...], dtype: str, device_type: str) -> str | None:
    statuses = [reg.declared(r, dtype, device_type) for r in raws if reg.has_op(r)]
    if not statuses:
        return None
    for worst in (Status.UNSUPPORTED_DTYPE, Status.NO_KERNEL):
        if worst in statuses:
            return worst.value
    return Status.OK.value


def declared_rows(reg: Registry, targets: list[Target], dtypes: list[str], devices: list[str]) -> list[dict]:
    """Registry rows (mode ``registry``) for each target's raw ops × dtypes × the eager and XLA
    device types of ``devices``."""
    rows = []
    for t in targets:
        for raw in t.raw_ops:
            if not reg.has_op(raw):
                continue
            for dtype in dtypes:
                for device in devices:
                    for mode in MODES:
                        if (device, mode) not in REGISTRY_DEVICE:  # a mode TensorFlow does not have
                            continue
                        dev_type = registry_device(device, mode)
                        if dev_type not in reg.device_types:
                            continue
                        row = _row("tensorflow", t, dtype, dev_type, "registry")
                        row["raw_op"] = raw
                        row["status"] = reg.declared(raw, dtype, dev_type).value
                        row["declared"] = row["status"]
                        row["explanation"] = explain(row, reg)
                        rows.append(row)
    return rows


def _row(backend: str, t: Target, dtype: str, device: str, mode: str) -> dict[str, Any]:
    return {
        "backend": backend,
        "op": t.name,
        "raw_op": ",".join(t.raw_ops),
        "dtype": dtype,
        "device": device,
        "mode": mode,
        "status": "",
        "error": "",
        "explanation": "",
        "workaround": "",
        **EXTRA_DEFAULTS,
        "group": t.group,
        "tf_public": t.tf_public,
    }


# ---------------------------------------------------------------- the cache


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


# ---------------------------------------------------------------- the sweep


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


def _names(value: Any, what: str, strings: bool = True) -> list[Any] | None:
    """``value`` as a list of names: None stays None, a single name is a list of one.

    >>> _names("exp", "ops"), _names(("exp", "log"), "ops"), _names(None, "ops")
    (['exp'], ['exp', 'log'], None)
    """
    if value is None:
        return None
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        value = [value]
    out = list(value)
    bad = [v for v in out if not isinstance(v, str)] if strings else []
    if bad:
        raise TypeError(f"{what} must be names (strings), got {bad[0]!r} ({type(bad[0]).__name__})")
    return out


def availability(
    ops: list[str] | str | None = None,
    dtypes: list[Any] | Any | None = None,
    backends: list[str] | str | None = None,
    devices: list[str] | str | None = None,
    modes: list[str] | str | None = None,
    use_cache: bool = True,
    progress: bool = True,
    probe_timeout: float = 60.0,
    registry: Registry | None = None,
    sandbox: Sandbox | None = None,
) -> AvailabilityResult:
    """Declared and probed availability for catalog ops (and raw ops: registry rows only).

    ``ops``: catalog or raw op names (default: the whole catalog); ``dtypes``: format
    names (default: every float dtype TensorFlow has); ``backends``: default every
    backend (torch rows say ``not_installed`` when it is absent); ``devices``: ``CPU``
    and/or ``GPU`` (default CPU); ``modes``: any of :data:`AVAILABILITY_MODES` (``registry``,
    ``eager``, ``xla``, ``compile``; default :data:`DEFAULT_AVAILABILITY_MODES`, every one but
    ``compile``).  Each backend is probed in the modes it has (``compile``: PyTorch only, ``xla``:
    TensorFlow and JAX); a mode no selected backend has gives no rows.  Each may be one name or a
    list; every name is checked before anything runs.

    Probe records are read from and saved to the probe store
    (:mod:`explorer.runtime.probe_store`) as each one arrives, so an interrupted sweep
    keeps what finished; ``use_cache=False`` probes again (and stores the fresh records)
    without reading the store.  The probes run in ``sandbox``'s workers (default: the
    process-wide sandbox).
    """
    from explorer.backends import BACKEND_NAMES, get_backend, normalize_device
    from explorer.formats import resolve
    from explorer.runtime.sandbox import check_timeout

    start = time.perf_counter()
    ops = _names(ops, "ops")
    asked_modes = _check_list(_names(modes, "modes"), AVAILABILITY_MODES, "mode")
    modes = asked_modes or list(DEFAULT_AVAILABILITY_MODES)
    backends = [get_backend(b).name for b in (_names(backends, "backends") or list(BACKEND_NAMES))]
    devices = [normalize_device(d) for d in (_names(devices, "devices") or ["CPU"])]
    dtype_names = [resolve(d).name for d in (_names(dtypes, "dtypes", strings=False) or [])]
    probe_timeout = check_timeout(probe_timeout, "probe_timeout")
    reg = registry if registry is not None else get_registry()
    targets = resolve_targets(ops, reg)
    dts = dtype_names or list(reg.float_dtypes)
    rows: list[dict[str, Any]] = []
    if "registry" in modes and "tensorflow" in backends:
        dts_tf = [d for d in dts if d in reg.float_dtypes]
        rows += declared_rows(reg, targets, dts_tf, devices)
    run_modes = [m for m in modes if m != "registry"]
    probes = probes_for(targets, dts, backends, devices, run_modes)
    # PyTorch's OpInfo table is read in a worker of its own (seconds, one core) while the probes run
    torch_reading = _InBackground(_torch_declarations, targets, dts) if "torch" in backends else None
    env = envcache.environment()
    env_key = envcache.environment_key(env)
    with probe_cache.open_store() as store:
        wanted = {p.key for p in probes}
        stored = store.load(env_key, wanted) if use_cache and probes else {}
        records: dict[str, dict[str, Any]] = dict(stored)
        fresh: set[str] = set()
        installed = {b: get_backend(b).is_installed() for b in {p.backend for p in probes}}
        todo = list({p.key: p for p in probes if p.key not in records}.values())
        local = {p.key for p in todo if not installed[p.backend]}
        for p in todo:  # nothing to run: recorded here, never stored, counted neither probed nor cached
            if p.key in local:
                records[p.key] = failure_record(Status.NOT_INSTALLED, f"{p.backend} is not installed")
        remote = [p for p in todo if installed[p.backend]]
        if remote:
            places = {p.key: _kernel_places(reg, p) for p in remote if p.backend == "tensorflow"}
            bar = _progress_bar(len(remote), progress)

            def keep(key: str, record: dict[str, Any]) -> None:
                """Save each record as it arrives (an interrupted sweep keeps what finished)."""
                records[key] = record
                fresh.add(key)
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
                if key not in fresh:
                    keep(key, record)
        device_info = store.devices(env_key)
        if "tensorflow" in {p.backend for p in remote}:
            device_info = _tensorflow_devices(sandbox)
            store.save_devices(env_key, device_info)
    torch_said = torch_reading.result() if torch_reading is not None else None
    if torch_said is not None and "registry" in modes:
        rows += torch_declared_rows(targets, dts, devices, torch_said[1])
    by_name = {t.name: t for t in targets}
    for p in probes:
        cached = p.key not in fresh and p.key not in local
        row = _probe_row(p, by_name[p.op], records[p.key], reg, cached=cached)
        if p.backend == "torch" and torch_said is not None:
            _compare_with_opinfo(row, records[p.key], *torch_said)
        rows.append(row)
    import pandas as pd

    frame = pd.DataFrame(rows, columns=list(ROW_KEYS) + list(EXTRA_KEYS))
    environment = dict(
        env,
        devices=device_info,
        tf_version=reg.tf_version,
        registry_device_types=list(reg.device_types),
    )
    return AvailabilityResult(
        frame,
        environment,
        time.perf_counter() - start,
        probed=len(fresh),
        cached=sum(p.key not in fresh and p.key not in local for p in probes),
    )


def _tensorflow_devices(sandbox: Sandbox | None = None) -> dict[str, Any]:
    """:func:`worker_devices` from the TensorFlow probe worker of ``sandbox`` (default: the
    process-wide one); ``{"error": ...}`` when that fails."""
    from explorer.runtime.sandbox import default_sandbox

    try:
        box = sandbox if sandbox is not None else default_sandbox()
        return dict(box.call(warm_worker(box, "tensorflow"), worker_devices, timeout=120.0))
    except Exception as exc:  # the device list is informative only
        return {"error": str(exc)}


def _kernel_places(reg: Registry, p: Probe) -> list[tuple[str, str]]:
    from explorer.ops import get_op

    raws = get_op(p.op).tf_raw_ops
    if p.dtype not in reg.float_dtypes:
        return []
    return [
        (dev, mode)
        for (dev, mode), dev_type in REGISTRY_DEVICE.items()
        if dev_type in reg.device_types and _declared_for(reg, raws, p.dtype, dev_type) == "ok"
    ]


def _progress_bar(total: int, enabled: bool) -> Any:
    if not enabled or total == 0:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="probing kernels", unit="probe")


def _probe_row(p: Probe, t: Target, record: dict[str, Any], reg: Registry, cached: bool) -> dict[str, Any]:
    row = _row(p.backend, t, p.dtype, p.device, p.mode)
    status = record["status"]
    if p.backend == "tensorflow":
        status = refine_status(status, record.get("error", ""), reg, p.dtype, p.device, p.mode)
        if p.dtype in reg.float_dtypes:
            row["declared"] = _declared_for(reg, t.raw_ops, p.dtype, registry_device(p.device, p.mode))
    row.update(
        status=status,
        error=record.get("error", ""),
        detail=record["detail"],
        phase=record["phase"],
        ran_on=record.get("ran_on"),
        result_dtype=record.get("result_dtype"),
        seconds=float(record.get("seconds") or 0.0),
        cached=cached,
        workaround=record.get("workaround", "") if status != Status.OK.value else "",
        workaround_how=record.get("workaround_how", "") if status != Status.OK.value else "",
    )
    row["explanation"] = explain(row, reg if p.backend == "tensorflow" else None)
    if row["workaround_how"]:
        row["explanation"] += f" Workaround: {row['workaround_how']}."
    elif status != Status.OK.value and record.get("workaround_failures"):
        row["explanation"] += f" No workaround found ({record['workaround_failures'][:300]})."
    if p.backend == "tensorflow":
        row["disagreement"] = disagreement(row["declared"], status, row, reg)
    return row


class _InBackground:
    """``func(*args)`` run in a daemon thread at once; :meth:`result` waits for its value (or
    re-raises its exception).  A daemon thread, so that an interrupted sweep does not wait for it."""

    def __init__(self, func: Any, *args: Any) -> None:
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(func, *args), daemon=True)
        self._thread.name = "explorer-background"
        self._thread.start()

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


def _torch_declarations(targets: list[Target], dtypes: list[str]) -> tuple[Any, dict] | None:
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


def torch_declared_rows(
    targets: list[Target], dtypes: list[str], devices: list[str], table: dict[tuple[str, str], Any]
) -> list[dict[str, Any]]:
    """Rows (backend ``torch``, mode ``registry``) of what PyTorch's OpInfo database declares per
    catalog op × format × device (CPU: ``dtypes``, GPU: ``dtypesIfCUDA``); ops OpInfo has no
    entry for have no row."""
    from explorer.runtime.torch_declared import declared_status

    where = {"CPU": "CPU", "GPU": "CUDA"}
    rows = []
    for t in targets:
        for dtype in dtypes:
            said = table.get((t.name, dtype))
            if said is None:
                continue
            for device in devices:
                status = declared_status(said, device)
                if status is None:
                    continue
                row = _row("torch", t, dtype, device, "registry")
                row.update(raw_op=said["opinfo"], status=status, declared=status)
                lists = "lists" if status == "ok" else "does not list"
                row["explanation"] = (
                    f"PyTorch's OpInfo for {said['opinfo']} {lists} {dtype} on {where[device]}"
                    + (" (it does on the other device)." if status == "no_kernel" else ".")
                )
                rows.append(row)
    return rows


def _compare_with_opinfo(row: dict[str, Any], record: dict[str, Any], data: Any, table: dict) -> None:
    """Fill a torch probe row's ``declared`` and ``disagreement`` from PyTorch's OpInfo.

    Eager and ``compile`` rows alike are compared with the dtypes OpInfo lists for the device
    (OpInfo has no list of its own for ``torch.compile``)."""
    from explorer.runtime.torch_declared import RAN, compare, declared_status

    said = table.get((row["op"], row["dtype"]))
    if said is None or row["device"] not in ("CPU", "GPU"):
        return
    row["raw_op"] = said["opinfo"] or row["raw_op"]
    row["declared"] = declared_status(said, row["device"])
    probed = {(row["op"], row["dtype"]): {**record, "mode": row["mode"]}}
    result = compare([said], probed, row["device"], data)
    if result and result[0]["agree"] is False:
        reason = result[0]["reason"]
        if row["mode"] == "compile" and record["status"] in RAN:
            reason += "; under torch.compile, whose Inductor code is not the eager kernel OpInfo describes"
        row["disagreement"] = reason


def registry_gaps(
    dtypes: tuple[str, ...] = ("float16", "bfloat16"),
    device_type: str = "CPU",
    ops: list[str] | None = None,
    registry: Registry | None = None,
) -> Any:
    """Ops (catalog ops by default, or raw op names) with no kernel on ``device_type`` for
    each dtype, from the registry: DataFrame ``op, raw_op, dtype, status, kernel_devices``."""
    import pandas as pd

    reg = registry if registry is not None else get_registry()
    reg.check_device_type(device_type)
    targets = resolve_targets(ops, reg)
    out = []
    for t in targets:
        for raw in t.raw_ops:
            if not reg.has_op(raw):
                continue
            for dtype in dtypes:
                status = reg.declared(raw, dtype, device_type)
                if status is not Status.OK:
                    out.append(
                        {
                            "op": t.name,
                            "raw_op": raw,
                            "dtype": dtype,
                            "status": status.value,
                            "kernel_devices": ", ".join(reg.kernel_devices(raw, dtype)),
                        }
                    )
    return pd.DataFrame(out, columns=["op", "raw_op", "dtype", "status", "kernel_devices"])


def only_on(dtype: str, device_type: str, elsewhere: str, registry: Registry | None = None) -> list[str]:
    """Raw ops that have a ``dtype`` kernel on ``device_type`` but not on ``elsewhere``, although
    they do have kernels on ``elsewhere`` for other dtypes (ops that exist on only one device
    type at all are left out): e.g. float16 kernels only on GPU, not on CPU."""
    reg = registry if registry is not None else get_registry()
    candidates = [
        name
        for name in reg.ops_with_kernels()
        if reg.ops[name].data_attr is not None
        and reg.ops[name].kernels.get(device_type)
        and reg.ops[name].kernels.get(elsewhere)
    ]
    if not candidates:
        return []
    frame = reg.matrix(ops=candidates, dtypes=[dtype], device_types=[device_type, elsewhere])
    wide = frame.pivot(index="op", columns="device_type", values="status")
    return sorted(wide.index[(wide[device_type] == "ok") & (wide[elsewhere] == "no_kernel")])


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
