"""The bounds on a run: its deadline, the low-memory guard and SIGTERM/SIGHUP around the visitors,
and the cleanup of the processes the run itself started (Chromium, Playwright's driver)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from typing import Any

from benchmarks.load_test.config import Config
from benchmarks.load_test.context import Hook
from benchmarks.load_test.records import Visitor
from benchmarks.load_test.sampling import Sampler
from benchmarks.load_test.server import AppServer
from benchmarks.load_test.visits import run_visitors
from explorer.server.process_tree import descendants, is_alive


async def run_with_limits(
    cfg: Config,
    server: AppServer,
    sampler: Sampler,
    visitors: list[Visitor],
    result: dict[str, Any],
    on_interacted: Hook | None = None,
) -> None:
    """``run_visitors`` under the deadline, the memory guard and SIGTERM/SIGHUP (SIGINT: asyncio's own)."""
    loop = asyncio.get_running_loop()
    main = asyncio.ensure_future(run_visitors(cfg, server, sampler, visitors, result, on_interacted))

    def stop(reason: str) -> None:
        result.setdefault("stopped_by", reason)
        main.cancel()

    for sig in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop, signal.Signals(sig).name)
    timer = loop.call_later(cfg.deadline, stop, f"deadline ({cfg.deadline:.0f} s)")

    async def guard() -> None:
        while not main.done():
            if sampler.low_memory.is_set():
                stop(f"low memory: {sampler.low_memory_reason}")
                return
            await asyncio.sleep(0.5)

    guarding = asyncio.ensure_future(guard())
    try:
        await main
    except asyncio.CancelledError:
        if "stopped_by" not in result:
            raise
    finally:
        timer.cancel()
        guarding.cancel()
        for sig in (signal.SIGTERM, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)
        if "stopped_by" in result:
            for v in visitors:
                if v.failure == "deadline":
                    v.failure = "aborted" if not result["stopped_by"].startswith("deadline") else "deadline"


def kill_own_children(already: dict[int, int]) -> list[int]:
    """SIGTERM, then SIGKILL, to every live process this run started (Chromium, Playwright): the
    descendants of this process not in ``already`` (those alive when the run began, e.g. the
    caller's own workers or multiprocessing's resource tracker, are left alone)."""
    mine = {pid: start for pid, start in descendants(os.getpid()).items() if already.get(pid) != start}
    for pid in mine:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and any(is_alive(p, s) for p, s in mine.items()):
        time.sleep(0.1)
    left = [p for p, s in mine.items() if is_alive(p, s)]
    for pid in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return sorted(mine)
