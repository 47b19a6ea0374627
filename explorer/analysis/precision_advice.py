"""Which layers to keep in higher precision: the pure part (NumPy and SciPy only).

The formats a layer is quantized to, and how (:func:`quantize_along`):

* ``float16``, ``bfloat16``: each value rounded to the format (nearest-even), no scale.
* ``float8_e4m3fn``, ``float8_e5m2``: per-tensor scaling as the float8 recipes do it with
  current (amax) scaling: ``s = max|x| / format max`` stored in float32, each ``x / s``
  rounded nearest-even and saturating, times ``s``
  (:func:`explorer.blocks.quantize_per_tensor`).
* block formats (``mxfp8_e4m3``, ``mxfp8_e5m2``, ``mxfp6_e2m3``, ``mxfp6_e3m2``,
  ``mxfp4_e2m1``, ``mxint8``, ``nvfp4``): :func:`explorer.quantize_blocks` along the
  contraction axis of the matrix multiply (the axis is moved last, quantized, moved back).

Quantized values are returned as float32 (the framework then multiplies and accumulates in
float32).  NVFP4's ``element * block scale * tensor scale`` can need more than float32's 24
significand bits; it is rounded to float32 there.

The metrics compare the quantized model's output with the float32 model's on the same inputs
(:func:`metric_value`); :func:`error_of` turns each into an error, lower is better.  The
selection (:func:`choose_kept`) is a 0/1 integer program solved by
:func:`scipy.optimize.milp`: quantize the set of layers with the least summed sensitivity
whose kept share meets the budget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from explorer.blocks import BLOCK_FORMAT_NAMES, block_format, quantize_blocks, quantize_per_tensor
from explorer.formats import resolve

#: element formats rounded value by value, without a scale
PLAIN_FORMATS: tuple[str, ...] = ("float16", "bfloat16")
#: float8 formats with one amax-based scale per tensor
TENSOR_SCALED_FORMATS: tuple[str, ...] = ("float8_e4m3fn", "float8_e5m2")
#: every format a layer can be advised for
ADVICE_FORMATS: tuple[str, ...] = PLAIN_FORMATS + TENSOR_SCALED_FORMATS + BLOCK_FORMAT_NAMES
#: the precisions a kept layer may run in (float32: untouched)
KEEP_FORMATS: tuple[str, ...] = ("float32", "bfloat16")
#: the metrics: lower is better for the first two, higher for the last two
METRICS: tuple[str, ...] = ("relative_rms", "kl_divergence", "top1_agreement", "accuracy")


def advice_format(name: str) -> str:
    """The canonical name of an advice format (``fp16`` -> ``float16``, ``mxfp4`` ->
    ``mxfp4_e2m1``); ValueError lists the valid names.

    >>> advice_format("fp16"), advice_format("mxfp4"), advice_format("e4m3")
    ('float16', 'mxfp4_e2m1', 'float8_e4m3fn')
    """
    try:
        return block_format(name).name
    except (ValueError, KeyError, TypeError):
        pass
    try:
        canonical = resolve(name).name
    except (ValueError, KeyError) as exc:
        raise ValueError(f"unknown format {name!r}; valid: {', '.join(ADVICE_FORMATS)}") from exc
    if canonical not in ADVICE_FORMATS:
        raise ValueError(f"format {canonical!r} is not advised on; valid: {', '.join(ADVICE_FORMATS)}")
    return canonical


def bits_per_value(name: str) -> float:
    """Bits per value of a format, its scales included (block formats: spread over the block;
    a per-tensor scale: 0); ``float32`` is 32.

    >>> bits_per_value("bfloat16"), bits_per_value("float8_e5m2"), bits_per_value("mxfp4_e2m1")
    (16.0, 8.0, 4.25)
    """
    if name == "float32":
        return 32.0
    canonical = advice_format(name)
    if canonical in BLOCK_FORMAT_NAMES:
        return float(block_format(canonical).bits_per_element)
    return float(resolve(canonical).bits)


def quantize_along(x: np.ndarray, name: str, axis: int) -> np.ndarray:
    """``x`` quantized to the format ``name`` (see the module doc), block formats in blocks
    along ``axis``; float32, the shape of ``x``.

    >>> quantize_along(np.array([[0.1, 7.0], [1.0, 3.0]]), "mxfp4_e2m1", axis=0).tolist()
    [[0.125, 6.0], [1.0, 3.0]]

    (column 0: scale 2**(0 - 2), 0.1 / 0.25 = 0.4 rounds to E2M1's 0.5; column 1: scale 1,
    7 saturates at 6.)
    """
    canonical = advice_format(name)
    array = np.asarray(x)
    if canonical in PLAIN_FORMATS:
        return np.asarray(resolve(canonical).round(array.astype(np.float32)), dtype=np.float32)
    if canonical in TENSOR_SCALED_FORMATS:
        return quantize_per_tensor(array, canonical).values.astype(np.float32)
    moved = np.moveaxis(array, axis, -1)
    values = quantize_blocks(moved, canonical).values
    return np.ascontiguousarray(np.moveaxis(values, -1, axis), dtype=np.float32)


# ---------------------------------------------------------------- metrics


def _probabilities(x: np.ndarray) -> np.ndarray:
    """Rows of ``x`` (last axis) as probabilities: kept when they already are (non-negative,
    summing to 1 within 1e-3), else a softmax."""
    x64 = np.asarray(x, dtype=np.float64)
    if x64.size and np.all(x64 >= 0) and np.allclose(x64.sum(axis=-1), 1.0, atol=1e-3):
        return x64
    shifted = x64 - np.max(x64, axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)


def relative_rms(reference: np.ndarray, output: np.ndarray) -> float:
    """``rms(output - reference) / rms(reference)`` (inf when the reference is all zeros and
    the output is not; NaN when the output holds NaN).

    >>> relative_rms(np.array([3.0, 4.0]), np.array([3.0, 4.5]))
    0.1
    """
    ref = np.asarray(reference, dtype=np.float64)
    out = np.asarray(output, dtype=np.float64)
    diff = float(np.sqrt(np.mean((out - ref) ** 2)))
    scale = float(np.sqrt(np.mean(ref**2)))
    if scale == 0.0:
        return 0.0 if diff == 0.0 else math.inf
    return diff / scale


def kl_divergence(reference: np.ndarray, output: np.ndarray) -> float:
    """Mean over rows of KL(p_reference || p_output), in nats, the rows' probabilities taken
    as they are or through a softmax (:func:`_probabilities`).

    >>> round(kl_divergence(np.array([[0.5, 0.5]]), np.array([[0.9, 0.1]])), 4)
    0.5108
    """
    p = _probabilities(reference)
    q = _probabilities(output)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * (np.log(p) - np.log(q)), 0.0)
    return float(np.mean(np.sum(terms, axis=-1)))


def top1_agreement(reference: np.ndarray, output: np.ndarray) -> float:
    """Share of rows whose largest entry (argmax over the last axis) is the reference's.

    >>> top1_agreement(np.array([[1, 2], [3, 0]]), np.array([[0, 5], [0, 1]]))
    0.5
    """
    ref = np.asarray(reference).reshape(-1, np.shape(reference)[-1])
    out = np.asarray(output).reshape(-1, np.shape(output)[-1])
    return float(np.mean(np.argmax(ref, axis=-1) == np.argmax(out, axis=-1)))


def accuracy(output: np.ndarray, labels: np.ndarray) -> float:
    """Share of rows whose argmax is the integer label.

    >>> accuracy(np.array([[0.1, 0.9], [0.8, 0.2]]), np.array([1, 1]))
    0.5
    """
    out = np.asarray(output).reshape(-1, np.shape(output)[-1])
    return float(np.mean(np.argmax(out, axis=-1) == np.asarray(labels).reshape(-1)))


def check_metric(metric: str, labels: np.ndarray | None) -> str:
    """``metric`` validated (``accuracy`` needs labels); ValueError otherwise."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; valid: {', '.join(METRICS)}")
    if metric == "accuracy" and labels is None:
        raise ValueError("metric 'accuracy' needs labels")
    return metric


def metric_value(
    metric: str, reference: np.ndarray, output: np.ndarray, labels: np.ndarray | None = None
) -> float:
    """The metric of ``output`` (the quantized model's) against ``reference`` (the float32
    model's), or against ``labels`` for ``accuracy``."""
    if metric == "relative_rms":
        return relative_rms(reference, output)
    if metric == "kl_divergence":
        return kl_divergence(reference, output)
    if metric == "top1_agreement":
        return top1_agreement(reference, output)
    if metric == "accuracy":
        if labels is None:
            raise ValueError("metric 'accuracy' needs labels")
        return accuracy(output, labels)
    raise ValueError(f"unknown metric {metric!r}; valid: {', '.join(METRICS)}")


def error_of(metric: str, value: float, float32_value: float) -> float:
    """The error a value stands for, lower is better: relative RMS and KL as they are;
    ``1 - agreement``; accuracy: the float32 model's accuracy minus this one (points lost).
    NaN counts as inf.

    >>> error_of("top1_agreement", 0.75, 1.0), error_of("accuracy", 0.8, 0.9)
    (0.25, 0.09999999999999998)
    """
    if math.isnan(value):
        return math.inf
    if metric == "top1_agreement":
        return 1.0 - value
    if metric == "accuracy":
        return float32_value - value
    return value


# ---------------------------------------------------------------- the selection


@dataclass(frozen=True)
class Budget:
    """How much may stay in higher precision: at most ``keep_fraction`` of the covered
    layers' weights kept, or at most ``bits_per_param`` bits per weight on average (kept
    weights counted at the kept format's bits, quantized ones at the format's)."""

    keep_fraction: float | None = None
    bits_per_param: float | None = None

    def __post_init__(self) -> None:
        if (self.keep_fraction is None) == (self.bits_per_param is None):
            raise ValueError("give one budget: keep_fraction or bits_per_param")
        if self.keep_fraction is not None and not 0.0 <= self.keep_fraction <= 1.0:
            raise ValueError(f"keep_fraction must be in [0, 1], got {self.keep_fraction}")
        if self.bits_per_param is not None and not 0.0 < self.bits_per_param <= 64.0:
            raise ValueError(f"bits_per_param must be in (0, 64], got {self.bits_per_param}")

    def fits(self, params: Sequence[int], kept: Sequence[bool], bits: float, keep_bits: float) -> bool:
        """Whether keeping the layers marked in ``kept`` meets the budget."""
        total = float(sum(params))
        kept_params = float(sum(p for p, k in zip(params, kept, strict=True) if k))
        if total == 0:
            return True
        if self.keep_fraction is not None:
            return kept_params <= self.keep_fraction * total * (1 + 1e-12)
        assert self.bits_per_param is not None
        spent = kept_params * keep_bits + (total - kept_params) * bits
        return spent <= self.bits_per_param * total * (1 + 1e-12)

    def describe(self) -> str:
        """One phrase: ``at most 10% of the weights kept`` / ``at most 6 bits per weight``."""
        if self.keep_fraction is not None:
            return f"at most {self.keep_fraction:.4g} of the covered weights kept"
        return f"at most {self.bits_per_param:.4g} bits per covered weight on average"


def choose_kept(
    params: Sequence[int], costs: Sequence[float], budget: Budget, bits: float, keep_bits: float
) -> list[bool]:
    """Which layers to keep (True) so that the budget holds and the summed cost of the
    quantized layers is least: the 0/1 program ``min sum c_i q_i`` subject to the budget's
    one linear constraint (``q_i = 1``: layer i quantized), solved exactly by
    :func:`scipy.optimize.milp`.  Negative costs count as 0 (a layer cannot gain from being
    kept out of the format); an infinite cost counts as 1e12.  ValueError when no choice
    meets the budget (a bits budget below the format's own bits).

    >>> choose_kept([10, 10, 80], [5.0, 1.0, 0.5], Budget(keep_fraction=0.1), 4.0, 32.0)
    [True, False, False]
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    n = len(params)
    if len(costs) != n:
        raise ValueError(f"{n} layers but {len(costs)} costs")
    if n == 0:
        return []
    p = np.asarray(params, dtype=np.float64)
    c = np.array([min(max(float(v), 0.0), 1e12) if not math.isnan(v) else 1e12 for v in costs])
    total = float(p.sum())
    if budget.keep_fraction is not None:
        # kept = total - p.q <= f total  <=>  p.q >= (1 - f) total
        constraint = LinearConstraint(p[None, :], lb=(1.0 - budget.keep_fraction) * total * (1 - 1e-12))
    else:
        assert budget.bits_per_param is not None
        # spent = keep_bits total - (keep_bits - bits) p.q <= b total
        if keep_bits <= bits:
            raise ValueError("the kept format must have more bits than the quantized one")
        need = (keep_bits - budget.bits_per_param) * total / (keep_bits - bits)
        if need > total * (1 + 1e-12):
            raise ValueError(
                f"a bits budget of {budget.bits_per_param:g} is below the format's {bits:g} bits per weight"
            )
        constraint = LinearConstraint(p[None, :], lb=need * (1 - 1e-12))
    result = milp(c, constraints=[constraint], integrality=np.ones(n), bounds=Bounds(0, 1))
    if result.x is None:
        raise ValueError(f"no choice of layers meets the budget ({result.message})")
    return [bool(round(v) == 0) for v in result.x]


def first_and_last_kept(n: int) -> list[bool]:
    """The common heuristic: the first and the last layer (in execution order) kept.

    >>> first_and_last_kept(4), first_and_last_kept(1)
    ([True, False, False, True], [True])
    """
    return [i in (0, n - 1) for i in range(n)]


def random_kept(
    params: Sequence[int], budget: Budget, bits: float, keep_bits: float, seed: int
) -> list[bool]:
    """An equal-budget random choice: the layers in a seeded random order, each kept when the
    budget still holds with it kept."""
    order = np.random.default_rng(seed).permutation(len(params))
    kept = [False] * len(params)
    for i in order:
        kept[int(i)] = True
        if not budget.fits(params, kept, bits, keep_bits):
            kept[int(i)] = False
    return kept


__all__ = [
    "ADVICE_FORMATS",
    "KEEP_FORMATS",
    "METRICS",
    "PLAIN_FORMATS",
    "TENSOR_SCALED_FORMATS",
    "Budget",
    "accuracy",
    "advice_format",
    "bits_per_value",
    "check_metric",
    "choose_kept",
    "error_of",
    "first_and_last_kept",
    "kl_divergence",
    "metric_value",
    "quantize_along",
    "random_kept",
    "relative_rms",
    "top1_agreement",
]
