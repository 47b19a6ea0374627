"""The one worker-process protocol: every worker the project starts (probe and sweep sandboxes,
training runs) is started, spoken to and killed the same way.

Start.  A worker is a fresh interpreter (``subprocess.Popen`` of ``python -c``, fork+exec:
nothing of the caller's threads or framework state is inherited), started from one long-lived
launcher thread, because ``PR_SET_PDEATHSIG`` fires when the *thread* that started a child
ends, not the process (a worker started from a short-lived thread, as the app's sweeps are,
would die with that thread).  Its fd 1 and 2 write to a private unlinked file
(:attr:`WorkerProcess.output`), never to the caller's stdout or stderr.

Die with the parent.  A worker dies with its parent three ways: ``PR_SET_PDEATHSIG`` =
SIGKILL (Linux), a thread that watches ``getppid()``, and the end of file on its pipe (the
parent's end closes when the parent process exits, however it exits).  Ctrl-C in the caller's
terminal is the caller's: workers ignore SIGINT.

Messages.  One ``multiprocessing`` pipe per worker carries pickled messages both ways.  The
first one is the caller's ``sys.path``; then the worker runs its *target*, a
``"module:function"`` name called with a :class:`ParentPipe`, and what the messages mean is
the target's (:mod:`explorer.runtime.call_worker`: function calls; the training workers: one
run and its records).  On the caller's side a dead worker is one exception,
:class:`WorkerGone`, with its exit described (:func:`describe_exit`) and its last output.

Kill.  :meth:`WorkerProcess.kill` sends SIGKILL, reaps the process and closes the pipe and the
output file.

>>> describe_exit(-11), describe_exit(1)
('killed by signal SIGSEGV', 'exit status 1')
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import importlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from multiprocessing.connection import Connection, Pipe
from queue import SimpleQueue
from typing import IO, Any, TypeVar

from explorer.runtime.threads import start_daemon

#: How much of a dead worker's last output is quoted (characters).
OUTPUT_TAIL = 2000

_T = TypeVar("_T")
_PR_SET_PDEATHSIG = 1

#: What a new worker process runs: read the caller's sys.path, then hand over to the target.
_BOOTSTRAP = (
    "import sys\n"
    "from multiprocessing.connection import Connection\n"
    "conn = Connection(int(sys.argv[1]))\n"
    "sys.path[:] = conn.recv()\n"
    "from explorer.runtime.process import worker_entry\n"
    "worker_entry(conn, int(sys.argv[2]), sys.argv[3])\n"
)


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


def file_tail(output: Any, limit: int = OUTPUT_TAIL) -> str:
    """The last ``limit`` bytes of the open file ``output`` (a worker's captured stdout and stderr),
    decoded; "" when it cannot be read."""
    try:
        fd = output.fileno()
        size = os.fstat(fd).st_size
        return os.pread(fd, limit, max(0, size - limit)).decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""


class WorkerGone(Exception):
    """The worker process died (or its pipe was closed): the end of its messages."""

    def __init__(self, exitcode: int | None, output: str) -> None:
        #: the process's exit status (negative: the signal that killed it; None: still running)
        self.exitcode = exitcode
        #: the last characters it wrote to fd 1 or 2
        self.output = output
        super().__init__(describe_exit(exitcode))


# ---------------------------------------------------------------- worker side


def die_with_parent(parent_pid: int) -> None:
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

    start_daemon(watch, name="explorer-worker-parent-watch")


class ParentPipe:
    """The worker's end of its pipe: :meth:`send` from any thread; a parent that is gone ends
    the process."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._lock = threading.Lock()

    def recv(self) -> Any:
        """The next message from the parent; EOFError once the parent closed its end or is gone."""
        try:
            return self._conn.recv()
        except OSError:
            raise EOFError("the parent closed its end of the pipe") from None

    def send(self, message: Any) -> None:
        """Send ``message`` to the parent (exceptions from pickling it are raised here); exit the
        process (status 1) when the parent is gone."""
        with self._lock:
            try:
                self._conn.send(message)
            except OSError:  # the parent is gone
                os._exit(1)


def worker_entry(conn: Connection, parent_pid: int, target: str) -> None:
    """What the bootstrap of every worker calls: tie this process to its parent, then run
    ``target`` (``"module:function"``) with the pipe."""
    die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in a terminal must not kill workers
    os.set_inheritable(conn.fileno(), False)  # nothing the worker starts holds our pipe open
    module, _, name = target.partition(":")
    main: Callable[[ParentPipe], Any] = getattr(importlib.import_module(module), name)
    main(ParentPipe(conn))


# ---------------------------------------------------------------- caller side


class _Launcher:
    """Runs jobs (process starts) in one long-lived thread (see the module docstring)."""

    def __init__(self) -> None:
        self._jobs: SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, job: Callable[[], _T]) -> _T:
        """``job()``, called in the launcher thread."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = start_daemon(self._serve, name="explorer-worker-launcher")
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


def in_launcher_thread(job: Callable[[], _T]) -> _T:
    """``job()``, called in the process's one launcher thread (where every worker is started).

    >>> import threading
    >>> in_launcher_thread(lambda: threading.current_thread().name)
    'explorer-worker-launcher'
    """
    return _LAUNCHER.run(job)


class WorkerProcess:
    """A started worker process running ``target`` (``"module:function"``, called with a
    :class:`ParentPipe`), its pipe and the private file its fd 1 and 2 write to.

    ``env`` is the worker's environment (default: the caller's), with ``PYTHONUNBUFFERED=1``;
    ``show_stderr`` lets its stderr go to the caller's stderr.  ``conn`` is the caller's end of
    the pipe (``multiprocessing.connection.wait`` on several workers' ``conn`` at once).

    >>> worker = WorkerProcess("explorer.runtime.process:echo_main")
    >>> worker.send_message("hello")
    >>> worker.wait_message(60) and worker.recv_message()
    'hello'
    >>> worker.kill()
    """

    def __init__(
        self, target: str, *, env: Mapping[str, str] | None = None, show_stderr: bool = False
    ) -> None:
        # unlinked at once: nothing is left behind; closed in kill()
        self.output: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        fd = self.output.fileno()
        # O_APPEND: forget_output can empty the file while the worker goes on writing
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
        environment = dict(os.environ if env is None else env, PYTHONUNBUFFERED="1")
        self.conn, child = Pipe()
        try:
            self.process: subprocess.Popen[bytes] = in_launcher_thread(
                lambda: self._start(child, target, environment, show_stderr)
            )
        except BaseException:
            self.conn.close()
            self.output.close()
            raise
        self.send_message(list(sys.path))  # what the bootstrap reads first

    def _start(
        self, child: Connection, target: str, env: dict[str, str], show_stderr: bool
    ) -> subprocess.Popen[bytes]:
        """Start the process with ``child`` as its end of the pipe (then closed here)."""
        try:
            return subprocess.Popen(
                [sys.executable, "-c", _BOOTSTRAP, str(child.fileno()), str(os.getpid()), target],
                pass_fds=(child.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=self.output,
                stderr=None if show_stderr else self.output,
                env=env,
            )
        finally:
            child.close()

    @property
    def pid(self) -> int:
        """The worker's process id."""
        return self.process.pid

    def send_message(self, message: Any) -> None:
        """Send ``message`` to the worker; a dead worker is not an error here (receiving says so)."""
        with contextlib.suppress(OSError):
            self.conn.send(message)

    def wait_message(self, timeout: float = 0.0) -> bool:
        """Whether a message (or the end of the pipe) can be read within ``timeout`` seconds;
        :class:`WorkerGone` when the pipe was closed here."""
        try:
            return self.conn.poll(timeout)
        except (EOFError, OSError):  # OSError: closed (kill() from another thread)
            raise self.gone() from None

    def recv_message(self) -> Any:
        """The next message (blocking); :class:`WorkerGone` when the worker died."""
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            raise self.gone() from None

    def gone(self) -> WorkerGone:
        """What a dead worker is reported as: its exit (waited for up to 5 s) and last output."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)
        return WorkerGone(self.process.returncode, self.output_tail())

    def forget_output(self) -> None:
        """Empty the output file, so that a crash message quotes only what came after."""
        with contextlib.suppress(OSError, ValueError):
            self.output.truncate(0)  # the worker appends (O_APPEND), so it goes on writing at the start

    def output_tail(self, limit: int = OUTPUT_TAIL) -> str:
        """The last characters the worker wrote to fd 1 or 2 (since :meth:`forget_output`)."""
        return file_tail(self.output, limit)

    def alive(self) -> bool:
        """Whether the process still runs."""
        return self.process.poll() is None

    def close(self, grace: float = 5.0) -> None:
        """Wait up to ``grace`` s for the process to exit, kill it if it has not, release everything."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(grace)
        self.kill()

    def kill(self) -> None:
        """Kill the process now and release the pipe and the output file."""
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)
        self.conn.close()
        self.output.close()


def echo_main(pipe: ParentPipe) -> None:
    """Worker side of the smallest target: send back every message (the doctest above)."""
    while True:
        try:
            pipe.send(pipe.recv())
        except EOFError:
            return
