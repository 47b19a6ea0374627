"""What a parse returns: :class:`ParsedError`, the facts one error text gives."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from explorer.analysis.error_text._structure import ErrorReading

#: the longest matched line kept in :attr:`ParsedError.message`
MESSAGE_CHARS = 4000
#: what a TensorFlow error of "no device had a kernel" says about the device, as a note
CPU_DEDUCTION = (
    "the message does not say which device the op was placed on; TensorFlow raises it only when "
    "no device of the machine has a kernel for the node, and every machine has a CPU, so the CPU "
    "had none"
)


@dataclass(frozen=True)
class ParsedError:
    """What an error text says: the op, dtype and device it failed for, and the kernels it lists."""

    #: ``tensorflow``, ``keras``, ``torch``, ``jax``, ``xla`` (XLA or LLVM compiling, whichever
    #: framework drove it) or ``onnxruntime``
    framework: str
    #: which of :data:`PATTERNS` matched
    kind: str
    #: the framework's op or kernel name as the message gives it (``Range``, ``add_cpu/sub_cpu``)
    raw_op: str | None
    #: the catalog op (None when the catalog has none for it)
    op: str | None
    #: the dtype as an explorer format name (None: not a floating format, or not named)
    dtype: str | None
    #: the dtype as the message spells it (``DT_HALF``, ``Half``, ``f16``)
    dtype_text: str | None
    #: ``CPU``, ``GPU``, ``XLA_CPU_JIT``, ``XLA_GPU_JIT`` (or another device type the message
    #: names); None when the text does not say
    device: str | None
    #: the type attribute the dtype was given for (``Tidx``, ``T``), TensorFlow only
    attr: str | None
    #: the kernels the message lists: ``(device type, {attr: [dtype names]})``, labelled kernels left out
    listed_kernels: tuple[tuple[str, dict[str, list[str]]], ...] = ()
    #: how many listed kernels carried a label (chosen only when a node asks for the label)
    labelled_kernels: int = 0
    #: the dtypes the message says are allowed (attr_not_allowed, param_not_allowed, jax_fft_dtype)
    allowed: tuple[str, ...] = ()
    #: other catalog ops the name stands for (``add_cpu/sub_cpu``: add and sub; a raw op the
    #: catalog runs inside other ops)
    other_ops: tuple[str, ...] = ()
    #: the line of the text that matched (control characters removed, at most MESSAGE_CHARS characters)
    message: str = ""
    #: what was deduced rather than read, in words
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: the function the traceback shows being called, where the failing kernel belongs to
    #: another op (``local_response_norm`` for the kernel ``avg_pool3d_out_frame``)
    called: str | None = None
    #: the catalog op of :attr:`called` (None: the catalog has none)
    called_op: str | None = None
    #: the operands' dtypes of a dtype mismatch (explorer names, the message's order)
    operand_dtypes: tuple[str, ...] = ()
    #: the ONNX Runtime execution provider (``CPUExecutionProvider``) the message names
    provider: str | None = None
    #: the structural reading of the whole text (library, dtypes with roles, device details, the
    #: structural kind, evidence spans); None only for a ParsedError built by hand
    reading: ErrorReading | None = None

    @property
    def mode(self) -> str | None:
        """``xla`` for XLA compilation errors and XLA device types, ``eager`` for TensorFlow's
        eager placement errors, else None.

        >>> from explorer.analysis.error_text import parse_error
        >>> parse_error("Invalid type for Range half").mode
        'xla'
        """
        if self.kind.startswith("xla_") or self.framework == "xla" or (self.device or "").endswith("_JIT"):
            return "xla"
        if self.framework == "tensorflow" and self.device in ("CPU", "GPU"):
            return "eager"
        return None

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-ready): every field, kernels as ``{"device", "constraints"}``.

        >>> from explorer.analysis.error_text import parse_error
        >>> parse_error("Invalid type for Range half").to_dict()["dtype"]
        'float16'
        """
        return {
            "framework": self.framework,
            "kind": self.kind,
            "raw_op": self.raw_op,
            "op": self.op,
            "dtype": self.dtype,
            "dtype_text": self.dtype_text,
            "device": self.device,
            "mode": self.mode,
            "attr": self.attr,
            "listed_kernels": [{"device": d, "constraints": c} for d, c in self.listed_kernels],
            "labelled_kernels": self.labelled_kernels,
            "allowed": list(self.allowed),
            "other_ops": list(self.other_ops),
            "message": self.message,
            "notes": list(self.notes),
            "called": self.called,
            "called_op": self.called_op,
            "operand_dtypes": list(self.operand_dtypes),
            "provider": self.provider,
            "reading": self.reading.to_dict() if self.reading is not None else None,
        }


def _line_of(text: str, match: re.Match[str]) -> str:
    start = text.rfind("\n", 0, match.start()) + 1
    end = text.find("\n", match.end())
    line = text[start : end if end >= 0 else len(text)].strip()
    return line[:MESSAGE_CHARS]
