"""Accuracy figures: bytes sent to the browser and redraw time, old (PNG) against new (inline SVG).

    python -m benchmarks.bench_accuracy_plots [--repeat 5]

Old: the figure of ``explorer/plots/accuracy.py`` at commit 0b03274 (read with ``git show``), sent
as the app sent it then (``render.figure_bundle``: the PNG at the app's 90 dpi, base64, in
``image/png`` and again in the ``<img>`` of ``text/html``).  New: today's figure as sanitized
inline SVG (``explorer.app.vector.svg_html``; the point clouds rasterized inside).  Redraw: build
the figure and encode it, the best of ``--repeat`` runs (the machine is shared).  For exp in
float16 and bfloat16 on numpy and emulated (every finite input).  Results:
benchmarks/results/accuracy_plots.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BASE = "0b03274"
ROOT = Path(__file__).resolve().parents[1]


def _old_module() -> Any:
    """explorer/plots/accuracy.py as it was at :data:`BASE`, or None without git."""
    try:
        source = subprocess.run(
            ["git", "show", f"{BASE}:explorer/plots/accuracy.py"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    path = Path(tempfile.mkdtemp()) / "old_accuracy_plots.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("old_accuracy_plots", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _best(func: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, value = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        value = func()
        best = min(best, time.perf_counter() - start)
    return best, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    from explorer.analysis.accumulation import summation_study
    from explorer.app.render import figure_bundle
    from explorer.app.vector import svg_html
    from explorer.plots.accuracy import accuracy_figure
    from explorer.queries.accuracy import accuracy

    old = _old_module()
    rows = []
    for dtype in ("float16", "bfloat16"):
        result = accuracy("exp", dtype, ("numpy", "emulated"))
        study = summation_study(dtype)
        new_s, markup = _best(
            lambda result=result, study=study: svg_html(accuracy_figure(result, study), "figure"), args.repeat
        )
        row = {"dtype": dtype, "new_bytes": len(markup.encode()), "new_ms": round(new_s * 1000, 1)}
        if old is not None:

            def old_draw(result: Any = result, study: Any = study) -> int:
                bundle = figure_bundle(old.accuracy_figure(result, study), "figure")
                return len(json.dumps(bundle["data"]).encode())

            old_s, size = _best(old_draw, args.repeat)
            row |= {"old_bytes": size, "old_ms": round(old_s * 1000, 1)}
        rows.append(row)
    for row in rows:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
