"""The op an error text names, from candidates ranked by where they appear: the error message
(a kernel in quotes, ``aten::X``, ``torch._scaled_mm``, ``lax.X``, ONNX's ``operator (Conv)``)
before the code lines of the traceback (the deepest call of a framework function first:
``F.conv2d(...)``, ``jax.lax.linalg.qr(x)``, ``x.matmul(y)``).  Frame names alone (``in
_unscale_grads_``) are not read as ops.  The name is normalised to the catalog where the catalog
has it (:func:`~explorer.analysis.error_text._op_names.op_for_function`,
:func:`~explorer.analysis.error_text._op_names.catalog_ops_for_raw_op`).

>>> read_op("    return F.conv2d(input, weight, bias)\\nRuntimeError: Input type ...", "torch").name
'conv2d'
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from explorer.analysis.error_text._lexicon import dtype_mentions
from explorer.analysis.error_text._libraries import FRAME
from explorer.analysis.error_text._op_names import (
    PREFIX_REGISTRIES,
    TORCH_KERNEL_STEMS,
    all_registry_names,
    catalog_ops_for_raw_op,
    op_for_function,
    registry_names,
    torch_kernel_ops,
)


@dataclass(frozen=True)
class OpReading:
    """The op a text names."""

    #: the op as written, module prefix removed (``_scaled_mm``, ``Conv``, ``qr``); None: not named
    raw: str | None = None
    #: the catalog op (None: the catalog has none, or no op named)
    name: str | None = None
    #: where it was read: ``message``, ``kernel``, ``code line`` or ``pattern``
    where: str | None = None
    start: int = -1
    end: int = -1

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields."""
        return {"raw": self.raw, "name": self.name, "where": self.where, "span": [self.start, self.end]}


#: attribute names that are not ops (device, dtype, module and tensor plumbing)
_NOT_OPS = frozenset(
    [
        "cuda",
        "device",
        "tensor",
        "Tensor",
        "compile",
        "no_grad",
        "autocast",
        "load",
        "save",
        "manual_seed",
        "set_default_dtype",
        "to",
        "cpu",
        "numpy",
        "item",
        "backward",
        "step",
        "forward",
        "__call__",
        "_call_impl",
        "_wrapped_call_impl",
        "array",
        "asarray",
        "jit",
        "grad",
        "vmap",
        "pmap",
        "device_put",
        "block_until_ready",
        "eval",
        "train",
        "Module",
        "Size",
        "nn",
        "functional",
        "ops",
        "aten",
        "amp",
        "library",
        "_C",
        "_dynamo",
        "_inductor",
        "utils",
        "float8",
        "dtype",
        "dtypes",
        "finfo",
        "iinfo",
        "is_available",
        "get_device_capability",
        "empty",
        "empty_like",
        "randn",
        "rand",
        "randint",
        "zeros_like",
        "ones_like",
        "full",
        "as_tensor",
        "from_numpy",
        "tolist",
        "clone",
        "contiguous",
        "view",
        "reshape",
        "detach",
        "requires_grad",
        "run",
        "apply",
        "fn",
        "call",
        "func",
        "wrapper",
        "inner",
        "decorate_context",
        "_fn",
        "profile",
        "export",
        "onnx",
        "config",
        "keras",
        "layers",
        "models",
        "Model",
        "Sequential",
        "Parameter",
        "ModuleList",
        "ModuleDict",
        "Input",
        "fit",
        "predict",
        "evaluate",
        "build",
        "quantize",
        "constant",
        "convert_to_tensor",
        "cast_to",
        "cast_like",
        "unscale_",
        "scale",
        "update",
        "set_",
        "sum_to_size",
        "new_empty",
        "_ops",
        "experimental",
        "is_compiling",
        "hub",
        "distributed",
        "backends",
        "mps",
        "xpu",
    ]
)
#: words that stand before "layer", "op", "kernel" in prose without naming one
_PROSE_WORDS = frozenset(
    [
        "same",
        "following",
        "custom",
        "first",
        "last",
        "whole",
        "other",
        "final",
        "output",
        "input",
        "new",
        "quantized",
        "converted",
        "model",
        "above",
        "below",
        "next",
        "previous",
        "current",
        "corresponding",
        "original",
        "specific",
        "given",
        "failing",
        "offending",
        "problematic",
        "entire",
        "linear",
        "fp8",
        "fp16",
        "bf16",
        "int8",
        "this",
        "that",
        "these",
        "those",
        "each",
        "every",
        "single",
        "underlying",
        "native",
    ]
)
_MESSAGE_OPS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "kernel",
        re.compile(
            r"\"(?P<op>[A-Za-z_][\w/ ]{1,120})\"(?: \"[^\"\n]{1,100}\")? not implemented for"
            r"|(?<![\w\"])(?P<op2>[A-Za-z_]\w{2,120}) not implemented for '"
        ),
    ),
    ("message", re.compile(r"(?:aten::|aten\.|torch\.ops\.aten\.)(?P<op>_?[a-z]\w{0,60})")),
    ("message", re.compile(r"op='aten\.(?P<op>\w{1,60})'")),
    # a dispatcher op of any namespace (quantized::linear_dynamic, _C::dynamic_scaled_fp8_quant,
    # torchao::quantize_affine_float8, xla::cast), not a C++ namespace path of the frameworks
    (
        "message",
        re.compile(
            r"(?<![\w:])(?!(?:c10|std|at|detail|internal|native|torch|tensorflow|absl|pybind11|mlir|llvm|"
            r"onnxruntime|Ort|nvinfer1|cudnn|cutlass|cute)::)[A-Za-z_]\w{0,30}::(?P<op>_?[a-z][a-z0-9_]{1,60})\b"
            r"(?!::|\.\w|:)"  # not a log line's module path (mistralrs_core::paged_attention: ...)
        ),
    ),
    ("message", re.compile(r"\btorch\.ops\.(?!aten\.)\w{1,40}\.(?P<op>_?[a-z]\w{0,60})")),
    # an MLIR dialect's op (Mosaic's tpu.matmul, Triton's tt.dot, StableHLO's stablehlo.convert)
    (
        "named",
        re.compile(
            r"(?<![\w./])(?:tpu|tt|ttg|triton_gpu|triton_nvidia_gpu|arith|stablehlo|mhlo|chlo|vector|memref"
            r"|nvvm|tosa|mosaic_gpu|amdgpu|rocdl)\.(?P<op>[a-z_][a-z0-9_]{1,40})(?![\w(.])"
        ),
    ),
    # JAX's check_user_dtype_supported: "got dtype bfloat16 in asarray"
    ("named", re.compile(r"\bgot dtype [\w.'()]{1,40} in (?P<op>[a-z_]\w{1,60})")),
    # a kernel of an ONNX or TensorFlow op ("Failed to find kernel for Sub")
    (
        "registry",
        re.compile(r"\b(?:kernels?|implementation) for (?:op |node )?(?P<op>[A-Z][A-Za-z0-9]{1,40})\b"),
    ),
    # TensorFlow's "Input 0 of node import/Pad was passed half": a node named after its op type
    ("registry", re.compile(r"\bof node (?:[\w.-]{0,300}/)?(?P<op>[A-Z][A-Za-z0-9]{1,40})(?:_\d+)*\b")),
    # a framework function that says what it requires ("dot_general requires operands of the same
    # dtype"), when a registry has the name
    ("function", re.compile(r"(?<![\w.])(?P<op>[a-z][a-z0-9_]{2,40}) (?:requires|expects|only supports)\b")),
    # an FFT library refusing a type is the FFT refusing it
    ("message", re.compile(r"\b(?P<op>cuFFT|cufft|rocFFT|hipFFT|pocketfft|MKL FFT)\b")),
    (
        "message",
        re.compile(
            r"(?<![\w.])(?:torch\.(?:nn\.functional\.|linalg\.|fft\.|special\.)?|F\.)(?P<op>_?[a-z]\w{0,60})(?![\w.])"
        ),
    ),
    (
        "message",
        re.compile(
            r"(?<![\w.])(?:jax\.lax\.(?:linalg\.)?|lax\.(?:linalg\.)?|jnp\.(?:linalg\.|fft\.)?|jax\.numpy\.(?:linalg\.|fft\.)?|jax\.nn\.)(?P<op>[a-z]\w{0,60})"
        ),
    ),
    (
        "message",
        re.compile(
            r"\b(?:operator|node|op|Op|OpType|op_type|op type)\s?[=:(]\s?"
            r"'?(?P<op>[A-Z][A-Za-z0-9]{1,40})'?\)?"
        ),
    ),
    ("message", re.compile(r"implementation for (?P<op>[A-Z][A-Za-z0-9]{1,40})\(\d+\)")),
    ("message", re.compile(r"\[Op:(?P<op>[A-Z]\w{1,60})\]")),
    (
        "message",
        re.compile(
            r"(?:primitive|[Ll]ayer|(?<!by )\bop|operator|operation|kernel|function) "
            r"[`'\"](?P<op>[A-Za-z_]\w{0,60})[`'\"]"
            r"|[`'\"](?P<op2>[a-z_]\w{0,60})[`'\"] (?:op|operation|primitive|kernel|layer)\b"
        ),
    ),
    ("message", re.compile(r"(?:Node: |\{\{node )[^=\n]{0,300}= (?P<op>[A-Z]\w{1,60})\[")),
    ("message", re.compile(r"`(?P<op>[A-Z][A-Za-z0-9]{2,60})` (?:does not|doesn't|has no|is not)")),
    ("message", re.compile(r"\bnode \((?:[^()\s]{0,300}/)?(?P<op>[A-Z][A-Za-z]{1,40})(?:_\d+)*\)")),
    ("message", re.compile(r"\bnode '(?:[^'\s]{0,300}/)?(?P<op>[A-Z][A-Za-z0-9]{1,40})(?:_\d+)*'")),
    ("message", re.compile(r"\bLayer (?P<op>[a-z][a-z0-9]{1,40}(?:_[a-z][a-z0-9]*){0,3})(?:_\d+)?:")),
    ("message", re.compile(r"(?<![\w.])tf\.(?:[a-z_]{1,30}\.){0,4}(?P<op>[a-z]\w{0,60})(?![\w.])")),
    ("catalog", re.compile(r"\bin function (?P<op>[a-z_]\w{1,60})")),
    ("message", re.compile(r"(?:Error|Exception): `(?P<op>[a-z_]\w{1,60})`")),
    ("message", re.compile(r"\bop (?P<op>[a-z][a-z0-9_]{1,40})(?= with | for | on | is |: )")),
    ("message", re.compile(r"\bsupport (?:the )?(?P<op>[a-z][a-z0-9_]{1,40}) op(?:eration|erator)?\b")),
    ("message", re.compile(r"(?<![\w.])(?P<op>[a-z][a-z0-9]*(?:_[a-z0-9]+)+) does not support\b")),
    (
        "message",
        re.compile(
            r"(?<![\w.])(?:transformer_engine\.pytorch|te|torch\.nn|nn|keras\.layers|tf\.keras\.layers|layers)"
            r"\.(?P<op>[A-Z][A-Za-z0-9]{2,40})(?![\w.])"
        ),
    ),
    ("prose", re.compile(r"\bthe (?P<op>[a-z_]\w{1,30}) (?:layer|op|operator|node|kernel)s?\b")),
    # a quoted word that is a catalog op's name ('matmul'), when nothing else names one
    ("quoted", re.compile(r"[`'\"](?P<op>[a-z][a-z0-9_]{1,40})[`'\"]")),
)
_CALL = re.compile(
    r"(?:(?<![\w.])(?:torch\.nn\.functional|torch\.linalg|torch\.fft|torch\.special|torch|F|jax\.lax\.linalg|lax\.linalg"
    r"|jax\.lax|lax|jnp\.linalg|jnp\.fft|jnp|jax\.numpy\.linalg|jax\.numpy|jax\.nn|jax\.scipy\.linalg"
    r"|tf\.linalg"
    r"|tf\.math|tf\.nn|tf|np\.linalg|np)\.(?P<op>_?[a-z]\w{0,60})|\.(?P<method>[a-z]\w{0,40}))\("
)


#: PyTorch ops named after what they do to a tensor, not after the catalog op they are
_ALIASES = {
    "_to_copy": "cast",
    "to_copy": "cast",
    "_to_dtype": "cast",
    "to": "cast",
    "logistic": "sigmoid",  # XLA's and ONNX's name of the sigmoid
    "astype": "cast",  # NumPy's and JAX's method
    "convert_element_type": "cast",  # jax.lax's cast
    "convert": "cast",  # XLA's, StableHLO's and MHLO's cast
    "dot_general": "matmul",  # XLA's and jax.lax's contraction
    "dot": "matmul",  # Triton's tl.dot / tt.dot, StableHLO's dot
    "cuFFT": "fft",
    "cufft": "fft",
    "rocFFT": "fft",
    "hipFFT": "fft",
    "pocketfft": "fft",
    "MKL FFT": "fft",
}


def _unknown_to_registry(prefix_text: str, raw: str) -> bool:
    """Whether ``raw``, written after a JAX or PyTorch module prefix, is no name of that framework's
    registries (``jnp.arrays`` in prose) and no catalog op either."""
    for prefixes, modules in PREFIX_REGISTRIES:
        if prefix_text.startswith(prefixes):
            names = registry_names(*modules)
            bare = {n.split("::")[-1] for n in names}
            return raw not in bare and _normalise(raw, None, "message") is None
    return False


def _normalise(raw: str, framework: str | None, where: str) -> str | None:
    """The catalog op of ``raw`` or None."""
    if raw in _ALIASES:
        return _ALIASES[raw]
    if where == "kernel":
        ops = torch_kernel_ops(raw)
        return ops[0] if ops else None
    if raw[:1].isupper():
        return tf_raw_op_catalog(raw)
    name = raw.removesuffix("_").split(".")[0]
    if framework in ("jax", "numpy", "tensorflow", "keras"):
        return op_for_function(name, "numpy") or op_for_function(name, "torch")
    # torch.bmm, torch.addmm: BLAS-named functions whose kernels carry the same stems
    return op_for_function(name, "torch") or op_for_function(name, "numpy") or TORCH_KERNEL_STEMS.get(name)


def tf_raw_op_catalog(raw: str) -> str | None:
    """The catalog op of a TensorFlow or ONNX op name: the op whose raw op it is, else one whose raw
    op ends the name (``FusedPadConv2D`` -> ``Conv2D`` -> conv2d), else one named like it (``Cast``).

    >>> tf_raw_op_catalog("FusedPadConv2D"), tf_raw_op_catalog("MatMul"), tf_raw_op_catalog("Cast")
    ('conv2d', 'matmul', 'cast')
    """
    from explorer.ops import catalog

    op, _ = catalog_ops_for_raw_op(raw)
    if op is not None:
        return op
    squeezed = {name.replace("_", ""): name for name in catalog()}
    if raw.lower() in squeezed:
        return squeezed[raw.lower()]  # BatchMatMul -> batch_matmul
    names = sorted({r for o in catalog().values() for r in o.tf_raw_ops if len(r) > 3}, key=len, reverse=True)
    for name in names:
        if raw.endswith(name):
            return catalog_ops_for_raw_op(name)[0]
    lower = raw.lower()
    return lower if lower in catalog() else None


def _is_dtype(name: str) -> bool:
    return bool(dtype_mentions(f"torch.{name}")) or name.startswith(
        ("float", "int", "uint", "bfloat", "complex")
    )


#: a line of Python code: an import, an assignment of a call, a call, a block header, a return
_CODE_LIKE = re.compile(
    r"\s*(?:>>> |\.\.\. )?(?:import |from \w|[\w.\[\], ]+ ?= ?[\w.]+\(|[\w.]+\(|with |for |if |def |return "
    r"|\w+ ?=)"
)
#: a frame line cut at its start by a trimmed paste (``...py", line 275, in test``)
_CUT_FRAME = re.compile(r"\", line \d+, in [\w<>]+\s*$")
_ERROR_WORDS = re.compile(r"Error|error|Exception|not supported|not implemented|[Uu]nsupported|failed|assert")


def _message_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of the lines that are not traceback frames or their code lines, nor user code
    (a fenced block's or a ``>>>`` line without an error word)."""
    spans = []
    offset = 0
    previous_frame = False
    fenced = False
    for line in text.splitlines(keepends=True):
        frame = bool(FRAME.match(line))
        if line.lstrip().startswith("```"):
            fenced = not fenced
        code = (
            (fenced or line.lstrip().startswith(">>>"))
            and _CODE_LIKE.match(line)
            and not _ERROR_WORDS.search(line)
        )
        frame = frame or bool(_CUT_FRAME.search(line))
        if not frame and not previous_frame and not code:
            spans.append((offset, offset + len(line)))
        previous_frame = frame
        offset += len(line)
    return spans


def _code_lines(text: str) -> list[tuple[int, str]]:
    """(offset, line) of each traceback code line (the line after a ``File "...", line N`` frame)."""
    out = []
    for frame in FRAME.finditer(text):
        start = text.find("\n", frame.end())
        if start < 0:
            continue
        end = text.find("\n", start + 1)
        line = text[start + 1 : end if end >= 0 else len(text)]
        if line.strip() and not FRAME.match(line):
            out.append((start + 1, line))
    return out


def read_op(
    text: str, framework: str | None, old_op: tuple[str | None, str | None] = (None, None)
) -> OpReading:
    """The op ``text`` names (see the module's docstring); ``old_op`` (raw, catalog) from a message
    pattern wins when it names one."""
    raw_old, cat_old = old_op
    if raw_old and sum(c.isalnum() for c in raw_old) < 2:
        raw_old = None  # a kernel named "_" names nothing
    if raw_old or cat_old:
        raw = raw_old or cat_old or ""
        called = _called_function(text)
        if called is not None and called.raw != raw and _shares_word(raw, called.raw or ""):
            return called  # the kernel of the function the traceback calls
        found = text.rfind(raw) if raw else -1
        if cat_old is None and raw[:1].isupper():
            cat_old = tf_raw_op_catalog(raw)
        return OpReading(raw, cat_old, "pattern", found, found + len(raw) if found >= 0 else -1)
    prose: OpReading | None = None
    quoted: OpReading | None = None
    for start, end in reversed(_message_spans(text)):
        line = text[start:end]
        for where, regex in _MESSAGE_OPS:
            for match in reversed(list(regex.finditer(line))):
                raw = (match.group("op") or match.groupdict().get("op2") or "").strip()
                if sum(c.isalnum() for c in raw) < 2:
                    continue  # a kernel named "_" names nothing
                leaf = raw.split(".")[-1] if where != "kernel" else raw
                if where == "named":
                    where = "message"  # the message names the op outright: load, asarray count
                elif leaf in _NOT_OPS or _is_dtype(leaf) or leaf.lower() in ("node", "name"):
                    continue
                if where == "message" and "." in raw:
                    raw = raw.split(".")[0]  # aten.mm.default -> mm
                group = "op" if match.group("op") else "op2"
                a, b = start + match.start(group), start + match.end(group)
                if where == "message" and _unknown_to_registry(match.group(0), raw):
                    continue
                if where == "function":
                    if raw in all_registry_names():
                        return OpReading(raw, _normalise(raw, framework, "message"), "message", a, b)
                    continue
                if where == "registry":
                    if raw in registry_names("onnx", "tf.raw_ops"):
                        return OpReading(raw, _normalise(raw, framework, where), "message", a, b)
                    continue
                if where == "quoted":
                    if quoted is None and raw in _catalog_names():
                        quoted = OpReading(raw, raw, "message", a, b)
                    continue
                if where == "catalog":
                    op = torch_kernel_ops(raw)
                    if op:
                        return OpReading(raw, op[0], where, a, b)
                    continue
                if where == "prose":
                    if prose is None and raw not in _PROSE_WORDS:
                        prose = OpReading(raw, _normalise(raw, framework, where), where, a, b)
                    continue
                if where == "kernel":
                    called = _called_function(text[:start])
                    if called is not None and _shares_word(raw, called.raw or ""):
                        return called  # the kernel of the function the traceback calls
                return OpReading(raw, _normalise(raw, framework, where), where, a, b)
    failing = _called_function(text)
    if failing is not None:
        return failing
    for offset, line in reversed(_code_lines(text)):
        for match in list(_CALL.finditer(line))[:1]:  # the outermost call: an argument's call is not the op
            method = match.group("method")
            raw = match.group("op") or method
            if raw in _NOT_OPS or _is_dtype(raw):
                continue
            catalog_op = _normalise(raw, framework, "code line")
            if method and catalog_op is None:
                continue  # a method call counts only when the catalog names it
            a = offset + match.start("op" if match.group("op") else "method")
            return OpReading(raw, catalog_op, "code line", a, a + len(raw))
    return _user_code_op(text, framework) or prose or quoted or OpReading()


@functools.cache
def _catalog_names() -> frozenset[str]:
    from explorer.ops import catalog

    return frozenset(catalog())


_TO_DTYPE = re.compile(r"\.to\((?P<args>[^()\n]{1,200})\)")
_FRAMEWORK_CALL = re.compile(
    r"(?<![\w.])(?:torch\.ops\.aten|torch\.nn\.functional|torch\.linalg|torch\.fft|torch|F|jax\.lax\.linalg|jax\.lax|lax|jnp\.linalg"
    r"|jnp\.fft|jnp|tf\.linalg|tf\.math|tf\.nn|tf)\.(?P<op>_?[a-z]\w{0,60})\("
)


def _shares_word(kernel: str, function: str) -> bool:
    """Whether a kernel's name shares a word of four letters or more with a function's
    (``_tunable_scaled_gemm`` and ``_scaled_mm``: ``scaled``)."""
    words = {w for w in function.lower().split("_") if len(w) >= 4}
    return bool(words & set(kernel.lower().split("_")))


def _called_function(text: str) -> OpReading | None:
    """The framework function called on the failing line: the last code line before the last error
    message (a traceback's deepest code line, or a pasted line just above the message), when its
    outermost call is a framework function (``torch._scaled_mm(``, ``jnp.linalg.qr(``)."""
    lines = text.splitlines(keepends=True)
    offset = len(text)
    offsets = []
    for line in reversed(lines):
        offset -= len(line)
        offsets.append((offset, line))
    seen_message = False
    for offset, line in offsets:
        stripped = line.strip()
        if not stripped or set(stripped) <= set("^~ `"):
            continue
        if re.match(r"[\w.]*(?:Error|Exception)\b", stripped):
            seen_message = True
            continue
        if not seen_message:
            continue
        match = _FRAMEWORK_CALL.search(line)
        if match is None or not _CODE_LIKE.match(line) or FRAME.match(line):
            return None
        raw = match.group("op")
        if raw in _NOT_OPS or _is_dtype(raw):
            return None
        a = offset + match.start("op")
        return OpReading(raw, _normalise(raw, None, "code line"), "failing line", a, a + len(raw))
    return None


def _user_code_op(text: str, framework: str | None) -> OpReading | None:
    """The op of the user's own code pasted with the error (a fenced block or ``>>>`` lines), last
    line first: a framework call of a catalog op."""
    lines: list[tuple[int, str]] = []
    offset = 0
    fenced = False
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced or line.lstrip().startswith(">>>"):
            lines.append((offset, line))
        offset += len(line)
    for offset, line in reversed(lines):
        for match in _TO_DTYPE.finditer(line):  # x.to(torch.float8_e4m3fn): a cast
            if dtype_mentions(match.group("args")):
                return OpReading(
                    "to", "cast", "user code", offset + match.start() + 1, offset + match.start() + 3
                )
        for match in _FRAMEWORK_CALL.finditer(line):
            raw = match.group("op")
            op = None if raw in _NOT_OPS or _is_dtype(raw) else _normalise(raw, framework, "user code")
            if op is not None:
                a = offset + match.start("op")
                return OpReading(raw, op, "user code", a, a + len(raw))
    return None
