"""What kind of result each input of an op gives in a format: the pure half of
:mod:`explorer.queries.ranges` (no backend is run here).

The number line of each format; the inputs a sweep uses (every finite value of
a format of 16 bits or fewer, else an even sample in bit-pattern order); the
classification of backend results against the float64 reference; and the
regions (runs of one kind, thresholds) that follow from a :class:`Sweep`.

Kinds of an input ``x`` with float64 reference ``r = op.reference(x)``, ``r``
correctly rounded to the format ``R``, and backend result ``y`` (first match wins):

- ``flush_to_zero``: ``x`` is subnormal and the backend read it as zero: ``y`` is
  what the backend returns for ``+0`` or ``-0``, not ``R`` (see :func:`flushed_inputs`);
- ``nan``: ``x`` outside the op's domain, ``r`` is NaN, or ``y`` is NaN
  while ``r`` is not an overflow;
- ``overflow``: the exact value is finite and ``y`` is infinite, or NaN or
  ``+-max`` while the exact value lies beyond the format's range;
- ``underflow``: the exact value is nonzero and ``y`` is zero;
- ``subnormal``: ``y`` in the subnormal range (precision lost);
- ``ok``: everything else (exact zeros and exact infinities, ``log(0) = -inf``, included).

"Beyond the range": ``R`` is not finite (inf, or NaN in the formats without inf); in
saturating formats (no inf, no NaN: fp6, fp4), ``|r|`` at or past the
:attr:`NumberLine.overflow_bound` (past ``max`` when rounded with an unbounded exponent,
as IEEE 754 defines overflow).  Whether an infinite or zero ``r`` is exact or a float64
overflow/underflow of a finite nonzero value (``exp(1000)``, ``erfc(30)``) comes from the
op's declared ``zeros`` and ``poles`` (:func:`reference_flags`): float64 holds every finite
nonzero value of the formats of 32 bits or fewer, so the kinds are exact wherever the float64
reference rounds correctly to the format, which tests/test_classification_oracle.py checks for
every float16 and bfloat16 input of every unary op against an independent mpmath oracle.  With
``y = R`` the kinds are those of a correctly rounding backend (:meth:`Sweep.reference_kinds`);
``subnormal`` stays a kind of its own, apart from ``underflow`` (a zero result).

>>> number_line("float16").overflow_rule
'|x| >= 65520 rounds to inf (bound included: its tie goes to the even neighbour, past max)'
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from explorer.formats import Format, all_formats, decode, from_ordinals, ordinals, resolve

#: Kinds of input, in code order (``kinds`` arrays hold indices into this tuple).
KINDS: tuple[str, ...] = ("ok", "overflow", "underflow", "subnormal", "nan", "flush_to_zero")
OK, OVERFLOW, UNDERFLOW, SUBNORMAL, NAN, FLUSH_TO_ZERO = range(6)
#: One line per kind, for legends and tables.
KIND_DEFINITIONS: dict[str, str] = {
    "ok": "a normal result, or an exact zero or infinity (log(0) = -inf)",
    "overflow": "the exact value is finite but rounds past max: the result is inf (NaN; max if saturating)",
    "underflow": "the exact value is nonzero but the result is zero",
    "subnormal": "the result is subnormal: fewer significant bits than a normal number",
    "nan": "outside the op's domain, or the result is NaN",
    "flush_to_zero": "a subnormal input read as zero: the result is the backend's f(+-0), not f(x)",
}
#: Samples per sign for formats too wide to enumerate.
DEFAULT_SAMPLES = 32768
#: Most samples per sign (2 x 10**7 inputs: a few GB of arrays per backend).
MAX_SAMPLES = 10**7
#: Most points along each axis of a binary map (a grid of MAX_POINTS**2 pairs).
MAX_POINTS = 4097


def check_samples(samples: Any) -> int:
    """``samples`` when it is an integer from 2 to :data:`MAX_SAMPLES`; TypeError/ValueError otherwise.

    >>> check_samples(1000)
    1000
    """
    return _bounded_int("samples", samples, 2, MAX_SAMPLES)


def check_points(points: Any) -> int:
    """``points`` when it is an integer from 3 to :data:`MAX_POINTS`; TypeError/ValueError otherwise.

    >>> check_points(257)
    257
    """
    return _bounded_int("points", points, 3, MAX_POINTS)


def _bounded_int(name: str, value: Any, low: int, high: int) -> int:
    """``value`` as an int when it is an integer from ``low`` to ``high``; TypeError/ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be an integer from {low} to {high}, got {value!r}")
    return int(value)


# ---------------------------------------------------------------- number line


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


# ---------------------------------------------------------------- inputs


def unary_inputs(fmt: Any, samples: int = DEFAULT_SAMPLES) -> tuple[np.ndarray, bool]:
    """Sorted distinct finite values of ``fmt`` to sweep, and whether that is all of them.

    Formats of 16 bits or fewer: every finite value (``-0`` merged with ``0``).
    Wider formats: ``samples`` values per sign, evenly spaced in bit-pattern
    order (so evenly on a log axis), plus zero and ``±max``.

    >>> x, exhaustive = unary_inputs("float16")
    >>> x.size, exhaustive
    (63487, True)
    """
    samples = check_samples(samples)
    fmt = resolve(fmt)
    if fmt.enumerable:
        with np.errstate(over="ignore", invalid="ignore"):
            values = decode(np.arange(1 << fmt.bits), fmt)
        return np.unique(values[np.isfinite(values)]) + 0.0, True  # + 0.0: -0 -> 0
    top = int(ordinals(np.array([fmt.max]), fmt)[0])
    positive = np.unique(np.linspace(0, top, samples).astype(np.int64).clip(0, top))
    ords = np.unique(np.concatenate([-positive, positive]))
    return from_ordinals(ords, fmt), False


# ---------------------------------------------------------------- classification


def _beyond_range(reference: np.ndarray, true_finite: np.ndarray, fmt: Format) -> np.ndarray:
    """True where the (mathematically finite) reference rounds past the format's largest finite value."""
    with np.errstate(over="ignore", invalid="ignore"):
        if fmt.overflow == "saturate":
            bound, included = _overflow_bound(fmt)
            magnitude = np.abs(reference)
            limit = float(bound)
            return true_finite & ((magnitude > limit) | ((magnitude == limit) & included))
        rounded = round_reference(reference, fmt)
        return true_finite & ~np.isfinite(rounded)


def round_reference(reference: np.ndarray, fmt: Any) -> np.ndarray:
    """The float64 reference correctly rounded (nearest-even) to ``fmt``, as float64.

    Rounding goes straight from float64 to the format in one step
    (:func:`explorer.rounding.round_to`; the ml_dtypes cast would round twice,
    through float32).
    """
    from explorer.rounding import round_to

    fmt = resolve(fmt)
    with np.errstate(over="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return round_to(np.asarray(reference, dtype=np.float64), fmt).astype(np.float64)


def _same(a: np.ndarray, b: Any) -> np.ndarray:
    """Equal values, NaN equal to NaN (``-0 == 0``)."""
    return np.asarray((a == b) | (np.isnan(a) & np.isnan(b)))


def flushed_inputs(
    x: np.ndarray, result: np.ndarray, rounded: np.ndarray, at_zero: Any, fmt: Any
) -> np.ndarray:
    """Subnormal inputs the backend read as zero (flush-to-zero of inputs, "denormals are zero").

    ``at_zero`` holds the backend's results for ``+0`` and ``-0``.  On each side of zero, the
    subnormal inputs whose result is one of those and not the correctly rounded ``rounded``
    are flushed when the evidence is clear: for at least one of them the correct value is more
    than one step of the format away from what came back (or one side is NaN), so it cannot be
    a rounding error; and the normal input nearest zero on that side is read as itself (a
    backend that loses every small input to cancellation, ``exp(x) - 1`` in float16, is not
    flushing).

    >>> x = np.array([-2.0**-14, -2.0**-15, -2.0**-24, 0.0])  # float16: -2**-14 is normal
    >>> y = np.array([np.nan, -np.inf, -np.inf, -np.inf])  # log on a backend that flushes
    >>> flushed_inputs(x, y, np.array([np.nan] * 3 + [-np.inf]), [-np.inf, -np.inf], "float16").tolist()
    [False, True, True, False]
    """
    fmt = resolve(fmt)
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(result, dtype=np.float64)
    out = np.zeros(x.shape, bool)
    if not fmt.has_subnormals or x.size == 0:
        return out
    zero_results = np.asarray(at_zero, dtype=np.float64).ravel()
    like_zero = np.zeros(x.shape, bool)
    for value in zero_results:
        like_zero |= _same(y, value)
    wrong = ~_same(y, rounded)
    nan_mismatch = np.isnan(y) != np.isnan(rounded)
    both = ~np.isnan(y) & ~np.isnan(rounded)
    far = nan_mismatch.copy()
    if both.any():
        steps = np.abs(ordinals(y[both], fmt) - ordinals(rounded[both], fmt))
        far[both] = steps > 1
    for side in (x > 0, x < 0):
        subnormal = side & (np.abs(x) < fmt.smallest_normal)
        candidates = subnormal & like_zero & wrong
        if not (candidates & far).any():
            continue
        normal = np.nonzero(side & ~subnormal)[0]
        if normal.size:
            nearest = normal[np.argmin(np.abs(x[normal]))]
            if like_zero[nearest] and wrong[nearest]:
                continue
        out |= candidates
    return out


def classify(
    inputs: tuple[np.ndarray, ...],
    reference: np.ndarray,
    result: np.ndarray,
    fmt: Any,
    domain: tuple[float, float] = (-np.inf, np.inf),
    pole: np.ndarray | None = None,
    tiny: np.ndarray | None = None,
    at_zero: Any = None,
    rounded: np.ndarray | None = None,
) -> np.ndarray:
    """Kind codes (indices into :data:`KINDS`) of each input; see the module doc.

    ``domain`` (closed here) applies to the first input of unary ops.  ``pole``
    marks infinite references that are mathematically infinite (``1/0``); other
    infinite references are float64 overflows of a finite value (``exp(1000)``).
    Without ``pole`` every infinite reference counts as a pole.  ``tiny`` marks
    zero references that are float64 underflows of a nonzero value
    (``exp(-1000)``).  :func:`reference_flags` computes both.  ``at_zero``: the
    backend's results for ``+0`` and ``-0`` (unary ops), to find flushed subnormal
    inputs (:func:`flushed_inputs`; ``rounded``, the reference rounded to ``fmt``,
    is computed when not given).

    >>> x = np.array([1.0, 12.0, -20.0])
    >>> with np.errstate(over="ignore"):
    ...     y = np.exp(x.astype(np.float16))
    >>> [KINDS[k] for k in classify((x,), np.exp(x), y, "float16")]
    ['ok', 'overflow', 'underflow']
    """
    fmt = resolve(fmt)
    r = np.asarray(reference, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y = np.asarray(result).astype(np.float64)
    if y.shape != r.shape:
        raise ValueError(f"result shape {y.shape} differs from reference shape {r.shape}")
    infinite = np.isinf(r)
    true_finite = np.isfinite(r) | (infinite & ~(infinite if pole is None else pole))
    nonzero = (r != 0) & ~np.isnan(r)
    if tiny is not None:
        nonzero |= tiny
    kinds = np.full(r.shape, OK, dtype=np.int8)
    beyond = _beyond_range(r, true_finite, fmt)
    abs_y = np.abs(y)
    kinds[(abs_y > 0) & (abs_y < fmt.smallest_normal)] = SUBNORMAL
    kinds[nonzero & (y == 0)] = UNDERFLOW
    over = true_finite & (np.isinf(y) | (np.isnan(y) & beyond) | ((abs_y == fmt.max) & beyond))
    kinds[over] = OVERFLOW
    nan = np.isnan(r) | (np.isnan(y) & ~over)
    if len(inputs) == 1:
        x = np.asarray(inputs[0], dtype=np.float64)
        nan |= (x < domain[0]) | (x > domain[1])
    kinds[nan] = NAN
    if at_zero is not None and len(inputs) == 1:
        if rounded is None:
            rounded = round_reference(r, fmt)
        kinds[flushed_inputs(inputs[0], y, rounded, at_zero, fmt)] = FLUSH_TO_ZERO
    return kinds


def _raises(reference: Any, inputs: tuple[np.ndarray, ...], flag: str) -> np.ndarray:
    """Which elements of ``inputs`` raise the floating-point ``flag`` in ``reference``."""
    hit = np.zeros(inputs[0].shape, bool)
    if inputs[0].size == 0:
        return hit
    settings = {"divide": "ignore", "over": "ignore", "under": "ignore", "invalid": "ignore", flag: "raise"}
    with np.errstate(**settings), warnings.catch_warnings():  # type: ignore[arg-type]
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            reference(*inputs)
            return hit
        except FloatingPointError:
            pass
        for i in range(inputs[0].size):
            try:
                reference(*(x[i : i + 1] for x in inputs))
            except FloatingPointError:
                hit[i] = True
    return hit


def reference_flags(
    reference: Any,
    inputs: tuple[np.ndarray, ...],
    values: np.ndarray,
    zeros: Any = None,
    poles: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(pole, tiny)`` for :func:`classify`.

    ``pole``: infinite reference values that are mathematically infinite.  ``tiny``: zero
    values that are float64 underflows of a nonzero result (``exp(-1000)``, ``erfc(30)``).

    A unary op that declares where it is exactly zero and infinite (``zeros(x)`` and
    ``poles(x)``, the :class:`~explorer.ops.Op` fields) is answered from that: a zero
    reference elsewhere underflowed, an infinite one elsewhere overflowed.  Otherwise the
    floating-point flags of the reference decide: ``pole`` where the divide-by-zero flag is
    raised (``1/0``, ``log(0)``), or, for unary ops whose reference sets no flag
    (``lgamma(-1)``), where the reference at a neighbouring float64 input is finite and far
    from float64's overflow (an overflow such as ``exp(1000)`` is huge or infinite next door
    too); ``tiny`` where the underflow flag is raised.

    >>> x = np.array([0.0, 30.0])
    >>> reference_flags(None, (x,), np.array([1.0, 0.0]), zeros=lambda x: x == 1, poles=lambda x: x == 0)
    (array([False, False]), array([False,  True]))
    """
    if len(inputs) == 1 and zeros is not None and poles is not None:
        x = np.asarray(inputs[0], dtype=np.float64)
        v = np.asarray(values, dtype=np.float64)
        exact_zero = np.asarray(zeros(x), dtype=bool)
        exact_pole = np.asarray(poles(x), dtype=bool)
        return np.isinf(v) & exact_pole, (v == 0) & ~exact_zero
    pole = np.zeros(values.shape, bool)
    tiny = np.zeros(values.shape, bool)
    flat = [np.asarray(x, dtype=np.float64).ravel() for x in inputs]
    v = values.ravel()
    for mask, flag, out in ((np.isinf(v), "divide", pole), (v == 0, "under", tiny)):
        idx = np.nonzero(mask)[0]
        if idx.size:
            out.ravel()[idx] = _raises(reference, tuple(x[idx] for x in flat), flag)
    undecided = np.nonzero(np.isinf(v) & ~pole.ravel())[0]
    if len(flat) == 1 and undecided.size:
        x = flat[0][undecided]
        near = np.zeros(undecided.size, bool)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for direction in (-np.inf, np.inf):
                nb = np.asarray(reference(np.nextafter(x, direction)), dtype=np.float64)
                near |= np.isfinite(nb) & (np.abs(nb) < 1e300)
        pole.ravel()[undecided[near]] = True
    return pole, tiny


def kind_names(kinds: np.ndarray) -> np.ndarray:
    """Kind codes -> array of kind names."""
    return np.asarray(KINDS, dtype=object)[np.asarray(kinds, dtype=np.int64)]


# ---------------------------------------------------------------- sweep results


@dataclass
class BackendRun:
    """What one backend did over a sweep."""

    backend: str
    status: str
    error: str = ""
    detail: str = ""
    #: float64 results aligned with the sweep's inputs (None when it did not run)
    result: np.ndarray | None = None
    #: the device it actually ran on
    device: str | None = None
    #: float64 results for the inputs +0 and -0 (unary sweeps; None otherwise), for
    #: :func:`flushed_inputs`
    at_zero: np.ndarray | None = None

    @property
    def ran(self) -> bool:
        return self.result is not None


@dataclass
class Sweep:
    """One op in one format on several backends over the same inputs."""

    op: str
    format: str
    #: the inputs (float64 values of the format), one array per operand
    inputs: tuple[np.ndarray, ...]
    #: float64 reference of the inputs
    reference: np.ndarray
    #: the reference correctly rounded to the format (float64)
    reference_rounded: np.ndarray
    runs: dict[str, BackendRun]
    #: True when every finite value of the format is in ``inputs``
    exhaustive: bool
    #: infinite references that are true poles (see :func:`reference_flags`)
    pole: np.ndarray
    #: zero references that are float64 underflows of nonzero values
    tiny: np.ndarray
    domain: tuple[float, float] = (-np.inf, np.inf)
    #: the device asked of every backend
    device: str = "CPU"

    def kinds(self, backend: str) -> np.ndarray:
        """Kind codes of every input on one backend that ran."""
        run = self.runs[backend]
        if run.result is None:
            raise ValueError(f"backend {backend} did not run: {run.error}")
        return classify(
            self.inputs,
            self.reference,
            run.result,
            self.format,
            self.domain,
            self.pole,
            self.tiny,
            run.at_zero,
            self.reference_rounded,
        )

    def reference_kinds(self) -> np.ndarray:
        """Kind codes of every input for a backend that rounds the exact value correctly.

        >>> from explorer.queries.ranges import sweep
        >>> s = sweep("sigmoid", "float16", ("emulated",))
        >>> KINDS[s.reference_kinds()[0]], float(s.inputs[0][0])  # the old reference said "ok" here
        ('underflow', -65504.0)
        """
        s = self
        return classify(s.inputs, s.reference, s.reference_rounded, s.format, s.domain, s.pole, s.tiny)

    @property
    def n_inputs(self) -> int:
        return int(self.reference.size)


# ---------------------------------------------------------------- regions


@dataclass(frozen=True)
class Interval:
    """A run of consecutive inputs (in value order) of one kind."""

    kind: str
    lo: float
    hi: float
    #: number of inputs in the run (swept inputs, not all values, for sampled formats)
    count: int

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values."""
        return {"kind": self.kind, "lo": self.lo, "hi": self.hi, "count": self.count}


@dataclass
class OpRegions:
    """The kind of every swept input of a unary op in a format on one backend."""

    op: str
    format: str
    backend: str
    status: str
    error: str
    exhaustive: bool
    #: sorted float64 inputs
    inputs: np.ndarray
    #: float64 results (empty when the backend did not run)
    results: np.ndarray
    reference: np.ndarray
    reference_rounded: np.ndarray
    #: kind codes (indices into KINDS), aligned with inputs
    kinds: np.ndarray
    intervals: list[Interval] = field(default_factory=list)
    thresholds: dict[str, Any] = field(default_factory=dict)

    @property
    def ran(self) -> bool:
        return self.results.size == self.inputs.size and self.inputs.size > 0

    def counts(self) -> dict[str, int]:
        """Number of inputs of each kind."""
        return {k: int(np.count_nonzero(self.kinds == i)) for i, k in enumerate(KINDS)}

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``precision-explorer ranges``."""
        return {
            "format": self.format,
            "op": self.op,
            "backend": self.backend,
            "status": self.status,
            "error": self.error,
            "exhaustive": self.exhaustive,
            "n_inputs": int(self.inputs.size),
            "counts": self.counts() if self.ran else {},
            "thresholds": self.thresholds,
            "regions": [i.to_dict() for i in self.intervals],
        }


def intervals_of(inputs: np.ndarray, kinds: np.ndarray) -> list[Interval]:
    """Merge sorted inputs into runs of the same kind.

    >>> [i.kind for i in intervals_of(np.array([1.0, 2.0, 3.0]), np.array([0, 0, 1]))]
    ['ok', 'overflow']
    """
    if inputs.size == 0:
        return []
    starts = np.concatenate([[0], np.nonzero(kinds[1:] != kinds[:-1])[0] + 1])
    ends = np.concatenate([starts[1:] - 1, [inputs.size - 1]])
    return [
        Interval(KINDS[int(kinds[s])], float(inputs[s]), float(inputs[e]), int(e - s + 1))
        for s, e in zip(starts, ends, strict=True)
    ]


def value_text(value: float) -> str:
    """A float as short exact text: its repr without a trailing ``.0``.

    >>> value_text(65504.0), value_text(-17.34375), value_text(float("-inf"))
    ('65504', '-17.34375', '-inf')
    """
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def _side_rule(lo: float, hi: float, runs: int, to_start: bool, to_end: bool) -> str:
    """``x >= lo``, ``x <= hi`` or ``lo <= x <= hi`` (bounds included: they are inputs of the kind)."""
    if runs > 1:
        return f"{runs} runs within {value_text(lo)} <= x <= {value_text(hi)}"
    if to_end and lo > 0:
        return f"x >= {value_text(lo)}"
    if to_start and hi < 0:
        return f"x <= {value_text(hi)}"
    return f"{value_text(lo)} <= x <= {value_text(hi)}"


def _side(inputs: np.ndarray, kinds: np.ndarray, code: int, idx: np.ndarray) -> dict[str, Any]:
    """One side (positive or negative inputs) of a kind: exact first and last inputs, runs, the
    neighbouring inputs outside it, and the rule in words."""
    first, last = int(idx[0]), int(idx[-1])
    runs = 1 + int(np.count_nonzero(np.diff(idx) > 1))
    before = float(inputs[first - 1]) if first > 0 and kinds[first - 1] != code else None
    after = float(inputs[last + 1]) if last + 1 < inputs.size and kinds[last + 1] != code else None
    rule = _side_rule(float(inputs[first]), float(inputs[last]), runs, first == 0, last == inputs.size - 1)
    outside = [value_text(v) for v in (before, after) if v is not None]
    if outside:
        rule += f" (not {' nor '.join(outside)}, the neighbouring input{'s' if len(outside) > 1 else ''})"
    return {
        "min": float(inputs[first]),
        "max": float(inputs[last]),
        "count": int(idx.size),
        "runs": runs,
        "before": before,
        "after": after,
        "rule": rule,
    }


def thresholds_of(inputs: np.ndarray, kinds: np.ndarray, results: np.ndarray | None = None) -> dict[str, Any]:
    """For each kind other than ``ok`` present: how many inputs, and per side (``positive``,
    ``negative``; ``None`` for a side without any) the exact first and last inputs (``min``,
    ``max``), the number of separate ``runs``, the neighbouring inputs outside them that are of
    another kind (``before``, ``after``), and a ``rule`` in words.  With ``results`` (the
    backend's, aligned with ``inputs``), ``returns``: what came back on those inputs (up to 4
    distinct values, as text; ``returns_distinct`` counts them all).

    E.g. ``["overflow"]["positive"]["min"]`` is the first positive input that overflows.
    ``inputs`` must be sorted.

    >>> t = thresholds_of(np.array([10.0, 11.0, 12.0, 13.0]), np.array([0, 0, 1, 1]))
    >>> t["overflow"]["positive"]["rule"]
    'x >= 12 (not 11, the neighbouring input)'
    """
    out: dict[str, Any] = {}
    for code, kind in enumerate(KINDS):
        if code == OK:
            continue
        mask = kinds == code
        if not mask.any():
            continue
        entry: dict[str, Any] = {"count": int(mask.sum()), "at_zero": bool((mask & (inputs == 0)).any())}
        for side, sel in (("positive", inputs > 0), ("negative", inputs < 0)):
            idx = np.nonzero(mask & sel)[0]
            entry[side] = _side(inputs, kinds, code, idx) if idx.size else None
        if results is not None and results.size == inputs.size:
            patterns = np.unique(np.ascontiguousarray(results[mask], dtype=np.float64).view(np.int64))
            distinct = np.sort(patterns.view(np.float64))  # by bit pattern: -0 and 0 both shown
            texts = list(dict.fromkeys(value_text(v) for v in distinct))
            entry["returns"] = texts[:4]
            entry["returns_distinct"] = len(texts)
        out[kind] = entry
    return out


def threshold_rule(entry: dict[str, Any]) -> str:
    """The rules of both sides of a :func:`thresholds_of` entry, joined (negative side first).

    >>> threshold_rule(thresholds_of(np.array([-2.0, -1.0, 1.0, 2.0]), np.array([1, 0, 0, 1]))["overflow"])
    'x <= -2 (not -1, the neighbouring input); x >= 2 (not 1, the neighbouring input)'
    """
    parts = [entry[side]["rule"] for side in ("negative", "positive") if entry.get(side)]
    if entry.get("at_zero"):
        parts.append("x = 0")
    return "; ".join(parts)


def regions_from_sweep(s: Sweep, backend: str) -> OpRegions:
    """Regions of one backend of a :class:`Sweep`."""
    from explorer.backends import get_backend

    name = get_backend(backend).name
    if name not in s.runs:
        raise ValueError(f"backend {name!r} is not in this sweep; it has: {', '.join(s.runs)}")
    run = s.runs[name]
    x = s.inputs[0]
    if run.result is None:
        return OpRegions(
            s.op,
            s.format,
            name,
            run.status,
            run.error,
            s.exhaustive,
            x,
            np.array([]),
            s.reference,
            s.reference_rounded,
            np.array([], np.int8),
        )
    kinds = s.kinds(name)
    return OpRegions(
        s.op,
        s.format,
        name,
        run.status,
        run.error,
        s.exhaustive,
        x,
        run.result,
        s.reference,
        s.reference_rounded,
        kinds,
        intervals_of(x, kinds),
        thresholds_of(x, kinds, run.result),
    )


def region_disagreements(regions: dict[str, OpRegions]) -> list[dict[str, Any]]:
    """Inputs where backends that ran put the same input in different kinds."""
    ran = {name: r for name, r in regions.items() if r.ran}
    if len(ran) < 2:
        return []
    first = next(iter(ran.values()))
    stacked = np.stack([r.kinds for r in ran.values()])
    differ = np.nonzero((stacked != stacked[0]).any(axis=0))[0]
    return [
        {"input": float(first.inputs[i]), "kinds": {name: KINDS[int(r.kinds[i])] for name, r in ran.items()}}
        for i in differ
    ]


# ---------------------------------------------------------------- binary maps


@dataclass
class BinaryMap:
    """Kinds of a binary elementwise op over a grid of two inputs on one backend."""

    op: str
    format: str
    backend: str
    status: str
    error: str
    #: values of the first and second operand along the grid's axes (sorted)
    a: np.ndarray
    b: np.ndarray
    #: kind codes, shape ``(len(a), len(b))`` (empty when the backend did not run)
    kinds: np.ndarray
    #: True when the axes hold every finite value of the format
    exhaustive: bool

    def counts(self) -> dict[str, int]:
        """Number of grid points of each kind."""
        return {k: int(np.count_nonzero(self.kinds == i)) for i, k in enumerate(KINDS)}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (axes and counts; not the grid)."""
        return {
            "op": self.op,
            "format": self.format,
            "backend": self.backend,
            "status": self.status,
            "error": self.error,
            "exhaustive": self.exhaustive,
            "shape": list(self.kinds.shape),
            "counts": self.counts(),
        }


def binary_axis(fmt: Any, points: int = 257) -> tuple[np.ndarray, bool]:
    """Values along each axis of a binary map, and whether they are every finite value.

    Formats of 8 bits or fewer: every finite value.  Wider formats: ``points``
    values evenly spaced in bit-pattern order (evenly on a log axis, both
    signs, with zero).
    """
    points = check_points(points)
    fmt = resolve(fmt)
    if fmt.bits <= 8:
        return unary_inputs(fmt)
    top = int(ordinals(np.array([fmt.max]), fmt)[0])
    half = np.unique(np.linspace(0, top, points // 2 + 1).astype(np.int64))
    return from_ordinals(np.unique(np.concatenate([-half, half])), fmt), False
