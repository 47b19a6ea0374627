"""Snapshots of availability results: save with the environment, load, and diff two of them.

A snapshot is JSON: ``{"kind": "precision-explorer/kernels", "version": 1,
"environment": {...}, "rows": [...]}`` with every row's full columns, so a GPU
machine's findings can be shown, filtered and plotted on a laptop.

Snapshots come from elsewhere and may be crafted, so loading is careful:

* the file is only ever read (never modified, moved or removed), and at most
  :data:`~explorer.analysis.snapshot_schema.MAX_FILE_BYTES` bytes of it, so ``/dev/zero``
  or a huge file fails at once;
* the text must be UTF-8 (a UTF-8 byte-order mark is accepted) and JSON;
* the data is checked against :mod:`explorer.analysis.snapshot_schema` before any of it
  is used; every failure is a ``ValueError`` (a
  :class:`~explorer.analysis.snapshot_schema.SnapshotError`) naming the first bad field,
  with control characters stripped from the message;
* rows that repeat an earlier row's cell (:data:`CELL_KEYS`) are dropped, keeping the
  first, with one :class:`SnapshotWarning` giving the count.

Saving writes a temporary file next to the target and renames it over the target, so a
failed save leaves no half-written file (and the temporary file is removed).

>>> import tempfile, pandas as pd
>>> from pathlib import Path
>>> from explorer.queries.availability_result import AvailabilityResult
>>> from explorer.analysis.snapshot_schema import EXTRA_DEFAULTS
>>> row = {"backend": "numpy", "op": "exp", "raw_op": "Exp", "dtype": "float16", "device": "CPU",
...        "mode": "eager", "status": "ok", "error": "", "explanation": "ran", "workaround": ""}
>>> frame = pd.DataFrame([{**row, **EXTRA_DEFAULTS}])
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = save_snapshot(AvailabilityResult(frame, {"cpu": "x"}), Path(tmp) / "s.json")
...     load_snapshot(path).records()[0]["status"]
'ok'
"""

from __future__ import annotations

import json
import os
import stat
import warnings
from pathlib import Path
from typing import Any

from explorer.analysis import snapshot_schema as schema
from explorer.analysis.availability_rows import EXTRA_KEYS, ROW_KEYS
from explorer.analysis.snapshot_schema import CELL_KEYS, KIND, VERSION, SnapshotError
from explorer.queries.availability_result import AvailabilityResult
from explorer.runtime.atomic_file import write_bytes_atomically
from explorer.textsafety import strip_control

__all__ = [
    "CELL_KEYS",
    "KIND",
    "VERSION",
    "SnapshotError",
    "SnapshotWarning",
    "check_save_path",
    "diff_snapshots",
    "environment_changes",
    "load_snapshot",
    "parse_snapshot",
    "read_snapshot_bytes",
    "save_snapshot",
    "snapshot_data",
]


class SnapshotWarning(UserWarning):
    """A snapshot was loaded, but something in it was set aside (e.g. repeated rows)."""


# ---------------------------------------------------------------- loading


def read_snapshot_bytes(path: str | Path) -> bytes:
    """The bytes of the file at ``path``, read without changing it, at most
    :data:`~explorer.analysis.snapshot_schema.MAX_FILE_BYTES` of them.

    FileNotFoundError when there is no such file; SnapshotError (a ValueError) when it
    cannot be read (a directory, no permission, ...) or is larger than the limit.
    """
    source = strip_control(str(path))
    limit = schema.MAX_FILE_BYTES
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            if stat.S_ISREG(info.st_mode) and info.st_size > limit:
                raise SnapshotError(
                    f"{source} is too large for a snapshot ({info.st_size} bytes; at most {limit})"
                )
            content = _read_at_most(handle, limit + 1)
    except FileNotFoundError:
        raise FileNotFoundError(f"no snapshot at {source}") from None
    except OSError as exc:
        raise SnapshotError(
            f"cannot read snapshot {source}: {strip_control(exc.strerror or str(exc))}"
        ) from None
    if len(content) > limit:
        raise SnapshotError(f"{source} is too large for a snapshot (more than {limit} bytes)")
    return content


def _read_at_most(handle: Any, size: int) -> bytes:
    """Up to ``size`` bytes of ``handle``, in chunks (``read(size)`` would allocate ``size`` at once)."""
    buffer = bytearray()
    while len(buffer) < size:
        chunk = handle.read(min(1 << 20, size - len(buffer)))
        if not chunk:
            break
        buffer += chunk
    return bytes(buffer)


def parse_snapshot(content: bytes | str, source: str = "snapshot") -> AvailabilityResult:
    """The snapshot in ``content`` (the bytes of a file, e.g. an upload), checked.

    ``source`` names it in error messages.  Raises SnapshotError (a ValueError) naming
    the first bad field; warns (:class:`SnapshotWarning`) when repeated rows were dropped.
    """
    return _parse(content, source)


def load_snapshot(path: str | Path) -> AvailabilityResult:
    """Read a snapshot written by :func:`save_snapshot` (the file is never changed).

    Raises FileNotFoundError when there is no file, and SnapshotError (a ValueError)
    naming the first bad field when it is not a valid snapshot; warns
    (:class:`SnapshotWarning`) when repeated rows were dropped.  The result's
    ``environment`` is the checked environment of the file.
    """
    return _parse(read_snapshot_bytes(path), str(path))


def _parse(content: bytes | str, source: str) -> AvailabilityResult:
    """:func:`parse_snapshot`; a warning points at the caller of the public function."""
    import pandas as pd

    source = strip_control(str(source))
    if isinstance(content, bytes | bytearray | memoryview):
        if len(content) > schema.MAX_FILE_BYTES:
            raise SnapshotError(
                f"{source} is too large for a snapshot (more than {schema.MAX_FILE_BYTES} bytes)"
            )
        try:
            text = bytes(content).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise SnapshotError(
                f"{source} is not JSON: not UTF-8 text "
                f"(byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
            ) from None
    elif isinstance(content, str):
        text = content.removeprefix("\ufeff")
    else:
        raise TypeError(f"snapshot content must be bytes or str, got {type(content).__name__}")
    if not text.strip():
        raise SnapshotError(f"{source} is not JSON: the file is empty")
    try:
        data = json.loads(text)
    except RecursionError:
        raise SnapshotError(
            f"{source} is not a precision-explorer kernels snapshot: JSON nested too deeply"
        ) from None
    except ValueError as exc:  # JSONDecodeError, and too many digits in an integer
        raise SnapshotError(f"{source} is not JSON: {strip_control(str(exc))}") from None
    del text
    valid = schema.validate_snapshot(data, source)
    if valid.duplicates:
        warnings.warn(
            f"{source}: {valid.duplicates} row(s) repeat an earlier row's cell "
            f"({', '.join(CELL_KEYS)}) and were dropped; the first of each is kept",
            SnapshotWarning,
            stacklevel=3,
        )
    frame = pd.DataFrame(valid.rows, columns=list(ROW_KEYS) + list(EXTRA_KEYS))
    return AvailabilityResult(frame, valid.environment)


# ---------------------------------------------------------------- saving


def check_save_path(path: str | Path) -> Path:
    """``path`` as a Path if a snapshot can be saved there, else SnapshotError (a ValueError):
    an empty path, a directory, something that exists but is not a regular file, or a file in
    a folder that does not exist (no folder is created, as ``cp`` or a shell's ``>`` create none)."""
    text = os.fspath(path)
    shown = strip_control(str(text))
    if not str(text).strip():
        raise SnapshotError("cannot save a snapshot to '': the file name is empty")
    if str(text).endswith(("/", os.sep)):
        raise SnapshotError(f"cannot save a snapshot to {shown}: that names a directory, not a file")
    target = Path(text)
    if target.is_dir():
        raise SnapshotError(f"cannot save a snapshot to {shown}: it is a directory")
    if target.exists() and not target.is_file():
        raise SnapshotError(f"cannot save a snapshot to {shown}: it exists and is not a regular file")
    folder = target.parent
    if not folder.is_dir():
        existing = next((f for f in target.parents if f.exists()), None)
        if existing is not None and not existing.is_dir():
            raise SnapshotError(
                f"cannot save a snapshot to {shown}: {strip_control(str(existing))} is not a directory"
            )
        raise SnapshotError(
            f"cannot save a snapshot to {shown}: the folder {strip_control(str(folder))} does not exist"
        )
    return target


def snapshot_data(result: AvailabilityResult, source: str = "snapshot") -> dict[str, Any]:
    """The JSON-ready snapshot of ``result``, checked against the schema (SnapshotError if
    it would not load).  Texts longer than the schema allows are cut, with a note."""
    if not isinstance(result, AvailabilityResult):
        raise TypeError(f"expected an AvailabilityResult, got {type(result).__name__}")
    columns = list(ROW_KEYS) + list(EXTRA_KEYS)
    missing = [c for c in columns if c not in result.rows.columns]
    if missing:
        raise SnapshotError(f"cannot save a snapshot: the rows lack the columns {', '.join(missing)}")
    rows = result.records(full=True)
    for row in rows:
        for column in schema.TEXT_COLUMNS:
            value = row[column]
            if value is None:
                row[column] = ""
            elif isinstance(value, str):
                row[column] = _cut(value)
    data = {
        "kind": KIND,
        "version": VERSION,
        "environment": _plain_environment(result.environment, 1),
        "rows": rows,
    }
    schema.validate_snapshot(data, source)
    return data


def save_snapshot(result: AvailabilityResult, path: str | Path) -> Path:
    """Write ``result`` with its environment to ``path`` atomically; returns the path.

    SnapshotError (a ValueError) for an empty path, a directory, a folder that does not exist
    (none is created), a path that cannot be written, or rows that would not load back; the
    snapshot is written to a temporary file in the same folder and renamed over ``path``, so a
    failure leaves ``path`` as it was and nothing behind.
    """
    target = check_save_path(path)
    shown = strip_control(str(target))
    data = snapshot_data(result, shown)
    payload = json.dumps(data, allow_nan=False).encode("utf-8")
    try:
        write_bytes_atomically(target, payload)
    except OSError as exc:
        raise SnapshotError(f"cannot save a snapshot to {shown}: {exc.strerror or exc}") from None
    return target


def _cut(text: str) -> str:
    """``text`` cut to the schema's longest text, ending with a note of what was cut."""
    limit = schema.MAX_TEXT_CHARS
    if len(text) <= limit:
        return text
    note = "\n[... {} more characters not saved in the snapshot]"
    keep = limit - len(note.format(len(text)))
    return text[:keep] + note.format(len(text) - keep)


def _plain_environment(value: Any, depth: int) -> Any:
    """``value`` as plain JSON (tuples as lists, NumPy scalars as numbers, other objects as
    strings, long strings cut); deeper than the schema allows is left for it to report."""
    if isinstance(value, str):
        return _cut(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if depth > schema.MAX_ENVIRONMENT_DEPTH:
        return value
    if isinstance(value, dict):
        return {str(k): _plain_environment(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain_environment(v, depth + 1) for v in value]
    if hasattr(value, "item"):
        return _plain_environment(value.item(), depth)
    return _cut(str(value))


# ---------------------------------------------------------------- comparing


def environment_changes(a: dict[str, Any], b: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Environment entries that differ (nested dicts flattened with dots).

    >>> environment_changes({"versions": {"numpy": "2.0"}, "cpu": "x"}, {"versions": {"numpy": "2.1"}})
    {'cpu': ('x', None), 'versions.numpy': ('2.0', '2.1')}
    """

    def flat(d: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        stack: list[tuple[str, dict[str, Any]]] = [("", d)]
        while stack:
            prefix, node = stack.pop()
            for k, v in node.items():
                if isinstance(v, dict):
                    stack.append((f"{prefix}{k}.", v))
                else:
                    out[f"{prefix}{k}"] = v
        return out

    fa, fb = flat(a), flat(b)
    return {k: (fa.get(k), fb.get(k)) for k in sorted(set(fa) | set(fb)) if fa.get(k) != fb.get(k)}


def diff_snapshots(a: AvailabilityResult, b: AvailabilityResult) -> Any:
    """Cells whose status differs between ``a`` and ``b`` (or that exist in only one).

    DataFrame with :data:`CELL_KEYS`, ``status_a``, ``status_b``, ``change``
    (``"changed"``, ``"only in A"``, ``"only in B"``), ``error_a``, ``error_b``; statuses
    and errors of a side without the cell are None.  A cell is compared once: when a
    result holds several rows of one cell the first is used, so the result has at most
    ``len(a.rows) + len(b.rows)`` rows (no cartesian product of repeated cells).
    """
    left = a.rows[[*CELL_KEYS, "status", "error"]].drop_duplicates(subset=list(CELL_KEYS), keep="first")
    right = b.rows[[*CELL_KEYS, "status", "error"]].drop_duplicates(subset=list(CELL_KEYS), keep="first")
    merged = left.merge(
        right, on=list(CELL_KEYS), how="outer", suffixes=("_a", "_b"), indicator=True, validate="one_to_one"
    )
    merged = merged[(merged["_merge"] != "both") | (merged["status_a"] != merged["status_b"])].copy()
    merged["change"] = (
        merged["_merge"]
        .map({"both": "changed", "left_only": "only in A", "right_only": "only in B"})
        .astype(str)
    )
    cols = [*CELL_KEYS, "status_a", "status_b", "change", "error_a", "error_b"]
    out = merged[cols].reset_index(drop=True).astype(object)
    return out.where(out.notna(), None)
