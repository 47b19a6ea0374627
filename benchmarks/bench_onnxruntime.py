"""ONNX Runtime: what its kernel registry declares, and how many probes agree with it; each
backend's cast beyond a format's range.

    python -m benchmarks.bench_onnxruntime [--write]

Prints the registry's rows (operator x domain x provider x float type), the catalog ops with an
ONNX node, and per format the probes on the CPU provider that agree with the declaration (the
rule of ``tests/test_onnxruntime_backend.py``: a declared kernel runs natively, a missing one
fails with no_kernel or runs through casts the session inserted, a type ONNX's schema refuses is
unsupported_dtype), listing the others; then ``formats --casts``' table of every installed
backend for the float8 formats, float16 and bfloat16.  ``--write`` also writes
``benchmarks/results/onnxruntime.md``.
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import time
from pathlib import Path

#: the formats the probes run in
FORMATS = (
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
)
#: the formats whose casts are measured
CAST_FORMATS = ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")


def agreement() -> tuple[list[str], list[str]]:
    """Lines of the per-format agreement table, and the cells that disagree."""
    from explorer.backends import get_backend
    from explorer.backends.onnxruntime_backend import declared_for_op, disagreement
    from explorer.backends.onnxruntime_graphs import ONNX_CALLS

    backend = get_backend("onnxruntime")
    lines = ["| format | probes | agree | disagree |", "|---|---|---|---|"]
    differ = []
    for fmt in FORMATS:
        agree = 0
        for name in ONNX_CALLS:
            declared = declared_for_op(name, fmt)
            out = backend.run(name, fmt)
            reason = "" if declared is None else disagreement(declared.value, out.status.value, out.detail)
            if reason:
                differ.append(
                    f"- {name} in {fmt}: {reason}: {out.error.splitlines()[0][-160:] if out.error else ''}"
                )
            else:
                agree += 1
        lines.append(f"| {fmt} | {len(ONNX_CALLS)} | {agree} | {len(ONNX_CALLS) - agree} |")
    return lines, differ


def main() -> None:
    """Print the figures (and write them with ``--write``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write benchmarks/results/onnxruntime.md")
    args = parser.parse_args()
    from explorer.backends import get_backend
    from explorer.backends.onnxruntime_backend import declared_kernel_rows
    from explorer.backends.onnxruntime_graphs import ONNX_CALLS, OPSET
    from explorer.queries.cast_behaviour import COLUMNS, cast_behaviours, disagreement

    start = time.perf_counter()
    rows = declared_kernel_rows()
    providers = sorted({r["provider"] for r in rows})
    table, differ = agreement()
    casts = cast_behaviours(list(CAST_FORMATS))
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    out = [
        "# ONNX Runtime: declared kernels, probes, casts",
        "",
        f"`python -m benchmarks.bench_onnxruntime --write`, commit {commit}, {platform.machine()}, "
        f"onnxruntime {get_backend('onnxruntime').version()}, {time.perf_counter() - start:.0f} s.",
        "",
        f"Registry rows (operator x domain x provider x float type): {len(rows)}; providers with kernels: "
        f"{', '.join(providers)}.",
        f"Catalog ops with an ONNX node (opset {OPSET}): {len(ONNX_CALLS)}.",
        "",
        "Probes on CPUExecutionProvider against the registry:",
        "",
        *table,
        "",
        *(differ or ["(every probe agrees)"]),
        "",
        "Casts (every installed backend, measured):",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
        *("| " + " | ".join(str(c.get(k, "")) for k in COLUMNS) + " |" for c in casts),
        "",
        *(line for line in (disagreement(casts, f) for f in CAST_FORMATS) if line),
    ]
    text = "\n".join(out) + "\n"
    print(text)
    if args.write:
        path = Path(__file__).parent / "results" / "onnxruntime.md"
        path.write_text(text, encoding="utf-8")
        print(f"written: {path}")


if __name__ == "__main__":
    main()
