"""Where a format breaks: the number line of each format, and, for an op on a
backend, which *inputs* give overflow, underflow, subnormal results or NaN.

Every finite value of a format of 16 bits or fewer is swept (all 63,487
distinct finite float16 values in one vectorised call per backend); wider
formats are sampled evenly in bit-pattern order (so evenly on a log axis,
subnormals included) and every boundary between two kinds is then refined
by sampling inside its gap until the two sides are neighbouring values: the
thresholds are exact for wide formats too.

This module runs the backends (:func:`sweep`, :func:`op_regions`,
:func:`regions_all`, :func:`binary_sweep`, :func:`binary_map`,
:func:`threshold_summary`).  What each input's *kind* is (``ok``, ``overflow``,
``underflow``, ``subnormal``, ``nan``), number lines and the regions that follow
from a sweep are pure and live in :mod:`explorer.analysis.regions`; they are
re-exported here, so ``from explorer.queries.ranges import classify`` works.

>>> regions = op_regions("exp", "float16", "numpy")
>>> regions.thresholds["overflow"]["positive"]["min"]
11.09375
>>> regions.thresholds["overflow"]["positive"]["rule"]
'x >= 11.09375 (not 11.0859375, the neighbouring input)'
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from explorer.analysis.regions import (
    DEFAULT_SAMPLES,
    FLUSH_TO_ZERO,
    KIND_DEFINITIONS,
    KINDS,
    MAX_POINTS,
    MAX_SAMPLES,
    NAN,
    OK,
    OVERFLOW,
    SUBNORMAL,
    UNDERFLOW,
    BackendRun,
    BinaryMap,
    Interval,
    NumberLine,
    OpRegions,
    Sweep,
    binary_axis,
    check_points,
    check_samples,
    classify,
    exact_text,
    flushed_inputs,
    intervals_of,
    kind_names,
    number_line,
    number_lines,
    overflow_threshold,
    reference_flags,
    region_disagreements,
    regions_from_sweep,
    round_reference,
    threshold_rule,
    thresholds_of,
    unary_inputs,
    value_text,
)
from explorer.formats import Format, from_ordinals, ordinals, resolve, ulp_of_max
from explorer.ops import Op, catalog, get_op
from explorer.runtime.backend_run import run_backend

__all__ = [
    "BINARY_MAP_OPS",
    "DEFAULT_BACKENDS",
    "DEFAULT_SAMPLES",
    "FLUSH_TO_ZERO",
    "KINDS",
    "KIND_DEFINITIONS",
    "MAX_POINTS",
    "MAX_SAMPLES",
    "NAN",
    "OK",
    "OVERFLOW",
    "SUBNORMAL",
    "UNDERFLOW",
    "BackendRun",
    "BinaryMap",
    "Interval",
    "NumberLine",
    "OpRegions",
    "Sweep",
    "binary_axis",
    "binary_map",
    "binary_map_from_sweep",
    "binary_sweep",
    "check_points",
    "check_samples",
    "classify",
    "exact_text",
    "flushed_inputs",
    "from_ordinals",
    "intervals_of",
    "kind_names",
    "number_line",
    "number_lines",
    "op_regions",
    "ordinals",
    "overflow_threshold",
    "reference_flags",
    "region_disagreements",
    "regions_all",
    "regions_from_sweep",
    "round_reference",
    "run_backend",
    "sweep",
    "threshold_rule",
    "threshold_summary",
    "thresholds_of",
    "ulp_of_max",
    "unary_inputs",
    "unary_ops",
    "value_text",
]

#: Backends swept by default (the three of issue 4).
DEFAULT_BACKENDS: tuple[str, ...] = ("numpy", "tensorflow", "emulated")
#: Binary ops with a 2-D map (any elementwise binary op of the catalog works).
BINARY_MAP_OPS: tuple[str, ...] = ("add", "mul", "div", "pow")


# ---------------------------------------------------------------- sweeps


#: what makes one backend's run of a sweep: ``runner(backend, op, fmt, inputs, device)``;
#: :func:`run_backend` here, or e.g. :class:`explorer.runtime.sweep_store.WorkerRunner`
BackendRunner = Callable[[str, Op, Format, tuple[np.ndarray, ...], str], BackendRun]


@dataclass
class _Evaluation:
    reference: np.ndarray
    rounded: np.ndarray
    pole: np.ndarray
    tiny: np.ndarray
    runs: dict[str, BackendRun]


def _evaluate(
    op: Op,
    fmt: Format,
    inputs: tuple[np.ndarray, ...],
    backends: tuple[str, ...],
    device: str = "CPU",
    runner: BackendRunner | None = None,
) -> _Evaluation:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        reference = np.asarray(op.reference(*inputs), dtype=np.float64).reshape(inputs[0].shape)
    pole, tiny = reference_flags(op.reference, inputs, reference, op.zeros, op.poles)
    run = runner if runner is not None else run_backend
    runs = {name: run(name, op, fmt, inputs, device) for name in backends}
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
    runner: BackendRunner | None = None,
) -> Sweep:
    """Run a unary elementwise op over every finite value of ``fmt`` (sampled when wider
    than 16 bits) on each backend, one vectorised call per backend.

    For sampled formats, each boundary between two kinds (on any backend) is
    refined until the inputs on both sides are neighbouring values of the
    format (``refine=False`` skips that).  ``device`` is asked of every backend
    (``"GPU"`` where there is one).  ``runner`` makes each backend's call
    (:data:`BackendRunner`; default :func:`run_backend`, in this process).
    """
    samples = check_samples(samples)
    op = _check_unary(op)
    fmt = resolve(fmt)
    names = _check_backends(backends)
    x, exhaustive = unary_inputs(fmt, samples)
    ev = _evaluate(op, fmt, (x,), names, device, runner)
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
        result = _refine(result, op, fmt, names, runner=runner)
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
    runner: BackendRunner | None = None,
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
        ev = _evaluate(op, fmt, (x_new,), names, s.device, runner)
        x = np.concatenate([s.inputs[0], x_new])
        order = np.argsort(x, kind="stable")
        merged: dict[str, BackendRun] = {}
        for name, run in s.runs.items():
            res = None
            new_result = ev.runs[name].result
            if run.result is not None and new_result is not None:
                res = np.concatenate([run.result, new_result])[order]
            merged[name] = BackendRun(
                run.backend, run.status, run.error, run.detail, res, run.device, run.at_zero
            )

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


# ---------------------------------------------------------------- regions on backends


def op_regions(
    op: Any, fmt: Any, backend: str = "numpy", samples: int = DEFAULT_SAMPLES, device: str = "CPU"
) -> OpRegions:
    """Regions of a unary elementwise op in ``fmt`` on one backend (kinds: see
    :mod:`explorer.analysis.regions`)."""
    s = sweep(op, fmt, (backend,), samples, device=device)
    return regions_from_sweep(s, backend)


def regions_all(
    op: Any, fmt: Any, backends: Any = DEFAULT_BACKENDS, samples: int = DEFAULT_SAMPLES, device: str = "CPU"
) -> dict[str, OpRegions]:
    """Regions on several backends over the same inputs, by backend name."""
    s = sweep(op, fmt, backends, samples, device=device)
    return {name: regions_from_sweep(s, name) for name in s.runs}


# ---------------------------------------------------------------- binary maps


def _check_binary(op: Any) -> Op:
    op = get_op(op)
    if not (op.elementwise and op.arity == 2):
        valid = [o.name for o in catalog().values() if o.elementwise and o.arity == 2]
        raise ValueError(f"op {op.name} is not an elementwise binary op; valid ops: {', '.join(valid)}")
    return op


def binary_sweep(
    op: Any,
    fmt: Any,
    backends: Any = DEFAULT_BACKENDS,
    points: int = 257,
    device: str = "CPU",
    runner: BackendRunner | None = None,
) -> Sweep:
    """Run a binary elementwise op over every pair of a :func:`binary_axis` grid on each
    backend (one call per backend); the inputs are the flattened grid (first operand
    varies slowest).  ``runner``: as for :func:`sweep`."""
    points = check_points(points)
    op = _check_binary(op)
    fmt = resolve(fmt)
    names = _check_backends(backends)
    axis, exhaustive = binary_axis(fmt, points)
    a, b = np.meshgrid(axis, axis, indexing="ij")
    inputs = (a.ravel(), b.ravel())
    ev = _evaluate(op, fmt, inputs, names, device, runner)
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
    return binary_map_from_sweep(s, next(iter(s.runs)))


def binary_map_from_sweep(s: Sweep, backend: str) -> BinaryMap:
    """The :class:`BinaryMap` of one backend of a :func:`binary_sweep` (no backend runs again)."""
    name, run = backend, s.runs[backend]
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
    catalog (or ``ops``) in ``fmt``: how many inputs, the smallest and largest negative and
    positive inputs of that kind (exact inputs, all included), and the ``rule`` in words
    (:func:`threshold_rule`: e.g. ``x >= 11.09375 (not 11.0859375, the neighbouring input)``);
    one row with the status for a backend that did not run.  Returns a pandas DataFrame.

    >>> table = threshold_summary("float16", ops=["exp"], backends=["emulated"])
    >>> table[table.kind == "overflow"].rule.tolist()
    ['x >= 11.09375 (not 11.0859375, the neighbouring input)']
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
                        "rule": threshold_rule(t),
                    }
                )
    return pd.DataFrame(rows)
