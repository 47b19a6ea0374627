"""Answers for any TensorFlow release without TensorFlow: ``kernels --history`` and ``--tf-version``.

    python -m benchmarks.run history
    python benchmarks/bench_history.py

Cold = a fresh ``python -m explorer kernels ...`` process (what a user's shell runs: interpreter
start, explorer's import, reading the shipped registries, printing JSON), with an empty cache
directory; the median of a few runs.  In-process = the same answer computed again in this
process after a first call (the shipped files already parsed).  The target for one op's
``--history`` cold is under 1 s.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
#: (figure name, kernels arguments) of the cold runs
COLD: list[tuple[str, list[str]]] = [
    ("cold: kernels --op range --history --json", ["--op", "range", "--history", "--json"]),
    ("cold: kernels --op Range --history --json (raw op)", ["--op", "Range", "--history", "--json"]),
    (
        "cold: kernels --op Range --dtype f16 --tf-version 2.15.0",
        ["--op", "Range", "--dtype", "float16", "--tf-version", "2.15.0", "--json"],
    ),
    ("cold: python -c 'import explorer' (reference)", []),
]


def _cold(argv: list[str], repeats: int) -> float:
    """Median wall seconds of a fresh process running ``precision-explorer kernels ARGV``."""
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PX_CACHE_DIR=tmp)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
        command = (
            [sys.executable, "-m", "explorer", "kernels", *argv]
            if argv
            else [sys.executable, "-c", "import explorer"]
        )
        for _ in range(repeats):
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True, env=env, cwd=tmp, timeout=120)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def _in_process(repeats: int) -> list[tuple[str, float, str]]:
    """Seconds for one op's history (every shipped release, 4 dtypes, CPU) and one release's rows,
    computed again in this process."""
    from explorer.analysis import releases
    from explorer.queries.availability import availability
    from explorer.queries.history import HISTORY_DTYPES, history_raw_ops, release_history

    figures = []
    start = time.perf_counter()
    release_history(history_raw_ops(["range"]), list(HISTORY_DTYPES), ["CPU"])
    figures.append(("in-process, first: history of range (4 dtypes, CPU)", time.perf_counter() - start, "s"))
    start = time.perf_counter()
    for _ in range(repeats):
        release_history(history_raw_ops(["range"]), list(HISTORY_DTYPES), ["CPU"])
    figures.append(
        ("in-process, again: history of range (4 dtypes, CPU)", (time.perf_counter() - start) / repeats, "s")
    )
    start = time.perf_counter()
    reg = releases.release_registry("2.15.0")
    figures.append(("in-process: parse the shipped 2.15.0 registry", time.perf_counter() - start, "s"))
    start = time.perf_counter()
    for _ in range(repeats):
        availability(
            ops=["range"],
            dtypes=["float16"],
            backends=["tensorflow"],
            modes=["registry"],
            registry=reg,
            progress=False,
        )
    figures.append(
        ("in-process: 2.15.0 registry rows, range float16", (time.perf_counter() - start) / repeats, "s")
    )
    return figures


def run(repeats: int = 3) -> list[tuple[str, float, str]]:
    """The figures, as ``benchmarks/run.py`` prints them."""
    figures = [(name, _cold(argv, repeats), "s") for name, argv in COLD]
    with tempfile.TemporaryDirectory() as tmp, mock.patch.dict(os.environ, {"PX_CACHE_DIR": tmp}):
        figures += _in_process(max(repeats, 3))
    return figures


if __name__ == "__main__":
    for name, value, unit in run():
        print(f"{name:<70} {value:>9.3f} {unit}")
