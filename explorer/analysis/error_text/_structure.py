"""The structural reading of any error text (:func:`read_error_text`): framework and library,
dtypes with their roles, device, op and kind, each with the span of text it was read from.

It reads tokens, not whole messages: paths and module names for the library
(:mod:`._libraries`), a dtype lexicon (:mod:`._lexicon`), a device lexicon and the GPU model table
(:mod:`._device`), op candidates ranked by where they appear (the error message before the code
lines of a traceback, those before frame names), and the kind from the message's words.  Whatever
cannot be read is None and listed in :attr:`ErrorReading.unknown`.

>>> r = read_error_text("RuntimeError: Input type (c10::Half) and bias type (float) should be the same")
>>> r.framework, r.kind, [(d.name, d.role) for d in r.dtypes]
('torch', 'dtype_mismatch', [('float16', 'input'), ('float32', 'bias')])
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from explorer.analysis.error_text._device import DeviceReading, read_device
from explorer.analysis.error_text._lexicon import dtype_mentions, spelling_framework
from explorer.analysis.error_text._libraries import FRAME, read_library_spans
from explorer.analysis.error_text._op_reading import OpReading, read_op
from explorer.analysis.error_text._parsed import CPU_DEDUCTION

if TYPE_CHECKING:
    from explorer.analysis.error_text._parsed import ParsedError

Span = tuple[int, int, str]

#: how many characters, from the end of a text, are read by structure (a paste's error is at its end)
STRUCTURE_CHARS = 32_768
#: how many characters, from the end, the kind's words are counted in
KIND_CHARS = 8000
#: the kinds :func:`read_error_text` tells apart
KINDS: tuple[str, ...] = (
    "missing_kernel",
    "hardware_gate",
    "dtype_mismatch",
    "lowering_refused",
    "quantization_constraint",
    "conversion_error",
    "loss_scaling",
    "overflow_nan",
    "other",
)
#: the old reader's kinds (ParsedError.kind) as structural kinds
OLD_KINDS: dict[str, str] = {
    "no_kernel_for_device": "missing_kernel",
    "no_opkernel_registered": "missing_kernel",
    "xla_unsupported_op": "lowering_refused",
    "no_registered_kernel": "missing_kernel",
    "attr_not_allowed": "missing_kernel",
    "param_not_allowed": "missing_kernel",
    "xla_unsupported_dtype": "lowering_refused",
    "xla_invalid_type": "lowering_refused",
    "torch_not_implemented": "missing_kernel",
    "jax_fft_dtype": "missing_kernel",
    "torch_unsupported_dtype": "missing_kernel",
    "jax_unsupported_dtype": "missing_kernel",
    "tf_dtype_mismatch": "dtype_mismatch",
    "tf_input_type_mismatch": "dtype_mismatch",
    "tf_conversion_dtype": "dtype_mismatch",
    "jax_dtype_mismatch": "dtype_mismatch",
    "torch_dtype_mismatch": "dtype_mismatch",
    "keras_mixed_precision_api": "loss_scaling",
    "llvm_cannot_select": "lowering_refused",
    "xla_unsupported_type": "lowering_refused",
    "xla_mixed_precision": "dtype_mismatch",
    "mlir_unsupported_conversion": "lowering_refused",
    "jax_constant_lowering": "lowering_refused",
    "ort_kernel_not_supported": "missing_kernel",
    "ort_no_implementation": "missing_kernel",
}


def _words(*alternatives: str) -> re.Pattern[str]:
    """One case-insensitive regular expression matching any of ``alternatives``."""
    return re.compile("|".join(alternatives), re.IGNORECASE)


#: (kind, weight, words) — the message's words that say what kind of error it is
_KIND_WORDS: tuple[tuple[str, float, re.Pattern[str]], ...] = (
    (
        "loss_scaling",
        5,
        _words(
            r"unscale",
            r"inf checks were recorded",
            r"GradScaler",
            r"grad_scaler",
            r"loss[ _]scal",
            r"LossScale",
            r"scaler\.",
            r"Current loss scale",
            r"minimum loss scale",
            r"cannot decrease scale",
        ),
    ),
    (
        "overflow_nan",
        3,
        _words(
            r"\bnan\b",
            r"\binf\b",
            r"overflow",
            r"underflow",
            r"non-finite",
            r"not finite",
            r"isfinite",
            r"\bNaN\b",
            r"\bInf\b",
        ),
    ),
    (
        "hardware_gate",
        4,
        _words(
            r"compute capability",
            r"cuda capability",
            r"(?:on|for) (?:this|the|your) (?:CPU|platform|processor|machine|hardware)",
            r"the platform with",
            r"hardware support",
            r"native (?:\w+ )?support",
            r"(?:cpu|CPU) support",
            r"needs? the (?:cpu|CPU)",
            r"(?:only )?supported (?:on|by) [^.\n]{0,40}(?:GPU|device|architecture)s?\b",
            r"(?:GPU|device|hardware)\b[^.\n]{0,60}(?:does not|doesn't|cannot) support",
            r"(?:only )?supports? \w+ (?:GPUs|devices) or (?:newer|later|above)",
            r"\bISA\b",
            r"\bsm_\d{2,3}",
            r"\bSM ?\d{2,3}",
            r"architecture",
            r"\bHopper\b",
            r"\bAda\b",
            r"\bBlackwell\b",
            r"Ampere",
            r"macOS \d",
            r"MacOS \d",
            r"no kernel image",
            r"device does not support",
            r"GPU does not support",
            r"not supported (?:on|by) (?:this|your|the current) (?:device|GPU|gpu|hardware|platform)",
            r"requires? (?:a )?(?:newer|GPU)",
            r"hardware",
        ),
    ),
    (
        "dtype_mismatch",
        4,
        _words(
            r"same dtype",
            r"Unexpected input data type",
            r"Actual: .{0,60}expected",
            r"incompatible with the layer",
            r"expected [^,\n]{1,40}, found",
            r"should be the same",
            r"must be the same",
            r"must have the same",
            r"does not match",
            r"doesn't match",
            r"mismatch",
            r"but found",
            r"expected scalar type",
            r"[Pp]romot",
            r"!=",
            r"type promotion",
            r"incompatible (?:d?types?)",
            r"different dtypes",
            r"expected .{1,40} but got",
        ),
    ),
    (
        "lowering_refused",
        3,
        _words(
            r"lower",
            r"legaliz",
            r"MLIR",
            r"\bLLVM\b",
            r"Triton",
            r"triton",
            r"inductor",
            r"CompilationError",
            r"compil",
            r"codegen",
            r"Pallas",
            r"Mosaic",
            r"not supported in this architecture",
            r"\bXLA\b",
            r"\bHLO\b",
        ),
    ),
    (
        "quantization_constraint",
        4,
        _words(
            r"quantiz",
            r"block[_ ]?size",
            r"blocksize",
            r"group[_ ]size",
            r"divisible",
            r"multiple of",
            r"dtype policy",
            r"dtype_policy",
            r"scal(?:e|ing) (?:factor|recipe)",
            r"recipe",
        ),
    ),
    (
        "conversion_error",
        3,
        _words(
            r"convert",
            r"conversion",
            r"export",
            r"onnx",
            r"ONNX",
            r"\bcast\b",
            r"Cannot (?:cast|convert)",
            r"Type Error: Type",
            r"not supported on (?:the )?(?:MPS|TPU|XPU|DirectML)",
            r"doesn't support float",
            r"does not support (?:the )?(?:float|bfloat|half|fp)",
        ),
    ),
    (
        "missing_kernel",
        4,
        _words(
            r"not implemented",
            r"NotImplemented",
            r"No OpKernel",
            r"Could not find an implementation",
            r"Could not run '",
            r"no kernel",
            r"not supported for",
            r"unsupported (?:d?type|scalar)",
            r"Unsupported dtype",
            r"not compiled with",
            r"Could not find device",
            r"no implementation",
            r"Could not find a kernel",
            r"kernel is not registered",
            r"no supported kernel",
            r"have a kernel",
            r"kernels? (?:registered|for)",
            r"Could not find any implementation",
            r"(?:Failed|Unable) to find (?:a |any )?kernel",
            r"No loop matching the specified signature",  # NumPy's ufunc without a loop for the dtype
            r"UnsupportedDType",
            r"(?:doesn't|does not) support tensors? of type",
            r"not currently implemented for",
        ),
    ),
)


@dataclass(frozen=True)
class DtypeRole:
    """One dtype a text involves, with the role it plays where two meet."""

    #: explorer / numpy name
    name: str
    #: the spelling as written
    text: str
    #: input | weight | bias | other | from | to | expected | got | None (no role stated)
    role: str | None
    #: offsets of :attr:`text` in the text read
    start: int
    end: int

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields."""
        return {"name": self.name, "text": self.text, "role": self.role, "span": [self.start, self.end]}


@dataclass(frozen=True)
class ErrorReading:
    """What a text says, read by structure; each fact with the span it came from."""

    #: top framework: torch | tensorflow | keras | jax | onnxruntime | tensorrt | numpy | None
    framework: str | None
    #: the library that raised it (torchao, transformer_engine, triton, xla, mps, ...), None when not told
    library: str | None
    #: every dtype the text involves, in order of first mention, one entry per name
    dtypes: tuple[DtypeRole, ...]
    device: DeviceReading
    op: OpReading
    #: one of :data:`KINDS`
    kind: str
    #: (start, end, text) per fact: framework, library, kind
    evidence: dict[str, Span] = field(default_factory=dict)
    #: format families named without a member (``FP8``, ``fp4``): ``float8``, ``float4``, ``int4``
    families: tuple[str, ...] = ()

    @property
    def dtype_names(self) -> tuple[str, ...]:
        """The dtypes' explorer names, in order."""
        return tuple(d.name for d in self.dtypes)

    @property
    def unknown(self) -> tuple[str, ...]:
        """The facts the text did not give: framework, library, op, dtype, device."""
        missing = []
        for name, value in (
            ("framework", self.framework),
            ("library", self.library),
            ("op", self.op.raw or self.op.name),
            ("dtype", self.dtypes),
            ("device", self.device.type),
        ):
            if not value:
                missing.append(name)
        return tuple(missing)

    @property
    def empty(self) -> bool:
        """Whether no framework, no dtype and no device was read."""
        return self.framework is None and not self.dtypes and self.device.type is None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields."""
        return {
            "framework": self.framework,
            "library": self.library,
            "dtypes": [d.to_dict() for d in self.dtypes],
            "device": self.device.to_dict(),
            "op": self.op.to_dict(),
            "kind": self.kind,
            "unknown": list(self.unknown),
            "evidence": {k: list(v) for k, v in self.evidence.items()},
            "families": list(self.families),
        }


_FAMILY_WORDS = re.compile(r"(?<![\w.])(?:(?P<f8>fp8|float8)|(?P<f4>fp4|float4)|(?P<i4>int4))(?![\w])", re.I)


def _families(text: str) -> tuple[str, ...]:
    """The format families ``text`` names as a word (``FP8 execution``, ``float8``)."""
    names = {"f8": "float8", "f4": "float4", "i4": "int4"}
    found = [names[m.lastgroup] for m in _FAMILY_WORDS.finditer(text) if m.lastgroup]
    return tuple(dict.fromkeys(found))


_PATHLIKE = re.compile(
    r"(?<![\w.~/\\-])(?:[A-Za-z]:)?(?:[\w.~-]{0,200}[/\\]){2,64}[\w.-]{0,200}|File \"[^\"\n]{1,500}\""
)


def masked_paths(text: str) -> str:
    """``text`` with file paths blanked (same length, offsets kept): ``torch/cuda/amp/grad_scaler.py``
    names a module, not the device or a dtype."""
    return _PATHLIKE.sub(lambda m: " " * len(m.group(0)), text)


_ROLE_WORDS = re.compile(
    r"\b(?P<role>input|weight|bias|mat1|mat2|m1|m2|self|other|expected|found|got|from|to|source|target"
    r"|lhs|rhs|scale)s?\b[^.\n]{0,18}$",
    re.I,
)
_ROLE_NAMES = {"m1": "mat1", "m2": "mat2", "lhs": "input", "rhs": "other", "source": "from", "target": "to"}


def _roles(text: str, mentions: list[Any]) -> list[str | None]:
    """The role of each mention where two dtypes meet: the nearest role word before it on its line
    (``Input type (X) and bias type (Y)``; ``from X to Y``; ``expected X but found Y``)."""
    roles: list[str | None] = []
    for i, m in enumerate(mentions):
        line_start = max(
            text.rfind("\n", max(0, m.start - 200), m.start) + 1, mentions[i - 1].end if i else 0
        )
        found = _ROLE_WORDS.search(text[line_start : m.start])
        role = found.group("role").lower() if found else None
        roles.append(_ROLE_NAMES.get(role, role) if role else None)
    return roles


#: a code generator's own words: what it refuses is a lowering, even for a target's architecture
_COMPILER = re.compile(r"\bptxas\b|\bPTX\b|\bTriton\b|\bMLIR\b|\bLLVM ERROR\b")


def _below(own: str | None, required: str | None) -> bool:
    """Whether version ``own`` ("8.6", "13.6") is below ``required`` ("9.0", "14"); False when either
    is unknown."""
    if not own or not required:
        return False
    try:
        return tuple(int(p) for p in own.split(".")) < tuple(int(p) for p in required.split("."))
    except ValueError:
        return False


def _kind(
    text: str, message: str, old_kind: str | None, has_cc: bool, device: DeviceReading
) -> tuple[str, Span | None]:
    if old_kind in OLD_KINDS and OLD_KINDS[old_kind] != "missing_kernel":
        return OLD_KINDS[old_kind], None
    if _below(device.compute_capability, device.required_compute_capability) or _below(
        device.macos, device.required_macos
    ):
        return "hardware_gate", None  # the device's own version is below the one the text requires
    scores: dict[str, float] = {}
    spans: dict[str, Span] = {}
    base = max(0, len(text) - KIND_CHARS)
    tail = text[base:]  # the words near the end, where the error is
    for kind, weight, regex in _KIND_WORDS:
        said = len(regex.findall(message[-2000:]))
        if said:
            scores[kind] = scores.get(kind, 0.0) + weight * 2.0 * said
        for match in regex.finditer(tail):
            scores[kind] = scores.get(kind, 0.0) + weight * 0.5
            if kind not in spans:
                spans[kind] = (base + match.start(), base + match.end(), match.group(0))
    if has_cc:
        scores["hardware_gate"] = scores.get("hardware_gate", 0.0) + 10
    if old_kind in OLD_KINDS:
        scores[OLD_KINDS[old_kind]] = scores.get(OLD_KINDS[old_kind], 0.0) + 10
    if not scores:
        return "other", None
    best = max(scores, key=lambda k: scores[k])
    return best, spans.get(best)


def _last_message(text: str) -> str:
    """The last error message: from the last line naming an exception (``XError: ...``) to the end,
    else the last non-empty lines."""
    lines = [line for line in text.splitlines() if line.strip() and not FRAME.match(line)]
    for i in range(len(lines) - 1, -1, -1):
        if re.match(r"\s*[\w.]*(?:Error|Exception|Warning|error|Failure)\b[:(]", lines[i]):
            return "\n".join(lines[i : i + 6])
    return "\n".join(lines[-4:])


_TORCH_WORDS = re.compile(r"\bunscale|\bAMP\b|\bDNNL\b|\bautocast\b|\bCUDA out of memory")


def _framework_fallback(
    text: str, mentions: list[Any], device: DeviceReading
) -> tuple[str | None, Span | None]:
    """The framework when no path, module or library word names one: the style of its dtype
    spellings (``c10::Half``, ``'BFloat16'`` are PyTorch's), PyTorch's own words (``autocast``,
    ``unscale``), or the device (Apple's MPS backend is PyTorch's)."""
    for mention in mentions:
        framework = spelling_framework(mention)
        if framework is not None:
            return framework, (mention.start, mention.end, mention.text)
    match = _TORCH_WORDS.search(text)
    if match:
        return "torch", (match.start(), match.end(), match.group(0))
    if device.type == "mps":
        return "torch", device.evidence.get("type")
    return None, None


def _shifted(reading: ErrorReading, base: int) -> ErrorReading:
    """``reading`` with every offset moved on by ``base`` (it was read from ``text[base:]``)."""
    from dataclasses import replace

    def span(s: Span) -> Span:
        return (s[0] + base, s[1] + base, s[2])

    op = reading.op
    return replace(
        reading,
        dtypes=tuple(replace(d, start=d.start + base, end=d.end + base) for d in reading.dtypes),
        device=replace(reading.device, evidence={k: span(v) for k, v in reading.device.evidence.items()}),
        op=replace(op, start=op.start + base, end=op.end + base) if op.start >= 0 else op,
        evidence={k: span(v) for k, v in reading.evidence.items()},
    )


#: formats the reading leaves out, as the corpus schema does (tests/data/error_corpus/README.md):
#: XLA's IEEE-style F8E4M3 and F8E3M4 and Graphcore's E4M3B11FNUZ, which it has no name for
OUTSIDE_SCHEMA = frozenset(["float8_e4m3", "float8_e3m4", "float8_e4m3b11fnuz"])


def read_error_text(text: str, hint: ParsedError | None = None) -> ErrorReading:
    """Read ``text`` (already cleaned) by structure.  ``hint`` is what a message pattern of
    :data:`~explorer.analysis.error_text.PATTERNS` read, when one matched: its op and kind rank
    first, and its framework and dtype fill what the structure leaves unread (the pattern knows
    whose message it is; XLA's enum numbers name a dtype no spelling gives).

    >>> r = read_error_text("RuntimeError: torch._scaled_mm is only supported on CUDA devices with "
    ...                     "compute capability >= 9.0 or 8.9, or ROCm MI300+ (on an RTX 3090)")
    >>> r.op.raw, r.device.type, r.device.compute_capability, r.kind
    ('_scaled_mm', 'cuda', '8.6', 'hardware_gate')
    """
    if len(text) > STRUCTURE_CHARS:  # the error is at the end; offsets are given in the whole text
        base = len(text) - STRUCTURE_CHARS
        return _shifted(read_error_text(text[base:], hint), base)
    old_kind = hint.kind if hint else None
    old_op = (hint.raw_op, hint.op or hint.called_op) if hint else (None, None)
    if old_kind == "xla_unsupported_type":
        old_op = (None, None)  # its "raw op" is XLA's type-conversion function, not an op of the model
    masked = masked_paths(text)
    framework, library, evidence = read_library_spans(text)
    device = read_device(masked)
    mentions = dtype_mentions(masked)
    roles = _roles(masked, mentions)
    dtypes: list[DtypeRole] = []
    seen: set[str] = set()
    for mention, role in zip(mentions, roles, strict=True):
        if mention.name in seen or mention.name in OUTSIDE_SCHEMA:
            continue
        seen.add(mention.name)
        dtypes.append(DtypeRole(mention.name, mention.text, role, mention.start, mention.end))
    if hint is not None and hint.dtype and hint.dtype not in seen | OUTSIDE_SCHEMA and hint.dtype_text:
        at = text.lower().rfind(hint.dtype_text.lower())  # -1: read from an enum number, not a spelling
        if at >= 0:
            said = text[at : at + len(hint.dtype_text)]
            dtypes.append(DtypeRole(hint.dtype, said, None, at, at + len(said)))
    if device.type is None and hint is not None and hint.device and CPU_DEDUCTION not in hint.notes:
        # the pattern read the device from what the structure does not weigh (jaxlib's LAPACK frames)
        kind_of = {"CPU": "cpu", "XLA_CPU_JIT": "cpu", "GPU": "cuda", "XLA_GPU_JIT": "cuda"}.get(hint.device)
        if kind_of is not None:
            from dataclasses import replace

            device = replace(device, type=kind_of)
    message = _last_message(text)
    op = read_op(text, framework, old_op)
    kind, kind_span = _kind(
        text,
        message,
        old_kind,
        bool(device.required_compute_capability or device.required_macos or device.macos or device.isa),
        device,
    )
    if kind in ("hardware_gate", "other") and (
        library in ("triton", "xla") or _COMPILER.search(text[-KIND_CHARS:])
    ):
        kind, kind_span = "lowering_refused", None  # a compiler refused the type (for this target)
    if kind_span:
        evidence["kind"] = kind_span
    if (
        hint is not None
        and hint.framework != "xla"
        and (
            framework is None
            or (framework in ("tensorflow", "keras") and hint.framework in ("tensorflow", "keras"))
        )
    ):
        framework = hint.framework  # the matched pattern is that framework's own message
        library = library or framework
    if framework is None:
        framework, how = _framework_fallback(masked, mentions, device)
        if how is not None:
            evidence["framework"] = how
            if library is None:
                library = "mps" if device.type == "mps" else framework
                evidence["library"] = how
    return ErrorReading(framework, library, tuple(dtypes), device, op, kind, evidence, _families(masked))
