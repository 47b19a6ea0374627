"""What the tabs share: the state, the TensorFlow loader, caches and a loaded snapshot."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from explorer.app.loader import BackgroundLoader, tensorflow_loader
from explorer.app.state import AppState


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

    def clear(self) -> None:
        """Forget everything cached."""
        with self._lock:
            self._data.clear()


class AppContext:
    """Shared by every tab of one App."""

    def __init__(self, state: AppState, tf_loader: BackgroundLoader | None = None) -> None:
        self.state = state
        self.tf_loader = tf_loader if tf_loader is not None else tensorflow_loader()
        self.cache = ResultCache()
        #: drawn figures with their encoded PNG, by what they show (revisiting a selection is instant)
        self.figures = ResultCache(64)
        #: a kernel snapshot loaded from a file (another machine's results), or None
        self.snapshot: Any = None
        self.snapshot_name: str = ""

    @property
    def tf_ready(self) -> bool:
        """True once TensorFlow has loaded in the background."""
        return self.tf_loader.status == "ready"
