"""Reductions along the last axis of a (4, 16) array: sum, mean, prod, max / min,
logsumexp, variance, std, the Euclidean norm, running sums and products, sort, argmax /
argmin (integer output), top_k."""

from __future__ import annotations

from typing import Any

import numpy as np

from explorer.ops._define import define
from explorer.ops._inputs import ROWS, uniform


def _np_logsumexp(np: Any, x: Any) -> Any:
    m = np.max(x, axis=-1, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=-1)) + m[..., 0]


define(
    name="sum",
    group="reduction",
    arity=1,
    tf_public="tf.math.reduce_sum",
    tf_raw_ops=("Sum",),
    tf=lambda tf, dt, x: tf.math.reduce_sum(x, axis=-1),
    numpy=lambda np, dt, x: np.sum(x, axis=-1),
    torch=lambda torch, dt, x: torch.sum(x, dim=-1),
    reference=lambda x: np.sum(x, axis=-1),
    make_inputs=uniform(-1, 1, ROWS),
    doc="sum of each row",
)
define(
    name="mean",
    group="reduction",
    arity=1,
    tf_public="tf.math.reduce_mean",
    tf_raw_ops=("Mean",),
    tf=lambda tf, dt, x: tf.math.reduce_mean(x, axis=-1),
    numpy=lambda np, dt, x: np.mean(x, axis=-1),
    torch=lambda torch, dt, x: torch.mean(x, dim=-1),
    reference=lambda x: np.mean(x, axis=-1),
    make_inputs=uniform(-1, 1, ROWS),
    doc="mean of each row",
)
define(
    name="prod",
    group="reduction",
    arity=1,
    tf_public="tf.math.reduce_prod",
    tf_raw_ops=("Prod",),
    tf=lambda tf, dt, x: tf.math.reduce_prod(x, axis=-1),
    numpy=lambda np, dt, x: np.prod(x, axis=-1),
    torch=lambda torch, dt, x: torch.prod(x, dim=-1),
    reference=lambda x: np.prod(x, axis=-1),
    make_inputs=uniform(0.8, 1.25, ROWS),
    doc="product of each row (factors near 1)",
)
define(
    name="reduce_max",
    group="reduction",
    arity=1,
    tf_public="tf.math.reduce_max",
    tf_raw_ops=("Max",),
    tf=lambda tf, dt, x: tf.math.reduce_max(x, axis=-1),
    numpy=lambda np, dt, x: np.max(x, axis=-1),
    torch=lambda torch, dt, x: torch.amax(x, dim=-1),
    reference=lambda x: np.max(x, axis=-1),
    make_inputs=uniform(-4, 4, ROWS),
    doc="largest value of each row",
)
define(
    name="reduce_min",
    group="reduction",
    arity=1,
    tf_public="tf.math.reduce_min",
    tf_raw_ops=("Min",),
    tf=lambda tf, dt, x: tf.math.reduce_min(x, axis=-1),
    numpy=lambda np, dt, x: np.min(x, axis=-1),
    torch=lambda torch, dt, x: torch.amin(x, dim=-1),
    reference=lambda x: np.min(x, axis=-1),
    make_inputs=uniform(-4, 4, ROWS),
    doc="smallest value of each row",
)
define(
    name="logsumexp",
    group="reduction",
    arity=1,
    tf_public="tf.math.reduce_logsumexp",
    tf_raw_ops=(
        "Max",
        "Sub",
        "Exp",
        "Sum",
        "Log",
        "AddV2",
        "IsFinite",
        "SelectV2",
        "StopGradient",
        "Shape",
        "Reshape",
    ),
    tf=lambda tf, dt, x: tf.math.reduce_logsumexp(x, axis=-1),
    numpy=lambda np, dt, x: _np_logsumexp(np, x),
    torch=lambda torch, dt, x: torch.logsumexp(x, dim=-1),
    reference=lambda x: _np_logsumexp(np, x),
    make_inputs=uniform(-2, 2, ROWS),
    doc="log(sum(exp(x))) of each row, max-shifted",
)
define(
    name="variance",
    group="reduction",
    arity=1,
    tf_public="tf.math.reduce_variance",
    tf_raw_ops=("Mean", "Sub", "Square"),
    tf=lambda tf, dt, x: tf.math.reduce_variance(x, axis=-1),
    numpy=lambda np, dt, x: np.var(x, axis=-1),
    torch=lambda torch, dt, x: torch.var(x, dim=-1, correction=0),
    reference=lambda x: np.var(x, axis=-1),
    make_inputs=uniform(-2, 2, ROWS),
    doc="population variance of each row",
)
define(
    name="std",
    group="reduction",
    arity=1,
    tf_public="tf.math.reduce_std",
    tf_raw_ops=("Mean", "Sub", "Square", "Sqrt"),
    tf=lambda tf, dt, x: tf.math.reduce_std(x, axis=-1),
    numpy=lambda np, dt, x: np.std(x, axis=-1),
    torch=lambda torch, dt, x: torch.std(x, dim=-1, correction=0),
    reference=lambda x: np.std(x, axis=-1),
    make_inputs=uniform(-2, 2, ROWS),
    doc="population standard deviation of each row",
)
define(
    name="euclidean_norm",
    group="reduction",
    arity=1,
    tf_public="tf.math.reduce_euclidean_norm",
    tf_raw_ops=("EuclideanNorm",),
    tf=lambda tf, dt, x: tf.math.reduce_euclidean_norm(x, axis=-1),
    numpy=lambda np, dt, x: np.linalg.norm(x, axis=-1),
    torch=lambda torch, dt, x: torch.linalg.vector_norm(x, dim=-1),
    reference=lambda x: np.sqrt(np.sum(x * x, axis=-1)),
    make_inputs=uniform(-1, 1, ROWS),
    doc="sqrt(sum(x**2)) of each row",
)
define(
    name="cumsum",
    group="reduction",
    arity=1,
    tf_public="tf.math.cumsum",
    tf_raw_ops=("Cumsum",),
    tf=lambda tf, dt, x: tf.math.cumsum(x, axis=-1),
    numpy=lambda np, dt, x: np.cumsum(x, axis=-1),
    torch=lambda torch, dt, x: torch.cumsum(x, dim=-1),
    reference=lambda x: np.cumsum(x, axis=-1),
    make_inputs=uniform(-1, 1, ROWS),
    doc="running sum along each row",
)
define(
    name="cumprod",
    group="reduction",
    arity=1,
    tf_public="tf.math.cumprod",
    tf_raw_ops=("Cumprod",),
    tf=lambda tf, dt, x: tf.math.cumprod(x, axis=-1),
    numpy=lambda np, dt, x: np.cumprod(x, axis=-1),
    torch=lambda torch, dt, x: torch.cumprod(x, dim=-1),
    reference=lambda x: np.cumprod(x, axis=-1),
    make_inputs=uniform(0.8, 1.25, ROWS),
    doc="running product along each row",
)
define(
    name="sort",
    group="reduction",
    arity=1,
    tf_public="tf.sort",
    tf_raw_ops=("TopKV2", "Neg"),
    tf=lambda tf, dt, x: tf.sort(x, axis=-1),
    numpy=lambda np, dt, x: np.sort(x, axis=-1),
    torch=lambda torch, dt, x: torch.sort(x, dim=-1).values,
    reference=lambda x: np.sort(x, axis=-1),
    make_inputs=uniform(-4, 4, ROWS),
    doc="each row sorted ascending (TensorFlow: top_k of -x)",
)
define(
    name="argmax",
    group="reduction",
    arity=1,
    tf_public="tf.math.argmax",
    tf_raw_ops=("ArgMax",),
    tf=lambda tf, dt, x: tf.math.argmax(x, axis=-1),
    numpy=lambda np, dt, x: np.argmax(x, axis=-1),
    torch=lambda torch, dt, x: torch.argmax(x, dim=-1),
    reference=lambda x: np.argmax(x, axis=-1),
    make_inputs=uniform(-4, 4, ROWS),
    float_output=False,
    doc="index of the largest value of each row (integer output)",
)
define(
    name="argmin",
    group="reduction",
    arity=1,
    tf_public="tf.math.argmin",
    tf_raw_ops=("ArgMin",),
    tf=lambda tf, dt, x: tf.math.argmin(x, axis=-1),
    numpy=lambda np, dt, x: np.argmin(x, axis=-1),
    torch=lambda torch, dt, x: torch.argmin(x, dim=-1),
    reference=lambda x: np.argmin(x, axis=-1),
    make_inputs=uniform(-4, 4, ROWS),
    float_output=False,
    doc="index of the smallest value of each row (integer output)",
)
define(
    name="top_k",
    group="reduction",
    arity=1,
    tf_public="tf.math.top_k",
    tf_raw_ops=("TopKV2",),
    tf=lambda tf, dt, x: tf.math.top_k(x, k=4).values,
    numpy=lambda np, dt, x: -np.sort(-x, axis=-1)[..., :4],
    torch=lambda torch, dt, x: torch.topk(x, 4, dim=-1).values,
    reference=lambda x: -np.sort(-x, axis=-1)[..., :4],
    make_inputs=uniform(-4, 4, ROWS),
    doc="the 4 largest values of each row, largest first",
)
