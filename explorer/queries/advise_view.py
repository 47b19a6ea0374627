"""What the app's "Keep in higher precision" panel shows, read from
:func:`explorer.queries.advise.advise_precision`: the advice for a built-in model (random
weights, or the CNN trained on the digits), the sensitivity grid the plot draws, and the
recipe beside the three baselines as table rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from explorer.queries.advise import PrecisionAdvice, advise_precision

#: the choice names of :class:`~explorer.queries.advise.MeasuredChoice`, as the table says them
CHOICE_LABELS: dict[str, str] = {
    "recipe": "recipe (the search's choice)",
    "every_layer": "every layer in the format",
    "first_and_last": "first and last layers kept",
    "random": "random, equal budget (median seed)",
}


@dataclass(frozen=True)
class ChoiceRow:
    """One row of the panel's table."""

    choice: str
    kept: tuple[str, ...]
    kept_fraction: float
    bits_per_param: float
    value: float
    error: float


def advise_builtin(
    name: str,
    framework: str = "keras",
    *,
    trained: bool = False,
    formats: Sequence[str] = ("mxfp4_e2m1",),
    budget: float = 0.1,
    seeds: int = 5,
    progress: Callable[[int, int, str], None] | None = None,
) -> PrecisionAdvice:
    """:func:`advise_precision` of the built-in model ``name`` in ``framework`` on its seeded
    example inputs (metric: relative RMS of the outputs), or, ``trained``, of the CNN trained on
    the digits (:func:`explorer.training.trained_builtin.trained_builtin`) on its 360 validation
    digits (metric: accuracy against their labels)."""
    from explorer.runtime import model_builtin

    model_builtin.get_builtin(name)  # bad names refused here
    if framework not in model_builtin.FRAMEWORKS:
        raise ValueError(f"unknown framework {framework!r}; valid: {', '.join(model_builtin.FRAMEWORKS)}")
    common: dict[str, Any] = {"formats": formats, "budget": budget, "seeds": seeds, "progress": progress}
    if trained:
        from explorer.training.trained_builtin import trained_builtin

        t = trained_builtin(name, framework)
        return advise_precision(t.model, t.x_val, labels=t.y_val, **common)
    model = model_builtin.build(name, framework)
    return advise_precision(model, model_builtin.example_inputs(name, framework), **common)


def sensitivity_grid(advice: PrecisionAdvice) -> tuple[list[str], list[str], list[list[float]]]:
    """(layers in execution order, formats, ``errors[format][layer]``) for
    :func:`explorer.plots.advise.plot_sensitivity`."""
    layers = [layer.name for layer in advice.layers]
    formats = list(advice.formats)
    return layers, formats, [[advice.cell(layer, f).error for layer in layers] for f in formats]


def choice_rows(advice: PrecisionAdvice, fmt: str) -> list[ChoiceRow]:
    """The recipe and the three baselines for ``fmt``, in that order, as table rows."""
    return [
        ChoiceRow(CHOICE_LABELS[c.name], c.kept, c.kept_fraction, c.bits_per_param, c.value, c.error)
        for c in advice.for_format(fmt).choices
    ]


def metric_words(advice: PrecisionAdvice) -> str:
    """What the value and the error columns mean for the advice's metric.

    >>> from explorer.analysis.precision_advice import Budget
    >>> a = PrecisionAdvice("torch", "accuracy", 0.9, "float32", Budget(0.1), (), (), (), (), "")
    >>> metric_words(a).split("; ")[1]
    "error: the float32 model's accuracy minus this one"
    """
    base = f"(float32 model: {advice.float32_value:.4g})"
    words = {
        "relative_rms": "value: relative RMS of the output against the float32 model's; error: the same",
        "kl_divergence": "value: KL divergence from the float32 model's probabilities; error: the same",
        "top1_agreement": f"value: top-1 agreement with the float32 model {base}; error: 1 - agreement",
        "accuracy": f"value: accuracy on the labelled inputs {base}; error: the float32 model's "
        "accuracy minus this one",
    }
    return words[advice.metric]


__all__ = [
    "CHOICE_LABELS",
    "ChoiceRow",
    "advise_builtin",
    "choice_rows",
    "metric_words",
    "sensitivity_grid",
]
