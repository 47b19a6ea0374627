"""ONNX Runtime (optional): each catalog op as a one-node ONNX model, run on an execution provider;
and what its kernel registry declares.

``onnxruntime`` and ``onnx`` are imported on first use, never at ``import explorer``
(``pip install -e ".[onnx]"``).

How a run is made: the op's node (:data:`~explorer.backends.onnxruntime_graphs.ONNX_CALLS`) in a
model of its own at opset :data:`~explorer.backends.onnxruntime_graphs.OPSET`, loaded into an
``InferenceSession`` on the provider of the device (``CPUExecutionProvider``,
``CUDAExecutionProvider``) with graph optimisations off, and run on the inputs held in the
format.  Each step that raises is the run's :class:`~explorer.outcome.Phase`:

- loading: ONNX's type check refuses a type the operator's schema does not allow (``Type
  'tensor(float8e4m3fn)' of input parameter (x0) of operator (Exp) ... is invalid``):
  ``unsupported_dtype`` at ``op_build``; the provider has no kernel for the node's types
  (``Could not find an implementation for Exp(13) node with name ''``): ``no_kernel`` at
  ``kernel_lookup``; a kernel that raises when it is created: ``error`` at ``kernel_run``;
- running: ``error`` at ``kernel_run``.

A float16 node without a CPU kernel still runs: the CPU provider inserts Cast nodes to float32
around it (ORT's ``InsertCastTransformer``).  The model the session runs is written out
(``optimized_model_filepath``) and read back: a run whose model gained Cast nodes is
``fallback`` (computed in float32), with the inserted casts in its extras.

What is *declared*: the provider's kernel registry (``get_all_opkernel_def()``): per ONNX
operator, domain, provider and opset range, the types each type constraint takes.
:func:`declared_kernel_rows` lists every operator × float type × provider the installed wheel
has; :func:`declared_status` answers for one operator at :data:`OPSET`.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import importlib.util
import re
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from explorer.backends.base import Backend
from explorer.backends.onnxruntime_graphs import IR_VERSION, ONNX_CALLS, OPSET, OnnxCall, build_model
from explorer.backends.silent import held_in
from explorer.formats import Format, resolve
from explorer.ops import Op
from explorer.outcome import Outcome, Phase, Status

#: how to install it
INSTALL_HINT = 'python -m pip install -e ".[onnx]"'
#: execution provider by device type
PROVIDERS: dict[str, str] = {"CPU": "CPUExecutionProvider", "GPU": "CUDAExecutionProvider"}
#: ONNX tensor element type (``onnx.TensorProto`` name) by format; the formats ONNX has
ONNX_TYPES: dict[str, str] = {
    "float16": "FLOAT16",
    "bfloat16": "BFLOAT16",
    "float32": "FLOAT",
    "float64": "DOUBLE",
    "float8_e4m3fn": "FLOAT8E4M3FN",
    "float8_e5m2": "FLOAT8E5M2",
    "float8_e4m3fnuz": "FLOAT8E4M3FNUZ",
    "float8_e5m2fnuz": "FLOAT8E5M2FNUZ",
    "float8_e8m0fnu": "FLOAT8E8M0",
    "float4_e2m1fn": "FLOAT4E2M1",
}
#: the registry's type strings (``tensor(float16)``) by format
REGISTRY_TYPES: dict[str, str] = {
    "float16": "tensor(float16)",
    "bfloat16": "tensor(bfloat16)",
    "float32": "tensor(float)",
    "float64": "tensor(double)",
    "float8_e4m3fn": "tensor(float8e4m3fn)",
    "float8_e5m2": "tensor(float8e5m2)",
    "float8_e4m3fnuz": "tensor(float8e4m3fnuz)",
    "float8_e5m2fnuz": "tensor(float8e5m2fnuz)",
    "float8_e8m0fnu": "tensor(float8e8m0)",
    "float4_e2m1fn": "tensor(float4e2m1)",
}
#: formats ONNX has but whose tensors the explorer does not feed (two values packed per byte)
PACKED = frozenset({"float4_e2m1fn"})
#: the words of a run's error for them
NOT_FED = "the explorer does not feed packed"


@cache
def import_onnxruntime() -> Any:
    """Import ``onnxruntime`` (and check that ``onnx``, which builds the models, imports)."""
    import onnx  # noqa: F401
    import onnxruntime

    return onnxruntime


# ---------------------------------------------------------------- the kernel registry


def opkernel_defs() -> list[dict[str, Any]]:
    """Every kernel the installed onnxruntime registers, as plain data: ``op``, ``domain``
    (``""`` is ONNX's default domain), ``provider``, ``since``, ``until`` (the opset range, both
    ends included) and ``constraints`` (type constraint -> the type strings it takes)."""
    from onnxruntime.capi import _pybind_state

    rows = []
    for kernel in _pybind_state.get_all_opkernel_def():
        since, until = kernel.version_range
        rows.append(
            {
                "op": kernel.op_name,
                "domain": kernel.domain,
                "provider": kernel.provider,
                "since": int(since),
                "until": int(until),
                "constraints": {k: list(v) for k, v in kernel.type_constraints.items()},
            }
        )
    return rows


def declared_kernel_rows() -> list[dict[str, Any]]:
    """One row per ONNX operator × domain × provider × float format with at least one kernel
    taking the format in any type constraint: ``op``, ``domain``, ``provider``, ``dtype`` (the
    format's name), ``opsets`` (the opset ranges, ``"13-"`` when open-ended, sorted)."""
    by_type = {t: name for name, t in REGISTRY_TYPES.items()}
    found: dict[tuple[str, str, str, str], set[tuple[int, int]]] = {}
    for kernel in opkernel_defs():
        types = {t for values in kernel["constraints"].values() for t in values}
        for t in types & set(by_type):
            key = (kernel["op"], kernel["domain"], kernel["provider"], by_type[t])
            found.setdefault(key, set()).add((kernel["since"], kernel["until"]))
    return [
        {"op": op, "domain": domain, "provider": provider, "dtype": dtype, "opsets": _ranges(spans)}
        for (op, domain, provider, dtype), spans in sorted(found.items())
    ]


def _ranges(spans: set[tuple[int, int]]) -> str:
    """``{(6, 12), (13, 2**31-1)}`` -> ``"6-12, 13-"``."""
    return ", ".join(f"{a}-" if b >= 2**31 - 1 else f"{a}-{b}" for a, b in sorted(spans))


def typed_constraint(call: OnnxCall) -> str:
    """The type constraint (``"T"``, ``"T1"`` ...) of the formal parameter of ``call``'s operator
    that the format is, from ONNX's schema at :data:`OPSET`."""
    import onnx

    schema = onnx.defs.get_schema(call.op_type, OPSET, "")
    kind, index = call.typed
    formal = (schema.inputs if kind == "input" else schema.outputs)[index]
    return str(formal.type_str)


def schema_allows(call: OnnxCall, dtype: str) -> bool:
    """Whether ONNX's schema of ``call``'s operator at :data:`OPSET` allows ``dtype`` there."""
    import onnx

    schema = onnx.defs.get_schema(call.op_type, OPSET, "")
    constraint = typed_constraint(call)
    allowed = {
        t for c in schema.type_constraints if c.type_param_str == constraint for t in c.allowed_type_strs
    }
    return REGISTRY_TYPES[dtype] in allowed


def declared_status(call: OnnxCall, dtype: str, provider: str = "CPUExecutionProvider") -> Status:
    """What the registry declares for ``call``'s operator in ``dtype`` on ``provider`` at
    :data:`OPSET`: ``ok`` (a kernel whose opset range holds OPSET takes the type in the
    operator's typed constraint), ``unsupported_dtype`` (ONNX's schema does not allow the type),
    else ``no_kernel``."""
    if dtype not in REGISTRY_TYPES or not schema_allows(call, dtype):
        return Status.UNSUPPORTED_DTYPE
    constraint = typed_constraint(call)
    for kernel in _defs_of(call.op_type, provider):
        if kernel["since"] <= OPSET <= kernel["until"] and REGISTRY_TYPES[dtype] in kernel["constraints"].get(
            constraint, ()
        ):
            return Status.OK
    return Status.NO_KERNEL


@cache
def _kernel_index() -> dict[tuple[str, str], list[dict[str, Any]]]:
    index: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for kernel in opkernel_defs():
        if kernel["domain"] == "":
            index.setdefault((kernel["op"], kernel["provider"]), []).append(kernel)
    return index


def _defs_of(op_type: str, provider: str) -> list[dict[str, Any]]:
    return _kernel_index().get((op_type, provider), [])


def declared_for_op(op_name: str, dtype: str, device: str = "CPU") -> Status | None:
    """What the registry declares for catalog op ``op_name`` (its ONNX node) in ``dtype`` on the
    provider of ``device``; None when the op has no ONNX node or the format no ONNX type."""
    call = ONNX_CALLS.get(op_name)
    if call is None or dtype not in REGISTRY_TYPES:
        return None
    return declared_status(call, dtype, PROVIDERS[device])


# ---------------------------------------------------------------- errors


#: the provider has no kernel for the node's types
_NO_KERNEL = re.compile(r"Could not find an implementation for \w+\(\d+\) node")
#: ONNX's type check refused the type for the operator
_UNSUPPORTED = re.compile(r"Type Error: Type '[^']+' of (?:input|output) parameter .* is invalid")


def classify_error(text: str) -> tuple[Status, Phase]:
    """Status and phase of an onnxruntime error text raised while loading or running a model.

    >>> classify_error("NotImplemented: [ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find "
    ...                "an implementation for Exp(13) node with name ''")
    (<Status.NO_KERNEL: 'no_kernel'>, <Phase.KERNEL_LOOKUP: 'kernel_lookup'>)
    >>> classify_error("InvalidGraph: [ONNXRuntimeError] : 10 : INVALID_GRAPH : This is an invalid "
    ...                "model. Type Error: Type 'tensor(float8e4m3fn)' of input parameter (x0) of "
    ...                "operator (Exp) in node () is invalid.")
    (<Status.UNSUPPORTED_DTYPE: 'unsupported_dtype'>, <Phase.OP_BUILD: 'op_build'>)
    >>> classify_error("Fail: [ONNXRuntimeError] : 1 : FAIL : bad shape")
    (<Status.ERROR: 'error'>, <Phase.KERNEL_RUN: 'kernel_run'>)
    """
    if _NO_KERNEL.search(text):
        return Status.NO_KERNEL, Phase.KERNEL_LOOKUP
    if _UNSUPPORTED.search(text):
        return Status.UNSUPPORTED_DTYPE, Phase.OP_BUILD
    return Status.ERROR, Phase.KERNEL_RUN


_DETAILS = {
    Status.NO_KERNEL: "the execution provider has no kernel for the node in this dtype",
    Status.UNSUPPORTED_DTYPE: "ONNX's operator schema does not allow this dtype",
    Status.ERROR: "the kernel raised while it was created or run",
}


# ---------------------------------------------------------------- values in and out


def _elem(fmt_name: str) -> int:
    import onnx

    return int(getattr(onnx.TensorProto, ONNX_TYPES[fmt_name]))


def _feed(ort: Any, values: np.ndarray, fmt: Format) -> Any:
    """``values`` (float64, already held in ``fmt``) as what a session takes: a NumPy array where
    onnxruntime's Python API has the dtype, else an OrtValue of the bits with the ONNX type."""
    array = np.ascontiguousarray(values.astype(fmt.storage_dtype))
    if fmt.name in ("float16", "float32", "float64"):
        return ort.OrtValue.ortvalue_from_numpy(array)
    bits = array.view(np.uint16 if array.dtype.itemsize == 2 else np.uint8)
    return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(bits, _elem(fmt.name))


#: the result dtype by the type string an output OrtValue reports
_NUMPY_OF = {t: name for name, t in REGISTRY_TYPES.items()}


def _fetch(value: Any) -> np.ndarray:
    """An output OrtValue as a NumPy array (formats NumPy lacks read from their bits)."""
    fmt_name = _NUMPY_OF.get(value.data_type())
    if fmt_name is None or fmt_name in ("float16", "float32", "float64"):
        return np.asarray(value.numpy())
    # NumPy has no such dtype: onnxruntime refuses ("No corresponding Numpy type for Tensor Type.
    # bfloat16") or hands back the bits as uint8 (float8e4m3fn); the bits are read as ml_dtypes'
    if value.device_name().lower() != "cpu":
        raise ValueError(f"a {fmt_name} output on {value.device_name()} is not read by the explorer")
    dtype = resolve(fmt_name).storage_dtype
    size = int(value.tensor_size_in_bytes())
    raw = bytes((ctypes.c_uint8 * size).from_address(value.data_ptr()))
    return np.frombuffer(raw, dtype=dtype).reshape(value.shape()).copy()


# ---------------------------------------------------------------- the backend


class OnnxruntimeBackend(Backend):
    """Runs each op's ONNX node (:data:`ONNX_CALLS`) with onnxruntime on the CPU or CUDA provider."""

    name = "onnxruntime"
    modes = ("eager",)
    #: how to install it
    install_hint = INSTALL_HINT

    def is_installed(self) -> bool:
        return (
            importlib.util.find_spec("onnxruntime") is not None
            and importlib.util.find_spec("onnx") is not None
        )

    def version(self) -> str | None:
        if not self.is_installed():
            return None
        try:
            return importlib.metadata.version("onnxruntime")
        except importlib.metadata.PackageNotFoundError:
            return str(import_onnxruntime().__version__)

    def providers(self) -> list[str]:
        """The execution providers the installed wheel has (``get_available_providers``)."""
        return list(import_onnxruntime().get_available_providers())

    def devices(self) -> list[str]:
        available = self.providers()
        return [device for device, provider in PROVIDERS.items() if provider in available]

    def supports_format(self, fmt: Format) -> bool:
        if fmt.emulated or fmt.name not in ONNX_TYPES:
            return False
        import onnx

        return hasattr(onnx.TensorProto, ONNX_TYPES[fmt.name])  # older onnx lacks FLOAT8E8M0

    def declared(self, op_name: str, dtype: str, device: str) -> dict[str, str] | None:
        """The kernel registry's answer for the op's ONNX node at :data:`OPSET` (None when the
        op has no ONNX node, the format no ONNX type, or onnxruntime is not installed)."""
        if not self.is_installed() or device not in PROVIDERS:
            return None
        if not any(provider == PROVIDERS[device] for _, provider in _kernel_index()):
            return None  # the wheel has no kernels for that provider (a CPU wheel and the GPU)
        call = ONNX_CALLS.get(op_name)
        status = declared_for_op(op_name, dtype, device)
        if call is None or status is None:
            return None
        provider = PROVIDERS[device]
        where = f"for {call.op_type} at opset {OPSET} on {provider}"
        if status is Status.UNSUPPORTED_DTYPE:
            text = f"ONNX's schema of {call.op_type} (opset {OPSET}) does not allow {dtype}."
        else:
            said = "registers a" if status is Status.OK else "registers no"
            registry = f"ONNX Runtime's kernel registry (onnxruntime {self.version()})"
            text = f"{registry} {said} {dtype} kernel {where}."
        return {"status": status.value, "raw_op": call.op_type, "explanation": text}

    def declared_disagreement(self, declared: str, record: dict[str, Any]) -> str:
        """A probe agrees with the registry when it ran natively where a kernel is declared, found
        none (or ran through inserted casts) where none is, and was refused where ONNX's schema
        refuses the type."""
        if NOT_FED in record.get("error", ""):
            return ""  # not run: nothing to compare
        return disagreement(declared, record.get("status", ""), record.get("detail", ""))

    def cast_values(self, values: np.ndarray, fmt: Format) -> tuple[np.ndarray, str] | None:
        """ONNX's ``Cast`` (opset :data:`OPSET`, its default ``saturate=1`` for float8) from
        float64 on the CPU provider; the note says what ``saturate=0`` gives where the format
        takes that attribute (float8)."""
        if not self.is_installed() or not self.supports_format(fmt) or fmt.name in PACKED:
            return None
        try:
            cast = _cast_with(values, fmt, None)
        except Exception:  # no Cast kernel for the type (float8e8m0 in some releases)
            return None
        note = ""
        if fmt.name.startswith("float8"):
            try:
                unsaturated = _cast_with(values, fmt, 0)
                note = "with saturate=0: " + ", ".join(
                    f"{v:.6g} -> {g:.6g}" for v, g in zip(values, unsaturated, strict=True) if v > fmt.max
                )
            except Exception as exc:  # the attribute refused
                note = f"saturate=0 refused: {str(exc).splitlines()[0][:200]}"
        return cast, note

    def timed_call(
        self, op: Op, fmt: Format, device: str, mode: str, inputs: tuple[np.ndarray, ...]
    ) -> Callable[[], Any] | None:
        """The op's session, built once, and its inputs fed once; the call runs the session and
        reads the output back as NumPy.  A model that does not load raises here."""
        call = ONNX_CALLS.get(op.name)
        if call is None or not self.supports_format(fmt) or fmt.name in PACKED:
            raise ValueError(f"onnxruntime has no one-node model of {op.name} in {fmt.name}")
        ort = import_onnxruntime()
        model = build_model(call, _elem(fmt.name), op.arity, lambda v: held_in(fmt, v))
        options = ort.SessionOptions()
        options.log_severity_level = 4
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        session = ort.InferenceSession(model.SerializeToString(), options, providers=[PROVIDERS[device]])
        layouts = call.before + (None,) * (op.arity - len(call.before))
        feeds = {
            f"x{i}": _feed(ort, held_in(fmt, x if f is None else f(x)), fmt)
            for i, (x, f) in enumerate(zip(inputs, layouts, strict=True))
        }

        def run() -> Any:
            (out,) = session.run_with_ort_values(["y"], feeds)
            return _fetch(out)

        return run

    def _run(self, op: Op, inputs: tuple[np.ndarray, ...], fmt: Format, device: str, mode: str) -> Outcome:
        call = ONNX_CALLS.get(op.name)
        if call is None:
            return Outcome(Status.ERROR, error=f"ONNX has no single operator for {op.name}")
        if fmt.name in PACKED:
            text = f"{NOT_FED} {fmt.name} tensors to onnxruntime"
            return Outcome(Status.ERROR, error=text, phase=Phase.OP_BUILD)
        ort = import_onnxruntime()
        model = build_model(call, _elem(fmt.name), op.arity, lambda v: held_in(fmt, v))
        with tempfile.TemporaryDirectory(prefix="px-ort-") as tmp:
            options = ort.SessionOptions()
            options.log_severity_level = 4  # errors come back as exceptions; nothing printed
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            options.optimized_model_filepath = str(Path(tmp) / "ran.onnx")
            try:
                session = ort.InferenceSession(
                    model.SerializeToString(), options, providers=[PROVIDERS[device]]
                )
            except Exception as exc:  # onnxruntime's own exception types; the text says what
                return _failed(exc)
            inserted = _inserted_casts(Path(tmp) / "ran.onnx")
        layouts = call.before + (None,) * (op.arity - len(call.before))
        feeds = {
            f"x{i}": _feed(ort, held_in(fmt, x if f is None else f(x)), fmt)
            for i, (x, f) in enumerate(zip(inputs, layouts, strict=True))
        }
        try:
            (out,) = session.run_with_ort_values(["y"], feeds)
        except Exception as exc:
            return _failed(exc, run=True)
        result = _fetch(out)
        if call.after is not None:
            result = np.ascontiguousarray(call.after(result))
        return _returned(op, fmt, device, session, result, inserted)


#: the words of a run's detail when onnxruntime inserted casts around the node
INSERTED = "onnxruntime inserted"


def native(status: str, detail: str) -> bool:
    """Whether a probe's node ran in its own dtype: it ran, and no cast was inserted around it."""
    return status in (Status.OK.value, Status.WRONG_RESULT.value) and INSERTED not in detail


def disagreement(declared: str, status: str, detail: str) -> str:
    """Why a probe (``status``, ``detail``) disagrees with the ``declared`` status; ``""`` when it
    agrees.

    >>> disagreement("no_kernel", "fallback", "... onnxruntime inserted Cast to float around it")
    ''
    >>> disagreement("ok", "no_kernel", "")
    'the registry declares a kernel, but the probe found none (no_kernel)'
    """
    ran_natively = native(status, detail)
    if declared == Status.OK.value and not ran_natively:
        return f"the registry declares a kernel, but the probe found none ({status})"
    if declared == Status.NO_KERNEL.value and status not in (Status.NO_KERNEL.value, Status.FALLBACK.value):
        return f"the registry declares no kernel, but the probe {'ran natively' if ran_natively else status}"
    if declared == Status.NO_KERNEL.value and status == Status.FALLBACK.value and INSERTED not in detail:
        return "the registry declares no kernel, and the probe ran without inserted casts"
    if declared == Status.UNSUPPORTED_DTYPE.value and status != declared:
        return f"ONNX's schema refuses the type, but the probe's status is {status}"
    return ""


def _cast_with(values: np.ndarray, fmt: Format, saturate: int | None) -> np.ndarray:
    """``values`` through a one-node Cast model (float64 -> ``fmt``), read back as float64."""
    import onnx
    from onnx import helper

    ort = import_onnxruntime()
    attrs: dict[str, Any] = {"to": _elem(fmt.name)}
    if saturate is not None:
        attrs["saturate"] = saturate
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], **attrs)],
        "px_cast",
        [helper.make_tensor_value_info("x", onnx.TensorProto.DOUBLE, None)],
        [helper.make_tensor_value_info("y", _elem(fmt.name), None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    options = ort.SessionOptions()
    options.log_severity_level = 4
    session = ort.InferenceSession(model.SerializeToString(), options, providers=[PROVIDERS["CPU"]])
    (out,) = session.run_with_ort_values(["y"], {"x": ort.OrtValue.ortvalue_from_numpy(values)})
    return _fetch(out).astype(np.float64)


def _failed(exc: BaseException, run: bool = False) -> Outcome:
    text = f"{type(exc).__name__}: {exc}".strip()
    status, phase = classify_error(text)
    if run:
        status, phase = (Status.ERROR, Phase.KERNEL_RUN) if status is Status.ERROR else (status, phase)
    return Outcome(status, error=text, detail=_DETAILS[status], phase=phase)


def _inserted_casts(path: Path) -> list[str]:
    """The Cast nodes the session added to the one-node model (``"Cast to float"`` ...), read
    from the model it wrote out; empty when it ran the node as built."""
    import onnx

    if not path.exists():
        return []
    ran = onnx.load(str(path))
    formats = {v: k for k, v in ONNX_TYPES.items()}
    names = {v: formats.get(k, k.lower()) for k, v in onnx.TensorProto.DataType.items()}
    return [
        f"Cast to {names.get(a.i, a.i)}"
        for node in ran.graph.node
        if node.op_type == "Cast" and len(ran.graph.node) > 1
        for a in node.attribute
        if a.name == "to"
    ]


def _returned(
    op: Op, fmt: Format, device: str, session: Any, result: np.ndarray, inserted: list[str]
) -> Outcome:
    """``ok``, or ``fallback`` when the session inserted casts (the node was computed in another
    dtype) or the result came back in another dtype."""
    details = []
    status = Status.OK
    ran_on = "GPU" if session.get_providers()[0] == PROVIDERS["GPU"] else "CPU"
    if ran_on != device:
        status = Status.FALLBACK
        details.append(f"asked for {device}, ran on {ran_on}")
    if inserted:
        status = Status.FALLBACK
        details.append(
            f"the {session.get_providers()[0]} has no {fmt.name} kernel for the node: {INSERTED} "
            f"{', '.join(sorted(set(inserted)))} around it"
        )
    if op.float_output and result.dtype != fmt.storage_dtype:
        status = Status.FALLBACK
        details.append(f"result came back in {result.dtype}, not {fmt.name}")
    extra: dict[str, Any] = {"result_dtype": str(result.dtype)}
    if inserted:
        extra["inserted_casts"] = inserted
    return Outcome(status, result, ran_on, detail="; ".join(details), phase=Phase.OK, extra=extra)
