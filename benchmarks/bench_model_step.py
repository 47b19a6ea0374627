"""The model check's measured training step per policy (``check_model(..., time_steps=True)``,
``precision-explorer model --time-steps``) on the built-in models, and what the timing costs.

    python -m benchmarks.run model_step
    python benchmarks/bench_model_step.py          # the same figures, one line each

One fresh ``python`` per framework: Keras (TensorFlow) and PyTorch on the built-in ``mlp``,
``cnn`` and ``transformer``, JAX on a two-layer MLP function of the same sizes as the built-in
``mlp`` (the built-ins have no JAX form); each framework's three default policies, device CPU.
Each model is checked once without timing (warm-up of the check itself), then once with
``time_steps=True``, then once more without: the figures are the steps' medians (with IQR and
sample count in the label), their ratio to float32, and the extra seconds the timing added
(the second check's wall time minus the third's).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

_CHILD = """
import json, sys, time
import numpy as np
from explorer.queries.model_check import check_model
framework = sys.argv[1]
cases = []
if framework == "jax":
    import jax.numpy as jnp
    rng = np.random.default_rng(0)
    params = {"w1": rng.standard_normal((16, 32)).astype(np.float32) / 4,
              "w2": rng.standard_normal((32, 32)).astype(np.float32) / 6,
              "w3": rng.standard_normal((32, 4)).astype(np.float32) / 6}
    def mlp(p, x):
        h = jnp.maximum(x @ p["w1"], 0)
        h = jnp.maximum(h @ p["w2"], 0)
        return h @ p["w3"]
    cases.append(("mlp function", mlp, rng.standard_normal((8, 16)).astype(np.float32), {"params": params}))
else:
    from explorer.runtime import model_builtin
    for name in ("mlp", "cnn", "transformer"):
        cases.append((name, model_builtin.build(name, framework),
                      model_builtin.example_inputs(name, framework), {}))
out = []
for name, model, x, extra in cases:
    check_model(model, x, devices=["CPU"], **extra)
    t0 = time.perf_counter()
    timed = check_model(model, x, devices=["CPU"], time_steps=True, **extra)
    t1 = time.perf_counter()
    check_model(model, x, devices=["CPU"], **extra)
    t2 = time.perf_counter()
    out.append({"model": name, "version": timed.framework_version, "cost": (t1 - t0) - (t2 - t1),
                "steps": [{"policy": r.policy, "ratio": r.step_ratio_to_float32,
                           **(r.step_time.to_dict() if r.step_time else {})} for r in timed.results],
                "notes": [n for n in timed.notes if n.startswith("step time")]})
print(json.dumps(out))
"""

FRAMEWORKS = ("keras", "torch", "jax")


def measure(framework: str) -> list[dict[str, Any]]:
    """One fresh process's figures for every model of ``framework``."""
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, framework],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    result: list[dict[str, Any]] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def run() -> list[tuple[str, float, str]]:
    """The figures of every case."""
    rows: list[tuple[str, float, str]] = []
    for framework in FRAMEWORKS:
        for case in measure(framework):
            where = f"{case['version']} {case['model']}"
            for step in case["steps"]:
                if "median" not in step:
                    continue
                spread = f"IQR {step['q1'] * 1e3:.3g}-{step['q3'] * 1e3:.3g} ms, n={step['count']}"
                rows.append((f"{where} {step['policy']}: step median ({spread})", step["median"] * 1e3, "ms"))
                rows.append((f"{where} {step['policy']}: ratio to float32", step["ratio"], "x"))
            rows.append((f"{where}: seconds the timing added to the check", case["cost"], "s"))
            for note in case["notes"]:
                print(f"note ({where}): {note}", flush=True)
    return rows


if __name__ == "__main__":
    for label, value, unit in run():
        print(f"{label:<90} {value:>10.4g} {unit}")
