"""The workshop server against two ways of losing it: a client in the legacy kernel websocket
protocol, and a launcher killed by SIGKILL.

One ``python -m explorer app`` serves a one-cell notebook whose widget (an ``Image``) has a
binary buffer, so that the widget state a page asks for (``request_states``) travels as a
binary frame.  Kernels and CPU time are read from ``/proc``.  The launcher test kills the
module's server: it comes last.  Nothing asserts how fast anything is; the CPU time of the
server's process over an idle stretch is bounded (a spinning main thread takes all of it).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from explorer.server.process_tree import descendants, is_alive
from tests.support import kernel_ws, voila
from tests.support.processes import wait_until
from tests.support.voila import VoilaServer, write_notebook
from tests.support.voila import http_get as get

pytestmark = [pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")]

#: a widget with a binary buffer (its value): its state reaches the page as a binary frame
IMAGE_CELL = "import ipywidgets\nipywidgets.Image(value=bytes(range(256)) * 64, format='png')"
#: seconds of idle server whose CPU time is read
IDLE_S = 3.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` (``/proc/PID/stat`` fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def voila_pid(server: VoilaServer) -> int:
    pids = [pid for pid in server.tree() if b"explorer.server.voila_main" in voila._cmdline(pid)]
    assert len(pids) == 1, pids
    return pids[0]


def new_visitor(server: VoilaServer) -> str:
    """GET the page (Voila starts a kernel and runs the notebook); the kernel id."""
    status, _, page = get(server.port, "/")
    assert status == 200, page[-2000:]
    match = re.search(r'"kernelId":\s*"([0-9a-f-]{36})"', page)
    assert match, page[-2000:]
    return match.group(1)


def test_v1_header_reads_v1_frames_and_rejects_legacy_and_broken_ones() -> None:
    """Frames built by jupyter_server's own serializers; the legacy frame is the one that made
    Voila's reader spin: its first 8 bytes, read as a v1 offset count, are astronomically large."""
    from jupyter_server.services.kernels.connection.base import (
        serialize_binary_message,
        serialize_msg_to_ws_v1,
    )

    from explorer.server.websocket import v1_header

    header = {"msg_id": "m1", "msg_type": "comm_msg", "session": "s", "version": "5.3"}
    content = {"comm_id": "c", "data": {"method": "update_states", "states": {}}}
    parts = [json.dumps(x).encode() for x in (header, {}, {}, content)] + [b"\x00\x01buffer"]
    frame = serialize_msg_to_ws_v1(parts, "iopub")
    assert v1_header(frame) == header
    legacy = serialize_binary_message(
        {"header": header, "parent_header": {}, "metadata": {}, "content": content, "buffers": [b"\x00" * 99]}
    )
    assert int.from_bytes(legacy[:8], "little") > 2**56  # what Voila's own reader iterates over
    assert v1_header(legacy) is None
    assert v1_header(frame[: len(frame) // 2]) is None
    assert v1_header(frame[:40]) is None
    assert v1_header(b"\xff" * 64) is None
    assert v1_header(b"") is None


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VoilaServer]:
    tmp = tmp_path_factory.mktemp("resilience")
    app = voila.start_app(
        tmp, "--max-kernels=3", "--preheat=0", notebook=write_notebook(tmp / "image.ipynb", IMAGE_CELL)
    )
    try:
        yield app
    finally:
        app.stop()


async def legacy_request_states(port: int, kernel_id: str) -> int:
    """A client in the legacy protocol asks for the widget state: 101 if it got in (then it reads
    for a moment and leaves), else the HTTP status it was refused with."""
    from tornado.httpclient import HTTPClientError

    try:
        ws = await kernel_ws.connect(port, kernel_id, legacy=True)
    except HTTPClientError as exc:
        return exc.code
    kernel_ws.request_states(ws, legacy=True)
    await asyncio.sleep(1.0)
    ws.close()
    return 101


async def widget_state(port: int, kernel_id: str) -> dict[str, object]:
    """The ``update_states`` message a v1 client (a browser tab) gets."""
    ws = await kernel_ws.connect(port, kernel_id)
    try:
        kernel_ws.request_states(ws)

        def is_states(msg: dict[str, object]) -> bool:
            content = msg.get("content")
            data = content.get("data") if isinstance(content, dict) else None
            return isinstance(data, dict) and data.get("method") == "update_states"

        return await kernel_ws.receive_until(ws, is_states, 60)
    finally:
        await kernel_ws.close(ws)


@pytest.mark.slow
def test_a_legacy_protocol_client_is_refused_and_the_server_stays_idle(server: VoilaServer) -> None:
    kernel_id = new_visitor(server)
    pid = voila_pid(server)
    answer = asyncio.run(legacy_request_states(server.port, kernel_id))
    time.sleep(0.5)
    before = cpu_seconds(pid)
    time.sleep(IDLE_S)
    used = cpu_seconds(pid) - before
    assert used < 0.1 * IDLE_S, f"the server used {used:.2f} s of CPU in {IDLE_S} s idle"
    assert get(server.port, "/voila/static/voila.js")[0] == 200
    assert answer == 400, "a client without the v1 subprotocol must be refused"

    # what a browser tab speaks still works, binary buffers included
    states = asyncio.run(widget_state(server.port, kernel_id))
    models = states["content"]["data"]["states"]  # type: ignore[index]
    images = [m for m in models.values() if m["model_name"] == "ImageModel"]
    assert len(images) == 1 and states["buffers"] == [bytes(range(256)) * 64]
    assert json.dumps(states["content"]["data"]["buffer_paths"]) != "[]"  # type: ignore[index]


@pytest.mark.slow
def test_voila_and_its_kernels_die_with_a_killed_launcher(server: VoilaServer) -> None:
    """SIGKILL to ``precision-explorer app`` (it cannot stop anything): Voila stops itself, its
    kernels go with it, and the launcher's temporary directory is removed.  Kills the module's
    server: keep this test last."""
    if not server.kernels():  # the test above left one
        new_visitor(server)
    kernels = server.kernels()
    pid = voila_pid(server)
    tree = descendants(server.proc.pid)
    assert pid in tree and set(kernels) < set(tree)
    assert next(p.name for p in server.tmpdir.iterdir()).startswith("px-voila-")

    server.proc.send_signal(signal.SIGKILL)
    assert server.proc.wait(30) == -signal.SIGKILL

    def all_gone() -> bool:
        return not any(is_alive(p, started) for p, started in tree.items())

    wait_until(all_gone, 60, "Voila and its kernels to exit after the launcher was killed", every=0.2)
    assert list(server.tmpdir.iterdir()) == []
