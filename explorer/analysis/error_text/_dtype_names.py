"""Dtype spellings of error texts as explorer format names: TensorFlow (``DT_HALF``, ``half``,
the ``DataType`` enum of XLA's "Unsupported dtype19"), PyTorch (``Half``, ``BFloat16``) and
XLA/JAX (``f16``, ``bf16``)."""

from __future__ import annotations

#: TensorFlow ``DataType`` enum values of ``tensorflow/core/framework/types.proto`` (as in
#: XLA's "Unsupported dtype19"), for the dtypes explorer knows and the common integer ones
TF_DATATYPE_ENUM: dict[int, str] = {
    1: "float32",
    2: "float64",
    3: "int32",
    4: "uint8",
    5: "int16",
    6: "int8",
    7: "string",
    8: "complex64",
    9: "int64",
    10: "bool",
    14: "bfloat16",
    17: "uint16",
    18: "complex128",
    19: "float16",
    22: "uint32",
    23: "uint64",
    24: "float8_e5m2",
    25: "float8_e4m3fn",
    26: "float8_e4m3fnuz",
    27: "float8_e4m3b11fnuz",
    28: "float8_e5m2fnuz",
}
#: TensorFlow's C++ spellings (``DT_HALF`` without ``DT_``, DataTypeString) that differ from
#: the Python dtype names
_TF_CPP_NAMES = {"half": "float16", "float": "float32", "double": "float64"}
#: PyTorch's ScalarType names (``'Half'``) that are explorer formats
_TORCH_FORMATS = {
    "half": "float16",
    "bfloat16": "bfloat16",
    "float": "float32",
    "double": "float64",
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
    "float8_e4m3fnuz": "float8_e4m3fnuz",
    "float8_e5m2fnuz": "float8_e5m2fnuz",
}
#: XLA/MLIR short names (``'f16'``) of the explorer formats
_XLA_FORMATS = {
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "f8e4m3fn": "float8_e4m3fn",
    "f8e5m2": "float8_e5m2",
    "f8e4m3fnuz": "float8_e4m3fnuz",
    "f8e5m2fnuz": "float8_e5m2fnuz",
    "f8e4m3b11fnuz": "float8_e4m3b11fnuz",
    "f8e3m4": "float8_e3m4",
    "f8e4m3": "float8_e4m3",
    "f8e8m0fnu": "float8_e8m0fnu",
    "f6e2m3fn": "float6_e2m3fn",
    "f6e3m2fn": "float6_e3m2fn",
    "f4e2m1fn": "float4_e2m1fn",
}


def tf_dtype_name(name: str) -> str:
    """TensorFlow's Python dtype name for a ``DT_`` enum name or a C++ DataTypeString.

    >>> [tf_dtype_name(n) for n in ("DT_HALF", "DT_FLOAT", "double", "DT_INT64", "DT_BFLOAT16")]
    ['float16', 'float32', 'float64', 'int64', 'bfloat16']
    """
    key = name.strip().lower().removeprefix("dt_").removesuffix("_ref")
    return _TF_CPP_NAMES.get(key, key)


def format_name(name: str | None, framework: str = "") -> str | None:
    """The explorer format a dtype spelling stands for, or None (not a floating format explorer knows).

    Spellings: TensorFlow (``DT_HALF``, ``half``, ``bfloat16``), PyTorch (``Half``, ``BFloat16``,
    ``Float8_e4m3fn``, ``torch.HalfTensor``), XLA/JAX (``f16``, ``bf16``, ``f8e4m3fn``).

    >>> [format_name(n) for n in ("DT_HALF", "Half", "bf16", "Float8_e4m3fn", "torch.HalfTensor", "Long")]
    ['float16', 'float16', 'bfloat16', 'float8_e4m3fn', 'float16', None]
    """
    if not name:
        return None
    from explorer.formats import FORMAT_NAMES

    formats = set(FORMAT_NAMES)  # the names only: no ml_dtypes import (explain --no-run's start-up)
    key = name.strip().lower().removeprefix("torch.").removesuffix("tensor")
    for table in (_XLA_FORMATS, _TORCH_FORMATS):
        if key in table:
            return table[key]
    key = tf_dtype_name(key)
    return key if key in formats else None
