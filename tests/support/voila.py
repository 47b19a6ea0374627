"""Voila servers for the tests and benchmarks: one way to start them, one way to stop them.

Two kinds, both on a free port of 127.0.0.1 with their files under one given directory:

* :func:`start_app`: ``python -m explorer app --no-browser --port P [options]``, the workshop
  server as a teacher starts it (Host check, kernel cap, culling, pre-heated pool);
* :func:`start_voila`: Voila itself with the app's command line and environment
  (:func:`explorer.cli.app.voila_command`, the offline template), the app's first view written
  beside the template before the first page is asked for, as ``precision-explorer app`` does.

Each starts in a session of its own (``TMPDIR`` under the directory, the log beside it) and
returns once the port accepts connections (a GET would run the notebook);
:meth:`VoilaServer.stop` stops it and every process it started, kernels included
(:func:`explorer.server.process_tree.stop_process_tree`), and says what outlived that.
:func:`running_app` / :func:`running_voila` do both around a ``with`` block.  Reads ``/proc``.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from explorer.server.process_tree import descendants, is_alive, stop_process_tree
from tests.support.net import free_port, wait_for_http
from tests.support.processes import wait_until

ROOT = Path(__file__).resolve().parents[2]
#: the app's notebook
EXPLORER_NOTEBOOK = ROOT / "notebooks" / "explorer.ipynb"
#: a one-cell notebook's cell: a slider (a page load is quick and starts one kernel)
SLIDER_CELL = "import ipywidgets\nipywidgets.IntSlider(3)"
#: seconds the server gets to stop its kernels after SIGTERM, before SIGKILL
STOP_GRACE_S = 30.0
_KERNEL_FILE = re.compile(rb"kernel-([0-9a-f-]{36})\.json")


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@dataclass
class VoilaServer:
    """A running server started here: its process, port, log and directory."""

    proc: subprocess.Popen[bytes]
    port: int
    log: Path
    workdir: Path
    #: every descendant seen while it ran, ``{pid: start time}``: stopped at the end too
    known: dict[int, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def tmpdir(self) -> Path:
        """The server's ``TMPDIR``."""
        return self.workdir / "tmp"

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def tree(self) -> dict[int, int]:
        """The server's live descendants, ``{pid: start time}`` (and remembers them)."""
        found = descendants(self.proc.pid)
        with self.lock:
            self.known.update(found)
        return found

    def kernels(self) -> dict[int, int]:
        """The server's kernel processes (ipykernel), ``{pid: start time}``."""
        return {pid: started for pid, started in self.tree().items() if b"ipykernel" in _cmdline(pid)}

    def kernel_ids(self) -> dict[str, int]:
        """The server's kernels, ``{kernel id: pid}`` (the id is in the connection file's name)."""
        found = {}
        for pid in self.tree():
            line = _cmdline(pid)
            if b"ipykernel" in line and (match := _KERNEL_FILE.search(line)):
                found[match.group(1).decode()] = pid
        return found

    def wait_for_kernels(self, count: int, timeout: float = 60.0) -> dict[int, int]:
        """Until exactly ``count`` kernels run; returns them (AssertionError with the log tail after
        ``timeout`` seconds)."""
        try:
            wait_until(lambda: len(self.kernels()) == count, timeout, f"{count} kernels", every=0.3)
        except AssertionError:
            raise AssertionError(
                f"expected {count} kernels, found {self.kernels()}:\n{self.log_text()[-3000:]}"
            ) from None
        return self.kernels()

    def stop(self, grace_s: float = STOP_GRACE_S) -> list[int]:
        """Stop the server and everything it started; returns the pids still alive after that
        (none, normally: they got SIGKILL)."""
        self.tree()
        with self.lock:
            known = dict(self.known)
        stop_process_tree(self.proc, known, grace_s=grace_s)
        return sorted(pid for pid, started in known.items() if is_alive(pid, started))


def _launch(
    cmd: Sequence[str], port: int, workdir: Path, log_name: str, env: Mapping[str, str], timeout: float
) -> VoilaServer:
    """Start ``cmd`` (a server on ``port``) in a session of its own; return once the port answers."""
    (workdir / "tmp").mkdir(parents=True, exist_ok=True)
    log = workdir / log_name
    full_env = {**env, "TMPDIR": str(workdir / "tmp")}
    full_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            list(cmd), env=full_env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True
        )
    server = VoilaServer(proc, port, log, workdir)
    try:
        wait_for_http(f"tcp://127.0.0.1:{port}", proc, log, timeout, name=Path(cmd[0]).name)
    except BaseException:
        server.stop()
        raise
    server.tree()
    return server


def app_command(port: int, *options: str, notebook: Path | None = None) -> list[str]:
    """``python -m explorer app --no-browser --port P [--notebook NB] [options]``."""
    cmd = [sys.executable, "-m", "explorer", "app", "--no-browser", "--port", str(port)]
    if notebook is not None:
        cmd += ["--notebook", str(notebook)]
    return [*cmd, *options]


def start_app(
    workdir: Path,
    *options: str,
    notebook: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
) -> VoilaServer:
    """``precision-explorer app`` with ``options`` serving ``notebook`` (default: the app's own),
    its files under ``workdir``, ``env`` added to this process's environment."""
    port = free_port()
    return _launch(
        app_command(port, *options, notebook=notebook),
        port,
        workdir,
        "app.log",
        {**os.environ, **(env or {})},
        timeout,
    )


def start_voila(
    workdir: Path,
    notebook: Path = EXPLORER_NOTEBOOK,
    *,
    preheat: int = 0,
    first_view: bool = True,
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
) -> VoilaServer:
    """Voila serving ``notebook`` with the app's command line and offline template (under
    ``workdir``), a pool of ``preheat`` kernels, and (``first_view``) the app's first view written
    beside the template before this returns; ``env`` added to Voila's environment."""
    from explorer.cli.app import start_first_view, voila_command, voila_env, write_offline_template

    template_root = write_offline_template(workdir / "share")
    writer = start_first_view(template_root) if first_view else None
    port = free_port()
    try:
        server = _launch(
            voila_command(notebook, port, preheat=preheat),
            port,
            workdir,
            "voila.log",
            {**voila_env(template_root), **(env or {})},
            timeout,
        )
    finally:
        written = writer.wait() if writer is not None else 0
    if written != 0:
        server.stop()
        raise RuntimeError(f"the server's first view was not written (exit status {written})")
    return server


@contextlib.contextmanager
def running_app(workdir: Path, *options: str, **kwargs: object) -> Iterator[VoilaServer]:
    """:func:`start_app` around a ``with`` block, stopped however the block ends."""
    server = start_app(workdir, *options, **kwargs)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def running_voila(workdir: Path, **kwargs: object) -> Iterator[VoilaServer]:
    """:func:`start_voila` around a ``with`` block, stopped however the block ends."""
    server = start_voila(workdir, **kwargs)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()


def write_notebook(path: Path, cell: str = SLIDER_CELL) -> Path:
    """A one-cell notebook at ``path`` (by default a slider); returns ``path``."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(cell)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def http_get(port: int, path: str = "/", host: str | None = None) -> tuple[int, dict[str, str], str]:
    """GET ``path`` from 127.0.0.1:port with the given Host header: (status, headers, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("GET", path, headers={"Host": host or f"127.0.0.1:{port}"})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read().decode(errors="replace")
    finally:
        conn.close()
