"""The number line of a format: where values round to zero, where they round past ``max``, each
bound exact and with its tie, in numbers and in words."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from explorer.formats import Format, all_formats, resolve


@dataclass(frozen=True)
class NumberLine:
    """The regions of one format on a log2 |x| axis, with exact bounds.

    Each bound is a real number (not always a value of the format) and says whether it is
    included: a value exactly on it is a tie, which goes to the neighbour with an even
    significand.
    """

    format: str
    #: values with ``|x| <= zero_bound`` round to zero (half the smallest subnormal; None: the
    #: format has no zero).  float64's own bound 2**-1075 is below float64: 0.0 here, exact in
    #: ``underflow_rule``
    zero_bound: float | None
    #: True: ``|x| == zero_bound`` rounds to zero too (the tie goes to the even 0)
    zero_bound_included: bool
    smallest_subnormal: float
    smallest_normal: float
    max: float
    eps: float
    #: values with ``|x| >= overflow_bound`` (``>`` when not ``overflow_bound_included``) round
    #: past ``max``: ``max`` plus half its ulp.  float64's own (2**1024 - 2**970) is inf here
    overflow_bound: float
    #: True when the tie at ``overflow_bound`` rounds past max (``max`` has an odd significand)
    overflow_bound_included: bool
    #: what overflow gives: ``"inf"``, ``"nan"`` or ``"saturate"``
    overflow_gives: str
    has_subnormals: bool
    #: the two bounds in words, exact
    underflow_rule: str = ""
    overflow_rule: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values."""
        return dict(self.__dict__)

    def log2_bounds(self) -> dict[str, float]:
        """log2 of each boundary, for plotting."""
        # float64's own bounds are 0.0 and inf in float64: take them from the representable facts
        above = self.overflow_bound if np.isfinite(self.overflow_bound) else self.max
        out = {
            "smallest_subnormal": float(np.log2(self.smallest_subnormal)),
            "smallest_normal": float(np.log2(self.smallest_normal)),
            "max": float(np.log2(self.max)),
            "overflow_bound": float(np.log2(above)),
            "eps": float(np.log2(self.eps)),
        }
        if self.zero_bound is not None:
            out["zero_bound"] = out["smallest_subnormal"] - 1.0
        return out


def exact_text(value: Fraction | float) -> str:
    """A nonnegative real as exact text: ``2^k`` for powers of two, else the shortest float
    repr (``65520``), else ``max + 2^k`` (float64's overflow bound).

    >>> exact_text(Fraction(1, 2**25)), exact_text(65520.0), exact_text(11.09375)
    ('2^-25', '65520', '11.09375')
    """
    v = Fraction(value)
    if v > 0 and v.numerator & (v.numerator - 1) == 0 and v.denominator & (v.denominator - 1) == 0:
        return f"2^{v.numerator.bit_length() - v.denominator.bit_length()}"
    try:
        f = float(v)
    except OverflowError:
        f = float("inf")
    if np.isfinite(f) and Fraction(f) == v:
        text = repr(f)
        return text[:-2] if text.endswith(".0") else text
    big = Fraction(np.finfo(np.float64).max)
    return f"{exact_text(big)} + {exact_text(v - big)}"


def _overflow_bound(fmt: Format) -> tuple[Fraction, bool]:
    """``max + ulp(max)/2`` exactly, and whether a value exactly there rounds past max (the tie
    goes to the even significand: past max when max's significand is odd)."""
    # from frexp, exact (formats.ulp_of_max takes a float64 log2, which rounds float64's max up to 2^1024)
    ulp = Fraction(2) ** (math.frexp(fmt.max)[1] - 1 - fmt.mantissa_bits)
    significand = Fraction(fmt.max) / ulp
    return Fraction(fmt.max) + ulp / 2, significand.numerator % 2 == 1


def overflow_threshold(fmt: Any) -> float:
    """Half an ulp past ``max`` (the :attr:`NumberLine.overflow_bound`; inf for float64):
    values beyond it round past the largest finite value, and so does a value on it when
    :attr:`NumberLine.overflow_bound_included`.

    >>> overflow_threshold("float16")
    65520.0
    """
    bound, _ = _overflow_bound(resolve(fmt))
    try:
        return float(bound)
    except OverflowError:
        return float("inf")


def _rounds_past(fmt: Format) -> str:
    return {"inf": "inf", "nan": "NaN", "saturate": "max (saturates)"}[fmt.overflow]


def number_line(fmt: Any) -> NumberLine:
    """Region boundaries of one format.

    >>> line = number_line("float16")
    >>> line.zero_bound, line.zero_bound_included, line.underflow_rule
    (2.9802322387695312e-08, True, '|x| <= 2^-25 rounds to 0 (bound included: its tie goes to the even 0)')
    >>> number_line("float8_e4m3fn").overflow_rule
    '|x| > 464 rounds to NaN (bound excluded: its tie goes to the even max, 448)'
    """
    fmt = resolve(fmt)
    has_zero = fmt.name != "float8_e8m0fnu"
    zero = Fraction(fmt.smallest_subnormal) / 2
    bound, included = _overflow_bound(fmt)
    b, gives = exact_text(bound), _rounds_past(fmt)
    if included:
        tie = "bound included: its tie goes to the even neighbour, past max"
        overflow_rule = f"|x| >= {b} rounds to {gives} ({tie})"
    else:
        tie = f"bound excluded: its tie goes to the even max, {exact_text(fmt.max)}"
        overflow_rule = f"|x| > {b} rounds to {gives} ({tie})"
    smallest = exact_text(fmt.smallest_subnormal)
    underflow_rule = (
        f"|x| <= {exact_text(zero)} rounds to 0 (bound included: its tie goes to the even 0)"
        if has_zero
        else f"no zero (0 is NaN): |x| below the smallest value, {smallest}, rounds up to it"
    )
    return NumberLine(
        format=fmt.name,
        zero_bound=float(zero) if has_zero else None,
        zero_bound_included=has_zero,
        smallest_subnormal=fmt.smallest_subnormal,
        smallest_normal=fmt.smallest_normal,
        max=fmt.max,
        eps=fmt.eps,
        overflow_bound=overflow_threshold(fmt),
        overflow_bound_included=included,
        overflow_gives=fmt.overflow,
        has_subnormals=fmt.has_subnormals,
        underflow_rule=underflow_rule,
        overflow_rule=overflow_rule,
    )


def number_lines(formats: Any = None) -> list[NumberLine]:
    """Number lines of several formats (default: every format, widest first)."""
    if formats is None:
        formats = all_formats()
    if isinstance(formats, str | Format):
        formats = [formats]
    return [number_line(f) for f in formats]
