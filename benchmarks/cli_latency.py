"""How long the command line's quick answers take, whole process: ``--help``, ``--version``,
``explain --no-run`` on a short text, and the refusal of a hostile ``.keras`` and ``.npy`` file.

    python benchmarks/cli_latency.py [--repeats N] [--write]

Each command runs N times (default 7) in a fresh ``python -m explorer`` process; printed per
command: the median and the largest wall seconds (interpreter start to exit), the median CPU
seconds of the process (user + system, from ``resource.getrusage(RUSAGE_CHILDREN)``), the exit
status, and the machine's load average before and after the runs.  On a shared machine the wall
time includes waiting for a CPU; the CPU seconds do not.  Also printed: the heavy modules each
command leaves loaded (``tests/test_cli_startup_modules.py`` asserts on those).

``--write`` writes the table to ``benchmarks/results/cli_latency.md``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "cli_latency.md"
TEXT = "RuntimeError: \"slow_conv2d_cpu\" not implemented for 'Half'\n"
HEAVY = ("tensorflow", "torch", "jax", "keras", "pandas", "scipy", "matplotlib", "ipywidgets", "ml_dtypes")


def hostile_files(folder: Path) -> tuple[Path, Path]:
    """A ``.keras`` zip without ``config.json`` and a ``.npy`` whose header claims 10**12 float32."""
    keras = folder / "bad.keras"
    with zipfile.ZipFile(keras, "w") as archive:
        archive.writestr("metadata.json", "{}")
    npy = folder / "bad.npy"
    header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }".ljust(117) + b"\n"
    npy.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header)
    return keras, npy


def timed(argv: list[str], stdin: str = "") -> tuple[float, float, int]:
    """Wall and CPU seconds and exit status of ``python -m explorer ARGV`` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "explorer", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def loaded_modules(argv: list[str], stdin: str = "") -> list[str]:
    """The :data:`HEAVY` modules in ``sys.modules`` after the command ran (a separate, untimed run)."""
    code = (
        "import sys\nfrom explorer.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        f"print('@@', ' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], input=stdin, capture_output=True, text=True, cwd=ROOT
    )
    found = [line[3:].strip() for line in done.stdout.splitlines() if line.startswith("@@")]
    return found[-1].split() if found else ["?"]


def measure(repeats: int) -> tuple[list[dict[str, object]], tuple[float, ...], tuple[float, ...]]:
    """Every command ``repeats`` times, interleaved; the rows and the load before and after."""
    with tempfile.TemporaryDirectory() as tmp:
        keras, npy = hostile_files(Path(tmp))
        commands = {
            "--help": (["--help"], ""),
            "--version": (["--version"], ""),
            "explain --no-run (stdin, one line)": (["explain", "--no-run"], TEXT),
            "model --file bad.keras (no config.json)": (["model", "--file", str(keras)], ""),
            "blocks --tensor bad.npy (10^12 elements)": (["blocks", "--tensor", str(npy)], ""),
        }
        load_before = os.getloadavg()
        samples: dict[str, list[tuple[float, float, int]]] = {name: [] for name in commands}
        for _ in range(repeats):
            for name, (argv, stdin) in commands.items():
                samples[name].append(timed(argv, stdin))
        load_after = os.getloadavg()
        rows = []
        for name, (argv, stdin) in commands.items():
            walls = [s[0] for s in samples[name]]
            rows.append(
                {
                    "command": name,
                    "wall_median": statistics.median(walls),
                    "wall_max": max(walls),
                    "cpu_median": statistics.median(s[1] for s in samples[name]),
                    "exit": sorted({s[2] for s in samples[name]}),
                    "heavy": loaded_modules(argv, stdin),
                }
            )
    return rows, load_before, load_after


def table(
    rows: list[dict[str, object]], repeats: int, before: tuple[float, ...], after: tuple[float, ...]
) -> str:
    """The results as Markdown."""
    lines = [
        f"{os.cpu_count()} CPUs; load average before the runs {before[0]:.2f}, {before[1]:.2f}, "
        f"{before[2]:.2f}; after {after[0]:.2f}, {after[1]:.2f}, {after[2]:.2f}; {repeats} runs each, "
        "interleaved.",
        "",
        "| command | wall median / max (s) | CPU median (s) | exit | heavy modules loaded |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        heavy = ", ".join(r["heavy"]) or "none"  # type: ignore[arg-type]
        exits = ", ".join(map(str, r["exit"]))  # type: ignore[call-overload]
        lines.append(
            f"| `{r['command']}` | {r['wall_median']:.2f} / {r['wall_max']:.2f} | {r['cpu_median']:.2f} | "
            f"{exits} | {heavy} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="runs per command (default 7)")
    parser.add_argument("--write", action="store_true", help=f"write the table to {RESULTS.name}")
    args = parser.parse_args()
    rows, before, after = measure(args.repeats)
    text = table(rows, args.repeats, before, after)
    print(text)
    if args.write:
        head = "# Command-line latency: whole process\n\n    python benchmarks/cli_latency.py --write\n\n"
        RESULTS.write_text(head + text + "\n")


if __name__ == "__main__":
    main()
