"""``precision-explorer kernels --history``: the table (or ``--json``) of
:func:`explorer.queries.history.release_history` for the selection."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from explorer.queries.history import CellHistory


def history_table(cells: Sequence[CellHistory], releases: Sequence[str]) -> list[str]:
    """The ``--history`` table as lines: raw op, dtype, device, one letter per release (releases
    grouped by minor version: ``2.15`` above, the patch ``0``, ``0.post1``, ``1`` below), and
    the releases where the status changed.

    >>> from explorer.analysis.releases import ReleaseStatus
    >>> from explorer.queries.history import CellHistory, StatusChange
    >>> cell = CellHistory("Range", ("range",), "float16", "CPU",
    ...     (ReleaseStatus("2.17.1", "no_kernel"), ReleaseStatus("2.18.0", "ok")),
    ...     (StatusChange("2.18.0", "ok", "no_kernel"),), "2.18.0")
    >>> print("\\n".join(history_table([cell], ["2.17.1", "2.18.0"])))
                             2.17  2.18
    raw_op  dtype    device  1     0     changed in
    Range   float16  CPU     N     +     2.18.0: ok
    """
    from explorer.cli import safe_text
    from explorer.plots.history import status_letter

    def fixed_cells(cell: CellHistory) -> list[str]:
        return [safe_text(cell.raw_op), safe_text(cell.dtype), safe_text(cell.device)]

    fixed = ["raw_op", "dtype", "device"]
    widths = [max([len(c)] + [len(fixed_cells(cell)[i]) for cell in cells]) for i, c in enumerate(fixed)]
    groups: dict[str, list[tuple[str, str]]] = {}
    for release in releases:
        major, minor, patch = [*release.split(".", 2), "", ""][:3]
        groups.setdefault(f"{major}.{minor}", []).append((release, patch or "0"))
    columns: list[tuple[str, str, int, bool]] = []  # release, patch label, width, last of its group
    for label, members in groups.items():
        span = sum(len(p) for _, p in members) + len(members) - 1
        extra = max(0, len(label) - span)
        for i, (release, patch) in enumerate(members):
            last = i == len(members) - 1
            columns.append((release, patch, len(patch) + (extra if last else 0), last))

    def release_cells(values: dict[str, str]) -> str:
        return "".join(values.get(r, "").ljust(w) + ("  " if last else " ") for r, _, w, last in columns)

    lead = "  ".join(" " * w for w in widths) + "  "
    top = lead + "".join(_group_label(label, columns, members) for label, members in groups.items())
    head = "  ".join(c.ljust(w) for c, w in zip(fixed, widths, strict=True)) + "  "
    lines = [top.rstrip(), (head + release_cells({r: p for r, p, _, _ in columns}) + "changed in").rstrip()]
    for cell in cells:
        letters = {e.version: status_letter(e.status) for e in cell.history}
        changed = ", ".join(f"{c.version}: {c.status}" for c in cell.changes) or "-"
        left = "  ".join(v.ljust(w) for v, w in zip(fixed_cells(cell), widths, strict=True)) + "  "
        lines.append((left + release_cells(letters) + safe_text(changed)).rstrip())
    return lines


def _group_label(label: str, columns: list[tuple[str, str, int, bool]], members: list[Any]) -> str:
    """``label`` over its releases' columns (their widths and separators)."""
    releases = {r for r, _ in members}
    span = sum(w + (2 if last else 1) for r, _, w, last in columns if r in releases)
    return label.ljust(span)


def print_history(args: argparse.Namespace) -> int:
    """``--history``: the table (or ``--json``) of the selection's cells across the shipped releases."""
    from explorer.cli import safe_text
    from explorer.cli.kernels.table import print_json_answered
    from explorer.plots.history import STATUS_LETTERS, STATUS_MEANINGS
    from explorer.queries.history import (
        HISTORY_DTYPES,
        history_device_types,
        history_raw_ops,
        release_history,
    )

    raw_ops = history_raw_ops(args.op, args.group)
    if not raw_ops:
        raise ValueError("the selection has no TensorFlow raw ops (catalog ops with no TensorFlow call)")
    dtypes = list(dict.fromkeys(args.dtype or HISTORY_DTYPES))
    answer = release_history(raw_ops, dtypes, history_device_types(args.device, args.mode))
    if answer.unknown:  # every name was resolved against the shipped releases: a catalog entry's raw op
        missing = ", ".join(dict.fromkeys(raw for raw, _ in answer.unknown))
        raise ValueError(f"no shipped TensorFlow release has the raw op {missing}")
    cells, releases = answer.cells, list(answer.releases)
    if args.json:
        print_json_answered(
            [c.record() for c in cells], {"registry_source": answer.source, "tf_releases": releases}
        )
        return 0
    print("\n".join(history_table(cells, releases)))
    print("\n" + safe_text(f"{len(cells)} cells; from the {answer.source}; no TensorFlow imported"))
    print("letters: " + ", ".join(f"{letter} {status}" for status, letter in STATUS_LETTERS.items()))
    print(f"  (- absent: {STATUS_MEANINGS['absent']})")
    return 0
