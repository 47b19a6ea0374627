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

Measurements: ``benchmarks/results/probe_cpu.md``.
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
