"""The op catalog: what each op is, how to build its inputs, its float64 reference,
and how each framework calls it.

The public surface is here; the entries live in one module per group
(:mod:`~explorer.ops.creation`, :mod:`~explorer.ops.unary`, :mod:`~explorer.ops.binary`,
:mod:`~explorer.ops.reduction`, :mod:`~explorer.ops.linalg`, :mod:`~explorer.ops.nn`,
:mod:`~explorer.ops.image`, :mod:`~explorer.ops.fft`, :mod:`~explorer.ops.cast`), written
with keyword arguments that can be checked against each framework's documentation.
``_op`` holds the :class:`Op` type and the lookups, ``_inputs`` the input builders and
``_define`` the helpers the entries are written with.

Calls take the framework module, the target dtype (framework object) and the
inputs already converted to that dtype: ``tf(tf, dtype, *tensors)``,
``numpy(np, dtype, *arrays)``, ``torch(torch, dtype, *tensors)``.  Creation ops
have arity 0 and take only the dtype.

Conventions every op follows:

- **Inputs** are small, deterministic (seeded) float64 arrays whose values stay
  meaningful in every format down to float4_e2m1fn (largest value 6): small
  magnitudes, no values that round to a pole (0 for reciprocal), SPD matrices for
  cholesky, diagonally dominant ones for inv / solve / det.  A failure in a narrow
  format is then about the dtype, not about the inputs.  :func:`inputs_fit` says
  whether an op's inputs survive rounding to a format (signed inputs do not fit
  the unsigned float8_e8m0fnu).
- **One canonical output.**  A call that has several outputs returns the one the
  reference describes: svd -> singular values, qr -> R with its rows' signs chosen
  so that diag(R) > 0, eigh -> eigenvalues, top_k -> values, sort -> sorted values,
  slogdet -> log|det|.  Complex results (the fft group) are returned as their
  magnitude ``|X|`` by the reference and by every call.
- **NumPy calls** use only the ``np`` module passed in.  Where NumPy has no
  function but the op is a one-line formula of NumPy functions (rsqrt = 1/sqrt,
  sigmoid, softmax, relu, pooling by reshaping) that formula is the call, as a
  NumPy user would write it; ops that need SciPy (erf, lgamma, igamma...) or a
  convolution have ``numpy=None``.
- **tf_raw_ops** are the raw ops TensorFlow builds for the public call, the op's
  own kernel first: every node of the call traced with ``tf.function`` in float32
  and in float16 (where the op's signature takes float16: casts appear only
  there) that reads or writes a float or complex tensor, except Const, Identity,
  IdentityN, Placeholder and NoOp.  tests/test_ops.py re-traces and compares.
- **domain** (elementwise ops): the closed interval of inputs where the op is
  real-valued.  Outside it the IEEE result is NaN (log(-1), sqrt(-1), erfinv(2));
  inside it poles may still give +-inf (log(0) = -inf, erfinv(1) = inf,
  reciprocal(0) = inf).  For binary ops the interval holds for every input.

>>> from explorer.ops import get_op
>>> get_op("exp").tf_raw_ops
('Exp',)
>>> len(catalog()) >= 60
True
"""

from __future__ import annotations

from explorer.ops._inputs import (
    concat,
    near_identity,
    no_inputs,
    signed,
    spd_matrix,
    uniform,
    uniform2,
)
from explorer.ops._op import (
    GROUPS,
    Builder,
    Call,
    Inputs,
    Op,
    catalog,
    find_by_raw_op,
    get_op,
    inputs_fit,
    op_names,
)

# isort: off
# the group modules fill the catalog when imported, in the order of GROUPS (the catalog order)
from explorer.ops import creation, unary, binary, reduction, linalg, nn, image, fft, cast  # noqa: F401
# isort: on

__all__ = [
    "GROUPS",
    "Builder",
    "Call",
    "Inputs",
    "Op",
    "catalog",
    "concat",
    "find_by_raw_op",
    "get_op",
    "inputs_fit",
    "near_identity",
    "no_inputs",
    "op_names",
    "signed",
    "spd_matrix",
    "uniform",
    "uniform2",
]
