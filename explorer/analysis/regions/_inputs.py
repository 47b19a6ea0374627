"""The inputs a sweep uses: every finite value of a small format, else an even sample in
bit-pattern order (a unary sweep, or each axis of a binary map), and the limits on their number."""

from __future__ import annotations

from typing import Any

import numpy as np

from explorer.formats import decode, from_ordinals, ordinals, resolve

#: Samples per sign for formats too wide to enumerate.
DEFAULT_SAMPLES = 32768
#: Most samples per sign (2 x 10**7 inputs: a few GB of arrays per backend).
MAX_SAMPLES = 10**7
#: Most points along each axis of a binary map (a grid of MAX_POINTS**2 pairs).
MAX_POINTS = 4097


def check_samples(samples: Any) -> int:
    """``samples`` when it is an integer from 2 to :data:`MAX_SAMPLES`; TypeError/ValueError otherwise.

    >>> check_samples(1000)
    1000
    """
    return _bounded_int("samples", samples, 2, MAX_SAMPLES)


def check_points(points: Any) -> int:
    """``points`` when it is an integer from 3 to :data:`MAX_POINTS`; TypeError/ValueError otherwise.

    >>> check_points(257)
    257
    """
    return _bounded_int("points", points, 3, MAX_POINTS)


def _bounded_int(name: str, value: Any, low: int, high: int) -> int:
    """``value`` as an int when it is an integer from ``low`` to ``high``; TypeError/ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be an integer from {low} to {high}, got {value!r}")
    return int(value)


def unary_inputs(fmt: Any, samples: int = DEFAULT_SAMPLES) -> tuple[np.ndarray, bool]:
    """Sorted distinct finite values of ``fmt`` to sweep, and whether that is all of them.

    Formats of 16 bits or fewer: every finite value (``-0`` merged with ``0``).
    Wider formats: ``samples`` values per sign, evenly spaced in bit-pattern
    order (so evenly on a log axis), plus zero and ``±max``.

    >>> x, exhaustive = unary_inputs("float16")
    >>> x.size, exhaustive
    (63487, True)
    """
    samples = check_samples(samples)
    fmt = resolve(fmt)
    if fmt.enumerable:
        with np.errstate(over="ignore", invalid="ignore"):
            values = decode(np.arange(1 << fmt.bits), fmt)
        return np.unique(values[np.isfinite(values)]) + 0.0, True  # + 0.0: -0 -> 0
    top = int(ordinals(np.array([fmt.max]), fmt)[0])
    positive = np.unique(np.linspace(0, top, samples).astype(np.int64).clip(0, top))
    ords = np.unique(np.concatenate([-positive, positive]))
    return from_ordinals(ords, fmt), False


def binary_axis(fmt: Any, points: int = 257) -> tuple[np.ndarray, bool]:
    """Values along each axis of a binary map, and whether they are every finite value.

    Formats of 8 bits or fewer: every finite value.  Wider formats: ``points``
    values evenly spaced in bit-pattern order (evenly on a log axis, both
    signs, with zero).
    """
    points = check_points(points)
    fmt = resolve(fmt)
    if fmt.bits <= 8:
        return unary_inputs(fmt)
    top = int(ordinals(np.array([fmt.max]), fmt)[0])
    half = np.unique(np.linspace(0, top, points // 2 + 1).astype(np.int64))
    return from_ordinals(np.unique(np.concatenate([-half, half])), fmt), False
