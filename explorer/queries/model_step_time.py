"""The model check's measured training step per policy (``check_model(..., time_steps=True)``):
each policy's plain step timed here (:mod:`explorer.runtime.model_step`), put on its CPU result
with its ratio to float32's and a phrase on its sentence (:func:`step_phrase`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from explorer.analysis.speed import TimingSummary, ratio_to_baseline

if TYPE_CHECKING:
    from explorer.queries.model_check import PolicyResult


def with_step_times(
    results: list[PolicyResult],
    runner: Any,
    model: Any,
    inputs: tuple[Any, ...],
    policies: tuple[str, ...],
    extra: dict[str, Any],
    clock: Callable[[], float] | None,
) -> tuple[list[PolicyResult], list[str]]:
    """The CPU results with each policy's measured training step (and a phrase on its
    sentence); notes on the steps that could not be timed."""
    from explorer.runtime import model_step

    wanted = policies if "float32" in policies else ("float32", *policies)
    steps, errors = model_step.build_steps(runner, model, inputs, wanted, extra)
    timed = model_step.time_steps(steps, clock=clock or time.perf_counter)
    baseline = timed["float32"].median if "float32" in timed else None
    out = []
    for result in results:
        timing = timed.get(result.policy) if result.device == "CPU" else None
        if timing is None:
            out.append(result)
            continue
        ratio = ratio_to_baseline(timing.median, baseline)
        sentence = f"{result.sentence}; {step_phrase(timing, ratio)}"
        out.append(replace(result, step_time=timing, step_ratio_to_float32=ratio, sentence=sentence))
    notes = [f"step time under {p}: not measured, the plain step failed ({e})" for p, e in errors.items()]
    return out, notes


def step_phrase(timing: TimingSummary, ratio: float | None) -> str:
    """The measured step in words: median, interquartile range, ratio to float32.

    >>> from explorer.analysis.speed import summarize
    >>> step_phrase(summarize([0.0030, 0.0031, 0.0034]), 1.4)
    'step 3.1 ms measured here (IQR 3.05-3.25 ms, 3 samples; 1.40x float32)'
    """
    ms = 1e3
    versus = "" if ratio is None else f"; {ratio:.2f}x float32"
    return (
        f"step {timing.median * ms:.3g} ms measured here (IQR {timing.q1 * ms:.3g}-{timing.q3 * ms:.3g} ms, "
        f"{timing.count} samples{versus})"
    )


__all__ = ["step_phrase", "with_step_times"]
