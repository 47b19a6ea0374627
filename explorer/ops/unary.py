"""Elementwise unary math ops (tf.math): abs ... atanh, the sigmoid, the error and gamma
functions, Bessel I0 / I1.  Each states its input interval (``make_inputs``) and, where it
is not every real, the domain where it is real-valued.

NumPy and PyTorch calls given as a name are that function applied to the input
(``numpy="arcsin"`` is ``np.arcsin(x)``); ops that need SciPy have ``numpy=None``.
"""

from __future__ import annotations

import numpy as np

from explorer.ops._define import at, nowhere, scipy_special, stable_sigmoid, unary
from explorer.ops._inputs import signed, uniform


def _non_positive_integers(x: np.ndarray) -> np.ndarray:
    """The poles of lgamma: 0, -1, -2, ..."""
    x = np.asarray(x, dtype=np.float64)
    return np.asarray((x <= 0) & (x == np.floor(x)))


unary(
    name="abs",
    tf_public="tf.math.abs",
    tf_raw_ops=("Abs",),
    numpy="abs",
    torch="abs",
    reference=np.abs,
    make_inputs=uniform(-4, 4),
)
unary(
    name="neg",
    tf_public="tf.math.negative",
    tf_raw_ops=("Neg",),
    numpy="negative",
    torch="neg",
    reference=np.negative,
    make_inputs=uniform(-4, 4),
)
unary(
    name="sign",
    tf_public="tf.math.sign",
    tf_raw_ops=("Sign",),
    numpy="sign",
    torch="sign",
    reference=np.sign,
    make_inputs=uniform(-4, 4),
)
unary(
    name="floor",
    tf_public="tf.math.floor",
    tf_raw_ops=("Floor",),
    numpy="floor",
    torch="floor",
    reference=np.floor,
    make_inputs=uniform(-4, 4),
)
unary(
    name="ceil",
    tf_public="tf.math.ceil",
    tf_raw_ops=("Ceil",),
    numpy="ceil",
    torch="ceil",
    reference=np.ceil,
    make_inputs=uniform(-4, 4),
)
unary(
    name="round",
    tf_public="tf.math.round",
    tf_raw_ops=("Round",),
    numpy="round",
    torch="round",
    reference=np.round,
    make_inputs=uniform(-4, 4),
    doc="round half to even",
)
unary(
    name="square",
    tf_public="tf.math.square",
    tf_raw_ops=("Square",),
    numpy="square",
    torch="square",
    reference=np.square,
    make_inputs=uniform(-2, 2),
)
unary(
    name="sqrt",
    tf_public="tf.math.sqrt",
    tf_raw_ops=("Sqrt",),
    numpy="sqrt",
    torch="sqrt",
    reference=np.sqrt,
    make_inputs=uniform(0.25, 4),
    domain=(0, np.inf),
    zeros=at(0.0),
    poles=nowhere,
)
unary(
    name="rsqrt",
    tf_public="tf.math.rsqrt",
    tf_raw_ops=("Rsqrt",),
    numpy=lambda np, dt, x: 1 / np.sqrt(x),
    torch="rsqrt",
    reference=lambda x: 1.0 / np.sqrt(x),
    make_inputs=uniform(0.5, 4),
    domain=(0, np.inf),
    zeros=nowhere,
    poles=at(0.0),
    doc="1/sqrt(x) (NumPy: 1 / np.sqrt(x), two roundings)",
)
unary(
    name="reciprocal",
    tf_public="tf.math.reciprocal",
    tf_raw_ops=("Reciprocal",),
    numpy="reciprocal",
    torch="reciprocal",
    reference=np.reciprocal,
    make_inputs=signed(0.5, 4),
    zeros=nowhere,
    poles=at(0.0),
)
unary(
    name="exp",
    tf_public="tf.math.exp",
    tf_raw_ops=("Exp",),
    numpy="exp",
    torch="exp",
    reference=np.exp,
    make_inputs=uniform(-2, 1.5),
    zeros=nowhere,
    poles=nowhere,
)
unary(
    name="expm1",
    tf_public="tf.math.expm1",
    tf_raw_ops=("Expm1",),
    numpy="expm1",
    torch="expm1",
    reference=np.expm1,
    make_inputs=uniform(-2, 1.5),
    zeros=at(0.0),
    poles=nowhere,
)
unary(
    name="log",
    tf_public="tf.math.log",
    tf_raw_ops=("Log",),
    numpy="log",
    torch="log",
    reference=np.log,
    make_inputs=uniform(0.5, 4),
    domain=(0, np.inf),
    zeros=at(1.0),
    poles=at(0.0),
)
unary(
    name="log1p",
    tf_public="tf.math.log1p",
    tf_raw_ops=("Log1p",),
    numpy="log1p",
    torch="log1p",
    reference=np.log1p,
    make_inputs=uniform(-0.5, 3),
    domain=(-1, np.inf),
    zeros=at(0.0),
    poles=at(-1.0),
)
unary(
    name="sin",
    tf_public="tf.math.sin",
    tf_raw_ops=("Sin",),
    numpy="sin",
    torch="sin",
    reference=np.sin,
    make_inputs=uniform(-3, 3),
    zeros=at(0.0),
    poles=nowhere,
)
unary(
    name="cos",
    tf_public="tf.math.cos",
    tf_raw_ops=("Cos",),
    numpy="cos",
    torch="cos",
    reference=np.cos,
    make_inputs=uniform(-3, 3),
    zeros=nowhere,
    poles=nowhere,
)
unary(
    name="tan",
    tf_public="tf.math.tan",
    tf_raw_ops=("Tan",),
    numpy="tan",
    torch="tan",
    reference=np.tan,
    make_inputs=uniform(-1, 1),
    zeros=at(0.0),
    poles=nowhere,
)
unary(
    name="asin",
    tf_public="tf.math.asin",
    tf_raw_ops=("Asin",),
    numpy="arcsin",
    torch="asin",
    reference=np.arcsin,
    make_inputs=uniform(-0.9, 0.9),
    domain=(-1, 1),
    zeros=at(0.0),
    poles=nowhere,
)
unary(
    name="acos",
    tf_public="tf.math.acos",
    tf_raw_ops=("Acos",),
    numpy="arccos",
    torch="acos",
    reference=np.arccos,
    make_inputs=uniform(-0.9, 0.9),
    domain=(-1, 1),
    zeros=at(1.0),
    poles=nowhere,
)
unary(
    name="atan",
    tf_public="tf.math.atan",
    tf_raw_ops=("Atan",),
    numpy="arctan",
    torch="atan",
    reference=np.arctan,
    make_inputs=uniform(-4, 4),
    zeros=at(0.0),
    poles=nowhere,
)
unary(
    name="sinh",
    tf_public="tf.math.sinh",
    tf_raw_ops=("Sinh",),
    numpy="sinh",
    torch="sinh",
    reference=np.sinh,
    make_inputs=uniform(-2, 2),
    zeros=at(0.0),
    poles=nowhere,
)
unary(
    name="cosh",
    tf_public="tf.math.cosh",
    tf_raw_ops=("Cosh",),
    numpy="cosh",
    torch="cosh",
    reference=np.cosh,
    make_inputs=uniform(-2, 2),
    zeros=nowhere,
    poles=nowhere,
)
unary(
    name="tanh",
    tf_public="tf.math.tanh",
    tf_raw_ops=("Tanh",),
    numpy="tanh",
    torch="tanh",
    reference=np.tanh,
    make_inputs=uniform(-2, 2),
    zeros=at(0.0),
    poles=nowhere,
)
unary(
    name="asinh",
    tf_public="tf.math.asinh",
    tf_raw_ops=("Asinh",),
    numpy="arcsinh",
    torch="asinh",
    reference=np.arcsinh,
    make_inputs=uniform(-4, 4),
    zeros=at(0.0),
    poles=nowhere,
)
unary(
    name="acosh",
    tf_public="tf.math.acosh",
    tf_raw_ops=("Acosh",),
    numpy="arccosh",
    torch="acosh",
    reference=np.arccosh,
    make_inputs=uniform(1, 4),
    domain=(1, np.inf),
    zeros=at(1.0),
    poles=nowhere,
)
unary(
    name="atanh",
    tf_public="tf.math.atanh",
    tf_raw_ops=("Atanh",),
    numpy="arctanh",
    torch="atanh",
    reference=np.arctanh,
    make_inputs=uniform(-0.7, 0.7),
    domain=(-1, 1),
    zeros=at(0.0),
    poles=at(-1.0, 1.0),
)
unary(
    name="sigmoid",
    tf_public="tf.math.sigmoid",
    tf_raw_ops=("Sigmoid",),
    numpy=lambda np, dt, x: 1 / (1 + np.exp(-x)),
    torch="sigmoid",
    reference=stable_sigmoid,
    make_inputs=uniform(-4, 4),
    zeros=nowhere,
    poles=nowhere,
    doc="1/(1+exp(-x)) (NumPy: that formula; reference: from exp(-|x|), which cannot overflow)",
)
unary(
    name="erf",
    tf_public="tf.math.erf",
    tf_raw_ops=("Erf",),
    numpy=None,
    torch="erf",
    reference=lambda x: scipy_special().erf(x),
    make_inputs=uniform(-2, 2),
    zeros=at(0.0),
    poles=nowhere,
)
unary(
    name="erfc",
    tf_public="tf.math.erfc",
    tf_raw_ops=("Erfc",),
    numpy=None,
    torch="erfc",
    reference=lambda x: scipy_special().erfc(x),
    make_inputs=uniform(-2, 2),
    zeros=nowhere,
    poles=nowhere,
)
unary(
    name="erfinv",
    tf_public="tf.math.erfinv",
    tf_raw_ops=("Erfinv",),
    numpy=None,
    torch="erfinv",
    reference=lambda x: scipy_special().erfinv(x),
    make_inputs=uniform(-0.7, 0.7),
    domain=(-1, 1),
    zeros=at(0.0),
    poles=at(-1.0, 1.0),
)
unary(
    name="lgamma",
    tf_public="tf.math.lgamma",
    tf_raw_ops=("Lgamma",),
    numpy=None,
    torch="lgamma",
    reference=lambda x: scipy_special().gammaln(x),
    make_inputs=uniform(0.5, 4),
    zeros=at(1.0, 2.0),
    poles=_non_positive_integers,
    doc="log|Gamma(x)|; real everywhere, +inf at the poles 0, -1, -2, ...",
)
unary(
    name="digamma",
    tf_public="tf.math.digamma",
    tf_raw_ops=("Digamma",),
    numpy=None,
    torch="digamma",
    reference=lambda x: scipy_special().digamma(x),
    make_inputs=uniform(0.5, 4),
    zeros=nowhere,
    poles=at(0.0),
    doc="d/dx log Gamma(x); poles at 0, -1, -2, ...",
)
unary(
    name="bessel_i0",
    tf_public="tf.math.bessel_i0",
    tf_raw_ops=("BesselI0",),
    numpy="i0",
    torch="special.i0",
    reference=lambda x: scipy_special().i0(x),
    make_inputs=uniform(-3, 3),
    zeros=nowhere,
    poles=nowhere,
    doc="modified Bessel function I0 (np.i0 computes in float64 and returns float64)",
)
unary(
    name="bessel_i0e",
    tf_public="tf.math.bessel_i0e",
    tf_raw_ops=("BesselI0e",),
    numpy=None,
    torch="special.i0e",
    reference=lambda x: scipy_special().i0e(x),
    make_inputs=uniform(-3, 3),
    zeros=nowhere,
    poles=nowhere,
    doc="exponentially scaled I0: exp(-|x|) I0(x)",
)
unary(
    name="bessel_i1",
    tf_public="tf.math.bessel_i1",
    tf_raw_ops=("BesselI1",),
    numpy=None,
    torch="special.i1",
    reference=lambda x: scipy_special().i1(x),
    make_inputs=uniform(-3, 3),
    zeros=at(0.0),
    poles=nowhere,
    doc="modified Bessel function I1",
)
