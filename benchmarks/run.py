"""Run every benchmark and print each figure with its unit.

    python -m benchmarks.run            # all (from the repository root)
    python -m benchmarks.run foundation # only bench_foundation.py

Each ``benchmarks/bench_*.py`` with ``run() -> list[tuple[name, value, unit]]`` is one group
(the others are run by themselves, with the options their docstrings give).  The benchmarks
are imported as modules of the ``benchmarks`` package, so those that use the tests' helpers
(``tests.support``: Chromium, Voila servers) find them.
Figures are wall-clock on the machine at hand; compare them as ratios within one run.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path


def groups() -> list[str]:
    """The benchmark groups: ``bench_NAME.py`` files that define ``run()``, by NAME."""
    here = Path(__file__).parent
    return [
        path.stem.removeprefix("bench_")
        for path in sorted(here.glob("bench_*.py"))
        if "\ndef run(" in path.read_text(encoding="utf-8")
    ]


def main(selected: list[str]) -> int:
    names = groups()
    if selected:
        unknown = [name for name in selected if name not in names]
        if unknown:
            print(f"no benchmark named {unknown}; have: {names}")
            return 2
        names = [name for name in names if name in selected]
    for name in names:
        module = importlib.import_module(f"benchmarks.bench_{name}")
        print(f"== {name}", flush=True)
        start = time.perf_counter()
        for figure, value, unit in module.run():
            print(f"{figure:<60} {value:>12.4g} {unit}", flush=True)
        print(f"({time.perf_counter() - start:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
