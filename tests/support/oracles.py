"""Independent reference implementations the tests compare :mod:`explorer` against.

Nothing here imports :mod:`explorer`, ``ml_dtypes`` or reads ``finfo``:

- :data:`SPECS`: the format facts typed from the standards (IEEE 754-2019, the OCP 8-bit
  floating point specification v1.0, the OCP Microscaling (MX) specification v1.0, the
  ml_dtypes README for the formats only it defines), and the derived facts
  (:func:`max_value`, :func:`smallest_normal`, ...) computed from the table by formula.
- :func:`decode_bits`: a bit-level decoder written from the table (sign, exponent field,
  mantissa field -> value), vectorised with NumPy integers.
- :func:`round_exact`: correct rounding of an exact rational (:class:`fractions.Fraction`)
  to a format given only its precision, minimum exponent, largest finite value and
  specials, in integer arithmetic (scale to an integer significand, round half to even).
- :func:`correctly_rounded`: an elementwise op evaluated exactly (Fractions) or with mpmath
  at 200 bits, rounded with :func:`round_exact`; a result too close to a rounding
  boundary for 200 bits to decide is recomputed at 400 bits (Ziv's strategy).
- :func:`number_line_index`: the position of a value on the format's number line, for
  ULP distances, from the table.

>>> float(max_value(SPECS["float8_e4m3fn"]))
448.0
>>> round_exact(Fraction(465), target("float8_e4m3fn"))
nan
>>> round_exact(Fraction(1, 3), target("bfloat16"))
0.333984375
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Literal

import mpmath
import numpy as np

# ---------------------------------------------------------------------------- the spec table

#: How a format marks NaN (and infinity):
#: ``ieee``: exponent field all ones: mantissa 0 is +-inf, any other mantissa NaN;
#: ``all_ones``: only S.1111.111 (exponent and mantissa all ones) is NaN, no infinity (OCP E4M3);
#: ``negative_zero``: the one pattern 1.0000.000 (0x80) is NaN, there is no -0 and no infinity
#: (the fnuz formats); ``exponent_all_ones``: the one pattern 0xFF is NaN (E8M0);
#: ``none``: every pattern is a finite number (OCP MX FP6 / FP4).
NanEncoding = Literal["ieee", "all_ones", "negative_zero", "exponent_all_ones", "none"]
Overflow = Literal["inf", "nan", "saturate"]


@dataclass(frozen=True)
class FormatSpec:
    """One format as its standard defines it."""

    name: str
    #: storage width in bits
    bits: int
    exponent_bits: int
    #: stored (explicit) mantissa bits
    mantissa_bits: int
    #: exponent bias: value = 2**(field - bias) * 1.mantissa for normal numbers
    bias: int
    nan: NanEncoding
    #: what rounding a finite value far above the largest finite value gives (round to nearest)
    overflow: Overflow
    #: the largest finite value as the spec prints it (checked against :func:`max_value`)
    spec_max: float
    #: where the facts come from
    source: str
    has_sign: bool = True
    #: exponent field 0 holds subnormals (0.mantissa * 2**(1 - bias)); False: it is a normal binade
    has_subnormals: bool = True

    @property
    def has_inf(self) -> bool:
        return self.nan == "ieee"

    @property
    def has_nan(self) -> bool:
        return self.nan != "none"

    @property
    def has_zero(self) -> bool:
        return self.nan != "exponent_all_ones"

    @property
    def has_negative_zero(self) -> bool:
        return self.has_sign and self.has_zero and self.nan != "negative_zero"


_IEEE = "IEEE 754-2019 Table 3.5"
_OFP8 = "OCP 8-bit Floating Point Specification (OFP8) rev 1.0, Table 1"
_MX = "OCP Microscaling Formats (MX) Specification v1.0, section 5.3"
_FNUZ = "ml_dtypes README (Graphcore/AMD fnuz: no inf, no -0, NaN = 0x80)"
_ML_IEEE = "ml_dtypes README (IEEE 754-like: inf and NaN in the top exponent field)"

SPECS: dict[str, FormatSpec] = {
    s.name: s
    for s in (
        FormatSpec("float64", 64, 11, 52, 1023, "ieee", "inf", 1.7976931348623157e308, _IEEE),
        FormatSpec("float32", 32, 8, 23, 127, "ieee", "inf", 3.4028234663852886e38, _IEEE),
        # NVIDIA A100 whitepaper: float32's 8-bit exponent, float16's 10-bit mantissa
        FormatSpec("tf32", 19, 8, 10, 127, "ieee", "inf", 3.4011621342146535e38, "NVIDIA A100 whitepaper"),
        FormatSpec("float16", 16, 5, 10, 15, "ieee", "inf", 65504.0, _IEEE),
        FormatSpec("bfloat16", 16, 8, 7, 127, "ieee", "inf", 3.3895313892515355e38, "Intel BF16 spec"),
        FormatSpec("float8_e4m3fn", 8, 4, 3, 7, "all_ones", "nan", 448.0, _OFP8),
        FormatSpec("float8_e5m2", 8, 5, 2, 15, "ieee", "inf", 57344.0, _OFP8),
        FormatSpec("float8_e4m3fnuz", 8, 4, 3, 8, "negative_zero", "nan", 240.0, _FNUZ),
        FormatSpec("float8_e5m2fnuz", 8, 5, 2, 16, "negative_zero", "nan", 57344.0, _FNUZ),
        FormatSpec("float8_e4m3b11fnuz", 8, 4, 3, 11, "negative_zero", "nan", 30.0, _FNUZ),
        FormatSpec("float8_e3m4", 8, 3, 4, 3, "ieee", "inf", 15.5, _ML_IEEE),
        FormatSpec("float8_e4m3", 8, 4, 3, 7, "ieee", "inf", 240.0, _ML_IEEE),
        FormatSpec(
            "float8_e8m0fnu",
            8,
            8,
            0,
            127,
            "exponent_all_ones",
            "nan",
            2.0**127,
            _MX + " (E8M0 scale: no sign, no zero)",
            has_sign=False,
            has_subnormals=False,
        ),
        # NVIDIA's UE5M3 block-scale type: no sign, no infinity, NaN only at 1111.1111; E5M2's bias
        FormatSpec(
            "float8_e5m3fnu",
            8,
            5,
            3,
            15,
            "all_ones",
            "nan",
            114688.0,
            "ml_dtypes 0.7 README (float8_e5m3fnu: NVIDIA UE5M3, unsigned, no inf, NaN = 0xFF)",
            has_sign=False,
        ),
        FormatSpec("float6_e2m3fn", 6, 2, 3, 1, "none", "saturate", 7.5, _MX),
        FormatSpec("float6_e3m2fn", 6, 3, 2, 3, "none", "saturate", 28.0, _MX),
        FormatSpec("float4_e2m1fn", 4, 2, 1, 1, "none", "saturate", 6.0, _MX),
    )
}


# ---------------------------------------------------------------------------- derived facts


def precision(spec: FormatSpec) -> int:
    """Significand bits including the implicit one."""
    return spec.mantissa_bits + 1


def emin(spec: FormatSpec) -> int:
    """Exponent of the smallest normal number: field 1 (field 0 without subnormals)."""
    return (1 if spec.has_subnormals else 0) - spec.bias


def emax(spec: FormatSpec) -> int:
    """Exponent of the largest finite number: the top exponent field unless it is all specials."""
    top_field = (1 << spec.exponent_bits) - 1
    reserved = spec.nan == "ieee" or (spec.nan == "exponent_all_ones")
    return (top_field - 1 if reserved else top_field) - spec.bias


def max_value(spec: FormatSpec) -> Fraction:
    """Largest finite value: all-ones mantissa in the top binade, except where that pattern is NaN."""
    m = spec.mantissa_bits
    top_mantissa = (1 << m) - 1
    if spec.nan == "all_ones":
        top_mantissa -= 1  # S.1111.111 is NaN: the largest is S.1111.110
    return Fraction((1 << m) + top_mantissa, 1 << m) * Fraction(2) ** emax(spec)


def smallest_normal(spec: FormatSpec) -> Fraction:
    return Fraction(2) ** emin(spec)


def smallest_subnormal(spec: FormatSpec) -> Fraction:
    """Smallest positive value (the smallest normal when there are no subnormals)."""
    if not spec.has_subnormals:
        return smallest_normal(spec)
    return Fraction(2) ** (emin(spec) - spec.mantissa_bits)


def eps(spec: FormatSpec) -> Fraction:
    """Distance from 1 to the next larger value."""
    return Fraction(1, 1 << spec.mantissa_bits) if spec.mantissa_bits else Fraction(1)


# ---------------------------------------------------------------------------- bit-level decoder


def decode_bits(patterns: np.ndarray, spec: FormatSpec) -> np.ndarray:
    """Float64 value of each bit pattern (an integer array), from the table alone.

    >>> decode_bits(np.array([0x3C00, 0x7C00, 0x0001]), SPECS["float16"]).tolist()
    [1.0, inf, 5.960464477539063e-08]
    """
    p = np.asarray(patterns).astype(np.int64)
    m_bits, e_bits = spec.mantissa_bits, spec.exponent_bits
    mantissa = p & ((1 << m_bits) - 1)
    field = (p >> m_bits) & ((1 << e_bits) - 1)
    negative = ((p >> (spec.bits - 1)) & 1).astype(bool) if spec.has_sign else np.zeros(p.shape, bool)
    subnormal = (field == 0) & spec.has_subnormals
    significand = np.where(subnormal, mantissa, mantissa + (1 << m_bits)).astype(np.float64)
    exponent = np.where(subnormal, 1, field) - spec.bias - m_bits
    magnitude = np.ldexp(significand, exponent.astype(np.int32))
    top = (1 << e_bits) - 1
    if spec.nan == "ieee":
        magnitude = np.where(field == top, np.where(mantissa == 0, np.inf, np.nan), magnitude)
    elif spec.nan == "all_ones":
        magnitude = np.where((field == top) & (mantissa == (1 << m_bits) - 1), np.nan, magnitude)
    elif spec.nan == "negative_zero":
        magnitude = np.where(p == 1 << (spec.bits - 1), np.nan, magnitude)
    elif spec.nan == "exponent_all_ones":
        magnitude = np.where(field == top, np.nan, magnitude)
    return np.where(negative, -magnitude, magnitude)


# ---------------------------------------------------------------------------- correct rounding

#: ``away_from_zero`` (not an IEEE binary mode) gives the other neighbour of an inexact value,
#: for checking stochastic rounding
RoundingMode = Literal["nearest_even", "toward_zero", "away_from_zero"]


@dataclass(frozen=True)
class Target:
    """What rounding needs to know of a format, and nothing else."""

    #: significand bits, the implicit one included
    precision: int
    #: exponent of the smallest normal; below it the quantum stays 2**(emin - precision + 1)
    emin: int
    max_finite: Fraction
    has_inf: bool
    has_nan: bool
    #: round-to-nearest overflow gives the largest finite value (else inf, else NaN)
    saturating: bool
    has_sign: bool = True
    has_negative_zero: bool = True
    #: False (E8M0): no zero either; what would round to 0 gives the smallest value
    has_zero: bool = True


def target(name: str) -> Target:
    """The :class:`Target` of a format of :data:`SPECS`."""
    spec = SPECS[name]
    return Target(
        precision=precision(spec),
        emin=emin(spec),
        max_finite=max_value(spec),
        has_inf=spec.has_inf,
        has_nan=spec.has_nan,
        saturating=spec.overflow == "saturate",
        has_sign=spec.has_sign,
        has_negative_zero=spec.has_negative_zero,
        has_zero=spec.has_zero,
    )


def _floor_log2(num: int, den: int) -> int:
    """The largest e with 2**e <= num / den (both positive)."""
    e = num.bit_length() - den.bit_length()
    if (num << max(0, -e)) < (den << max(0, e)):
        e -= 1
    return e


def _overflow(t: Target, mode: RoundingMode) -> float:
    if mode == "toward_zero" or t.saturating:
        return float(t.max_finite)
    return math.inf if t.has_inf else math.nan


def round_exact(
    value: Fraction, t: Target, mode: RoundingMode = "nearest_even", negative: bool = False
) -> float:
    """``value`` rounded to the format, as a float64 (every format value is one).

    ``negative`` gives the sign of an exact zero (``value`` 0).  See :func:`round_ratio`.

    >>> round_exact(Fraction(5, 2), target("float4_e2m1fn"))  # tie 2.5: to the even 2
    2.0
    """
    if value < 0:
        negative, value = True, -value
    return round_ratio(value.numerator, value.denominator, t, mode, negative)


def round_ratio(
    num: int, den: int, t: Target, mode: RoundingMode = "nearest_even", negative: bool = False
) -> float:
    """``(-1)**negative * num / den`` (``num >= 0``, ``den > 0``) rounded to the format.

    Integer arithmetic only: the value is scaled by the quantum of its binade,
    ``2**(max(e, emin) - precision + 1)`` with ``e = floor(log2(value))``, to an integer
    significand and a remainder; the remainder is compared with one half (ties to the even
    significand).  A rounded value above the largest finite one overflows: to the largest
    (saturating formats, and toward zero), else to inf, else to NaN.
    """
    if negative and not t.has_sign:
        return math.nan
    if num == 0:
        if not t.has_zero:
            return math.nan
        return -0.0 if negative and t.has_negative_zero else 0.0
    quantum_exp = max(_floor_log2(num, den), t.emin) - (t.precision - 1)
    if quantum_exp >= 0:
        den <<= quantum_exp
    else:
        num <<= -quantum_exp
    significand, remainder = divmod(num, den)
    half_compare = 2 * remainder - den
    nearest_up = half_compare > 0 or (half_compare == 0 and significand % 2 == 1)
    if (mode == "nearest_even" and nearest_up) or (mode == "away_from_zero" and remainder > 0):
        significand += 1
    if significand == 0:
        if t.has_zero:
            return -0.0 if negative and t.has_negative_zero else 0.0
        significand = 1  # no zero (E8M0): the smallest value
    scaled, limit = significand * t.max_finite.denominator, t.max_finite.numerator
    if quantum_exp >= 0:
        scaled <<= quantum_exp
    else:
        limit <<= -quantum_exp
    result = _overflow(t, mode) if scaled > limit else math.ldexp(significand, quantum_exp)
    return -result if negative else result


def round_array(values: np.ndarray, name: str, mode: RoundingMode = "nearest_even") -> np.ndarray:
    """Float64 ``values`` rounded to format ``name`` (float64 array), vectorised.

    The same rule as :func:`round_ratio`, in float64 where every step is exact: the
    quantum exponent ``q = max(floor(log2 |x|), emin) - precision + 1`` (from ``frexp``),
    ``|x| * 2**-q`` (a power-of-two scaling, exact) rounded to an integer by ``rint`` (half
    to even), ``floor`` or ``ceil``, scaled back.  inf and NaN as a cast gives them: inf
    where the format has one, else NaN (or max where it saturates).  Checked against the
    integer :func:`round_ratio` in the tests.

    >>> round_array(np.array([1.0625, 1.1875, -1e-9, 500.0]), "float8_e4m3fn").tolist()
    [1.0, 1.25, -0.0, nan]
    """
    t = target(name)
    x = np.asarray(values, dtype=np.float64)
    magnitude = np.abs(x)
    _, exponent = np.frexp(magnitude)
    quantum_exp = np.maximum(exponent.astype(np.int64) - 1, t.emin) - (t.precision - 1)
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = np.ldexp(magnitude, (-quantum_exp).astype(np.int32))
        integer = {"nearest_even": np.rint, "toward_zero": np.floor, "away_from_zero": np.ceil}[mode](scaled)
        if not t.has_zero:
            integer = np.where(integer == 0, 1.0, integer)  # E8M0: the smallest value
        rounded = np.ldexp(integer, quantum_exp.astype(np.int32))
    big = float(t.max_finite)
    overflow = _overflow(t, mode) if mode != "away_from_zero" else _overflow(t, "nearest_even")
    rounded = np.where(rounded > big, overflow, rounded)
    if not t.has_inf:  # a cast of inf: NaN, or max where the format saturates
        rounded = np.where(np.isinf(magnitude), big if t.saturating else np.nan, rounded)
    else:
        rounded = np.where(np.isinf(magnitude), np.inf, rounded)
    rounded = np.where(np.isnan(x), np.nan, rounded)
    if not t.has_zero:
        rounded = np.where(magnitude == 0, np.nan, rounded)
    negative = np.signbit(x)
    if not t.has_sign:
        return np.where(negative & ~np.isnan(x), np.nan, rounded)
    signed = np.where(negative, -rounded, rounded)
    if not t.has_negative_zero:
        signed = np.where(signed == 0, 0.0, signed)
    return signed


# ---------------------------------------------------------------------------- ops, exactly or in mpmath

#: ops whose exact value is a rational of the (float) inputs: computed in Fractions
EXACT: dict[str, Callable[..., Fraction]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "square": lambda a: a * a,
    "reciprocal": lambda a: 1 / a,
    "maximum": lambda a, b: max(a, b),
}

#: ops evaluated with mpmath at high precision (mpf in, mpf out)
MPMATH: dict[str, Callable[..., mpmath.mpf]] = {
    "exp": mpmath.exp,
    "expm1": mpmath.expm1,
    "log": mpmath.log,
    "log1p": mpmath.log1p,
    "sqrt": mpmath.sqrt,
    "rsqrt": lambda x: 1 / mpmath.sqrt(x),
    "sin": mpmath.sin,
    "cos": mpmath.cos,
    "tanh": mpmath.tanh,
    "sigmoid": lambda x: 1 / (1 + mpmath.exp(-x)),
    "erf": mpmath.erf,
    "atan": mpmath.atan,
    "atan2": mpmath.atan2,
}

#: working precisions, in bits, tried in turn until the rounding is decided
PRECISIONS: tuple[int, ...] = (200, 400)


def _mpf_parts(v: mpmath.mpf) -> tuple[bool, int, int]:
    """``v`` as (negative, man, exp): ``v = (-1)**negative * man * 2**exp`` exactly."""
    man, exp = v.man_exp  # of the magnitude: man_exp drops the sign
    return bool(v < 0), int(man), int(exp)


def _evaluate(op: str, args: tuple[float, ...]) -> mpmath.mpf:
    """``op(*args)`` in mpmath at the working precision.  ``atan2(+-0, x)`` follows C99
    Annex F (+-pi for x < 0 or x = -0, +-0 otherwise): mpmath has no signed zero."""
    y, x = (*args, 0.0)[:2]
    if op == "atan2" and y == 0:
        toward_negative_x = x < 0 or (x == 0 and math.copysign(1.0, x) < 0)
        return mpmath.mpf(math.copysign(1.0, y)) * (mpmath.pi if toward_negative_x else 0)
    return MPMATH[op](*(mpmath.mpf(a) for a in args))


#: the only float arguments where these functions are rational (Lindemann-Weierstrass: exp of a
#: nonzero algebraic number is transcendental, hence so are log, sin, cos, tanh, expm1, log1p,
#: atan, sigmoid there; erf of a nonzero rational is not a dyadic rational either)
_RATIONAL_AT: dict[str, tuple[float, Fraction]] = {
    "exp": (0.0, Fraction(1)),
    "expm1": (0.0, Fraction(0)),
    "log": (1.0, Fraction(0)),
    "log1p": (0.0, Fraction(0)),
    "sin": (0.0, Fraction(0)),
    "cos": (0.0, Fraction(1)),
    "tanh": (0.0, Fraction(0)),
    "sigmoid": (0.0, Fraction(1, 2)),
    "erf": (0.0, Fraction(0)),
    "atan": (0.0, Fraction(0)),
}


def _exact_transcendental(op: str, args: tuple[float, ...]) -> Fraction | None:
    """The exact value where it is rational (an exact result is a rounding boundary toward
    zero, which no precision decides), else None.  sqrt and rsqrt: exact when the scaled
    significand is a perfect square (integer isqrt)."""
    if op in _RATIONAL_AT:
        at, value = _RATIONAL_AT[op]
        return value if args[0] == at else None
    if op in ("sqrt", "rsqrt") and args[0] > 0:
        num, den = args[0].as_integer_ratio()  # den is a power of two
        if den.bit_length() % 2 == 0:  # make den an even power of two
            num, den = num * 2, den * 2
        root_num, root_den = math.isqrt(num), math.isqrt(den)
        if root_num * root_num != num:
            return None  # irrational
        root = Fraction(root_num, root_den)
        return root if op == "sqrt" else 1 / root
    if op in ("sqrt", "rsqrt") and args[0] == 0:
        return Fraction(0) if op == "sqrt" else None
    return None


def exact_value_rounded(
    op: str, args: tuple[float, ...], t: Target, mode: RoundingMode = "nearest_even"
) -> float:
    """``op(*args)`` (args: float64 values) correctly rounded to ``t``.

    Zeros are compared by value in the tests: an exact zero result is returned as +0.
    Ops of :data:`EXACT` are evaluated in Fractions; those of :data:`MPMATH` at the first
    of :data:`PRECISIONS` for which the error bound (``2**-(prec - 8)`` relative, 256 ulps
    of the working precision) cannot straddle a rounding boundary.

    >>> exact_value_rounded("exp", (1.0,), target("float16"))
    2.71875
    """
    if op in EXACT:
        return round_exact(EXACT[op](*(Fraction(a) for a in args)), t, mode)
    exact = _exact_transcendental(op, args)
    if exact is not None:
        return round_exact(exact, t, mode)
    for prec in PRECISIONS:
        with mpmath.workprec(prec):
            negative, man, exp = _mpf_parts(mpmath.mpf(_evaluate(op, args)))
        # the interval man * (2**k -+ 1) * 2**(exp - k): the value within 2**-k relative
        k = prec - 8
        exp -= k
        den = 1 << max(-exp, 0)
        low = round_ratio((man * ((1 << k) - 1)) << max(exp, 0), den, t, mode, negative)
        high = round_ratio((man * ((1 << k) + 1)) << max(exp, 0), den, t, mode, negative)
        if low == high or (math.isnan(low) and math.isnan(high)):
            return low
    raise ArithmeticError(f"{op}{args}: cannot decide the rounding at {PRECISIONS[-1]} bits")


#: (op, format, mode, inputs' bytes) -> correctly rounded results, computed once per session
_CACHE: dict[tuple[str, str, str, bytes], np.ndarray] = {}


def correctly_rounded(
    op: str, inputs: tuple[np.ndarray, ...], name: str, mode: RoundingMode = "nearest_even"
) -> np.ndarray:
    """``op`` applied elementwise to float64 ``inputs``, each result correctly rounded to
    format ``name`` (float64 array); cached per op, format, mode and inputs."""
    arrays = [np.ascontiguousarray(x, dtype=np.float64) for x in inputs]
    key = (op, name, mode, b"".join(a.tobytes() for a in arrays))
    disk = _disk_cache_path(key)
    if key not in _CACHE and disk is not None and disk.exists():
        _CACHE[key] = np.load(disk)
    if key not in _CACHE:
        t = target(name)
        rows = list(zip(*(a.ravel().tolist() for a in arrays), strict=True))
        # narrow formats repeat inputs: each distinct one (by bit pattern: -0 is not 0) once
        distinct = {np.array(args).tobytes(): args for args in rows}
        done = {k: exact_value_rounded(op, args, t, mode) for k, args in distinct.items()}
        out = np.array([done[np.array(args).tobytes()] for args in rows], dtype=np.float64)
        _CACHE[key] = out.reshape(arrays[0].shape)
        if disk is not None:
            disk.parent.mkdir(parents=True, exist_ok=True)
            np.save(disk, _CACHE[key])
    return _CACHE[key]


def _disk_cache_path(key: tuple[str, str, str, bytes]) -> Path | None:
    """Where ``PX_ORACLE_CACHE`` (a folder; unset: no disk cache) keeps one result, for runs
    that repeat the same tests many times (benchmarks/mutation.sh)."""
    folder = os.environ.get("PX_ORACLE_CACHE")
    if not folder:
        return None
    digest = hashlib.sha256(repr(key[:3]).encode() + key[3]).hexdigest()[:32]
    return Path(folder) / f"{digest}.npy"


# ---------------------------------------------------------------------------- the number line


def number_line_index(values: np.ndarray, name: str) -> np.ndarray:
    """Position of each finite value of format ``name`` on its number line: consecutive
    values differ by 1, +0 and -0 share 0, and ``-x`` sits at minus the index of ``x``.

    Computed from the table: ``2**mantissa_bits`` values per binade, the subnormals (or,
    without subnormals, the binades) counted up from the smallest positive value.

    >>> number_line_index(np.array([0.0, 2.0**-24, 2.0**-14, 1.0, -65504.0]), "float16").tolist()
    [0, 1, 1024, 15360, -31743]
    """
    spec = SPECS[name]
    x = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(x)):
        raise ValueError("number_line_index takes finite values")
    magnitude = np.abs(x)
    per_binade = 1 << spec.mantissa_bits
    _, exponent = np.frexp(magnitude)  # magnitude = f * 2**exponent, 0.5 <= f < 1
    binade = np.maximum(exponent.astype(np.int64) - 1, emin(spec))
    scaled = np.ldexp(magnitude, (spec.mantissa_bits - binade).astype(np.int32))  # exact
    if not np.all(scaled == np.floor(scaled)):
        raise ValueError(f"values not in {name}")
    in_binade = scaled.astype(np.int64)
    if spec.has_subnormals:
        index = (binade - emin(spec)) * per_binade + in_binade
    else:  # one value per binade (E8M0): 2**emin is index 0
        index = binade - emin(spec) + (in_binade - per_binade)
    index = np.where(magnitude == 0, 0, index)
    return np.where(x < 0, -index, index).astype(np.int64)


# ---------------------------------------------------------------------------- every value of a format


def finite_values(name: str) -> np.ndarray:
    """The distinct finite values of a format of 16 bits or fewer, sorted, from the table
    (:func:`decode_bits`), ``-0`` merged with ``0``.

    >>> finite_values("float16").size, finite_values("bfloat16").size
    (63487, 65279)
    """
    spec = SPECS[name]
    values = decode_bits(np.arange(1 << spec.bits), spec)
    return np.unique(values[np.isfinite(values)]) + 0.0


# ---------------------------------------------------------------------------- unary ops, every input
#
# The classification oracle: for every input x of a format, the exact f(x) correctly rounded, and
# its kind.  Written from the mathematics alone (no explorer; no float64 library function of f but
# scipy's erfinv as a guess that is then verified, below):
#
# - where f is not real-valued (outside its domain, or undefined inside it: digamma at -1, -2, ...)
#   the value is NaN, kind ``nan``;
# - at a pole (a point where f is infinite: log(0), 1/0, lgamma(-3)) the value is that infinity
#   (the limit from the side the IEEE signed zero picks: log(+0) = -inf, digamma(+0) = -inf),
#   kind ``ok``; at an exact zero (sin(0), log(1), lgamma(2)) the value is 0, kind ``ok``;
# - elsewhere f(x) is finite and nonzero: ``overflow`` when it rounds to inf, ``underflow`` when
#   it rounds to 0, ``subnormal`` when it rounds to a subnormal, else ``ok``.
#
# Values come from mpmath (Ziv's strategy from 64 bits up, a 2**-(prec - 24) relative error bound,
# generous for the compound formulas), from exact rationals (Fractions) or, for the ops whose
# float64 value is exactly f(x) (abs, floor, x*x of a 16-bit value, ...), from float64 itself.  Two
# ops use float64 division: 1/x and x/5 of 16-bit values, rounded once more to the format; that
# double rounding is innocuous (Figueroa del Cid, 2000: for +, -, *, / and sqrt of p-bit operands,
# rounding to 53 bits and then to p bits equals rounding once when 53 >= 2p + 2; p <= 11 here).
#
# Two shortcuts make every input affordable, both exact:
# - symmetry: odd and even functions are computed for x > 0 and mirrored;
# - monotone pieces: the kinds are intervals of |f(x)| (below half the smallest subnormal: 0;
#   then subnormal; normal; past the overflow bound), so where f is monotone on an interval, two
#   inputs a < b where f has the same sign and the same kind bound every input between them
#   (f(x) lies between f(a) and f(b)): runs of one kind are filled by bisection, a few dozen
#   evaluations per piece.  sin and tan are monotone between their extrema or poles
#   ((k - 1/2) pi, (k + 1/2) pi), cos on (k pi, (k + 1) pi) (the piece of x in float64 where the
#   quotient is far from an integer, else in mpmath); digamma between its poles; lgamma on each
#   (-n - 1, -n) on either side of where digamma, its increasing derivative, changes sign.
# The correctly rounded values themselves are computed at every evaluated input (the bisection's,
# which sit at the kind boundaries) and at every ``stride``-th input, and compared there.
# erfinv (slow in mpmath) is inverted by its increasing inverse: c is RN(erfinv(x)) exactly when
# erf of the midpoints around c brackets x; the float64 guess only picks which c to check.

_SELU_ALPHA = "1.6732632423543772848170429916717"
_SELU_SCALE = "1.0507009873554804934193349852946"


def _mp_lgamma(x: mpmath.mpf) -> mpmath.mpf:
    return mpmath.loggamma(x) if x > 0 else mpmath.log(abs(mpmath.gamma(x)))


def _mp_selu(x: mpmath.mpf) -> mpmath.mpf:
    inner = x if x > 0 else mpmath.mpf(_SELU_ALPHA) * mpmath.expm1(x)
    return mpmath.mpf(_SELU_SCALE) * inner


def _never(x: float) -> bool:
    return False


def _integer_at_most_zero(x: float) -> bool:
    return x <= 0 and x == math.floor(x)


def _negative_integer(x: float) -> bool:
    return x < 0 and x == math.floor(x)


@dataclass(frozen=True)
class UnarySpec:
    """What the oracle knows of one real function of one variable."""

    #: ``mpmath``: ``f`` maps mpf to mpf; ``rational``: Fraction to Fraction (exact);
    #: ``float64``: a NumPy function whose float64 value is exact, or innocuously rounded (above)
    how: Literal["mpmath", "rational", "float64"]
    f: Callable[..., object]
    #: closed interval where f is real-valued
    domain: tuple[float, float] = (-math.inf, math.inf)
    #: points where f is exactly 0
    zeros: tuple[float, ...] = ()
    #: poles: (points, the infinity there) and a predicate for infinitely many
    poles: tuple[tuple[float, float], ...] = ()
    pole_where: Callable[[float], bool] = _never
    pole_value: float = math.inf
    #: points inside the domain where f is undefined (NaN)
    undefined: Callable[[float], bool] = _never
    #: 1: even, -1: odd, 0: neither (computed for x > 0 and mirrored when not 0)
    parity: int = 0
    #: open intervals on which f is monotone (for the fill shortcut)
    monotone: tuple[tuple[float, float], ...] = ()
    #: for x < 0: monotone between consecutive integers (digamma)
    monotone_between_integers: bool = False
    #: monotone on (k - offset, k + 1 - offset) * pi for integers k (sin, tan: 1/2; cos: 0)
    pi_pieces: float | None = None
    #: for x < 0, between consecutive integers: the derivative, increasing there (f is decreasing
    #: where it is negative, then increasing: lgamma, whose derivative is digamma)
    derivative_between_integers: Callable[[mpmath.mpf], mpmath.mpf] | None = None


_R = (-math.inf, math.inf)
_POS = ((0.0, math.inf),)

UNARY: dict[str, UnarySpec] = {
    "abs": UnarySpec("float64", np.abs),
    "neg": UnarySpec("float64", np.negative),
    "sign": UnarySpec("float64", np.sign),
    "floor": UnarySpec("float64", np.floor),
    "ceil": UnarySpec("float64", np.ceil),
    "round": UnarySpec("float64", np.rint),  # half to even
    "square": UnarySpec("float64", np.square),  # 22 bits of a 16-bit value: exact
    "relu": UnarySpec("float64", lambda x: np.maximum(x, 0.0)),
    "relu6": UnarySpec("float64", lambda x: np.minimum(np.maximum(x, 0.0), 6.0)),
    "reciprocal": UnarySpec("float64", lambda x: 1.0 / x, poles=((0.0, math.inf),)),
    "leaky_relu": UnarySpec("float64", lambda x: np.where(x > 0, x, x / 5.0)),  # alpha = 1/5
    "softsign": UnarySpec("rational", lambda x: x / (1 + abs(x)), zeros=(0.0,), parity=-1, monotone=(_R,)),
    "sqrt": UnarySpec("mpmath", mpmath.sqrt, (0.0, math.inf), zeros=(0.0,), monotone=_POS),
    "rsqrt": UnarySpec(
        "mpmath", lambda x: 1 / mpmath.sqrt(x), (0.0, math.inf), poles=((0.0, math.inf),), monotone=_POS
    ),
    "exp": UnarySpec("mpmath", mpmath.exp, monotone=(_R,)),
    "expm1": UnarySpec("mpmath", mpmath.expm1, zeros=(0.0,), monotone=(_R,)),
    "log": UnarySpec(
        "mpmath", mpmath.log, (0.0, math.inf), zeros=(1.0,), poles=((0.0, -math.inf),), monotone=_POS
    ),
    "log1p": UnarySpec(
        "mpmath",
        mpmath.log1p,
        (-1.0, math.inf),
        zeros=(0.0,),
        poles=((-1.0, -math.inf),),
        monotone=((-1.0, math.inf),),
    ),
    "sin": UnarySpec("mpmath", mpmath.sin, zeros=(0.0,), parity=-1, pi_pieces=0.5),
    "cos": UnarySpec("mpmath", mpmath.cos, parity=1, pi_pieces=0.0),
    "tan": UnarySpec("mpmath", mpmath.tan, zeros=(0.0,), parity=-1, pi_pieces=0.5),
    "asin": UnarySpec("mpmath", mpmath.asin, (-1.0, 1.0), zeros=(0.0,), parity=-1, monotone=((-1.0, 1.0),)),
    "acos": UnarySpec("mpmath", mpmath.acos, (-1.0, 1.0), zeros=(1.0,), monotone=((-1.0, 1.0),)),
    "atan": UnarySpec("mpmath", mpmath.atan, zeros=(0.0,), parity=-1, monotone=(_R,)),
    "sinh": UnarySpec("mpmath", mpmath.sinh, zeros=(0.0,), parity=-1, monotone=(_R,)),
    "cosh": UnarySpec("mpmath", mpmath.cosh, parity=1, monotone=_POS),
    "tanh": UnarySpec("mpmath", mpmath.tanh, zeros=(0.0,), parity=-1, monotone=(_R,)),
    "asinh": UnarySpec("mpmath", mpmath.asinh, zeros=(0.0,), parity=-1, monotone=(_R,)),
    "acosh": UnarySpec("mpmath", mpmath.acosh, (1.0, math.inf), zeros=(1.0,), monotone=((1.0, math.inf),)),
    "atanh": UnarySpec(
        "mpmath",
        mpmath.atanh,
        (-1.0, 1.0),
        zeros=(0.0,),
        poles=((-1.0, -math.inf), (1.0, math.inf)),
        parity=-1,
        monotone=((-1.0, 1.0),),
    ),
    "sigmoid": UnarySpec("mpmath", lambda x: 1 / (1 + mpmath.exp(-x)), monotone=(_R,)),
    "erf": UnarySpec("mpmath", mpmath.erf, zeros=(0.0,), parity=-1, monotone=(_R,)),
    "erfc": UnarySpec("mpmath", mpmath.erfc, monotone=(_R,)),
    "erfinv": UnarySpec(
        "mpmath",
        mpmath.erfinv,
        (-1.0, 1.0),
        zeros=(0.0,),
        poles=((-1.0, -math.inf), (1.0, math.inf)),
        parity=-1,
        monotone=((-1.0, 1.0),),
    ),
    # lgamma = log|Gamma|: +inf at 0, -1, -2, ...; minimum at 1.4616...: decreasing, then increasing
    "lgamma": UnarySpec(
        "mpmath",
        _mp_lgamma,
        zeros=(1.0, 2.0),
        pole_where=_integer_at_most_zero,
        monotone=((0.0, 1.4616), (1.4617, math.inf)),
        derivative_between_integers=mpmath.digamma,
    ),
    # digamma: increasing between its poles; -inf at +0 (from the right), undefined at -1, -2, ...
    "digamma": UnarySpec(
        "mpmath",
        mpmath.digamma,
        poles=((0.0, -math.inf),),
        undefined=_negative_integer,
        monotone=_POS,
        monotone_between_integers=True,
    ),
    "bessel_i0": UnarySpec("mpmath", lambda x: mpmath.besseli(0, x), parity=1, monotone=_POS),
    "bessel_i0e": UnarySpec(
        "mpmath", lambda x: mpmath.besseli(0, x) * mpmath.exp(-abs(x)), parity=1, monotone=_POS
    ),
    "bessel_i1": UnarySpec("mpmath", lambda x: mpmath.besseli(1, x), zeros=(0.0,), parity=-1, monotone=(_R,)),
    "elu": UnarySpec("mpmath", lambda x: x if x > 0 else mpmath.expm1(x), zeros=(0.0,), monotone=(_R,)),
    "selu": UnarySpec("mpmath", _mp_selu, zeros=(0.0,), monotone=(_R,)),
    "softplus": UnarySpec("mpmath", lambda x: mpmath.log1p(mpmath.exp(x)), monotone=(_R,)),
    # gelu = x Phi(x): minimum near -0.7518; silu = x sigmoid(x): minimum near -1.2785
    "gelu": UnarySpec(
        "mpmath",
        lambda x: x / 2 * mpmath.erfc(-x / mpmath.sqrt(2)),
        zeros=(0.0,),
        monotone=((-math.inf, -0.76), (-0.75, math.inf)),
    ),
    "silu": UnarySpec(
        "mpmath",
        lambda x: x / (1 + mpmath.exp(-x)),
        zeros=(0.0,),
        monotone=((-math.inf, -1.28), (-1.27, math.inf)),
    ),
    "log_sigmoid": UnarySpec("mpmath", lambda x: -mpmath.log1p(mpmath.exp(-x)), monotone=(_R,)),
}

#: Ziv's working precisions, in bits
UNARY_PRECISIONS: tuple[int, ...] = (64, 128, 256, 512)


def _round_dyadic(man: int, exp: int, t: Target, negative: bool) -> float:
    """``(-1)**negative * man * 2**exp`` rounded to nearest-even, without building huge integers:
    values of at least ``2**(emax + 2)`` overflow, values below half the smallest subnormal
    go to zero, before any shift."""
    if man == 0:
        return round_ratio(0, 1, t, negative=negative)
    top = exp + man.bit_length()  # 2**(top - 1) <= value < 2**top
    emax = _floor_log2(t.max_finite.numerator, t.max_finite.denominator)
    if top - 1 >= emax + 2:
        result = _overflow(t, "nearest_even")
        return -result if negative else result
    if top <= t.emin - t.precision:  # below 2**(emin - precision): under half the smallest subnormal
        return round_ratio(0, 1, t, negative=negative)
    return round_ratio(man << max(exp, 0), 1 << max(-exp, 0), t, negative=negative)


def _decide(value: mpmath.mpf, k: int, t: Target) -> float | None:
    """The rounding of ``value`` known to within ``2**-k`` relative, or None if the interval
    straddles a rounding boundary."""
    negative, man, exp = _mpf_parts(value)
    low = _round_dyadic(man * ((1 << k) - 1), exp - k, t, negative)
    high = _round_dyadic(man * ((1 << k) + 1), exp - k, t, negative)
    return low if low == high else None


def _mp_rounded(f: Callable[[mpmath.mpf], mpmath.mpf], x: float, t: Target) -> tuple[float, int]:
    """``f(x)`` (finite, nonzero) correctly rounded, and its sign."""
    for prec in UNARY_PRECISIONS:
        with mpmath.workprec(prec):
            value = mpmath.mpf(f(mpmath.mpf(x)))
        if value == 0:
            continue  # cancellation at this precision: f(x) is not zero here
        decided = _decide(value, prec - 24, t)
        if decided is not None:
            return decided, (-1 if value < 0 else 1)
    raise ArithmeticError(f"f({x!r}): cannot decide the rounding at {UNARY_PRECISIONS[-1]} bits")


def _above(a: mpmath.mpf, x: float) -> bool | None:
    """Whether ``a`` (within 2**-40 relative) is above ``x``; None when too close to tell."""
    gap = abs(a) * mpmath.mpf(2) ** -40
    if a - gap > x:
        return True
    if a + gap < x:
        return False
    return None


def _erfinv_rounded(x: float, grid: np.ndarray, t: Target, name: str) -> tuple[float, int]:
    """RN(erfinv(x)) for 0 < |x| < 1 by bracketing: ``c`` is the answer iff
    ``erf(mid(c-, c)) < x < erf(mid(c, c+))`` (erf increasing, ``grid`` the format's values)."""
    import scipy.special

    guess = round_array(np.array([float(scipy.special.erfinv(x))]), name)[0]
    i = int(np.searchsorted(grid, guess))
    for _ in range(4):
        lo = (grid[i - 1] + grid[i]) / 2  # exact: neighbours of a 16-bit format
        hi = (grid[i] + grid[i + 1]) / 2
        with mpmath.workprec(80):
            below = _above(mpmath.erf(mpmath.mpf(lo)), x)
            above = _above(mpmath.erf(mpmath.mpf(hi)), x)
        if below is None or above is None:
            break
        if not below and above:
            return float(grid[i]), (-1 if x < 0 else 1)
        i += 1 if not above else -1
    return _mp_rounded(mpmath.erfinv, x, t)


#: the state of the exact f(x) at one input, beside its rounding: -1 / 1 the sign of a finite
#: nonzero value, and the special cases
EXACT_ZERO, POLE, UNDEFINED = 0, 2, 3


def _special(spec: UnarySpec, x: float) -> tuple[float, int] | None:
    """``(value, state)`` at a point the spec names (NaN, a pole, an exact zero), else None."""
    lo, hi = spec.domain
    if not lo <= x <= hi or spec.undefined(x):
        return math.nan, UNDEFINED
    for at, value in spec.poles:
        if x == at:
            return value, POLE
    if spec.pole_where(x):
        return spec.pole_value, POLE
    if x in spec.zeros:
        return 0.0, EXACT_ZERO
    return None


def _pi_piece(x: float, offset: float) -> int:
    """``floor(x / pi + offset)``, exactly: in float64 where it is far from an integer (x below
    2**20: the quotient is within 2**-32 of exact), else in mpmath with bits to spare."""
    q = x / math.pi + offset
    if x < 2.0**20 and abs(q - round(q)) > 1e-6:
        return math.floor(q)
    with mpmath.workprec(400):  # x is below 2**128: far fewer bits than pi carries here
        return int(mpmath.floor(mpmath.mpf(x) / mpmath.pi + offset))


def _piece(spec: UnarySpec, x: float) -> object:
    """An id of the monotone piece that holds ``x`` (None: none)."""
    for k, (lo, hi) in enumerate(spec.monotone):
        if lo < x < hi:
            return k
    if spec.monotone_between_integers and x < 0:
        return ("between", math.floor(x))
    if spec.pi_pieces is not None:
        return ("pi", _pi_piece(x, spec.pi_pieces))
    return None


def _sign_of(f: Callable[[mpmath.mpf], mpmath.mpf], x: float) -> int:
    """The sign of ``f(x)`` (nonzero), decided with Ziv's precisions."""
    for prec in UNARY_PRECISIONS:
        with mpmath.workprec(prec):
            value = f(mpmath.mpf(x))
            if abs(value) > abs(value) * mpmath.mpf(2) ** -(prec - 24) and value != 0:
                return 1 if value > 0 else -1
    raise ArithmeticError(f"cannot decide the sign of f({x!r})")


def _split_by_derivative(spec: UnarySpec, x: np.ndarray, pieces: list[object], first: int) -> list[object]:
    """Pieces of ``derivative_between_integers``: each negative interval (-n - 1, -n) split
    where the increasing derivative changes sign (bisection on its sign)."""
    derivative = spec.derivative_between_integers
    if derivative is None:
        return pieces
    out = list(pieces)
    i = first
    while i < x.size:
        v = float(x[i])
        if v >= 0 or _special(spec, v) is not None:
            i += 1
            continue
        j = i
        while j + 1 < x.size and x[j + 1] < math.floor(v) + 1 and _special(spec, float(x[j + 1])) is None:
            j += 1
        lo, hi = i, j  # derivative < 0 up to lo (if it is), > 0 from hi (if it is)
        if _sign_of(derivative, float(x[lo])) > 0:
            hi = lo - 1
        elif _sign_of(derivative, float(x[hi])) < 0:
            lo = hi + 1
        else:
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if _sign_of(derivative, float(x[mid])) < 0:
                    lo = mid
                else:
                    hi = mid
        for k in range(i, j + 1):
            out[k - first] = ("down" if k <= lo else "up", math.floor(v))
        i = j + 1
    return out


def _float64_rounded(spec: UnarySpec, x: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(divide="ignore", invalid="ignore"):
        exact = np.asarray(spec.f(x), dtype=np.float64)
    state = np.sign(exact).astype(np.int64)
    for at, value in spec.poles:
        exact = np.where(x == at, value, exact)
        state = np.where(x == at, POLE, state)
    return round_array(exact, name), state


def _kind(value: float, state: int, normal: float) -> str:
    """The kind of an input from ``RN(f(x))`` and the state of the exact ``f(x)``."""
    if state == UNDEFINED:
        return "nan"
    if state in (POLE, EXACT_ZERO):
        return "ok"
    if math.isinf(value):
        return "overflow"
    if value == 0:
        return "underflow"
    return "subnormal" if abs(value) < normal else "ok"


@dataclass
class UnaryOracle:
    """The oracle's answer for one op in one format."""

    #: every finite value of the format, sorted (-0 merged with 0)
    x: np.ndarray
    #: the kind of every input
    kinds: np.ndarray
    #: indices of ``x`` where the correctly rounded value was computed, and those values
    checked: np.ndarray
    rounded: np.ndarray


def unary_oracle(op: str, name: str, stride: int = 32) -> UnaryOracle:
    """Kinds of every finite value of format ``name`` (16 bits or fewer) for op ``op``, and the
    correctly rounded values at the inputs evaluated (see the comment above :class:`UnarySpec`).

    >>> o = unary_oracle("sigmoid", "float16")
    >>> str(o.kinds[0]), float(o.x[0]), int((o.kinds == "underflow").sum())
    ('underflow', -65504.0, 12202)
    """
    spec = UNARY[op]
    t = target(name)
    x = finite_values(name)
    normal = float(smallest_normal(SPECS[name]))
    if spec.how == "float64":
        rounded, state = _float64_rounded(spec, x, name)
        kinds = [_kind(v, s, normal) for v, s in zip(rounded.tolist(), state.tolist(), strict=True)]
        return UnaryOracle(x, np.array(kinds), np.arange(x.size), rounded)
    values: dict[int, tuple[float, int]] = {}
    grid = x

    def evaluate(i: int) -> tuple[float, int]:
        if i not in values:
            v = float(x[i])
            special = _special(spec, v)
            if special is not None:
                values[i] = special
            elif spec.how == "rational":
                r = round_exact(spec.f(Fraction(v)), t)  # type: ignore[arg-type]
                values[i] = (r, 1 if spec.f(Fraction(v)) > 0 else -1)  # type: ignore[arg-type, operator]
            elif op == "erfinv":
                values[i] = _erfinv_rounded(v, grid, t, name)
            else:
                values[i] = _mp_rounded(spec.f, v, t)  # type: ignore[arg-type]
        return values[i]

    def key(i: int) -> tuple[str, int]:
        value, state = evaluate(i)
        return _kind(value, state, normal), state

    kinds = np.empty(x.size, dtype=object)
    first = 0 if spec.parity == 0 else int(np.searchsorted(x, 0.0, side="right"))
    gaps = np.diff(x)
    alone = np.concatenate([[True], gaps > 4]) & np.concatenate([gaps > 4, [True]])
    alone &= spec.pi_pieces is not None  # alone in a piece of width pi
    pieces = [
        None if _special(spec, v) is not None else ("alone", i) if alone[i] else _piece(spec, v)
        for i, v in enumerate(x.tolist())
    ][first:]
    pieces = _split_by_derivative(spec, x, pieces, first)
    start = first
    while start < x.size:
        end = start
        piece = pieces[start - first]
        while piece is not None and end + 1 < x.size and pieces[end + 1 - first] == piece:
            end += 1
        _fill_kinds(start, end, key, kinds)
        start = end + 1
    for i in range(first, x.size, stride):
        evaluate(i)
    if spec.parity != 0:
        negative = np.nonzero(x < 0)[0]
        mirror = np.searchsorted(x, -x[negative])
        assert np.array_equal(x[mirror], -x[negative]), "values must be symmetric about 0"
        kinds[negative] = kinds[mirror]
        zero = int(np.searchsorted(x, 0.0))
        kinds[zero] = key(zero)[0]
        for i, j in zip(negative.tolist(), mirror.tolist(), strict=True):
            if j in values:
                value, state = values[j]
                values[i] = (value * spec.parity, state * spec.parity if state in (-1, 1) else state)
    checked = np.array(sorted(values), dtype=np.int64)
    return UnaryOracle(x, kinds.astype(str), checked, np.array([values[i][0] for i in checked.tolist()]))


def _fill_kinds(start: int, end: int, key: Callable[[int], tuple[str, int]], kinds: np.ndarray) -> None:
    """Kinds of ``x[start..end]`` (one monotone piece, or one input): bisect, filling each
    stretch whose two ends have the same kind and sign."""
    for i in {start, end}:
        kinds[i] = key(i)[0]
    stack = [(start, end)]
    while stack:
        lo, hi = stack.pop()
        if hi - lo <= 1:
            continue
        if key(lo) == key(hi):
            kinds[lo + 1 : hi] = kinds[lo]
            continue
        mid = (lo + hi) // 2
        kinds[mid] = key(mid)[0]
        stack += [(lo, mid), (mid, hi)]
