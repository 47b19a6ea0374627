"""The timing harness: warm-up, then repeated timed calls until a minimum total time and a
minimum count are both reached (or a cap), in this process (:func:`measure`).

A call shorter than :data:`SAMPLE_FLOOR` seconds is timed in batches (``calls_per_sample``
calls per sample, the clock read once per batch) so that the clock's resolution and the loop's
own cost do not dominate.  The summary is :class:`explorer.analysis.speed.TimingSummary`:
median, quartiles, range.

>>> t = measure(lambda: sum(range(100)), min_time=0.01, min_count=5)
>>> t.count >= 5 and t.minimum <= t.median <= t.maximum
True
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from explorer.analysis.speed import TimingSummary, summarize

#: a sample shorter than this (seconds) is made of several calls
SAMPLE_FLOOR = 1e-4
#: the most calls batched into one sample
MAX_CALLS_PER_SAMPLE = 10_000


def measure(
    call: Callable[[], Any],
    *,
    warmup: int = 1,
    min_time: float = 0.2,
    min_count: int = 5,
    max_count: int = 10_000,
    max_time: float | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> TimingSummary:
    """Time ``call`` (no arguments; it must return only when its work is done).

    ``warmup`` untimed calls first (compilation, caches, lazy initialisation), then samples
    until both ``min_time`` seconds have been timed and ``min_count`` samples taken, or
    ``max_count`` samples, or ``max_time`` seconds of timed calls (whichever comes first; at
    least one sample is always taken).
    """
    if warmup < 0 or min_count < 1 or max_count < 1 or min_time < 0:
        raise ValueError("warmup >= 0, min_count >= 1, max_count >= 1 and min_time >= 0 are required")
    for _ in range(warmup):
        call()
    start = clock()
    call()
    first = clock() - start
    batch = 1
    if first < SAMPLE_FLOOR:
        batch = min(MAX_CALLS_PER_SAMPLE, max(1, math.ceil(SAMPLE_FLOOR / max(first, 1e-9))))
    samples: list[float] = [] if batch > 1 else [first]
    spent = first
    while len(samples) < max_count:
        if spent >= min_time and len(samples) >= min_count:
            break
        if max_time is not None and spent >= max_time and samples:
            break
        start = clock()
        for _ in range(batch):
            call()
        elapsed = clock() - start
        spent += elapsed
        samples.append(elapsed / batch)
    return summarize(samples, calls_per_sample=batch)


def measure_interleaved(
    calls: dict[str, Callable[[], Any]],
    *,
    warmup: int = 1,
    min_time: float = 0.2,
    min_count: int = 5,
    max_count: int = 10_000,
    max_time: float | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, TimingSummary]:
    """Time several calls in turn, one sample of each per round, so that a change in the
    machine's load while they are timed falls on all of them alike (their ratios stay fair).

    Each call gets :func:`measure`'s warm-up and batching; the rounds go on until every call has
    ``min_count`` samples and ``min_time`` seconds of timed calls (or ``max_count`` samples, or
    ``max_time`` seconds of its own timed calls).

    >>> t = measure_interleaved({"short": lambda: sum(range(10)), "long": lambda: sum(range(10_000))},
    ...                         min_time=0.01)
    >>> t["short"].count >= 5 and t["long"].count >= 5
    True
    """
    if warmup < 0 or min_count < 1 or max_count < 1 or min_time < 0:
        raise ValueError("warmup >= 0, min_count >= 1, max_count >= 1 and min_time >= 0 are required")
    batches: dict[str, int] = {}
    for name, call in calls.items():
        for _ in range(warmup):
            call()
        start = clock()
        call()
        first = clock() - start
        batches[name] = 1
        if first < SAMPLE_FLOOR:
            batches[name] = min(MAX_CALLS_PER_SAMPLE, max(1, math.ceil(SAMPLE_FLOOR / max(first, 1e-9))))
    samples: dict[str, list[float]] = {name: [] for name in calls}
    spent = dict.fromkeys(calls, 0.0)

    def done(name: str) -> bool:
        count = len(samples[name])
        if count >= max_count or (max_time is not None and spent[name] >= max_time and count):
            return True
        return spent[name] >= min_time and count >= min_count

    while not all(done(name) for name in calls):
        for name, call in calls.items():
            if done(name):
                continue
            batch = batches[name]
            start = clock()
            for _ in range(batch):
                call()
            elapsed = clock() - start
            spent[name] += elapsed
            samples[name].append(elapsed / batch)
    return {name: summarize(samples[name], calls_per_sample=batches[name]) for name in calls}
