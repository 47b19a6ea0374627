"""Stories of issue 28, items 14 and 15: the two servers as a newcomer starts them.

* ``precision-explorer lab`` (JupyterLab, the user's stale workspace in place: one written by
  Lab for a folder where explorer.ipynb sat at the root, as ``~/.jupyter`` holds after another
  Lab session): the notebook opens not marked unsaved, with no 404 or other console error; its
  one cell says how to run it, and Shift+Enter in it shows the app; no DeprecationWarning at
  start-up.
* ``precision-explorer app`` with its default options: no DeprecationWarning at start-up, and
  the first visitor, arriving as soon as the port answers, is served from the pre-heated kernel
  (the server's own log: the kernel the page got is the first and only one started, and Voila
  says it used it as a pre-heated kernel).

Both servers start at once (one JupyterLab, one Voila); one page visits each, at 1400x1000 and
then 1024x768 (the same page, resized).  Screenshots: ``artifacts/stories/server-*.png``; axe on
the notebook's cell (its hint) as Lab shows it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from explorer.server.process_tree import stop_process_tree
from tests.support.browser import axe_source, blocking, run_axe
from tests.support.net import free_port
from tests.support.page import APP_VISIBLE, STORIES
from tests.support.voila import EXPLORER_NOTEBOOK, ROOT, VoilaServer, start_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WIDE = {"width": 1400, "height": 1000}
NARROW = {"width": 1024, "height": 768}
LOAD_MS = 120_000
#: a workspace as Lab saves it after a session whose root held explorer.ipynb: it reopens
#: ``explorer.ipynb`` at the root (the layout restorer's "main" dock area)
STALE_WORKSPACE = {
    "data": {
        "layout-restorer:data": {
            "main": {
                "dock": {"type": "tab-area", "currentIndex": 0, "widgets": ["notebook:explorer.ipynb"]},
                "current": "notebook:explorer.ipynb",
            },
        },
        "notebook:explorer.ipynb": {"data": {"path": "explorer.ipynb", "factory": "Notebook"}},
    },
    "metadata": {"id": "default"},
}


@dataclass
class Lab:
    proc: subprocess.Popen[bytes]
    log: Path
    notebook: Path
    port: int

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def url(self, timeout_s: float = 120.0) -> str:
        """The address ``precision-explorer lab`` prints (with its token), once it does."""
        pattern = re.compile(rf"http://127\.0\.0\.1:{self.port}/lab/tree/\S+\?token=\w+")
        deadline = time.monotonic() + timeout_s
        while not (found := pattern.search(self.log_text())):
            assert self.proc.poll() is None, self.log_text()[-3000:]
            assert time.monotonic() < deadline, self.log_text()[-3000:]
            time.sleep(0.2)
        return found.group(0)


@dataclass
class Servers:
    lab: Lab
    app: VoilaServer


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    """``precision-explorer lab`` on a copy of the notebook (Lab saves what it opens) with a stale
    workspace in its config dir, and ``precision-explorer app`` with its default options, both
    started at once."""
    from explorer.training.queue import DIR_ENV as TRAINING_QUEUE_DIR

    tmp = tmp_path_factory.mktemp("story-server")
    (tmp / "notebooks").mkdir()
    notebook = tmp / "notebooks" / "explorer.ipynb"
    shutil.copy(EXPLORER_NOTEBOOK, notebook)
    config = tmp / "jupyter-config"
    (config / "lab" / "workspaces").mkdir(parents=True)
    (config / "lab" / "workspaces" / "default-37a8.jupyterlab-workspace").write_text(
        json.dumps(STALE_WORKSPACE)
    )
    port = free_port()
    log = tmp / "lab.log"
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(config), "TF_CPP_MIN_LOG_LEVEL": "2"}
    cmd = [
        sys.executable,
        "-m",
        "explorer",
        "lab",
        "--no-browser",
        "--port",
        str(port),
        "--notebook",
        str(notebook),
    ]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True
        )
    try:
        app = start_app(tmp / "app", env={TRAINING_QUEUE_DIR: str(tmp / "queue")})
        try:
            yield Servers(Lab(proc, log, notebook, port), app)
        finally:
            for server in (proc, app.proc):  # both stop at once; then each is waited for
                if server.poll() is None:
                    server.send_signal(signal.SIGTERM)
            app.stop()
    finally:
        stop_process_tree(proc)
    # `lab` passes its SIGTERM on to JupyterLab: nothing serving that port outlives it
    survivors = [pid for pid in _pids_with_arg(f"--port={port}") if "jupyterlab" in _cmdline(pid)]
    assert survivors == [], f"JupyterLab outlived precision-explorer lab: {survivors}"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _pids_with_arg(arg: str) -> list[int]:
    """The processes whose command line has ``arg`` (read from /proc)."""
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and arg in _cmdline(int(p.name))]


def _shot(page: Any, name: str) -> None:
    STORIES.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(STORIES / f"server-{name}.png"))


def test_app_serves_its_first_visitor_from_the_warm_kernel(browser: Any, servers: Servers) -> None:
    app = servers.app
    page = browser.new_page(viewport=WIDE)
    try:
        page.goto(app.url, wait_until="commit", timeout=LOAD_MS)
        page.wait_for_function(APP_VISIBLE, timeout=LOAD_MS)
        found = re.search(r'"kernelId":\s*"([0-9a-f-]{36})"', page.content())
        assert found, "no kernel id in the page"
        kid = found.group(1)
        log = app.log_text()
        assert "DeprecationWarning" not in log, log[:3000]
        assert f"Using pre-heated kernel: {kid}" in log, log[-3000:]
        assert re.findall(r"Kernel started: ([0-9a-f-]{36})", log)[0] == kid, log[-3000:]
        _shot(page, "app-1400")
        page.set_viewport_size(NARROW)
        page.wait_for_function(APP_VISIBLE, timeout=LOAD_MS)
        _shot(page, "app-1024")
    finally:
        page.close(run_before_unload=True)


#: the notebook's tab in Lab's main area is marked unsaved (Lab's dirty class on the tab)
_DIRTY_TABS = "() => document.querySelectorAll('#jp-main-dock-panel .lm-TabBar-tab.jp-mod-dirty').length"
_KERNEL_IDLE = (
    "() => { const s = document.querySelector('#jp-main-statusbar');"
    " return s !== null && s.textContent.includes('| Idle'); }"
)


#: axe's finding on JupyterLab 4's CodeMirror editor in every cell (Lab's markup, not the notebook's)
LAB_EDITOR_UNNAMED = ("aria-input-field-name", (".cm-content",))
#: Lab rewrites a notebook's metadata as the kernel's info reply arrives, just after the status
#: bar says Idle: a notebook that is not marked unsaved within this long stays so
DIRTY_WINDOW_MS = 1500


def _becomes_dirty(page: Any) -> bool:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(f"() => ({_DIRTY_TABS})() > 0", timeout=DIRTY_WINDOW_MS)
    except PlaywrightTimeout:
        return False
    return True


def test_lab_opens_the_notebook_saved_with_a_run_hint_and_runs_it(browser: Any, servers: Servers) -> None:
    lab = servers.lab
    errors: list[str] = []
    failed: list[str] = []
    page = browser.new_page(viewport=WIDE)
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    try:
        page.goto(lab.url(), timeout=LOAD_MS)
        page.wait_for_function(_KERNEL_IDLE, timeout=LOAD_MS)
        editor = page.locator(".jp-Notebook .jp-CodeCell .jp-InputArea-editor").first
        editor.wait_for(state="visible", timeout=LOAD_MS)
        first_line = editor.inner_text().strip().splitlines()[0]
        assert first_line.startswith("#") and "Shift+Enter" in first_line, first_line
        _shot(page, "lab-open-1400")
        assert not _becomes_dirty(page), "the notebook opened marked unsaved"
        # the cell and its hint; JupyterLab's own editor element has no accessible name (Lab's, not ours)
        found = [
            v
            for v in blocking(run_axe(page, axe_source(), ".jp-Notebook .jp-CodeCell"))
            if (v.id, v.targets) != LAB_EDITOR_UNNAMED
        ]
        assert found == [], [v.line() for v in found]

        editor.click()
        page.keyboard.press("Shift+Enter")
        page.wait_for_function(APP_VISIBLE, timeout=LOAD_MS)
        page.set_viewport_size(NARROW)
        page.wait_for_function(APP_VISIBLE, timeout=LOAD_MS)
        assert editor.is_visible()
        _shot(page, "lab-ran-1024")
        assert failed == [] and errors == [], (failed, errors)
        assert "DeprecationWarning" not in lab.log_text(), lab.log_text()[-3000:]
        # no toast over the app asking whether to fetch Jupyter's news (lab disables that plugin)
        assert page.get_by_text("official Jupyter news").count() == 0
    finally:
        page.close(run_before_unload=True)
