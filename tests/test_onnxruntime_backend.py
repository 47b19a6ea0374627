"""The ONNX Runtime backend: its declared kernels against a reading of onnxruntime's kernel
registry written here, and its probes (one-node ONNX models on the CPU provider) against that
declaration.

Oracles: ``get_all_opkernel_def()`` read directly by this file (its own type names, its own
opset test); ONNX's own operator schemas (``onnx.defs``); one-node models built and run by this
file with ``onnx.helper`` and ``onnxruntime`` (the error texts the backend must classify).  The
tests need ``onnxruntime`` and ``onnx`` (``pip install -e ".[onnx]"``): without them they skip on
a developer's machine and fail in CI.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from explorer.backends import get_backend
from explorer.outcome import Status
from tests.support.require import require_module

#: the registry's names of the float types, written here (not the backend's table)
FLOAT_TYPES = {
    "tensor(float16)": "float16",
    "tensor(bfloat16)": "bfloat16",
    "tensor(float)": "float32",
    "tensor(double)": "float64",
    "tensor(float8e4m3fn)": "float8_e4m3fn",
    "tensor(float8e5m2)": "float8_e5m2",
    "tensor(float8e4m3fnuz)": "float8_e4m3fnuz",
    "tensor(float8e5m2fnuz)": "float8_e5m2fnuz",
    "tensor(float8e8m0)": "float8_e8m0fnu",
    "tensor(float4e2m1)": "float4_e2m1fn",
}
CPU = "CPUExecutionProvider"
#: the formats the probes are compared in
PROBED = ("float16", "bfloat16", "float32", "float64", "float8_e4m3fn")
#: cells where the probe and the registry differ, and why (onnxruntime 1.32, CPU)
EXPLAINED: dict[tuple[str, str], str] = {
    (op, "float8_e4m3fn"): "ConstantOfShape registers float8 types in T2, but its kernel's reader of the "
    "value attribute has no float8 case: creating the kernel raises 'Unsupported value attribute "
    "datatype: 17' (an error, not a missing kernel)"
    for op in ("zeros", "ones", "fill")
}


@pytest.fixture(scope="module")
def ort():
    require_module("onnxruntime")
    require_module("onnx")
    import onnxruntime

    return onnxruntime


def _registry_reading(opset: int | None = None) -> dict[tuple[str, str, str], set[str]]:
    """(op, domain, provider) -> float formats some kernel takes, read here from the registry
    (at ``opset`` only, when given)."""
    from onnxruntime.capi import _pybind_state

    said: dict[tuple[str, str, str], set[str]] = {}
    for k in _pybind_state.get_all_opkernel_def():
        low, high = k.version_range
        if opset is not None and not low <= opset <= high:
            continue
        types = {t for values in k.type_constraints.values() for t in values}
        found = {FLOAT_TYPES[t] for t in types if t in FLOAT_TYPES}
        if found:
            said.setdefault((k.op_name, k.domain, k.provider), set()).update(found)
    return said


def test_declared_rows_are_the_registry_read_separately(ort):
    """Every op × domain × provider × float type of the wheel's registry, and nothing else."""
    from explorer.backends.onnxruntime_backend import declared_kernel_rows

    rows = declared_kernel_rows()
    got = {(r["op"], r["domain"], r["provider"], r["dtype"]) for r in rows}
    want = {(op, dom, prov, t) for (op, dom, prov), types in _registry_reading().items() for t in types}
    assert got == want
    assert len(rows) == len(got) > 300  # one row per cell
    assert ("Exp", "", CPU, "float32") in got and ("Exp", "", CPU, "float16") not in got


def _typed_constraint(op_type: str, formal: tuple[str, int], opset: int) -> str:
    import onnx

    schema = onnx.defs.get_schema(op_type, opset, "")
    kind, index = formal
    return (schema.inputs if kind == "input" else schema.outputs)[index].type_str


def test_declared_status_of_each_catalog_node_is_the_registrys(ort):
    """For every catalog op with an ONNX node: ok exactly when a CPU kernel covering the opset
    takes the format in the constraint the format fills (read here), in every ONNX float type."""
    from onnxruntime.capi import _pybind_state

    from explorer.backends.onnxruntime_backend import declared_for_op
    from explorer.backends.onnxruntime_graphs import ONNX_CALLS, OPSET

    defs = _pybind_state.get_all_opkernel_def()
    assert len(ONNX_CALLS) >= 40
    checked = 0
    for name, call in ONNX_CALLS.items():
        constraint = _typed_constraint(call.op_type, call.typed, OPSET)
        for type_string, fmt in FLOAT_TYPES.items():
            has = any(
                k.op_name == call.op_type
                and k.domain == ""
                and k.provider == CPU
                and k.version_range[0] <= OPSET <= k.version_range[1]
                and type_string in k.type_constraints.get(constraint, [])
                for k in defs
            )
            assert (declared_for_op(name, fmt) is Status.OK) == has, (name, fmt)
            checked += 1
    assert checked == len(ONNX_CALLS) * len(FLOAT_TYPES)


def _one_node(ort, op_type: str, elem: int, arity: int):
    from onnx import helper

    graph = helper.make_graph(
        [helper.make_node(op_type, [f"x{i}" for i in range(arity)], ["y"])],
        "g",
        [helper.make_tensor_value_info(f"x{i}", elem, None) for i in range(arity)],
        [helper.make_tensor_value_info("y", elem, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model.SerializeToString()


def test_error_texts_of_direct_runs_are_classified(ort):
    """A bfloat16 Exp (no CPU kernel) and a float8 Exp (not in ONNX's schema), built and loaded
    here, fail with the texts the backend reports, as no_kernel and unsupported_dtype."""
    import onnx

    texts = {}
    for fmt, elem in (
        ("bfloat16", onnx.TensorProto.BFLOAT16),
        ("float8_e4m3fn", onnx.TensorProto.FLOAT8E4M3FN),
    ):
        with pytest.raises(Exception) as caught:  # onnxruntime's own exception types
            ort.InferenceSession(_one_node(ort, "Exp", elem, 1), providers=[CPU])
        texts[fmt] = str(caught.value)
    assert "Could not find an implementation for Exp(13) node with name ''" in texts["bfloat16"]
    assert "Type Error: Type 'tensor(float8e4m3fn)'" in texts["float8_e4m3fn"]
    backend = get_backend("onnxruntime")
    bf16 = backend.run("exp", "bfloat16")
    assert bf16.status is Status.NO_KERNEL and texts["bfloat16"] in bf16.error
    f8 = backend.run("exp", "float8_e4m3fn")
    assert f8.status is Status.UNSUPPORTED_DTYPE and "Type Error: Type 'tensor(float8e4m3fn)'" in f8.error


def test_float32_results_are_onnxruntimes_own(ort):
    """The backend's result for a node is what a session built here returns for the same inputs."""
    import onnx

    from explorer.ops import get_op

    x = get_backend("onnxruntime").run("exp", "float32")
    assert x.status is Status.OK
    inputs = get_op("exp").inputs(0)[0].astype(np.float32)
    session = ort.InferenceSession(_one_node(ort, "Exp", onnx.TensorProto.FLOAT, 1), providers=[CPU])
    (direct,) = session.run(None, {"x0": inputs})
    assert np.array_equal(x.result, direct)


@pytest.mark.slow
def test_probes_agree_with_the_declaration(ort):
    """Every catalog op with an ONNX node (77) in float16, bfloat16, float32, float64 and
    float8_e4m3fn on the CPU provider: a declared kernel runs natively, a missing one fails with
    no_kernel or (float16) runs through casts to float32 the session inserted, a type ONNX's
    schema refuses is unsupported_dtype; the differences are the explained ones."""
    import onnx

    from explorer.backends.onnxruntime_graphs import ONNX_CALLS, OPSET

    reading = _registry_reading(OPSET)
    backend = get_backend("onnxruntime")
    seen: dict[tuple[str, str], str] = {}
    agreed = 0
    for name, call in ONNX_CALLS.items():
        schema = onnx.defs.get_schema(call.op_type, OPSET, "")
        constraint = _typed_constraint(call.op_type, call.typed, OPSET)
        allowed = {
            t for c in schema.type_constraints if c.type_param_str == constraint for t in c.allowed_type_strs
        }
        for fmt in PROBED:
            type_string = next(t for t, f in FLOAT_TYPES.items() if f == fmt)
            out = backend.run(name, fmt)
            if type_string not in allowed:
                ok = out.status is Status.UNSUPPORTED_DTYPE
            elif fmt in reading.get((call.op_type, "", CPU), set()) and _has_kernel(call, type_string, OPSET):
                ok = out.status is Status.OK and "inserted_casts" not in out.extra
            else:
                cast = out.status is Status.FALLBACK and out.extra.get("inserted_casts") and fmt == "float16"
                ok = out.status is Status.NO_KERNEL or bool(cast)
            if ok:
                agreed += 1
            else:
                seen[(name, fmt)] = f"{out.status.value}: {out.error[-120:]}"
    assert set(seen) == set(EXPLAINED), seen
    assert agreed == len(ONNX_CALLS) * len(PROBED) - len(EXPLAINED)


@functools.cache
def _all_defs() -> tuple:
    from onnxruntime.capi import _pybind_state

    return tuple(_pybind_state.get_all_opkernel_def())


def _has_kernel(call, type_string: str, opset: int) -> bool:
    constraint = _typed_constraint(call.op_type, call.typed, opset)
    return any(
        k.op_name == call.op_type
        and k.domain == ""
        and k.provider == CPU
        and k.version_range[0] <= opset <= k.version_range[1]
        and type_string in k.type_constraints.get(constraint, [])
        for k in _all_defs()
    )


def test_float16_without_a_kernel_runs_through_inserted_casts(ort):
    """float16 Exp has no CPU kernel: the session casts to float32 and back; the result is float16
    and equals a float32 Exp session's (built here) on the same inputs, rounded to float16."""
    import onnx

    from explorer.ops import get_op

    out = get_backend("onnxruntime").run("exp", "float16")
    assert out.status is Status.FALLBACK and out.extra["inserted_casts"]
    assert "onnxruntime inserted Cast to float16, Cast to float32" in out.detail
    x = get_op("exp").inputs(0)[0].astype(np.float16)
    session = ort.InferenceSession(_one_node(ort, "Exp", onnx.TensorProto.FLOAT, 1), providers=[CPU])
    (wide,) = session.run(None, {"x0": x.astype(np.float32)})
    assert out.result.dtype == np.float16
    assert np.array_equal(out.result, wide.astype(np.float16))


@pytest.mark.slow
@pytest.mark.usefixtures("cache_dir")
def test_kernels_query_and_cli_have_onnxruntime(ort, capsys):
    """``availability(backends="onnxruntime")`` has the registry rows and the probed rows, each
    probe compared with the declaration; the CLI's ``kernels --backend onnxruntime`` prints them."""
    from explorer.backends.onnxruntime_backend import declared_for_op
    from explorer.cli import main
    from explorer.queries.availability import availability

    result = availability(
        ops=["exp", "matmul", "det"],
        dtypes=["float16", "bfloat16", "float32"],
        backends="onnxruntime",
        modes=["registry", "eager"],
        progress=False,
    )
    rows = result.rows
    declared = rows[rows["mode"] == "registry"]
    assert len(declared) == 9 and set(declared["backend"]) == {"onnxruntime"}
    for _, row in declared.iterrows():
        assert row["status"] == declared_for_op(row["op"], row["dtype"]).value
    probed = rows[rows["mode"] == "eager"].set_index(["op", "dtype"])
    assert probed.loc[("exp", "float16"), "status"] == "fallback"
    assert probed.loc[("exp", "bfloat16"), "status"] == "no_kernel"
    assert probed.loc[("matmul", "float32"), "status"] == "ok"
    assert probed.loc[("det", "float16"), "declared"] == "no_kernel"
    assert (probed["disagreement"] == "").all()
    assert main(["kernels", "--backend", "onnxruntime", "--op", "exp", "--dtype", "bfloat16"]) == 0
    assert "Could not find an implementation for Exp(13)" in capsys.readouterr().out


def test_without_onnxruntime_a_run_says_how_to_install_it(monkeypatch):
    """No onnxruntime importable: not_installed, with the extra that installs it."""
    import importlib.util

    from explorer.backends.onnxruntime_backend import OnnxruntimeBackend

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "onnxruntime" else real(n, *a)
    )
    out = OnnxruntimeBackend().run("exp", "float32")
    assert out.status is Status.NOT_INSTALLED
    assert out.error == 'onnxruntime is not installed (install it: python -m pip install -e ".[onnx]")'
    assert OnnxruntimeBackend().declared("exp", "float32", "CPU") is None


def test_the_timed_call_returns_what_a_run_returns(ort):
    """The speed measurement's call (session built once) gives the run's result, and the speed
    runtime finds it through the backend (no table of its own for onnxruntime)."""
    from explorer.formats import resolve
    from explorer.ops import get_op
    from explorer.runtime.speed_calls import prepared_call

    op, fmt = get_op("matmul"), resolve("float32")
    inputs = op.inputs(0)
    with prepared_call("onnxruntime", op, fmt, "CPU", "eager", inputs) as call:
        timed = call()
    ran = get_backend("onnxruntime").run("matmul", "float32")
    assert np.array_equal(timed, ran.result)
    with pytest.raises(ValueError, match="no one-node model of cholesky"):
        get_backend("onnxruntime").timed_call(get_op("cholesky"), fmt, "CPU", "eager", ())
