"""How long a cold sweep's JAX probes spend in XLA's compiler alone: a floor for any rewrite
of the probes that still compiles and runs what the user runs.

    python benchmarks/bench_jax_compile_floor.py            # every JAX cell of the sweep
    python benchmarks/bench_jax_compile_floor.py --mode xla --dtype float16

Runs the JAX cells that ``precision-explorer kernels`` probes (every catalog op x TensorFlow's
float dtypes, CPU, eager and xla; each as a probe worker runs it, ``probe_record`` with its
workaround search) one after another in this process, under the probe workers' XLA flags, and
counts the compilations JAX hands to XLA (``jax._src.compiler.backend_compile_and_load``) and
the CPU seconds of this process while inside them.  Printed: cells, compilations, CPU seconds
compiling and in all, and the compiling CPU seconds divided by the cores: the wall seconds the
compilations alone need with every core busy.

Measured 2026-12-02 (jax 0.10.2, the 2-core development machine, nothing else running), every
JAX cell: 2,560 cells (2,200 ok, 64 fallback, 4 wrong_result, 180 no_kernel, 80 error, 32
unsupported_dtype), 2,784 compilations, 53.1 CPU s compiling of 96.5 CPU s in all: 26.5 s of
wall time on 2 cores for the compilations alone, before any other backend's probes.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any


def measure(modes: list[str], dtypes: list[str] | None) -> dict[str, Any]:
    from jax._src import compiler

    from explorer.analysis.availability import probes_for
    from explorer.analysis.probe import init_worker, probe_record, probe_xla_flags
    from explorer.analysis.registry import get_registry
    from explorer.ops import catalog

    init_worker("jax", probe_xla_flags())
    compiling = {"calls": 0, "cpu_s": 0.0}
    original = compiler.backend_compile_and_load

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            compiling["calls"] += 1
            compiling["cpu_s"] += time.process_time() - start

    compiler.backend_compile_and_load = timed
    probes = probes_for(list(catalog()), dtypes or list(get_registry().float_dtypes), ["jax"], ["CPU"], modes)
    statuses: dict[str, int] = {}
    start = time.process_time()
    for probe in probes:
        status = probe_record(probe)["status"]
        statuses[status] = statuses.get(status, 0) + 1
    total = time.process_time() - start
    cores = os.cpu_count() or 1
    return {
        "cells": len(probes),
        "statuses": statuses,
        "compilations": compiling["calls"],
        "compile_cpu_s": round(compiling["cpu_s"], 1),
        "total_cpu_s": round(total, 1),
        "cores": cores,
        "compile_wall_floor_s": round(compiling["cpu_s"] / cores, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", action="append", choices=["eager", "xla"], help="default: both")
    parser.add_argument("--dtype", action="append", help="default: TensorFlow's float dtypes, as the sweep")
    args = parser.parse_args()
    print(json.dumps(measure(args.mode or ["eager", "xla"], args.dtype), indent=1))


if __name__ == "__main__":
    main()
