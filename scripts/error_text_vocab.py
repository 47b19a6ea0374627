"""Generate explorer/analysis/error_text/_vocab_table.py: the dtype spellings of the installed
frameworks' own registries, each mapped to its numpy / ml_dtypes name (issue 34 item 1).

The structural error reader (explorer/analysis) is pure and cannot import the frameworks, so the
vocabulary is read here, offline, and committed as data:

- PyTorch: every ``torch.<attr>`` that is a ``torch.dtype`` (aliases included: ``half``, ``cfloat``),
  its ``str`` (``torch.float16``), its ScalarType name (``Half``, ``Float8_e4m3fn``: the legacy
  tensor type name ``torch.HalfTensor`` without ``Tensor``, else the name an unimplemented-kernel
  error prints) and that legacy tensor type name;
- JAX / NumPy / ml_dtypes: every ``jnp.<attr>`` scalar type and ``ml_dtypes.<attr>`` dtype;
- XLA: every ``PrimitiveType`` name (``F8E4M3FN``, ``BF16``, ``C128``) via ``dtype_to_etype``, and
  its MLIR element type (``f8E4M3FN``) from JAX's ``dtype_to_ir_type``;
- ONNX: every ``TensorProto.DataType`` name (``FLOAT16``, ``FLOAT8E4M3FN``) and the ONNX Runtime
  type string (``tensor(float16)``) that an InferenceSession reports for an input of that type;
- TensorFlow: every ``DataType`` enum name (``DT_HALF``) and ``tf.dtypes`` name.

Run: ``python scripts/error_text_vocab.py`` (rewrites the table; ``--check`` exits 1 if stale).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "explorer" / "analysis" / "error_text" / "_vocab_table.py"


def _torch_rows() -> dict[str, tuple[str, str]]:
    import torch

    rows: dict[str, tuple[str, str]] = {}
    for attr in dir(torch):
        dtype = getattr(torch, attr)
        if not isinstance(dtype, torch.dtype):
            continue
        canonical = str(dtype).removeprefix("torch.")
        rows[attr] = (canonical, "torch attribute")
        rows[canonical] = (canonical, "torch dtype str")
        try:
            legacy = torch.empty(0, dtype=dtype).type().rsplit(".", 1)[-1]
        except Exception:  # some dtypes have no tensor type
            legacy = ""
        scalar = legacy.removesuffix("Tensor")
        if not legacy:
            continue
        rows[legacy] = (canonical, "torch legacy tensor type")
        if scalar and not scalar.startswith(("Q", "QU")):
            rows[scalar] = (canonical, "torch ScalarType name")
        for op in (lambda t: t + t, lambda t: t.sum(), lambda t: t.abs()):
            try:
                op(torch.zeros(2, dtype=dtype))
            except Exception as error:  # the message names the ScalarType
                found = re.search(r"not implemented for '(\w+)'", str(error))
                if found:
                    rows[found.group(1)] = (canonical, "torch ScalarType name")
                    break
    return rows


def _jax_rows() -> dict[str, tuple[str, str]]:
    import jax.numpy as jnp
    import ml_dtypes
    import numpy as np
    from jax._src.interpreters import mlir
    from jax._src.lib import xla_client
    from jax._src.lib.mlir import ir

    rows: dict[str, tuple[str, str]] = {}
    types = {}
    for module, label in ((jnp, "jax.numpy scalar type"), (ml_dtypes, "ml_dtypes type")):
        for attr in dir(module):
            value = getattr(module, attr)
            try:
                dtype = np.dtype(value)
            except Exception:  # not a dtype
                continue
            if dtype.kind not in "biufcV" or not isinstance(value, type):
                continue
            rows[attr] = (dtype.name, label)
            types[dtype.name] = dtype
    with ir.Context():
        for name, dtype in types.items():
            try:
                element = str(mlir.dtype_to_ir_type(dtype))
            except Exception:  # XLA has no type for it
                continue
            if element == "i1":
                name = "bool"  # ml_dtypes' int1 and numpy's bool are both XLA's PRED
            rows[element] = (name, "MLIR element type")
            primitive = _PRIMITIVE_OF_MLIR.get(element, element.upper())
            if primitive in xla_client.PrimitiveType.__members__:
                rows[primitive] = (name, "XLA PrimitiveType")
    return rows


#: MLIR element types whose XLA PrimitiveType name is not their upper-case spelling
_PRIMITIVE_OF_MLIR = {
    "complex<f32>": "C64",
    "complex<f64>": "C128",
    "i1": "PRED",
    **{f"i{n}": f"S{n}" for n in (2, 4, 8, 16, 32, 64)},
    **{f"ui{n}": f"U{n}" for n in (2, 4, 8, 16, 32, 64)},
}


def _onnx_rows() -> dict[str, tuple[str, str]]:
    import onnx
    import onnx.helper as helper
    import onnxruntime as ort

    rows: dict[str, tuple[str, str]] = {}
    for key, value in onnx.TensorProto.DataType.items():
        try:
            name = helper.tensor_dtype_to_np_dtype(value).name
        except Exception:  # UNDEFINED, STRING
            continue
        if name == "object":
            continue
        rows[key] = (name, "ONNX TensorProto.DataType")
        graph = helper.make_graph(
            [helper.make_node("Identity", ["x"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", value, [1])],
            [helper.make_tensor_value_info("y", value, [1])],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
        model.ir_version = 10
        try:
            session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        except Exception:  # ORT has no Identity kernel for the type
            continue
        rows[session.get_inputs()[0].type] = (name, "ONNX Runtime type string")
    return rows


def _tf_rows() -> dict[str, tuple[str, str]]:
    import tensorflow as tf
    from tensorflow.core.framework import types_pb2

    rows: dict[str, tuple[str, str]] = {}
    for key, value in types_pb2.DataType.items():
        if key.endswith("_REF") or key == "DT_INVALID":
            continue
        try:
            dtype = tf.as_dtype(value)
        except Exception:  # no Python dtype
            continue
        if dtype.name in ("string", "resource", "variant"):
            continue
        name = dtype.as_numpy_dtype.__name__ if dtype.name == "bfloat16" else dtype.name
        rows[key] = (name, "TensorFlow DataType enum")
        rows[dtype.name] = (name, "tf.dtypes name")
    return rows


def table() -> dict[str, tuple[str, str]]:
    """spelling (as the framework writes it) -> (numpy / ml_dtypes name, which registry)."""
    out: dict[str, tuple[str, str]] = {}
    for rows in (_tf_rows(), _onnx_rows(), _jax_rows(), _torch_rows()):
        for key, value in rows.items():
            out.setdefault(key, value)
    return dict(sorted(out.items()))


def render(rows: dict[str, tuple[str, str]]) -> str:
    """The Python module text of the table."""
    lines = [
        '"""Dtype spellings of the frameworks\' own registries (torch, jax.numpy, ml_dtypes, XLA',
        "PrimitiveType and MLIR, ONNX TensorProto and ONNX Runtime type strings, TensorFlow DataType),",
        "each with the numpy / ml_dtypes name it stands for and the registry it came from.",
        "",
        'Generated by ``python scripts/error_text_vocab.py``; do not edit."""',
        "",
        "from __future__ import annotations",
        "",
        "#: spelling as written -> (numpy / ml_dtypes name, the registry that spells it so)",
        "REGISTRY_DTYPES: dict[str, tuple[str, str]] = {",
    ]
    lines += [
        f"    {json.dumps(key)}: ({json.dumps(name)}, {json.dumps(source)}),"
        for key, (name, source) in rows.items()
    ]
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> int:
    """Write (or ``--check``) the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed table differs")
    args = parser.parse_args()
    text = render(table())
    if args.check:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{OUT} is stale")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
