"""Background threads of the runtime: every one named, and a daemon.

Daemon threads, because nothing a thread of ours does (serve a worker, watch a parent, count
down to an idle release, run a job) may keep the interpreter from exiting when the caller is
done; named, so that a stack dump or ``threading.enumerate()`` says whose each one is.

>>> seen = []
>>> start_daemon(seen.append, "from a thread", name="explorer-doc").join(5)
>>> seen
['from a thread']
>>> timer = call_later(60.0, print, "never", name="explorer-doc-timer")
>>> timer.cancel()
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def start_daemon(target: Callable[..., Any], *args: Any, name: str) -> threading.Thread:
    """Start ``target(*args)`` in a daemon thread called ``name``; returns the thread."""
    thread = threading.Thread(target=target, args=args, name=name, daemon=True)
    thread.start()
    return thread


def call_later(seconds: float, target: Callable[..., Any], *args: Any, name: str) -> threading.Timer:
    """Call ``target(*args)`` in a daemon thread called ``name`` after ``seconds`` (``.cancel()``
    stops it before then); returns the started timer."""
    timer = threading.Timer(seconds, target, args=args)
    timer.name = name
    timer.daemon = True
    timer.start()
    return timer
