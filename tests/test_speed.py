"""The timing harness (explorer.runtime.timing), its statistics (explorer.analysis.speed) and the
speed query through the sandbox's workers: checked against known durations (a clock the test
drives), NumPy's percentiles and a tenfold difference in work, never against a time limit."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from explorer.analysis.speed import is_slow, quantile, ratio_to_baseline, summarize
from explorer.runtime.timing import measure


class SleepingClock:
    """A clock that only moves when the timed function 'sleeps' (the test knows every duration)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_function_that_sleeps_a_known_time_measures_as_that_time() -> None:
    clock = SleepingClock()
    rng = np.random.default_rng(1)
    durations = iter(0.010 + rng.uniform(-0.001, 0.001, size=10_000))
    t = measure(lambda: clock.sleep(next(durations)), warmup=2, min_time=0.5, min_count=5, clock=clock)
    assert t.calls_per_sample == 1
    assert t.count >= 5 and t.total >= 0.5
    assert t.minimum <= 0.010 <= t.maximum
    assert t.q1 <= 0.010 <= t.q3  # jitter symmetric around 10 ms: the median's box holds it
    assert abs(t.median - 0.010) < 0.001  # the jitter's bound (the clock is the test's, not real time)


def test_a_real_sleep_measures_at_least_its_time_and_within_its_spread() -> None:
    t = measure(lambda: time.sleep(0.005), warmup=1, min_time=0.03, min_count=3)
    assert t.minimum >= 0.005  # sleep never returns early
    assert t.minimum <= t.q1 <= t.median <= t.q3 <= t.maximum
    assert t.contains(t.median)


def test_short_calls_are_timed_in_batches() -> None:
    clock = SleepingClock()
    t = measure(lambda: clock.sleep(1e-6), warmup=0, min_time=0.01, min_count=3, clock=clock)
    assert t.calls_per_sample > 1
    assert t.median == pytest.approx(1e-6)


def test_min_count_and_max_count_are_kept() -> None:
    clock = SleepingClock()
    t = measure(lambda: clock.sleep(1.0), warmup=0, min_time=0.0, min_count=7, clock=clock)
    assert t.count == 7
    t = measure(lambda: clock.sleep(0.001), warmup=0, min_time=100.0, max_count=12, clock=clock)
    assert t.count == 12
    t = measure(lambda: clock.sleep(0.5), warmup=0, min_time=100.0, max_time=2.0, clock=clock)
    assert t.count == 4  # 4 x 0.5 s reaches max_time


def test_a_slower_implementation_ranks_slower() -> None:
    small, large = np.arange(5_000.0), np.arange(200_000.0)
    fast = measure(lambda: np.sort(small[::-1]), min_time=0.02, min_count=5)
    slow = measure(lambda: np.sort(large[::-1]), min_time=0.02, min_count=5)
    assert slow.median > fast.median


@pytest.mark.parametrize("values", [[3.0], [1.0, 4.0], [5.0, 1.0, 2.0, 9.0, 7.0, 3.0, 8.0]])
def test_quartiles_match_numpy(values: list[float]) -> None:
    s = summarize(values)
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    assert (s.q1, s.median, s.q3) == pytest.approx((q1, median, q3))
    assert (s.minimum, s.maximum, s.count) == (min(values), max(values), len(values))
    assert quantile(sorted(values), 1.0) == max(values)


def test_ratio_and_slow() -> None:
    assert ratio_to_baseline(0.3, 0.1) == pytest.approx(3.0)
    assert is_slow(ratio_to_baseline(0.3, 0.1)) and not is_slow(ratio_to_baseline(0.1, 0.1))
    assert ratio_to_baseline(None, 0.1) is None and ratio_to_baseline(0.1, 0.0) is None
    with pytest.raises(ValueError):
        summarize([])
    with pytest.raises(ValueError):
        summarize([float("nan")])


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_speed_query_through_the_workers_gives_ratios_to_float32() -> None:
    from explorer.queries.speed import speed

    result = speed(["exp"], ["float16", "float8_e4m3fn"], ["numpy"], ["eager"], min_time=0.01, min_count=3)
    rows = {r.dtype: r for r in result.rows}
    assert list(rows) == ["float32", "float16", "float8_e4m3fn"]
    assert rows["float32"].status == "ok" and rows["float32"].ratio_to_float32 == pytest.approx(1.0)
    f16 = rows["float16"]
    assert f16.status == "ok" and f16.result_dtype == "float16" and f16.samples >= 3
    assert f16.ratio_to_float32 == pytest.approx(f16.median_seconds / rows["float32"].median_seconds)
    assert f16.slow == (f16.ratio_to_float32 > 1.5 and f16.verdict == "slower")
    # the ratio comes with its interval from rounds of both, and a verdict that agrees with it
    assert rows["float32"].verdict == "baseline" and rows["float32"].ratio_low is None
    assert f16.rounds >= 16 and f16.ratio_low is not None and f16.ratio_high is not None
    assert f16.ratio_low <= f16.ratio_high
    side = "slower" if f16.ratio_low > 1 else "faster" if f16.ratio_high < 1 else "undecided"
    assert f16.verdict in (side, "undecided")
    assert f16.load is not None and f16.cores == os.cpu_count() and f16.cpu_share is not None
    assert f16.threads is None  # NumPy's threads are not set
    # numpy has no float8 dtype: the backend's own verdict, no timing
    numpy_verdict = __import__("explorer").get_backend("numpy").run("exp", "float8_e4m3fn").status.value
    assert rows["float8_e4m3fn"].status == numpy_verdict and rows["float8_e4m3fn"].median_seconds is None
    assert result.cells_measured == result.cells_planned == 3 and result.complete


def test_cli_budget_stops_the_catalog_and_says_how_far_it_got(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from explorer.cli import main

    status = main(["speed", "--catalog", "--backend", "numpy", "--budget", "4", "--json"])
    captured = capsys.readouterr()
    assert status == 0
    rows = json.loads(captured.out)["result"]
    line = captured.err.strip().splitlines()[-1]
    measured, planned = (int(w) for w in line.split()[1:4:2])
    # how many fit in 4 s depends on the machine's load (each cell needs its rounds): it stopped short
    assert measured == len(rows) and measured < planned
    assert "budget 4 s; it ran out before the rest" in line
    assert all("ratio_to_float32" in r for r in rows)


def test_cli_refuses_neither_op_nor_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    from explorer.cli import main

    assert main(["speed", "--backend", "numpy"]) == 2
    assert "give --op NAME" in capsys.readouterr().err


def test_interleaved_timing_keeps_each_calls_known_time() -> None:
    from explorer.runtime.timing import measure_interleaved

    clock = SleepingClock()
    t = measure_interleaved(
        {"slow": lambda: clock.sleep(0.004), "fast": lambda: clock.sleep(0.001)},
        warmup=1,
        min_time=0.02,
        min_count=3,
        clock=clock,
    )
    assert t["slow"].median == pytest.approx(0.004) and t["fast"].median == pytest.approx(0.001)
    assert t["slow"].count >= 3 and t["fast"].count >= 20  # each until its own min_time


def test_interleaved_rounds_share_a_load_change() -> None:
    """A load that doubles every call's time halfway through falls on both calls alike."""
    from explorer.runtime.timing import measure_interleaved

    clock = SleepingClock()
    calls = {"n": 0}

    def loaded(seconds: float) -> None:
        calls["n"] += 1
        clock.sleep(seconds * (2 if calls["n"] > 20 else 1))

    t = measure_interleaved(
        {"a": lambda: loaded(0.002), "b": lambda: loaded(0.001)},
        warmup=0,
        min_time=0.0,
        min_count=20,
        clock=clock,
    )
    assert t["a"].median / t["b"].median == pytest.approx(2.0)


def test_a_speed_worker_sets_pytorchs_threads_and_states_them() -> None:
    """measure_group's thread setting, in this process: the count PyTorch itself then reports."""
    from tests.support.require import require_module

    require_module("torch")
    import torch

    from explorer.runtime.speed import set_threads

    before = torch.get_num_threads()
    try:
        assert set_threads("torch", 1) == {"torch": 1} and torch.get_num_threads() == 1
        assert set_threads("numpy", 1) == {}  # NumPy's threads are not set, nor stated
        with pytest.raises(ValueError):
            set_threads("torch", 0)
    finally:
        torch.set_num_threads(before)
