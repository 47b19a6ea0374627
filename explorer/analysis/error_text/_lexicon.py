"""The vocabularies the structural reader matches: dtype spellings of every framework and compiler
(:func:`dtype_mentions`), and the libraries a traceback path, a module name or a word names
(:data:`LIBRARIES`, :func:`library_mentions`).

A dtype spelling is read as a token, never as a whole message: ``Half``, ``c10::Half``, ``struct
c10::BFloat16``, ``DT_HALF``, ``torch.float16``, ``tf.bfloat16``, ``f16``, ``f8E4M3FN``,
``fp8e4nv``, ``e4m3``, ``float4_e2m1fn_x2``, ``MXFP8``, ``C128``, ``tensor(float16)``,
``DataType.HALF`` ...  Words that are also ordinary English (``float``, ``half``, ``double``) count
only in a dtype's place: quoted, after ``c10::``/``torch.``, before ``tensor``, or beside ``!=``.

>>> [(m.name, m.text) for m in dtype_mentions("expected m1 and m2 to have the same dtype, but got: "
...                                          "c10::Half != float")]
[('float16', 'c10::Half'), ('float32', 'float')]
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from explorer.analysis.error_text._vocab_table import REGISTRY_DTYPES

#: a dtype word (lower case, prefixes removed) -> explorer name; unambiguous in any place
_WORDS: dict[str, str] = {
    # numpy / explorer / TensorFlow / JAX / PyTorch attribute names
    "float16": "float16",
    "bfloat16": "bfloat16",
    "float32": "float32",
    "float64": "float64",
    "complex64": "complex64",
    "complex128": "complex128",
    "int8": "int8",
    "uint8": "uint8",
    "int32": "int32",
    "int64": "int64",
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
    "float8_e4m3fnuz": "float8_e4m3fnuz",
    "float8_e5m2fnuz": "float8_e5m2fnuz",
    "float8_e4m3b11fnuz": "float8_e4m3b11fnuz",
    "float8_e8m0fnu": "float8_e8m0fnu",
    "float8_e4m3": "float8_e4m3",  # the IEEE-style E4M3 (with infinities), not e4m3fn
    "float8_e3m4": "float8_e3m4",
    "float4_e2m1fn": "float4_e2m1fn",
    "float4_e2m1fn_x2": "float4_e2m1fn",
    "float4_e2m1": "float4_e2m1fn",
    # PyTorch ScalarType names (c10::Half, 'BFloat16', Float8_e4m3fn)
    "bfloat": "bfloat16",
    "complexfloat": "complex64",
    "complexdouble": "complex128",
    "cfloat": "complex64",
    "cdouble": "complex128",
    # short forms: XLA/MLIR, Triton, oneDNN, NVIDIA's FP16/BF16/FP8
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "fp16": "float16",
    "fp32": "float32",
    "fp64": "float64",
    "c64": "complex64",
    "c128": "complex128",
    "f8e4m3fn": "float8_e4m3fn",
    "f8e4m3": "float8_e4m3",  # XLA's F8E4M3 is the IEEE-style format, F8E4M3FN the finite one
    "f8e3m4": "float8_e3m4",
    "f8e5m2": "float8_e5m2",
    "f8e4m3fnuz": "float8_e4m3fnuz",
    "f8e5m2fnuz": "float8_e5m2fnuz",
    "f8e4m3b11fnuz": "float8_e4m3b11fnuz",
    "f8e8m0fnu": "float8_e8m0fnu",
    "f4e2m1fn": "float4_e2m1fn",
    "fp8e4nv": "float8_e4m3fn",
    "fp8e4m3": "float8_e4m3fn",
    "fp8e5": "float8_e5m2",
    "fp8e5m2": "float8_e5m2",
    "fp8e4b8": "float8_e4m3fnuz",
    "fp8e5b16": "float8_e5m2fnuz",
    "fp8_e4m3": "float8_e4m3fn",
    "fp8_e5m2": "float8_e5m2",
    "fp8_e4m3fn": "float8_e4m3fn",
    "e4m3": "float8_e4m3fn",
    "e4m3fn": "float8_e4m3fn",
    "e5m2": "float8_e5m2",
    "e4m3fnuz": "float8_e4m3fnuz",
    "e5m2fnuz": "float8_e5m2fnuz",
    "e8m0": "float8_e8m0fnu",
    "e2m1": "float4_e2m1fn",
    "fp4_e2m1": "float4_e2m1fn",
    # block formats
    "mxfp8": "mxfp8",
    "mxfp6": "mxfp6",
    "mxfp4": "mxfp4",
    "nvfp4": "nvfp4",
    # TensorRT's DataType (kHALF, DataType.BF16), ONNX's TensorProto names
    "khalf": "float16",
    "kbf16": "bfloat16",
    "kfloat": "float32",
    "kfp8": "float8_e4m3fn",
    "kint8": "int8",
    "kfp4": "float4_e2m1fn",
    "float8e4m3fn": "float8_e4m3fn",
    "float8e5m2": "float8_e5m2",
    "float8e4m3fnuz": "float8_e4m3fnuz",
    "float8e5m2fnuz": "float8_e5m2fnuz",
    "float4e2m1": "float4_e2m1fn",
    # quantized integer dtypes
    "qint8": "int8",
    "quint8": "uint8",
    # Triton's tl.* dtype names (triton/language/core.py)
    "float8e4nv": "float8_e4m3fn",
    "float8e5": "float8_e5m2",
    "float8e4b8": "float8_e4m3fnuz",
    "float8e5b16": "float8_e5m2fnuz",
    # CUDA C++ types: cuda_fp16.h / cuda_bf16.h / cuda_fp8.h (__half, __nv_fp8_e4m3, vector types)
    "half2": "float16",
    "bfloat162": "bfloat16",
    "nv_bfloat162": "bfloat16",
    "nv_fp8_e4m3": "float8_e4m3fn",
    "nv_fp8_e5m2": "float8_e5m2",
    "nv_fp4_e2m1": "float4_e2m1fn",
    # CUTLASS numeric types (cutlass/numeric_types.h)
    "half_t": "float16",
    "bfloat16_t": "bfloat16",
    "float_e4m3_t": "float8_e4m3fn",
    "float_e5m2_t": "float8_e5m2",
    "float_e2m1_t": "float4_e2m1fn",
    "float_ue8m0_t": "float8_e8m0fnu",
    # cudaDataType_t (CUDA's library_types.h) and hipDataType, as cuBLAS/hipBLASLt errors print them
    **{
        f"{api}_{name}": dtype
        for api in ("cuda", "hip")
        for name, dtype in (
            ("r_16f", "float16"),
            ("r_16bf", "bfloat16"),
            ("r_32f", "float32"),
            ("r_64f", "float64"),
            ("c_32f", "complex64"),
            ("c_64f", "complex128"),
            ("r_8f_e4m3", "float8_e4m3fn"),
            ("r_8f_e5m2", "float8_e5m2"),
            ("r_8f_e4m3_fnuz", "float8_e4m3fnuz"),
            ("r_8f_e5m2_fnuz", "float8_e5m2fnuz"),
            ("r_4f_e2m1", "float4_e2m1fn"),
            ("r_8f_ue8m0", "float8_e8m0fnu"),
            ("r_8i", "int8"),
            ("r_8u", "uint8"),
            ("r_32i", "int32"),
        )
    },
    # rocBLAS types
    "rocblas_half": "float16",
    "rocblas_bfloat16": "bfloat16",
    "rocblas_float": "float32",
    "rocblas_double": "float64",
}
#: spellings that stand for a dtype only in a dtype's place (ordinary words otherwise), and the
#: PyTorch ScalarType names of integer dtypes (``'Long'``, ``'Char'``, ``'Byte'``)
_PLACE_WORDS: dict[str, str] = {
    "half": "float16",
    "float": "float32",
    "double": "float64",
    "long": "int64",
    "int": "int32",
    "char": "int8",
    "byte": "uint8",
    "bool": "bool",
}


#: the style of a spelling -> the framework whose spelling it is (``c10::Half``, ``'BFloat16'``,
#: ``Float8_e4m3fn`` are PyTorch's ScalarType names; ``DT_HALF`` TensorFlow's)
def spelling_framework(mention: DtypeMention) -> str | None:
    """The framework a dtype spelling belongs to, when only one spells it so; None otherwise.

    >>> [spelling_framework(m) for m in dtype_mentions("c10::Half, DT_HALF, float16, Float8_e4m3fn")]
    ['torch', 'tensorflow', None, 'torch']
    """
    text = mention.text
    if text.startswith(("c10::", "struct c10::", "at::", "torch.")) or re.fullmatch(
        r"Half|BFloat16|Float8_\w+|ComplexFloat|ComplexDouble|Float4_\w+", text
    ):
        return "torch"
    if text.startswith(("DT_", "tf.")):
        return "tensorflow"
    if text.startswith(("jnp.",)):
        return "jax"
    return None


# one token: an optional framework prefix, then a word of letters, digits and underscores
_TOKEN = re.compile(
    r"(?P<prefix>(?:struct\s+)?c10::|at::|__(?:nv_)?(?![A-Za-z0-9]*__)|torch\.(?:cuda\.)?|tf\.|jnp\.|np\.|numpy\.|tl\.|ml_dtypes\.|"
    r"DataType\.|trt\.|nvinfer1::DataType::|DT_|dtypes\.|keras\.|TensorProto\.)?"
    r"(?P<word>[A-Za-z][A-Za-z0-9_]{0,30})"
)
_TORCH_TENSOR_TYPES = {
    "halftensor": "float16",
    "bfloat16tensor": "bfloat16",
    "floattensor": "float32",
    "doubletensor": "float64",
    "longtensor": "int64",
    "inttensor": "int32",
    "chartensor": "int8",
    "bytetensor": "uint8",
    "booltensor": "bool",
}


@dataclass(frozen=True)
class DtypeMention:
    """One dtype spelling found in a text."""

    #: the explorer / numpy name (``float16``, ``float8_e4m3fn``, ``mxfp8``)
    name: str
    #: the spelling as written (``c10::Half``, ``DT_HALF``, ``f8E4M3FN``)
    text: str
    start: int
    end: int


def _in_dtype_place(text: str, start: int, end: int, prefix: str) -> bool:
    """Whether an ordinary word (``float``, ``Half``) at ``text[start:end]`` stands where a dtype
    does: after a framework prefix, quoted, parenthesised as a type, before ``tensor``/``type``,
    beside ``!=``, or after ``dtype``/``type``/``scalar type``."""
    if prefix:
        return True
    word = text[start:end]
    before = text[max(0, start - 24) : start]
    if word in ("int", "long", "char", "byte", "bool"):
        # C and Python words: a dtype only after "type"/"dtype", with a prefix or in a list of dtypes
        return bool(re.search(r"\b(?:dtype|type|DataType|scalar type)\s['(]?$", before))
    after = text[end : end + 16]
    if before.endswith(("'", '"', "<", "tensor(", "(")) and after[:1] in ("'", '"', ">", ")", "]"):
        return not before.endswith("(") or after[:1] == ")"
    if re.match(r"\s?(?:!=|==)", after) or re.search(r"(?:!=|==)\s?$", before):
        return True
    if re.search(r"ScalarType(?:::|\.)$", before):
        return True  # at::ScalarType::Half, ScalarType.Half
    if re.search(r"was passed $|with expected $", before):
        return (
            True  # TensorFlow's "Input 0 of node X was passed half from y:0 incompatible with expected float"
        )
    if re.match(r"\s(?:tensor|Tensor|dtype|type|precision|scalar|inputs?\b|weights?\b|gradients?\b)", after):
        return True
    if re.search(r"\b(?:dtype|stype|type)=$", before):
        return True
    if re.search(
        r"(?:dtype|type|DataType|scalar type|found|got|expected|of|to|and|as|in|for)\s[(']?$", before
    ):
        return word[:1].isupper() or "dtype" in before or "type" in before
    if word[:1].isupper() and word.lower() in ("half", "bfloat16", "float", "double", "long", "char", "byte"):
        return bool(re.search(r"[\s,(\[]$", before)) and bool(re.match(r"[\s,)\]:.`'\"]|$", after))
    return False


def _name_of(word: str, prefix: str) -> str | None:
    if prefix in ("at::", "c10::") and word[:1] == "k" and word[1:2].isupper():
        entry = REGISTRY_DTYPES.get(word[1:])  # at::kBFloat16: c10's ScalarType constant
        if entry is not None and entry[1] == "torch ScalarType name":
            name = _REGISTRY_ALIASES.get(entry[0], entry[0])
            return name if name in _SCHEMA_NAMES else None
    key = word.lower()
    if key.startswith("mixed_"):  # a Keras policy: mixed_float16 computes in float16
        key = key.removeprefix("mixed_")
    if prefix.startswith("torch") and key in _TORCH_TENSOR_TYPES:
        return _TORCH_TENSOR_TYPES[key]
    if prefix.lower() in ("dt_", "datatype.", "trt.", "nvinfer1::datatype::", "tensorproto."):
        key = {"half": "float16", "float": "float32", "double": "float64", "fp8": "float8_e4m3fn"}.get(
            key, key
        )
        key = key.replace("float8e", "float8_e").replace("float4e", "float4_e")
        key = {"float8_e4m3fn": "float8_e4m3fn", "fp4": "float4_e2m1fn"}.get(key, key)
    return _WORDS.get(key) or _REGISTRY_WORDS.get(key) or _REGISTRY_WORDS.get(word.lower())


#: the dtype names of the corpus schema (what a mention may be read as)
_SCHEMA_NAMES = frozenset(_WORDS.values()) | {"bool"}


def _registry_words() -> tuple[dict[str, str], dict[str, str]]:
    """The frameworks' own spellings (:data:`REGISTRY_DTYPES`) of the schema's dtypes, lower case:
    (unambiguous words: a floating or complex type whose spelling has a digit, ``FLOAT8E8M0``,
    ``F8E4M3FN``; words read only in a dtype's place: those without one, ``Double``, ``single``).
    Integer spellings (``S8``, ``U8``, ``i1``) stay out: they are also ordinary tokens."""
    words: dict[str, str] = {}
    places: dict[str, str] = {}
    for spelling, (name, _source) in REGISTRY_DTYPES.items():
        name = _REGISTRY_ALIASES.get(name, name)
        key = spelling.lower()
        if name not in _SCHEMA_NAMES or not re.fullmatch(r"[a-z][a-z0-9_]*", key):
            continue
        if not name.startswith(("float", "bfloat", "complex")):
            continue
        if any(ch.isdigit() for ch in key):
            words.setdefault(key, name)
        elif key.endswith("tensor"):
            words.setdefault(key, name)  # HalfTensor, FloatTensor: PyTorch's legacy tensor types
        elif key not in _ENGLISH:
            places.setdefault(key, name)
    return words, places


#: registry spellings that are ordinary words too often even in a dtype's place ("a single tensor")
_ENGLISH = frozenset(["single"])
#: registry names that the schema spells differently (PyTorch's packed float4 dtype)
_REGISTRY_ALIASES = {"float4_e2m1fn_x2": "float4_e2m1fn"}
_REGISTRY_WORDS, _REGISTRY_PLACE_WORDS = _registry_words()


#: PyTorch's backend prefixes of a legacy type name (``CUDAHalfType``, ``CPUFloatType``)
_BACKEND_TYPE = re.compile(r"(?:CPU|CUDA|HIP|XPU|MPS|XLA|SparseCUDA|SparseCPU|QuantizedCPU)(?P<s>\w+)Type")


def _backend_type(word: str) -> str | None:
    """The dtype of PyTorch's legacy type name ``{Backend}{ScalarType}Type`` (``CUDAHalfType``)."""
    match = _BACKEND_TYPE.fullmatch(word)
    if match is None:
        return None
    scalar = match.group("s")
    if scalar not in REGISTRY_DTYPES or REGISTRY_DTYPES[scalar][1] != "torch ScalarType name":
        return None
    name = _REGISTRY_ALIASES.get(REGISTRY_DTYPES[scalar][0], REGISTRY_DTYPES[scalar][0])
    return name if name in _SCHEMA_NAMES else None


def dtype_mentions(text: str) -> list[DtypeMention]:
    """Every dtype spelling in ``text``, in order, as explorer names with offsets.

    >>> [m.name for m in dtype_mentions("DT_HALF, tf.bfloat16, tensor<4xf8E4M3FN>, fp8e4nv, c10::Half")]
    ['float16', 'bfloat16', 'float8_e4m3fn', 'float8_e4m3fn', 'float16']
    """
    found: list[DtypeMention] = []
    waiting: list[DtypeMention] = []  # ordinary words (half, float, long) not (yet) in a dtype's place
    for match in _TOKEN.finditer(text):
        prefix, word = match.group("prefix") or "", match.group("word")
        start = match.start("word")
        name = None
        if start > 0 and text[start - 1].isalnum() and not prefix:
            if not (word.lower().startswith(("xf", "xbf", "xc")) and text[start - 1].isdigit()):
                continue
            name = _name_of(word[1:], prefix)  # MLIR's tensor<4x4xf16>
            if name is None:
                continue
            start += 1
        name = name or _name_of(word, prefix) or _backend_type(word)
        if name is None:
            place = _PLACE_WORDS.get(word.lower()) or _REGISTRY_PLACE_WORDS.get(word.lower())
            if place is not None and _in_dtype_place(text, start, match.end(), prefix):
                name = place
            elif place is not None:
                waiting.append(DtypeMention(place, word, start, match.end()))
                continue
        block = _BLOCK_PREFIX.match(word) if name is None else None
        if block:
            name = _WORDS[block.group(0).lower()]
        if name is None and "_" in word and not prefix:
            found.extend(_compound(word, start))  # int8_from_float32, mixed_bfloat16
            continue
        if name is None:
            continue
        span_start = (
            match.start() if prefix and not prefix.startswith(("torch", "tf", "jnp", "np")) else start
        )
        if prefix.startswith(("torch", "tf.", "jnp", "np.")):
            span_start = match.start()
        end = span_start + len(block.group(0)) if block else match.end()
        found.append(DtypeMention(name, text[span_start:end], span_start, end))
    taken = {m.start for m in found}
    for match in _MLIR_SHAPE.finditer(text):  # tensor<1x4xf32>: the element type after the last "x"
        group = "t" if match.group("t") else "t2"
        word = match.group(group)
        name = _INT_TYPES.get(word) or _name_of(word, "")
        if name is not None and match.start(group) not in taken:
            found.append(DtypeMention(name, word, match.start(group), match.end(group)))
    return _with_listed(text, sorted(found, key=lambda m: m.start), waiting)


_MLIR_SHAPE = re.compile(
    r"(?<=[\d?]x)(?P<t>bf16|f16|f32|f64|c64|c128|f8E\w{2,12}|f4E\w{2,8}|i1|i8|i32|i64)(?=[>,\]\s])"
    # Triton's pointer types: *fp32, *i32
    r"|(?<![\w*])\*(?P<t2>fp16|bf16|fp32|fp64|fp8e4nv|fp8e5|i1|i8|i32|i64|u8)\b"
)
#: MLIR's and Triton's integer element types
_INT_TYPES = {"i1": "bool", "i8": "int8", "i32": "int32", "i64": "int64", "u8": "uint8"}


#: the numpy-style names a compound identifier is split into
_FULL_NAMES = frozenset(
    [
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "int8",
        "uint8",
        "int32",
        "int64",
        "complex64",
        "complex128",
        "nvfp4",
        "mxfp8",
        "mxfp6",
        "mxfp4",
    ]
)
#: block formats that begin a class or function name (``NVFP4Tensor``, ``MXFP8Linear``)
_BLOCK_PREFIX = re.compile(r"(?i:nvfp4|mxfp8|mxfp6|mxfp4)(?=[A-Z_]|$)")
_LIST_SEPARATOR = re.compile(r"\s{0,3}(?:,|/|\bor\b|\band\b|\|)\s{0,3}(?:(?:or|and)\s{1,3})?")


def _compound(word: str, start: int) -> list[DtypeMention]:
    """The dtypes named by the parts of an identifier (``int8_from_float32``: int8 and float32)."""
    out = []
    offset = start
    for part in word.split("_"):
        if part.lower() in _FULL_NAMES:
            out.append(DtypeMention(_WORDS[part.lower()], part, offset, offset + len(part)))
        offset += len(part) + 1
    return out


def _with_listed(text: str, found: list[DtypeMention], waiting: list[DtypeMention]) -> list[DtypeMention]:
    """``found`` with the ordinary words that stand in one list with a dtype (``bool, int32, long,
    half, float``): a word separated from an accepted dtype only by a comma, ``/``, ``or`` or ``and``."""
    everything = sorted(
        [(m, True) for m in found] + [(m, False) for m in waiting], key=lambda ma: ma[0].start
    )
    accepted = [ok for _, ok in everything]
    mentions = [m for m, _ in everything]
    linked = [
        i + 1 < len(mentions) and bool(_LIST_SEPARATOR.fullmatch(text[m.end : mentions[i + 1].start]))
        for i, m in enumerate(mentions)
    ]  # linked[i]: mention i and mention i + 1 stand in one list
    for i in range(1, len(mentions)):  # a list is taken in from its left end ...
        accepted[i] = accepted[i] or (linked[i - 1] and accepted[i - 1])
    for i in range(len(mentions) - 2, -1, -1):  # ... and from its right end
        accepted[i] = accepted[i] or (linked[i] and accepted[i + 1])
    return [m for m, ok in zip(mentions, accepted, strict=True) if ok]
