"""Is a low-precision dtype faster here?  The time per call of matmul (two sizes), conv2d (two
sizes), exp, sum, softmax and layer norm in float16, bfloat16 and float8_e4m3fn relative to
float32, for TensorFlow, PyTorch and JAX, eager and compiled (XLA; torch.compile), each cell in
its backend's sandbox worker (``explorer.queries.speed``), and the hardware features detected
here (``explorer.queries.hardware``).

    python benchmarks/bench_speed.py                 # prints the tables, writes benchmarks/results/speed.md
    python benchmarks/bench_speed.py --min-time 0.1 --torch-threads 1
    python -m benchmarks.run speed                   # the same cells, printed as figures

The dtypes of one op and workload are timed in the same worker process, their samples
interleaved (one of each dtype per round), so that a change in the machine's load falls on all of
them alike; the medians themselves still move with the load of a shared machine: the quartiles
are printed beside them, and the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

OPS = ("matmul", "conv2d", "exp", "sum", "softmax", "layer_norm")
DTYPES = ("float16", "bfloat16", "float8_e4m3fn")
BACKENDS = ("tensorflow", "torch", "jax")
MODES = ("eager", "xla", "compile")
FRAMEWORKS = ("tensorflow", "torch", "jax", "jaxlib")
RESULTS = Path(__file__).parent / "results" / "speed.md"


def measure(min_time: float, torch_threads: int | None, progress: bool = True) -> Any:
    """Every cell of the benchmark (``explorer.queries.speed.SpeedResult``)."""
    from explorer.queries.speed import speed

    def show(row: Any) -> None:
        if progress:
            ratio = "" if row.ratio_to_float32 is None else f"{row.ratio_to_float32:.2f}x"
            print(
                f"  {row.backend} {row.mode} {row.op} {row.shapes} {row.dtype}: {row.status} {ratio}",
                flush=True,
            )

    return speed(
        OPS,
        DTYPES,
        BACKENDS,
        MODES,
        min_time=min_time,
        max_time=1.0,
        threads=torch_threads,
        on_row=show,
    )


def run() -> list[tuple[str, float, str]]:
    """The figures for ``python -m benchmarks.run speed``: each cell's ratio to float32."""
    result = measure(min_time=0.1, torch_threads=1, progress=False)
    return [
        (f"{r.backend} {r.mode} {r.op} {r.shapes} {r.dtype} / float32", r.ratio_to_float32, "x")
        for r in result.rows
        if r.dtype != "float32" and r.ratio_to_float32 is not None
    ]


def _cell(row: Any) -> str:
    if row is None:
        return "not measured"
    if row.ratio_to_float32 is None:
        return row.status
    text = f"{row.ratio_to_float32:.2f}x"
    if row.status != "ok":
        text += f" ({row.status})"
    return text + (" slow" if row.slow else "")


def markdown(result: Any, hardware: Any, header: list[str]) -> str:
    """The results page: one table per backend and mode, then the hardware features."""
    lines = ["# Speed per dtype relative to float32", "", *header, ""]
    by_key = {(r.backend, r.mode, r.op, r.shapes, r.dtype): r for r in result.rows}
    groups = list(dict.fromkeys((r.backend, r.mode) for r in result.rows))
    for backend, mode in groups:
        lines += [f"## {backend}, {mode}", ""]
        lines.append("| op | shapes | float32 median (IQR) ms | " + " | ".join(DTYPES) + " |")
        lines.append("|---|---|---|" + "---|" * len(DTYPES))
        loads = list(
            dict.fromkeys((r.op, r.shapes) for r in result.rows if (r.backend, r.mode) == (backend, mode))
        )
        for op, shapes in loads:
            base = by_key.get((backend, mode, op, shapes, "float32"))
            if base is None or base.median_seconds is None:
                f32 = base.status if base is not None else "not measured"
            else:
                q1, q3 = base.q1_seconds * 1e3, base.q3_seconds * 1e3
                f32 = f"{base.median_seconds * 1e3:.4g} ({q1:.4g}-{q3:.4g})"
            cells = [_cell(by_key.get((backend, mode, op, shapes, d))) for d in DTYPES]
            lines.append(f"| {op} | {shapes} | {f32} | " + " | ".join(cells) + " |")
        lines.append("")
    data = hardware.to_dict()
    present = [k for k, v in data["cpu"]["flags"].items() if v]
    absent = [k for k, v in data["cpu"]["flags"].items() if not v]
    lines += [
        "## Hardware features detected here (`precision-explorer hardware`)",
        "",
        f"CPU: {data['cpu']['model']} ({data['cpu']['architecture']}).",
        f"Flags present: {', '.join(present)}.",
        f"Flags looked for and absent: {', '.join(absent)}.",
        "",
        *[f"- {n}" for n in [*data["notes"], *data["library_notes"]]],
        "",
        f"GPUs: {', '.join(g['name'] for g in data['gpus']) or 'none found'}.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure, print the page, write it to benchmarks/results/speed.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-time", type=float, default=0.1, help="timed seconds per cell at least")
    parser.add_argument(
        "--torch-threads", type=int, default=1, help="torch.set_num_threads in its worker (0: default)"
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    from explorer.queries.hardware import hardware
    from explorer.runtime.envcache import environment

    load_before = os.getloadavg()
    start = time.perf_counter()
    result = measure(args.min_time, args.torch_threads or None)
    seconds = time.perf_counter() - start
    load_after = os.getloadavg()
    env = environment()
    versions = env.get("versions", {})
    header = [
        f"Measured with `python benchmarks/bench_speed.py --min-time {args.min_time} --torch-threads "
        f"{args.torch_threads}` on {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
        f"{os.cpu_count()} cores, {result.coverage()} ({seconds:.0f} s in all).",
        f"Load average (1 min) {load_before[0]:.1f} before, {load_after[0]:.1f} after: the machine was "
        "shared with other work, so medians move with the load; compare ratios, and read the quartiles.",
        "Each cell: median seconds per call over repeated calls after a warm-up, the dtypes of a row "
        "timed in turn, one sample of each per round (until "
        f"{args.min_time} s of timed calls and 5 samples, at most 1 s), divided by float32's median for "
        "the same backend, mode and shapes; `slow` when above 1.5x. A status in place of a ratio: the "
        "cell did not run (the backend's own availability verdict for these inputs).",
        f"PyTorch ran with torch.set_num_threads({args.torch_threads}) in its worker"
        + (
            ": with 2 threads on this loaded 2-core machine its OpenMP threads waited for each other "
            "(a float32 64x64 matmul: 40 ms median with 2 threads, 0.007 ms with 1)."
            if args.torch_threads == 1
            else "."
        ),
        "Versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items()) if k in FRAMEWORKS) + ".",
    ]
    page = markdown(result, hardware(), header)
    print(page)
    args.output.write_text(page, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
