"""``precision-explorer blocks``: what each block format (MXFP8/6/4, MXINT8, NVFP4) costs on a tensor."""

from __future__ import annotations

import argparse
from typing import Any

VERB = "blocks"
HELP = (
    "error of the block-scaled formats (OCP MX, NVFP4) on a tensor: relative error, flushes to zero, "
    "saturation, the effect of the block size, against per-tensor float8/float4 scaling"
)
JSON_RESULT = (
    "one object: {tensor, shape, formats: [{format, scaling ('block'), block_size, bits_per_element, "
    "rel_rms, rel_max, norm_rel, flushed, saturated, flushed_block_max, saturated_block_max, "
    "blocks_flushing, blocks_saturating, elements, nonfinite}], per_tensor: [the same per --dtype, scaling "
    "'per_tensor'], block_sizes: [{format, block_size, bits_per_element, rel_rms, norm_rel}]}; "
    "relative errors over the finite nonzero elements whose quantized value is finite (null when "
    "none is), shares of elements in [0, 1]; nonfinite: the share of finite elements quantized to "
    "NaN (an MX block scale beyond E8M0's 2**127)"
)
NOTES = (
    "--tensor FILE.npy is read as hostile input: a plain .npy array of real numbers (no pickles, "
    "no .npz), at most 256 MiB and 64 Mi elements, its header checked before anything is allocated; "
    "the file is only read, a piece of at most 1 Mi elements at a time. Blocks run along its last axis."
)

_COLUMNS = (
    "format",
    "scaling",
    "block_size",
    "bits_per_element",
    "rel_rms",
    "rel_max",
    "norm_rel",
    "flushed",
    "saturated",
    "flushed_block_max",
    "saturated_block_max",
    "nonfinite",
)


def block_format_name(text: str) -> str:
    """argparse ``type=`` for ``--format``: a block format name, as its canonical name."""
    from explorer.blocks import block_format

    try:
        return block_format(text).name
    except (ValueError, TypeError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The verb's options (names and numbers checked by argparse)."""
    from explorer.analysis.block_errors import SYNTHETIC_TENSORS
    from explorer.blocks import MAX_BLOCK_SIZE
    from explorer.cli import add_dtype_argument, add_json_argument, bounded_int
    from explorer.queries.blocks import DEFAULT_BLOCK_SIZES, DEFAULT_PER_TENSOR

    parser.add_argument(
        "--format",
        action="append",
        type=block_format_name,
        metavar="BLOCK_FORMAT",
        help="block format (mxfp8_e4m3, mxfp8_e5m2, mxfp6_e2m3, mxfp6_e3m2, mxfp4_e2m1, mxint8, nvfp4); "
        "repeat for several; default: all",
    )
    parser.add_argument(
        "--tensor",
        default="normal",
        metavar="TENSOR",
        help=f"{', '.join(SYNTHETIC_TENSORS)} (256 x 256, seeded) or FILE.npy; default: normal",
    )
    parser.add_argument(
        "--block-size",
        action="append",
        type=bounded_int(1, MAX_BLOCK_SIZE),
        metavar="N",
        help="block sizes to compare each format at; repeat for several; default: "
        + ", ".join(map(str, DEFAULT_BLOCK_SIZES)),
    )
    add_dtype_argument(parser, default=f"{', '.join(DEFAULT_PER_TENSOR)} (per-tensor scaling baselines)")
    parser.add_argument(
        "--seed", type=bounded_int(0, 2**32 - 1), default=0, help="seed of the synthetic tensors; default: 0"
    )
    add_json_argument(parser)


def _size_table(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """rel_rms per format (rows) and block size (columns)."""
    sizes = sorted({r["block_size"] for r in rows})
    table: dict[str, dict[str, Any]] = {}
    for r in rows:
        table.setdefault(r["format"], {"format": r["format"]})[f"rel_rms@{r['block_size']}"] = r["rel_rms"]
    return list(table.values()), ["format", *(f"rel_rms@{s}" for s in sizes)]


def run(args: argparse.Namespace) -> int:
    """Compare the formats on the tensor; print the tables or the JSON."""
    from explorer.blocks import BLOCK_FORMAT_NAMES
    from explorer.cli import print_json, print_table, safe_text, unique
    from explorer.queries.blocks import DEFAULT_BLOCK_SIZES, DEFAULT_PER_TENSOR, compare_blocks

    result = compare_blocks(
        args.tensor,
        unique(args.format) or BLOCK_FORMAT_NAMES,
        block_sizes=sorted(set(args.block_size or DEFAULT_BLOCK_SIZES)),
        per_tensor=unique(args.dtype) or DEFAULT_PER_TENSOR,
        seed=args.seed,
    ).to_dict()
    if args.json:
        print_json(result)
        return 0
    shape = " x ".join(map(str, result["shape"])) or "scalar"
    print(f"tensor: {safe_text(result['tensor'])} ({shape}); blocks along the last axis")
    print_table(result["formats"] + result["per_tensor"], list(_COLUMNS))
    print("\nrelative error (RMS) by block size:")
    rows, columns = _size_table(result["block_sizes"])
    print_table(rows, columns)
    return 0
