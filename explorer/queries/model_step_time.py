"""The model check's measured training step per policy (``check_model(..., time_steps=True)``):
each policy's plain step timed here (:mod:`explorer.runtime.model_step`) in paired rounds with
float32's (:func:`explorer.runtime.timing.measure_paired`), put on its CPU result with its ratio
to float32's and a phrase on its sentence: the ratio's signed-rank interval and a verdict
(:func:`step_phrase`).  PyTorch's intra-op threads are set for the timing
(:data:`~explorer.runtime.speed.DEFAULT_THREADS`, restored after) and, with the machine's load,
stated in the notes."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from explorer.analysis.paired_ratio import PairedRatio, machine_note
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
    sentence: the ratio to float32's with its interval and verdict); notes on the steps that
    could not be timed, the threads and, when the machine was busy, in words."""
    from explorer.runtime import model_step
    from explorer.runtime.speed import DEFAULT_THREADS, held_threads
    from explorer.runtime.timing import measure_paired

    wanted = policies if "float32" in policies else ("float32", *policies)
    steps, errors = model_step.build_steps(runner, model, inputs, wanted, extra)
    notes = [f"step time under {p}: not measured, the plain step failed ({e})" for p, e in errors.items()]
    if not steps:
        return results, notes
    baseline_name = "float32" if "float32" in steps else next(iter(steps))
    with held_threads(DEFAULT_THREADS) as stated:
        timed = measure_paired(
            dict(steps),
            baseline_name,
            warmup=1,
            min_time=model_step.STEP_MIN_TIME,
            min_count=model_step.STEP_MIN_COUNT,
            max_time=model_step.STEP_MAX_TIME * len(steps),
            clock=clock or time.perf_counter,
            threads=stated.get("torch"),
        )
    baseline = timed.summaries["float32"].median if "float32" in timed.summaries else None
    out = []
    for result in results:
        timing = timed.summaries.get(result.policy) if result.device == "CPU" else None
        if timing is None:
            out.append(result)
            continue
        ratio = ratio_to_baseline(timing.median, baseline)
        paired = timed.ratios.get(result.policy) if baseline_name == "float32" else None
        sentence = f"{result.sentence}; {step_phrase(timing, ratio, paired)}"
        out.append(replace(result, step_time=timing, step_ratio_to_float32=ratio, sentence=sentence))
    if stated:
        threads = ", ".join(f"{name} {n}" for name, n in stated.items())
        notes.append(f"step times measured with intra-op threads: {threads}")
    busy = machine_note(timed.machine)
    if busy:
        notes.append(f"step times: {busy}")
    return out, notes


def step_phrase(timing: TimingSummary, ratio: float | None, paired: PairedRatio | None = None) -> str:
    """The measured step in words: median, interquartile range, ratio to float32, and the
    ratio's interval and verdict when ``paired`` is given.

    >>> from explorer.analysis.speed import summarize
    >>> step_phrase(summarize([0.0030, 0.0031, 0.0034]), 1.4)
    'step 3.1 ms measured here (IQR 3.05-3.25 ms, 3 samples; 1.40x float32)'
    >>> from explorer.analysis.paired_ratio import paired_ratio
    >>> step_phrase(summarize([0.002] * 16), 0.5, paired_ratio([0.004] * 16, [0.002] * 16))
    'step 2 ms measured here (IQR 2-2 ms, 16 samples; 0.50x float32, faster: 0.5x-0.5x (99.99%, 16 rounds))'
    """
    ms = 1e3
    versus = "" if ratio is None else f"; {ratio:.2f}x float32"
    if ratio is not None and paired is not None:
        versus += f", {paired.words()}"
    return (
        f"step {timing.median * ms:.3g} ms measured here (IQR {timing.q1 * ms:.3g}-{timing.q3 * ms:.3g} ms, "
        f"{timing.count} samples{versus})"
    )


__all__ = ["step_phrase", "with_step_times"]
