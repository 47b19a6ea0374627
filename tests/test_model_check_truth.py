"""The model check true on the user's own model (issue 35) and on hostile inputs (issue 39),
each claim against an independent computation: a direct Keras run under the policy, a
GradientTape over ``trainable_variables``, ml_dtypes' rounding, gfloat's MX reading."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from explorer.analysis.model_numerics import tensor_stats, verdict
from explorer.analysis.model_summary import is_missing_kernel, policy_problem, policy_sentence
from explorer.cli import main
from tests.support.require import require_module

# ------------------------------------------------------------------ pure rules (fast)


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_underflow_is_what_round_to_nearest_takes_to_zero(name: str) -> None:
    np_type = getattr(ml_dtypes, name, None) or np.dtype(name).type
    sub = float(ml_dtypes.finfo(np_type).smallest_subnormal)
    rng = np.random.default_rng(3)
    values = (sub * rng.uniform(0.2, 1.2, 2000)).astype(np.float32)
    values[:3] = np.float32(sub / 2), np.nextafter(np.float32(sub / 2), np.float32(1)), np.float32(sub * 0.75)
    oracle = float(np.mean(values.astype(np_type).astype(np.float32) == 0))  # the hardware's rounding
    stats = tensor_stats(values, values, [name])
    assert (
        stats.to_zero[name] == pytest.approx(oracle, abs=0)
        and stats.grad_to_zero[name] == stats.to_zero[name]
    )
    assert 0 < oracle < stats.below_subnormal[name]  # "below the smallest subnormal" overstates the loss
    # values between half the smallest subnormal and it survive: not lost
    kept = np.full(100, np.float32(sub * 0.6))
    assert np.all(kept.astype(np_type) != 0)
    assert verdict(tensor_stats([1.0], kept, [name]), name) == "fits"
    assert verdict(tensor_stats(kept, None, [name]), name) == "fits"


def test_missing_kernel_texts_of_every_framework_are_missing_kernel() -> None:
    texts = [
        "RuntimeError: MKL FFT doesn't support tensors of type: Half",
        "jax.errors.JaxRuntimeError: UNIMPLEMENTED: Unsupported dtype bfloat16",
        "Could not find device for node: {{node MatMul}} = MatMul[T=DT_HALF]",
        "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'",
    ]
    for text in texts:
        assert is_missing_kernel(text), text
        problem = policy_problem(
            "float16", "CPU", [], ran=False, error=text, failing=None, failing_stage="forward",
            failing_name=None, nonfinite=None, zero_grad=None, zero_grad_scaled=None,
            baseline_zero_grad=None, loss_scale=1.0,
        )  # fmt: skip
        assert problem is not None and problem.kind == "missing_kernel", text
    assert not is_missing_kernel("Input 'y' of 'AddV2' Op has type float32 that does not match type float16")


def test_a_sentence_never_recommends_what_was_run_and_did_not_help() -> None:
    problem = policy_problem(
        "autocast_float16", "CPU", [], ran=True, error="", failing=None, failing_stage="", failing_name=None,
        nonfinite=None, zero_grad=0.6, zero_grad_scaled=0.6, baseline_zero_grad=0.0, loss_scale=2.0**15,
    )  # fmt: skip
    assert problem is not None and problem.kind == "lost_gradients"
    sentence = policy_sentence("autocast_float16", "CPU", "PyTorch", [], problem, ran=True)
    assert "does not keep them" in sentence and "use loss scaling" not in sentence
    assert problem.workaround == ""


def _gfloat() -> Any:
    require_module("gfloat", "pip install gfloat (the test extra)")
    import gfloat
    import gfloat.formats

    return gfloat


# ------------------------------------------------------------------ Keras


def _keras() -> Any:
    from explorer.backends.tensorflow_backend import import_tensorflow

    import_tensorflow()
    import keras

    return keras


@pytest.fixture
def global_policy() -> Any:
    """Sets Keras' global dtype policy for one test and resets it to float32 after."""
    keras = _keras()
    yield keras.mixed_precision.set_dtype_policy
    keras.mixed_precision.set_dtype_policy("float32")


def _computing(check: Any, layer: str) -> list[Any]:
    return [op for op in check.ops if op.layer == layer and not op.data_movement]


def test_keras_model_built_under_a_global_policy_is_checked_as_built(global_policy: Any) -> None:
    keras = _keras()
    from explorer import check_model

    global_policy("mixed_bfloat16")  # issue 39: built under a global policy, reset before the check
    inp = keras.Input((6,))
    model = keras.Model(inp, keras.layers.Dense(4, name="head")(keras.layers.Dense(8, name="body")(inp)))
    global_policy("float32")
    x = np.random.default_rng(0).standard_normal((3, 6)).astype(np.float32)
    direct = model(x)  # the oracle: the model as built computes in bfloat16
    assert direct.dtype == "bfloat16"
    check = check_model(model, x, policies=["as_built", "float32"], devices=["CPU"])
    for op in _computing(check, "body") + _computing(check, "head"):
        assert op.dtype["as_built"] == "bfloat16" and op.dtype["float32"] == "float32", op.raw_op
    assert check.summary[0].startswith("as_built (mixed_bfloat16, as you built it) on CPU")
    # float32 is everything in float32: its maximum is a float32 forward pass written here
    k1, b1, k2, b2 = (np.asarray(w, np.float64) for w in model.get_weights())
    expected = np.abs((x @ k1 + b1) @ k2 + b2).max()
    head = next(op for op in _computing(check, "head") if op.raw_op == "BiasAdd")
    assert head.max_abs == pytest.approx(expected, rel=1e-5)
    assert model.layers[1].dtype_policy.name == "mixed_bfloat16"  # the user's model untouched


def test_keras_per_layer_dtypes_are_kept_and_said(global_policy: Any) -> None:
    keras = _keras()
    from explorer import check_model

    global_policy("mixed_float16")  # TensorFlow's mixed-precision guide: the head built in float32
    inp = keras.Input((6,))
    hidden = keras.layers.Dense(8, name="hidden")(inp)
    model = keras.Model(inp, keras.layers.Dense(3, dtype="float32", name="logits")(hidden))
    global_policy("float32")
    x = np.ones((2, 6), np.float32)
    check = check_model(model, x, policies=["mixed_float16", "mixed_bfloat16"], devices=["CPU"])
    assert model(x).dtype == "float32" and model.layers[1](x).dtype == "float16"  # the oracle, direct
    for op in _computing(check, "logits"):
        assert op.dtype["mixed_float16"] == "float32" and op.dtype["mixed_bfloat16"] == "float32"
    assert {op.dtype["mixed_bfloat16"] for op in _computing(check, "hidden")} == {"bfloat16"}
    assert all("`logits` kept in float32 as you built it" in s for s in check.summary)


def test_keras_zero_gradients_are_over_trainable_variables_only() -> None:
    keras = _keras()
    import tensorflow as tf

    from explorer import check_model

    inp = keras.Input((4,))
    frozen = keras.layers.Dense(8, activation="relu", name="frozen")
    frozen.trainable = False
    h = keras.layers.BatchNormalization(name="bn")(frozen(inp))
    dead = keras.layers.Dense(8, activation="relu", name="dead", bias_initializer="zeros")
    model = keras.Model(inp, keras.layers.Dense(2, name="out")(dead(h)))
    dead.set_weights([-np.abs(dead.get_weights()[0]) - 1.0, np.full(8, -5.0, np.float32)])  # ReLU never opens
    x = np.abs(np.random.default_rng(1).standard_normal((8, 4))).astype(np.float32)
    with tf.GradientTape() as tape:  # the oracle: a tape over the trainable variables
        loss = tf.reduce_mean(tf.square(model(x, training=False)))
    grads = [np.asarray(g) for g in tape.gradient(loss, model.trainable_variables)]
    expected = sum(int(np.count_nonzero(g == 0)) for g in grads) / sum(g.size for g in grads)
    check = check_model(model, x, policies=["float32"], devices=["CPU"])
    assert check.results[0].zero_grad == pytest.approx(expected, abs=1e-12)
    note = next(n for n in check.notes if "non-trainable" in n)
    assert f"{len(model.non_trainable_variables)} non-trainable" in note


def test_keras_bfloat16_flush_to_zero_is_a_direct_runs_finding() -> None:
    _keras()
    import tensorflow as tf

    from explorer.runtime.model_keras import flush_to_zero_formats

    sub = float(ml_dtypes.finfo(ml_dtypes.bfloat16).smallest_subnormal)
    a = tf.cast(
        tf.constant([[sub * 8]], tf.float32), tf.bfloat16
    )  # the oracle: a matmul, not the probe's Mul
    flushed = float(tf.linalg.matmul(a, tf.ones((1, 1), tf.bfloat16))[0, 0]) == 0.0
    assert ("bfloat16" in flush_to_zero_formats()) == flushed


def test_keras_no_gradient_is_said_not_no_problem() -> None:
    keras = _keras()
    import tensorflow as tf

    from explorer import check_model

    inp = keras.Input((5,))
    model = keras.Model(
        inp, keras.layers.Dense(4, activation="softmax", kernel_initializer="zeros", name="probs")(inp)
    )
    x = np.random.default_rng(2).standard_normal((3, 5)).astype(np.float32)
    with tf.GradientTape() as tape:  # uniform softmax: the loss has no gradient at all
        loss = tf.reduce_mean(tf.square(model(x)))
    assert all(not np.any(np.asarray(g)) for g in tape.gradient(loss, model.trainable_variables))
    check = check_model(model, x, policies=["float32", "mixed_bfloat16"], devices=["CPU"])
    assert all("no gradient flowed" in s and "no problem found" not in s for s in check.summary)
    assert check.first_problem is not None and check.first_problem.kind == "no_gradient" and not check.ok


def test_keras_underflowing_layers_are_a_problem_in_the_sentence() -> None:
    keras = _keras()
    from explorer import check_model

    inp = keras.Input((64,))
    tiny = keras.layers.Rescaling(1e-8, name="tiny")(inp)
    out = keras.layers.Dense(2, name="out")
    out.trainable = False  # no trainable gradient to lose: the underflow is the finding
    model = keras.Model(inp, out(tiny))
    x = np.random.default_rng(4).standard_normal((4, 64)).astype(np.float32)
    lost = np.mean((x * np.float32(1e-8)).astype(np.float16) == 0)  # the oracle: float16's rounding
    assert lost > 0.01
    check = check_model(model, x, policies=["mixed_float16"], devices=["CPU", "GPU"])
    cpu = check.results[0]
    assert cpu.problem is not None and cpu.problem.kind == "underflows" and "underflow" in cpu.sentence
    assert "`tiny`" in cpu.sentence and "no problem found" not in cpu.sentence
    assert check.results[1].problem is not None and not check.results[1].problem.observed


def test_keras_gpu_prediction_never_contradicts_the_cpu_run() -> None:
    from explorer import check_model
    from explorer.runtime import model_builtin

    model = model_builtin.build("underflow")
    (x,) = model_builtin.example_inputs("underflow")
    check = check_model(model, x, policies=["mixed_float16"], devices=["CPU", "GPU"])
    cpu, gpu = check.results
    assert cpu.problem is None and gpu.problem is None, (cpu.sentence, gpu.sentence)
    assert (
        "a prediction from declarations" in gpu.sentence
        and "loss scaling mixed_float16 applies" in gpu.sentence
    )
    assert "use loss scaling" not in " ".join(check.summary)


def test_nonfinite_inputs_are_said_first(tmp_path: Path, capsys: Any) -> None:
    from explorer import check_model
    from explorer.runtime import model_builtin

    model = model_builtin.build("mlp")
    (x,) = model_builtin.example_inputs("mlp")
    x = x.copy()
    x[0, 0], x[1, 1], x[2, 2] = np.nan, np.inf, -np.inf
    check = check_model(model, x, policies=["float32"], devices=["CPU"])
    assert check.summary[0].startswith("float32 on CPU, TensorFlow")
    assert "your inputs contain 1 NaN and 2 inf" in check.summary[0] and "no problem" not in check.summary[0]
    assert check.first_problem is not None and check.first_problem.kind == "nonfinite_inputs"
    path = tmp_path / "x.npy"
    np.save(path, np.full((2, x.shape[1]), np.nan, np.float32))
    status = main(
        ["model", "--builtin", "mlp", "--inputs", str(path), "--policy", "float32", "--device", "CPU"]
    )
    out = capsys.readouterr()
    assert status == 1 and "your inputs contain 32 NaN" in out.out and "no problem" not in out.out


def test_keras_block_errors_run_along_the_contraction_axis() -> None:
    keras = _keras()
    gfloat = _gfloat()
    from explorer import check_model
    from tests.support.block_oracles import mx_reading

    inp = keras.Input((64,))
    model = keras.Model(inp, keras.layers.Dense(8, use_bias=False, name="proj")(inp))
    rng = np.random.default_rng(5)
    kernel = (rng.standard_normal((64, 8)) * np.exp(rng.uniform(-4, 4, (64, 1)))).astype(np.float32)
    model.set_weights([kernel])
    check = check_model(model, np.ones((1, 64), np.float32), policies=["float32"], devices=["CPU"],
                        block_formats=["mxfp4_e2m1"])  # fmt: skip
    q = mx_reading(gfloat, "mxfp4_e2m1", kernel.T)  # blocks of 32 input features of each output
    expected = float(np.sqrt(np.mean(((q - kernel.T) / kernel.T) ** 2)))
    assert check.weight_block_errors["proj"]["mxfp4_e2m1"] == pytest.approx(expected, rel=1e-9)
    assert "along in (axis 0)" in check.block_axis


def test_keras_fix_search_keeps_the_consumer_too() -> None:
    keras = _keras()
    from explorer import check_model

    def build(dtypes: dict[str, str]) -> Any:
        inp = keras.Input((4,))
        big = keras.layers.Dense(4, name="big", dtype=dtypes.get("big"), kernel_initializer="ones")(inp)
        out = keras.layers.Rescaling(1e-3, name="shrink", dtype=dtypes.get("shrink"))(big)
        return keras.Model(inp, keras.layers.Dense(2, name="out", dtype=dtypes.get("out"))(out))

    x = np.full((2, 4), 3e4, np.float32)  # big gives 1.2e5: past float16's max
    model = build({})
    weights = model.get_weights()

    def finite_under(dtypes: dict[str, str]) -> bool:  # the oracle: the model built in those dtypes, run
        direct = build({k: dtypes.get(k, "mixed_float16") for k in ("big", "shrink", "out")})
        direct.set_weights(weights)
        return bool(np.all(np.isfinite(np.asarray(direct(x), np.float32))))

    assert not finite_under({}) and not finite_under({"big": "float32"})
    assert finite_under({"big": "float32", "shrink": "float32"})
    check = check_model(model, x, policies=["mixed_float16"], devices=["CPU"])
    tried = check.workarounds["mixed_float16"]
    assert [t["layers"] for t in tried] == [["big"], ["big", "shrink"]]
    assert [t["finite"] for t in tried] == [False, True]
    assert "keeping `big`, `shrink` in float32 was run on CPU and gives finite values" in check.summary[0]


# ------------------------------------------------------------------ JAX


def test_jax_functions_with_and_without_params_and_what_is_refused() -> None:
    require_module("jax")
    import jax.numpy as jnp

    from explorer import check_model

    x = np.linspace(-2, 2, 8, dtype=np.float32)
    alone = check_model(lambda t: jnp.tanh(t) * 3, (x,), policies=["float32"], devices=["CPU"])
    assert alone.ops and max(op.max_abs or 0 for op in alone.ops) == pytest.approx(3 * np.tanh(2), rel=1e-6)
    with_p = check_model(
        lambda p, t: jnp.tanh(t * p), (x,), params=np.float32(0.5), policies=["float32"], devices=["CPU"]
    )
    assert max(op.max_abs or 0 for op in with_p.ops) == pytest.approx(2.0 * 0.5, rel=1e-6)  # t * p
    with pytest.raises(ValueError, match="cannot be called as fn\\(1 input"):
        check_model(lambda p, t: t * p, (x,), devices=["CPU"])
    with pytest.raises(TypeError, match="not a JAX function"):
        check_model(print, x)
    with pytest.raises(ValueError, match="returns no floating array"):
        check_model(lambda t: None, x, devices=["CPU"])


def test_jax_block_errors_run_along_the_contraction_axis() -> None:
    require_module("jax")
    gfloat = _gfloat()

    from explorer import check_model
    from tests.support.block_oracles import mx_reading

    kernel = (
        np.random.default_rng(6).standard_normal((32, 4)).astype(np.float32) * np.logspace(-3, 3, 32)[:, None]
    )
    kernel = kernel.astype(np.float32)
    check = check_model(lambda p, t: t @ p["dense"]["kernel"], (np.ones((1, 32), np.float32),),
                        params={"dense": {"kernel": kernel}}, policies=["float32"], devices=["CPU"],
                        block_formats=["mxfp4_e2m1"])  # fmt: skip
    q = mx_reading(gfloat, "mxfp4_e2m1", kernel.T)
    expected = float(np.sqrt(np.mean(((q - kernel.T) / kernel.T) ** 2)))
    assert check.weight_block_errors["dense"]["mxfp4_e2m1"] == pytest.approx(expected, rel=1e-9)
    assert json.dumps(check.to_dict()["block_axis"]).count("axis 0") == 1


def test_keras_lost_gradients_fix_is_run_not_guessed() -> None:
    keras = _keras()
    import tensorflow as tf

    from explorer import check_model

    def build(head: str | None) -> Any:
        inp = keras.Input((8,))
        init = keras.initializers.RandomNormal(stddev=1e-4, seed=7)
        probs = keras.layers.Dense(
            500, activation="softmax", kernel_initializer=init, name="probs", dtype=head
        )
        return keras.Model(inp, probs(inp))

    x = np.random.default_rng(8).standard_normal((2, 8)).astype(np.float32)
    model = build(None)

    def zero_share(policy: str, head: str | None) -> float:  # the oracle: a tape over a model built so
        keras.mixed_precision.set_dtype_policy(policy)
        try:
            direct = build(head)
        finally:
            keras.mixed_precision.set_dtype_policy("float32")
        direct.set_weights(model.get_weights())
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.cast(direct(x), tf.float32)))
        grads = [np.asarray(g) for g in tape.gradient(loss, direct.trainable_variables)]
        return sum(int(np.count_nonzero(g == 0)) for g in grads) / sum(g.size for g in grads)

    # bfloat16's softmax of logits 1e-4 apart is exactly uniform: no gradient, whatever the loss scale
    assert zero_share("mixed_bfloat16", None) == 1.0 and zero_share("mixed_bfloat16", "float32") < 0.05
    check = check_model(model, x, policies=["mixed_bfloat16"], devices=["CPU"])
    problem = check.first_problem
    assert problem is not None and problem.kind == "lost_gradients"
    assert "keeping `probs` in float32 was run on CPU and keeps the gradients" in check.summary[0]
    assert "loss scaling was run and does not keep them" in check.summary[0]
    assert "use loss scaling" not in check.summary[0]


def test_keras_runs_are_reused_until_the_weights_change() -> None:
    keras = _keras()
    from explorer.runtime import model_keras

    inp = keras.Input((3,))
    model = keras.Model(inp, keras.layers.Dense(2, name="d")(inp))
    x = [np.ones((1, 3), np.float32)]
    first = model_keras.run_policy(model, x, "float32", ["float16"])
    assert model_keras.run_policy(model, x, "float32", ["float16"]) is first
    assert model_keras.run_policy(model, x, "as_built", ["float16"]).stats is first.stats  # the same model
    model.set_weights([w * 2 for w in model.get_weights()])
    again = model_keras.run_policy(model, x, "float32", ["float16"])
    kernel, bias = (np.asarray(w, np.float64) for w in model.get_weights())
    biasadd = next(op for op in again.ops if op.raw_op == "BiasAdd")
    assert again is not first and again.stats[biasadd.name].max_abs == pytest.approx(
        np.abs(x[0] @ kernel + bias).max()
    )
