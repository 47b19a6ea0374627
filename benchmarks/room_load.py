"""Websocket-less clients against the workshop server, then a real browser visit (issue 39).

    python benchmarks/room_load.py [--clients 60] [--seconds 60] [--after 30] [--max-kernels 10]

Starts ``precision-explorer app`` (the shipped notebook, its defaults: a pool of one warm
kernel, ``--connect-grace 20``, ``--client-starts 10``; ``--max-kernels`` as given), then
``--clients`` clients, each from an address of its own on loopback (127.0.0.2, 127.0.0.3, ...:
Linux routes all of 127/8 to the loopback device), each requesting ``GET /`` in a loop (one
second apart) and reading the page, never opening a websocket: a link preview, a monitor, an
attendee with ``curl``.  After ``--seconds`` their connections are closed and one real browser
(Playwright's Chromium, /usr/bin/chromium, headless, from 127.0.0.1) loads the page; it must get
the app: the page (HTTP 200, not the "full" page), its first view drawn by the kernel, and the
op dropdown changed to ``exp`` with the Kernels tab redrawn by the kernel.  The browser's page
stays open for ``--after`` seconds more.

Printed: HTTP statuses of the clients' requests; every 5 s the kernels alive (ipykernel
processes under the server) and the resident memory of the server's whole process tree
(``VmRSS`` summed); the maximum during the clients' run and the values ``--after`` seconds after
it; the browser visit's times (page to first view, op change to redraw).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import http.client
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from explorer.server.process_tree import descendants  # noqa: E402

_FIRST_VIEW_JS = """() => {
    if (document.querySelector('.px-app') === null) return false;
    const plot = document.querySelector('.px-kernels-plot');
    return plot !== null && plot.querySelector('img, svg, canvas, .px-heatmap') !== null
        && document.querySelector('.px-op select') !== null;
}"""
_REDRAWN_JS = """(before) => {
    const tab = document.querySelector('.px-tab-kernels');
    return tab !== null && tab.textContent !== before
        && tab.querySelector('.px-plot img, .px-plot svg, .px-plot canvas, .px-plot .px-heatmap') !== null;
}"""


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return 0
    return 0


def sample(server_pid: int) -> tuple[int, int]:
    """(kernels alive, resident bytes of the server's whole process tree)."""
    pids = [server_pid, *descendants(server_pid)]
    kernels = sum(1 for pid in pids if b"ipykernel" in _cmdline(pid))
    return kernels, sum(_rss(pid) for pid in pids)


class Clients:
    """Websocket-less clients, each bound to its own loopback address."""

    def __init__(self, port: int, count: int) -> None:
        self.port = port
        self.count = count
        self.stop = threading.Event()
        self.statuses: collections.Counter[str] = collections.Counter()
        self.lock = threading.Lock()
        self.connections: set[http.client.HTTPConnection] = set()
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True) for i in range(count)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def run(self, index: int) -> None:
        address = f"127.0.0.{2 + index}"
        while not self.stop.is_set():
            conn = http.client.HTTPConnection(
                "127.0.0.1", self.port, timeout=300, source_address=(address, 0)
            )
            with self.lock:
                self.connections.add(conn)
            try:
                conn.request("GET", "/", headers={"Host": f"127.0.0.1:{self.port}"})
                response = conn.getresponse()
                response.read()
                outcome = str(response.status)
            except Exception as exc:  # closed at the end of the run, or refused
                outcome = "closed at the end" if self.stop.is_set() else type(exc).__name__
            finally:
                with self.lock:
                    self.connections.discard(conn)
                conn.close()
            with self.lock:
                self.statuses[outcome] += 1
            self.stop.wait(1.0)

    def close(self) -> None:
        """Stop the loops and close every open connection (their pages unread)."""
        self.stop.set()
        with self.lock:
            for conn in list(self.connections):
                if conn.sock is not None:
                    with contextlib.suppress(OSError):
                        conn.sock.shutdown(socket.SHUT_RDWR)
        for thread in self.threads:
            thread.join(10)


def browser_visit(port: int, timeout_s: float) -> dict[str, object]:
    """One Chromium visit: HTTP status, seconds to the kernel-drawn first view and to the redraw
    after the op change; the page is returned open (close it with the returned ``close``)."""
    from playwright.sync_api import sync_playwright

    play = sync_playwright().start()
    browser = play.chromium.launch(
        executable_path="/usr/bin/chromium",
        headless=True,
        args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    )  # fmt: skip
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    result: dict[str, object] = {}
    start = time.monotonic()
    response = page.goto(f"http://127.0.0.1:{port}/", timeout=timeout_s * 1000, wait_until="commit")
    result["http_status"] = response.status if response is not None else None
    try:
        page.wait_for_function(_FIRST_VIEW_JS, timeout=timeout_s * 1000)
        result["first_view_s"] = time.monotonic() - start
        before = page.evaluate("() => document.querySelector('.px-tab-kernels').textContent")
        value = page.evaluate(
            "() => [...document.querySelector('.px-op select').options]"
            ".find(o => o.textContent.trim().split(/\\s/)[0] === 'exp').value"
        )
        changed = time.monotonic()
        page.select_option(".px-op select", value=value)
        page.wait_for_function(_REDRAWN_JS, arg=before, timeout=timeout_s * 1000)
        result["op_change_s"] = time.monotonic() - changed
        result["got_the_app"] = True
    except Exception as exc:
        result["got_the_app"] = False
        result["error"] = str(exc).splitlines()[0][:200]
        result["full_page"] = "px-full" in page.content()

    def close() -> None:
        page.close(run_before_unload=True)
        browser.close()
        play.stop()

    result["close"] = close
    return result


def main() -> None:
    """Run the load, the visit, and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=60)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--after", type=float, default=30.0)
    parser.add_argument("--max-kernels", type=int, default=10)
    args = parser.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        log = open(Path(tmp) / "app.log", "wb")  # noqa: SIM115 - closed below
        cmd = [sys.executable, "-m", "explorer", "app", "--no-browser", "--port", str(port),
               "--max-kernels", str(args.max_kernels)]  # fmt: skip
        server = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            _run(args, port, server, Path(tmp) / "app.log")
        finally:
            os.killpg(server.pid, 15)
            try:
                server.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, 9)
            log.close()


def _run(args: argparse.Namespace, port: int, server: subprocess.Popen[bytes], log: Path) -> None:
    started = time.monotonic()
    while b"pre-heated kernel ran the notebook" not in log.read_bytes():
        if time.monotonic() - started > 300 or server.poll() is not None:
            raise SystemExit(f"the server did not get ready:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)
    print(f"command: {' '.join(sys.argv)}")
    ready = time.monotonic() - started
    print(f"server: python -m explorer app --max-kernels {args.max_kernels} (defaults otherwise), ready in "
          f"{ready:.1f} s; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    kernels, rss = sample(server.pid)
    print(f"before the clients: {kernels} kernels, {rss / 2**20:.0f} MiB")
    clients = Clients(port, args.clients)
    t0 = time.monotonic()
    clients.start()
    peak = (0, 0)
    print("\n| t (s) | kernels alive | server tree RSS (MiB) | phase |\n|---:|---:|---:|---|")
    next_print = 0.0
    while time.monotonic() - t0 < args.seconds:
        kernels, rss = sample(server.pid)
        peak = (max(peak[0], kernels), max(peak[1], rss))
        now = time.monotonic() - t0
        if now >= next_print:
            print(f"| {now:.0f} | {kernels} | {rss / 2**20:.0f} | {args.clients} clients |", flush=True)
            next_print = now + 5
        time.sleep(1.0)
    clients.close()
    stopped = time.monotonic()
    visit = browser_visit(port, 240)
    visit_done = time.monotonic()
    while time.monotonic() - stopped < args.after:
        kernels, rss = sample(server.pid)
        now = time.monotonic() - t0
        if now >= next_print:
            print(f"| {now:.0f} | {kernels} | {rss / 2**20:.0f} | after the clients (browser page open) |")
            next_print = now + 5
        time.sleep(1.0)
    after = sample(server.pid)
    close = visit.pop("close")
    assert callable(close)
    close()
    statuses = ", ".join(f"{k}: {v}" for k, v in sorted(clients.statuses.items()))
    given_back = len(
        re.findall(r"kernel given back: no websocket connected", log.read_text(errors="replace"))
    )
    print(f"\nclients' requests by HTTP status: {statuses} ({sum(clients.statuses.values())} in all)")
    print(f"during the clients' {args.seconds:.0f} s: at most {peak[0]} kernels, {peak[1] / 2**20:.0f} MiB")
    print(f"{args.after:.0f} s after the clients stopped: {after[0]} kernels, {after[1] / 2**20:.0f} MiB "
          "(the browser's kernel and the warm pool's included)")  # fmt: skip
    print(f"kernels given back by the server (no websocket within the grace): {given_back}")
    print(f"browser visit right after the clients: HTTP {visit.get('http_status')}; got the app: "
          f"{visit.get('got_the_app')}; first view in {visit.get('first_view_s', float('nan')):.1f} s; "
          f"op change redrawn in {visit.get('op_change_s', float('nan')):.2f} s; whole visit "
          f"{visit_done - stopped:.1f} s")  # fmt: skip
    if "error" in visit:
        print(f"browser error: {visit['error']}")


if __name__ == "__main__":
    main()
