"""What kind of result each input of an op gives in a format: the pure half of
:mod:`explorer.analysis.ranges` (no backend is run here).

The number line of each format; the inputs a sweep uses (every finite value of
a format of 16 bits or fewer, else an even sample in bit-pattern order); the
classification of backend results against the float64 reference; and the
regions (runs of one kind, thresholds) that follow from a :class:`Sweep`.

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

>>> number_line("float16").overflow_above
65520.0
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from explorer.formats import Format, all_formats, decode, from_ordinals, ordinals, resolve, ulp_of_max

#: Kinds of input, in code order (``kinds`` arrays hold indices into this tuple).
KINDS: tuple[str, ...] = ("ok", "overflow", "underflow", "subnormal", "nan")
OK, OVERFLOW, UNDERFLOW, SUBNORMAL, NAN = range(5)
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


# ---------------------------------------------------------------- sweep results


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
