"""``precision-explorer kernels``: which ops run in which dtype on which device, and why.

The verb in four jobs: its options and their checks (:mod:`.args`), the rows of a sweep
(:mod:`.sweep`) and their printing (:mod:`.table`), saved snapshots (:mod:`.snapshots`), and
the history across TensorFlow releases (:mod:`.history`).
"""

from __future__ import annotations

import argparse

from explorer.cli.kernels.args import (
    EXIT_1,
    HELP,
    JSON_RESULT,
    MAX_TIMEOUT,
    NOTES,
    VERB,
    add_arguments,
    check_modes,
    check_names,
    check_release_options,
    mode_choices,
    mode_help,
)
from explorer.queries.op_names import resolve_op_names


def run(args: argparse.Namespace) -> int:
    """Print availability rows (table or ``--json``), a summary of a saved snapshot, a diff of two
    snapshots, or the ``--history`` of cells across the shipped TensorFlow releases."""
    from explorer.cli.kernels import history, snapshots, sweep, table

    check_names(args)
    if args.history:
        return history.print_history(args)
    if args.diff:
        return snapshots.diff(args)
    if args.save is not None:  # refused before a long sweep, not after it
        from explorer.queries.snapshot import check_save_path

        check_save_path(args.save)
    result = (
        snapshots.filtered(snapshots.load(args.load), args) if args.load is not None else sweep.sweep(args)
    )
    if args.save is not None:
        from explorer.queries.snapshot import save_snapshot

        save_snapshot(result, args.save)
    answered = {} if args.load is not None else sweep.answer_environment(result.environment)
    if args.json:
        table.print_json_answered(result.records(full=args.full), answered)
        return 0
    table.print_result(result, args)
    return 0


__all__ = [
    "EXIT_1",
    "HELP",
    "JSON_RESULT",
    "MAX_TIMEOUT",
    "NOTES",
    "VERB",
    "add_arguments",
    "check_modes",
    "check_names",
    "check_release_options",
    "mode_choices",
    "mode_help",
    "resolve_op_names",
    "run",
]
