"""``precision-explorer kernels``'s options: the verb's texts, its arguments, and the checks of
what combines, made before anything runs."""

from __future__ import annotations

import argparse

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
    :func:`check_names` and :func:`~explorer.queries.op_names.resolve_op_names` before anything
    runs.
    """
    from explorer.cli import (
        add_backend_argument,
        add_device_argument,
        add_dtype_argument,
        add_json_argument,
        add_op_argument,
        positive_float,
    )
    from explorer.queries.history import HISTORY_DTYPES

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
        help="write the results as a snapshot to FILE (replaced whole, or left as it was on failure; its "
        "folder must exist), and print a summary (rows per backend, mode and status) instead of the rows "
        "(--json still prints every row)",
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
    if args.save is not None:
        _conflicts(args, "--save", {"--diff": bool(args.diff)}, "a diff is not a snapshot")


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
    release, installed = args.tf_version, installed_version()
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


def installed_version() -> str | None:
    """The installed TensorFlow release (None when it is not installed), read without importing it."""
    from explorer.runtime import registry

    return registry.installed_tensorflow_version()
