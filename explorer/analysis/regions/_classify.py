"""The kind of each input, one of :data:`KINDS` (when each applies: :mod:`explorer.analysis.regions`):
the backend's result against the float64 reference and its correct rounding, the reference's own
poles and float64 underflows told apart (:func:`reference_flags`), flushed subnormal inputs found."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from explorer.analysis.regions._number_line import _overflow_bound
from explorer.formats import Format, ordinals, resolve

#: Kinds of input, in code order (``kinds`` arrays hold indices into this tuple).
KINDS: tuple[str, ...] = ("ok", "overflow", "underflow", "subnormal", "nan", "flush_to_zero")
OK, OVERFLOW, UNDERFLOW, SUBNORMAL, NAN, FLUSH_TO_ZERO = range(6)
#: One line per kind, for legends and tables.
KIND_DEFINITIONS: dict[str, str] = {
    "ok": "a normal result, or an exact zero or infinity (log(0) = -inf)",
    "overflow": "the exact value is finite but rounds past max: the result is inf (NaN; max if saturating)",
    "underflow": "the exact value is nonzero but the result is zero",
    "subnormal": "the result is subnormal: fewer significant bits than a normal number",
    "nan": "outside the op's domain, or the result is NaN",
    "flush_to_zero": "a subnormal input read as zero: the result is the backend's f(+-0), not f(x)",
}


def _beyond_range(reference: np.ndarray, true_finite: np.ndarray, fmt: Format) -> np.ndarray:
    """True where the (mathematically finite) reference rounds past the format's largest finite value."""
    with np.errstate(over="ignore", invalid="ignore"):
        if fmt.overflow == "saturate":
            bound, included = _overflow_bound(fmt)
            magnitude = np.abs(reference)
            limit = float(bound)
            return true_finite & ((magnitude > limit) | ((magnitude == limit) & included))
        rounded = round_reference(reference, fmt)
        return true_finite & ~np.isfinite(rounded)


def round_reference(reference: np.ndarray, fmt: Any) -> np.ndarray:
    """The float64 reference correctly rounded (nearest-even) to ``fmt``, as float64.

    Rounding goes straight from float64 to the format in one step
    (:func:`explorer.rounding.round_to`; the ml_dtypes cast would round twice,
    through float32).
    """
    from explorer.rounding import round_to

    fmt = resolve(fmt)
    with np.errstate(over="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return round_to(np.asarray(reference, dtype=np.float64), fmt).astype(np.float64)


def _same(a: np.ndarray, b: Any) -> np.ndarray:
    """Equal values, NaN equal to NaN (``-0 == 0``)."""
    return np.asarray((a == b) | (np.isnan(a) & np.isnan(b)))


def flushed_inputs(
    x: np.ndarray, result: np.ndarray, rounded: np.ndarray, at_zero: Any, fmt: Any
) -> np.ndarray:
    """Subnormal inputs the backend read as zero (flush-to-zero of inputs, "denormals are zero").

    ``at_zero`` holds the backend's results for ``+0`` and ``-0``.  On each side of zero, the
    subnormal inputs whose result is one of those and not the correctly rounded ``rounded``
    are flushed when the evidence is clear: for at least one of them the correct value is more
    than one step of the format away from what came back (or one side is NaN), so it cannot be
    a rounding error; and the normal input nearest zero on that side is read as itself (a
    backend that loses every small input to cancellation, ``exp(x) - 1`` in float16, is not
    flushing).

    >>> x = np.array([-2.0**-14, -2.0**-15, -2.0**-24, 0.0])  # float16: -2**-14 is normal
    >>> y = np.array([np.nan, -np.inf, -np.inf, -np.inf])  # log on a backend that flushes
    >>> flushed_inputs(x, y, np.array([np.nan] * 3 + [-np.inf]), [-np.inf, -np.inf], "float16").tolist()
    [False, True, True, False]
    """
    fmt = resolve(fmt)
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(result, dtype=np.float64)
    out = np.zeros(x.shape, bool)
    if not fmt.has_subnormals or x.size == 0:
        return out
    zero_results = np.asarray(at_zero, dtype=np.float64).ravel()
    like_zero = np.zeros(x.shape, bool)
    for value in zero_results:
        like_zero |= _same(y, value)
    wrong = ~_same(y, rounded)
    nan_mismatch = np.isnan(y) != np.isnan(rounded)
    both = ~np.isnan(y) & ~np.isnan(rounded)
    far = nan_mismatch.copy()
    if both.any():
        steps = np.abs(ordinals(y[both], fmt) - ordinals(rounded[both], fmt))
        far[both] = steps > 1
    for side in (x > 0, x < 0):
        subnormal = side & (np.abs(x) < fmt.smallest_normal)
        candidates = subnormal & like_zero & wrong
        if not (candidates & far).any():
            continue
        normal = np.nonzero(side & ~subnormal)[0]
        if normal.size:
            nearest = normal[np.argmin(np.abs(x[normal]))]
            if like_zero[nearest] and wrong[nearest]:
                continue
        out |= candidates
    return out


def classify(
    inputs: tuple[np.ndarray, ...],
    reference: np.ndarray,
    result: np.ndarray,
    fmt: Any,
    domain: tuple[float, float] = (-np.inf, np.inf),
    pole: np.ndarray | None = None,
    tiny: np.ndarray | None = None,
    at_zero: Any = None,
    rounded: np.ndarray | None = None,
) -> np.ndarray:
    """Kind codes (indices into :data:`KINDS`) of each input; see the module doc.

    ``domain`` (closed here) applies to the first input of unary ops.  ``pole``
    marks infinite references that are mathematically infinite (``1/0``); other
    infinite references are float64 overflows of a finite value (``exp(1000)``).
    Without ``pole`` every infinite reference counts as a pole.  ``tiny`` marks
    zero references that are float64 underflows of a nonzero value
    (``exp(-1000)``).  :func:`reference_flags` computes both.  ``at_zero``: the
    backend's results for ``+0`` and ``-0`` (unary ops), to find flushed subnormal
    inputs (:func:`flushed_inputs`; ``rounded``, the reference rounded to ``fmt``,
    is computed when not given).

    >>> x = np.array([1.0, 12.0, -20.0])
    >>> with np.errstate(over="ignore"):
    ...     y = np.exp(x.astype(np.float16))
    >>> [KINDS[k] for k in classify((x,), np.exp(x), y, "float16")]
    ['ok', 'overflow', 'underflow']
    """
    fmt = resolve(fmt)
    r = np.asarray(reference, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y = np.asarray(result).astype(np.float64)
    if y.shape != r.shape:
        raise ValueError(f"result shape {y.shape} differs from reference shape {r.shape}")
    infinite = np.isinf(r)
    true_finite = np.isfinite(r) | (infinite & ~(infinite if pole is None else pole))
    nonzero = (r != 0) & ~np.isnan(r)
    if tiny is not None:
        nonzero |= tiny
    kinds = np.full(r.shape, OK, dtype=np.int8)
    beyond = _beyond_range(r, true_finite, fmt)
    abs_y = np.abs(y)
    kinds[(abs_y > 0) & (abs_y < fmt.smallest_normal)] = SUBNORMAL
    kinds[nonzero & (y == 0)] = UNDERFLOW
    over = true_finite & (np.isinf(y) | (np.isnan(y) & beyond) | ((abs_y == fmt.max) & beyond))
    kinds[over] = OVERFLOW
    nan = np.isnan(r) | (np.isnan(y) & ~over)
    if len(inputs) == 1:
        x = np.asarray(inputs[0], dtype=np.float64)
        nan |= (x < domain[0]) | (x > domain[1])
    kinds[nan] = NAN
    if at_zero is not None and len(inputs) == 1:
        if rounded is None:
            rounded = round_reference(r, fmt)
        kinds[flushed_inputs(inputs[0], y, rounded, at_zero, fmt)] = FLUSH_TO_ZERO
    return kinds


def _raises(reference: Any, inputs: tuple[np.ndarray, ...], flag: str) -> np.ndarray:
    """Which elements of ``inputs`` raise the floating-point ``flag`` in ``reference``."""
    hit = np.zeros(inputs[0].shape, bool)
    if inputs[0].size == 0:
        return hit
    settings = {"divide": "ignore", "over": "ignore", "under": "ignore", "invalid": "ignore", flag: "raise"}
    with np.errstate(**settings), warnings.catch_warnings():  # type: ignore[arg-type]
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            reference(*inputs)
            return hit
        except FloatingPointError:
            pass
        for i in range(inputs[0].size):
            try:
                reference(*(x[i : i + 1] for x in inputs))
            except FloatingPointError:
                hit[i] = True
    return hit


def reference_flags(
    reference: Any,
    inputs: tuple[np.ndarray, ...],
    values: np.ndarray,
    zeros: Any = None,
    poles: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(pole, tiny)`` for :func:`classify`.

    ``pole``: infinite reference values that are mathematically infinite.  ``tiny``: zero
    values that are float64 underflows of a nonzero result (``exp(-1000)``, ``erfc(30)``).

    A unary op that declares where it is exactly zero and infinite (``zeros(x)`` and
    ``poles(x)``, the :class:`~explorer.ops.Op` fields) is answered from that: a zero
    reference elsewhere underflowed, an infinite one elsewhere overflowed.  Otherwise the
    floating-point flags of the reference decide: ``pole`` where the divide-by-zero flag is
    raised (``1/0``, ``log(0)``), or, for unary ops whose reference sets no flag
    (``lgamma(-1)``), where the reference at a neighbouring float64 input is finite and far
    from float64's overflow (an overflow such as ``exp(1000)`` is huge or infinite next door
    too); ``tiny`` where the underflow flag is raised.

    >>> x = np.array([0.0, 30.0])
    >>> reference_flags(None, (x,), np.array([1.0, 0.0]), zeros=lambda x: x == 1, poles=lambda x: x == 0)
    (array([False, False]), array([False,  True]))
    """
    if len(inputs) == 1 and zeros is not None and poles is not None:
        x = np.asarray(inputs[0], dtype=np.float64)
        v = np.asarray(values, dtype=np.float64)
        exact_zero = np.asarray(zeros(x), dtype=bool)
        exact_pole = np.asarray(poles(x), dtype=bool)
        return np.isinf(v) & exact_pole, (v == 0) & ~exact_zero
    pole = np.zeros(values.shape, bool)
    tiny = np.zeros(values.shape, bool)
    flat = [np.asarray(x, dtype=np.float64).ravel() for x in inputs]
    v = values.ravel()
    for mask, flag, out in ((np.isinf(v), "divide", pole), (v == 0, "under", tiny)):
        idx = np.nonzero(mask)[0]
        if idx.size:
            out.ravel()[idx] = _raises(reference, tuple(x[idx] for x in flat), flag)
    undecided = np.nonzero(np.isinf(v) & ~pole.ravel())[0]
    if len(flat) == 1 and undecided.size:
        x = flat[0][undecided]
        near = np.zeros(undecided.size, bool)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for direction in (-np.inf, np.inf):
                nb = np.asarray(reference(np.nextafter(x, direction)), dtype=np.float64)
                near |= np.isfinite(nb) & (np.abs(nb) < 1e300)
        pole.ravel()[undecided[near]] = True
    return pole, tiny


def kind_names(kinds: np.ndarray) -> np.ndarray:
    """Kind codes -> array of kind names."""
    return np.asarray(KINDS, dtype=object)[np.asarray(kinds, dtype=np.int64)]
