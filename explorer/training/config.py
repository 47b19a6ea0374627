"""Training configuration and records: the six policies, :class:`TrainingConfig` (checked
at construction), the records a run streams (:class:`StepRecord`, :class:`EpochRecord`,
:class:`GradientHistogram`) and the :class:`TrainingResult` it returns.

Plain data: nothing here imports Keras or TensorFlow.

>>> TrainingConfig(policy="fp16").validated().policy
'float16'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

#: the six policies, in the order they are usually shown
POLICY_NAMES: tuple[str, ...] = (
    "float32",
    "mixed_float16",
    "mixed_float16_no_scaling",
    "mixed_bfloat16",
    "float16",
    "bfloat16",
)
MODELS: tuple[str, ...] = ("mlp", "cnn")
SCENARIOS: tuple[str, ...] = ("default", "underflow")
#: loss multiplier of the ``underflow`` scenario
UNDERFLOW_LOSS_MULTIPLIER = 2.0**-18
#: epochs when none are given (the benchmark's six MLP runs use this)
DEFAULT_EPOCHS = 10
#: most epochs one run may ask for (one MLP epoch on the digits takes about a second)
MAX_EPOCHS = 1000
#: largest batch size (the digits have 1437 training samples)
MAX_BATCH_SIZE = 65536
#: largest seed (model initialisers use ``seed + 2``; NumPy seeds must stay below 2**32)
MAX_SEED = 2**31 - 1
#: largest starting loss scale: the float32 maximum, where the scale is kept
MAX_INITIAL_SCALE = float(np.finfo(np.float32).max)
#: most histogram steps one run may take
MAX_HISTOGRAM_STEPS = 1000


@dataclass(frozen=True)
class PolicySpec:
    """How one policy name maps onto Keras."""

    name: str
    #: the Keras dtype policy (``keras.config.set_dtype_policy``)
    keras_policy: str
    #: ``keras.config.floatx()`` during the run
    floatx: str
    loss_scaling: bool
    doc: str


POLICIES: dict[str, PolicySpec] = {
    "float32": PolicySpec("float32", "float32", "float32", False, "everything in float32"),
    "mixed_float16": PolicySpec(
        "mixed_float16",
        "mixed_float16",
        "float32",
        True,
        "float32 variables, float16 compute, dynamic loss scaling (LossScaleOptimizer)",
    ),
    "mixed_float16_no_scaling": PolicySpec(
        "mixed_float16_no_scaling",
        "mixed_float16",
        "float32",
        False,
        "float32 variables, float16 compute, no loss scaling",
    ),
    "mixed_bfloat16": PolicySpec(
        "mixed_bfloat16", "mixed_bfloat16", "float32", False, "float32 variables, bfloat16 compute"
    ),
    "float16": PolicySpec(
        "float16",
        "float16",
        "float16",
        False,
        "set_floatx('float16'): variables, compute, optimizer state and loss in float16",
    ),
    "bfloat16": PolicySpec(
        "bfloat16",
        "bfloat16",
        "bfloat16",
        False,
        "set_floatx('bfloat16'): variables, compute, optimizer state and loss in bfloat16",
    ),
}

_ALIASES = {
    "mixed_float16_no_loss_scaling": "mixed_float16_no_scaling",
    "mixed_float16_no_loss_scale": "mixed_float16_no_scaling",
    "fp32": "float32",
    "fp16": "float16",
    "bf16": "bfloat16",
    "half": "float16",
}


def policy_spec(name: str) -> PolicySpec:
    """The ``PolicySpec`` for a policy name; ValueError listing the valid names."""
    if not isinstance(name, str):
        raise TypeError(
            f"policy must be a string, got {type(name).__name__}; valid policies: {', '.join(POLICY_NAMES)}"
        )
    key = _ALIASES.get(name, name)
    if key not in POLICIES:
        raise ValueError(f"unknown policy {name!r}; valid policies: {', '.join(POLICY_NAMES)}")
    return POLICIES[key]


@dataclass(frozen=True)
class TrainingConfig:
    """What to train and how.  ``None`` fields take the scenario's default."""

    policy: str = "float32"
    model: str = "mlp"
    scenario: str = "default"
    epochs: int | None = None
    batch_size: int = 64
    learning_rate: float | None = None
    seed: int = 0
    #: the LossScaleOptimizer's starting scale (Keras' default)
    initial_scale: float = 2.0**15
    #: clean steps before the loss scale doubles (Keras' default is 2000; runs here are short)
    dynamic_growth_steps: int = 100
    #: global steps at which a gradient histogram is taken (``-1`` = the last step)
    histogram_steps: tuple[int, ...] = (0, -1)
    #: use only this many training samples (tests); None = all
    max_train_samples: int | None = None
    #: deliver a ``StepRecord`` for every step (epoch records are always delivered)
    record_steps: bool = True

    def __post_init__(self) -> None:
        """Check every field's type and range at construction (TypeError/ValueError naming it).

        Integers must be ``int`` (NumPy integers are converted; ``bool`` is refused),
        numbers finite; names are checked against :data:`POLICY_NAMES` (aliases work),
        :data:`MODELS` and :data:`SCENARIOS`.
        """
        policy_spec(self.policy)
        _check_name("model", self.model, MODELS)
        _check_name("scenario", self.scenario, SCENARIOS)
        if self.epochs is not None:
            self._set("epochs", _check_int("epochs", self.epochs, 1, MAX_EPOCHS, "a positive integer"))
        self._set(
            "batch_size", _check_int("batch_size", self.batch_size, 1, MAX_BATCH_SIZE, "a positive integer")
        )
        if self.learning_rate is not None:
            self._set("learning_rate", _check_positive("learning_rate", self.learning_rate, math.inf))
        self._set("seed", _check_int("seed", self.seed, 0, MAX_SEED, "an integer"))
        self._set("initial_scale", _check_positive("initial_scale", self.initial_scale, MAX_INITIAL_SCALE))
        self._set(
            "dynamic_growth_steps",
            _check_int("dynamic_growth_steps", self.dynamic_growth_steps, 1, 10**9, "a positive integer"),
        )
        steps = self.histogram_steps
        if not isinstance(steps, tuple | list) or len(steps) > MAX_HISTOGRAM_STEPS:
            raise TypeError(
                f"histogram_steps must be a tuple of at most {MAX_HISTOGRAM_STEPS} integers, got {steps!r}"
            )
        bound = MAX_EPOCHS * 10**6
        self._set("histogram_steps", tuple(_check_int("histogram_steps", v, -bound, bound) for v in steps))
        if self.max_train_samples is not None:
            self._set(
                "max_train_samples",
                _check_int("max_train_samples", self.max_train_samples, 1, 10**9, "a positive integer"),
            )
            if self.max_train_samples < self.batch_size:
                raise ValueError(f"max_train_samples must be at least batch_size ({self.batch_size})")
        if not isinstance(self.record_steps, bool | np.bool_):
            raise TypeError(f"record_steps must be True or False, got {self.record_steps!r}")
        self._set("record_steps", bool(self.record_steps))

    def _set(self, name: str, value: Any) -> None:
        """Store a checked (normalised) value in this frozen instance."""
        object.__setattr__(self, name, value)

    def validated(self) -> TrainingConfig:
        """This config with the policy name canonical and the default epochs filled in.

        (The fields are checked at construction, see :meth:`__post_init__`.)
        """
        spec = policy_spec(self.policy)
        epochs = DEFAULT_EPOCHS if self.epochs is None else self.epochs
        return replace(self, policy=spec.name, epochs=epochs)


def _check_name(field_name: str, value: Any, valid: Sequence[str]) -> None:
    """ValueError (TypeError for a non-string) unless ``value`` is one of ``valid``."""
    plural = f"{field_name}s"
    if not isinstance(value, str):
        raise TypeError(f"{field_name} must be a string; valid {plural}: {', '.join(valid)}")
    if value not in valid:
        raise ValueError(f"unknown {field_name} {value!r}; valid {plural}: {', '.join(valid)}")


def _check_int(field_name: str, value: Any, lo: int, hi: int, what: str = "an integer") -> int:
    """``value`` as an ``int`` from ``lo`` to ``hi``; TypeError for a non-integer (or a bool)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise TypeError(f"{field_name} must be {what}, got {value!r} ({type(value).__name__})")
    if not lo <= value <= hi:
        raise ValueError(f"{field_name} must be {what} from {lo} to {hi}, got {value!r}")
    return int(value)


def _check_positive(field_name: str, value: Any, hi: float) -> float:
    """``value`` as a finite ``float`` in (0, ``hi``]; TypeError for a non-number (or a bool)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{field_name} must be a number, got {value!r} ({type(value).__name__})")
    number = float(value)
    if not (math.isfinite(number) and 0 < number <= hi):
        limit = "" if math.isinf(hi) else f" and at most {hi:g}"
        raise ValueError(f"{field_name} must be a finite number greater than 0{limit}, got {value!r}")
    return number


@dataclass
class StepRecord:
    """One optimizer step (loss and accuracy are of the training batch)."""

    policy: str
    step: int
    epoch: int
    loss: float
    accuracy: float
    #: the LossScaleOptimizer's scale used for this step; None without loss scaling
    loss_scale: float | None
    grad_zero_fraction: float
    grad_subnormal_fraction: float
    grad_nonfinite_fraction: float
    #: the LossScaleOptimizer skipped the update (non-finite gradient)
    skipped: bool
    seconds: float
    #: fraction of all steps of this run done so far
    progress: float
    kind: str = "step"


@dataclass
class EpochRecord:
    """One epoch: training means over its steps, held-out loss and accuracy at its end."""

    policy: str
    epoch: int
    loss: float
    accuracy: float
    val_loss: float
    val_accuracy: float
    loss_scale: float | None
    grad_zero_fraction: float
    grad_subnormal_fraction: float
    grad_nonfinite_fraction: float
    skipped_steps: int
    seconds_per_step: float
    seconds: float
    progress: float
    kind: str = "epoch"


@dataclass
class GradientHistogram:
    """Histogram of log2|g| over all gradient elements at one step.

    ``counts[i]`` counts elements with ``edges[i] <= log2|g| < edges[i+1]``;
    zeros and non-finite values are counted apart.  The gradients are as the
    compute dtype holds them, i.e. multiplied by ``loss_scale`` when set.
    """

    policy: str
    step: int
    compute_dtype: str
    edges: list[float]
    counts: list[int]
    zero_count: int
    nonfinite_count: int
    total: int
    loss_scale: float | None
    kind: str = "histogram"


Record = StepRecord | EpochRecord | GradientHistogram


@dataclass
class TrainingResult:
    """Everything one run produced."""

    config: TrainingConfig
    policy: str
    compute_dtype: str
    variable_dtype: str
    loss_scaling: bool
    epochs: list[EpochRecord] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)
    histograms: list[GradientHistogram] = field(default_factory=list)
    seconds: float = 0.0
    cancelled: bool = False
    #: a Keras callback set ``model.stop_training``
    stopped_early: bool = False
    total_steps: int = 0

    @property
    def final(self) -> dict[str, float | None]:
        """Metrics of the last finished epoch (NaN when none finished)."""
        if not self.epochs:
            nan = float("nan")
            return {"loss": nan, "accuracy": nan, "val_loss": nan, "val_accuracy": nan, "loss_scale": None}
        last = self.epochs[-1]
        return {
            "loss": last.loss,
            "accuracy": last.accuracy,
            "val_loss": last.val_loss,
            "val_accuracy": last.val_accuracy,
            "loss_scale": last.loss_scale,
        }

    @property
    def skipped_steps(self) -> int:
        """Steps the LossScaleOptimizer skipped over the whole run."""
        return sum(e.skipped_steps for e in self.epochs)

    @property
    def grad_zero_fraction(self) -> float:
        """Mean fraction of zero gradient elements over all finished epochs."""
        if not self.epochs:
            return float("nan")
        return float(np.mean([e.grad_zero_fraction for e in self.epochs]))

    def history(self) -> Any:
        """Epoch records as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame([asdict(e) for e in self.epochs])

    def step_history(self) -> Any:
        """Step records as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame([asdict(s) for s in self.steps])

    def to_dict(self, steps: bool = False) -> dict[str, Any]:
        """JSON-ready summary: policy, per-epoch history, final metrics, seconds."""
        keys = (
            "epoch",
            "loss",
            "accuracy",
            "val_loss",
            "val_accuracy",
            "loss_scale",
            "grad_zero_fraction",
            "grad_subnormal_fraction",
            "grad_nonfinite_fraction",
            "skipped_steps",
            "seconds_per_step",
        )
        out: dict[str, Any] = {
            "policy": self.policy,
            "model": self.config.model,
            "scenario": self.config.scenario,
            "compute_dtype": self.compute_dtype,
            "variable_dtype": self.variable_dtype,
            "loss_scaling": self.loss_scaling,
            "history": [{k: _json_float(getattr(e, k)) for k in keys} for e in self.epochs],
            "final": {k: _json_float(v) for k, v in self.final.items()},
            "skipped_steps": self.skipped_steps,
            "seconds": self.seconds,
            "cancelled": self.cancelled,
            "stopped_early": self.stopped_early,
        }
        if steps:
            out["steps"] = [{k: _json_float(v) for k, v in asdict(s).items()} for s in self.steps]
        return out


def _json_float(value: Any) -> Any:
    if isinstance(value, float) and not np.isfinite(value):
        return None if np.isnan(value) else str(value)
    return value


#: the emulated fp8 run (:func:`explorer.training.fp8.train_fp8`: E4M3 forward, E5M2
#: gradients, per-tensor delayed scaling), offered next to Keras' policies
FP8_POLICY = "fp8_emulated"
#: every policy a comparison can train: Keras' six (:data:`POLICY_NAMES`), then the emulated fp8 run
ALL_POLICY_NAMES: tuple[str, ...] = (*POLICY_NAMES, FP8_POLICY)
