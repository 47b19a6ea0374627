"""The command line, ``python -m benchmarks.load_test [options]``: options into a :class:`Config`,
one run, the text table on stdout, the JSON report with ``--json``; exit status 0 when no
visitor failed and nothing stopped the run early."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import benchmarks.load_test
from benchmarks.load_test.config import MAX_BROWSERS, MAX_VISITORS, POOL_REFILLS, Config
from benchmarks.load_test.report import format_report, write_json
from benchmarks.load_test.run import run_load_test

#: the program name in the usage line: the one it had as a script (``--help`` unchanged)
PROG = "load_test.py"


def parse_args(argv: list[str] | None) -> tuple[Config, Path | None]:
    """The options (as ``--help`` lists them) as a checked :class:`Config`, and the ``--json`` path;
    exits with status 2 and a one-line message when they make no sense."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(benchmarks.load_test.__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--visitors", type=int, default=10, help=f"simulated visitors (1 to {MAX_VISITORS})")
    parser.add_argument(
        "--browsers", type=int, default=2, help=f"of which real browsers (0 to {MAX_BROWSERS})"
    )
    parser.add_argument(
        "--arrival-interval", type=float, default=None, help="seconds between two arrivals (0: all at once)"
    )
    parser.add_argument(
        "--arrive-over",
        type=float,
        default=60.0,
        help="without --arrival-interval: spread arrivals over this many seconds",
    )
    parser.add_argument(
        "--after",
        choices=["stay", "leave"],
        default="stay",
        help="after interacting: idle with the page open, or leave",
    )
    parser.add_argument(
        "--deadline", type=float, default=900.0, help="stop and report after this many seconds"
    )
    parser.add_argument("--cull-idle-timeout", type=int, default=90, help="the server's --cull-idle-timeout")
    parser.add_argument("--cull-interval", type=int, default=5, help="the server's --cull-interval")
    parser.add_argument("--cull-bound", type=float, default=None, help="seconds to wait for 0 kernels")
    parser.add_argument(
        "--max-kernels", type=int, default=None, help="the server's --max-kernels (default: --visitors)"
    )
    parser.add_argument(
        "--preheat",
        type=int,
        default=0,
        metavar="N",
        help="serve with a pool of N pre-heated kernels (app --preheat N); visitors arrive once the "
        f"pool is warm; --max-kernels then defaults to max(visitors, N) + {POOL_REFILLS}",
    )
    parser.add_argument("--op", default="exp", help="the op each visitor switches to")
    parser.add_argument("--notebook", type=Path, default=None, help="notebook to serve (default: the app's)")
    parser.add_argument("--page-timeout", type=float, default=240.0)
    parser.add_argument("--view-timeout", type=float, default=180.0)
    parser.add_argument("--interaction-timeout", type=float, default=120.0)
    parser.add_argument("--min-available-gib", type=float, default=4.0, help="abort below this MemAvailable")
    parser.add_argument("--json", type=Path, default=None, help="write the full report here")
    args = parser.parse_args(argv)
    cfg = Config(
        visitors=args.visitors,
        browsers=args.browsers,
        arrival_interval=args.arrival_interval,
        arrive_over=args.arrive_over,
        after=args.after,
        deadline=args.deadline,
        cull_idle_timeout=args.cull_idle_timeout,
        cull_interval=args.cull_interval,
        cull_bound=args.cull_bound,
        max_kernels=args.max_kernels,
        preheat=args.preheat,
        op=args.op,
        notebook=args.notebook,
        page_timeout=args.page_timeout,
        view_timeout=args.view_timeout,
        interaction_timeout=args.interaction_timeout,
        min_available_gib=args.min_available_gib,
    )
    try:
        cfg.check()
    except ValueError as exc:
        parser.error(str(exc))
    return cfg, args.json


def main(argv: list[str] | None = None) -> int:
    """Run the load test the options ask for (``argv``, default ``sys.argv[1:]``); the exit status."""
    cfg, json_path = parse_args(argv)
    result = run_load_test(cfg)
    result["command"] = "python -m benchmarks.load_test " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])
    )
    print(format_report(result), flush=True)
    if json_path is not None:
        write_json(result, json_path)
        print(f"report written to {json_path}")
    return 0 if result["summary"]["failures"]["total"] == 0 and not result.get("stopped_by") else 1
