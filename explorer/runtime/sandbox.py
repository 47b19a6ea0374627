"""Run probes in warm worker processes, so a crash or hang never takes the caller with it.

One worker per key (one per backend), started on first use as a fresh Python
process and reused.  Every call has a timeout.  A worker that segfaults, aborts
or hangs is discarded; the caller gets ``SandboxCrash`` / ``SandboxTimeout``
(or, from :meth:`Sandbox.run`, an Outcome with status ``crashed`` / ``timeout``)
and the next call starts a fresh worker.  :meth:`Sandbox.map` runs a batch, one
item after the other, with a time limit per item: a crash or hang costs only
the item it happened in, and the rest continue in a fresh worker;
:meth:`Sandbox.map_parallel` shares the items of several batches among several
workers at once (one thread per worker, results delivered in the calling thread).

Every request carries an id and every reply names the request (and item) it
answers, so an answer can only reach the call that asked for it; a call that
does not complete (interrupted by Ctrl-C, or by an error in a progress
callback) also replaces its worker.  Workers write their output (``print``, and
C-level writes to fd 1 and 2) to a private unlinked file, never to the
caller's stdout or stderr; set ``PX_SANDBOX_STDERR=1`` to see their stderr.  A
worker dies with its parent process.

>>> from explorer.runtime.sandbox import default_sandbox
>>> default_sandbox().run("numpy", "exp", "float16").status.value
'ok'
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import fcntl
import itertools
import math
import numbers
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from multiprocessing.connection import Connection, Pipe
from queue import SimpleQueue
from typing import IO, Any, TypeVar

from explorer.outcome import Outcome, Status

#: Seconds a fresh worker may take to import its framework (TensorFlow takes ~5 s).
WARMUP_TIMEOUT = 300.0
#: Environment variable: set to 1 to let workers write their stderr to the caller's stderr.
STDERR_ENV = "PX_SANDBOX_STDERR"
#: How much of a dead worker's last output its SandboxCrash message quotes (characters).
OUTPUT_TAIL = 2000

_T = TypeVar("_T")


class SandboxError(RuntimeError):
    """A call did not return normally from its worker."""


class SandboxCrash(SandboxError):
    """The worker process died during the call."""

    def __init__(self, key: str, exitcode: int | None, output: str = "", during: str = "the call") -> None:
        self.exitcode = exitcode
        self.output = output
        #: what the worker was doing: "the call", or "its setup" (see Sandbox.map)
        self.during = during
        message = f"worker {key!r} died during {during} ({describe_exit(exitcode)})"
        if output.strip():
            message += f"; its last output:\n{output.strip()}"
        super().__init__(message)


class SandboxTimeout(SandboxError):
    """The call did not finish in time; the worker was killed."""

    def __init__(self, key: str, timeout: float, during: str = "") -> None:
        self.timeout = timeout
        #: "" for the call itself, "its setup" for a Sandbox.map setup
        self.during = during
        where = f" during {during}" if during else ""
        super().__init__(f"worker {key!r} did not answer within {timeout:g} s{where} and was killed")


@dataclass(frozen=True)
class ItemResult:
    """What one item of :meth:`Sandbox.map` came back with."""

    #: the item's position in the batch
    index: int
    #: what ``func(item)`` returned (None when it failed)
    value: Any = None
    #: None when it returned; else the exception it raised, or SandboxCrash / SandboxTimeout
    error: BaseException | None = None
    #: seconds from the previous reply (or the start) to this one
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether ``func(item)`` returned a value."""
        return self.error is None


@dataclass(frozen=True)
class Group:
    """Items for :meth:`Sandbox.map_parallel` and the workers that share them."""

    #: the keys of the workers the items are shared among (one thread each)
    keys: tuple[str, ...]
    #: the items, each passed to the function alone
    items: Sequence[Any]
    #: run first in every worker this call starts (see :meth:`Sandbox.map`)
    setup: Callable[[], Any] | None = None


def file_tail(output: Any, limit: int = OUTPUT_TAIL) -> str:
    """The last ``limit`` bytes of the open file ``output`` (a worker's captured stdout and stderr),
    decoded; "" when it cannot be read."""
    try:
        fd = output.fileno()
        size = os.fstat(fd).st_size
        return os.pread(fd, limit, max(0, size - limit)).decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""


def describe_exit(exitcode: int | None) -> str:
    """``-11`` -> ``"killed by signal SIGSEGV"``."""
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        try:
            return f"killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit status {exitcode}"


def check_timeout(value: Any, name: str = "timeout") -> float:
    """``value`` as float seconds; ValueError unless it is a finite positive real number.

    >>> check_timeout(2)
    2.0
    >>> check_timeout(float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: timeout must be a finite positive number of seconds, got nan
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{name} must be a finite positive number of seconds, got {value!r}")
    return float(value)


# ---------------------------------------------------------------- worker side

#: What a new worker process runs: read the caller's sys.path, then serve requests.
_BOOTSTRAP = (
    "import sys\n"
    "from multiprocessing.connection import Connection\n"
    "conn = Connection(int(sys.argv[1]))\n"
    "sys.path[:] = conn.recv()\n"
    "from explorer.runtime.sandbox import _worker_main\n"
    "_worker_main(conn, int(sys.argv[2]))\n"
)
_PR_SET_PDEATHSIG = 1


def _worker_main(conn: Connection, parent_pid: int) -> None:
    """Loop in the worker: receive ``(id, pickled func, [pickled args, ...])``, reply once per item.

    Replies are ``(id, index, "ok", value)``, ``(id, index, "raise", exception)``, or
    ``(id, 0, "reject", exception)`` when the function itself could not be unpickled.
    """
    _die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in a terminal must not kill workers
    os.set_inheritable(conn.fileno(), False)  # nothing a probe starts holds our pipe open
    while True:
        try:
            request_id, func_bytes, items = conn.recv()
        except (EOFError, OSError):
            return
        try:
            func = pickle.loads(func_bytes)
        except BaseException as exc:
            error = SandboxError(
                f"the worker could not unpickle the function ({type(exc).__name__}: {exc}); "
                "it must be an importable top-level function"
            )
            _reply(conn, request_id, 0, "reject", error)
            continue
        for index, args_bytes in enumerate(items):
            _reply(conn, request_id, index, *_apply(func, args_bytes))


def _die_with_parent(parent_pid: int) -> None:
    """Make the kernel kill this process when its parent dies (Linux), and watch the parent too."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before the line above took effect
        os._exit(1)

    def watch() -> None:  # for systems without prctl
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="explorer-sandbox-parent-watch", daemon=True).start()


def _apply(func: Callable[..., Any], args_bytes: bytes) -> tuple[str, Any]:
    """Run ``func(*args)``; exceptions become replies, SystemExit and KeyboardInterrupt included."""
    try:
        return "ok", func(*pickle.loads(args_bytes))
    except Exception as exc:
        exc.add_note("in the sandbox worker:\n" + "".join(traceback.format_exception(exc)).rstrip())
        return "raise", _picklable(exc)
    except BaseException as exc:  # SystemExit, KeyboardInterrupt, GeneratorExit: never passed on as such
        name = getattr(func, "__qualname__", repr(func))
        raised = f"{type(exc).__name__}({', '.join(map(repr, exc.args))})"
        error = SandboxError(f"{name} raised {raised} in the worker")
        error.add_note("in the sandbox worker:\n" + "".join(traceback.format_exception(exc)).rstrip())
        return "raise", error


def _reply(conn: Connection, request_id: int, index: int, kind: str, value: Any) -> None:
    try:
        conn.send((request_id, index, kind, value))
    except OSError:
        raise  # the parent is gone
    except Exception as exc:  # an unpicklable return value
        error = SandboxError(f"the result could not be sent back: {type(exc).__name__}: {exc}")
        conn.send((request_id, index, "raise", error))


def _picklable(exc: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        text = "".join(traceback.format_exception(exc))
        return SandboxError(f"{type(exc).__name__}: {exc}\n{text}")


# ---------------------------------------------------------------- caller side


class _Launcher:
    """Starts worker processes from one long-lived thread.

    ``PR_SET_PDEATHSIG`` fires when the *thread* that started a child ends, not the
    process: a worker started from a short-lived thread (the app runs sweeps in one)
    would die with that thread.
    """

    def __init__(self) -> None:
        self._jobs: SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, job: Callable[[], _T]) -> _T:
        """``job()``, called in the launcher thread."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="explorer-sandbox-launcher")
                self._thread.daemon = True
                self._thread.start()
        future: Future[_T] = Future()
        self._jobs.put((job, future))
        return future.result()

    def _serve(self) -> None:
        while True:
            job, future = self._jobs.get()
            try:
                future.set_result(job())
            except BaseException as exc:
                future.set_exception(exc)


_LAUNCHER = _Launcher()
_REQUEST_IDS = itertools.count(1)


class _Worker:
    """One worker process, its pipe, and the private file its fd 1 and 2 write to."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.calls = 0
        # unlinked at once: nothing is left behind; closed in kill()
        self.output: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        fd = self.output.fileno()
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)  # see _forget_output
        self.conn, child = Pipe()
        self.process = _LAUNCHER.run(lambda: self._start(child))
        with contextlib.suppress(OSError):  # a worker that died at once is reported by receive()
            self.conn.send(list(sys.path))

    def _start(self, child: Connection) -> subprocess.Popen[bytes]:
        """Start the process with ``child`` as its end of the pipe (then closed here)."""
        try:
            return subprocess.Popen(
                [sys.executable, "-c", _BOOTSTRAP, str(child.fileno()), str(os.getpid())],
                pass_fds=(child.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=self.output,
                stderr=None if os.environ.get(STDERR_ENV) == "1" else self.output,
                env=dict(os.environ, PYTHONUNBUFFERED="1"),
            )
        finally:
            child.close()

    def send(self, func_bytes: bytes, items: list[bytes]) -> int:
        """Send one request (a pickled function and its pickled argument tuples); returns its id."""
        request_id = next(_REQUEST_IDS)
        self.calls += 1
        self._forget_output()
        with contextlib.suppress(OSError):  # a dead worker is reported by receive()
            self.conn.send((request_id, func_bytes, items))
        return request_id

    def receive(self, request_id: int, timeout: float, during: str = "") -> tuple[int, str, Any]:
        """The next reply to request ``request_id``: ``(index, kind, value)``; replies to other
        requests are discarded.  Raises SandboxTimeout or SandboxCrash (the worker is then useless)."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                if remaining <= 0 or not self.conn.poll(remaining):
                    raise SandboxTimeout(self.key, timeout, during)
                reply_id, index, kind, value = self.conn.recv()
            except (EOFError, OSError):  # OSError: the pipe was closed (Sandbox.close from another thread)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.process.wait(5)
                output = self.output_tail()
                raise SandboxCrash(self.key, self.process.returncode, output, during or "the call") from None
            if reply_id == request_id:
                self._forget_output()
                return index, kind, value

    def _forget_output(self) -> None:
        """Empty the output file, so that a crash message quotes what the current item wrote."""
        with contextlib.suppress(OSError, ValueError):
            self.output.truncate(0)  # the worker appends (O_APPEND), so it goes on writing at the start

    def output_tail(self) -> str:
        """The last characters the worker wrote to fd 1 or 2 since its previous reply."""
        return file_tail(self.output)

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)
        self.conn.close()
        self.output.close()


class Sandbox:
    """A set of warm worker processes, one per key."""

    def __init__(self) -> None:
        self._workers: dict[str, _Worker] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        #: keys of workers replaced after a crash, timeout or interrupted call, with the reason (newest last)
        self.replaced: list[tuple[str, str]] = []

    def _lock(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def call(self, key: str, func: Callable[..., Any], *args: Any, timeout: float = 60.0) -> Any:
        """Run ``func(*args)`` in worker ``key`` and return its value.

        ``func`` must be an importable top-level function.  Exceptions raised by
        ``func`` are re-raised here (SystemExit and KeyboardInterrupt as
        :class:`SandboxError`); a dead worker raises :class:`SandboxCrash`, a slow
        one :class:`SandboxTimeout`; either way the worker is replaced.  A call
        interrupted here (Ctrl-C) replaces its worker too, so its answer never
        reaches a later call.
        """
        [result] = self._run(key, func, [args], timeout)
        if result.error is not None:
            raise result.error
        return result.value

    def map(
        self,
        key: str,
        func: Callable[[Any], Any],
        items: Iterable[Any],
        timeout_per_item: float,
        on_result: Callable[[ItemResult], None] | None = None,
        setup: Callable[[], Any] | None = None,
    ) -> list[ItemResult]:
        """Run ``func(item)`` for each item, in order, in worker ``key``; one ItemResult per item.

        Each item has ``timeout_per_item`` seconds.  A crash or hang costs only the
        item it happened in (its error is SandboxCrash / SandboxTimeout); the rest
        continue in a fresh worker.  ``on_result`` gets each result as it arrives
        (it must not call this sandbox).  ``setup()`` runs first in every worker this
        call starts (within WARMUP_TIMEOUT); if it fails, every item left gets its error.

        >>> import math
        >>> box = Sandbox()
        >>> [r.value for r in box.map("doc", math.sqrt, [4.0, 9.0], timeout_per_item=60)]
        [2.0, 3.0]
        >>> box.close()
        """
        return self._run(key, func, [(item,) for item in items], timeout_per_item, on_result, setup)

    def map_parallel(
        self,
        func: Callable[[Any], Any],
        groups: Sequence[Group],
        timeout_per_item: float,
        on_result: Callable[[int, ItemResult], None] | None = None,
        batch: int = 16,
    ) -> list[list[ItemResult]]:
        """Run ``func(item)`` for the items of every group at once, each group's items shared
        among its workers (one thread per worker key, ``batch`` items handed out at a time to
        whichever of a group's workers is free); returns each group's results in item order.

        As in :meth:`map`, each item has ``timeout_per_item`` seconds and a crash or hang
        costs only the item it happened in.  ``on_result(group_index, result)`` is called in
        the calling thread as each result arrives (``result.index`` is the item's position in
        its group).  An interrupted call (Ctrl-C) stops its workers before it re-raises.

        >>> import math
        >>> box = Sandbox()
        >>> out = box.map_parallel(math.sqrt, [Group(("a", "b"), [4.0, 9.0, 16.0])], 60, batch=1)
        >>> [r.value for r in out[0]]
        [2.0, 3.0, 4.0]
        >>> box.close()
        """
        timeout_per_item = check_timeout(timeout_per_item, "timeout_per_item")
        if batch < 1:
            raise ValueError(f"batch must be at least 1, got {batch!r}")
        arrived: SimpleQueue[tuple[int, ItemResult] | BaseException | None] = SimpleQueue()
        pending = [list(range(0, len(g.items), batch)) for g in groups]
        guard = threading.Lock()
        stop = threading.Event()

        def serve(g: int, key: str) -> None:
            group = groups[g]
            try:
                while not stop.is_set():
                    with guard:
                        if not pending[g]:
                            break
                        start = pending[g].pop(0)
                    chunk = group.items[start : start + batch]

                    def forward(result: ItemResult, start: int = start) -> None:
                        arrived.put(
                            (g, ItemResult(start + result.index, result.value, result.error, result.seconds))
                        )

                    self._run(key, func, [(item,) for item in chunk], timeout_per_item, forward, group.setup)
            except BaseException as exc:  # reported in the calling thread
                arrived.put(exc)
            finally:
                arrived.put(None)

        threads = [
            threading.Thread(target=serve, args=(g, key), name=f"explorer-sandbox-{key}", daemon=True)
            for g, group in enumerate(groups)
            if group.items
            for key in dict.fromkeys(group.keys)
        ]
        results: list[list[ItemResult]] = [[] for _ in groups]
        for thread in threads:
            thread.start()
        running, failure = len(threads), None
        try:
            while running:
                got = arrived.get()
                if got is None:
                    running -= 1
                elif isinstance(got, BaseException):
                    failure = failure or got
                    stop.set()
                else:
                    results[got[0]].append(got[1])
                    if on_result is not None:
                        on_result(*got)
        except BaseException:  # interrupted: stop handing out items, and stop the workers
            stop.set()
            for key in {k for g in groups for k in g.keys}:
                worker = self._workers.get(key)
                if worker is not None:
                    self._discard(key, worker, "map_parallel interrupted")
            raise
        if failure is not None:
            raise failure
        return [sorted(r, key=lambda r: r.index) for r in results]

    def _run(
        self,
        key: str,
        func: Callable[..., Any],
        arg_tuples: list[tuple[Any, ...]],
        timeout: float,
        on_result: Callable[[ItemResult], None] | None = None,
        setup: Callable[[], Any] | None = None,
    ) -> list[ItemResult]:
        """Run ``func(*args)`` for each args tuple: the one engine behind call and map."""
        if not callable(func):
            raise TypeError(f"func must be callable, got {func!r}")
        timeout = check_timeout(timeout)
        # pickled here, so that what cannot be sent fails before anything is sent
        func_bytes = pickle.dumps(func)
        items = [pickle.dumps(args) for args in arg_tuples]
        setup_bytes = None if setup is None else pickle.dumps(setup)
        results: list[ItemResult] = []

        def deliver(result: ItemResult) -> None:
            results.append(result)
            if on_result is not None:
                on_result(result)

        with self._lock(key):
            worker: _Worker | None = None
            try:
                while len(results) < len(items):
                    worker = self._workers.get(key)
                    if worker is None or not worker.alive():
                        worker = self._workers[key] = _Worker(key)
                        error = self._setup(key, worker, setup_bytes)
                        if error is not None:
                            for index in range(len(results), len(items)):
                                deliver(ItemResult(index, error=error))
                            break
                    self._serve(key, worker, func_bytes, items, len(results), timeout, deliver)
            except BaseException as exc:  # interrupted: no later answer may reach anyone
                if worker is not None:
                    self._discard(key, worker, f"call interrupted by {type(exc).__name__}")
                raise
        return results

    def _setup(self, key: str, worker: _Worker, setup_bytes: bytes | None) -> BaseException | None:
        """Run the pickled ``setup()`` in a fresh worker; returns its error if it failed (and the
        worker is then gone)."""
        if setup_bytes is None:
            return None
        request_id = worker.send(setup_bytes, [pickle.dumps(())])
        try:
            _, kind, value = worker.receive(request_id, WARMUP_TIMEOUT, during="its setup")
        except SandboxError as exc:
            self._discard(key, worker, str(exc))
            return exc
        if kind == "ok":
            return None
        self._discard(key, worker, f"its setup failed: {value}")
        return value

    def _serve(
        self,
        key: str,
        worker: _Worker,
        func_bytes: bytes,
        items: list[bytes],
        start: int,
        timeout: float,
        deliver: Callable[[ItemResult], None],
    ) -> None:
        """Send items ``start:`` to ``worker`` and deliver their replies until all came or one was lost."""
        request_id = worker.send(func_bytes, items[start:])
        for index in range(start, len(items)):
            began = time.perf_counter()
            try:
                offset, kind, value = worker.receive(request_id, timeout)
            except SandboxError as exc:  # crash or timeout: this item is lost, the rest go on elsewhere
                self._discard(key, worker, str(exc))
                deliver(ItemResult(index, error=exc, seconds=time.perf_counter() - began))
                return
            seconds = time.perf_counter() - began
            if kind == "reject":  # the worker could not unpickle the function: no item can run
                for rest in range(index, len(items)):
                    deliver(ItemResult(rest, error=value, seconds=seconds))
                return
            if offset != index - start:
                raise SandboxError(f"worker {key!r} answered item {start + offset}, expected {index}")
            if kind == "ok":
                deliver(ItemResult(index, value=value, seconds=seconds))
            else:
                deliver(ItemResult(index, error=value, seconds=seconds))

    def _discard(self, key: str, worker: _Worker, reason: str) -> None:
        """Kill ``worker`` and forget it (the next call starts a fresh one)."""
        worker.kill()
        with self._guard:
            if self._workers.get(key) is worker:
                del self._workers[key]
                self.replaced.append((key, reason))

    def run(
        self,
        backend: str,
        op: str,
        fmt: str,
        device: str = "CPU",
        mode: str = "eager",
        timeout: float = 60.0,
        seed: int = 0,
    ) -> Outcome:
        """Run one op in the backend's worker; a crash or hang becomes the Outcome's status.

        Bad names raise ValueError here, before anything is sent to a worker.
        """
        from explorer.backends import get_backend, normalize_device
        from explorer.formats import resolve
        from explorer.ops import get_op

        backend_name = get_backend(backend).name
        op_name = get_op(op).name
        fmt_name = resolve(fmt).name
        device = normalize_device(device)
        timeout = check_timeout(timeout)
        try:
            self.warm(backend_name)
        except SandboxError as exc:
            status = Status.TIMEOUT if isinstance(exc, SandboxTimeout) else Status.CRASHED
            return Outcome(
                status,
                error=f"starting the {backend_name} worker failed: {exc}",
                extra={"backend": backend_name, "mode": mode},
            )
        return self.outcome(
            backend_name, probe, backend_name, op_name, fmt_name, device, mode, seed, timeout=timeout
        )

    def outcome(self, key: str, func: Callable[..., Outcome], *args: Any, timeout: float = 60.0) -> Outcome:
        """Like :meth:`call` for a function that returns an Outcome; a crash, hang or escaped
        SystemExit becomes an Outcome with status ``crashed``, ``timeout`` or ``error`` instead
        of raising."""
        start = time.perf_counter()
        try:
            return self.call(key, func, *args, timeout=timeout)
        except SandboxCrash as exc:
            status, error = Status.CRASHED, str(exc)
        except SandboxTimeout as exc:
            status, error = Status.TIMEOUT, str(exc)
        except SandboxError as exc:
            status, error = Status.ERROR, str(exc)
        return Outcome(status, error=error, extra={"worker": key, "seconds": time.perf_counter() - start})

    def warm(self, backend: str) -> None:
        """Start ``backend``'s worker and import its framework there (not counted in probe timeouts)."""
        worker = self._workers.get(backend)
        if worker is None or not worker.alive() or worker.calls == 0:
            self.call(backend, warm_backend, backend, timeout=WARMUP_TIMEOUT)

    def close(self) -> None:
        """Stop every worker."""
        with self._guard:
            workers, self._workers = self._workers, {}
        for worker in workers.values():
            worker.kill()

    def workers(self) -> dict[str, int | None]:
        """Live workers by key, with their process ids."""
        return {k: w.process.pid for k, w in list(self._workers.items()) if w.alive()}


def warm_backend(backend: str) -> list[str]:
    """Worker side: import the backend's framework; returns its device types."""
    from explorer.backends import get_backend

    b = get_backend(backend)
    return b.devices() if b.is_installed() else []


def probe(backend: str, op: str, fmt: str, device: str, mode: str, seed: int) -> Outcome:
    """Worker side: run one op with one backend."""
    from explorer.backends import get_backend

    return get_backend(backend).run(op, fmt, device=device, mode=mode, seed=seed)


_DEFAULT: Sandbox | None = None


def default_sandbox() -> Sandbox:
    """The process-wide sandbox (workers shut down at exit)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Sandbox()
        atexit.register(_DEFAULT.close)
    return _DEFAULT
