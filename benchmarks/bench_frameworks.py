"""Probing the catalog per framework: PyTorch (eager, torch.compile), JAX (op by op, jit), and
reading PyTorch's OpInfo declarations.

    python -m benchmarks.run frameworks

Each figure is a fresh sandbox worker (its framework import counted separately) probing every
catalog op in float16 and bfloat16 on the CPU, as ``precision-explorer kernels`` does; the
torch.compile figure is per op (each run compiles afresh), over a few elementwise ops.  A
framework that is not installed is reported as such, not timed.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
import time
from unittest import mock

#: the formats every sweep below probes
FORMATS = ("float16", "bfloat16")
#: ops timed under torch.compile (a compilation each: about a second apiece on a laptop CPU)
COMPILE_OPS = ("exp", "sin", "add", "mul", "sum", "softmax")


def _sweep(backend: str, mode: str, ops: list[str]) -> tuple[float, float, dict[str, int]]:
    """Seconds to start the worker (framework import), seconds to probe, and status counts."""
    from explorer.runtime.sandbox import Sandbox

    box = Sandbox()
    counts: dict[str, int] = {}
    try:
        start = time.perf_counter()
        box.warm(backend)
        warm = time.perf_counter() - start
        start = time.perf_counter()
        for fmt in FORMATS:
            for op in ops:
                status = box.run(backend, op, fmt, mode=mode, timeout=300).status.value
                counts[status] = counts.get(status, 0) + 1
        return warm, time.perf_counter() - start, counts
    finally:
        box.close()


def _compile_per_op() -> float:
    """Mean seconds per torch.compile run on CPU (compile and run), in this process (Inductor's
    own start-up, the first compilation, not counted)."""
    from explorer.backends.torch_backend import COMPILE, TorchBackend
    from explorer.formats import resolve
    from explorer.ops import get_op

    backend, fmt = TorchBackend(), resolve("float16")

    def once(name: str) -> None:
        op = get_op(name)
        backend._run(op, op.inputs(0), fmt, "CPU", COMPILE)

    once("neg")
    start = time.perf_counter()
    for name in COMPILE_OPS:
        once(name)
    return (time.perf_counter() - start) / len(COMPILE_OPS)


def run() -> list[tuple[str, float, str]]:
    from explorer.ops import catalog

    figures: list[tuple[str, float, str]] = []
    ops = list(catalog())
    for backend, mode, module in (
        ("torch", "eager", "torch"),
        ("jax", "eager", "jax"),
        ("jax", "xla", "jax"),
    ):
        if importlib.util.find_spec(module) is None:
            figures.append((f"{backend} not installed", 0.0, ""))
            continue
        warm, seconds, counts = _sweep(backend, mode, ops)
        label = f"{backend} {mode}, {len(ops)} ops x {'+'.join(FORMATS)}, CPU"
        figures.append((f"{backend} worker start (framework import)", warm, "s"))
        figures.append((f"probe sweep, {label}", seconds, "s"))
        figures.append((f"  per probe ({backend} {mode})", seconds / (len(ops) * len(FORMATS)), "s"))
        for status, n in sorted(counts.items()):
            figures.append((f"  {status} ({backend} {mode})", float(n), "probes"))
    if importlib.util.find_spec("torch") is not None:
        figures.append(("torch.compile per op on CPU (compile + run)", _compile_per_op(), "s"))
        if importlib.util.find_spec("expecttest") is not None:
            from explorer.runtime import torch_declared

            with tempfile.TemporaryDirectory() as tmp, mock.patch.dict(os.environ, {"PX_CACHE_DIR": tmp}):
                try:
                    torch_declared._DATA = None
                    start = time.perf_counter()
                    data = torch_declared.opinfo_data()
                    figures.append(
                        (
                            "OpInfo read in its worker (cold, incl. torch import)",
                            time.perf_counter() - start,
                            "s",
                        )
                    )
                    figures.append(("  OpInfo entries", float(len(data["entries"])), "entries"))
                    torch_declared._DATA = None
                    start = time.perf_counter()
                    torch_declared.opinfo_data()
                    figures.append(("OpInfo from the disk cache", time.perf_counter() - start, "s"))
                finally:
                    torch_declared._DATA = None
    return figures


if __name__ == "__main__":
    for name, value, unit in run():
        print(f"{name:70s} {value:10.3f} {unit}")
