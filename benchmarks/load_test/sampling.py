"""The server observed while the visitors come and go: kernels and memory sampled once a second
(with the low-memory flag), the snapshot when every visitor has interacted, the culling watch."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from benchmarks.load_test.procfs import load_average, meminfo_bytes, mib, tensorflow_loaded, vm_rss_bytes
from benchmarks.load_test.records import Visitor
from benchmarks.load_test.server import AppServer, voila_pid

#: Seconds between two samples of /proc (kernels, memory).
SAMPLE_S = 1.0


class Sampler:
    """Samples the server's kernels and memory once a second in a thread; flags low memory."""

    def __init__(self, server: AppServer, min_available: int) -> None:
        self.server = server
        self.min_available = min_available
        self.samples: list[dict[str, Any]] = []
        self.low_memory = threading.Event()
        self.low_memory_reason = ""
        self.seen_kernels: dict[str, int] = {}
        self._stop = threading.Event()
        self._start = time.monotonic()
        self._thread = threading.Thread(target=self._loop, name="load-test-sampler", daemon=True)

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def sample(self) -> dict[str, Any]:
        kernels = self.server.kernel_ids()
        self.seen_kernels.update(kernels)
        rss = [r for r in (vm_rss_bytes(pid) for pid in kernels.values()) if r is not None]
        voila = voila_pid(self.server)
        available = meminfo_bytes("MemAvailable")
        return {
            "t": round(time.monotonic() - self._start, 2),
            "kernels": len(kernels),
            "kernels_rss_mib": mib(sum(rss)),
            "voila_rss_mib": mib(vm_rss_bytes(voila)) if voila else None,
            "mem_available_mib": mib(available),
            "load": load_average()[:1],
        }

    def _loop(self) -> None:
        while not self._stop.is_set():
            point = self.sample()
            self.samples.append(point)
            available = meminfo_bytes("MemAvailable")
            if available is not None and available < self.min_available:
                self.low_memory_reason = (
                    f"MemAvailable {available / 2**30:.1f} GiB < {self.min_available / 2**30:.1f} GiB "
                    f"with {point['kernels']} kernels"
                )
                self.low_memory.set()
            self._stop.wait(SAMPLE_S)


def snapshot(server: AppServer) -> dict[str, Any]:
    """Every kernel's VmRSS and TensorFlow state, and the Voila server's VmRSS, now."""
    kernels = server.kernel_ids()
    per_kernel = {kid: mib(vm_rss_bytes(pid)) for kid, pid in kernels.items()}
    values = [r for r in per_kernel.values() if r is not None]
    voila = voila_pid(server)
    return {
        "kernels": len(kernels),
        "kernel_rss_mib": per_kernel,
        "kernels_with_tensorflow": sum(bool(tensorflow_loaded(pid)) for pid in kernels.values()),
        "kernels_total_mib": round(sum(values), 1),
        "kernel_mean_mib": round(sum(values) / len(values), 1) if values else None,
        "kernel_max_mib": max(values) if values else None,
        "voila_rss_mib": mib(vm_rss_bytes(voila)) if voila else None,
        "mem_available_mib": mib(meminfo_bytes("MemAvailable")),
        "load": load_average(),
    }


async def watch_culling(
    server: AppServer, since: float, bound: float, visitors: list[Visitor] | None = None
) -> dict[str, Any]:
    """Poll /proc until no kernel is left (or ``bound`` seconds after ``since``); with
    ``visitors``, until none of their kernels is left (pre-heated kernels nobody took are
    never culled: they wait for the next visitor)."""

    def alive() -> int:
        kernels = server.kernel_ids()
        if visitors is None:
            return len(kernels)
        return sum(1 for v in visitors if v.kernel_id in kernels)

    at_start = alive()
    while True:
        count = alive()
        elapsed = time.monotonic() - since
        if count == 0:
            return {
                "kernels_at_start": at_start,
                "reached_zero": True,
                "seconds": round(elapsed, 1),
                "bound_s": bound,
            }
        if elapsed > bound:
            return {
                "kernels_at_start": at_start,
                "reached_zero": False,
                "kernels_left": count,
                "bound_s": bound,
            }
        await asyncio.sleep(0.5)
