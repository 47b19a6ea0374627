"""The parse itself: the text cleaned, the last recognised message found in it, and that message
read, by one reader per pattern, into a :class:`ParsedError`."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from explorer.analysis.error_text._dtype_names import TF_DATATYPE_ENUM, format_name, tf_dtype_name
from explorer.analysis.error_text._kernel_lists import _data_attr, _kernel_block, _node_attrs
from explorer.analysis.error_text._kind_readers import MORE_READERS, _torch_called
from explorer.analysis.error_text._op_names import (
    LAPACK_ROUTINES,
    _camel,
    _op_from_traceback,
    _tf_call_op,
    _torch_device,
    catalog_ops_for_raw_op,
    torch_kernel_ops,
)
from explorer.analysis.error_text._parsed import CPU_DEDUCTION, ParsedError, _line_of
from explorer.analysis.error_text._patterns import PATTERNS, Pattern
from explorer.analysis.error_text._structure import ErrorReading, read_error_text
from explorer.textsafety import strip_control

#: the largest error text read (bytes of UTF-8); a longer one is refused with a ValueError
MAX_TEXT_BYTES = 1_000_000
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
    names = {
        "tensorflow": "TensorFlow",
        "keras": "Keras",
        "torch": "PyTorch",
        "jax": "JAX",
        "jax or torch": "JAX/PyTorch",
        "xla": "XLA/LLVM",
        "onnxruntime": "ONNX Runtime",
    }
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
    parsed = _parse_cleaned(cleaned)
    if parsed is None:
        return None
    return _replace(parsed, reading=_structural(cleaned, parsed))


def read_text(text: str | bytes) -> ErrorReading:
    """The structural reading of any ``text`` (:func:`~explorer.analysis.error_text.read_error_text`):
    framework, library, dtypes with roles, device, op and kind, each with its evidence span; what a
    message pattern of :data:`PATTERNS` reads (op, kind) ranks first where one matches.

    >>> r = read_text("BFloat16 is not supported on MPS")
    >>> r.framework, r.library, r.dtype_names, r.device.type
    ('torch', 'mps', ('bfloat16',), 'mps')
    """
    cleaned = clean_text(text)
    return _structural(cleaned, _parse_cleaned(cleaned))


def _parse_cleaned(cleaned: str) -> ParsedError | None:
    found = _last_match(cleaned)
    if found is None:
        return None
    pattern, match = found
    return _READERS[pattern.kind](cleaned, match, pattern)


def _structural(cleaned: str, parsed: ParsedError | None) -> ErrorReading:
    return read_error_text(cleaned, parsed)


def _last_match(text: str) -> tuple[Pattern, re.Match[str]] | None:
    """The match that starts last, among those that no other match contains (the XLA message
    contains a "No registered 'X' OpKernel" message of its own).

    One sweep over the matches sorted by (start, -end): a match is inside another when a match
    sorted strictly before it ends after its start, so this stays linear in the number of matches
    (a pasted log may hold thousands)."""
    matches = sorted(
        ((p, m) for p in PATTERNS for m in p.regex.finditer(text)),
        key=lambda pm: (pm[1].start(), -pm[1].end()),
    )
    outer: tuple[Pattern, re.Match[str]] | None = None
    reach = -1  # the furthest end of the matches sorted strictly before the current key
    index = 0
    while index < len(matches):
        key = (matches[index][1].start(), -matches[index][1].end())
        same = index
        while same < len(matches) and (matches[same][1].start(), -matches[same][1].end()) == key:
            same += 1
        if reach <= key[0]:
            outer = matches[index]
        reach = max(reach, -key[1])
        index = same
    return outer


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
    attrs = _bracketed(text, match.start("attrs"))
    parsed = _tf_parsed(pattern, match, text, match.group("op"), attrs, device or "CPU", notes)
    return _with_list_meaning(parsed)


def _with_list_meaning(parsed: ParsedError) -> ParsedError:
    """``parsed`` with a note saying what its kernel list is (every kernel the build registers for
    the op, on every device type, not the devices tried) and which of them take the dtype."""
    if not parsed.listed_kernels or not parsed.dtype:
        return parsed
    per_device: dict[str, list[str]] = {}
    for device, constraints in parsed.listed_kernels:
        values = (
            constraints.get(parsed.attr, []) if parsed.attr else [t for v in constraints.values() for t in v]
        )
        per_device.setdefault(device, []).extend(values or ["any dtype"])
    listing = "; ".join(f"{d}: {', '.join(dict.fromkeys(v))}" for d, v in per_device.items())
    takes = [d for d, v in per_device.items() if parsed.dtype in v or "any dtype" in v]
    dtype = parsed.dtype
    if not takes:
        tail = f"none of them takes {dtype}, on any device"
    elif all(d.endswith("_JIT") for d in takes):
        tail = (
            f"only {' and '.join(takes)} take {dtype}, and an XLA device's kernel runs only inside a "
            "function compiled with jit_compile=True"
        )
    else:
        tail = f"{', '.join(takes)} take {dtype}, but no device of the machine that raised it did"
    note = (
        f"the list in the message is not the devices TensorFlow tried: it is every kernel this "
        f"TensorFlow build registers for {parsed.raw_op}, on every device type ({listing}); {tail}"
    )
    return _replace(parsed, notes=(*parsed.notes, note))


def _bracketed(text: str, start: int, limit: int = 4000) -> str:
    """The text from ``start`` (just after a ``[``) to its matching ``]``, nested brackets kept
    (``dilations=[1, 1, 1, 1], T=DT_HALF``), within one line and ``limit`` characters."""
    depth = 0
    for i, char in enumerate(text[start : start + limit]):
        if char == "\n":
            return text[start : start + i]
        if char == "[":
            depth += 1
        elif char == "]":
            if depth == 0:
                return text[start : start + i]
            depth -= 1
    return text[start : start + limit]


def _read_no_opkernel(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    attrs = _bracketed(text, match.start("attrs")) if match.group("attrs") is not None else ""
    after = text[match.end() : match.end() + 200_000]
    if not attrs:  # older releases give the attrs in the node line below the kernel list
        node = re.search(
            r"(?:Node: [^=\n]{0,500}= |\{\{node [^}\n]{0,500}\}\} = )"
            + match.group("op")
            + r"\[([^\]\n]{0,2000})\]",
            after,
        )
        attrs = node.group(1) if node else ""
    devices = re.search(r"Registered devices: \[([^\]\n]{0,500})\]", after[:2000])
    device = _explicit_tf_device(after[:2000])
    notes: tuple[str, ...] = ()
    if device is None and devices and "CPU" in devices.group(1).upper().replace(" ", "").split(","):
        device, notes = "CPU", (CPU_DEDUCTION,)
    return _with_list_meaning(_tf_parsed(pattern, match, text, match.group("op"), attrs, device, notes))


def _read_no_registered(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    after = text[match.end() : match.end() + 3000]
    node = re.match(
        r"\s{0,20}(?:\{\{node [^}\n]{0,500}\}\}|[\w/]{1,500})(?: = \w+\[([^\]\n]{0,2000})\])?", after
    )
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
    node = re.match(r"\s{0,20}\{\{node [^}\n]{0,500}\}\}(?: = \w+\[([^\]\n]{0,2000})\])?", after)
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
    device = _torch_device(kernel)
    called = _torch_called(text[: match.start()])
    notes: list[str] = []
    if device is not None:
        suffix = "_cuda" if device == "GPU" else "_cpu"
        notes.append(f"the kernel's name carries {suffix}: it is PyTorch's {device} kernel")
    else:
        notes.append("the kernel's name has no _cpu or _cuda part, so the text does not say the device")
    called_name, called_op = called if called else (None, None)
    from_frame = bool(re.search(r"/torch/(?:nn/)?functional\.py", text[: match.start()]))
    if called_name is not None and ((called_op or called_name) in ops or (ops and not from_frame)):
        called_name, called_op = None, None  # the kernel is the op called, or the call is a guess
    return ParsedError(
        framework="torch",
        kind=pattern.kind,
        raw_op=kernel,
        op=ops[0] if ops else None,
        dtype=format_name(dtype_text, "torch"),
        dtype_text=dtype_text,
        device=device,
        attr=None,
        other_ops=tuple(ops[1:]),
        message=_line_of(text, match),
        notes=tuple(notes),
        called=called_name,
        called_op=called_op,
    )


def _read_jax_fft(text: str, match: re.Match[str], pattern: Pattern) -> ParsedError:
    raw = match.group("fft").lower()
    from explorer.ops import catalog

    op = raw if raw in catalog() else None
    allowed_text = match.group("allowed") or match.group("allowed2") or ""
    dtype_text = match.group("dtype") or match.group("dtype2")
    allowed = tuple(format_name(a) or a for a in re.findall(r"\w+", allowed_text) if a != "or")
    return ParsedError(
        framework="jax",
        kind=pattern.kind,
        raw_op=match.group("fft"),
        op=op,
        dtype=format_name(dtype_text),
        dtype_text=dtype_text,
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
    raw, op, how = _jax_frame_op(text[: match.end()]) if is_jax else (None, None, "")
    if op is None:
        raw, op, how = _op_from_traceback(text[: match.end()], framework)
    device = None
    notes = [how] if how else []
    if is_jax and re.search(r"jaxlib/lapack\.py|lapack", text[max(0, match.start() - 20_000) : match.end()]):
        device = "CPU"
        notes.append(
            "the traceback goes through jaxlib's LAPACK bindings (jaxlib/lapack.py), which only the CPU "
            "backend uses: the CPU has no kernel"
        )
    return ParsedError(
        framework=framework,
        kind=f"{framework}_unsupported_dtype",
        raw_op=raw,
        op=op,
        dtype=format_name(dtype_text, framework),
        dtype_text=dtype_text,
        device=device,
        attr=None,
        message=_line_of(text, match),
        notes=tuple(notes),
    )


def _jax_frame_op(text: str) -> tuple[str | None, str | None, str]:
    """(function, catalog op, how) of the outermost jax.numpy / jax.scipy / lax function the
    traceback's frames show (``jax/_src/numpy/linalg.py", line 1373, in qr``)."""
    from explorer.analysis.error_text._op_names import op_for_function

    call = re.compile(
        r"(?<![\w.])(?:jax\.numpy|jnp|jax\.lax|lax|jax\.scipy|jsp)\.(?:linalg\.|fft\.|special\.)?(\w{1,100})\("
    )
    for line in reversed([line for line in text.splitlines() if "(" in line]):
        for name in call.findall(line):  # the outermost call of the line first
            op = op_for_function(name, "numpy")
            if op is not None:
                return name, op, f"the op is read from the call {name}(...) in the traceback"
    frame = r"/jax/_src/(?:numpy|lax|scipy)/[\w/]{0,100}\.py\", line \d{1,7}, in (\w{1,100})"
    frames = re.findall(frame, text)
    for name in frames:
        op = op_for_function(name, "numpy") or LAPACK_ROUTINES.get(name)
        if op is not None:
            return name, op, f"the op is read from the JAX frame of {name} in the traceback"
    return None, None, ""


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
    **MORE_READERS,
}
