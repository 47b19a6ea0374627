"""Rounding float values to a format: nearest-even, toward zero, stochastic.

Nearest-even is :meth:`explorer.formats.Format.round`: the NumPy / ml_dtypes
cast, except from float64 to an ml_dtypes format or tf32, where the cast of
ml_dtypes before 0.7 goes through float32 (rounding twice, which is wrong next to
ties) and float64 inputs are rounded in one step on their bit pattern instead.  Toward-zero and
stochastic rounding work on the bit pattern of the (float32 or float64) input: the number of low bits
the target format cannot keep is computed per value (more of them in the
target's subnormal range), random bits are added below that cut for
stochastic rounding, and the bits are truncated.  That is exact: within a
binade the bit pattern is linear in the value, and a carry out of the kept
bits lands exactly on the next value of the target.  Values below the
target's smallest subnormal go to zero or to the smallest subnormal, with
probability proportional to their distance.  Formats without a zero or a sign
(``float8_e8m0fnu``) use a slower neighbour search.

>>> import numpy as np
>>> round_to(np.array([1.06]), "float8_e4m3fn", "toward_zero").astype(float)
array([1.])
>>> round_to(np.array([1 + 2**-8 + 2**-40]), "bfloat16").astype(float)  # ml_dtypes < 0.7: 1.0
array([1.0078125])
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from explorer.formats import _ONE_STEP_FROM_FLOAT64, Format, _kept_bits, resolve

ROUNDING_MODES: tuple[str, ...] = ("nearest_even", "toward_zero", "stochastic")


def _check_mode(mode: str) -> None:
    if mode not in ROUNDING_MODES:
        raise ValueError(f"unknown rounding mode {mode!r}; valid modes: {', '.join(ROUNDING_MODES)}")


def round_to(
    values: Any, fmt: Any, mode: str = "nearest_even", rng: np.random.Generator | int | None = None
) -> np.ndarray:
    """Round ``values`` to ``fmt``; returns an array in the format's storage dtype.

    ``mode`` is ``"nearest_even"``, ``"toward_zero"`` or ``"stochastic"``.
    Stochastic rounding rounds up with probability equal to the distance from
    the lower neighbour, in units of the gap; ``rng`` seeds it.  Values beyond
    the largest finite value behave as the format's cast does (inf, NaN or
    saturation) in every mode.

    >>> round_to([1.0 + 2**-12], "bfloat16", "toward_zero").astype(float)
    array([1.])
    """
    fmt = resolve(fmt)
    _check_mode(mode)
    if rng is not None and not isinstance(rng, np.random.Generator | int | np.integer):
        raise TypeError(f"rng must be a numpy Generator, an int seed or None, got {type(rng).__name__}")
    x = np.asarray(values)
    return _round(x, fmt, mode, rng).reshape(x.shape)


def _round(x: np.ndarray, fmt: Format, mode: str, rng: np.random.Generator | int | None) -> np.ndarray:
    if x.dtype.kind != "f" and x.dtype != fmt.storage_dtype:
        x = x.astype(np.float64)
    if mode == "nearest_even":
        if x.dtype == np.float64 and fmt.name not in _ONE_STEP_FROM_FLOAT64:
            return fmt.round(x)  # in one step: ml_dtypes < 0.7 casts float64 twice
        with np.errstate(over="ignore", invalid="ignore"):
            return fmt.cast(x)
    generator = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    if x.dtype not in (np.float32, np.float64):
        x = x.astype(np.float32 if x.dtype.itemsize < 4 else np.float64)
    if fmt.name == "float64" or (fmt.name == "float32" and x.dtype == np.float32):
        return x.astype(fmt.storage_dtype)  # exact: nothing to round
    if fmt.has_sign and fmt.has_subnormals:
        return _bit_round(x, fmt, mode, generator)
    return _neighbour_round(x, fmt, mode, generator)


@dataclass(frozen=True)
class _Layout:
    """Per (input width, target format) tables for :func:`_bit_round`."""

    uint: Any
    #: keep-mask of the input's bits per input exponent field (the low bits the target drops are 0)
    keep: np.ndarray
    #: smallest input exponent field whose values are not below the target's smallest subnormal
    tiny_below: int
    #: bit pattern (magnitude) of the target's largest finite value, in the input's width
    max_bits: int
    #: the input's top (sign, exponent, kept mantissa) bits -> target storage, or None
    prefix_table: np.ndarray | None
    prefix_shift: int


@cache
def _layout(fmt: Format, wide: bool) -> _Layout:
    uint: Any = np.uint64 if wide else np.uint32
    in_exp = 11 if wide else 8
    keep, tiny_below = _kept_bits(fmt, wide)
    width = 64 if wide else 32
    float_dtype = np.float64 if wide else np.float32
    max_bits = int(np.array(fmt.max, dtype=float_dtype).view(uint))
    prefix_bits = 1 + in_exp + fmt.mantissa_bits
    table = None
    shift = width - prefix_bits
    if not wide and prefix_bits <= 20 and not fmt.emulated:
        prefixes = (np.arange(1 << prefix_bits, dtype=uint) << uint(shift)).view(float_dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            table = fmt.cast(prefixes)
    return _Layout(uint, keep, tiny_below, max_bits, table, shift)


def _bit_round(x: np.ndarray, fmt: Format, mode: str, rng: np.random.Generator) -> np.ndarray:
    """Toward-zero / stochastic rounding by truncating the input's bit pattern (see module doc)."""
    x = np.ascontiguousarray(x)
    wide = x.dtype == np.float64
    lay = _layout(fmt, wide)
    uint = lay.uint
    bits = x.view(uint)
    sign_bit = uint(1 << (63 if wide else 31))
    mag = bits & ~sign_bit
    exp_field = mag >> uint(52 if wide else 23)
    keep = lay.keep.take(exp_field)
    tiny = exp_field < lay.tiny_below
    special = mag > lay.max_bits  # beyond max, inf, NaN
    if mode == "stochastic":
        raw = rng.bit_generator.random_raw(x.size if wide else (x.size + 1) // 2)
        noise = raw.view(uint)[: x.size].reshape(x.shape)
        noise &= ~keep
        mag += noise
    mag &= keep
    mag |= bits & sign_bit
    if lay.prefix_table is not None:
        result = lay.prefix_table.take(mag >> uint(lay.prefix_shift))
    else:
        result = mag.view(x.dtype).astype(fmt.storage_dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        if tiny.any():
            idx = np.nonzero(tiny)
            magnitude = np.abs(x[idx]).astype(np.float64)
            if mode == "stochastic":
                up = rng.random(magnitude.shape) * fmt.smallest_subnormal < magnitude
            else:  # toward zero
                up = np.zeros(magnitude.shape, dtype=bool)
            result[idx] = fmt.cast(np.copysign(np.where(up, fmt.smallest_subnormal, 0.0), x[idx]))
        if special.any():
            idx = np.nonzero(special)
            result[idx] = fmt.cast(x[idx])
    return result


def _bits_view(stored: np.ndarray, fmt: Format) -> tuple[np.ndarray, Any]:
    uint = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[fmt.storage_dtype.itemsize]
    return stored.view(uint), uint


def _neighbour_round(x: np.ndarray, fmt: Format, mode: str, rng: np.random.Generator) -> np.ndarray:
    """Generic (slower) rounding: the nearest value, stepped one code point toward zero if it overshoots."""
    with np.errstate(over="ignore", invalid="ignore"):
        nearest = np.ascontiguousarray(fmt.cast(x))
        wide = x.astype(np.float64) if x.dtype.itemsize < 8 else x
        near_val = nearest.astype(np.float64)
        bits, uint = _bits_view(nearest, fmt)
        # one code point: the lowest kept mantissa bit (tf32 lives in float32 storage)
        storage_bits = fmt.storage_dtype.itemsize * 8
        one = uint(1 << (23 - fmt.mantissa_bits)) if fmt.emulated else uint(1)
        sign_bit = storage_bits - 1 if fmt.emulated else fmt.bits - 1
        sign = uint(1 << sign_bit) if fmt.has_sign else uint(0)
        magnitude = bits & ~sign
        overshoot = np.abs(near_val) > np.abs(wide)
        step_down = overshoot & (magnitude > 0)
        down_bits = np.where(step_down, (magnitude - one) | (bits & sign), bits)
        down = down_bits.view(fmt.storage_dtype)
        if mode == "toward_zero":
            result = down
        else:
            down_val = down.astype(np.float64)
            up_magnitude = (down_bits & ~sign) + one
            up_bits = up_magnitude | (down_bits & sign)
            up_val = up_bits.view(fmt.storage_dtype).astype(np.float64)
            gap = np.abs(up_val) - np.abs(down_val)
            frac = (np.abs(wide) - np.abs(down_val)) / gap
            take_up = rng.random(x.shape) < frac
            result = np.where(take_up & np.isfinite(up_val), up_bits, down_bits).view(fmt.storage_dtype)
        special = ~np.isfinite(wide) | (np.abs(wide) > fmt.max) | ~np.isfinite(near_val)
        return np.where(special, nearest, result).astype(fmt.storage_dtype)
