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

from explorer.analysis.regions._classify import (
    FLUSH_TO_ZERO,
    KIND_DEFINITIONS,
    KINDS,
    NAN,
    OK,
    OVERFLOW,
    SUBNORMAL,
    UNDERFLOW,
    classify,
    flushed_inputs,
    kind_names,
    reference_flags,
    round_reference,
)
from explorer.analysis.regions._inputs import (
    DEFAULT_SAMPLES,
    MAX_POINTS,
    MAX_SAMPLES,
    binary_axis,
    check_points,
    check_samples,
    unary_inputs,
)
from explorer.analysis.regions._number_line import (
    NumberLine,
    exact_text,
    number_line,
    number_lines,
    overflow_threshold,
)
from explorer.analysis.regions._sweep import (
    BackendRun,
    BinaryMap,
    OpRegions,
    Sweep,
    region_disagreements,
    regions_from_sweep,
)
from explorer.analysis.regions._thresholds import (
    Interval,
    intervals_of,
    threshold_rule,
    thresholds_of,
    value_text,
)

__all__ = [
    "DEFAULT_SAMPLES",
    "FLUSH_TO_ZERO",
    "KINDS",
    "KIND_DEFINITIONS",
    "MAX_POINTS",
    "MAX_SAMPLES",
    "NAN",
    "OK",
    "OVERFLOW",
    "SUBNORMAL",
    "UNDERFLOW",
    "BackendRun",
    "BinaryMap",
    "Interval",
    "NumberLine",
    "OpRegions",
    "Sweep",
    "binary_axis",
    "check_points",
    "check_samples",
    "classify",
    "exact_text",
    "flushed_inputs",
    "intervals_of",
    "kind_names",
    "number_line",
    "number_lines",
    "overflow_threshold",
    "reference_flags",
    "region_disagreements",
    "regions_from_sweep",
    "round_reference",
    "threshold_rule",
    "thresholds_of",
    "unary_inputs",
    "value_text",
]
