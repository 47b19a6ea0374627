"""The CPU seconds one backend's probes of a cold sweep take in one process, and for JAX how
many of them XLA's compiler takes: a floor for any rewrite of the probes that still compiles
and runs what the user runs.

    python benchmarks/bench_probe_cpu.py --backend jax          # every JAX cell of the sweep
    python benchmarks/bench_probe_cpu.py --backend tensorflow --mode xla
    PYTHONPATH=<another checkout> python benchmarks/bench_probe_cpu.py ...  # that code's probes

Runs the cells that ``precision-explorer kernels`` probes for the backend (every catalog op x
TensorFlow's float dtypes, CPU, in the backend's modes), one after another in this process, each
as a probe worker probes it (``bench_catalog_sweep.sweep_cells``: with the workaround search),
under the probe workers' XLA flags, after the worker's own setup (the framework imported).
Printed: cells and their statuses, the CPU seconds of this process for all of them, and for JAX
the compilations it hands to XLA (``jax._src.compiler.backend_compile_and_load``), the CPU
seconds while inside them, and those divided by the cores: the wall seconds the compilations
alone need with every core busy.

Measured 2026-12-02 on the 2-core development machine, nothing else running (the machine's
other load varied: compare figures measured back to back):

    --backend jax (jax 0.10.2, 4095b07): 2,560 cells (2,200 ok, 64 fallback, 4 wrong_result,
        180 no_kernel, 80 error, 32 unsupported_dtype), 96.5 CPU s; 2,784 compilations, 53.1
        CPU s compiling: 26.5 s of wall time on 2 cores for JAX's compilations alone; again
        later (through sweep_cells; the same cells): 125.3 CPU s, 2,784 compilations,
        68.6 CPU s compiling, 34.3 s on 2 cores
    --backend tensorflow --mode xla (TensorFlow 2.21), 0c27a7c and this file's commit taken in
        turn (``PYTHONPATH`` a checkout of 0c27a7c for the first): 20.5 -> 16.7, 20.8 -> 18.5
        CPU s (4095b07: XLA probes lower to HLO only when the run raised), 1,280 cells, the same
        statuses (499 ok, 32 fallback, 1 wrong_result, 37 no_kernel, 29 error, 682
        unsupported_dtype: the probes' own statuses, before the sweep's rows weigh them against
        the registry).  Before the probes here took the registry's kernel places (as the
        workers do), 0c27a7c and 1df4005 in turn: 18.0 -> 15.8, 17.8 -> 14.9 CPU s
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any


def _count_jax_compilations() -> dict[str, Any]:
    """Wrap JAX's call into XLA's compiler; the returned dict counts calls and CPU seconds."""
    from jax._src import compiler

    compiling: dict[str, Any] = {"calls": 0, "cpu_s": 0.0}
    original = compiler.backend_compile_and_load

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            compiling["calls"] += 1
            compiling["cpu_s"] += time.process_time() - start

    compiler.backend_compile_and_load = timed
    return compiling


def measure(backend: str, modes: list[str] | None, dtypes: list[str] | None) -> dict[str, Any]:
    from bench_catalog_sweep import sweep_cells  # this directory is on sys.path when run as a script

    from explorer.backends import get_backend
    from explorer.runtime.probe import init_worker, probe_xla_flags

    init_worker(backend, probe_xla_flags())
    compiling = _count_jax_compilations() if backend == "jax" else None
    modes = modes or list(get_backend(backend).modes)
    statuses: dict[str, int] = {}
    start = time.process_time()
    for _, record in sweep_cells(backend, modes, dtypes):
        statuses[record["status"]] = statuses.get(record["status"], 0) + 1
    result: dict[str, Any] = {
        "backend": backend,
        "modes": modes,
        "cells": sum(statuses.values()),
        "statuses": statuses,
        "total_cpu_s": round(time.process_time() - start, 1),
    }
    if compiling is not None:
        cores = os.cpu_count() or 1
        result.update(
            compilations=compiling["calls"],
            compile_cpu_s=round(compiling["cpu_s"], 1),
            cores=cores,
            compile_wall_floor_s=round(compiling["cpu_s"] / cores, 1),
        )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="jax", help="a backend name (default jax)")
    parser.add_argument("--mode", action="append", help="default: the backend's modes")
    parser.add_argument("--dtype", action="append", help="default: TensorFlow's float dtypes, as the sweep")
    args = parser.parse_args()
    print(json.dumps(measure(args.backend, args.mode, args.dtype), indent=1))


if __name__ == "__main__":
    main()
