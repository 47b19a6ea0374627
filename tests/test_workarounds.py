"""Workarounds are code a user can paste: plain TensorFlow / NumPy (/ PyTorch), no explorer import.

Every catalog op's generated code is run here with ``exec`` and its result compared with the
op's float64 reference evaluated on the code's own inputs (read back from the code's
namespace); the seed cases are compared with TensorFlow's public calls written out here.
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np
import pytest

from explorer.backends.tensorflow_backend import import_tensorflow
from explorer.ops import catalog, get_op
from explorer.runtime.workaround_exec import first_working, result_dtype
from explorer.runtime.workarounds import numpy_code, tensorflow_code, torch_code

OPS = list(catalog().values())
DTYPES = ("float16", "bfloat16")
#: relative error a result computed in float32 and rounded once to the dtype may have, plus
#: the rounding of the printed inputs (3 significant digits) carried through the op
TOLERANCE = {"float16": 2e-2, "bfloat16": 5e-2}


def _run(code: str) -> dict[str, Any]:
    """Run ``code`` as a user would (a fresh namespace) and return its namespace."""
    assert "explorer" not in code
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(code, "<pasted>", "exec"), namespace)
    return namespace


def _inputs(code: str, namespace: dict[str, Any], arity: int) -> list[np.ndarray]:
    """The op's ``arity`` inputs: the first variables the code assigns, as float64 arrays."""
    names = [
        t.id
        for node in ast.parse(code).body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    ]
    return [np.asarray(namespace[n], dtype=np.float64) for n in names[:arity]]


def _close(op: Any, got: Any, inputs: list[np.ndarray], dtype: str) -> None:
    with np.errstate(all="ignore"):
        want = np.asarray(op.reference(*inputs), dtype=np.float64)
    value = np.asarray(got, dtype=np.float64)
    assert value.shape == want.shape, (op.name, value.shape, want.shape)
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    np.testing.assert_allclose(
        value, want, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype] * scale, err_msg=op.name
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
def test_tensorflow_code_computed_wide_runs_and_is_right(op: Any, dtype: str) -> None:
    import_tensorflow()
    code = tensorflow_code(op.name, dtype, compute="float32")
    assert code.startswith("import") and "import tensorflow as tf" in code
    namespace = _run(code)
    result = namespace["result"]
    assert result_dtype(result) == (dtype if op.float_output else result_dtype(result))
    _close(op, result.numpy(), _inputs(code, namespace, op.arity), dtype)


@pytest.mark.parametrize("op", [op for op in OPS if op.numpy is not None], ids=lambda op: op.name)
def test_numpy_code_runs_and_is_right(op: Any) -> None:
    code = numpy_code(op.name, "bfloat16", "float32")
    namespace = _run(code)
    assert result_dtype(namespace["result"]) == (
        "bfloat16" if op.float_output else result_dtype(namespace["result"])
    )
    _close(op, namespace["result"], _inputs(code, namespace, op.arity), "bfloat16")


@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
def test_xla_and_torch_code_is_plain_python(op: Any) -> None:
    """XLA code (run for a few ops below) and PyTorch code (PyTorch is not installed here) parse,
    import no explorer, and call the framework's own functions."""
    for code in (
        tensorflow_code(op.name, "float16", mode="xla"),
        tensorflow_code(op.name, "bfloat16", "GPU"),
    ):
        ast.parse(code)
        assert "explorer" not in code
        assert "jit_compile=True" in code or 'tf.device("/GPU:0")' in code
    if op.torch is not None:
        code = torch_code(op.name, "bfloat16", compute="float32")
        ast.parse(code)
        assert "explorer" not in code and "import torch" in code and "torch.bfloat16" in code


def test_seed_cases_are_the_public_calls(  # the calls written out here are the oracle
) -> None:
    tf = import_tensorflow()
    code = tensorflow_code("range", "float16", compute="float32")
    assert "result = tf.cast(tf.range(12, dtype=tf.float32), tf.float16)" in code
    np.testing.assert_array_equal(
        _run(code)["result"].numpy(), tf.cast(tf.range(12, dtype=tf.float32), tf.float16).numpy()
    )
    code = tensorflow_code("exp", "bfloat16", compute="float32")
    assert "result = tf.cast(tf.math.exp(tf.cast(x, tf.float32)), tf.bfloat16)" in code
    namespace = _run(code)
    x = namespace["x"]
    assert x.dtype == tf.bfloat16 and x.shape == get_op("exp").inputs(0)[0].shape
    direct = tf.cast(tf.math.exp(tf.cast(x, tf.float32)), tf.bfloat16)
    np.testing.assert_array_equal(namespace["result"].numpy(), direct.numpy())
    # the native calls and XLA: exactly what a user writes, run here against TensorFlow itself
    code = tensorflow_code("cholesky", "float16", mode="xla")
    assert "@tf.function(jit_compile=True)" in code and "return tf.linalg.cholesky(a)" in code
    namespace = _run(code)
    compiled = tf.function(tf.linalg.cholesky, jit_compile=True)(namespace["a"])
    np.testing.assert_array_equal(namespace["result"].numpy(), compiled.numpy())


def test_private_helpers_are_inlined() -> None:
    """qr's call uses a module helper (_qr_r) and layer_norm one with two statements (_tf_norm):
    the code has their bodies, with the arguments in place."""
    code = tensorflow_code("qr", "float16", compute="float32")
    assert "_qr_r" not in code and "r = tf.linalg.qr(tf.cast(a, tf.float32))[1]" in code
    assert "tf.math.sign(tf.linalg.diag_part(r))" in code
    code = tensorflow_code("layer_norm", "bfloat16", compute="float32")
    assert "_tf_norm" not in code and "tf.nn.moments(x_float32, axes=[-1], keepdims=True)" in code


def test_first_working_runs_every_candidate_and_offers_only_one_that_works() -> None:
    broken = "import tensorflow as tf\nresult = tf.math.no_such_function(1.0)\n"
    wrong = "import numpy as np\nresult = np.zeros(3, np.float32)\n"
    right = numpy_code("exp", "float16", "float32")
    assert first_working([("broken", broken), ("wrong", wrong), ("right", right)], "float16") == (
        "right",
        right,
        "",
    )
    how, code, failures = first_working([("broken", broken), ("wrong", wrong)], "float16")
    assert (how, code) == ("", "")
    assert "broken: AttributeError" in failures and "wrong: came back in float32" in failures
    assert first_working([("wrong", wrong)], None)[:2] == ("wrong", wrong)  # any dtype will do


def _undefined_names(code: str) -> set[str]:
    """Names the code reads that nothing in it defines (nor Python's builtins): a workaround that
    cannot be run here (PyTorch, JAX) must at least name nothing but its framework and its inputs."""
    import ast
    import builtins

    tree = ast.parse(code)
    defined = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, ast.alias):
            defined.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return loaded - defined


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_pytorch_and_jax_code_names_only_its_framework_and_inputs(framework: str) -> None:
    from explorer.ops import catalog
    from explorer.runtime.workarounds import jax_code, torch_code

    bad = {}
    for name, op in catalog().items():
        if (op.torch if framework == "torch" else op.numpy) is None:
            continue
        for compute in (None, "float32"):
            code = (
                torch_code(name, "float16", compute=compute)
                if framework == "torch"
                else jax_code(name, "float16", compute=compute)
            )
            missing = _undefined_names(code)
            if missing or "explorer" in code:
                bad[(name, compute)] = sorted(missing)
    assert not bad, bad


def test_a_workaround_that_returns_nan_is_not_offered_where_the_exact_result_is_finite() -> None:
    from explorer.runtime.workaround_exec import first_working

    nan_code = "import numpy as np\nresult = np.array([np.nan, 1.0], dtype=np.float16)\n"
    good_code = "import numpy as np\nresult = np.array([0.5, 1.0], dtype=np.float16)\n"
    options = [("gives NaN", nan_code), ("gives numbers", good_code)]
    how, code, _ = first_working(options, "float16", finite=True)
    assert (how, code) == ("gives numbers", good_code)
    how, _, _ = first_working(options, "float16", finite=False)  # NaN may be the true answer
    assert how == "gives NaN"
    how, code, why = first_working(options[:1], "float16", finite=True)
    assert (how, code) == ("", "") and "NaN or infinity" in why


@pytest.mark.slow
def test_svd_float16_is_not_sent_to_xla_where_xla_returns_nan() -> None:
    """TensorFlow 2.21's svd in float16 has no CPU kernel; the registry has an XLA_CPU_JIT one, but
    compiled with XLA it returns NaN.  The workaround offered is run here and its singular
    values compared with NumPy's in float64 on the same literal inputs."""
    import re

    from explorer.runtime.probe import Probe, probe_record
    from explorer.runtime.workaround_exec import execute_workaround

    record = probe_record(
        Probe("tensorflow", "svd", "float16", "CPU", "eager"), present=["CPU"], kernel_places=[("CPU", "xla")]
    )
    assert record["status"] == "no_kernel" and record["workaround"]
    got = np.asarray(execute_workaround(record["workaround"]), dtype=np.float64)
    literal = re.search(r"tf\.constant\((\[\[.*?\]\])", record["workaround"], re.S)
    assert literal is not None, record["workaround"]
    matrix = np.asarray(ast.literal_eval(literal.group(1)), dtype=np.float16).astype(np.float64)
    expected = np.linalg.svd(matrix, compute_uv=False)
    assert np.all(np.isfinite(got)) and np.allclose(got, expected, rtol=0.02, atol=0.02), (got, expected)
