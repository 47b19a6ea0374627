"""One block of a block-scaled format, element by element; a block format's range for a given
block max; and what a block format does to a model layer's weights.

Pure: arrays in, plain data out (the quantization is :func:`explorer.blocks.quantize_blocks`,
the bit patterns :func:`explorer.formats.encode`).

>>> view = inspect_block("mxfp4_e2m1", [0.1, 1.0, 3.0, 7.0])
>>> view.scale, view.scale_bits, [r.element_bits for r in view.rows]
(1.0, '01111111', ['0000', '0010', '0101', '0111'])
>>> r = block_range("mxfp8_e4m3", 1.0)  # 2**(0 - 8): E4M3's 448 and 2**-9 times 2**-8
>>> r.scale, r.largest, r.smallest_nonzero
(0.00390625, 1.75, 7.62939453125e-06)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from explorer.blocks import BlockFormat, block_format, quantize_blocks
from explorer.formats import encode, resolve

#: the seeded sample a block shows when no values are given: standard normal values
SAMPLE_NOTE = "standard normal values"


@dataclass(frozen=True)
class BlockElement:
    """One element of a block: the input, what is stored, what it decodes to, the error."""

    index: int
    #: the value given
    input: float
    #: the element as stored, in the element format (before the scale)
    element: float
    #: its bit pattern, most significant bit first (MXINT8: two's complement)
    element_bits: str
    #: ``element`` times the block's scale (times NVFP4's tensor scale)
    value: float
    #: ``value - input``
    error: float
    #: ``|value - input| / |input|`` (None for an input of 0 or not finite)
    relative_error: float | None


@dataclass(frozen=True)
class BlockView:
    """One block (:func:`inspect_block`): its shared scale and its elements."""

    format: str
    element_format: str
    scale_format: str
    #: the block scale (decoded; NaN for a NaN block) and its bit pattern
    scale: float
    scale_bits: str
    #: NVFP4's per-tensor scale (float32) and its bits, else None
    tensor_scale: float | None
    tensor_scale_bits: str | None
    rows: tuple[BlockElement, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return asdict(self)


def _bits(code: int, width: int) -> str:
    return format(int(code), f"0{width}b")


def sample_block(fmt: Any, seed: int = 0) -> np.ndarray:
    """A seeded block of ``fmt``'s size: standard normal values (float64).

    >>> sample_block("nvfp4").shape
    (16,)
    """
    return np.random.default_rng(seed).standard_normal(block_format(fmt).block_size)


def parse_values(text: str, limit: int = 4096) -> list[float]:
    """Numbers separated by commas or spaces (``inf``, ``nan`` allowed); ValueError naming the
    first that is not one.

    >>> parse_values("1, -0.5 2e3")
    [1.0, -0.5, 2000.0]
    """
    items = [t for t in text.replace(",", " ").split() if t]
    if len(items) > limit:
        raise ValueError(f"at most {limit} values, got {len(items)}")
    out = []
    for item in items:
        try:
            out.append(float(item))
        except ValueError:
            raise ValueError(f"not a number: {item[:40]!r} (give numbers separated by commas)") from None
    return out


def inspect_block(fmt: Any, values: Sequence[float] | np.ndarray) -> BlockView:
    """The block ``values`` (at most one block: the format's block size; fewer are padded with
    zeros, which never change the block's max) in the block format ``fmt``: its scale's bits,
    and each element's bits, decoded value and error.  NVFP4's tensor scale is computed from
    these values alone (the block is the whole tensor)."""
    block: BlockFormat = block_format(fmt)
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if x.size == 0:
        raise ValueError("give at least one value")
    if x.size > block.block_size:
        raise ValueError(f"{block.name} has {block.block_size} elements per block, got {x.size} values")
    q = quantize_blocks(x, block)
    element_codes = q.element_codes().reshape(-1)
    scale_code = q.scale_codes().reshape(-1)[0]
    rows = []
    for i, given in enumerate(x.tolist()):
        value = float(q.values[i])
        error = value - given
        rel = abs(error) / abs(given) if given != 0 and math.isfinite(given) else None
        rows.append(
            BlockElement(
                i,
                given,
                float(q.elements.reshape(-1)[i]),
                _bits(element_codes[i], block.element_bits),
                value,
                error,
                rel if rel is None or math.isfinite(rel) else None,
            )
        )
    tensor_bits = None
    if q.tensor_scale is not None:
        tensor_bits = _bits(int(encode(np.float32(q.tensor_scale), "float32")), 32)
    return BlockView(
        block.name,
        block.element,
        block.scale,
        float(q.scales.reshape(-1)[0]),
        _bits(scale_code, block.scale_bits),
        q.tensor_scale,
        tensor_bits,
        tuple(rows),
    )


@dataclass(frozen=True)
class BlockRange:
    """What one block can hold, given its largest magnitude (:func:`block_range`)."""

    format: str
    #: the block's max |x| the range is for
    block_max: float
    #: what the block's elements are multiplied by (block scale, times NVFP4's tensor scale)
    scale: float
    #: the largest magnitude the block represents: the element format's max times the scale;
    #: a |x| above it saturates to it
    largest: float
    #: the smallest nonzero magnitude: the element format's smallest positive value times the scale
    smallest_nonzero: float
    #: a |x| at or below this becomes 0 (half the smallest nonzero: ties go to the even zero)
    flush_below: float
    #: NVFP4: the tensor's max |x| the tensor scale comes from (else None)
    tensor_max: float | None

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return asdict(self)


def block_range(fmt: Any, block_max: float, tensor_max: float | None = None) -> BlockRange:
    """The range of one block of ``fmt`` whose largest magnitude is ``block_max`` (finite, > 0).

    MX: the scale is ``2**(floor(log2 block_max) - emax)`` (clamped to E8M0's ``[-127, 127]``).
    NVFP4: ``E4M3(block_max / (6 T)) * T`` with the tensor scale ``T = float32(tensor_max /
    2688)``; ``tensor_max`` defaults to ``block_max`` (the block holds the tensor's max).
    """
    block = block_format(fmt)
    for name, number in (("block_max", block_max), ("tensor_max", tensor_max)):
        is_number = isinstance(number, int | float) and not isinstance(number, bool)
        if number is not None and not (is_number and math.isfinite(number) and number > 0):
            raise ValueError(f"{name} must be a finite number above 0, got {number!r}")
    if tensor_max is not None and block.tensor_scale is None:
        raise ValueError(f"{block.name} has no tensor scale: tensor_max applies to nvfp4 only")
    if block.tensor_scale is not None:
        top = float(block_max if tensor_max is None else tensor_max)
        if top < block_max:
            raise ValueError(f"tensor_max {top!r} is below block_max {block_max!r}")
        tensor = float(np.float32(top / (block.element_max * resolve(block.scale).max)))
        wanted = min(block_max / (block.element_max * tensor), resolve(block.scale).max)
        scale = float(resolve(block.scale).round(np.float64(wanted))) * tensor
    else:
        shared = min(max(math.frexp(block_max)[1] - 1 - block.element_emax, -127), 127)
        scale, top = math.ldexp(1.0, shared), None
    smallest = block.element_smallest * scale
    return BlockRange(
        block.name, float(block_max), scale, block.element_max * scale, smallest, smallest / 2, top
    )


def layer_block_errors(
    weights: Mapping[str, Sequence[np.ndarray]], block_formats: Sequence[str]
) -> dict[str, dict[str, float | None]]:
    """Per layer, per block format: the RMS of ``|q - w| / |w|`` over the layer's finite
    nonzero weights, each array quantized along its last axis as stored (None: no such weight).

    >>> w = {"dense": [np.array([[1.0, 3.0, 0.25, 7.0]])]}
    >>> round(layer_block_errors(w, ["mxfp4_e2m1"])["dense"]["mxfp4_e2m1"], 4)  # sqrt((1 + 1/49) / 4)
    0.5051
    """
    names = [block_format(f).name for f in block_formats]
    out: dict[str, dict[str, float | None]] = {}
    for layer, arrays in weights.items():
        out[layer] = {}
        for name in names:
            squares, count = 0.0, 0
            for array in arrays:
                w = np.asarray(array, dtype=np.float64)
                if w.size == 0:
                    continue
                q = quantize_blocks(w, name).values
                keep = np.isfinite(w) & (w != 0)
                with np.errstate(invalid="ignore", over="ignore"):
                    rel = np.abs(q[keep] - w[keep]) / np.abs(w[keep])
                squares += float(np.sum(rel**2))
                count += int(keep.sum())
            out[layer][name] = math.sqrt(squares / count) if count else None
    return out
