"""Tracing and running a Keras 3 model (TensorFlow backend) under each Keras dtype policy.

The op list is TensorFlow's own: the graph of the concrete function that calls the model
(``tf.function(...).get_concrete_function``), one entry per node in creation order, the Keras
layer path read from the node's name scopes.  A policy is applied by cloning the model with
each layer's ``dtype`` set to it (layers that carry a policy other than ``float32`` keep
theirs) and copying the weights, so the user's model object is never changed.

Each run is one ``tf.function`` that calls the model, takes the loss (mean of the squared
outputs, in float32), asks ``tf.gradients`` for the gradient of every floating node output and
every trainable variable, and returns them all: the real forward and backward pass in that
policy's dtypes, and the values the numerics are read from.  A kernel TensorFlow lacks makes
the call fail; the node its error names is the failing op.

TensorFlow and Keras are imported inside the functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from explorer.analysis.model_numerics import tensor_stats, zero_fraction
from explorer.analysis.model_trace import (
    PolicyRun,
    TracedOp,
    dtype_name,
    failing_node,
    forward_node,
    tf_layer_path,
)

#: the Keras policies, named as Keras names them
POLICIES: tuple[str, ...] = ("float32", "mixed_float16", "mixed_bfloat16", "float16", "bfloat16")
#: the loss scale of the scaled run (Keras' LossScaleOptimizer starts at 2**15)
LOSS_SCALE = 2.0**15
#: the name of the loss-scale argument of the instrumented step (left out of the op list)
_SCALE = "px_loss_scale"
#: type attributes that carry an op's data dtype, in the order they are read
_DTYPE_ATTRS = ("T", "dtype", "DstT", "Tout")


def is_keras_model(model: Any) -> bool:
    """True for a Keras 3 layer or model (no import: the class's module is read)."""
    return any(c.__module__.startswith("keras") for c in type(model).__mro__)


def _keras() -> Any:
    from explorer.backends.tensorflow_backend import import_tensorflow

    import_tensorflow()
    import keras

    return keras


#: what mixed precision does that this module cannot observe here, in words (grappler's rewrites
#: are read by :mod:`explorer.runtime.model_grappler`, which says what it could not read)
NOT_OBSERVED: tuple[str, ...] = ()


def check_policy(policy: str) -> None:
    """ValueError unless ``policy`` is a Keras policy name (:data:`POLICIES`)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown Keras policy {policy!r}; valid: {', '.join(POLICIES)}")


def framework_version() -> str:
    """The TensorFlow release the runs use."""
    import tensorflow as tf

    return str(tf.__version__)


def layer_dtypes(model: Any) -> dict[str, tuple[str, str]]:
    """Every nested layer's name -> (compute dtype, variable dtype)."""
    out: dict[str, tuple[str, str]] = {}
    for layer in model._flatten_layers(include_self=False, recursive=True):
        out[layer.name] = (str(layer.compute_dtype), str(layer.variable_dtype))
    return out


def layer_weights(model: Any) -> dict[str, list[np.ndarray]]:
    """Each innermost layer that holds weights (its name, as the op list names it) -> its
    weights, float32 arrays in the layer's order."""
    out: dict[str, list[np.ndarray]] = {}
    for layer in model._flatten_layers(include_self=False, recursive=True):
        if list(layer._flatten_layers(include_self=False, recursive=False)):
            continue  # a container: its inner layers are listed themselves
        own = [np.asarray(w.numpy(), dtype=np.float32) for w in layer.weights]
        if own:
            out[layer.name] = own
    return out


def policy_model(model: Any, policy: str, keep_float32: Sequence[str] = ()) -> Any:
    """A clone of ``model`` whose layers compute under ``policy`` (those named in
    ``keep_float32`` under ``float32``), with ``model``'s weights.  ``float32`` without
    ``keep_float32`` returns ``model`` itself."""
    if policy == "float32" and not keep_float32:
        return model
    keras = _keras()
    if policy not in POLICIES:
        raise ValueError(f"unknown Keras policy {policy!r}; valid: {', '.join(POLICIES)}")

    def clone(layer: Any) -> Any:
        config = layer.get_config()
        current = layer.dtype_policy.name
        if layer.name in keep_float32:
            config["dtype"] = "float32"
        elif current == "float32" and not isinstance(layer, keras.layers.InputLayer):
            config["dtype"] = policy
        return layer.__class__.from_config(config)

    try:
        copy = keras.models.clone_model(model, clone_function=clone)
    except ValueError as exc:  # subclassed models: Keras cannot clone them
        raise ValueError(
            f"policy {policy!r} cannot be applied to this model: Keras cannot clone it ({exc}); "
            "build it under keras.mixed_precision.set_dtype_policy and check it with policies=['float32']"
        ) from None
    copy.set_weights(model.get_weights())
    return copy


def _op_dtype(op: Any) -> str | None:
    for attr in _DTYPE_ATTRS:
        try:
            value = op.get_attr(attr)
        except (ValueError, TypeError):
            continue
        if hasattr(value, "name"):
            return dtype_name(value)
    outputs = [t.dtype for t in op.outputs]
    floating = [d for d in outputs if d.is_floating]
    chosen = floating or outputs
    return dtype_name(chosen[0]) if chosen else None


def _traced_ops(operations: Sequence[Any], model: Any) -> list[TracedOp]:
    dtypes = layer_dtypes(model)
    ops = []
    for op in operations:
        if op.name == _SCALE:  # the loss scale: an argument of the step, not of the model
            continue
        layer = tf_layer_path(op.name, dtypes)
        compute, variable = dtypes.get(layer.rsplit("/", 1)[-1], ("", ""))
        ops.append(
            TracedOp(
                name=op.name,
                layer=layer,
                raw_op=op.type,
                dtype=_op_dtype(op),
                in_dtypes=tuple(dtype_name(t.dtype) for t in op.inputs),
                out_dtypes=tuple(dtype_name(t.dtype) for t in op.outputs),
                layer_compute_dtype=compute,
                layer_variable_dtype=variable,
            )
        )
    return ops


def _flat(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [t for v in value.values() for t in _flat(v)]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _flat(v)]
    return [value]


def _step_function(model: Any) -> tuple[Any, dict[str, Any]]:
    """The instrumented ``tf.function`` and what its trace records (the graph's ops, which
    outputs have a gradient)."""
    import tensorflow as tf

    traced: dict[str, Any] = {}

    @tf.function(reduce_retracing=True)
    def step(inputs: Any, px_loss_scale: Any) -> Any:
        outputs = model(*inputs, training=False)
        operations = list(tf.compat.v1.get_default_graph().get_operations())
        loss = tf.add_n([tf.reduce_mean(tf.square(tf.cast(t, tf.float32))) for t in _flat(outputs)])
        tensors = [op.outputs[0] for op in operations if op.outputs and op.outputs[0].dtype.is_floating]
        grads = tf.gradients(loss * px_loss_scale, tensors, unconnected_gradients="none")
        traced["operations"] = operations
        traced["names"] = [t.op.name for t in tensors]
        traced["has_grad"] = [g is not None for g in grads]
        # the parameters' gradients: those of the variables' reads (Keras reads each once per call)
        traced["is_weight"] = [
            t.op.type == "ReadVariableOp" and g is not None for t, g in zip(tensors, grads, strict=True)
        ]
        empty = tf.zeros([0])
        return {"values": tensors, "grads": [g if g is not None else empty for g in grads]}

    return step, traced


def trace(model: Any, inputs: Sequence[np.ndarray]) -> list[TracedOp]:
    """The op instances of the concrete function's graph of ``model(*inputs)``, in creation order."""
    import tensorflow as tf

    specs = [tf.TensorSpec(x.shape, tf.as_dtype(x.dtype)) for x in inputs]
    concrete = tf.function(lambda *xs: model(*xs, training=False)).get_concrete_function(*specs)
    return _traced_ops(concrete.graph.get_operations(), model)


def run_policy(
    model: Any,
    inputs: Sequence[np.ndarray],
    policy: str,
    formats: Sequence[str],
    keep_float32: Sequence[str] = (),
) -> PolicyRun:
    """``model`` under ``policy``: its trace, one forward and backward pass (without and with
    loss scaling; per-op statistics from the unscaled one) and what failed, if anything."""
    import tensorflow as tf

    try:
        clone = policy_model(model, policy, keep_float32)
    except (TypeError, ValueError) as exc:  # Keras builds the clone: an op may refuse the dtype here
        return PolicyRun(policy, (), False, str(exc).strip(), None, "forward")
    step, traced = _step_function(clone)
    tensors = tuple(tf.constant(x) for x in inputs)
    try:
        result = step(tensors, tf.constant(1.0))
    except (tf.errors.OpError, TypeError, ValueError) as exc:
        ops = _traced_ops(traced["operations"], clone) if "operations" in traced else trace(clone, inputs)
        text = str(getattr(exc, "message", None) or exc)
        node = failing_node(text)
        forward = forward_node(node) if node else None
        names = {op.name for op in ops}
        failing = forward if forward in names else node if node in names else None
        stage = "backward" if forward else "forward" if failing else ""
        return PolicyRun(policy, tuple(ops), False, text.strip(), failing, stage)
    ops = _traced_ops(traced["operations"], clone)
    stats = {}
    first_nonfinite = None
    grads = iter(result["grads"])
    for name, value, has in zip(traced["names"], result["values"], traced["has_grad"], strict=False):
        gradient = next(grads)
        array = np.asarray(value.numpy(), dtype=np.float64)
        stats[name] = tensor_stats(array, gradient.numpy() if has else None, formats)
        if first_nonfinite is None and not np.all(np.isfinite(array)):
            first_nonfinite = name
    weights = traced["is_weight"]
    unscaled = zero_fraction(g.numpy() for g, w in zip(result["grads"], weights, strict=True) if w)
    scale = LOSS_SCALE
    scaled = None
    while scale >= 1.0:  # as a dynamic loss scale does: halve while the gradients overflow
        again = step(tensors, tf.constant(scale))["grads"]
        grads_scaled = [g.numpy() for g, w in zip(again, weights, strict=True) if w]
        if all(np.all(np.isfinite(np.asarray(g, dtype=np.float64))) for g in grads_scaled):
            scaled = zero_fraction(grads_scaled)
            break
        scale /= 2.0**4
    return PolicyRun(
        policy,
        tuple(ops),
        True,
        first_nonfinite=first_nonfinite,
        zero_grad=unscaled,
        zero_grad_scaled=scaled,
        loss_scale=scale if scaled is not None else math.nan,
        stats=stats,
    )


def training_step(model: Any, inputs: Sequence[np.ndarray], policy: str) -> Any:
    """A callable running one plain training step of ``model`` under ``policy`` (a
    ``tf.function``: forward pass, the loss in float32, ``GradientTape`` gradients of the
    trainable variables and floating inputs; no optimizer update), returning when it is done."""
    import tensorflow as tf

    clone = policy_model(model, policy)
    tensors = tuple(tf.constant(x) for x in inputs)

    @tf.function
    def step(xs: Any) -> Any:
        with tf.GradientTape() as tape:
            tape.watch([t for t in xs if t.dtype.is_floating])
            outputs = clone(*xs, training=False)
            loss = tf.add_n([tf.reduce_mean(tf.square(tf.cast(t, tf.float32))) for t in _flat(outputs)])
        return tape.gradient(loss, [*clone.trainable_variables, *[t for t in xs if t.dtype.is_floating]])

    return lambda: step(tensors)


def example_inputs_for(model: Any, seed: int = 0, batch: int = 4) -> list[np.ndarray]:
    """A seeded standard-normal float32 sample of the model's input shapes (unknown
    dimensions: ``batch``)."""
    rng = np.random.default_rng(seed)
    shapes = [tuple(batch if d is None else d for d in t.shape) for t in _flat(model.inputs)]
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def load_safely(path: str) -> Any:
    """A ``.keras`` file loaded with Keras' own loader under ``safe_mode=True``: a file with a
    Lambda layer or custom objects is refused (ValueError with Keras' reason); nothing in it is
    run.  The file is only read."""
    from explorer.runtime.keras_archive import check_keras_archive  # bounded, before Keras builds

    check_keras_archive(path)
    keras = _keras()
    try:
        return keras.saving.load_model(path, safe_mode=True, compile=False)
    except (TypeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"refused {path}: {first}") from None


__all__ = [
    "LOSS_SCALE",
    "NOT_OBSERVED",
    "POLICIES",
    "check_policy",
    "example_inputs_for",
    "framework_version",
    "is_keras_model",
    "layer_dtypes",
    "load_safely",
    "policy_model",
    "run_policy",
    "trace",
    "training_step",
]
