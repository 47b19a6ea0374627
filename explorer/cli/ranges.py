"""``precision-explorer ranges``: where a format overflows and underflows, for an op's inputs."""

from __future__ import annotations

import argparse
from typing import Any

VERB = "ranges"
HELP = "number line of a format, or which inputs of an op overflow/underflow/go subnormal/NaN"
EXIT_1 = "for some --dtype none of the requested backends could run the op (e.g. numpy has no float8)"
JSON_RESULT = (
    "a list of entries. Without --op one per --dtype: {format, number_line (exact bounds: zero_bound, "
    "overflow_bound, each with _included, and underflow_rule, overflow_rule in words)}. With --op one "
    "per --dtype x --device x --backend: {format, op, backend, device, status, error, exhaustive, "
    "counts, thresholds: {kind: {count, at_zero, positive, negative: {min, max (exact first and last "
    "inputs, included), count, runs, before, after (the neighbouring inputs of other kinds), rule}, "
    "returns, returns_distinct}}, regions, number_line, ...} (binary ops: shape and counts of the 2-D "
    "map, empty thresholds and regions). Without --op, --casts adds casts to each entry: what each "
    "installed backend's cast to the format does above its max, for inf and below its smallest "
    "subnormal (as `formats --casts`), and cast_disagreement"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The verb's options (numbers and names checked by argparse)."""
    from explorer.cli import (
        add_backend_argument,
        add_device_argument,
        add_dtype_argument,
        add_json_argument,
        add_op_argument,
        bounded_int,
    )
    from explorer.queries.ranges import MAX_SAMPLES

    add_dtype_argument(parser, required=True)
    add_op_argument(
        parser,
        repeat=False,
        what="elementwise op (unary: input intervals; binary: 2-D map counts)",
        default="each format's number line",
    )
    add_backend_argument(parser, default="numpy where it has the format, else emulated")
    parser.add_argument(
        "--samples",
        type=bounded_int(2, MAX_SAMPLES),
        default=None,
        help=f"values per sign for formats wider than 16 bits (default 32768, 2 to {MAX_SAMPLES:_})",
    )
    add_device_argument(parser)
    parser.add_argument(
        "--casts",
        action="store_true",
        help="without --op: also measure what each installed backend's cast to the format does "
        "above its max, for inf and below its smallest subnormal (imports every framework, "
        "TensorFlow in a worker: seconds)",
    )
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    """Print each format's number line, or the op's regions per format x device x backend."""
    from explorer.backends import get_backend
    from explorer.cli import print_json, print_table, safe_text, unique
    from explorer.formats import resolve
    from explorer.ops import get_op
    from explorer.queries import ranges
    from explorer.queries.ranges import value_text

    if getattr(args, "casts", False) and args.op is not None:
        raise ValueError("--casts shows each format's casts beside its number line: leave out --op")
    formats = [resolve(d) for d in unique(args.dtype)]
    devices = unique(args.device) or ["CPU"]
    if args.op is None:
        lines = [ranges.number_line(fmt).to_dict() for fmt in formats]
        casts = None
        if getattr(args, "casts", False):
            from explorer.queries.cast_behaviour import cast_behaviours, disagreement

            casts = cast_behaviours([fmt.name for fmt in formats])
        if args.json:
            print_json(
                [
                    {"format": line["format"], "number_line": line}
                    | (
                        {}
                        if casts is None
                        else {
                            "casts": [c for c in casts if c["format"] == line["format"]],
                            "cast_disagreement": disagreement(casts, line["format"]),
                        }
                    )
                    for line in lines
                ]
            )
            return 0
        for i, line in enumerate(lines):
            if len(lines) > 1:
                print(("\n" if i else "") + f"{line['format']}:")
            print_table(
                [
                    {"boundary": k, "value": value_text(v) if isinstance(v, float) else v}
                    for k, v in line.items()
                    if k != "format"
                ],
                ["boundary", "value"],
            )
        if casts is not None:
            from explorer.cli.formats import print_casts

            print_casts(casts, [fmt.name for fmt in formats])
        return 0
    op = get_op(args.op)
    samples = args.samples if args.samples is not None else ranges.DEFAULT_SAMPLES
    entries: list[dict[str, Any]] = []
    status = 0
    for fmt in formats:
        line = ranges.number_line(fmt).to_dict()
        backends = unique(args.backend) or [
            "numpy" if get_backend("numpy").supports_format(fmt) else "emulated"
        ]
        ran = False
        for device in devices:
            if op.elementwise and op.arity == 2:
                for backend in backends:
                    bmap = ranges.binary_map(op, fmt, backend, device=device)
                    ran |= bmap.kinds.size > 0
                    entries.append(_entry(bmap.to_dict(), device, line, binary=bmap))
            else:
                found = ranges.regions_all(op, fmt, backends, samples, device=device)
                for backend in backends:
                    regions = found[backend]
                    ran |= regions.ran
                    entries.append(_entry(regions.to_dict(), device, line, unary=regions))
        if not ran:
            status = 1
    if args.json:
        print_json([{k: v for k, v in e.items() if not k.startswith("_")} for e in entries])
        return status
    for i, e in enumerate(entries):
        if i:
            print()
        where = f"{e['backend']}" + (f" ({e['device']})" if len(devices) > 1 else "")
        if "_binary" in e:
            bmap = e["_binary"]
            grid = "every pair" if bmap.exhaustive else f"{bmap.a.size}x{bmap.b.size} grid"
            print(f"{op.name} in {e['format']} on {where}: {bmap.status} ({grid})")
            if bmap.error:
                print(f"  {safe_text(bmap.error)}")
            print_table([{"kind": k, "pairs": v} for k, v in bmap.counts().items()], ["kind", "pairs"])
            continue
        regions = e["_unary"]
        how = "every finite value" if regions.exhaustive else "sampled, boundaries refined"
        size = regions.inputs.size
        print(f"{op.name} in {e['format']} on {where}: {regions.status}, {size} inputs ({how})")
        if regions.error:
            print(f"  {safe_text(regions.error)}")
        exact = [{**r.to_dict(), "lo": value_text(r.lo), "hi": value_text(r.hi)} for r in regions.intervals]
        print_table(exact, ["kind", "lo", "hi", "count"])
        _print_thresholds(regions.thresholds, e["number_line"])
    return status


def _print_thresholds(thresholds: dict[str, Any], line: dict[str, Any]) -> None:
    """Each kind's rule over the inputs (exact first and last inputs, included; the neighbouring
    inputs of other kinds excluded), what came back there, and the format's exact bounds."""
    from explorer.cli import safe_text
    from explorer.queries.ranges import KIND_DEFINITIONS, threshold_rule

    for kind, t in thresholds.items():
        few = t.get("returns_distinct", 0) == len(t.get("returns", []))
        shown = f"; returns {', '.join(t['returns'])}" if t.get("returns") and few else ""
        print(safe_text(f"{kind}: {threshold_rule(t)}; {t['count']} inputs{shown}"))
        if kind == "flush_to_zero":
            print(f"  ({KIND_DEFINITIONS[kind]})")
    print(f"values: {line['underflow_rule']}; {line['overflow_rule']}")


def _entry(
    data: dict[str, Any], device: str, line: dict[str, Any], binary: Any = None, unary: Any = None
) -> dict[str, Any]:
    """One JSON entry: the analysis' own dict, with its device and the format's number line
    (the ``_``-keys keep the result objects for the text output)."""
    data = {**data, "device": device}
    if binary is not None:
        data.setdefault("thresholds", {})
        data.setdefault("regions", [])
        data["_binary"] = binary
    else:
        data["_unary"] = unary
    data["number_line"] = line
    return data
