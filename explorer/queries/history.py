"""Release history: what every TensorFlow release shipped with explorer declares for raw op ×
dtype × registry device type, and the releases where that changed.

One answer for every view: ``precision-explorer kernels --history`` prints it as a table (or
``--json``, :meth:`CellHistory.record`), the Kernels tab draws it as one strip per cell.  It
is read from the shipped registries (:mod:`explorer.analysis.releases`), never from TensorFlow.

>>> answer = release_history({"Range": ["range"]}, ["float16"], ["CPU"])
>>> (cell,) = answer.cells
>>> cell.title, [c.version for c in cell.changes], cell.first_release_with_kernel
('Range · float16 · CPU', ['2.18.0'], '2.18.0')
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from explorer.analysis.releases import ReleaseStatus

#: dtypes of ``kernels --history`` without ``--dtype``
HISTORY_DTYPES: tuple[str, ...] = ("float16", "bfloat16", "float32", "float64")


@dataclass(frozen=True)
class StatusChange:
    """A release whose declared status differs from the release before it."""

    #: the release, as pip names it
    version: str
    #: its status
    status: str
    #: the status of the release before
    before: str


@dataclass(frozen=True)
class CellHistory:
    """One raw op × dtype × registry device type across every shipped release."""

    #: the raw op, as TensorFlow spells it
    raw_op: str
    #: the catalog ops that run it
    ops: tuple[str, ...]
    dtype: str
    #: the registry device type (``CPU``, ``GPU``, ``XLA_CPU_JIT``, ...)
    device: str
    #: every shipped release's answer, oldest first
    history: tuple[ReleaseStatus, ...]
    #: the releases where the status changed (the first release is the baseline)
    changes: tuple[StatusChange, ...]
    #: the oldest release that declares a kernel (status ``ok``), or None
    first_release_with_kernel: str | None

    @property
    def title(self) -> str:
        """``"Range · float16 · CPU"``: the cell, named."""
        return f"{self.raw_op} · {self.dtype} · {self.device}"

    def record(self) -> dict[str, Any]:
        """The cell as plain data (the ``--json`` form of ``kernels --history``).

        >>> record = cell_history("Range", "float16", "CPU", ("range",)).record()
        >>> record["ops"], record["changes"]
        (['range'], [{'version': '2.18.0', 'status': 'ok', 'before': 'no_kernel'}])
        """
        return {
            "raw_op": self.raw_op,
            "ops": list(self.ops),
            "dtype": self.dtype,
            "device": self.device,
            "history": [e._asdict() for e in self.history],
            "changes": [asdict(c) for c in self.changes],
            "first_release_with_kernel": self.first_release_with_kernel,
        }


@dataclass(frozen=True)
class ReleaseHistory:
    """The history of a selection: its cells, and what could not be answered."""

    #: raw op × dtype × device type, in that order
    cells: tuple[CellHistory, ...]
    #: the shipped releases, oldest first
    releases: tuple[str, ...]
    #: the (raw op, dtype) pairs asked for whose raw op no shipped release has, in order
    unknown: tuple[tuple[str, str], ...] = ()
    #: raw op × dtype pairs left out beyond the limit
    not_shown: int = 0

    @property
    def source(self) -> str:
        """Where the answer comes from, in words.

        >>> release_history({}, [], []).source.startswith("shipped registries of ")
        True
        """
        first, last = self.releases[0], self.releases[-1]
        return f"shipped registries of {len(self.releases)} TensorFlow releases ({first} to {last})"


def cell_history(raw_op: str, dtype: str, device_type: str, ops: Sequence[str] = ()) -> CellHistory:
    """The history of one cell; ValueError for a raw op or device type no shipped release has.

    >>> cell_history("Cholesky", "bfloat16", "CPU").history[-1].status
    'unsupported_dtype'
    """
    from explorer.analysis import releases

    entries = tuple(releases.history(raw_op, dtype, device_type))
    changes = tuple(
        StatusChange(now.version, now.status, before.status)
        for before, now in itertools.pairwise(entries)
        if now.status != before.status
    )
    first = next((e.version for e in entries if e.status == "ok"), None)
    return CellHistory(raw_op, tuple(ops), dtype, device_type, entries, changes, first)


def release_history(
    raw_ops: Mapping[str, Sequence[str]] | Iterable[str],
    dtypes: Iterable[str],
    device_types: Iterable[str],
    limit: int | None = None,
) -> ReleaseHistory:
    """The history of every raw op × dtype × device type (in that order), across the shipped releases.

    ``raw_ops``: raw op names, or raw op -> the catalog ops that run it.  A raw op no shipped
    release has (in any case) has no cells: it is listed in :attr:`ReleaseHistory.unknown`,
    once per dtype.  ``limit``: at most that many raw op × dtype pairs (the rest are counted
    in :attr:`ReleaseHistory.not_shown`).  ValueError for a device type no release has.

    >>> answer = release_history(["range", "NoSuchOp"], ["float16", "bfloat16"], ["CPU"], limit=3)
    >>> [c.title for c in answer.cells], answer.unknown, answer.not_shown
    (['Range · float16 · CPU', 'Range · bfloat16 · CPU'], (('NoSuchOp', 'float16'),), 1)
    """
    from explorer.analysis import releases

    users = dict(raw_ops) if isinstance(raw_ops, Mapping) else {raw: () for raw in raw_ops}
    pairs = [(raw, dtype) for raw in users for dtype in list(dtypes)]
    device_types = list(device_types)
    shown = pairs if limit is None else pairs[:limit]
    cells: list[CellHistory] = []
    unknown: list[tuple[str, str]] = []
    for raw, dtype in shown:
        known = releases.known_op(raw)
        if known is None:
            unknown.append((raw, dtype))
            continue
        cells.extend(cell_history(known, dtype, device, users[raw]) for device in device_types)
    return ReleaseHistory(
        tuple(cells), tuple(releases.shipped_releases()), tuple(unknown), len(pairs) - len(shown)
    )


def history_raw_ops(names: list[str] | None, group: str | None = None) -> dict[str, list[str]]:
    """The raw ops a history covers -> the catalog ops that run each, by the spelling rule
    (:func:`explorer.queries.op_names.resolve_op_names`, with every shipped release's raw ops).

    No ``names``: every catalog op (of ``group``); a catalog op stands for the raw ops it
    dispatches to, a raw op (spelled as TensorFlow spells it) for itself.  ValueError (the
    catalog's, with close matches) for a name no catalog entry and no shipped release has.

    >>> history_raw_ops(["range", "Qr"])
    {'Range': ['range', 'dct'], 'Qr': ['qr']}
    """
    from explorer.ops import catalog, find_by_raw_op
    from explorer.queries.op_names import ShippedOpNames, resolve_op_names

    if names:
        catalog_ops, raw_ops = resolve_op_names(names, ShippedOpNames)
    else:
        catalog_ops, raw_ops = list(catalog()), []
    if group is not None:
        catalog_ops = [name for name in catalog_ops if catalog()[name].group == group]
    wanted = [raw for name in catalog_ops for raw in catalog()[name].tf_raw_ops] + raw_ops
    return {raw: [op.name for op in find_by_raw_op(raw)] for raw in dict.fromkeys(wanted)}


def history_device_types(devices: list[str] | None, modes: list[str] | None) -> list[str]:
    """Registry device types of devices (default CPU): the device type itself for mode
    ``registry`` or ``eager`` (the default), the XLA one for ``xla``.

    >>> history_device_types(["CPU", "GPU"], ["xla", "registry"])
    ['CPU', 'XLA_CPU_JIT', 'GPU', 'XLA_GPU_JIT']
    """
    from explorer.backends.tensorflow_registry import registry_device

    asked = {"xla" if m == "xla" else "eager" for m in modes or ["registry"]}
    kinds = [k for k in ("eager", "xla") if k in asked]
    return list(dict.fromkeys(registry_device(d, k) for d in devices or ["CPU"] for k in kinds))


def selected_raw_ops(op: str) -> tuple[str, ...]:
    """The raw ops of a selected op: a catalog op's, or the name itself (a raw op).

    >>> selected_raw_ops("range"), selected_raw_ops("Range")
    (('Range',), ('Range',))
    """
    from explorer.ops import catalog

    entry = catalog().get(op)
    return tuple(entry.tf_raw_ops) if entry is not None else (op,)


__all__ = [
    "HISTORY_DTYPES",
    "CellHistory",
    "ReleaseHistory",
    "StatusChange",
    "cell_history",
    "history_device_types",
    "history_raw_ops",
    "release_history",
    "selected_raw_ops",
]
