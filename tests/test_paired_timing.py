"""Speed ratios with their uncertainty: the signed-rank interval (explorer.analysis.paired_ratio)
checked against SciPy's exact Wilcoxon test, and the interleaved sampler
(explorer.runtime.timing.measure_paired) driven by a noisy clock the test controls: a pair of
equal speed is never called faster or slower, a real 2x pair is found.  No real time is asserted."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from explorer.analysis.paired_ratio import (
    MachineState,
    _rank_bound,
    look_confidence,
    machine_note,
    paired_ratio,
)
from explorer.runtime.timing import measure_paired


class NoisyClock:
    """A clock that moves only when a call 'runs': each call takes its nominal time times a
    lognormal jitter, times a load factor that wanders (a random walk) and now and then spikes
    tenfold, as a busy shared machine does."""

    def __init__(self, seed: int, sigma: float = 0.1) -> None:
        self.now = 0.0
        self.rng = np.random.default_rng(seed)
        self.sigma = sigma
        self.load = 1.0

    def __call__(self) -> float:
        return self.now

    def run(self, seconds: float) -> None:
        self.load = min(8.0, max(1.0, self.load * math.exp(self.rng.normal(0.0, 0.05))))
        spike = 10.0 if self.rng.random() < 0.02 else 1.0
        self.now += seconds * self.load * spike * math.exp(self.rng.normal(0.0, self.sigma))


def _sampled(seed: int, a_seconds: float, b_seconds: float) -> tuple[str, float | None, float | None]:
    clock = NoisyClock(seed)
    timed = measure_paired(
        {"a": lambda: clock.run(a_seconds), "b": lambda: clock.run(b_seconds)},
        "a",
        warmup=1,
        min_time=0.01,
        min_count=5,
        max_count=256,
        max_time=5.0,
        clock=clock,
    )
    ratio = timed.ratios["b"]
    return ratio.verdict, ratio.low, ratio.high


def test_a_pair_of_equal_speed_is_never_called_faster_or_slower() -> None:
    verdicts = [_sampled(seed, 0.002, 0.002) for seed in range(200)]
    assert [v for v in verdicts if v[0] != "undecided"] == []
    # the sampler did give intervals, and they hold 1x
    assert all(low is not None and high is not None and low <= 1.0 <= high for _, low, high in verdicts)


def test_a_liberal_interval_would_fail_the_equal_speed_test(monkeypatch: pytest.MonkeyPatch) -> None:
    """The noisy clock is noisy enough for the test above to catch an interval that is too
    narrow: at 80% per look (no division among the looks) equal pairs get verdicts."""
    monkeypatch.setattr("explorer.analysis.paired_ratio.look_confidence", lambda: 0.8)
    decided = [v for v in (_sampled(seed, 0.002, 0.002) for seed in range(100)) if v[0] != "undecided"]
    assert len(decided) >= 5


def test_a_real_twofold_pair_is_found_slower_and_its_interval_holds_two() -> None:
    for seed in range(50):
        verdict, low, high = _sampled(seed, 0.002, 0.004)
        assert verdict == "slower"
        assert low is not None and high is not None and low <= 2.0 <= high and low > 1.0
        verdict, low, high = _sampled(seed, 0.004, 0.002)
        assert verdict == "faster" and low is not None and high is not None and low <= 0.5 <= high < 1.0


def test_the_sampler_reverses_the_order_each_round_so_a_drift_cancels() -> None:
    """A load that grows with every call would make the second call of each round slower: with
    the order reversed every other round, equal calls stay undecided."""
    clock = NoisyClock(0, sigma=0.0)
    order: list[str] = []

    def call(name: str) -> None:
        order.append(name)
        clock.now += 0.001 * (1.0 + len(order) * 1e-3)

    timed = measure_paired(
        {"a": lambda: call("a"), "b": lambda: call("b")}, "a", warmup=0, max_count=64, clock=clock
    )
    assert order[2:6] == ["a", "b", "b", "a"]  # after the first calls (batch sizes): a b, then b a
    assert timed.ratios["b"].verdict == "undecided"


def test_the_interval_is_the_inverted_wilcoxon_test() -> None:
    """Just inside the interval's bounds SciPy's exact signed-rank test keeps the shift, just
    outside it rejects it (at the same level)."""
    rng = np.random.default_rng(3)
    logs = rng.normal(0.3, 0.2, size=20)
    a = np.ones(20)
    b = np.exp(logs)
    level = 0.95
    r = paired_ratio(a, b, confidence=level)
    assert r.low is not None and r.high is not None
    for bound, inside in ((math.log(r.low), 1e-9), (math.log(r.high), -1e-9)):
        keep = stats.wilcoxon(logs - (bound + inside), method="exact").pvalue
        reject = stats.wilcoxon(logs - (bound - inside), method="exact").pvalue
        assert keep > 1 - level >= reject
    assert r.estimate == pytest.approx(
        math.exp(np.median([(x + y) / 2 for i, x in enumerate(logs) for y in logs[i:]]))
    )


@pytest.mark.parametrize("n", [12, 30, 80])
def test_the_rank_bound_matches_scipys_exact_distribution(n: int) -> None:
    alpha = 1 - look_confidence()
    k = _rank_bound(n, alpha)
    ranks = np.arange(1, n + 1, dtype=float)

    def p_at_most(t: int) -> float:
        """P(T+ <= t) from SciPy, with differences whose positive ranks sum to t."""
        positive, left = set(), t
        for r in range(n, 0, -1):
            if r <= left:
                positive.add(r)
                left -= r
        d = np.array([r if r in positive else -r for r in ranks])
        return float(stats.wilcoxon(d, alternative="less", method="exact").pvalue)

    assert p_at_most(k - 1) <= alpha / 2 < p_at_most(k) if k >= 1 else p_at_most(0) > alpha / 2


def test_too_few_rounds_are_undecided_in_words() -> None:
    r = paired_ratio([1.0] * 8, [3.0] * 8)
    assert r.verdict == "undecided" and r.low is None
    assert r.words() == "undecided: 8 rounds are too few for a 99.99% interval"


def test_a_busy_machine_is_said_in_words() -> None:
    assert "load 14.5 on 2 cores" in machine_note(MachineState(14.5, 3.0, 2, 1.0, 1.0))
    starved = machine_note(MachineState(0.1, 0.1, 2, 10.0, 2.0))
    assert "0.20 s of CPU per second of wall time" in starved
    assert machine_note(MachineState(1.9, 1.0, 2, 10.0, 9.0)) == ""
    assert MachineState(1.0, 3.0, 2, 1.0, 1.0).to_dict()["busy"] is True


def test_the_sampler_records_the_load_and_the_cpu_time() -> None:
    clock = NoisyClock(1)
    cpu = iter([10.0, 10.5])
    timed = measure_paired(
        {"a": lambda: clock.run(0.001), "b": lambda: clock.run(0.001)},
        "a",
        max_count=32,
        clock=clock,
        cpu_clock=lambda: next(cpu),
        threads=1,
    )
    assert timed.machine.cpu_seconds == pytest.approx(0.5)
    assert timed.machine.threads == 1 and timed.machine.cores >= 1
    assert timed.machine.load_before is not None and timed.machine.load_before >= 0  # Linux has one


def test_the_budget_stops_the_rounds_once_an_interval_is_possible() -> None:
    clock = NoisyClock(2, sigma=0.0)
    calls = {"a": lambda: clock.run(0.1), "b": lambda: clock.run(0.1)}
    timed = measure_paired(calls, "a", warmup=0, max_time=1.0, max_count=1024, clock=clock)
    assert timed.stopped == "budget" and timed.rounds == 16  # past max_time, to the first look's rounds
    slow = {"a": lambda: clock.run(1.0), "b": lambda: clock.run(1.0)}
    timed = measure_paired(slow, "a", warmup=0, max_time=2.0, max_count=1024, clock=clock)
    assert timed.stopped == "budget" and timed.rounds < 16  # but never past 4 x max_time
    assert timed.ratios["b"].verdict == "undecided" and "too few" in timed.ratios["b"].reason
