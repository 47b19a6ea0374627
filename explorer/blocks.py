"""Block-scaled formats: OCP Microscaling (MX) v1.0 and NVIDIA's NVFP4, emulated in NumPy.

A block format cuts a tensor's last axis into blocks of ``block_size`` elements.  Each block
shares one scale; each element is stored in a narrow element format and stands for
``element * scale``.

**MX** (OCP Microscaling Formats Specification v1.0, section 6.3): 32 elements, one E8M0
(power of two) scale per block.  The shared exponent is ``floor(log2(max |x|)) - emax``,
``emax`` the exponent of the element format's largest power of two, clamped below at
-127 (E8M0's smallest; an all-zero block gets 2**-127).  Each ``x / scale`` is rounded to
the element format, nearest-even, saturating at the element's largest finite value.  A
block holding NaN or an infinity, or whose shared exponent exceeds 127, gets the NaN scale
(E8M0 0xFF): every value of the block decodes to NaN.  MXINT8's elements are 8-bit two's
complement integers times 2**-6 (``[-2, 127/64]``, ``emax`` 0).

**NVFP4** (NVIDIA, the two-level rule): 16 E2M1 elements per block, an E4M3 scale per block
and an FP32 scale per tensor.  The tensor scale is ``T = max |x| / (448 * 6)`` (over the
whole array, finite values; 1.0 for an all-zero array), computed in float64 and stored in
float32; the block scale ``S = E4M3(max_block |x| / (6 T))`` (nearest-even, saturating at
448); each element ``E2M1(x / (S T))`` (nearest-even, saturating at 6), decoded as
``element * S * T``.  A block whose scale rounds to 0 decodes to (signed) zeros; a block holding NaN
or an infinity gets the E4M3 NaN scale and decodes to NaN.

A last axis that is not a multiple of the block size is padded with zeros to the next
multiple: zeros never change a block's max |x|, so the real elements are quantized as in a
shorter block; ``values`` has the input's shape, ``elements`` keeps the padded blocks.

>>> import numpy as np
>>> q = quantize_blocks(np.array([0.1, 1.0, 3.0, 7.0]), "mxfp4_e2m1")
>>> q.values.tolist(), q.scales.tolist()  # 7 saturates at E2M1's 6; 0.1 is below its 0.5
([0.0, 1.0, 3.0, 6.0], [1.0])
>>> block_format("nvfp4").bits_per_element, block_format("mxfp4_e2m1").bits_per_element
(4.5, 4.25)
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

import numpy as np

from explorer.formats import Format, encode, resolve

Rounding = Literal["nearest_even", "stochastic"]
BLOCK_ROUNDINGS: tuple[str, ...] = ("nearest_even", "stochastic")

#: the block formats, in the order they are listed
BLOCK_FORMAT_NAMES: tuple[str, ...] = (
    "mxfp8_e4m3",
    "mxfp8_e5m2",
    "mxfp6_e2m3",
    "mxfp6_e3m2",
    "mxfp4_e2m1",
    "mxint8",
    "nvfp4",
)

#: other spellings: MXFP4 has one element format (MXFP8 and MXFP6 have two: no alias)
_BLOCK_ALIASES: dict[str, str] = {"mxfp4": "mxfp4_e2m1", "mx_fp4": "mxfp4_e2m1", "mx_int8": "mxint8"}

#: MXINT8's element: two's complement, an implicit scale of 2**-6
_INT8_FRACTION_BITS = 6
#: NVFP4's tensor scale maps the tensor's max |x| to E4M3's max (448) times E2M1's max (6)
_NVFP4_TENSOR_RANGE = 448.0 * 6.0
#: the largest block size accepted (a block is one row of a 2-D array in the vectorised code)
MAX_BLOCK_SIZE = 1 << 16

_MX_SOURCE = "OCP Microscaling Formats (MX) Specification v1.0, sections 5 and 6.3"
_NVFP4_SOURCE = "NVIDIA NVFP4: E2M1 elements, E4M3 scale per 16, FP32 scale per tensor"


@dataclass(frozen=True)
class BlockFormat:
    """One block-scaled format (in the style of gfloat's ``BlockFormatInfo``)."""

    #: short name, e.g. ``"mxfp4_e2m1"``
    name: str
    #: the element format: an :mod:`explorer.formats` name, or ``"int8"`` (MXINT8)
    element: str
    #: elements sharing one scale
    block_size: int
    #: the per-block scale's format (an :mod:`explorer.formats` name)
    scale: str
    #: the per-tensor scale's format (NVFP4: ``"float32"``), or None
    tensor_scale: str | None
    #: storage bits of one element
    element_bits: int
    #: storage bits of one block scale
    scale_bits: int
    #: largest finite element value
    element_max: float
    #: smallest positive element value
    element_smallest: float
    #: exponent of the largest power of two not above ``element_max`` (MX's emax_elem)
    element_emax: int
    #: where the definition comes from
    source: str

    @property
    def bits_per_element(self) -> float:
        """Storage per element: its bits plus its share of the block scale (a per-tensor
        scale, 32 bits for a whole tensor, is not counted).

        >>> block_format("mxfp8_e4m3").bits_per_element
        8.25
        """
        return self.element_bits + self.scale_bits / self.block_size

    @property
    def family(self) -> str:
        """``"mx"`` (an E8M0 scale per block) or ``"nvfp4"`` (two-level scale)."""
        return "nvfp4" if self.tensor_scale else "mx"

    def with_block_size(self, block_size: int) -> BlockFormat:
        """The same format with another block size (to study its effect)."""
        if isinstance(block_size, bool) or not isinstance(block_size, int | np.integer):
            raise TypeError(f"block_size must be an int, got {type(block_size).__name__}")
        if not 1 <= block_size <= MAX_BLOCK_SIZE:
            raise ValueError(f"block_size must be in [1, {MAX_BLOCK_SIZE}], got {block_size}")
        return dataclasses.replace(self, block_size=int(block_size))

    def to_dict(self) -> dict[str, Any]:
        """The facts as plain JSON-ready values."""
        facts = dataclasses.asdict(self)
        facts["bits_per_element"] = self.bits_per_element
        return facts

    def __str__(self) -> str:
        return self.name


def _element_facts(element: str) -> tuple[int, float, float, int]:
    """(bits, max, smallest positive, emax) of an element format, measured where it is a float."""
    if element == "int8":
        step = 2.0**-_INT8_FRACTION_BITS
        return 8, 127 * step, step, 0
    fmt = resolve(element)
    return fmt.bits, fmt.max, fmt.smallest_subnormal, math.frexp(fmt.max)[1] - 1


def _define(name: str, element: str, block_size: int, scale: str, tensor_scale: str | None) -> BlockFormat:
    bits, top, smallest, emax = _element_facts(element)
    return BlockFormat(
        name=name,
        element=element,
        block_size=block_size,
        scale=scale,
        tensor_scale=tensor_scale,
        element_bits=bits,
        scale_bits=resolve(scale).bits,
        element_max=top,
        element_smallest=smallest,
        element_emax=emax,
        source=_NVFP4_SOURCE if tensor_scale else _MX_SOURCE,
    )


@cache
def all_block_formats() -> tuple[BlockFormat, ...]:
    """Every block format, in :data:`BLOCK_FORMAT_NAMES` order."""
    e8m0 = "float8_e8m0fnu"
    return (
        _define("mxfp8_e4m3", "float8_e4m3fn", 32, e8m0, None),
        _define("mxfp8_e5m2", "float8_e5m2", 32, e8m0, None),
        _define("mxfp6_e2m3", "float6_e2m3fn", 32, e8m0, None),
        _define("mxfp6_e3m2", "float6_e3m2fn", 32, e8m0, None),
        _define("mxfp4_e2m1", "float4_e2m1fn", 32, e8m0, None),
        _define("mxint8", "int8", 32, e8m0, None),
        _define("nvfp4", "float4_e2m1fn", 16, "float8_e4m3fn", "float32"),
    )


def block_format(spec: Any) -> BlockFormat:
    """The :class:`BlockFormat` of a name (case, ``-`` and spaces do not matter).

    >>> block_format("MXFP6-E2M3").element
    'float6_e2m3fn'
    >>> block_format("nvfp6")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown block format 'nvfp6'; did you mean 'nvfp4'? Valid names: mxfp8_e4m3, ...
    """
    if isinstance(spec, BlockFormat):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"a block format is named by a string, got {type(spec).__name__}")
    key = spec.strip().lower().replace("-", "_").replace(" ", "_")[:64]
    known = {f.name: f for f in all_block_formats()}
    key = _BLOCK_ALIASES.get(key, key)
    if key in known:
        return known[key]
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ValueError(f"unknown block format {spec[:64]!r}{hint} Valid names: {', '.join(known)}")


# ---------------------------------------------------------------- quantization


@dataclass(frozen=True)
class BlockQuantized:
    """What :func:`quantize_blocks` gives: the dequantized values and the stored parts."""

    #: the block format, with the block size used
    format: BlockFormat
    #: dequantized values, float64, the shape of the input
    values: np.ndarray
    #: each block's scale as stored (E8M0 or E4M3, decoded; NaN for a NaN block), float64,
    #: shape ``x.shape[:-1] + (blocks,)``
    scales: np.ndarray
    #: NVFP4's per-tensor scale (float32, decoded to float), else None
    tensor_scale: float | None
    #: the element values (in the element format, before the scales), float64, shape
    #: ``x.shape[:-1] + (blocks, block_size)``: the padding zeros included
    elements: np.ndarray
    #: zeros appended to the last axis to fill the last block
    padding: int

    @property
    def effective_scales(self) -> np.ndarray:
        """What each block's elements are multiplied by: the block scale (times the tensor scale)."""
        return self.scales * (self.tensor_scale if self.tensor_scale is not None else 1.0)

    def limits(self) -> np.ndarray:
        """Per value (the input's shape): the largest magnitude its block held without
        clamping, on the value's side of zero (MXINT8 reaches -2 but only 127/64 times the
        scale); beyond it the element saturated.  NaN in a NaN block."""
        low, high = _element_range(self.format)
        per_value = np.repeat(self.effective_scales, self.format.block_size, axis=-1)
        per_value = per_value[..., : self.values.shape[-1] if self.values.ndim else 1]
        per_value = per_value.reshape(self.values.shape)
        return np.where(np.signbit(self.values), -low, high) * per_value

    def scale_codes(self) -> np.ndarray:
        """The block scales' bit patterns (uint8: E8M0 or E4M3)."""
        return encode(self.scales, self.format.scale)

    def element_codes(self) -> np.ndarray:
        """The elements' bit patterns (uint8; MXINT8: two's complement)."""
        if self.format.element == "int8":
            steps = np.nan_to_num(self.elements) * 2.0**_INT8_FRACTION_BITS  # a NaN block: 0
            ints = np.rint(steps).astype(np.int8)
            return ints.view(np.uint8)
        return encode(self.elements, self.format.element)


def _as_float64(x: Any) -> np.ndarray:
    array = np.asarray(x)
    if array.dtype.kind not in "fiu":  # bool, complex, strings, objects
        raise TypeError(f"quantize_blocks takes real numbers, got an array of dtype {array.dtype}")
    return array.astype(np.float64)


def _blocks(x: np.ndarray, block_size: int) -> tuple[np.ndarray, int]:
    """``x`` (at least 1-D) as ``(..., blocks, block_size)``, zero-padded, and the padding."""
    length = x.shape[-1]
    count = -(-length // block_size)
    padding = count * block_size - length
    if padding:
        widths = [(0, 0)] * (x.ndim - 1) + [(0, padding)]
        x = np.pad(x, widths)
    return x.reshape(*x.shape[:-1], count, block_size), padding


def _round_elements(
    scaled: np.ndarray, fmt: BlockFormat, rounding: str, rng: np.random.Generator
) -> np.ndarray:
    """``scaled`` (finite) rounded to the element format, saturating at its largest value.

    In float64, exactly: each value is divided by the spacing of the element format at its
    magnitude (a power of two: ``2**(max(e, emin) - mantissa_bits)``, ``e = floor(log2 |v|)``;
    MXINT8: ``2**-6``), rounded to an integer (half to even, or down after adding a uniform
    draw in [0, 1) for stochastic rounding) and multiplied back.  Clipping to the largest
    value first makes every result a value of the format.
    """
    low, high = _element_range(fmt)
    clipped = np.clip(scaled, low, high)
    if fmt.element == "int8":
        quantum = np.full(clipped.shape, -_INT8_FRACTION_BITS, dtype=np.int32)
    else:
        element: Format = resolve(fmt.element)
        emin = math.frexp(element.smallest_normal)[1] - 1
        exponent = np.frexp(clipped)[1] - 1
        quantum = (np.maximum(exponent, emin) - element.mantissa_bits).astype(np.int32)
    steps = np.ldexp(clipped, -quantum)
    stochastic = rounding == "stochastic"
    integers = np.floor(steps + rng.random(steps.shape)) if stochastic else np.rint(steps)
    rounded = np.ldexp(integers, quantum)
    if fmt.element == "int8":
        rounded += 0.0  # two's complement has no -0
    return rounded


def _element_range(fmt: BlockFormat) -> tuple[float, float]:
    """The smallest and largest element value (MXINT8's two's complement reaches -2)."""
    if fmt.element == "int8":
        return -128 * 2.0**-_INT8_FRACTION_BITS, fmt.element_max
    return -fmt.element_max, fmt.element_max


def _finite_max(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per block: max |x| over its finite values, and whether all of them are finite."""
    magnitude = np.abs(blocks)
    finite = np.isfinite(magnitude)
    return np.where(finite, magnitude, 0.0).max(axis=-1), finite.all(axis=-1)


_Parts = tuple[np.ndarray, float | None, np.ndarray]


def _mx(blocks: np.ndarray, fmt: BlockFormat, rounding: str, rng: np.random.Generator) -> _Parts:
    """Scales, no tensor scale, and elements of the MX rule (module doc)."""
    amax, all_finite = _finite_max(blocks)
    exponent = np.frexp(amax)[1].astype(np.int64) - 1  # floor(log2 amax), exact
    shared = np.where(amax > 0, exponent - fmt.element_emax, -127)
    shared = np.maximum(shared, -127)
    nan_block = ~all_finite | (shared > 127)
    scales = np.ldexp(1.0, np.minimum(shared, 127).astype(np.int32))
    safe = np.where(nan_block[..., None], 0.0, blocks)
    elements = _round_elements(safe / scales[..., None], fmt, rounding, rng)  # dividing: exact
    scales = np.where(nan_block, np.nan, scales)
    elements = np.where(nan_block[..., None], np.nan, elements)
    return scales, None, elements


def _nvfp4(
    blocks: np.ndarray,
    fmt: BlockFormat,
    rounding: str,
    rng: np.random.Generator,
    tensor_amax: float | None = None,
) -> _Parts:
    """Block scales, the tensor scale, and elements of NVFP4's two-level rule (module doc);
    ``tensor_amax`` is the whole tensor's max |x| when ``blocks`` are a piece of it."""
    amax, all_finite = _finite_max(blocks)
    if tensor_amax is None:
        tensor_amax = float(amax.max()) if amax.size else 0.0
    if tensor_amax == 0.0:
        tensor = 1.0
    else:
        f32 = np.finfo(np.float32)
        quotient = tensor_amax / _NVFP4_TENSOR_RANGE
        tensor = float(np.float32(min(max(quotient, float(f32.smallest_subnormal)), float(f32.max))))
    scale_fmt = resolve(fmt.scale)
    wanted = np.minimum(amax / (fmt.element_max * tensor), scale_fmt.max)  # saturating
    scales = scale_fmt.round(wanted).astype(np.float64)
    usable = all_finite & (scales > 0)
    divisor = np.where(usable, scales * tensor, 1.0)  # exact: 4 + 24 significant bits
    safe = np.where(usable[..., None], blocks, np.copysign(0.0, blocks))  # a zero scale: signed zeros
    elements = _round_elements(safe / divisor[..., None], fmt, rounding, rng)
    scales = np.where(all_finite, scales, np.nan)
    elements = np.where(all_finite[..., None], elements, np.nan)
    return scales, tensor, elements


def quantize_blocks(
    x: Any,
    fmt: Any,
    *,
    rounding: str = "nearest_even",
    rng: np.random.Generator | int | None = None,
    block_size: int | None = None,
    tensor_amax: float | None = None,
) -> BlockQuantized:
    """Quantize ``x`` to the block format ``fmt`` along its last axis (see the module doc).

    ``rounding`` is ``"nearest_even"`` or ``"stochastic"`` (the elements only: scales are
    always rounded to nearest; ``rng`` seeds it).  ``block_size`` overrides the format's.
    ``tensor_amax`` (NVFP4 only) is the max |x| over the finite values of the whole tensor
    when ``x`` is a piece of it (whole blocks), so that the piece gets the tensor's scale.

    >>> q = quantize_blocks([[1.0, -0.3], [448.0, 500.0]], "mxfp8_e4m3")
    >>> q.values.tolist(), q.scales.shape
    ([[1.0, -0.3125], [448.0, 448.0]], (2, 1))
    """
    block = block_format(fmt)
    if block_size is not None:
        block = block.with_block_size(block_size)
    if rounding not in BLOCK_ROUNDINGS:
        raise ValueError(f"unknown rounding {rounding!r}; valid: {', '.join(BLOCK_ROUNDINGS)}")
    if rng is not None and not isinstance(rng, np.random.Generator | int | np.integer):
        raise TypeError(f"rng must be a numpy Generator, an int seed or None, got {type(rng).__name__}")
    generator = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    x64 = _as_float64(x)
    flat = x64.reshape(1) if x64.ndim == 0 else x64
    blocks, padding = _blocks(flat, block.block_size)
    with np.errstate(over="ignore", invalid="ignore"):
        if block.tensor_scale:
            scales, tensor, elements = _nvfp4(blocks, block, rounding, generator, tensor_amax)
        else:
            scales, tensor, elements = _mx(blocks, block, rounding, generator)
        effective = scales * (tensor if tensor is not None else 1.0)
        values = (elements * effective[..., None]).reshape(*flat.shape[:-1], -1)
    values = values[..., : flat.shape[-1]].reshape(x64.shape)
    return BlockQuantized(block, values, scales, tensor, elements, padding)


@dataclass(frozen=True)
class TensorScaled:
    """What :func:`quantize_per_tensor` gives: one scale for the whole tensor."""

    #: the element format
    element: str
    #: dequantized values, float64, the shape of the input
    values: np.ndarray
    #: the tensor's scale (float32, decoded to float): ``max |x| / element max``
    scale: float


def quantize_per_tensor(x: Any, element: Any, *, amax: float | None = None) -> TensorScaled:
    """Per-tensor scaling, the baseline block formats improve on: ``s = max|x| / max`` (over
    the finite values, stored in float32, at most float32's largest value; 1.0 for an all-zero
    tensor), each ``x / s`` rounded to the element format nearest-even and saturating at its
    largest value, times ``s``.  NaN stays NaN; an infinity saturates.  ``amax`` is the whole
    tensor's max |x| (finite values) when ``x`` is a piece of it.

    >>> quantize_per_tensor([1.0, -0.3, 448.0], "float8_e4m3fn").values.tolist()
    [1.0, -0.3125, 448.0]
    """
    fmt = resolve(element)
    x64 = _as_float64(x)
    if amax is None:
        magnitude = np.abs(x64)
        finite = np.isfinite(magnitude)
        amax = float(magnitude[finite].max()) if finite.any() else 0.0
    largest = float(np.finfo(np.float32).max)
    scale = float(np.float32(min(amax / fmt.max, largest))) if amax > 0 else 1.0
    if scale == 0.0:  # max |x| / max below float32's smallest: the smallest float32 keeps them
        scale = float(np.finfo(np.float32).smallest_subnormal)
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = np.clip(x64 / scale, -fmt.max, fmt.max)
        rounded = np.where(np.isnan(scaled), np.nan, fmt.round(np.nan_to_num(scaled)).astype(np.float64))
    return TensorScaled(fmt.name, rounded * scale, scale)
