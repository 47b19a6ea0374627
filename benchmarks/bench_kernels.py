"""Kernel availability: the declared matrix and the probe sweep (cold and cached).

    python -m benchmarks.run kernels

Cold = an empty cache directory (a fresh temporary PX_CACHE_DIR); the TensorFlow probe
workers start with the sweep, so their TensorFlow import is counted (the command-line
figures, cold and warm in fresh processes, are in ``bench_catalog_sweep.py``).
"""

from __future__ import annotations

import os
import tempfile
import time


def run() -> list[tuple[str, float, str]]:
    from explorer.ops import catalog
    from explorer.queries.availability import availability
    from explorer.runtime.registry import Registry, get_registry
    from explorer.runtime.sandbox import default_sandbox

    figures: list[tuple[str, float, str]] = []
    saved = os.environ.get("PX_CACHE_DIR")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["PX_CACHE_DIR"] = tmp
        try:
            start = time.perf_counter()
            reg = get_registry(refresh=True)
            figures.append(
                ("registry read in the sandbox (incl. TF import in worker)", time.perf_counter() - start, "s")
            )
            start = time.perf_counter()
            reg = Registry(reg.data)
            figures.append(("registry parse (in-process)", time.perf_counter() - start, "s"))
            start = time.perf_counter()
            frame = reg.matrix()
            matrix_s = time.perf_counter() - start
            figures.append(("declared matrix: all ops x float dtypes x device types", matrix_s, "s"))
            figures.append(("declared matrix cells", float(len(frame)), "cells"))
            figures.append(("registered ops (OpDefs)", float(len(reg.ops)), "ops"))
            figures.append(("ops with at least one kernel", float(len(reg.ops_with_kernels())), "ops"))
            default_sandbox().warm("tensorflow")
            for label, backends in (
                ("tensorflow", ["tensorflow"]),
                ("numpy+emulated", ["numpy", "emulated"]),
            ):
                start = time.perf_counter()
                res = availability(backends=backends, modes=["eager", "xla"], progress=False, registry=reg)
                figures.append(
                    (
                        f"probe sweep cold, {label}, whole catalog, CPU, eager+xla",
                        time.perf_counter() - start,
                        "s",
                    )
                )
                figures.append((f"  probes run ({label})", float(res.probed), "probes"))
            start = time.perf_counter()
            res = availability(backends=["tensorflow", "numpy", "emulated"], progress=False, registry=reg)
            figures.append(
                ("whole availability from cache (registry + probe rows)", time.perf_counter() - start, "s")
            )
            figures.append(("  rows", float(len(res.rows)), "rows"))
            figures.append(("  declared/probed disagreements", float(len(res.disagreements())), "rows"))
            figures.append(("catalog ops", float(len(catalog())), "ops"))
        finally:
            if saved is None:
                os.environ.pop("PX_CACHE_DIR", None)
            else:
                os.environ["PX_CACHE_DIR"] = saved
    return figures
