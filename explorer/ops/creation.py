"""Creation ops (arity 0): range, linspace, zeros, ones, fill, eye.  Their calls take only
the dtype (``tf(tf, dtype)``) and their references no inputs.

Their scalar parameters (a limit, a shape, a fill value) are keyword arguments of the ``tf``
call with the values as defaults, named in ``tf_params`` with the dtype of their tensor:
called as ``tf(tf, dtype)`` the call is the public call a user writes
(``tf.range(12, dtype=tf.float16)``); a traced probe passes them as 0-d tensors, arguments
of the traced function, so that TensorFlow cannot fold the op into a constant before its
kernel (or its XLA lowering) runs.

>>> import numpy as np
>>> from explorer.ops import get_op
>>> get_op("range").tf_params
(('limit', 'dtype'),)
"""

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
    tf=lambda tf, dt, limit=12: tf.range(limit, dtype=dt),
    tf_params=(("limit", "dtype"),),
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
    tf=lambda tf, dt, start=0.0, stop=1.0: tf.linspace(
        tf.convert_to_tensor(start, dt), tf.convert_to_tensor(stop, dt), 11
    ),
    tf_params=(("start", "dtype"), ("stop", "dtype")),
    numpy=lambda np, dt: np.linspace(0.0, 1.0, 11, dtype=dt),
    torch=lambda torch, dt: torch.linspace(0.0, 1.0, 11, dtype=dt),
    reference=lambda: np.linspace(0.0, 1.0, 11),
    make_inputs=no_inputs,
    doc="11 evenly spaced values from 0 to 1 (tf.linspace is composite; the LinSpace raw op is not used)",
)
# 2,048 elements: called with a Python shape below 1,000 elements, tf.zeros/tf.ones make a Const
# and no kernel runs
define(
    name="zeros",
    group="creation",
    arity=0,
    tf_public="tf.zeros",
    tf_raw_ops=("Fill",),
    tf=lambda tf, dt, shape=(32, 64): tf.zeros(shape, dtype=dt),
    tf_params=(("shape", "int32"),),
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
    tf=lambda tf, dt, shape=(32, 64): tf.ones(shape, dtype=dt),
    tf_params=(("shape", "int32"),),
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
    tf=lambda tf, dt, dims=(64,), value=1.5: tf.fill(dims, tf.convert_to_tensor(value, dt)),
    tf_params=(("dims", "int32"), ("value", "dtype")),
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
    tf=lambda tf, dt, num_rows=4: tf.eye(num_rows, dtype=dt),
    tf_params=(("num_rows", "int32"),),
    numpy=lambda np, dt: np.eye(4, dtype=dt),
    torch=lambda torch, dt: torch.eye(4, dtype=dt),
    reference=lambda: np.eye(4),
    make_inputs=no_inputs,
    doc="the 4x4 identity matrix",
)
