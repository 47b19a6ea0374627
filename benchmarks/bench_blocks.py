"""Block formats (issue 26): their error on the synthetic tensors, and the speed of
``explorer.quantize_blocks`` against gfloat's.

    python -m benchmarks.run blocks       # the figures, one per line
    python -m benchmarks.bench_blocks     # the same, as the markdown tables of results/blocks.md

- RMS relative error (over the nonzero elements) and ||q - x|| / ||x|| of every block format
  at its own block size on the ``normal``, ``laplace`` and ``outliers`` tensors of
  :mod:`explorer.analysis.block_errors` (256 x 256, seed 0), beside per-tensor scaling to
  float8_e4m3fn, float8_e5m2 and float4_e2m1fn (:func:`explorer.queries.blocks.compare_blocks`);
- seconds to quantize 2**20 standard normal values (float64) with ``quantize_blocks`` per
  format, best of 5; for the MX formats against gfloat (the ``bench`` extra) two ways:
  its vectorised ``round_ndarray`` on the whole array with the per-block scales computed
  in NumPy (best of 3), and its block API (``quantize_block`` with ``compute_scale_amax``,
  one block at a time, pure Python) timed on 1,024 blocks and scaled to 2**20 elements.

Times are wall-clock on the machine at hand (shared): compare them as ratios of one run.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

ELEMENTS = 1 << 20
#: blocks timed through gfloat's one-block-at-a-time API (the figure is scaled to ELEMENTS)
GFLOAT_BLOCKS = 1024
TENSORS = ("normal", "laplace", "outliers")


def _best_seconds(func: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best


def error_table() -> list[dict[str, Any]]:
    """One row per format (block formats, then per-tensor scaling) and tensor."""
    from explorer.queries.blocks import compare_blocks

    rows = []
    for tensor in TENSORS:
        result = compare_blocks(tensor, block_sizes=[])
        for cost in [*result.rows, *result.per_tensor]:
            rows.append(
                {
                    "tensor": tensor,
                    "format": cost.format,
                    "scaling": cost.scaling,
                    "bits_per_element": cost.bits_per_element,
                    "rel_rms": cost.stats.rel_rms,
                    "norm_rel": cost.stats.norm_rel,
                    "flushed": cost.stats.flushed,
                    "saturated": cost.stats.saturated,
                }
            )
    return rows


def _gfloat() -> Any | None:
    try:
        import gfloat
        import gfloat.formats
    except ImportError:
        return None
    return gfloat


def _gfloat_vectorised(gfloat: Any, name: str, x: np.ndarray) -> np.ndarray:
    info = getattr(gfloat.formats, f"format_info_{name}")
    blocks = x.reshape(-1, info.k)
    amax = np.abs(blocks).max(axis=1)
    with np.errstate(divide="ignore"):
        shared = np.where(amax > 0, np.floor(np.log2(amax)) - info.etype.emax, -127)
    scales = 2.0 ** np.clip(shared, -127, 127)
    rounded = gfloat.round_ndarray(info.etype, blocks / scales[:, None], sat=True)
    return (rounded * scales[:, None]).reshape(x.shape)


def _gfloat_blockwise(gfloat: Any, name: str, x: np.ndarray) -> None:
    info = getattr(gfloat.formats, f"format_info_{name}")
    for block in x.reshape(-1, info.k):
        gfloat.quantize_block(info, block, gfloat.compute_scale_amax)


def speed() -> list[tuple[str, float, str]]:
    """Seconds per 2**20 elements, per format and implementation."""
    from explorer.blocks import BLOCK_FORMAT_NAMES, quantize_blocks

    x = np.random.default_rng(0).standard_normal(ELEMENTS)
    gfloat = _gfloat()
    figures: list[tuple[str, float, str]] = []
    part = x[: GFLOAT_BLOCKS * 32]
    for name in BLOCK_FORMAT_NAMES:
        ours = _best_seconds(lambda name=name: quantize_blocks(x, name), 5)
        figures.append((f"{name}: quantize_blocks, 2**20 elements", ours, "s"))
        if name == "nvfp4" or gfloat is None:
            continue
        vector = _best_seconds(lambda name=name: _gfloat_vectorised(gfloat, name, x), 3)
        figures.append((f"{name}: gfloat round_ndarray, 2**20 elements", vector, "s"))
        blockwise = _best_seconds(lambda name=name: _gfloat_blockwise(gfloat, name, part), 1)
        scaled = blockwise * ELEMENTS / part.size
        figures.append((f"{name}: gfloat quantize_block, scaled to 2**20", scaled, "s"))
        figures.append((f"{name}: speed-up over gfloat round_ndarray", vector / ours, "x"))
        figures.append((f"{name}: speed-up over gfloat quantize_block", scaled / ours, "x"))
    if gfloat is None:
        print("gfloat is not installed (pip install gfloat): the comparison is left out", file=sys.stderr)
    return figures


def run() -> list[tuple[str, float, str]]:
    """The figures for ``python -m benchmarks.run blocks``."""
    figures = [
        (f"{r['tensor']} {r['format']} ({r['scaling']}): RMS relative error", r["rel_rms"], "")
        for r in error_table()
    ]
    return figures + speed()


def _cell(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def main() -> int:
    """Print the results as markdown tables."""
    rows = error_table()
    formats = list(dict.fromkeys(r["format"] for r in rows))
    columns = " | ".join(f"{t} rel RMS | {t} norm" for t in TENSORS)
    print(f"| format | scaling | bits/element | {columns} |")
    print("|---|---|---|" + "---|---|" * len(TENSORS))
    for fmt in formats:
        mine = {r["tensor"]: r for r in rows if r["format"] == fmt}
        first = mine[TENSORS[0]]
        cells = [fmt, first["scaling"], _cell(first["bits_per_element"])]
        cells += [f"{_cell(mine[t]['rel_rms'])} | {_cell(mine[t]['norm_rel'])}" for t in TENSORS]
        print("| " + " | ".join(cells) + " |")
    print()
    print("| figure | value | unit |")
    print("|---|---|---|")
    for figure, value, unit in speed():
        print(f"| {figure} | {value:.4g} | {unit} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
