"""Accuracy of each backend in the target format, by two named measures.

- ``ulp_steps`` (:data:`ULP_STEPS_DEFINITION`): how many steps of the format (consecutive
  representable values) separate the result from the correctly rounded reference: an
  integer, 0 = correctly rounded (``inf`` right after ``max`` counts as the next step).
- ``ulp_error`` (:data:`ULP_ERROR_DEFINITION`): the ulp error of the literature (Goldberg,
  1991; Muller et al., *Handbook of Floating-Point Arithmetic*, 2018, section 2.6),
  ``|y - f(x)| / ulp(f(x))``, real-valued, at most 0.5 for a correctly rounded result.

The correctly rounded reference is the float64 reference rounded once (nearest-even) to the
format.  Both NaN counts as agreement; a NaN on one side only is a *NaN mismatch*: it gets
neither figure and is not correctly rounded.  Inputs whose reference is NaN (outside the
op's domain) are left out.

``f(x)`` in ``ulp_error`` is the float64 reference, which is enough for the formats of 32
bits or fewer: it is within a few float64 ulps (``2**-51`` relative) of the exact value, so
the error figure is off by at most ``2**(p - 51)`` of an ulp (under ``2**-27`` for float32,
``2**-40`` for float16), and references outside float64's range (``exp(1000)``) are known
from the op's declared zeros and poles.  For float64 itself the figure carries the
reference's own error (about one ulp); no higher precision is used.

>>> acc = accuracy("exp", "float16", backends=("numpy", "emulated"))
>>> emulated = acc.by_backend("emulated")
>>> emulated.max_ulp_steps, round(emulated.max_ulp_error, 5)
(0.0, 0.49999)

(NumPy's float16 exp goes through the CPU's float32 exp kernel, so where it is one step off
depends on the machine: at near-ties, a little over 0.5 ulp away.)
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from explorer.formats import ordinals, resolve
from explorer.ops import catalog, get_op
from explorer.queries.ranges import (
    DEFAULT_BACKENDS,
    DEFAULT_SAMPLES,
    Sweep,
    binary_sweep,
    check_points,
    check_samples,
    sweep,
)

#: One line each, wherever the two measures are shown.
ULP_STEPS_DEFINITION = (
    "ulp_steps: how many steps along the format's representable values lead from the result to the "
    "correctly rounded reference (an integer; 0 = correctly rounded, 1 = its neighbour)"
)
ULP_ERROR_DEFINITION = (
    "ulp_error: |y - f(x)| / ulp(f(x)), with ulp(v) = 2^(max(e, emin) - p + 1) for 2^e <= |v| < 2^(e+1) "
    "(Goldberg's ulp; real-valued; at most 0.5 when correctly rounded)"
)
DEFINITIONS: dict[str, str] = {"ulp_steps": ULP_STEPS_DEFINITION, "ulp_error": ULP_ERROR_DEFINITION}


def ulp_steps(result: np.ndarray, expected: np.ndarray, fmt: Any) -> np.ndarray:
    """Steps of ``fmt`` between each result and the expected value (both values of ``fmt``);
    0 where both are NaN, NaN where only one is.

    >>> ulp_steps(np.array([1.0, np.nan]), np.array([1.0009765625, np.nan]), "float16").tolist()
    [1.0, 0.0]
    """
    fmt = resolve(fmt)
    y = np.asarray(result, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    y_nan, e_nan = np.isnan(y), np.isnan(e)
    both = ~y_nan & ~e_nan
    out = np.full(y.shape, np.nan)
    out[y_nan & e_nan] = 0.0
    if both.any():
        out[both] = np.abs(ordinals(y[both], fmt) - ordinals(e[both], fmt)).astype(np.float64)
    return out


#: the name :func:`ulp_steps` had before there were two measures
ulp_distance = ulp_steps


def ulp_of(values: Any, fmt: Any) -> np.ndarray:
    """Goldberg's ulp of real values in ``fmt``: ``2**(max(e, emin) - p + 1)`` where
    ``2**e <= |v| < 2**(e + 1)``, ``emin`` the exponent of the smallest normal and ``p`` the
    precision (mantissa bits + 1).  At a power of two it is the gap above; below the smallest
    normal (and at 0) the subnormal spacing; inf for infinite values.

    >>> ulp_of([1.0, 1.5, 2.0 ** -20, 0.0, 65504.0], "float16").tolist()
    [0.0009765625, 0.0009765625, 5.960464477539063e-08, 5.960464477539063e-08, 32.0]
    """
    fmt = resolve(fmt)
    v = np.abs(np.asarray(values, dtype=np.float64))
    precision = fmt.mantissa_bits + 1
    emin = math.frexp(fmt.smallest_normal)[1] - 1
    with np.errstate(invalid="ignore"):
        _, exponent = np.frexp(np.where(np.isfinite(v), v, 1.0))
    e = np.where(v == 0, emin, exponent.astype(np.int64) - 1)
    out = np.ldexp(1.0, (np.maximum(e, emin) - precision + 1).astype(np.int32))
    return np.where(np.isfinite(v), out, np.where(np.isnan(v), np.nan, np.inf))


def ulp_error(
    result: np.ndarray,
    exact: np.ndarray,
    fmt: Any,
    rounded: np.ndarray | None = None,
    exact_finite: np.ndarray | None = None,
) -> np.ndarray:
    """``|y - f(x)| / ulp(f(x))`` (:func:`ulp_of`) of each result ``y`` against the exact value
    ``f(x)`` (float64 ``exact``); ``rounded``: ``f(x)`` correctly rounded to ``fmt`` (computed
    when not given).

    Where ``y == f(x)`` (exact infinities included) the error is 0.  An infinite ``y`` is 0 when
    the correctly rounded value is the same infinity (an overflow, rounded correctly), else inf;
    a finite ``y`` against an infinite ``f(x)`` is inf.  ``exact_finite`` marks the infinite
    ``exact`` values that are float64 overflows of a finite value (``exp(1000)``): a result that
    is infinite there is an overflow, not an exact answer.  NaN where exactly one of ``y`` and
    the rounded value is NaN (both NaN: 0), as for :func:`ulp_steps`.

    >>> ulp_error(np.array([1.0, 1.0009765625]), np.array([1.0003, 1.0003]), "float16").round(4).tolist()
    [0.3072, 0.6928]
    """
    from explorer.analysis.regions import round_reference

    fmt = resolve(fmt)
    y = np.asarray(result, dtype=np.float64)
    f = np.asarray(exact, dtype=np.float64)
    r = round_reference(f, fmt) if rounded is None else np.asarray(rounded, dtype=np.float64)
    overflowed = np.zeros(f.shape, bool) if exact_finite is None else np.asarray(exact_finite, bool)
    with np.errstate(invalid="ignore", over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = np.abs(y - f) / ulp_of(f, fmt)
    out = np.where(np.isinf(f) | np.isinf(y), np.inf, out)
    out = np.where((y == f) & ~(np.isinf(f) & overflowed), 0.0, out)
    out = np.where(np.isinf(y) & (y == r), 0.0, out)
    y_nan, r_nan = np.isnan(y), np.isnan(r)
    out = np.where(y_nan | r_nan, np.where(y_nan & r_nan, 0.0, np.nan), out)
    return np.asarray(out, dtype=np.float64)


@dataclass(frozen=True)
class BackendAccuracy:
    """Summary of one backend's errors, by both measures (:data:`DEFINITIONS`)."""

    backend: str
    status: str
    error: str
    #: largest and mean ulp_steps over the inputs with a figure (None when it did not run)
    max_ulp_steps: float | None
    mean_ulp_steps: float | None
    #: largest and mean ulp_error (the mean over the inputs where it is finite)
    max_ulp_error: float | None
    mean_ulp_error: float | None
    #: share of inputs whose result is the correctly rounded reference (ulp_steps 0)
    correctly_rounded_fraction: float | None
    #: inputs compared (those whose reference is not NaN)
    n_inputs: int
    #: True when the inputs are every finite value of the format (every pair for binary ops)
    exhaustive: bool
    #: inputs where exactly one of result and rounded reference is NaN
    n_nan_mismatch: int = 0

    @property
    def max_ulp(self) -> float | None:
        """The old name of :attr:`max_ulp_steps`."""
        return self.max_ulp_steps

    @property
    def mean_ulp(self) -> float | None:
        """The old name of :attr:`mean_ulp_steps`."""
        return self.mean_ulp_steps

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``precision-explorer accuracy``."""
        return dict(self.__dict__)


@dataclass
class AccuracyResult:
    """Per-input errors of several backends over the same inputs, by both measures."""

    op: str
    format: str
    exhaustive: bool
    #: the inputs compared (one array per operand)
    inputs: tuple[np.ndarray, ...]
    #: the float64 reference (``f(x)`` of ulp_error) and it correctly rounded to the format
    reference: np.ndarray
    reference_rounded: np.ndarray
    #: per backend that ran: float64 results, ulp_steps and ulp_error aligned with ``inputs``
    results: dict[str, np.ndarray] = field(default_factory=dict)
    ulp_steps: dict[str, np.ndarray] = field(default_factory=dict)
    ulp_errors: dict[str, np.ndarray] = field(default_factory=dict)
    backends: list[BackendAccuracy] = field(default_factory=list)

    def by_backend(self, name: str) -> BackendAccuracy:
        """The summary of one backend."""
        for b in self.backends:
            if b.backend == name:
                return b
        raise ValueError(f"no backend {name!r} here; have: {', '.join(b.backend for b in self.backends)}")

    def disagreements(self, limit: int | None = 100) -> list[dict[str, Any]]:
        """Inputs where the backends that ran give different results (NaN equals NaN),
        with each backend's result and the correctly rounded reference."""
        names = list(self.results)
        if len(names) < 2:
            return []
        stacked = np.stack([self.results[n] for n in names])
        same = (stacked == stacked[0]) | (np.isnan(stacked) & np.isnan(stacked[0]))
        idx = np.nonzero(~same.all(axis=0))[0]
        if limit is not None:
            idx = idx[:limit]
        rows = []
        for i in idx:
            row: dict[str, Any] = {
                "input": [float(x[i]) for x in self.inputs]
                if len(self.inputs) > 1
                else float(self.inputs[0][i])
            }
            row["reference"] = float(self.reference_rounded[i])
            row.update({n: float(self.results[n][i]) for n in names})
            rows.append(row)
        return rows

    def n_disagreements(self) -> int:
        """How many inputs have differing results between backends."""
        return len(self.disagreements(limit=None))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the summaries, the definitions of both measures and the first disagreements."""
        return {
            "op": self.op,
            "format": self.format,
            "exhaustive": self.exhaustive,
            "definitions": dict(DEFINITIONS),
            "backends": [b.to_dict() for b in self.backends],
            "n_disagreements": self.n_disagreements(),
            "disagreements": self.disagreements(20),
        }


def _summary(name: str, run: Any, steps: np.ndarray, errors: np.ndarray, exhaustive: bool) -> BackendAccuracy:
    with_steps = ~np.isnan(steps)
    finite_error = np.isfinite(errors)
    with_error = ~np.isnan(errors)
    n = int(steps.size)
    return BackendAccuracy(
        backend=name,
        status=run.status,
        error=run.error,
        max_ulp_steps=float(steps[with_steps].max()) if with_steps.any() else None,
        mean_ulp_steps=float(steps[with_steps].mean()) if with_steps.any() else None,
        max_ulp_error=float(errors[with_error].max()) if with_error.any() else None,
        mean_ulp_error=float(errors[finite_error].mean()) if finite_error.any() else None,
        correctly_rounded_fraction=float(np.count_nonzero(steps == 0) / n) if n else None,
        n_inputs=n,
        exhaustive=exhaustive,
        n_nan_mismatch=int(np.count_nonzero(~with_steps)),
    )


def accuracy_from_sweep(s: Sweep) -> AccuracyResult:
    """Both error measures of every backend of a :class:`~explorer.queries.ranges.Sweep`."""
    fmt = resolve(s.format)
    defined = ~np.isnan(s.reference)
    inputs = tuple(x[defined] for x in s.inputs)
    exact = s.reference[defined]
    expected = s.reference_rounded[defined]
    overflowed = (np.isinf(s.reference) & ~s.pole)[defined]
    out = AccuracyResult(s.op, fmt.name, s.exhaustive, inputs, exact, expected)
    for name, run in s.runs.items():
        if run.result is None:
            out.backends.append(
                BackendAccuracy(name, run.status, run.error, None, None, None, None, None, 0, s.exhaustive)
            )
            continue
        result = run.result[defined]
        steps = ulp_steps(result, expected, fmt)
        errors = ulp_error(result, exact, fmt, expected, overflowed)
        out.results[name] = result
        out.ulp_steps[name] = steps
        out.ulp_errors[name] = errors
        out.backends.append(_summary(name, run, steps, errors, s.exhaustive))
    return out


def accuracy(
    op: Any,
    fmt: Any,
    backends: Any = DEFAULT_BACKENDS,
    samples: int = DEFAULT_SAMPLES,
    points: int = 257,
    device: str = "CPU",
) -> AccuracyResult:
    """Both error measures (ulp_steps, ulp_error) of an elementwise op in ``fmt`` on each backend.

    Unary ops: every finite value of formats of 16 bits or fewer, ``samples``
    values per sign otherwise.  Binary ops: every pair of finite values of
    formats of 8 bits or fewer, a ``points`` x ``points`` log-spaced grid otherwise.
    ``samples`` (2 to ``MAX_SAMPLES``) and ``points`` (3 to ``MAX_POINTS``) are checked
    first, whichever the op uses.
    """
    samples = check_samples(samples)
    points = check_points(points)
    o = get_op(op)
    if not o.elementwise or o.arity not in (1, 2):
        valid = [c.name for c in catalog().values() if c.elementwise and c.arity in (1, 2)]
        raise ValueError(
            f"op {o.name} is not elementwise; ULP accuracy is measured for the "
            f"elementwise ops: {', '.join(valid)}"
        )
    if o.arity == 2:
        return accuracy_from_sweep(binary_sweep(o, fmt, backends, points, device))
    return accuracy_from_sweep(sweep(o, fmt, backends, samples, refine=False, device=device))
