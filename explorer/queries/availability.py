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

The parts: the rows are built in :mod:`explorer.queries.availability_build`, the probes
planned and run in :mod:`explorer.queries.availability_probes`, and returned as an
:class:`~explorer.queries.availability_result.AvailabilityResult`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from explorer.analysis.availability_rows import (
    AVAILABILITY_MODES,
    DEFAULT_AVAILABILITY_MODES,
    EXTRA_KEYS,
    ROW_KEYS,
)
from explorer.outcome import Status
from explorer.queries.availability_build import (
    backend_declared_rows,
    compare_with_declaration,
    compare_with_opinfo,
    declared_rows,
    probe_row,
    resolve_targets,
    torch_declared_rows,
)
from explorer.queries.availability_probes import (
    InBackground,
    probes_for,
    sweep_probes,
    torch_declarations,
)
from explorer.queries.availability_result import AvailabilityResult
from explorer.runtime import envcache
from explorer.runtime.registry import Registry, get_registry

if TYPE_CHECKING:
    from explorer.runtime.sandbox import Sandbox


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
    torch_reading = InBackground(torch_declarations, targets, dts) if "torch" in backends else None
    env = envcache.environment()
    swept = sweep_probes(probes, reg, env, use_cache, progress, probe_timeout, sandbox)
    torch_said = torch_reading.result() if torch_reading is not None else None
    if torch_said is not None and "registry" in modes:
        rows += torch_declared_rows(targets, dts, devices, torch_said[1])
    if "registry" in modes:  # the backends that declare their own kernels (a kernel registry)
        for name in backends:
            rows += backend_declared_rows(name, targets, dts, devices)
    by_name = {t.name: t for t in targets}
    for p in probes:
        record = swept.records[p.key]
        row = probe_row(p, by_name[p.op], record, reg, cached=swept.from_store(p.key))
        if p.backend == "torch" and torch_said is not None:
            compare_with_opinfo(row, record, *torch_said)
        compare_with_declaration(row, record)
        rows.append(row)
    import pandas as pd

    frame = pd.DataFrame(rows, columns=list(ROW_KEYS) + list(EXTRA_KEYS))
    environment = dict(
        env,
        devices=swept.devices,
        tf_version=reg.tf_version,
        registry_device_types=list(reg.device_types),
    )
    return AvailabilityResult(
        frame,
        environment,
        time.perf_counter() - start,
        probed=len(swept.fresh),
        cached=sum(swept.from_store(p.key) for p in probes),
    )


def _check_list(values: list[str] | None, valid: tuple[str, ...], what: str) -> list[str] | None:
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    bad = [v for v in values if v not in valid]
    if bad:
        raise ValueError(f"unknown {what} {', '.join(map(repr, bad))}; valid: {', '.join(valid)}")
    return list(values)


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
