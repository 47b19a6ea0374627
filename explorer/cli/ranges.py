"""``precision-explorer ranges``: where a format overflows and underflows, for an op's inputs."""

from __future__ import annotations

import argparse

VERB = "ranges"
HELP = "number line of a format, or which inputs of an op overflow/underflow/go subnormal/NaN"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The verb's options (numbers checked by argparse; names by :func:`check_names`)."""
    from explorer.analysis.ranges import MAX_SAMPLES
    from explorer.cli import bounded_int

    parser.add_argument("--dtype", required=True, help="format, e.g. float16, bf16, e4m3")
    parser.add_argument(
        "--op",
        help="elementwise op (unary: input intervals; binary: 2-D map counts); "
        "without it: the format's number line",
    )
    parser.add_argument(
        "--backend",
        default=None,
        help="numpy, tensorflow, emulated or torch (default: numpy where it has the format, else emulated)",
    )
    parser.add_argument(
        "--samples",
        type=bounded_int(2, MAX_SAMPLES),
        default=None,
        help=f"values per sign for formats wider than 16 bits (default 32768, 2 to {MAX_SAMPLES:_})",
    )
    parser.add_argument("--device", default="CPU", help="CPU (default) or GPU")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def check_names(args: argparse.Namespace) -> None:
    """Check format, op, backend and device names before any work; ValueError names the valid ones."""
    from explorer.backends import get_backend, normalize_device
    from explorer.formats import resolve
    from explorer.ops import get_op

    args.dtype = resolve(args.dtype).name
    args.device = normalize_device(args.device)
    if args.op is not None:
        args.op = get_op(args.op).name
    if args.backend is not None:
        args.backend = get_backend(args.backend).name


def run(args: argparse.Namespace) -> int:
    from explorer.analysis import ranges
    from explorer.backends import get_backend
    from explorer.cli import print_json, print_table, safe_text
    from explorer.formats import resolve
    from explorer.ops import get_op

    check_names(args)
    fmt = resolve(args.dtype)
    line = ranges.number_line(fmt)
    if args.op is None:
        if args.json:
            print_json({"format": fmt.name, "number_line": line.to_dict()})
        else:
            print_table(
                [{"boundary": k, "value": v} for k, v in line.to_dict().items() if k != "format"],
                ["boundary", "value"],
            )
        return 0
    op = get_op(args.op)
    backend = args.backend
    if backend is None:
        backend = "numpy" if get_backend("numpy").supports_format(fmt) else "emulated"
    samples = args.samples if args.samples is not None else ranges.DEFAULT_SAMPLES
    if op.elementwise and op.arity == 2:
        bmap = ranges.binary_map(op, fmt, backend, device=args.device)
        data = bmap.to_dict()
        data["thresholds"] = {}
        data["regions"] = []
        ran = bmap.kinds.size > 0
        if args.json:
            print_json(data)
        else:
            print(
                f"{op.name} in {fmt.name} on {bmap.backend}: {bmap.status} "
                f"({'every pair' if bmap.exhaustive else f'{bmap.a.size}x{bmap.b.size} grid'})"
            )
            print_table([{"kind": k, "pairs": v} for k, v in bmap.counts().items()], ["kind", "pairs"])
        return 0 if ran else 1
    regions = ranges.op_regions(op, fmt, backend, samples, device=args.device)
    data = regions.to_dict()
    data["number_line"] = line.to_dict()
    if args.json:
        print_json(data)
    else:
        how = "every finite value" if regions.exhaustive else "sampled, boundaries refined"
        print(
            f"{op.name} in {fmt.name} on {regions.backend}: {regions.status}, "
            f"{regions.inputs.size} inputs ({how})"
        )
        if regions.error:
            print(f"  {safe_text(regions.error)}")
        print_table([i.to_dict() for i in regions.intervals], ["kind", "lo", "hi", "count"])
        for kind, t in regions.thresholds.items():
            for side in ("negative", "positive"):
                if t[side]:
                    print(f"{kind:>9} {side}: [{t[side]['min']!r}, {t[side]['max']!r}]")
    return 0 if regions.ran else 1
