"""The machine-wide training queue under load: M visitors press Train at once, K slots.

    python -m benchmarks.run training_queue              # M = 4, 8 with K = 1, 2
    python -m benchmarks.bench_training_queue --visitors 4 --slots 1 [--policy float32] [--epochs 1]

Each visitor is a spawned process standing in for a visitor's kernel: it builds the app
(``explorer.App(load_tensorflow=False)``), points the Training tab at one shared queue
directory with K slots, and, once every visitor is ready, presses Train
(``TrainingTab.start(wait=True)``) for one short run (default: ``float32``, 1 epoch of the
MLP).  Reported: the wall time from the common start to the last run's end; the most
tickets in the ``running`` state at once (the queue's table, read every 20 ms by this
process); each visitor's wait for a slot; the peak RSS (``VmHWM`` in ``/proc/PID/status``) of
the training workers and of the visitor processes.  Wall-clock figures on a shared machine
vary from run to run; compare them within one run.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

CONFIGS: tuple[tuple[int, int], ...] = ((4, 1), (4, 2), (8, 1), (8, 2))


def _peak_rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _visitor(directory: str, slots: int, policy: str, epochs: int, ready: Any, go: Any, out: Any) -> None:
    """One visitor: build the app, wait for the common start, train, report."""
    import os

    import explorer
    from explorer.training.queue import TrainingQueue

    app = explorer.App(load_tensorflow=False, tab="training")
    tab = app.select("training")
    app.state.set(policies=[policy])
    tab.epochs.value = epochs
    tab.queue = TrainingQueue(Path(directory), slots=slots)
    ready.release()
    go.wait()
    entered = time.monotonic()
    granted: list[float] = []
    worker_peak: list[float] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            status = tab.statuses.get(policy)
            if status is not None and status.state not in ("queued",) and not granted:
                granted.append(time.monotonic())
            if status is not None and status.pid is not None:
                peak = _peak_rss_mb(status.pid)
                if peak is not None:
                    worker_peak[:] = [max([peak, *worker_peak])]
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    job = tab.start(wait=True)
    ended = time.monotonic()
    stop.set()
    watcher.join()
    out.put(
        {
            "status": job.status,
            "error": job.error,
            "entered": entered,
            "granted": granted[0] if granted else ended,
            "ended": ended,
            "worker_peak_mb": worker_peak[0] if worker_peak else float("nan"),
            "visitor_peak_mb": _peak_rss_mb(os.getpid()) or float("nan"),
            "tensorflow_in_visitor": "tensorflow" in sys.modules,
        }
    )


def _max_overlap(intervals: list[tuple[float, float]]) -> int:
    timeline = sorted([(a, 1) for a, _ in intervals] + [(b, 0) for _, b in intervals])
    now = peak = 0
    for _, is_start in timeline:
        now += 1 if is_start else -1
        peak = max(peak, now)
    return peak


def measure(visitors: int, slots: int, policy: str = "float32", epochs: int = 1) -> dict[str, Any]:
    """Run one configuration; returns the figures as a dict."""
    context = multiprocessing.get_context("spawn")
    import benchmarks.bench_training_queue as this  # the spawned visitors import it by name

    with tempfile.TemporaryDirectory(prefix="px-bench-queue-") as tmp:
        ready, go, out = context.Semaphore(0), context.Event(), context.Queue()
        procs = [
            context.Process(target=this._visitor, args=(tmp, slots, policy, epochs, ready, go, out))
            for _ in range(visitors)
        ]
        for p in procs:
            p.start()
        for _ in procs:
            if not ready.acquire(timeout=600):
                raise RuntimeError("a visitor did not get ready within 600 s")
        from explorer.training.queue import TrainingQueue

        observed: list[int] = [0]
        done = threading.Event()

        def sample() -> None:  # the queue's own table: tickets holding a slot, every 20 ms
            with TrainingQueue(Path(tmp), slots=slots) as queue:
                while not done.is_set():
                    running = sum(t.state == "running" for t in queue.tickets())
                    observed[0] = max(observed[0], running)
                    time.sleep(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        start = time.monotonic()
        go.set()
        sampler.start()
        rows = [out.get(timeout=1800) for _ in procs]
        done.set()
        sampler.join()
        for p in procs:
            p.join(60)
    failed = [r for r in rows if r["status"] != "done"]
    if failed:
        raise RuntimeError(f"runs failed: {failed}")
    waits = sorted(r["granted"] - r["entered"] for r in rows)
    return {
        "wall_s": max(r["ended"] for r in rows) - start,
        "max_running": observed[0],
        "max_overlap_seen_by_visitors": _max_overlap([(r["granted"], r["ended"]) for r in rows]),
        "waits_s": waits,
        "worker_peak_mb": max(r["worker_peak_mb"] for r in rows),
        "visitor_peak_mb": max(r["visitor_peak_mb"] for r in rows),
        "tensorflow_in_visitor": any(r["tensorflow_in_visitor"] for r in rows),
    }


def _figures(visitors: int, slots: int, m: dict[str, Any]) -> list[tuple[str, float, str]]:
    name = f"M={visitors} visitors, K={slots} slots"
    figures = [
        (f"{name}: wall time", m["wall_s"], "s"),
        (f"{name}: most tickets running at once (queue table, sampled 50/s)", m["max_running"], ""),
        (f"{name}: wait for a slot, median", statistics.median(m["waits_s"]), "s"),
        (f"{name}: wait for a slot, longest", max(m["waits_s"]), "s"),
        (f"{name}: training worker peak RSS (largest)", m["worker_peak_mb"], "MB"),
        (f"{name}: visitor process peak RSS (largest)", m["visitor_peak_mb"], "MB"),
        (f"{name}: visitors that imported TensorFlow", float(m["tensorflow_in_visitor"]), ""),
    ]
    figures += [(f"{name}:   visitor wait #{i + 1}", w, "s") for i, w in enumerate(m["waits_s"])]
    return figures


def run() -> list[tuple[str, float, str]]:
    """Figures as (name, value, unit), for every configuration in CONFIGS."""
    figures: list[tuple[str, float, str]] = []
    for visitors, slots in CONFIGS:
        figures += _figures(visitors, slots, measure(visitors, slots))
    return figures


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--visitors", type=int, default=4)
    parser.add_argument("--slots", type=int, default=1)
    parser.add_argument("--policy", default="float32")
    parser.add_argument("--epochs", type=int, default=1)
    args = parser.parse_args(argv)
    for name, value, unit in _figures(
        args.visitors, args.slots, measure(args.visitors, args.slots, args.policy, args.epochs)
    ):
        print(f"{name:<60} {value:>12.4g} {unit}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
