"""What an op of the catalog is (:class:`Op`), the registry the group modules fill, and
looking ops up: :func:`catalog`, :func:`op_names`, :func:`get_op`, :func:`find_by_raw_op`,
:func:`inputs_fit`.

>>> get_op("exp").arity
1
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from explorer.formats import resolve

#: the op groups, in catalog order (one module of :mod:`explorer.ops` each)
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
    #: creation ops: the scalar parameters of ``tf`` (keyword arguments whose defaults are the
    #: values), each with the dtype of the 0-d tensor a traced call is given for it: ``"dtype"``
    #: (the op's dtype) or a TensorFlow dtype name such as ``"int32"``.  Called with the defaults
    #: the call is the public call as a user writes it; traced (XLA), the parameters are
    #: arguments of the traced function, so that nothing can be constant-folded away
    tf_params: tuple[tuple[str, str], ...] = ()
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
    #: for elementwise unary ops: ``zeros(x)``, the mask of inputs where the exact value is 0, and
    #: ``poles(x)``, where it is infinite.  They tell a float64 reference of 0 or +-inf that is
    #: exact from one that underflowed or overflowed float64 (``exp(-1000)``, ``erfc(30)``).
    #: None: the floating-point flags the reference raises decide
    #: (:func:`explorer.analysis.regions.reference_flags`).
    zeros: Callable[[np.ndarray], np.ndarray] | None = None
    poles: Callable[[np.ndarray], np.ndarray] | None = None
    #: one line for humans
    doc: str = ""

    def inputs(self, seed: int = 0) -> Inputs:
        """The op's deterministic float64 inputs for ``seed``.

        >>> [x.shape for x in get_op("matmul").inputs()]
        [(4, 8), (8, 4)]
        """
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


#: every op by name, in the order the group modules define them
_CATALOG: dict[str, Op] = {}


def register(op: Op) -> Op:
    """Add ``op`` to the catalog (the group modules call this through ``explorer.ops._define``).

    >>> register(get_op("exp"))
    Traceback (most recent call last):
    ...
    ValueError: op exp defined twice
    """
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


#: the most close matches an unknown name's error suggests
MAX_SUGGESTIONS = 5


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
    close = difflib.get_close_matches(key, list(_CATALOG), n=MAX_SUGGESTIONS, cutoff=0.6)
    if close:  # a typo: the suggestions, not the whole catalog
        raise ValueError(
            f"unknown op {name!r}; did you mean {', '.join(repr(c) for c in close)}? "
            f"Valid ops: {len(_CATALOG)} in the catalog, listed by explorer.catalog()"
        )
    raise ValueError(f"unknown op {name!r}. Valid ops: {', '.join(_CATALOG)}")


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
