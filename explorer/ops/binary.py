"""Elementwise binary math ops (tf.math): add ... xlogy, the incomplete gamma functions.
Both inputs have the same shape; ``domain`` holds for both.

NumPy and PyTorch calls given as a name are that function applied to the two inputs
(``torch="remainder"`` is ``torch.remainder(a, b)``).
"""

from __future__ import annotations

import numpy as np

from explorer.ops._define import binary, scipy_special
from explorer.ops._inputs import concat, signed, uniform, uniform2

binary(
    name="add",
    tf_public="tf.math.add",
    tf_raw_ops=("AddV2",),
    numpy="add",
    torch="add",
    reference=np.add,
    make_inputs=uniform2(-2, 2),
)
binary(
    name="sub",
    tf_public="tf.math.subtract",
    tf_raw_ops=("Sub",),
    numpy="subtract",
    torch="sub",
    reference=np.subtract,
    make_inputs=uniform2(-2, 2),
)
binary(
    name="mul",
    tf_public="tf.math.multiply",
    tf_raw_ops=("Mul",),
    numpy="multiply",
    torch="mul",
    reference=np.multiply,
    make_inputs=uniform2(-2, 2),
)
binary(
    name="div",
    tf_public="tf.math.divide",
    tf_raw_ops=("RealDiv",),
    numpy="divide",
    torch="div",
    reference=np.divide,
    make_inputs=concat(uniform(-2, 2), signed(0.5, 2)),
    doc="a / b, b kept away from 0",
)
binary(
    name="pow",
    tf_public="tf.math.pow",
    tf_raw_ops=("Pow",),
    numpy="power",
    torch="pow",
    reference=np.power,
    make_inputs=uniform2(0.5, 2, -2, 2),
    doc="a ** b with a > 0",
)
binary(
    name="floormod",
    tf_public="tf.math.floormod",
    tf_raw_ops=("FloorMod",),
    numpy="mod",
    torch="remainder",
    reference=np.mod,
    make_inputs=uniform2(-4, 4, 0.5, 2),
    doc="a - floor(a / b) * b (sign of b)",
)
binary(
    name="floordiv",
    tf_public="tf.math.floordiv",
    tf_raw_ops=("FloorDiv",),
    numpy="floor_divide",
    torch="floor_divide",
    reference=np.floor_divide,
    make_inputs=uniform2(-4, 4, 0.5, 2),
)
binary(
    name="truncatemod",
    tf_public="tf.truncatemod",
    tf_raw_ops=("TruncateMod",),
    numpy="fmod",
    torch="fmod",
    reference=np.fmod,
    make_inputs=uniform2(-4, 4, 0.5, 2),
    doc="C fmod (sign of a)",
)
binary(
    name="maximum",
    tf_public="tf.math.maximum",
    tf_raw_ops=("Maximum",),
    numpy="maximum",
    torch="maximum",
    reference=np.maximum,
    make_inputs=uniform2(-4, 4),
)
binary(
    name="minimum",
    tf_public="tf.math.minimum",
    tf_raw_ops=("Minimum",),
    numpy="minimum",
    torch="minimum",
    reference=np.minimum,
    make_inputs=uniform2(-4, 4),
)
binary(
    name="atan2",
    tf_public="tf.math.atan2",
    tf_raw_ops=("Atan2",),
    numpy="arctan2",
    torch="atan2",
    reference=np.arctan2,
    make_inputs=uniform2(-2, 2),
    doc="atan2(y, x)",
)
binary(
    name="squared_difference",
    tf_public="tf.math.squared_difference",
    tf_raw_ops=("SquaredDifference",),
    numpy=lambda np, dt, a, b: np.square(a - b),
    torch=lambda torch, dt, a, b: torch.square(a - b),
    reference=lambda a, b: np.square(a - b),
    make_inputs=uniform2(-1, 1),
    doc="(a - b)**2 (NumPy: np.square(a - b), two roundings)",
)
binary(
    name="igamma",
    tf_public="tf.math.igamma",
    tf_raw_ops=("Igamma",),
    numpy=None,
    torch="special.gammainc",
    reference=lambda a, x: scipy_special().gammainc(a, x),
    make_inputs=uniform2(0.5, 4),
    domain=(0, np.inf),
    doc="regularized lower incomplete gamma P(a, x)",
)
binary(
    name="igammac",
    tf_public="tf.math.igammac",
    tf_raw_ops=("Igammac",),
    numpy=None,
    torch="special.gammaincc",
    reference=lambda a, x: scipy_special().gammaincc(a, x),
    make_inputs=uniform2(0.5, 4),
    domain=(0, np.inf),
    doc="regularized upper incomplete gamma Q(a, x)",
)
binary(
    name="xlogy",
    tf_public="tf.math.xlogy",
    tf_raw_ops=("Xlogy",),
    numpy=lambda np, dt, x, y: x * np.log(y),
    torch="xlogy",
    reference=lambda x, y: x * np.log(y),
    make_inputs=uniform2(-2, 2, 0.5, 4),
    doc="x * log(y), 0 where x == 0 (NumPy: x * np.log(y))",
)
