"""Availability rows built from what is known: the ops asked for (:class:`Target`), TensorFlow's
registry, PyTorch's OpInfo table and probe records.

Each function makes plain row dicts with the keys of
:data:`~explorer.analysis.availability_rows.ROW_KEYS` + ``EXTRA_KEYS``; nothing here runs a
probe (:mod:`explorer.queries.availability_probes` does).

>>> from explorer.runtime.registry import get_registry
>>> reg = get_registry()
>>> targets = resolve_targets(["cholesky"], reg)
>>> [t.raw_ops for t in targets]
[('Cholesky',)]
>>> sorted({r["device"] for r in declared_rows(reg, targets, ["float16"], ["CPU"])})
['CPU', 'XLA_CPU_JIT']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from explorer.analysis.availability_rows import EXTRA_DEFAULTS
from explorer.analysis.explain import disagreement, explain, refine_status
from explorer.backends.base import MODES
from explorer.outcome import Status
from explorer.runtime.probe import Probe
from explorer.runtime.registry import REGISTRY_DEVICE, Registry, registry_device

# ---------------------------------------------------------------- what was asked for


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


# ---------------------------------------------------------------- TensorFlow's registry


def declared_for(reg: Registry, raws: tuple[str, ...], dtype: str, device_type: str) -> str | None:
    """What the registry declares for an op that runs the raw ops ``raws``: the worst of theirs
    (``unsupported_dtype``, then ``no_kernel``, else ``ok``); None when the registry has none of them.

    >>> from explorer.runtime.registry import get_registry
    >>> declared_for(get_registry(), ("Cholesky",), "float16", "CPU")
    'no_kernel'
    """
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


# ---------------------------------------------------------------- probe records


def probe_row(p: Probe, t: Target, record: dict[str, Any], reg: Registry, cached: bool) -> dict[str, Any]:
    """The row of probe ``p`` of target ``t`` from its record; TensorFlow's rows are refined and
    compared with what ``reg`` declares (``declared``, ``disagreement``)."""
    row = _row(p.backend, t, p.dtype, p.device, p.mode)
    status = record["status"]
    if p.backend == "tensorflow":
        status = refine_status(status, record.get("error", ""), reg, p.dtype, p.device, p.mode)
        if p.dtype in reg.float_dtypes:
            row["declared"] = declared_for(reg, t.raw_ops, p.dtype, registry_device(p.device, p.mode))
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


# ---------------------------------------------------------------- PyTorch's OpInfo


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


def compare_with_opinfo(row: dict[str, Any], record: dict[str, Any], data: Any, table: dict) -> None:
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


# ---------------------------------------------------------------- a backend's own declaration


def backend_declared_rows(
    backend: str, targets: list[Target], dtypes: list[str], devices: list[str]
) -> list[dict[str, Any]]:
    """Rows (mode ``registry``) of what ``backend`` declares itself
    (:meth:`~explorer.backends.base.Backend.declared`) per catalog op × format × device; none for
    a backend that declares nothing there."""
    from explorer.backends import get_backend

    owner = get_backend(backend)
    rows = []
    for t in targets:
        if not t.catalog:
            continue
        for dtype in dtypes:
            for device in devices:
                said = owner.declared(t.name, dtype, device)
                if said is None:
                    continue
                row = _row(owner.name, t, dtype, device, "registry")
                row.update(raw_op=said["raw_op"], status=said["status"], declared=said["status"])
                row["explanation"] = said["explanation"]
                rows.append(row)
    return rows


def compare_with_declaration(row: dict[str, Any], record: dict[str, Any]) -> None:
    """Fill a probe row's ``declared`` and ``disagreement`` from its backend's own declaration."""
    from explorer.backends import get_backend

    owner = get_backend(row["backend"])
    said = owner.declared(row["op"], row["dtype"], row["device"])
    if said is None:
        return
    row["raw_op"] = said["raw_op"]
    row["declared"] = said["status"]
    reason = owner.declared_disagreement(said["status"], record)
    if reason:
        row["disagreement"] = reason
