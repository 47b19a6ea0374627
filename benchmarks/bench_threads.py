"""PyTorch's intra-op threads for a timed op: one thread against every core, float32 matmul at
64x64 and 512x512 on this machine, the two settings timed in interleaved rounds
(``explorer.runtime.timing.measure_paired``: the thread count set at the start of each call, the
signed-rank interval of the ratio and its verdict), with the load average and the CPU time the
process got.  The speed verbs' default thread count (``explorer.runtime.speed.DEFAULT_THREADS``)
is the setting this benchmark finds faster at both sizes.

    python -m benchmarks.bench_threads      # prints the table, writes benchmarks/results/threads.md
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "threads.md"
SIZES = (64, 512)
#: matmuls per timed call at each size (the thread switch is inside the timed call: both settings pay it)
REPEATS = {64: 200, 512: 2}


def main() -> int:
    """Measure, print and write the table."""
    import torch

    from explorer.runtime.timing import measure_paired

    cores = os.cpu_count() or 1
    lines = [
        "| size | 1 thread (ms) | all cores (ms) | all / 1 | interval | verdict | load before, after "
        "| CPU s per wall s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    verdicts = {}
    for size in SIZES:
        a = torch.randn(size, size)
        b = torch.randn(size, size)
        repeats = REPEATS[size]

        def run(threads: int, a: torch.Tensor = a, b: torch.Tensor = b, repeats: int = repeats) -> None:
            torch.set_num_threads(threads)
            for _ in range(repeats):
                torch.mm(a, b)

        timed = measure_paired(
            {"one": lambda: run(1), "all": lambda: run(cores)},
            "one",
            min_time=1.0,
            max_time=20.0,
            max_count=256,
        )
        ratio = timed.ratios["all"]
        one, every = timed.summaries["one"].median / repeats, timed.summaries["all"].median / repeats
        verdicts[size] = ratio.verdict
        m = timed.machine
        interval = "-" if ratio.low is None else f"{ratio.low:.3g}x-{ratio.high:.3g}x"
        share = m.cpu_share or 0.0
        lines.append(
            f"| {size}x{size} | {one * 1e3:.4g} | {every * 1e3:.4g} | {every / one:.3g}x | {interval} "
            f"({ratio.confidence * 100:.4g}%, {ratio.rounds} rounds) | all cores {ratio.verdict} | "
            f"{m.load_before:.2f}, {m.load_after:.2f} | {share:.2f} |"
        )
        print(lines[-1], flush=True)
    choice = "every core" if all(v == "faster" for v in verdicts.values()) else "1 thread"
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    text = "\n".join(
        [
            "# PyTorch intra-op threads: 1 against every core",
            "",
            f"`python -m benchmarks.bench_threads` at commit {commit}, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())},",
            f"{platform.processor() or platform.machine()}, {cores} logical CPUs, torch {torch.__version__}, "
            f"Python {sys.version.split()[0]}.",
            "Each call: set the thread count, then the matmuls (float32) — "
            + ", ".join(f"{REPEATS[s]} at {s}x{s}" for s in SIZES)
            + "; ms per matmul (median). The two settings are timed in interleaved rounds; the interval is "
            "the signed-rank interval of (all cores / 1 thread).",
            "",
            *lines,
            "",
            f"Default chosen: {choice} (every core only when it is faster at both sizes).",
            "",
        ]
    )
    RESULTS.write_text(text)
    print(f"default: {choice}; wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
