"""``precision-explorer kernels --load`` and ``--diff``: saved snapshots, filtered by the
options, and what changed between two of them."""

from __future__ import annotations

import argparse
from typing import Any

from explorer.cli.kernels.args import VERB


def filtered(result: Any, args: argparse.Namespace) -> Any:
    """A loaded snapshot's rows that match the options; ``--op`` by the spelling rule, with the
    snapshot's own ``raw_op`` column telling raw ops (no registry is read)."""
    from explorer.ops import catalog

    rows = result.rows
    if args.op:
        ops, raws = rows["op"].astype(str), rows["raw_op"].astype(str)
        mask = ops.isin([])
        for name in args.op:
            if name in catalog():
                mask |= ops == name
            elif (raws == name).any():
                mask |= raws == name
            else:
                mask |= (ops.str.lower() == name.lower()) | (raws.str.lower() == name.lower())
        rows = rows[mask]
    if args.dtype:
        rows = rows[rows["dtype"].isin(args.dtype)]
    if args.device:
        rows = rows[rows["device"].isin(args.device + [f"XLA_{d}_JIT" for d in args.device])]
    if args.backend:
        rows = rows[rows["backend"].isin(args.backend)]
    if args.mode:
        rows = rows[rows["mode"].isin(args.mode)]
    result.rows = rows.reset_index(drop=True)
    return result.filter(group=args.group) if args.group else result


def load(path: str) -> Any:
    """A snapshot for ``--load``/``--diff``; a warning about it (repeated rows dropped) is one
    line on stderr instead of a Python warning."""
    import sys
    import warnings

    from explorer.queries.snapshot import SnapshotWarning, load_snapshot
    from explorer.textsafety import strip_control

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SnapshotWarning)
        result = load_snapshot(path)
    for w in caught:
        if issubclass(w.category, SnapshotWarning):
            print(f"precision-explorer {VERB}: warning: {strip_control(str(w.message))}", file=sys.stderr)
        else:  # not ours: pass it on as it was
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return result


def diff(args: argparse.Namespace) -> int:
    """``--diff A B``: environment and cell changes; 1 when a cell changed, else 0."""
    from explorer.cli import print_json, print_table
    from explorer.queries.snapshot import diff_snapshots, environment_changes
    from explorer.textsafety import strip_control

    a, b = (load(p) for p in args.diff)
    changes = diff_snapshots(a, b)
    env = environment_changes(a.environment, b.environment)
    status = 1 if len(changes) else 0
    if args.json:
        print_json(
            {
                "environment_changes": {k: list(v) for k, v in env.items()},
                "cells": changes.drop(columns=["error_a", "error_b"]).to_dict("records"),
            }
        )
        return status
    print("environment changes:" if env else "no environment changes")
    for key, (va, vb) in env.items():
        print("  " + strip_control(f"{key}: {_env_value(va)} -> {_env_value(vb)}"))
    if changes.empty:
        print("no cell changed status")
    else:
        print_table(
            changes.to_dict("records"),
            ["backend", "op", "dtype", "device", "mode", "status_a", "status_b", "change"],
        )
    return status


def _env_value(value: Any) -> str:
    """An environment value for the terminal: strings as they are, anything else as JSON."""
    import json

    return value if isinstance(value, str) else json.dumps(value, default=str)
