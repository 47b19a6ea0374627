"""What each block format costs on a tensor: the ``blocks`` verb's question (and the app's).

For a tensor (a synthetic one, or a user's ``.npy`` file) and block formats: the relative
error (RMS and max), the share of elements flushed to zero or saturated (overall and in the
worst block), the effect of the block size, and the same tensor under per-tensor scaling
to float8/float4 as the baseline.

>>> result = compare_blocks("normal", ["mxfp8_e4m3", "nvfp4"], block_sizes=[16, 32])
>>> [row.format for row in result.rows], [row.format for row in result.per_tensor]
(['mxfp8_e4m3', 'nvfp4'], ['float8_e4m3fn', 'float8_e5m2', 'float4_e2m1fn'])
>>> [(s.format, s.block_size) for s in result.block_sizes][:2]
[('mxfp8_e4m3', 16), ('mxfp8_e4m3', 32)]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from explorer.analysis.block_errors import (
    SYNTHETIC_TENSORS,
    ErrorStats,
    error_stats,
    synthetic_tensor,
)
from explorer.blocks import BLOCK_FORMAT_NAMES, block_format, quantize_blocks, quantize_per_tensor
from explorer.formats import resolve
from explorer.runtime.tensor_file import load_tensor

#: block sizes compared by default (the formats' own, 16 and 32, among them)
DEFAULT_BLOCK_SIZES: tuple[int, ...] = (8, 16, 32, 64, 128)
#: per-tensor baselines by default
DEFAULT_PER_TENSOR: tuple[str, ...] = ("float8_e4m3fn", "float8_e5m2", "float4_e2m1fn")


@dataclass(frozen=True)
class FormatCost:
    """One format on the tensor: a block format at its own block size, or a per-tensor scaling."""

    #: the block format's name, or the element format's for per-tensor scaling
    format: str
    #: ``"block"`` or ``"per_tensor"``
    scaling: str
    #: elements per scale (the whole tensor for per-tensor scaling)
    block_size: int
    #: storage per element, the scales' share included
    bits_per_element: float
    stats: ErrorStats

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values (the stats flattened in)."""
        return {
            "format": self.format,
            "scaling": self.scaling,
            "block_size": self.block_size,
            "bits_per_element": self.bits_per_element,
            **self.stats.to_dict(),
        }


@dataclass(frozen=True)
class BlockSizeCost:
    """A block format's error at another block size."""

    format: str
    block_size: int
    bits_per_element: float
    rel_rms: float | None
    norm_rel: float | None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class BlocksComparison:
    """The answer: where the tensor came from, and what each format costs on it."""

    #: ``"normal"``, ``"laplace"``, ``"outliers"`` or the file's path
    tensor: str
    shape: tuple[int, ...]
    rows: list[FormatCost]
    per_tensor: list[FormatCost]
    block_sizes: list[BlockSizeCost] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values."""
        return {
            "tensor": self.tensor,
            "shape": list(self.shape),
            "formats": [r.to_dict() for r in self.rows],
            "per_tensor": [r.to_dict() for r in self.per_tensor],
            "block_sizes": [b.to_dict() for b in self.block_sizes],
        }


def tensor_from(source: str | np.ndarray, seed: int = 0) -> tuple[str, np.ndarray]:
    """The tensor named by ``source``: a synthetic one (:data:`SYNTHETIC_TENSORS`), a path to a
    ``.npy`` file (read as hostile input), or an array; with the name to show for it."""
    if isinstance(source, np.ndarray):
        return "array", np.asarray(source, dtype=np.float64)
    if source in SYNTHETIC_TENSORS:
        return source, synthetic_tensor(source, seed)
    if not source.endswith(".npy"):
        raise ValueError(f"unknown tensor {source!r}; valid: {', '.join(SYNTHETIC_TENSORS)} or a FILE.npy")
    return source, load_tensor(source)


def block_cost(x: np.ndarray, name: str, block_size: int | None = None) -> FormatCost:
    """One block format on ``x`` (its own block size unless ``block_size``)."""
    q = quantize_blocks(x, name, block_size=block_size)
    stats = error_stats(x, q.values, q.limits(), q.format.block_size)
    return FormatCost(q.format.name, "block", q.format.block_size, q.format.bits_per_element, stats)


def per_tensor_cost(x: np.ndarray, element: str) -> FormatCost:
    """Per-tensor scaling of ``x`` to ``element`` (one float32 scale: 32 bits for the tensor)."""
    fmt = resolve(element)
    q = quantize_per_tensor(x, fmt)
    stats = error_stats(x, q.values, np.full(x.shape, fmt.max * q.scale))
    return FormatCost(fmt.name, "per_tensor", int(x.size), fmt.bits + 32 / max(x.size, 1), stats)


def compare_blocks(
    tensor: str | np.ndarray,
    formats: Sequence[str] = BLOCK_FORMAT_NAMES,
    *,
    block_sizes: Sequence[int] = DEFAULT_BLOCK_SIZES,
    per_tensor: Sequence[str] = DEFAULT_PER_TENSOR,
    seed: int = 0,
) -> BlocksComparison:
    """Each block format in ``formats`` on the tensor (see :func:`tensor_from`), at its own
    block size and at each of ``block_sizes``, beside per-tensor scaling to ``per_tensor``."""
    names = [block_format(f).name for f in formats]
    elements = [resolve(e).name for e in per_tensor]
    label, x = tensor_from(tensor, seed)
    rows = [block_cost(x, name) for name in names]
    sizes = []
    for name in names:
        for size in block_sizes:
            cost = block_cost(x, name, size)
            stats = cost.stats
            sizes.append(BlockSizeCost(name, size, cost.bits_per_element, stats.rel_rms, stats.norm_rel))
    baselines = [per_tensor_cost(x, e) for e in elements]
    return BlocksComparison(label, tuple(x.shape), rows, baselines, sizes)


@dataclass(frozen=True)
class ErrorDistribution:
    """The relative error of every element, per format (block formats and per-tensor scaling)."""

    #: where the tensor came from (see :func:`tensor_from`)
    tensor: str
    shape: tuple[int, ...]
    #: format name -> |q - x| / |x| of the finite nonzero elements (1.0 where flushed to zero)
    errors: dict[str, np.ndarray]


def error_distribution(
    tensor: str | np.ndarray,
    formats: Sequence[str] = BLOCK_FORMAT_NAMES,
    *,
    per_tensor: Sequence[str] = DEFAULT_PER_TENSOR[:1],
    seed: int = 0,
) -> ErrorDistribution:
    """Every element's relative error in each block format (and per-tensor scaling to each of
    ``per_tensor``), for a histogram.

    >>> dist = error_distribution("laplace", ["nvfp4"], per_tensor=["float4_e2m1fn"])
    >>> list(dist.errors), dist.errors["nvfp4"].size
    (['nvfp4', 'float4_e2m1fn per tensor'], 65536)
    """
    names = [block_format(f).name for f in formats]
    elements = [resolve(e).name for e in per_tensor]
    label, x = tensor_from(tensor, seed)
    keep = np.isfinite(x) & (x != 0)

    def relative(q: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", over="ignore"):
            return np.abs(q[keep] - x[keep]) / np.abs(x[keep])

    errors = {name: relative(quantize_blocks(x, name).values) for name in names}
    errors |= {f"{e} per tensor": relative(quantize_per_tensor(x, e).values) for e in elements}
    return ErrorDistribution(label, tuple(x.shape), errors)
