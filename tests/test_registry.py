"""explorer's reading of TensorFlow's kernel registry, checked against an independent one.

The oracle (``tests/support/registry_oracle.py``) reads the same registry through other TensorFlow
APIs with its own code and rule; the explorer ``Registry`` under test is built here, from
the oracle's protos, by ``registry_data`` (so the parsing is tested too, not a cached JSON).
Hand-built OpDef/KernelDef protos pin each rule with answers worked out by hand, and a
real ``jit_compile=True`` run checks the rule the two readings are compared under.

Tests whose names contain ``live`` need TensorFlow itself in this process; mutation testing
(``benchmarks/mutation_registry.sh``) deselects them and reads the snapshot from a fixture.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from explorer.backends.tensorflow_registry import (
    DATA_VERSION,
    REGISTRY_DEVICE,
    Registry,
    registry_data,
    registry_device,
)
from explorer.outcome import Status
from tests.support.registry_oracle import COMPUTE_DEVICE_TYPES, Oracle, Snapshot, oracle, snapshot

XLA_JIT = ("XLA_CPU_JIT", "XLA_GPU_JIT")


@pytest.fixture(scope="module")
def orc() -> Oracle:
    the_oracle = oracle()
    assert len(the_oracle.cells) > 100_000  # every answer, computed once
    return the_oracle


@pytest.fixture(scope="module")
def reg(orc: Oracle) -> Registry:
    """explorer's Registry, parsed here from the oracle's protos."""
    snap = orc.snap
    return Registry(
        registry_data(snap.op_list, snap.kernel_list, snap.dtype_name, orc.float_names, snap.tf_version)
    )


def _attr(value: Any) -> str | None:
    """A data_attr cell of a matrix frame (pandas shows None as NaN)."""
    return value if isinstance(value, str) else None


# ---------------------------------------------------------------- the live registry, against the oracle


def test_the_registry_has_the_oracles_ops_dtypes_and_device_types(reg: Registry, orc: Oracle) -> None:
    assert set(reg.ops) == set(orc.op_defs)
    assert len(orc.op_defs) > 1500
    assert set(reg.float_dtypes) == set(orc.float_names)
    # float16, bfloat16, float32, float64 and the float8 types TensorFlow 2.21 has
    assert {"float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2"} <= set(
        orc.float_names
    )
    assert set(reg.device_types) == orc.device_types
    assert reg.device_types[:4] == COMPUTE_DEVICE_TYPES  # the compute ones first, in this order
    assert list(reg.device_types[4:]) == sorted(reg.device_types[4:])
    assert set(reg.ops_with_kernels()) == {op for op in orc.op_defs if orc.kernels.get(op)}


def test_data_attribute_of_every_op_matches_the_oracle(reg: Registry, orc: Oracle) -> None:
    wrong = {
        op: (reg.op(op).data_attr, orc.data_attr(op))
        for op in orc.op_defs
        if reg.op(op).data_attr != orc.data_attr(op)
    }
    assert not wrong
    assert len(orc.float_ops()) > 1000
    # the cases the rule is written for, as TensorFlow 2.21 declares them
    for op, attr in {
        "Range": "Tidx",
        "Cast": "DstT",
        "ArgMax": "T",
        "RandomUniform": "dtype",
        "MatMul": "T",
    }.items():
        assert orc.data_attr(op) == attr == reg.op(op).data_attr


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_declared_matches_the_oracle_on_every_cell(reg: Registry, orc: Oracle) -> None:
    """The full cross product: every op with a float type attribute x every float dtype x CPU, GPU,
    XLA_CPU_JIT, XLA_GPU_JIT (49,040 cells with TensorFlow 2.21)."""
    float_ops = set(orc.float_ops())
    cells = {
        cell: want
        for cell, want in orc.cells.items()
        if cell[0] in float_ops and cell[2] in COMPUTE_DEVICE_TYPES
    }
    got = {cell: reg.declared(*cell).value for cell in cells}
    wrong = {cell: (got[cell], want) for cell, want in cells.items() if got[cell] != want}
    assert len(cells) == len(float_ops) * len(orc.float_types) * 4 > 40_000
    assert wrong == {}
    # the cells issue 9.1 was about: ops with a DEFAULT kernel on the XLA JIT device types
    default_on_xla = [c for c in cells if c[2] in XLA_JIT and orc.has_default_kernel(c[0])]
    assert len(default_on_xla) > 2000
    assert sum(cells[c] == "no_kernel" for c in default_on_xla) > 1000


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_the_matrix_matches_the_oracle(reg: Registry, orc: Oracle) -> None:
    frame = reg.matrix(device_types=list(COMPUTE_DEVICE_TYPES))
    assert list(frame.columns) == ["op", "data_attr", "dtype", "device_type", "status"]
    assert len(frame) == len(orc.op_defs) * len(orc.float_types) * len(COMPUTE_DEVICE_TYPES)
    got = {(r.op, r.dtype, r.device_type): r.status for r in frame.itertuples(index=False)}
    assert set(got) == {cell for cell in orc.cells if cell[2] in COMPUTE_DEVICE_TYPES}
    wrong = {cell: (status, orc.cells[cell]) for cell, status in got.items() if status != orc.cells[cell]}
    assert wrong == {}
    assert {r.op: _attr(r.data_attr) for r in frame.itertuples(index=False)} == {
        op: orc.data_attr(op) for op in orc.op_defs
    }
    assert len(reg.matrix()) == len(reg.ops) * len(reg.float_dtypes) * len(reg.device_types)


def test_ops_without_a_float_type_attribute_match_the_oracle(reg: Registry, orc: Oracle) -> None:
    """Ops whose type attributes cannot hold a float (or that have none): the fixed argument types decide."""
    others = set(orc.op_defs) - set(orc.float_ops())
    assert len(others) > 300
    cells = {cell: want for cell, want in orc.cells.items() if cell[0] in others}
    got = {cell: reg.declared(*cell).value for cell in cells}
    wrong = [(cell, got[cell], want) for cell, want in cells.items() if got[cell] != want]
    assert wrong == []
    # some of them accept a float because an argument is fixed to it
    assert any(orc.cells[(op, "float32", "CPU")] == "ok" for op in others)


def test_kernel_devices_and_allowed_dtypes_match_the_oracle(reg: Registry, orc: Oracle) -> None:
    compared = 0
    for op in orc.float_ops():
        allowed = orc.type_attrs(op)[orc.data_attr(op)]
        want = None if allowed is None else sorted(orc.name_of(v) for v in allowed)
        got = reg.allowed_dtypes(op)
        assert (None if got is None else sorted(set(got))) == want, op
        for dtype in orc.float_names:
            expect = [d for d in reg.device_types if orc.cells[(op, dtype, d)] == "ok"]
            assert reg.kernel_devices(op, dtype) == expect, (op, dtype)
            compared += 1
    assert compared > 10_000


def test_an_explicit_attribute_is_answered_for_that_attribute(reg: Registry, orc: Oracle) -> None:
    cells = [
        (op, attr) for op in ("Cast", "ArgMax", "RandomUniform", "Bitcast") for attr in orc.type_attrs(op)
    ]
    assert len(cells) >= 8
    for op, attr in cells:
        for dtype in orc.float_names:
            for device in COMPUTE_DEVICE_TYPES:
                want = orc.declared(op, dtype, device, attr=attr)
                assert reg.declared(op, dtype, device, attr=attr).value == want, (op, attr, dtype, device)
    assert reg.declared("Cast", "float16", "CPU", attr="SrcT") is Status.OK  # CPU casts from float16


def test_known_cells_of_tensorflow_2_21(reg: Registry, orc: Oracle) -> None:
    """The seed cases, stated as this TensorFlow declares them (the oracle agrees)."""
    expected = {
        ("Cholesky", "float16", "CPU"): "no_kernel",
        ("Cholesky", "float16", "XLA_CPU_JIT"): "ok",
        ("Cholesky", "bfloat16", "CPU"): "unsupported_dtype",
        ("Cholesky", "bfloat16", "XLA_CPU_JIT"): "unsupported_dtype",
        ("Exp", "float16", "CPU"): "ok",
        ("Exp", "bfloat16", "CPU"): "ok",
        ("MatMul", "float32", "GPU"): "ok",
    }
    for (op, dtype, device), status in expected.items():
        assert orc.cells[(op, dtype, device)] == status, (op, dtype, device)
        assert reg.declared(op, dtype, device).value == status, (op, dtype, device)
    for device in COMPUTE_DEVICE_TYPES:
        assert reg.declared("Range", "float16", device).value == orc.cells[("Range", "float16", device)]


# ---------------------------------------------------------------- the rule, against a real run


#: raw op -> a float16 call of it; each has a DEFAULT kernel that takes float16
LIVE_CALLS: dict[str, Any] = {
    "DebugIdentityV3": lambda tf, x: tf.raw_ops.DebugIdentityV3(input=x, tensor_name="x:0"),
    "DebugNanCount": lambda tf, x: tf.raw_ops.DebugNanCount(input=x, tensor_name="x:0"),
    "EagerPyFunc": lambda tf, x: tf.py_function(lambda a: a * 2, [x], tf.float16),
    "IdentityN": lambda tf, x: tf.raw_ops.IdentityN(input=[x])[0],
}


@pytest.mark.parametrize("op", sorted(LIVE_CALLS))
def test_live_run_decides_what_default_kernels_serve(op: str, orc: Oracle, reg: Registry) -> None:
    """A real run is the oracle of the oracle's rule: eager on CPU and ``jit_compile=True`` on CPU
    succeed exactly where it says ``ok``, for ops whose float16 CPU or XLA answer hangs on DEFAULT."""
    import tensorflow as tf

    half = orc.enum_of("float16")
    attr = orc.data_attr(op)

    def registered(device: str) -> bool:
        return any(k.device_type == device and orc.matches(k, attr, half) for k in orc.kernels[op])

    assert registered("DEFAULT")
    # the DEFAULT kernel alone serves CPU for DebugIdentityV3 and IdentityN; the XLA answer hangs on it
    # for all but IdentityN, which XLA has a kernel for
    assert registered("CPU") == (op in ("DebugNanCount", "EagerPyFunc"))
    assert registered("XLA_CPU_JIT") == (op == "IdentityN")
    x = tf.constant([1.0, 2.0], dtype=tf.float16)
    call = functools.partial(LIVE_CALLS[op], tf)
    with tf.device("/CPU:0"):
        assert tf.function(call, autograph=False)(x) is not None
        try:
            tf.function(call, jit_compile=True, autograph=False)(x)
            compiled, error = True, ""
        except tf.errors.InvalidArgumentError as exc:
            compiled, error = False, str(exc)
    assert orc.declared(op, half, "CPU") == "ok" == reg.declared(op, "float16", "CPU").value
    assert orc.declared(op, half, "XLA_CPU_JIT") == ("ok" if compiled else "no_kernel")
    assert reg.declared(op, "float16", "XLA_CPU_JIT").value == orc.declared(op, half, "XLA_CPU_JIT")
    assert compiled == (op == "IdentityN")
    assert compiled or f"No registered '{op}' OpKernel for XLA_CPU_JIT devices" in error


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_live_reader_reads_what_the_oracle_reads(orc: Oracle) -> None:
    """``read_registry_data`` (TF_GetAllOpList, explorer's dtype names and float list) against the oracle."""
    from explorer.backends.tensorflow_registry import read_registry_data

    live = read_registry_data()
    snap = orc.snap
    mine = registry_data(snap.op_list, snap.kernel_list, snap.dtype_name, orc.float_names, snap.tf_version)
    assert live["xla_error"] == ""
    assert live["tf_version"] == snap.tf_version
    assert set(live["float_dtypes"]) == set(orc.float_names)
    assert set(live["ops"]) >= set(orc.op_defs)
    assert {op: live["ops"][op] for op in orc.op_defs} == mine["ops"]
    assert live["kernels"] == mine["kernels"]
    assert live["labelled_kernels_ignored"] == sum(1 for k in snap.kernel_list.kernel if k.label) > 0


@pytest.mark.slow
def test_live_reader_initialises_xla_itself_in_a_fresh_process() -> None:
    """In a process where nothing compiled with XLA yet (a sandbox worker), ``read_registry_data``
    still finds the XLA JIT kernels: it compiles a tiny function first."""
    import json
    import subprocess
    import sys

    code = (
        "import json\n"
        "from explorer.backends.tensorflow_registry import read_registry_data\n"
        "data = read_registry_data()\n"
        "devices = sorted({device for kernels in data['kernels'].values() for device, _ in kernels})\n"
        "print(json.dumps([devices, data['xla_error'], len(data['kernels']['Cholesky'])]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    devices, xla_error, cholesky_kernels = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"CPU", "GPU", "XLA_CPU_JIT", "XLA_GPU_JIT", "DEFAULT"} <= set(devices)
    assert xla_error == ""
    assert cholesky_kernels > 4


def test_live_reader_says_why_there_are_no_xla_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the jit_compile warm-up fails (an XLA-less build), the data says so, in one line."""
    import tensorflow as tf

    from explorer.backends.tensorflow_registry import read_registry_data

    def no_xla(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("XLA is not built in\nsecond line")

    monkeypatch.setattr(tf, "function", no_xla)
    data = read_registry_data()
    assert data["xla_error"] == "RuntimeError: XLA is not built in"
    assert len(data["ops"]) > 1500


# ---------------------------------------------------------------- registry_data on hand-built protos


def _hand_built(snap: Snapshot) -> tuple[Any, Any, dict[int, str]]:
    """A tiny OpList and KernelList; the answers the tests expect are worked out by hand."""
    dt = snap.enum
    half, bf16, f32, f64 = dt["DT_HALF"], dt["DT_BFLOAT16"], dt["DT_FLOAT"], dt["DT_DOUBLE"]
    i32, i64, string = dt["DT_INT32"], dt["DT_INT64"], dt["DT_STRING"]
    names = {half: "float16", bf16: "bfloat16", f32: "float32", f64: "float64", i32: "int32", i64: "int64"}
    names[string] = "string"
    ops = snap.messages["OpList"]()

    def op(
        name: str, attrs: list[tuple[str, str, list[int]]], inputs: list[tuple], outputs: list[tuple]
    ) -> None:
        o = ops.op.add(name=name)
        for attr_name, attr_type, allowed in attrs:
            a = o.attr.add(name=attr_name, type=attr_type)
            if allowed:
                a.allowed_values.list.type.extend(allowed)
        for args, spec in ((o.input_arg, inputs), (o.output_arg, outputs)):
            for arg_name, typed in spec:
                arg = args.add(name=arg_name)
                if isinstance(typed, int):
                    arg.type = typed
                elif typed.startswith("list:"):
                    arg.type_list_attr = typed[5:]
                else:
                    arg.type_attr = typed

    op("Unary", [("T", "type", [half, f32, f64])], [("x", "T")], [("y", "T")])
    # Cast-like: the output's attribute wins over the input's, although SrcT comes first
    op(
        "Convert",
        [("SrcT", "type", []), ("DstT", "type", []), ("Truncate", "bool", [])],
        [("x", "SrcT")],
        [("y", "DstT")],
    )
    # ArgMax-like: the output's attribute cannot hold a float, so the input's is taken
    op(
        "ArgLike",
        [("output_type", "type", [i32, i64]), ("T", "type", [f32, half, i32]), ("Tidx", "type", [i32, i64])],
        [("input", "T"), ("dimension", "Tidx")],
        [("output", "output_type")],
    )
    # inputs in order, before attributes typing nothing
    op(
        "Inputs",
        [("Extra", "type", []), ("Second", "type", []), ("First", "type", [])],
        [("a", "First"), ("b", "Second")],
        [("z", i32)],
    )
    # no argument typed by a type attribute: then any attribute that can hold a float
    op(
        "Other",
        [("N", "int", []), ("Ints", "type", [i32]), ("U", "type", [f32])],
        [("s", string)],
        [("z", i32)],
    )
    op("HostOnly", [("T", "type", [])], [("x", "T")], [("y", "T")])
    op("Fixed", [], [("x", f32)], [("y", f32)])
    op("ListOp", [("T", "list(type)", [])], [("xs", "list:T")], [("ys", "list:T")])
    op("NoKernel", [("T", "type", [])], [("x", "T")], [("y", "T")])
    # only the first output counts: the second one's attribute is not looked at before the inputs'
    op("TwoOut", [("B", "type", []), ("A", "type", [])], [("x", "A")], [("n", i32), ("z", "B")])

    kernels = snap.messages["KernelList"]()

    def kernel(op_name: str, device: str, label: str = "", **constraints: list[int]) -> None:
        k = kernels.kernel.add(op=op_name, device_type=device, label=label)
        for attr_name, allowed in constraints.items():
            k.constraint.add(name=attr_name).allowed_values.list.type.extend(allowed)

    kernel("Unary", "XLA_CPU_JIT", T=[half, f32, f64, bf16])
    kernel("Unary", "GPU", T=[half, f32])
    kernel("Unary", "CPU", T=[f32, f64])
    kernel("Unary", "CPU", label="special", T=[half])  # labelled: ignored
    kernel("Fixed", "GPU", label="special")  # labelled: ignored
    kernel("Unary", "XLA_CPU", T=[f32])
    kernel("Unary", "TPU", T=[f32])
    kernel("Convert", "CPU", SrcT=[f32, half])
    kernel("Convert", "GPU", DstT=[f32])
    kernel("ArgLike", "CPU", T=[f32, i32], output_type=[i64])
    kernel("Inputs", "CPU", First=[f32], Second=[half])
    kernel("Other", "CPU", U=[f32])
    kernel("HostOnly", "DEFAULT")
    kernel("Fixed", "CPU")
    kernel("ListOp", "CPU", T=[f32, half])
    return ops, kernels, names


HAND_FLOATS = ["float64", "float32", "float16", "bfloat16"]


@pytest.fixture(scope="module")
def hand() -> Any:
    ops, kernels, names = _hand_built(snapshot())
    calls: list[int] = []

    def dtype_name(value: int) -> str:
        calls.append(value)
        return names[value]

    data = registry_data(ops, kernels, dtype_name, HAND_FLOATS, "9.9.9", xla_error="XlaError: none")
    assert registry_data(ops, kernels, names.__getitem__, HAND_FLOATS, "9.9.9")["xla_error"] == ""
    return data, calls


def test_registry_data_from_hand_built_protos(hand: Any) -> None:
    data, calls = hand
    assert sorted(calls) == sorted(set(calls))  # each enum named once
    assert data["data_version"] == DATA_VERSION
    assert data["tf_version"] == "9.9.9"
    assert data["float_dtypes"] == HAND_FLOATS
    assert data["xla_error"] == "XlaError: none"
    assert data["labelled_kernels_ignored"] == 2
    ops = data["ops"]
    assert list(ops) == [
        "Unary",
        "Convert",
        "ArgLike",
        "Inputs",
        "Other",
        "HostOnly",
        "Fixed",
        "ListOp",
        "NoKernel",
        "TwoOut",
    ]
    assert ops["Unary"] == {
        "attrs": {"T": {"list": False, "allowed": ["float16", "float32", "float64"]}},
        "inputs": [{"name": "x", "type_attr": "T", "fixed": None}],
        "outputs": [{"name": "y", "type_attr": "T", "fixed": None}],
    }
    assert ops["Convert"]["attrs"] == {
        "SrcT": {"list": False, "allowed": None},
        "DstT": {"list": False, "allowed": None},
    }
    assert ops["Other"]["attrs"] == {
        "Ints": {"list": False, "allowed": ["int32"]},
        "U": {"list": False, "allowed": ["float32"]},
    }
    assert ops["Other"]["inputs"] == [{"name": "s", "type_attr": None, "fixed": "string"}]
    assert ops["Fixed"] == {
        "attrs": {},
        "inputs": [{"name": "x", "type_attr": None, "fixed": "float32"}],
        "outputs": [{"name": "y", "type_attr": None, "fixed": "float32"}],
    }
    assert ops["ListOp"] == {
        "attrs": {"T": {"list": True, "allowed": None}},
        "inputs": [{"name": "xs", "type_attr": "T", "fixed": None}],
        "outputs": [{"name": "ys", "type_attr": "T", "fixed": None}],
    }
    assert data["kernels"] == {
        "Unary": [
            ["XLA_CPU_JIT", {"T": ["float16", "float32", "float64", "bfloat16"]}],
            ["GPU", {"T": ["float16", "float32"]}],
            ["CPU", {"T": ["float32", "float64"]}],
            ["XLA_CPU", {"T": ["float32"]}],
            ["TPU", {"T": ["float32"]}],
        ],
        "Convert": [["CPU", {"SrcT": ["float32", "float16"]}], ["GPU", {"DstT": ["float32"]}]],
        "ArgLike": [["CPU", {"T": ["float32", "int32"], "output_type": ["int64"]}]],
        "Inputs": [["CPU", {"First": ["float32"], "Second": ["float16"]}]],
        "Other": [["CPU", {"U": ["float32"]}]],
        "HostOnly": [["DEFAULT", {}]],
        "Fixed": [["CPU", {}]],
        "ListOp": [["CPU", {"T": ["float32", "float16"]}]],
    }


#: (op, dtype, device type, attr) -> answer, worked out by hand from the protos above
HAND_ANSWERS: dict[tuple[str, str, str, str | None], str] = {
    ("Unary", "float16", "CPU", None): "no_kernel",  # only the labelled CPU kernel takes float16
    ("Unary", "float32", "CPU", None): "ok",
    ("Unary", "float64", "CPU", None): "ok",
    ("Unary", "float16", "GPU", None): "ok",
    ("Unary", "float64", "GPU", None): "no_kernel",
    ("Unary", "float16", "XLA_CPU_JIT", None): "ok",
    (
        "Unary",
        "bfloat16",
        "XLA_CPU_JIT",
        None,
    ): "unsupported_dtype",  # the kernel lists it, the OpDef does not
    ("Unary", "bfloat16", "CPU", None): "unsupported_dtype",
    ("Unary", "float32", "TPU", None): "ok",
    ("Unary", "float16", "TPU", None): "no_kernel",
    ("Convert", "float16", "CPU", None): "ok",  # the constraint on SrcT does not restrict DstT
    ("Convert", "bfloat16", "CPU", None): "ok",
    ("Convert", "float16", "GPU", None): "no_kernel",
    ("Convert", "float32", "GPU", None): "ok",
    ("Convert", "float32", "XLA_CPU_JIT", None): "no_kernel",
    ("Convert", "float64", "CPU", "SrcT"): "no_kernel",
    ("Convert", "float16", "CPU", "SrcT"): "ok",
    ("Convert", "float64", "GPU", "SrcT"): "ok",
    ("ArgLike", "float32", "CPU", None): "ok",  # the output_type constraint does not restrict T
    ("ArgLike", "float16", "CPU", None): "no_kernel",
    ("ArgLike", "float64", "CPU", None): "unsupported_dtype",
    ("Inputs", "float32", "CPU", None): "ok",  # data attribute First: its constraint lists float32 only
    ("Inputs", "float16", "CPU", None): "no_kernel",
    ("Inputs", "float16", "CPU", "Second"): "ok",
    ("Inputs", "float64", "CPU", "Extra"): "ok",
    ("Other", "float32", "CPU", None): "ok",
    ("Other", "float16", "CPU", None): "unsupported_dtype",
    ("HostOnly", "float16", "CPU", None): "ok",  # DEFAULT serves CPU and GPU
    ("HostOnly", "bfloat16", "GPU", None): "ok",
    ("Fixed", "float32", "CPU", None): "ok",
    ("Fixed", "float16", "CPU", None): "unsupported_dtype",
    ("Fixed", "float32", "GPU", None): "no_kernel",
    ("ListOp", "float16", "CPU", None): "ok",
    ("ListOp", "float64", "CPU", None): "no_kernel",
    ("NoKernel", "float32", "CPU", None): "no_kernel",
}


def test_registry_answers_on_hand_built_protos(hand: Any) -> None:
    reg = Registry(hand[0])
    assert reg.data is hand[0]
    assert reg.tf_version == "9.9.9"
    assert reg.float_dtypes == tuple(HAND_FLOATS)
    # compute device types first in their fixed order, then the rest sorted; DEFAULT is none of them
    assert reg.device_types == ("CPU", "GPU", "XLA_CPU_JIT", "TPU", "XLA_CPU")
    data_attrs = {name: info.data_attr for name, info in reg.ops.items()}
    assert data_attrs == {
        "Unary": "T",
        "Convert": "DstT",
        "ArgLike": "T",
        "Inputs": "First",
        "Other": "U",
        "HostOnly": "T",
        "Fixed": None,
        "ListOp": "T",
        "NoKernel": "T",
        "TwoOut": "A",
    }
    for (op, dtype, device, attr), want in HAND_ANSWERS.items():
        assert reg.declared(op, dtype, device, attr=attr).value == want, (op, dtype, device, attr)
    assert reg.op_names == sorted(data_attrs)
    assert reg.ops_with_kernels() == sorted(set(data_attrs) - {"NoKernel", "TwoOut"})
    assert reg.allowed_dtypes("Unary") == ["float16", "float32", "float64"]
    assert reg.allowed_dtypes("Convert") is None
    assert reg.allowed_dtypes("Inputs", attr="Second") is None
    assert reg.kernel_devices("Unary", "float16") == ["GPU", "XLA_CPU_JIT"]
    assert reg.kernel_devices("Unary", "float32") == ["CPU", "GPU", "XLA_CPU_JIT", "TPU", "XLA_CPU"]
    assert reg.kernel_devices("Unary", "bfloat16") == []
    assert reg.kernel_devices("Convert", "float16") == ["CPU"]
    # OpInfo answers for another attribute too: Convert's SrcT, ArgLike's Tidx (which takes no float)
    assert reg.op("Convert").kernel_devices("float64", attr="SrcT") == ["GPU"]
    assert reg.op("Convert").kernel_devices("float64") == ["CPU"]
    assert reg.op("ArgLike").kernel_devices("float32", attr="Tidx") == []
    assert reg.op("ArgLike").kernel_devices("float32") == ["CPU"]
    # DEFAULT is merged into the device types it serves, and is not one itself
    assert set(reg.op("HostOnly").kernels) == {"CPU", "GPU", "TPU", "XLA_CPU"}
    assert reg.op("HostOnly").kernels["CPU"] == [{}]
    assert reg.op("unary").name == "Unary" and reg.has_op("CONVERT") and not reg.has_op("Unaryy")
    assert reg.check_dtype("half") == "float16"
    assert reg.check_device_type("TPU") == "TPU"


def test_registry_matrix_on_hand_built_protos(hand: Any) -> None:
    reg = Registry(hand[0])
    frame = reg.matrix(ops=["Unary", "Fixed"], dtypes=["float16", "float32"], device_types=["CPU", "GPU"])
    assert [dict(r, data_attr=_attr(r["data_attr"])) for r in frame.to_dict("records")] == [
        {"op": op, "data_attr": attr, "dtype": dtype, "device_type": device, "status": status}
        for op, attr, statuses in (
            ("Unary", "T", ["no_kernel", "ok", "ok", "ok"]),
            ("Fixed", None, ["unsupported_dtype", "unsupported_dtype", "ok", "no_kernel"]),
        )
        for (dtype, device), status in zip(
            [("float16", "CPU"), ("float16", "GPU"), ("float32", "CPU"), ("float32", "GPU")],
            statuses,
            strict=True,
        )
    ]
    full = reg.matrix()
    assert len(full) == 10 * 4 * 5
    for r in full.itertuples(index=False):
        assert r.status == reg.declared(r.op, r.dtype, r.device_type).value


def test_hand_built_default_kernel_does_not_serve_xla_jit(hand: Any) -> None:
    reg = Registry(hand[0])
    """Issue 9.1: a DEFAULT kernel serves every device type but the XLA JIT ones."""
    assert reg.declared("HostOnly", "float32", "XLA_CPU_JIT") is Status.NO_KERNEL
    assert reg.kernel_devices("HostOnly", "float32") == ["CPU", "GPU", "TPU", "XLA_CPU"]


def test_hand_built_bad_input(hand: Any) -> None:
    reg = Registry(hand[0])
    with pytest.raises(ValueError, match=r"no op 'Unaryy'; did you mean Unary\?.*10 ops"):
        reg.op("Unaryy")
    with pytest.raises(ValueError, match=r"9\.9\.9 has no op 'Zzz' "):
        reg.op("Zzz")
    with pytest.raises(TypeError, match="must be a string, got int"):
        reg.op(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Convert has no type attribute 'Truncate'; it has: SrcT, DstT"):
        reg.declared("Convert", "float16", "CPU", attr="Truncate")
    with pytest.raises(ValueError, match="Fixed has no type attribute 'T'; it has: none"):
        reg.declared("Fixed", "float32", "CPU", attr="T")
    with pytest.raises(
        ValueError, match="TensorFlow has no float8_e5m2 dtype; valid: float64, float32, float16, bfloat16"
    ):
        reg.declared("Unary", "float8_e5m2", "CPU")
    with pytest.raises(
        ValueError, match="unknown device type 'XLA_GPU_JIT'; valid: CPU, GPU, XLA_CPU_JIT, TPU, XLA_CPU"
    ):
        reg.declared("Unary", "float32", "XLA_GPU_JIT")
    with pytest.raises(ValueError, match="'DEFAULT'"):
        reg.check_device_type("DEFAULT")


def test_registry_device() -> None:
    assert {(d, m): registry_device(d, m) for d, m in REGISTRY_DEVICE} == {
        ("CPU", "eager"): "CPU",
        ("GPU", "eager"): "GPU",
        ("CPU", "xla"): "XLA_CPU_JIT",
        ("GPU", "xla"): "XLA_GPU_JIT",
    }
    assert registry_device("gpu", "xla") == "XLA_GPU_JIT"
    with pytest.raises(
        ValueError, match="device 'TPU' in mode 'eager'; valid: CPU/eager, GPU/eager, CPU/xla, GPU/xla"
    ):
        registry_device("TPU", "eager")
    with pytest.raises(ValueError, match="mode 'registry'"):
        registry_device("CPU", "registry")


def test_get_registry_rejects_an_unknown_source() -> None:
    from explorer.runtime.registry import get_registry

    with pytest.raises(ValueError, match="unknown where 'moon'; valid: auto, here, sandbox"):
        get_registry(where="moon")


def test_allowed_dtypes_of_an_op_without_a_float_type_attribute(hand: Any) -> None:
    reg = Registry(hand[0])
    assert reg.declared("Fixed", "float16", "CPU") is Status.UNSUPPORTED_DTYPE
    assert reg.allowed_dtypes("Fixed") == ["float32"]


def test_close_op_names_are_suggested(reg: Registry, orc: Oracle) -> None:
    import difflib

    query = "Conv2DBackprop"
    assert not reg.has_op(query)
    names = list(orc.op_defs)
    assert len(difflib.get_close_matches(query, names, n=4)) == 4  # more than are shown
    close = difflib.get_close_matches(query, names, n=3)
    with pytest.raises(ValueError) as info:
        reg.op(query)
    assert f"has no op '{query}'; did you mean {', '.join(close)}? ({len(names)} ops are registered)" in str(
        info.value
    )
