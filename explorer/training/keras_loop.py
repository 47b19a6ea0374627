"""The Keras side of training: Keras' global dtype state (:func:`keras_policy`), the model
(:func:`build_model`), the optimizer (:func:`make_optimizer`), and the training loop
(:func:`train` for one policy, :func:`run_policies` for several in turn).

Keras and TensorFlow are imported inside the functions, never at import time.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from explorer.training.config import (
    MODELS,
    POLICY_NAMES,
    UNDERFLOW_LOSS_MULTIPLIER,
    EpochRecord,
    GradientHistogram,
    PolicySpec,
    Record,
    StepRecord,
    TrainingConfig,
    TrainingResult,
    policy_spec,
)
from explorer.training.data import DigitsData, load_digits_data

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
