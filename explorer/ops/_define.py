"""How the group modules write their entries: :func:`define` (any op, every field by
keyword), :func:`unary` and :func:`binary` (elementwise ops, where a framework call that
is one function may be given by its name), and small helpers the calls share.

Each call takes the framework module, the target dtype and the inputs already in that
dtype: ``tf(tf, dtype, *tensors)``, ``numpy(np, dtype, *arrays)``,
``torch(torch, dtype, *tensors)``.

>>> import numpy as np
>>> from explorer.ops import get_op
>>> get_op("sqrt").numpy(np, np.float32, np.array([4.0], np.float32))  # numpy="sqrt"
array([2.], dtype=float32)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from explorer.ops._op import Builder, Call, Op, register

#: the domain of ops that are real-valued everywhere
ALL_REALS: tuple[float, float] = (-np.inf, np.inf)


def define(
    *,
    name: str,
    group: str,
    arity: int,
    make_inputs: Builder,
    reference: Call,
    tf_public: str,
    tf_raw_ops: tuple[str, ...],
    tf: Call,
    numpy: Call | None,
    torch: Call | None,
    float_output: bool = True,
    tf_params: tuple[tuple[str, str], ...] = (),
    doc: str = "",
) -> Op:
    """Add an op (not elementwise) to the catalog; the keywords are :class:`Op`'s fields.

    ``numpy`` and ``torch`` must be given (None when the framework has no such op), so
    that every entry says what each framework does.
    """
    return register(
        Op(
            name=name,
            group=group,
            arity=arity,
            make_inputs=make_inputs,
            reference=reference,
            tf_public=tf_public,
            tf_raw_ops=tf_raw_ops,
            tf=tf,
            numpy=numpy,
            torch=torch,
            float_output=float_output,
            tf_params=tf_params,
            doc=doc,
        )
    )


def unary(
    *,
    name: str,
    tf_public: str,
    tf_raw_ops: tuple[str, ...],
    numpy: str | Call | None,
    torch: str | Call | None,
    reference: Call,
    make_inputs: Builder,
    tf: Call | None = None,
    group: str = "unary",
    domain: tuple[float, float] = ALL_REALS,
    zeros: Call | None = None,
    poles: Call | None = None,
    doc: str = "",
) -> Op:
    """Add an elementwise op of one input (group ``unary``, or ``nn`` for activations).

    ``tf`` defaults to calling ``tf_public`` on the input.  ``numpy`` and ``torch`` are
    either a call or the dotted name of one function of that framework applied to the
    input (``"arcsin"`` is ``np.arcsin(x)``, ``"special.i0"`` is ``torch.special.i0(x)``).
    ``zeros`` and ``poles``: where the exact value is 0 and infinite (see :class:`Op`;
    :func:`at` and :func:`nowhere` write them).
    """
    return register(
        Op(
            name=name,
            group=group,
            arity=1,
            make_inputs=make_inputs,
            reference=reference,
            tf_public=tf_public,
            tf_raw_ops=tf_raw_ops,
            tf=tf if tf is not None else _call_by_name(_tf_path(tf_public)),
            numpy=_call_by_name(numpy) if isinstance(numpy, str) else numpy,
            torch=_call_by_name(torch) if isinstance(torch, str) else torch,
            elementwise=True,
            domain=domain,
            zeros=zeros,
            poles=poles,
            doc=doc,
        )
    )


def at(*values: float) -> Call:
    """``zeros``/``poles`` of an op: the inputs equal to one of ``values``.

    >>> at(0.0, 1.0)(np.array([0.0, 0.5, 1.0])).tolist()
    [True, False, True]
    """
    return lambda x: np.isin(np.asarray(x, dtype=np.float64), values)


def nowhere(x: Any) -> np.ndarray:
    """``zeros``/``poles`` of an op that has none: an all-False mask.

    >>> nowhere(np.array([0.0, 1.0])).tolist()
    [False, False]
    """
    return np.zeros(np.shape(x), dtype=bool)


def binary(
    *,
    name: str,
    tf_public: str,
    tf_raw_ops: tuple[str, ...],
    numpy: str | Call | None,
    torch: str | Call | None,
    reference: Call,
    make_inputs: Builder,
    tf: Call | None = None,
    domain: tuple[float, float] = ALL_REALS,
    doc: str = "",
) -> Op:
    """Add an elementwise op of two inputs (group ``binary``); ``domain`` holds for both.

    As for :func:`unary`, ``tf`` defaults to ``tf_public(a, b)`` and ``numpy`` / ``torch``
    may be the dotted name of a function called as ``f(a, b)``.
    """
    return register(
        Op(
            name=name,
            group="binary",
            arity=2,
            make_inputs=make_inputs,
            reference=reference,
            tf_public=tf_public,
            tf_raw_ops=tf_raw_ops,
            tf=tf if tf is not None else _call_by_name(_tf_path(tf_public)),
            numpy=_call_by_name(numpy) if isinstance(numpy, str) else numpy,
            torch=_call_by_name(torch) if isinstance(torch, str) else torch,
            elementwise=True,
            domain=domain,
            doc=doc,
        )
    )


def _tf_path(tf_public: str) -> str:
    if not tf_public.startswith("tf."):
        raise ValueError(f"tf_public must start with 'tf.', got {tf_public!r}")
    return tf_public.removeprefix("tf.")


def _call_by_name(path: str) -> Call:
    """``call(module, dtype, *inputs)`` that calls the function ``module.<path>`` on the inputs."""

    def call(module: Any, dtype: Any, *inputs: Any) -> Any:
        return dotted(module, path)(*inputs)

    return call


def dotted(module: Any, path: str) -> Any:
    """The attribute at dotted ``path`` of ``module``.

    >>> dotted(np, "linalg.norm") is np.linalg.norm
    True
    """
    obj = module
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def scipy_special() -> Any:
    """``scipy.special``, imported on first use (references of erf, lgamma, igamma...).

    >>> float(scipy_special().erf(0.0))
    0.0
    """
    import scipy.special

    return scipy.special


def stable_sigmoid(x: Any) -> np.ndarray:
    """``1 / (1 + exp(-x))`` in float64 without overflow on the way: ``exp(-|x|)`` is at most 1,
    and below ``x = -745`` it underflows to 0 (raising the underflow flag) as the sigmoid does.

    >>> stable_sigmoid(np.array([-1000.0, 0.0, 1000.0])).tolist()
    [0.0, 0.5, 1.0]
    """
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(-np.abs(x))
    return np.asarray(np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)))


def sum_to_odd(a: Any, b: Any) -> np.ndarray:
    """``a + b`` in float64 rounded to odd: an inexact sum goes to the neighbour whose last bit
    is 1.  Rounding that once more to a format of at most 51 bits is then correct (no double
    rounding), even where ``b`` is far below an ulp of ``a``: ``x/2 + x*x/4`` for a tiny ``x``
    is a tie in bfloat16's subnormals that plain float64 cannot see.

    >>> float(sum_to_odd(1.0, 2.0**-80) - 1.0) == 2.0**-52
    True
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    total = a + b
    b_part = total - a
    error = (a - (total - b_part)) + (b - b_part)  # TwoSum: a + b == total + error exactly
    even = (np.atleast_1d(total).view(np.int64) & 1).reshape(total.shape) == 0
    toward = np.where(error > 0, np.inf, -np.inf)
    return np.asarray(np.where((error != 0) & even, np.nextafter(total, toward), total))
