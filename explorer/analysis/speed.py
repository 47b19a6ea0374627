"""Timing statistics: the median and spread of repeated timed calls, and a dtype's time
relative to float32's (:func:`summarize`, :func:`ratio_to_baseline`, :func:`is_slow`).

Pure: the samples are measured elsewhere (:mod:`explorer.runtime.timing`).

>>> t = summarize([0.003, 0.001, 0.002, 0.004, 0.005])
>>> t.median, t.q1, t.q3, t.minimum, t.maximum, t.count
(0.003, 0.002, 0.004, 0.001, 0.005, 5)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

#: a cell is ``slow`` when its median time is more than this many times float32's
SLOW_RATIO = 1.5


@dataclass(frozen=True)
class TimingSummary:
    """Seconds per call over repeated timed calls."""

    #: the median seconds per call
    median: float
    #: the first and third quartiles (linear interpolation between order statistics)
    q1: float
    q3: float
    #: the fastest and slowest sample
    minimum: float
    maximum: float
    #: how many samples (each sample may be the mean of ``calls_per_sample`` calls)
    count: int
    #: calls timed together in one sample (1 unless a call is too short to time alone)
    calls_per_sample: int = 1
    #: seconds spent in the timed calls
    total: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields."""
        return asdict(self)

    def contains(self, seconds: float) -> bool:
        """True when ``seconds`` lies within the samples' range (min to max).

        >>> summarize([1.0, 2.0]).contains(1.5), summarize([1.0, 2.0]).contains(3.0)
        (True, False)
        """
        return self.minimum <= seconds <= self.maximum


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of already sorted values (linear interpolation, NumPy's default).

    >>> quantile([1.0, 2.0, 3.0, 4.0], 0.5), quantile([1.0, 2.0, 3.0, 4.0], 0.25)
    (2.5, 1.75)
    """
    if not sorted_values:
        raise ValueError("no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} is not between 0 and 1")
    position = q * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    fraction = position - low
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * fraction


def summarize(samples: Sequence[float], calls_per_sample: int = 1) -> TimingSummary:
    """Median, quartiles and range of ``samples`` (seconds per call).

    >>> summarize([2.0]).median
    2.0
    """
    values = sorted(float(s) for s in samples)
    if not values:
        raise ValueError("no timing samples")
    if any(not math.isfinite(v) or v < 0 for v in values):
        raise ValueError("timing samples must be finite and >= 0")
    return TimingSummary(
        median=quantile(values, 0.5),
        q1=quantile(values, 0.25),
        q3=quantile(values, 0.75),
        minimum=values[0],
        maximum=values[-1],
        count=len(values),
        calls_per_sample=calls_per_sample,
        total=sum(values) * calls_per_sample,
    )


def ratio_to_baseline(seconds: float | None, baseline: float | None) -> float | None:
    """``seconds / baseline`` (a dtype's median over float32's); None when either is missing.

    >>> ratio_to_baseline(3.0, 2.0), ratio_to_baseline(None, 2.0)
    (1.5, None)
    """
    if seconds is None or baseline is None or baseline <= 0:
        return None
    return seconds / baseline


def is_slow(ratio: float | None, threshold: float = SLOW_RATIO) -> bool:
    """True when ``ratio`` (time over float32's) is above ``threshold``.

    >>> is_slow(1.6), is_slow(1.5), is_slow(None)
    (True, False, False)
    """
    return ratio is not None and ratio > threshold


@dataclass(frozen=True)
class Workload:
    """The input shapes an op is timed at (the values: the catalog's own inputs, tiled)."""

    #: the op's catalog name
    op: str
    #: one shape per input of the op
    shapes: tuple[tuple[int, ...], ...]

    @property
    def label(self) -> str:
        """The shapes as text, e.g. ``"512x512,512x512"`` (``"catalog"`` for no inputs).

        >>> Workload("matmul", ((64, 64), (64, 64))).label
        '64x64,64x64'
        """
        return ",".join("x".join(str(n) for n in shape) or "scalar" for shape in self.shapes) or "catalog"


#: elements per input of an elementwise op when timed
ELEMENTWISE_SIZE = 65_536
#: rows x columns of the row-wise ops (reductions, softmax, norms) when timed
ROWS_SHAPE: tuple[int, int] = (256, 1024)

#: shapes per op where the catalog's tiny inputs would time only the call's overhead: matmul and
#: conv2d at a small size and at one large enough to be compute bound
SIZED_WORKLOADS: dict[str, tuple[tuple[tuple[int, ...], ...], ...]] = {
    "matmul": (((64, 64), (64, 64)), ((512, 512), (512, 512))),
    "batch_matmul": (((8, 64, 64), (8, 64, 64)),),
    "conv2d": (((1, 16, 16, 8), (3, 3, 8, 8)), ((4, 32, 32, 64), (3, 3, 64, 64))),
    "layer_norm": ((ROWS_SHAPE, ROWS_SHAPE[1:], ROWS_SHAPE[1:]),),
    "bias_add": ((ROWS_SHAPE, ROWS_SHAPE[1:]),),
}
#: ops timed at :data:`ROWS_SHAPE` (their catalog input is one matrix of rows)
ROW_OPS: tuple[str, ...] = (
    "sum",
    "mean",
    "prod",
    "reduce_max",
    "reduce_min",
    "logsumexp",
    "variance",
    "std",
    "euclidean_norm",
    "cumsum",
    "softmax",
    "log_softmax",
    "l2_normalize",
)


def workloads(op_name: str, elementwise: bool, catalog_shapes: Sequence[tuple[int, ...]]) -> list[Workload]:
    """The workloads an op is timed at: :data:`SIZED_WORKLOADS`, rows for :data:`ROW_OPS`,
    :data:`ELEMENTWISE_SIZE` values for elementwise ops, else the catalog's own shapes.

    >>> [w.label for w in workloads("matmul", False, [(4, 8), (8, 4)])]
    ['64x64,64x64', '512x512,512x512']
    >>> [w.label for w in workloads("exp", True, [(64,)])]
    ['65536']
    >>> [w.label for w in workloads("qr", False, [(4, 4)])]
    ['4x4']
    """
    if op_name in SIZED_WORKLOADS:
        return [Workload(op_name, shapes) for shapes in SIZED_WORKLOADS[op_name]]
    if op_name in ROW_OPS:
        return [Workload(op_name, (ROWS_SHAPE,))]
    if elementwise:
        return [Workload(op_name, tuple((ELEMENTWISE_SIZE,) for _ in catalog_shapes))]
    return [Workload(op_name, tuple(tuple(s) for s in catalog_shapes))]
