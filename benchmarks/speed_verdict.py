"""Does a speed verdict hold when the machine gets busier?  ``precision-explorer speed --op matmul
--dtype float16 --backend torch`` (the query function it calls, :func:`explorer.queries.speed.speed`)
run twice: once as the machine is, once with two busy-loop processes beside it (started with
multiprocessing, killed after).  Per cell it prints the ratio to float32, its signed-rank
interval, the verdict, the load average and the CPU time the worker got per wall second; the two
runs' verdicts must agree or one be ``undecided``, never opposite (exit status 1 otherwise).

    python -m benchmarks.speed_verdict     # prints both runs, writes benchmarks/results/speed_verdict.md

"As the machine is" is not necessarily idle on a shared machine: the loads measured are printed
with each run.
"""

from __future__ import annotations

import multiprocessing
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results" / "speed_verdict.md"
#: busy-loop processes started beside the second run
BUSY_PROCESSES = 2
OPPOSITE = {("faster", "slower"), ("slower", "faster")}


def busy_loop() -> None:
    """Spin until killed."""
    while True:
        pass


def run_once(label: str) -> tuple[list[Any], list[str], tuple[float, ...]]:
    """The query's rows, its condition lines and the load averages just before it."""
    from explorer.queries.speed import speed
    from explorer.runtime.sandbox import Sandbox

    loads = os.getloadavg()
    sandbox = Sandbox()  # a fresh worker for each run
    try:
        result = speed(
            ops=["matmul"], dtypes=["float16"], backends=["torch"], modes=["eager"], sandbox=sandbox
        )
    finally:
        sandbox.close()
    print(f"\n{label}: load averages before {loads[0]:.2f} {loads[1]:.2f} {loads[2]:.2f}")
    for line in table(result.rows):
        print(line)
    for line in result.conditions():
        print(line)
    return result.rows, result.conditions(), loads


def table(rows: list[Any]) -> list[str]:
    """Markdown rows: one per float16 cell."""
    lines = [
        "| shapes | float32 ms | float16 ms | ratio | interval | verdict | rounds | load "
        "| CPU s per wall s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.dtype == "float32":
            continue
        interval = "-" if r.ratio_low is None else f"{r.ratio_low:.3g}x-{r.ratio_high:.3g}x"
        verdict = r.verdict + (f" ({r.verdict_reason})" if r.verdict_reason else "")
        base = "-" if r.float32_median_seconds is None else f"{r.float32_median_seconds * 1e3:.4g}"
        mine = "-" if r.median_seconds is None else f"{r.median_seconds * 1e3:.4g}"
        ratio = "-" if r.ratio_to_float32 is None else f"{r.ratio_to_float32:.3g}x"
        load = "-" if r.load is None else f"{r.load:.2f}"
        share = "-" if r.cpu_share is None else f"{r.cpu_share:.2f}"
        cells = (r.shapes, base, mine, ratio, interval, verdict, r.rounds, load, share)
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return lines


def main() -> int:
    """Both runs, the comparison, the results file."""
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    plain_rows, plain_notes, plain_loads = run_once("as the machine is")
    context = multiprocessing.get_context("spawn")
    busy = [context.Process(target=busy_loop, daemon=True) for _ in range(BUSY_PROCESSES)]
    for process in busy:
        process.start()
    try:
        time.sleep(5.0)  # the busy loops running before the timing starts
        busy_rows, busy_notes, busy_loads = run_once(f"with {BUSY_PROCESSES} busy loops beside it")
    finally:
        for process in busy:
            process.kill()
        for process in busy:
            process.join(5)
    verdicts = {r.shapes: r.verdict for r in plain_rows if r.dtype != "float32"}
    clashes = [
        f"{r.shapes}: {verdicts.get(r.shapes)} then {r.verdict}"
        for r in busy_rows
        if r.dtype != "float32" and (verdicts.get(r.shapes), r.verdict) in OPPOSITE
    ]
    outcome = "opposite verdicts: " + "; ".join(clashes) if clashes else "no opposite verdicts"
    print(f"\n{outcome}")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout
    text = [
        "# A speed verdict, as the machine is and with two busy loops beside it",
        "",
        f"`python -m benchmarks.speed_verdict` at commit {commit.strip()}, started {started}, "
        f"{platform.machine()}, {os.cpu_count()} logical CPUs, Python {sys.version.split()[0]}; "
        "`speed(ops=['matmul'], dtypes=['float16'], backends=['torch'], modes=['eager'])`, a fresh worker "
        "per run. The machine is shared with other engineers: it was not idle in either run.",
        "",
        f"## As the machine is (load averages before: {' '.join(f'{v:.2f}' for v in plain_loads)})",
        "",
        *table(plain_rows),
        "",
        *plain_notes,
        "",
        f"## With {BUSY_PROCESSES} busy-loop processes (load averages before: "
        f"{' '.join(f'{v:.2f}' for v in busy_loads)})",
        "",
        *table(busy_rows),
        "",
        *busy_notes,
        "",
        f"Outcome: {outcome}.",
        "",
    ]
    RESULTS.write_text("\n".join(text))
    print(f"wrote {RESULTS}")
    return 1 if clashes else 0


if __name__ == "__main__":
    sys.exit(main())
