"""Ranges / accuracy / rounding speed (issue 4, item 8).

    python -m benchmarks.run ranges

- an exhaustive float16 sweep of one unary op (exp) on numpy, tensorflow and emulated,
  with the regions and both ULP measures (ulp_steps, ulp_error) of every backend, warm (after
  one call): target < 1 s;
- the reference kinds of every elementwise unary op over every float16 and bfloat16 input
  (emulated sweeps: the float64 references with their declared zeros and poles, and
  ``Sweep.reference_kinds``), the explorer side of tests/test_classification_oracle.py;
- rounding 1 M float32 values to float8_e4m3fn: ``round_to(..., "nearest_even")`` against
  ``ml_dtypes`` ``astype`` (target: within 2x), and ``round_to(..., "stochastic")`` against
  ``gfloat.round_ndarray`` with ``RoundMode.Stochastic`` (target: at least 3x faster).
  gfloat is only needed here (``pip install gfloat``, the ``bench`` extra); without it the
  comparison is skipped and the benchmark says so.

Times are the best of several runs (the machine is shared).
"""

from __future__ import annotations

import time
from collections.abc import Callable


def _best_seconds(func: Callable[[], object], repeat: int = 7) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best


def _sweep_all(op: str, fmt: str) -> None:
    from explorer.queries.accuracy import accuracy_from_sweep
    from explorer.queries.ranges import regions_from_sweep, sweep

    s = sweep(op, fmt, ("numpy", "tensorflow", "emulated"))
    for name in s.runs:
        regions_from_sweep(s, name)
    accuracy_from_sweep(s)


def _reference_kinds_of_every_op() -> None:
    from explorer.queries.ranges import sweep, unary_ops

    for op in unary_ops():
        for fmt in ("float16", "bfloat16"):
            sweep(op, fmt, ("emulated",)).reference_kinds()


def _gfloat_stochastic() -> Callable[[object], object] | None:
    try:
        import gfloat
        from gfloat.formats import format_info_ocp_e4m3
    except ImportError:
        return None
    import numpy as np

    srnumbits = 20  # float32 -> e4m3 drops 20 mantissa bits
    rng = np.random.default_rng(1)

    def call(x: object) -> object:
        srbits = rng.integers(0, 1 << srnumbits, size=np.shape(x))
        return gfloat.round_ndarray(
            format_info_ocp_e4m3, x, gfloat.RoundMode.Stochastic, sat=True, srbits=srbits, srnumbits=srnumbits
        )

    return call


def run() -> list[tuple[str, float, str]]:
    import ml_dtypes
    import numpy as np

    from explorer.rounding import round_to

    figures: list[tuple[str, float, str]] = []
    figures.append(
        (
            "reference kinds, all unary ops x float16, bfloat16 (emulated sweeps)",
            _best_seconds(_reference_kinds_of_every_op, repeat=3),
            "s",
        )
    )
    for op in ("exp", "tanh"):
        _sweep_all(op, "float16")  # warm: TensorFlow import and first-call set-up
        seconds = _best_seconds(lambda op=op: _sweep_all(op, "float16"), repeat=5)
        figures.append((f"{op} float16 exhaustive sweep, 3 backends, regions+ULP (warm)", seconds, "s"))
    _sweep_all("exp", "bfloat16")
    figures.append(
        (
            "exp bfloat16 exhaustive sweep, 3 backends, regions+ULP (warm)",
            _best_seconds(lambda: _sweep_all("exp", "bfloat16"), repeat=5),
            "s",
        )
    )

    x = (np.random.default_rng(0).standard_normal(1_000_000) * 10).astype(np.float32)
    target = np.dtype(ml_dtypes.float8_e4m3fn)
    cast = _best_seconds(lambda: x.astype(target))
    nearest = _best_seconds(lambda: round_to(x, "float8_e4m3fn"))
    generator = np.random.default_rng(2)
    stochastic = _best_seconds(lambda: round_to(x, "float8_e4m3fn", "stochastic", generator))
    toward_zero = _best_seconds(lambda: round_to(x, "float8_e4m3fn", "toward_zero"))
    figures += [
        ("1M float32 -> e4m3fn: ml_dtypes astype", cast * 1e3, "ms"),
        ("1M float32 -> e4m3fn: round_to nearest_even", nearest * 1e3, "ms"),
        ("  nearest_even / astype (target <= 2)", nearest / cast, "x"),
        ("1M float32 -> e4m3fn: round_to toward_zero", toward_zero * 1e3, "ms"),
        ("1M float32 -> e4m3fn: round_to stochastic", stochastic * 1e3, "ms"),
    ]
    gfloat_call = _gfloat_stochastic()
    if gfloat_call is None:
        print(
            "gfloat is NOT installed: the stochastic-rounding comparison is skipped "
            "(pip install gfloat, the 'bench' extra)",
            flush=True,
        )
    else:
        reference = _best_seconds(lambda: gfloat_call(x), repeat=3)
        figures += [
            ("1M float32 -> e4m3fn: gfloat.round_ndarray Stochastic", reference * 1e3, "ms"),
            ("  gfloat / round_to stochastic (target >= 3)", reference / stochastic, "x"),
        ]
    return figures
