"""The schema of a kernel snapshot, checked before any of a snapshot is used.

Snapshots come from other machines and may be crafted, so every field is checked and
the first bad one is named in a :class:`SnapshotError` (a ``ValueError``)::

    snapshot.json: rows[3].status: 'oops' is not a status; valid: ok, fallback, ...

The rules:

* **Top level**: an object with exactly ``kind`` (the string
  ``"precision-explorer/kernels"``), ``version`` (the integer 1; ``true`` and ``1.0`` are
  not 1), ``environment`` and ``rows``; other keys are rejected.
* **environment**: an object nested at most :data:`MAX_ENVIRONMENT_DEPTH` containers
  deep (the environment itself counts as one) with at most
  :data:`MAX_ENVIRONMENT_ITEMS` values in all; keys are strings of at most
  :data:`MAX_KEY_CHARS` characters; leaves are strings (at most :data:`MAX_TEXT_CHARS`),
  integers, finite floats, booleans or null.
* **rows**: a list of at most :data:`MAX_ROWS` objects.  Each row has every column of
  ``ROW_KEYS``; the columns of ``EXTRA_KEYS`` may be missing and then take the defaults of
  :data:`EXTRA_DEFAULTS`; any other column is **rejected** (a newer or a crafted file is
  refused rather than half-read).  Column types (:data:`COLUMNS`):

  - ``backend`` one of ``BACKEND_NAMES``; ``dtype`` one of ``FORMAT_NAMES``; ``device`` one
    of :data:`DEVICE_NAMES`; ``mode`` one of ``registry``, ``eager``, ``xla``; ``status``
    one of ``STATUSES``; ``declared`` one of ``STATUSES`` or null; ``phase`` one of ``PHASES``
    or null (``""`` when not known; snapshots written before it was a column load with ``""``);
  - names (``op`` non-empty, ``raw_op`` a comma-separated list, ``group``, ``tf_public``,
    ``ran_on`` and ``result_dtype``, the last two nullable): strings of at most
    :data:`MAX_NAME_CHARS` (``raw_op``: :data:`MAX_RAW_OP_CHARS`) characters with no
    control characters;
  - texts (``error``, ``explanation``, ``workaround``, ``disagreement``, ``detail``,
    ``workaround_how``): strings of at most :data:`MAX_TEXT_CHARS` characters (they may
    hold newlines and anything else: strip them with
    :func:`explorer.textsafety.strip_control` before printing);
  - ``seconds`` a finite number >= 0 (not a boolean); ``cached`` a boolean.

The file itself (read by :mod:`explorer.queries.snapshot`) is at most
:data:`MAX_FILE_BYTES` bytes of UTF-8 (a leading UTF-8 byte-order mark is accepted).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from explorer.analysis.availability_rows import AVAILABILITY_MODES, EXTRA_DEFAULTS, EXTRA_KEYS, ROW_KEYS
from explorer.backends import BACKEND_NAMES, DEVICE_TYPES
from explorer.backends.tensorflow_registry import COMPUTE_DEVICE_TYPES, REGISTRY_DEVICE
from explorer.formats import FORMAT_NAMES
from explorer.outcome import PHASES, STATUSES
from explorer.textsafety import strip_control

KIND = "precision-explorer/kernels"
VERSION = 1
#: the keys of a snapshot object, in the order they are written and checked
TOP_KEYS: tuple[str, ...] = ("kind", "version", "environment", "rows")
#: columns that identify a cell (rows with the same values are one cell)
CELL_KEYS: tuple[str, ...] = ("backend", "op", "raw_op", "dtype", "device", "mode")
#: device names a row may have: devices a user asks for and the registry's device types
DEVICE_NAMES: tuple[str, ...] = tuple(
    dict.fromkeys([*DEVICE_TYPES, *COMPUTE_DEVICE_TYPES, *REGISTRY_DEVICE.values()])
)

#: the largest snapshot file read, in bytes (64 MiB)
MAX_FILE_BYTES = 64 * 1024 * 1024
#: the most rows a snapshot may have
MAX_ROWS = 200_000
#: the longest name (op, group, dtype reported by a run, ...)
MAX_NAME_CHARS = 100
#: the longest ``raw_op`` (the raw ops of a catalog op, joined with commas)
MAX_RAW_OP_CHARS = 1_000
#: the longest text (error, explanation, workaround, environment string)
MAX_TEXT_CHARS = 20_000
#: the longest key of an environment object
MAX_KEY_CHARS = 200
#: how many containers deep the environment may nest (the environment itself is 1)
MAX_ENVIRONMENT_DEPTH = 6
#: the most values (containers and leaves) the environment may hold
MAX_ENVIRONMENT_ITEMS = 10_000
#: columns that hold long free text
TEXT_COLUMNS: tuple[str, ...] = (
    "error",
    "explanation",
    "workaround",
    "disagreement",
    "detail",
    "workaround_how",
)
#: characters that may not appear in names
_NAME_CONTROL = frozenset(chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)])


class SnapshotError(ValueError):
    """A file or value that is not a valid kernel snapshot (the message names the first bad field)."""


@dataclass
class ValidSnapshot:
    """A checked snapshot: its environment, its rows (every column filled), and how many
    rows repeated an earlier row's cell (:data:`CELL_KEYS`) and were dropped."""

    environment: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)
    duplicates: int = 0


def show(value: Any) -> str:
    """A short, printable rendering of a JSON value for an error message.

    >>> show("oops"), show(True), show(None), show([1, 2]), show({"a": 1})
    ("'oops'", 'true', 'null', 'a list (2 items)', 'an object (1 key)')
    """
    if isinstance(value, str):
        text = repr(value[:60]) + ("..." if len(value) > 60 else "")
        return strip_control(text)
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int):
        text = str(value) if value.bit_length() < 200 else "a very large integer"
        return text
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        return f"a list ({len(value)} item{'' if len(value) == 1 else 's'})"
    if isinstance(value, dict):
        return f"an object ({len(value)} key{'' if len(value) == 1 else 's'})"
    return f"a {type(value).__name__}"


def _fail(source: str, where: str, problem: str) -> SnapshotError:
    return SnapshotError(strip_control(f"{source}: {where}: {problem}"))


# ---------------------------------------------------------------- column checks
#
# Each check takes the value and returns the value to keep, or a problem text
# wrapped in _Bad.


@dataclass(frozen=True)
class _Bad:
    problem: str


Check = Callable[[Any], Any]


def _choice(valid: tuple[str, ...], what: str, nullable: bool = False) -> Check:
    allowed = frozenset(valid)
    listing = ", ".join(valid) + (", null" if nullable else "")

    def check(value: Any) -> Any:
        if value is None and nullable:
            return None
        if isinstance(value, str) and value in allowed:
            return value
        return _Bad(f"{show(value)} is not {what}; valid: {listing}")

    return check


def _name(limit: int, nullable: bool = False, non_empty: bool = False) -> Check:
    def check(value: Any) -> Any:
        if value is None and nullable:
            return None
        if not isinstance(value, str):
            return _Bad(f"{show(value)} is not a string" + (" or null" if nullable else ""))
        if len(value) > limit:
            return _Bad(f"a string of {len(value)} characters is longer than {limit}")
        if non_empty and not value:
            return _Bad("the empty string is not a name")
        if not _NAME_CONTROL.isdisjoint(value):
            return _Bad(f"{show(value)} contains control characters")
        return value

    return check


def _text(value: Any) -> Any:
    if not isinstance(value, str):
        return _Bad(f"{show(value)} is not a string")
    if len(value) > MAX_TEXT_CHARS:
        return _Bad(f"a text of {len(value)} characters is longer than {MAX_TEXT_CHARS}")
    return value


def _seconds(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return _Bad(f"{show(value)} is not a number of seconds")
    if not math.isfinite(value) or value < 0:
        return _Bad(f"{show(value)} is not a finite number of seconds >= 0")
    return float(value)


def _boolean(value: Any) -> Any:
    if not isinstance(value, bool):
        return _Bad(f"{show(value)} is not true or false")
    return value


#: the check of every column of a row
COLUMNS: dict[str, Check] = {
    "backend": _choice(BACKEND_NAMES, "a backend"),
    "op": _name(MAX_NAME_CHARS, non_empty=True),
    "raw_op": _name(MAX_RAW_OP_CHARS),
    "dtype": _choice(FORMAT_NAMES, "a format name"),
    "device": _choice(DEVICE_NAMES, "a device"),
    "mode": _choice(AVAILABILITY_MODES, "a mode"),
    "status": _choice(STATUSES, "a status"),
    "error": _text,
    "explanation": _text,
    "workaround": _text,
    "group": _name(MAX_NAME_CHARS),
    "tf_public": _name(MAX_NAME_CHARS),
    "declared": _choice(STATUSES, "a status", nullable=True),
    "disagreement": _text,
    "detail": _text,
    "phase": _choice(PHASES, "a phase", nullable=True),
    "workaround_how": _text,
    "ran_on": _name(MAX_NAME_CHARS, nullable=True),
    "result_dtype": _name(MAX_NAME_CHARS, nullable=True),
    "seconds": _seconds,
    "cached": _boolean,
}
assert tuple(COLUMNS) == ROW_KEYS + EXTRA_KEYS, "the schema must cover exactly the availability columns"


# ---------------------------------------------------------------- the snapshot


def validate_snapshot(data: Any, source: str = "snapshot") -> ValidSnapshot:
    """Check parsed JSON ``data`` against the schema (see the module docstring).

    Returns the environment and the rows with every column filled in; rows whose cell
    (:data:`CELL_KEYS`) repeats an earlier row are dropped (the first is kept) and counted.
    Raises :class:`SnapshotError` naming ``source`` and the first bad field.

    >>> snap = validate_snapshot({"kind": KIND, "version": 1, "environment": {}, "rows": []})
    >>> snap.rows, snap.duplicates
    ([], 0)
    >>> validate_snapshot({"kind": KIND, "version": True, "environment": {}, "rows": []}, "s.json")
    Traceback (most recent call last):
    ...
    explorer.analysis.snapshot_schema.SnapshotError: s.json: version: true is not the integer 1
    """
    source = strip_control(str(source))
    if not isinstance(data, dict):
        raise SnapshotError(
            f"{source} is not a precision-explorer kernels snapshot: the JSON is {show(data)}, not an object"
        )
    if data.get("kind") != KIND:
        raise SnapshotError(
            f"{source} is not a precision-explorer kernels snapshot: kind is "
            f"{show(data.get('kind')) if 'kind' in data else 'missing'}, expected {KIND!r}"
        )
    version = data.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise _fail(
            source, "version", f"{show(version) if 'version' in data else 'missing'} is not the integer 1"
        )
    if version != VERSION:
        raise _fail(source, "version", f"snapshot version {show(version)}; this version reads {VERSION}")
    for key in data:
        if key not in TOP_KEYS:
            raise _fail(source, show(key), f"unknown key; a snapshot has only {', '.join(TOP_KEYS)}")
    for key in TOP_KEYS:
        if key not in data:
            raise _fail(source, key, "missing")
    environment = data["environment"]
    if not isinstance(environment, dict):
        raise _fail(source, "environment", f"{show(environment)} is not an object")
    _check_environment(environment, source)
    rows = data["rows"]
    if not isinstance(rows, list):
        raise _fail(source, "rows", f"{show(rows)} is not a list")
    if len(rows) > MAX_ROWS:
        raise _fail(source, "rows", f"{len(rows)} rows are more than {MAX_ROWS}")
    kept: list[dict[str, Any]] = []
    seen: set[tuple[str, ...]] = set()
    for index, row in enumerate(rows):
        checked = check_row(row, source, f"rows[{index}]")
        cell = tuple(checked[k] for k in CELL_KEYS)
        if cell in seen:
            continue
        seen.add(cell)
        kept.append(checked)
    return ValidSnapshot(environment, kept, len(rows) - len(kept))


def check_row(row: Any, source: str = "snapshot", where: str = "row") -> dict[str, Any]:
    """One row checked column by column (missing optional columns filled in), or SnapshotError.

    >>> check_row({"backend": "numpy"}, "s.json", "rows[0]")
    Traceback (most recent call last):
    ...
    explorer.analysis.snapshot_schema.SnapshotError: s.json: rows[0]: missing column 'op'
    """
    if not isinstance(row, dict):
        raise _fail(source, where, f"{show(row)} is not an object")
    for key in row:
        if key not in COLUMNS:
            raise _fail(source, where, f"unknown column {show(key)}; valid: {', '.join(COLUMNS)}")
    out: dict[str, Any] = {}
    for column, check in COLUMNS.items():
        if column not in row:
            if column not in EXTRA_DEFAULTS:
                raise _fail(source, where, f"missing column {column!r}")
            out[column] = EXTRA_DEFAULTS[column]
            continue
        value = check(row[column])
        if isinstance(value, _Bad):
            raise _fail(source, f"{where}.{column}", value.problem)
        out[column] = value
    return out


def _check_environment(environment: dict[str, Any], source: str) -> None:
    """Depth, size, key and leaf checks of the environment, iteratively (no recursion)."""
    count = 0
    stack: list[tuple[str, Any, int]] = [("environment", environment, 1)]
    while stack:
        where, value, depth = stack.pop()
        count += 1
        if count > MAX_ENVIRONMENT_ITEMS:
            raise _fail(source, "environment", f"more than {MAX_ENVIRONMENT_ITEMS} values")
        if isinstance(value, dict | list):
            if depth > MAX_ENVIRONMENT_DEPTH:
                raise _fail(source, where, f"nested deeper than {MAX_ENVIRONMENT_DEPTH} levels")
            if count + len(value) > MAX_ENVIRONMENT_ITEMS:
                raise _fail(source, "environment", f"more than {MAX_ENVIRONMENT_ITEMS} values")
            if isinstance(value, dict):
                children = []
                for key, child in value.items():
                    if not isinstance(key, str) or len(key) > MAX_KEY_CHARS:
                        raise _fail(source, where, f"key {show(key)} is not a string of <= {MAX_KEY_CHARS}")
                    children.append((f"{where}.{key}", child, depth + 1))
            else:
                children = [(f"{where}[{i}]", child, depth + 1) for i, child in enumerate(value)]
            stack.extend(reversed(children))
        elif isinstance(value, str):
            if len(value) > MAX_TEXT_CHARS:
                raise _fail(
                    source, where, f"a string of {len(value)} characters is longer than {MAX_TEXT_CHARS}"
                )
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise _fail(source, where, f"{show(value)} is not a finite number")
        elif not (value is None or isinstance(value, bool | int)):
            raise _fail(source, where, f"{show(value)} is not a JSON string, number, boolean or null")


__all__ = [
    "CELL_KEYS",
    "COLUMNS",
    "DEVICE_NAMES",
    "KIND",
    "MAX_FILE_BYTES",
    "MAX_ROWS",
    "VERSION",
    "SnapshotError",
    "ValidSnapshot",
    "check_row",
    "show",
    "validate_snapshot",
]
