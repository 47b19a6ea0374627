"""Keras mixed-precision training: real runs under Keras' own policies and LossScaleOptimizer."""

from __future__ import annotations

import json
import threading

import ml_dtypes
import numpy as np
import pytest

from explorer import training as T
from explorer.training import (
    POLICY_NAMES,
    EpochRecord,
    GradientHistogram,
    StepRecord,
    TrainingConfig,
    policy_spec,
    run_policies,
    start_training,
    train,
)

SMALL = {"epochs": 2, "max_train_samples": 256, "batch_size": 64}


@pytest.fixture(scope="module")
def keras():
    from explorer.backends.tensorflow_backend import import_tensorflow

    import_tensorflow()
    import keras

    return keras


def _keras_state(keras):
    from keras.src.backend.common import global_state

    return keras.config.floatx(), global_state.get_global_attribute("dtype_policy", None)


# ------------------------------------------------------------------ bad input


def test_bad_policy_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="valid policies: float32, mixed_float16"):
        policy_spec("float8")
    with pytest.raises(TypeError):
        policy_spec(16)  # type: ignore[arg-type]
    assert policy_spec("mixed_float16_no_loss_scale").name == "mixed_float16_no_scaling"
    assert set(T.POLICIES) == set(POLICY_NAMES)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"model": "rnn"}, "valid models: mlp, cnn"),
        ({"scenario": "overflow"}, "valid scenarios: default, underflow"),
        ({"epochs": 0}, "epochs must be a positive integer"),
        ({"batch_size": 0}, "batch_size"),
        ({"learning_rate": -1.0}, "learning_rate"),
        ({"max_train_samples": 3}, "max_train_samples"),
    ],
)
def test_bad_config_is_a_clear_error(fields: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TrainingConfig(**fields).validated()
    with pytest.raises(ValueError, match=message):
        train(**fields)


def test_bad_arguments_to_the_runners() -> None:
    with pytest.raises(TypeError, match="TrainingConfig"):
        train(config="float32")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no policies"):
        run_policies([])
    with pytest.raises(ValueError, match="valid policies"):
        start_training(["float32", "nope"])


# ------------------------------------------------------------------ dtypes under the policies


def test_mixed_float16_keeps_float32_variables_and_computes_in_float16(keras) -> None:
    import tensorflow as tf

    before = _keras_state(keras)
    with T.keras_policy(policy_spec("mixed_float16")):
        assert keras.config.dtype_policy().name == "mixed_float16"
        model = T.build_model("mlp", (60,), seed=0)
        assert all(v.dtype == "float32" for v in model.trainable_variables)
        assert all(layer.compute_dtype == "float16" for layer in model.layers)
        x = tf.constant(T.load_digits_data("mlp").x_train[:32])
        with tf.GradientTape() as tape:
            hidden = model.layers[0](x)
            tape.watch(hidden)
            logits = model.layers[2](model.layers[1](hidden))
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(
                tf.zeros(32, tf.int32), logits
            )
        assert hidden.dtype == tf.float16 and logits.dtype == tf.float16
        assert loss.dtype == tf.float32  # losses are computed in floatx
        grad_hidden, *grad_vars = tape.gradient(loss, [hidden, *model.trainable_variables])
        assert grad_hidden.dtype == tf.float16  # the backward pass runs in float16
        for g in grad_vars:
            assert g.dtype == tf.float32  # ... and arrives at the float32 variable cast up
            values = g.numpy()
            # every element is a float16 value: the gradient was computed in float16
            np.testing.assert_array_equal(values.astype(np.float16).astype(np.float32), values)
    assert _keras_state(keras) == before


@pytest.mark.parametrize(
    ("policy", "compute", "variables"),
    [
        ("float16", "float16", "float16"),
        ("bfloat16", "bfloat16", "bfloat16"),
        ("mixed_bfloat16", "bfloat16", "float32"),
    ],
)
def test_each_policy_sets_keras_dtypes_and_restores_them(keras, policy, compute, variables) -> None:
    before = _keras_state(keras)
    with T.keras_policy(policy_spec(policy)):
        model = T.build_model("mlp", (60,), seed=0)
        assert model.layers[0].compute_dtype == compute
        assert {v.dtype for v in model.trainable_variables} == {variables}
        if policy in ("float16", "bfloat16"):
            assert keras.config.floatx() == policy
    assert _keras_state(keras) == before


def test_policy_is_restored_when_the_run_fails(keras) -> None:
    before = _keras_state(keras)
    with pytest.raises(RuntimeError), T.keras_policy(policy_spec("float16")):
        raise RuntimeError("boom")
    assert _keras_state(keras) == before


# ------------------------------------------------------------------ Keras' LossScaleOptimizer


def test_loss_scale_halves_on_nonfinite_gradient_and_grows_after_clean_steps(keras) -> None:
    import tensorflow as tf

    config = TrainingConfig(policy="mixed_float16", initial_scale=8.0, dynamic_growth_steps=2)
    opt = T.make_optimizer(policy_spec("mixed_float16"), config, learning_rate=0.1, epsilon=1e-7)
    assert isinstance(opt, keras.optimizers.LossScaleOptimizer)
    var = keras.Variable(np.ones(3, np.float32))
    opt.build([var])
    assert float(opt.dynamic_scale.numpy()) == 8.0
    assert float(opt.scale_loss(tf.constant(2.0))) == 16.0

    opt.apply([tf.constant([1.0, np.inf, 0.0])], [var])
    assert float(opt.dynamic_scale.numpy()) == 4.0  # halved
    np.testing.assert_array_equal(var.numpy(), np.ones(3))  # the step was skipped
    opt.apply([tf.constant([np.nan, 0.0, 0.0])], [var])
    assert float(opt.dynamic_scale.numpy()) == 2.0

    opt.apply([tf.constant([8.0, 8.0, 8.0])], [var])
    assert float(opt.dynamic_scale.numpy()) == 2.0  # one clean step: not yet
    assert np.all(var.numpy() < 1.0)  # applied (unscaled) this time
    opt.apply([tf.constant([8.0, 8.0, 8.0])], [var])
    assert float(opt.dynamic_scale.numpy()) == 4.0  # doubled after dynamic_growth_steps clean steps
    # without loss scaling the plain Keras optimizer is used
    plain = T.make_optimizer(policy_spec("mixed_float16_no_scaling"), config, 0.1, 1e-7)
    assert not isinstance(plain, keras.optimizers.LossScaleOptimizer)


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_training_records_the_optimizers_loss_scale_and_skips() -> None:
    # an initial scale of 2**22 overflows float16 gradients (max 65504): Keras halves it
    r = train(policy="mixed_float16", initial_scale=2.0**22, dynamic_growth_steps=1000, **SMALL)
    scales = [s.loss_scale for s in r.steps]
    skipped = [s.skipped for s in r.steps]
    assert scales[0] == 2.0**22
    assert skipped[0] and r.steps[0].grad_nonfinite_fraction > 0
    for a, b, skip in zip(scales, scales[1:], skipped, strict=False):
        assert b == (a / 2 if skip else a)
    assert not all(skipped) and scales[-1] <= 2.0**20
    for s in r.steps:  # a step is skipped exactly when a scaled gradient was not finite
        assert s.skipped == (s.grad_nonfinite_fraction > 0)
    assert r.skipped_steps == sum(skipped) >= 3
    assert r.epochs[-1].loss_scale == scales[-1]


# ------------------------------------------------------------------ real runs


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
@pytest.mark.parametrize("policy", ["float32", "mixed_float16", "mixed_bfloat16"])
def test_loss_falls_under_float32_and_mixed_policies(policy) -> None:
    r = train(policy=policy, epochs=3, max_train_samples=512)
    losses = [e.loss for e in r.epochs]
    assert losses[0] > losses[1] > losses[2]
    assert r.final["val_accuracy"] > 0.4  # chance is 0.1
    assert r.compute_dtype == {"float32": "float32", "mixed_float16": "float16"}.get(policy, "bfloat16")
    assert r.variable_dtype == "float32"
    assert not r.cancelled and len(r.steps) == r.total_steps == 24


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_records_stream_in_order_with_progress_and_histograms() -> None:
    seen: list = []
    progress: list[tuple[int, int]] = []
    r = train(policy="float32", callback=seen.append, progress=lambda d, t: progress.append((d, t)), **SMALL)
    steps_per_epoch = 4
    kinds = [type(x) for x in seen]
    assert kinds.count(StepRecord) == 2 * steps_per_epoch and kinds.count(EpochRecord) == 2
    assert kinds.index(EpochRecord) > max(i for i, k in enumerate(kinds[:5]) if k is StepRecord)
    assert progress == [(i, 8) for i in range(1, 9)]
    assert [s.step for s in r.steps] == list(range(8))
    hists = [x for x in seen if isinstance(x, GradientHistogram)]
    assert [h.step for h in hists] == [0, 7] == [h.step for h in r.histograms]
    n_params = 60 * 64 + 64 + 64 * 64 + 64 + 64 * 10 + 10
    for h in hists:
        assert h.total == n_params
        assert sum(h.counts) + h.zero_count + h.nonfinite_count == n_params
    # zero fraction of step 0 agrees with its histogram
    assert r.steps[0].grad_zero_fraction == pytest.approx(hists[0].zero_count / n_params)


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_runs_are_deterministic_for_a_seed() -> None:
    a = train(policy="float32", **SMALL)
    b = train(policy="float32", **SMALL)
    c = train(policy="float32", seed=1, **SMALL)
    assert [s.loss for s in a.steps] == [s.loss for s in b.steps]
    assert [s.loss for s in a.steps] != [s.loss for s in c.steps]


@pytest.mark.slow
def test_cancel_stops_between_steps() -> None:
    cancel = threading.Event()
    cancel.set()
    r = train(policy="float32", cancel=cancel, **SMALL)
    assert r.cancelled and r.steps == [] and r.epochs == []

    stop_after = threading.Event()

    def watch(record) -> None:
        if isinstance(record, StepRecord) and record.step >= 5:
            stop_after.set()

    job = start_training(["float32", "mixed_bfloat16"], callback=watch, epochs=50, max_train_samples=256)
    assert stop_after.wait(60)
    job.cancel()
    results = job.wait(60)
    assert job.done and job.cancelled
    assert len(results) == 1 and results[0].cancelled
    assert len(results[0].steps) < results[0].total_steps == 200
    done, total = job.progress
    assert 0 < done < total == 400
    assert job.records and isinstance(job.records[0], StepRecord)


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_cnn_trains_under_mixed_float16() -> None:
    r = train(policy="mixed_float16", model="cnn", epochs=2, max_train_samples=512)
    assert r.compute_dtype == "float16"
    assert r.epochs[1].loss < r.epochs[0].loss
    # conv + dense parameters
    assert r.histograms[0].total == 16 * 9 + 16 + 32 * 16 * 9 + 32 + 32 * 16 * 10 + 10


@pytest.mark.slow
def test_underflow_scenario_loss_scaling_rescues_float16() -> None:
    f32, scaled, unscaled = run_policies(
        ["float32", "mixed_float16", "mixed_float16_no_scaling"], scenario="underflow", epochs=6
    )
    # without loss scaling most float16 gradients flush to zero and training stalls
    assert unscaled.grad_zero_fraction >= 0.10
    assert f32.grad_zero_fraction < 0.05 and scaled.grad_zero_fraction < 0.05
    assert unscaled.final["loss"] > 3 * f32.final["loss"]
    # Keras' dynamic loss scaling brings the final loss within 5% of float32's
    assert scaled.final["loss"] == pytest.approx(f32.final["loss"], rel=0.05)
    assert scaled.final["val_accuracy"] > 0.8
    # the underflow is what float16 makes of the gradient: its smallest subnormal bounds it
    tiny16 = float(ml_dtypes.finfo(np.float16).smallest_subnormal)
    hist = unscaled.histograms[0]
    lowest_bin = next(i for i, c in enumerate(hist.counts) if c)
    assert hist.edges[lowest_bin + 1] > np.log2(tiny16)


# ------------------------------------------------------------------ results, plots, CLI


@pytest.mark.slow
def test_result_json_and_plots(tmp_path) -> None:
    from explorer.plots.training import (
        plot_curves,
        plot_gradient_histogram,
        plot_loss_scale,
        training_figure,
    )

    results = run_policies(["float32", "mixed_float16"], **SMALL)
    data = json.loads(json.dumps([r.to_dict() for r in results]))
    assert [d["policy"] for d in data] == ["float32", "mixed_float16"]
    for key in ("loss", "accuracy", "val_accuracy", "loss_scale", "grad_zero_fraction"):
        assert key in data[0]["history"][0]
    assert data[0]["history"][0]["loss_scale"] is None and data[1]["history"][0]["loss_scale"] == 2.0**15
    ax = plot_curves(results, "val_accuracy")
    assert len(ax.get_lines()) == 2
    assert len(plot_loss_scale(results).get_lines()) == 1
    hist_ax = plot_gradient_histogram(results[1].histograms)
    assert hist_ax.get_xlim() == (-66.0, 22.0)
    training_figure(results).savefig(tmp_path / "t.png")
    with pytest.raises(ValueError, match="valid metrics"):
        plot_curves(results, "speed")


@pytest.mark.slow
def test_cli_train_json_and_errors(capsys, tmp_path) -> None:
    from explorer.cli import main

    assert main(["train", "--policy", "fp9"]) == 2
    assert "valid policies: float32" in capsys.readouterr().err
    assert main(["train", "--model", "rnn"]) == 2
    assert "valid models" in capsys.readouterr().err
    rc = main(
        [
            "train",
            "--policy",
            "float32",
            "--policy",
            "bfloat16",
            "--epochs",
            "1",
            "--json",
            "--out",
            str(tmp_path),
        ]
    )
    assert rc == 0
    data = json.loads(capsys.readouterr().out)["result"]
    assert [d["policy"] for d in data] == ["float32", "bfloat16"]
    for d in data:
        assert len(d["history"]) == 1 and d["seconds"] > 0
        assert set(d["final"]) >= {"loss", "accuracy", "val_accuracy"}
        assert {"loss", "accuracy", "val_accuracy", "loss_scale", "grad_zero_fraction"} <= set(
            d["history"][0]
        )
    assert (tmp_path / "training.png").stat().st_size > 0
    assert (tmp_path / "gradients_float32.png").exists()
    # issue 24, item 4: the keys --help lists are the keys each result has, at the level it
    # says (grad_zero_fraction was listed in the result; it is in each epoch of history)
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    said = " ".join(capsys.readouterr().out.split()).split("; result: ", 1)[1]
    top, nested = _help_keys(said)
    for d in data:
        assert top == set(d), (top, set(d))
        assert nested["history"] == set(d["history"][0])
        assert nested["final"] == set(d["final"])


def _help_keys(said: str) -> tuple[set[str], dict[str, set[str]]]:
    """The keys ``train --help`` lists for each result: "(a, b, history: [one object per epoch:
    c, d], final: {e, f}, g)" -> ({a, b, history, final, g}, {history: {c, d}, final: {e, f}})."""
    import re

    inner = said[said.index("(") + 1 : said.rindex(")")]
    listed = r"(\w+): [\[{](?:one object per \w+: )?([^\]}]*)[\]}]"
    nested = {name: set(body.split(", ")) for name, body in re.findall(listed, inner)}
    top = set(re.sub(listed, r"\1", inner).split(", "))
    return top, nested


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_keras_callbacks_get_the_hooks_and_can_stop_the_run(keras) -> None:
    batches: list = []
    epochs: list = []
    spy = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda b, logs: batches.append((b, sorted(logs))),
        on_epoch_end=lambda e, logs: epochs.append((e, sorted(logs))),
    )
    # needs an improvement of 10 in the loss every epoch: stops after the second epoch
    stop = keras.callbacks.EarlyStopping(monitor="loss", min_delta=10.0, patience=0)
    r = train(policy="float32", epochs=5, max_train_samples=256, keras_callbacks=[spy, stop])
    assert r.stopped_early and not r.cancelled and len(r.epochs) == 2
    assert [b for b, _ in batches] == [0, 1, 2, 3] * 2
    assert batches[0][1] == ["accuracy", "loss"]
    assert epochs == [
        (0, ["accuracy", "loss", "val_accuracy", "val_loss"]),
        (1, ["accuracy", "loss", "val_accuracy", "val_loss"]),
    ]
    assert r.to_dict()["stopped_early"] is True
