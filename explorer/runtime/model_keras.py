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

import functools
import hashlib
import math
import weakref
from collections.abc import Sequence
from dataclasses import replace
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

#: the Keras policies, named as Keras names them; ``as_built`` is the model with its own dtypes
POLICIES: tuple[str, ...] = (
    "as_built",
    "float32",
    "mixed_float16",
    "mixed_bfloat16",
    "float16",
    "bfloat16",
)
#: the dtype policies a policy run may replace (a quantized or integer policy is always kept)
_FLOAT_POLICIES = frozenset({"float32", "float16", "bfloat16", "mixed_float16", "mixed_bfloat16"})
#: the loss scale of the scaled run (Keras' LossScaleOptimizer starts at 2**15)
LOSS_SCALE = 2.0**15
#: type attributes that carry an op's data dtype, in the order they are read
_DTYPE_ATTRS = ("T", "dtype", "DstT", "Tout")
#: the axis each weight's blocks run along (:func:`layer_weights` puts it last), in words
BLOCK_AXIS_NOTE = (
    "weights are blocked along the axis a matrix multiplication contracts: a Dense kernel (in, out) "
    "along in (axis 0); a convolution kernel (h, w, in, out) over h x w x in; a depthwise kernel "
    "(h, w, in, m) over h x w; 1-D weights along their only axis"
)


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


def _leaf_layers(model: Any) -> list[Any]:
    keras = _keras()
    return [
        layer
        for layer in model._flatten_layers(include_self=False, recursive=True)
        if not isinstance(layer, keras.layers.InputLayer)
        and not list(layer._flatten_layers(include_self=False, recursive=False))
    ]


def layer_dtypes(model: Any) -> dict[str, tuple[str, str]]:
    """Every nested layer's name -> (compute dtype, variable dtype)."""
    out: dict[str, tuple[str, str]] = {}
    for layer in model._flatten_layers(include_self=False, recursive=True):
        out[layer.name] = (str(layer.compute_dtype), str(layer.variable_dtype))
    return out


def built_policy(model: Any) -> str:
    """The dtype policy ``model`` was built under: the model's own (Keras gives every layer and
    model made without a ``dtype`` the global policy of that moment), else the one most of its
    layers carry (``float32`` on a tie).  A model built under a global ``mixed_bfloat16`` keeps
    it after the global policy is reset."""
    own = getattr(getattr(model, "dtype_policy", None), "name", None)
    if own in _FLOAT_POLICIES:
        return str(own)
    counts: dict[str, int] = {}
    for layer in _leaf_layers(model):
        name = layer.dtype_policy.name
        counts[name] = counts.get(name, 0) + 1
    if not counts:
        return "float32"
    top = max(counts.values())
    tied = [name for name, n in counts.items() if n == top]
    return "float32" if "float32" in tied else tied[0]


def user_dtypes(model: Any) -> dict[str, str]:
    """The layers the user built in a dtype policy of their own (another than
    :func:`built_policy`): layer name -> its policy name."""
    built = built_policy(model)
    return {
        layer.name: layer.dtype_policy.name
        for layer in _leaf_layers(model)
        if layer.dtype_policy.name != built
    }


def kept_as_built(model: Any, policy: str) -> dict[str, str]:
    """The layers ``policy`` leaves in the dtype the user built them in (a named mixed or cast
    policy keeps every per-layer choice; ``float32`` and ``as_built`` keep none: the first
    runs everything in float32, the second is the model as it is)."""
    if policy in ("float32", "as_built"):
        return {}
    return {name: p for name, p in user_dtypes(model).items() if p in _FLOAT_POLICIES}


def loss_scaling(model: Any, policy: str) -> bool:
    """True when Keras trains ``model`` under ``policy`` with a loss scale already: ``compile``
    wraps the optimizer in a LossScaleOptimizer when the model's policy is ``mixed_float16``."""
    if policy == "as_built":
        return bool(model.dtype_policy.name == "mixed_float16")
    return policy == "mixed_float16"


@functools.lru_cache(maxsize=1)
def flush_to_zero_formats() -> tuple[str, ...]:
    """The formats whose arithmetic TensorFlow flushes to zero below the smallest normal on this
    machine's CPU, found by a direct run: four times the smallest subnormal, cast to the format
    (a cast keeps it), multiplied by one (TensorFlow's bfloat16 kernels give 0 here)."""
    import ml_dtypes
    import tensorflow as tf

    out = []
    for name, np_type in (("float16", np.float16), ("bfloat16", ml_dtypes.bfloat16)):
        tiny = float(ml_dtypes.finfo(np_type).smallest_subnormal) * 4
        value = tf.cast(tf.constant(tiny, tf.float32), tf.as_dtype(name))
        product = value * tf.constant(1.0, tf.as_dtype(name))
        if float(value) != 0.0 and float(product) == 0.0:
            out.append(name)
    return tuple(out)


def _contraction_last(array: np.ndarray, depthwise: bool) -> np.ndarray:
    """``array`` with the axis a matrix multiplication contracts made last (blocks run along
    the last axis): Dense (in, out) -> (out, in); conv (h, w, in, out) -> (out, h*w*in);
    depthwise (h, w, in, m) -> (in*m, h*w)."""
    if array.ndim < 2:
        return array
    if depthwise and array.ndim == 4:
        h, w, c, m = array.shape
        return array.reshape(h * w, c * m).T
    return array.reshape(-1, array.shape[-1]).T


def layer_weights(model: Any) -> dict[str, list[np.ndarray]]:
    """Each innermost layer that holds weights (its name, as the op list names it) -> its
    weights, float32 arrays in the layer's order, each with its contraction axis last
    (:data:`BLOCK_AXIS_NOTE`)."""
    out: dict[str, list[np.ndarray]] = {}
    for layer in _leaf_layers(model):
        depthwise = "Depthwise" in type(layer).__name__
        own = [_contraction_last(np.asarray(w.numpy(), dtype=np.float32), depthwise) for w in layer.weights]
        if own:
            out[layer.name] = own
    return out


def is_model_itself(model: Any, policy: str, keep_float32: Sequence[str] = ()) -> bool:
    """True when ``policy`` runs ``model`` as it is (``as_built``; ``float32`` on a model
    whose every layer computes in float32)."""
    if keep_float32:
        return False
    if policy == "as_built":
        return True
    return policy == "float32" and all(layer.dtype_policy.name == "float32" for layer in _leaf_layers(model))


def policy_model(model: Any, policy: str, keep_float32: Sequence[str] = ()) -> Any:
    """A clone of ``model`` whose layers compute under ``policy``, with ``model``'s weights.

    ``as_built``: ``model`` itself (with ``keep_float32``, a clone with those layers in
    float32).  ``float32``: every layer in float32 (``model`` itself when it is so already).
    A named policy: the layers the user left to the global policy get ``policy``; a layer
    built in a dtype of its own keeps it (:func:`kept_as_built`).  Layers named in
    ``keep_float32`` compute in float32.  ``model`` is never changed."""
    check_policy(policy)
    built = built_policy(model)
    if is_model_itself(model, policy, keep_float32):
        return model
    keras = _keras()

    def clone(layer: Any) -> Any:
        config = layer.get_config()
        current = layer.dtype_policy.name
        if isinstance(layer, keras.layers.InputLayer) or current not in _FLOAT_POLICIES:
            pass
        elif layer.name in keep_float32:
            config["dtype"] = "float32"
        elif policy == "float32" or (policy != "as_built" and current == built):
            config["dtype"] = policy
        return layer.__class__.from_config(config)

    try:
        copy = keras.models.clone_model(model, clone_function=clone)
    except ValueError as exc:  # subclassed models: Keras cannot clone them
        raise ValueError(
            f"policy {policy!r} cannot be applied to this model: Keras cannot clone it ({exc}); "
            "build it under keras.mixed_precision.set_dtype_policy and check it with policies=['as_built']"
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


def _loss(outputs: Any) -> Any:
    import tensorflow as tf

    return tf.add_n([tf.reduce_mean(tf.square(tf.cast(t, tf.float32))) for t in _flat(outputs)])


def _step_function(model: Any) -> tuple[Any, dict[str, Any]]:
    """The instrumented ``tf.function`` and what its trace records (the graph's ops, which
    outputs have a gradient).  One compiled call gives every floating op output and its
    gradient, and the gradients of the trainable variables (``model.trainable_variables``
    only) of the loss and of the loss times :data:`LOSS_SCALE`."""
    import tensorflow as tf

    traced: dict[str, Any] = {}

    @tf.function(reduce_retracing=True, autograph=False)
    def step(inputs: Any) -> Any:
        outputs = model(*inputs, training=False)
        operations = list(tf.compat.v1.get_default_graph().get_operations())
        loss = _loss(outputs)
        tensors = [op.outputs[0] for op in operations if op.outputs and op.outputs[0].dtype.is_floating]
        variables = list(model.trainable_variables)
        grads = tf.gradients(loss, tensors + variables, unconnected_gradients="none")
        scaled = tf.gradients(loss * LOSS_SCALE, variables, unconnected_gradients="none") if variables else []
        weights = grads[len(tensors) :]
        grads = grads[: len(tensors)]
        traced["operations"] = operations
        traced["names"] = [t.op.name for t in tensors]
        traced["has_grad"] = [g is not None for g in grads]
        traced["has_weight_grad"] = [g is not None for g in weights]
        empty = tf.zeros([0])
        return {
            "values": tensors,
            "grads": [g if g is not None else empty for g in grads],
            "weights": [tf.convert_to_tensor(g) if g is not None else empty for g in weights],
            "scaled": [tf.convert_to_tensor(g) if g is not None else empty for g in scaled],
        }

    return step, traced


def _scaled_step(model: Any) -> Any:
    """A ``tf.function`` giving the trainable variables' gradients of the loss times a scale."""
    import tensorflow as tf

    @tf.function(reduce_retracing=True, autograph=False)
    def scaled(inputs: Any, scale: Any) -> Any:
        loss = _loss(model(*inputs, training=False)) * scale
        grads = tf.gradients(loss, list(model.trainable_variables), unconnected_gradients="none")
        return [tf.convert_to_tensor(g) if g is not None else tf.zeros([0]) for g in grads]

    return scaled


def zero_gradient_fraction(
    model: Any,
    inputs: Sequence[np.ndarray],
    policy: str,
    keep_float32: Sequence[str] = (),
    scale: float = 1.0,
) -> float | None:
    """The zero fraction of the trainable variables' gradients of the check's loss times
    ``scale`` under ``policy`` (those layers in float32): one forward and backward pass,
    nothing else recorded (made once per process for the same model, weights and inputs)."""
    import tensorflow as tf

    weights = _fingerprint(model.get_weights())
    key = ("zero_grad", policy, tuple(sorted(keep_float32)), weights, _fingerprint(inputs), scale)
    done = _RUNS.setdefault(model, {}) if _weakly_referable(model) else {}
    if key not in done:
        built = _built(model, policy, keep_float32, weights)
        if built.scaled is None:
            built.scaled = _scaled_step(built.clone)
        grads = built.scaled(tuple(tf.constant(x) for x in inputs), tf.constant(scale))
        done[key] = zero_fraction(g.numpy() for g in grads if g.shape.num_elements() != 0)
    return done[key]


def trace(model: Any, inputs: Sequence[np.ndarray]) -> list[TracedOp]:
    """The op instances of the concrete function's graph of ``model(*inputs)``, in creation order."""
    import tensorflow as tf

    specs = [tf.TensorSpec(x.shape, tf.as_dtype(x.dtype)) for x in inputs]
    concrete = tf.function(lambda *xs: model(*xs, training=False)).get_concrete_function(*specs)
    return _traced_ops(concrete.graph.get_operations(), model)


def _fingerprint(arrays: Sequence[np.ndarray]) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for a in arrays:
        a = np.ascontiguousarray(a)
        digest.update(f"{a.dtype}{a.shape}".encode())
        digest.update(a.reshape(-1).view(np.uint8).data if a.size else b"")
    return digest.hexdigest()


class _Built:
    """One policy's clone of a model and its compiled functions, kept between calls."""

    def __init__(self, clone: Any, weights: str) -> None:
        self.clone = clone
        self.weights = weights
        self.step, self.traced = _step_function(clone)
        self.scaled: Any = None


#: model -> (policy, layers kept in float32) -> its clone and compiled step; model -> runs
#: already made, keyed by weights, inputs, formats (weak: gone with the model)
_BUILT: weakref.WeakKeyDictionary[Any, dict[tuple[str, tuple[str, ...]], _Built]] = (
    weakref.WeakKeyDictionary()
)
_RUNS: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], Any]] = weakref.WeakKeyDictionary()


def _built(model: Any, policy: str, keep_float32: Sequence[str], weights: str) -> _Built:
    """The clone of ``model`` under ``policy`` and its step, built once per process and model
    (its weights copied again when the model's changed)."""
    key = ("", ()) if is_model_itself(model, policy, keep_float32) else (policy, tuple(sorted(keep_float32)))
    try:
        cache = _BUILT.setdefault(model, {})
    except TypeError:  # not weakly referable: built every time
        cache = {}
    built = cache.get(key)
    if built is None:
        built = cache[key] = _Built(policy_model(model, policy, keep_float32), weights)
    elif built.weights != weights:
        if built.clone is not model:
            built.clone.set_weights(model.get_weights())
        built.weights = weights
    return built


def float32_model(model: Any) -> Any:
    """``model`` with every layer in float32 (the clone the float32 run uses, built once)."""
    return _built(model, "float32", (), _fingerprint(model.get_weights())).clone


def run_policy(
    model: Any,
    inputs: Sequence[np.ndarray],
    policy: str,
    formats: Sequence[str],
    keep_float32: Sequence[str] = (),
) -> PolicyRun:
    """``model`` under ``policy``: its trace, one forward and backward pass (per-op statistics;
    the trainable variables' gradients without and, where float16 or bfloat16 computes, with loss
    scaling)
    and what failed, if anything.  A run already made in this process on the same model,
    weights, inputs and formats is returned again."""
    weights = _fingerprint(model.get_weights())
    itself = is_model_itself(model, policy, keep_float32)
    key = (
        "" if itself else policy,
        tuple(sorted(keep_float32)),
        weights,
        _fingerprint(inputs),
        tuple(formats),
    )
    runs = _RUNS.setdefault(model, {}) if _weakly_referable(model) else {}
    if key not in runs:
        runs[key] = _run_policy(model, inputs, policy, formats, keep_float32, weights)
    run = runs[key]
    if run.policy == policy:
        return run
    return replace(
        run,
        policy=policy,
        kept_as_built=tuple(sorted(kept_as_built(model, policy).items())),
        loss_scaling=loss_scaling(model, policy),
    )


def _weakly_referable(model: Any) -> bool:
    try:
        weakref.ref(model)
    except TypeError:
        return False
    return True


def _run_policy(
    model: Any,
    inputs: Sequence[np.ndarray],
    policy: str,
    formats: Sequence[str],
    keep_float32: Sequence[str],
    weights: str,
) -> PolicyRun:
    import tensorflow as tf

    kept = tuple(sorted(kept_as_built(model, policy).items()))
    about: dict[str, Any] = {
        "kept_as_built": kept,
        "loss_scaling": loss_scaling(model, policy),
        "flush_to_zero": flush_to_zero_formats(),
    }
    try:
        built = _built(model, policy, keep_float32, weights)
    except (TypeError, ValueError) as exc:  # Keras builds the clone: an op may refuse the dtype here
        return PolicyRun(policy, (), False, str(exc).strip(), None, "forward", **about)
    clone, traced = built.clone, built.traced
    about["non_trainable"] = tuple(v.path for v in clone.non_trainable_variables)
    tensors = tuple(tf.constant(x) for x in inputs)
    try:
        result = built.step(tensors)
    except (tf.errors.OpError, TypeError, ValueError) as exc:
        ops = _traced_ops(traced["operations"], clone) if "operations" in traced else trace(clone, inputs)
        text = str(getattr(exc, "message", None) or exc)
        node = failing_node(text)
        forward = forward_node(node) if node else None
        names = {op.name for op in ops}
        failing = forward if forward in names else node if node in names else None
        stage = "backward" if forward else "forward" if failing else ""
        return PolicyRun(policy, tuple(ops), False, text.strip(), failing, stage, **about)
    ops = _traced_ops(traced["operations"], clone)
    stats = {}
    first_nonfinite = None
    with np.errstate(invalid="ignore", over="ignore"):
        for name, value, gradient, has in zip(
            traced["names"], result["values"], result["grads"], traced["has_grad"], strict=True
        ):
            array = np.asarray(value.numpy(), dtype=np.float32)
            stats[name] = tensor_stats(array, gradient.numpy() if has else None, formats)
            if first_nonfinite is None and not np.all(np.isfinite(array)):
                first_nonfinite = name
    flags = traced["has_weight_grad"]
    unscaled = zero_fraction(g.numpy() for g, has in zip(result["weights"], flags, strict=True) if has)
    scale, scaled = math.nan, None
    if any(op.dtype in ("float16", "bfloat16") for op in ops):  # what loss scaling does is measured
        first = [g.numpy() for g, has in zip(result["scaled"], flags, strict=True) if has]
        if all(np.all(np.isfinite(np.asarray(g, dtype=np.float64))) for g in first):
            scale, scaled = LOSS_SCALE, zero_fraction(first)
        else:
            scale, scaled = _loss_scaled_zero_fraction(built, tensors, flags, LOSS_SCALE / 2.0**4)
    return PolicyRun(
        policy,
        tuple(ops),
        True,
        first_nonfinite=first_nonfinite,
        zero_grad=unscaled,
        zero_grad_scaled=scaled,
        loss_scale=scale,
        stats=stats,
        **about,
    )


def _loss_scaled_zero_fraction(
    built: _Built, tensors: Any, flags: Sequence[bool], start: float = LOSS_SCALE
) -> tuple[float, float | None]:
    """(the loss scale, the zero fraction of the trainable gradients at it) as a dynamic loss
    scale finds it: from ``start``, divided by 16 while a gradient is not finite."""
    import tensorflow as tf

    if built.scaled is None:
        built.scaled = _scaled_step(built.clone)
    scale = start
    while scale >= 1.0:
        grads = [
            g.numpy() for g, has in zip(built.scaled(tensors, tf.constant(scale)), flags, strict=True) if has
        ]
        if all(np.all(np.isfinite(np.asarray(g, dtype=np.float64))) for g in grads):
            return scale, zero_fraction(grads)
        scale /= 2.0**4
    return math.nan, None


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
            loss = _loss(clone(*xs, training=False))
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
    "BLOCK_AXIS_NOTE",
    "LOSS_SCALE",
    "NOT_OBSERVED",
    "POLICIES",
    "built_policy",
    "check_policy",
    "example_inputs_for",
    "float32_model",
    "flush_to_zero_formats",
    "framework_version",
    "is_keras_model",
    "is_model_itself",
    "kept_as_built",
    "layer_dtypes",
    "layer_weights",
    "load_safely",
    "loss_scaling",
    "policy_model",
    "run_policy",
    "trace",
    "training_step",
    "user_dtypes",
    "zero_gradient_fraction",
]
