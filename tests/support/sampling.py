"""Watch a widget while something runs: what a visitor would see, sampled from another thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def sample_during(action: Callable[[], object], sample: Callable[[], T], every_s: float = 0.02) -> list[T]:
    """Run ``action()`` in this thread while another thread appends ``sample()`` every
    ``every_s`` seconds; the samples, in order (at least one, taken before the action returns)."""
    seen: list[T] = []
    stop = threading.Event()

    def watch() -> None:
        while True:
            seen.append(sample())
            if stop.wait(every_s):
                return

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        action()
    finally:
        stop.set()
        watcher.join()
    return seen
