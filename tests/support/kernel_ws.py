"""A browser tab's connection to its kernel, for the tests: ``/api/kernels/<id>/channels`` in
jupyter_server's ``v1.kernel.websocket.jupyter.org`` protocol (what browsers speak) or, with
``legacy=True``, the legacy one (no subprotocol: JSON text frames, binary frames for messages
with buffers).  Frames are built and read with jupyter_server's own functions.

>>> message("kernel_info_request", {})["header"]["msg_type"]
'kernel_info_request'
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

V1_PROTOCOL = "v1.kernel.websocket.jupyter.org"
#: The widget protocol versions a page speaks (ipywidgets 8).
WIDGET_PROTOCOL = "2.1.0"
CONTROL_PROTOCOL = "1.0.0"


async def connect(port: int, kernel_id: str, *, legacy: bool = False, session: str = "px-test") -> Any:
    """Open the kernel's websocket on 127.0.0.1:port (tornado's client; HTTPClientError if refused)."""
    from tornado.websocket import websocket_connect

    return await websocket_connect(
        f"ws://127.0.0.1:{port}/api/kernels/{kernel_id}/channels?session_id={session}",
        connect_timeout=30,
        max_message_size=64 * 2**20,
        subprotocols=None if legacy else [V1_PROTOCOL],
    )


def message(
    msg_type: str, content: dict[str, Any], *, session: str = "px-test", version: str = WIDGET_PROTOCOL
) -> dict[str, Any]:
    """A kernel message (header, parent header, metadata with the widget ``version``, content)."""
    header = {
        "msg_id": uuid.uuid4().hex,
        "msg_type": msg_type,
        "session": session,
        "username": "px-test",
        "version": "5.3",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return {"header": header, "parent_header": {}, "metadata": {"version": version}, "content": content}


def send(ws: Any, msg: dict[str, Any], *, legacy: bool = False, channel: str = "shell") -> None:
    """Send ``msg`` on ``channel``, framed for the protocol."""
    if legacy:
        ws.write_message(json.dumps({**msg, "channel": channel, "buffers": []}))
        return
    from jupyter_server.services.kernels.connection.base import serialize_msg_to_ws_v1

    parts = [json.dumps(msg[key]).encode() for key in ("header", "parent_header", "metadata", "content")]
    ws.write_message(serialize_msg_to_ws_v1(parts, channel), binary=True)


def decode(frame: str | bytes, *, legacy: bool = False) -> dict[str, Any]:
    """A received frame as a message dict (``channel``, ``header``, ..., ``buffers``)."""
    from jupyter_server.services.kernels.connection.base import (
        deserialize_binary_message,
        deserialize_msg_from_ws_v1,
    )

    if isinstance(frame, str):
        decoded: dict[str, Any] = json.loads(frame)
        return decoded
    if legacy:
        legacy_message: dict[str, Any] = deserialize_binary_message(frame)
        return legacy_message
    channel, parts = deserialize_msg_from_ws_v1(frame)
    keys = ("header", "parent_header", "metadata", "content")
    return {"channel": channel, **{k: json.loads(p) for k, p in zip(keys, parts, strict=False)}} | {
        "buffers": parts[4:]
    }


def request_states(ws: Any, *, legacy: bool = False) -> None:
    """Ask for every widget's state, as a page does: open the ``jupyter.widget.control`` comm and
    send ``request_states`` on it (the kernel answers with ``update_states``)."""
    control = uuid.uuid4().hex
    opening = {"comm_id": control, "target_name": "jupyter.widget.control", "data": {}}
    send(ws, message("comm_open", opening, version=CONTROL_PROTOCOL), legacy=legacy)
    send(ws, message("comm_msg", {"comm_id": control, "data": {"method": "request_states"}}), legacy=legacy)


async def receive_until(
    ws: Any, wanted: Callable[[dict[str, Any]], bool], timeout: float, *, legacy: bool = False
) -> dict[str, Any]:
    """Read messages until one satisfies ``wanted``; returns it (AssertionError if the socket closes,
    TimeoutError after ``timeout`` seconds: a generous bound)."""
    deadline = time.monotonic() + timeout
    while True:
        frame = await asyncio.wait_for(ws.read_message(), max(0.1, deadline - time.monotonic()))
        assert frame is not None, "the websocket closed"
        msg = decode(frame, legacy=legacy)
        if wanted(msg):
            return msg


async def close(ws: Any) -> None:
    """Close and let the closing handshake finish."""
    ws.close()
    try:
        while await asyncio.wait_for(ws.read_message(), 10) is not None:
            pass
    except TimeoutError:
        pass
