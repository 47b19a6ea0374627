"""``precision-explorer formats``: every format and its facts."""

from __future__ import annotations

import argparse

VERB = "formats"
HELP = "list every floating-point format with its bit layout, range and overflow behaviour"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The verb's options."""
    parser.add_argument("names", nargs="*", help="formats to show (default: all); aliases work")
    parser.add_argument("--json", action="store_true", help="print a JSON list")


def run(args: argparse.Namespace) -> int:
    """Print the formats (table or ``--json``); a bad name is a ValueError before any output."""
    from explorer.cli import print_json, print_table
    from explorer.formats import all_formats, resolve

    formats = [resolve(n) for n in args.names] if args.names else list(all_formats())
    rows = [f.to_dict() for f in formats]
    if args.json:
        print_json(rows)
    else:
        print_table(rows, list(rows[0]))
    return 0
