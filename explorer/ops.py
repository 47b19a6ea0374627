"""The op catalog: what each op is, how to build its inputs, its float64 reference,
and how each framework calls it.

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

import difflib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

GROUPS: tuple[str, ...] = (
    "creation",
    "unary",
    "binary",
    "reduction",
    "linalg",
    "nn",
    "image",
    "fft",
    "cast",
)

Inputs = tuple[np.ndarray, ...]
Call = Callable[..., Any]
Builder = Callable[[np.random.Generator], Inputs]


@dataclass(frozen=True)
class Op:
    """One op of the catalog."""

    #: short snake_case name, as in tf.math / tf.linalg / tf.nn
    name: str
    #: one of :data:`GROUPS`
    group: str
    #: number of tensor inputs (0 for creation ops)
    arity: int
    #: builds float64 inputs whose values are valid for the op in every format
    make_inputs: Callable[[np.random.Generator], Inputs]
    #: float64 reference: ``reference(*inputs) -> ndarray``
    reference: Callable[..., np.ndarray]
    #: the TensorFlow public function, e.g. "tf.math.exp"
    tf_public: str
    #: the TensorFlow raw ops it dispatches to (read from the kernel registry), its own first
    tf_raw_ops: tuple[str, ...]
    #: ``tf(tf, dtype, *tensors)``
    tf: Call
    #: ``numpy(np, dtype, *arrays)``, or None when NumPy has no such op
    numpy: Call | None = None
    #: ``torch(torch, dtype, *tensors)``, or None when PyTorch has no such op
    torch: Call | None = None
    #: True for ops applied value by value (their inputs can be swept)
    elementwise: bool = False
    #: for elementwise ops: the closed interval of inputs where the op is real-valued
    #: (outside it the result is NaN; poles inside it may give +-inf)
    domain: tuple[float, float] = (-np.inf, np.inf)
    #: False when the output is integer (argmax) or otherwise not in the input dtype
    float_output: bool = True
    #: one line for humans
    doc: str = ""

    def inputs(self, seed: int = 0) -> Inputs:
        """The op's deterministic float64 inputs for ``seed``."""
        return self.make_inputs(np.random.default_rng(seed))

    def in_domain(self, values: Any) -> np.ndarray:
        """Boolean mask: which ``values`` lie in the op's domain (NaN never does).

        >>> get_op("log").in_domain([-1.0, 0.0, 2.0]).tolist()
        [False, True, True]
        """
        x = np.asarray(values, dtype=np.float64)
        lo, hi = self.domain
        with np.errstate(invalid="ignore"):
            return np.asarray((x >= lo) & (x <= hi))


_CATALOG: dict[str, Op] = {}


def _add(op: Op) -> Op:
    if op.group not in GROUPS:
        raise ValueError(f"op {op.name}: unknown group {op.group!r}")
    if op.name in _CATALOG:
        raise ValueError(f"op {op.name} defined twice")
    _CATALOG[op.name] = op
    return op


def catalog() -> dict[str, Op]:
    """All ops by name, in catalog order.

    >>> "cholesky" in catalog()
    True
    """
    return dict(_CATALOG)


def op_names(group: str | None = None) -> list[str]:
    """Names of the ops, optionally of one group.

    >>> op_names("fft")[:2]
    ['fft', 'ifft']
    """
    if group is not None and group not in GROUPS:
        raise ValueError(f"unknown group {group!r}; valid groups: {', '.join(GROUPS)}")
    return [n for n, op in _CATALOG.items() if group is None or op.group == group]


def get_op(name: str | Op) -> Op:
    """The op called ``name``; a ValueError names the closest ones otherwise.

    >>> get_op("exp").group
    'unary'
    """
    if isinstance(name, Op):
        return name
    if not isinstance(name, str):
        raise TypeError(f"op name must be a string, got {type(name).__name__}")
    if name in _CATALOG:
        return _CATALOG[name]
    key = name.strip().lower()
    if key in _CATALOG:
        return _CATALOG[key]
    close = difflib.get_close_matches(key, list(_CATALOG), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else "."
    raise ValueError(f"unknown op {name!r}{hint} Valid ops: {', '.join(_CATALOG)}")


def find_by_raw_op(raw_op: str) -> list[Op]:
    """Catalog ops that dispatch to the TensorFlow raw op ``raw_op``.

    >>> [op.name for op in find_by_raw_op("Cholesky")]
    ['cholesky', 'lstsq']
    """
    return [op for op in _CATALOG.values() if raw_op in op.tf_raw_ops]


def inputs_fit(op: str | Op, fmt: Any, seed: int = 0) -> bool:
    """True when the op's inputs, rounded to ``fmt``, are all finite (no NaN, no
    infinity, no saturation to the format's max) and inside the op's domain.

    >>> inputs_fit("exp", "float4_e2m1fn"), inputs_fit("exp", "float8_e8m0fnu")
    (True, False)
    """
    from explorer.formats import resolve  # formats imports nothing of ours: no cycle

    op = get_op(op)
    fmt = resolve(fmt)
    for x in op.inputs(seed):
        with np.errstate(over="ignore", invalid="ignore"):
            rounded = fmt.round(x).astype(np.float64)
        if not np.all(np.isfinite(rounded)) or np.any(np.abs(x) > fmt.max):
            return False
        if op.elementwise and not np.all(op.in_domain(rounded)):
            return False
    return True


# ---------------------------------------------------------------- input builders


def uniform(lo: float, hi: float, shape: tuple[int, ...] = (64,)) -> Builder:
    """Builder of one uniform input in [lo, hi)."""

    def build(rng: np.random.Generator) -> Inputs:
        return (rng.uniform(lo, hi, shape),)

    return build


def uniform2(
    lo: float,
    hi: float,
    lo2: float | None = None,
    hi2: float | None = None,
    shape: tuple[int, ...] = (64,),
    shape2: tuple[int, ...] | None = None,
) -> Builder:
    """Builder of two uniform inputs (the second in [lo2, hi2) when given)."""

    def build(rng: np.random.Generator) -> Inputs:
        b_lo = lo if lo2 is None else lo2
        b_hi = hi if hi2 is None else hi2
        return rng.uniform(lo, hi, shape), rng.uniform(b_lo, b_hi, shape if shape2 is None else shape2)

    return build


def signed(lo: float, hi: float, shape: tuple[int, ...] = (64,)) -> Builder:
    """Builder of one input with magnitudes in [lo, hi) and random signs (no zeros)."""

    def build(rng: np.random.Generator) -> Inputs:
        return (rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape),)

    return build


def concat(*builders: Builder) -> Builder:
    """Builder whose inputs are those of ``builders``, in order, from one generator."""

    def build(rng: np.random.Generator) -> Inputs:
        out: list[np.ndarray] = []
        for b in builders:
            out.extend(b(rng))
        return tuple(out)

    return build


def no_inputs(rng: np.random.Generator) -> Inputs:
    """Builder of creation ops: no inputs."""
    return ()


def spd_matrix(n: int = 4) -> Builder:
    """Builder of one well-conditioned symmetric positive definite matrix.

    Off-diagonal entries have magnitude below 1 and the diagonal is at least n, so
    the matrix stays diagonally dominant (hence SPD) after rounding to any format.
    """

    def build(rng: np.random.Generator) -> Inputs:
        a = rng.uniform(-0.5, 0.5, (n, n))
        return (a @ a.T + n * np.eye(n),)

    return build


def near_identity(n: int = 4, extra: tuple[int, ...] | None = None) -> Builder:
    """Builder of a diagonally dominant matrix I + E, |E| < 0.2 (condition number < 3),
    optionally followed by a right-hand side of shape ``extra`` in [-1, 1)."""

    def build(rng: np.random.Generator) -> Inputs:
        a = np.eye(n) + rng.uniform(-0.2, 0.2, (n, n))
        if extra is None:
            return (a,)
        return a, rng.uniform(-1, 1, extra)

    return build


def _special() -> Any:
    import scipy.special

    return scipy.special


# ---------------------------------------------------------------- helpers for adding ops


def _elementwise(
    name: str,
    group: str,
    ref: Call,
    tf_public: str,
    raw: tuple[str, ...],
    tf: Call,
    numpy: Call | None,
    torch: Call | None,
    builder: Builder,
    domain: tuple[float, float] = (-np.inf, np.inf),
    doc: str = "",
) -> Op:
    arity = 2 if group == "binary" else 1
    return _add(
        Op(
            name=name,
            group=group,
            arity=arity,
            make_inputs=builder,
            reference=ref,
            tf_public=tf_public,
            tf_raw_ops=raw,
            tf=tf,
            numpy=numpy,
            torch=torch,
            elementwise=True,
            domain=domain,
            doc=doc,
        )
    )


def _unary(
    name: str,
    ref: Call,
    tf_public: str,
    raw: tuple[str, ...],
    tf: Call,
    numpy: Call | None,
    torch: Call | None,
    lo: float,
    hi: float,
    domain: tuple[float, float] = (-np.inf, np.inf),
    doc: str = "",
    builder: Builder | None = None,
) -> Op:
    return _elementwise(
        name, "unary", ref, tf_public, raw, tf, numpy, torch, builder or uniform(lo, hi), domain, doc
    )


def _simple_unary(
    name: str,
    tf_fn: str,
    raw: str,
    np_fn: str | None,
    torch_fn: str | None,
    ref: Call,
    lo: float,
    hi: float,
    domain: tuple[float, float] = (-np.inf, np.inf),
    doc: str = "",
    builder: Builder | None = None,
) -> Op:
    """A unary op that is one function call in each framework, named by dotted paths."""
    np_call = None if np_fn is None else (lambda np, dt, x: _dotted(np, np_fn)(x))
    torch_call = None if torch_fn is None else (lambda torch, dt, x: _dotted(torch, torch_fn)(x))
    return _unary(
        name,
        ref,
        f"tf.{tf_fn}",
        (raw,),
        lambda tf, dt, x: _dotted(tf, tf_fn)(x),
        np_call,
        torch_call,
        lo,
        hi,
        domain,
        doc,
        builder,
    )


def _dotted(module: Any, path: str) -> Any:
    obj = module
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _binary(
    name: str,
    ref: Call,
    tf_public: str,
    raw: tuple[str, ...],
    tf: Call,
    numpy: Call | None,
    torch: Call | None,
    builder: Builder,
    domain: tuple[float, float] = (-np.inf, np.inf),
    doc: str = "",
) -> Op:
    return _elementwise(name, "binary", ref, tf_public, raw, tf, numpy, torch, builder, domain, doc)


def _op(
    name: str,
    group: str,
    arity: int,
    builder: Builder,
    ref: Call,
    tf_public: str,
    raw: tuple[str, ...],
    tf: Call,
    numpy: Call | None = None,
    torch: Call | None = None,
    float_output: bool = True,
    doc: str = "",
) -> Op:
    return _add(
        Op(
            name=name,
            group=group,
            arity=arity,
            make_inputs=builder,
            reference=ref,
            tf_public=tf_public,
            tf_raw_ops=raw,
            tf=tf,
            numpy=numpy,
            torch=torch,
            float_output=float_output,
            doc=doc,
        )
    )


# ---------------------------------------------------------------- creation

_op(
    "range",
    "creation",
    0,
    no_inputs,
    lambda: np.arange(12, dtype=np.float64),
    "tf.range",
    ("Range",),
    lambda tf, dt: tf.range(12, dtype=dt),
    numpy=lambda np, dt: np.arange(12, dtype=dt),
    torch=lambda torch, dt: torch.arange(12, dtype=dt),
    doc="0, 1, ..., 11 (the seed case: tf.range(12, dtype=tf.float16))",
)
_op(
    "linspace",
    "creation",
    0,
    no_inputs,
    lambda: np.linspace(0.0, 1.0, 11),
    "tf.linspace",
    ("Mul", "AddV2", "Sub", "RealDiv", "Cast", "BroadcastTo", "ExpandDims", "Reshape", "ConcatV2", "Slice"),
    lambda tf, dt: tf.linspace(tf.constant(0.0, dt), tf.constant(1.0, dt), 11),
    numpy=lambda np, dt: np.linspace(0.0, 1.0, 11, dtype=dt),
    torch=lambda torch, dt: torch.linspace(0.0, 1.0, 11, dtype=dt),
    doc="11 evenly spaced values from 0 to 1 (tf.linspace is composite; the LinSpace raw op is not used)",
)
# 2,048 elements: below 1,000 tf.zeros/tf.ones fold into a Const and no kernel runs
_op(
    "zeros",
    "creation",
    0,
    no_inputs,
    lambda: np.zeros((32, 64)),
    "tf.zeros",
    ("Fill",),
    lambda tf, dt: tf.zeros((32, 64), dtype=dt),
    numpy=lambda np, dt: np.zeros((32, 64), dtype=dt),
    torch=lambda torch, dt: torch.zeros((32, 64), dtype=dt),
    doc="a 32x64 array of zeros (large enough that TensorFlow runs Fill)",
)
_op(
    "ones",
    "creation",
    0,
    no_inputs,
    lambda: np.ones((32, 64)),
    "tf.ones",
    ("Fill",),
    lambda tf, dt: tf.ones((32, 64), dtype=dt),
    numpy=lambda np, dt: np.ones((32, 64), dtype=dt),
    torch=lambda torch, dt: torch.ones((32, 64), dtype=dt),
    doc="a 32x64 array of ones",
)
_op(
    "fill",
    "creation",
    0,
    no_inputs,
    lambda: np.full(64, 1.5),
    "tf.fill",
    ("Fill",),
    lambda tf, dt: tf.fill([64], tf.constant(1.5, dt)),
    numpy=lambda np, dt: np.full(64, 1.5, dtype=dt),
    torch=lambda torch, dt: torch.full((64,), 1.5, dtype=dt),
    doc="64 copies of 1.5",
)
_op(
    "eye",
    "creation",
    0,
    no_inputs,
    lambda: np.eye(4),
    "tf.eye",
    ("MatrixDiagV3",),
    lambda tf, dt: tf.eye(4, dtype=dt),
    numpy=lambda np, dt: np.eye(4, dtype=dt),
    torch=lambda torch, dt: torch.eye(4, dtype=dt),
    doc="the 4x4 identity matrix",
)

# ---------------------------------------------------------------- elementwise unary

_simple_unary("abs", "math.abs", "Abs", "abs", "abs", np.abs, -4, 4)
_simple_unary("neg", "math.negative", "Neg", "negative", "neg", np.negative, -4, 4)
_simple_unary("sign", "math.sign", "Sign", "sign", "sign", np.sign, -4, 4)
_simple_unary("floor", "math.floor", "Floor", "floor", "floor", np.floor, -4, 4)
_simple_unary("ceil", "math.ceil", "Ceil", "ceil", "ceil", np.ceil, -4, 4)
_simple_unary("round", "math.round", "Round", "round", "round", np.round, -4, 4, doc="round half to even")
_simple_unary("square", "math.square", "Square", "square", "square", np.square, -2, 2)
_simple_unary("sqrt", "math.sqrt", "Sqrt", "sqrt", "sqrt", np.sqrt, 0.25, 4, (0, np.inf))
_unary(
    "rsqrt",
    lambda x: 1.0 / np.sqrt(x),
    "tf.math.rsqrt",
    ("Rsqrt",),
    lambda tf, dt, x: tf.math.rsqrt(x),
    lambda np, dt, x: 1 / np.sqrt(x),
    lambda torch, dt, x: torch.rsqrt(x),
    0.5,
    4,
    (0, np.inf),
    doc="1/sqrt(x) (NumPy: 1 / np.sqrt(x), two roundings)",
)
_simple_unary(
    "reciprocal",
    "math.reciprocal",
    "Reciprocal",
    "reciprocal",
    "reciprocal",
    np.reciprocal,
    0.5,
    4,
    builder=signed(0.5, 4),
)
_simple_unary("exp", "math.exp", "Exp", "exp", "exp", np.exp, -2, 1.5)
_simple_unary("expm1", "math.expm1", "Expm1", "expm1", "expm1", np.expm1, -2, 1.5)
_simple_unary("log", "math.log", "Log", "log", "log", np.log, 0.5, 4, (0, np.inf))
_simple_unary("log1p", "math.log1p", "Log1p", "log1p", "log1p", np.log1p, -0.5, 3, (-1, np.inf))
_simple_unary("sin", "math.sin", "Sin", "sin", "sin", np.sin, -3, 3)
_simple_unary("cos", "math.cos", "Cos", "cos", "cos", np.cos, -3, 3)
_simple_unary("tan", "math.tan", "Tan", "tan", "tan", np.tan, -1, 1)
_simple_unary("asin", "math.asin", "Asin", "arcsin", "asin", np.arcsin, -0.9, 0.9, (-1, 1))
_simple_unary("acos", "math.acos", "Acos", "arccos", "acos", np.arccos, -0.9, 0.9, (-1, 1))
_simple_unary("atan", "math.atan", "Atan", "arctan", "atan", np.arctan, -4, 4)
_simple_unary("sinh", "math.sinh", "Sinh", "sinh", "sinh", np.sinh, -2, 2)
_simple_unary("cosh", "math.cosh", "Cosh", "cosh", "cosh", np.cosh, -2, 2)
_simple_unary("tanh", "math.tanh", "Tanh", "tanh", "tanh", np.tanh, -2, 2)
_simple_unary("asinh", "math.asinh", "Asinh", "arcsinh", "asinh", np.arcsinh, -4, 4)
_simple_unary("acosh", "math.acosh", "Acosh", "arccosh", "acosh", np.arccosh, 1, 4, (1, np.inf))
_simple_unary("atanh", "math.atanh", "Atanh", "arctanh", "atanh", np.arctanh, -0.7, 0.7, (-1, 1))
_unary(
    "sigmoid",
    lambda x: 1.0 / (1.0 + np.exp(-x)),
    "tf.math.sigmoid",
    ("Sigmoid",),
    lambda tf, dt, x: tf.math.sigmoid(x),
    lambda np, dt, x: 1 / (1 + np.exp(-x)),
    lambda torch, dt, x: torch.sigmoid(x),
    -4,
    4,
    doc="1/(1+exp(-x)) (NumPy: that formula)",
)
_unary(
    "erf",
    lambda x: _special().erf(x),
    "tf.math.erf",
    ("Erf",),
    lambda tf, dt, x: tf.math.erf(x),
    None,
    lambda torch, dt, x: torch.erf(x),
    -2,
    2,
)
_unary(
    "erfc",
    lambda x: _special().erfc(x),
    "tf.math.erfc",
    ("Erfc",),
    lambda tf, dt, x: tf.math.erfc(x),
    None,
    lambda torch, dt, x: torch.erfc(x),
    -2,
    2,
)
_unary(
    "erfinv",
    lambda x: _special().erfinv(x),
    "tf.math.erfinv",
    ("Erfinv",),
    lambda tf, dt, x: tf.math.erfinv(x),
    None,
    lambda torch, dt, x: torch.erfinv(x),
    -0.7,
    0.7,
    (-1, 1),
)
_unary(
    "lgamma",
    lambda x: _special().gammaln(x),
    "tf.math.lgamma",
    ("Lgamma",),
    lambda tf, dt, x: tf.math.lgamma(x),
    None,
    lambda torch, dt, x: torch.lgamma(x),
    0.5,
    4,
    doc="log|Gamma(x)|; real everywhere, +inf at the poles 0, -1, -2, ...",
)
_unary(
    "digamma",
    lambda x: _special().digamma(x),
    "tf.math.digamma",
    ("Digamma",),
    lambda tf, dt, x: tf.math.digamma(x),
    None,
    lambda torch, dt, x: torch.digamma(x),
    0.5,
    4,
    doc="d/dx log Gamma(x); poles at 0, -1, -2, ...",
)
_unary(
    "bessel_i0",
    lambda x: _special().i0(x),
    "tf.math.bessel_i0",
    ("BesselI0",),
    lambda tf, dt, x: tf.math.bessel_i0(x),
    lambda np, dt, x: np.i0(x),
    lambda torch, dt, x: torch.special.i0(x),
    -3,
    3,
    doc="modified Bessel function I0 (np.i0 computes in float64 and returns float64)",
)
_unary(
    "bessel_i0e",
    lambda x: _special().i0e(x),
    "tf.math.bessel_i0e",
    ("BesselI0e",),
    lambda tf, dt, x: tf.math.bessel_i0e(x),
    None,
    lambda torch, dt, x: torch.special.i0e(x),
    -3,
    3,
    doc="exponentially scaled I0: exp(-|x|) I0(x)",
)
_unary(
    "bessel_i1",
    lambda x: _special().i1(x),
    "tf.math.bessel_i1",
    ("BesselI1",),
    lambda tf, dt, x: tf.math.bessel_i1(x),
    None,
    lambda torch, dt, x: torch.special.i1(x),
    -3,
    3,
    doc="modified Bessel function I1",
)

# ---------------------------------------------------------------- elementwise binary

_binary(
    "add",
    np.add,
    "tf.math.add",
    ("AddV2",),
    lambda tf, dt, a, b: tf.math.add(a, b),
    lambda np, dt, a, b: np.add(a, b),
    lambda torch, dt, a, b: torch.add(a, b),
    uniform2(-2, 2),
)
_binary(
    "sub",
    np.subtract,
    "tf.math.subtract",
    ("Sub",),
    lambda tf, dt, a, b: tf.math.subtract(a, b),
    lambda np, dt, a, b: np.subtract(a, b),
    lambda torch, dt, a, b: torch.sub(a, b),
    uniform2(-2, 2),
)
_binary(
    "mul",
    np.multiply,
    "tf.math.multiply",
    ("Mul",),
    lambda tf, dt, a, b: tf.math.multiply(a, b),
    lambda np, dt, a, b: np.multiply(a, b),
    lambda torch, dt, a, b: torch.mul(a, b),
    uniform2(-2, 2),
)
_binary(
    "div",
    np.divide,
    "tf.math.divide",
    ("RealDiv",),
    lambda tf, dt, a, b: tf.math.divide(a, b),
    lambda np, dt, a, b: np.divide(a, b),
    lambda torch, dt, a, b: torch.div(a, b),
    concat(uniform(-2, 2), signed(0.5, 2)),
    doc="a / b, b kept away from 0",
)
_binary(
    "pow",
    np.power,
    "tf.math.pow",
    ("Pow",),
    lambda tf, dt, a, b: tf.math.pow(a, b),
    lambda np, dt, a, b: np.power(a, b),
    lambda torch, dt, a, b: torch.pow(a, b),
    uniform2(0.5, 2, -2, 2),
    doc="a ** b with a > 0",
)
_binary(
    "floormod",
    np.mod,
    "tf.math.floormod",
    ("FloorMod",),
    lambda tf, dt, a, b: tf.math.floormod(a, b),
    lambda np, dt, a, b: np.mod(a, b),
    lambda torch, dt, a, b: torch.remainder(a, b),
    uniform2(-4, 4, 0.5, 2),
    doc="a - floor(a / b) * b (sign of b)",
)
_binary(
    "floordiv",
    np.floor_divide,
    "tf.math.floordiv",
    ("FloorDiv",),
    lambda tf, dt, a, b: tf.math.floordiv(a, b),
    lambda np, dt, a, b: np.floor_divide(a, b),
    lambda torch, dt, a, b: torch.floor_divide(a, b),
    uniform2(-4, 4, 0.5, 2),
)
_binary(
    "truncatemod",
    np.fmod,
    "tf.truncatemod",
    ("TruncateMod",),
    lambda tf, dt, a, b: tf.truncatemod(a, b),
    lambda np, dt, a, b: np.fmod(a, b),
    lambda torch, dt, a, b: torch.fmod(a, b),
    uniform2(-4, 4, 0.5, 2),
    doc="C fmod (sign of a)",
)
_binary(
    "maximum",
    np.maximum,
    "tf.math.maximum",
    ("Maximum",),
    lambda tf, dt, a, b: tf.math.maximum(a, b),
    lambda np, dt, a, b: np.maximum(a, b),
    lambda torch, dt, a, b: torch.maximum(a, b),
    uniform2(-4, 4),
)
_binary(
    "minimum",
    np.minimum,
    "tf.math.minimum",
    ("Minimum",),
    lambda tf, dt, a, b: tf.math.minimum(a, b),
    lambda np, dt, a, b: np.minimum(a, b),
    lambda torch, dt, a, b: torch.minimum(a, b),
    uniform2(-4, 4),
)
_binary(
    "atan2",
    np.arctan2,
    "tf.math.atan2",
    ("Atan2",),
    lambda tf, dt, y, x: tf.math.atan2(y, x),
    lambda np, dt, y, x: np.arctan2(y, x),
    lambda torch, dt, y, x: torch.atan2(y, x),
    uniform2(-2, 2),
    doc="atan2(y, x)",
)
_binary(
    "squared_difference",
    lambda a, b: np.square(a - b),
    "tf.math.squared_difference",
    ("SquaredDifference",),
    lambda tf, dt, a, b: tf.math.squared_difference(a, b),
    lambda np, dt, a, b: np.square(a - b),
    lambda torch, dt, a, b: torch.square(a - b),
    uniform2(-1, 1),
    doc="(a - b)**2 (NumPy: np.square(a - b), two roundings)",
)
_binary(
    "igamma",
    lambda a, x: _special().gammainc(a, x),
    "tf.math.igamma",
    ("Igamma",),
    lambda tf, dt, a, x: tf.math.igamma(a, x),
    None,
    lambda torch, dt, a, x: torch.special.gammainc(a, x),
    uniform2(0.5, 4),
    (0, np.inf),
    doc="regularized lower incomplete gamma P(a, x)",
)
_binary(
    "igammac",
    lambda a, x: _special().gammaincc(a, x),
    "tf.math.igammac",
    ("Igammac",),
    lambda tf, dt, a, x: tf.math.igammac(a, x),
    None,
    lambda torch, dt, a, x: torch.special.gammaincc(a, x),
    uniform2(0.5, 4),
    (0, np.inf),
    doc="regularized upper incomplete gamma Q(a, x)",
)
_binary(
    "xlogy",
    lambda x, y: x * np.log(y),
    "tf.math.xlogy",
    ("Xlogy",),
    lambda tf, dt, x, y: tf.math.xlogy(x, y),
    lambda np, dt, x, y: x * np.log(y),
    lambda torch, dt, x, y: torch.xlogy(x, y),
    uniform2(-2, 2, 0.5, 4),
    doc="x * log(y), 0 where x == 0 (NumPy: x * np.log(y))",
)

# ---------------------------------------------------------------- reduction
# Reductions take a (4, 16) array and reduce its last axis.

_ROWS = (4, 16)


def _np_logsumexp(np: Any, x: Any) -> Any:
    m = np.max(x, axis=-1, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=-1)) + m[..., 0]


_op(
    "sum",
    "reduction",
    1,
    uniform(-1, 1, _ROWS),
    lambda x: np.sum(x, axis=-1),
    "tf.math.reduce_sum",
    ("Sum",),
    lambda tf, dt, x: tf.math.reduce_sum(x, axis=-1),
    numpy=lambda np, dt, x: np.sum(x, axis=-1),
    torch=lambda torch, dt, x: torch.sum(x, dim=-1),
    doc="sum of each row",
)
_op(
    "mean",
    "reduction",
    1,
    uniform(-1, 1, _ROWS),
    lambda x: np.mean(x, axis=-1),
    "tf.math.reduce_mean",
    ("Mean",),
    lambda tf, dt, x: tf.math.reduce_mean(x, axis=-1),
    numpy=lambda np, dt, x: np.mean(x, axis=-1),
    torch=lambda torch, dt, x: torch.mean(x, dim=-1),
    doc="mean of each row",
)
_op(
    "prod",
    "reduction",
    1,
    uniform(0.8, 1.25, _ROWS),
    lambda x: np.prod(x, axis=-1),
    "tf.math.reduce_prod",
    ("Prod",),
    lambda tf, dt, x: tf.math.reduce_prod(x, axis=-1),
    numpy=lambda np, dt, x: np.prod(x, axis=-1),
    torch=lambda torch, dt, x: torch.prod(x, dim=-1),
    doc="product of each row (factors near 1)",
)
_op(
    "reduce_max",
    "reduction",
    1,
    uniform(-4, 4, _ROWS),
    lambda x: np.max(x, axis=-1),
    "tf.math.reduce_max",
    ("Max",),
    lambda tf, dt, x: tf.math.reduce_max(x, axis=-1),
    numpy=lambda np, dt, x: np.max(x, axis=-1),
    torch=lambda torch, dt, x: torch.amax(x, dim=-1),
    doc="largest value of each row",
)
_op(
    "reduce_min",
    "reduction",
    1,
    uniform(-4, 4, _ROWS),
    lambda x: np.min(x, axis=-1),
    "tf.math.reduce_min",
    ("Min",),
    lambda tf, dt, x: tf.math.reduce_min(x, axis=-1),
    numpy=lambda np, dt, x: np.min(x, axis=-1),
    torch=lambda torch, dt, x: torch.amin(x, dim=-1),
    doc="smallest value of each row",
)
_op(
    "logsumexp",
    "reduction",
    1,
    uniform(-2, 2, _ROWS),
    lambda x: _np_logsumexp(np, x),
    "tf.math.reduce_logsumexp",
    ("Max", "Sub", "Exp", "Sum", "Log", "AddV2", "IsFinite", "SelectV2", "StopGradient", "Shape", "Reshape"),
    lambda tf, dt, x: tf.math.reduce_logsumexp(x, axis=-1),
    numpy=lambda np, dt, x: _np_logsumexp(np, x),
    torch=lambda torch, dt, x: torch.logsumexp(x, dim=-1),
    doc="log(sum(exp(x))) of each row, max-shifted",
)
_op(
    "variance",
    "reduction",
    1,
    uniform(-2, 2, _ROWS),
    lambda x: np.var(x, axis=-1),
    "tf.math.reduce_variance",
    ("Mean", "Sub", "Square"),
    lambda tf, dt, x: tf.math.reduce_variance(x, axis=-1),
    numpy=lambda np, dt, x: np.var(x, axis=-1),
    torch=lambda torch, dt, x: torch.var(x, dim=-1, correction=0),
    doc="population variance of each row",
)
_op(
    "std",
    "reduction",
    1,
    uniform(-2, 2, _ROWS),
    lambda x: np.std(x, axis=-1),
    "tf.math.reduce_std",
    ("Mean", "Sub", "Square", "Sqrt"),
    lambda tf, dt, x: tf.math.reduce_std(x, axis=-1),
    numpy=lambda np, dt, x: np.std(x, axis=-1),
    torch=lambda torch, dt, x: torch.std(x, dim=-1, correction=0),
    doc="population standard deviation of each row",
)
_op(
    "euclidean_norm",
    "reduction",
    1,
    uniform(-1, 1, _ROWS),
    lambda x: np.sqrt(np.sum(x * x, axis=-1)),
    "tf.math.reduce_euclidean_norm",
    ("EuclideanNorm",),
    lambda tf, dt, x: tf.math.reduce_euclidean_norm(x, axis=-1),
    numpy=lambda np, dt, x: np.linalg.norm(x, axis=-1),
    torch=lambda torch, dt, x: torch.linalg.vector_norm(x, dim=-1),
    doc="sqrt(sum(x**2)) of each row",
)
_op(
    "cumsum",
    "reduction",
    1,
    uniform(-1, 1, _ROWS),
    lambda x: np.cumsum(x, axis=-1),
    "tf.math.cumsum",
    ("Cumsum",),
    lambda tf, dt, x: tf.math.cumsum(x, axis=-1),
    numpy=lambda np, dt, x: np.cumsum(x, axis=-1),
    torch=lambda torch, dt, x: torch.cumsum(x, dim=-1),
    doc="running sum along each row",
)
_op(
    "cumprod",
    "reduction",
    1,
    uniform(0.8, 1.25, _ROWS),
    lambda x: np.cumprod(x, axis=-1),
    "tf.math.cumprod",
    ("Cumprod",),
    lambda tf, dt, x: tf.math.cumprod(x, axis=-1),
    numpy=lambda np, dt, x: np.cumprod(x, axis=-1),
    torch=lambda torch, dt, x: torch.cumprod(x, dim=-1),
    doc="running product along each row",
)
_op(
    "sort",
    "reduction",
    1,
    uniform(-4, 4, _ROWS),
    lambda x: np.sort(x, axis=-1),
    "tf.sort",
    ("TopKV2", "Neg"),
    lambda tf, dt, x: tf.sort(x, axis=-1),
    numpy=lambda np, dt, x: np.sort(x, axis=-1),
    torch=lambda torch, dt, x: torch.sort(x, dim=-1).values,
    doc="each row sorted ascending (TensorFlow: top_k of -x)",
)
_op(
    "argmax",
    "reduction",
    1,
    uniform(-4, 4, _ROWS),
    lambda x: np.argmax(x, axis=-1),
    "tf.math.argmax",
    ("ArgMax",),
    lambda tf, dt, x: tf.math.argmax(x, axis=-1),
    numpy=lambda np, dt, x: np.argmax(x, axis=-1),
    torch=lambda torch, dt, x: torch.argmax(x, dim=-1),
    float_output=False,
    doc="index of the largest value of each row (integer output)",
)
_op(
    "argmin",
    "reduction",
    1,
    uniform(-4, 4, _ROWS),
    lambda x: np.argmin(x, axis=-1),
    "tf.math.argmin",
    ("ArgMin",),
    lambda tf, dt, x: tf.math.argmin(x, axis=-1),
    numpy=lambda np, dt, x: np.argmin(x, axis=-1),
    torch=lambda torch, dt, x: torch.argmin(x, dim=-1),
    float_output=False,
    doc="index of the smallest value of each row (integer output)",
)
_op(
    "top_k",
    "reduction",
    1,
    uniform(-4, 4, _ROWS),
    lambda x: -np.sort(-x, axis=-1)[..., :4],
    "tf.math.top_k",
    ("TopKV2",),
    lambda tf, dt, x: tf.math.top_k(x, k=4).values,
    numpy=lambda np, dt, x: -np.sort(-x, axis=-1)[..., :4],
    torch=lambda torch, dt, x: torch.topk(x, 4, dim=-1).values,
    doc="the 4 largest values of each row, largest first",
)

# ---------------------------------------------------------------- linear algebra


def _qr_r(r: Any, sign: Any, diag: Any) -> Any:
    """R with each row multiplied by the sign of its diagonal entry (makes QR unique)."""
    return r * sign(diag(r))[..., :, None]


def _triangular(n: int = 4) -> Builder:
    def build(rng: np.random.Generator) -> Inputs:
        lower = np.tril(np.eye(n) + rng.uniform(-0.2, 0.2, (n, n)))
        return lower, rng.uniform(-1, 1, (n, 2))

    return build


def _tall(rng: np.random.Generator) -> Inputs:
    a = np.vstack([np.eye(4) + rng.uniform(-0.2, 0.2, (4, 4)), rng.uniform(-0.2, 0.2, (2, 4))])
    return a, rng.uniform(-1, 1, (6, 2))


_op(
    "matmul",
    "linalg",
    2,
    uniform2(-1, 1, shape=(4, 8), shape2=(8, 4)),
    np.matmul,
    "tf.linalg.matmul",
    ("MatMul",),
    lambda tf, dt, a, b: tf.linalg.matmul(a, b),
    numpy=lambda np, dt, a, b: np.matmul(a, b),
    torch=lambda torch, dt, a, b: torch.matmul(a, b),
    doc="(4, 8) @ (8, 4)",
)
_op(
    "batch_matmul",
    "linalg",
    2,
    uniform2(-1, 1, shape=(2, 4, 8), shape2=(2, 8, 4)),
    np.matmul,
    "tf.linalg.matmul",
    ("BatchMatMulV2",),
    lambda tf, dt, a, b: tf.linalg.matmul(a, b),
    numpy=lambda np, dt, a, b: np.matmul(a, b),
    torch=lambda torch, dt, a, b: torch.matmul(a, b),
    doc="(2, 4, 8) @ (2, 8, 4): tf.linalg.matmul on 3-D inputs",
)
_op(
    "matvec",
    "linalg",
    2,
    uniform2(-1, 1, shape=(4, 8), shape2=(8,)),
    np.matmul,
    "tf.linalg.matvec",
    ("MatMul", "ExpandDims", "Squeeze"),
    lambda tf, dt, a, v: tf.linalg.matvec(a, v),
    numpy=lambda np, dt, a, v: np.matmul(a, v),
    torch=lambda torch, dt, a, v: torch.mv(a, v),
    doc="(4, 8) matrix times an 8-vector",
)
_op(
    "einsum",
    "linalg",
    2,
    uniform2(-1, 1, shape=(4, 8), shape2=(8, 4)),
    lambda a, b: np.einsum("ij,jk->ik", a, b),
    "tf.einsum",
    ("Einsum",),
    lambda tf, dt, a, b: tf.einsum("ij,jk->ik", a, b),
    numpy=lambda np, dt, a, b: np.einsum("ij,jk->ik", a, b),
    torch=lambda torch, dt, a, b: torch.einsum("ij,jk->ik", a, b),
    doc="einsum('ij,jk->ik')",
)
_op(
    "cross",
    "linalg",
    2,
    uniform2(-1, 1, shape=(8, 3)),
    np.cross,
    "tf.linalg.cross",
    ("Cross",),
    lambda tf, dt, a, b: tf.linalg.cross(a, b),
    numpy=lambda np, dt, a, b: np.cross(a, b),
    torch=lambda torch, dt, a, b: torch.linalg.cross(a, b),
    doc="8 cross products of 3-vectors",
)
_op(
    "trace",
    "linalg",
    1,
    uniform(-1, 1, (4, 4)),
    np.trace,
    "tf.linalg.trace",
    ("MatrixDiagPartV3", "Sum"),
    lambda tf, dt, a: tf.linalg.trace(a),
    numpy=lambda np, dt, a: np.trace(a),
    torch=lambda torch, dt, a: torch.trace(a),
    doc="sum of the diagonal of a 4x4 matrix",
)
_op(
    "cholesky",
    "linalg",
    1,
    spd_matrix(),
    np.linalg.cholesky,
    "tf.linalg.cholesky",
    ("Cholesky",),
    lambda tf, dt, a: tf.linalg.cholesky(a),
    numpy=lambda np, dt, a: np.linalg.cholesky(a),
    torch=lambda torch, dt, a: torch.linalg.cholesky(a),
    doc="lower Cholesky factor of a 4x4 SPD matrix",
)
_op(
    "det",
    "linalg",
    1,
    near_identity(),
    np.linalg.det,
    "tf.linalg.det",
    ("MatrixDeterminant",),
    lambda tf, dt, a: tf.linalg.det(a),
    numpy=lambda np, dt, a: np.linalg.det(a),
    torch=lambda torch, dt, a: torch.linalg.det(a),
    doc="determinant of I + E, |E| < 0.2",
)
_op(
    "slogdet",
    "linalg",
    1,
    near_identity(),
    lambda a: np.linalg.slogdet(a)[1],
    "tf.linalg.slogdet",
    ("LogMatrixDeterminant",),
    lambda tf, dt, a: tf.linalg.slogdet(a)[1],
    numpy=lambda np, dt, a: np.linalg.slogdet(a)[1],
    torch=lambda torch, dt, a: torch.linalg.slogdet(a)[1],
    doc="log|det| of I + E (the canonical output; the sign is dropped)",
)
_op(
    "inv",
    "linalg",
    1,
    near_identity(),
    np.linalg.inv,
    "tf.linalg.inv",
    ("MatrixInverse",),
    lambda tf, dt, a: tf.linalg.inv(a),
    numpy=lambda np, dt, a: np.linalg.inv(a),
    torch=lambda torch, dt, a: torch.linalg.inv(a),
    doc="inverse of I + E, |E| < 0.2",
)
_op(
    "solve",
    "linalg",
    2,
    near_identity(4, (4, 2)),
    np.linalg.solve,
    "tf.linalg.solve",
    ("MatrixSolve",),
    lambda tf, dt, a, b: tf.linalg.solve(a, b),
    numpy=lambda np, dt, a, b: np.linalg.solve(a, b),
    torch=lambda torch, dt, a, b: torch.linalg.solve(a, b),
    doc="solve (I + E) X = B",
)
_op(
    "triangular_solve",
    "linalg",
    2,
    _triangular(),
    lambda a, b: np.linalg.solve(a, b),
    "tf.linalg.triangular_solve",
    ("MatrixTriangularSolve",),
    lambda tf, dt, a, b: tf.linalg.triangular_solve(a, b, lower=True),
    numpy=None,
    torch=lambda torch, dt, a, b: torch.linalg.solve_triangular(a, b, upper=False),
    doc="solve L X = B for lower-triangular L (NumPy has no triangular solver)",
)
_op(
    "lstsq",
    "linalg",
    2,
    _tall,
    lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0],
    "tf.linalg.lstsq",
    ("Cholesky", "MatrixTriangularSolve", "MatMul"),
    lambda tf, dt, a, b: tf.linalg.lstsq(a, b),
    numpy=lambda np, dt, a, b: np.linalg.lstsq(a, b, rcond=None)[0],
    torch=lambda torch, dt, a, b: torch.linalg.lstsq(a, b).solution,
    doc="least-squares solution of a full-rank 6x4 system (TensorFlow's default fast path: "
    "Cholesky of the normal equations, not the MatrixSolveLs raw op)",
)
_op(
    "qr",
    "linalg",
    1,
    near_identity(),
    lambda a: _qr_r(np.linalg.qr(a)[1], np.sign, np.diagonal),
    "tf.linalg.qr",
    ("Qr", "MatrixDiagPartV3", "Sign", "StridedSlice", "Mul"),
    lambda tf, dt, a: _qr_r(tf.linalg.qr(a)[1], tf.math.sign, tf.linalg.diag_part),
    numpy=lambda np, dt, a: _qr_r(np.linalg.qr(a)[1], np.sign, np.diagonal),
    torch=lambda torch, dt, a: _qr_r(torch.linalg.qr(a).R, torch.sign, torch.diagonal),
    doc="R of A = QR, rows' signs chosen so that diag(R) > 0 (the canonical output)",
)
_op(
    "svd",
    "linalg",
    1,
    uniform(-1, 1, (4, 4)),
    lambda a: np.linalg.svd(a, compute_uv=False),
    "tf.linalg.svd",
    ("Svd",),
    lambda tf, dt, a: tf.linalg.svd(a, compute_uv=False),
    numpy=lambda np, dt, a: np.linalg.svd(a, compute_uv=False),
    torch=lambda torch, dt, a: torch.linalg.svdvals(a),
    doc="singular values, largest first (the canonical output)",
)
_op(
    "eigh",
    "linalg",
    1,
    spd_matrix(),
    lambda a: np.linalg.eigvalsh(a),
    "tf.linalg.eigh",
    ("SelfAdjointEigV2",),
    lambda tf, dt, a: tf.linalg.eigh(a)[0],
    numpy=lambda np, dt, a: np.linalg.eigh(a)[0],
    torch=lambda torch, dt, a: torch.linalg.eigh(a).eigenvalues,
    doc="eigenvalues of a symmetric matrix, ascending (the canonical output)",
)

# ---------------------------------------------------------------- nn


def _np_softmax(np: Any, x: Any) -> Any:
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def _np_log_softmax(np: Any, x: Any) -> Any:
    shifted = x - np.max(x, axis=-1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))


def _ref_gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _special().erf(x / math.sqrt(2.0)))


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


def _norm_inputs(shape: tuple[int, ...], channels: int) -> Builder:
    return concat(uniform(-2, 2, shape), uniform(-0.5, 0.5, (channels,)), uniform(0.5, 1.5, (channels,)))


def _one_hot_logits(rng: np.random.Generator) -> Inputs:
    labels = np.eye(8)[rng.integers(0, 8, 4)]
    return labels, rng.uniform(-2, 2, (4, 8))


def _torch_nhwc(torch: Any, fn: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    return fn(x.permute(0, 3, 1, 2), *args, **kwargs).permute(0, 2, 3, 1)


_nn_x = uniform(-4, 4)
_unary_nn = [
    (
        "relu",
        lambda x: np.maximum(x, 0.0),
        "tf.nn.relu",
        "Relu",
        lambda tf, dt, x: tf.nn.relu(x),
        lambda np, dt, x: np.maximum(x, 0),
        lambda torch, dt, x: torch.relu(x),
        uniform(-4, 4),
        "",
    ),
    (
        "relu6",
        lambda x: np.clip(x, 0.0, 6.0),
        "tf.nn.relu6",
        "Relu6",
        lambda tf, dt, x: tf.nn.relu6(x),
        lambda np, dt, x: np.clip(x, 0, 6),
        lambda torch, dt, x: torch.nn.functional.relu6(x),
        uniform(-4, 6),
        "min(max(x, 0), 6)",
    ),
    (
        "leaky_relu",
        lambda x: np.where(x > 0, x, 0.2 * x),
        "tf.nn.leaky_relu",
        "LeakyRelu",
        lambda tf, dt, x: tf.nn.leaky_relu(x, alpha=0.2),
        lambda np, dt, x: np.where(x > 0, x, 0.2 * x),
        lambda torch, dt, x: torch.nn.functional.leaky_relu(x, 0.2),
        uniform(-4, 4),
        "alpha = 0.2 (a float32 attribute in TensorFlow, so float64 results carry 0.2f)",
    ),
    (
        "elu",
        lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
        "tf.nn.elu",
        "Elu",
        lambda tf, dt, x: tf.nn.elu(x),
        lambda np, dt, x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
        lambda torch, dt, x: torch.nn.functional.elu(x),
        uniform(-4, 4),
        "",
    ),
    (
        "selu",
        _ref_selu,
        "tf.nn.selu",
        "Selu",
        lambda tf, dt, x: tf.nn.selu(x),
        lambda np, dt, x: _ref_selu_with(np, x),
        lambda torch, dt, x: torch.nn.functional.selu(x),
        uniform(-3, 3),
        "",
    ),
    (
        "softplus",
        lambda x: np.logaddexp(0.0, x),
        "tf.math.softplus",
        "Softplus",
        lambda tf, dt, x: tf.math.softplus(x),
        lambda np, dt, x: np.logaddexp(0, x),
        lambda torch, dt, x: torch.nn.functional.softplus(x),
        uniform(-4, 4),
        "log(1 + exp(x)) (NumPy: np.logaddexp(0, x))",
    ),
    (
        "softsign",
        lambda x: x / (1.0 + np.abs(x)),
        "tf.nn.softsign",
        "Softsign",
        lambda tf, dt, x: tf.nn.softsign(x),
        lambda np, dt, x: x / (1 + np.abs(x)),
        lambda torch, dt, x: torch.nn.functional.softsign(x),
        uniform(-4, 4),
        "x / (1 + |x|)",
    ),
]
for _name, _ref, _public, _raw, _tf, _np, _torch, _builder, _doc in _unary_nn:
    _elementwise(_name, "nn", _ref, _public, (_raw,), _tf, _np, _torch, _builder, doc=_doc)

_elementwise(
    "gelu",
    "nn",
    _ref_gelu,
    "tf.nn.gelu",
    ("Erfc", "Mul", "Neg", "Cast"),
    lambda tf, dt, x: tf.nn.gelu(x, approximate=False),
    None,
    lambda torch, dt, x: torch.nn.functional.gelu(x),
    uniform(-3, 3),
    doc="exact GELU x * (1 + erf(x / sqrt 2)) / 2; TensorFlow builds it as "
    "0.5 x erfc(-x / sqrt 2), no kernel of its own",
)
_elementwise(
    "silu",
    "nn",
    lambda x: x / (1.0 + np.exp(-x)),
    "tf.nn.silu",
    ("Sigmoid", "Mul", "Cast"),
    lambda tf, dt, x: tf.nn.silu(x),
    lambda np, dt, x: x / (1 + np.exp(-x)),
    lambda torch, dt, x: torch.nn.functional.silu(x),
    uniform(-4, 4),
    doc="x * sigmoid(x) (swish)",
)
_elementwise(
    "log_sigmoid",
    "nn",
    lambda x: -np.logaddexp(0.0, -x),
    "tf.math.log_sigmoid",
    ("Softplus", "Neg"),
    lambda tf, dt, x: tf.math.log_sigmoid(x),
    lambda np, dt, x: -np.logaddexp(0, -x),
    lambda torch, dt, x: torch.nn.functional.logsigmoid(x),
    uniform(-4, 4),
    doc="log(sigmoid(x)) = -softplus(-x)",
)

_op(
    "softmax",
    "nn",
    1,
    uniform(-2, 2, _ROWS),
    lambda x: _np_softmax(np, x),
    "tf.nn.softmax",
    ("Softmax",),
    lambda tf, dt, x: tf.nn.softmax(x, axis=-1),
    numpy=lambda np, dt, x: _np_softmax(np, x),
    torch=lambda torch, dt, x: torch.softmax(x, -1),
    doc="softmax of each row (NumPy: the max-shifted formula)",
)
_op(
    "log_softmax",
    "nn",
    1,
    uniform(-2, 2, _ROWS),
    lambda x: _np_log_softmax(np, x),
    "tf.nn.log_softmax",
    ("LogSoftmax",),
    lambda tf, dt, x: tf.nn.log_softmax(x, axis=-1),
    numpy=lambda np, dt, x: _np_log_softmax(np, x),
    torch=lambda torch, dt, x: torch.log_softmax(x, -1),
    doc="log of the softmax of each row",
)
_op(
    "l2_normalize",
    "nn",
    1,
    uniform(-1, 1, _ROWS),
    _ref_l2_normalize,
    "tf.math.l2_normalize",
    ("Square", "Sum", "Maximum", "Rsqrt", "Mul"),
    lambda tf, dt, x: tf.math.l2_normalize(x, axis=-1),
    numpy=lambda np, dt, x: x / np.sqrt(np.maximum(np.sum(x * x, axis=-1, keepdims=True), 1e-12)),
    torch=lambda torch, dt, x: torch.nn.functional.normalize(x, dim=-1),
    doc="each row divided by its Euclidean norm",
)
_op(
    "bias_add",
    "nn",
    2,
    uniform2(-2, 2, -1, 1, shape=(4, 8), shape2=(8,)),
    np.add,
    "tf.nn.bias_add",
    ("BiasAdd",),
    lambda tf, dt, x, b: tf.nn.bias_add(x, b),
    numpy=lambda np, dt, x, b: x + b,
    torch=lambda torch, dt, x, b: x + b,
    doc="(4, 8) + bias (8,)",
)
_op(
    "softmax_cross_entropy",
    "nn",
    2,
    _one_hot_logits,
    lambda labels, logits: -np.sum(labels * _np_log_softmax(np, logits), axis=-1),
    "tf.nn.softmax_cross_entropy_with_logits",
    ("SoftmaxCrossEntropyWithLogits", "Reshape", "Cast"),
    lambda tf, dt, labels, logits: tf.nn.softmax_cross_entropy_with_logits(labels, logits),
    numpy=lambda np, dt, labels, logits: -np.sum(labels * _np_log_softmax(np, logits), axis=-1),
    torch=lambda torch, dt, labels, logits: torch.nn.functional.cross_entropy(
        logits, labels, reduction="none"
    ),
    doc="cross entropy of one-hot labels (4, 8) and logits (4, 8)",
)
_op(
    "conv1d",
    "nn",
    2,
    uniform2(-1, 1, -0.5, 0.5, shape=(1, 16, 2), shape2=(3, 2, 3)),
    _ref_conv1d,
    "tf.nn.conv1d",
    ("Conv2D", "ExpandDims", "Squeeze"),
    lambda tf, dt, x, f: tf.nn.conv1d(x, f, stride=1, padding="VALID"),
    torch=lambda torch, dt, x, f: torch.nn.functional.conv1d(x.permute(0, 2, 1), f.permute(2, 1, 0)).permute(
        0, 2, 1
    ),
    doc="width 16, 2 -> 3 channels, kernel 3, VALID (TensorFlow runs Conv2D)",
)
_op(
    "conv2d",
    "nn",
    2,
    uniform2(-1, 1, -0.5, 0.5, shape=(1, 8, 8, 2), shape2=(3, 3, 2, 3)),
    _ref_conv2d,
    "tf.nn.conv2d",
    ("Conv2D",),
    lambda tf, dt, x, f: tf.nn.conv2d(x, f, strides=1, padding="VALID"),
    torch=lambda torch, dt, x, f: _torch_nhwc(torch, torch.nn.functional.conv2d, x, f.permute(3, 2, 0, 1)),
    doc="NHWC 8x8, 2 -> 3 channels, 3x3 kernel, VALID",
)
_op(
    "depthwise_conv2d",
    "nn",
    2,
    uniform2(-1, 1, -0.5, 0.5, shape=(1, 8, 8, 2), shape2=(3, 3, 2, 2)),
    _ref_depthwise,
    "tf.nn.depthwise_conv2d",
    ("DepthwiseConv2dNative",),
    lambda tf, dt, x, f: tf.nn.depthwise_conv2d(x, f, strides=[1, 1, 1, 1], padding="VALID"),
    torch=lambda torch, dt, x, f: _torch_nhwc(
        torch,
        torch.nn.functional.conv2d,
        x,
        f.permute(2, 3, 0, 1).reshape(-1, 1, *f.shape[:2]),
        groups=f.shape[2],
    ),
    doc="NHWC 8x8, 2 channels, multiplier 2, 3x3 kernel, VALID",
)
_op(
    "conv3d",
    "nn",
    2,
    uniform2(-1, 1, -0.5, 0.5, shape=(1, 4, 4, 4, 2), shape2=(2, 2, 2, 2, 2)),
    _ref_conv3d,
    "tf.nn.conv3d",
    ("Conv3D",),
    lambda tf, dt, x, f: tf.nn.conv3d(x, f, strides=[1, 1, 1, 1, 1], padding="VALID"),
    torch=lambda torch, dt, x, f: torch.nn.functional.conv3d(
        x.permute(0, 4, 1, 2, 3), f.permute(4, 3, 0, 1, 2)
    ).permute(0, 2, 3, 4, 1),
    doc="NDHWC 4x4x4, 2 -> 2 channels, 2x2x2 kernel, VALID",
)
_op(
    "max_pool",
    "nn",
    1,
    uniform(-4, 4, (1, 8, 8, 2)),
    lambda x: _pool_blocks(np, x).max(axis=(2, 4)),
    "tf.nn.max_pool2d",
    ("MaxPool",),
    lambda tf, dt, x: tf.nn.max_pool2d(x, 2, 2, "VALID"),
    numpy=lambda np, dt, x: _pool_blocks(np, x).max(axis=(2, 4)),
    torch=lambda torch, dt, x: _torch_nhwc(torch, torch.nn.functional.max_pool2d, x, 2),
    doc="2x2 max pooling, stride 2, NHWC (NumPy: reshape and max)",
)
_op(
    "avg_pool",
    "nn",
    1,
    uniform(-4, 4, (1, 8, 8, 2)),
    lambda x: _pool_blocks(np, x).mean(axis=(2, 4)),
    "tf.nn.avg_pool2d",
    ("AvgPool",),
    lambda tf, dt, x: tf.nn.avg_pool2d(x, 2, 2, "VALID"),
    numpy=lambda np, dt, x: _pool_blocks(np, x).mean(axis=(2, 4)),
    torch=lambda torch, dt, x: _torch_nhwc(torch, torch.nn.functional.avg_pool2d, x, 2),
    doc="2x2 average pooling, stride 2, NHWC (NumPy: reshape and mean)",
)
_op(
    "batch_norm",
    "nn",
    3,
    _norm_inputs((8, 4), 4),
    lambda x, o, s: _ref_norm(x, o, s, 0),
    "tf.nn.batch_normalization",
    ("Mean", "SquaredDifference", "StopGradient", "AddV2", "Rsqrt", "Mul", "Sub", "Cast"),
    lambda tf, dt, x, o, s: _tf_norm(tf, x, o, s, 0),
    numpy=lambda np, dt, x, o, s: _np_norm(np, x, o, s, 0),
    torch=lambda torch, dt, x, o, s: _torch_norm(torch, x, o, s, 0),
    doc="training-mode batch norm of (8, 4) over the batch: tf.nn.moments + batch_normalization, "
    "epsilon 1e-3; inputs x, offset, scale",
)
_op(
    "fused_batch_norm",
    "nn",
    3,
    concat(uniform(-2, 2, (2, 4, 4, 3)), uniform(0.5, 1.5, (3,)), uniform(-0.5, 0.5, (3,))),
    lambda x, s, o: _ref_norm(x.reshape(-1, 3), o, s, 0).reshape(x.shape),
    "tf.compat.v1.nn.fused_batch_norm",
    ("FusedBatchNormV3", "Cast"),
    lambda tf, dt, x, s, o: _tf_fused_batch_norm(tf, x, s, o),
    torch=lambda torch, dt, x, s, o: torch.nn.functional.batch_norm(
        x.permute(0, 3, 1, 2), None, None, s, o, training=True, eps=1e-3
    ).permute(0, 2, 3, 1),
    doc="the fused kernel Keras uses for 4-D batch norm: NHWC (2, 4, 4, 3), training mode, "
    "epsilon 1e-3; inputs x, scale, offset (scale and offset passed as float32)",
)
_op(
    "layer_norm",
    "nn",
    3,
    _norm_inputs((4, 8), 8),
    lambda x, o, s: _ref_norm(x, o, s, -1),
    "tf.nn.batch_normalization",
    ("Mean", "SquaredDifference", "StopGradient", "AddV2", "Rsqrt", "Mul", "Sub", "Cast"),
    lambda tf, dt, x, o, s: _tf_norm(tf, x, o, s, -1),
    numpy=lambda np, dt, x, o, s: _np_norm(np, x, o, s, -1),
    torch=lambda torch, dt, x, o, s: torch.nn.functional.layer_norm(x, (x.shape[-1],), s, o, eps=1e-3),
    doc="layer norm of each row of (4, 8) as Keras computes it: moments over the last axis + "
    "batch_normalization, epsilon 1e-3; inputs x, offset, scale",
)

# ---------------------------------------------------------------- image
# Images are NHWC batches of one 4x4 RGB image with values in [0, 1).

_IMAGE = (1, 4, 4, 3)


def _ref_rgb_to_hsv(x: np.ndarray) -> np.ndarray:
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    v = np.max(x, axis=-1)
    spread = v - np.min(x, axis=-1)
    safe = np.where(spread > 0, spread, 1.0)
    s = np.where(v > 0, spread / np.where(v > 0, v, 1.0), 0.0)
    h = np.select([v == r, v == g], [(g - b) / safe, 2.0 + (b - r) / safe], 4.0 + (r - g) / safe) / 6.0
    h = np.where(spread > 0, h, 0.0)
    h = np.where(h < 0, h + 1.0, h)
    return np.stack([h, s, v], axis=-1)


def _ref_hsv_to_rgb(x: np.ndarray) -> np.ndarray:
    h, s, v = x[..., 0], x[..., 1], x[..., 2]
    dh = h * 6.0
    dr = np.clip(np.abs(dh - 3.0) - 1.0, 0.0, 1.0)
    dg = np.clip(2.0 - np.abs(dh - 2.0), 0.0, 1.0)
    db = np.clip(2.0 - np.abs(dh - 4.0), 0.0, 1.0)
    return np.stack([v * (1 - s + s * d) for d in (dr, dg, db)], axis=-1)


_GRAY = np.array([0.2989, 0.5870, 0.1140])


def _source_index(out_size: int, in_size: int) -> np.ndarray:
    """Half-pixel-centre source coordinates of the output pixels (tf.image.resize)."""
    return (np.arange(out_size) + 0.5) * (in_size / out_size) - 0.5


def _ref_resize_bilinear(x: np.ndarray, size: tuple[int, int] = (8, 8)) -> np.ndarray:
    out = x
    for axis, n in zip((1, 2), size, strict=True):
        src = _source_index(n, out.shape[axis])
        lo = np.floor(src)
        frac = src - lo
        lower = np.clip(lo, 0, out.shape[axis] - 1).astype(int)
        upper = np.clip(np.ceil(src), 0, out.shape[axis] - 1).astype(int)
        shape = [1] * out.ndim
        shape[axis] = n
        w = frac.reshape(shape)
        out = np.take(out, lower, axis=axis) * (1 - w) + np.take(out, upper, axis=axis) * w
    return out


def _ref_resize_nearest(x: np.ndarray, size: tuple[int, int] = (8, 8)) -> np.ndarray:
    out = x
    for axis, n in zip((1, 2), size, strict=True):
        index = np.floor((np.arange(n) + 0.5) * (out.shape[axis] / n))
        out = np.take(out, np.clip(index, 0, out.shape[axis] - 1).astype(int), axis=axis)
    return out


def _ref_adjust_contrast(x: np.ndarray) -> np.ndarray:
    mean = np.mean(x, axis=(1, 2), keepdims=True)
    return (x - mean) * 2.0 + mean


def _ref_standardize(x: np.ndarray) -> np.ndarray:
    mean = np.mean(x, axis=(1, 2, 3), keepdims=True)
    std = np.std(x, axis=(1, 2, 3), keepdims=True)
    return (x - mean) / np.maximum(std, 1.0 / math.sqrt(x[0].size))


_op(
    "rgb_to_hsv",
    "image",
    1,
    uniform(0, 1, _IMAGE),
    _ref_rgb_to_hsv,
    "tf.image.rgb_to_hsv",
    ("RGBToHSV",),
    lambda tf, dt, x: tf.image.rgb_to_hsv(x),
    doc="RGB -> HSV, all in [0, 1]",
)
_op(
    "hsv_to_rgb",
    "image",
    1,
    uniform(0, 1, _IMAGE),
    _ref_hsv_to_rgb,
    "tf.image.hsv_to_rgb",
    ("HSVToRGB",),
    lambda tf, dt, x: tf.image.hsv_to_rgb(x),
    doc="HSV -> RGB, all in [0, 1]",
)
_op(
    "rgb_to_grayscale",
    "image",
    1,
    uniform(0, 1, _IMAGE),
    lambda x: (x @ _GRAY)[..., None],
    "tf.image.rgb_to_grayscale",
    ("MatMul", "Cast", "Reshape", "ExpandDims"),
    lambda tf, dt, x: tf.image.rgb_to_grayscale(x),
    numpy=lambda np, dt, x: np.matmul(x, np.asarray(_GRAY, dtype=dt))[..., None],
    torch=lambda torch, dt, x: torch.matmul(x, torch.tensor(_GRAY, dtype=dt, device=x.device))[..., None],
    doc="0.2989 R + 0.5870 G + 0.1140 B (TensorFlow computes every dtype in float32 and casts back)",
)
_op(
    "resize",
    "image",
    1,
    uniform(0, 1, _IMAGE),
    _ref_resize_bilinear,
    "tf.image.resize",
    ("ResizeBilinear",),
    lambda tf, dt, x: tf.image.resize(x, (8, 8), method="bilinear"),
    torch=lambda torch, dt, x: _torch_nhwc(
        torch, torch.nn.functional.interpolate, x, size=(8, 8), mode="bilinear", align_corners=False
    ),
    doc="bilinear 4x4 -> 8x8, half-pixel centres (TensorFlow returns float32 for every input dtype)",
)
_op(
    "resize_nearest",
    "image",
    1,
    uniform(0, 1, _IMAGE),
    _ref_resize_nearest,
    "tf.image.resize",
    ("ResizeNearestNeighbor",),
    lambda tf, dt, x: tf.image.resize(x, (8, 8), method="nearest"),
    torch=lambda torch, dt, x: _torch_nhwc(
        torch, torch.nn.functional.interpolate, x, size=(8, 8), mode="nearest-exact"
    ),
    doc="nearest-neighbour 4x4 -> 8x8, half-pixel centres",
)
_op(
    "adjust_contrast",
    "image",
    1,
    uniform(0, 1, _IMAGE),
    _ref_adjust_contrast,
    "tf.image.adjust_contrast",
    ("AdjustContrastv2",),
    lambda tf, dt, x: tf.image.adjust_contrast(x, 2.0),
    numpy=lambda np, dt, x: (
        (x - np.mean(x, axis=(1, 2), keepdims=True)) * 2 + np.mean(x, axis=(1, 2), keepdims=True)
    ),
    doc="(x - channel mean) * 2 + channel mean (TensorFlow computes float64 in float32)",
)
_op(
    "per_image_standardization",
    "image",
    1,
    uniform(0, 1, _IMAGE),
    _ref_standardize,
    "tf.image.per_image_standardization",
    ("Mean", "Sub", "Square", "Sqrt", "Rsqrt", "Maximum", "RealDiv", "Cast"),
    lambda tf, dt, x: tf.image.per_image_standardization(x),
    doc="(x - mean) / max(std, 1/sqrt(N)) per image (TensorFlow returns float32 for float64)",
)

# ---------------------------------------------------------------- fft
# Every result is the magnitude |X| of the complex transform (the canonical output).


def _tf_complex(tf: Any, dt: Any, x: Any) -> Any:
    """x as the complex dtype TensorFlow's FFT takes: complex128 for float64, complex64 otherwise."""
    return tf.cast(x, tf.complex128 if dt == tf.float64 else tf.complex64)


def _ref_dct(x: np.ndarray) -> np.ndarray:
    n = x.shape[-1]
    k = np.arange(n)[:, None]
    basis = 2.0 * np.cos(np.pi * k * (2 * np.arange(n)[None, :] + 1) / (2 * n))
    return x @ basis.T


_op(
    "fft",
    "fft",
    1,
    uniform(-1, 1, (16,)),
    lambda x: np.abs(np.fft.fft(x)),
    "tf.signal.fft",
    ("FFT", "Cast", "ComplexAbs"),
    lambda tf, dt, x: tf.math.abs(tf.signal.fft(_tf_complex(tf, dt, x))),
    numpy=lambda np, dt, x: np.abs(np.fft.fft(x)),
    torch=lambda torch, dt, x: torch.abs(torch.fft.fft(x)),
    doc="|FFT| of 16 real values, cast to complex64 (complex128 for float64) for TensorFlow",
)
_op(
    "ifft",
    "fft",
    1,
    uniform(-1, 1, (16,)),
    lambda x: np.abs(np.fft.ifft(x)),
    "tf.signal.ifft",
    ("IFFT", "Cast", "ComplexAbs"),
    lambda tf, dt, x: tf.math.abs(tf.signal.ifft(_tf_complex(tf, dt, x))),
    numpy=lambda np, dt, x: np.abs(np.fft.ifft(x)),
    torch=lambda torch, dt, x: torch.abs(torch.fft.ifft(x)),
    doc="|inverse FFT| of 16 real values",
)
_op(
    "rfft",
    "fft",
    1,
    uniform(-1, 1, (16,)),
    lambda x: np.abs(np.fft.rfft(x)),
    "tf.signal.rfft",
    ("RFFT", "ComplexAbs"),
    lambda tf, dt, x: tf.math.abs(tf.signal.rfft(x)),
    numpy=lambda np, dt, x: np.abs(np.fft.rfft(x)),
    torch=lambda torch, dt, x: torch.abs(torch.fft.rfft(x)),
    doc="|real FFT| of 16 values (9 bins)",
)
_op(
    "fft2d",
    "fft",
    1,
    uniform(-1, 1, (8, 8)),
    lambda x: np.abs(np.fft.fft2(x)),
    "tf.signal.fft2d",
    ("FFT2D", "Cast", "ComplexAbs"),
    lambda tf, dt, x: tf.math.abs(tf.signal.fft2d(_tf_complex(tf, dt, x))),
    numpy=lambda np, dt, x: np.abs(np.fft.fft2(x)),
    torch=lambda torch, dt, x: torch.abs(torch.fft.fft2(x)),
    doc="|2-D FFT| of an 8x8 real array",
)
_op(
    "rfft2d",
    "fft",
    1,
    uniform(-1, 1, (8, 8)),
    lambda x: np.abs(np.fft.rfft2(x)),
    "tf.signal.rfft2d",
    ("RFFT2D", "ComplexAbs"),
    lambda tf, dt, x: tf.math.abs(tf.signal.rfft2d(x)),
    numpy=lambda np, dt, x: np.abs(np.fft.rfft2(x)),
    torch=lambda torch, dt, x: torch.abs(torch.fft.rfft2(x)),
    doc="|2-D real FFT| of an 8x8 array",
)
_op(
    "dct",
    "fft",
    1,
    uniform(-1, 1, (16,)),
    _ref_dct,
    "tf.signal.dct",
    ("RFFT", "Real", "Complex", "Exp", "Mul", "Neg", "RealDiv", "Pad", "StridedSlice", "Range", "Cast"),
    lambda tf, dt, x: tf.signal.dct(x, type=2),
    doc="unnormalised DCT-II of 16 values (real output; TensorFlow computes it through RFFT)",
)

# ---------------------------------------------------------------- cast

_op(
    "cast",
    "cast",
    1,
    uniform(-4, 4),
    lambda x: x.astype(np.float32).astype(np.float64),
    "tf.cast",
    ("Cast",),
    lambda tf, dt, x: tf.cast(tf.cast(x, tf.float32), dt),
    numpy=lambda np, dt, x: x.astype(np.float32).astype(dt),
    torch=lambda torch, dt, x: x.to(torch.float32).to(dt),
    doc="to float32 and back (exact for every format of 32 bits or fewer; no Cast runs for float32)",
)
_op(
    "cast_to_int32",
    "cast",
    1,
    uniform(-6, 6),
    np.trunc,
    "tf.cast",
    ("Cast",),
    lambda tf, dt, x: tf.cast(x, tf.int32),
    numpy=lambda np, dt, x: x.astype(np.int32),
    torch=lambda torch, dt, x: x.to(torch.int32),
    float_output=False,
    doc="to int32, truncating toward zero (integer output)",
)
_op(
    "cast_from_int32",
    "cast",
    1,
    uniform(-6, 6),
    np.trunc,
    "tf.cast",
    ("Cast",),
    lambda tf, dt, x: tf.cast(tf.cast(x, tf.int32), dt),
    numpy=lambda np, dt, x: x.astype(np.int32).astype(dt),
    torch=lambda torch, dt, x: x.to(torch.int32).to(dt),
    doc="to int32 and back: truncation toward zero, then int32 -> format",
)
_op(
    "saturate_cast",
    "cast",
    1,
    uniform(-4, 6),
    lambda x: np.trunc(np.clip(x, 0, 255)),
    "tf.dtypes.saturate_cast",
    ("Cast", "ClipByValue"),
    lambda tf, dt, x: tf.dtypes.saturate_cast(x, tf.uint8),
    numpy=lambda np, dt, x: np.clip(x, 0, 255).astype(np.uint8),
    torch=lambda torch, dt, x: x.clamp(0, 255).to(torch.uint8),
    float_output=False,
    doc="to uint8, clipping to [0, 255] first (integer output)",
)
