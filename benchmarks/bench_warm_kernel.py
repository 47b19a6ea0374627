"""What the warm kernel of ``precision-explorer app`` (its default pool of one) holds in memory.

    python -m benchmarks.bench_warm_kernel [--runs 3] [--write]

(from the repository root).  Each run starts ``precision-explorer app`` with its default
options on a fresh server (``--max-kernels 4``, so the default pool of one applies whatever the
machine's memory; no browser, nobody visits), waits until the server logs that the pooled kernel
has run the notebook (:data:`explorer.server.kernels.POOL_READY`), waits ``--settle`` seconds,
then reads the pooled kernel process's ``VmRSS`` (``/proc/PID/status``) and ``Pss``
(``/proc/PID/smaps_rollup``: shared pages split between the processes that map them) and those
of any processes the kernel started.  It prints each run and the medians; ``--write`` writes
``benchmarks/results/warm_kernel.md``, whose "help figure" line is what ``precision-explorer app
--help`` quotes (:data:`explorer.cli.app.WARM_KERNEL_PSS_MIB`, rounded to 10 MiB).  Linux only.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.support.voila import start_app

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "warm_kernel.md"
#: the line of the results file that ``--help`` quotes: ``HELP_LINE.format(mib)``
HELP_LINE = "help figure (median PSS of the warm kernel, rounded to 10 MiB): {} MiB"
POOL_WAIT_S = 300.0


def _kib(path: Path, key: str) -> int:
    for line in path.read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(f"{key} not in {path}")


def memory_mib(pid: int) -> dict[str, float]:
    """``VmRSS`` and ``Pss`` of process ``pid``, MiB."""
    proc = Path(f"/proc/{pid}")
    return {"rss": _kib(proc / "status", "VmRSS") / 1024, "pss": _kib(proc / "smaps_rollup", "Pss") / 1024}


def one_run(settle_s: float) -> dict[str, Any]:
    """One fresh server: the pooled kernel's memory once it has run the notebook."""
    from explorer.server.kernels import POOL_READY

    with tempfile.TemporaryDirectory(prefix="px-bench-warm-") as tmp:
        started = time.monotonic()
        server = start_app(Path(tmp), "--max-kernels", "4")
        try:
            deadline = time.monotonic() + POOL_WAIT_S
            while POOL_READY not in server.log_text():
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"no warm kernel within {POOL_WAIT_S:.0f} s:\n{server.log_text()[-2000:]}"
                    )
                time.sleep(0.2)
            ready_s = time.monotonic() - started
            time.sleep(settle_s)
            [kernel] = server.kernels()
            own = memory_mib(kernel)
            children = [pid for pid in server.tree() if pid != kernel and _parent_chain(pid, kernel)]
            extra = [memory_mib(pid) for pid in children]
            return {
                "ready_s": ready_s,
                "rss": own["rss"],
                "pss": own["pss"],
                "children": len(children),
                "children_pss": sum(m["pss"] for m in extra),
            }
        finally:
            server.stop()


def _parent_chain(pid: int, ancestor: int) -> bool:
    """Whether ``ancestor`` is an ancestor of ``pid``."""
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        if pid == ancestor:
            return True
    return False


def help_figure(pss_median: float) -> int:
    """The figure ``--help`` quotes: the median PSS rounded to 10 MiB.

    >>> help_figure(184.9)
    180
    """
    return int(round(pss_median / 10.0) * 10)


def _commit() -> str:
    done = subprocess.run(["git", "log", "-1", "--format=%h"], capture_output=True, text=True, cwd=ROOT)
    return done.stdout.strip()


def report(runs: list[dict[str, Any]], argv: list[str]) -> str:
    rss = statistics.median(r["rss"] for r in runs)
    pss = statistics.median(r["pss"] for r in runs)
    lines = [
        "# The warm kernel's memory (`precision-explorer app`'s default pool of one)",
        "",
        f"`python -m benchmarks.bench_warm_kernel {' '.join(argv)}`".replace(" `", "`"),
        f"at commit {_commit()}, {platform.platform()}, Python {platform.python_version()}; "
        "each run a fresh `precision-explorer app --max-kernels 4` (its default pool of one), "
        "measured once the pooled kernel has run the notebook, nobody visiting.",
        "",
        "| run | pool ready after s | kernel VmRSS MiB | kernel PSS MiB | processes it started "
        "| their PSS MiB |",
        "|---|---|---|---|---|---|",
    ]
    for k, r in enumerate(runs, 1):
        lines.append(
            f"| {k} | {r['ready_s']:.1f} | {r['rss']:.0f} | {r['pss']:.0f} | {r['children']} "
            f"| {r['children_pss']:.0f} |"
        )
    lines += [
        "",
        f"median VmRSS: {rss:.0f} MiB; median PSS: {pss:.0f} MiB",
        "",
        HELP_LINE.format(help_figure(pss)),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh servers measured (default 3)")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds to wait after the pool is warm")
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    runs = []
    for _ in range(args.runs):
        runs.append(one_run(args.settle))
        print(runs[-1], flush=True)
    text = report(runs, argv)
    print(text)
    if args.write:
        RESULTS.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
