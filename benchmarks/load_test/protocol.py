"""The wire: jupyter_server's ``v1.kernel.websocket.jupyter.org`` frames (what a browser tab sends
and receives on ``/api/kernels/<id>/channels``) and the protocol versions the clients speak."""

from __future__ import annotations

import json
from typing import Any

#: Largest websocket message a light client accepts (the full widget state).
MAX_WS_MESSAGE = 256 * 2**20
WIDGET_PROTOCOL = "2.1.0"
#: The websocket protocol browsers speak (JupyterLab services), the only one the server accepts
#: (:mod:`explorer.server.websocket`: the legacy one made Voila spin at 100 % CPU).
WS_PROTOCOL = "v1.kernel.websocket.jupyter.org"
CONTROL_PROTOCOL = "1.0.0"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def encode_v1(channel: str, parts: list[bytes]) -> bytes:
    """A websocket frame in jupyter_server's ``v1.kernel.websocket.jupyter.org`` protocol.

    Layout: the number of offsets, the offsets (little-endian uint64), the channel name, then
    the parts (header, parent header, metadata, content, buffers).
    """
    name = channel.encode()
    offsets = [8 * (1 + 1 + len(parts) + 1)]
    offsets.append(offsets[-1] + len(name))
    for part in parts:
        offsets.append(offsets[-1] + len(part))
    head = len(offsets).to_bytes(8, "little") + b"".join(o.to_bytes(8, "little") for o in offsets)
    return head + name + b"".join(parts)


def decode_frame(frame: str | bytes) -> dict[str, Any]:
    """A kernel message from a ``v1.kernel.websocket.jupyter.org`` frame (or a legacy JSON text frame).

    >>> frame = encode_v1("iopub", [b'{"msg_type": "status"}', b"{}", b"{}", b'{"execution_state": "idle"}'])
    >>> message = decode_frame(frame)
    >>> message["channel"], message["header"]["msg_type"], message["content"], message["buffers"]
    ('iopub', 'status', {'execution_state': 'idle'}, [])
    """
    if isinstance(frame, str):
        message: dict[str, Any] = json.loads(frame)
        return message
    count = int.from_bytes(frame[:8], "little")
    offsets = [int.from_bytes(frame[8 * (i + 1) : 8 * (i + 2)], "little") for i in range(count)]
    parts = [frame[offsets[i] : offsets[i + 1]] for i in range(count - 1)]
    channel, header, parent, metadata, content, *buffers = parts
    return {
        "channel": channel.decode(),
        "header": json.loads(header),
        "parent_header": json.loads(parent),
        "metadata": json.loads(metadata),
        "content": json.loads(content),
        "buffers": buffers,
    }
