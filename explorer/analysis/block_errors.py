"""What a scaled format does to a tensor: relative error, flushes to zero, saturation.

Pure: arrays in, numbers out.  The synthetic tensors the ``blocks`` verb and the benchmark
use are here too (seeded, so every run sees the same values).

>>> import numpy as np
>>> stats = error_stats(np.array([1.0, 0.01, 3.0, 0.0]), np.array([1.0, 0.0, 2.5, 0.0]))
>>> stats.flushed, round(stats.rel_max, 4)
(0.3333333333333333, 1.0)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

#: the synthetic tensors, by name, with what they hold
SYNTHETIC_TENSORS: dict[str, str] = {
    "normal": "standard normal values",
    "laplace": "Laplace(0, 1) values (heavier tails, like trained weights)",
    "outliers": "standard normal values, 1 in 1000 of them (at random places) times 100",
}
#: the shape of a synthetic tensor: 256 rows of 256 (blocks run along the rows)
SYNTHETIC_SHAPE: tuple[int, int] = (256, 256)
#: the share of outliers and their factor in the ``outliers`` tensor
OUTLIER_SHARE, OUTLIER_FACTOR = 1e-3, 100.0


def synthetic_tensor(name: str, seed: int = 0, shape: tuple[int, ...] = SYNTHETIC_SHAPE) -> np.ndarray:
    """One of :data:`SYNTHETIC_TENSORS`, float64, from ``seed``.

    >>> synthetic_tensor("outliers").shape
    (256, 256)
    """
    if name not in SYNTHETIC_TENSORS:
        raise ValueError(f"unknown tensor {name!r}; valid: {', '.join(SYNTHETIC_TENSORS)} or a .npy file")
    rng = np.random.default_rng(seed)
    if name == "laplace":
        return rng.laplace(size=shape)
    values = rng.standard_normal(shape)
    if name == "outliers":
        chosen = rng.random(shape) < OUTLIER_SHARE
        values[chosen] *= OUTLIER_FACTOR
    return values


@dataclass(frozen=True)
class ErrorStats:
    """How far quantized values are from the originals (finite, nonzero originals whose
    quantized value is finite, for the relative errors)."""

    #: root mean square of |q - x| / |x| over the finite nonzero x (None when there are none)
    rel_rms: float | None
    #: the largest |q - x| / |x| there
    rel_max: float | None
    #: ||q - x|| / ||x|| over the finite x: the error relative to the tensor's size
    norm_rel: float | None
    #: share of the finite nonzero x that became 0
    flushed: float
    #: share of the finite x that the format clamped at its largest element (0 without ``limits``)
    saturated: float
    #: the largest share of flushed elements in one block (of its finite nonzero x)
    flushed_block_max: float
    #: the largest share of saturated elements in one block
    saturated_block_max: float
    #: share of the blocks with at least one flushed element
    blocks_flushing: float
    #: share of the blocks with at least one saturated element
    blocks_saturating: float
    #: elements compared (finite nonzero x)
    elements: int
    #: share of the finite x whose quantized value is NaN or infinite (an MX block whose shared
    #: exponent exceeds E8M0's 127, or that holds a NaN or an infinity, decodes to NaN); those
    #: are left out of ``rel_rms``, ``rel_max`` and ``norm_rel``
    nonfinite: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The numbers as a plain dict."""
        return asdict(self)


def _share(part: np.ndarray, whole: np.ndarray, axis: int | None = None) -> Any:
    counts = whole.sum(axis=axis)
    return np.where(counts > 0, part.sum(axis=axis) / np.maximum(counts, 1), 0.0)


class _SumOfSquares:
    """``sum(v**2)`` of nonnegative finite values fed piece by piece, kept as ``S * 4**K``
    (each piece scaled by a power of two first), so that it never overflows or underflows."""

    def __init__(self) -> None:
        self.exponent = 0
        self.total = 0.0

    def add(self, values: np.ndarray, shift: int = 0) -> None:
        """Add ``(values * 2**shift)**2`` (``values`` nonnegative and finite)."""
        if values.size == 0:
            return
        top = float(values.max())
        if top == 0.0:
            return
        exponent = math.frexp(top)[1]
        part = float(np.sum(np.square(np.ldexp(values, -exponent))))
        exponent += shift
        if self.total == 0.0 or exponent > self.exponent:
            self.total = math.ldexp(self.total, 2 * (self.exponent - exponent)) + part
            self.exponent = exponent
        else:
            self.total += math.ldexp(part, 2 * (exponent - self.exponent))

    def root(self, divisor: float = 1.0) -> float:
        """``sqrt(sum / divisor)``."""
        return _ldexp(math.sqrt(self.total / divisor), self.exponent)

    def ratio(self, other: _SumOfSquares) -> float | None:
        """``sqrt(self / other)``, or None when ``other`` is 0."""
        if other.total == 0.0:
            return None
        return _ldexp(math.sqrt(self.total / other.total), self.exponent - other.exponent)


def _ldexp(value: float, exponent: int) -> float:
    try:
        return math.ldexp(value, exponent)
    except OverflowError:
        return math.inf


class ErrorAccumulator:
    """:func:`error_stats` of a tensor fed piece by piece (2-D pieces of whole rows or of
    row segments cut at multiples of ``block_size``), in memory bounded by one piece.

    >>> import numpy as np
    >>> x = np.array([[1.0, 0.01, 3.0, 0.0]]); q = np.array([[1.0, 0.0, 2.5, 0.0]])
    >>> acc = ErrorAccumulator(block_size=2)
    >>> acc.add(x[:, :2], q[:, :2]); acc.add(x[:, 2:], q[:, 2:])
    >>> acc.result() == error_stats(x, q, block_size=2)
    True
    """

    def __init__(self, block_size: int | None = None) -> None:
        self.block_size = block_size
        self.squares = _SumOfSquares()
        self.x_norm = _SumOfSquares()
        self.diff_norm = _SumOfSquares()
        self.rel_max: float | None = None
        self.counts = {"nonzero": 0, "compared": 0, "finite": 0, "flushed": 0, "saturated": 0, "nonfinite": 0}
        self.flushed_block_max = 0.0
        self.saturated_block_max = 0.0
        self.blocks = 0
        self.blocks_flushing = 0
        self.blocks_saturating = 0

    def add(self, x: np.ndarray, q: np.ndarray, limits: np.ndarray | None = None) -> None:
        """One piece: originals ``x``, quantized ``q`` and ``limits`` (see :func:`error_stats`)."""
        x = np.asarray(x, dtype=np.float64)
        q = np.asarray(q, dtype=np.float64)
        if x.shape != q.shape:
            raise ValueError(f"x has shape {x.shape} but q has {q.shape}")
        if x.ndim == 0:
            x, q = x.reshape(1), q.reshape(1)
            limits = None if limits is None else np.asarray(limits).reshape(1)
        finite = np.isfinite(x)
        nonzero = finite & (x != 0)
        usable = finite & np.isfinite(q)
        compared = nonzero & usable
        with np.errstate(over="ignore", invalid="ignore"):
            diff = np.abs(q[usable] - x[usable])
            shift = 0
            if not np.isfinite(diff).all():  # |q - x| above float64's largest: halves, exactly
                diff = np.abs(np.ldexp(q[usable], -1) - np.ldexp(x[usable], -1))
                shift = 1
            self.diff_norm.add(diff, shift)
            self.x_norm.add(np.abs(x[finite]))
            rel_diff = np.abs(np.ldexp(q[compared], -shift) - np.ldexp(x[compared], -shift))
            rel = rel_diff / np.abs(np.ldexp(x[compared], -shift))
        if rel.size:
            self.squares.add(rel)
            top = float(rel.max())
            self.rel_max = top if self.rel_max is None else max(self.rel_max, top)
        flushed = nonzero & (q == 0)
        with np.errstate(invalid="ignore"):
            saturated = finite & (np.abs(x) > limits) if limits is not None else np.zeros(x.shape, bool)
        counts = self.counts
        counts["nonzero"] += int(nonzero.sum())
        counts["compared"] += int(compared.sum())
        counts["finite"] += int(finite.sum())
        counts["flushed"] += int(flushed.sum())
        counts["saturated"] += int(saturated.sum())
        counts["nonfinite"] += int((finite & ~np.isfinite(q)).sum())
        if self.block_size is None:
            return
        masks = [
            _blocked(a.reshape(-1, x.shape[-1]), self.block_size)
            for a in (flushed, nonzero, saturated, finite)
        ]
        per_block_flushed = _share(masks[0], masks[1], axis=-1)
        per_block_saturated = _share(masks[2], masks[3], axis=-1)
        if per_block_flushed.size:
            self.flushed_block_max = max(self.flushed_block_max, float(per_block_flushed.max()))
            self.saturated_block_max = max(self.saturated_block_max, float(per_block_saturated.max()))
        self.blocks += masks[0].shape[0]
        self.blocks_flushing += int(masks[0].any(axis=-1).sum())
        self.blocks_saturating += int(masks[2].any(axis=-1).sum())

    def result(self) -> ErrorStats:
        """The statistics of everything added."""
        counts = self.counts
        flushed = counts["flushed"] / counts["nonzero"] if counts["nonzero"] else 0.0
        saturated = counts["saturated"] / counts["finite"] if counts["finite"] else 0.0
        if self.block_size is None:  # one block: the whole tensor
            block_values = (flushed, saturated, float(counts["flushed"] > 0), float(counts["saturated"] > 0))
        else:
            blocks = max(self.blocks, 1)
            block_values = (
                self.flushed_block_max,
                self.saturated_block_max,
                self.blocks_flushing / blocks if self.blocks else 0.0,
                self.blocks_saturating / blocks if self.blocks else 0.0,
            )
        return ErrorStats(
            rel_rms=self.squares.root(counts["compared"]) if counts["compared"] else None,
            rel_max=self.rel_max,
            norm_rel=self.diff_norm.ratio(self.x_norm),
            flushed=flushed,
            saturated=saturated,
            flushed_block_max=block_values[0],
            saturated_block_max=block_values[1],
            blocks_flushing=block_values[2],
            blocks_saturating=block_values[3],
            elements=counts["nonzero"],
            nonfinite=counts["nonfinite"] / counts["finite"] if counts["finite"] else 0.0,
        )


def error_stats(
    x: np.ndarray, q: np.ndarray, limits: np.ndarray | None = None, block_size: int | None = None
) -> ErrorStats:
    """Errors of ``q`` (quantized) against ``x``; per block along the last axis when
    ``block_size`` is given (zero-padded like the block formats; else one block).

    ``limits`` is the largest magnitude each element could hold (the element format's
    largest value times its scale, the shape of ``x``): beyond it the format saturated.
    Sums are kept scaled by powers of two: values near float64's largest give finite answers.
    """
    x = np.asarray(x, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    if x.shape != q.shape:
        raise ValueError(f"x has shape {x.shape} but q has {q.shape}")
    accumulator = ErrorAccumulator(None if x.ndim == 0 else block_size)
    accumulator.add(x, q, limits)
    return accumulator.result()


def _blocked(rows: np.ndarray, block_size: int) -> np.ndarray:
    """Boolean ``rows`` (2-D) as ``(blocks, block_size)``, the last block of a row padded with False."""
    length = rows.shape[-1]
    count = max(-(-length // block_size), 1)
    padded = np.zeros((rows.shape[0], count * block_size), dtype=bool)
    padded[:, :length] = rows
    return padded.reshape(-1, block_size)
