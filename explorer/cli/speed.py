"""``precision-explorer speed``: the time per call of ops in low-precision dtypes, relative to
float32 on the same backend, device, mode and shapes (measured here, in worker processes)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

VERB = "speed"
HELP = (
    "time ops in each dtype against float32 (median, quartiles, ratio_to_float32 with its interval, verdict)"
)
JSON_RESULT = (
    "a list of rows, one per measured cell (float32's own rows included): {backend, op, shapes, dtype, "
    "device, mode, status (availability with these inputs: ok, fallback, no_kernel, ...), median_seconds, "
    "q1_seconds, q3_seconds, min_seconds, max_seconds, samples, float32_median_seconds, ratio_to_float32 "
    "(median over float32's median), ratio_low, ratio_high, confidence, rounds (the signed-rank interval "
    "of the ratio from the rounds that timed the dtype and float32 in turn), verdict (faster, slower, "
    "undecided; baseline on float32's rows), verdict_reason, slow (ratio above 1.5 and verdict slower), "
    "load (the 1-minute load average), cores, cpu_share (CPU seconds the worker got per wall second), "
    "busy (words when the machine was busy, else empty), threads (the framework's intra-op threads), "
    "result_dtype, first_call_seconds (compilation included), error}. How many cells were measured, of "
    "how many, the threads and the load are printed on stderr"
)
#: the largest --budget (seconds)
MAX_BUDGET = 24 * 3600.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The verb's options."""
    from explorer.cli import (
        add_backend_argument,
        add_device_argument,
        add_dtype_argument,
        add_json_argument,
        add_op_argument,
        positive_float,
        positive_int,
    )
    from explorer.queries.speed import DEFAULT_BACKENDS, DEFAULT_DTYPES, DEFAULT_MODES

    add_op_argument(parser, what="op to time", default="--catalog: every op")
    parser.add_argument(
        "--catalog", action="store_true", help="time every op of the catalog (bound it with --budget)"
    )
    baseline = "; float32 is always timed, as the baseline"
    add_dtype_argument(parser, default=", ".join(DEFAULT_DTYPES) + baseline)
    add_backend_argument(parser, default=", ".join(DEFAULT_BACKENDS))
    parser.add_argument(
        "--mode",
        action="append",
        choices=("eager", "xla", "compile"),
        help=(
            "eager, xla (TensorFlow's jit_compile, jax.jit) or compile (torch.compile, Inductor; "
            f"only when asked for); repeat for several (default: {', '.join(DEFAULT_MODES)}); "
            "a backend is timed in the modes it has"
        ),
    )
    add_device_argument(parser, repeat=False)
    parser.add_argument(
        "--budget",
        type=positive_float(MAX_BUDGET),
        metavar="SECONDS",
        help="stop the whole run within this many seconds (worker start-up included) and say how many cells "
        "were measured",
    )
    parser.add_argument(
        "--min-time",
        type=positive_float(60.0),
        default=None,
        metavar="SECONDS",
        help="timed seconds per cell at least (default 0.2; 0.05 with --budget)",
    )
    from explorer.runtime.speed import DEFAULT_THREADS

    parser.add_argument(
        "--max-time",
        type=positive_float(600.0),
        default=None,
        metavar="SECONDS",
        help="timed seconds per cell at most, unless the cell needs more for the 16 rounds of an interval "
        "(default 2)",
    )
    parser.add_argument(
        "--threads",
        "--torch-threads",
        dest="threads",
        type=positive_int(1024),
        default=None,
        metavar="N",
        help="intra-op threads of PyTorch (torch.set_num_threads) and TensorFlow in their workers "
        f"(default {DEFAULT_THREADS}: faster than every core on the 2-core machine it was chosen on, "
        "benchmarks/results/threads.md); the rows say the count each framework ran with",
    )
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    """Time the cells and print a table (or ``--json``); the coverage line goes to stderr."""
    from explorer.cli import print_json, print_table, safe_text, unique
    from explorer.cli._progress import bar, wanted
    from explorer.ops import catalog
    from explorer.queries.speed import DEFAULT_BACKENDS, DEFAULT_DTYPES, DEFAULT_MODES, plan, speed
    from explorer.runtime.speed import MAX_TIME

    if bool(args.op) == bool(args.catalog):
        raise ValueError("give --op NAME (repeatable) or --catalog, not both and not neither")
    backends = unique(args.backend) or list(DEFAULT_BACKENDS)
    _check_modes(backends, unique(args.mode))
    modes = unique(args.mode) or list(DEFAULT_MODES)
    min_time = args.min_time if args.min_time is not None else (0.05 if args.budget else 0.2)
    budget = None
    started = command_age()
    if args.budget is not None:  # the budget bounds the command: its start-up and exit too
        budget = args.budget - started - EXIT_SECONDS
        if budget <= 0:
            raise ValueError(f"--budget {args.budget:g}: the command's start-up alone took longer")
    ops = unique(args.op) or None
    dtypes = unique(args.dtype) or list(DEFAULT_DTYPES)
    device = args.device or "CPU"
    cells = bar(
        len(plan(ops or list(catalog()), dtypes, backends, modes, device)),
        "timing",
        "cell",
        wanted(args.json),
    )
    try:
        result = speed(
            ops=ops,
            dtypes=dtypes,
            backends=backends,
            modes=modes,
            device=device,
            budget=budget,
            min_time=min_time,
            min_count=3 if args.budget else 5,
            max_time=args.max_time if args.max_time is not None else MAX_TIME,
            threads=args.threads,
            on_row=None if cells is None else (lambda row: cells.update(1)),
        )
    finally:
        if cells is not None:
            cells.close()
    rows = [r.to_dict() for r in result.rows]
    for line in result.not_installed:  # the answer's first words: what could not be timed at all
        print(safe_text(line), file=sys.stderr if args.json else sys.stdout)
    if args.json:
        print_json(rows)
    elif rows:
        print_table([_shown(r) for r in rows], COLUMNS)
        for line in result.conditions():
            print(safe_text(line))
    if args.budget is not None:
        result.budget_seconds, result.seconds = args.budget, started + result.seconds
    sys.stdout.flush()
    if args.json:
        for line in result.conditions():
            print(safe_text(line), file=sys.stderr)
    print(result.coverage(), file=sys.stderr)
    return 0


#: seconds of a --budget kept for printing and stopping the workers at exit
EXIT_SECONDS = 0.5


def command_age() -> float:
    """Seconds this command has run: since its process started when the process is the command
    (``precision-explorer``, ``python -m explorer``), else 0 (``main()`` called in a process
    that was started for something else: a test, a notebook)."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path()
    command = script.name == "precision-explorer" or (script.name, script.parent.name) == (
        "__main__.py",
        "explorer",
    )
    return process_age() if command else 0.0


def process_age() -> float:
    """Seconds since this process started (Linux: ``/proc/self/stat``; elsewhere since
    ``explorer.cli.speed`` was imported)."""
    try:
        ticks = os.sysconf("SC_CLK_TCK")
        started = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19]) / ticks
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime - started)
    except (OSError, ValueError, IndexError):
        return time.monotonic() - _IMPORTED


_IMPORTED = time.monotonic()

#: the columns of the text table
COLUMNS = (
    *("backend", "mode", "op", "shapes", "dtype", "status"),
    *("median_ms", "iqr_ms", "ratio_to_float32", "interval", "verdict", "slow"),
)


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    """A row for the text table: milliseconds, the interquartile range, the ratio's interval,
    ``slow`` as a word."""
    median = row["median_seconds"]
    iqr = None if median is None else f"{row['q1_seconds'] * 1e3:.4g}-{row['q3_seconds'] * 1e3:.4g}"
    ratio = row["ratio_to_float32"]
    return {
        **row,
        "median_ms": None if median is None else median * 1e3,
        "iqr_ms": iqr,
        "ratio_to_float32": None if ratio is None else f"{ratio:.2f}x",
        "interval": _interval(row),
        "verdict": f"undecided: {row['verdict_reason']}" if row["verdict"] == "undecided" else row["verdict"],
        "slow": "slow" if row["slow"] else "",
    }


def _check_modes(backends: list[str], modes: list[str]) -> None:
    """ValueError when no backend asked for runs in one of the ``modes``."""
    from explorer.backends import get_backend

    for mode in modes:
        if not any(mode in get_backend(b).modes for b in backends):
            each = "; ".join(f"{get_backend(b).name}: {', '.join(get_backend(b).modes)}" for b in backends)
            raise ValueError(f"--mode {mode}: none of the backends asked for has it ({each})")


def _interval(row: dict[str, Any]) -> str | None:
    """The ratio's interval as text, e.g. ``"0.48-0.53x"`` (None when there is none).

    >>> _interval({"ratio_low": 0.4812, "ratio_high": 0.5311})
    '0.481-0.531x'
    """
    low, high = row.get("ratio_low"), row.get("ratio_high")
    return None if low is None or high is None else f"{low:.3g}-{high:.3g}x"
