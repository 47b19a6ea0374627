"""The op catalog: what each op is, how to build its inputs, its float64 reference,
and how each framework calls it.

Calls take the framework module, the target dtype (framework object) and the
inputs already converted to that dtype: ``tf(tf, dtype, *tensors)``,
``numpy(np, dtype, *arrays)``, ``torch(torch, dtype, *tensors)``.  A call that
returns several outputs returns the one the reference describes.

>>> from explorer.ops import get_op
>>> get_op("exp").tf_raw_ops
('Exp',)
"""

from __future__ import annotations

import difflib
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
    #: the TensorFlow raw ops it dispatches to (read from the kernel registry)
    tf_raw_ops: tuple[str, ...]
    #: ``tf(tf, dtype, *tensors)``
    tf: Call
    #: ``numpy(np, dtype, *arrays)``, or None when NumPy has no such op
    numpy: Call | None = None
    #: ``torch(torch, dtype, *tensors)``, or None when PyTorch has no such op
    torch: Call | None = None
    #: True for ops applied value by value (their inputs can be swept)
    elementwise: bool = False
    #: for elementwise ops: the open interval of inputs where the op is defined
    domain: tuple[float, float] = (-np.inf, np.inf)
    #: False when the output is integer (argmax) or otherwise not in the input dtype
    float_output: bool = True
    #: one line for humans
    doc: str = ""

    def inputs(self, seed: int = 0) -> Inputs:
        """The op's deterministic float64 inputs for ``seed``."""
        return self.make_inputs(np.random.default_rng(seed))


_CATALOG: dict[str, Op] = {}


def _add(op: Op) -> Op:
    if op.group not in GROUPS:
        raise ValueError(f"op {op.name}: unknown group {op.group!r}")
    if op.name in _CATALOG:
        raise ValueError(f"op {op.name} defined twice")
    _CATALOG[op.name] = op
    return op


def catalog() -> dict[str, Op]:
    """All ops by name, in catalog order."""
    return dict(_CATALOG)


def op_names(group: str | None = None) -> list[str]:
    """Names of the ops, optionally of one group."""
    if group is not None and group not in GROUPS:
        raise ValueError(f"unknown group {group!r}; valid groups: {', '.join(GROUPS)}")
    return [n for n, op in _CATALOG.items() if group is None or op.group == group]


def get_op(name: str | Op) -> Op:
    """The op called ``name``; a ValueError names the closest ones otherwise."""
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
    """Catalog ops that dispatch to the TensorFlow raw op ``raw_op``."""
    return [op for op in _CATALOG.values() if raw_op in op.tf_raw_ops]


# ---------------------------------------------------------------- input builders


def uniform(lo: float, hi: float, shape: tuple[int, ...] = (64,)) -> Callable[[np.random.Generator], Inputs]:
    """Builder of one uniform input in [lo, hi)."""

    def build(rng: np.random.Generator) -> Inputs:
        return (rng.uniform(lo, hi, shape),)

    return build


def uniform2(lo: float, hi: float, lo2: float | None = None, hi2: float | None = None,
             shape: tuple[int, ...] = (64,)) -> Callable[[np.random.Generator], Inputs]:
    """Builder of two uniform inputs."""

    def build(rng: np.random.Generator) -> Inputs:
        b_lo = lo if lo2 is None else lo2
        b_hi = hi if hi2 is None else hi2
        return rng.uniform(lo, hi, shape), rng.uniform(b_lo, b_hi, shape)

    return build


def no_inputs(rng: np.random.Generator) -> Inputs:
    return ()


def _unary(name: str, ref: Call, tf_public: str, raw: tuple[str, ...], tf: Call,
           numpy: Call | None, torch: Call | None, lo: float, hi: float,
           domain: tuple[float, float] = (-np.inf, np.inf), doc: str = "") -> Op:
    return _add(Op(name=name, group="unary", arity=1, make_inputs=uniform(lo, hi),
                   reference=ref, tf_public=tf_public, tf_raw_ops=raw, tf=tf, numpy=numpy,
                   torch=torch, elementwise=True, domain=domain, doc=doc))


def _binary(name: str, ref: Call, tf_public: str, raw: tuple[str, ...], tf: Call,
            numpy: Call | None, torch: Call | None, builder: Callable[[np.random.Generator], Inputs],
            doc: str = "") -> Op:
    return _add(Op(name=name, group="binary", arity=2, make_inputs=builder, reference=ref,
                   tf_public=tf_public, tf_raw_ops=raw, tf=tf, numpy=numpy, torch=torch,
                   elementwise=True, doc=doc))


# ---------------------------------------------------------------- creation

_add(Op("range", "creation", 0, no_inputs, lambda: np.arange(12, dtype=np.float64),
        "tf.range", ("Range",), lambda tf, dt: tf.range(12, dtype=dt),
        numpy=lambda np, dt: np.arange(12, dtype=dt),
        torch=lambda torch, dt: torch.arange(12, dtype=dt),
        doc="0, 1, ..., 11 (the seed case: tf.range(12, dtype=tf.float16))"))

# ---------------------------------------------------------------- elementwise unary

_unary("exp", np.exp, "tf.math.exp", ("Exp",), lambda tf, dt, x: tf.math.exp(x),
       lambda np, dt, x: np.exp(x), lambda torch, dt, x: torch.exp(x), -2, 2)
_unary("log", np.log, "tf.math.log", ("Log",), lambda tf, dt, x: tf.math.log(x),
       lambda np, dt, x: np.log(x), lambda torch, dt, x: torch.log(x), 0.5, 4, (0, np.inf))
_unary("sqrt", np.sqrt, "tf.math.sqrt", ("Sqrt",), lambda tf, dt, x: tf.math.sqrt(x),
       lambda np, dt, x: np.sqrt(x), lambda torch, dt, x: torch.sqrt(x), 0.25, 4, (0, np.inf))
_unary("tanh", np.tanh, "tf.math.tanh", ("Tanh",), lambda tf, dt, x: tf.math.tanh(x),
       lambda np, dt, x: np.tanh(x), lambda torch, dt, x: torch.tanh(x), -2, 2)

# ---------------------------------------------------------------- elementwise binary

_binary("add", np.add, "tf.math.add", ("AddV2",), lambda tf, dt, a, b: tf.math.add(a, b),
        lambda np, dt, a, b: np.add(a, b), lambda torch, dt, a, b: torch.add(a, b),
        uniform2(-2, 2))
_binary("mul", np.multiply, "tf.math.multiply", ("Mul",),
        lambda tf, dt, a, b: tf.math.multiply(a, b), lambda np, dt, a, b: np.multiply(a, b),
        lambda torch, dt, a, b: torch.mul(a, b), uniform2(-2, 2))

# ---------------------------------------------------------------- linear algebra


def spd_matrix(n: int = 4) -> Callable[[np.random.Generator], Inputs]:
    """Builder of one well-conditioned symmetric positive definite matrix."""

    def build(rng: np.random.Generator) -> Inputs:
        a = rng.uniform(-0.5, 0.5, (n, n))
        return (a @ a.T + n * np.eye(n),)

    return build


_add(Op("cholesky", "linalg", 1, spd_matrix(), np.linalg.cholesky, "tf.linalg.cholesky",
        ("Cholesky",), lambda tf, dt, a: tf.linalg.cholesky(a),
        numpy=lambda np, dt, a: np.linalg.cholesky(a),
        torch=lambda torch, dt, a: torch.linalg.cholesky(a),
        doc="lower Cholesky factor of an SPD matrix"))
