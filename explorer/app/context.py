"""What the tabs share: the state, the TensorFlow loader, caches, results computed in the
background (worker processes) and a loaded snapshot."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from explorer.app.loader import BackgroundLoader, tensorflow_loader
from explorer.app.state import AppState
from explorer.runtime.threads import start_daemon


class ResultCache:
    """A small thread-safe LRU of analysis results, so re-rendering a known selection is instant."""

    def __init__(self, size: int = 256) -> None:
        if size < 1:
            raise ValueError(f"cache size must be at least 1, got {size}")
        self.size = size
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The cached value for ``key``, computing it on a miss."""
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                self.hits += 1
                return self._data[key]
        value = compute()
        with self._lock:
            self.misses += 1
            self._data[key] = value
            while len(self._data) > self.size:
                self._data.popitem(last=False)
        return value

    def peek(self, key: Hashable) -> Any:
        """The cached value for ``key``, or None (nothing is computed)."""
        with self._lock:
            return self._data.get(key)

    def clear(self) -> None:
        """Forget everything cached."""
        with self._lock:
            self._data.clear()


class BackgroundResults:
    """Work the view does not wait for (a sweep worker's answer, TensorFlow's device list): each
    key runs once in a daemon thread; listeners hear ``topic`` when it is done or failed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[Hashable, threading.Thread] = {}
        self._failed: dict[Hashable, str] = {}
        self._listeners: list[Callable[[str], None]] = []

    def listen(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(topic)`` (in the worker thread) whenever a piece of work finishes."""
        with self._lock:
            self._listeners.append(callback)

    def pending(self, key: Hashable) -> bool:
        """Whether the work ``key`` runs now."""
        with self._lock:
            return key in self._pending

    def failure(self, key: Hashable) -> str:
        """Why the work ``key`` failed ("" when it did not)."""
        with self._lock:
            return self._failed.get(key, "")

    def start(self, key: Hashable, work: Callable[[], None], topic: str) -> None:
        """Run ``work()`` for ``key`` in the background, unless it runs already or failed."""
        with self._lock:
            if key in self._pending or key in self._failed:
                return
            # started under the lock: its _run waits for it, so _pending has the key first
            self._pending[key] = start_daemon(
                self._run, key, work, topic, name=f"explorer-background-{topic}"
            )

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until no work runs (True) or ``timeout`` seconds passed (False)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                threads = list(self._pending.values())
            if not threads:
                return True
            for thread in threads:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                thread.join(left)
            if deadline is not None and time.monotonic() >= deadline:
                with self._lock:
                    return not self._pending

    def _run(self, key: Hashable, work: Callable[[], None], topic: str) -> None:
        try:
            work()
        except Exception as exc:  # shown by the view that asked, never raised into the kernel
            with self._lock:
                self._failed[key] = f"{type(exc).__name__}: {exc}".splitlines()[0][:400]
        finally:
            with self._lock:
                self._pending.pop(key, None)
                listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(topic)
            except Exception as exc:
                import sys

                print(f"explorer: a listener of {topic} failed: {exc!r}", file=sys.stderr)


class AppContext:
    """Shared by every tab of one App."""

    def __init__(self, state: AppState, tf_loader: BackgroundLoader | None = None) -> None:
        self.state = state
        self.tf_loader = tf_loader if tf_loader is not None else tensorflow_loader()
        self.cache = ResultCache()
        #: drawn figures with their encoded PNG, by what they show (revisiting a selection is instant)
        self.figures = ResultCache(64)
        #: results computed in the background (worker processes) that views fill in when ready
        self.background = BackgroundResults()
        #: a kernel snapshot loaded from a file (another machine's results), or None
        self.snapshot: Any = None
        self.snapshot_name: str = ""
        #: the model and example inputs passed to ``explorer.App(model=..., example_inputs=...)``
        self.user_model: tuple[Any, Any] | None = None
        #: how this app runs (TensorFlow imported here or not, worker processes), in words: an
        #: implementation note the Environment tab shows, not the other tabs
        self.runtime_note: str = ""

    @property
    def tf_ready(self) -> bool:
        """True once TensorFlow has loaded in this process (the in-process loader; it starts only
        when asked: sweeps and device lists come from worker processes)."""
        return self.tf_loader.status == "ready"

    def env_key(self) -> str:
        """This machine's environment key (:func:`explorer.runtime.envcache.environment_key`), once."""
        from explorer.runtime import envcache

        return str(self.cache.get(("env-key",), envcache.environment_key))
