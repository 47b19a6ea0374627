"""Summing in a low-precision accumulator: running sums, stagnation, pairwise summation.

A sequential sum in format F rounds after every addition:
``s = round_F(s + x_i)``.  Once half a unit in the last place of ``s`` is at
least the largest increment, every addition rounds back to ``s`` and the sum
*stagnates*: 10,000 uniform(0, 1) values summed in bfloat16 stop at 256.

Additions are computed exactly in float64 (the operands are values of the
format, so the float64 sum rounded once to the format is the correctly rounded
sum) and rounded to the accumulator; ``np.add.accumulate`` with the
accumulator's dtype is used where it does exactly that, a loop otherwise.

>>> study = summation_study("bfloat16", n=10_000)
>>> study.final["format"], study.stagnation["format"].value
(256.0, 256.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from explorer.formats import NUMPY_NATIVE_FORMATS, Format, resolve

#: Accumulators compared: the format itself, float32, float64.
ACCUMULATORS: tuple[str, ...] = ("format", "float32", "float64")
#: Distributions of :func:`summation_study`.
DISTRIBUTIONS: tuple[str, ...] = ("uniform", "normal", "ones")
METHODS: tuple[str, ...] = ("sequential", "pairwise")
#: most terms of :func:`summation_study`, :func:`dot_study` and :func:`make_terms`: each
#: study keeps a running sum per accumulator (8 bytes a term each), and formats that numpy
#: cannot add in (the float8/6/4 formats) are summed in a Python loop, one term at a time
MAX_TERMS = 1_000_000
#: accumulators whose ``np.add`` loop rounds each sum once from float32 or wider
_UFUNC_ACCUMULATORS = (*NUMPY_NATIVE_FORMATS, "bfloat16")


def _accumulator_format(accumulator: Any, fmt: Format) -> Format:
    if accumulator == "format":
        return fmt
    if isinstance(accumulator, str) and accumulator not in ("float32", "float64"):
        try:
            return resolve(accumulator)
        except ValueError:
            raise ValueError(
                f"unknown accumulator {accumulator!r}; valid: {', '.join(ACCUMULATORS)} or any format name"
            ) from None
    return resolve(accumulator)


def running_sum(values: Any, fmt: Any, accumulator: Any = "format") -> np.ndarray:
    """Running sequential sum (float64 array of the accumulator's values, one per step) of
    ``values`` rounded to ``fmt``, with the accumulator in ``accumulator`` (``"format"``,
    ``"float32"``, ``"float64"`` or any format name).

    >>> running_sum([1.0, 2**-8, 2**-8], "bfloat16").tolist()
    [1.0, 1.0, 1.0]
    """
    fmt = resolve(fmt)
    acc = _accumulator_format(accumulator, fmt)
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        return np.zeros(0)
    with np.errstate(over="ignore", invalid="ignore"):
        terms = fmt.round(x).astype(np.float64)
        if acc.name not in _UFUNC_ACCUMULATORS:
            return _loop_sum(terms, acc)
        # the ufunc adds two accumulator values in (at least) float32 and rounds once to the
        # accumulator: for float16/bfloat16 float32 holds the exact sum or rounds innocuously
        # (float32 has more than twice their precision plus two bits)
        stored = acc.round(terms)
        return np.add.accumulate(stored, dtype=acc.storage_dtype).astype(np.float64)


def _loop_sum(terms: np.ndarray, acc: Format) -> np.ndarray:
    out = np.empty(terms.size)
    s = 0.0
    for i, t in enumerate(acc.round(terms).astype(np.float64).tolist()):
        s = float(acc.round(np.array([s + t]))[0])
        out[i] = s
    return out


def pairwise_sum(values: Any, fmt: Any, accumulator: Any = "format") -> float:
    """Pairwise (tree) sum of ``values`` rounded to ``fmt``, rounding every partial sum to
    the accumulator.

    >>> halves = np.full(10_000, 0.5)
    >>> pairwise_sum(halves, "bfloat16"), float(running_sum(halves, "bfloat16")[-1])
    (4992.0, 128.0)
    """
    fmt = resolve(fmt)
    acc = _accumulator_format(accumulator, fmt)
    with np.errstate(over="ignore", invalid="ignore"):
        level = acc.round(fmt.round(np.asarray(values, dtype=np.float64).ravel()).astype(np.float64))
        level = level.astype(np.float64)
        if level.size == 0:
            return 0.0
        while level.size > 1:
            if level.size % 2:
                level = np.append(level, 0.0)
            level = acc.round(level[0::2] + level[1::2]).astype(np.float64)
    return float(level[0])


def running_dot(a: Any, b: Any, fmt: Any, accumulator: Any = "format") -> np.ndarray:
    """Running dot product: ``a`` and ``b`` rounded to ``fmt``, each product computed exactly
    and rounded to the accumulator, then summed sequentially in the accumulator."""
    fmt = resolve(fmt)
    acc = _accumulator_format(accumulator, fmt)
    x = fmt.round(np.asarray(a, dtype=np.float64).ravel()).astype(np.float64)
    y = fmt.round(np.asarray(b, dtype=np.float64).ravel()).astype(np.float64)
    if x.shape != y.shape:
        raise ValueError(f"a and b must have the same size, got {x.size} and {y.size}")
    with np.errstate(over="ignore", invalid="ignore"):
        products = acc.round(x * y).astype(np.float64)
    return running_sum(products, acc, "format")


@dataclass(frozen=True)
class Stagnation:
    """Where a running sum stopped changing."""

    #: True when the sum stayed the same over the last ``tail`` nonzero terms or more
    stagnated: bool
    #: number of terms summed when the sum last changed (1-based); None when it never stopped
    at_n: int | None
    #: the value it stuck at
    value: float
    #: terms added after the last change (all lost)
    lost_terms: int


def stagnation(sums: np.ndarray, min_lost: int = 10) -> Stagnation:
    """Find where a running sum last changed; it *stagnated* when at least ``min_lost`` terms
    were added after that without effect.

    >>> stagnation(np.array([1.0, 2.0, 2.0, 2.0]), min_lost=2)
    Stagnation(stagnated=True, at_n=2, value=2.0, lost_terms=2)
    """
    s = np.asarray(sums, dtype=np.float64)
    if s.size == 0:
        return Stagnation(False, None, 0.0, 0)
    changes = np.nonzero(np.diff(s) != 0)[0]
    last = int(changes[-1]) + 2 if changes.size else 1
    lost = s.size - last
    stuck = lost >= min_lost
    return Stagnation(stuck, last if stuck else None, float(s[-1]), lost)


def predicted_stagnation(fmt: Any, largest_term: float = 1.0) -> float:
    """The smallest power of two at which adding terms no larger than ``largest_term``
    (positive) stops changing a sum in ``fmt``: half its ulp reaches ``largest_term``.

    >>> predicted_stagnation("bfloat16"), predicted_stagnation("float16")
    (256.0, 2048.0)
    """
    fmt = resolve(fmt)
    if not largest_term > 0:
        raise ValueError(f"largest_term must be positive, got {largest_term!r}")
    return float(2.0 ** (math.ceil(math.log2(largest_term)) + fmt.mantissa_bits + 1))


@dataclass
class SummationStudy:
    """Sequential and pairwise sums of the same terms in several accumulators."""

    format: str
    distribution: str
    n: int
    seed: int
    #: the terms, rounded to the format (float64)
    terms: np.ndarray
    #: exact sum of the terms (``math.fsum``)
    exact_final: float
    #: accumulator -> running sequential sum (float64 values)
    running: dict[str, np.ndarray] = field(default_factory=dict)
    final: dict[str, float] = field(default_factory=dict)
    pairwise: dict[str, float] = field(default_factory=dict)
    stagnation: dict[str, Stagnation] = field(default_factory=dict)
    #: predicted stagnation value of the format's accumulator for these terms
    predicted: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (no running arrays)."""
        return {
            "format": self.format,
            "distribution": self.distribution,
            "n": self.n,
            "seed": self.seed,
            "exact": self.exact_final,
            "sequential": self.final,
            "pairwise": self.pairwise,
            "stagnation": {k: v.__dict__ for k, v in self.stagnation.items()},
            "predicted_stagnation": self.predicted,
        }


def check_term_count(n: Any) -> int:
    """``n`` as an int when it is a whole number of terms from 1 to :data:`MAX_TERMS`;
    ValueError naming the limit otherwise.

    >>> check_term_count(10_000)
    10000
    >>> check_term_count(10**10)
    Traceback (most recent call last):
    ...
    ValueError: n must be an integer from 1 to 1000000 (MAX_TERMS), got 10000000000
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or not 1 <= n <= MAX_TERMS:
        raise ValueError(f"n must be an integer from 1 to {MAX_TERMS} (MAX_TERMS), got {n!r}")
    return int(n)


def make_terms(distribution: str, n: int, seed: int = 0) -> np.ndarray:
    """``n`` deterministic float64 terms: ``uniform`` on [0, 1), standard ``normal``, or ``ones``
    (``n`` from 1 to :data:`MAX_TERMS`)."""
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"unknown distribution {distribution!r}; valid: {', '.join(DISTRIBUTIONS)}")
    n = check_term_count(n)
    rng = np.random.default_rng(seed)
    if distribution == "uniform":
        return rng.uniform(0.0, 1.0, n)
    if distribution == "normal":
        return rng.standard_normal(n)
    return np.ones(n)


def summation_study(
    fmt: Any = "bfloat16",
    n: int = 10_000,
    distribution: str = "uniform",
    seed: int = 0,
    accumulators: tuple[str, ...] = ACCUMULATORS,
) -> SummationStudy:
    """Sum ``n`` terms (rounded to ``fmt``) sequentially and pairwise in each accumulator;
    ValueError for ``n`` outside 1 to :data:`MAX_TERMS`."""
    n = check_term_count(n)
    fmt = resolve(fmt)
    terms = fmt.round(make_terms(distribution, n, seed)).astype(np.float64)
    study = SummationStudy(fmt.name, distribution, int(n), seed, terms, math.fsum(terms.tolist()))
    for acc in accumulators:
        sums = running_sum(terms, fmt, acc)
        study.running[acc] = sums
        study.final[acc] = float(sums[-1])
        study.pairwise[acc] = pairwise_sum(terms, fmt, acc)
        study.stagnation[acc] = stagnation(sums)
    positive = terms[terms > 0]
    if distribution != "normal" and positive.size:
        study.predicted = predicted_stagnation(fmt, float(positive.max()))
    return study


@dataclass
class DotStudy:
    """Running dot products of the same vectors in several accumulators."""

    format: str
    n: int
    exact_final: float
    running: dict[str, np.ndarray] = field(default_factory=dict)
    final: dict[str, float] = field(default_factory=dict)
    stagnation: dict[str, Stagnation] = field(default_factory=dict)


def dot_study(
    fmt: Any = "bfloat16", n: int = 10_000, seed: int = 0, accumulators: tuple[str, ...] = ACCUMULATORS
) -> DotStudy:
    """Dot product of two uniform(0, 1) vectors of ``n`` elements (1 to :data:`MAX_TERMS`)
    rounded to ``fmt``, in each accumulator."""
    n = check_term_count(n)
    fmt = resolve(fmt)
    rng = np.random.default_rng(seed)
    a = fmt.round(rng.uniform(0, 1, n)).astype(np.float64)
    b = fmt.round(rng.uniform(0, 1, n)).astype(np.float64)
    study = DotStudy(fmt.name, int(n), math.fsum((a * b).tolist()))
    for acc in accumulators:
        sums = running_dot(a, b, fmt, acc)
        study.running[acc] = sums
        study.final[acc] = float(sums[-1])
        study.stagnation[acc] = stagnation(sums)
    return study
