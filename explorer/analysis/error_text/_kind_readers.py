"""Readers of the kinds in :data:`~explorer.analysis.error_text._kind_patterns.MORE_PATTERNS`: each
turns its match (and the text around it) into a :class:`ParsedError`."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

from explorer.analysis.error_text._dtype_names import format_name, tf_dtype_name
from explorer.analysis.error_text._kind_patterns import Pattern
from explorer.analysis.error_text._op_names import (
    TORCH_KERNEL_STEMS,
    catalog_ops_for_raw_op,
    op_for_function,
)
from explorer.analysis.error_text._parsed import ParsedError, _line_of

#: JAX lax primitives whose catalog op has another name
_LAX_OPS = {"dot_general": "matmul", "dot": "matmul", "conv_general_dilated": "conv2d"}
#: XLA ``PrimitiveType`` enum names (xla/xla_data.proto) of the floating types explorer knows
XLA_TYPE_NAMES = {
    "F16": "float16",
    "BF16": "bfloat16",
    "F32": "float32",
    "F64": "float64",
    "F8E5M2": "float8_e5m2",
    "F8E4M3FN": "float8_e4m3fn",
    "F8E4M3B11FNUZ": "float8_e4m3b11fnuz",
    "F8E5M2FNUZ": "float8_e5m2fnuz",
    "F8E4M3FNUZ": "float8_e4m3fnuz",
    "F8E4M3": "float8_e4m3",
    "F8E3M4": "float8_e3m4",
    "F8E8M0FNU": "float8_e8m0fnu",
    "F4E2M1FN": "float4_e2m1fn",
}
#: XLA ``PrimitiveType`` enum values (xla/xla_data.proto) of those types
XLA_TYPE_ENUM = {
    10: "F16",
    16: "BF16",
    11: "F32",
    12: "F64",
    19: "F8E5M2",
    20: "F8E4M3FN",
    23: "F8E4M3B11FNUZ",
    24: "F8E5M2FNUZ",
    25: "F8E4M3FNUZ",
    28: "F8E4M3",
    29: "F8E3M4",
    32: "F4E2M1FN",
    33: "F8E8M0FNU",
}
#: the targets of LLVM's instruction selection (an ``XISD::`` node) and the device they compile for
_LLVM_TARGETS = {"AArch64ISD": "CPU", "X86ISD": "CPU", "NVPTXISD": "GPU", "AMDGPUISD": "GPU"}
#: ONNX Runtime execution providers and the device each runs on
_ORT_DEVICES = {
    "CPUExecutionProvider": "CPU",
    "CUDAExecutionProvider": "GPU",
    "TensorrtExecutionProvider": "GPU",
    "ROCMExecutionProvider": "GPU",
    "MIGraphXExecutionProvider": "GPU",
    "DmlExecutionProvider": "GPU",
    "CoreMLExecutionProvider": "Apple Neural Engine or GPU",
    "OpenVINOExecutionProvider": "CPU, GPU or NPU (OpenVINO)",
    "WebGpuExecutionProvider": "GPU",
    "JsExecutionProvider": "GPU (WebGPU)",
    "XnnpackExecutionProvider": "CPU",
}


def _dtype(text: str | None, framework: str = "") -> str | None:
    """An explorer name for a dtype spelling, or the spelling itself (``int32``) when none."""
    if not text:
        return None
    key = text.removeprefix("c10::")
    return format_name(key, framework) or tf_dtype_name(key).lower()


def _low(dtypes: Sequence[str | None]) -> str | None:
    """The narrowest floating dtype among ``dtypes`` (the one mixed precision introduced)."""
    from explorer.formats import all_formats

    bits = {f.name: f.bits for f in all_formats()}
    floats = [d for d in dtypes if d in bits]
    return min(floats, key=lambda d: bits[d]) if floats else None


def _parsed(pattern: Pattern, text: str, match: re.Match[str], **fields: object) -> ParsedError:
    base: dict[str, object] = {
        "framework": pattern.framework,
        "kind": pattern.kind,
        "raw_op": None,
        "op": None,
        "dtype": None,
        "dtype_text": None,
        "device": None,
        "attr": None,
        "message": _line_of(text, match),
    }
    base.update(fields)
    return ParsedError(**base)  # type: ignore[arg-type]


# ---------------------------------------------------------------- dtype mismatches


def _keras_notes(text: str, end: int) -> tuple[str, ...]:
    """Notes for a mismatch raised inside a Keras layer's call (the layer, the policy's autocast)."""
    before = text[max(0, end - 20_000) : end + 4000]
    layer = re.findall(
        r"Exception encountered when calling (?:layer '?)?([\w.]{1,200}?)(?:\.call\(\))?[ '\".\n]", before
    )
    if not layer:
        return ()
    return (
        f"raised inside the Keras layer {layer[-1]}: under a mixed-precision policy (mixed_float16 or "
        "mixed_bfloat16) Keras casts a layer's inputs to the compute dtype, but a tensor the layer "
        "creates itself (tf.constant, a variable built with dtype='float32') keeps float32",
    )


def _mismatch(
    pattern: Pattern,
    text: str,
    match: re.Match[str],
    raw: str | None,
    op: str | None,
    dtypes: list[str | None],
) -> ParsedError:
    named = [d for d in dtypes if d]
    low = _low(named)
    others = [d for d in named if d != low]
    notes = _keras_notes(text, match.end()) if pattern.framework == "tensorflow" else ()
    framework = "keras" if notes else pattern.framework
    return _parsed(
        pattern,
        text,
        match,
        framework=framework,
        raw_op=raw,
        op=op,
        dtype=low,
        dtype_text=low,
        allowed=tuple(others),
        operand_dtypes=tuple(named),
        notes=notes,
    )


def _read_tf_mismatch(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    groups = match.groupdict()
    expected = groups.get("expected") or groups.get("expected2")
    raw = groups.get("op")
    op = catalog_ops_for_raw_op(raw)[0] if raw else None
    return _mismatch(pattern, text, match, raw, op, [_dtype(expected), _dtype(groups["got"])])


def _read_jax_mismatch(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    raw = match.group("op")
    op = _LAX_OPS.get(raw) or op_for_function(raw, "numpy")
    dtypes = [_dtype(d.strip()) for d in match.group("dtypes").split(",")]
    return _mismatch(pattern, text, match, f"lax.{raw}", op, dtypes)


def _read_torch_mismatch(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    g = match.groupdict()
    x = g["x"] or g["x2"] or g["x3"] or g["x4"]
    y = g["y"] or g["y2"] or g["y3"] or g["y4"]
    names = {g.get(k) for k in ("a", "b", "a2", "b2")} - {None}
    raw, op = (None, None)
    if names & {"m1", "m2", "mat1", "mat2", "self"}:
        raw, op = "mm", TORCH_KERNEL_STEMS["mm"]
    if op is None:
        called = _torch_called(text[: match.start()])
        if called is not None:
            raw, op = called
    return _mismatch(pattern, text, match, raw, op, [_dtype(x, "torch"), _dtype(y, "torch")])


# ---------------------------------------------------------------- mixed-precision API


#: removed or renamed mixed-precision names -> what replaces them (Keras 3, tf.keras 2.4+)
KERAS_RENAMES = {
    "experimental": "keras.mixed_precision (the experimental namespace was removed: "
    "set_global_policy, Policy, LossScaleOptimizer)",
    "set_policy": "keras.mixed_precision.set_global_policy",
    "get_layer_policy": "layer.dtype_policy",
    "LossScaleOptimizerV1": "keras.mixed_precision.LossScaleOptimizer",
    "DynamicLossScale": "LossScaleOptimizer(dynamic_growth_steps=...)",
    "FixedLossScale": "LossScaleOptimizer(initial_scale=..., dynamic_growth_steps=None is not "
    "offered: Keras 3 scales dynamically)",
    "get_scaled_loss": "optimizer.scale_loss(loss) (Keras 3); gradients are unscaled inside "
    "optimizer.apply(...)",
    "get_unscaled_gradients": "nothing: Keras 3's LossScaleOptimizer unscales the gradients inside "
    "optimizer.apply(...)",
    "loss_scale": "LossScaleOptimizer(inner_optimizer, initial_scale=2.0**15, dynamic_growth_steps=2000)",
}


def _read_keras_api(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    g = match.groupdict()
    name = g.get("attr") or g.get("args") or g.get("method") or g.get("kwarg")
    module = g.get("module")
    if g.get("wrapped"):
        raw = f"LossScaleOptimizer({g['wrapped']})"
    elif module:
        raw = f"{module}.{name}"
    else:
        raw = f"LossScaleOptimizer.{name}" if g.get("method") else f"LossScaleOptimizer({name}=...)"
    return _parsed(pattern, text, match, raw_op=raw)


# ---------------------------------------------------------------- compilers


def _llvm_dtype(llvm_type: str) -> str | None:
    """``nxv8bf16`` -> bfloat16, ``v8f16`` -> float16, ``f32`` -> float32 (LLVM's MVT names)."""
    found = re.search(r"(bf16|f16|f32|f64|f8\w{0,12})$", llvm_type)
    return format_name(found.group(1)) if found else None


def _read_llvm(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    node = match.group("node")
    target = node.split("::")[0] if "::" in node else None
    device = _LLVM_TARGETS.get(target or "")
    window = text[match.end() : match.end() + 20_000]
    function = re.search(r"In function: ([\w.$-]{1,200})", window)
    notes = [f"LLVM failed in the function {function.group(1)}"] if function else []
    if device is None:
        notes.append(
            "the selection node names no target (X86ISD, AArch64ISD, NVPTXISD), so the text does not "
            "say the device"
        )
    dtype = _llvm_dtype(match.group("type"))
    return _parsed(
        pattern,
        text,
        match,
        raw_op=node,
        dtype=dtype,
        dtype_text=match.group("type"),
        device=device,
        notes=tuple(notes),
    )


def _read_xla_type(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    name = match.group("name")
    num = match.group("num")
    if num is not None:
        name = XLA_TYPE_ENUM.get(int(num))
    dtype = XLA_TYPE_NAMES.get(name or "")
    framework = "torch" if "torch_xla" in text else pattern.framework
    notes = [f"XLA's PrimitiveType {num} is {name}"] if num is not None and name else []
    if num is not None and name is None:
        notes.append(f"XLA's PrimitiveType {num} is not a floating type explorer knows")
    before = text[max(0, match.start() - 3000) : match.end()]
    lowering = re.search(r"Error while lowering: [^\n]{0,300}?\bstype=(\w{1,40})", before)
    if lowering:
        notes.append(f"torch_xla was casting a {lowering.group(1)} tensor")
    return _parsed(
        pattern,
        text,
        match,
        framework=framework,
        raw_op=match.group("fn"),
        dtype=dtype,
        dtype_text=name or num,
        notes=tuple(notes),
    )


def _read_xla_mixed(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    types = re.findall(r"\b(bf16|f16|f32|f64|f8\w{1,12})\[", match.group("instruction"))
    dtypes = list(dict.fromkeys(format_name(t) for t in types))
    raw = match.group("op").split(".")[0]
    low = _low(dtypes)
    return _parsed(
        pattern,
        text,
        match,
        raw_op=raw,
        dtype=low,
        dtype_text=low,
        allowed=tuple(d for d in dtypes if d and d != low),
        operand_dtypes=tuple(d for d in dtypes if d),
    )


def _read_mlir_conversion(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    src, dst = format_name(match.group("src")), format_name(match.group("dst"))
    gpu = bool(re.search(r"triton|ptx|cuda|NVPTX", text, re.IGNORECASE))
    notes = ("Triton's GPU code generation raised it (the traceback names Triton)",) if gpu else ()
    return _parsed(
        pattern,
        text,
        match,
        raw_op=f"convert {match.group('src')} -> {match.group('dst')}",
        op="cast",
        dtype=src,
        dtype_text=match.group("src"),
        device="GPU" if gpu else None,
        operand_dtypes=tuple(d for d in (src, dst) if d),
        notes=notes,
    )


@functools.cache
def _ml_dtypes_chars() -> dict[str, str]:
    """NumPy type characters of ml_dtypes' formats (``'4'`` -> float8_e4m3fn), read from ml_dtypes."""
    import ml_dtypes
    import numpy as np

    out: dict[str, str] = {}
    for name in dir(ml_dtypes):
        value = getattr(ml_dtypes, name)
        if isinstance(value, type) and format_name(name):
            try:
                out.setdefault(np.dtype(value).char, name)
            except TypeError:
                continue
    return out


def _read_jax_constant(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    char = match.group("char")
    name = _ml_dtypes_chars().get(char)
    notes = [f"'{char}' is NumPy's type character of ml_dtypes.{name}"] if name else []
    if re.search(r"_numpy_array_constant|DenseElementsAttr", text):
        notes.append("JAX was lowering a constant array (jax/_src/interpreters/mlir.py)")
    return _parsed(
        pattern,
        text,
        match,
        raw_op="constant",
        dtype=format_name(name) if name else None,
        dtype_text=char,
        notes=tuple(notes),
    )


# ---------------------------------------------------------------- ONNX Runtime


def _read_ort(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    g = match.groupdict()
    window = text[max(0, match.start() - 3000) : match.end() + 3000]
    provider = g.get("provider")
    if provider is None:
        named = re.search(r"ep:'(\w{1,100})'", window)
        listed = set(re.findall(r"\b(\w{1,60}ExecutionProvider)\b", window))
        provider = named.group(1) if named else (listed.pop() if len(listed) == 1 else None)
    node_type = re.search(r"the node in the model has the following type \(tensor\((\w{1,40})\)\)", window)
    allowed = re.search(
        r"implemented only for the following types "
        r"\(([^()\n]{0,500}(?:\([^()\n]{0,60}\)[^()\n]{0,60}){0,20})\)",
        window,
    )
    types = re.findall(r"tensor\((\w{1,40})\)", allowed.group(1)) if allowed else []
    dtype_text = node_type.group(1) if node_type else None
    notes = (
        []
        if dtype_text
        else [
            "the message names no dtype (ONNX Runtime lists types only in its 'kernel is not supported' form)"
        ]
    )
    if provider is None:
        notes.append("the message names no execution provider")
    raw = g["op"]
    op = raw.lower() if raw.lower() in _catalog_names() else None
    return _parsed(
        pattern,
        text,
        match,
        raw_op=raw,
        op=op,
        dtype=format_name(dtype_text) if dtype_text else None,
        dtype_text=dtype_text,
        device=_ORT_DEVICES.get(provider or ""),
        provider=provider,
        allowed=tuple(format_name(t) or t for t in types),
        notes=tuple(notes),
    )


@functools.cache
def _catalog_names() -> frozenset[str]:
    from explorer.ops import catalog

    return frozenset(catalog())


# ---------------------------------------------------------------- the function a traceback calls


_TORCH_CALL = re.compile(
    r"(?<![\w.])(?:torch\.(?:nn\.functional\.|linalg\.|fft\.|special\.)?|F\.)(\w{1,100})\("
    r"|/torch/(?:nn/)?functional\.py\", line \d{1,7}, in (\w{1,100})"
    r"|(?<![\w.])torch\.nn\.(\w{1,100})\("
)


def _torch_called(text: str) -> tuple[str, str | None] | None:
    """(function, catalog op) of the outermost torch call in the last frame that shows one, the
    frames of torch/nn/functional.py first (the function the user's module called)."""
    frames = re.findall(r"/torch/(?:nn/)?functional\.py\", line \d{1,7}, in (\w{1,100})", text)
    if frames:
        name = frames[0]
        return name, op_for_function(name, "torch")
    lines = [line for line in text.splitlines() if "torch." in line or "F." in line]
    for line in reversed(lines):
        calls = [a or c for a, _, c in _TORCH_CALL.findall(line) if a or c]
        if calls:
            name = _snake_module(calls[0])
            return name, op_for_function(name, "torch")
    return None


def _snake_module(name: str) -> str:
    """``LocalResponseNorm`` -> ``local_response_norm`` (a torch.nn module's functional name)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


MORE_READERS: dict[str, Callable[[str, re.Match[str], Pattern], ParsedError]] = {
    "tf_dtype_mismatch": _read_tf_mismatch,
    "tf_input_type_mismatch": _read_tf_mismatch,
    "tf_conversion_dtype": _read_tf_mismatch,
    "jax_dtype_mismatch": _read_jax_mismatch,
    "torch_dtype_mismatch": _read_torch_mismatch,
    "keras_mixed_precision_api": _read_keras_api,
    "llvm_cannot_select": _read_llvm,
    "xla_unsupported_type": _read_xla_type,
    "xla_mixed_precision": _read_xla_mixed,
    "mlir_unsupported_conversion": _read_mlir_conversion,
    "jax_constant_lowering": _read_jax_constant,
    "ort_kernel_not_supported": _read_ort,
    "ort_no_implementation": _read_ort,
}
