"""Snapshots of availability results: save with the environment, load, and diff two of them.

A snapshot is JSON: ``{"kind": "precision-explorer/kernels", "version": 1,
"environment": {...}, "rows": [...]}`` with every row's full columns, so a GPU
machine's findings can be shown, filtered and plotted on a laptop.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from explorer.analysis.availability import EXTRA_KEYS, ROW_KEYS, AvailabilityResult
from explorer.analysis.envcache import read_json, write_json_atomic

KIND = "precision-explorer/kernels"
VERSION = 1
#: columns that identify a cell across snapshots
CELL_KEYS: tuple[str, ...] = ("backend", "op", "raw_op", "dtype", "device", "mode")


def save_snapshot(result: AvailabilityResult, path: str | Path) -> Path:
    """Write ``result`` with its environment to ``path`` (atomically); returns the path."""
    if not isinstance(result, AvailabilityResult):
        raise TypeError(f"expected an AvailabilityResult, got {type(result).__name__}")
    data = {
        "kind": KIND,
        "version": VERSION,
        "environment": result.environment,
        "rows": result.records(full=True),
    }
    return write_json_atomic(path, data)


def load_snapshot(path: str | Path) -> AvailabilityResult:
    """Read a snapshot written by :func:`save_snapshot`; ValueError when it is not one."""
    import pandas as pd

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no snapshot at {path}")
    data = read_json(path)
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise ValueError(f"{path} is not a precision-explorer kernels snapshot")
    if data.get("version") != VERSION:
        raise ValueError(f"{path} has snapshot version {data.get('version')}; this version reads {VERSION}")
    columns = list(ROW_KEYS) + list(EXTRA_KEYS)
    frame = pd.DataFrame(data["rows"], columns=columns)
    return AvailabilityResult(frame, data.get("environment", {}))


def environment_changes(a: dict[str, Any], b: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Environment entries that differ (nested dicts flattened with dots)."""

    def flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in d.items():
            if isinstance(v, dict):
                out.update(flat(v, f"{prefix}{k}."))
            else:
                out[f"{prefix}{k}"] = v
        return out

    fa, fb = flat(a), flat(b)
    return {k: (fa.get(k), fb.get(k)) for k in sorted(set(fa) | set(fb)) if fa.get(k) != fb.get(k)}


def diff_snapshots(a: AvailabilityResult, b: AvailabilityResult) -> Any:
    """Cells whose status differs between ``a`` and ``b`` (or that exist in only one).

    DataFrame with :data:`CELL_KEYS`, ``status_a``, ``status_b``, ``change``
    (``"changed"``, ``"only in A"``, ``"only in B"``), ``error_a``, ``error_b``.
    """
    left = a.rows[[*CELL_KEYS, "status", "error"]]
    right = b.rows[[*CELL_KEYS, "status", "error"]]
    merged = left.merge(right, on=list(CELL_KEYS), how="outer", suffixes=("_a", "_b"), indicator=True)
    merged = merged[(merged["_merge"] != "both") | (merged["status_a"] != merged["status_b"])].copy()
    merged["change"] = (
        merged["_merge"]
        .map({"both": "changed", "left_only": "only in A", "right_only": "only in B"})
        .astype(str)
    )
    cols = [*CELL_KEYS, "status_a", "status_b", "change", "error_a", "error_b"]
    return merged[cols].reset_index(drop=True)
