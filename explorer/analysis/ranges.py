"""Where a format breaks: the number line of each format, and, for an op on a
backend, which *inputs* give overflow, underflow, subnormal results or NaN.

Every finite value of a format of 16 bits or fewer is swept (all 63,487
distinct finite float16 values in one vectorised call per backend); wider
formats are sampled evenly in bit-pattern order (so evenly on a log axis,
subnormals included) and every boundary between two kinds is then refined
by sampling inside its gap until the two sides are neighbouring values: the
thresholds are exact for wide formats too.

Kinds of an input ``x`` with float64 reference ``r = op.reference(x)`` and
backend result ``y`` (first match wins):

- ``nan``: ``x`` outside the op's domain, ``r`` is NaN, or ``y`` is NaN
  while ``r`` is not an overflow;
- ``overflow``: ``r`` finite and ``y`` infinite or NaN, or ``y`` saturated at
  ``±max`` while ``r`` lies beyond the format's range;
- ``underflow``: ``r`` nonzero and ``y`` zero;
- ``subnormal``: ``y`` in the subnormal range (precision lost);
- ``ok``: everything else.

"Beyond the range" means: ``r`` correctly rounded to the format is not finite
(or, for saturating formats, ``|r|`` is past ``max`` by half a unit in the
last place).

>>> regions = op_regions("exp", "float16", "numpy")
>>> regions.thresholds["overflow"]["positive"]["min"]
11.09375
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from explorer.formats import Format, all_formats, decode, encode, resolve
from explorer.ops import Op, catalog, get_op

#: Kinds of input, in code order (``kinds`` arrays hold indices into this tuple).
KINDS: tuple[str, ...] = ("ok", "overflow", "underflow", "subnormal", "nan")
OK, OVERFLOW, UNDERFLOW, SUBNORMAL, NAN = range(5)
#: Backends swept by default (the three of issue 4).
DEFAULT_BACKENDS: tuple[str, ...] = ("numpy", "tensorflow", "emulated")
#: Binary ops with a 2-D map (any elementwise binary op of the catalog works).
BINARY_MAP_OPS: tuple[str, ...] = ("add", "mul", "div", "pow")
#: Samples per sign for formats too wide to enumerate.
DEFAULT_SAMPLES = 32768
#: Most samples per sign (2 x 10**7 inputs: a few GB of arrays per backend).
MAX_SAMPLES = 10**7
#: Most points along each axis of a binary map (a grid of MAX_POINTS**2 pairs).
MAX_POINTS = 4097


def check_samples(samples: Any) -> int:
    """``samples`` when it is an integer from 2 to :data:`MAX_SAMPLES`; TypeError/ValueError otherwise.

    >>> check_samples(1000)
    1000
    """
    if isinstance(samples, bool) or not isinstance(samples, int | np.integer):
        raise TypeError(f"samples must be an integer, got {type(samples).__name__}")
    if not 2 <= samples <= MAX_SAMPLES:
        raise ValueError(f"samples must be an integer from 2 to {MAX_SAMPLES}, got {samples!r}")
    return int(samples)


def check_points(points: Any) -> int:
    """``points`` when it is an integer from 3 to :data:`MAX_POINTS`; TypeError/ValueError otherwise.

    >>> check_points(257)
    257
    """
    if isinstance(points, bool) or not isinstance(points, int | np.integer):
        raise TypeError(f"points must be an integer, got {type(points).__name__}")
    if not 3 <= points <= MAX_POINTS:
        raise ValueError(f"points must be an integer from 3 to {MAX_POINTS}, got {points!r}")
    return int(points)


# ---------------------------------------------------------------- number line


@dataclass(frozen=True)
class NumberLine:
    """The regions of one format on a log2 |x| axis."""

    format: str
    #: values with ``|x| <= underflow_below`` round to zero (None: the format has no zero)
    underflow_below: float | None
    smallest_subnormal: float
    smallest_normal: float
    max: float
    eps: float
    #: values with ``|x| > overflow_above`` overflow (round past ``max``)
    overflow_above: float
    #: what overflow gives: ``"inf"``, ``"nan"`` or ``"saturate"``
    overflow_gives: str
    has_subnormals: bool

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values."""
        return dict(self.__dict__)

    def log2_bounds(self) -> dict[str, float]:
        """log2 of each boundary, for plotting."""
        # float64's own thresholds (half its smallest subnormal, max + half an ulp) are 0.0 and
        # inf in float64: take them from the representable facts
        above = self.overflow_above if np.isfinite(self.overflow_above) else self.max
        out = {
            "smallest_subnormal": float(np.log2(self.smallest_subnormal)),
            "smallest_normal": float(np.log2(self.smallest_normal)),
            "max": float(np.log2(self.max)),
            "overflow_above": float(np.log2(above)),
            "eps": float(np.log2(self.eps)),
        }
        if self.underflow_below is not None:
            out["underflow_below"] = out["smallest_subnormal"] - 1.0
        return out


def ulp_of_max(fmt: Any) -> float:
    """The spacing of values in the binade of the largest finite value of ``fmt``.

    >>> ulp_of_max("float16")
    32.0
    """
    fmt = resolve(fmt)
    return float(2.0 ** (np.floor(np.log2(fmt.max)) - fmt.mantissa_bits))


def overflow_threshold(fmt: Any) -> float:
    """Half an ulp past ``max``: values beyond it round past the largest finite value.

    >>> overflow_threshold("float16")
    65520.0
    """
    fmt = resolve(fmt)
    return fmt.max + ulp_of_max(fmt) / 2


def number_line(fmt: Any) -> NumberLine:
    """Region boundaries of one format.

    >>> number_line("float16").underflow_below
    2.9802322387695312e-08
    """
    fmt = resolve(fmt)
    has_zero = fmt.name != "float8_e8m0fnu"
    return NumberLine(
        format=fmt.name,
        underflow_below=fmt.smallest_subnormal / 2 if has_zero else None,
        smallest_subnormal=fmt.smallest_subnormal,
        smallest_normal=fmt.smallest_normal,
        max=fmt.max,
        eps=fmt.eps,
        overflow_above=overflow_threshold(fmt),
        overflow_gives=fmt.overflow,
        has_subnormals=fmt.has_subnormals,
    )


def number_lines(formats: Any = None) -> list[NumberLine]:
    """Number lines of several formats (default: every format, widest first)."""
    if formats is None:
        formats = all_formats()
    if isinstance(formats, str | Format):
        formats = [formats]
    return [number_line(f) for f in formats]


# ---------------------------------------------------------------- ordinals


def _sign_mask(fmt: Format) -> int:
    return 1 << (fmt.bits - 1) if fmt.has_sign else 0


def ordinals(values: np.ndarray, fmt: Any) -> np.ndarray:
    """Signed code-point index of each (non-NaN) value of ``fmt``: monotone in the value,
    consecutive for neighbouring values, 0 for both zeros; ±inf sit just past ±max.

    >>> ordinals(np.array([-1.0, 0.0, 1.0]), "float16").tolist()
    [-15360, 0, 15360]
    """
    fmt = resolve(fmt)
    with np.errstate(over="ignore", invalid="ignore"):
        bits = encode(np.asarray(values), fmt)
    sign = _sign_mask(fmt)
    if fmt.bits == 64:
        magnitude = (bits & np.uint64((1 << 63) - 1)).astype(np.int64)
        negative = (bits >> np.uint64(63)).astype(bool)
    else:
        wide = bits.astype(np.int64)
        magnitude = wide & ~sign if sign else wide
        negative = (wide & sign).astype(bool) if sign else np.zeros(wide.shape, bool)
    return np.where(negative, -magnitude, magnitude)


def from_ordinals(ords: np.ndarray, fmt: Any) -> np.ndarray:
    """Values (float64) of the given :func:`ordinals` of ``fmt``.

    >>> from_ordinals(np.array([15360, 15361]), "float16").tolist()
    [1.0, 1.0009765625]
    """
    fmt = resolve(fmt)
    ords = np.asarray(ords, dtype=np.int64)
    magnitude = np.abs(ords)
    if fmt.bits == 64:
        bits = magnitude.astype(np.uint64) | np.where(ords < 0, np.uint64(1 << 63), np.uint64(0))
        return bits.view(np.float64).copy()
    patterns = magnitude | np.where(ords < 0, _sign_mask(fmt), 0)
    return decode(patterns, fmt)


# ---------------------------------------------------------------- inputs


def unary_inputs(fmt: Any, samples: int = DEFAULT_SAMPLES) -> tuple[np.ndarray, bool]:
    """Sorted distinct finite values of ``fmt`` to sweep, and whether that is all of them.

    Formats of 16 bits or fewer: every finite value (``-0`` merged with ``0``).
    Wider formats: ``samples`` values per sign, evenly spaced in bit-pattern
    order (so evenly on a log axis), plus zero and ``±max``.

    >>> x, exhaustive = unary_inputs("float16")
    >>> x.size, exhaustive
    (63487, True)
    """
    samples = check_samples(samples)
    fmt = resolve(fmt)
    if fmt.enumerable:
        with np.errstate(over="ignore", invalid="ignore"):
            values = decode(np.arange(1 << fmt.bits), fmt)
        return np.unique(values[np.isfinite(values)]) + 0.0, True  # + 0.0: -0 -> 0
    top = int(ordinals(np.array([fmt.max]), fmt)[0])
    positive = np.unique(np.linspace(0, top, samples).astype(np.int64).clip(0, top))
    ords = np.unique(np.concatenate([-positive, positive]))
    return from_ordinals(ords, fmt), False


# ---------------------------------------------------------------- classification


def _beyond_range(reference: np.ndarray, true_finite: np.ndarray, fmt: Format) -> np.ndarray:
    """True where the (mathematically finite) reference lies past the format's largest finite value."""
    with np.errstate(over="ignore", invalid="ignore"):
        if fmt.overflow == "saturate":
            return true_finite & (np.abs(reference) > overflow_threshold(fmt))
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


def classify(
    inputs: tuple[np.ndarray, ...],
    reference: np.ndarray,
    result: np.ndarray,
    fmt: Any,
    domain: tuple[float, float] = (-np.inf, np.inf),
    pole: np.ndarray | None = None,
    tiny: np.ndarray | None = None,
) -> np.ndarray:
    """Kind codes (indices into :data:`KINDS`) of each input; see the module doc.

    ``domain`` (closed here) applies to the first input of unary ops.  ``pole``
    marks infinite references that are mathematically infinite (``1/0``); other
    infinite references are float64 overflows of a finite value (``exp(1000)``).
    Without ``pole`` every infinite reference counts as a pole.  ``tiny`` marks
    zero references that are float64 underflows of a nonzero value
    (``exp(-1000)``).  :func:`reference_flags` computes both.

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
    reference: Any, inputs: tuple[np.ndarray, ...], values: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(pole, tiny)`` for :func:`classify`.

    ``pole``: infinite reference values that are mathematically infinite: the
    divide-by-zero flag is raised (``1/0``, ``log(0)``), or, for unary ops whose
    reference sets no flag (``lgamma(-1)``, ``erfinv(1)``), the reference at a
    neighbouring float64 input is finite and far from float64's overflow (an
    overflow such as ``exp(1000)`` is huge or infinite next door too).
    ``tiny``: zero values that are float64 underflows of a nonzero result (the
    underflow flag: ``exp(-1000)``).
    """
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


# ---------------------------------------------------------------- sweeps


@dataclass
class BackendRun:
    """What one backend did over a sweep."""

    backend: str
    status: str
    error: str = ""
    detail: str = ""
    #: float64 results aligned with the sweep's inputs (None when it did not run)
    result: np.ndarray | None = None
    #: the device it actually ran on
    device: str | None = None

    @property
    def ran(self) -> bool:
        return self.result is not None


@dataclass
class Sweep:
    """One op in one format on several backends over the same inputs."""

    op: str
    format: str
    #: the inputs (float64 values of the format), one array per operand
    inputs: tuple[np.ndarray, ...]
    #: float64 reference of the inputs
    reference: np.ndarray
    #: the reference correctly rounded to the format (float64)
    reference_rounded: np.ndarray
    runs: dict[str, BackendRun]
    #: True when every finite value of the format is in ``inputs``
    exhaustive: bool
    #: infinite references that are true poles (see :func:`reference_flags`)
    pole: np.ndarray
    #: zero references that are float64 underflows of nonzero values
    tiny: np.ndarray
    domain: tuple[float, float] = (-np.inf, np.inf)
    #: the device asked of every backend
    device: str = "CPU"

    def kinds(self, backend: str) -> np.ndarray:
        """Kind codes of every input on one backend that ran."""
        result = self.runs[backend].result
        if result is None:
            raise ValueError(f"backend {backend} did not run: {self.runs[backend].error}")
        return classify(self.inputs, self.reference, result, self.format, self.domain, self.pole, self.tiny)

    @property
    def n_inputs(self) -> int:
        return int(self.reference.size)


def _run_backend(
    name: str, op: Op, fmt: Format, inputs: tuple[np.ndarray, ...], device: str = "CPU"
) -> BackendRun:
    from explorer.backends import get_backend

    backend = get_backend(name)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        outcome = backend.run(op, fmt, device=device, inputs=inputs)
        result = None
        if outcome.ran and outcome.result is not None:
            result = np.asarray(outcome.result).astype(np.float64).reshape(inputs[0].shape)
    return BackendRun(
        backend.name, outcome.status.value, outcome.error_first_line, outcome.detail, result, outcome.device
    )


@dataclass
class _Evaluation:
    reference: np.ndarray
    rounded: np.ndarray
    pole: np.ndarray
    tiny: np.ndarray
    runs: dict[str, BackendRun]


def _evaluate(
    op: Op, fmt: Format, inputs: tuple[np.ndarray, ...], backends: tuple[str, ...], device: str = "CPU"
) -> _Evaluation:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        reference = np.asarray(op.reference(*inputs), dtype=np.float64).reshape(inputs[0].shape)
    pole, tiny = reference_flags(op.reference, inputs, reference)
    runs = {name: _run_backend(name, op, fmt, inputs, device) for name in backends}
    return _Evaluation(reference, round_reference(reference, fmt), pole, tiny, runs)


def _check_unary(op: Any) -> Op:
    op = get_op(op)
    if not (op.elementwise and op.arity == 1):
        raise ValueError(f"op {op.name} is not an elementwise unary op; valid ops: {', '.join(unary_ops())}")
    return op


def _check_backends(backends: Any) -> tuple[str, ...]:
    from explorer.backends import get_backend

    if isinstance(backends, str):
        backends = (backends,)
    names = tuple(get_backend(b).name for b in backends)
    if not names:
        raise ValueError("give at least one backend")
    return names


def unary_ops() -> list[str]:
    """Names of the catalog's elementwise unary ops (the ones that can be swept)."""
    return [op.name for op in catalog().values() if op.elementwise and op.arity == 1]


def sweep(
    op: Any,
    fmt: Any,
    backends: Any = DEFAULT_BACKENDS,
    samples: int = DEFAULT_SAMPLES,
    refine: bool = True,
    device: str = "CPU",
) -> Sweep:
    """Run a unary elementwise op over every finite value of ``fmt`` (sampled when wider
    than 16 bits) on each backend, one vectorised call per backend.

    For sampled formats, each boundary between two kinds (on any backend) is
    refined until the inputs on both sides are neighbouring values of the
    format (``refine=False`` skips that).  ``device`` is asked of every backend
    (``"GPU"`` where there is one).
    """
    samples = check_samples(samples)
    op = _check_unary(op)
    fmt = resolve(fmt)
    names = _check_backends(backends)
    x, exhaustive = unary_inputs(fmt, samples)
    ev = _evaluate(op, fmt, (x,), names, device)
    result = Sweep(
        op.name,
        fmt.name,
        (x,),
        ev.reference,
        ev.rounded,
        ev.runs,
        exhaustive,
        ev.pole,
        ev.tiny,
        op.domain,
        device,
    )
    if not exhaustive and refine:
        result = _refine(result, op, fmt, names)
    return result


def _boundary_gaps(s: Sweep, fmt: Format) -> list[tuple[int, int]]:
    """Ordinal pairs (lo, hi) of neighbouring samples of different kinds with values between."""
    x = s.inputs[0]
    ords = ordinals(x, fmt)
    changed = np.zeros(max(x.size - 1, 0), bool)
    for run in s.runs.values():
        if run.result is None:
            continue
        kinds = s.kinds(run.backend)
        changed |= kinds[1:] != kinds[:-1]
    gap = (ords[1:] - ords[:-1]) > 1
    idx = np.nonzero(changed & gap)[0]
    return [(int(ords[i]), int(ords[i + 1])) for i in idx]


def _refine(
    s: Sweep,
    op: Op,
    fmt: Format,
    names: tuple[str, ...],
    per_gap: int = 256,
    max_gaps: int = 256,
    rounds: int = 10,
) -> Sweep:
    for _ in range(rounds):
        gaps = _boundary_gaps(s, fmt)[:max_gaps]
        if not gaps:
            break
        new = np.unique(
            np.concatenate(
                [np.linspace(lo, hi, min(per_gap, hi - lo + 1)).astype(np.int64)[1:-1] for lo, hi in gaps]
                + [np.array([], np.int64)]
            )
        )
        if new.size == 0:
            break
        x_new = from_ordinals(new, fmt)
        ev = _evaluate(op, fmt, (x_new,), names, s.device)
        x = np.concatenate([s.inputs[0], x_new])
        order = np.argsort(x, kind="stable")
        merged: dict[str, BackendRun] = {}
        for name, run in s.runs.items():
            res = None
            new_result = ev.runs[name].result
            if run.result is not None and new_result is not None:
                res = np.concatenate([run.result, new_result])[order]
            merged[name] = BackendRun(run.backend, run.status, run.error, run.detail, res, run.device)

        def join(old: np.ndarray, new: np.ndarray, order: np.ndarray = order) -> np.ndarray:
            return np.concatenate([old, new])[order]

        s = Sweep(
            s.op,
            s.format,
            (x[order],),
            join(s.reference, ev.reference),
            join(s.reference_rounded, ev.rounded),
            merged,
            False,
            join(s.pole, ev.pole),
            join(s.tiny, ev.tiny),
            s.domain,
            s.device,
        )
    return s


# ---------------------------------------------------------------- regions


@dataclass(frozen=True)
class Interval:
    """A run of consecutive inputs (in value order) of one kind."""

    kind: str
    lo: float
    hi: float
    #: number of inputs in the run (swept inputs, not all values, for sampled formats)
    count: int

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values."""
        return {"kind": self.kind, "lo": self.lo, "hi": self.hi, "count": self.count}


@dataclass
class OpRegions:
    """The kind of every swept input of a unary op in a format on one backend."""

    op: str
    format: str
    backend: str
    status: str
    error: str
    exhaustive: bool
    #: sorted float64 inputs
    inputs: np.ndarray
    #: float64 results (empty when the backend did not run)
    results: np.ndarray
    reference: np.ndarray
    reference_rounded: np.ndarray
    #: kind codes (indices into KINDS), aligned with inputs
    kinds: np.ndarray
    intervals: list[Interval] = field(default_factory=list)
    thresholds: dict[str, Any] = field(default_factory=dict)

    @property
    def ran(self) -> bool:
        return self.results.size == self.inputs.size and self.inputs.size > 0

    def counts(self) -> dict[str, int]:
        """Number of inputs of each kind."""
        return {k: int(np.count_nonzero(self.kinds == i)) for i, k in enumerate(KINDS)}

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``precision-explorer ranges``."""
        return {
            "format": self.format,
            "op": self.op,
            "backend": self.backend,
            "status": self.status,
            "error": self.error,
            "exhaustive": self.exhaustive,
            "n_inputs": int(self.inputs.size),
            "counts": self.counts() if self.ran else {},
            "thresholds": self.thresholds,
            "regions": [i.to_dict() for i in self.intervals],
        }


def intervals_of(inputs: np.ndarray, kinds: np.ndarray) -> list[Interval]:
    """Merge sorted inputs into runs of the same kind.

    >>> [i.kind for i in intervals_of(np.array([1.0, 2.0, 3.0]), np.array([0, 0, 1]))]
    ['ok', 'overflow']
    """
    if inputs.size == 0:
        return []
    starts = np.concatenate([[0], np.nonzero(kinds[1:] != kinds[:-1])[0] + 1])
    ends = np.concatenate([starts[1:] - 1, [inputs.size - 1]])
    return [
        Interval(KINDS[int(kinds[s])], float(inputs[s]), float(inputs[e]), int(e - s + 1))
        for s, e in zip(starts, ends, strict=True)
    ]


def thresholds_of(inputs: np.ndarray, kinds: np.ndarray) -> dict[str, Any]:
    """For each kind other than ``ok`` present: how many inputs, and the smallest and largest
    positive and negative inputs of that kind (``None`` for a side without any).

    E.g. ``["overflow"]["positive"]["min"]`` is the first positive input that overflows.
    """
    out: dict[str, Any] = {}
    for code, kind in enumerate(KINDS):
        if code == OK:
            continue
        mask = kinds == code
        if not mask.any():
            continue
        entry: dict[str, Any] = {"count": int(mask.sum()), "at_zero": bool((mask & (inputs == 0)).any())}
        for side, sel in (("positive", inputs > 0), ("negative", inputs < 0)):
            chosen = inputs[mask & sel]
            entry[side] = {"min": float(chosen.min()), "max": float(chosen.max())} if chosen.size else None
        out[kind] = entry
    return out


def regions_from_sweep(s: Sweep, backend: str) -> OpRegions:
    """Regions of one backend of a :class:`Sweep`."""
    from explorer.backends import get_backend

    name = get_backend(backend).name
    if name not in s.runs:
        raise ValueError(f"backend {name!r} is not in this sweep; it has: {', '.join(s.runs)}")
    run = s.runs[name]
    x = s.inputs[0]
    if run.result is None:
        return OpRegions(
            s.op,
            s.format,
            name,
            run.status,
            run.error,
            s.exhaustive,
            x,
            np.array([]),
            s.reference,
            s.reference_rounded,
            np.array([], np.int8),
        )
    kinds = s.kinds(name)
    return OpRegions(
        s.op,
        s.format,
        name,
        run.status,
        run.error,
        s.exhaustive,
        x,
        run.result,
        s.reference,
        s.reference_rounded,
        kinds,
        intervals_of(x, kinds),
        thresholds_of(x, kinds),
    )


def op_regions(
    op: Any, fmt: Any, backend: str = "numpy", samples: int = DEFAULT_SAMPLES, device: str = "CPU"
) -> OpRegions:
    """Regions of a unary elementwise op in ``fmt`` on one backend (see module doc)."""
    s = sweep(op, fmt, (backend,), samples, device=device)
    return regions_from_sweep(s, backend)


def regions_all(
    op: Any, fmt: Any, backends: Any = DEFAULT_BACKENDS, samples: int = DEFAULT_SAMPLES, device: str = "CPU"
) -> dict[str, OpRegions]:
    """Regions on several backends over the same inputs, by backend name."""
    s = sweep(op, fmt, backends, samples, device=device)
    return {name: regions_from_sweep(s, name) for name in s.runs}


def region_disagreements(regions: dict[str, OpRegions]) -> list[dict[str, Any]]:
    """Inputs where backends that ran put the same input in different kinds."""
    ran = {name: r for name, r in regions.items() if r.ran}
    if len(ran) < 2:
        return []
    first = next(iter(ran.values()))
    stacked = np.stack([r.kinds for r in ran.values()])
    differ = np.nonzero((stacked != stacked[0]).any(axis=0))[0]
    return [
        {"input": float(first.inputs[i]), "kinds": {name: KINDS[int(r.kinds[i])] for name, r in ran.items()}}
        for i in differ
    ]


# ---------------------------------------------------------------- binary maps


@dataclass
class BinaryMap:
    """Kinds of a binary elementwise op over a grid of two inputs on one backend."""

    op: str
    format: str
    backend: str
    status: str
    error: str
    #: values of the first and second operand along the grid's axes (sorted)
    a: np.ndarray
    b: np.ndarray
    #: kind codes, shape ``(len(a), len(b))`` (empty when the backend did not run)
    kinds: np.ndarray
    #: True when the axes hold every finite value of the format
    exhaustive: bool

    def counts(self) -> dict[str, int]:
        """Number of grid points of each kind."""
        return {k: int(np.count_nonzero(self.kinds == i)) for i, k in enumerate(KINDS)}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (axes and counts; not the grid)."""
        return {
            "op": self.op,
            "format": self.format,
            "backend": self.backend,
            "status": self.status,
            "error": self.error,
            "exhaustive": self.exhaustive,
            "shape": list(self.kinds.shape),
            "counts": self.counts(),
        }


def binary_axis(fmt: Any, points: int = 257) -> tuple[np.ndarray, bool]:
    """Values along each axis of a binary map, and whether they are every finite value.

    Formats of 8 bits or fewer: every finite value.  Wider formats: ``points``
    values evenly spaced in bit-pattern order (evenly on a log axis, both
    signs, with zero).
    """
    points = check_points(points)
    fmt = resolve(fmt)
    if fmt.bits <= 8:
        return unary_inputs(fmt)
    top = int(ordinals(np.array([fmt.max]), fmt)[0])
    half = np.unique(np.linspace(0, top, points // 2 + 1).astype(np.int64))
    return from_ordinals(np.unique(np.concatenate([-half, half])), fmt), False


def _check_binary(op: Any) -> Op:
    op = get_op(op)
    if not (op.elementwise and op.arity == 2):
        valid = [o.name for o in catalog().values() if o.elementwise and o.arity == 2]
        raise ValueError(f"op {op.name} is not an elementwise binary op; valid ops: {', '.join(valid)}")
    return op


def binary_sweep(
    op: Any, fmt: Any, backends: Any = DEFAULT_BACKENDS, points: int = 257, device: str = "CPU"
) -> Sweep:
    """Run a binary elementwise op over every pair of a :func:`binary_axis` grid on each
    backend (one call per backend); the inputs are the flattened grid (first operand
    varies slowest)."""
    points = check_points(points)
    op = _check_binary(op)
    fmt = resolve(fmt)
    names = _check_backends(backends)
    axis, exhaustive = binary_axis(fmt, points)
    a, b = np.meshgrid(axis, axis, indexing="ij")
    inputs = (a.ravel(), b.ravel())
    ev = _evaluate(op, fmt, inputs, names, device)
    return Sweep(
        op.name,
        fmt.name,
        inputs,
        ev.reference,
        ev.rounded,
        ev.runs,
        exhaustive,
        ev.pole,
        ev.tiny,
        device=device,
    )


def binary_map(
    op: Any, fmt: Any, backend: str = "numpy", points: int = 257, device: str = "CPU"
) -> BinaryMap:
    """Classify every pair (a, b) of a :func:`binary_axis` grid for a binary elementwise op
    (add, mul, div, pow, ...) on one backend.

    >>> m = binary_map("mul", "float8_e4m3fn", "emulated")
    >>> m.kinds.shape
    (253, 253)
    """
    s = binary_sweep(op, fmt, (backend,), points, device)
    name, run = next(iter(s.runs.items()))
    axis = np.unique(s.inputs[0])
    kinds = np.array([], np.int8)
    if run.result is not None:
        kinds = s.kinds(name).reshape(axis.size, axis.size)
    return BinaryMap(s.op, s.format, name, run.status, run.error, axis, axis, kinds, s.exhaustive)


def threshold_summary(
    fmt: Any,
    ops: Any = None,
    backends: Any = DEFAULT_BACKENDS,
    samples: int = DEFAULT_SAMPLES,
    device: str = "CPU",
) -> Any:
    """One row per (op, backend, kind other than ok) for every elementwise unary op of the
    catalog (or ``ops``) in ``fmt``: how many inputs, and the smallest and largest negative
    and positive inputs of that kind; one row with the status for a backend that did not run.
    Returns a pandas DataFrame.
    """
    import pandas as pd

    samples = check_samples(samples)
    names = unary_ops() if ops is None else [_check_unary(o).name for o in ops]
    rows: list[dict[str, Any]] = []
    for name in names:
        s = sweep(name, fmt, backends, samples, device=device)
        for backend in s.runs:
            reg = regions_from_sweep(s, backend)
            base = {"op": name, "backend": backend, "status": reg.status}
            if not reg.ran:
                rows.append({**base, "kind": None, "error": reg.error})
                continue
            if not reg.thresholds:
                rows.append({**base, "kind": "ok", "count": int(reg.inputs.size)})
            for kind, t in reg.thresholds.items():
                neg, pos = t["negative"] or {}, t["positive"] or {}
                rows.append(
                    {
                        **base,
                        "kind": kind,
                        "count": t["count"],
                        "negative_min": neg.get("min"),
                        "negative_max": neg.get("max"),
                        "positive_min": pos.get("min"),
                        "positive_max": pos.get("max"),
                    }
                )
    return pd.DataFrame(rows)
