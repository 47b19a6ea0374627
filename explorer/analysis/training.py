"""Mixed-precision training under Keras' own dtype policies, with live records.

A small MLP or CNN (Keras 3 on TensorFlow) learns scikit-learn's bundled
handwritten digits (``sklearn.datasets.load_digits``: 1797 8x8 images, no
download) under one of six policies:

=============================  ====================================================
``float32``                     Keras' ``"float32"`` policy
``mixed_float16``               ``"mixed_float16"`` + ``keras.optimizers.LossScaleOptimizer``
``mixed_float16_no_scaling``    ``"mixed_float16"``, plain optimizer (no loss scaling)
``mixed_bfloat16``              ``"mixed_bfloat16"``
``float16``                     ``keras.config.set_floatx("float16")``: variables,
                                compute, optimizer state and loss all in float16
``bfloat16``                    ``set_floatx("bfloat16")``: the same in bfloat16
=============================  ====================================================

The training step is a ``tf.GradientTape`` inside a ``tf.function`` so that the
gradients can be inspected before the optimizer sees them.  The loss scale is
read from the ``LossScaleOptimizer``'s own ``dynamic_scale`` variable, the loss
is scaled with its ``scale_loss`` and the update (skip + halve on a non-finite
gradient, double after ``dynamic_growth_steps`` clean steps) is its ``apply``.

Gradient statistics are taken on the gradients the optimizer receives (scaled,
when loss scaling is on).  Under a mixed policy the gradient of a float32
variable is the float32 cast of a float16 (or bfloat16) gradient, so its zeros,
subnormals and non-finite values are those of the compute dtype.
(TensorFlow's CPU kernels flush float32 subnormals to zero, so float32 and
bfloat16 runs show hardly any subnormals; float16's are real.)

Each run calls ``keras.utils.set_random_seed(seed)`` (Python, NumPy and TensorFlow
global seeds), builds its model with seeded initialisers and shuffles with its own
NumPy generator, so a run is repeatable on the same machine.

Scenarios
---------
``default``
    Cross-entropy loss, Adam, the MLP 60-64-64-10 (ReLU) or a two-conv CNN.
``underflow``
    The same model but its loss multiplied by ``2**-18`` (``UNDERFLOW_LOSS_MULTIPLIER``),
    standing in for the tiny gradients of large models (Micikevicius et al. 2018,
    Fig. 3).  Adam is invariant to the scale of the gradient (its epsilon is set
    far below the gradients), so in float32 the run matches the default one; in
    float16 without loss scaling most gradient elements flush to zero and
    training stalls; dynamic loss scaling brings them back into range.  The
    recorded ``loss`` is always the plain cross-entropy (without the multiplier).

Records stream to ``callback`` as they happen (``StepRecord``, ``EpochRecord``,
``GradientHistogram``); a ``threading.Event`` passed as ``cancel`` stops the run
between steps (the result then has ``cancelled=True``).  ``start_training``
runs several policies in a background thread.

Keras' dtype policy is thread-local, but ``floatx`` is process-wide: runs hold a
module lock and restore both in ``finally``.

>>> from explorer.analysis.training import POLICY_NAMES
>>> POLICY_NAMES[:2]
('float32', 'mixed_float16')
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cache
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


# ---------------------------------------------------------------------------- data


@dataclass(frozen=True)
class DigitsData:
    """The digits split 80/20 (stratified, fixed seed), standardised on the training part."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray


@cache
def load_digits_data(model: str = "mlp") -> DigitsData:
    """scikit-learn's bundled digits, ready for ``model``.

    MLP: the 60 pixels that vary in the training split, standardised.  CNN:
    all 64 pixels standardised (constant ones are 0) as 8x8x1 images.
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; valid models: {', '.join(MODELS)}")
    x, y = load_digits(return_X_y=True)
    x_tr, x_va, y_tr, y_va = train_test_split(x, y, test_size=0.2, stratify=y, random_state=0)
    mean = x_tr.mean(axis=0)
    std = x_tr.std(axis=0)
    varies = std > 0
    std = np.where(varies, std, 1.0)
    x_tr = (x_tr - mean) / std
    x_va = (x_va - mean) / std
    if model == "mlp":
        x_tr, x_va = x_tr[:, varies], x_va[:, varies]
    else:
        x_tr, x_va = x_tr.reshape(-1, 8, 8, 1), x_va.reshape(-1, 8, 8, 1)
    return DigitsData(
        x_tr.astype(np.float32), y_tr.astype(np.int32), x_va.astype(np.float32), y_va.astype(np.int32)
    )


# ---------------------------------------------------------------------- keras state


_RUN_LOCK = threading.RLock()


@contextlib.contextmanager
def keras_policy(spec: PolicySpec) -> Iterator[None]:
    """Set Keras' floatx and dtype policy for ``spec``; restore both afterwards."""
    import keras
    from keras.src.backend.common import global_state

    old_floatx = keras.config.floatx()
    # the raw attribute: None means "follow floatx", which dtype_policy() would freeze
    old_policy = global_state.get_global_attribute("dtype_policy", None)
    try:
        keras.config.set_floatx(spec.floatx)
        keras.config.set_dtype_policy(spec.keras_policy)
        yield
    finally:
        keras.config.set_floatx(old_floatx)
        global_state.set_global_attribute("dtype_policy", old_policy)


def build_model(model: str, input_shape: tuple[int, ...], seed: int, scenario: str = "default") -> Any:
    """The Keras model for ``model`` under the current global policy (logits out)."""
    import keras

    init = keras.initializers.GlorotUniform
    layers = keras.layers
    if model == "mlp":
        net = [
            keras.Input(input_shape),
            layers.Dense(64, activation="relu", kernel_initializer=init(seed)),
            layers.Dense(64, activation="relu", kernel_initializer=init(seed + 1)),
            layers.Dense(10, kernel_initializer=init(seed + 2)),
        ]
    elif model == "cnn":
        net = [
            keras.Input(input_shape),
            layers.Conv2D(16, 3, padding="same", activation="relu", kernel_initializer=init(seed)),
            layers.Conv2D(
                32, 3, strides=2, padding="same", activation="relu", kernel_initializer=init(seed + 1)
            ),
            layers.Flatten(),
            layers.Dense(10, kernel_initializer=init(seed + 2)),
        ]
    else:
        raise ValueError(f"unknown model {model!r}; valid models: {', '.join(MODELS)}")
    return keras.Sequential(net, name=f"{model}_{scenario}")


def _scenario_settings(config: TrainingConfig) -> tuple[float, float, float]:
    """(loss multiplier, learning rate, Adam epsilon) of the scenario."""
    if config.scenario == "underflow":
        # epsilon far below the gradients keeps Adam invariant to the multiplier
        lr = 1e-3 if config.learning_rate is None else config.learning_rate
        return UNDERFLOW_LOSS_MULTIPLIER, lr, 1e-7 * UNDERFLOW_LOSS_MULTIPLIER
    lr = 1e-3 if config.learning_rate is None else config.learning_rate
    return 1.0, lr, 1e-7


def make_optimizer(spec: PolicySpec, config: TrainingConfig, learning_rate: float, epsilon: float) -> Any:
    """Keras Adam, wrapped in Keras' LossScaleOptimizer when the policy scales the loss."""
    import keras

    inner = keras.optimizers.Adam(learning_rate=learning_rate, epsilon=epsilon)
    if spec.loss_scaling:
        return keras.optimizers.LossScaleOptimizer(
            inner, initial_scale=config.initial_scale, dynamic_growth_steps=config.dynamic_growth_steps
        )
    return inner


class _RetracingFilter:
    """Drops TensorFlow's "triggered tf.function retracing" warning: every run builds a new
    model, so tracing the step function anew each run is intended."""

    def filter(self, record: Any) -> bool:
        return "triggered tf.function retracing" not in record.getMessage()


def _quiet_retracing_warning(tf: Any) -> None:
    logger = tf.get_logger()
    if not any(isinstance(f, _RetracingFilter) for f in logger.filters):
        logger.addFilter(_RetracingFilter())


def _tiny(dtype_name: str) -> float:
    import ml_dtypes

    return float(ml_dtypes.finfo(dtype_name).tiny)


HISTOGRAM_EDGES: tuple[float, ...] = tuple(float(e) for e in range(-64, 21))


def _histogram(
    policy: str, step: int, compute_dtype: str, grads: np.ndarray, loss_scale: float | None
) -> GradientHistogram:
    g = np.abs(grads.astype(np.float64))
    finite = np.isfinite(g)
    nonzero = finite & (g > 0)
    with np.errstate(divide="ignore"):
        logs = np.log2(g[nonzero])
    edges = np.asarray(HISTOGRAM_EDGES)
    counts, _ = np.histogram(np.clip(logs, edges[0], edges[-1] - 1e-9), bins=edges)
    return GradientHistogram(
        policy,
        step,
        compute_dtype,
        list(HISTOGRAM_EDGES),
        [int(c) for c in counts],
        int(np.sum(finite & (g == 0))),
        int(np.sum(~finite)),
        int(g.size),
        loss_scale,
    )


def _iterations(n_train: int, batch_size: int) -> int:
    return max(n_train // batch_size, 1)


def train(
    config: TrainingConfig | None = None,
    *,
    callback: Callable[[Record], None] | None = None,
    cancel: threading.Event | None = None,
    progress: Callable[[int, int], None] | None = None,
    keras_callbacks: Sequence[Any] | None = None,
    **overrides: Any,
) -> TrainingResult:
    """Train one model under one policy and return every record.

    ``config`` (or keyword overrides of its fields, e.g. ``policy="mixed_float16"``)
    says what to run.  ``callback(record)`` is called with each ``StepRecord``,
    ``GradientHistogram`` and ``EpochRecord`` as it happens; ``progress(done,
    total)`` after each step; when ``cancel`` is set the run stops before the
    next step and the result has ``cancelled=True``.

    ``keras_callbacks`` are Keras' own callbacks (``keras.callbacks.EarlyStopping``,
    ``TerminateOnNaN``...): they get the batch and epoch hooks with ``loss``,
    ``accuracy`` (and ``val_loss``, ``val_accuracy`` at epoch end); one that sets
    ``model.stop_training`` ends the run after the current step
    (``stopped_early=True``).

    >>> r = train(policy="float32", epochs=1, max_train_samples=128)  # doctest: +SKIP
    >>> r.final["loss"] < 2.5  # doctest: +SKIP
    True
    """
    if config is None:
        config = TrainingConfig(**overrides)
    elif overrides:
        config = replace(config, **overrides)
    if not isinstance(config, TrainingConfig):
        raise TypeError(f"config must be a TrainingConfig, got {type(config).__name__}")
    config = config.validated()
    spec = policy_spec(config.policy)
    data = load_digits_data(config.model)
    with _RUN_LOCK, keras_policy(spec):
        return _train_locked(config, spec, data, callback, cancel, progress, keras_callbacks)


def _train_locked(
    config: TrainingConfig,
    spec: PolicySpec,
    data: DigitsData,
    callback: Callable[[Record], None] | None,
    cancel: threading.Event | None,
    progress: Callable[[int, int], None] | None,
    keras_callbacks: Sequence[Any] | None = None,
) -> TrainingResult:
    from explorer.backends.tensorflow_backend import import_tensorflow

    tf = import_tensorflow()
    _quiet_retracing_warning(tf)
    import keras

    start = time.perf_counter()
    keras.utils.set_random_seed(config.seed)
    x_train, y_train = data.x_train, data.y_train
    if config.max_train_samples is not None:
        x_train, y_train = x_train[: config.max_train_samples], y_train[: config.max_train_samples]
    model = build_model(config.model, data.x_train.shape[1:], config.seed, config.scenario)
    multiplier, lr, epsilon = _scenario_settings(config)
    optimizer = make_optimizer(spec, config, lr, epsilon)
    optimizer.build(model.trainable_variables)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    compute_dtype = str(model.layers[0].compute_dtype)
    variable_dtype = str(model.layers[0].variable_dtype)
    input_dtype = tf.as_dtype(compute_dtype)
    tiny = _tiny(compute_dtype)
    scaling = spec.loss_scaling

    def forward(x: Any, y: Any, training: bool) -> tuple[Any, Any]:
        logits = model(tf.cast(x, input_dtype), training=training)
        loss = loss_fn(y, logits)
        correct = tf.cast(tf.equal(tf.argmax(logits, axis=-1, output_type=tf.int32), y), tf.float32)
        return loss, tf.reduce_mean(correct)

    def step_body(x: Any, y: Any) -> dict[str, Any]:
        # read now (before apply() may halve or double it): the scale this step uses
        scale = tf.identity(optimizer.dynamic_scale.value) if scaling else tf.constant(1.0)
        with tf.GradientTape() as tape:
            loss, acc = forward(x, y, True)
            objective = loss * tf.cast(multiplier, loss.dtype) if multiplier != 1.0 else loss
            if scaling:
                objective = optimizer.scale_loss(objective)
        grads = tape.gradient(objective, model.trainable_variables)
        flat = tf.concat([tf.reshape(tf.cast(g, tf.float32), [-1]) for g in grads], axis=0)
        finite = tf.math.is_finite(flat)
        absg = tf.abs(flat)
        out = {
            "loss": tf.cast(loss, tf.float32),
            "accuracy": acc,
            "scale": tf.cast(scale, tf.float32),
            "zero": tf.reduce_mean(tf.cast(tf.equal(flat, 0.0), tf.float32)),
            "subnormal": tf.reduce_mean(tf.cast((absg > 0) & (absg < tiny) & finite, tf.float32)),
            "nonfinite": tf.reduce_mean(tf.cast(~finite, tf.float32)),
            "all_finite": tf.reduce_all(finite),
            "grads": flat,
        }
        optimizer.apply(grads, model.trainable_variables)
        return out

    # one trace per run: the flat gradient always comes back (a few thousand floats)
    step_fn = tf.function(step_body)
    eval_fn = tf.function(lambda x, y: forward(x, y, False))

    n = len(x_train)
    per_epoch = _iterations(n, config.batch_size)
    assert config.epochs is not None
    total = per_epoch * config.epochs
    hist_steps = {s if s >= 0 else total + s for s in config.histogram_steps}
    result = TrainingResult(config, spec.name, compute_dtype, variable_dtype, scaling, total_steps=total)
    rng = np.random.default_rng(config.seed)
    x_val, y_val = tf.constant(data.x_val), tf.constant(data.y_val)
    step = 0

    def emit(record: Record) -> None:
        if callback is not None:
            callback(record)

    hooks = keras.callbacks.CallbackList(
        list(keras_callbacks or []),
        add_history=False,
        add_progbar=False,
        model=model,
        epochs=config.epochs,
        steps=per_epoch,
        verbose=0,
    )
    model.stop_training = False
    hooks.on_train_begin()
    for epoch in range(config.epochs):
        order = rng.permutation(n)
        epoch_steps: list[StepRecord] = []
        hooks.on_epoch_begin(epoch)
        for b in range(per_epoch):
            if cancel is not None and cancel.is_set():
                result.cancelled = True
                break
            if model.stop_training:
                result.stopped_early = True
                break
            hooks.on_train_batch_begin(b)
            idx = order[b * config.batch_size : (b + 1) * config.batch_size]
            t0 = time.perf_counter()
            want = step in hist_steps
            out = step_fn(x_train[idx], y_train[idx])
            grads = out.pop("grads")
            vals = {k: v.numpy() for k, v in out.items()}
            seconds = time.perf_counter() - t0
            scale = float(vals["scale"]) if scaling else None
            rec = StepRecord(
                spec.name,
                step,
                epoch,
                float(vals["loss"]),
                float(vals["accuracy"]),
                scale,
                float(vals["zero"]),
                float(vals["subnormal"]),
                float(vals["nonfinite"]),
                bool(scaling and not vals["all_finite"]),
                seconds,
                (step + 1) / total,
            )
            epoch_steps.append(rec)
            if config.record_steps:
                result.steps.append(rec)
                emit(rec)
            if want:
                hist = _histogram(spec.name, step, compute_dtype, grads.numpy(), scale)
                result.histograms.append(hist)
                emit(hist)
            hooks.on_train_batch_end(b, {"loss": rec.loss, "accuracy": rec.accuracy})
            step += 1
            if progress is not None:
                progress(step, total)
        if not epoch_steps or (result.cancelled and len(epoch_steps) < per_epoch):
            break
        val_loss, val_acc = eval_fn(x_val, y_val)
        ep = EpochRecord(
            spec.name,
            epoch,
            loss=float(np.mean([s.loss for s in epoch_steps])),
            accuracy=float(np.mean([s.accuracy for s in epoch_steps])),
            val_loss=float(val_loss),
            val_accuracy=float(val_acc),
            loss_scale=float(optimizer.dynamic_scale.numpy()) if scaling else None,
            grad_zero_fraction=float(np.mean([s.grad_zero_fraction for s in epoch_steps])),
            grad_subnormal_fraction=float(np.mean([s.grad_subnormal_fraction for s in epoch_steps])),
            grad_nonfinite_fraction=float(np.mean([s.grad_nonfinite_fraction for s in epoch_steps])),
            skipped_steps=sum(s.skipped for s in epoch_steps),
            seconds_per_step=float(np.mean([s.seconds for s in epoch_steps])),
            seconds=time.perf_counter() - start,
            progress=step / total,
        )
        result.epochs.append(ep)
        emit(ep)
        hooks.on_epoch_end(
            epoch,
            {
                "loss": ep.loss,
                "accuracy": ep.accuracy,
                "val_loss": ep.val_loss,
                "val_accuracy": ep.val_accuracy,
            },
        )
        if result.cancelled:
            break
        if model.stop_training:
            result.stopped_early = True
            break
    hooks.on_train_end()
    result.seconds = time.perf_counter() - start
    return result


def run_policies(
    policies: Sequence[str] = POLICY_NAMES,
    *,
    callback: Callable[[Record], None] | None = None,
    cancel: threading.Event | None = None,
    progress: Callable[[int, int], None] | None = None,
    keras_callbacks: Sequence[Any] | None = None,
    **config_fields: Any,
) -> list[TrainingResult]:
    """Train the same model under each policy in turn (stops early when cancelled).

    ``progress(done, total)`` counts steps over all policies.
    """
    if isinstance(policies, str):
        policies = [policies]
    configs = [TrainingConfig(policy=p, **config_fields).validated() for p in policies]
    if not configs:
        raise ValueError(f"no policies given; valid policies: {', '.join(POLICY_NAMES)}")
    results: list[TrainingResult] = []
    grand_total = 0
    for c in configs:
        n = len(load_digits_data(c.model).x_train)
        n = n if c.max_train_samples is None else min(n, c.max_train_samples)
        assert c.epochs is not None
        grand_total += _iterations(n, c.batch_size) * c.epochs
    done = 0
    for c in configs:
        if cancel is not None and cancel.is_set():
            break

        def local_progress(step: int, total: int, base: int = done) -> None:
            if progress is not None:
                progress(base + step, grand_total)

        r = train(
            c, callback=callback, cancel=cancel, progress=local_progress, keras_callbacks=keras_callbacks
        )
        results.append(r)
        done += r.total_steps
        if r.cancelled:
            break
    return results


class TrainingJob:
    """Policies trained one after another in a background thread.

    ``records`` fills up live; ``progress`` is (done, total) steps; ``cancel()``
    stops between steps; ``wait()`` joins and returns the results (re-raising an
    error from the thread).
    """

    def __init__(
        self,
        policies: Sequence[str],
        callback: Callable[[Record], None] | None,
        config_fields: dict[str, Any],
    ) -> None:
        # validate in the caller's thread so bad input raises here
        for p in [policies] if isinstance(policies, str) else policies:
            TrainingConfig(policy=p, **config_fields).validated()
        self.cancel_event = threading.Event()
        self.records: list[Record] = []
        self.results: list[TrainingResult] = []
        self.progress: tuple[int, int] = (0, 0)
        self.error: BaseException | None = None
        self._callback = callback
        self._thread = threading.Thread(
            target=self._run, args=(policies, config_fields), name="px-training", daemon=True
        )
        self._thread.start()

    def _record(self, record: Record) -> None:
        self.records.append(record)
        if self._callback is not None:
            self._callback(record)

    def _progress(self, done: int, total: int) -> None:
        self.progress = (done, total)

    def _run(self, policies: Sequence[str], config_fields: dict[str, Any]) -> None:
        try:
            self.results = run_policies(
                policies,
                callback=self._record,
                cancel=self.cancel_event,
                progress=self._progress,
                **config_fields,
            )
        except BaseException as exc:  # reported through wait()
            self.error = exc

    @property
    def done(self) -> bool:
        """True once the thread has finished (normally, cancelled or failed)."""
        return not self._thread.is_alive()

    @property
    def cancelled(self) -> bool:
        """True when cancel() was called."""
        return self.cancel_event.is_set()

    def cancel(self) -> None:
        """Ask the run to stop before its next step."""
        self.cancel_event.set()

    def wait(self, timeout: float | None = None) -> list[TrainingResult]:
        """Join the thread (up to ``timeout`` s) and return the results so far."""
        self._thread.join(timeout)
        if self.error is not None:
            raise self.error
        return self.results


def start_training(
    policies: Sequence[str] = POLICY_NAMES,
    callback: Callable[[Record], None] | None = None,
    **config_fields: Any,
) -> TrainingJob:
    """Start ``run_policies`` in a background thread and return its ``TrainingJob`` at once.

    ``callback`` runs in the training thread: an app should only append to its
    state there (or schedule a redraw), not block.
    """
    return TrainingJob(policies, callback, config_fields)


#: the emulated fp8 run (:func:`explorer.analysis.fp8_training.train_fp8`: E4M3 forward, E5M2
#: gradients, per-tensor delayed scaling), offered next to Keras' policies
FP8_POLICY = "fp8_emulated"
#: every policy a comparison can train: Keras' six (:data:`POLICY_NAMES`), then the emulated fp8 run
ALL_POLICY_NAMES: tuple[str, ...] = (*POLICY_NAMES, FP8_POLICY)
