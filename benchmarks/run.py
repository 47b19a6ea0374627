"""Run every benchmark and print each figure with its unit.

    python benchmarks/run.py            # all
    python benchmarks/run.py foundation # only bench_foundation.py

Each ``benchmarks/bench_*.py`` has ``run() -> list[tuple[name, value, unit]]``.
Figures are wall-clock on the machine at hand; compare them as ratios within one run.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path


def main(selected: list[str]) -> int:
    here = Path(__file__).parent
    files = sorted(here.glob("bench_*.py"))
    if selected:
        files = [f for f in files if f.stem.removeprefix("bench_") in selected]
        if not files:
            print(
                f"no benchmark named {selected}; have: "
                f"{[f.stem.removeprefix('bench_') for f in sorted(here.glob('bench_*.py'))]}"
            )
            return 2
    for path in files:
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        print(f"== {path.stem.removeprefix('bench_')}", flush=True)
        start = time.perf_counter()
        for name, value, unit in module.run():
            print(f"{name:<60} {value:>12.4g} {unit}", flush=True)
        print(f"({time.perf_counter() - start:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
