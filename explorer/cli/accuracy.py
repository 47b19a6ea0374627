"""``precision-explorer accuracy``: ULP error of each backend against the correctly rounded reference."""

from __future__ import annotations

import argparse

VERB = "accuracy"
HELP = "error in ULPs of an elementwise op per backend, against float64 correctly rounded to the format"

COLUMNS = [
    "backend",
    "status",
    "max_ulp",
    "mean_ulp",
    "correctly_rounded_fraction",
    "n_inputs",
    "exhaustive",
    "n_nan_mismatch",
]


#: most disagreeing inputs the text output lists
MAX_DISAGREEMENTS = 100_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The verb's options (numbers checked by argparse; names by :func:`check_names`)."""
    from explorer.cli import bounded_int

    parser.add_argument("--op", required=True, help="elementwise op, e.g. exp, tanh, add")
    parser.add_argument("--dtype", required=True, help="format, e.g. float16, bf16")
    parser.add_argument(
        "--backend",
        action="append",
        default=None,
        help="backend to measure (repeat for several; default: numpy, tensorflow, emulated)",
    )
    parser.add_argument(
        "--disagreements",
        type=bounded_int(0, MAX_DISAGREEMENTS),
        default=10,
        help=f"how many inputs where backends differ to list (text output; 0 to {MAX_DISAGREEMENTS:_})",
    )
    parser.add_argument("--device", default="CPU", help="CPU (default) or GPU")
    parser.add_argument("--json", action="store_true", help="print a JSON list, one entry per backend")


def check_names(args: argparse.Namespace) -> None:
    """Check op, format, backend and device names before any work; ValueError names the valid ones."""
    from explorer.backends import get_backend, normalize_device
    from explorer.formats import resolve
    from explorer.ops import get_op

    args.op = get_op(args.op).name
    args.dtype = resolve(args.dtype).name
    args.device = normalize_device(args.device)
    if args.backend:
        args.backend = [get_backend(b).name for b in args.backend]


def run(args: argparse.Namespace) -> int:
    """Print each backend's ULP summary (table or ``--json``) and the first disagreements."""
    from explorer.analysis.accuracy import accuracy
    from explorer.analysis.ranges import DEFAULT_BACKENDS
    from explorer.cli import print_json, print_table

    check_names(args)
    backends = tuple(args.backend) if args.backend else DEFAULT_BACKENDS
    result = accuracy(args.op, args.dtype, backends, device=args.device)
    rows = [b.to_dict() for b in result.backends]
    if args.json:
        print_json(rows)
    else:
        scope = "every finite value" if result.exhaustive else "sampled inputs"
        print(f"{result.op} in {result.format} ({scope})")
        print_table(rows, COLUMNS)
        n = result.n_disagreements()
        if n:
            print(f"\n{n} inputs where the backends differ", end="")
            shown = result.disagreements(args.disagreements) if args.disagreements else []
            print(f"; first {len(shown)}:" if shown else ".")
            if shown:
                print_table(shown, list(shown[0]))
    return 0 if result.results else 1
