"""Accuracy of each backend in ULPs of the target format.

The yardstick is the float64 reference correctly rounded (nearest-even) to
the format.  The error of a result is the number of code points between it
and that rounded reference (0 = correctly rounded; ``inf`` right after
``max`` counts as the next code point).  Both NaN counts as agreement; a NaN
on one side only is a *NaN mismatch*: it is not given a ULP figure, and it is
not correctly rounded.  Inputs whose reference is NaN (outside the op's
domain) are left out.

>>> acc = accuracy("exp", "float16", backends=("numpy", "emulated"))
>>> [(b.backend, b.max_ulp, b.exhaustive) for b in acc.backends]
[('numpy', 1.0, True), ('emulated', 0.0, True)]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from explorer.analysis.ranges import (
    DEFAULT_BACKENDS,
    DEFAULT_SAMPLES,
    Sweep,
    binary_sweep,
    check_points,
    check_samples,
    sweep,
)
from explorer.formats import ordinals, resolve
from explorer.ops import catalog, get_op


def ulp_distance(result: np.ndarray, expected: np.ndarray, fmt: Any) -> np.ndarray:
    """Code points between each result and the expected value (both values of ``fmt``);
    0 where both are NaN, NaN where only one is.

    >>> ulp_distance(np.array([1.0, np.nan]), np.array([1.0009765625, np.nan]), "float16").tolist()
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


@dataclass(frozen=True)
class BackendAccuracy:
    """Summary of one backend's errors."""

    backend: str
    status: str
    error: str
    #: largest error in ULPs over the inputs with a ULP figure (None when it did not run)
    max_ulp: float | None
    mean_ulp: float | None
    #: share of inputs whose result is the correctly rounded reference
    correctly_rounded_fraction: float | None
    #: inputs compared (those whose reference is not NaN)
    n_inputs: int
    #: True when the inputs are every finite value of the format (every pair for binary ops)
    exhaustive: bool
    #: inputs where exactly one of result and rounded reference is NaN
    n_nan_mismatch: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``precision-explorer accuracy``."""
        return dict(self.__dict__)


@dataclass
class AccuracyResult:
    """Per-input ULP errors of several backends over the same inputs."""

    op: str
    format: str
    exhaustive: bool
    #: the inputs compared (one array per operand)
    inputs: tuple[np.ndarray, ...]
    reference_rounded: np.ndarray
    #: per backend that ran: float64 results and ULP errors aligned with ``inputs``
    results: dict[str, np.ndarray] = field(default_factory=dict)
    ulps: dict[str, np.ndarray] = field(default_factory=dict)
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
        """JSON-ready: the summaries and the first disagreements."""
        return {
            "op": self.op,
            "format": self.format,
            "exhaustive": self.exhaustive,
            "backends": [b.to_dict() for b in self.backends],
            "n_disagreements": self.n_disagreements(),
            "disagreements": self.disagreements(20),
        }


def accuracy_from_sweep(s: Sweep) -> AccuracyResult:
    """ULP errors of every backend of a :class:`~explorer.analysis.ranges.Sweep`."""
    fmt = resolve(s.format)
    defined = ~np.isnan(s.reference)
    inputs = tuple(x[defined] for x in s.inputs)
    expected = s.reference_rounded[defined]
    out = AccuracyResult(s.op, fmt.name, s.exhaustive, inputs, expected)
    for name, run in s.runs.items():
        if run.result is None:
            out.backends.append(
                BackendAccuracy(name, run.status, run.error, None, None, None, 0, s.exhaustive)
            )
            continue
        result = run.result[defined]
        ulps = ulp_distance(result, expected, fmt)
        out.results[name] = result
        out.ulps[name] = ulps
        finite = ~np.isnan(ulps)
        n = int(ulps.size)
        out.backends.append(
            BackendAccuracy(
                backend=name,
                status=run.status,
                error=run.error,
                max_ulp=float(ulps[finite].max()) if finite.any() else None,
                mean_ulp=float(ulps[finite].mean()) if finite.any() else None,
                correctly_rounded_fraction=float(np.count_nonzero(ulps == 0) / n) if n else None,
                n_inputs=n,
                exhaustive=s.exhaustive,
                n_nan_mismatch=int(np.count_nonzero(~finite)),
            )
        )
    return out


def accuracy(
    op: Any,
    fmt: Any,
    backends: Any = DEFAULT_BACKENDS,
    samples: int = DEFAULT_SAMPLES,
    points: int = 257,
    device: str = "CPU",
) -> AccuracyResult:
    """ULP errors of an elementwise op in ``fmt`` on each backend.

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
