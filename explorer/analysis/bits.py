"""The bit inspector: a value in a format, field by field.

>>> info = inspect_value("0.1", "float16")
>>> info.sign, info.exponent_bits, info.mantissa_bits
(0, '01011', '1001100110')
>>> info.exact
'0.0999755859375'
>>> info.below, info.above
(0.09991455078125, 0.10003662109375)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

from explorer.formats import Format, decode, encode, from_ordinals, ordinals, resolve, ulp_of_max

#: Classes of a value.
VALUE_CLASSES: tuple[str, ...] = ("zero", "subnormal", "normal", "inf", "nan")


@dataclass(frozen=True)
class BitInfo:
    """One value rounded (nearest-even) to a format, and its anatomy."""

    format: str
    #: the value asked about (as parsed, float64)
    input: float
    #: the stored value (float64; exact)
    value: float
    #: the stored value's exact decimal expansion
    exact: str
    #: the bit pattern, most significant bit first, ``bits`` characters wide
    bits: str
    hex: str
    #: sign bit (None for formats without a sign)
    sign: int | None
    exponent_bits: str
    mantissa_bits: str
    #: stored exponent field as an integer
    exponent_field: int
    #: unbiased exponent (None for zero, inf and NaN)
    exponent: int | None
    #: one of :data:`VALUE_CLASSES`
    kind: str
    #: the next smaller / larger non-NaN values of the format (None at the ends or for NaN)
    below: float | None
    above: float | None
    #: stored value minus the value asked about (exact for decimal strings, rounded to float64)
    rounding_error: float
    #: ``rounding_error / |input|`` (None when the input is 0, inf or NaN)
    relative_error: float | None
    #: why the format stores this value (:func:`explain_value`): exact, rounded, underflowed,
    #: overflowed, saturated, or a NaN the format cannot hold
    explanation: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values."""
        return dict(self.__dict__)

    def __repr__(self) -> str:
        return (
            f"BitInfo({self.format}: {self.input!r} -> {self.value!r} = {self.bits} "
            f"[{self.kind}], error {self.rounding_error!r})"
        )


#: longest numeric text read (a float64 needs at most ~770 significant digits to be exact)
MAX_VALUE_LENGTH = 1000
#: largest decimal exponent read: beyond it every format rounds to 0 or inf, and the exact
#: rounding error would need a 10**exponent integer (seconds to hours of work)
MAX_DECIMAL_EXPONENT = 5000
_EXPONENT = re.compile(r"[eE]\s*([-+]?\d+)")


def check_value_text(text: str) -> str:
    """``text`` when it is short enough and its decimal exponent is in range; ValueError otherwise.

    >>> check_value_text("1e-5")
    '1e-5'
    """
    if len(text) > MAX_VALUE_LENGTH:
        raise ValueError(f"a value of at most {MAX_VALUE_LENGTH} characters, please")
    match = _EXPONENT.search(text)
    if match is not None and abs(int(match.group(1))) > MAX_DECIMAL_EXPONENT:
        raise ValueError(
            f"the decimal exponent must be between -{MAX_DECIMAL_EXPONENT} and {MAX_DECIMAL_EXPONENT}"
        )
    return text


def _parse(value: Any) -> tuple[float, Fraction | None]:
    """float64 of the value (correctly rounded: beyond float64's range, an infinity), and its
    exact rational value when it has one (None for inf and nan)."""
    if isinstance(value, str):
        text = check_value_text(value.strip())
        try:
            number = float(text)
        except ValueError:
            raise ValueError(f"cannot read {value!r} as a number; write e.g. 0.1, 1e-5, -inf, nan") from None
        if not np.isfinite(number) and text.lower().lstrip("+-") in ("inf", "infinity", "nan"):
            return number, None
        return number, Fraction(text)
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"value must be a number or a numeric string, got {type(value).__name__}")
    if isinstance(value, int | np.integer):
        exact = Fraction(int(value))
        try:
            return float(exact), exact
        except OverflowError:  # beyond float64: its correct float64 rounding is an infinity
            return (math.inf if value > 0 else -math.inf), exact
    number = float(value)
    return number, (Fraction(number) if np.isfinite(number) else None)


def value_class(values: np.ndarray, fmt: Any) -> np.ndarray:
    """Class (:data:`VALUE_CLASSES`) of each value of ``fmt``.

    >>> value_class(np.array([0.0, 1e-6, 1.0, np.inf]), "float16").tolist()
    ['zero', 'subnormal', 'normal', 'inf']
    """
    fmt = resolve(fmt)
    v = np.asarray(values, dtype=np.float64)
    out = np.full(v.shape, "normal", dtype=object)
    a = np.abs(v)
    out[(a > 0) & (a < fmt.smallest_normal)] = "subnormal"
    out[v == 0] = "zero"
    out[np.isinf(v)] = "inf"
    out[np.isnan(v)] = "nan"
    return out


def _fields(pattern: int, fmt: Format) -> tuple[int | None, int, int]:
    mantissa = pattern & ((1 << fmt.mantissa_bits) - 1)
    exponent = (pattern >> fmt.mantissa_bits) & ((1 << fmt.exponent_bits) - 1)
    sign = (pattern >> (fmt.bits - 1)) & 1 if fmt.has_sign else None
    return sign, exponent, mantissa


def _neighbours(value: float, fmt: Format) -> tuple[float | None, float | None]:
    if np.isnan(value):
        return None, None
    ords = ordinals(np.array([value]), fmt)[0]
    candidates = from_ordinals(np.array([ords - 1, ords + 1]), fmt) if fmt.bits == 64 else None
    if candidates is None:
        values = []
        for o in (ords - 1, ords + 1):
            magnitude = abs(int(o))
            if magnitude >= (1 << (fmt.bits - (1 if fmt.has_sign else 0))) or (o < 0 and not fmt.has_sign):
                values.append(np.nan)
            else:
                values.append(float(from_ordinals(np.array([o]), fmt)[0]))
        candidates = np.array(values)
    below, above = (float(c) if not np.isnan(c) else None for c in candidates)
    if value == 0:  # step over the other zero
        below = below if below != 0 else None
    return below, above


def inspect_value(value: Any, fmt: Any) -> BitInfo:
    """Round ``value`` (a number, or a decimal string for an exact rounding error) to ``fmt``
    and take it apart: sign, exponent and mantissa fields, exact value, neighbours, error, and
    the sentence of :func:`explain_value` (a NaN or an infinity the format cannot hold is said).

    >>> inspect_value(65519, "float16").value, inspect_value(65520, "float16").value
    (65504.0, inf)
    >>> inspect_value("nan", "float4_e2m1fn").explanation
    "float4_e2m1fn has no NaN: NaN is stored as -0 (ml_dtypes' conversion)."
    """
    fmt = resolve(fmt)
    number, exact_in = _parse(value)
    with np.errstate(over="ignore", invalid="ignore"):
        pattern = int(encode(np.array([number]), fmt)[0])
    stored = float(decode(np.array([pattern]), fmt)[0])
    sign, exp_field, mantissa = _fields(pattern, fmt)
    kind = str(value_class(np.array([stored]), fmt)[0])
    exponent = None
    if kind == "normal":
        exponent = exp_field - fmt.bias
    elif kind == "subnormal":
        exponent = 1 - fmt.bias
    below, above = _neighbours(stored, fmt)
    if exact_in is not None and np.isfinite(stored):
        error_exact = Fraction(stored) - exact_in
        error = float(error_exact)
        relative = float(error_exact / abs(exact_in)) if exact_in != 0 else None
    elif exact_in is None and stored == number:  # an infinity in, the same infinity out
        error, relative = 0.0, None
    else:  # a finite value became inf or NaN (the error is that result), or NaN in and out
        with np.errstate(invalid="ignore"):
            error = stored if exact_in is not None else stored - number
        relative = None
    width = fmt.bits
    info = BitInfo(
        format=fmt.name,
        input=number,
        value=stored,
        exact=str(Decimal(stored)) if np.isfinite(stored) else str(stored),
        bits=format(pattern, f"0{width}b"),
        hex=f"0x{pattern:0{(width + 3) // 4}x}",
        sign=sign,
        exponent_bits=format(exp_field, f"0{fmt.exponent_bits}b"),
        mantissa_bits=format(mantissa, f"0{fmt.mantissa_bits}b") if fmt.mantissa_bits else "",
        exponent_field=exp_field,
        exponent=exponent,
        kind=kind,
        below=below,
        above=above,
        rounding_error=error,
        relative_error=relative,
    )
    return replace(info, explanation=explain_value(info))


def value_table(fmt: Any) -> Any:
    """Every code point of a format of 8 bits or fewer, as a pandas DataFrame with columns
    ``code, bits, hex, value, class, sign, exponent_field, mantissa_field``.

    >>> value_table("float4_e2m1fn").value.tolist()[:4]
    [0.0, 0.5, 1.0, 1.5]
    """
    import pandas as pd

    fmt = resolve(fmt)
    if fmt.bits > 8:
        raise ValueError(
            f"{fmt.name} has {fmt.bits} bits; the value table lists formats of 8 bits or "
            "fewer (use inspect_value for single values)"
        )
    codes = np.arange(1 << fmt.bits)
    values = decode(codes, fmt)
    fields = [_fields(int(c), fmt) for c in codes]
    return pd.DataFrame(
        {
            "code": codes,
            "bits": [format(int(c), f"0{fmt.bits}b") for c in codes],
            "hex": [f"0x{int(c):02x}" for c in codes],
            "value": values,
            "class": value_class(values, fmt),
            "sign": [f[0] for f in fields],
            "exponent_field": [f[1] for f in fields],
            "mantissa_field": [f[2] for f in fields],
        }
    )


def _power_of_two(value: float) -> str:
    """``"2**-24"`` when ``value`` is an exact power of two, else its repr."""
    mantissa, exponent = math.frexp(value)
    return f"2**{exponent - 1}" if mantissa == 0.5 else repr(value)


def _short(value: float) -> str:
    """A value as people read it: integers in full (``-0`` keeps its sign), values whose exact
    decimal has at most :data:`EXACT_DIGITS` significant digits exactly, others to 4
    significant digits.

    >>> _short(0.1015625), _short(0.0999755859375), _short(448.0), _short(-0.0)
    ('0.1015625', '0.09998', '448', '-0')
    """
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    exact = exact_short(value)
    return exact if exact is not None else format(value, ".4g")


#: significant digits up to which a value is written exactly (0.1015625) rather than shortened
EXACT_DIGITS = 8


def exact_short(value: float) -> str | None:
    """``value``'s exact decimal when it has at most :data:`EXACT_DIGITS` significant digits
    (integers below 10**7 in full), else None.

    >>> exact_short(0.1015625), exact_short(0.1), exact_short(1 / 3)
    ('0.1015625', None, None)
    """
    from decimal import Decimal

    value = float(value)
    if not math.isfinite(value):
        return None
    if value.is_integer() and abs(value) < 1e7:
        return str(int(value))
    exact = Decimal(value)
    digits = exact.as_tuple().digits
    if len(digits) > EXACT_DIGITS or abs(value) < 1e-4:
        return None
    return format(exact, "f")


def value_text(value: float, mantissa_bits: int) -> str:
    """A value of a format with ``mantissa_bits`` explicit mantissa bits as the Bits tab writes it,
    in its table and its sentences alike: exactly when :func:`exact_short` can, else ``≈`` and
    enough significant digits to tell it from its neighbours in the format.

    >>> value_text(0.1015625, 3), value_text(0.0999755859375, 10), value_text(448.0, 3)
    ('0.1015625', '≈0.099976', '448')
    """
    exact = exact_short(value) if math.isfinite(value) and value != 0 else None
    if exact is not None:
        return exact
    if value == 0 or not math.isfinite(value):
        return _short(value) if value == 0 else str(value)
    digits = max(math.ceil((int(mantissa_bits) + 1) * math.log10(2)) + 1, 4)
    return "≈" + format(value, f".{digits}g")


def _lacks(fmt: Format) -> str:
    return "neither infinity nor NaN" if not fmt.has_nan else "no infinity"


def explain_value(info: BitInfo) -> str:
    """One or two sentences saying why ``info.value`` is what the format stores for
    ``info.input``: exact, rounded (by how much), subnormal, underflowed to 0, overflowed to
    inf, became NaN (no infinity) or saturated at the largest value.  The thresholds are the
    format's own (:mod:`explorer.formats`, from ``ml_dtypes.finfo``).

    >>> explain_value(inspect_value("1000", "float8_e4m3fn"))  # doctest: +ELLIPSIS
    '1000 is beyond the largest finite float8_e4m3fn value, 448 ...has no infinity, so it becomes NaN.'
    >>> explain_value(inspect_value("1e-9", "float16"))  # doctest: +ELLIPSIS
    '1e-09 underflows to 0: ... smallest positive float16 value, 2**-24 = 5.96e-08 ...'
    """
    fmt = resolve(info.format)
    x, stored = info.input, info.value
    name = fmt.name
    if math.isnan(x):
        if math.isnan(stored):
            return f"NaN stays NaN in {name}."
        return f"{name} has no NaN: NaN is stored as {_short(stored)} (ml_dtypes' conversion)."
    if math.isinf(x):
        if math.isinf(stored):
            return f"{_short(x)} is stored as {name}'s own infinity."
        if math.isnan(stored):
            return f"{name} has no infinity, so {_short(x)} becomes NaN."
        return f"{name} has {_lacks(fmt)}, so {_short(x)} saturates at {_short(stored)}."
    top = fmt.max
    threshold = top + ulp_of_max(fmt) / 2  # halfway between max and the next step up
    with np.errstate(over="ignore", invalid="ignore"):
        tie = float(decode(encode(np.array([threshold]), fmt), fmt)[0])
    tie_overflows = not (math.isfinite(tie) and abs(tie) == top)  # ties to even decide this
    where = f"{'at' if tie_overflows else 'above'} ±{_short(threshold)}"
    overflows = abs(x) > threshold or (abs(x) == threshold and tie_overflows)
    beyond = (
        f"{_short(x)} is beyond the largest finite {name} value, {_short(top)} "
        f"(rounding to nearest overflows {where})"
    )
    sign = "-" if stored < 0 else ""
    if math.isinf(stored):
        return f"{beyond}, so it becomes {sign}inf."
    if math.isnan(stored):
        if x == 0 or (x < 0 and not fmt.has_sign):
            what = "zero" if x == 0 else "negative values"
            return f"{name} has no {what}, so {_short(x)} becomes NaN."
        if abs(x) < fmt.smallest_subnormal:
            return (
                f"{_short(x)} is below {name}'s smallest value {_short(fmt.smallest_subnormal)} and "
                f"{name} has no zero, so it becomes NaN."
            )
        if overflows and not fmt.has_inf:
            return f"{beyond}; {name} has no infinity, so it becomes NaN."
        return f"{_short(x)} becomes NaN in {name}."
    if abs(x) > top and abs(stored) == top:
        if not overflows:
            return (
                f"{_short(x)} is above the largest finite {name} value {_short(top)} by at most half "
                f"a step (rounding to nearest overflows only {where}), so it rounds to {sign}{_short(top)}."
            )
        return f"{beyond}; {name} has {_lacks(fmt)}, so it saturates at {sign}{_short(top)}."
    smallest = fmt.smallest_subnormal
    smallest_text = f"{_power_of_two(smallest)} = {_short(smallest)}"
    if stored == 0 and x != 0:
        return (
            f"{_short(x)} underflows to 0: it is below half the smallest positive {name} value, "
            f"{smallest_text} (rounding to nearest; a subnormal result flushed to 0 by hardware is "
            "called flush-to-zero)."
        )
    if stored == x:
        text = f"{_short(x)} is exactly representable in {name}"
    else:
        text = (
            f"{_short(x)} is not representable in {name}: it rounds to the nearest value, "
            f"{value_text(stored, fmt.mantissa_bits)} (error {_short(info.rounding_error)}"
            + (f", {_short(abs(info.relative_error) * 100)}% relative" if info.relative_error else "")
            + ")"
        )
    if info.kind == "subnormal":
        text += (
            f"; it is subnormal (below the smallest normal {_power_of_two(fmt.smallest_normal)} = "
            f"{_short(fmt.smallest_normal)}), with fewer significant bits"
        )
    return text + "."
