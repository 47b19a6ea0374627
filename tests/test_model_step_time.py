"""The model check's measured training step per policy (``time_steps=True``, ``--time-steps``):
the plumbing with an injected clock whose readings the test knows, the ranking of a step that
really does more work, and the CLI's JSON and text.  No timing thresholds."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from explorer.cli import main
from explorer.queries.model_check import PolicyResult
from explorer.queries.model_step_time import step_phrase, with_step_times
from explorer.runtime.model_step import time_steps
from tests.support.require import require_module


class TickingClock:
    """A clock that moves only when told to (``advance``) or by ``tick`` seconds per reading."""

    def __init__(self, tick: float = 0.0) -> None:
        self.now = 0.0
        self.tick = tick

    def __call__(self) -> float:
        self.now += self.tick
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def test_each_step_measures_as_the_time_it_takes_on_the_clock() -> None:
    clock = TickingClock()
    took = {"float32": 0.002, "bfloat16": 0.005, "float16": 0.0031}
    calls = dict.fromkeys(took, 0)

    def step(name: str) -> Any:
        def run() -> None:
            calls[name] += 1
            clock.advance(took[name])

        return run

    timed = time_steps({name: step(name) for name in took}, min_time=0.05, min_count=5, clock=clock)
    for name, seconds in took.items():
        summary = timed[name]
        assert summary.median == pytest.approx(seconds)
        assert summary.q1 == pytest.approx(seconds) and summary.q3 == pytest.approx(seconds)
        # every timed sample is one call: warm-up and the first (batching) call come on top
        assert summary.count == calls[name] - 2 and summary.calls_per_sample == 1
        # until min_time seconds of this step were timed (min_count is reached before)
        assert summary.total == pytest.approx(seconds * summary.count)
        assert summary.total >= 0.05 > summary.total - seconds
    assert time_steps({}) == {}


@pytest.fixture(scope="module")
def jax_mlp() -> tuple[Any, Any, np.ndarray]:
    """A two-layer JAX MLP ``fn(params, x)``, its params and an input."""
    require_module("jax")
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    params = {
        "w1": rng.standard_normal((16, 32)).astype(np.float32),
        "w2": rng.standard_normal((32, 4)).astype(np.float32),
    }

    def fn(p: Any, x: Any) -> Any:
        return jnp.tanh(x @ p["w1"]) @ p["w2"]

    return fn, params, rng.standard_normal((8, 16)).astype(np.float32)


class ClockedRunner:
    """A framework runner whose steps take a known time on ``clock`` (and one policy's step
    fails as a missing kernel would)."""

    def __init__(self, clock: TickingClock, took: dict[str, float], failing: str) -> None:
        self.clock, self.took, self.failing = clock, took, failing

    def training_step(self, model: Any, inputs: Any, policy: str) -> Any:
        if policy == self.failing:
            raise RuntimeError(f"no kernel for {policy}\nsecond line")
        return lambda: self.clock.advance(self.took[policy])


def _result(policy: str, device: str) -> PolicyResult:
    return PolicyResult(policy, device, True, "", None, None, 0.0, 0.0, 1.0, None, f"{policy} ran", None)


def test_check_results_carry_each_policys_step_time_and_ratio() -> None:
    clock = TickingClock()
    took = {"float32": 0.004, "mixed_float16": 0.002, "mixed_bfloat16": 0.010}
    runner = ClockedRunner(clock, took, failing="float16")
    policies = ("float32", "mixed_float16", "mixed_bfloat16", "float16")
    results = [_result(p, d) for p in policies for d in ("CPU", "GPU")]
    out, notes = with_step_times(results, runner, None, (), policies, {}, clock)
    for result in out:
        if result.device == "GPU" or result.policy == "float16":
            assert result.step_time is None and result.step_ratio_to_float32 is None
            assert result.sentence == f"{result.policy} ran"
            continue
        seconds = took[result.policy]
        assert result.step_time is not None and result.step_time.median == pytest.approx(seconds)
        assert result.step_ratio_to_float32 == pytest.approx(seconds / took["float32"])
        # the steps take the same time every round: the interval is the ratio itself, and its side of 1x
        # the verdict (float32's own row has no verdict)
        phrase = step_phrase(result.step_time, result.step_ratio_to_float32)
        ratio = seconds / took["float32"]
        if result.policy == "float32":
            assert result.sentence == f"{result.policy} ran; {phrase}"
        else:
            verdict = "faster" if ratio < 1 else "slower"
            assert result.sentence.startswith(f"{result.policy} ran; {phrase[:-1]}, {verdict}: ")
            assert f"{ratio:.3g}x-{ratio:.3g}x (99.99%, " in result.sentence
        row = json.loads(json.dumps(result.to_dict()))
        assert row["step_time"]["median"] == pytest.approx(seconds)
        assert row["step_ratio_to_float32"] == pytest.approx(seconds / took["float32"])
    assert notes[0] == (
        "step time under float16: not measured, the plain step failed (RuntimeError: no kernel for float16)"
    )
    assert all(
        n.startswith(("step times measured with intra-op threads: ", "step times: the machine"))
        for n in notes[1:]
    )


def test_a_step_that_does_more_work_ranks_slower(jax_mlp: Any) -> None:
    from explorer.runtime import model_jax

    fn, params, _ = jax_mlp
    big = np.random.default_rng(1).standard_normal((512, 16)).astype(np.float32)

    def many(p: Any, x: Any) -> Any:  # the same model, 8 times over
        return sum(fn(p, x * (1.0 + i / 8)) for i in range(8))

    once_step = model_jax.training_step(fn, [big], "float32", params=params)
    many_step = model_jax.training_step(many, [big], "float32", params=params)
    timed = time_steps({"once": once_step, "many": many_step}, min_time=0.05)
    assert timed["many"].median > timed["once"].median


def test_step_phrase_reads_the_summary() -> None:
    from explorer.analysis.speed import summarize

    samples = [0.004, 0.002, 0.003, 0.010]
    phrase = step_phrase(summarize(samples), 2.0)
    assert phrase.startswith(f"step {float(np.median(samples)) * 1e3:.3g} ms")
    assert "4 samples" in phrase and "2.00x float32" in phrase
    assert "x float32" not in step_phrase(summarize(samples), None)


@pytest.mark.slow
def test_cli_time_steps_json_and_text(capsys: Any) -> None:
    require_module("torch")
    args = ["model", "--builtin", "mlp", "--framework", "torch", "--device", "CPU"]
    args += ["--policy", "float32", "--policy", "bfloat16", "--time-steps"]
    assert main([*args, "--json"]) == 0
    results = json.loads(capsys.readouterr().out)["result"]["results"]
    assert [r["policy"] for r in results] == ["float32", "bfloat16"]
    for row in results:
        step = row["step_time"]
        assert step["count"] >= 5 and step["minimum"] <= step["q1"] <= step["median"] <= step["q3"]
        assert step["q3"] <= step["maximum"] and step["median"] > 0
    assert results[0]["step_ratio_to_float32"] == pytest.approx(1.0)
    ratio = results[1]["step_time"]["median"] / results[0]["step_time"]["median"]
    assert results[1]["step_ratio_to_float32"] == pytest.approx(ratio)
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert (
        lines[0].startswith("float32 on CPU")
        and "ms measured here" in lines[0]
        and "1.00x float32" in lines[0]
    )
    assert "ms measured here" in lines[1]
    # without the flag: no step time
    assert main([*args[:-1], "--json"]) == 0
    assert all(r["step_time"] is None for r in json.loads(capsys.readouterr().out)["result"]["results"])


@pytest.mark.slow
def test_keras_step_gives_every_gradient_under_a_mixed_policy() -> None:
    require_module("tensorflow")
    from explorer.runtime import model_builtin, model_keras

    model = model_builtin.build("mlp", "keras")
    inputs = model_builtin.example_inputs("mlp", "keras")
    grads = model_keras.training_step(model, inputs, "mixed_bfloat16")()
    # one gradient per trainable variable (kept in float32 by the mixed policy), then the input's
    expected = [(tuple(v.shape), "float32") for v in model.trainable_variables]
    expected += [(x.shape, "float32") for x in inputs]
    assert [(tuple(g.shape), g.dtype.name) for g in grads] == expected
    assert all(np.all(np.isfinite(g.numpy())) and np.any(g.numpy() != 0) for g in grads)


def test_the_steps_are_timed_on_the_default_threads_and_the_count_restored_after() -> None:
    require_module("torch")
    import torch

    from explorer.runtime.speed import DEFAULT_THREADS, held_threads

    before = torch.get_num_threads()
    with held_threads(DEFAULT_THREADS) as stated:
        assert torch.get_num_threads() == DEFAULT_THREADS == stated["torch"]
    assert torch.get_num_threads() == before
