"""``check_model`` on real Keras architectures on CPU, timed against ``import tensorflow``.

    python benchmarks/model_check_speed.py            # MobileNetV2 96x96 and ResNet50 64x64
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

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURES = {
    "mobilenet": ("MobileNetV2", (96, 96, 3)),
    "resnet50": ("ResNet50", (64, 64, 3)),
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


def import_seconds(repeats: int = 3) -> float:
    """The median wall time of a fresh ``python -c "import tensorflow"``."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", "import tensorflow"], check=True, env=_env(), capture_output=True
        )
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(key: str) -> dict[str, object]:
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
    base = import_seconds()
    load = os.getloadavg()[0]
    lines = [
        "# check_model speed on real Keras architectures (CPU)",
        "",
        "Command: `python benchmarks/model_check_speed.py" + "".join(f" {a}" for a in argv) + "`",
        "",
        f"Machine: {os.cpu_count()} CPUs, load average {load:.1f} at the start; "
        f'`python -c "import tensorflow"`: {base:.1f} s (median of 3, same run).',
        f"Policies: {', '.join(POLICIES)}; devices: CPU; batch 2, seeded standard-normal input.",
        "",
        "| architecture | ops | first call s (CPU s) | ratio to import | second call s | peak RSS MB |",
        "|---|---|---|---|---|---|",
    ]
    sentences = []
    for key in keys:
        f = measure(key)
        ratio = float(f["first"]) / base  # type: ignore[arg-type]
        print(f"{key}: first {f['first']:.1f} s (CPU {f['first_cpu']:.1f} s), {ratio:.2f}x import "
              f"({base:.1f} s); second {f['second']:.2f} s; peak RSS {f['peak_rss_mb']:.0f} MB; "
              f"{f['ops']} ops")  # fmt: skip
        lines.append(
            f"| {ARCHITECTURES[key][0]} {ARCHITECTURES[key][1][0]}x{ARCHITECTURES[key][1][1]} | {f['ops']} | "
            f"{f['first']:.1f} ({f['first_cpu']:.1f}) | {ratio:.2f}x | {f['second']:.2f} | "
            f"{f['peak_rss_mb']:.0f} |"
        )
        sentences.append(f"\n## {ARCHITECTURES[key][0]}: summary per policy\n")
        for s in f["summary"]:  # type: ignore[attr-defined]
            print(f"  {s}")
            sentences.append(f"- {s}")
    text = "\n".join([*lines, *sentences, ""])
    (ROOT / "benchmarks" / "results" / "model_check_speed.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
