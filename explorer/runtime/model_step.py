"""A model's training step time per policy, measured here (:func:`time_steps`).

The step each framework's runner builds (``training_step`` of
:mod:`explorer.runtime.model_keras`, :mod:`~explorer.runtime.model_torch`,
:mod:`~explorer.runtime.model_jax`) is the plain forward and backward pass of the model under the
policy, as a training loop runs it: the loss (mean of the squared outputs, in float32) and its
gradient with respect to the parameters and the floating inputs, with none of the check's
instrumentation (no per-op recording, no gradient of every activation) and no optimizer update.

The steps of all policies are timed in turn by :func:`explorer.runtime.timing.measure_interleaved`
(warm-up, then rounds of one sample per policy until each has ``min_time`` seconds and
``min_count`` samples), so a change in the machine's load falls on every policy alike.

>>> t = time_steps({"float32": lambda: sum(range(100)), "twice": lambda: sum(range(200))}, min_time=0.01)
>>> sorted(t), t["float32"].count >= 5
(['float32', 'twice'], True)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from explorer.analysis.speed import TimingSummary
from explorer.runtime.timing import measure_interleaved

#: seconds of timed steps each policy gets at least (and samples at least), and at most
STEP_MIN_TIME = 0.2
STEP_MIN_COUNT = 5
STEP_MAX_TIME = 2.0


def build_steps(
    runner: Any,
    model: Any,
    inputs: tuple[Any, ...],
    policies: tuple[str, ...],
    extra: Mapping[str, Any],
) -> tuple[dict[str, Callable[[], Any]], dict[str, str]]:
    """Each policy's training step from ``runner`` (a framework's runner module), called once
    (compilation, first-call costs); (the steps that ran, policy -> the error of those that did not)."""
    steps: dict[str, Callable[[], Any]] = {}
    errors: dict[str, str] = {}
    for policy in policies:
        try:
            step = runner.training_step(model, inputs, policy, **extra)
            step()
        except Exception as exc:  # a kernel the framework lacks in this dtype: no time to report
            text = str(exc).strip()
            errors[policy] = f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__
            continue
        steps[policy] = step
    return steps, errors


def time_steps(
    steps: Mapping[str, Callable[[], Any]],
    *,
    min_time: float = STEP_MIN_TIME,
    min_count: int = STEP_MIN_COUNT,
    max_time: float | None = STEP_MAX_TIME,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, TimingSummary]:
    """Seconds per call of each step (name -> callable that returns when its work is done),
    timed interleaved: one warm-up call each, then rounds of one sample of each."""
    if not steps:
        return {}
    return measure_interleaved(
        dict(steps), warmup=1, min_time=min_time, min_count=min_count, max_time=max_time, clock=clock
    )


__all__ = ["STEP_MAX_TIME", "STEP_MIN_COUNT", "STEP_MIN_TIME", "build_steps", "time_steps"]
