"""Independent readings of the block formats for the tests: NVIDIA's NVFP4 one value at a
time in exact rationals, and the OCP MX rule through gfloat's vectorised rounding.  Nothing
here imports :mod:`explorer`."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from tests.support import oracles

E4M3 = oracles.target("float8_e4m3fn")
E2M1 = oracles.target("float4_e2m1fn")
FLOAT32 = oracles.target("float32")


def nvfp4_reading(x: list[float]) -> tuple[float, list[float], list[float]]:
    """NVFP4 as NVIDIA defines it, one value at a time in exact rationals: the FP32 tensor
    scale ``T = amax / (448 * 6)`` (rounded to float32); per block of 16 the E4M3 scale
    ``S = amax_block / (6 T)`` rounded to nearest-even, at most 448; each element
    ``x / (S T)`` rounded to E2M1 (nearest-even, at most 6 in magnitude) and decoded as
    ``element * S * T``.  A block with a NaN or an infinity is NaN; a scale of 0, zeros."""
    finite = [abs(v) for v in x if math.isfinite(v)]
    amax = max(finite, default=0.0)
    tensor = Fraction(oracles.round_exact(Fraction(amax) / 2688, FLOAT32)) if amax else Fraction(1)
    scales: list[float] = []
    values: list[float] = []
    for start in range(0, len(x), 16):
        block = x[start : start + 16]
        if not all(math.isfinite(v) for v in block):
            scales.append(math.nan)
            values += [math.nan] * len(block)
            continue
        wanted = min(Fraction(max(abs(v) for v in block)) / (6 * tensor), Fraction(448))
        scale = Fraction(oracles.round_exact(wanted, E4M3))
        scales.append(float(scale))
        for v in block:
            if scale == 0:
                values.append(0.0 if v >= 0 else -0.0)
                continue
            element = min(max(Fraction(v) / (scale * tensor), Fraction(-6)), Fraction(6))
            rounded = oracles.round_exact(element, E2M1, negative=v < 0 or math.copysign(1, v) < 0)
            values.append(float(Fraction(rounded) * scale * tensor) if rounded else rounded)
    return float(tensor), scales, values


def mx_reading(gfloat: Any, name: str, x: np.ndarray) -> np.ndarray:
    """``x`` (blocks of 32 along the last axis, which must be a multiple of 32) in the MX
    format ``name``, dequantized: the scale ``2**clip(floor(log2 max|x|) - emax, -127, 127)``
    read from the spec (2**-127 for a zero block), the elements rounded by gfloat's
    ``round_ndarray`` (nearest-even, saturating) to its ``format_info_<name>`` element type."""
    info = getattr(gfloat.formats, f"format_info_{name}")
    blocks = np.asarray(x, dtype=np.float64).reshape(-1, 32)
    amax = np.abs(blocks).max(axis=1)
    with np.errstate(divide="ignore"):
        shared = np.where(amax > 0, np.floor(np.log2(amax)) - info.etype.emax, -127)
    scales = 2.0 ** np.clip(shared, -127, 127)
    elements = gfloat.round_ndarray(info.etype, blocks / scales[:, None], sat=True)
    return (elements * scales[:, None]).reshape(np.shape(x))
