"""Run the shipped ``jupyterhub_config.py`` on loopback in a temporary directory, for tests and measurements.

:func:`running_hub` starts ``jupyterhub -f jupyterhub_config.py`` with free ports and every
state directory (sqlite db, cookie secret, proxy pid file, user directories, ``TMPDIR``)
under one given directory, waits until the hub answers, and stops the hub and every process
it started (proxy, culler, single-user servers, kernels) however the block ends: a watcher
thread keeps the list of the hub's descendants from ``/proc`` while it runs (kernels live in
sessions of their own and are re-parented once their server dies), and
:func:`explorer.server.process_tree.stop_process_tree` signals what on that list outlived the hub.

The rest reads ``/proc`` directly: which process is a user's server (its ``JUPYTERHUB_USER``),
its kernels, their resident memory and their resource limits.  Linux only.

A test-session driver, not part of the deployment: it uses the tests' helpers
(:mod:`tests.support`), so it is imported from the repository's root
(``from deploy.jupyterhub import hub_session``); ``jupyterhub_config.py`` imports none of it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from explorer.server.process_tree import descendants, stop_process_tree
from tests.support.net import free_port, wait_for_http

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "jupyterhub_config.py"
#: the proxy JupyterHub starts (npm), and how to get it
PROXY = "configurable-http-proxy"
PROXY_INSTALL = "npm install -g configurable-http-proxy"
#: The shared password the harness gives its hub (8 characters at least, as the config asks).
PASSWORD = "px-workshop-test"
#: Seconds the hub gets to stop its servers and services after SIGTERM, before SIGKILL.
HUB_STOP_GRACE_S = 40.0
_PROC = Path("/proc")


def require_proxy() -> str:
    """Path of ``configurable-http-proxy``; RuntimeError saying how to install it when it is missing."""
    found = shutil.which(PROXY)
    if not found:
        raise RuntimeError(f"{PROXY} is not on PATH: JupyterHub cannot start without it ({PROXY_INSTALL})")
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return (_PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return b""


def _environ(pid: int) -> dict[str, str]:
    try:
        raw = (_PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return {}
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def status_kib(pid: int, key: str) -> int:
    """A ``kB`` field (``VmRSS``, ``VmData``, ...) of ``/proc/PID/status``; 0 when the process is gone."""
    try:
        for line in (_PROC / str(pid) / "status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name == key:
                return int(value.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def pss_kib(pid: int) -> int:
    """Proportional set size (``Pss`` of ``/proc/PID/smaps_rollup``) in KiB; 0 when unreadable."""
    try:
        for line in (_PROC / str(pid) / "smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def data_limit(pid: int) -> str:
    """The soft "Max data size" of ``/proc/PID/limits`` as written there ("unlimited" or bytes)."""
    for line in (_PROC / str(pid) / "limits").read_text().splitlines():
        if line.startswith("Max data size"):
            return line.split()[3]
    raise ValueError(f"no 'Max data size' line in /proc/{pid}/limits")


def maps_mention(pid: int, needle: str) -> bool:
    """Whether a file mapped into the process has ``needle`` in its path (e.g. ``libtensorflow``)."""
    try:
        return needle in (_PROC / str(pid) / "maps").read_text()
    except OSError:
        return False


@dataclass
class Hub:
    """A running hub: its public URL, process, log and directories."""

    url: str
    proc: subprocess.Popen[bytes]
    log: Path
    users_dir: Path
    state_dir: Path
    password: str = PASSWORD
    known: dict[int, int] = field(default_factory=dict)

    def log_text(self) -> str:
        """Everything the hub, its proxy, services and servers wrote so far."""
        return self.log.read_text(errors="replace")

    def server_pid(self, user: str) -> int | None:
        """The pid of ``user``'s single-user server (a descendant of the hub), None when none runs."""
        for pid in descendants(self.proc.pid):
            if b"jupyterhub.singleuser" in _cmdline(pid) and _environ(pid).get("JUPYTERHUB_USER") == user:
                return pid
        return None

    def culler_pids(self) -> list[int]:
        """Processes of the idle-culler service started by the hub."""
        return [pid for pid in descendants(self.proc.pid) if b"jupyterhub_idle_culler" in _cmdline(pid)]

    def kernel_pids(self, user: str) -> list[int]:
        """The kernels (ipykernel processes) of ``user``'s server; empty when it does not run."""
        server = self.server_pid(user)
        if server is None:
            return []
        return sorted(pid for pid in descendants(server) if b"ipykernel" in _cmdline(pid))

    def user_memory_kib(self, user: str) -> dict[str, Any]:
        """VmRSS and Pss (KiB) of ``user``'s server, its kernels and any other process under it, and sums.

        "Other" processes are what a kernel starts (the explorer's sandbox workers, for example).
        """
        server = self.server_pid(user)
        if server is None:
            raise RuntimeError(f"no server runs for {user}")
        below = sorted(descendants(server))
        kernels = [pid for pid in below if b"ipykernel" in _cmdline(pid)]
        pids = [server, *below]
        rss = {pid: status_kib(pid, "VmRSS") for pid in pids}
        pss = {pid: pss_kib(pid) for pid in pids}
        return {
            "server_pid": server,
            "kernel_pids": kernels,
            "other_pids": [pid for pid in below if pid not in kernels],
            "rss_kib": rss,
            "pss_kib": pss,
            "rss_total_kib": sum(rss.values()),
            "pss_total_kib": sum(pss.values()),
            "tensorflow_loaded": any(maps_mention(pid, "libtensorflow") for pid in below),
        }


def hub_environment(tmp: Path, overrides: Mapping[str, str]) -> tuple[dict[str, str], int]:
    """The hub's environment: free loopback ports, state under ``tmp``; returns it and the public port."""
    port = free_port()
    env = dict(os.environ)
    env.update(
        {
            "PX_HUB_PASSWORD": PASSWORD,
            "PX_HUB_IP": "127.0.0.1",
            "PX_HUB_PORT": str(port),
            "PX_HUB_API_PORT": str(free_port()),
            "PX_HUB_PROXY_API_PORT": str(free_port()),
            "PX_HUB_STATE_DIR": str(tmp / "state"),
            "PX_HUB_USERS_DIR": str(tmp / "users"),
            "TMPDIR": str(tmp / "tmp"),
        }
    )
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env["PX_HUB_ALLOW_ROOT"] = "1"  # a test machine: the servers run as root like the hub
    env.update(overrides)
    return env, port


def wait_until_ready(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 90.0) -> None:
    """Until ``GET url`` answers JupyterHub's API version (RuntimeError with the log tail otherwise)."""
    wait_for_http(
        url, proc, log, timeout, ready=lambda body: "version" in json.loads(body), name="jupyterhub"
    )


def _watch(hub: Hub, stop: threading.Event) -> None:
    """Keep ``hub.known`` up to date with the hub's descendants until ``stop`` is set."""
    while not stop.wait(0.5):
        hub.known.update(descendants(hub.proc.pid))


@contextlib.contextmanager
def running_hub(tmp: Path, overrides: Mapping[str, str] | None = None) -> Iterator[Hub]:
    """Start the shipped config in ``tmp`` (see the module doc); stop everything it started on exit."""
    require_proxy()
    tmp = Path(tmp)
    (tmp / "tmp").mkdir(parents=True, exist_ok=True)
    env, port = hub_environment(tmp, overrides or {})
    log = tmp / "hub.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(CONFIG)],
            cwd=tmp,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    hub = Hub(
        url=f"http://127.0.0.1:{port}/",
        proc=proc,
        log=log,
        users_dir=tmp / "users",
        state_dir=tmp / "state",
    )
    stop = threading.Event()
    watcher = threading.Thread(target=_watch, args=(hub, stop), daemon=True)
    watcher.start()
    try:
        wait_until_ready(hub.url + "hub/api/", proc, log)
        yield hub
    finally:
        stop.set()
        watcher.join(5)
        hub.known.update(descendants(proc.pid))
        stop_process_tree(proc, hub.known, grace_s=HUB_STOP_GRACE_S)


def log_in(page: Any, hub: Hub, user: str, password: str | None = None) -> None:
    """Fill in and submit the hub's login form (the hub then starts the server and redirects)."""
    page.goto(hub.url + "hub/login", timeout=60_000)
    page.fill("#username_input", user)
    page.fill("#password_input", hub.password if password is None else password)
    page.click("#login_submit")
