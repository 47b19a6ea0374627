"""Neural-network ops (tf.nn): activations (elementwise), softmax and log_softmax,
l2_normalize, bias_add, softmax cross entropy, convolutions (1-D, 2-D, depthwise, 3-D,
channels last, VALID), 2x2 pooling, batch / fused batch / layer normalisation.

The references are written out in NumPy (convolutions by sliding windows, pooling by
reshaping); NumPy calls exist where a NumPy user would write the op as a formula.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from explorer.ops._define import (
    at,
    define,
    nowhere,
    scipy_special,
    stable_sigmoid,
    sum_to_odd,
    unary,
)
from explorer.ops._inputs import ROWS, concat, norm_inputs, one_hot_and_logits, uniform, uniform2


def _np_softmax(np: Any, x: Any) -> Any:
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def _np_log_softmax(np: Any, x: Any) -> Any:
    shifted = x - np.max(x, axis=-1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))


#: below it, x/2 + x*x/4 and x/2 + x*x/sqrt(2 pi) are x/2 in float64 (the x*x part is under
#: 2**-30 of it, the series' next terms under 2**-60): summed to odd, see :func:`sum_to_odd`
_TINY = 2.0**-30


def _ref_gelu(x: np.ndarray) -> np.ndarray:
    # x * Phi(x) with Phi(x) = erfc(-x / sqrt 2) / 2: no cancellation in 1 + erf(x / sqrt 2) for x << 0
    x = np.asarray(x, dtype=np.float64)
    tiny = sum_to_odd(0.5 * x, x * x / math.sqrt(2.0 * math.pi))
    return np.asarray(np.where(np.abs(x) < _TINY, tiny, 0.5 * x * scipy_special().erfc(-x / math.sqrt(2.0))))


def _ref_silu(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return np.asarray(np.where(np.abs(x) < _TINY, sum_to_odd(0.5 * x, 0.25 * x * x), x * stable_sigmoid(x)))


def _ref_selu_with(np: Any, x: Any) -> Any:
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return scale * np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def _ref_selu(x: np.ndarray) -> np.ndarray:
    return np.asarray(_ref_selu_with(np, x))


def _ref_l2_normalize(x: np.ndarray) -> np.ndarray:
    return x / np.sqrt(np.maximum(np.sum(x * x, axis=-1, keepdims=True), 1e-12))


def _windows(x: np.ndarray, kernel: tuple[int, ...]) -> np.ndarray:
    """Sliding windows over the spatial axes 1..k of a channels-last array."""
    axes = tuple(range(1, 1 + len(kernel)))
    return np.lib.stride_tricks.sliding_window_view(x, kernel, axis=axes)


def _ref_conv2d(x: np.ndarray, f: np.ndarray) -> np.ndarray:
    w = _windows(x, f.shape[:2])  # (n, oh, ow, c, kh, kw)
    return np.einsum("nhwcij,ijco->nhwo", w, f)


def _ref_conv1d(x: np.ndarray, f: np.ndarray) -> np.ndarray:
    w = _windows(x, f.shape[:1])  # (n, ow, c, k)
    return np.einsum("nwck,kco->nwo", w, f)


def _ref_conv3d(x: np.ndarray, f: np.ndarray) -> np.ndarray:
    w = _windows(x, f.shape[:3])  # (n, od, oh, ow, c, kd, kh, kw)
    return np.einsum("ndhwcijk,ijkco->ndhwo", w, f)


def _ref_depthwise(x: np.ndarray, f: np.ndarray) -> np.ndarray:
    w = _windows(x, f.shape[:2])  # (n, oh, ow, c, kh, kw)
    out = np.einsum("nhwcij,ijcm->nhwcm", w, f)
    return out.reshape(*out.shape[:3], -1)


def _pool_blocks(np: Any, x: Any) -> Any:
    n, h, w, c = x.shape
    return x.reshape(n, h // 2, 2, w // 2, 2, c)


def _ref_norm(x: np.ndarray, offset: np.ndarray, scale: np.ndarray, axis: int) -> np.ndarray:
    mean = np.mean(x, axis=axis, keepdims=True)
    var = np.var(x, axis=axis, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-3) * scale + offset


def _tf_norm(tf: Any, x: Any, offset: Any, scale: Any, axis: int) -> Any:
    mean, var = tf.nn.moments(x, axes=[axis], keepdims=True)
    return tf.nn.batch_normalization(x, mean, var, offset, scale, 1e-3)


def _np_norm(np: Any, x: Any, offset: Any, scale: Any, axis: int) -> Any:
    mean = np.mean(x, axis=axis, keepdims=True)
    var = np.var(x, axis=axis, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-3) * scale + offset


def _torch_norm(torch: Any, x: Any, offset: Any, scale: Any, axis: int) -> Any:
    var, mean = torch.var_mean(x, dim=axis, correction=0, keepdim=True)
    return (x - mean) * torch.rsqrt(var + 1e-3) * scale + offset


def _tf_fused_batch_norm(tf: Any, x: Any, scale: Any, offset: Any) -> Any:
    # scale and offset of FusedBatchNormV3 are float32 whatever x is (mixed precision)
    f32 = tf.float32
    return tf.compat.v1.nn.fused_batch_norm(
        x, tf.cast(scale, f32), tf.cast(offset, f32), epsilon=1e-3, is_training=True
    )[0]


unary(
    name="relu",
    group="nn",
    tf_public="tf.nn.relu",
    tf_raw_ops=("Relu",),
    numpy=lambda np, dt, x: np.maximum(x, 0),
    torch="relu",
    reference=lambda x: np.maximum(x, 0.0),
    make_inputs=uniform(-4, 4),
)
unary(
    name="relu6",
    group="nn",
    tf_public="tf.nn.relu6",
    tf_raw_ops=("Relu6",),
    numpy=lambda np, dt, x: np.clip(x, 0, 6),
    torch="nn.functional.relu6",
    reference=lambda x: np.clip(x, 0.0, 6.0),
    make_inputs=uniform(-4, 6),
    doc="min(max(x, 0), 6)",
)
unary(
    name="leaky_relu",
    group="nn",
    tf_public="tf.nn.leaky_relu",
    tf_raw_ops=("LeakyRelu",),
    tf=lambda tf, dt, x: tf.nn.leaky_relu(x, alpha=0.2),
    numpy=lambda np, dt, x: np.where(x > 0, x, 0.2 * x),
    torch=lambda torch, dt, x: torch.nn.functional.leaky_relu(x, 0.2),
    reference=lambda x: np.where(x > 0, x, 0.2 * x),
    make_inputs=uniform(-4, 4),
    zeros=at(0.0),
    poles=nowhere,
    doc="alpha = 0.2 (a float32 attribute in TensorFlow, so float64 results carry 0.2f)",
)
unary(
    name="elu",
    group="nn",
    tf_public="tf.nn.elu",
    tf_raw_ops=("Elu",),
    numpy=lambda np, dt, x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
    torch="nn.functional.elu",
    reference=lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
    make_inputs=uniform(-4, 4),
    zeros=at(0.0),
    poles=nowhere,
)
unary(
    name="selu",
    group="nn",
    tf_public="tf.nn.selu",
    tf_raw_ops=("Selu",),
    numpy=lambda np, dt, x: _ref_selu_with(np, x),
    torch="nn.functional.selu",
    reference=_ref_selu,
    make_inputs=uniform(-3, 3),
    zeros=at(0.0),
    poles=nowhere,
)
unary(
    name="softplus",
    group="nn",
    tf_public="tf.math.softplus",
    tf_raw_ops=("Softplus",),
    numpy=lambda np, dt, x: np.logaddexp(0, x),
    torch="nn.functional.softplus",
    reference=lambda x: np.logaddexp(0.0, x),
    make_inputs=uniform(-4, 4),
    zeros=nowhere,
    poles=nowhere,
    doc="log(1 + exp(x)) (NumPy: np.logaddexp(0, x))",
)
unary(
    name="softsign",
    group="nn",
    tf_public="tf.nn.softsign",
    tf_raw_ops=("Softsign",),
    numpy=lambda np, dt, x: x / (1 + np.abs(x)),
    torch="nn.functional.softsign",
    reference=lambda x: x / (1.0 + np.abs(x)),
    make_inputs=uniform(-4, 4),
    zeros=at(0.0),
    poles=nowhere,
    doc="x / (1 + |x|)",
)
unary(
    name="gelu",
    group="nn",
    tf_public="tf.nn.gelu",
    tf_raw_ops=("Erfc", "Mul", "Neg", "Cast"),
    tf=lambda tf, dt, x: tf.nn.gelu(x, approximate=False),
    numpy=None,
    torch="nn.functional.gelu",
    reference=_ref_gelu,
    make_inputs=uniform(-3, 3),
    zeros=at(0.0),
    poles=nowhere,
    doc="exact GELU x * (1 + erf(x / sqrt 2)) / 2; TensorFlow builds it as "
    "0.5 x erfc(-x / sqrt 2), no kernel of its own",
)
unary(
    name="silu",
    group="nn",
    tf_public="tf.nn.silu",
    tf_raw_ops=("Sigmoid", "Mul", "Cast"),
    numpy=lambda np, dt, x: x / (1 + np.exp(-x)),
    torch="nn.functional.silu",
    reference=_ref_silu,
    make_inputs=uniform(-4, 4),
    zeros=at(0.0),
    poles=nowhere,
    doc="x * sigmoid(x) (swish)",
)
unary(
    name="log_sigmoid",
    group="nn",
    tf_public="tf.math.log_sigmoid",
    tf_raw_ops=("Softplus", "Neg"),
    numpy=lambda np, dt, x: -np.logaddexp(0, -x),
    torch="nn.functional.logsigmoid",
    reference=lambda x: -np.logaddexp(0.0, -x),
    make_inputs=uniform(-4, 4),
    zeros=nowhere,
    poles=nowhere,
    doc="log(sigmoid(x)) = -softplus(-x)",
)
define(
    name="softmax",
    group="nn",
    arity=1,
    tf_public="tf.nn.softmax",
    tf_raw_ops=("Softmax",),
    tf=lambda tf, dt, x: tf.nn.softmax(x, axis=-1),
    numpy=lambda np, dt, x: _np_softmax(np, x),
    torch=lambda torch, dt, x: torch.softmax(x, -1),
    reference=lambda x: _np_softmax(np, x),
    make_inputs=uniform(-2, 2, ROWS),
    doc="softmax of each row (NumPy: the max-shifted formula)",
)
define(
    name="log_softmax",
    group="nn",
    arity=1,
    tf_public="tf.nn.log_softmax",
    tf_raw_ops=("LogSoftmax",),
    tf=lambda tf, dt, x: tf.nn.log_softmax(x, axis=-1),
    numpy=lambda np, dt, x: _np_log_softmax(np, x),
    torch=lambda torch, dt, x: torch.log_softmax(x, -1),
    reference=lambda x: _np_log_softmax(np, x),
    make_inputs=uniform(-2, 2, ROWS),
    doc="log of the softmax of each row",
)
define(
    name="l2_normalize",
    group="nn",
    arity=1,
    tf_public="tf.math.l2_normalize",
    tf_raw_ops=("Square", "Sum", "Maximum", "Rsqrt", "Mul"),
    tf=lambda tf, dt, x: tf.math.l2_normalize(x, axis=-1),
    numpy=lambda np, dt, x: x / np.sqrt(np.maximum(np.sum(x * x, axis=-1, keepdims=True), 1e-12)),
    torch=lambda torch, dt, x: torch.nn.functional.normalize(x, dim=-1),
    reference=_ref_l2_normalize,
    make_inputs=uniform(-1, 1, ROWS),
    doc="each row divided by its Euclidean norm",
)
define(
    name="bias_add",
    group="nn",
    arity=2,
    tf_public="tf.nn.bias_add",
    tf_raw_ops=("BiasAdd",),
    tf=lambda tf, dt, x, b: tf.nn.bias_add(x, b),
    numpy=lambda np, dt, x, b: x + b,
    torch=lambda torch, dt, x, b: x + b,
    reference=np.add,
    make_inputs=uniform2(-2, 2, -1, 1, shape=(4, 8), shape2=(8,)),
    doc="(4, 8) + bias (8,)",
)
define(
    name="softmax_cross_entropy",
    group="nn",
    arity=2,
    tf_public="tf.nn.softmax_cross_entropy_with_logits",
    tf_raw_ops=("SoftmaxCrossEntropyWithLogits", "Reshape", "Cast"),
    tf=lambda tf, dt, labels, logits: tf.nn.softmax_cross_entropy_with_logits(labels, logits),
    numpy=lambda np, dt, labels, logits: -np.sum(labels * _np_log_softmax(np, logits), axis=-1),
    torch=lambda torch, dt, labels, logits: torch.nn.functional.cross_entropy(
        logits, labels, reduction="none"
    ),
    reference=lambda labels, logits: -np.sum(labels * _np_log_softmax(np, logits), axis=-1),
    make_inputs=one_hot_and_logits,
    doc="cross entropy of one-hot labels (4, 8) and logits (4, 8)",
)
define(
    name="conv1d",
    group="nn",
    arity=2,
    tf_public="tf.nn.conv1d",
    tf_raw_ops=("Conv2D", "ExpandDims", "Squeeze"),
    tf=lambda tf, dt, x, f: tf.nn.conv1d(x, f, stride=1, padding="VALID"),
    numpy=None,
    torch=lambda torch, dt, x, f: torch.nn.functional.conv1d(x.permute(0, 2, 1), f.permute(2, 1, 0)).permute(
        0, 2, 1
    ),
    reference=_ref_conv1d,
    make_inputs=uniform2(-1, 1, -0.5, 0.5, shape=(1, 16, 2), shape2=(3, 2, 3)),
    doc="width 16, 2 -> 3 channels, kernel 3, VALID (TensorFlow runs Conv2D)",
)
define(
    name="conv2d",
    group="nn",
    arity=2,
    tf_public="tf.nn.conv2d",
    tf_raw_ops=("Conv2D",),
    tf=lambda tf, dt, x, f: tf.nn.conv2d(x, f, strides=1, padding="VALID"),
    numpy=None,
    torch=lambda torch, dt, x, f: torch.nn.functional.conv2d(
        x.permute(0, 3, 1, 2), f.permute(3, 2, 0, 1)
    ).permute(0, 2, 3, 1),
    reference=_ref_conv2d,
    make_inputs=uniform2(-1, 1, -0.5, 0.5, shape=(1, 8, 8, 2), shape2=(3, 3, 2, 3)),
    doc="NHWC 8x8, 2 -> 3 channels, 3x3 kernel, VALID",
)
define(
    name="depthwise_conv2d",
    group="nn",
    arity=2,
    tf_public="tf.nn.depthwise_conv2d",
    tf_raw_ops=("DepthwiseConv2dNative",),
    tf=lambda tf, dt, x, f: tf.nn.depthwise_conv2d(x, f, strides=[1, 1, 1, 1], padding="VALID"),
    numpy=None,
    torch=lambda torch, dt, x, f: torch.nn.functional.conv2d(
        x.permute(0, 3, 1, 2), f.permute(2, 3, 0, 1).reshape(-1, 1, *f.shape[:2]), groups=f.shape[2]
    ).permute(0, 2, 3, 1),
    reference=_ref_depthwise,
    make_inputs=uniform2(-1, 1, -0.5, 0.5, shape=(1, 8, 8, 2), shape2=(3, 3, 2, 2)),
    doc="NHWC 8x8, 2 channels, multiplier 2, 3x3 kernel, VALID",
)
define(
    name="conv3d",
    group="nn",
    arity=2,
    tf_public="tf.nn.conv3d",
    tf_raw_ops=("Conv3D",),
    tf=lambda tf, dt, x, f: tf.nn.conv3d(x, f, strides=[1, 1, 1, 1, 1], padding="VALID"),
    numpy=None,
    torch=lambda torch, dt, x, f: torch.nn.functional.conv3d(
        x.permute(0, 4, 1, 2, 3), f.permute(4, 3, 0, 1, 2)
    ).permute(0, 2, 3, 4, 1),
    reference=_ref_conv3d,
    make_inputs=uniform2(-1, 1, -0.5, 0.5, shape=(1, 4, 4, 4, 2), shape2=(2, 2, 2, 2, 2)),
    doc="NDHWC 4x4x4, 2 -> 2 channels, 2x2x2 kernel, VALID",
)
define(
    name="max_pool",
    group="nn",
    arity=1,
    tf_public="tf.nn.max_pool2d",
    tf_raw_ops=("MaxPool",),
    tf=lambda tf, dt, x: tf.nn.max_pool2d(x, 2, 2, "VALID"),
    numpy=lambda np, dt, x: _pool_blocks(np, x).max(axis=(2, 4)),
    torch=lambda torch, dt, x: torch.nn.functional.max_pool2d(x.permute(0, 3, 1, 2), 2).permute(0, 2, 3, 1),
    reference=lambda x: _pool_blocks(np, x).max(axis=(2, 4)),
    make_inputs=uniform(-4, 4, (1, 8, 8, 2)),
    doc="2x2 max pooling, stride 2, NHWC (NumPy: reshape and max)",
)
define(
    name="avg_pool",
    group="nn",
    arity=1,
    tf_public="tf.nn.avg_pool2d",
    tf_raw_ops=("AvgPool",),
    tf=lambda tf, dt, x: tf.nn.avg_pool2d(x, 2, 2, "VALID"),
    numpy=lambda np, dt, x: _pool_blocks(np, x).mean(axis=(2, 4)),
    torch=lambda torch, dt, x: torch.nn.functional.avg_pool2d(x.permute(0, 3, 1, 2), 2).permute(0, 2, 3, 1),
    reference=lambda x: _pool_blocks(np, x).mean(axis=(2, 4)),
    make_inputs=uniform(-4, 4, (1, 8, 8, 2)),
    doc="2x2 average pooling, stride 2, NHWC (NumPy: reshape and mean)",
)
define(
    name="batch_norm",
    group="nn",
    arity=3,
    tf_public="tf.nn.batch_normalization",
    tf_raw_ops=("Mean", "SquaredDifference", "StopGradient", "AddV2", "Rsqrt", "Mul", "Sub", "Cast"),
    tf=lambda tf, dt, x, o, s: _tf_norm(tf, x, o, s, 0),
    numpy=lambda np, dt, x, o, s: _np_norm(np, x, o, s, 0),
    torch=lambda torch, dt, x, o, s: _torch_norm(torch, x, o, s, 0),
    reference=lambda x, o, s: _ref_norm(x, o, s, 0),
    make_inputs=norm_inputs((8, 4), 4),
    doc="training-mode batch norm of (8, 4) over the batch: tf.nn.moments + batch_normalization, "
    "epsilon 1e-3; inputs x, offset, scale",
)
define(
    name="fused_batch_norm",
    group="nn",
    arity=3,
    tf_public="tf.compat.v1.nn.fused_batch_norm",
    tf_raw_ops=("FusedBatchNormV3", "Cast"),
    tf=lambda tf, dt, x, s, o: _tf_fused_batch_norm(tf, x, s, o),
    numpy=None,
    torch=lambda torch, dt, x, s, o: torch.nn.functional.batch_norm(
        x.permute(0, 3, 1, 2), None, None, s, o, training=True, eps=1e-3
    ).permute(0, 2, 3, 1),
    reference=lambda x, s, o: _ref_norm(x.reshape(-1, 3), o, s, 0).reshape(x.shape),
    make_inputs=concat(uniform(-2, 2, (2, 4, 4, 3)), uniform(0.5, 1.5, (3,)), uniform(-0.5, 0.5, (3,))),
    doc="the fused kernel Keras uses for 4-D batch norm: NHWC (2, 4, 4, 3), training mode, "
    "epsilon 1e-3; inputs x, scale, offset (scale and offset passed as float32)",
)
define(
    name="layer_norm",
    group="nn",
    arity=3,
    tf_public="tf.nn.batch_normalization",
    tf_raw_ops=("Mean", "SquaredDifference", "StopGradient", "AddV2", "Rsqrt", "Mul", "Sub", "Cast"),
    tf=lambda tf, dt, x, o, s: _tf_norm(tf, x, o, s, -1),
    numpy=lambda np, dt, x, o, s: _np_norm(np, x, o, s, -1),
    torch=lambda torch, dt, x, o, s: torch.nn.functional.layer_norm(x, (x.shape[-1],), s, o, eps=1e-3),
    reference=lambda x, o, s: _ref_norm(x, o, s, -1),
    make_inputs=norm_inputs((4, 8), 8),
    doc="layer norm of each row of (4, 8) as Keras computes it: moments over the last axis + "
    "batch_normalization, epsilon 1e-3; inputs x, offset, scale",
)
