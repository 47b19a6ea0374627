"""``precision-explorer bits``: a value in a format, bit by bit."""

from __future__ import annotations

import argparse
import re

VERB = "bits"
HELP = "sign/exponent/mantissa bits, exact value, neighbours and rounding error of a value in a format"
JSON_RESULT = (
    "a list of rows: one per --dtype (format, input, value, exact, bits, hex, sign, exponent and "
    "mantissa fields, kind, below, above, rounding_error, relative_error, explanation: why the "
    "format stores that value); with --table one per code point of each format (format, code, "
    "bits, hex, value, class, sign, exponent_field, "
    "mantissa_field)"
)


def value_text(text: str) -> str:
    """An argparse ``type=`` for VALUE: :func:`explorer.analysis.bits.check_value_text` (short
    enough, decimal exponent in range) as an argparse error.

    >>> value_text("1e-5")
    '1e-5'
    """
    from explorer.analysis.bits import check_value_text

    try:
        return check_value_text(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The verb's options."""
    from explorer.cli import add_dtype_argument, add_json_argument

    # let VALUE be a negative number in any notation (-1.5e-5, -inf), not only -1.5
    parser._negative_number_matcher = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-inf$")
    parser.add_argument(
        "value",
        nargs="?",
        type=value_text,
        help="the value, e.g. 0.1, 65519, -1e-5, inf (decimal strings give an exact rounding error)",
    )
    add_dtype_argument(parser, required=True)
    parser.add_argument(
        "--table", action="store_true", help="list every value of each format (8 bits or fewer) instead"
    )
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    """Print the value's bits in each format (or ``--table``: every value of small formats)."""
    from explorer.analysis.bits import inspect_value, value_table
    from explorer.cli import print_json, print_table, unique
    from explorer.formats import resolve

    formats = [resolve(d) for d in unique(args.dtype)]
    if args.table:
        tables = [(fmt, value_table(fmt)) for fmt in formats]  # every format checked before output
        if args.json:
            print_json([{"format": fmt.name, **r} for fmt, t in tables for r in t.to_dict(orient="records")])
            return 0
        for i, (fmt, table) in enumerate(tables):
            if len(tables) > 1:
                print(("\n" if i else "") + f"{fmt.name}:")
            print_table(table.to_dict(orient="records"), list(table.columns))
        return 0
    if args.value is None:
        raise ValueError("give a VALUE (e.g. 0.1), or --table for every value of an 8-bit format")
    infos = [inspect_value(args.value, fmt).to_dict() for fmt in formats]
    if args.json:
        print_json(infos)
        return 0
    for i, info in enumerate(infos):
        if i:
            print()
        for key, value in info.items():
            print(f"{key:>15}  {value}")
    return 0
