"""The whole-catalog sweep as a user runs it: ``precision-explorer kernels --no-cache --save FILE``.

    python benchmarks/bench_catalog_sweep.py                  # cold, then warm, once each
    python benchmarks/bench_catalog_sweep.py --repeat 2
    python benchmarks/bench_catalog_sweep.py --prove-lowering # XLA: lowering vs compiling, every cell

Cold = a fresh process and an empty cache directory (a new temporary ``PX_CACHE_DIR``:
no probe records, no registry cache, TensorFlow imported in fresh workers).  Warm = a
second fresh process on the same cache directory without ``--no-cache`` (every probe
record read from the store).  Printed: wall seconds and the CPU seconds of the
processes it started, rows, rows per mode and per status.  Timings are wall-clock on
a shared machine: compare figures measured back to back, and the CPU seconds, which
other load changes less.

Measured on the 2-core development machine, shared with other jobs (load average 3-5
while measuring), TensorFlow 2.21, two cold/warm pairs back to back, before and after
issue 9 (XLA probes lowered to HLO, creation-op parameters as arguments, two TensorFlow
probe workers, no Keras import in them, code-generated workarounds):

    before: cold 89.6 s, 97.3 s (81.4, 80.3 CPU s); warm 4.1 s, 4.3 s; 10,800 rows
    after:  cold 42.9 s, 43.9 s (48.9, 49.3 CPU s); warm 3.9 s, 3.9 s; 13,360 rows
            (the 2,560 rows more are the jax backend's, not installed here: not probed)

Where the cold time goes now (one TensorFlow worker's CPU seconds for all 2,560 TensorFlow
probes, measured in-process): ~8 s compiling the XLA workarounds offered for eager cells
without a kernel (igamma, igammac, svd take 0.5-1.4 s each; every offered workaround is run
first), ~4 s lowering to HLO, the rest tracing, eager runs and running the other
workarounds; plus ~4 s per TensorFlow worker to import TensorFlow, ~6 s for the NumPy and
emulated probes, ~4 s in the main process (rows, explanations, the snapshot).

``--prove-lowering`` runs every XLA cell of the catalog (every op x TensorFlow float dtype,
on each device present) both ways, lowered to HLO only (what the probes do) and compiled
and run, and prints every cell whose status, phase, result dtype or error differs.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def sweep(cache_dir: str, save: Path, cold: bool) -> tuple[float, float]:
    """Wall and CPU seconds ``precision-explorer kernels [--no-cache] --save save`` takes in a
    fresh process (CPU: that process and the sandbox workers it started)."""
    command = [sys.executable, "-m", "explorer", "kernels", "--save", str(save)]
    if cold:
        command.insert(4, "--no-cache")
    env = dict(os.environ, PX_CACHE_DIR=cache_dir)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def counts(save: Path) -> dict[str, Any]:
    """Rows, and rows per mode and per (mode, status), of a saved snapshot."""
    rows = json.loads(save.read_text())["rows"]
    return {
        "rows": len(rows),
        "modes": dict(collections.Counter(r["mode"] for r in rows)),
        "statuses": dict(sorted(collections.Counter(f"{r['mode']}:{r['status']}" for r in rows).items())),
    }


def run() -> list[tuple[str, float, str]]:
    """Figures for ``benchmarks/run.py``: one cold and one warm sweep."""
    with tempfile.TemporaryDirectory() as tmp:
        save = Path(tmp) / "sweep.json"
        cache = str(Path(tmp) / "cache")
        cold, cold_cpu = sweep(cache, save, cold=True)
        warm, warm_cpu = sweep(cache, save, cold=False)
        facts = counts(save)
    figures = [
        ("kernels --no-cache --save, whole catalog, cold", cold, "s"),
        ("  CPU seconds (all processes)", cold_cpu, "s"),
        ("kernels --save, whole catalog, warm (from the store)", warm, "s"),
        ("  CPU seconds (all processes)", warm_cpu, "s"),
        ("  rows", float(facts["rows"]), "rows"),
    ]
    figures += [(f"  rows in mode {m}", float(n), "rows") for m, n in facts["modes"].items()]
    return figures


def lowering_mismatches(devices: tuple[str, ...] | None = None) -> tuple[int, list[str]]:
    """Every XLA cell of the catalog run both ways, here: lowered to HLO only, and compiled and
    run.  Returns the number of cells and a line for each whose status, phase, result dtype or
    first error line differs (the fallback device and its detail are compared too)."""
    os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0")  # as in the probe worker
    from explorer.analysis.registry import get_registry
    from explorer.backends import get_backend
    from explorer.ops import catalog

    backend = get_backend("tensorflow")
    cells, mismatches = 0, []
    for device in devices or tuple(backend.devices()):
        for op in catalog():
            for dtype in get_registry().float_dtypes:
                lowered = backend.run(op, dtype, device=device, mode="xla", execute=False)
                ran = backend.run(op, dtype, device=device, mode="xla", execute=True)
                cells += 1
                a, b = _summary(lowered), _summary(ran)
                if a != b:
                    mismatches.append(f"{op} {dtype} {device}: lowered {a} | compiled and run {b}")
    return cells, mismatches


def _summary(outcome: Any) -> tuple[str, str, str | None, str, str | None]:
    """What an XLA probe's record says about a cell (the lowering's own detail left out)."""
    from explorer.backends.tensorflow_backend import LOWERED

    dtype = None if outcome.result is None else str(outcome.result.dtype)
    if outcome.ran and dtype is None:  # lowered: the dtype the traced function returns
        dtype = outcome.extra.get("result_dtype")
    detail = "; ".join(d for d in outcome.detail.split("; ") if d != LOWERED) if outcome.ran else ""
    error = re.sub(r"(__inference_\w+?)_\d+", r"\1_N", outcome.error_first_line)  # a counter per trace
    return outcome.status.value, outcome.phase.value, dtype, error, detail or None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="cold/warm pairs to run (default 1)")
    parser.add_argument(
        "--prove-lowering", action="store_true", help="compare XLA lowering with compiling, every cell"
    )
    args = parser.parse_args()
    if args.prove_lowering:
        start = time.perf_counter()
        cells, mismatches = lowering_mismatches()
        print(f"{cells} XLA cells, {len(mismatches)} mismatches ({time.perf_counter() - start:.0f} s)")
        for line in mismatches:
            print(f"  {line}")
        return
    for attempt in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            save = Path(tmp) / "sweep.json"
            cache = str(Path(tmp) / "cache")
            cold, cold_cpu = sweep(cache, save, cold=True)
            warm, warm_cpu = sweep(cache, save, cold=False)
            facts = counts(save)
        print(
            f"run {attempt + 1}: cold {cold:.1f} s ({cold_cpu:.1f} CPU s), "
            f"warm {warm:.1f} s ({warm_cpu:.1f} CPU s), {facts['rows']} rows"
        )
        print(f"  rows per mode: {facts['modes']}")
        print(f"  rows per mode:status: {facts['statuses']}")


if __name__ == "__main__":
    main()
