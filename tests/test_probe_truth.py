"""Probes run the kernel they are about, and say where a run failed.

Nothing here trusts the backend's own answer: each case is checked against TensorFlow run
directly in this test (its public calls, written out here), the graph TensorFlow traces, the
HLO XLA lowers it to, and TensorFlow's own record of the ops it executed eagerly (op
callbacks, the hook its debugger uses).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

from explorer.analysis.explain import explain
from explorer.backends import get_backend
from explorer.backends.tensorflow_backend import (
    build_detail,
    import_tensorflow,
    traced_arguments,
    traced_function,
)
from explorer.formats import resolve
from explorer.ops import catalog, get_op
from explorer.outcome import Phase
from explorer.runtime.registry import get_registry


@pytest.fixture(scope="module")
def tf() -> Any:
    return import_tensorflow()


@pytest.fixture(scope="module")
def backend() -> Any:
    return get_backend("tensorflow")


def _raises(tf: Any, call: Any) -> BaseException | None:
    """What TensorFlow raised for ``call()`` on CPU (None when it returned)."""
    try:
        with tf.device("/CPU:0"):
            call()
    except (tf.errors.OpError, TypeError, ValueError) as exc:
        return exc
    return None


def _hlo(tf: Any, fn: Any, *args: Any) -> str:
    return str(fn.experimental_get_compiler_ir(*args)(stage="hlo", platform_name="CPU"))


# ---------------------------------------------------------------- nothing is folded away


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_range_under_xla_fails_in_half_and_bfloat16_once_its_limit_is_an_argument(
    tf: Any, backend: Any, dtype: str
) -> None:
    dt = tf.dtypes.as_dtype(dtype)
    # TensorFlow, directly: with the limit an argument of the compiled function, XLA refuses
    as_argument = tf.function(lambda limit: tf.range(limit, dtype=dt), jit_compile=True)
    direct = _raises(tf, lambda: as_argument(tf.constant(12, dt)))
    assert isinstance(direct, tf.errors.InvalidArgumentError)
    assert f"Invalid type for Range {dt.name if dtype == 'bfloat16' else 'half'}" in str(direct)
    # the probe agrees, whether it only lowers or also compiles and runs
    for execute in (False, True):
        outcome = backend.run("range", dtype, mode="xla", execute=execute)
        assert not outcome.ran and outcome.phase is Phase.XLA_COMPILE, outcome
        assert str(direct).splitlines()[0] in outcome.error
    # and it runs eagerly (TensorFlow 2.21 has CPU Range kernels for both)
    assert backend.run("range", dtype).ran
    assert _raises(tf, lambda: tf.range(12, dtype=dt)) is None


def test_a_literal_limit_is_folded_into_a_constant_and_the_probe_does_not_do_that(tf: Any) -> None:
    """Why the limit is an argument: written as a literal, TensorFlow folds tf.range in bfloat16
    into a constant before XLA sees it, so "XLA runs it" would be about no Range at all."""
    literal = tf.function(lambda: tf.range(12, dtype=tf.bfloat16), jit_compile=True)
    assert _raises(tf, literal) is None  # "works" ...
    hlo = _hlo(tf, literal)
    assert "constant({" in hlo and "iota" not in hlo  # ... as a constant: Range's lowering never ran
    # the probe's function for float32 (where XLA has Range): the limit is a placeholder, and
    # the HLO is Range's computation (an iota), not its value
    op, fmt = get_op("range"), resolve("float32")
    args = [tf.constant(a) for a in traced_arguments(op, (), fmt)]
    fn = traced_function(op, tf, tf.float32, jit_compile=True)
    nodes = {n.type: n for n in fn.get_concrete_function(*args).graph.get_operations()}
    assert "Placeholder" in [i.op.type for i in nodes["Range"].inputs]
    assert "iota" in _hlo(tf, fn, *args)
    np.testing.assert_array_equal(fn(*args).numpy(), np.arange(12, dtype=np.float32))


def _foldable(tensor: Any, seen: dict[str, bool]) -> bool:
    """Whether a graph tensor can be computed from constants alone (what constant folding replaces)."""
    node = tensor.op
    if node.name not in seen:
        seen[node.name] = node.type != "Placeholder" and all(_foldable(t, seen) for t in node.inputs)
    return seen[node.name]


@pytest.mark.parametrize("name", list(catalog()))
def test_no_probe_output_can_be_folded_into_a_constant(tf: Any, name: str) -> None:
    """In the graph the XLA probe compiles, the output depends on an argument for every op:
    there is nothing TensorFlow's or XLA's constant folding could replace by a value."""
    op, fmt = get_op(name), resolve("float32")
    args = [tf.constant(a) for a in traced_arguments(op, op.inputs(0), fmt)]
    graph = traced_function(op, tf, tf.float32, jit_compile=True).get_concrete_function(*args).graph
    placeholders = [n for n in graph.get_operations() if n.type == "Placeholder"]
    assert len(placeholders) == op.arity + len(op.tf_params)
    assert not any(_foldable(t, {}) for t in graph.outputs), name
    kernels = [n for n in graph.get_operations() if n.type in op.tf_raw_ops]  # none: cast to float32
    assert not kernels or not all(_foldable(n.outputs[0], {}) for n in kernels), name


@pytest.mark.parametrize(
    ("name", "dtype", "raw_op"),
    [("range", "float16", "Range"), ("exp", "bfloat16", "Exp"), ("zeros", "float32", "Fill"),
     ("cholesky", "float32", "Cholesky")],
)  # fmt: skip
def test_eager_probes_execute_the_kernel(tf: Any, backend: Any, name: str, dtype: str, raw_op: str) -> None:
    """TensorFlow's own record of the ops it executed eagerly (op callbacks) holds the op's kernel,
    in the dtype, and the probe's result equals the public call's, run here."""
    from tensorflow.python.framework import op_callbacks

    executed: list[tuple[str, list[str]]] = []

    def record(
        op_type: str, inputs: Any, attrs: Any, outputs: Any, op_name: Any = None, graph: Any = None
    ) -> None:
        if graph is None:  # executed eagerly, not added to a graph
            executed.append((op_type, [o.dtype.name for o in outputs or []]))

    op_callbacks.add_op_callback(record)
    try:
        outcome = backend.run(name, dtype)
    finally:
        op_callbacks.remove_op_callback(record)
    assert outcome.ran and outcome.phase is Phase.OK
    assert (raw_op, [dtype]) in executed, executed
    dt = tf.dtypes.as_dtype(dtype)
    direct = {
        "range": lambda: tf.range(12, dtype=dt),
        "exp": lambda: tf.math.exp(tf.constant(get_op("exp").inputs(0)[0], dtype=dt)),
        "zeros": lambda: tf.zeros((32, 64), dtype=dt),
        "cholesky": lambda: tf.linalg.cholesky(tf.constant(get_op("cholesky").inputs(0)[0], dtype=dt)),
    }[name]()
    np.testing.assert_array_equal(outcome.result, direct.numpy())


# ---------------------------------------------------------------- where it failed


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_an_op_xla_has_no_kernel_for_fails_while_compiling(tf: Any, backend: Any) -> None:
    """tf.linalg.det (MatrixDeterminant has no XLA kernel): the graph builds, XLA refuses it."""
    x = tf.constant(get_op("det").inputs(0)[0], tf.float32)
    plain = tf.function(tf.linalg.det)
    assert _raises(tf, lambda: plain.get_concrete_function(x)) is None  # the graph builds
    assert _raises(tf, lambda: plain(x)) is None  # and runs without XLA
    direct = _raises(tf, lambda: tf.function(tf.linalg.det, jit_compile=True)(x))
    assert isinstance(direct, tf.errors.InvalidArgumentError) and "MatrixDeterminant" in str(direct)
    outcome = backend.run("det", "float32", mode="xla", execute=False)
    assert outcome.phase is Phase.XLA_COMPILE and outcome.status.value == "no_kernel"
    assert "No registered 'MatrixDeterminant' OpKernel for XLA_CPU_JIT" in outcome.error


def test_cholesky_bfloat16_fails_building_the_op_and_float16_at_kernel_lookup(tf: Any, backend: Any) -> None:
    """TensorFlow 2.21: Cholesky's signature leaves bfloat16 out (no graph can hold it), while
    float16 is in it but has no CPU kernel (the graph builds; the eager run finds no kernel)."""
    a = get_op("cholesky").inputs(0)[0]
    bf16 = tf.constant(a, tf.bfloat16)
    in_graph = _raises(tf, lambda: tf.function(tf.linalg.cholesky).get_concrete_function(bf16))
    assert isinstance(in_graph, TypeError) and "not in list of allowed values" in str(in_graph)
    assert isinstance(_raises(tf, lambda: tf.linalg.cholesky(bf16)), tf.errors.InvalidArgumentError)
    outcome = backend.run("cholesky", "bfloat16")
    assert outcome.phase is Phase.OP_BUILD and "signature" in outcome.detail
    f16 = tf.constant(a, tf.float16)
    assert _raises(tf, lambda: tf.function(tf.linalg.cholesky).get_concrete_function(f16)) is None
    assert isinstance(_raises(tf, lambda: tf.linalg.cholesky(f16)), tf.errors.NotFoundError)
    outcome = backend.run("cholesky", "float16")
    assert outcome.phase is Phase.KERNEL_LOOKUP and outcome.status.value == "no_kernel"


def test_a_kernel_that_raises_while_running(tf: Any, backend: Any) -> None:
    """tf.linalg.inv of a singular matrix: the kernel is found and raises when it runs."""
    singular = np.zeros((4, 4))
    direct = _raises(tf, lambda: tf.linalg.inv(tf.constant(singular, tf.float32)))
    assert isinstance(direct, tf.errors.InvalidArgumentError) and "not invertible" in str(direct)
    outcome = backend.run("inv", "float32", inputs=(singular,))
    assert outcome.phase is Phase.KERNEL_RUN and "MatrixInverse kernel" in outcome.detail
    assert "not invertible" in outcome.error


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_range_float16_literal_fails_in_its_shape_function_with_or_without_xla(tf: Any) -> None:
    """tf.range(12, dtype=tf.float16) inside a tf.function: Range's shape function (run while the
    graph is built, on the constant inputs) raises, with jit_compile and without; eagerly it runs."""
    raised = {}
    for jit in (True, False):
        fn = tf.function(lambda: tf.range(12, dtype=tf.float16), jit_compile=jit)
        raised[jit] = _raises(tf, fn.get_concrete_function)
    assert all(isinstance(e, ValueError) and "Unsupported dtype" in str(e) for e in raised.values())
    assert str(raised[True]).splitlines()[0] == str(raised[False]).splitlines()[0]
    assert _raises(tf, lambda: tf.range(12, dtype=tf.float16)) is None
    detail = build_detail(raised[True])  # raised in TensorFlow's C++ graph builder
    assert "graph builder" in detail and "shape function" in detail
    row = {
        "backend": "tensorflow", "op": "range", "raw_op": "Range", "dtype": "float16", "device": "CPU",
        "mode": "xla", "status": "error", "phase": Phase.OP_BUILD.value, "detail": detail,
        "error": f"ValueError: {raised[True]}", "tf_public": "tf.range",
    }  # fmt: skip
    sentence = explain(row, get_registry())
    assert "while building the op, before any kernel was looked up" in sentence
    assert "a plain tf.function (no jit_compile) fails the same way" in sentence
    assert "rejected the dtype when run" not in sentence


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
@pytest.mark.parametrize(
    ("name", "dtype"),
    [("range", "float16"), ("range", "float32"), ("det", "float32"), ("exp", "bfloat16"),
     ("cholesky", "float16"), ("rfft", "float16"), ("einsum", "float8_e4m3fn"), ("cast_to_int32", "float16")],
)  # fmt: skip
def test_lowering_to_hlo_answers_as_compiling_and_running_does(backend: Any, name: str, dtype: str) -> None:
    """A sample of what ``python benchmarks/bench_catalog_sweep.py --prove-lowering`` checks for
    every XLA cell of the catalog (1,280 on CPU with TensorFlow 2.21: one mismatch, svd float16,
    which lowers but compiled and run returns NaN)."""
    lowered = backend.run(name, dtype, mode="xla", execute=False)
    ran = backend.run(name, dtype, mode="xla", execute=True)
    assert (lowered.status, lowered.phase) == (ran.status, ran.phase)
    if ran.ran:
        assert lowered.result is None and lowered.extra["result_dtype"] == str(ran.result.dtype)


# ---------------------------------------------------------------- the probe workers


def test_jax_and_tensorflow_probes_each_get_two_workers_on_two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    from explorer.runtime import probe

    monkeypatch.delenv("PX_PROBE_WORKERS", raising=False)
    monkeypatch.setattr(probe.os, "cpu_count", lambda: 2)
    assert [probe.probe_workers(b) for b in ("tensorflow", "jax", "numpy", "emulated", "torch")] == [
        2,
        2,
        1,
        1,
        1,
    ]
    assert probe.worker_keys("jax") == ("kernels-jax", "kernels-jax-2")
    monkeypatch.setattr(probe.os, "cpu_count", lambda: 1)
    assert probe.worker_keys("jax") == ("kernels-jax",)
    monkeypatch.setenv("PX_PROBE_WORKERS", "3")
    assert probe.probe_workers("jax") == 3 and probe.probe_workers("numpy") == 1


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_jax_probes_run_in_their_own_workers_started_with_the_jax_probe_flags(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Observed in the workers themselves: every worker that ran a JAX probe has XLA_FLAGS set to
    LLVM optimisation off and XLA:CPU's fusion emitters off (``--prove-flags jax``: no record
    differs from JAX's defaults), and none of them is the plain ``jax`` worker of ``Sandbox.run``."""
    from explorer.runtime.probe import Probe, run_probes
    from explorer.runtime.sandbox import Sandbox

    monkeypatch.delenv("XLA_FLAGS", raising=False)
    monkeypatch.delenv("PX_PROBE_XLA_FLAGS", raising=False)
    monkeypatch.setenv("PX_PROBE_WORKERS", "2")
    box = Sandbox()
    try:
        probes = [
            Probe("jax", "exp", dt, "CPU", mode)
            for dt in ("float32", "bfloat16")
            for mode in ("eager", "xla")
        ]
        records = run_probes(probes, sandbox=box)
        assert {r["status"] for r in records.values()} == {"ok"}
        keys = sorted(box.workers())
        assert keys and set(keys) <= {"kernels-jax", "kernels-jax-2"}
        flags = {box.call(key, os.getenv, "XLA_FLAGS") for key in keys}
        assert flags == {"--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"}
    finally:
        box.close()


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_an_xla_probe_runs_what_it_compiles_so_a_wrong_result_is_seen(tf: Any) -> None:
    """svd in float16 lowers to HLO, but compiled and run it returns NaN (TensorFlow 2.21, CPU):
    a probe that stopped at the lowering would call the cell ``ok``.  The probe's record is
    compared with the singular values of the same input computed here, compiled by
    ``tf.function(jit_compile=True)`` and by NumPy in float64."""
    from explorer.runtime.probe import Probe, probe_record

    op = get_op("svd")
    (a,) = op.inputs(0)
    compiled = tf.function(lambda m: tf.linalg.svd(m, compute_uv=False), jit_compile=True)
    with tf.device("/CPU:0"):
        got = compiled(tf.constant(a.astype(np.float16))).numpy()
    expected = np.linalg.svd(a.astype(np.float16).astype(np.float64), compute_uv=False)
    ran_true = bool(np.all(np.isfinite(got))) and np.allclose(got, expected, rtol=0.05, atol=0.05)
    record = probe_record(Probe("tensorflow", "svd", "float16", "CPU", "xla"), present=["CPU"])
    assert record["status"] == ("ok" if ran_true else "wrong_result"), (got, expected, record)
    assert "lowered to HLO" not in record["detail"]
