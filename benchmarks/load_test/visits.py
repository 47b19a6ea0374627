"""The visitors of one run: their arrivals (Chromium launched first when some are browsers), the
wait until all have interacted, the memory snapshot and the culling watch, then their release."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from benchmarks.load_test.browser import browser_visitor
from benchmarks.load_test.config import Config
from benchmarks.load_test.context import Hook, RunContext
from benchmarks.load_test.light import light_visitor
from benchmarks.load_test.records import Visitor
from benchmarks.load_test.sampling import Sampler, snapshot, watch_culling
from benchmarks.load_test.server import AppServer
from tests.support.browser import launch_options, missing_browser


async def measure_loop_lag(result: dict[str, Any], every: float = 0.1) -> None:
    """The longest time this script's event loop was late (the load generator's own slowness)."""
    result["client_loop_lag_max_s"] = 0.0
    while True:
        before = time.monotonic()
        await asyncio.sleep(every)
        late = time.monotonic() - before - every
        if late > result["client_loop_lag_max_s"]:
            result["client_loop_lag_max_s"] = round(late, 3)
            result["client_loop_lag_at_s"] = round(before - result["_t0"], 1)


async def run_visitors(
    cfg: Config,
    server: AppServer,
    sampler: Sampler,
    visitors: list[Visitor],
    result: dict[str, Any],
    on_interacted: Hook | None = None,
) -> None:
    """Arrivals, interactions, the memory snapshot, the culling watch; fills ``result``."""
    from tornado.httpclient import AsyncHTTPClient

    AsyncHTTPClient.configure(None, max_clients=cfg.visitors + 4, max_body_size=64 * 2**20)
    ctx = RunContext(cfg, sampler)
    start = time.monotonic()
    browser = None
    playwright_cm: Any = None
    tasks: list[asyncio.Task[None]] = []
    tasks_extra: list[asyncio.Task[None]] = []
    try:
        if cfg.browsers:  # launched before the first arrival, so that it delays no visitor
            from playwright.async_api import async_playwright

            missing = missing_browser()
            if missing:
                raise RuntimeError(missing)
            playwright_cm = async_playwright()
            playwright = await playwright_cm.__aenter__()
            browser = await playwright.chromium.launch(**launch_options())
        start = time.monotonic()
        result["_t0"] = start

        async def visit(v: Visitor) -> None:
            try:
                await asyncio.sleep(max(0.0, start + v.arrival_s - time.monotonic()))
                if v.kind == "browser":
                    await browser_visitor(v, cfg, server, start, ctx, browser)
                else:
                    await light_visitor(v, cfg, server, start, ctx)
            except asyncio.CancelledError:
                v.fail("deadline", "cancelled before it finished")
                raise
            except Exception as exc:
                v.fail("error", f"{type(exc).__name__}: {exc}")
            finally:
                if v.interacted_s is None and v.failure is None:
                    v.fail("error", "ended without interacting")
                ctx.finished()

        tasks = [asyncio.ensure_future(visit(v)) for v in visitors]
        lag = asyncio.ensure_future(measure_loop_lag(result))
        tasks_extra.append(lag)

        def all_interacted() -> bool:
            return all(v.interacted_s is not None or v.failure is not None for v in visitors)

        while not all_interacted():
            ctx.changed.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(ctx.changed.wait(), 1.0)
        idle_since = time.monotonic()
        result["all_interacted_s"] = round(idle_since - start, 1)
        result["memory_after_interactions"] = snapshot(server)
        if on_interacted is not None:
            await asyncio.to_thread(on_interacted, server, visitors)
        result["culling"] = await watch_culling(
            server, idle_since, cfg.bound(), visitors if cfg.preheat else None
        )
        ctx.release.set()
        await asyncio.wait(tasks, timeout=60)
    finally:
        ctx.release.set()
        for task in tasks + tasks_extra:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, *tasks_extra, return_exceptions=True)
        if browser is not None:
            with contextlib.suppress(Exception):
                await browser.close()
        if playwright_cm is not None:
            with contextlib.suppress(Exception):
                await playwright_cm.__aexit__(None, None, None)
