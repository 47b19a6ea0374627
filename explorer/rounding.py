"""Rounding float values to a format: nearest-even, toward zero, stochastic.

Nearest-even is ml_dtypes' own cast.  Toward-zero and stochastic rounding
find the two neighbours of each value in the target format by stepping its
bit pattern, so they work for every format (including ones without
subnormals, infinities or NaN).

>>> import numpy as np
>>> round_to(np.array([1.06]), "float8_e4m3fn", "toward_zero").astype(float)
array([1.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from explorer.formats import Format, resolve

ROUNDING_MODES: tuple[str, ...] = ("nearest_even", "toward_zero", "stochastic")


def _check_mode(mode: str) -> None:
    if mode not in ROUNDING_MODES:
        raise ValueError(f"unknown rounding mode {mode!r}; valid modes: {', '.join(ROUNDING_MODES)}")


def _bits_view(stored: np.ndarray, fmt: Format) -> tuple[np.ndarray, Any]:
    uint = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[fmt.storage_dtype.itemsize]
    return stored.view(uint), uint


def _truncated_float32_round(x: np.ndarray, fmt: Format, mode: str,
                             rng: np.random.Generator | None) -> np.ndarray:
    """Formats that are float32 with low mantissa bits dropped (bfloat16, tf32): integer tricks."""
    x32 = np.ascontiguousarray(x, dtype=np.float32)
    bits = x32.view(np.uint32)
    drop = 23 - fmt.mantissa_bits
    low_mask = np.uint32((1 << drop) - 1)
    if mode == "toward_zero":
        out = bits & ~low_mask
    else:
        assert rng is not None
        noise = rng.integers(0, 1 << drop, size=bits.shape, dtype=np.uint32)
        out = (bits + noise) & ~low_mask
    out = np.where(np.isfinite(x32), out, bits)
    as32 = out.view(np.float32)
    return fmt.round(as32)  # exact: the value is already representable


def round_to(values: Any, fmt: Any, mode: str = "nearest_even",
             rng: np.random.Generator | int | None = None) -> np.ndarray:
    """Round ``values`` to ``fmt``; returns an array in the format's storage dtype.

    ``mode`` is ``"nearest_even"``, ``"toward_zero"`` or ``"stochastic"``.
    Stochastic rounding rounds up with probability equal to the distance from
    the lower neighbour, in units of the gap; ``rng`` seeds it.  Values beyond
    the largest finite value behave as the format's cast does (inf, NaN or
    saturation) in every mode.
    """
    fmt = resolve(fmt)
    _check_mode(mode)
    x = np.asarray(values)
    if x.dtype.kind != "f" and x.dtype != fmt.storage_dtype:
        x = x.astype(np.float64)
    if mode == "nearest_even":
        with np.errstate(over="ignore", invalid="ignore"):
            return fmt.round(x)
    generator = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    if fmt.name in ("bfloat16", "tf32") and x.dtype != np.float64:
        return _truncated_float32_round(x, fmt, mode, generator)
    if fmt.name in ("float64",):
        return x.astype(np.float64)
    return _neighbour_round(x, fmt, mode, generator)


def _neighbour_round(x: np.ndarray, fmt: Format, mode: str, rng: np.random.Generator) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        nearest = np.ascontiguousarray(fmt.round(x))
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
            take_up = rng.random(x.shape, dtype=np.float32) < frac
            result = np.where(take_up & np.isfinite(up_val), up_bits, down_bits).view(fmt.storage_dtype)
        special = ~np.isfinite(wide) | (np.abs(wide) > fmt.max) | ~np.isfinite(near_val)
        return np.where(special, nearest, result).astype(fmt.storage_dtype)
