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
