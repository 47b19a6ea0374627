"""What a scaled format does to a tensor: relative error, flushes to zero, saturation.

Pure: arrays in, numbers out.  The synthetic tensors the ``blocks`` verb and the benchmark
use are here too (seeded, so every run sees the same values).

>>> import numpy as np
>>> stats = error_stats(np.array([1.0, 0.01, 3.0, 0.0]), np.array([1.0, 0.0, 2.5, 0.0]))
>>> stats.flushed, round(stats.rel_max, 4)
(0.3333333333333333, 1.0)
"""

from __future__ import annotations

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
    """How far quantized values are from the originals (finite, nonzero originals only for
    the relative errors)."""

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

    def to_dict(self) -> dict[str, Any]:
        """The numbers as a plain dict."""
        return asdict(self)


def _share(part: np.ndarray, whole: np.ndarray, axis: int | None = None) -> Any:
    counts = whole.sum(axis=axis)
    return np.where(counts > 0, part.sum(axis=axis) / np.maximum(counts, 1), 0.0)


def error_stats(
    x: np.ndarray, q: np.ndarray, limits: np.ndarray | None = None, block_size: int | None = None
) -> ErrorStats:
    """Errors of ``q`` (quantized) against ``x``; per block along the last axis when
    ``block_size`` is given (zero-padded like the block formats; else one block).

    ``limits`` is the largest magnitude each element could hold (the element format's
    largest value times its scale, the shape of ``x``): beyond it the format saturated.
    """
    x = np.asarray(x, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    if x.shape != q.shape:
        raise ValueError(f"x has shape {x.shape} but q has {q.shape}")
    finite = np.isfinite(x)
    nonzero = finite & (x != 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rel = np.abs(q[nonzero] - x[nonzero]) / np.abs(x[nonzero])
        norm = float(np.linalg.norm(x[finite]))
        norm_rel = float(np.linalg.norm(q[finite] - x[finite]) / norm) if norm > 0 else None
    flushed = nonzero & (q == 0)
    saturated = finite & (np.abs(x) > limits) if limits is not None else np.zeros(x.shape, bool)
    masks = (flushed, nonzero, saturated, finite)
    if block_size is None or x.ndim == 0:  # one block: the whole tensor
        blocked = [a.reshape(1, -1) for a in masks]
    else:
        blocked = [_blocked(a.reshape(-1, x.shape[-1]), block_size) for a in masks]
    per_block_flushed = _share(blocked[0], blocked[1], axis=-1)
    per_block_saturated = _share(blocked[2], blocked[3], axis=-1)
    return ErrorStats(
        rel_rms=float(np.sqrt(np.mean(rel**2))) if rel.size else None,
        rel_max=float(rel.max()) if rel.size else None,
        norm_rel=norm_rel,
        flushed=float(_share(flushed, nonzero)),
        saturated=float(_share(saturated, finite)),
        flushed_block_max=float(per_block_flushed.max()) if per_block_flushed.size else 0.0,
        saturated_block_max=float(per_block_saturated.max()) if per_block_saturated.size else 0.0,
        blocks_flushing=float(np.mean(blocked[0].any(axis=-1))) if blocked[0].size else 0.0,
        blocks_saturating=float(np.mean(blocked[2].any(axis=-1))) if blocked[2].size else 0.0,
        elements=int(nonzero.sum()),
    )


def _blocked(rows: np.ndarray, block_size: int) -> np.ndarray:
    """Boolean ``rows`` (2-D) as ``(blocks, block_size)``, the last block of a row padded with False."""
    length = rows.shape[-1]
    count = max(-(-length // block_size), 1)
    padded = np.zeros((rows.shape[0], count * block_size), dtype=bool)
    padded[:, :length] = rows
    return padded.reshape(-1, block_size)
