"""Read a framework's error text: which op, which dtype, which device, and what the message itself lists.

Pure parsing: no framework is imported.  :func:`parse_error` finds the *last* error in a pasted
text (a traceback, a Keras "Exception encountered when calling ..." wrapper, a log) that matches
one of :data:`PATTERNS`, and returns a :class:`ParsedError`, or None when nothing matches
(:func:`looked_for` says what was looked for).

>>> p = parse_error("NotFoundError: Could not find device for node: {{node Range}} = Range[Tidx=DT_HALF]")
>>> p.framework, p.raw_op, p.op, p.dtype, p.device, p.kind
('tensorflow', 'Range', 'range', 'float16', 'CPU', 'no_kernel_for_device')

PyTorch kernel names are mapped to catalog ops through the ops' own PyTorch calls
(:func:`torch_kernel_ops`): ``"slow_conv2d_cpu"`` contains ``conv2d``, the name of the op whose
call is ``torch.nn.functional.conv2d``; only kernel names that do not contain an op's name are
in the small table :data:`TORCH_KERNEL_STEMS`.

>>> parse_error("RuntimeError: \\"log_softmax_lastdim_kernel_impl\\" not implemented for 'Half'").op
'log_softmax'

Device names are the registry's device types (``CPU``, ``GPU``, ``XLA_CPU_JIT``,
``XLA_GPU_JIT``); PyTorch's CUDA is ``GPU``.  A device is only given when the text says it
(or, for TensorFlow's placement errors, implies it: see :data:`CPU_DEDUCTION`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

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

#: PyTorch kernel-name stems that do not contain the name (or call) of the catalog op they
#: implement: BLAS and LAPACK routine names, and kernels named after what they compute
TORCH_KERNEL_STEMS: dict[str, str] = {
    "addmm": "matmul",  # Linear layers and @ of 2-D tensors: BLAS gemm with bias
    "mm": "matmul",
    "bmm": "batch_matmul",
    "baddbmm": "batch_matmul",
    "addmv": "matvec",
    "geqrf": "qr",  # LAPACK QR factorisation
    "potrf": "cholesky",  # LAPACK Cholesky factorisation
    "threshold": "relu",  # relu's kernel in older releases
    "div_floor": "floordiv",
    "fft_r2c": "rfft",  # real-to-complex FFT
    "fft_c2c": "fft",
    "max_all": "reduce_max",
    "min_all": "reduce_min",
}
#: LAPACK routines that JAX's CPU linear algebra (jaxlib/lapack.py) names in its tracebacks
LAPACK_ROUTINES: dict[str, str] = {
    "geqrf": "qr",
    "potrf": "cholesky",
    "syevd": "eigh",
    "heevd": "eigh",
    "gesdd": "svd",
    "gesvd": "svd",
    "trsm": "triangular_solve",
}


class Pattern(NamedTuple):
    """One kind of error message :func:`parse_error` recognises."""

    #: the name of the pattern (ParsedError.kind)
    kind: str
    #: the framework whose message it is
    framework: str
    #: what the message says, in the framework's words (shown when nothing is recognised)
    looks_like: str
    #: the regular expression (its span must cover every pattern it contains)
    regex: re.Pattern[str]


_NODE_ATTRS = r"\{\{node (?P<node>[^}\n]{0,2000})\}\} = (?P<op>\w+)\[(?P<attrs>[^\]\n]{0,2000})\]"

#: every kind of error message that is recognised, TensorFlow first
PATTERNS: tuple[Pattern, ...] = (
    Pattern(
        "no_kernel_for_device",
        "tensorflow",
        "Could not find device for node: {{node X}} = X[T=DT_HALF] (All kernels registered for op X: ...)",
        re.compile(r"Could not find device for node:? " + _NODE_ATTRS),
    ),
    Pattern(
        "no_opkernel_registered",
        "tensorflow",
        "No OpKernel was registered to support Op 'X' with these attrs (Registered kernels: ...)",
        re.compile(
            r"No OpKernel was registered to support Op '(?P<op>\w+)'(?: used by \{\{node [^}\n]{0,300}\}\})?"
            r"\s*with these attrs:?\s*(?:\[(?P<attrs>[^\]\n]{0,2000})\])?"
        ),
    ),
    Pattern(
        "xla_unsupported_op",
        "tensorflow",
        "Detected unsupported operations when trying to compile graph ... on XLA_CPU_JIT: X "
        "(No registered 'X' OpKernel for XLA_CPU_JIT devices ...)",
        re.compile(
            r"Detected unsupported operations when trying to compile graph \S{0,2000} on (?P<device>\w+): "
            r"(?P<op>\w+) \(No registered '\w+' OpKernel for \w+ devices compatible with node"
        ),
    ),
    Pattern(
        "no_registered_kernel",
        "tensorflow",
        "No registered 'X' OpKernel for CPU devices compatible with node ...",
        re.compile(r"No registered '(?P<op>\w+)' OpKernel for (?P<device>\w+) devices compatible with node"),
    ),
    Pattern(
        "attr_not_allowed",
        "tensorflow",
        "Value for attr 'T' of bfloat16 is not in the list of allowed values: ...",
        re.compile(
            r"Value for attr '(?P<attr>\w+)' of (?P<dtype>\w+) is not in the list of allowed values: "
            r"(?P<allowed>[\w, ]{0,1000})"
        ),
    ),
    Pattern(
        "param_not_allowed",
        "tensorflow",
        "Value passed to parameter 'x' has DataType bfloat16 not in list of allowed values: ...",
        re.compile(
            r"Values? passed to parameter '(?P<param>\w+)' has (?:a )?DataType (?:of )?(?P<dtype>\w+) "
            r"not in (?:the )?list of allowed values: (?P<allowed>[\w, ]{0,1000})"
        ),
    ),
    Pattern(
        "xla_unsupported_dtype",
        "tensorflow",
        "Unsupported dtype19 for '{{node X}} = X[T=DT_HALF](...)' (XLA compilation)",
        re.compile(r"Unsupported dtype(?P<enum>\d+) for '" + _NODE_ATTRS),
    ),
    Pattern(
        "xla_invalid_type",
        "tensorflow",
        "Invalid type for X half (XLA compilation)",
        re.compile(r"Invalid type for (?P<op>[A-Z]\w*) (?P<dtype>\w+)"),
    ),
    Pattern(
        "torch_not_implemented",
        "torch",
        "\"<kernel>\" not implemented for 'Half' (or 'BFloat16', 'Float8_e4m3fn', ...)",
        re.compile(
            r"\"(?P<kernel>[^\"\n]{1,200})\"(?: \"(?P<kernel2>[^\"\n]{1,100})\")? "
            r"not implemented for '(?P<dtype>[^'\n]{1,60})'"
        ),
    ),
    Pattern(
        "jax_fft_dtype",
        "jax",
        "RFFT requires f32 or f64 input type, but is given 'f16'",
        re.compile(
            r"(?P<fft>I?R?FFT) requires (?P<allowed>[\w ]{0,100}?) input type, but is given '(?P<dtype>\w+)'"
        ),
    ),
    Pattern(
        "unsupported_dtype",
        "jax or torch",
        "Unsupported dtype bfloat16 (JAX linear algebra; PyTorch: Unsupported dtype Half)",
        re.compile(r"Unsupported dtype (?:torch\.)?(?P<dtype>[A-Za-z]\w*)"),
    ),
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


# ---------------------------------------------------------------- dtype names


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
    from explorer.formats import all_formats

    formats = {f.name for f in all_formats()}
    key = name.strip().lower().removeprefix("torch.").removesuffix("tensor")
    for table in (_XLA_FORMATS, _TORCH_FORMATS):
        if key in table:
            return table[key]
    key = tf_dtype_name(key)
    return key if key in formats else None


# ---------------------------------------------------------------- listed kernels

_KERNEL_LINE = re.compile(
    r"^[ \t]*(?:\.[ \t]*Registered:[ \t]*)?device='(?P<device>[^'\n]{1,60})'(?P<rest>[^\n]*)$"
)
_CONSTRAINT = re.compile(r"(?P<attr>\w+) in \[(?P<types>[^\]\n]*)\]")
_LABEL = re.compile(r"label='[^'\n]*'")


def parse_kernel_lines(text: str) -> tuple[list[tuple[str, dict[str, list[str]]]], int]:
    """The kernels a TensorFlow message lists (``  device='CPU'; T in [DT_FLOAT]`` lines, read from
    the first such line until the first line that is not one), and how many carried a label
    (those are left out, as the registry reader leaves them out).

    >>> parse_kernel_lines("Registered kernels:\\n  device='CPU'; T in [DT_FLOAT, DT_HALF]\\n"
    ...                    "  device='CPU'; label='neon'; T in [DT_FLOAT]\\n\\n [[node]]")
    ([('CPU', {'T': ['float32', 'float16']})], 1)
    """
    kernels: list[tuple[str, dict[str, list[str]]]] = []
    labelled = 0
    started = False
    for line in text.splitlines():
        if "<no registered kernels>" in line:
            break
        m = _KERNEL_LINE.match(line)
        if m is None:
            if started:
                break
            continue
        started = True
        if _LABEL.search(m.group("rest")):
            labelled += 1
            continue
        constraints = {
            c.group("attr"): [
                tf_dtype_name(t) for t in c.group("types").split(",") if t.strip() not in ("", "...")
            ]
            for c in _CONSTRAINT.finditer(m.group("rest"))
        }
        kernels.append((m.group("device"), constraints))
    return kernels, labelled


def _kernel_block(
    text: str, start: int, limit: int = 200_000
) -> tuple[list[tuple[str, dict[str, list[str]]]], int]:
    """Listed kernels after ``start``: the block under "All kernels registered for op",
    "Registered kernels:" or "Registered:" (a header within 3,000 characters of ``start``; the
    block within ``limit``)."""
    window = text[start : start + limit]
    header = re.search(
        r"All kernels registered for op \w+:|Registered kernels:|\.\s*Registered:", window[:3000]
    )
    if header is None:
        return [], 0
    return parse_kernel_lines(window[header.start() :].replace("Registered:", "Registered:\n", 1))


def _node_attrs(attrs: str) -> list[tuple[str, str]]:
    """``Tidx=DT_HALF, compute_uv=false`` -> the type-valued attributes ``[("Tidx", "DT_HALF")]``."""
    return re.findall(r"(\w+)=(DT_\w+)", attrs or "")


def _data_attr(
    attrs: list[tuple[str, str]], kernels: list[tuple[str, dict[str, list[str]]]]
) -> tuple[str, str] | None:
    """The type attribute that carries "the dtype": one the listed kernels constrain, a floating
    format before any other, else the first floating one, else the first."""
    if not attrs:
        return None
    constrained = {a for _, c in kernels for a in c}
    ranked = sorted(
        attrs,
        key=lambda av: (av[0] not in constrained, format_name(av[1]) is None, attrs.index(av)),
    )
    return ranked[0]


# ---------------------------------------------------------------- catalog ops


@functools.cache
def _catalog_raw_names() -> dict[str, str]:
    from explorer.ops import catalog

    return {raw.lower(): raw for op in catalog().values() for raw in op.tf_raw_ops}


def catalog_ops_for_raw_op(raw_op: str | None) -> tuple[str | None, tuple[str, ...]]:
    """The catalog op whose own kernel is TensorFlow raw op ``raw_op`` (any case), and the other
    catalog ops that run it inside.

    >>> catalog_ops_for_raw_op("Cholesky")
    ('cholesky', ('lstsq',))
    >>> catalog_ops_for_raw_op("StridedSlice")[0] is None
    True
    """
    from explorer.ops import find_by_raw_op

    if not raw_op:
        return None, ()
    raw = _catalog_raw_names().get(raw_op.lower())
    if raw is None:
        return None, ()
    ops = find_by_raw_op(raw)
    own = sorted(
        (op for op in ops if op.tf_raw_ops[0] == raw),
        key=lambda op: (op.name.replace("_", "") != raw.lower(), len(op.tf_raw_ops) != 1),
    )  # Conv2D: conv2d, not conv1d (which runs Conv2D too); stable, so catalog order breaks ties
    first = own[0].name if own else None
    return first, tuple(op.name for op in ops if op.name != first)


def _camel(snake: str) -> str:
    """``matrix_determinant`` -> ``MatrixDeterminant`` (the raw op a ``gen_*_ops`` function wraps)."""
    return "".join(part[:1].upper() + part[1:] for part in snake.split("_"))


def _snake(name: str) -> str:
    """``LayerNormKernelImpl`` -> ``layer_norm_kernel_impl``; snake_case is kept."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


# ---------------------------------------------------------------- catalog calls, traced


class _Expr:
    """A stand-in for a framework module, a dtype or a tensor that records, as source text, the
    expression a catalog call builds on it (``torch.log_softmax(x0, -1)``), and the module
    functions it calls."""

    __slots__ = ("_px_calls", "_px_root", "_px_src")
    _px_src: str
    _px_root: str
    _px_calls: list[str]

    def __init__(self, src: str, root: str, calls: list[str]) -> None:
        object.__setattr__(self, "_px_src", src)
        object.__setattr__(self, "_px_root", root)
        object.__setattr__(self, "_px_calls", calls)

    def _new(self, src: str) -> _Expr:
        return _Expr(src, self._px_root, self._px_calls)

    def __getattr__(self, name: str) -> _Expr:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._new(f"{self._px_src}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> _Expr:
        if re.fullmatch(rf"{re.escape(self._px_root)}(\.\w+)+", self._px_src):
            self._px_calls.append(self._px_src)
        parts = [_render(a) for a in args] + [f"{k}={_render(v)}" for k, v in kwargs.items()]
        return self._new(f"{self._px_src}({', '.join(parts)})")

    def __getitem__(self, key: Any) -> _Expr:
        keys = key if isinstance(key, tuple) else (key,)
        return self._new(f"{self._px_src}[{', '.join(_render(k, index=True) for k in keys)}]")

    def __iter__(self) -> Any:
        raise TypeError("a traced value cannot be iterated")

    def __bool__(self) -> bool:
        raise TypeError("a traced value has no truth value")

    def _binary(self, symbol: str, other: Any, reflected: bool = False) -> _Expr:
        left, right = (_render(other), self._px_src) if reflected else (self._px_src, _render(other))
        return self._new(f"({left} {symbol} {right})")

    def __add__(self, o: Any) -> _Expr:
        return self._binary("+", o)

    def __radd__(self, o: Any) -> _Expr:
        return self._binary("+", o, True)

    def __sub__(self, o: Any) -> _Expr:
        return self._binary("-", o)

    def __rsub__(self, o: Any) -> _Expr:
        return self._binary("-", o, True)

    def __mul__(self, o: Any) -> _Expr:
        return self._binary("*", o)

    def __rmul__(self, o: Any) -> _Expr:
        return self._binary("*", o, True)

    def __truediv__(self, o: Any) -> _Expr:
        return self._binary("/", o)

    def __rtruediv__(self, o: Any) -> _Expr:
        return self._binary("/", o, True)

    def __pow__(self, o: Any) -> _Expr:
        return self._binary("**", o)

    def __rpow__(self, o: Any) -> _Expr:
        return self._binary("**", o, True)

    def __matmul__(self, o: Any) -> _Expr:
        return self._binary("@", o)

    def __neg__(self) -> _Expr:
        return self._new(f"(-{self._px_src})")


def _render(value: Any, index: bool = False) -> str:
    """Source text of a value a catalog call passes (ValueError when it has none)."""
    if isinstance(value, _Expr):
        return value._px_src
    if value is Ellipsis:
        return "..."
    if isinstance(value, slice) and index:
        parts = ["" if v is None else _render(v) for v in (value.start, value.stop, value.step)]
        return ":".join(parts[:2]) + (f":{parts[2]}" if parts[2] else "")
    if value is None or isinstance(value, bool | int | float | str):
        return repr(value)
    if isinstance(value, np.generic):
        return repr(value.item())
    if isinstance(value, np.ndarray):
        return repr(value.tolist())
    if isinstance(value, tuple | list):
        inner = ", ".join(_render(v) for v in value)
        return (
            f"({inner},)"
            if isinstance(value, tuple) and len(value) == 1
            else (f"({inner})" if isinstance(value, tuple) else f"[{inner}]")
        )
    raise ValueError(f"no source text for a {type(value).__name__}")


class TracedCall(NamedTuple):
    """A catalog call written out as source text."""

    #: the expression, in terms of the module name, ``dtype_src`` and the input names
    expression: str
    #: the module functions it calls (dotted, in call order)
    calls: tuple[str, ...]


def trace_call(
    call: Callable[..., Any] | None, module: str, dtype_src: str, inputs: tuple[str, ...]
) -> TracedCall | None:
    """Write a catalog call (``op.torch``, ``op.numpy``) out as source text, or None when it does
    something that cannot be written so (the call is run on stand-ins, nothing is imported).

    >>> from explorer.ops import get_op
    >>> trace_call(get_op("log_softmax").torch, "torch", "torch.float32", ("x0",))
    TracedCall(expression='torch.log_softmax(x0, -1)', calls=('torch.log_softmax',))
    """
    if call is None:
        return None
    calls: list[str] = []
    try:
        out = call(
            _Expr(module, module, calls),
            _Expr(dtype_src, module, calls),
            *[_Expr(name, module, calls) for name in inputs],
        )
        expression = _render(out)
    except Exception:
        return None
    return TracedCall(expression, tuple(calls))


@functools.cache
def _call_names(framework: str) -> dict[str, tuple[str, ...]]:
    """Catalog op -> the names a kernel or function of ``framework`` may be called by: the op's
    name and the last part of every module function its call uses (``torch.nn.functional.conv2d``
    -> ``conv2d``)."""
    from explorer.ops import catalog

    out: dict[str, tuple[str, ...]] = {}
    for name, op in catalog().items():
        call, module = (op.torch, "torch") if framework == "torch" else (op.numpy, "np")
        inputs = tuple(f"x{i}" for i in range(op.arity))
        traced = trace_call(call, module, f"{module}.float32", inputs)
        leaves = [c.rsplit(".", 1)[-1] for c in traced.calls] if traced else []
        out[name] = tuple(dict.fromkeys([name, *leaves]))
    return out


def _best_op(tokens: list[str], candidates: dict[str, tuple[str, ...]], stems: dict[str, str]) -> str | None:
    """The catalog op one of whose names is the longest run of whole ``tokens``; an op's own name
    beats a call it makes; a stem of the table counts as a name of its op."""
    best: tuple[tuple[int, int, int], str] | None = None

    def contains(name: str) -> bool:
        parts = name.split("_")
        return any(tokens[i : i + len(parts)] == parts for i in range(len(tokens) - len(parts) + 1))

    table: dict[str, tuple[str, ...]] = {}
    for stem, op in stems.items():
        table[op] = (*table.get(op, ()), stem)
    for op, names in list(candidates.items()) + list(table.items()):
        for name in names:
            if not contains(name):
                continue
            score = (len(name.split("_")), int(name == op), -len(candidates.get(op, names)))
            if best is None or score > best[0]:
                best = (score, op)
    return None if best is None else best[1]


def torch_kernel_ops(kernel: str) -> list[str]:
    """Catalog ops a PyTorch kernel name stands for, one per ``/``-separated part (empty: none).

    >>> torch_kernel_ops("add_cpu/sub_cpu"), torch_kernel_ops("slow_conv2d_cpu")
    (['add', 'sub'], ['conv2d'])
    >>> torch_kernel_ops("LayerNormKernelImpl"), torch_kernel_ops("addmm_impl_cpu_")
    (['layer_norm'], ['matmul'])
    """
    ops: list[str] = []
    for part in kernel.split("/"):
        tokens = [t for t in _snake(part.strip()).split("_") if t]
        op = _best_op(tokens, _call_names("torch"), TORCH_KERNEL_STEMS)
        if op is not None and op not in ops:
            ops.append(op)
    return ops


def op_for_function(name: str, framework: str) -> str | None:
    """The catalog op a function of ``framework`` (``torch``, or ``numpy`` for NumPy-like APIs such
    as ``jax.numpy``) called ``name`` computes: the op of that name, else the first op whose call
    uses a function of that name.

    >>> op_for_function("arange", "torch"), op_for_function("cholesky", "numpy")
    ('range', 'cholesky')
    """
    names = _call_names(framework)
    if name in names:
        return name
    return next((op for op, calls in names.items() if name in calls[1:]), None)


def _torch_device(kernel: str) -> str | None:
    tokens = set(_snake(kernel).replace("/", "_").split("_"))
    if "cuda" in tokens or "cudnn" in tokens:
        return "GPU"
    if "cpu" in tokens:
        return "CPU"
    return None


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


def _tf_call_op(text: str) -> tuple[str | None, str]:
    """(raw op, public call) of the last TensorFlow call of a catalog op a traceback shows
    (``tf.linalg.qr(x)`` in "in user code:"), matched by the op's public name, else its last part."""
    from explorer.ops import catalog

    ops = list(catalog().values())
    for call in reversed(re.findall(r"\b(tf(?:\.\w+)+)\(", text)):
        leaf = call.rsplit(".", 1)[-1]
        found = next((op for op in ops if op.tf_public == call), None) or next(
            (op for op in ops if op.tf_public.rsplit(".", 1)[-1] == leaf), None
        )
        if found is not None:
            return found.tf_raw_ops[0], call
    return None, ""


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


def _op_from_traceback(text: str, framework: str) -> tuple[str | None, str | None, str]:
    """(function, catalog op, how it was found) from the last framework call a traceback shows
    (``jax.lax.linalg.qr(x)``, ``torch.fft.rfft(x)``), or for JAX the LAPACK routine it names."""
    if framework == "torch":
        prefix = r"\btorch\.(?:fft\.|linalg\.|special\.|nn\.functional\.)?"
    else:
        prefix = r"\b(?:jax\.numpy|jnp|jax\.lax|lax|jax\.scipy|jsp)\.(?:linalg\.|fft\.|special\.)?"
    for call in reversed(re.findall(prefix + r"(\w+)\(", text)):
        op = op_for_function(call, "torch" if framework == "torch" else "numpy")
        if op is not None:
            return call, op, f"the op is read from the call {call}(...) in the traceback"
    if framework == "jax":
        routines = re.findall(r"(?<![A-Za-z0-9])[sdcz]?(" + "|".join(LAPACK_ROUTINES) + r")", text)
        if routines:
            routine = routines[-1]
            how = f"the op is read from the LAPACK routine {routine} in the traceback"
            return routine, LAPACK_ROUTINES[routine], how
    return None, None, ""


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

__all__ = [
    "CPU_DEDUCTION",
    "LAPACK_ROUTINES",
    "MAX_TEXT_BYTES",
    "PATTERNS",
    "TF_DATATYPE_ENUM",
    "TORCH_KERNEL_STEMS",
    "ParsedError",
    "Pattern",
    "TracedCall",
    "catalog_ops_for_raw_op",
    "clean_text",
    "format_name",
    "looked_for",
    "op_for_function",
    "parse_error",
    "parse_kernel_lines",
    "tf_dtype_name",
    "torch_kernel_ops",
    "trace_call",
]
