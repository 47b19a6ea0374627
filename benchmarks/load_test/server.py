"""The server a run starts and stops: ``precision-explorer app`` through
:func:`tests.support.voila.start_app` (the start-up the tests share: a session of its own, a free
port, ``TMPDIR`` under the run's directory), its pre-heated pool, its Voila process, and its stop
with every process it started."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

from benchmarks.load_test.config import Config
from benchmarks.load_test.procfs import cmdline
from tests.support import voila
from tests.support.voila import VoilaServer

#: Seconds to wait for the pre-heated pool: this plus this per pooled kernel.
POOL_WAIT_BASE_S = 120.0
POOL_WAIT_PER_KERNEL_S = 10.0

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
    # always said: without --preheat the app keeps a pool of one, which the run would not count
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
