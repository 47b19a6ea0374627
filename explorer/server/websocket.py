"""The kernel websocket of the workshop server: the v1 protocol only, and a bounded header read.

Why (found with ``py-spy dump`` on a Voila 0.5.13 main thread spinning at 100 % CPU, its RSS
growing by megabytes a second): a client that opens ``/api/kernels/<id>/channels`` without
the ``v1.kernel.websocket.jupyter.org`` subprotocol gets jupyter_server's legacy protocol,
in which a kernel message that carries binary buffers (the widget state that
``request_states`` asks for: images, arrays) is sent as a legacy binary frame (a big-endian
32-bit part count and offsets: jupyter_server's ``serialize_binary_message``).
Voila's ``VoilaKernelWebsocketHandler.write_message`` reads the header of every binary frame
as if it were a v1 frame (its ``read_header_from_binary_message``, to drop ``execute_input``
messages): it takes the first 8 bytes as a little-endian count of offsets, about 10**17
for a legacy frame, and builds that list in the main thread, which blocks every other
visitor until memory runs out.

:class:`KernelChannelsHandler` replaces Voila's handler on the same route:

- a websocket request that does not offer the v1 subprotocol is refused with HTTP 400 before
  the upgrade (the browsers' JupyterLab services offer it; only the legacy protocol is lost,
  in which Voila's ``execute_input`` filter does not work for text frames either);
- the header of each binary frame is read by :func:`v1_header`, which checks the frame's
  layout before reading it and gives None for anything else (the frame is then sent as is).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from tornado.web import HTTPError
from voila.tornado.kernel_websocket_handler import VoilaKernelWebsocketHandler

#: The kernel websocket protocol the server speaks (jupyter_server's, offered by JupyterLab services).
V1_PROTOCOL = "v1.kernel.websocket.jupyter.org"
#: Most parts a v1 frame may have: channel, header, parent header, metadata, content, buffers.
MAX_V1_PARTS = 4096


def offered_protocols(header: str | None) -> list[str]:
    """The subprotocols a ``Sec-WebSocket-Protocol`` request header offers.

    >>> offered_protocols("v1.kernel.websocket.jupyter.org, other"), offered_protocols(None)
    (['v1.kernel.websocket.jupyter.org', 'other'], [])
    """
    return [name.strip() for name in (header or "").split(",") if name.strip()]


def v1_header(frame: bytes) -> dict[str, Any] | None:
    """The kernel message header of a ``v1.kernel.websocket.jupyter.org`` frame, or None when
    ``frame`` is not one (its offsets checked before anything is read: at most
    :data:`MAX_V1_PARTS`, increasing, inside the frame).

    >>> channel, header = b"shell", b'{"msg_type": "execute_input"}'
    >>> offsets = [8 * 4, 8 * 4 + len(channel), 8 * 4 + len(channel) + len(header)]
    >>> frame = b"".join(n.to_bytes(8, "little") for n in [3, *offsets]) + channel + header
    >>> v1_header(frame)
    {'msg_type': 'execute_input'}
    >>> legacy = (2).to_bytes(4, "big") + (12).to_bytes(4, "big") + (20).to_bytes(4, "big") + b"{}"
    >>> v1_header(legacy) is None, v1_header(b"") is None
    (True, True)
    """
    count = int.from_bytes(frame[:8], "little")
    if not 3 <= count <= MAX_V1_PARTS or 8 * (count + 1) > len(frame):
        return None
    offsets = [int.from_bytes(frame[8 * (i + 1) : 8 * (i + 2)], "little") for i in range(count)]
    if offsets[0] != 8 * (count + 1) or any(b < a for a, b in itertools.pairwise(offsets)):
        return None
    if offsets[-1] > len(frame):
        return None
    try:
        header = json.loads(frame[offsets[1] : offsets[2]].decode("utf-8"))
    except ValueError:
        return None
    return header if isinstance(header, dict) else None


class KernelChannelsHandler(VoilaKernelWebsocketHandler):
    """Voila's kernel websocket, v1 protocol only, with :func:`v1_header` (see the module doc)."""

    async def pre_get(self) -> None:
        """Refuse (HTTP 400, before the upgrade and before any kernel connection) a client that
        does not offer the v1 protocol."""
        if V1_PROTOCOL not in offered_protocols(self.request.headers.get("Sec-WebSocket-Protocol")):
            raise HTTPError(
                400,
                reason=f"Only the {V1_PROTOCOL} websocket protocol is served",
            )
        await super().pre_get()

    async def open(self, kernel_id: str) -> None:
        """Connect like Voila's handler, then tell the kernel manager that this kernel's page
        connected (:meth:`~explorer.server.kernels.CappedKernelManager.mark_connected`)."""
        await super().open(kernel_id)
        mark = getattr(self.kernel_manager, "mark_connected", None)
        if mark is not None:
            mark(kernel_id)

    def write_message(self, message: Any, binary: bool = False) -> Any:
        """Voila's filter (``execute_input`` messages are not sent to the page), with a bounded
        header read; every other message goes out unchanged."""
        if isinstance(message, bytes):
            header = v1_header(message)
        elif isinstance(message, dict):
            header = message.get("header")
        else:
            header = None
        if isinstance(header, dict) and header.get("msg_type") == "execute_input":
            return None
        # past Voila's write_message (its unbounded header read) to jupyter_server's
        return super(VoilaKernelWebsocketHandler, self).write_message(message, binary)
