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

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from explorer.analysis.block_errors import (
    SYNTHETIC_TENSORS,
    ErrorAccumulator,
    ErrorStats,
    error_stats,
    synthetic_tensor,
)
from explorer.blocks import BLOCK_FORMAT_NAMES, block_format, quantize_blocks, quantize_per_tensor
from explorer.formats import resolve
from explorer.runtime.tensor_file import NpyHeader, load_tensor, read_header, row_chunks

#: block sizes compared by default (the formats' own, 16 and 32, among them)
DEFAULT_BLOCK_SIZES: tuple[int, ...] = (8, 16, 32, 64, 128)
#: per-tensor baselines by default
DEFAULT_PER_TENSOR: tuple[str, ...] = ("float8_e4m3fn", "float8_e5m2", "float4_e2m1fn")
#: most elements of a tensor quantized at once by :func:`compare_blocks` (pieces of whole blocks)
PIECE_ELEMENTS = 1 << 20


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


def _pieces(source: np.ndarray | NpyHeader, multiple: int) -> Iterator[np.ndarray]:
    """The tensor as 2-D float64 pieces of at most :data:`PIECE_ELEMENTS` elements, cut along
    the last axis at multiples of ``multiple`` (see :func:`~explorer.runtime.tensor_file.row_chunks`)."""
    if isinstance(source, NpyHeader):
        yield from row_chunks(source, PIECE_ELEMENTS, multiple)
        return
    rows = source.reshape(1, 1) if source.ndim == 0 else source.reshape(-1, source.shape[-1])
    length = rows.shape[1]
    if length > PIECE_ELEMENTS:
        width = max(multiple, PIECE_ELEMENTS // multiple * multiple)
        for row in range(rows.shape[0]):
            for col in range(0, length, width):
                yield rows[row : row + 1, col : col + width]
        return
    step = max(1, PIECE_ELEMENTS // length)
    for first in range(0, rows.shape[0], step):
        yield rows[first : first + step]


def _finite_amax(source: np.ndarray | NpyHeader) -> float:
    """max |x| over the finite values (0.0 when there are none), piece by piece."""
    amax = 0.0
    for piece in _pieces(source, 1):
        magnitude = np.abs(piece)
        finite = magnitude[np.isfinite(magnitude)]
        if finite.size:
            amax = max(amax, float(finite.max()))
    return amax


def _streamed_block_cost(
    source: np.ndarray | NpyHeader, name: str, amax: float, block_size: int | None = None
) -> FormatCost:
    """:func:`block_cost` piece by piece (NVFP4's tensor scale from the whole tensor's ``amax``)."""
    fmt = block_format(name)
    if block_size is not None:
        fmt = fmt.with_block_size(block_size)
    accumulator = ErrorAccumulator(fmt.block_size)
    for piece in _pieces(source, fmt.block_size):
        q = quantize_blocks(piece, fmt, tensor_amax=amax)
        accumulator.add(piece, q.values, q.limits())
    return FormatCost(fmt.name, "block", fmt.block_size, fmt.bits_per_element, accumulator.result())


def _streamed_per_tensor_cost(
    source: np.ndarray | NpyHeader, element: str, amax: float, size: int
) -> FormatCost:
    """:func:`per_tensor_cost` piece by piece, with the whole tensor's ``amax``."""
    fmt = resolve(element)
    accumulator = ErrorAccumulator(None)
    for piece in _pieces(source, 1):
        q = quantize_per_tensor(piece, fmt, amax=amax)
        accumulator.add(piece, q.values, np.full(piece.shape, fmt.max * q.scale))
    return FormatCost(fmt.name, "per_tensor", size, fmt.bits + 32 / max(size, 1), accumulator.result())


def compare_blocks(
    tensor: str | np.ndarray,
    formats: Sequence[str] = BLOCK_FORMAT_NAMES,
    *,
    block_sizes: Sequence[int] = DEFAULT_BLOCK_SIZES,
    per_tensor: Sequence[str] = DEFAULT_PER_TENSOR,
    seed: int = 0,
) -> BlocksComparison:
    """Each block format in ``formats`` on the tensor (see :func:`tensor_from`), at its own
    block size and at each of ``block_sizes``, beside per-tensor scaling to ``per_tensor``.

    A ``.npy`` file is read piece by piece (:data:`PIECE_ELEMENTS` elements at a time, whole
    blocks), never whole: the memory used is bounded by a piece, whatever the tensor's size."""
    source: np.ndarray | NpyHeader
    if isinstance(tensor, str) and tensor not in SYNTHETIC_TENSORS and tensor.endswith(".npy"):
        source = read_header(tensor)  # first: a hostile header is refused before ml_dtypes is loaded
        label, shape = tensor, source.shape
        names = [block_format(f).name for f in formats]
        elements = [resolve(e).name for e in per_tensor]
    else:
        names = [block_format(f).name for f in formats]
        elements = [resolve(e).name for e in per_tensor]
        label, source = tensor_from(tensor, seed)
        shape = tuple(source.shape)
    size = int(np.prod(shape, dtype=np.int64)) if shape else 1
    amax = _finite_amax(source)
    rows = [_streamed_block_cost(source, name, amax) for name in names]
    sizes = []
    for name in names:
        for block_size in block_sizes:
            stats = _streamed_block_cost(source, name, amax, block_size).stats
            bits = block_format(name).with_block_size(block_size).bits_per_element
            sizes.append(BlockSizeCost(name, block_size, bits, stats.rel_rms, stats.norm_rel))
    baselines = [_streamed_per_tensor_cost(source, e, amax, size) for e in elements]
    return BlocksComparison(label, shape, rows, baselines, sizes)


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
