"""``check_model`` on real Keras architectures on CPU, timed against ``import tensorflow``
(wall and CPU seconds).

    python benchmarks/model_check_speed.py            # MobileNetV2, ResNet50, EfficientNetB0
    python benchmarks/model_check_speed.py mobilenet  # one of them

For each architecture, built locally from ``keras.applications`` with ``weights=None`` (no
download), a fresh ``python`` process: imports explorer and TensorFlow, builds the model, runs
``explorer.check_model(model, x, policies=[as_built, float32, mixed_float16, mixed_bfloat16],
devices=["CPU"])`` on a seeded standard-normal batch of 2, then the same call again in the same
process.  Printed: the first call's wall and CPU seconds, the second call's, the process's peak
RSS (``ru_maxrss``), and each policy's summary sentence.  In the same run, a fresh ``python -c
"import tensorflow"`` is timed (median of 3) and the first call's ratio to it printed.  Results
are written to ``benchmarks/results/model_check_speed.md``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURES = {
    "mobilenet": ("MobileNetV2", (96, 96, 3)),
    "resnet50": ("ResNet50", (64, 64, 3)),
    "efficientnet": ("EfficientNetB0", (96, 96, 3)),
}
POLICIES = ["as_built", "float32", "mixed_float16", "mixed_bfloat16"]
_CHILD = """
import json, resource, sys, time
import numpy as np
import explorer
from explorer.backends.tensorflow_backend import import_tensorflow
import_tensorflow()
import keras
name, shape, policies = sys.argv[1], tuple(json.loads(sys.argv[2])), json.loads(sys.argv[3])
model = getattr(keras.applications, name)(weights=None, input_shape=shape)
x = np.random.default_rng(0).standard_normal((2, *shape)).astype(np.float32)
c0, t0 = time.process_time(), time.perf_counter()
check = explorer.check_model(model, x, policies=policies, devices=["CPU"])
first, first_cpu = time.perf_counter() - t0, time.process_time() - c0
c1, t1 = time.process_time(), time.perf_counter()
again = explorer.check_model(model, x, policies=policies, devices=["CPU"])
second, second_cpu = time.perf_counter() - t1, time.process_time() - c1
print(json.dumps({"first": first, "first_cpu": first_cpu, "second": second, "second_cpu": second_cpu,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "ops": len(check.ops), "summary": check.summary, "same": again.summary == check.summary}))
"""


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="3")
    return env


def import_seconds(repeats: int = 3) -> tuple[float, float]:
    """The median wall and CPU (user + system) seconds of a fresh ``python -c "import tensorflow"``."""
    import resource

    times, cpus = [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", "import tensorflow"], check=True, env=_env(), capture_output=True
        )
        times.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(times), statistics.median(cpus)


def measure(key: str) -> dict[str, Any]:
    """One architecture's figures (a fresh process)."""
    name, shape = ARCHITECTURES[key]
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, name, json.dumps(shape), json.dumps(POLICIES)],
        check=True, env=_env(), capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    figures["process"] = time.perf_counter() - t0
    return figures


def main(argv: list[str]) -> int:
    """Measure, print, write the results file."""
    keys = argv or list(ARCHITECTURES)
    base, base_cpu = import_seconds()
    load = os.getloadavg()[0]
    lines = [
        "# check_model speed on real Keras architectures (CPU)",
        "",
        "Command: `python benchmarks/model_check_speed.py" + "".join(f" {a}" for a in argv) + "`",
        "",
        f"Machine: {os.cpu_count()} CPUs, load average {load:.1f} at the start; "
        f'`python -c "import tensorflow"`: {base:.1f} s wall, {base_cpu:.1f} CPU s (median of 3, same run). '
        "The CPU ratio (the check's CPU s over the import's) is the one the machine's load moves least.",
        f"Policies: {', '.join(POLICIES)}; devices: CPU; batch 2, seeded standard-normal input.",
        "",
        "| architecture | ops | first call s (CPU s) | to import: wall (CPU) | second call s | "
        "peak RSS MiB |",
        "|---|---|---|---|---|---|",
    ]
    sentences = []
    for key in keys:
        f = measure(key)
        name, shape = ARCHITECTURES[key]
        first, first_cpu, second = float(f["first"]), float(f["first_cpu"]), float(f["second"])
        ratio, cpu_ratio, rss = first / base, first_cpu / base_cpu, float(f["peak_rss_mb"])
        print(
            f"{key}: first {first:.1f} s (CPU {first_cpu:.1f} s), {ratio:.2f}x import ({base:.1f} s), "
            f"CPU {cpu_ratio:.2f}x ({base_cpu:.1f} s); second {second:.2f} s; peak RSS {rss:.0f} MiB; "
            f"{f['ops']} ops"
        )
        lines.append(
            f"| {name} {shape[0]}x{shape[1]} | {f['ops']} | {first:.1f} ({first_cpu:.1f}) | "
            f"{ratio:.2f}x ({cpu_ratio:.2f}x) | {second:.2f} | {rss:.0f} |"
        )
        sentences.append(f"\n## {name}: summary per policy\n")
        for sentence in f["summary"]:
            print(f"  {sentence}")
            sentences.append(f"- {sentence}")
    text = "\n".join([*lines, *sentences, ""])
    (ROOT / "benchmarks" / "results" / "model_check_speed.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
