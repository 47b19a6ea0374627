"""Load test: N simulated visitors against a fresh ``precision-explorer app`` (Voila) server.

    python -m benchmarks.load_test --visitors 10 --browsers 2 --json out.json
    python -m benchmarks.load_test --visitors 20 --arrival-interval 0      # all at once
    python -m benchmarks.load_test --visitors 5 --after leave --cull-idle-timeout 30

(from the repository root: the server and Chromium come from :mod:`tests.support`).

What it does:

- starts ``python -m explorer app`` (``--no-browser``, a free port on 127.0.0.1, its own
  ``TMPDIR`` under a fresh temporary directory, ``--max-kernels`` = the number of visitors
  unless given, short ``--cull-idle-timeout``/``--cull-interval``); with ``--preheat N``, a
  pool of N pre-heated kernels (``app --preheat N``, ``--max-kernels`` then max(visitors, N)
  + :data:`POOL_REFILLS`), and the visitors arrive once the server's log says the N kernels
  ran the notebook (``pool_warm_s``: seconds from starting the server); stops it at the end with
  :func:`explorer.server.process_tree.stop_process_tree` and kills whatever it (or this
  script: Chromium, Playwright's driver) started that is still alive, on success, error,
  deadline, SIGINT, SIGTERM or SIGHUP alike;
- lets ``--visitors`` visitors arrive one every ``--arrival-interval`` seconds (default:
  spread evenly over ``--arrive-over`` = 60 s; ``--arrival-interval 0``: all at once).
  ``--browsers`` of them (default 2, spread over the arrival order) are real browser tabs
  (Playwright, ``/usr/bin/chromium``, one browser process, one context per visitor); the
  others are light clients (below);
- each visitor loads the page, opens the Ranges, Accuracy and Bits tabs, goes back to
  Kernels, changes the op once (``--op``, default ``exp``), waits for each view to update,
  then stays idle with the page open (``--after stay``, default) or leaves
  (``--after leave``: the browser closes its tab with ``beforeunload``, so Voila's shutdown
  beacon fires; a light client closes its websocket without a beacon);
- then waits, up to a bound, for the kernel count in ``/proc`` to drop to 0 (idle culling).

A light client is what a browser tab does on the wire, without rendering: an HTTP GET of
the page (Voila executes the notebook while it streams the page), then a websocket to
``/api/kernels/<id>/channels`` (the kernel id is in the page's ``jupyter-config-data``)
on which it sends ``kernel_info_request``, opens the ``jupyter.widget.control`` comm
(control protocol 1.0.0) and asks for ``request_states``: the kernel answers with every
widget's state (``update_states``).  Voila 0.5 pages carry only the root widget's model id,
not the widget state, so this is how the client learns the model ids of the controls: the
Tab is the model whose ``_dom_classes`` has ``px-tabs``, the op dropdown ``px-op``.  An
interaction is a ``comm_msg`` with ``{"method": "update", "state": {...}}`` to that model
(``selected_index`` of the Tab; ``index`` of the Dropdown); the kernel echoes it
(``echo_update``) and sends ``update`` messages for the widgets the app redrew, which the
client applies to its copy of the widget state.  The websocket stays open (the kernel
counts one connection) while the visitor idles.

Measured (text table on stdout; everything with ``--json PATH``):

- first useful view, per visitor (seconds):
  browser: from ``page.goto`` until ``.px-app`` exists AND the Kernels tab's plot
  ``.px-kernels-plot`` contains an ``img``, ``svg``, ``canvas`` or the ``.px-heatmap``
  element; light client: from sending the GET until the page was fully received with
  status 200, the widget state (``update_states``) was received over the websocket with the
  ``px-app`` model in it, and the Kernels tab's plot Output has an output (the heatmap
  widget or an image) while its status line shows no "loading" message.  For light clients
  the time until the HTTP page was fully received is reported apart (``page_s``);
- interaction latency (seconds), per interaction: browser: from the click (tab) or
  ``select_option`` (op) until the tab shows a figure, table or non-loading message (op: and
  the Kernels tab's text changed); light client: from sending the ``update`` until the last
  ``update``/``comm_open`` for a widget inside the target tab that arrived before the
  kernel reported idle for that request, or, when the tab still said "loading" then, the
  first later update that removed it (``view_s``).  Going back to a tab whose selection
  did not change redraws nothing: the light client then has no ``view_s``; its ``reply_s``
  (send until the kernel's ``status: idle`` for the request) is reported for every
  interaction, and ``echo_s`` (until the ``echo_update``) shows the kernel applied it;
- memory: VmRSS of each visitor's kernel process (from ``/proc``, found by the kernel id in
  its command line), read right after that visitor's interactions, with whether TensorFlow
  was loaded in it (a ``libtensorflow`` mapping in ``/proc/PID/maps``); VmRSS of every
  kernel and of the Voila server when the last visitor finished its interactions; the peak
  total sampled once a second;
- failures, one per visitor at most: ``http_<status>`` (503: the server was full),
  ``timeout`` (page, view or interaction), ``ws_error``, ``kernel_error`` (an error output
  in the page, a ``Traceback`` on the kernel's stderr or an ``error`` message), ``deadline``
  / ``aborted``; error messages the app shows in its tabs are counted apart;
- culling: seconds from the moment the last visitor finished its interactions until no
  kernel process is left, within ``--cull-bound`` (default: idle timeout + 3 cull intervals
  + 60 s), and the server log's "Culling ... with N connections" lines.

Bounds: at most :data:`MAX_VISITORS` visitors and :data:`MAX_BROWSERS` browsers; a global
``--deadline`` (seconds) after which the visitors are cancelled and what was measured is
reported; the run is aborted when ``MemAvailable`` drops below ``--min-available-gib``.
Figures are wall-clock on the machine at hand; a shared machine makes them noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from explorer.server.process_tree import descendants, is_alive
from tests.support import voila
from tests.support.browser import launch_options, missing_browser
from tests.support.voila import VoilaServer

ROOT = Path(__file__).resolve().parents[1]
#: Most visitors one run may simulate.
MAX_VISITORS = 60
#: Most real-browser visitors (each is a Chromium context: far heavier than a light client).
MAX_BROWSERS = 6
#: Longest --deadline accepted (seconds).
MAX_DEADLINE_S = 3600
#: With --preheat: kernels the pool may start again, beyond the visitors, as they take pooled ones.
POOL_REFILLS = 2
#: Seconds to wait for the pre-heated pool: this plus this per pooled kernel.
POOL_WAIT_BASE_S = 120.0
POOL_WAIT_PER_KERNEL_S = 10.0
#: The tabs each visitor opens, in order, then the op change (on the Kernels tab).
TAB_SEQUENCE = [("ranges", "Ranges"), ("accuracy", "Accuracy"), ("bits", "Bits"), ("kernels", "Kernels")]
#: Seconds between two samples of /proc (kernels, memory).
SAMPLE_S = 1.0
#: Largest websocket message a light client accepts (the full widget state).
MAX_WS_MESSAGE = 256 * 2**20
WIDGET_PROTOCOL = "2.1.0"
#: The websocket protocol browsers speak (JupyterLab services); the legacy JSON one made Voila
#: spin at 100 % CPU when the widget state was requested (seen here, see the report).
WS_PROTOCOL = "v1.kernel.websocket.jupyter.org"
CONTROL_PROTOCOL = "1.0.0"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
KERNEL_FILE = re.compile(rb"kernel-([0-9a-f-]{36})\.json")


# ---------------------------------------------------------------------------------------- /proc


def vm_rss_bytes(pid: int) -> int | None:
    """Resident memory of ``pid`` (``VmRSS`` in ``/proc/PID/status``) in bytes; None if gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def tensorflow_loaded(pid: int) -> bool | None:
    """Whether ``pid`` has TensorFlow's shared library mapped; None if it cannot be read."""
    try:
        with open(f"/proc/{pid}/maps", "rb") as fh:
            return any(b"libtensorflow" in line or b"_pywrap_tensorflow" in line for line in fh)
    except OSError:
        return None


def meminfo_bytes(key: str) -> int | None:
    """A field of ``/proc/meminfo`` (``MemAvailable``, ``MemTotal``) in bytes."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages."""
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except (OSError, ValueError):
        return []


def start_time(pid: int) -> int | None:
    """The start time of ``pid`` (clock ticks after boot, ``/proc/PID/stat``); None if gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def mib(value: float | None) -> float | None:
    return None if value is None else round(value / 2**20, 1)


# ---------------------------------------------------------------------------------------- server


#: the server a run starts (tests/support/voila.py): kernels by id (``kernel_ids()``), every
#: descendant seen while it ran (``known``), stopped with all of them
AppServer = VoilaServer


def voila_pid(server: AppServer) -> int | None:
    """The Voila process the app started (``explorer.server.voila_main``), None when there is none."""
    for pid in server.tree():
        if b"explorer.server.voila_main" in cmdline(pid):
            return pid
    return None


def app_options(cfg: Config) -> list[str]:
    """The options of ``precision-explorer app`` this run gives (port and notebook aside)."""
    options = ["--cull-idle-timeout", str(cfg.cull_idle_timeout), "--cull-interval", str(cfg.cull_interval)]
    options += ["--max-kernels", str(cfg.kernel_cap())]
    if cfg.preheat:
        options += ["--preheat", str(cfg.preheat)]
    return options


def app_command(cfg: Config, port: int) -> list[str]:
    """The ``precision-explorer app`` command line this run starts."""
    return voila.app_command(port, *app_options(cfg), notebook=cfg.notebook)


def start_server(cfg: Config, workdir: Path, timeout: float = 120.0) -> AppServer:
    """Start the app in a session of its own on a free port; returns once the port accepts connections."""
    return voila.start_app(workdir, *app_options(cfg), notebook=cfg.notebook, timeout=timeout)


def wait_for_pool(server: AppServer, size: int) -> None:
    """Wait until the server's log says ``size`` pre-heated kernels ran the notebook (the
    visitors arrive after that: a teacher starts the server before the room comes in)."""
    from explorer.server.kernels import POOL_READY

    deadline = time.monotonic() + POOL_WAIT_BASE_S + POOL_WAIT_PER_KERNEL_S * size
    while server.log_text().count(POOL_READY) < size:
        if server.proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the pre-heated pool of {size} was not warm:\n{server.log_text()[-3000:]}")
        server.tree()
        time.sleep(0.5)


def stop_server(server: AppServer) -> dict[str, Any]:
    """Stop the app and everything it started; returns what was left behind (nothing, normally)."""
    left = server.stop()
    for pid in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    try:
        tmp_left = sorted(p.name for p in server.tmpdir.iterdir())
    except OSError:
        tmp_left = []
    return {"exit_status": server.proc.returncode, "processes_left": left, "tmpdir_left": tmp_left}


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


# ---------------------------------------------------------------------------------------- sampling


class Sampler:
    """Samples the server's kernels and memory once a second in a thread; flags low memory."""

    def __init__(self, server: AppServer, min_available: int) -> None:
        self.server = server
        self.min_available = min_available
        self.samples: list[dict[str, Any]] = []
        self.low_memory = threading.Event()
        self.low_memory_reason = ""
        self.seen_kernels: dict[str, int] = {}
        self._stop = threading.Event()
        self._start = time.monotonic()
        self._thread = threading.Thread(target=self._loop, name="load-test-sampler", daemon=True)

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def sample(self) -> dict[str, Any]:
        kernels = self.server.kernel_ids()
        self.seen_kernels.update(kernels)
        rss = [r for r in (vm_rss_bytes(pid) for pid in kernels.values()) if r is not None]
        voila = voila_pid(self.server)
        available = meminfo_bytes("MemAvailable")
        return {
            "t": round(time.monotonic() - self._start, 2),
            "kernels": len(kernels),
            "kernels_rss_mib": mib(sum(rss)),
            "voila_rss_mib": mib(vm_rss_bytes(voila)) if voila else None,
            "mem_available_mib": mib(available),
            "load": load_average()[:1],
        }

    def _loop(self) -> None:
        while not self._stop.is_set():
            point = self.sample()
            self.samples.append(point)
            available = meminfo_bytes("MemAvailable")
            if available is not None and available < self.min_available:
                self.low_memory_reason = (
                    f"MemAvailable {available / 2**30:.1f} GiB < {self.min_available / 2**30:.1f} GiB "
                    f"with {point['kernels']} kernels"
                )
                self.low_memory.set()
            self._stop.wait(SAMPLE_S)


# ---------------------------------------------------------------------------------------- records


@dataclass
class Interaction:
    action: str  #: "tab:<key>" or "op:<name>"
    target: str  #: the tab whose view should update
    view_s: float | None = None
    reply_s: float | None = None
    echo_s: float | None = None
    view_has_content: bool | None = None
    #: whether widgets inside the tab were redrawn (light clients; None for browsers)
    redrawn: bool | None = None
    #: MIME types of the target tab's plot output afterwards (light clients)
    plot_mimes: list[str] = field(default_factory=list)
    error: str = ""


@dataclass
class Visitor:
    index: int
    kind: str  #: "browser" or "light"
    arrival_s: float = 0.0  #: planned arrival, seconds after the first
    started_s: float | None = None  #: actual start, seconds after the run started
    http_status: int | None = None
    page_s: float | None = None
    first_view_s: float | None = None
    kernel_id: str | None = None
    kernel_pid: int | None = None
    kernel_rss_mib: float | None = None
    kernel_tensorflow: bool | None = None
    interactions: list[Interaction] = field(default_factory=list)
    initial_op: str | None = None
    final_op: str | None = None
    app_errors_shown: int = 0
    failure: str | None = None
    failure_detail: str = ""
    interacted_s: float | None = None  #: when its interactions ended, seconds after the run started
    closed_by_server: bool = False

    def fail(self, kind: str, detail: str = "") -> None:
        if self.failure is None:
            self.failure, self.failure_detail = kind, detail[:500]


@dataclass
class Config:
    visitors: int = 10
    browsers: int = 2
    arrival_interval: float | None = None
    arrive_over: float = 60.0
    after: str = "stay"
    deadline: float = 900.0
    cull_idle_timeout: int = 90
    cull_interval: int = 5
    cull_bound: float | None = None
    max_kernels: int | None = None
    preheat: int = 0
    op: str = "exp"
    notebook: Path | None = None
    page_timeout: float = 240.0
    view_timeout: float = 180.0
    interaction_timeout: float = 120.0
    min_available_gib: float = 4.0

    def interval(self) -> float:
        if self.arrival_interval is not None:
            return self.arrival_interval
        return self.arrive_over / (self.visitors - 1) if self.visitors > 1 else 0.0

    def bound(self) -> float:
        if self.cull_bound is not None:
            return self.cull_bound
        return self.cull_idle_timeout + 3 * self.cull_interval + 60.0

    def check(self) -> None:
        """ValueError (one line) unless the options make sense."""
        if not 1 <= self.visitors <= MAX_VISITORS:
            raise ValueError(f"--visitors must be between 1 and {MAX_VISITORS}, got {self.visitors}")
        if not 0 <= self.browsers <= min(MAX_BROWSERS, self.visitors):
            raise ValueError(f"--browsers must be between 0 and min({MAX_BROWSERS}, --visitors)")
        if self.arrival_interval is not None and not 0 <= self.arrival_interval <= 60:
            raise ValueError("--arrival-interval must be between 0 and 60 seconds")
        if not 0 <= self.arrive_over <= 600:
            raise ValueError("--arrive-over must be between 0 and 600 seconds")
        if self.after not in ("stay", "leave"):
            raise ValueError("--after must be stay or leave")
        if not 10 <= self.deadline <= MAX_DEADLINE_S:
            raise ValueError(f"--deadline must be between 10 and {MAX_DEADLINE_S} seconds")
        if self.cull_idle_timeout < 1 or self.cull_interval < 1:
            raise ValueError("--cull-idle-timeout and --cull-interval must be at least 1 second")
        if self.max_kernels is not None and self.max_kernels < 1:
            raise ValueError("--max-kernels must be at least 1")
        if not 0 <= self.preheat <= MAX_VISITORS:
            raise ValueError(f"--preheat must be between 0 and {MAX_VISITORS}")

    def kernel_cap(self) -> int:
        """The server's --max-kernels: as given, else one per visitor, plus, with a pool,
        :data:`POOL_REFILLS` for the kernels the pool may start again as visitors take them."""
        if self.max_kernels is not None:
            return self.max_kernels
        return max(self.visitors, self.preheat) + (POOL_REFILLS if self.preheat else 0)
        if not re.fullmatch(r"[A-Za-z0-9_]{1,64}", self.op):
            raise ValueError("--op must be a catalog op name")


def browser_slots(visitors: int, browsers: int) -> set[int]:
    """Which arrival positions are browsers: spread over the arrival order.

    >>> sorted(browser_slots(10, 2)), sorted(browser_slots(3, 0)), sorted(browser_slots(2, 2))
    ([0, 5], [], [0, 1])
    """
    return {math.floor(i * visitors / browsers) for i in range(browsers)} if browsers else set()


# ---------------------------------------------------------------------------------------- widget state


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


def references(value: Any) -> Iterator[str]:
    """Model ids a widget state refers to: ``IPY_MODEL_`` strings and Output widget views."""
    if isinstance(value, str):
        if value.startswith("IPY_MODEL_"):
            yield value.removeprefix("IPY_MODEL_")
    elif isinstance(value, list | tuple):
        for item in value:
            yield from references(item)
    elif isinstance(value, dict):
        view = value.get(WIDGET_VIEW)
        if isinstance(view, dict) and isinstance(view.get("model_id"), str):
            yield view["model_id"]
        for item in value.values():
            yield from references(item)


class WidgetMirror:
    """The client's copy of the kernel's widget states (``update_states``, then updates)."""

    def __init__(self) -> None:
        self.states: dict[str, dict[str, Any]] = {}

    def load(self, states: dict[str, Any]) -> None:
        for model_id, entry in states.items():
            self.states[model_id] = dict(entry.get("state", {}))

    def update(self, model_id: str, state: dict[str, Any]) -> None:
        self.states.setdefault(model_id, {}).update(state)

    def by_class(self, css_class: str) -> str | None:
        for model_id, state in self.states.items():
            if css_class in (state.get("_dom_classes") or ()):
                return model_id
        return None

    def state_of(self, css_class: str) -> dict[str, Any]:
        model_id = self.by_class(css_class)
        return self.states.get(model_id, {}) if model_id else {}

    def reachable(self, root: str) -> set[str]:
        """Every model inside ``root`` (children, outputs, marks, ...)."""
        seen: set[str] = set()
        todo = [root]
        while todo:
            model_id = todo.pop()
            if model_id in seen:
                continue
            seen.add(model_id)
            todo.extend(r for r in references(self.states.get(model_id, {})) if r not in seen)
        return seen

    def tab_index(self, title: str) -> int | None:
        """The index of the tab titled ``title`` in the Tab widget."""
        titles = [str(t) for t in self.state_of("px-tabs").get("titles") or []]
        return titles.index(title) if title in titles else None

    def tab_root(self, index: int) -> str | None:
        """The model of the Tab's child ``index`` (the tab, or the slot it is built into when shown)."""
        children = self.state_of("px-tabs").get("children") or []
        return str(children[index]).removeprefix("IPY_MODEL_") if index < len(children) else None

    def loading(self, key: str) -> bool:
        return "px-msg-loading" in str(self.state_of(f"px-{key}-status").get("value", ""))

    def has_content(self, key: str) -> bool:
        """The tab shows a plot or details output, or a status message that is not 'loading'."""
        if self.loading(key):
            return False
        if self.state_of(f"px-{key}-plot").get("outputs") or self.state_of(f"px-{key}-details").get("value"):
            return True
        return "px-msg" in str(self.state_of(f"px-{key}-status").get("value", ""))

    def plot_mimes(self, key: str) -> list[str]:
        outputs = self.state_of(f"px-{key}-plot").get("outputs") or []
        return sorted(
            {m for o in outputs if isinstance(o, dict) for m in o.get("data", {}) if m != "text/plain"}
        )

    def kernels_view_ready(self) -> bool:
        outputs = self.state_of("px-kernels-plot").get("outputs") or []
        shown = any(
            isinstance(o, dict) and set(o.get("data", {})) & {WIDGET_VIEW, "image/png", "image/svg+xml"}
            for o in outputs
        )
        return self.by_class("px-app") is not None and shown and not self.loading("kernels")

    def op_choice(self, op: str) -> tuple[int | None, str | None]:
        """(index of ``op`` in the op dropdown, the op shown now)."""
        state = self.state_of("px-op")
        labels = [
            str(label).split()[0] if str(label).split() else "" for label in state.get("_options_labels", [])
        ]
        current_index = state.get("index")
        current = (
            labels[current_index] if isinstance(current_index, int) and current_index < len(labels) else None
        )
        return (labels.index(op) if op in labels else None), current

    def app_errors(self) -> int:
        return sum("px-msg-error" in str(s.get("value", "")) for s in self.states.values())


# ---------------------------------------------------------------------------------------- light client


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


# ---------------------------------------------------------------------------------------- browser

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


# ---------------------------------------------------------------------------------------- the run


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


def snapshot(server: AppServer) -> dict[str, Any]:
    """Every kernel's VmRSS and TensorFlow state, and the Voila server's VmRSS, now."""
    kernels = server.kernel_ids()
    per_kernel = {kid: mib(vm_rss_bytes(pid)) for kid, pid in kernels.items()}
    values = [r for r in per_kernel.values() if r is not None]
    voila = voila_pid(server)
    return {
        "kernels": len(kernels),
        "kernel_rss_mib": per_kernel,
        "kernels_with_tensorflow": sum(bool(tensorflow_loaded(pid)) for pid in kernels.values()),
        "kernels_total_mib": round(sum(values), 1),
        "kernel_mean_mib": round(sum(values) / len(values), 1) if values else None,
        "kernel_max_mib": max(values) if values else None,
        "voila_rss_mib": mib(vm_rss_bytes(voila)) if voila else None,
        "mem_available_mib": mib(meminfo_bytes("MemAvailable")),
        "load": load_average(),
    }


async def watch_culling(
    server: AppServer, since: float, bound: float, visitors: list[Visitor] | None = None
) -> dict[str, Any]:
    """Poll /proc until no kernel is left (or ``bound`` seconds after ``since``); with
    ``visitors``, until none of their kernels is left (pre-heated kernels nobody took are
    never culled: they wait for the next visitor)."""

    def alive() -> int:
        kernels = server.kernel_ids()
        if visitors is None:
            return len(kernels)
        return sum(1 for v in visitors if v.kernel_id in kernels)

    at_start = alive()
    while True:
        count = alive()
        elapsed = time.monotonic() - since
        if count == 0:
            return {
                "kernels_at_start": at_start,
                "reached_zero": True,
                "seconds": round(elapsed, 1),
                "bound_s": bound,
            }
        if elapsed > bound:
            return {
                "kernels_at_start": at_start,
                "reached_zero": False,
                "kernels_left": count,
                "bound_s": bound,
            }
        await asyncio.sleep(0.5)


Hook = Callable[[AppServer, list[Visitor]], None]


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


def code_state() -> dict[str, Any]:
    """The commit and whether the app's sources had uncommitted changes (``git diff --stat``)."""

    def git(*args: str) -> str:
        try:
            out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return out.stdout.strip()

    stat = git("diff", "--stat", "HEAD", "--", "explorer", "notebooks")
    untracked = git("ls-files", "--others", "--exclude-standard", "--", "explorer", "notebooks")
    return {
        "commit": git("log", "-1", "--format=%h"),
        "uncommitted_app_changes": bool(stat or untracked),
        "diff_stat_summary": stat.splitlines()[-1].strip() if stat else "",
        "untracked_app_files": untracked.splitlines()[:50],
    }


def run_load_test(cfg: Config, on_interacted: Hook | None = None) -> dict[str, Any]:
    """Start a fresh server, run the visitors, stop everything; returns the report (see :func:`summarize`).

    ``on_interacted(server, visitors)``, if given, is called in a thread once every visitor has finished
    its interactions (tests observe the kernels then).
    """
    cfg.check()
    interval = cfg.interval()
    slots = browser_slots(cfg.visitors, cfg.browsers)
    visitors = [
        Visitor(i, "browser" if i in slots else "light", arrival_s=round(i * interval, 2))
        for i in range(cfg.visitors)
    ]
    result: dict[str, Any] = {
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()},
        "arrivals": "all at once"
        if interval == 0
        else f"one every {interval:.2f} s (over {interval * (cfg.visitors - 1):.0f} s)",
        "code": code_state(),
        "machine": {
            "cpus": os.cpu_count(),
            "mem_total_mib": mib(meminfo_bytes("MemTotal")),
            "mem_available_mib_at_start": mib(meminfo_bytes("MemAvailable")),
            "load_at_start": load_average(),
        },
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    workdir = Path(tempfile.mkdtemp(prefix="px-load-test-"))
    children_before = descendants(os.getpid())
    server: AppServer | None = None
    sampler: Sampler | None = None
    try:
        launched = time.monotonic()
        server = start_server(cfg, workdir)
        result["server"] = {
            "command": app_command(cfg, server.port),
            "pid": server.proc.pid,
            "start_time": start_time(server.proc.pid),
            "workdir": str(workdir),
        }
        sampler = Sampler(server, int(cfg.min_available_gib * 2**30)).start()
        if cfg.preheat:
            wait_for_pool(server, cfg.preheat)
            result["pool_warm_s"] = round(time.monotonic() - launched, 1)
            result["machine"]["load_when_pool_warm"] = load_average()
        asyncio.run(run_with_limits(cfg, server, sampler, visitors, result, on_interacted))
    except KeyboardInterrupt:
        result.setdefault("stopped_by", "SIGINT")
    finally:
        if sampler is not None:
            sampler.stop()
            result["samples"] = sampler.samples
            result["kernels_seen"] = dict(sampler.seen_kernels)
        if server is not None:
            result["server"]["log_tail"] = server.log_text()[-4000:]
            result["server"]["cull_lines"] = re.findall(
                r"Culling '\w+' kernel .*? with \d+ connections", server.log_text()
            )
            result["server"]["known_pids"] = dict(server.known)
            result["stopped"] = stop_server(server)
        result["own_children_killed"] = kill_own_children(children_before)
        shutil.rmtree(workdir, ignore_errors=True)
        result.pop("_t0", None)
        result["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        result["machine"]["load_at_end"] = load_average()
    result["visitors"] = [asdict(v) for v in visitors]
    result["summary"] = summarize(visitors, result)
    return result


# ---------------------------------------------------------------------------------------- report


def percentile(values: list[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) with linear interpolation between closest ranks; None when empty.

    >>> percentile([1.0, 2.0, 3.0, 4.0], 0.5), percentile([5.0], 0.95), percentile([], 0.5)
    (2.5, 5.0, None)
    """
    ordered = sorted(values)
    if not ordered:
        return None
    rank = (len(ordered) - 1) * q
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return round(ordered[low] + (ordered[high] - ordered[low]) * (rank - low), 3)


def stats(values: list[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "median": percentile(values, 0.5),
        "p95": percentile(values, 0.95),
        "max": round(max(values), 3) if values else None,
    }


def summarize(visitors: list[Visitor], result: dict[str, Any]) -> dict[str, Any]:
    """Medians, p95s, memory, failures and culling from the per-visitor records."""
    summary: dict[str, Any] = {"first_view_s": {}, "interaction_view_s": {}, "interaction_reply_s": {}}
    for kind in ("browser", "light", "all"):
        chosen = [v for v in visitors if kind in ("all", v.kind)]
        summary["first_view_s"][kind] = stats([v.first_view_s for v in chosen if v.first_view_s is not None])
        steps = [i for v in chosen for i in v.interactions]
        summary["interaction_view_s"][kind] = stats([i.view_s for i in steps if i.view_s is not None])
        summary["interaction_reply_s"][kind] = stats([i.reply_s for i in steps if i.reply_s is not None])
    summary["page_s"] = {
        "light": stats([v.page_s for v in visitors if v.kind == "light" and v.page_s is not None])
    }
    rss = [v.kernel_rss_mib for v in visitors if v.kernel_rss_mib is not None]
    summary["memory"] = {
        "kernel_rss_after_own_interactions_mib": {
            "n": len(rss),
            "mean": round(sum(rss) / len(rss), 1) if rss else None,
            "max": max(rss) if rss else None,
            "total": round(sum(rss), 1),
        },
        "kernels_with_tensorflow_after_own_interactions": sum(bool(v.kernel_tensorflow) for v in visitors),
        "when_all_had_interacted": {
            k: v for k, v in (result.get("memory_after_interactions") or {}).items() if k != "kernel_rss_mib"
        },
        "peak_kernels_total_mib": max(
            (s["kernels_rss_mib"] or 0 for s in result.get("samples", [])), default=None
        ),
        "peak_voila_mib": max((s["voila_rss_mib"] or 0 for s in result.get("samples", [])), default=None),
        "min_mem_available_mib": min(
            (s["mem_available_mib"] for s in result.get("samples", []) if s["mem_available_mib"] is not None),
            default=None,
        ),
        "peak_kernels": max((s["kernels"] for s in result.get("samples", [])), default=None),
    }
    failures: dict[str, int] = {}
    for v in visitors:
        if v.failure:
            failures[v.failure] = failures.get(v.failure, 0) + 1
    summary["failures"] = {"total": sum(failures.values()), "by_kind": failures}
    steps = [i for v in visitors for i in v.interactions]
    summary["interactions"] = {
        "done": sum(1 for i in steps if not i.error),
        "light_redrawn": sum(1 for i in steps if i.redrawn),
        "light_echoed": sum(
            1 for v in visitors if v.kind == "light" for i in v.interactions if i.echo_s is not None
        ),
        "op_changed": sum(1 for v in visitors if v.final_op == result["config"]["op"] != v.initial_op),
    }
    summary["app_errors_shown"] = sum(v.app_errors_shown for v in visitors)
    summary["culling"] = result.get("culling")
    cull_lines = (result.get("server") or {}).get("cull_lines", [])
    summary["culled_by_connections"] = {
        n: sum(1 for line in cull_lines if line.endswith(f"with {n} connections"))
        for n in sorted({line.rsplit(" ", 2)[-2] for line in cull_lines})
    }
    summary["processes_left"] = (result.get("stopped") or {}).get("processes_left")
    summary["stopped_by"] = result.get("stopped_by")
    return summary


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}{unit}"
    return f"{value}{unit}"


def _row(label: str, s: dict[str, Any]) -> str:
    return f"{label:<34}{s['n']:>4}{_fmt(s['median']):>9}{_fmt(s['p95']):>9}{_fmt(s['max']):>9}"


def format_report(result: dict[str, Any]) -> str:
    """The text table."""
    cfg, summary, code, machine = result["config"], result["summary"], result["code"], result["machine"]
    kinds = {k: sum(1 for v in result["visitors"] if v["kind"] == k) for k in ("browser", "light")}
    command = (result.get("server") or {}).get("command", [])[1:]
    changes = (
        f" + uncommitted app changes ({code['diff_stat_summary']})" if code["uncommitted_app_changes"] else ""
    )
    lines = [
        f"load test: {cfg['visitors']} visitors ({kinds['browser']} browser, {kinds['light']} light), "
        f"arrivals {result['arrivals']}, after interacting: {cfg['after']}",
        f"server: python {' '.join(shlex.quote(a) for a in command)}",
        f"code: {code['commit']}{changes}",
        f"machine: {machine['cpus']} CPUs, {machine['mem_total_mib']} MiB; load "
        f"{machine['load_at_start']} at start, {machine.get('load_at_end')} at end",
        *(
            [
                f"pre-heated pool: {cfg['preheat']} kernels ran the notebook {result['pool_warm_s']} s after "
                f"the server started (load {machine.get('load_when_pool_warm')}); visitors came after that"
            ]
            if cfg.get("preheat") and "pool_warm_s" in result
            else []
        ),
        "",
        f"{'seconds':<34}{'n':>4}{'median':>9}{'p95':>9}{'max':>9}",
    ]
    rows = [
        ("first view", "first_view_s"),
        ("interaction (view)", "interaction_view_s"),
        ("interaction (reply)", "interaction_reply_s"),
    ]
    for label, key in rows:
        for kind in ("browser", "light", "all"):
            if summary[key][kind]["n"] or kind == "all":
                lines.append(_row(f"{label} {kind}", summary[key][kind]))
    if summary["page_s"]["light"]["n"]:
        lines.append(_row("page received light", summary["page_s"]["light"]))
    memory = summary["memory"]
    own = memory["kernel_rss_after_own_interactions_mib"]
    when = memory["when_all_had_interacted"]
    mb = " MiB"
    lines += [
        "",
        f"memory per visitor (kernel VmRSS after its interactions): mean {_fmt(own['mean'], mb)}, "
        f"max {_fmt(own['max'], mb)}, total {_fmt(own['total'], mb)} over {own['n']} kernels; "
        f"TensorFlow loaded in {memory['kernels_with_tensorflow_after_own_interactions']}",
        f"when all had interacted: {when.get('kernels')} kernels, "
        f"total {_fmt(when.get('kernels_total_mib'), mb)}, mean {_fmt(when.get('kernel_mean_mib'), mb)}, "
        f"max {_fmt(when.get('kernel_max_mib'), mb)}, TensorFlow in {when.get('kernels_with_tensorflow')}; "
        f"Voila {_fmt(when.get('voila_rss_mib'), mb)}",
        f"peak: kernels total {_fmt(memory['peak_kernels_total_mib'], mb)}, "
        f"Voila {_fmt(memory['peak_voila_mib'], mb)}, {memory['peak_kernels']} kernels; "
        f"lowest MemAvailable {_fmt(memory['min_mem_available_mib'], mb)}",
        f"failures: {summary['failures']['total']} {summary['failures']['by_kind'] or ''}; "
        f"app error messages shown: {summary['app_errors_shown']}",
        f"interactions: {summary['interactions']}; "
        f"client event loop lag max {_fmt(result.get('client_loop_lag_max_s'), ' s')}",
    ]
    culling = summary["culling"]
    if culling and culling["reached_zero"]:
        lines.append(
            f"culling: {culling['kernels_at_start']} {'visitor ' if cfg.get('preheat') else ''}kernels -> 0 "
            f"in {culling['seconds']} s after the "
            f"last visitor went idle (bound {culling['bound_s']:.0f} s; "
            f"cull-idle-timeout {cfg['cull_idle_timeout']} s, cull-interval {cfg['cull_interval']} s)"
        )
    elif culling:
        lines.append(
            f"culling: {culling['kernels_left']} kernels still running after {culling['bound_s']:.0f} s"
        )
    else:
        lines.append("culling: not checked (the run stopped before every visitor had interacted)")
    lines.append(f"culled (server log), by open connections: {summary['culled_by_connections']}")
    stopped = summary["stopped_by"] or "end of run"
    lines.append(f"processes left after stop: {summary['processes_left']}; stopped by: {stopped}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> tuple[Config, Path | None]:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--visitors", type=int, default=10, help=f"simulated visitors (1 to {MAX_VISITORS})")
    parser.add_argument(
        "--browsers", type=int, default=2, help=f"of which real browsers (0 to {MAX_BROWSERS})"
    )
    parser.add_argument(
        "--arrival-interval", type=float, default=None, help="seconds between two arrivals (0: all at once)"
    )
    parser.add_argument(
        "--arrive-over",
        type=float,
        default=60.0,
        help="without --arrival-interval: spread arrivals over this many seconds",
    )
    parser.add_argument(
        "--after",
        choices=["stay", "leave"],
        default="stay",
        help="after interacting: idle with the page open, or leave",
    )
    parser.add_argument(
        "--deadline", type=float, default=900.0, help="stop and report after this many seconds"
    )
    parser.add_argument("--cull-idle-timeout", type=int, default=90, help="the server's --cull-idle-timeout")
    parser.add_argument("--cull-interval", type=int, default=5, help="the server's --cull-interval")
    parser.add_argument("--cull-bound", type=float, default=None, help="seconds to wait for 0 kernels")
    parser.add_argument(
        "--max-kernels", type=int, default=None, help="the server's --max-kernels (default: --visitors)"
    )
    parser.add_argument(
        "--preheat",
        type=int,
        default=0,
        metavar="N",
        help="serve with a pool of N pre-heated kernels (app --preheat N); visitors arrive once the "
        f"pool is warm; --max-kernels then defaults to max(visitors, N) + {POOL_REFILLS}",
    )
    parser.add_argument("--op", default="exp", help="the op each visitor switches to")
    parser.add_argument("--notebook", type=Path, default=None, help="notebook to serve (default: the app's)")
    parser.add_argument("--page-timeout", type=float, default=240.0)
    parser.add_argument("--view-timeout", type=float, default=180.0)
    parser.add_argument("--interaction-timeout", type=float, default=120.0)
    parser.add_argument("--min-available-gib", type=float, default=4.0, help="abort below this MemAvailable")
    parser.add_argument("--json", type=Path, default=None, help="write the full report here")
    args = parser.parse_args(argv)
    cfg = Config(
        visitors=args.visitors,
        browsers=args.browsers,
        arrival_interval=args.arrival_interval,
        arrive_over=args.arrive_over,
        after=args.after,
        deadline=args.deadline,
        cull_idle_timeout=args.cull_idle_timeout,
        cull_interval=args.cull_interval,
        cull_bound=args.cull_bound,
        max_kernels=args.max_kernels,
        preheat=args.preheat,
        op=args.op,
        notebook=args.notebook,
        page_timeout=args.page_timeout,
        view_timeout=args.view_timeout,
        interaction_timeout=args.interaction_timeout,
        min_available_gib=args.min_available_gib,
    )
    try:
        cfg.check()
    except ValueError as exc:
        parser.error(str(exc))
    return cfg, args.json


def main(argv: list[str] | None = None) -> int:
    cfg, json_path = parse_args(argv)
    result = run_load_test(cfg)
    result["command"] = "python -m benchmarks.load_test " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])
    )
    print(format_report(result), flush=True)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(result, indent=1, default=str) + "\n")
        print(f"report written to {json_path}")
    return 0 if result["summary"]["failures"]["total"] == 0 and not result.get("stopped_by") else 1


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # until asyncio's handler: finally blocks run
    signal.signal(signal.SIGHUP, signal.default_int_handler)
    sys.exit(main())
