"""Runs and thresholds of kinds along sorted inputs: the :class:`Interval` runs of one kind, and
per kind and side the exact first and last inputs, with the rule in words."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from explorer.analysis.regions._classify import KINDS, OK


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


def value_text(value: float) -> str:
    """A float as short exact text: its repr without a trailing ``.0``.

    >>> value_text(65504.0), value_text(-17.34375), value_text(float("-inf"))
    ('65504', '-17.34375', '-inf')
    """
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def _side_rule(lo: float, hi: float, runs: int, to_start: bool, to_end: bool) -> str:
    """``x >= lo``, ``x <= hi`` or ``lo <= x <= hi`` (bounds included: they are inputs of the kind)."""
    if runs > 1:
        return f"{runs} runs within {value_text(lo)} <= x <= {value_text(hi)}"
    if to_end and lo > 0:
        return f"x >= {value_text(lo)}"
    if to_start and hi < 0:
        return f"x <= {value_text(hi)}"
    return f"{value_text(lo)} <= x <= {value_text(hi)}"


def _side(inputs: np.ndarray, kinds: np.ndarray, code: int, idx: np.ndarray) -> dict[str, Any]:
    """One side (positive or negative inputs) of a kind: exact first and last inputs, runs, the
    neighbouring inputs outside it, and the rule in words."""
    first, last = int(idx[0]), int(idx[-1])
    runs = 1 + int(np.count_nonzero(np.diff(idx) > 1))
    before = float(inputs[first - 1]) if first > 0 and kinds[first - 1] != code else None
    after = float(inputs[last + 1]) if last + 1 < inputs.size and kinds[last + 1] != code else None
    rule = _side_rule(float(inputs[first]), float(inputs[last]), runs, first == 0, last == inputs.size - 1)
    outside = [value_text(v) for v in (before, after) if v is not None]
    if outside:
        rule += f" (not {' nor '.join(outside)}, the neighbouring input{'s' if len(outside) > 1 else ''})"
    return {
        "min": float(inputs[first]),
        "max": float(inputs[last]),
        "count": int(idx.size),
        "runs": runs,
        "before": before,
        "after": after,
        "rule": rule,
    }


def thresholds_of(inputs: np.ndarray, kinds: np.ndarray, results: np.ndarray | None = None) -> dict[str, Any]:
    """For each kind other than ``ok`` present: how many inputs, and per side (``positive``,
    ``negative``; ``None`` for a side without any) the exact first and last inputs (``min``,
    ``max``), the number of separate ``runs``, the neighbouring inputs outside them that are of
    another kind (``before``, ``after``), and a ``rule`` in words.  With ``results`` (the
    backend's, aligned with ``inputs``), ``returns``: what came back on those inputs (up to 4
    distinct values, as text; ``returns_distinct`` counts them all).

    E.g. ``["overflow"]["positive"]["min"]`` is the first positive input that overflows.
    ``inputs`` must be sorted.

    >>> t = thresholds_of(np.array([10.0, 11.0, 12.0, 13.0]), np.array([0, 0, 1, 1]))
    >>> t["overflow"]["positive"]["rule"]
    'x >= 12 (not 11, the neighbouring input)'
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
            idx = np.nonzero(mask & sel)[0]
            entry[side] = _side(inputs, kinds, code, idx) if idx.size else None
        if results is not None and results.size == inputs.size:
            patterns = np.unique(np.ascontiguousarray(results[mask], dtype=np.float64).view(np.int64))
            distinct = np.sort(patterns.view(np.float64))  # by bit pattern: -0 and 0 both shown
            texts = list(dict.fromkeys(value_text(v) for v in distinct))
            entry["returns"] = texts[:4]
            entry["returns_distinct"] = len(texts)
        out[kind] = entry
    return out


def threshold_rule(entry: dict[str, Any]) -> str:
    """The rules of both sides of a :func:`thresholds_of` entry, joined (negative side first).

    >>> threshold_rule(thresholds_of(np.array([-2.0, -1.0, 1.0, 2.0]), np.array([1, 0, 0, 1]))["overflow"])
    'x <= -2 (not -1, the neighbouring input); x >= 2 (not 1, the neighbouring input)'
    """
    parts = [entry[side]["rule"] for side in ("negative", "positive") if entry.get(side)]
    if entry.get("at_zero"):
        parts.append("x = 0")
    return "; ".join(parts)
