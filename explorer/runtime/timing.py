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
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from explorer.analysis.paired_ratio import (
    FIRST_LOOK,
    MachineState,
    PairedRatio,
    look_rounds,
    narrow_enough,
    paired_ratio,
)
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
    batches = _batch_sizes(calls, warmup, clock)
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


#: :func:`measure_paired` runs past its ``max_time`` up to this many times it to reach the
#: rounds of its first look (an interval); slow calls would otherwise get no interval at all
OVERRUN = 4.0


@dataclass
class PairedTiming:
    """Calls timed in rounds (one sample of each per round), each compared with the baseline."""

    #: seconds per call of each call
    summaries: dict[str, TimingSummary]
    #: each call but the baseline: its time over the baseline's, with its interval and verdict
    ratios: dict[str, PairedRatio]
    #: the machine while the rounds ran (load average, CPU time the process got)
    machine: MachineState
    #: rounds timed
    rounds: int
    #: why the rounds stopped: ``narrow`` (every interval narrow enough or decided with
    #: ``min_time`` timed), ``budget`` (``max_time``), ``count`` (``max_count`` rounds)
    stopped: str


def measure_paired(
    calls: dict[str, Callable[[], Any]],
    baseline: str,
    *,
    warmup: int = 1,
    min_time: float = 0.2,
    min_count: int = 5,
    max_count: int = 1024,
    max_time: float | None = 2.0,
    clock: Callable[[], float] = time.perf_counter,
    cpu_clock: Callable[[], float] = time.process_time,
    threads: int | None = None,
) -> PairedTiming:
    """Time ``calls`` in rounds of one sample of each, the order reversed every other round
    (a, b, then b, a: a steady drift in the machine's load falls on both alike), and compare
    each with ``baseline`` (:func:`explorer.analysis.paired_ratio.paired_ratio` of the rounds).

    The rounds go on until ``min_count`` rounds and ``min_time`` seconds of the baseline's timed
    calls are done and, at one of the looks (:func:`~explorer.analysis.paired_ratio.look_rounds`),
    every interval is narrow enough (:data:`~explorer.analysis.paired_ratio.NARROW`) or excludes
    1x; or until ``max_time`` seconds of timed calls of all of them (once the first look's
    rounds are done, the fewest that give an interval, or :data:`OVERRUN` times ``max_time``),
    or ``max_count`` rounds.
    Short calls are batched as in :func:`measure`.  The load average and the CPU time this
    process got (``cpu_clock``) are recorded with the rounds (``threads``: the threads the calls
    ran on, as stated).

    >>> t = measure_paired({"a": lambda: sum(range(200)), "b": lambda: sum(range(200))}, "a", min_time=0.01)
    >>> t.ratios["b"].verdict in ("faster", "slower", "undecided"), t.rounds >= 5
    (True, True)
    """
    if baseline not in calls:
        raise ValueError(f"the baseline {baseline!r} is not one of the calls")
    if warmup < 0 or min_count < 1 or max_count < 1 or min_time < 0:
        raise ValueError("warmup >= 0, min_count >= 1, max_count >= 1 and min_time >= 0 are required")
    load_before = _load()
    wall_start, cpu_start = time.perf_counter(), cpu_clock()
    batches = _batch_sizes(calls, warmup, clock)
    names = list(calls)
    samples: dict[str, list[float]] = {name: [] for name in names}
    looks = set(look_rounds(max_count))
    spent = 0.0
    stopped = "count"
    rounds = 0
    while rounds < max_count:
        order = names if rounds % 2 == 0 else names[::-1]
        for name in order:
            call, batch = calls[name], batches[name]
            start = clock()
            for _ in range(batch):
                call()
            elapsed = clock() - start
            spent += elapsed
            samples[name].append(elapsed / batch)
        rounds += 1
        base_time = sum(samples[baseline]) * batches[baseline]
        looked = rounds in looks and rounds >= min_count and base_time >= min_time
        if looked and all(_settled(_compare(samples, baseline, n)) for n in names if n != baseline):
            stopped = "narrow"
            break
        over = max_time is not None and spent >= max_time
        if over and (rounds >= min(FIRST_LOOK, max_count) or spent >= OVERRUN * (max_time or 0.0)):
            stopped = "budget"
            break
    machine = MachineState(
        load_before=load_before,
        load_after=_load(),
        cores=os.cpu_count() or 1,
        wall_seconds=time.perf_counter() - wall_start,
        cpu_seconds=cpu_clock() - cpu_start,
        threads=threads,
    )
    summaries = {name: summarize(samples[name], calls_per_sample=batches[name]) for name in names}
    ratios = {
        name: _compare(samples, baseline, name, point=summaries[name].median / summaries[baseline].median)
        for name in names
        if name != baseline and summaries[baseline].median > 0
    }
    return PairedTiming(summaries, ratios, machine, rounds, stopped)


def _compare(
    samples: dict[str, list[float]], baseline: str, name: str, point: float | None = None
) -> PairedRatio:
    return paired_ratio(samples[baseline], samples[name], point=point)


def _settled(ratio: PairedRatio) -> bool:
    """Narrow enough, or decided."""
    return narrow_enough(ratio) or ratio.verdict != "undecided"


def _load() -> float | None:
    """The 1-minute load average (None where the OS has none)."""
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None


def _batch_sizes(
    calls: Mapping[str, Callable[[], Any]], warmup: int, clock: Callable[[], float]
) -> dict[str, int]:
    """Each call warmed up ``warmup`` times, then timed once: how many calls make one sample (a
    call under :data:`SAMPLE_FLOOR` is repeated up to :data:`MAX_CALLS_PER_SAMPLE` times)."""
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
    return batches
