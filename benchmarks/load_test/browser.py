"""The browser visitor: one Chromium tab (a browser context of its own, driven by Playwright)
that loads the page, clicks the tabs and selects the op, timed from the page and from the
kernel websocket's frames."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

from benchmarks.load_test.config import TAB_SEQUENCE, Config
from benchmarks.load_test.context import RunContext
from benchmarks.load_test.protocol import decode_frame
from benchmarks.load_test.records import Interaction, Visitor
from benchmarks.load_test.server import AppServer

_FIRST_VIEW_JS = """() => {
    if (document.querySelector('.px-app') === null) return false;
    const plot = document.querySelector('.px-kernels-plot');
    return plot !== null && plot.querySelector('img, svg, canvas, .px-heatmap') !== null;
}"""
_TAB_CONTENT_JS = """([key, before]) => {
    const tab = document.querySelector('.px-tab-' + key);
    if (tab === null || tab.offsetParent === null) return false;
    const msg = tab.querySelector('.px-status .px-msg');
    if (msg !== null && msg.classList.contains('px-msg-loading')) return false;
    if (before !== null && tab.textContent === before) return false;
    const shown = '.px-plot img, .px-plot svg, .px-plot canvas, .px-plot .px-heatmap, '
        + '.px-details table, .px-details .px-msg';
    return tab.querySelector(shown) !== null || msg !== null;
}"""
_KERNEL_ID_JS = "() => JSON.parse(document.getElementById('jupyter-config-data').textContent).kernelId"
_OP_JS = """() => {
    const s = document.querySelector('.px-op select');
    return s ? s.selectedOptions[0].textContent : null;
}"""
_OP_VALUE_JS = """(op) => {
    const o = [...document.querySelector('.px-op select').options]
        .find(o => o.textContent.trim().split(/\\s/)[0] === op);
    return o ? o.value : null;
}"""


class BrowserWire:
    """What a browser tab sends to and receives from its kernel (Playwright's websocket frame events):
    the widget updates it sent, and when the kernel reported idle for each request."""

    def __init__(self) -> None:
        self.updates: list[tuple[float, str]] = []  #: (time sent, msg id) of comm_msg updates
        self.idle: dict[str, float] = {}

    def attach(self, page: Any) -> None:
        page.on("websocket", self._on_websocket)

    def _on_websocket(self, ws: Any) -> None:
        if "/channels" in ws.url:
            ws.on("framesent", self._on_sent)
            ws.on("framereceived", self._on_received)

    @staticmethod
    def _decode(payload: Any) -> dict[str, Any] | None:
        try:
            return decode_frame(payload)
        except (ValueError, KeyError, IndexError, TypeError):
            return None

    def _on_sent(self, payload: Any) -> None:
        message = self._decode(payload)
        if not message or message["header"].get("msg_type") != "comm_msg":
            return
        if (message["content"].get("data") or {}).get("method") == "update":
            self.updates.append((time.monotonic(), message["header"]["msg_id"]))

    def _on_received(self, payload: Any) -> None:
        message = self._decode(payload)
        if not message or message["header"].get("msg_type") != "status":
            return
        if message["content"].get("execution_state") == "idle":
            self.idle.setdefault((message.get("parent_header") or {}).get("msg_id", ""), time.monotonic())

    async def handled_since(self, mark: int, timeout: float) -> float | None:
        """When the kernel had finished every widget update sent after ``mark`` (at least one)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ids = [msg_id for _, msg_id in self.updates[mark:]]
            if ids and all(msg_id in self.idle for msg_id in ids):
                return max(self.idle[msg_id] for msg_id in ids)
            await asyncio.sleep(0.05)
        return None


async def browser_interaction(
    page: Any,
    wire: BrowserWire,
    act: Callable[[], Any],
    key: str,
    before: str | None,
    record: Interaction,
    timeout: float,
) -> None:
    """Do ``act`` (a click or a selection); fill ``record``: until the kernel is idle for the update(s)
    the page sent (``reply_s``) and until, in addition, the tab shows its content (``view_s``)."""
    mark = len(wire.updates)
    sent = time.monotonic()
    try:
        await act()
        await page.wait_for_function(_TAB_CONTENT_JS, arg=[key, before], timeout=timeout * 1000)
    except Exception as exc:
        record.error = f"timeout: {exc}"[:300]
        return
    shown = time.monotonic()
    handled = await wire.handled_since(mark, max(1.0, timeout - (shown - sent)))
    if handled is None:
        record.error = "timeout: the kernel did not report idle for the update"
        return
    record.reply_s = round(handled - sent, 3)
    record.view_s = round(max(shown, handled) - sent, 3)
    record.view_has_content = True


async def browser_visitor(
    v: Visitor, cfg: Config, server: AppServer, start: float, ctx: RunContext, browser: Any
) -> None:
    """One Chromium tab (its own browser context)."""
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    page = await context.new_page()
    wire = BrowserWire()
    wire.attach(page)
    page_errors: list[str] = []
    page.on("pageerror", lambda exc: page_errors.append(str(exc)[:300]))
    t0 = time.monotonic()
    v.started_s = round(t0 - start, 2)
    left = False
    stderr = '[data-mime-type="application/vnd.jupyter.stderr"]'
    try:
        try:
            response = await page.goto(server.url, timeout=cfg.page_timeout * 1000, wait_until="commit")
        except Exception as exc:
            v.fail("timeout" if "Timeout" in type(exc).__name__ else "http_error", str(exc))
            return
        v.http_status = response.status if response is not None else None
        if v.http_status != 200:
            v.fail(f"http_{v.http_status}")
            return
        try:
            await page.wait_for_function(_FIRST_VIEW_JS, timeout=cfg.page_timeout * 1000)
        except Exception as exc:
            v.fail("timeout", f"first view: {exc}")
            return
        v.first_view_s = round(time.monotonic() - t0, 3)
        with contextlib.suppress(Exception):
            v.kernel_id = str(await page.evaluate(_KERNEL_ID_JS))
        if await page.locator(stderr).count():
            v.fail("kernel_error", await page.locator(stderr).first.inner_text())
            return
        v.initial_op = _first_word(await page.evaluate(_OP_JS))
        for key, title in TAB_SEQUENCE:
            record = Interaction(f"tab:{key}", key)
            v.interactions.append(record)
            tab = page.locator(".px-tabs .lm-TabBar-tab", has_text=title).first
            await browser_interaction(page, wire, tab.click, key, None, record, cfg.interaction_timeout)
            if record.error:
                v.fail("timeout", f"{record.action}: {record.error}")
                return
        record = Interaction(f"op:{cfg.op}", "kernels")
        v.interactions.append(record)
        value = await page.evaluate(_OP_VALUE_JS, cfg.op)
        if value is None:
            record.error = "op not offered"
            v.fail("kernel_error", f"op {cfg.op} is not in the op dropdown")
            return
        before = await page.evaluate("() => document.querySelector('.px-tab-kernels').textContent")

        async def select() -> None:
            await page.select_option(".px-op select", value=value)

        await browser_interaction(page, wire, select, "kernels", before, record, cfg.interaction_timeout)
        if record.error:
            v.fail("timeout", f"{record.action}: {record.error}")
            return
        v.final_op = _first_word(await page.evaluate(_OP_JS))
        v.app_errors_shown = await page.locator(".px-msg-error").count()
        if await page.locator(stderr).count():
            v.fail("kernel_error", await page.locator(stderr).first.inner_text())
        if page_errors:
            v.fail("page_error", page_errors[0])
        ctx.interacted(v, server, start)
        if cfg.after == "stay":
            await ctx.wait_released(lambda: False)
        else:
            await page.close(run_before_unload=True)
            left = True
    finally:
        if not left:
            with contextlib.suppress(Exception):
                await page.close(run_before_unload=True)
        with contextlib.suppress(Exception):
            await context.close()


def _first_word(text: Any) -> str | None:
    words = str(text or "").split()
    return words[0] if words else None
