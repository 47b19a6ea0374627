"""``precision-explorer bits``: a value in a format, bit by bit."""

from __future__ import annotations

import argparse
import re

VERB = "bits"
HELP = "sign/exponent/mantissa bits, exact value, neighbours and rounding error of a value in a format"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # let VALUE be a negative number in any notation (-1.5e-5, -inf), not only -1.5
    parser._negative_number_matcher = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-inf$")
    parser.add_argument(
        "value",
        nargs="?",
        help="the value, e.g. 0.1, 65519, -1e-5, inf (decimal strings give an exact rounding error)",
    )
    parser.add_argument("--dtype", required=True, help="format, e.g. float16, bf16, e4m3, fp4")
    parser.add_argument(
        "--table", action="store_true", help="list every value of a format of 8 bits or fewer instead"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    from explorer.analysis.bits import inspect_value, value_table
    from explorer.cli import print_json, print_table

    if args.table:
        table = value_table(args.dtype)
        rows = table.to_dict(orient="records")
        if args.json:
            print_json(rows)
        else:
            print_table(rows, list(table.columns))
        return 0
    if args.value is None:
        raise ValueError("give a VALUE (e.g. 0.1), or --table for every value of an 8-bit format")
    info = inspect_value(args.value, args.dtype)
    if args.json:
        print_json(info.to_dict())
    else:
        for key, value in info.to_dict().items():
            print(f"{key:>15}  {value}")
    return 0
