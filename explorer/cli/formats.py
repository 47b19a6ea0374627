"""``precision-explorer formats``: every format and its facts, the block formats after them."""

from __future__ import annotations

import argparse
from typing import Any

VERB = "formats"
HELP = "list every floating-point format (bit layout, range, overflow behaviour) and the block formats"
JSON_RESULT = (
    "a list, one object per format: element formats first (kind 'element': name, bits, exponent_bits, "
    "mantissa_bits, bias, max, smallest_normal, smallest_subnormal, eps, has_inf, has_nan, overflow, "
    "bits_per_element), then block formats (kind 'block': name, element, block_size, scale, "
    "tensor_scale, element_bits, scale_bits, element_max, element_smallest, element_emax, source, "
    "bits_per_element: the element's bits plus its share of the block scale)"
)

_BLOCK_COLUMNS = ("name", "element", "block_size", "scale", "tensor_scale", "bits_per_element")


def format_or_block_name(text: str) -> str:
    """argparse ``type=``: a block format name (``mxfp4_e2m1``, ``nvfp4``, ...) or an element
    format name or alias, as its canonical name."""
    from explorer.blocks import block_format
    from explorer.cli import format_name

    try:
        return block_format(text).name
    except (ValueError, TypeError):
        pass
    try:
        return format_name(text)
    except argparse.ArgumentTypeError as exc:
        from explorer.blocks import BLOCK_FORMAT_NAMES

        raise argparse.ArgumentTypeError(f"{exc}; block formats: {', '.join(BLOCK_FORMAT_NAMES)}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The verb's options: formats as NAMES or ``--dtype`` (both may be repeated)."""
    from explorer.cli import add_dtype_argument, add_json_argument

    parser.add_argument(
        "names",
        nargs="*",
        type=format_or_block_name,
        help="formats to show (default: all); aliases work, and block format names (mxfp4_e2m1, nvfp4, ...)",
    )
    add_dtype_argument(parser, default="every format (the same as NAMES)")
    add_json_argument(parser)


def _rows(names: list[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Element rows and block rows for ``names`` (all of both when empty)."""
    from explorer.blocks import BLOCK_FORMAT_NAMES, all_block_formats, block_format
    from explorer.formats import all_formats, resolve

    if names:
        elements = [resolve(n) for n in names if n not in BLOCK_FORMAT_NAMES]
        blocks = [block_format(n) for n in names if n in BLOCK_FORMAT_NAMES]
    else:
        elements, blocks = list(all_formats()), list(all_block_formats())
    element_rows = [{"kind": "element", **f.to_dict(), "bits_per_element": float(f.bits)} for f in elements]
    block_rows = [{"kind": "block", **b.to_dict()} for b in blocks]
    return element_rows, block_rows


def run(args: argparse.Namespace) -> int:
    """Print the formats (tables or ``--json``); names were checked by argparse."""
    from explorer.cli import print_json, print_table, unique

    element_rows, block_rows = _rows(unique([*args.names, *(args.dtype or [])]))
    if args.json:
        print_json(element_rows + block_rows)
        return 0
    if element_rows:
        print_table(element_rows, [c for c in element_rows[0] if c not in ("kind", "bits_per_element")])
    if block_rows:
        if element_rows:
            print("\nblock formats (bits_per_element: the element's bits plus its share of the scale):")
        print_table(block_rows, list(_BLOCK_COLUMNS))
    return 0
