"""``check_model`` on the built-in small CNN and transformer block, cold and warm, and its memory.

    python benchmarks/run.py model_check
    python benchmarks/bench_model_check.py          # the same figures, one line each

For each framework (Keras on TensorFlow, PyTorch) and model (``cnn``, ``transformer``), a fresh
``python`` builds the model and runs ``explorer.check_model`` with the framework's three default
policies (float32 and its two mixed policies) on CPU and GPU (GPU: declared only):

- cold: from the start of the process (``import explorer``) to the end of the first check,
  so the framework's import, the registry or OpInfo read and the first traces count;
- warm: a second check of the same model in the same process;
- peak RSS: the process's peak resident memory (``ru_maxrss``) after both checks, and how much
  it grew during the first check.

And the app's path for the Keras CNN: ``check_builtin(..., in_worker=True)`` from a process that
imports no framework, twice (cold: the worker's start and TensorFlow's import count; warm: the
worker is warm).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

_CHILD = """
import json, resource, sys, time
t0 = time.perf_counter()
import explorer
from explorer.runtime import model_builtin
name, framework = sys.argv[1], sys.argv[2]
model = model_builtin.build(name, framework)
x = model_builtin.example_inputs(name, framework)
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t1 = time.perf_counter()
check = explorer.check_model(model, x)
cold = time.perf_counter() - t0
first = time.perf_counter() - t1
rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t2 = time.perf_counter()
explorer.check_model(model, x)
warm = time.perf_counter() - t2
rss2 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"cold": cold, "first_check": first, "warm": warm, "ops": len(check.ops),
                  "policies": len(check.policies), "rss_mib": rss2 / 1024,
                  "check_rss_mib": (rss1 - rss0) / 1024}))
"""

CASES = (("keras", "cnn"), ("keras", "transformer"), ("torch", "cnn"), ("torch", "transformer"))

#: the app's path: check_builtin(..., in_worker=True) from a process that imports no framework
_WORKER_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from explorer.queries.model_view import check_builtin
name, framework = sys.argv[1], sys.argv[2]
check = check_builtin(name, framework, in_worker=True)
cold = time.perf_counter() - t0
t1 = time.perf_counter()
check_builtin(name, framework, in_worker=True)
warm = time.perf_counter() - t1
print(json.dumps({"cold": cold, "warm": warm, "ops": len(check.ops), "policies": len(check.policies),
                  "framework_here": any(m in sys.modules for m in ("tensorflow", "torch"))}))
"""
WORKER_CASES = (("keras", "cnn"),)


def measure(framework: str, name: str, child: str = _CHILD) -> dict[str, Any]:
    """One fresh process's figures for ``name`` in ``framework``."""
    out = subprocess.run(
        [sys.executable, "-c", child, name, framework],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def run() -> list[tuple[str, float, str]]:
    """The figures of every case."""
    rows: list[tuple[str, float, str]] = []
    for framework, name in CASES:
        m = measure(framework, name)
        where = f"{framework} {name} ({m['ops']} ops, {m['policies']} policies)"
        rows += [
            (f"{where}: cold, process start to first check", m["cold"], "s"),
            (f"{where}: first check alone", m["first_check"], "s"),
            (f"{where}: warm check", m["warm"], "s"),
            (f"{where}: peak RSS", m["rss_mib"], "MiB"),
            (f"{where}: RSS growth during the first check", m["check_rss_mib"], "MiB"),
        ]
    for framework, name in WORKER_CASES:
        m = measure(framework, name, _WORKER_CHILD)
        assert not m["framework_here"], "the caller imported the framework: not the worker path"
        where = f"{framework} {name} in a sandbox worker (the app's path)"
        rows += [
            (f"{where}: cold, process start, worker start and import to first check", m["cold"], "s"),
            (f"{where}: warm check (worker warm)", m["warm"], "s"),
        ]
    return rows


if __name__ == "__main__":
    for label, value, unit in run():
        print(f"{label:<80} {value:>10.3g} {unit}")
