"""``blocks --tensor FILE.npy`` on big float16 tensors: wall time and peak memory per element.

    python benchmarks/blocks_memory.py [--elements 1048576 8388608 67108864] [--baseline-repo DIR]

For each size, a float16 ``.npy`` file of that many standard-normal elements (rows of 8192) is
written to a temporary directory, then ``python -m explorer blocks --tensor FILE --json`` runs
in a fresh process (the default comparison: 7 block formats at their own block size and at 8,
16, 32, 64 and 128, and 3 per-tensor baselines); printed are its wall time, its peak resident
memory (``ru_maxrss`` of the child), and per element: seconds, and bytes of peak memory above
the same command on a 1-row tensor (the interpreter and its imports).  ``--baseline-repo DIR``
runs the same commands with another checkout's ``explorer`` first on ``PYTHONPATH`` (the sizes
up to 8 Mi elements only: before the piece-by-piece reading, 64 Mi took 410 s and 6.5 GB).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ROW = 8192


def write_tensor(path: Path, elements: int) -> None:
    """A float16 tensor of ``elements`` standard-normal values, rows of :data:`ROW`, written in
    slices (never the whole float64 sample in memory)."""
    rows = max(1, elements // ROW)
    width = ROW if elements >= ROW else elements
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float16, shape=(rows, width))
    rng = np.random.default_rng(0)
    for first in range(0, rows, 512):
        out[first : first + 512] = rng.standard_normal((min(512, rows - first), width)).astype(np.float16)
    out.flush()
    del out


def run_blocks(path: Path, repo: Path) -> tuple[float, int, int]:
    """(wall seconds, peak RSS bytes, exit status) of ``blocks --tensor path`` with ``repo``'s code."""
    env = {**os.environ, "PYTHONPATH": str(repo)}
    probe = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "argv = [sys.executable, '-m', 'explorer', 'blocks', '--tensor', sys.argv[1], '--json']\n"
        "done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
        "took = time.perf_counter() - t\n"
        "print(took, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done.returncode)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(path)], capture_output=True, text=True, env=env, cwd=repo
    )
    took, rss_kib, status = done.stdout.split()
    return float(took), int(rss_kib) * 1024, int(status)


def main() -> None:
    """Write the tensors, time the command on each, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, nargs="+", default=[2**20, 2**23, 2**26])
    parser.add_argument("--baseline-repo", type=Path, default=None)
    args = parser.parse_args()
    repos = [("this checkout", ROOT)]
    if args.baseline_repo is not None:
        repos.insert(0, (f"baseline {args.baseline_repo}", args.baseline_repo))
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f} at the start")  # fmt: skip
    print("| code | elements | file MiB | exit | wall s | peak RSS MiB | us per element | "
          "peak bytes per element above the 1-row run |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        tiny = Path(tmp) / "tiny.npy"
        write_tensor(tiny, 64)
        for label, repo in repos:
            _, floor, _ = run_blocks(tiny, repo)
            for elements in args.elements:
                if repo != ROOT and elements > 2**23:
                    continue
                path = Path(tmp) / f"t{elements}.npy"
                if not path.exists():
                    write_tensor(path, elements)
                took, peak, status = run_blocks(path, repo)
                print(
                    f"| {label} | {elements:,} | {path.stat().st_size / 2**20:.0f} | {status} | {took:.1f} | "
                    f"{peak / 2**20:.0f} | {took / elements * 1e6:.2f} | {(peak - floor) / elements:.1f} |",
                    flush=True,
                )
            print(f"| {label} | 1-row run (64 elements) | | | | {floor / 2**20:.0f} | | |")
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
