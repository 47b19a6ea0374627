"""Every elementwise unary op's classification of every float16 and bfloat16 input, against the
independent high-precision oracle of tests/support/oracles.py (:func:`oracles.unary_oracle`: mpmath,
exact rationals and exact float64, rounded by the oracle's own ``round_exact``).

What is checked, for each op and format:

- at every input (about 128,000 per op): the kind a correctly rounding backend gives
  (:meth:`Sweep.reference_kinds`) is the oracle's, and so is the emulated backend's (the float64
  reference, rounded; it never shows flush_to_zero);
- at every input the oracle evaluated (all of them for the ops float64 computes exactly, else
  the kind boundaries and every 32nd input, a few thousand): the float64 reference rounded by
  explorer is the oracle's correctly rounded value (the yardstick of the accuracy figures), and
  ``classify`` given the oracle's rounded values as a backend's result gives the oracle's kinds
  (the reference's zeros, poles and overflows apart from its rounding).

The oracle is computed once per session in worker processes (two at most), cached on disk when
``PX_ORACLE_CACHE`` names a folder.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import multiprocessing
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from explorer.queries import ranges as R
from tests.support import oracles

FORMATS = ("float16", "bfloat16")
OPS = tuple(oracles.UNARY)


def _oracle_entry(op: str, fmt: str) -> oracles.UnaryOracle:
    """The oracle of one op in one format, from the disk cache when there is one."""
    folder = os.environ.get("PX_ORACLE_CACHE")
    path = None
    if folder:
        source = Path(oracles.__file__).read_bytes()
        digest = hashlib.sha256(source + f"{op}/{fmt}".encode()).hexdigest()[:24]
        path = Path(folder) / f"unary-{digest}.npz"
        if path.exists():
            with np.load(path, allow_pickle=False) as data:
                return oracles.UnaryOracle(data["x"], data["kinds"], data["checked"], data["rounded"])
    entry = oracles.unary_oracle(op, fmt)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, x=entry.x, kinds=entry.kinds, checked=entry.checked, rounded=entry.rounded)
    return entry


@pytest.fixture(scope="module")
def oracle() -> dict[tuple[str, str], oracles.UnaryOracle]:
    pairs = [(op, fmt) for op in OPS for fmt in FORMATS]
    workers = max(1, min(2, os.cpu_count() or 1))
    context = multiprocessing.get_context("spawn")  # never fork a process that may hold TensorFlow
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        futures = {pair: pool.submit(_oracle_entry, *pair) for pair in pairs}
        return {pair: future.result() for pair, future in futures.items()}


def test_the_oracle_covers_every_unary_op_of_the_catalog() -> None:
    assert set(OPS) == set(R.unary_ops())


def _first_differences(x: np.ndarray, got: np.ndarray, want: np.ndarray, limit: int = 6) -> list[Any]:
    differ = np.nonzero(got != want)[0]
    return [(float(x[i]), str(got[i]), str(want[i])) for i in differ[:limit]]


def _same_values(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray((a == b) | (np.isnan(a) & np.isnan(b)))


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("op", OPS)
def test_classification_of_every_input_matches_the_oracle(op: str, fmt: str, oracle: Any) -> None:
    o = oracle[(op, fmt)]
    s = R.sweep(op, fmt, ("emulated",))
    x = o.x
    np.testing.assert_array_equal(s.inputs[0], x)
    got = R.kind_names(s.reference_kinds()).astype(str)
    assert np.array_equal(got, o.kinds), (op, fmt, _first_differences(x, got, o.kinds))
    emulated = R.kind_names(s.kinds("emulated")).astype(str)
    assert np.array_equal(emulated, o.kinds), _first_differences(x, emulated, o.kinds)
    # the float64 reference rounded by explorer is the correctly rounded value (at every input the
    # oracle evaluated: all of them for the exact ops, else the kind boundaries and every 32nd)
    mine = s.reference_rounded[o.checked]
    same = _same_values(mine, o.rounded)
    wrong = np.nonzero(~same)[0][:6]
    assert same.all(), f"{op} {fmt}: (x, rounded reference, oracle) " + str(
        [(float(x[o.checked[i]]), float(mine[i]), float(o.rounded[i])) for i in wrong]
    )
    # classify, given the oracle's rounding as a backend's result there: the oracle's kinds
    ix = o.checked
    with_oracle = R.classify((x[ix],), s.reference[ix], o.rounded, fmt, s.domain, s.pole[ix], s.tiny[ix])
    assert np.array_equal(R.kind_names(with_oracle).astype(str), o.kinds[ix])


def test_sigmoid_float16_underflows_for_every_input_from_minus_17_34375_down(oracle: Any) -> None:
    o = oracle[("sigmoid", "float16")]
    x, kinds = o.x, o.kinds
    regions = R.op_regions("sigmoid", "float16", "emulated")
    kind_at = dict(zip(regions.inputs.tolist(), R.kind_names(regions.kinds).tolist(), strict=True))
    # float64's 1/(1 + exp(-x)) is exactly 0 from x = -710 down (exp overflows): still underflow
    for value in (-710.0, -711.0, -1000.0, -65504.0):
        assert kind_at[value] == "underflow"
        assert kinds[np.searchsorted(x, value)] == "underflow"
    assert all(kind == "underflow" for v, kind in kind_at.items() if v <= -710)
    assert sum(v <= -710 for v in kind_at) == 6772
    underflow = regions.thresholds["underflow"]["negative"]
    last = float(x[kinds == "underflow"].max())  # the oracle's last underflowing input
    assert underflow["max"] == last == -17.34375 and underflow["min"] == -65504.0
    assert underflow["after"] == float(x[np.searchsorted(x, last) + 1]) == -17.328125
    assert regions.thresholds["underflow"]["count"] == int(np.sum(kinds == "underflow"))


def test_every_op_that_float64_does_not_compute_exactly_declares_its_zeros_and_poles() -> None:
    from explorer.ops import get_op

    inexact = [op for op in OPS if oracles.UNARY[op].how != "float64"]
    assert all(get_op(op).zeros is not None and get_op(op).poles is not None for op in inexact)
