"""What TensorFlow's kernel registry declares, summed up per device type: pure functions of a
:class:`~explorer.runtime.registry.Registry` (read without a GPU, so a CPU-only machine can
say which ops have GPU kernels).

>>> from explorer.runtime.registry import get_registry
>>> reg = get_registry()
>>> summary = device_summary(reg, ("float16",))
>>> list(summary["dtype"]), "ops with a GPU kernel" in summary.columns
(['float16'], True)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from explorer.backends.tensorflow_registry import COMPUTE_DEVICE_TYPES, Registry


def registry_dtypes(reg: Registry, dtypes: Iterable[str]) -> list[str]:
    """The dtypes among ``dtypes`` that TensorFlow has (``["float16"]`` when none is)."""
    return [d for d in dtypes if d in reg.float_dtypes] or ["float16"]


def compute_devices(reg: Registry) -> list[str]:
    """The compute device types (:data:`~explorer.runtime.registry.COMPUTE_DEVICE_TYPES`) the
    registry knows, in that order."""
    return [d for d in COMPUTE_DEVICE_TYPES if d in reg.device_types]


def device_summary(reg: Registry, dtypes: Iterable[str]) -> Any:
    """Per TensorFlow dtype among ``dtypes``: how many ops have a kernel on each device type, and
    how many only on GPU (not CPU) and only on CPU (not GPU).

    A DataFrame with a ``dtype`` column and ``ops with a <device> kernel`` columns.
    """
    import pandas as pd

    tf_dtypes = registry_dtypes(reg, dtypes)
    devices = compute_devices(reg)
    frame = reg.matrix(ops=reg.ops_with_kernels(), dtypes=tf_dtypes, device_types=devices)
    rows = []
    for dtype in tf_dtypes:
        sub = frame[frame["dtype"] == dtype]
        wide = sub.pivot(index="op", columns="device_type", values="status")
        row: dict[str, Any] = {"dtype": dtype}
        for device in devices:
            row[f"ops with a {device} kernel"] = int((wide[device] == "ok").sum())
        if "GPU" in wide and "CPU" in wide:
            row["only on GPU (not CPU)"] = int(((wide["GPU"] == "ok") & (wide["CPU"] != "ok")).sum())
            row["only on CPU (not GPU)"] = int(((wide["CPU"] == "ok") & (wide["GPU"] != "ok")).sum())
        rows.append(row)
    return pd.DataFrame(rows)


def op_declared(reg: Registry, op: str, dtypes: Iterable[str]) -> Any:
    """The status the registry declares for ``op`` (a catalog op: each of its raw ops; or a raw
    op) per device type × TensorFlow dtype among ``dtypes``.

    A DataFrame with ``raw op``, ``dtype`` and one column per device type.
    """
    import pandas as pd

    from explorer.ops import catalog

    tf_dtypes = registry_dtypes(reg, dtypes)
    devices = compute_devices(reg)
    entry = catalog().get(op)
    raws = entry.tf_raw_ops if entry is not None else (op,)
    rows = []
    for raw in raws:
        if not reg.has_op(raw):
            continue
        for dtype in tf_dtypes:
            row = {"raw op": raw, "dtype": dtype}
            row.update({device: reg.declared(raw, dtype, device).value for device in devices})
            rows.append(row)
    return pd.DataFrame(rows)
