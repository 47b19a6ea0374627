"""Numerics of one op instance of a model, against each low-precision format: pure arithmetic
on values a float32 forward and backward pass produced (no framework, no process).

From one activation tensor and its gradient, :func:`tensor_stats` keeps what the verdict
needs: the largest magnitude, and per format the fraction of the nonzero values below the
format's smallest normal, below its smallest subnormal, and those that round to zero (zeros
are exact in every format, so they are left out of the fractions).  Round to nearest even
keeps a value down to half the smallest subnormal: a magnitude of at most half of it becomes
zero (``to_zero``).  A backend that flushes subnormal results to zero (TensorFlow's bfloat16
arithmetic on CPU) loses everything below the smallest normal instead: :func:`verdict` takes
``flush_to_zero``.  :func:`headroom_bits` is the distance, in powers of
two, from the largest magnitude to the format's max; :func:`verdict` reads both.

>>> import numpy as np
>>> s = tensor_stats(np.array([1.0, -7.1e4, 0.0]), None, ["float16", "bfloat16"])
>>> s.max_abs, verdict(s, "float16"), verdict(s, "bfloat16")
(71000.0, 'overflows', 'fits')
>>> round(headroom_bits(s.max_abs, "float16"), 3)
-0.116
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from explorer.formats import resolve

#: the formats a model check judges by default
DEFAULT_FORMATS: tuple[str, ...] = ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")
#: the verdicts, worst first (:func:`verdict` returns the first that applies)
VERDICTS: tuple[str, ...] = ("overflows", "loses_gradients", "underflows", "fits")
#: fraction of an op's nonzero activations that become zero in the format (round to nearest:
#: at most half the smallest subnormal; flush-to-zero: below the smallest normal) above which
#: the op ``underflows``
UNDERFLOW_FRACTION = 0.01
#: fraction of an op's nonzero gradients that become zero in the format above which the op
#: ``loses_gradients``
GRADIENT_LOSS_FRACTION = 0.01


@dataclass(frozen=True)
class TensorStats:
    """What one op instance's float32 activation (and gradient) says about each format."""

    #: largest |activation| (0.0 for an empty tensor; inf/nan when the pass produced one)
    max_abs: float
    #: largest |gradient| of the loss with respect to the activation; None: no gradient flows
    max_grad: float | None
    #: format -> fraction of nonzero activations with |x| below the format's smallest normal
    below_normal: dict[str, float] = field(default_factory=dict)
    #: format -> fraction of nonzero activations with |x| below its smallest subnormal
    below_subnormal: dict[str, float] = field(default_factory=dict)
    #: format -> fraction of nonzero gradients below the smallest normal (empty: no gradient)
    grad_below_normal: dict[str, float] = field(default_factory=dict)
    #: format -> fraction of nonzero gradients below the smallest subnormal
    grad_below_subnormal: dict[str, float] = field(default_factory=dict)
    #: format -> fraction of nonzero activations that round to zero (round to nearest even:
    #: |x| at most half the smallest subnormal)
    to_zero: dict[str, float] = field(default_factory=dict)
    #: format -> fraction of nonzero gradients that round to zero
    grad_to_zero: dict[str, float] = field(default_factory=dict)
    #: block format -> RMS relative error of the activation quantized to it along its last
    #: axis (None: no nonzero value); only the block formats among ``formats``
    block_rel_rms: dict[str, float | None] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-ready)."""
        return {
            "max_abs": self.max_abs,
            "max_grad": self.max_grad,
            "below_normal": dict(self.below_normal),
            "below_subnormal": dict(self.below_subnormal),
            "grad_below_normal": dict(self.grad_below_normal),
            "grad_below_subnormal": dict(self.grad_below_subnormal),
            "to_zero": dict(self.to_zero),
            "grad_to_zero": dict(self.grad_to_zero),
            "block_rel_rms": dict(self.block_rel_rms),
        }


def _fractions(
    values: np.ndarray, formats: Iterable[str]
) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Per format: the fractions of the finite nonzero ``values`` below the smallest normal,
    below the smallest subnormal, and at most half the smallest subnormal (round to zero)."""
    magnitude = np.abs(values[np.isfinite(values)])
    nonzero = magnitude[magnitude > 0]
    normal: dict[str, float] = {}
    subnormal: dict[str, float] = {}
    zero: dict[str, float] = {}
    for name in formats:
        fmt = resolve(name)
        if nonzero.size == 0:
            normal[fmt.name], subnormal[fmt.name], zero[fmt.name] = 0.0, 0.0, 0.0
            continue
        normal[fmt.name] = float(np.count_nonzero(nonzero < fmt.smallest_normal) / nonzero.size)
        subnormal[fmt.name] = float(np.count_nonzero(nonzero < fmt.smallest_subnormal) / nonzero.size)
        zero[fmt.name] = float(np.count_nonzero(nonzero <= fmt.smallest_subnormal / 2) / nonzero.size)
    return normal, subnormal, zero


def _max_abs(values: np.ndarray) -> float:
    if values.size == 0:
        return 0.0
    if np.isnan(values).any():
        return math.nan
    return float(np.max(np.abs(values)))


def tensor_stats(activation: Any, gradient: Any, formats: Iterable[str] = DEFAULT_FORMATS) -> TensorStats:
    """The :class:`TensorStats` of one activation and its gradient (None: no gradient).
    Block format names among ``formats`` (:data:`explorer.blocks.BLOCK_FORMAT_NAMES`) give
    :attr:`TensorStats.block_rel_rms` instead of the fractions.

    >>> s = tensor_stats([1e-9, 1.0, 0.0], [1e-9, 1e-3], ["float16"])
    >>> s.below_subnormal["float16"], s.grad_below_subnormal["float16"], s.to_zero["float16"]
    (0.5, 0.5, 0.5)
    >>> tensor_stats([4e-8], None, ["float16"]).to_zero["float16"]  # float16 keeps it: 2**-24 ~ 6e-8
    0.0
    """
    from explorer.analysis.block_view import layer_block_errors
    from explorer.blocks import BLOCK_FORMAT_NAMES

    blocks = [f for f in formats if f in BLOCK_FORMAT_NAMES]
    formats = [f for f in formats if f not in BLOCK_FORMAT_NAMES]
    shaped = np.asarray(activation, dtype=np.float64)
    act = shaped.ravel()
    normal, subnormal, zero = _fractions(act, formats)
    block_errors = layer_block_errors({"": [shaped]}, blocks)[""] if blocks else {}
    if gradient is None:
        return TensorStats(_max_abs(act), None, normal, subnormal, to_zero=zero, block_rel_rms=block_errors)
    grad = np.asarray(gradient, dtype=np.float64).ravel()
    g_normal, g_subnormal, g_zero = _fractions(grad, formats)
    return TensorStats(
        _max_abs(act), _max_abs(grad), normal, subnormal, g_normal, g_subnormal, zero, g_zero, block_errors
    )


def headroom_bits(max_abs: float, fmt: Any) -> float:
    """log2(format max / max_abs): how many doublings the largest value can take before it
    passes the format's max (negative: it is past it already; inf for an all-zero tensor).

    >>> headroom_bits(1.0, "float16") == math.log2(65504.0)
    True
    """
    top = resolve(fmt).max
    if max_abs == 0:
        return math.inf
    if not math.isfinite(max_abs):
        return -math.inf
    return math.log2(top / max_abs)


def overflows(max_abs: float, fmt: Any) -> bool:
    """True when the largest magnitude does not round to a finite value of at most the format's
    max (a NaN or inf activation overflows every format).

    >>> overflows(65519.0, "float16"), overflows(65520.0, "float16")
    (False, True)
    """
    if not math.isfinite(max_abs):
        return True
    f = resolve(fmt)
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = float(f.round(np.array([max_abs]))[0])
    return not math.isfinite(rounded) or abs(rounded) > f.max


def verdict(stats: TensorStats, fmt: Any, flush_to_zero: bool = False) -> str:
    """``overflows`` (the largest |activation| rounds past the format's max), ``loses_gradients``
    (more than :data:`GRADIENT_LOSS_FRACTION` of the nonzero gradients become zero in the
    format), ``underflows`` (more than :data:`UNDERFLOW_FRACTION` of the nonzero activations
    do), else ``fits``.  A value becomes zero when round to nearest takes it there (at most half
    the smallest subnormal), or, with ``flush_to_zero`` (a backend that flushes subnormal
    results), when it is below the smallest normal.

    >>> verdict(tensor_stats([1.0], [1e-9], ["float16"]), "float16")
    'loses_gradients'
    >>> s = tensor_stats([1e-39, 1.0], None, ["bfloat16"])  # a bfloat16 subnormal
    >>> verdict(s, "bfloat16"), verdict(s, "bfloat16", flush_to_zero=True)
    ('fits', 'underflows')
    """
    name = resolve(fmt).name
    if overflows(stats.max_abs, name):
        return "overflows"
    activations = stats.below_normal if flush_to_zero else stats.to_zero
    gradients = stats.grad_below_normal if flush_to_zero else stats.grad_to_zero
    if gradients.get(name, 0.0) > GRADIENT_LOSS_FRACTION:
        return "loses_gradients"
    if activations.get(name, 0.0) > UNDERFLOW_FRACTION:
        return "underflows"
    return "fits"


def zero_fraction(gradients: Iterable[Any]) -> float | None:
    """Fraction of the elements of ``gradients`` (arrays; None entries skipped) that are exactly
    zero or not finite; None when there are none.

    >>> zero_fraction([np.array([0.0, 1.0]), None, np.array([0.0, 0.0])])
    0.75
    """
    total = lost = 0
    for g in gradients:
        if g is None:
            continue
        values = np.asarray(g, dtype=np.float64).ravel()
        total += values.size
        lost += int(np.count_nonzero((values == 0) | ~np.isfinite(values)))
    return None if total == 0 else lost / total


def number_text(value: float | None) -> str:
    """A magnitude as a person reads it in a sentence: ``7.1e+04``, ``0.5``, ``inf``.

    >>> number_text(71000.0), number_text(0.5), number_text(None)
    ('7.1e+04', '0.5', 'n/a')
    """
    if value is None:
        return "n/a"
    if not math.isfinite(value):
        return str(value)
    return f"{value:.2g}"


def worst_verdicts(verdicts: Mapping[str, str]) -> str:
    """The worst of several verdicts (:data:`VERDICTS` order).

    >>> worst_verdicts({"a": "fits", "b": "underflows"})
    'underflows'
    """
    found = set(verdicts.values())
    return next((v for v in VERDICTS if v in found), "fits")


__all__ = [
    "DEFAULT_FORMATS",
    "GRADIENT_LOSS_FRACTION",
    "UNDERFLOW_FRACTION",
    "VERDICTS",
    "TensorStats",
    "headroom_bits",
    "number_text",
    "overflows",
    "tensor_stats",
    "verdict",
    "worst_verdicts",
    "zero_fraction",
]
