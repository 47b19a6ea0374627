"""``precision-explorer formats``: every format and its facts."""

from __future__ import annotations

import argparse

VERB = "formats"
HELP = "list every floating-point format with its bit layout, range and overflow behaviour"
JSON_RESULT = (
    "a list, one object per format (name, bits, exponent_bits, mantissa_bits, bias, max, "
    "smallest_normal, smallest_subnormal, eps, has_inf, has_nan, overflow)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The verb's options: formats as NAMES or ``--dtype`` (both may be repeated)."""
    from explorer.cli import add_dtype_argument, add_json_argument, format_name

    parser.add_argument(
        "names", nargs="*", type=format_name, help="formats to show (default: all); aliases work"
    )
    add_dtype_argument(parser, default="every format (the same as NAMES)")
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    """Print the formats (table or ``--json``); names were checked by argparse."""
    from explorer.cli import print_json, print_table, unique
    from explorer.formats import all_formats, resolve

    names = unique([*args.names, *(args.dtype or [])])
    formats = [resolve(n) for n in names] if names else list(all_formats())
    rows = [f.to_dict() for f in formats]
    if args.json:
        print_json(rows)
    else:
        print_table(rows, list(rows[0]))
    return 0
