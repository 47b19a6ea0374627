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
    "bits_per_element: the element's bits plus its share of the block scale). With --casts each "
    "element object also has casts: one object per installed backend with a cast to the format "
    "(backend, version, above_max, inf, below_subnormal: inf/nan/saturate/mixed, round/flush/other; "
    "note, inputs, outputs: the values cast and what came back), and cast_disagreement (words, or '')"
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
    parser.add_argument(
        "--casts",
        action="store_true",
        help="measure what each installed backend's cast to each format does above its max, for inf "
        "and below its smallest subnormal (imports every framework, TensorFlow in a worker: seconds)",
    )
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
    casts = _casts([r["name"] for r in element_rows]) if getattr(args, "casts", False) else None
    if casts is not None:
        from explorer.queries.cast_behaviour import disagreement

        for row in element_rows:
            row["casts"] = [c for c in casts if c["format"] == row["name"]]
            row["cast_disagreement"] = disagreement(casts, row["name"])
    if args.json:
        print_json(element_rows + block_rows)
        return 0
    if element_rows:
        shown = ("kind", "bits_per_element", "casts", "cast_disagreement")
        print_table(element_rows, [c for c in element_rows[0] if c not in shown])
    if casts is not None:
        print_casts(casts, [r["name"] for r in element_rows])
    if block_rows:
        if element_rows:
            print("\nblock formats (bits_per_element: the element's bits plus its share of the scale):")
        print_table(block_rows, list(_BLOCK_COLUMNS))
    return 0


def _casts(names: list[str]) -> list[dict[str, Any]]:
    from explorer.queries.cast_behaviour import cast_behaviours

    return cast_behaviours(names)


def print_casts(casts: list[dict[str, Any]], names: list[str]) -> None:
    """The measured cast behaviours as a table, then one line per format where backends disagree."""
    from explorer.cli import print_table
    from explorer.queries.cast_behaviour import COLUMNS, disagreement

    print(
        "\ncasts (measured: each backend's cast of values above max, of inf, of values below the "
        "smallest subnormal):"
    )
    if not casts:
        print("no installed backend has a cast to these formats")
        return
    print_table(casts, list(COLUMNS))
    lines = [line for line in (disagreement(casts, n) for n in names) if line]
    for line in lines:
        print(line)
