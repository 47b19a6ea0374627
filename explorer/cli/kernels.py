"""``precision-explorer kernels``: which ops run in which dtype on which device, and why."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

VERB = "kernels"
HELP = (
    "kernel availability per op x dtype x device: declared by TensorFlow's registry and probed "
    "by running (eager, XLA), with explanations and workarounds"
)
EXIT_1 = "--diff found a cell whose status changed, or a cell in only one snapshot"
JSON_RESULT = (
    "a list of rows (backend, op, raw_op, dtype, device, mode, status, error, explanation, "
    "workaround; --full: every column); with --diff an object {environment_changes: {key: [A, B]}, "
    "cells: [rows of cells that changed]}"
)

TABLE_COLUMNS = ["backend", "op", "raw_op", "dtype", "device", "mode", "status", "explanation"]
#: longest time one probe may be given (seconds)
MAX_TIMEOUT = 3600.0

#: the raw-op spelling rule (printed in --help)
NOTES = (
    "op names: a catalog op is named as the catalog spells it (lower_case: exp, qr, linspace, add), "
    "or in any other case (EXP) unless that spelling is a TensorFlow raw op. A name spelled exactly "
    "as TensorFlow spells a raw op (Exp, Qr, LinSpace, Add, _FusedConv2D) is that raw op alone: its "
    "registry rows (mode registry, backend tensorflow; a raw op has no inputs to run it with). So "
    "--op qr is the catalog op qr (every raw op it dispatches to, and its eager and XLA probes), "
    "--op Qr the raw op Qr. A name that is neither, in any case, is refused."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The verb's options (see ``precision-explorer kernels --help``).

    Numbers and names are checked by argparse, the group and which ops are raw ops by
    :func:`check_names` and :func:`resolve_op_names` before anything runs.
    """
    from explorer.cli import (
        add_backend_argument,
        add_device_argument,
        add_dtype_argument,
        add_json_argument,
        add_op_argument,
        positive_float,
    )

    add_op_argument(parser, raw_ops=True, default="the whole catalog")
    add_dtype_argument(parser, default="every float dtype TensorFlow has")
    add_device_argument(parser)
    add_backend_argument(parser, default="all")
    parser.add_argument(
        "--mode",
        action="append",
        choices=["registry", "eager", "xla"],
        help="registry (declared), eager or xla (probed); repeat for several; default: all three",
    )
    parser.add_argument("--group", help="only ops of this catalog group (unary, linalg, nn, ...)")
    add_json_argument(parser)
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
    """Check the group before anything runs (formats, backends, devices and the spelling of
    op names were checked by argparse); ValueError names the valid groups."""
    from explorer.ops import GROUPS

    if args.group is not None and args.group not in GROUPS:
        raise ValueError(f"unknown group {args.group!r}; valid groups: {', '.join(GROUPS)}")


def resolve_op_names(names: list[str], registry: Callable[[], Any]) -> tuple[list[str], list[str]]:
    """``--op`` names as (catalog op names, TensorFlow raw op names), by the rule of ``--help``.

    In order: a catalog name as written; a raw op as TensorFlow spells it; a catalog name in
    any case; a raw op in any case (as TensorFlow spells it).  ``registry()`` gives the
    TensorFlow registry (``ops``, ``has_op``, ``op``); it is only asked when a name is not a
    catalog name as written.  ValueError (the catalog's, with close matches) for any other name.

    >>> class Reg:
    ...     ops = {"Qr": None, "Exp": None}
    ...     def has_op(self, name): return name.lower() in ("qr", "exp")
    ...     def op(self, name): return type("Info", (), {"name": name.capitalize()})
    >>> resolve_op_names(["qr", "Qr", "EXP", "exp"], Reg)
    (['qr', 'exp'], ['Qr'])
    """
    from explorer.ops import catalog, get_op

    ops = catalog()
    catalog_ops: list[str] = []
    raw_ops: list[str] = []
    reg: Any = None
    for name in names:
        if name in ops:
            catalog_ops.append(name)
            continue
        if reg is None:
            reg = registry()
        if name in reg.ops:
            raw_ops.append(name)
        elif name.lower() in ops:
            catalog_ops.append(name.lower())
        elif reg.has_op(name):
            raw_ops.append(reg.op(name).name)
        else:
            get_op(name)  # raises the catalog's ValueError with close matches
    return list(dict.fromkeys(catalog_ops)), list(dict.fromkeys(raw_ops))


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
    result = _filtered(_load(args.load), args) if args.load is not None else _sweep(args)
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


def _sweep(args: argparse.Namespace) -> Any:
    """Availability of the requested ops: catalog ops through
    :func:`~explorer.analysis.availability.availability`, raw ops (by the spelling rule) as
    their registry rows."""
    from explorer.analysis import registry
    from explorer.analysis.availability import availability

    catalog_ops: list[str] | None = None
    raw_ops: list[str] = []
    if args.op:
        catalog_ops, raw_ops = resolve_op_names(args.op, lambda: registry.get_registry())
    if raw_ops:
        _check_raw_op_request(raw_ops, args)
    result = availability(
        ops=catalog_ops,
        dtypes=args.dtype,
        backends=args.backend,
        devices=args.device,
        modes=args.mode,
        use_cache=not args.no_cache,
        progress=not args.json,
        probe_timeout=args.timeout,
        registry=registry.get_registry() if raw_ops else None,
    )
    if raw_ops:
        result.rows = _with_raw_op_rows(result.rows, registry.get_registry(), raw_ops, args)
    if args.group:
        result = result.filter(group=args.group)
    return result


def _check_raw_op_request(raw_ops: list[str], args: argparse.Namespace) -> None:
    """ValueError when raw ops are asked for where they have no rows (no registry mode, or
    no tensorflow backend), naming the catalog ops that run them."""
    missing = []
    if args.mode and "registry" not in args.mode:
        missing.append("--mode registry")
    if args.backend and "tensorflow" not in args.backend:
        missing.append("--backend tensorflow")
    if not missing:
        return
    from explorer.ops import find_by_raw_op

    users = sorted({op.name for raw in raw_ops for op in find_by_raw_op(raw)})
    names = ", ".join(raw_ops)
    hint = f", or ask for a catalog op that runs it: {', '.join(users)}" if users else ""
    raise ValueError(
        f"{names}: a TensorFlow raw op as TensorFlow spells it has registry rows only; "
        f"add {' and '.join(missing)}{hint}"
    )


def _with_raw_op_rows(rows: Any, reg: Any, raw_ops: list[str], args: argparse.Namespace) -> Any:
    """``rows`` and the registry rows of each raw op (alone, not the catalog ops that call it);
    :func:`_check_raw_op_request` made sure the selection has registry rows."""
    import pandas as pd

    from explorer.analysis.availability import Target, declared_rows

    dtypes = [d for d in (args.dtype or reg.float_dtypes) if d in reg.float_dtypes]
    targets = [Target(raw, (raw,), False) for raw in raw_ops]
    extra = pd.DataFrame(declared_rows(reg, targets, dtypes, args.device or ["CPU"]), columns=rows.columns)
    if extra.empty:
        return rows
    if rows.empty:
        return extra
    return pd.concat([rows, extra], ignore_index=True)


def _filtered(result: Any, args: argparse.Namespace) -> Any:
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
