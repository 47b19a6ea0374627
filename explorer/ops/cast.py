"""Casts: through float32, to and from int32, and the saturating cast to uint8."""

from __future__ import annotations

import numpy as np

from explorer.ops._define import define
from explorer.ops._inputs import uniform

define(
    name="cast",
    group="cast",
    arity=1,
    tf_public="tf.cast",
    tf_raw_ops=("Cast",),
    tf=lambda tf, dt, x: tf.cast(tf.cast(x, tf.float32), dt),
    numpy=lambda np, dt, x: x.astype(np.float32).astype(dt),
    torch=lambda torch, dt, x: x.to(torch.float32).to(dt),
    reference=lambda x: x.astype(np.float32).astype(np.float64),
    make_inputs=uniform(-4, 4),
    doc="to float32 and back (exact for every format of 32 bits or fewer; no Cast runs for float32)",
)
define(
    name="cast_to_int32",
    group="cast",
    arity=1,
    tf_public="tf.cast",
    tf_raw_ops=("Cast",),
    tf=lambda tf, dt, x: tf.cast(x, tf.int32),
    numpy=lambda np, dt, x: x.astype(np.int32),
    torch=lambda torch, dt, x: x.to(torch.int32),
    reference=np.trunc,
    make_inputs=uniform(-6, 6),
    float_output=False,
    doc="to int32, truncating toward zero (integer output)",
)
define(
    name="cast_from_int32",
    group="cast",
    arity=1,
    tf_public="tf.cast",
    tf_raw_ops=("Cast",),
    tf=lambda tf, dt, x: tf.cast(tf.cast(x, tf.int32), dt),
    numpy=lambda np, dt, x: x.astype(np.int32).astype(dt),
    torch=lambda torch, dt, x: x.to(torch.int32).to(dt),
    reference=np.trunc,
    make_inputs=uniform(-6, 6),
    doc="to int32 and back: truncation toward zero, then int32 -> format",
)
define(
    name="saturate_cast",
    group="cast",
    arity=1,
    tf_public="tf.dtypes.saturate_cast",
    tf_raw_ops=("Cast", "ClipByValue"),
    tf=lambda tf, dt, x: tf.dtypes.saturate_cast(x, tf.uint8),
    numpy=lambda np, dt, x: np.clip(x, 0, 255).astype(np.uint8),
    torch=lambda torch, dt, x: x.clamp(0, 255).to(torch.uint8),
    reference=lambda x: np.trunc(np.clip(x, 0, 255)),
    make_inputs=uniform(-4, 6),
    float_output=False,
    doc="to uint8, clipping to [0, 255] first (integer output)",
)
