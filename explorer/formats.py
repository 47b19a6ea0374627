"""Floating-point formats: facts read from ``numpy.finfo`` / ``ml_dtypes.finfo``.

Every fact about a format is *measured* from the dtype (finfo, or by casting),
never typed in.  TF32 is the one emulated format: float32 storage rounded to
10 mantissa bits.

>>> from explorer.formats import resolve
>>> resolve("half").name
'float16'
>>> resolve("bf16").max
3.3895313892515355e+38
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

Overflow = Literal["inf", "nan", "saturate"]

#: Every format explorer knows, widest first.  Each name is a NumPy or ml_dtypes type,
#: except ``tf32`` (emulated); ``float8_e5m3fnu`` (NVIDIA's unsigned UE5M3 scale type) needs
#: ml_dtypes 0.7 or later.
KNOWN_FORMAT_NAMES: tuple[str, ...] = (
    "float64",
    "float32",
    "tf32",
    "float16",
    "bfloat16",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e4m3b11fnuz",
    "float8_e3m4",
    "float8_e4m3",
    "float8_e8m0fnu",
    "float8_e5m3fnu",
    "float6_e2m3fn",
    "float6_e3m2fn",
    "float4_e2m1fn",
)


def _ml_dtypes() -> Any:
    """The ``ml_dtypes`` module, imported on first use: its extension takes ~0.6 CPU s to load
    (it registers every cast and ufunc loop with NumPy), which the command line's quick answers
    (``explain --no-run``, a refused file) do not need (``benchmarks/cli_latency.py``)."""
    import ml_dtypes

    return ml_dtypes


#: the formats an ml_dtypes release older than pyproject's lower bound (0.5.1) may lack, and the
#: release that added each (``hasattr(ml_dtypes, name)`` from that release on)
_ADDED_IN: dict[str, tuple[int, int]] = {"float8_e5m3fnu": (0, 7)}


def _installed(name: str) -> bool:
    """Whether the installed NumPy or ml_dtypes has format ``name``, read from ml_dtypes' installed
    version (:data:`_ADDED_IN`) so that the format names need no ml_dtypes import; without
    package metadata, ``hasattr`` on the imported module."""
    if name == "tf32" or hasattr(np, name):
        return True
    if name not in _ADDED_IN:
        return name in KNOWN_FORMAT_NAMES
    import importlib.metadata

    try:
        release = importlib.metadata.version("ml_dtypes")
    except importlib.metadata.PackageNotFoundError:
        return hasattr(_ml_dtypes(), name)
    parts = tuple(int(p) if p.isdigit() else 0 for p in release.split(".")[:2])
    return parts >= _ADDED_IN[name]


if TYPE_CHECKING:
    #: Canonical names of the formats the installed NumPy and ml_dtypes have, widest first
    #: (:data:`KNOWN_FORMAT_NAMES` less those an older ml_dtypes lacks).  Computed on first use
    #: (module ``__getattr__``): it needs ml_dtypes imported.
    FORMAT_NAMES: tuple[str, ...]


@cache
def _format_names() -> tuple[str, ...]:
    """:data:`FORMAT_NAMES`."""
    return tuple(n for n in KNOWN_FORMAT_NAMES if _installed(n))


def __getattr__(name: str) -> Any:
    """:data:`FORMAT_NAMES`, computed on first use (it imports ml_dtypes)."""
    if name == "FORMAT_NAMES":
        return _format_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_ALIASES: dict[str, str] = {
    "double": "float64",
    "f64": "float64",
    "fp64": "float64",
    "d": "float64",
    "single": "float32",
    "float": "float32",
    "f32": "float32",
    "fp32": "float32",
    "tensorfloat32": "tf32",
    "tensorfloat-32": "tf32",
    "half": "float16",
    "f16": "float16",
    "fp16": "float16",
    "e": "float16",
    "bf16": "bfloat16",
    "brain_float": "bfloat16",
    "fp8_e4m3": "float8_e4m3fn",
    "fp8_e4m3fn": "float8_e4m3fn",
    "e4m3": "float8_e4m3fn",
    "e4m3fn": "float8_e4m3fn",
    "fp8": "float8_e4m3fn",
    "fp8_e5m2": "float8_e5m2",
    "e5m2": "float8_e5m2",
    "fp8_e4m3fnuz": "float8_e4m3fnuz",
    "e4m3fnuz": "float8_e4m3fnuz",
    "fp8_e5m2fnuz": "float8_e5m2fnuz",
    "e5m2fnuz": "float8_e5m2fnuz",
    "e4m3b11fnuz": "float8_e4m3b11fnuz",
    "fp8_e4m3b11fnuz": "float8_e4m3b11fnuz",
    "e3m4": "float8_e3m4",
    "fp8_e3m4": "float8_e3m4",
    "float8_e4m3_ieee": "float8_e4m3",
    "fp8_e4m3_ieee": "float8_e4m3",
    "e8m0": "float8_e8m0fnu",
    "e8m0fnu": "float8_e8m0fnu",
    "fp8_e8m0": "float8_e8m0fnu",
    "e5m3": "float8_e5m3fnu",
    "e5m3fnu": "float8_e5m3fnu",
    "ue5m3": "float8_e5m3fnu",
    "fp8_e5m3": "float8_e5m3fnu",
    "fp6_e2m3": "float6_e2m3fn",
    "e2m3": "float6_e2m3fn",
    "e2m3fn": "float6_e2m3fn",
    "fp6_e3m2": "float6_e3m2fn",
    "e3m2": "float6_e3m2fn",
    "e3m2fn": "float6_e3m2fn",
    "fp4": "float4_e2m1fn",
    "fp4_e2m1": "float4_e2m1fn",
    "e2m1": "float4_e2m1fn",
    "e2m1fn": "float4_e2m1fn",
    "nvfp4": "float4_e2m1fn",
    "mxfp4": "float4_e2m1fn",
}

_TF32_MANTISSA_BITS = 10  # the definition of TF32: float32's exponent, 10 mantissa bits


@dataclass(frozen=True)
class Format:
    """One floating-point format and its measured facts."""

    #: canonical name, e.g. ``"float16"``
    name: str
    #: storage width in bits (6 for float6, even though stored in a byte)
    bits: int
    exponent_bits: int
    #: explicit (stored) mantissa bits
    mantissa_bits: int
    #: exponent bias: the stored exponent field of 1.0
    bias: int
    #: largest finite value
    max: float
    smallest_normal: float
    #: smallest positive value (equals ``smallest_normal`` when there are no subnormals)
    smallest_subnormal: float
    #: distance from 1.0 to the next larger value
    eps: float
    has_inf: bool
    has_nan: bool
    #: False for the unsigned formats (``float8_e8m0fnu``, ``float8_e5m3fnu``): -1 casts to NaN
    has_sign: bool
    #: what casting a finite value far above ``max`` gives
    overflow: Overflow
    #: NumPy dtype that stores values (float32 for the emulated tf32)
    storage_dtype: np.dtype = field(repr=False, compare=False)
    #: True for formats with no native dtype (tf32): values live in ``storage_dtype``
    emulated: bool = False

    @property
    def has_subnormals(self) -> bool:
        return self.smallest_subnormal < self.smallest_normal

    @property
    def enumerable(self) -> bool:
        """True when every value can be listed (16 bits or fewer)."""
        return self.bits <= 16

    def round(self, values: Any) -> np.ndarray:
        """Round float values to this format, correctly (nearest-even, in one step),
        returned in the storage dtype.

        ml_dtypes before 0.7 casts float64 through float32, which rounds twice; float64
        input is therefore rounded in one step on its bit pattern (:func:`_round_float64`).
        Other modes (toward zero, stochastic) are in :mod:`explorer.rounding`.

        >>> float(resolve("bfloat16").round(1 + 2**-8 + 2**-40))
        1.0078125
        """
        x = np.asarray(values)
        if x.dtype != np.float64 or self.name in _ONE_STEP_FROM_FLOAT64:
            return self.cast(x)
        if self.has_sign and self.has_subnormals:
            return _round_float64(x, self)
        with np.errstate(over="ignore", invalid="ignore"):
            return self.cast(x)

    def cast(self, values: Any) -> np.ndarray:
        """The plain dtype cast (ml_dtypes' ``astype``; tf32: float32 then mantissa rounding)."""
        x = np.asarray(values)
        if self.emulated:
            return _round_tf32(x.astype(np.float32))
        return x.astype(self.storage_dtype)

    def to_dict(self) -> dict[str, Any]:
        """The facts as plain JSON-ready values."""
        keys = (
            "name",
            "bits",
            "exponent_bits",
            "mantissa_bits",
            "bias",
            "max",
            "smallest_normal",
            "smallest_subnormal",
            "eps",
            "has_inf",
            "has_nan",
            "overflow",
        )
        return {k: getattr(self, k) for k in keys}

    def __str__(self) -> str:
        return self.name


def _round_tf32(x32: np.ndarray) -> np.ndarray:
    """Round float32 values to 10 mantissa bits, nearest-even; inf and NaN pass through."""
    bits = np.ascontiguousarray(x32, dtype=np.float32).view(np.uint32)
    drop = 23 - _TF32_MANTISSA_BITS
    half = np.uint32((1 << (drop - 1)) - 1)
    lsb = (bits >> np.uint32(drop)) & np.uint32(1)
    rounded = (bits + half + lsb) & ~np.uint32((1 << drop) - 1)
    finite = np.isfinite(x32)
    return np.where(finite, rounded, bits).view(np.float32)


#: formats whose NumPy cast from float64 rounds once (correctly)
#: the formats NumPy has natively (its own dtypes; a cast to them from float64 rounds once, correctly)
NUMPY_NATIVE_FORMATS: tuple[str, ...] = ("float64", "float32", "float16")
_ONE_STEP_FROM_FLOAT64 = NUMPY_NATIVE_FORMATS


@cache
def _kept_bits(fmt: Format, wide: bool) -> tuple[np.ndarray, int]:
    """Which bits of a float64 (``wide``) or float32 input ``fmt`` keeps, per exponent field.

    Returns the keep-mask of the input's bits for each value of its exponent field (the
    low mantissa bits the format cannot hold are 0: more of them in its subnormal range),
    and the smallest exponent field whose values are not below the format's smallest
    subnormal.  Shared by :func:`_round_float64` and :mod:`explorer.rounding`.
    """
    uint: Any = np.uint64 if wide else np.uint32
    in_mant, in_exp, in_bias = (52, 11, 1023) if wide else (23, 8, 127)
    fields = np.arange(1 << in_exp)
    unbiased = np.maximum(fields, 1) - in_bias
    target_emin = int(np.log2(fmt.smallest_normal))
    drop = (in_mant - fmt.mantissa_bits) + np.maximum(target_emin - unbiased, 0)
    tiny_below = int(np.argmax(drop <= in_mant))
    width = 64 if wide else 32
    keep = np.array([((1 << width) - 1) ^ ((1 << min(int(d), in_mant)) - 1) for d in drop], dtype=uint)
    return keep, tiny_below


def _round_float64(x: np.ndarray, fmt: Format) -> np.ndarray:
    """Round float64 values to ``fmt`` (signed, with subnormals), nearest-even, in one step.

    Half a unit of the lowest kept bit (less one, plus the kept code's last bit: ties go
    to even) is added to the bit pattern and the bits the format cannot hold are cleared.
    Within a binade the pattern is linear in the value and a carry lands exactly on the
    next value of the format, so the final cast is exact.  Values past ``max`` round to a
    finite float64 just past it, which the cast turns into inf, NaN or ``max`` as it does
    any overflow; inf and NaN are cast as they are; values below the smallest subnormal go
    to 0 or to the smallest subnormal (the tie to 0).
    """
    shape = x.shape
    x = np.ascontiguousarray(x)
    keep_by_field, tiny_below = _kept_bits(fmt, True)
    bits = x.view(np.uint64)
    sign_bit = np.uint64(1 << 63)
    mag = bits & ~sign_bit
    exp_field = mag >> np.uint64(52)
    keep = keep_by_field.take(exp_field)
    tiny = exp_field < tiny_below
    special = exp_field == np.uint64((1 << 11) - 1)  # inf, NaN
    lowest_kept = ~keep + np.uint64(1)
    half_minus_one = (lowest_kept >> np.uint64(1)) - np.uint64(1)
    # the code's last bit; in the binade [ss, 2 ss) only the implicit bit is kept: code 1
    odd = ((mag & lowest_kept) != 0) | (lowest_kept == np.uint64(1 << 52))
    mag += half_minus_one + odd.astype(np.uint64)
    mag &= keep
    mag |= bits & sign_bit
    result = mag.view(np.float64).astype(fmt.storage_dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        if tiny.any():
            idx = np.nonzero(tiny)
            up = np.abs(x[idx]) > fmt.smallest_subnormal / 2
            result[idx] = fmt.cast(np.copysign(np.where(up, fmt.smallest_subnormal, 0.0), x[idx]))
        if special.any():
            idx = np.nonzero(special)
            result[idx] = fmt.cast(x[idx])
    return result.reshape(shape)


_UINTS: dict[int, type[np.unsignedinteger]] = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _uint_for(bits: int) -> type[np.unsignedinteger]:
    return _UINTS[max(8, bits)]


def _measure_overflow(dtype: np.dtype, max_value: float) -> Overflow:
    too_big = np.array([max_value], dtype=np.float64)
    with np.errstate(over="ignore"):
        too_big = too_big * 2.0
        cast = too_big.astype(dtype).astype(np.float64)[0]
    if np.isnan(cast):
        return "nan"
    if np.isinf(cast):
        return "inf"
    if cast == max_value:
        return "saturate"
    raise AssertionError(f"{dtype}: casting 2*max gave {cast}")


def _build(name: str) -> Format:
    if name == "tf32":
        return _build_tf32()
    dtype = np.dtype(getattr(np, name) if hasattr(np, name) else getattr(_ml_dtypes(), name))
    info: Any = _ml_dtypes().finfo(dtype)
    bits = int(info.bits)
    one_bits = int(np.array(1.0, dtype=dtype).view(_uint_for(dtype.itemsize * 8)))
    bias = (one_bits >> int(info.nmant)) & ((1 << int(info.nexp)) - 1)
    with np.errstate(invalid="ignore", over="ignore"):
        has_inf = bool(np.isinf(np.array([np.inf]).astype(dtype).astype(np.float64))[0])
        has_nan = bool(np.isnan(np.array([np.nan]).astype(dtype).astype(np.float64))[0])
        # measured, not read from the name: an unsigned format has no -1 (ml_dtypes gives NaN)
        has_sign = bool(np.array([-1.0]).astype(dtype).astype(np.float64)[0] == -1.0)
    max_value = float(info.max)
    return Format(
        name=name,
        bits=bits,
        exponent_bits=int(info.nexp),
        mantissa_bits=int(info.nmant),
        bias=bias,
        max=max_value,
        smallest_normal=float(info.smallest_normal),
        smallest_subnormal=float(info.smallest_subnormal),
        eps=float(info.eps),
        has_inf=has_inf,
        has_nan=has_nan,
        has_sign=has_sign,
        overflow=_measure_overflow(dtype, max_value),
        storage_dtype=dtype,
    )


def _build_tf32() -> Format:
    f32 = np.finfo(np.float32)
    m = _TF32_MANTISSA_BITS
    eps = float(np.ldexp(1.0, -m))
    max_value = float(np.ldexp(2.0 - eps, int(f32.maxexp) - 1))
    smallest_normal = float(f32.smallest_normal)
    return Format(
        name="tf32",
        bits=1 + int(f32.nexp) + m,
        exponent_bits=int(f32.nexp),
        mantissa_bits=m,
        bias=int(np.array(1.0, np.float32).view(np.uint32)) >> int(f32.nmant),
        max=max_value,
        smallest_normal=smallest_normal,
        smallest_subnormal=float(np.ldexp(smallest_normal, -m)),
        eps=eps,
        has_inf=True,
        has_nan=True,
        has_sign=True,
        overflow="inf",
        storage_dtype=np.dtype(np.float32),
        emulated=True,
    )


@cache
def all_formats() -> tuple[Format, ...]:
    """Every known format, widest first."""
    return tuple(_build(n) for n in _format_names())


@cache
def _by_name() -> dict[str, Format]:
    """The formats by name, built once (read-only: :func:`resolve` only looks names up)."""
    return {f.name: f for f in all_formats()}


#: longest format name :func:`resolve` reads
MAX_NAME_LENGTH = 64


def _framework_dtype_name(obj: Any) -> str | None:
    """Name of a ``tf.DType`` or ``torch.dtype`` without importing either framework."""
    module = type(obj).__module__ or ""
    if module.startswith("tensorflow") and hasattr(obj, "name"):
        return str(obj.name)
    if module.startswith("torch") and type(obj).__name__ == "dtype":
        return str(obj).removeprefix("torch.")
    return None


def format_name(spec: str) -> str:
    """The canonical name of the format a name or alias stands for: ``resolve(spec).name``,
    without building the formats (nor importing ml_dtypes) when ``spec`` is a known name or
    alias; anything else goes through :func:`resolve` (and its errors).

    >>> format_name("fp8_e4m3"), format_name("Half")
    ('float8_e4m3fn', 'float16')
    """
    if isinstance(spec, str) and len(spec) <= MAX_NAME_LENGTH:
        key = spec.strip().lower().replace("-", "_").replace(" ", "_")
        key = {"float8_e4m3_ieee": "float8_e4m3"}.get(key, key)
        key = _ALIASES.get(key, _ALIASES.get(key.replace("_", ""), key))
        if key in _format_names():
            return key
    return resolve(spec).name


def resolve(spec: Any) -> Format:
    """Return the :class:`Format` for a name, alias, dtype, or framework dtype.

    Accepts ``"half"``, ``"fp16"``, ``np.float16``, ``np.dtype("float16")``,
    ``ml_dtypes.bfloat16``, ``tf.float16``, ``torch.bfloat16`` and ``Format`` itself.

    >>> resolve("fp8_e4m3").name
    'float8_e4m3fn'
    >>> resolve("halff")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown format 'halff'; did you mean 'half'? Valid names: float64, ...

    ``None`` and ``bool`` are refused (NumPy would read them as float64 and bool), and so
    is a name longer than :data:`MAX_NAME_LENGTH` characters.
    """
    if isinstance(spec, Format):
        return spec
    if spec is None or isinstance(spec, bool):
        raise TypeError(
            f"cannot interpret {spec!r} as a format; pass a name such as 'float16', a NumPy dtype, "
            "tf.DType or torch.dtype"
        )
    if isinstance(spec, str) and len(spec) > MAX_NAME_LENGTH:
        raise ValueError(
            f"unknown format {spec[:MAX_NAME_LENGTH]!r}... (names are at most {MAX_NAME_LENGTH} characters)"
        )
    name = _framework_dtype_name(spec)
    if name is None and not isinstance(spec, str):
        try:
            name = np.dtype(spec).name
        except (TypeError, ValueError):
            raise TypeError(
                f"cannot interpret {spec!r} (type {type(spec).__name__}) as a format; "
                "pass a name such as 'float16', a NumPy dtype, tf.DType or torch.dtype"
            ) from None
    if name is None:
        name = str(spec)
    key = name.strip().lower().replace("-", "_").replace(" ", "_")
    key = {"float8_e4m3_ieee": "float8_e4m3"}.get(key, key)
    formats = _by_name()
    key = _ALIASES.get(key, _ALIASES.get(key.replace("_", ""), key))
    if key in formats:
        return formats[key]
    if key in KNOWN_FORMAT_NAMES:
        raise ValueError(
            f"format {key!r} needs a newer ml_dtypes than the installed {_ml_dtypes().__version__} "
            f"(float8_e5m3fnu: 0.7 or later); valid names here: {', '.join(formats)}"
        )
    candidates = list(formats) + list(_ALIASES)
    close = difflib.get_close_matches(key, candidates, n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else "."
    raise ValueError(
        f"unknown format {name!r}{hint} Valid names: {', '.join(formats)} "
        "(aliases such as half, fp16, bf16, e4m3, e5m2 also work)"
    )


def _bit_dtype(fmt: Format) -> type[np.unsignedinteger]:
    return _uint_for(fmt.storage_dtype.itemsize * 8)


def encode(values: Any, fmt: Any) -> np.ndarray:
    """Bit patterns (unsigned integers) of ``values`` rounded to ``fmt``.

    >>> int(encode(1.0, "float16"))
    15360
    """
    fmt = resolve(fmt)
    x = np.asarray(values, dtype=np.float64) if not _is_storage(values, fmt) else np.asarray(values)
    with np.errstate(over="ignore", invalid="ignore"):
        stored = np.ascontiguousarray(fmt.round(x)).reshape(np.shape(x))
    raw = stored.view(_bit_dtype(fmt))
    if fmt.emulated:
        return (raw >> np.uint32(23 - fmt.mantissa_bits)).astype(np.uint32)
    return raw


def _is_storage(values: Any, fmt: Format) -> bool:
    return isinstance(values, np.ndarray) and values.dtype == fmt.storage_dtype


def decode(bit_patterns: Any, fmt: Any) -> np.ndarray:
    """Values (in float64) of the given bit patterns in ``fmt``.

    >>> float(decode(0x3C00, "float16"))
    1.0
    """
    fmt = resolve(fmt)
    patterns = np.asarray(bit_patterns)
    if patterns.dtype.kind not in "iu":
        raise TypeError(f"bit patterns must be integers, got dtype {patterns.dtype}")
    if patterns.size and (patterns.min() < 0 or patterns.max() >= (1 << fmt.bits)):
        raise ValueError(f"bit patterns for {fmt.name} must lie in [0, 2**{fmt.bits})")
    if fmt.emulated:
        raw = patterns.astype(np.uint32) << np.uint32(23 - fmt.mantissa_bits)
        return raw.view(np.float32).astype(np.float64)
    raw = patterns.astype(_bit_dtype(fmt))
    with np.errstate(invalid="ignore"):  # NaN patterns
        return raw.view(fmt.storage_dtype).astype(np.float64)


def all_values(fmt: Any) -> np.ndarray:
    """Every value of a format of 16 bits or fewer, in bit-pattern order, in its storage dtype.

    >>> all_values("float16").size
    65536
    """
    fmt = resolve(fmt)
    if not fmt.enumerable:
        raise ValueError(
            f"{fmt.name} has {fmt.bits} bits; only formats of 16 bits or fewer can be enumerated"
        )
    patterns = np.arange(1 << fmt.bits, dtype=_bit_dtype(fmt))
    return patterns.view(fmt.storage_dtype)


# ---------------------------------------------------------------- ordinals


def _sign_mask(fmt: Format) -> int:
    """The sign bit of ``fmt``'s bit patterns (0 for an unsigned format)."""
    return 1 << (fmt.bits - 1) if fmt.has_sign else 0


def ordinals(values: np.ndarray, fmt: Any) -> np.ndarray:
    """Signed code-point index of each (non-NaN) value of ``fmt``: monotone in the value,
    consecutive for neighbouring values, 0 for both zeros; ±inf sit just past ±max.

    >>> ordinals(np.array([-1.0, 0.0, 1.0]), "float16").tolist()
    [-15360, 0, 15360]
    """
    fmt = resolve(fmt)
    with np.errstate(over="ignore", invalid="ignore"):
        bits = encode(np.asarray(values), fmt)
    sign = _sign_mask(fmt)
    if fmt.bits == 64:
        magnitude = (bits & np.uint64((1 << 63) - 1)).astype(np.int64)
        negative = (bits >> np.uint64(63)).astype(bool)
    else:
        wide = bits.astype(np.int64)
        magnitude = wide & ~sign if sign else wide
        negative = (wide & sign).astype(bool) if sign else np.zeros(wide.shape, bool)
    return np.where(negative, -magnitude, magnitude)


def from_ordinals(ords: np.ndarray, fmt: Any) -> np.ndarray:
    """Values (float64) of the given :func:`ordinals` of ``fmt``.

    >>> from_ordinals(np.array([15360, 15361]), "float16").tolist()
    [1.0, 1.0009765625]
    """
    fmt = resolve(fmt)
    ords = np.asarray(ords, dtype=np.int64)
    magnitude = np.abs(ords)
    if fmt.bits == 64:
        bits = magnitude.astype(np.uint64) | np.where(ords < 0, np.uint64(1 << 63), np.uint64(0))
        return bits.view(np.float64).copy()
    patterns = magnitude | np.where(ords < 0, _sign_mask(fmt), 0)
    return decode(patterns, fmt)


def ulp_of_max(fmt: Any) -> float:
    """The spacing of values in the binade of the largest finite value of ``fmt``.

    >>> ulp_of_max("float16"), ulp_of_max("float64") == 2.0**971
    (32.0, True)
    """
    fmt = resolve(fmt)
    exponent = math.frexp(fmt.max)[1] - 1  # exact: log2 of float64's max rounds up to 1024
    return math.ldexp(1.0, exponent - fmt.mantissa_bits)
