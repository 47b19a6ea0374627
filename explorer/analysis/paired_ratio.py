"""How sure a measured speed ratio is: a confidence interval of the time ratio of two calls timed
in interleaved rounds, a verdict (``faster``, ``slower``, ``undecided``), and the machine's state
while they were timed, in words (:func:`paired_ratio`, :func:`machine_note`).

The interval is the Wilcoxon signed-rank interval (Hodges-Lehmann) of the per-round log ratios
``log(b_i / a_i)``: distribution free, and exact when the two calls take the same time (their
log ratios are then symmetric about 0), so a 1.0x pair is called faster or slower with
probability at most ``1 - confidence``.  A sampler that looks at the interval several times
before it stops divides its error rate among its looks (:data:`LOOKS`, Bonferroni), which keeps
the overall error rate at most :data:`ERROR_RATE` however many looks it takes.

Pure: the rounds are timed elsewhere (:func:`explorer.runtime.timing.measure_paired`).

>>> r = paired_ratio([1.0] * 20, [2.0] * 20)
>>> r.low, r.high, r.verdict
(2.0, 2.0, 'slower')
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np

#: the overall probability that a sampler calls a pair of equal speed faster or slower
ERROR_RATE = 0.001
#: the most looks a sampler takes at one interval (rounds 16, 32, ... 1024, and one at its end)
LOOKS = 8
#: the rounds of the sampler's first look, doubled at each next one
FIRST_LOOK = 16
#: an interval no wider than this (high / low) is narrow enough: the sampler stops
NARROW = 1.10
#: above this many rounds the signed-rank distribution is taken as normal
EXACT_UP_TO = 120
#: ratios within this factor of 1 are "about the same" in words, whatever the verdict
SAME_WITHIN = 1.05


def look_rounds(max_rounds: int) -> list[int]:
    """The round counts at which a sampler looks at the interval (at most :data:`LOOKS` - 1; its
    last look is where it stops).

    >>> look_rounds(100)
    [16, 32, 64]
    """
    rounds: list[int] = []
    n = FIRST_LOOK
    while n <= max_rounds and len(rounds) < LOOKS - 1:
        rounds.append(n)
        n *= 2
    return rounds


def look_confidence() -> float:
    """The confidence of the interval at each look: the error rate divided among the looks.

    >>> round(look_confidence(), 6)
    0.999875
    """
    return 1.0 - ERROR_RATE / LOOKS


@dataclass(frozen=True)
class PairedRatio:
    """The time of call b over call a, from rounds that timed both."""

    #: the Hodges-Lehmann estimate of b/a (the median of the Walsh averages of the log ratios)
    estimate: float | None
    #: the interval's bounds (None: too few rounds for an interval at this confidence)
    low: float | None
    high: float | None
    #: the interval's confidence
    confidence: float
    #: rounds that timed both calls
    rounds: int
    #: ``faster`` (b takes less time than a: the interval is below 1), ``slower`` (above 1) or
    #: ``undecided``
    verdict: str
    #: why the verdict is undecided ("" otherwise)
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields."""
        return asdict(self)

    def words(self) -> str:
        """The verdict with its interval, e.g. ``"faster: 0.48x-0.53x (99.99%, 64 rounds)"``.

        >>> paired_ratio([2.0] * 20, [1.0] * 20).words()
        'faster: 0.5x-0.5x (99.99%, 20 rounds)'
        """
        if self.low is None or self.high is None:
            return f"undecided: {self.reason}"
        share = f"{self.confidence * 100:.4g}%"
        return f"{self.verdict}: {self.low:.3g}x-{self.high:.3g}x ({share}, {self.rounds} rounds)"


def paired_ratio(
    a: Sequence[float], b: Sequence[float], confidence: float | None = None, point: float | None = None
) -> PairedRatio:
    """The interval of the time ratio b/a from per-round seconds ``a[i]``, ``b[i]`` (timed in the
    same round), at ``confidence`` (default :func:`look_confidence`).  The verdict is ``faster``
    or ``slower`` only when the interval lies below or above 1 and ``point`` (the ratio shown
    beside it, e.g. the ratio of medians; default the estimate) is on the same side.

    >>> paired_ratio([1.0, 1.1, 0.9] * 8, [1.1, 0.9, 1.0] * 8).verdict
    'undecided'
    """
    level = look_confidence() if confidence is None else confidence
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {level}")
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} and {len(b)}")
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    logs = np.log(y[keep]) - np.log(x[keep])
    n = int(logs.size)
    if n == 0:
        return PairedRatio(None, None, None, level, 0, "undecided", "no rounds timed both")
    walsh = _walsh_averages(logs)
    estimate = math.exp(float(np.median(walsh)))
    k = _rank_bound(n, 1.0 - level)
    if k < 1:
        reason = f"{n} rounds are too few for a {level * 100:.4g}% interval"
        return PairedRatio(estimate, None, None, level, n, "undecided", reason)
    ordered = np.partition(walsh, (k - 1, walsh.size - k))
    low, high = math.exp(float(ordered[k - 1])), math.exp(float(ordered[walsh.size - k]))
    shown = estimate if point is None else point
    if low > 1.0 and shown > 1.0:
        verdict, reason = "slower", ""
    elif high < 1.0 and shown < 1.0:
        verdict, reason = "faster", ""
    elif low <= 1.0 <= high:
        verdict, reason = "undecided", "the interval spans 1x"
    else:
        verdict, reason = "undecided", f"the ratio shown ({shown:.3g}x) is on the other side of 1x"
    return PairedRatio(estimate, low, high, level, n, verdict, reason)


def narrow_enough(ratio: PairedRatio) -> bool:
    """True when the interval is no wider than :data:`NARROW` (high / low).

    >>> narrow_enough(paired_ratio([1.0] * 20, [2.0] * 20))
    True
    """
    return ratio.low is not None and ratio.high is not None and ratio.high / ratio.low <= NARROW


def _walsh_averages(values: np.ndarray) -> np.ndarray:
    """Every ``(v[i] + v[j]) / 2`` with ``i <= j``."""
    i, j = np.triu_indices(values.size)
    return np.asarray((values[i] + values[j]) / 2.0)


def _rank_bound(n: int, alpha: float) -> int:
    """The largest ``k`` with ``P(T <= k - 1) <= alpha / 2`` for the signed-rank statistic ``T``
    of ``n`` pairs (exact up to :data:`EXACT_UP_TO` pairs, normal beyond); 0 when none.

    >>> _rank_bound(10, 0.05)  # the tables' critical value for n=10, two-sided 5%: 8 (T <= 8 rejects)
    9
    """
    if n <= EXACT_UP_TO:
        cdf = _signed_rank_cdf(n)
        return int(np.searchsorted(cdf, alpha / 2.0, side="right"))
    from statistics import NormalDist

    mean = n * (n + 1) / 4.0
    sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
    z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    return max(0, math.floor(mean - z * sd - 0.5) + 1)


@lru_cache(maxsize=256)
def _signed_rank_cdf(n: int) -> np.ndarray:
    """``P(T <= t)`` for ``t = 0 .. n(n+1)/2``: the exact null distribution of the signed-rank
    statistic of ``n`` pairs (each rank's sign +/- with probability 1/2)."""
    top = n * (n + 1) // 2
    p = np.zeros(top + 1)
    p[0] = 1.0
    for rank in range(1, n + 1):
        shifted = np.zeros_like(p)
        shifted[rank:] = p[:-rank]
        p = 0.5 * (p + shifted)
    cdf = np.cumsum(p)
    cdf.flags.writeable = False
    return cdf


@dataclass(frozen=True)
class MachineState:
    """The machine while a measurement ran."""

    #: the 1-minute load average at the start and at the end (None where the OS has none)
    load_before: float | None
    load_after: float | None
    #: the logical CPUs of the machine
    cores: int
    #: wall seconds of the measurement and CPU seconds the measuring process got in them
    wall_seconds: float
    cpu_seconds: float
    #: the threads the process ran its work on (None: not known)
    threads: int | None = None

    @property
    def load(self) -> float | None:
        """The higher of the two load averages."""
        loads = [v for v in (self.load_before, self.load_after) if v is not None]
        return max(loads) if loads else None

    @property
    def cpu_share(self) -> float | None:
        """CPU seconds over wall seconds (above 1 when several threads ran)."""
        return None if self.wall_seconds <= 0 else self.cpu_seconds / self.wall_seconds

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields, with ``load``, ``cpu_share`` and ``busy``."""
        return {
            **asdict(self),
            "load": self.load,
            "cpu_share": self.cpu_share,
            "busy": bool(machine_note(self)),
        }


#: the process is starved when it got less than this share of the wall time as CPU time
STARVED_SHARE = 0.5


def machine_note(state: MachineState) -> str:
    """Words when the machine was busy during the measurement ("" when it was not): the load
    above the cores, or the process given much less CPU time than wall time.

    >>> print(machine_note(MachineState(14.5, 12.0, 2, 10.0, 3.0))[:99])
    the machine was busy while timing (load 14.5 on 2 cores; the process got 0.30 s of CPU per second o
    >>> machine_note(MachineState(0.5, 0.6, 2, 10.0, 9.9))
    ''
    """
    reasons = []
    load = state.load
    share = state.cpu_share
    if load is not None and load > state.cores:
        reasons.append(f"load {load:.1f} on {state.cores} cores")
    if share is not None and share < STARVED_SHARE:
        reasons.append(f"the process got {share:.2f} s of CPU per second of wall time")
    if not reasons:
        return ""
    return (
        f"the machine was busy while timing ({'; '.join(reasons)}): times are slower than on an idle "
        "machine and ratios noisier"
    )
