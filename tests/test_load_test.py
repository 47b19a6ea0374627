"""``benchmarks/load_test/`` (``python -m benchmarks.load_test``) checked against independent observations.

- its websocket framing against jupyter_server's own v1 serializer, its percentiles
  against numpy's;
- a real run (2 light visitors, no browser, short deadline and culling): what it reports
  agrees with what this test sees itself in ``/proc`` (a poller of its own) and inside the
  visitors' kernels (a second client on each kernel's connection file asks the kernel's
  ``explorer.App`` which op and tab it shows), and nothing it started is left running.

Nothing asserts how fast anything is.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from benchmarks.load_test.config import Config
from benchmarks.load_test.protocol import decode_frame, encode_v1
from benchmarks.load_test.report import percentile
from benchmarks.load_test.run import run_load_test

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")


# ---------------------------------------------------------------------------------------- pieces


def test_v1_frames_match_jupyter_servers_serializer() -> None:
    from jupyter_server.services.kernels.connection.base import (
        deserialize_msg_from_ws_v1,
        serialize_msg_to_ws_v1,
    )

    parts = [
        json.dumps({"msg_id": "a", "msg_type": "comm_msg"}).encode(),
        json.dumps({"msg_id": "p"}).encode(),
        b"{}",
        json.dumps({"comm_id": "c", "data": {"method": "update", "state": {"index": 3}}}).encode(),
        b"\x00\x01binary buffer",
    ]
    ours = encode_v1("shell", parts)
    assert ours == serialize_msg_to_ws_v1(parts, "shell")
    assert deserialize_msg_from_ws_v1(ours) == ("shell", parts)
    message = decode_frame(serialize_msg_to_ws_v1(parts, "iopub"))
    assert message["channel"] == "iopub"
    assert message["header"]["msg_type"] == "comm_msg"
    assert message["parent_header"] == {"msg_id": "p"}
    assert message["content"]["data"]["state"] == {"index": 3}
    assert message["buffers"] == [b"\x00\x01binary buffer"]


@pytest.mark.parametrize(
    "values", [[3.0], [1.0, 2.0], [5.0, 1.0, 4.0, 2.0, 3.0], [float(x % 7) for x in range(23)]]
)
def test_percentiles_match_numpy(values: list[float]) -> None:
    import numpy as np

    for q in (0.5, 0.95):
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q * 100)), abs=1e-3)


# ---------------------------------------------------------------------------------------- a real run


class KernelPoller:
    """Every kernel process of a load-test server seen in /proc, read independently of the script."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> KernelPoller:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.seen.update(live_load_test_kernels())
            self._stop.wait(0.3)


def live_load_test_kernels() -> dict[str, int]:
    """``{kernel id: pid}`` of running ipykernels whose connection file is under a px-load-test- dir."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            line = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"ipykernel" in line and b"px-load-test-" in line:
            match = re.search(rb"kernel-([0-9a-f-]{36})\.json", line)
            if match:
                found[match.group(1).decode()] = int(entry.name)
    return found


def vm_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


_ASK_THE_APP = """
import gc, json
from explorer.app.main import App
apps = [o for o in gc.get_objects() if isinstance(o, App)]
tabs = apps[0].tabs
built = tabs.is_built("ranges") if hasattr(tabs, "is_built") else True  # looking must not build it
print(json.dumps({"apps": len(apps), "op": apps[0].state.op, "tab": apps[0].selected_tab.key,
                  "ranges_renders": tabs["ranges"].render_count if built else 0}))
"""


def ask_the_kernel(connection_info: dict[str, Any]) -> dict[str, Any]:
    """Run a few lines in the kernel through its connection file's data (a second client, beside Voila's)."""
    from jupyter_client import BlockingKernelClient
    from jupyter_core.utils import ensure_event_loop

    client = BlockingKernelClient()
    client.load_connection_info(connection_info)  # type: ignore[arg-type]  # a TypedDict in jupyter_client
    client.start_channels(hb=False)  # heartbeats miss their 1 s window on a loaded machine
    out: list[str] = []
    try:
        client.wait_for_ready(timeout=60)

        def collect(msg: dict[str, Any]) -> None:
            if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
                out.append(msg["content"]["text"])

        reply = client.execute_interactive(_ASK_THE_APP, output_hook=collect, timeout=120)
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        client.stop_channels()
        ensure_event_loop().close()  # the loop the blocking client made for this thread
    return dict(json.loads("".join(out).strip().splitlines()[-1]))


@pytest.mark.slow
def test_a_short_run_reports_what_proc_and_the_kernels_show() -> None:
    assert live_load_test_kernels() == {}, "another load test is running"
    inside: dict[str, dict[str, Any]] = {}
    rss_now: dict[str, int] = {}

    def on_interacted(server: Any, visitors: list[Any]) -> None:
        """Every visitor has interacted; the kernels are idle: read their memory, then ask them."""
        connections = {}
        live = live_load_test_kernels()
        for v in visitors:
            files = list(server.tmpdir.rglob(f"kernel-{v.kernel_id}.json"))
            assert len(files) == 1, files
            connections[v.kernel_id] = json.loads(files[0].read_text())
            rss_now[v.kernel_id] = vm_rss(live[v.kernel_id])
        for kernel_id, info in connections.items():
            inside[kernel_id] = ask_the_kernel(info)

    cfg = Config(
        visitors=2,
        browsers=0,
        arrival_interval=0.0,
        deadline=600.0,
        # the kernels must outlive on_interacted: the idle clock restarts when it asks them (their
        # iopub), and the window before that (the last interaction to the last kernel's
        # kernel_info) is ~3 s here; 20 s leaves room for a loaded machine
        cull_idle_timeout=20,
        cull_interval=1,
        cull_bound=240.0,
    )
    with KernelPoller() as poller:
        report = run_load_test(cfg, on_interacted=on_interacted)
    summary = report["summary"]
    visitors = report["visitors"]
    assert summary["failures"]["total"] == 0, [(v["failure"], v["failure_detail"]) for v in visitors]
    assert report.get("stopped_by") is None

    # the kernels it counted are the kernels that ran, with the pids /proc showed
    ids = {v["kernel_id"] for v in visitors}
    assert len(ids) == 2 and None not in ids
    assert set(poller.seen) == ids
    assert set(report["kernels_seen"]) == ids
    for v in visitors:
        assert v["kernel_pid"] == poller.seen[v["kernel_id"]]
        assert v["first_view_s"] is not None and v["page_s"] is not None
        assert [i["action"] for i in v["interactions"]] == [
            "tab:ranges",
            "tab:accuracy",
            "tab:bits",
            "tab:kernels",
            "op:exp",
        ]
        assert all(not i["error"] and i["echo_s"] is not None for i in v["interactions"])
        # its memory figure is the process's VmRSS (read again here a moment later)
        assert v["kernel_rss_mib"] * 2**20 == pytest.approx(rss_now[v["kernel_id"]], rel=0.25)
    assert summary["memory"]["kernel_rss_after_own_interactions_mib"]["n"] == 2

    # the updates it sent changed the app inside each kernel
    for v in visitors:
        app = inside[v["kernel_id"]]
        assert app["apps"] == 1
        assert app["op"] == "exp" == v["final_op"] != v["initial_op"]
        assert app["tab"] == "kernels"
        assert app["ranges_renders"] >= 1
    assert summary["interactions"]["op_changed"] == 2

    # culling: it saw 0 kernels, and so does /proc; nothing it started is left
    assert summary["culling"]["reached_zero"] is True
    assert summary["culling"]["kernels_at_start"] == 2
    assert live_load_test_kernels() == {}
    assert report["stopped"]["processes_left"] == []
    known = {report["server"]["pid"]: report["server"]["start_time"], **report["server"]["known_pids"]}
    assert len(known) >= 4, known  # the app, Voila, two kernels
    for pid, started in known.items():
        assert start_time(int(pid)) != started, f"process {pid} is still running"
    assert not Path(report["server"]["workdir"]).exists()


def start_time(pid: int) -> int | None:
    """The start time (clock ticks) of ``pid`` from /proc, None when there is no such process."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None
