"""What a sweep holds (:class:`Sweep`: one op, one format, one :class:`BackendRun` per backend over
the same inputs) and what follows from it: a unary op's :class:`OpRegions` on each backend, the
inputs where backends disagree, and a binary op's :class:`BinaryMap`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from explorer.analysis.regions._classify import KINDS, classify
from explorer.analysis.regions._thresholds import Interval, intervals_of, thresholds_of


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
    #: float64 results for the inputs +0 and -0 (unary sweeps; None otherwise), for
    #: :func:`flushed_inputs`
    at_zero: np.ndarray | None = None

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
        run = self.runs[backend]
        if run.result is None:
            raise ValueError(f"backend {backend} did not run: {run.error}")
        return classify(
            self.inputs,
            self.reference,
            run.result,
            self.format,
            self.domain,
            self.pole,
            self.tiny,
            run.at_zero,
            self.reference_rounded,
        )

    def reference_kinds(self) -> np.ndarray:
        """Kind codes of every input for a backend that rounds the exact value correctly.

        >>> from explorer.queries.ranges import sweep
        >>> s = sweep("sigmoid", "float16", ("emulated",))
        >>> KINDS[s.reference_kinds()[0]], float(s.inputs[0][0])  # the old reference said "ok" here
        ('underflow', -65504.0)
        """
        s = self
        return classify(s.inputs, s.reference, s.reference_rounded, s.format, s.domain, s.pole, s.tiny)

    @property
    def n_inputs(self) -> int:
        return int(self.reference.size)


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
        thresholds_of(x, kinds, run.result),
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
