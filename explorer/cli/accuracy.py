"""``precision-explorer accuracy``: the error of each backend, by two named measures (ulp_steps and
ulp_error, :data:`explorer.queries.accuracy.DEFINITIONS`), against the correctly rounded reference."""

from __future__ import annotations

import argparse
from typing import Any

VERB = "accuracy"
HELP = (
    "error of an elementwise op per backend against float64 correctly rounded to the format: "
    "ulp_steps (representable values apart) and ulp_error (|y - f(x)| / ulp(f(x)))"
)
EXIT_1 = "for some --dtype none of the requested backends could run the op"
JSON_RESULT = (
    "a list, one entry per --dtype x --device: {op, format, device, exhaustive, definitions: "
    "{ulp_steps, ulp_error: one line each}, backends: [one row per backend: backend, status, error, "
    "max_ulp_steps, mean_ulp_steps, max_ulp_error, mean_ulp_error, correctly_rounded_fraction, "
    "n_inputs, exhaustive, n_nan_mismatch], n_disagreements, disagreements: [the first "
    "--disagreements inputs where the backends differ]}"
)

COLUMNS = [
    "backend",
    "status",
    "max_ulp_steps",
    "mean_ulp_steps",
    "max_ulp_error",
    "mean_ulp_error",
    "correctly_rounded_fraction",
    "n_inputs",
    "exhaustive",
    "n_nan_mismatch",
]


#: most disagreeing inputs listed
MAX_DISAGREEMENTS = 100_000


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

    add_op_argument(parser, repeat=False, required=True, what="elementwise op (exp, tanh, add, ...)")
    add_dtype_argument(parser, required=True)
    add_backend_argument(parser, default="numpy, tensorflow, emulated")
    parser.add_argument(
        "--disagreements",
        type=bounded_int(0, MAX_DISAGREEMENTS),
        default=10,
        help=f"how many inputs where backends differ to list (default 10; 0 to {MAX_DISAGREEMENTS:_})",
    )
    add_device_argument(parser)
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    """Print each backend's ULP summary per format x device (table or ``--json``) and the
    first disagreements."""
    from explorer.cli import print_json, print_table, unique
    from explorer.queries.accuracy import DEFINITIONS, accuracy
    from explorer.queries.ranges import DEFAULT_BACKENDS

    backends = tuple(unique(args.backend)) or DEFAULT_BACKENDS
    devices = unique(args.device) or ["CPU"]
    entries: list[dict[str, Any]] = []
    status = 0
    for dtype in unique(args.dtype):
        ran = False
        for device in devices:
            result = accuracy(args.op, dtype, backends, device=device)
            ran |= bool(result.results)
            entries.append(
                {
                    "op": result.op,
                    "format": result.format,
                    "device": device,
                    "exhaustive": result.exhaustive,
                    "definitions": dict(DEFINITIONS),
                    "backends": [b.to_dict() for b in result.backends],
                    "n_disagreements": result.n_disagreements(),
                    "disagreements": result.disagreements(args.disagreements) if args.disagreements else [],
                }
            )
        if not ran:
            status = 1
    if args.json:
        print_json(entries)
        return status
    for i, e in enumerate(entries):
        if i:
            print()
        scope = "every finite value" if e["exhaustive"] else "sampled inputs"
        where = f" on {e['device']}" if len(devices) > 1 else ""
        print(f"{e['op']} in {e['format']}{where} ({scope})")
        print_table(e["backends"], COLUMNS)
        for line in not_run_lines(e["backends"]):
            print(line)
        for line in DEFINITIONS.values():
            print(f"  {line}")
        n = e["n_disagreements"]
        if n:
            shown = e["disagreements"]
            print(f"\n{n} inputs where the backends differ", end="")
            print(f"; first {len(shown)}:" if shown else ".")
            if shown:
                print_table(shown, list(shown[0]))
    return status


def not_run_lines(backends: list[dict[str, Any]]) -> list[str]:
    """Why each backend that did not run did not (its status and the first line of its error),
    one line each, for the table whose columns it leaves empty.

    >>> not_run_lines([{"backend": "numpy", "status": "unsupported_dtype", "max_ulp_steps": None,
    ...                 "error": "numpy has no bfloat16 dtype"},
    ...                {"backend": "emulated", "status": "ok", "max_ulp_steps": 0}])
    ['  numpy did not run (unsupported_dtype): numpy has no bfloat16 dtype']
    """
    from explorer.cli import safe_text

    lines = []
    for b in backends:
        if b.get("status") == "ok" or b.get("max_ulp_steps") is not None:  # it ran: its figures say
            continue
        first = (b.get("error") or "").strip().splitlines()[:1]
        reason = f": {first[0]}" if first else ""
        lines.append(safe_text(f"  {b['backend']} did not run ({b['status']}){reason}"))
    return lines
