"""check_model and ``precision-explorer model``, each column against something independent:
the op list against the framework's own graph read here, kernels against a direct run of the
op in that dtype, AMP dtypes against a direct autocast run, max |activation| against a forward
pass written here, verdicts against ml_dtypes' format limits."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from explorer.analysis.model_numerics import headroom_bits, tensor_stats, verdict, zero_fraction
from explorer.analysis.model_summary import compute_format
from explorer.analysis.model_trace import PolicyRun, TracedOp, merge_traces, tf_layer_path
from explorer.cli import main
from tests.support.require import require_module

FORMATS = ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")


# ------------------------------------------------------------------ pure rules (fast)


@pytest.mark.parametrize("name", FORMATS)
def test_verdict_and_headroom_against_ml_dtypes_limits(name: str) -> None:
    info = ml_dtypes.finfo(getattr(ml_dtypes, name, None) or np.dtype(name))
    top, tiny, sub = float(info.max), float(info.smallest_normal), float(info.smallest_subnormal)
    assert verdict(tensor_stats([top], None, [name]), name) == "fits"
    assert verdict(tensor_stats([top * 2], None, [name]), name) == "overflows"
    assert verdict(tensor_stats([math.nan], None, [name]), name) == "overflows"
    assert headroom_bits(top / 8, name) == pytest.approx(3.0)
    # gradients below the smallest subnormal are lost; activations there underflow
    assert verdict(tensor_stats([1.0], [sub / 4, 1.0], [name]), name) == "loses_gradients"
    assert verdict(tensor_stats([sub / 4, 1.0], [1.0], [name]), name) == "underflows"
    stats = tensor_stats([tiny / 2, tiny * 2, 0.0, -sub / 4], None, [name])
    assert stats.below_normal[name] == pytest.approx(2 / 3)  # zeros are left out
    assert stats.below_subnormal[name] == pytest.approx(1 / 3)


def test_fractions_against_a_direct_count() -> None:
    rng = np.random.default_rng(1)
    values = rng.standard_normal(10_000) * 10.0 ** rng.uniform(-12, 2, 10_000)
    stats = tensor_stats(values, None, ["float16"])
    nonzero = np.abs(values[values != 0])
    assert stats.below_normal["float16"] == np.mean(nonzero < np.finfo(np.float16).smallest_normal)
    assert stats.below_subnormal["float16"] == np.mean(nonzero < np.finfo(np.float16).smallest_subnormal)
    assert stats.max_abs == np.max(np.abs(values))
    assert zero_fraction([np.zeros(3), np.ones(1)]) == 0.75


def test_policies_compute_in_their_format() -> None:
    assert [
        compute_format(p) for p in ("float32", "mixed_float16", "autocast_bfloat16", "p=f32,c=f16,o=f32")
    ] == [
        "float32",
        "float16",
        "bfloat16",
        "float16",
    ]


def test_layer_paths_and_merging() -> None:
    assert tf_layer_path("m_1/dense_1_1/MatMul", {"dense_1"}) == "dense_1"
    assert tf_layer_path("m_1/outer_1/inner_1/Relu", {"outer", "inner"}) == "outer/inner"
    a = PolicyRun(
        "float32", (TracedOp("x", "d", "MatMul", "float32"), TracedOp("y", "d", "Relu", "float32")), True
    )
    b = PolicyRun(
        "mixed_float16",
        (TracedOp("c", "d", "Cast", "float16"), TracedOp("x", "d", "MatMul", "float16"),
         TracedOp("y", "d", "Relu", "float16"), TracedOp("z", "d", "Cast", "float32")),
        True,
    )  # fmt: skip
    merged = merge_traces([a, b])
    assert [m.raw_op for m in merged] == ["Cast", "MatMul", "Relu", "Cast"]
    assert sorted(merged[1].by_policy) == ["float32", "mixed_float16"] and list(merged[3].by_policy) == [
        "mixed_float16"
    ]


# ------------------------------------------------------------------ Keras


def _keras() -> Any:
    from explorer.backends.tensorflow_backend import import_tensorflow

    import_tensorflow()
    import keras

    return keras


@pytest.mark.slow
def test_keras_op_list_is_the_concrete_functions_graph() -> None:
    import tensorflow as tf

    from explorer import check_model
    from explorer.runtime import model_builtin

    model = model_builtin.build("cnn")
    (x,) = model_builtin.example_inputs("cnn")
    check = check_model(model, x, policies=["float32"], devices=["CPU"])
    graph = tf.function(lambda t: model(t, training=False)).get_concrete_function(
        tf.TensorSpec(x.shape, tf.float32)
    )
    expected = [op.type for op in graph.graph.get_operations()]
    while expected[-1] in ("Identity", "NoOp"):  # the function's return, not the model
        expected.pop()
    assert [op.raw_op for op in check.ops] == expected
    assert {op.layer for op in check.ops} >= {"conv_1", "pool", "conv_2", "gap", "logits"}


@pytest.fixture(scope="module")
def keras_mlp_float32() -> tuple[Any, np.ndarray, Any]:
    """The built-in Keras MLP, its example input and its float32 check on CPU (one for the module)."""
    from explorer import check_model
    from explorer.runtime import model_builtin

    model = model_builtin.build("mlp")
    (x,) = model_builtin.example_inputs("mlp")
    return model, x, check_model(model, x, policies=["float32"], devices=["CPU"])


@pytest.mark.slow
def test_keras_max_activation_against_a_forward_pass_written_here(keras_mlp_float32: Any) -> None:
    model, x, check = keras_mlp_float32
    w1, b1, w2, b2, w3, b3 = (np.asarray(w, np.float64) for w in model.get_weights())
    h1 = np.maximum(x @ w1 + b1, 0)
    h2 = np.maximum(h1 @ w2 + b2, 0)
    y = h2 @ w3 + b3
    by_layer = {(op.layer, op.raw_op): op for op in check.ops}
    assert by_layer[("dense_1", "Relu")].max_abs == pytest.approx(np.abs(h1).max(), rel=1e-5)
    assert by_layer[("logits", "BiasAdd")].max_abs == pytest.approx(np.abs(y).max(), rel=1e-5)
    # d mean(y^2) / dy = 2 y / N
    assert by_layer[("logits", "BiasAdd")].max_grad == pytest.approx(np.abs(2 * y / y.size).max(), rel=1e-5)


@pytest.mark.slow
def test_keras_mixed_float16_dtypes_against_a_layer_built_in_that_policy() -> None:
    keras = _keras()

    from explorer import check_model
    from explorer.runtime import model_builtin

    layer = keras.layers.Dense(4, dtype="mixed_float16")
    out = layer(np.ones((1, 16), np.float32))
    model = model_builtin.build("mlp")
    check = check_model(
        model, model_builtin.example_inputs("mlp"), policies=["mixed_float16"], devices=["CPU"]
    )
    matmul = next(op for op in check.ops if op.layer == "dense_1" and op.raw_op == "MatMul")
    assert matmul.dtype["mixed_float16"] == out.dtype.name == "float16"
    amp = matmul.amp["mixed_float16"]
    assert amp["layer_compute_dtype"] == layer.compute_dtype
    assert amp["layer_variable_dtype"] == layer.kernel.dtype == "float32"
    assert matmul.kernel["mixed_float16"]["CPU"].run == "ran"


@pytest.mark.slow
def test_keras_missing_kernel_names_the_op_a_direct_run_fails_on() -> None:
    import tensorflow as tf

    keras = _keras()

    from explorer import check_model

    with pytest.raises(tf.errors.OpError) as direct:  # the oracle: Cholesky itself in float16
        tf.linalg.cholesky(tf.eye(3, dtype=tf.float16))

    @keras.saving.register_keras_serializable(package="px_test")
    class Gram(keras.layers.Layer):
        def call(self, x: Any) -> Any:
            eye = tf.eye(tf.shape(x)[-1], dtype=x.dtype)
            return tf.linalg.cholesky(tf.matmul(x, x, transpose_a=True) + eye)

    inputs = keras.Input((3,))
    model = keras.Model(inputs, Gram(name="gram")(keras.layers.Dense(3, name="dense")(inputs)))
    check = check_model(model, np.ones((2, 3), np.float32), policies=["float32", "float16"], devices=["CPU"])
    cholesky = next(op for op in check.ops if op.raw_op == "Cholesky")
    assert cholesky.layer == "gram"
    assert cholesky.kernel["float32"]["CPU"].run == "ran"
    kernel = cholesky.kernel["float16"]["CPU"]
    assert kernel.run == "failed" and kernel.declared == "no_kernel" and kernel.first_release is None
    assert "Cholesky" in kernel.error and "Cholesky" in str(direct.value)
    problem = check.first_problem
    assert problem is not None and problem.policy == "float16" and problem.raw_op == "Cholesky"
    assert problem.kind == "missing_kernel"
    assert not check.ok


@pytest.fixture(scope="module")
def cli_runs() -> dict[tuple[str, str], tuple[int, Any]]:
    """``model --builtin NAME --framework F --device CPU --json`` runs of this module, each made once
    (:func:`cli_json`): (exit status, document)."""
    return {}


def cli_json(runs: dict[tuple[str, str], tuple[int, Any]], name: str, framework: str) -> tuple[int, Any]:
    """The exit status and JSON document of ``model --builtin name --framework framework``."""
    import contextlib
    import io

    if (name, framework) not in runs:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = main(["model", "--builtin", name, "--framework", framework, "--device", "CPU", "--json"])
        runs[(name, framework)] = (status, json.loads(out.getvalue()))
    return runs[(name, framework)]


@pytest.mark.slow
def test_keras_overflow_is_confirmed_and_the_workaround_was_run(cli_runs: Any) -> None:
    status, document = cli_json(cli_runs, "overflow", "keras")
    result = document["result"]
    amplify = next(op for op in result["ops"] if op["layer"] == "amplify" and op["raw_op"] == "Mul")
    assert amplify["max_abs"] > float(ml_dtypes.finfo(np.float16).max)
    assert amplify["verdict"]["float16"] == "overflows" and amplify["verdict"]["bfloat16"] == "fits"
    problem = result["first_problem"]
    assert (problem["kind"], problem["policy"], problem["layer"]) == ("overflow", "mixed_float16", "amplify")
    assert problem["tried"] and problem["tried"][0]["finite"] and "was run" in problem["workaround"]
    by_policy = {r["policy"]: r for r in result["results"]}
    assert by_policy["mixed_float16"]["first_nonfinite"] is not None
    assert by_policy["mixed_bfloat16"]["first_nonfinite"] is None
    assert status == 1


@pytest.mark.slow
def test_keras_grappler_onednn_bfloat16_rewrite_against_a_run_with_it_on(keras_mlp_float32: Any) -> None:
    import tensorflow as tf

    model, x, check = keras_mlp_float32
    computing = [op for op in check.ops if op.raw_op in ("MatMul", "BiasAdd", "Relu")]
    moved = {op.amp["grappler_onednn_bfloat16"]["dtype"] for op in computing}
    # the oracle: the same model run with grappler's option on, against a NumPy pass in bfloat16
    fn = tf.function(lambda t: model(t, training=False))
    before = tf.config.optimizer.get_experimental_options()
    tf.config.optimizer.set_experimental_options({"auto_mixed_precision_onednn_bfloat16": True})
    try:
        rewritten = fn(tf.constant(x)).numpy()
    finally:
        tf.config.optimizer.set_experimental_options(
            {"auto_mixed_precision_onednn_bfloat16": False, **before}
        )
    bf16 = ml_dtypes.bfloat16

    def dense(h: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        product = (h.astype(bf16).astype(np.float32) @ w.astype(bf16).astype(np.float32)).astype(bf16)
        return (
            (product.astype(np.float32) + b.astype(bf16).astype(np.float32)).astype(bf16).astype(np.float32)
        )

    w1, b1, w2, b2, w3, b3 = model.get_weights()
    emulated = dense(np.maximum(dense(np.maximum(dense(x, w1, b1), 0), w2, b2), 0), w3, b3)
    exact = np.asarray(model(x))
    if np.array_equal(rewritten, exact):  # grappler did not rewrite at run time: nothing to compare
        assert moved == {"float32"}, moved
        return
    assert moved == {"bfloat16"}
    assert np.abs(rewritten - emulated).max() <= 4 * 2.0**-8 * np.abs(emulated).max()
    assert any("auto_mixed_precision_onednn_bfloat16" in note and "8 of 8" in note for note in check.notes)
    assert any(
        "auto_mixed_precision (float16, CUDA) left the float32 graph unchanged" in n for n in check.notes
    )


# ------------------------------------------------------------------ PyTorch


@pytest.mark.slow
def test_torch_op_list_is_what_make_fx_traces() -> None:
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    from explorer import check_model
    from explorer.runtime import model_builtin

    model = model_builtin.build("mlp", "torch").eval()
    (x,) = model_builtin.example_inputs("mlp", "torch")
    check = check_model(model, x, policies=["float32"], devices=["CPU"])
    graph = make_fx(model)(torch.tensor(x))
    expected = [
        f"aten.{n.target.overloadpacket.__name__}" for n in graph.graph.nodes if n.op == "call_function"
    ]
    ours = [op.raw_op for op in check.ops if op.raw_op != "aten.detach"]  # autograd's, not the model's
    assert ours == [e for e in expected if e != "aten.detach"]
    assert [op.layer for op in check.ops if op.raw_op == "aten.addmm"] == ["dense_1", "dense_2", "logits"]


@pytest.mark.slow
def test_torch_autocast_dtypes_against_a_direct_autocast_run() -> None:
    import torch

    from explorer import check_model
    from explorer.runtime import model_builtin

    model = model_builtin.build("transformer", "torch").eval()
    (x,) = model_builtin.example_inputs("transformer", "torch")
    seen: dict[str, str] = {}
    hooks = [
        m.register_forward_hook(lambda mod, a, out, name=name: seen.__setitem__(name, str(out.dtype)))
        for name, m in model.named_modules()
        if name in ("ffn_1", "norm_1", "act")
    ]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        model(torch.tensor(x))
    for h in hooks:
        h.remove()
    check = check_model(model, x, policies=["autocast_bfloat16"], devices=["CPU"])
    last = {op.layer: op for op in check.ops if "autocast_bfloat16" in op.amp}
    for name, dtype in seen.items():
        assert "torch." + last[name].amp["autocast_bfloat16"]["out"][0] == dtype, name


@pytest.mark.slow
def test_torch_max_activation_and_kernel_against_direct_runs() -> None:
    import torch

    from explorer import check_model
    from explorer.runtime import model_builtin

    model = model_builtin.build("overflow", "torch")
    (x,) = model_builtin.example_inputs("overflow", "torch")
    with torch.no_grad():
        hidden = torch.relu(model.dense_1(torch.tensor(x))) * model_builtin.AMPLIFY
    check = check_model(model, x, policies=["float32", "float16"], devices=["CPU"])
    mul = next(op for op in check.ops if op.layer == "amplify" and op.raw_op == "aten.mul")
    assert mul.max_abs == pytest.approx(float(hidden.abs().max()), rel=1e-6)
    assert mul.verdict["float16"] == "overflows"
    # the kernel column against a direct run of that op in that dtype
    direct = torch.tensor(x).half() * 2
    assert direct.dtype == torch.float16 and mul.kernel["float16"]["CPU"].run == "ran"


@pytest.mark.slow
def test_torch_missing_kernel_is_the_op_a_direct_run_refuses() -> None:
    import torch

    from explorer import check_model

    try:
        torch.linalg.cholesky(torch.eye(3, dtype=torch.float16))
        refused = None
    except RuntimeError as exc:
        refused = str(exc)
    if refused is None:
        pytest.skip("this torch has a float16 CPU Cholesky")

    class Gram(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            return torch.linalg.cholesky(x.T @ x + torch.eye(x.shape[-1], dtype=x.dtype))

    check = check_model(Gram(), np.ones((2, 3), np.float32), policies=["float32", "float16"], devices=["CPU"])
    failed = [op for op in check.ops if op.kernel["float16"]["CPU"].run == "failed"]
    assert len(failed) == 1 and "cholesky" in failed[0].raw_op
    assert refused.splitlines()[0] in failed[0].kernel["float16"]["CPU"].error
    assert check.first_problem is not None and check.first_problem.kind == "missing_kernel"


@pytest.mark.slow
def test_torch_underflow_needs_loss_scaling() -> None:
    from explorer import check_model
    from explorer.runtime import model_builtin

    model = model_builtin.build("underflow", "torch")
    (x,) = model_builtin.example_inputs("underflow", "torch")
    check = check_model(model, x, policies=["float32", "autocast_float16"], devices=["CPU"])
    out = next(op for op in check.ops if op.layer == "out" and op.raw_op == "aten.addmm")
    # the gradient reaching `out` in float32: 2 y / N times the shrink factor, y = out * shrink
    y = out.max_abs * model_builtin.SHRINK
    assert out.max_grad == pytest.approx(2 * y / x.shape[0] * model_builtin.SHRINK, rel=1e-4)
    assert out.max_grad < float(ml_dtypes.finfo(np.float16).smallest_subnormal)
    run = next(r for r in check.results if r.policy == "autocast_float16")
    assert run.zero_grad is not None and run.zero_grad_scaled is not None
    assert run.zero_grad > run.zero_grad_scaled
    assert check.first_problem is not None and check.first_problem.kind == "lost_gradients"
    assert "loss scaling" in check.first_problem.workaround


@pytest.mark.slow
def test_torch_zero_gradients_against_a_direct_autocast_backward() -> None:
    import torch

    from explorer import check_model
    from explorer.runtime import model_builtin

    model = model_builtin.build("transformer", "torch").eval()
    (x,) = model_builtin.example_inputs("transformer", "torch")
    direct = {}
    for policy, dtype in (("float32", None), ("autocast_float16", torch.float16)):
        model.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=dtype or torch.float32, enabled=dtype is not None):
            out = model(torch.tensor(x).requires_grad_())
        out.float().square().mean().backward()
        grads = [p.grad for p in model.parameters()]
        direct[policy] = sum(int((g == 0).sum()) for g in grads) / sum(g.numel() for g in grads)
    model.zero_grad(set_to_none=True)
    check = check_model(model, x, policies=["float32", "autocast_float16"], devices=["CPU"])
    runs = {r.policy: r for r in check.results}
    assert runs["float32"].zero_grad == direct["float32"]
    assert runs["autocast_float16"].zero_grad == direct["autocast_float16"]
    assert direct["autocast_float16"] - direct["float32"] > 0.05  # what makes it a problem
    assert check.first_problem is not None and check.first_problem.kind == "lost_gradients"


# ------------------------------------------------------------------ JAX


@pytest.mark.slow
def test_jax_op_list_and_values_against_the_jaxpr_and_numpy() -> None:
    import jax
    import jax.numpy as jnp

    from explorer import check_model

    def fn(p: Any, x: Any) -> Any:
        with jax.named_scope("dense"):
            h = jnp.tanh(x @ p["w"]) * 300.0
        return jnp.exp(h / 30.0)

    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((4, 5)).astype(np.float32)}
    x = rng.standard_normal((3, 4)).astype(np.float32)
    check = check_model(fn, x, params=params, policies=["float32"], devices=["CPU"])
    expected = [e.primitive.name for e in jax.make_jaxpr(fn)(params, x).jaxpr.eqns]
    assert [op.raw_op for op in check.ops] == expected
    tanh = next(op for op in check.ops if op.raw_op == "tanh")
    assert tanh.layer == "dense"
    assert tanh.max_abs == pytest.approx(np.abs(np.tanh(x @ params["w"])).max(), rel=1e-5)
    bf16 = check_model(fn, x, params=params, policies=["p=f32,c=bf16,o=f32"], devices=["CPU"])
    assert {op.dtype["p=f32,c=bf16,o=f32"] for op in bf16.ops if op.raw_op == "tanh"} == {"bfloat16"}

    def jmp(p: Any, t: Any) -> Any:  # jmp's policy written here: params f32, compute bf16, output f32
        to_bf16 = lambda tree: jax.tree_util.tree_map(lambda a: a.astype(jnp.bfloat16), tree)
        return fn(to_bf16(p), to_bf16(t)).astype(jnp.float32)

    direct = [
        (e.primitive.name, str(e.outvars[0].aval.dtype)) for e in jax.make_jaxpr(jmp)(params, x).jaxpr.eqns
    ]
    assert [(op.raw_op, op.dtype["p=f32,c=bf16,o=f32"]) for op in bf16.ops] == direct


# ------------------------------------------------------------------ the CLI


def _json(capsys: Any, *argv: str) -> tuple[int, Any]:
    status = main(["model", *argv, "--json"])
    return status, json.loads(capsys.readouterr().out)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "framework", "status"),
    [
        ("mlp", "keras", 0),
        ("cnn", "keras", 0),
        ("transformer", "keras", 0),
        ("overflow", "keras", 1),
        ("underflow", "keras", 0),  # mixed_float16's own loss scaling keeps the gradients: see below
        ("mlp", "torch", 0),
        ("cnn", "torch", 0),
        ("transformer", "torch", 1),  # autocast_float16 zeroes gradients: see below
        ("overflow", "torch", 1),
        ("underflow", "torch", 1),
    ],
)
def test_cli_every_builtin(cli_runs: Any, name: str, framework: str, status: int) -> None:
    got, document = cli_json(cli_runs, name, framework)
    assert got == status
    result = document["result"]
    assert set(document) == {"environment", "result"}
    assert result["framework"] == framework and result["summary"]
    assert (result["first_problem"] is None) == (status == 0)
    for op in result["ops"]:
        assert {"layer", "raw_op", "op", "dtype", "kernel", "amp", "max_abs", "verdict"} <= set(op)
    problem = result["first_problem"]
    if problem is not None and problem["index"] is not None:  # named at an op that computes
        assert not result["ops"][problem["index"]]["data_movement"]


@pytest.mark.slow
def test_keras_underflow_builtin_is_judged_with_the_loss_scaling_of_mixed_float16(cli_runs: Any) -> None:
    _, document = cli_json(cli_runs, "underflow", "keras")
    by_policy = {r["policy"]: r for r in document["result"]["results"]}
    run = by_policy["mixed_float16"]
    base = by_policy["float32"]["zero_grad"]  # dead ReLUs: zero in float32 too
    assert (
        run["zero_grad"] - base > 0.05 and run["zero_grad_scaled"] - base <= 0.05
    )  # lost unscaled, kept scaled
    assert "the loss scaling mixed_float16 applies" in run["sentence"]


@pytest.mark.slow
def test_cli_file_loads_a_saved_model_and_refuses_an_unsafe_one(tmp_path: Path, capsys: Any) -> None:
    keras = _keras()

    from explorer.runtime import model_builtin

    safe = tmp_path / "mlp.keras"
    model_builtin.build("mlp").save(safe)
    inputs = tmp_path / "x.npy"
    np.save(inputs, np.ones((2, 16), np.float32))
    status, document = _json(capsys, "--file", str(safe), "--inputs", str(inputs), "--policy", "float32")
    assert status == 0 and document["result"]["ops"]
    np.save(inputs, np.ones((2, 15), np.float32))  # the saved model takes (None, 16): nothing is run
    assert main(["model", "--file", str(safe), "--inputs", str(inputs)]) == 2
    refused = capsys.readouterr()
    assert len(refused.err.strip().splitlines()) == 1 and "(None, 16)" in refused.err

    inp = keras.Input((4,))
    unsafe = tmp_path / "lambda.keras"
    keras.Model(inp, keras.layers.Lambda(lambda t: t * 2)(inp)).save(unsafe)
    before = hashlib.sha256(unsafe.read_bytes()).hexdigest()
    assert main(["model", "--file", str(unsafe)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    assert "refused" in captured.err and "Lambda" in captured.err
    assert hashlib.sha256(unsafe.read_bytes()).hexdigest() == before

    @keras.saving.register_keras_serializable(package="px_cli_test")
    class Doubler(keras.layers.Layer):  # a custom object: its code is not in the file
        def call(self, t: Any) -> Any:
            return t * 2

    custom = tmp_path / "custom.keras"
    keras.Model(inp, Doubler(name="doubler")(inp)).save(custom)
    del keras.saving.get_custom_objects()["px_cli_test>Doubler"]  # as in a fresh `precision-explorer`
    assert main(["model", "--file", str(custom)]) == 2
    refused = capsys.readouterr()
    assert refused.out == "" and len(refused.err.strip().splitlines()) == 1 and "refused" in refused.err


def test_cli_usage_errors_exit_2(capsys: Any) -> None:
    assert main(["model", "--builtin", "mlp", "--policy", "fp17"]) == 2
    assert "unknown Keras policy" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["model", "--builtin", "nosuch"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit):
        main(["model"])  # neither --builtin nor --file


def test_cli_inputs_of_the_wrong_shape_or_kind_exit_2_with_one_line(tmp_path: Path, capsys: Any) -> None:
    require_module("torch")
    from explorer.runtime import model_builtin

    (x,) = model_builtin.example_inputs("mlp", "torch")
    cases = {
        "narrow.npy": np.ones((2, x.shape[1] - 1), np.float32),  # a feature too few
        "flat.npy": np.ones(x.shape[1], np.float32),  # no batch dimension
        "text.npy": np.array(["a", "b"]),
    }
    for name, array in cases.items():
        np.save(tmp_path / name, array)
        argv = ["model", "--builtin", "mlp", "--framework", "torch", "--inputs", str(tmp_path / name)]
        assert main(argv) == 2, name
        captured = capsys.readouterr()
        assert captured.out == "" and len(captured.err.strip().splitlines()) == 1, name
        assert "--inputs" in captured.err
    assert f"(None, {x.shape[1]})" in main_err(capsys, tmp_path / "narrow.npy")


def main_err(capsys: Any, path: Path) -> str:
    """The one line ``model --builtin mlp --framework torch --inputs PATH`` writes to stderr."""
    main(["model", "--builtin", "mlp", "--framework", "torch", "--inputs", str(path)])
    return str(capsys.readouterr().err)


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_a_model_failing_in_float32_offers_no_keep_float32_workaround() -> None:
    require_module("torch")
    import torch

    from explorer import check_model

    class Mismatch(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(5, 2)

        def forward(self, x: Any) -> Any:
            return self.proj(x)

    try:  # the oracle: the module itself refuses these inputs in float32
        Mismatch()(torch.ones(2, 4))
        refused = ""
    except RuntimeError as exc:
        refused = str(exc).splitlines()[0]
    assert refused
    check = check_model(Mismatch(), np.ones((2, 4), np.float32), policies=["float32"], devices=["CPU"])
    problem = check.first_problem
    assert problem is not None and problem.kind == "run_failed" and refused in problem.detail
    assert problem.tried == () and problem.workaround == "" and check.workarounds == {}
