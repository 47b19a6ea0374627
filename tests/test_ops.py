"""The op catalog: contents, names, raw ops checked against TensorFlow, input builders,
and every op in float32 on TensorFlow, NumPy and the emulation against its float64 reference."""

from __future__ import annotations

import contextlib
import re

import numpy as np
import pytest

from explorer.backends import get_backend
from explorer.backends.tensorflow_backend import import_tensorflow
from explorer.formats import all_formats, resolve
from explorer.ops import GROUPS, Op, catalog, find_by_raw_op, get_op, inputs_fit, op_names
from explorer.outcome import Status

#: the ops issue 2 names; the catalog must have every one
REQUIRED = (
    *("range", "linspace", "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "square", "reciprocal"),
    *("sin", "tanh", "sigmoid", "erf", "erfinv", "lgamma", "digamma", "igamma", "bessel_i0", "add"),
    *("mul", "div", "pow", "floormod", "maximum", "atan2", "sum", "mean", "prod", "cumsum", "sort"),
    *("argmax", "matmul", "einsum", "cholesky", "det", "inv", "solve", "qr", "svd", "eigh", "relu"),
    *("gelu", "softmax", "log_softmax", "conv2d", "depthwise_conv2d", "conv3d", "max_pool"),
    *("avg_pool", "batch_norm", "layer_norm", "rgb_to_hsv", "resize", "fft", "rfft"),
)

OPS = list(catalog().values())
IDS = [op.name for op in OPS]
#: graph nodes that are not kernels of the op (constants, plumbing)
NOT_KERNELS = {"Const", "Identity", "IdentityN", "Placeholder", "NoOp"}


@pytest.fixture(scope="module")
def tf():
    return import_tensorflow()


def test_catalog_size_and_required_ops():
    names = op_names()
    assert len(names) >= 60
    missing = [n for n in REQUIRED if n not in names]
    assert not missing, f"missing ops: {missing}"


@pytest.mark.parametrize("group", GROUPS)
def test_every_group_has_ops(group):
    assert op_names(group), group
    assert all(get_op(n).group == group for n in op_names(group))


def test_names_snake_case_and_unique():
    names = op_names()
    assert len(set(names)) == len(names)
    for name, op in catalog().items():
        assert op.name == name
        assert re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", name), name
    assert sorted(op_names()) == sorted(n for g in GROUPS for n in op_names(g))


def test_catalog_order_follows_the_groups():
    """One module per group, imported in the order of GROUPS: each group's ops are contiguous."""
    groups = [op.group for op in catalog().values()]
    assert groups == sorted(groups, key=GROUPS.index)
    assert list(dict.fromkeys(groups)) == list(GROUPS)


def test_entries_by_name_call_that_function():
    """``numpy="arcsin"`` in an entry is ``np.arcsin(x)``; a tf call defaults to ``tf_public``."""
    from explorer.ops._define import unary

    x = np.array([0.5, -0.25])
    np.testing.assert_array_equal(get_op("asin").numpy(np, np.float64, x), np.arcsin(x))
    np.testing.assert_array_equal(get_op("floormod").numpy(np, np.float64, x, x[::-1]), np.mod(x, x[::-1]))

    class FakeTF:
        class math:
            asin = staticmethod(lambda v: ("tf.math.asin", v))

    assert get_op("asin").tf(FakeTF, None, 1.0) == ("tf.math.asin", 1.0)
    before = op_names()
    with pytest.raises(ValueError, match=r"must start with 'tf\.'"):
        unary(
            name="not_added",
            tf_public="math.asin",
            tf_raw_ops=("Asin",),
            numpy="arcsin",
            torch="asin",
            reference=np.arcsin,
            make_inputs=lambda rng: (rng.uniform(-0.5, 0.5, 4),),
        )
    with pytest.raises(ValueError, match="defined twice"):
        from explorer.ops._op import register

        register(get_op("exp"))
    assert op_names() == before


def test_get_op_bad_names():
    with pytest.raises(ValueError, match=r"did you mean 'exp'") as info:
        get_op("expp")
    # a typo: at most 5 close matches, not the whole catalog (issue 40)
    assert "Valid ops:" in str(info.value) and "cholesky" not in str(info.value)
    assert str(info.value).count("'") <= 2 * (5 + 1)
    with pytest.raises(ValueError, match=r"Valid ops: range, linspace.*cholesky"):
        get_op("zzzzzz")  # nothing close: the whole list
    with pytest.raises(ValueError, match=r"did you mean 'cholesky'"):
        get_op("cholesk")
    with pytest.raises(ValueError, match="Valid ops"):
        get_op("zzzzzz")
    with pytest.raises(TypeError, match="string"):
        get_op(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="valid groups: creation, unary"):
        op_names("elementwise")
    assert get_op(" EXP ") is get_op("exp")
    assert get_op(get_op("exp")) is get_op("exp")


def test_find_by_raw_op():
    assert [op.name for op in find_by_raw_op("Cholesky")] == ["cholesky", "lstsq"]
    assert {"conv2d", "conv1d"} <= {op.name for op in find_by_raw_op("Conv2D")}
    assert find_by_raw_op("NoSuchRawOp") == []


def test_raw_ops_exist_in_tensorflow(tf):
    for op in OPS:
        assert op.tf_raw_ops, op.name
        unknown = [raw for raw in op.tf_raw_ops if not hasattr(tf.raw_ops, raw)]
        assert not unknown, f"{op.name}: {unknown} are not TensorFlow raw ops"


def _traced_raw_ops(tf, op: Op, dtype) -> set[str]:
    """Kernels in the graph of the op's TensorFlow call that touch a float or complex tensor."""
    specs = [tf.TensorSpec(x.shape, dtype) for x in op.inputs()]
    graph = tf.function(lambda *a: op.tf(tf, dtype, *a), autograph=False).get_concrete_function(*specs).graph
    found = set()
    for node in graph.get_operations():
        tensors = list(node.inputs) + list(node.outputs)
        if node.type not in NOT_KERNELS and any(t.dtype.is_floating or t.dtype.is_complex for t in tensors):
            found.add(node.type)
    return found


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_raw_ops_are_what_tensorflow_builds(tf):
    """tf_raw_ops equals the kernels in the traced graph (float32 and, where the op's
    signature takes it, float16: casts appear only there)."""
    wrong = {}
    for op in OPS:
        traced = _traced_raw_ops(tf, op, tf.float32)
        # the signature of some ops rejects float16 (rfft, range): float32 alone then
        with contextlib.suppress(TypeError, ValueError):
            traced |= _traced_raw_ops(tf, op, tf.float16)
        if traced != set(op.tf_raw_ops):
            wrong[op.name] = (sorted(traced), op.tf_raw_ops)
    assert not wrong


@pytest.mark.parametrize("op", OPS, ids=IDS)
def test_builders_deterministic_and_valid(op):
    first, again = op.inputs(0), op.inputs(0)
    assert len(first) == op.arity
    for a, b in zip(first, again, strict=True):
        assert a.dtype == np.float64 and np.all(np.isfinite(a))
        np.testing.assert_array_equal(a, b)
        assert np.max(np.abs(a), initial=0) <= 6, "inputs must fit float4_e2m1fn (max 6)"
    if op.arity:
        assert any(not np.array_equal(a, b) for a, b in zip(first, op.inputs(1), strict=True))
    if op.elementwise:
        assert all(np.all(op.in_domain(x)) for x in first)
    ref = np.asarray(op.reference(*first))
    assert np.all(np.isfinite(ref))
    assert ref.dtype == (np.float64 if op.float_output else ref.dtype)


@pytest.mark.parametrize("op", OPS, ids=IDS)
def test_inputs_fit_every_signed_format(op):
    """Rounded to any format, the inputs stay finite and in the domain; only the unsigned
    float8_e8m0fnu may reject them (it has no negative numbers and no zero)."""
    for fmt in all_formats():
        if fmt.has_sign:
            assert inputs_fit(op, fmt), fmt.name
    signed = any(np.any(x <= 0) for x in op.inputs())
    assert inputs_fit(op, "float8_e8m0fnu") is (not signed)


def test_inputs_fit_bad_format():
    with pytest.raises(ValueError, match="unknown format"):
        inputs_fit("exp", "float7")


@pytest.mark.parametrize("name", ["cholesky", "eigh", "det", "inv", "solve", "slogdet", "qr"])
def test_matrices_stay_well_conditioned_in_every_format(name):
    a = get_op(name).inputs()[0]
    for fmt in all_formats():
        if not fmt.has_sign:
            continue
        rounded = fmt.round(a).astype(np.float64)
        assert np.linalg.cond(rounded) < 10, fmt.name
        if name in ("cholesky", "eigh"):
            np.testing.assert_array_equal(rounded, rounded.T)
            assert np.min(np.linalg.eigvalsh(rounded)) > 1, fmt.name


def test_domains():
    assert get_op("log").domain == (0, np.inf)
    assert get_op("erfinv").in_domain([-1.0, 0.5, 1.0, 1.5, np.nan]).tolist() == [
        True,
        True,
        True,
        False,
        False,
    ]
    assert get_op("sqrt").in_domain([-0.0, -1e-300]).tolist() == [True, False]
    assert get_op("exp").in_domain([-np.inf, np.inf]).all()


def _check_close(result: np.ndarray, ref: np.ndarray, op: Op, where: str) -> None:
    result = np.asarray(result)
    assert result.shape == ref.shape, where
    if not op.float_output:
        np.testing.assert_array_equal(result.astype(np.float64), ref, err_msg=where)
        return
    scale = max(1.0, float(np.max(np.abs(ref), initial=0)))
    np.testing.assert_allclose(result.astype(np.float64), ref, rtol=1e-4, atol=1e-5 * scale, err_msg=where)


#: every op on every backend that has it (NumPy lacks some: ``op.numpy is None``)
RUNS = [
    pytest.param(op, backend, id=f"{op.name}-{backend}")
    for op in OPS
    for backend in ("tensorflow", "numpy", "emulated")
    if backend != "numpy" or op.numpy
]


@pytest.mark.parametrize(("op", "backend"), RUNS)
def test_float32_matches_float64_reference(op, backend):
    """Every op in float32 against its float64 reference on the float32-rounded inputs."""
    fmt = resolve("float32")
    inputs = op.inputs()
    ref = np.asarray(op.reference(*[fmt.round(x).astype(np.float64) for x in inputs]), np.float64)
    outcome = get_backend(backend).run(op, fmt)
    assert outcome.status.value == "ok", (outcome.status, outcome.error, outcome.detail)
    assert outcome.result is not None
    if op.float_output:
        assert outcome.result.dtype == np.float32
    _check_close(outcome.result, ref, op, f"{backend} {op.name}")


@pytest.mark.parametrize(("op", "backend"), RUNS)
def test_float64_matches_reference_or_says_why_not(op, backend):
    """In float64 every NumPy and emulated run matches to 1e-9; a TensorFlow run either
    matches to 1e-7 (some TF ops carry float32 constants or compute float64 in float32,
    e.g. leaky_relu's float32 alpha) or says why not (fused_batch_norm has no float64;
    resize returns float32)."""
    fmt = resolve("float64")
    inputs = op.inputs()
    ref = np.asarray(op.reference(*inputs), np.float64)
    outcome = get_backend(backend).run(op, fmt)
    if backend == "tensorflow" and outcome.status is not Status.OK:
        assert outcome.status in (Status.FALLBACK, Status.UNSUPPORTED_DTYPE), outcome.error
        assert outcome.error or outcome.detail
        return
    assert outcome.status is Status.OK, (outcome.status, outcome.error, outcome.detail)
    assert outcome.result is not None
    result = np.asarray(outcome.result, np.float64)
    assert result.shape == ref.shape
    rtol = 1e-7 if backend == "tensorflow" else 1e-9
    scale = max(1.0, float(np.max(np.abs(ref), initial=0)))
    np.testing.assert_allclose(result, ref, rtol=rtol, atol=rtol * scale, err_msg=f"{backend} {op.name}")
