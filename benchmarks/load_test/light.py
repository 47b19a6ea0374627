"""The light visitor: what a browser tab does on the wire, without rendering (see the package doc):
the page over HTTP, then one websocket to the kernel on which it asks for the widget state,
sends the tab and op updates and times the kernel's answers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from benchmarks.load_test.config import TAB_SEQUENCE, Config
from benchmarks.load_test.context import RunContext
from benchmarks.load_test.mirror import WidgetMirror
from benchmarks.load_test.protocol import (
    CONTROL_PROTOCOL,
    MAX_WS_MESSAGE,
    WIDGET_PROTOCOL,
    WS_PROTOCOL,
    decode_frame,
    encode_v1,
)
from benchmarks.load_test.records import Interaction, Visitor
from benchmarks.load_test.server import AppServer


class KernelChannel:
    """One websocket to a kernel's channels: sends requests, mirrors the widget state, records arrivals."""

    def __init__(self, ws: Any, session: str) -> None:
        self.ws = ws
        self.session = session
        self.mirror = WidgetMirror()
        self.states_received = False
        self.idle: dict[str, float] = {}
        self.echo: dict[str, float] = {}
        self.replies: dict[str, float] = {}
        #: (arrival time, model id, method) of every update/comm_open from the kernel
        self.activity: list[tuple[float, str, str]] = []
        self.kernel_errors: list[str] = []
        self.closed = False
        self.changed = asyncio.Event()

    def request(self, msg_type: str, content: dict[str, Any], version: str = WIDGET_PROTOCOL) -> str:
        msg_id = uuid.uuid4().hex
        header = {
            "msg_id": msg_id,
            "msg_type": msg_type,
            "session": self.session,
            "username": "px-load-test",
            "version": "5.3",
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        parts = [json.dumps(p).encode() for p in (header, {}, {"version": version}, content)]
        self.ws.write_message(encode_v1("shell", parts), binary=True)
        return msg_id

    def update(self, model_id: str, state: dict[str, Any]) -> str:
        return self.request(
            "comm_msg",
            {"comm_id": model_id, "data": {"method": "update", "state": state, "buffer_paths": []}},
        )

    async def read_loop(self) -> None:
        try:
            while True:
                frame = await self.ws.read_message()
                if frame is None:
                    break
                self.handle(decode_frame(frame), time.monotonic())
                self.changed.set()
        finally:
            self.closed = True
            self.changed.set()

    def handle(self, message: dict[str, Any], now: float) -> None:
        msg_type = message.get("header", {}).get("msg_type") or message.get("msg_type")
        parent = (message.get("parent_header") or {}).get("msg_id", "")
        content = message.get("content") or {}
        if msg_type == "status" and content.get("execution_state") == "idle":
            self.idle.setdefault(parent, now)
        elif msg_type == "kernel_info_reply":
            self.replies.setdefault(parent, now)
        elif msg_type == "comm_msg":
            data = content.get("data") or {}
            method = data.get("method")
            comm_id = str(content.get("comm_id", ""))
            if method == "update_states":
                self.mirror.load(data.get("states") or {})
                self.states_received = True
            elif method in ("update", "echo_update"):
                self.mirror.update(comm_id, data.get("state") or {})
                if method == "echo_update":
                    self.echo.setdefault(parent, now)
                else:
                    self.activity.append((now, comm_id, method))
        elif msg_type == "comm_open":
            data = content.get("data") or {}
            comm_id = str(content.get("comm_id", ""))
            self.mirror.update(comm_id, data.get("state") or {})
            self.activity.append((now, comm_id, "comm_open"))
        elif msg_type == "error":
            self.kernel_errors.append(f"{content.get('ename')}: {content.get('evalue')}"[:300])
        elif (
            msg_type == "stream"
            and content.get("name") == "stderr"
            and "Traceback" in str(content.get("text"))
        ):
            self.kernel_errors.append(str(content.get("text"))[-300:])

    async def wait_until(self, predicate: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not predicate():
            if self.closed:
                return predicate()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self.changed.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.changed.wait(), remaining)
        return True


async def light_interaction(
    channel: KernelChannel,
    model_id: str,
    state: dict[str, Any],
    target: tuple[str, int],
    record: Interaction,
    timeout: float,
) -> None:
    """Send one widget update; fill ``record`` with echo, idle and view times.

    ``target`` is the (key, index) of the tab whose view should update.
    """
    key, index = target
    mark = len(channel.activity)
    sent = time.monotonic()
    msg_id = channel.update(model_id, state)
    if not await channel.wait_until(lambda: msg_id in channel.idle, timeout):
        record.error = "timeout" if not channel.closed else "ws_closed"
        return
    idle_at = channel.idle[msg_id]
    record.reply_s = round(idle_at - sent, 3)
    if msg_id in channel.echo:
        record.echo_s = round(channel.echo[msg_id] - sent, 3)
    root = channel.mirror.tab_root(index)
    inside = channel.mirror.reachable(root) if root else set()
    before_idle = [t for t, m, _ in channel.activity[mark:] if m in inside and t <= idle_at]
    record.redrawn = bool(before_idle)
    # nothing redrawn (a tab shown before, selection unchanged): the view is there once the kernel is done
    record.view_s = round(max(before_idle) - sent, 3) if before_idle else record.reply_s
    if channel.mirror.loading(key):  # filled in later, from a loader thread
        if not await channel.wait_until(lambda: not channel.mirror.loading(key), timeout):
            record.error = "timeout"
            return
        later = [t for t, m, _ in channel.activity[mark:] if m in inside and t > idle_at]
        record.redrawn = True
        record.view_s = round((later[-1] if later else time.monotonic()) - sent, 3)
    record.view_has_content = channel.mirror.has_content(key)
    record.plot_mimes = channel.mirror.plot_mimes(key)


async def light_visitor(v: Visitor, cfg: Config, server: AppServer, start: float, ctx: RunContext) -> None:
    """One light client (see the module doc)."""
    from tornado.httpclient import AsyncHTTPClient, HTTPClientError
    from tornado.websocket import websocket_connect

    t0 = time.monotonic()
    v.started_s = round(t0 - start, 2)
    try:
        response = await AsyncHTTPClient().fetch(
            server.url, request_timeout=cfg.page_timeout, connect_timeout=30, raise_error=False
        )
    except HTTPClientError as exc:
        v.fail("http_error", str(exc))
        return
    v.http_status = response.code
    if response.code == 599:
        kind = "timeout" if "Timeout" in type(response.error).__name__ else "http_error"
        v.fail(kind, str(response.error))
        return
    if response.code != 200:
        v.fail(f"http_{response.code}", response.body[:300].decode(errors="replace"))
        return
    v.page_s = round(time.monotonic() - t0, 3)
    page = response.body.decode(errors="replace")
    kid = re.search(r'"kernelId":\s*"([0-9a-f-]{36})"', page)
    if not kid:
        v.fail("no_kernel_id", page[-300:])
        return
    v.kernel_id = kid.group(1)
    if re.search(r'"output_type":\s*"error"', page):
        v.fail("kernel_error", "error output in the page")
        return
    session = uuid.uuid4().hex
    try:
        ws = await websocket_connect(
            f"ws://127.0.0.1:{server.port}/api/kernels/{v.kernel_id}/channels?session_id={session}",
            connect_timeout=30,
            max_message_size=MAX_WS_MESSAGE,
            subprotocols=[WS_PROTOCOL],
        )
    except Exception as exc:
        v.fail("ws_error", f"{type(exc).__name__}: {exc}")
        return
    if ws.selected_subprotocol != WS_PROTOCOL:
        ws.close()
        v.fail("ws_error", f"the server did not accept the {WS_PROTOCOL} websocket protocol")
        return
    channel = KernelChannel(ws, session)
    reader = asyncio.ensure_future(channel.read_loop())
    try:
        info = channel.request("kernel_info_request", {})
        control = uuid.uuid4().hex
        channel.request(
            "comm_open",
            {"comm_id": control, "target_name": "jupyter.widget.control", "data": {}},
            version=CONTROL_PROTOCOL,
        )
        channel.request("comm_msg", {"comm_id": control, "data": {"method": "request_states"}})
        ready = await channel.wait_until(
            lambda: (
                info in channel.replies and channel.states_received and channel.mirror.kernels_view_ready()
            ),
            cfg.view_timeout,
        )
        if channel.kernel_errors:
            v.fail("kernel_error", channel.kernel_errors[0])
            return
        if not ready:
            v.fail("ws_error" if channel.closed else "timeout", "first view")
            return
        v.first_view_s = round(time.monotonic() - t0, 3)
        v.initial_op = channel.mirror.op_choice(cfg.op)[1]
        tabs = channel.mirror.by_class("px-tabs")
        dropdown = channel.mirror.by_class("px-op")
        assert tabs and dropdown, "the widget state has the px-tabs and px-op models"
        for key, title in TAB_SEQUENCE:
            record = Interaction(f"tab:{key}", key)
            v.interactions.append(record)
            index = channel.mirror.tab_index(title)
            if index is None:
                record.error = "no such tab"
                v.fail("kernel_error", f"no tab {key} in the widget state")
                return
            await light_interaction(
                channel, tabs, {"selected_index": index}, (key, index), record, cfg.interaction_timeout
            )
            if record.error:
                v.fail("ws_error" if record.error == "ws_closed" else "timeout", record.action)
                return
        op_index, _ = channel.mirror.op_choice(cfg.op)
        kernels_index = channel.mirror.tab_index("Kernels")
        record = Interaction(f"op:{cfg.op}", "kernels")
        v.interactions.append(record)
        if op_index is None or kernels_index is None:
            record.error = "op not offered"
            v.fail("kernel_error", f"op {cfg.op} is not in the op dropdown")
            return
        await light_interaction(
            channel,
            dropdown,
            {"index": op_index},
            ("kernels", kernels_index),
            record,
            cfg.interaction_timeout,
        )
        if record.error:
            v.fail("ws_error" if record.error == "ws_closed" else "timeout", record.action)
            return
        v.final_op = channel.mirror.op_choice(cfg.op)[1]
        if channel.kernel_errors:
            v.fail("kernel_error", channel.kernel_errors[0])
        v.app_errors_shown = channel.mirror.app_errors()
        ctx.interacted(v, server, start)
        if cfg.after == "stay":
            await ctx.wait_released(lambda: channel.closed)
            v.closed_by_server = channel.closed
    finally:
        ws.close()
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await reader
