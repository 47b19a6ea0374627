"""Loopback networking for the servers the tests and benchmarks start.

>>> port = free_port()
>>> 1024 <= port < 65536
True
"""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(log: Path, chars: int = 3000) -> str:
    try:
        return log.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def wait_for_http(
    url: str,
    proc: subprocess.Popen[bytes],
    log: Path,
    timeout: float = 90.0,
    *,
    ready: Callable[[bytes], bool] | None = None,
    name: str = "server",
) -> None:
    """Until ``url`` answers: a ``tcp://host:port`` url until the port accepts connections (a GET
    of a Voila page would run the notebook), else until a GET succeeds and, when ``ready`` is
    given, ``ready(body)`` is true.  RuntimeError with the tail of ``log`` when ``proc`` exits
    first or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}:\n{_tail(log)}")
        try:
            if url.startswith("tcp://"):
                host, port = url.removeprefix("tcp://").rsplit(":", 1)
                socket.create_connection((host, int(port)), timeout=2).close()
                return
            with urllib.request.urlopen(url, timeout=5) as answer:
                body = answer.read()
            if ready is None or ready(body):
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{name} at {url} not ready after {timeout} s:\n{_tail(log)}")
