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
OPS_OUT = ROOT / "explorer" / "analysis" / "error_text" / "_op_table.py"


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


def _public_functions(module: object, underscore: bool = False) -> set[str]:
    names = set()
    for attr in dir(module):
        if attr.startswith("__") or (attr.startswith("_") and not underscore):
            continue
        value = getattr(module, attr, None)
        if callable(value) and not isinstance(value, type) and attr[:1].lower() == attr[:1]:
            names.add(attr)
    return names


def op_tables() -> dict[str, list[str]]:
    """module -> the function / op names its registry has (sorted)."""
    import jax
    import jax.numpy as jnp
    import jax.scipy.linalg
    import onnx.defs
    import tensorflow as tf
    import torch
    import torch.nn.functional as functional

    tables = {
        "torch": _public_functions(torch, underscore=True),
        "torch.nn.functional": _public_functions(functional),
        "torch.linalg": _public_functions(torch.linalg),
        "torch.fft": _public_functions(torch.fft),
        "torch.special": _public_functions(torch.special),
        "torch.Tensor": {a for a in dir(torch.Tensor) if not a.startswith("__") and a[:1].islower()},
        "torch dispatcher": {n.split(".")[0] for n in torch._C._dispatch_get_all_op_names()},
        "jax.numpy": _public_functions(jnp),
        "jax.numpy.linalg": _public_functions(jnp.linalg),
        "jax.numpy.fft": _public_functions(jnp.fft),
        "jax.lax": _public_functions(jax.lax),
        "jax.lax.linalg": _public_functions(jax.lax.linalg),
        "jax.nn": _public_functions(jax.nn),
        "jax.random": _public_functions(jax.random),
        "jax.scipy.linalg": _public_functions(jax.scipy.linalg),
        "tf.raw_ops": {a for a in dir(tf.raw_ops) if a[:1].isupper()},
        "onnx": {schema.name for schema in onnx.defs.get_all_schemas()},
    }
    return {module: sorted(names) for module, names in tables.items()}


def render_ops(tables: dict[str, list[str]]) -> str:
    """The Python module text of the op tables (names joined by spaces, wrapped)."""
    import textwrap

    lines = [
        '"""Op and function names of the frameworks\' own registries: torch (its functions, Tensor',
        "methods and every dispatcher op ``ns::name``), jax.numpy / lax / nn / random / scipy, TensorFlow's",
        "raw ops and ONNX's operator schemas.",
        "",
        'Generated by ``python scripts/error_text_vocab.py``; do not edit."""',
        "",
        "from __future__ import annotations",
        "",
        "#: module (or registry) -> its names, separated by spaces",
        "REGISTRY_OPS: dict[str, str] = {",
    ]
    for module, names in tables.items():
        lines.append(f"    {json.dumps(module)}: (")
        for chunk in textwrap.wrap(" ".join(names), width=90, break_long_words=False, break_on_hyphens=False):
            lines.append(f"        {json.dumps(chunk + ' ')}")
        lines.append("    ),")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> int:
    """Write (or ``--check``) the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed table differs")
    args = parser.parse_args()
    stale = 0
    for path, text in ((OUT, render(table())), (OPS_OUT, render_ops(op_tables()))):
        if args.check:
            same = path.exists() and path.read_text(encoding="utf-8") == text
            print("up to date" if same else f"{path} is stale")
            stale += not same
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
