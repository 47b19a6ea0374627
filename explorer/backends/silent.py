"""Silent wrong results: a run that returned without an error, but whose values are not what
the op computes.

Every backend's result is judged the same way, against the op's float64 reference evaluated on
the inputs *as the format holds them* (so that rounding the inputs is not counted as an error),
and rounded to the format (so that overflow the format cannot avoid is not counted either).
Where that rounded reference is a finite number, the result is silently wrong when

- it is NaN,
- it is infinite (and the reference is below the format's largest finite value),
- or it is farther from the reference than :func:`tolerance` of the format, measured normwise:
  relative to the largest magnitude of the reference, so that a result near zero (a sum that
  cancels) is not judged by its own tiny magnitude.

The tolerance is far above the format's precision on purpose: a result a few ULPs off is an
accuracy question (the Accuracy tab); here only a result that no rounding explains counts: on a
CPU, JAX's sigmoid in float8_e4m3b11fnuz is NaN from x = -3.5 down (exp(-x) passes the format's
largest value, 30, which has no infinity above it), and its mean of (4, 64) values in float8_e3m4
comes back 0.  Elements where the reference is NaN or not finite in the format are not judged.

Integer outputs (argmax, casts to integers) have no rounding to forgive: they are compared
exactly with the reference (:func:`exact_reason`), element by element, without rounding the
reference to the format (an index is not a value of the format).

>>> import numpy as np
>>> from explorer.formats import resolve
>>> f16 = resolve("float16")
>>> wrong_result_reason(np.array([1.0, np.nan], np.float16), np.array([1.0, 2.0]), f16)
'NaN where the float64 reference is finite (1 of 2 elements; first at index 1, reference 2)'
>>> wrong_result_reason(np.array([1.0, 2.0], np.float16), np.array([1.0, 2.0009]), f16)
''
"""

from __future__ import annotations

import dataclasses

import numpy as np

from explorer.formats import Format
from explorer.ops import Op
from explorer.outcome import Outcome, Status

#: a result may be this many times the format's eps off (normwise) before it counts as wrong ...
TOLERANCE_EPS = 1024
#: ... but in formats of 16 bits or fewer never more than this fraction of the result's scale,
#: (for float16 that is 256 eps, for bfloat16 32) ...
TOLERANCE_CAP = 0.25
#: ... and never less than this many eps (float8 and smaller: a result off by a few of its
#: coarse steps is rounding, not a wrong result)
TOLERANCE_FLOOR_EPS = 4
#: formats wider than float32 are judged as float32 is: frameworks compute some float64 ops with
#: float32 constants (TensorFlow's leaky_relu alpha, resize in float32), which is inexact, not wrong
FLOAT32_EPS = 2.0**-23

#: ops whose exact value jumps (a quotient rounded in the format may cross an integer and move
#: the result by a whole step): only NaN and infinities are judged for them.  The catalog has no
#: field for this; the set is checked against the catalog by the tests.
DISCONTINUOUS: frozenset[str] = frozenset({"floordiv", "floormod", "truncatemod"})


def tolerance(fmt: Format) -> float:
    """The normwise relative error above which a result in ``fmt`` is wrong, not merely inexact.

    >>> from explorer.formats import resolve
    >>> [tolerance(resolve(n)) for n in ("float16", "bfloat16", "float8_e4m3fn")]
    [0.25, 0.25, 0.5]
    >>> tolerance(resolve("float32")) == tolerance(resolve("float64")) == 1024 * 2.0**-23
    True
    """
    tol = TOLERANCE_EPS * max(fmt.eps, FLOAT32_EPS)
    if fmt.bits <= 16:
        tol = min(tol, TOLERANCE_CAP)
    return max(tol, TOLERANCE_FLOOR_EPS * fmt.eps)


def _first(mask: np.ndarray, reference: np.ndarray, what: str) -> str:
    """The reason text for the elements of ``mask``: how many, and the first one."""
    index = int(np.flatnonzero(mask)[0])
    return (
        f"{what} where the float64 reference is finite ({int(mask.sum())} of {mask.size} elements; "
        f"first at index {index}, reference {float(reference.ravel()[index]):.6g})"
    )


def wrong_result_reason(result: np.ndarray, reference: np.ndarray, fmt: Format, numeric: bool = True) -> str:
    """Why ``result`` (a run's output in ``fmt``) is silently wrong against the float64
    ``reference`` of the same inputs; ``""`` when it is not.  ``numeric=False`` judges only NaN
    and infinities (for :data:`DISCONTINUOUS` ops).

    >>> from explorer.formats import resolve
    >>> f16 = resolve("float16")
    >>> wrong_result_reason(np.array([np.inf], np.float16), np.array([7e4]), f16)  # overflow: right
    ''
    >>> wrong_result_reason(np.array([-3.0, 3.0], np.float16), np.array([3.0, 3.0]), f16)
    'off by 6 where the reference has magnitude up to 3 (2 > 0.25 normwise, the tolerance of float16)'
    """
    got = np.asarray(result)
    want = np.asarray(reference, dtype=np.float64)
    if got.shape != want.shape:
        return f"shape {got.shape} where the reference has shape {want.shape}"
    if got.dtype.kind in "biu":  # an integer output: nothing to forgive
        return exact_reason(got, want)
    got = got.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        held = fmt.round(want).astype(np.float64)
    judged = np.isfinite(held)
    if not judged.any():
        return ""
    nan = judged & np.isnan(got)
    if nan.any():
        return _first(nan, want, "NaN")
    inf = judged & np.isinf(got) & (np.abs(held) < fmt.max)
    if inf.any():
        return _first(inf, want, "inf" if (got[inf] > 0).all() else "-inf")
    if not numeric:
        return ""
    both = judged & np.isfinite(got)
    scale = max(float(np.max(np.abs(want[both]), initial=0.0)), fmt.smallest_normal)
    error = np.abs(got[both] - want[both])
    worst = float(np.max(error, initial=0.0))
    if worst > tolerance(fmt) * scale:
        return (
            f"off by {worst:.6g} where the reference has magnitude up to {scale:.6g} "
            f"({worst / scale:.3g} > {tolerance(fmt):.3g} normwise, the tolerance of {fmt.name})"
        )
    return ""


def exact_reason(result: np.ndarray, reference: np.ndarray) -> str:
    """Why an integer ``result`` is wrong: the elements that differ from the ``reference`` (same
    shape) where the reference is finite; ``""`` when every one is equal.

    >>> exact_reason(np.array([1, 9, 3], np.int32), np.array([1.0, 2.0, 3.0]))
    'differs from the exact reference (1 of 3 elements; first at index 1: 9, reference 2)'
    >>> exact_reason(np.array([1, 2], np.int64), np.array([1.0, 2.0]))
    ''
    """
    got = np.asarray(result).astype(np.float64)
    want = np.asarray(reference, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        wrong = np.isfinite(want) & (got != want)
    if not wrong.any():
        return ""
    index = int(np.flatnonzero(wrong)[0])
    return (
        f"differs from the exact reference ({int(wrong.sum())} of {wrong.size} elements; "
        f"first at index {index}: {got.ravel()[index]:.6g}, reference {want.ravel()[index]:.6g})"
    )


def held_in(fmt: Format, values: np.ndarray) -> np.ndarray:
    """``values`` rounded to ``fmt`` correctly (in one step), as float64: the framework's own
    conversion then only changes the dtype (PyTorch and ml_dtypes before 0.7 round float64 to
    bfloat16 through float32, twice).

    >>> from explorer.formats import resolve
    >>> float(held_in(resolve("bfloat16"), np.array([1 + 2**-8 + 2**-40]))[0])
    1.0078125
    """
    with np.errstate(over="ignore", invalid="ignore"):
        return np.ascontiguousarray(fmt.round(np.asarray(values, dtype=np.float64)).astype(np.float64))


def reference_of(op: Op, inputs: tuple[np.ndarray, ...], fmt: Format) -> np.ndarray | None:
    """The op's float64 reference on ``inputs`` rounded to ``fmt`` (what the backend was given);
    None when the rounded inputs are not all finite or the reference cannot be computed."""
    with np.errstate(all="ignore"):
        held = tuple(held_in(fmt, x) for x in inputs)
        if not all(np.all(np.isfinite(x)) for x in held):
            return None
        try:
            return np.asarray(op.reference(*held), dtype=np.float64)
        except (ArithmeticError, ValueError, TypeError, ImportError):
            return None


def judge(outcome: Outcome, op: Op, inputs: tuple[np.ndarray, ...], fmt: Format) -> Outcome:
    """``outcome`` as :meth:`explorer.backends.base.Backend.run` returns it: unchanged, unless it
    ran (``ok`` or ``fallback``) and its result is silently wrong; then a copy with status
    ``wrong_result``, the reason as its detail, and the result kept.

    >>> import numpy as np
    >>> from explorer.formats import resolve
    >>> from explorer.ops import get_op
    >>> x = (np.array([0.5, 1.0]),)
    >>> ran = Outcome(Status.OK, np.array([0.5, np.nan], np.float16))
    >>> judge(ran, get_op("abs"), x, resolve("float16")).status
    <Status.WRONG_RESULT: 'wrong_result'>
    """
    if not outcome.ran or outcome.result is None:
        return outcome
    reference = reference_of(op, inputs, fmt)
    if reference is None:
        return outcome
    if op.float_output:
        reason = wrong_result_reason(outcome.result, reference, fmt, numeric=op.name not in DISCONTINUOUS)
    else:  # an integer output, whatever dtype it came back in
        result = np.asarray(outcome.result)
        shape_wrong = result.shape != reference.shape
        shapes = f"shape {result.shape} where the reference has shape {reference.shape}"
        reason = shapes if shape_wrong else exact_reason(result, reference)
    if not reason:
        return outcome
    detail = "; ".join(d for d in (outcome.detail, f"silently wrong: {reason}") if d)
    extra = {**outcome.extra, "ran_as": outcome.status.value}
    return dataclasses.replace(outcome, status=Status.WRONG_RESULT, detail=detail, extra=extra)
