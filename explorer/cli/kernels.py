"""``precision-explorer kernels``: which ops run in which dtype on which device, and why."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

VERB = "kernels"
HELP = (
    "kernel availability per op x dtype x device: declared by TensorFlow's registry and probed "
    "by running (eager, XLA, torch.compile), with explanations and workarounds"
)
EXIT_1 = "--diff found a cell whose status changed, or a cell in only one snapshot"
JSON_RESULT = (
    "a list of rows (backend, op, raw_op, dtype, device, mode, status, error, explanation, "
    "workaround; --full: every column); with --diff an object {environment_changes: {key: [A, B]}, "
    "cells: [rows of cells that changed]}; with --history a list of cells (raw_op, ops, dtype, device, "
    "history: [{version, status, reason}], changes: [{version, status, before}], "
    "first_release_with_kernel). The environment also says which TensorFlow registry answered "
    "(tf_version, registry_source)"
)

TABLE_COLUMNS = ["backend", "op", "raw_op", "dtype", "device", "mode", "status", "phase", "explanation"]
#: dtypes of ``--history`` without ``--dtype``
HISTORY_DTYPES: tuple[str, ...] = ("float16", "bfloat16", "float32", "float64")
#: longest time one probe may be given (seconds)
MAX_TIMEOUT = 3600.0

#: the raw-op spelling rule (printed in --help)
NOTES = (
    "op names: a catalog op is named as the catalog spells it (lower_case: exp, qr, linspace, add), "
    "or in any other case (EXP) unless that spelling is a TensorFlow raw op. A name spelled exactly "
    "as TensorFlow spells a raw op (Exp, Qr, LinSpace, Add, _FusedConv2D) is that raw op alone: its "
    "registry rows (mode registry, backend tensorflow; a raw op has no inputs to run it with). So "
    "--op qr is the catalog op qr (every raw op it dispatches to, and its eager and XLA probes), "
    "--op Qr the raw op Qr. A name that is neither, in any case, is refused. "
    "Releases: --tf-version and --history answer from the registries of TensorFlow releases that ship "
    "with explorer (captured by scripts/capture_registries.py), without importing TensorFlow; "
    "--history's letters: + ok, N no_kernel, U unsupported_dtype, - absent (the release has no such op, "
    "dtype or device type)."
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
    parser.add_argument("--mode", action="append", choices=mode_choices(), help=mode_help())
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
    parser.add_argument(
        "--save",
        metavar="FILE",
        help="write the results as a snapshot, and print a summary (rows per backend, mode and status) "
        "instead of the rows (--json still prints every row)",
    )
    parser.add_argument("--load", metavar="FILE", help="show a saved snapshot instead of probing")
    parser.add_argument(
        "--diff",
        nargs=2,
        metavar=("A", "B"),
        help="what changed between two snapshots; exit status 1 when a cell's status changed or a cell "
        "is in only one of them, 0 when none did (environment changes are shown but do not count)",
    )
    parser.add_argument(
        "--tf-version",
        metavar="RELEASE",
        help="answer from the registry shipped for this TensorFlow release (2.15.0, 2.15.0.post1, ...; "
        "a wrong one lists them), without importing TensorFlow: registry rows only (--mode registry), "
        "unless it is the installed release",
    )
    parser.add_argument(
        "--history",
        action="store_true",
        help="per raw op x dtype x registry device type, the declared status in every shipped TensorFlow "
        "release and the releases where it changed (no TensorFlow import); --mode xla: the XLA device "
        f"types; default dtypes: {', '.join(HISTORY_DTYPES)}",
    )


def mode_choices() -> list[str]:
    """``--mode``'s choices: ``registry`` and every mode a backend runs in."""
    from explorer.backends import MODES

    return ["registry", *MODES]


def mode_help() -> str:
    """``--mode``'s help: the modes, the default, and each backend's modes.

    >>> "torch: eager, compile" in mode_help()
    True
    """
    from explorer.backends import backend_modes

    per_backend = "; ".join(f"{name}: {', '.join(modes)}" for name, modes in backend_modes().items())
    return (
        "registry (declared: TensorFlow's registry, PyTorch's OpInfo) or a probed mode: eager, xla "
        "(TensorFlow's jit_compile, jax.jit), compile (torch.compile, Inductor); repeat for several; "
        "default: registry, eager and xla (compile only when asked for: it builds code for every op "
        f"and dtype). Each backend is probed in its own modes ({per_backend}); a probed mode that no "
        "backend asked for has is refused"
    )


def check_modes(args: argparse.Namespace) -> None:
    """ValueError when a probed ``--mode`` is one that none of the backends asked for runs in
    (``--backend numpy --mode xla``), naming each backend's modes.  Snapshots (``--load``,
    ``--diff``) are only filtered, so any mode is taken there; ``--history`` is TensorFlow's.

    >>> ns = argparse.Namespace(mode=["compile"], backend=["tensorflow"], load=None, diff=None,
    ...                         history=False)
    >>> check_modes(ns)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: --mode compile: the tensorflow backend has no compile mode (its modes: eager, xla); ...
    """
    from explorer.backends import backend_modes

    if args.load is not None or args.diff:
        return
    modes = backend_modes()
    asked = ["tensorflow"] if args.history else list(dict.fromkeys(args.backend or modes))
    for mode in dict.fromkeys(m for m in args.mode or [] if m != "registry"):
        if any(mode in modes[b] for b in asked):
            continue
        having = " and ".join(f"{b}'s" for b, ms in modes.items() if mode in ms)
        if len(asked) == 1:
            lacking = f"the {asked[0]} backend has no {mode} mode (its modes: {', '.join(modes[asked[0]])})"
        else:
            each = "; ".join(f"{b}: {', '.join(modes[b])}" for b in asked)
            lacking = f"none of the backends asked for has a {mode} mode ({each})"
        raise ValueError(f"--mode {mode}: {lacking}; the {mode} mode is {having}")


def check_names(args: argparse.Namespace) -> None:
    """Check the group, the modes and the release options before anything runs (formats,
    backends, devices and the spelling of op names were checked by argparse); ValueError names
    the valid choices."""
    from explorer.ops import GROUPS

    if args.group is not None and args.group not in GROUPS:
        raise ValueError(f"unknown group {args.group!r}; valid groups: {', '.join(GROUPS)}")
    check_modes(args)
    check_release_options(args)


def _conflicts(args: argparse.Namespace, flag: str, others: dict[str, bool], why: str) -> None:
    given = [name for name, present in others.items() if present]
    if given:
        raise ValueError(f"{flag} cannot be combined with {', '.join(given)}: {why}")


def check_release_options(args: argparse.Namespace) -> None:
    """``--tf-version`` and ``--history``: ValueError (one line, the valid choices) for a release
    that ships with explorer neither is nor is installed, for probes of another release than the
    installed one, and for options that do not combine."""
    snapshots = {"--load": args.load is not None, "--diff": bool(args.diff)}
    if args.history:
        _conflicts(
            args,
            "--history",
            {"--tf-version": args.tf_version is not None, "--save": args.save is not None, **snapshots},
            "it reads every shipped release's registry",
        )
        if args.backend and "tensorflow" not in args.backend:
            raise ValueError("--history is TensorFlow's: add --backend tensorflow, or leave --backend out")
        return
    if args.tf_version is None:
        return
    _conflicts(args, "--tf-version", snapshots, "a snapshot says which release it came from")
    release, installed = args.tf_version, _installed_version()
    from explorer.analysis import releases

    if release != installed and release not in releases.shipped_releases():
        mine = f"; installed: {installed}" if installed else "; TensorFlow is not installed"
        raise ValueError(
            f"--tf-version {release!r}: explorer ships no registry of that TensorFlow release; "
            f"shipped: {', '.join(releases.shipped_releases())}{mine}"
        )
    if release == installed:
        return
    probes = [m for m in args.mode or [] if m != "registry"]
    if probes:
        where = (
            f"the installed TensorFlow ({installed})" if installed else "TensorFlow, which is not installed"
        )
        raise ValueError(
            f"--tf-version {release} answers from the registry shipped for that release (mode registry); "
            f"--mode {' and '.join(probes)} would run {where}: drop --mode {' '.join(probes)} or --tf-version"
        )
    if args.backend and "tensorflow" not in args.backend:
        raise ValueError(
            f"--tf-version {release} answers TensorFlow's registry rows: add --backend tensorflow, "
            "or leave --backend out"
        )


def _installed_version() -> str | None:
    from explorer.runtime import registry

    return registry.installed_tensorflow_version()


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
    """Print availability rows (table or ``--json``), a summary of a saved snapshot, a diff of two
    snapshots, or the ``--history`` of cells across the shipped TensorFlow releases."""
    from explorer.cli import print_table
    from explorer.textsafety import strip_control

    check_names(args)
    if args.history:
        return _history(args)
    if args.diff:
        return _diff(args)
    if args.save is not None:  # refused before a long sweep, not after it
        from explorer.queries.snapshot import check_save_path

        check_save_path(args.save)
    result = _filtered(_load(args.load), args) if args.load is not None else _sweep(args)
    if args.save is not None:
        from explorer.queries.snapshot import save_snapshot

        save_snapshot(result, args.save)
    answered = {} if args.load is not None else _answer_environment(result.environment)
    if args.json:
        _print_json(result.records(full=args.full), answered)
        return 0
    # texts may come from a snapshot made elsewhere: no control characters reach the terminal
    rows = [_printable(r) for r in result.records(full=True)]
    if args.save is not None:
        _print_save_summary(rows, result, args.save)
        return 0
    print_table(rows, TABLE_COLUMNS)
    failing = [r for r in rows if r["status"] != "ok" and r["mode"] != "registry"]
    if args.full or 0 < len(failing) <= 6:
        for r in failing:
            where = f" (failed at {r['phase']})" if r.get("phase") and r["phase"] != "ok" else ""
            print(
                f"\n--- {r['backend']} {r['op']} {r['dtype']} {r['device']} {r['mode']}: {r['status']}{where}"
            )
            if r["error"]:
                text = r["error"] if args.full else r["error"].strip().splitlines()[0]
                print(f"error: {text}")
            if r["disagreement"]:
                print(f"registry vs run: {r['disagreement']}")
            if r["workaround"]:
                print(f"workaround ({r['workaround_how']}):\n{r['workaround']}")
    print("\n" + strip_control(_footer(rows, result)))
    return 0


def _footer(rows: list[dict[str, Any]], result: Any) -> str:
    """The last line of the table: counts, the TensorFlow release that answered and from where."""
    disagreements = sum(1 for r in rows if r["disagreement"])
    env = result.environment
    versions = env.get("versions")
    tf_version = env.get("tf_version") or (versions.get("tensorflow") if isinstance(versions, dict) else None)
    source = f"; registry: {env['registry_source']}" if env.get("registry_source") else ""
    return (
        f"{len(rows)} rows; {disagreements} declared/probed disagreements; "
        f"TensorFlow {tf_version}{source}; {result.probed} probed now, {result.cached} from cache"
    )


def _print_save_summary(rows: list[dict[str, Any]], result: Any, path: str) -> None:
    """What ``--save`` wrote, instead of its rows: counts per backend x mode x status, and the path."""
    from collections import Counter

    from explorer.cli import print_table, safe_text
    from explorer.outcome import STATUSES

    counts = Counter((r["backend"], r["mode"], r["status"]) for r in rows)
    present = {status for _, _, status in counts}
    statuses = [s for s in STATUSES if s in present] + sorted(present - set(STATUSES))
    groups = list(dict.fromkeys((r["backend"], r["mode"]) for r in rows))
    table = [
        {
            "backend": b,
            "mode": m,
            "rows": sum(counts[(b, m, s)] for s in statuses),
            **{s: counts[(b, m, s)] for s in statuses},
        }
        for b, m in groups
    ]
    if table:
        print_table(table, ["backend", "mode", "rows", *statuses])
        print()
    phases = Counter((r["mode"], r.get("phase") or "") for r in rows if r["mode"] != "registry")
    failed = {k: n for k, n in phases.items() if k[1] not in ("", "ok")}
    if failed:
        print(
            "failed at: "
            + "; ".join(f"{mode} {phase} {n}" for (mode, phase), n in sorted(failed.items()))
            + " (phases: see explorer.outcome.Phase)"
        )
    print(safe_text(_footer(rows, result)))
    print(safe_text(f"saved {len(rows)} rows to {path}"))


def _answer_environment(env: dict[str, Any]) -> dict[str, Any]:
    """The keys of a sweep's environment that say which TensorFlow registry answered."""
    return {k: env[k] for k in ("tf_version", "tf_release", "registry_source") if k in env}


def _print_json(result: Any, answered: dict[str, Any]) -> None:
    """:func:`explorer.cli.print_json`, with ``answered`` (which registry answered) in the environment."""
    import json
    import sys

    from explorer.cli import _json_default, json_document

    document = json_document(result)
    document["environment"].update(answered)
    json.dump(document, sys.stdout, indent=2, default=_json_default)
    sys.stdout.write("\n")


def _release_registry(args: argparse.Namespace) -> tuple[Any, str] | None:
    """The registry ``--tf-version`` asks for and where it comes from (None: the installed one,
    as :func:`~explorer.runtime.registry.get_registry` finds it); checked by
    :func:`check_release_options`."""
    from explorer.analysis import releases
    from explorer.runtime import registry

    if args.tf_version is None:
        return None
    if args.tf_version in releases.shipped_releases():
        return releases.release_registry(args.tf_version), releases.release_source(args.tf_version)
    return registry.get_registry(), registry.registry_source()  # the installed release, not shipped


def _sweep(args: argparse.Namespace) -> Any:
    """Availability of the requested ops: catalog ops through
    :func:`~explorer.queries.availability.availability`, raw ops (by the spelling rule) as
    their registry rows; from the registry of ``--tf-version`` when given."""
    from explorer.queries.availability import availability
    from explorer.runtime import registry

    chosen = _release_registry(args)
    modes, backends = args.mode, args.backend
    if chosen is not None and args.tf_version != _installed_version():
        modes, backends = ["registry"], ["tensorflow"]  # another release: its registry only
    answering = (lambda: chosen[0]) if chosen is not None else registry.get_registry
    catalog_ops: list[str] | None = None
    raw_ops: list[str] = []
    if args.op:
        if chosen is not None:
            _check_raw_ops_of_release(args.op, chosen[0])
        catalog_ops, raw_ops = resolve_op_names(args.op, answering)
    if raw_ops:
        _check_raw_op_request(raw_ops, args)
    result = availability(
        ops=catalog_ops,
        dtypes=args.dtype,
        backends=backends,
        devices=args.device,
        modes=modes,
        use_cache=not args.no_cache,
        progress=not args.json,
        probe_timeout=args.timeout,
        registry=answering() if raw_ops or chosen is not None else None,
    )
    reg = answering()
    if raw_ops:
        result.rows = _with_raw_op_rows(result.rows, reg, raw_ops, args)
    if args.group:
        result = result.filter(group=args.group)
    source = chosen[1] if chosen is not None else registry.registry_source()
    result.environment.update(tf_version=reg.tf_version, registry_source=source)
    if args.tf_version is not None:
        result.environment["tf_release"] = args.tf_version
    return result


def _check_raw_ops_of_release(names: list[str], reg: Any) -> None:
    """ValueError for a raw op name (not a catalog name) that ``reg``'s release lacks but another
    shipped release has, naming those releases."""
    from explorer.analysis import releases
    from explorer.ops import catalog

    for name in names:
        if name in catalog() or name.lower() in catalog() or reg.has_op(name):
            continue
        known = releases.known_op(name)
        if known is not None:
            have = releases.releases_with_op(known)
            raise ValueError(
                f"TensorFlow {reg.tf_version} has no op {known}; the shipped releases that have it: "
                f"{', '.join(have)}"
            )


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

    from explorer.queries.availability_build import Target, declared_rows

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


def _printable(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with control characters stripped from its strings (newlines and tabs kept)."""
    from explorer.textsafety import strip_control

    return {k: strip_control(v, keep_newlines=True) if isinstance(v, str) else v for k, v in row.items()}


def _diff(args: argparse.Namespace) -> int:
    """``--diff A B``: environment and cell changes; 1 when a cell changed, else 0."""
    from explorer.cli import print_json, print_table
    from explorer.queries.snapshot import diff_snapshots, environment_changes
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


# ---------------------------------------------------------------- --history


class _ShippedOpNames:
    """The raw op names of every shipped release, answering what :func:`resolve_op_names` asks a
    registry (``name in reg.ops``, ``has_op``, ``op(name).name``) without reading a registry."""

    def __init__(self) -> None:
        from explorer.analysis.releases import known_op

        self._known = known_op
        self.ops = self  # ``name in reg.ops``: spelled exactly as a shipped release spells it

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._known(name) == name

    def has_op(self, name: str) -> bool:
        """True when some shipped release has raw op ``name`` (any case)."""
        return self._known(name) is not None

    def op(self, name: str) -> Any:
        """An object whose ``name`` is the raw op's spelling."""
        from types import SimpleNamespace

        return SimpleNamespace(name=self._known(name))


def history_raw_ops(names: list[str] | None, group: str | None = None) -> dict[str, list[str]]:
    """The raw ops ``--history`` covers -> the catalog ops that run each, by the spelling rule.

    No ``names``: every catalog op (of ``group``); a catalog op stands for the raw ops it
    dispatches to, a raw op (spelled as TensorFlow spells it) for itself.  ValueError (the
    catalog's, with close matches) for a name no catalog entry and no shipped release has.

    >>> history_raw_ops(["range", "Qr"])
    {'Range': ['range', 'dct'], 'Qr': ['qr']}
    """
    from explorer.ops import catalog, find_by_raw_op

    if names:
        catalog_ops, raw_ops = resolve_op_names(names, _ShippedOpNames)
    else:
        catalog_ops, raw_ops = list(catalog()), []
    if group is not None:
        catalog_ops = [name for name in catalog_ops if catalog()[name].group == group]
    wanted = [raw for name in catalog_ops for raw in catalog()[name].tf_raw_ops] + raw_ops
    return {raw: [op.name for op in find_by_raw_op(raw)] for raw in dict.fromkeys(wanted)}


def history_device_types(devices: list[str] | None, modes: list[str] | None) -> list[str]:
    """Registry device types of ``--device`` (default CPU): the device type itself for mode
    ``registry`` or ``eager`` (the default), the XLA one for ``xla``.

    >>> history_device_types(["CPU", "GPU"], ["xla", "registry"])
    ['CPU', 'XLA_CPU_JIT', 'GPU', 'XLA_GPU_JIT']
    """
    from explorer.backends.tensorflow_registry import registry_device

    asked = {"xla" if m == "xla" else "eager" for m in modes or ["registry"]}
    kinds = [k for k in ("eager", "xla") if k in asked]
    return list(dict.fromkeys(registry_device(d, k) for d in devices or ["CPU"] for k in kinds))


def history_cells(
    raw_ops: dict[str, list[str]], dtypes: list[str], device_types: list[str]
) -> list[dict[str, Any]]:
    """One entry per raw op x dtype x device type: its status in every shipped release (oldest
    first), the releases where it changed, and the first release with a kernel.

    >>> cell = history_cells({"Range": ["range"]}, ["float16"], ["CPU"])[0]
    >>> [c["version"] for c in cell["changes"]], cell["first_release_with_kernel"]
    (['2.18.0'], '2.18.0')
    """
    import itertools

    from explorer.analysis.releases import history

    cells = []
    for raw, ops in raw_ops.items():
        for dtype in dtypes:
            for device in device_types:
                entries = history(raw, dtype, device)
                changes = [
                    {"version": now.version, "status": now.status, "before": before.status}
                    for before, now in itertools.pairwise(entries)
                    if now.status != before.status
                ]
                cells.append(
                    {
                        "raw_op": raw,
                        "ops": ops,
                        "dtype": dtype,
                        "device": device,
                        "history": [e._asdict() for e in entries],
                        "changes": changes,
                        "first_release_with_kernel": next(
                            (e.version for e in entries if e.status == "ok"), None
                        ),
                    }
                )
    return cells


def history_table(cells: list[dict[str, Any]], releases: list[str]) -> list[str]:
    """The ``--history`` table as lines: raw op, dtype, device, one letter per release (releases
    grouped by minor version: ``2.15`` above, the patch ``0``, ``0.post1``, ``1`` below), and
    the releases where the status changed.

    >>> cell = {"raw_op": "Range", "dtype": "float16", "device": "CPU", "changes": [
    ...     {"version": "2.18.0", "status": "ok", "before": "no_kernel"}], "history": [
    ...     {"version": "2.17.1", "status": "no_kernel"}, {"version": "2.18.0", "status": "ok"}]}
    >>> print("\\n".join(history_table([cell], ["2.17.1", "2.18.0"])))
                             2.17  2.18
    raw_op  dtype    device  1     0     changed in
    Range   float16  CPU     N     +     2.18.0: ok
    """
    from explorer.cli import safe_text
    from explorer.plots.history import status_letter

    fixed = ["raw_op", "dtype", "device"]
    widths = [max([len(c)] + [len(safe_text(cell[c])) for cell in cells]) for c in fixed]
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
        letters = {e["version"]: status_letter(e["status"]) for e in cell["history"]}
        changed = ", ".join(f"{c['version']}: {c['status']}" for c in cell["changes"]) or "-"
        left = "  ".join(safe_text(cell[c]).ljust(w) for c, w in zip(fixed, widths, strict=True)) + "  "
        lines.append((left + release_cells(letters) + safe_text(changed)).rstrip())
    return lines


def _group_label(label: str, columns: list[tuple[str, str, int, bool]], members: list[Any]) -> str:
    """``label`` over its releases' columns (their widths and separators)."""
    releases = {r for r, _ in members}
    span = sum(w + (2 if last else 1) for r, _, w, last in columns if r in releases)
    return label.ljust(span)


def _history(args: argparse.Namespace) -> int:
    """``--history``: the table (or ``--json``) of :func:`history_cells` for the selection."""
    from explorer.analysis.releases import shipped_releases
    from explorer.cli import safe_text
    from explorer.plots.history import STATUS_LETTERS, STATUS_MEANINGS

    raw_ops = history_raw_ops(args.op, args.group)
    if not raw_ops:
        raise ValueError("the selection has no TensorFlow raw ops (catalog ops with no TensorFlow call)")
    dtypes = list(dict.fromkeys(args.dtype or HISTORY_DTYPES))
    cells = history_cells(raw_ops, dtypes, history_device_types(args.device, args.mode))
    releases = shipped_releases()
    source = f"shipped registries of {len(releases)} TensorFlow releases ({releases[0]} to {releases[-1]})"
    if args.json:
        _print_json(cells, {"registry_source": source, "tf_releases": releases})
        return 0
    print("\n".join(history_table(cells, releases)))
    print("\n" + safe_text(f"{len(cells)} cells; from the {source}; no TensorFlow imported"))
    print("letters: " + ", ".join(f"{letter} {status}" for status, letter in STATUS_LETTERS.items()))
    print(f"  (- absent: {STATUS_MEANINGS['absent']})")
    return 0
