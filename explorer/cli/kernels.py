"""``precision-explorer kernels``: which ops run in which dtype on which device, and why."""

from __future__ import annotations

import argparse
from typing import Any

VERB = "kernels"
HELP = (
    "kernel availability per op x dtype x device: declared by TensorFlow's registry and probed "
    "by running (eager, XLA), with explanations and workarounds"
)

TABLE_COLUMNS = ["backend", "op", "raw_op", "dtype", "device", "mode", "status", "explanation"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The verb's options (see ``precision-explorer kernels --help``)."""
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
    parser.add_argument("--group", help="only ops of this catalog group")
    parser.add_argument("--json", action="store_true", help="print a JSON list of rows")
    parser.add_argument(
        "--full",
        action="store_true",
        help="with --json: every column; in the table: full error texts and workaround code",
    )
    parser.add_argument("--no-cache", action="store_true", help="probe again instead of using the cache")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per probe (default 60)")
    parser.add_argument("--save", metavar="FILE", help="write the results as a snapshot")
    parser.add_argument("--load", metavar="FILE", help="show a saved snapshot instead of probing")
    parser.add_argument("--diff", nargs=2, metavar=("A", "B"), help="what changed between two snapshots")


def run(args: argparse.Namespace) -> int:
    """Print availability rows (table or ``--json``), or a snapshot, or a diff of two."""
    from explorer.cli import print_json, print_table

    if args.diff:
        return _diff(args)
    if args.load:
        from explorer.analysis.snapshot import load_snapshot

        result = load_snapshot(args.load)
        result = _filtered(result, args)
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
    if args.save:
        from explorer.analysis.snapshot import save_snapshot

        save_snapshot(result, args.save)
    if args.json:
        print_json(result.records(full=args.full))
        return 0
    rows = result.records(full=True)
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
    print(
        f"\n{len(rows)} rows; {len(disagreements)} declared/probed disagreements; "
        f"TensorFlow {env.get('tf_version') or env.get('versions', {}).get('tensorflow')}; "
        f"{result.probed} probed now, {result.cached} from cache"
        + (f"; saved to {args.save}" if args.save else "")
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


def _diff(args: argparse.Namespace) -> int:
    from explorer.analysis.snapshot import diff_snapshots, environment_changes, load_snapshot
    from explorer.cli import print_json, print_table

    a, b = (load_snapshot(p) for p in args.diff)
    changes = diff_snapshots(a, b)
    env = environment_changes(a.environment, b.environment)
    if args.json:
        print_json(
            {
                "environment": {k: list(v) for k, v in env.items()},
                "cells": changes.drop(columns=["error_a", "error_b"]).to_dict("records"),
            }
        )
        return 0
    print("environment changes:")
    for key, (va, vb) in env.items():
        print(f"  {key}: {va} -> {vb}")
    if changes.empty:
        print("no cell changed status")
    else:
        print_table(
            changes.to_dict("records"),
            ["backend", "op", "dtype", "device", "mode", "status_a", "status_b", "change"],
        )
    return 0
