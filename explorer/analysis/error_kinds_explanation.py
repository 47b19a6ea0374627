"""What each kind of low-precision error beyond a missing kernel means, and what to do, in words
built from the parsed message (:class:`~explorer.analysis.error_text.ParsedError`) and the facts
:func:`explorer.queries.diagnose.diagnose` found (a run here, a workaround that ran).

Pure: data in, text out.

>>> from explorer.analysis.error_text import parse_error
>>> p = parse_error("lax.add requires arguments to have the same dtypes, got float16, float32.")
>>> kind_sentence({"raw_op": p.raw_op, "op": p.op, "dtype": p.dtype, "device": None}, p).split(":")[0]
"JAX's lax.add takes operands of one dtype only and got float16 and float32"
"""

from __future__ import annotations

import re
from typing import Any

from explorer.analysis.error_text import KERAS_RENAMES, TORCH_KERNEL_STEMS, ParsedError

#: the compiler kinds: XLA, LLVM and MLIR failures
_COMPILER_KINDS = (
    "llvm_cannot_select",
    "xla_unsupported_type",
    "xla_mixed_precision",
    "mlir_unsupported_conversion",
)
#: the words for an ONNX Runtime provider's gap, and what to try
_ORT_ADVICE = (
    "What to do: run the session with an execution provider that has the kernel, or keep that node in "
    "float32 when converting the model (onnxconverter_common.float16.convert_float_to_float16(model, "
    "op_block_list=[{op!r}]) inserts the casts)."
)


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _mismatch(parsed: ParsedError, raw: str) -> str:
    dtypes = list(parsed.operand_dtypes)
    low = parsed.dtype or "the narrower dtype"
    other = next((d for d in dtypes if d != parsed.dtype), "the other dtype")
    pair = _join(dtypes) or "two dtypes"
    if parsed.framework == "jax":
        return (
            f"JAX's {raw} takes operands of one dtype only and got {pair}: lax functions never promote "
            f"(the jax.numpy function does), so this fails on every device, and the text needs no device. "
            f"What to do: convert the {other} operand with .astype(jnp.{low}), or call the jax.numpy "
            f"function, which promotes both to {other}."
        )
    if parsed.framework == "torch":
        return (
            f"PyTorch's {raw} got operands of two dtypes, {pair}: under mixed precision one tensor (often "
            f"a layer's float32 weight or bias) was not converted; this fails on every device, so the "
            f"text needs no device. What to do: convert it (.to(torch.{low}), or model.to(torch.{low})), "
            f"or run the region under torch.autocast, which casts both operands."
        )
    inside = ""
    if parsed.framework == "keras":
        layer = re.search(r"Keras layer (\S+):", " ".join(parsed.notes))
        inside = (
            f" It happened inside the Keras layer {layer.group(1) if layer else ''}: the layer's inputs "
            f"were autocast to {low}, but a tensor it made itself stayed {other}."
        ).replace("layer :", "layer:")
    return (
        f"TensorFlow's {raw} got operands of two dtypes, {pair}: TensorFlow never converts one operand "
        f"to the other's dtype, so this fails on every device, and the text needs no device.{inside} "
        f"What to do: cast the {other} operand to {low} (tf.cast(y, x.dtype)); in a Keras layer, create "
        f"constants and weights with dtype=self.compute_dtype (or self.variable_dtype for weights)."
    )


def _keras_api(parsed: ParsedError) -> str:
    raw = parsed.raw_op or ""
    name = re.split(r"[.(=)]", raw.rsplit(".", 1)[-1] if "(" not in raw else raw.split("(", 1)[1])[0]
    if raw.startswith("LossScaleOptimizer(") and name not in KERAS_RENAMES:
        return (
            f"LossScaleOptimizer was given a {name}, not an optimizer: it wraps an optimizer object "
            "(keras.optimizers.SGD(), not the string 'sgd'). The error is in the mixed-precision API, "
            "not in a kernel: no op, dtype or device is involved."
        )
    instead = KERAS_RENAMES.get(
        name, "the names keras.mixed_precision has now (set_global_policy, Policy, LossScaleOptimizer)"
    )
    return (
        f"{raw} is a mixed-precision name this Keras does not have; use {instead}. The error is in the "
        "mixed-precision API, not in a kernel: no op, dtype or device is involved."
    )


def _compiler(d: dict[str, Any], parsed: ParsedError) -> str:
    dtype = d["dtype"] or "this type"
    on = f" for the {d['device']}" if d["device"] else ""
    if parsed.kind == "llvm_cannot_select":
        return (
            f"LLVM's instruction selection found no machine instruction for the {parsed.dtype_text} "
            f"({dtype}) node {parsed.raw_op}{on}: the code generator under XLA cannot lower this {dtype} "
            "operation for this processor. It is a compiler gap, not a missing kernel. What to do: compute "
            f"that part in float32 (convert before it, back to {dtype} after), or try a newer jaxlib or "
            "TensorFlow (a newer LLVM)."
        )
    if parsed.kind == "xla_unsupported_type":
        where = f" in {parsed.raw_op}" if parsed.raw_op else ""
        return (
            f"The XLA path{where} has no support for the type {parsed.dtype_text} ({dtype}): the value "
            "cannot cross it in this type. What to do: keep that tensor in float32 at this boundary and "
            f"convert to {dtype} inside the computation."
        )
    if parsed.kind == "xla_mixed_precision":
        return (
            f"XLA's HLO verifier rejected {parsed.raw_op} because its operands have different floating "
            f"precisions ({_join(list(parsed.operand_dtypes))}): one instruction takes one precision. What "
            f"to do: convert the operands to one dtype before the op (float32 for accuracy)."
        )
    src, dst = [*parsed.operand_dtypes, "?", "?"][:2]
    return (
        f"The compiler has no direct conversion from {src} to {dst} in the rounding mode the code asks "
        f"for{on}. What to do: convert through float32 ({src} to float32, then float32 to {dst})."
    )


def _torch_kernel(d: dict[str, Any], parsed: ParsedError) -> str:
    kernel = parsed.raw_op or "the kernel"
    dtype = d["dtype"] or "this dtype"
    stem = next((s for s in TORCH_KERNEL_STEMS if re.match(rf"{s}(?:_|$)", kernel)), None)
    suffix = "_cuda" if d["device"] == "GPU" else "_cpu"
    on = f" on {d['device']} (the {suffix} in its name)" if d["device"] else ""
    if stem and d["op"]:
        what = f" ({stem} is the routine {d['op']} runs)"
    elif d["op"]:
        what = f" (the kernel of {d['op']})"
    else:
        base = re.sub(
            r"(?:_out_frame|_out|_kernel_impl|_impl|_kernel|_stub|_frame|_cpu|_cuda|_){1,8}$", "", kernel
        )
        what = f" (the kernel of {base})" if base and base != kernel else ""
    text = f"PyTorch's kernel {kernel}{what} has no {dtype} implementation{on}."
    if parsed.called:
        text += (
            f" It is not the function called: the traceback calls {parsed.called}"
            + (f" ({parsed.called_op})" if parsed.called_op and parsed.called_op != parsed.called else "")
            + f", which runs {kernel} inside, so {parsed.called} fails in {dtype} because of that kernel."
        )
    return text


def kind_sentence(d: dict[str, Any], parsed: ParsedError) -> str | None:
    """What the error means and what to do, for the kinds beyond a missing kernel (and PyTorch's
    kernel names); None for a kind :func:`~explorer.analysis.error_explanation.explanation` words itself."""
    raw = d["raw_op"] or "the op"
    if parsed.kind in ("tf_dtype_mismatch", "tf_input_type_mismatch", "tf_conversion_dtype"):
        return _mismatch(parsed, raw if parsed.kind != "tf_conversion_dtype" else "convert_to_tensor")
    if parsed.kind in ("jax_dtype_mismatch", "torch_dtype_mismatch"):
        return _mismatch(parsed, raw)
    if parsed.kind == "keras_mixed_precision_api":
        return _keras_api(parsed)
    if parsed.kind in _COMPILER_KINDS:
        return _compiler(d, parsed)
    if parsed.kind == "jax_constant_lowering":
        dtype = d["dtype"] or "this format"
        return (
            f"JAX could not embed a {dtype} constant in the program it compiles (lowering the array to "
            f"an MLIR constant failed): that JAX release cannot write {dtype} literals. What to do: make "
            f"the constant in float32 and convert it inside the function (.astype(jnp.{dtype}))."
        )
    if parsed.kind in ("ort_kernel_not_supported", "ort_no_implementation"):
        provider = parsed.provider or "no execution provider the session had"
        dtype = f" in {d['dtype']}" if d["dtype"] else ""
        only = _join(list(parsed.allowed))
        has = f"; it has {parsed.raw_op} kernels for {only} only" if parsed.allowed else ""
        return (
            f"ONNX Runtime's {provider} has no {parsed.raw_op} kernel{dtype}{has}: an ONNX Runtime kernel "
            "gap (ONNX Runtime is not a backend explorer probes, so this is read from the message alone). "
            + _ORT_ADVICE.format(op=parsed.raw_op)
        )
    if parsed.kind == "torch_not_implemented":
        return _torch_kernel(d, parsed)
    return None


def device_sentence(check: dict[str, Any] | None) -> str:
    """What a run here says about the device a text does not name ("" when nothing was run)."""
    if not check:
        return ""
    head = (
        f"The text does not name the device; run here on {check['device']} ({check['release']}), "
        f"{check['call']} in {check['dtype']}"
    )
    if check["ran"]:
        return (
            f"{head} runs (it returned {check['result_dtype']}): this release's {check['device']} kernel "
            "exists, so the failure came from another device or another release."
        )
    return f"{head} fails the same way ({check['error']}): the {check['device']} lacks the kernel."
