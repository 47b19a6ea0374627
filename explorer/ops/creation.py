"""Creation ops (arity 0): range, linspace, zeros, ones, fill, eye.  Their calls take only
the dtype (``tf(tf, dtype)``) and their references no inputs."""

from __future__ import annotations

import numpy as np

from explorer.ops._define import define
from explorer.ops._inputs import no_inputs

define(
    name="range",
    group="creation",
    arity=0,
    tf_public="tf.range",
    tf_raw_ops=("Range",),
    tf=lambda tf, dt: tf.range(12, dtype=dt),
    numpy=lambda np, dt: np.arange(12, dtype=dt),
    torch=lambda torch, dt: torch.arange(12, dtype=dt),
    reference=lambda: np.arange(12, dtype=np.float64),
    make_inputs=no_inputs,
    doc="0, 1, ..., 11 (the seed case: tf.range(12, dtype=tf.float16))",
)
define(
    name="linspace",
    group="creation",
    arity=0,
    tf_public="tf.linspace",
    tf_raw_ops=(
        "Mul",
        "AddV2",
        "Sub",
        "RealDiv",
        "Cast",
        "BroadcastTo",
        "ExpandDims",
        "Reshape",
        "ConcatV2",
        "Slice",
    ),
    tf=lambda tf, dt: tf.linspace(tf.constant(0.0, dt), tf.constant(1.0, dt), 11),
    numpy=lambda np, dt: np.linspace(0.0, 1.0, 11, dtype=dt),
    torch=lambda torch, dt: torch.linspace(0.0, 1.0, 11, dtype=dt),
    reference=lambda: np.linspace(0.0, 1.0, 11),
    make_inputs=no_inputs,
    doc="11 evenly spaced values from 0 to 1 (tf.linspace is composite; the LinSpace raw op is not used)",
)
# 2,048 elements: below 1,000 tf.zeros/tf.ones fold into a Const and no kernel runs
define(
    name="zeros",
    group="creation",
    arity=0,
    tf_public="tf.zeros",
    tf_raw_ops=("Fill",),
    tf=lambda tf, dt: tf.zeros((32, 64), dtype=dt),
    numpy=lambda np, dt: np.zeros((32, 64), dtype=dt),
    torch=lambda torch, dt: torch.zeros((32, 64), dtype=dt),
    reference=lambda: np.zeros((32, 64)),
    make_inputs=no_inputs,
    doc="a 32x64 array of zeros (large enough that TensorFlow runs Fill)",
)
define(
    name="ones",
    group="creation",
    arity=0,
    tf_public="tf.ones",
    tf_raw_ops=("Fill",),
    tf=lambda tf, dt: tf.ones((32, 64), dtype=dt),
    numpy=lambda np, dt: np.ones((32, 64), dtype=dt),
    torch=lambda torch, dt: torch.ones((32, 64), dtype=dt),
    reference=lambda: np.ones((32, 64)),
    make_inputs=no_inputs,
    doc="a 32x64 array of ones",
)
define(
    name="fill",
    group="creation",
    arity=0,
    tf_public="tf.fill",
    tf_raw_ops=("Fill",),
    tf=lambda tf, dt: tf.fill([64], tf.constant(1.5, dt)),
    numpy=lambda np, dt: np.full(64, 1.5, dtype=dt),
    torch=lambda torch, dt: torch.full((64,), 1.5, dtype=dt),
    reference=lambda: np.full(64, 1.5),
    make_inputs=no_inputs,
    doc="64 copies of 1.5",
)
define(
    name="eye",
    group="creation",
    arity=0,
    tf_public="tf.eye",
    tf_raw_ops=("MatrixDiagV3",),
    tf=lambda tf, dt: tf.eye(4, dtype=dt),
    numpy=lambda np, dt: np.eye(4, dtype=dt),
    torch=lambda torch, dt: torch.eye(4, dtype=dt),
    reference=lambda: np.eye(4),
    make_inputs=no_inputs,
    doc="the 4x4 identity matrix",
)
