"""The parse itself: the text cleaned, the last recognised message found in it, and that message
read, by one reader per pattern, into a :class:`ParsedError`."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from explorer.analysis.error_text._dtype_names import TF_DATATYPE_ENUM, format_name, tf_dtype_name
from explorer.analysis.error_text._kernel_lists import _data_attr, _kernel_block, _node_attrs
from explorer.analysis.error_text._op_names import (
    _camel,
    _op_from_traceback,
    _tf_call_op,
    _torch_device,
    catalog_ops_for_raw_op,
    torch_kernel_ops,
)
from explorer.analysis.error_text._patterns import PATTERNS, Pattern
from explorer.textsafety import strip_control

#: the largest error text read (bytes of UTF-8); a longer one is refused with a ValueError
MAX_TEXT_BYTES = 1_000_000
#: the longest matched line kept in :attr:`ParsedError.message`
MESSAGE_CHARS = 4000
#: what a TensorFlow error of "no device had a kernel" says about the device, as a note
CPU_DEDUCTION = (
    "the message names no device; TensorFlow raises it when no device of the machine has a "
    "kernel, and every machine has a CPU, so the CPU had none"
)


@dataclass(frozen=True)
class ParsedError:
    """What an error text says: the op, dtype and device it failed for, and the kernels it lists."""

    #: ``tensorflow``, ``torch`` or ``jax``
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

    @property
    def mode(self) -> str | None:
        """``xla`` for XLA compilation errors and XLA device types, ``eager`` for TensorFlow's
        eager placement errors, else None.

        >>> parse_error("Invalid type for Range half").mode
        'xla'
        """
        if self.kind.startswith("xla_") or (self.device or "").endswith("_JIT"):
            return "xla"
        if self.framework == "tensorflow" and self.device in ("CPU", "GPU"):
            return "eager"
        return None

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-ready): every field, kernels as ``{"device", "constraints"}``.

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
        }


# ---------------------------------------------------------------- reading the text


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def clean_text(text: str | bytes) -> str:
    """The text as parsed: bytes decoded as UTF-8 (bad bytes replaced), terminal colour codes and
    control characters removed (newlines and tabs kept).  ValueError above :data:`MAX_TEXT_BYTES`.

    >>> clean_text(b"\\x1b[1mCould not\\x00 find\\x1b[0m")
    'Could not find'
    """
    if isinstance(text, bytes | bytearray):
        size = len(text)
        text = bytes(text).decode("utf-8", errors="replace")
    elif isinstance(text, str):
        size = len(text.encode("utf-8", errors="replace"))
    else:
        raise TypeError(f"an error text must be str or bytes, got {type(text).__name__}")
    if size > MAX_TEXT_BYTES:
        raise ValueError(
            f"the error text is {size:,} bytes; at most {MAX_TEXT_BYTES:,} are read "
            "(paste the end of the traceback, where the error is)"
        )
    return strip_control(_ANSI.sub("", text), keep_newlines=True)


def looked_for() -> list[str]:
    """What :func:`parse_error` looks for, one line per pattern (for a "not recognised" message).

    >>> looked_for()[0].startswith("TensorFlow: Could not find device for node")
    True
    """
    names = {"tensorflow": "TensorFlow", "torch": "PyTorch", "jax": "JAX", "jax or torch": "JAX/PyTorch"}
    return [f"{names[p.framework]}: {p.looks_like}" for p in PATTERNS]


def parse_error(text: str | bytes) -> ParsedError | None:
    """The last recognised error in ``text``, or None when no pattern of :data:`PATTERNS` matches.

    ``text`` may be a whole traceback or log; it is cleaned by :func:`clean_text` (ValueError when
    longer than :data:`MAX_TEXT_BYTES`).

    >>> parse_error("Value for attr 'T' of bfloat16 is not in the list of allowed values: "
    ...             "double, float, half; NodeDef: {{node Qr}}").allowed
    ('float64', 'float32', 'float16')
    >>> parse_error("all good") is None
    True
    """
    cleaned = clean_text(text)
    found = _last_match(cleaned)
    if found is None:
        return None
    pattern, match = found
    return _READERS[pattern.kind](cleaned, match, pattern)


def _last_match(text: str) -> tuple[Pattern, re.Match[str]] | None:
    """The match that starts last, among those that no other match contains (the XLA message
    contains a "No registered 'X' OpKernel" message of its own)."""
    matches = [(p, m) for p in PATTERNS for m in p.regex.finditer(text)]

    def inside(m: re.Match[str]) -> bool:
        return any(
            o is not m and o.start() <= m.start() < o.end() and (o.start(), -o.end()) < (m.start(), -m.end())
            for _, o in matches
        )

    outer = [(p, m) for p, m in matches if not inside(m)]
    if not outer:
        return None
    return max(outer, key=lambda pm: pm[1].start())


def _line_of(text: str, match: re.Match[str]) -> str:
    start = text.rfind("\n", 0, match.start()) + 1
    end = text.find("\n", match.end())
    line = text[start : end if end >= 0 else len(text)].strip()
    return line[:MESSAGE_CHARS]


# ---------------------------------------------------------------- one reader per pattern


def _tf_parsed(
    pattern: Pattern,
    match: re.Match[str],
    text: str,
    raw_op: str | None,
    attrs: str,
    device: str | None,
    notes: tuple[str, ...] = (),
    dtype_text: str | None = None,
    attr: str | None = None,
    allowed: tuple[str, ...] = (),
    listed: bool = True,
) -> ParsedError:
    kernels, labelled = _kernel_block(text, match.start()) if listed else ([], 0)
    chosen = _data_attr(_node_attrs(attrs), kernels)
    if chosen is not None and dtype_text is None:
        attr, dtype_text = chosen
    op, others = catalog_ops_for_raw_op(raw_op)
    return ParsedError(
        framework="tensorflow",
        kind=pattern.kind,
        raw_op=raw_op,
        op=op,
        dtype=format_name(dtype_text) if dtype_text else None,
        dtype_text=dtype_text,
        device=device,
        attr=attr,
        listed_kernels=tuple(kernels),
        labelled_kernels=labelled,
        allowed=allowed,
        other_ops=others,
        message=_line_of(text, match),
        notes=notes,
    )


def _explicit_tf_device(text: str) -> str | None:
    found = re.findall(r"/device:(CPU|GPU):\d|/(cpu|gpu):\d", text)
    names = {(a or b).upper() for a, b in found}
    return names.pop() if len(names) == 1 else None


def _read_no_kernel_for_device(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    device = _explicit_tf_device(text[match.start() : match.end() + 2000])
    notes = () if device else (CPU_DEDUCTION,)
    return _tf_parsed(pattern, match, text, match.group("op"), match.group("attrs"), device or "CPU", notes)


def _read_no_opkernel(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    attrs = match.group("attrs") or ""
    after = text[match.end() : match.end() + 200_000]
    if not attrs:  # older releases give the attrs in the node line below the kernel list
        node = re.search(
            r"(?:Node: [^=\n]*= |\{\{node [^}\n]*\}\} = )" + match.group("op") + r"\[([^\]\n]*)\]", after
        )
        attrs = node.group(1) if node else ""
    devices = re.search(r"Registered devices: \[([^\]\n]*)\]", after[:2000])
    device = _explicit_tf_device(after[:2000])
    notes: tuple[str, ...] = ()
    if device is None and devices and "CPU" in devices.group(1).upper().split(","):
        device, notes = "CPU", (CPU_DEDUCTION,)
    return _tf_parsed(pattern, match, text, match.group("op"), attrs, device, notes)


def _read_no_registered(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    after = text[match.end() : match.end() + 3000]
    node = re.match(r"\s*(?:\{\{node [^}\n]*\}\}|[\w/]+)(?: = \w+\[([^\]\n]*)\])?", after)
    attrs = (node.group(1) or "") if node else ""
    return _tf_parsed(pattern, match, text, match.group("op"), attrs, match.group("device"))


def _read_attr_not_allowed(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    after = text[match.end() : match.end() + 3000]
    op = re.search(r"Op<name=(\w+);|\{\{node (\w+)\}\}|\[Op:(\w+)\]", after)
    raw_op = next((g for g in op.groups() if g), None) if op else None
    allowed = tuple(tf_dtype_name(t) for t in match.group("allowed").split(",") if t.strip())
    return _tf_parsed(
        pattern,
        match,
        text,
        raw_op,
        "",
        None,
        dtype_text=match.group("dtype"),
        attr=match.group("attr"),
        allowed=allowed,
        listed=False,
    )


def _read_param_not_allowed(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    before = text[: match.start()]
    frames = re.findall(r"gen_\w+_ops\.py\", line \d+, in (\w+)", before)
    raw_op: str | None
    if frames:
        raw_op = _camel(frames[-1])
        notes: tuple[str, ...] = (f"the raw op is read from the traceback (gen_*_ops function {frames[-1]})",)
    else:
        raw_op, call = _tf_call_op(before)
        notes = (f"the raw op is read from the call {call}(...) in the traceback",) if raw_op else ()
    allowed = tuple(tf_dtype_name(t) for t in match.group("allowed").split(",") if t.strip())
    return _tf_parsed(
        pattern,
        match,
        text,
        raw_op,
        "",
        None,
        notes,
        dtype_text=match.group("dtype"),
        allowed=allowed,
        listed=False,
    )


def _read_xla_unsupported_op(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    after = text[match.end() : match.end() + 3000]
    node = re.match(r"\s*\{\{node [^}\n]*\}\}(?: = \w+\[([^\]\n]*)\])?", after)
    attrs = (node.group(1) or "") if node else ""
    return _tf_parsed(pattern, match, text, match.group("op"), attrs, match.group("device"))


def _read_xla_unsupported_dtype(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    parsed = _tf_parsed(pattern, match, text, match.group("op"), match.group("attrs"), None, listed=False)
    if parsed.dtype is None and int(match.group("enum")) in TF_DATATYPE_ENUM:
        name = TF_DATATYPE_ENUM[int(match.group("enum"))]
        return _replace(parsed, dtype=format_name(name), dtype_text=f"dtype{match.group('enum')}")
    return parsed


def _read_xla_invalid_type(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    return _tf_parsed(
        pattern, match, text, match.group("op"), "", None, dtype_text=match.group("dtype"), listed=False
    )


def _read_torch_not_implemented(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    kernel = match.group("kernel") + (match.group("kernel2") or "")
    ops = torch_kernel_ops(kernel)
    dtype_text = match.group("dtype")
    return ParsedError(
        framework="torch",
        kind=pattern.kind,
        raw_op=kernel,
        op=ops[0] if ops else None,
        dtype=format_name(dtype_text, "torch"),
        dtype_text=dtype_text,
        device=_torch_device(kernel),
        attr=None,
        other_ops=tuple(ops[1:]),
        message=_line_of(text, match),
    )


def _read_jax_fft(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    raw = match.group("fft").lower()
    from explorer.ops import catalog

    op = raw if raw in catalog() else None
    allowed = tuple(format_name(a) or a for a in re.findall(r"\w+", match.group("allowed")) if a != "or")
    return ParsedError(
        framework="jax",
        kind=pattern.kind,
        raw_op=match.group("fft"),
        op=op,
        dtype=format_name(match.group("dtype")),
        dtype_text=match.group("dtype"),
        device=None,
        attr=None,
        allowed=allowed,
        message=_line_of(text, match),
    )


def _read_unsupported_dtype(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    dtype_text = match.group("dtype")
    context = text[max(0, match.start() - 300) : match.end() + 50]
    torch_spelling = dtype_text[:1].isupper() or "torch." in match.group(0)  # Half, BFloat16, torch.float16
    is_jax = bool(re.search(r"KeyError\(<class|ml_dtypes|jaxlib|jax[./]", context)) or (
        not torch_spelling and "torch" not in text
    )
    framework = "jax" if is_jax else "torch"
    raw, op, how = _op_from_traceback(text[: match.end()], framework)
    return ParsedError(
        framework=framework,
        kind=f"{framework}_unsupported_dtype",
        raw_op=raw,
        op=op,
        dtype=format_name(dtype_text, framework),
        dtype_text=dtype_text,
        device=None,
        attr=None,
        message=_line_of(text, match),
        notes=(how,) if how else (),
    )


def _replace(parsed: ParsedError, **changes: Any) -> ParsedError:
    from dataclasses import replace

    return replace(parsed, **changes)


_READERS: dict[str, Callable[[str, re.Match[str], Pattern], ParsedError]] = {
    "no_kernel_for_device": _read_no_kernel_for_device,
    "no_opkernel_registered": _read_no_opkernel,
    "xla_unsupported_op": _read_xla_unsupported_op,
    "no_registered_kernel": _read_no_registered,
    "attr_not_allowed": _read_attr_not_allowed,
    "param_not_allowed": _read_param_not_allowed,
    "xla_unsupported_dtype": _read_xla_unsupported_dtype,
    "xla_invalid_type": _read_xla_invalid_type,
    "torch_not_implemented": _read_torch_not_implemented,
    "jax_fft_dtype": _read_jax_fft,
    "unsupported_dtype": _read_unsupported_dtype,
}
