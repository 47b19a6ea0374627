"""What the visitors of one run share with it: who has finished interacting (their kernel's memory
read right then), the release of the idle visitors, and the hook tests observe the kernels with."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

from benchmarks.load_test.config import Config
from benchmarks.load_test.procfs import mib, tensorflow_loaded, vm_rss_bytes
from benchmarks.load_test.records import Visitor
from benchmarks.load_test.sampling import Sampler
from benchmarks.load_test.server import AppServer

#: ``on_interacted(server, visitors)``: called in a thread once every visitor has interacted
Hook = Callable[[AppServer, list[Visitor]], None]


class RunContext:
    """Shared by the visitors: who has finished interacting, the release of idle visitors."""

    def __init__(self, cfg: Config, sampler: Sampler) -> None:
        self.cfg = cfg
        self.sampler = sampler
        self.release = asyncio.Event()
        self.done = 0
        self.changed = asyncio.Event()

    def interacted(self, v: Visitor, server: AppServer, start: float) -> None:
        """Record the visitor's kernel memory now, right after its interactions."""
        v.interacted_s = round(time.monotonic() - start, 2)
        if v.kernel_id:
            v.kernel_pid = server.kernel_ids().get(v.kernel_id)
        if v.kernel_pid:
            v.kernel_rss_mib = mib(vm_rss_bytes(v.kernel_pid))
            v.kernel_tensorflow = tensorflow_loaded(v.kernel_pid)

    def finished(self) -> None:
        self.done += 1
        self.changed.set()

    async def wait_released(self, gone: Callable[[], bool]) -> None:
        """Stay idle (page open) until the run releases the visitors or the connection is gone."""
        while not self.release.is_set() and not gone():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.release.wait(), 1.0)
