"""``precision-explorer kernels``: which ops run in which dtype on which device, and why."""

from __future__ import annotations

import argparse
import re
from typing import Any

VERB = "kernels"
HELP = (
    "kernel availability per op x dtype x device: declared by TensorFlow's registry and probed "
    "by running (eager, XLA), with explanations and workarounds"
)

TABLE_COLUMNS = ["backend", "op", "raw_op", "dtype", "device", "mode", "status", "explanation"]
#: longest time one probe may be given (seconds)
MAX_TIMEOUT = 3600.0
#: what a TensorFlow raw op name can look like (``Cholesky``, ``_FusedConv2D``); checked
#: against TensorFlow's registry later, since reading it may need TensorFlow
_RAW_OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The verb's options (see ``precision-explorer kernels --help``).

    Numbers are checked by argparse, names by :func:`check_names` before anything runs.
    """
    from explorer.cli import positive_float

    parser.add_argument(
        "--op",
        action="append",
        metavar="NAME",
        help="catalog op (cholesky) or TensorFlow raw op (Cholesky); repeatable; default: the whole catalog",
    )
    parser.add_argument(
        "--dtype",
        action="append",
        metavar="D",
        help="format name or alias (float16, bf16, ...); default: every float dtype TensorFlow has",
    )
    parser.add_argument("--device", action="append", metavar="CPU|GPU", help="default: CPU")
    parser.add_argument(
        "--backend", action="append", metavar="B", help="tensorflow, numpy, emulated, torch; default: all"
    )
    parser.add_argument(
        "--mode", action="append", choices=["registry", "eager", "xla"], help="default: all three"
    )
    parser.add_argument("--group", help="only ops of this catalog group (unary, linalg, nn, ...)")
    parser.add_argument("--json", action="store_true", help="print a JSON list of rows")
    parser.add_argument(
        "--full",
        action="store_true",
        help="with --json: every column; in the table: full error texts and workaround code",
    )
    parser.add_argument("--no-cache", action="store_true", help="probe again instead of using the cache")
    parser.add_argument(
        "--timeout",
        type=positive_float(MAX_TIMEOUT),
        default=60.0,
        help=f"seconds per probe (default 60, at most {MAX_TIMEOUT:g})",
    )
    parser.add_argument("--save", metavar="FILE", help="write the results as a snapshot")
    parser.add_argument("--load", metavar="FILE", help="show a saved snapshot instead of probing")
    parser.add_argument(
        "--diff",
        nargs=2,
        metavar=("A", "B"),
        help="what changed between two snapshots; exit status 1 when a cell's status changed or a cell "
        "is in only one of them, 0 when none did (environment changes are shown but do not count)",
    )


def check_names(args: argparse.Namespace) -> None:
    """Check group, format, backend, device and op names before anything runs.

    Formats, backends and devices become their canonical names; an op must be a catalog op
    or look like a TensorFlow raw op (whether TensorFlow has it is asked of its registry
    later).  ValueError names the valid choices.
    """
    from explorer.backends import get_backend, normalize_device
    from explorer.formats import resolve
    from explorer.ops import GROUPS, catalog, get_op

    if args.group is not None and args.group not in GROUPS:
        raise ValueError(f"unknown group {args.group!r}; valid groups: {', '.join(GROUPS)}")
    if args.dtype:
        args.dtype = [resolve(d).name for d in args.dtype]
    if args.backend:
        args.backend = [get_backend(b).name for b in args.backend]
    if args.device:
        args.device = [normalize_device(d) for d in args.device]
    for name in args.op or []:
        known = name in catalog() or name.strip().lower() in catalog()
        if not known and not _RAW_OP_NAME.fullmatch(name):
            get_op(name)  # raises the catalog's ValueError with close matches


def run(args: argparse.Namespace) -> int:
    """Print availability rows (table or ``--json``), or a snapshot, or a diff of two."""
    from explorer.cli import print_json, print_table
    from explorer.textsafety import strip_control

    check_names(args)
    if args.diff:
        return _diff(args)
    if args.save is not None:  # refused before a long sweep, not after it
        from explorer.analysis.snapshot import check_save_path

        check_save_path(args.save)
    if args.load is not None:
        result = _filtered(_load(args.load), args)
    else:
        from explorer.analysis.availability import availability

        result = availability(
            ops=args.op,
            dtypes=args.dtype,
            backends=args.backend,
            devices=args.device,
            modes=args.mode,
            use_cache=not args.no_cache,
            progress=not args.json,
            probe_timeout=args.timeout,
        )
        if args.group:
            result = result.filter(group=args.group)
    if args.save is not None:
        from explorer.analysis.snapshot import save_snapshot

        save_snapshot(result, args.save)
    if args.json:
        print_json(result.records(full=args.full))
        return 0
    # texts may come from a snapshot made elsewhere: no control characters reach the terminal
    rows = [_printable(r) for r in result.records(full=True)]
    print_table(rows, TABLE_COLUMNS)
    failing = [r for r in rows if r["status"] != "ok" and r["mode"] != "registry"]
    if args.full or 0 < len(failing) <= 6:
        for r in failing:
            print(f"\n--- {r['backend']} {r['op']} {r['dtype']} {r['device']} {r['mode']}: {r['status']}")
            if r["error"]:
                text = r["error"] if args.full else r["error"].strip().splitlines()[0]
                print(f"error: {text}")
            if r["disagreement"]:
                print(f"registry vs run: {r['disagreement']}")
            if r["workaround"]:
                print(f"workaround ({r['workaround_how']}):\n{r['workaround']}")
    disagreements = [r for r in rows if r["disagreement"]]
    env = result.environment
    versions = env.get("versions")
    tf_version = env.get("tf_version") or (versions.get("tensorflow") if isinstance(versions, dict) else None)
    print(
        "\n"
        + strip_control(
            f"{len(rows)} rows; {len(disagreements)} declared/probed disagreements; "
            f"TensorFlow {tf_version}; {result.probed} probed now, {result.cached} from cache"
            + (f"; saved to {args.save}" if args.save is not None else "")
        )
    )
    return 0


def _filtered(result: Any, args: argparse.Namespace) -> Any:
    from explorer.backends import normalize_device
    from explorer.formats import resolve

    rows = result.rows
    if args.op:
        keys = {o.lower() for o in args.op}
        rows = rows[rows["op"].str.lower().isin(keys) | rows["raw_op"].str.lower().isin(keys)]
    if args.dtype:
        rows = rows[rows["dtype"].isin([resolve(d).name for d in args.dtype])]
    if args.device:
        devs = [normalize_device(d) for d in args.device]
        rows = rows[rows["device"].isin(devs + [f"XLA_{d}_JIT" for d in devs])]
    if args.backend:
        rows = rows[rows["backend"].isin(args.backend)]
    if args.mode:
        rows = rows[rows["mode"].isin(args.mode)]
    result.rows = rows.reset_index(drop=True)
    return result.filter(group=args.group) if args.group else result


def _load(path: str) -> Any:
    """A snapshot for ``--load``/``--diff``; a warning about it (repeated rows dropped) is one
    line on stderr instead of a Python warning."""
    import sys
    import warnings

    from explorer.analysis.snapshot import SnapshotWarning, load_snapshot
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


def _printable(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with control characters stripped from its strings (newlines and tabs kept)."""
    from explorer.textsafety import strip_control

    return {k: strip_control(v, keep_newlines=True) if isinstance(v, str) else v for k, v in row.items()}


def _diff(args: argparse.Namespace) -> int:
    """``--diff A B``: environment and cell changes; 1 when a cell changed, else 0."""
    from explorer.analysis.snapshot import diff_snapshots, environment_changes
    from explorer.cli import print_json, print_table
    from explorer.textsafety import strip_control

    a, b = (_load(p) for p in args.diff)
    changes = diff_snapshots(a, b)
    env = environment_changes(a.environment, b.environment)
    status = 1 if len(changes) else 0
    if args.json:
        print_json(
            {
                "environment": {k: list(v) for k, v in env.items()},
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
