"""Explain answers first, then runs: how soon the reading appears, and the workaround after it.

    python benchmarks/explain_latency.py [--repeats N]

CLI: wall seconds of a fresh ``python -m explorer explain --no-run TEXT`` (interpreter start,
explorer's import, the reading, printing it), the median and the largest of N runs, with the
process's CPU seconds (user + system) beside it, for the machine is shared; then, for the full
``explain TEXT``, the seconds to the first printed line (the reading block, flushed at once) and
to the end (the workaround run in a sandbox worker and checked against the float64 reference).
Tab, headless: the Explain tab of an :class:`explorer.App`, its text set (``.value``) and its
button clicked; the seconds from setting the text to the reading appearing in the tab (its facts
table, the workaround section saying it is being run) and to the workaround appearing (its
check line), each the moment the tab's HTML was set to it.  The first tab run starts the
sandbox worker; the later ones find it warm.
Results: printed, and written to benchmarks/results/explain_latency.md.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "explain_latency.md"
#: the texts timed: the PyTorch error of the layout bug, and TensorFlow's original error
TEXTS = {
    "PyTorch slow_conv2d_cpu Half": "RuntimeError: \"slow_conv2d_cpu\" not implemented for 'Half'",
    "TensorFlow Range DT_HALF": "Could not find device for node: {{node Range}} = Range[Tidx=DT_HALF]",
}


def _env(cache: str) -> dict[str, str]:
    env = dict(os.environ, PX_CACHE_DIR=cache)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def no_run_times(text: str, repeats: int, cache: str) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of ``explain --no-run TEXT`` in fresh processes."""
    walls, cpus = [], []
    for _ in range(repeats):
        cpu = _cpu_children()
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "explorer", "explain", "--no-run", text],
            check=True,
            capture_output=True,
            env=_env(cache),
            cwd=cache,
            timeout=120,
        )
        walls.append(time.perf_counter() - start)
        cpus.append(_cpu_children() - cpu)
    return walls, cpus


def full_times(text: str, cache: str) -> tuple[float, float]:
    """Seconds to the first printed line and to the end of ``explain TEXT`` (a fresh process)."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "explorer", "explain", text],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_env(cache),
        cwd=cache,
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    first_at = time.perf_counter() - start
    rest = process.stdout.read()
    process.wait(timeout=600)
    assert first and b"\ncheck " in rest, rest[-500:]
    return first_at, time.perf_counter() - start


def in_process_reading(text: str, repeats: int) -> tuple[float, float]:
    """Seconds of the reading alone (read_error and printing it), in this process with explorer
    imported: the first call (cold: registries and caches loaded) and the median of the next."""
    import contextlib
    import io

    sys.path.insert(0, str(ROOT))
    from explorer.cli.explain import print_reading
    from explorer.queries.diagnose import read_error

    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            print_reading(read_error(text).result)
        times.append(time.perf_counter() - start)
    return times[0], statistics.median(times[1:])


def tab_times(text: str, repeats: int) -> list[tuple[float, float]]:
    """(seconds to the reading, seconds to the workaround) in the Explain tab, per run."""
    sys.path.insert(0, str(ROOT))
    import explorer

    app = explorer.App(load_tensorflow=False, tab="explain")
    tab = app.tab("explain")
    shown: list[tuple[float, str]] = []  # every markup the tab shows, with the time it was set
    show_html = tab.show_html

    def recording(markup: str) -> None:
        show_html(markup)
        shown.append((time.perf_counter(), markup))

    tab.show_html = recording  # type: ignore[method-assign]
    out = []
    for i in range(repeats):
        shown.clear()
        start = time.perf_counter()
        tab.text.value = text + "\n" * i  # a new text each run (nothing is cached by text)
        tab.button.click()
        assert tab.job is not None
        tab.job.wait(600)
        reading = next(t for t, markup in shown if "px-explain-facts" in markup) - start
        workaround = (
            next(t for t, markup in shown if "px-explain-check" in markup or "No workaround" in markup)
            - start
        )
        out.append((reading, workaround))
    return out


def main() -> None:
    """Measure, print, and write the results file."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    lines = [
        "# Explain: the reading first, then the workaround",
        "",
        "    python benchmarks/explain_latency.py --repeats " + str(args.repeats),
        "",
        f"Machine: {os.cpu_count()} CPUs; load average before the runs: "
        + ", ".join(f"{x:.1f}" for x in os.getloadavg())
        + " (shared machine: wall times include waiting for a CPU; CPU seconds do not).",
        "",
        "## CLI",
        "",
        "| text | `explain --no-run` wall median / max (s) | its CPU median (s) "
        "| `explain`: first printed line (s) | `explain`: end (s) |",
        "|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as cache:
        base_walls, base_cpus = [], []
        for _ in range(args.repeats):
            cpu = _cpu_children()
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", "import explorer"], check=True, env=_env(cache), cwd=cache)
            base_walls.append(time.perf_counter() - start)
            base_cpus.append(_cpu_children() - cpu)
        for name, text in TEXTS.items():
            walls, cpus = no_run_times(text, args.repeats, cache)
            first, end = full_times(text, cache)
            row = (
                f"| {name} | {statistics.median(walls):.2f} / {max(walls):.2f} | "
                f"{statistics.median(cpus):.2f} | {first:.2f} | {end:.2f} |"
            )
            print(row, flush=True)
            lines.append(row)
        for name, text in TEXTS.items():
            cold, warm = in_process_reading(text, args.repeats)
            row = (
                f"In process, explorer imported, {name}: the reading (read_error + printing it) "
                f"{cold:.3f} s the first time, {warm:.4f} s median after."
            )
            print(row, flush=True)
            lines += ["", row]
        reference = (
            f"Reference, `python -c 'import explorer'`: wall median {statistics.median(base_walls):.2f} s, "
            f"CPU median {statistics.median(base_cpus):.2f} s."
        )
        print(reference, flush=True)
        lines += ["", reference]
    lines += [
        "",
        "## Explain tab (headless: `.value` set, the button clicked)",
        "",
        "| text | run | reading shown (s) | workaround shown (s) |",
        "|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as cache:
        os.environ["PX_CACHE_DIR"] = cache
        for name, text in TEXTS.items():
            for i, (reading, workaround) in enumerate(tab_times(text, 3)):
                row = f"| {name} | {i + 1} | {reading:.3f} | {workaround:.2f} |"
                print(row, flush=True)
                lines.append(row)
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"written: {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
