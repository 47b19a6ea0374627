"""Training speed: the six Keras policies on the digits MLP with the default epochs, and fp8.

    python -m benchmarks.run training

The figure to watch is ``six policies, MLP, default epochs: total`` (target < 60 s on
a 2-core CPU machine).  TensorFlow's import is timed apart.  float16 compute is slow on
CPUs without native half-precision matmul kernels, which the per-step figures show.
"""

from __future__ import annotations

import time


def run() -> list[tuple[str, float, str]]:
    """Figures as (name, value, unit)."""
    from explorer.backends.tensorflow_backend import import_tensorflow
    from explorer.training import DEFAULT_EPOCHS, POLICY_NAMES, load_digits_data, run_policies
    from explorer.training.fp8 import compare_fp8

    figures: list[tuple[str, float, str]] = []
    start = time.perf_counter()
    import_tensorflow()
    import keras  # noqa: F401

    figures.append(("import tensorflow + keras", time.perf_counter() - start, "s"))
    load_digits_data("mlp")
    start = time.perf_counter()
    results = run_policies(POLICY_NAMES, model="mlp")
    total = time.perf_counter() - start
    figures.append((f"six policies, MLP, {DEFAULT_EPOCHS} epochs: total", total, "s"))
    for r in results:
        figures.append((f"  {r.policy}: run", r.seconds, "s"))
        steps = [s.seconds for s in r.steps[r.total_steps // 10 :]]  # after tracing
        figures.append((f"  {r.policy}: median step", 1000 * sorted(steps)[len(steps) // 2], "ms"))
        figures.append((f"  {r.policy}: final loss", r.final["loss"] or float("nan"), ""))
        figures.append((f"  {r.policy}: final val accuracy", r.final["val_accuracy"] or float("nan"), ""))
    start = time.perf_counter()
    cnn = run_policies(["float32", "mixed_float16"], model="cnn")
    figures.append(
        (f"CNN float32 + mixed_float16, {DEFAULT_EPOCHS} epochs", time.perf_counter() - start, "s")
    )
    for r in cnn:
        figures.append((f"  cnn {r.policy}: final val accuracy", r.final["val_accuracy"] or float("nan"), ""))
    start = time.perf_counter()
    fp8 = compare_fp8()
    figures.append(("fp8 emulated: float32 + 3 fp8 variants, 10 epochs", time.perf_counter() - start, "s"))
    for r in fp8:
        figures.append((f"  {r.label}: final loss", r.final["loss"], ""))
    return figures
