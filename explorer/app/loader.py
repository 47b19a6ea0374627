"""Load a slow module (TensorFlow) in a background thread, so the app does not wait for it.

The app never starts the TensorFlow loader by itself at build: only a view that cannot work
without TensorFlow in the kernel (the Kernels tab when no registry data is at hand), or the
user (training, ``app.ctx.tf_loader.start()``), starts it.

>>> from explorer.app.loader import BackgroundLoader
>>> loader = BackgroundLoader("answer", lambda: 42).start()
>>> loader.wait(5), loader.status
(42, 'ready')
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from explorer.runtime.threads import start_daemon

#: The loader's statuses, in order.
LOADER_STATUSES: tuple[str, ...] = ("idle", "loading", "ready", "failed")


class BackgroundLoader:
    """Runs ``func()`` once in a daemon thread; callbacks fire when it is done."""

    def __init__(self, name: str, func: Callable[[], Any]) -> None:
        if not callable(func):
            raise TypeError(f"func must be callable, got {type(func).__name__}")
        self.name = name
        self._func = func
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._callbacks: list[Callable[[BackgroundLoader], None]] = []
        self._thread: threading.Thread | None = None
        self._finished = False
        self.status = "idle"
        self.result: Any = None
        self.error: str = ""
        self.seconds: float | None = None

    def start(self) -> BackgroundLoader:
        """Start loading (once); returns self."""
        with self._lock:
            if self._thread is None:
                self.status = "loading"
                self._thread = start_daemon(self._work, name=f"load-{self.name}")
        return self

    def _work(self) -> None:
        start = time.perf_counter()
        try:
            self.result = self._func()
            self.status = "ready"
        except BaseException as exc:  # an import can fail in many ways; report, never crash the app
            self.error = f"{type(exc).__name__}: {exc}"
            self.status = "failed"
        self.seconds = time.perf_counter() - start
        with self._lock:
            self._finished = True
            callbacks = list(self._callbacks)
        try:
            for callback in callbacks:
                _safe_call(callback, self)
        finally:
            self._done.set()  # wait() returns once every callback has run

    @property
    def done(self) -> bool:
        """True once loading has finished, successfully or not."""
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> Any:
        """Block until loaded; return the result, or raise RuntimeError if it failed or timed out."""
        self.start()
        if not self._done.wait(timeout):
            raise RuntimeError(f"{self.name} is still loading after {timeout} s")
        if self.status == "failed":
            raise RuntimeError(f"{self.name} failed to load: {self.error}")
        return self.result

    def add_done_callback(self, callback: Callable[[BackgroundLoader], None]) -> None:
        """Call ``callback(loader)`` when done (at once, in this thread, if already done)."""
        with self._lock:
            if not self._finished:
                self._callbacks.append(callback)
                return
        _safe_call(callback, self)

    def describe(self) -> str:
        """One line for the UI."""
        if self.status == "loading":
            return f"{self.name} is loading in the background…"
        if self.status == "ready":
            return f"{self.name} loaded in {self.seconds:.1f} s"
        if self.status == "failed":
            return f"{self.name} could not be loaded: {self.error}"
        return f"{self.name} is not loaded in this process"


def _safe_call(callback: Callable[[BackgroundLoader], None], loader: BackgroundLoader) -> None:
    try:
        callback(loader)
    except Exception as exc:  # a broken callback must not kill the loader thread
        import sys

        print(f"explorer: callback after loading {loader.name} failed: {exc!r}", file=sys.stderr)


_TF_LOADER: BackgroundLoader | None = None


def _import_tf_and_registry() -> Any:
    from explorer.backends.tensorflow_backend import import_tensorflow

    return import_tensorflow()


def tensorflow_loader() -> BackgroundLoader:
    """The process-wide TensorFlow loader (idle until something that needs TensorFlow in this
    process starts it)."""
    global _TF_LOADER
    if _TF_LOADER is None:
        _TF_LOADER = BackgroundLoader("TensorFlow", _import_tf_and_registry)
    return _TF_LOADER
