"""Which layers to keep in higher precision: per-layer sensitivity, a recipe under a budget,
and the recipe run beside three baselines (:func:`advise_precision`).

1. **Sensitivity**: for every covered layer (:mod:`explorer.runtime.quantized_layers`) and
   every format, the model is run with that layer alone quantized; the metric against the
   float32 model's output (or the labels) and the error it adds.
2. **Recipe**: :func:`explorer.analysis.precision_advice.choose_kept` picks the layers kept
   in higher precision (``keep``: float32, or bfloat16) so that the budget holds and the
   summed single-layer errors of the quantized layers are least (it assumes they add up).
3. **Measured**: the recipe is run with all its layers quantized together, and so are three
   baselines: every covered layer in the format; the first and last covered layers kept (in
   execution order), the rest quantized; an equal-budget random choice (the median of
   ``seeds`` seeds).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from explorer.analysis import precision_advice as pa
from explorer.analysis.recipe_code import recipe_code


@dataclass(frozen=True)
class LayerInfo:
    """One covered layer, in execution order."""

    name: str
    kind: str
    #: its kernel's element count
    params: int


@dataclass(frozen=True)
class SensitivityCell:
    """One layer alone quantized to one format."""

    layer: str
    format: str
    #: the metric with this layer alone quantized
    value: float
    #: the error it adds (:func:`~explorer.analysis.precision_advice.error_of` of ``value``)
    error: float


@dataclass(frozen=True)
class MeasuredChoice:
    """A choice of kept layers, run with all the others quantized together."""

    #: recipe, every_layer, first_and_last, random
    name: str
    kept: tuple[str, ...]
    #: share of the covered weights kept in higher precision
    kept_fraction: float
    #: average bits per covered weight (kept ones at the kept format's bits)
    bits_per_param: float
    #: the metric measured (random: the median seed's)
    value: float
    error: float
    #: random: each seed's error; else empty
    seed_errors: tuple[float, ...] = ()


@dataclass(frozen=True)
class FormatAdvice:
    """The recipe for one format, measured beside the baselines."""

    format: str
    recipe: MeasuredChoice
    every_layer: MeasuredChoice
    first_and_last: MeasuredChoice
    random: MeasuredChoice
    #: the summed single-layer errors of the recipe's quantized layers (what the search minimised)
    estimated_error: float
    #: the recipe's quantized layers, in execution order
    quantized: tuple[str, ...]
    #: the recipe as code to paste (:mod:`explorer.analysis.recipe_code`)
    code: str

    @property
    def choices(self) -> list[MeasuredChoice]:
        """The recipe and the three baselines, in that order."""
        return [self.recipe, self.every_layer, self.first_and_last, self.random]


@dataclass(frozen=True)
class PrecisionAdvice:
    """What :func:`advise_precision` found."""

    framework: str
    metric: str
    #: the float32 model's metric (1.0 / 0.0 against itself; its accuracy with labels)
    float32_value: float
    keep: str
    budget: pa.Budget
    formats: tuple[str, ...]
    layers: tuple[LayerInfo, ...]
    sensitivity: tuple[SensitivityCell, ...]
    advice: tuple[FormatAdvice, ...]
    covered: str
    seconds: dict[str, float] = field(default_factory=dict)

    def cell(self, layer: str, fmt: str) -> SensitivityCell:
        """The sensitivity cell of ``layer`` in ``fmt``."""
        for c in self.sensitivity:
            if c.layer == layer and c.format == fmt:
                return c
        raise KeyError((layer, fmt))

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON (non-finite numbers as None)."""
        return _plain(asdict(self))

    def for_format(self, fmt: str) -> FormatAdvice:
        """The advice for ``fmt``."""
        canonical = pa.advice_format(fmt)
        for a in self.advice:
            if a.format == canonical:
                return a
        raise KeyError(fmt)


def _plain(value: Any) -> Any:
    """``value`` with tuples as lists and non-finite floats as None."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _as_budget(budget: float | pa.Budget | None, bits_budget: float | None) -> pa.Budget:
    if isinstance(budget, pa.Budget):
        if bits_budget is not None:
            raise ValueError("give budget or bits_budget, not both")
        return budget
    if budget is not None and bits_budget is not None:
        raise ValueError("give budget (keep fraction) or bits_budget, not both")
    if bits_budget is not None:
        return pa.Budget(bits_per_param=float(bits_budget))
    return pa.Budget(keep_fraction=0.1 if budget is None else float(budget))


def advise_precision(
    model: Any,
    example_inputs: Any,
    *,
    formats: Sequence[str] = ("mxfp4_e2m1",),
    budget: float | pa.Budget | None = None,
    bits_budget: float | None = None,
    metric: str = "relative_rms",
    labels: Any = None,
    keep: str = "float32",
    seeds: int = 5,
    progress: Callable[[int, int, str], None] | None = None,
) -> PrecisionAdvice:
    """Which covered layers of ``model`` (a Keras 3 model or a PyTorch module) to keep in
    higher precision for each of ``formats``, and what each choice measures on
    ``example_inputs`` (an array, or a sequence of arrays, one per model input).

    ``budget`` is the largest share of the covered weights kept (default 0.1), or give
    ``bits_budget`` (average bits per covered weight).  ``metric``: ``relative_rms`` of the
    outputs, ``kl_divergence`` of their probabilities, ``top1_agreement``, or ``accuracy``
    against ``labels`` (integer class per row; ``metric`` becomes ``accuracy`` when labels are
    given).  ``keep``: the precision kept layers run in (``float32`` or ``bfloat16``).
    ``progress(done, total, what)`` is called after each run of the model (an exception it
    raises, a cancel, ends the advice).
    """
    from explorer.runtime.quantized_layers import COVERED, runner_for

    started = time.perf_counter()
    names = tuple(dict.fromkeys(pa.advice_format(f) for f in formats))
    if not names:
        raise ValueError("give at least one format")
    if keep not in pa.KEEP_FORMATS:
        raise ValueError(f"keep must be one of {', '.join(pa.KEEP_FORMATS)}, got {keep!r}")
    if seeds < 1:
        raise ValueError(f"seeds must be at least 1, got {seeds}")
    label_array = None if labels is None else np.asarray(labels).reshape(-1)
    if label_array is not None:
        metric = "accuracy"
    pa.check_metric(metric, label_array)
    chosen_budget = _as_budget(budget, bits_budget)
    inputs = [example_inputs] if isinstance(example_inputs, np.ndarray) else list(example_inputs)
    inputs = [np.asarray(x, dtype=np.float32) for x in inputs]

    runner = runner_for(model, inputs)
    reference = runner.run({})
    if (
        label_array is not None
        and label_array.shape[0] != reference.reshape(-1, reference.shape[-1]).shape[0]
    ):
        raise ValueError(f"{label_array.shape[0]} labels but {reference.shape[0]} output rows")
    float32_value = pa.metric_value(metric, reference, reference, label_array)
    layers = tuple(LayerInfo(s.name, s.kind, s.params) for s in runner.layers)
    if not layers:
        raise ValueError(f"the model has no covered layer ({COVERED[runner.framework]})")
    seconds = {"setup": time.perf_counter() - started}
    total_runs = len(names) * (len(layers) + 3 + seeds)
    runs = [0]

    def measure(assignment: dict[str, str]) -> tuple[float, float]:
        value = pa.metric_value(metric, reference, runner.run(assignment), label_array)
        runs[0] += 1
        if progress is not None:
            low = [f"{k} in {v}" for k, v in assignment.items() if v != keep]
            what = f"{low[0]} alone" if len(low) == 1 else f"{len(low)} layers quantized together"
            progress(runs[0], total_runs, f"run {runs[0]} of {total_runs}: {what}")
        return value, pa.error_of(metric, value, float32_value)

    t = time.perf_counter()
    cells = []
    for fmt in names:
        for layer in layers:
            value, error = measure({layer.name: fmt})
            cells.append(SensitivityCell(layer.name, fmt, value, error))
    seconds["sensitivity"] = time.perf_counter() - t

    t = time.perf_counter()
    params = [layer.params for layer in layers]
    keep_bits = pa.bits_per_value(keep)
    advice = []
    for fmt in names:
        bits = pa.bits_per_value(fmt)
        costs = [c.error for c in cells if c.format == fmt]

        def run_choice(
            name: str, kept: Sequence[bool], _fmt: str = fmt, _bits: float = bits
        ) -> MeasuredChoice:
            assignment = {layer.name: (keep if k else _fmt) for layer, k in zip(layers, kept, strict=True)}
            value, error = measure(assignment)
            kept_params = sum(p for p, k in zip(params, kept, strict=True) if k)
            total = sum(params)
            return MeasuredChoice(
                name,
                tuple(layer.name for layer, k in zip(layers, kept, strict=True) if k),
                kept_params / total,
                (kept_params * keep_bits + (total - kept_params) * _bits) / total,
                value,
                error,
            )

        kept = pa.choose_kept(params, costs, chosen_budget, bits, keep_bits)
        recipe = run_choice("recipe", kept)
        estimated = math.fsum(c for c, k in zip(costs, kept, strict=True) if not k and math.isfinite(c))
        every = run_choice("every_layer", [False] * len(layers))
        first_last = run_choice("first_and_last", pa.first_and_last_kept(len(layers)))
        randoms = [
            run_choice("random", pa.random_kept(params, chosen_budget, bits, keep_bits, seed))
            for seed in range(seeds)
        ]
        errors = [r.error for r in randoms]
        median = statistics.median_low(errors)  # a measured run, not an average of two
        middle = randoms[errors.index(median)]
        random_choice = MeasuredChoice(
            "random", middle.kept, middle.kept_fraction, middle.bits_per_param, middle.value,
            middle.error, tuple(errors),
        )  # fmt: skip
        quantized = tuple(layer.name for layer, k in zip(layers, kept, strict=True) if not k)
        code = recipe_code(runner.framework, fmt, quantized, recipe.kept)
        advice.append(FormatAdvice(fmt, recipe, every, first_last, random_choice, estimated, quantized, code))
    seconds["recipes"] = time.perf_counter() - t
    seconds["total"] = time.perf_counter() - started
    return PrecisionAdvice(
        runner.framework, metric, float32_value, keep, chosen_budget, names, layers, tuple(cells),
        tuple(advice), COVERED[runner.framework], seconds,
    )  # fmt: skip


__all__ = [
    "FormatAdvice",
    "LayerInfo",
    "MeasuredChoice",
    "PrecisionAdvice",
    "SensitivityCell",
    "advise_precision",
]
