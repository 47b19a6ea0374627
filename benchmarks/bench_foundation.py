"""Foundation figures: import time, enumeration, one run per backend, sandbox round trip."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable


def _median_seconds(func: Callable[[], object], repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _import_seconds() -> float:
    code = "import time; t = time.perf_counter(); import explorer; print(time.perf_counter() - t)"
    runs = [
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
        for _ in range(5)
    ]
    return min(runs)


def run() -> list[tuple[str, float, str]]:
    from explorer.backends import get_backend
    from explorer.formats import all_values
    from explorer.runtime.sandbox import Sandbox

    figures = [("import explorer (best of 5, fresh interpreter)", _import_seconds() * 1e3, "ms")]
    figures.append(
        ("all_values(float16): 65,536 values", _median_seconds(lambda: all_values("float16")) * 1e6, "us")
    )
    for name, fmt in (("numpy", "float16"), ("emulated", "bfloat16"), ("tensorflow", "float16")):
        backend = get_backend(name)
        backend.run("exp", fmt)  # warm: imports and first-call set-up
        seconds = _median_seconds(lambda b=backend, f=fmt: b.run("exp", f))
        figures.append((f"{name}.run('exp', {fmt}) warm, in process", seconds * 1e3, "ms"))
    box = Sandbox()
    try:
        start = time.perf_counter()
        box.run("tensorflow", "exp", "float16")
        figures.append(
            ("sandbox: first tensorflow probe (spawn + import TF)", time.perf_counter() - start, "s")
        )
        seconds = _median_seconds(lambda: box.run("tensorflow", "exp", "float16"))
        figures.append(("sandbox: tensorflow probe, warm worker", seconds * 1e3, "ms"))
    finally:
        box.close()
    return figures
