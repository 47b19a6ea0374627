"""How each catalog op is one ONNX node: :data:`ONNX_CALLS` and :func:`build_model`.

A catalog op maps to one node of the default ONNX domain (``onnx.helper.make_node``) at the
fixed opset :data:`OPSET`, in a graph of that node alone (``make_graph``, ``make_model``).  The
op's inputs are the graph's inputs, in the format; what the node needs beside them (an axis
tensor, a constant such as Clip's bounds) is an initializer, in int64 or in the format.  Where
the catalog's layout is TensorFlow's (NHWC images, HWIO filters) and ONNX's is another (NCHW,
OIHW), the inputs are transposed before they are fed and the output after it comes back:
transposes only move values, so nothing is rounded outside the node.

Ops with no single ONNX node (``expm1``, ``cholesky``, ``variance`` ...) have no entry: the ONNX
Runtime backend answers that it has no such op.  ``onnx`` is imported inside the functions,
never at ``import explorer``.

>>> ONNX_CALLS["exp"].op_type, ONNX_CALLS["sum"].op_type
('Exp', 'ReduceSum')
>>> sorted(onnx_ops_of("top_k"))
['TopK']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: the opset every model is built in (onnx >= 1.16 and onnxruntime >= 1.20 have it)
OPSET = 21
#: the IR version of the models (onnxruntime >= 1.20 reads it)
IR_VERSION = 10

Layout = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class FloatConst:
    """An initializer in the op's format (the node's own constant, e.g. Clip's bounds)."""

    values: tuple[float, ...] | float
    shape: tuple[int, ...] = ()


@dataclass(frozen=True)
class IntConst:
    """An int64 initializer (axes, sizes, K)."""

    values: tuple[int, ...] | int
    shape: tuple[int, ...] = ()


#: one input of the node: ``"x0"``, ``"x1"`` ... (the op's inputs, in the format), ``""`` (an
#: optional input left out), or a constant
NodeInput = str | FloatConst | IntConst


@dataclass(frozen=True)
class OnnxCall:
    """One catalog op as one ONNX node."""

    #: the ONNX operator (default domain)
    op_type: str
    #: the node's inputs, by default the op's inputs in order
    inputs: tuple[NodeInput, ...] | None = None
    #: the node's attributes
    attrs: dict[str, Any] = field(default_factory=dict)
    #: per op input: the layout change made before it is fed (a transpose), or None
    before: tuple[Layout | None, ...] = ()
    #: the layout change of the output (a transpose), or None
    after: Layout | None = None
    #: the element type of the output: None (the format's), or an ONNX type name (``"INT64"``)
    output_type: str | None = None
    #: the formal parameter whose type the format is: ``("input", i)`` or ``("output", i)``
    typed: tuple[str, int] = ("input", 0)


def _nchw(x: np.ndarray) -> np.ndarray:
    return np.moveaxis(x, -1, 1)


def _nhwc(y: np.ndarray) -> np.ndarray:
    return np.moveaxis(y, 1, -1)


def _filter_oi(f: np.ndarray) -> np.ndarray:
    """TensorFlow's filter (spatial..., in, out) as ONNX's (out, in, spatial...)."""
    return np.moveaxis(np.moveaxis(f, -1, 0), -1, 1)


def _depthwise_filter(f: np.ndarray) -> np.ndarray:
    """(H, W, C, M) as a grouped filter (C*M, 1, H, W): output channel c*M + m (TensorFlow's order)."""
    h, w, c, m = f.shape
    return f.transpose(2, 3, 0, 1).reshape(c * m, 1, h, w)


def _conv(spatial: int, **attrs: Any) -> OnnxCall:
    return OnnxCall("Conv", attrs=attrs, before=(_nchw, _filter_oi), after=_nhwc)


_LAST_AXIS = IntConst((-1,), (1,))

#: catalog op -> its ONNX node; ops without an entry have no single ONNX node
ONNX_CALLS: dict[str, OnnxCall] = {
    # creation: the format is the output's (ConstantOfShape's value, Range's bounds)
    "range": OnnxCall("Range", (FloatConst(0.0), FloatConst(12.0), FloatConst(1.0))),
    "zeros": OnnxCall("ConstantOfShape", (IntConst((32, 64), (2,)),), {"value": 0.0}, typed=("output", 0)),
    "ones": OnnxCall("ConstantOfShape", (IntConst((32, 64), (2,)),), {"value": 1.0}, typed=("output", 0)),
    "fill": OnnxCall("ConstantOfShape", (IntConst((64,), (1,)),), {"value": 1.5}, typed=("output", 0)),
    "eye": OnnxCall("EyeLike", (FloatConst(0.0, (4, 4)),)),
    # unary
    **{
        name: OnnxCall(name.capitalize())
        for name in (
            *("abs", "neg", "sign", "floor", "ceil", "round", "sqrt", "reciprocal", "exp", "log"),
            *("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh"),
            *("asinh", "acosh", "atanh", "sigmoid", "erf"),
        )
    },
    "square": OnnxCall("Mul", ("x0", "x0")),
    # binary
    "add": OnnxCall("Add"),
    "sub": OnnxCall("Sub"),
    "mul": OnnxCall("Mul"),
    "div": OnnxCall("Div"),
    "pow": OnnxCall("Pow"),
    "maximum": OnnxCall("Max"),
    "minimum": OnnxCall("Min"),
    "truncatemod": OnnxCall("Mod", attrs={"fmod": 1}),
    # reductions over the last axis
    "sum": OnnxCall("ReduceSum", ("x0", _LAST_AXIS), {"keepdims": 0}),
    "mean": OnnxCall("ReduceMean", ("x0", _LAST_AXIS), {"keepdims": 0}),
    "prod": OnnxCall("ReduceProd", ("x0", _LAST_AXIS), {"keepdims": 0}),
    "reduce_max": OnnxCall("ReduceMax", ("x0", _LAST_AXIS), {"keepdims": 0}),
    "reduce_min": OnnxCall("ReduceMin", ("x0", _LAST_AXIS), {"keepdims": 0}),
    "logsumexp": OnnxCall("ReduceLogSumExp", ("x0", _LAST_AXIS), {"keepdims": 0}),
    "euclidean_norm": OnnxCall("ReduceL2", ("x0", _LAST_AXIS), {"keepdims": 0}),
    "cumsum": OnnxCall("CumSum", ("x0", IntConst(-1))),
    "sort": OnnxCall("TopK", ("x0", IntConst((16,), (1,))), {"axis": -1, "largest": 0}),
    "top_k": OnnxCall("TopK", ("x0", IntConst((4,), (1,))), {"axis": -1}),
    "argmax": OnnxCall("ArgMax", attrs={"axis": -1, "keepdims": 0}, output_type="INT64"),
    "argmin": OnnxCall("ArgMin", attrs={"axis": -1, "keepdims": 0}, output_type="INT64"),
    # linear algebra
    "matmul": OnnxCall("MatMul"),
    "batch_matmul": OnnxCall("MatMul"),
    "matvec": OnnxCall("MatMul"),
    "einsum": OnnxCall("Einsum", attrs={"equation": "ij,jk->ik"}),
    "det": OnnxCall("Det"),
    # neural networks
    "relu": OnnxCall("Relu"),
    "relu6": OnnxCall("Clip", ("x0", FloatConst(0.0), FloatConst(6.0))),
    "leaky_relu": OnnxCall("LeakyRelu", attrs={"alpha": 0.2}),
    "elu": OnnxCall("Elu", attrs={"alpha": 1.0}),
    "selu": OnnxCall("Selu"),
    "softplus": OnnxCall("Softplus"),
    "softsign": OnnxCall("Softsign"),
    "gelu": OnnxCall("Gelu"),
    "softmax": OnnxCall("Softmax", attrs={"axis": -1}),
    "log_softmax": OnnxCall("LogSoftmax", attrs={"axis": -1}),
    "bias_add": OnnxCall("Add"),
    "layer_norm": OnnxCall("LayerNormalization", ("x0", "x2", "x1"), {"axis": -1, "epsilon": 1e-3}),
    "conv1d": _conv(1),
    "conv2d": _conv(2),
    "conv3d": _conv(3),
    "depthwise_conv2d": OnnxCall("Conv", attrs={"group": 2}, before=(_nchw, _depthwise_filter), after=_nhwc),
    "max_pool": OnnxCall(
        "MaxPool", attrs={"kernel_shape": [2, 2], "strides": [2, 2]}, before=(_nchw,), after=_nhwc
    ),
    "avg_pool": OnnxCall(
        "AveragePool", attrs={"kernel_shape": [2, 2], "strides": [2, 2]}, before=(_nchw,), after=_nhwc
    ),
    # images (NHWC in the catalog)
    "rgb_to_grayscale": OnnxCall("MatMul", ("x0", FloatConst((0.2989, 0.5870, 0.1140), (3, 1)))),
    "resize": OnnxCall(
        "Resize",
        ("x0", "", "", IntConst((1, 3, 8, 8), (4,))),
        {"mode": "linear", "coordinate_transformation_mode": "half_pixel"},
        before=(_nchw,),
        after=_nhwc,
    ),
    "resize_nearest": OnnxCall(
        "Resize",
        ("x0", "", "", IntConst((1, 3, 8, 8), (4,))),
        {"mode": "nearest", "coordinate_transformation_mode": "half_pixel"},
        before=(_nchw,),
        after=_nhwc,
    ),
    # casts
    "cast_to_int32": OnnxCall("Cast", attrs={"to": "INT32"}, output_type="INT32"),
}


def onnx_ops_of(op_name: str) -> tuple[str, ...]:
    """The ONNX operators catalog op ``op_name`` runs (one, or none when it has no ONNX node)."""
    call = ONNX_CALLS.get(op_name)
    return () if call is None else (call.op_type,)


def _tensor(onnx: Any, name: str, elem: int, values: np.ndarray) -> Any:
    """An initializer ``name`` of element type ``elem`` holding ``values`` (already rounded)."""
    flat = np.asarray(values, dtype=np.float64).ravel().tolist()
    return onnx.helper.make_tensor(name, elem, list(np.shape(values)), flat)


def build_model(call: OnnxCall, elem: int, arity: int, rounder: Callable[[np.ndarray], np.ndarray]) -> Any:
    """The one-node ``ModelProto`` of ``call`` in element type ``elem`` (an ``onnx.TensorProto``
    code) for an op of ``arity`` inputs; ``rounder`` rounds a float constant to the format."""
    import onnx
    from onnx import helper

    tp = onnx.TensorProto
    names: list[str] = []
    inits: list[Any] = []
    for k, item in enumerate(
        call.inputs if call.inputs is not None else tuple(f"x{i}" for i in range(arity))
    ):
        if isinstance(item, str):
            names.append(item)
        elif isinstance(item, IntConst):
            name = f"c{k}"
            values = np.asarray(item.values, dtype=np.int64).reshape(item.shape)
            inits.append(helper.make_tensor(name, tp.INT64, list(item.shape), values.ravel().tolist()))
            names.append(name)
        else:
            name = f"c{k}"
            exact = np.asarray(item.values, dtype=np.float64)
            shaped = exact.reshape(item.shape) if exact.size == int(np.prod(item.shape)) else exact
            values = np.broadcast_to(rounder(shaped).reshape(shaped.shape), item.shape)
            inits.append(_tensor(onnx, name, elem, values))
            names.append(name)
    attrs = dict(call.attrs)
    if call.op_type == "ConstantOfShape":
        attrs["value"] = _tensor(onnx, "value", elem, rounder(np.array([attrs["value"]])))
    if call.op_type == "Cast":
        attrs["to"] = getattr(tp, attrs["to"])
    out_elem = elem if call.output_type is None else getattr(tp, call.output_type)
    outputs = ["y", "indices"] if call.op_type == "TopK" else ["y"]
    node = helper.make_node(call.op_type, names, outputs, **attrs)
    graph = helper.make_graph(
        [node],
        f"px_{call.op_type}",
        [helper.make_tensor_value_info(f"x{i}", elem, None) for i in range(arity)],
        [helper.make_tensor_value_info("y", out_elem, None)],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    return model
