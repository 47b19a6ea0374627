"""One training run in a worker process of its own, its records streamed back through a pipe.

The caller (a visitor's kernel) never imports TensorFlow: the worker runs
:func:`explorer.training.keras_loop.train` (or
:func:`explorer.training.fp8.train_fp8` for :data:`FP8_POLICY`) and sends, as they
happen, ``("record", record)`` for each ``StepRecord`` / ``EpochRecord`` /
``GradientHistogram`` (``Fp8StepRecord`` / ``Fp8EpochRecord``), ``("progress", done,
total)`` after each step, and at the end ``("result", result)`` or ``("error", text)``.
The records are the dataclasses of :mod:`explorer.training.config` and
:mod:`explorer.training.fp8`: module-level, so they pickle; none holds a framework
object.  The caller sends ``("cancel",)`` to stop the run between two steps.

The worker is a fresh interpreter (``subprocess.Popen`` of ``python -c``, fork+exec: nothing
of the caller's threads or TensorFlow state is inherited), started from the sandbox's
long-lived launcher thread (:mod:`explorer.runtime.sandbox`) because ``PR_SET_PDEATHSIG`` fires
when the *thread* that started a child ends.  It dies with its parent three ways:
``PR_SET_PDEATHSIG`` = SIGKILL (Linux), a thread that watches ``getppid()``, and the end of
file on its pipe (the parent's end closes when the parent process exits, however it exits).

Each worker limits TensorFlow's and OpenMP's thread pools to ``threads`` (the caller passes
its share of the cores), so several workers side by side do not each start a thread per core.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection, Pipe
from typing import IO, Any

from explorer.runtime.sandbox import _LAUNCHER, _die_with_parent, describe_exit, file_tail
from explorer.training.config import FP8_POLICY

#: how many characters of a dead worker's output its error quotes
OUTPUT_TAIL = 2000
#: gradient histograms a run takes (evenly spaced steps, the first and the last included)
DEFAULT_HISTOGRAMS = 12

_BOOTSTRAP = (
    "import sys\n"
    "from multiprocessing.connection import Connection\n"
    "conn = Connection(int(sys.argv[1]))\n"
    "sys.path[:] = conn.recv()\n"
    "from explorer.training.workers import worker_main\n"
    "worker_main(conn, int(sys.argv[2]))\n"
)


@dataclass(frozen=True)
class WorkerJob:
    """What one worker trains: a policy and the :class:`TrainingConfig` fields shared by a comparison
    (``model``, ``scenario``, ``epochs``, ``seed``, ``max_train_samples``...).  The fp8 run takes
    ``epochs``, ``seed``, ``batch_size`` and ``max_train_samples`` from them."""

    policy: str
    config: dict[str, Any] = field(default_factory=dict)
    #: histograms at this many evenly spaced steps (Keras policies; ignored when the config
    #: names its own ``histogram_steps``)
    histograms: int = DEFAULT_HISTOGRAMS


def histogram_steps(total: int, count: int) -> tuple[int, ...]:
    """``count`` evenly spaced steps from 0 to ``total - 1`` (both included), without repeats.

    >>> histogram_steps(110, 6)
    (0, 22, 44, 65, 87, 109)
    >>> histogram_steps(3, 12)
    (0, 1, 2)
    """
    if total <= 1 or count <= 1:
        return (0,)
    return tuple(sorted({round(i * (total - 1) / (count - 1)) for i in range(count)}))


# ---------------------------------------------------------------- worker side


def worker_main(conn: Connection, parent_pid: int) -> None:
    """The worker process: receive one :class:`WorkerJob`, train, stream, exit."""
    _die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in the caller's terminal is the caller's
    try:
        job = conn.recv()
    except (EOFError, OSError):
        os._exit(1)
    cancel = threading.Event()

    def listen() -> None:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):  # the parent is gone (or closed its end): stop now
                os._exit(1)
            if isinstance(message, tuple) and message[:1] == ("cancel",):
                cancel.set()

    threading.Thread(target=listen, name="px-training-worker-listen", daemon=True).start()
    send_lock = threading.Lock()

    def send(message: tuple[Any, ...]) -> None:
        with send_lock:
            try:
                conn.send(message)
            except OSError:
                os._exit(1)

    try:
        result = run_job(
            job,
            callback=lambda record: send(("record", record)),
            progress=lambda done, total: send(("progress", done, total)),
            cancel=cancel,
        )
    except Exception as exc:
        send(("error", f"{type(exc).__name__}: {exc}", "".join(traceback.format_exception(exc))))
    else:
        send(("result", result))
    os._exit(0)  # no interpreter teardown (TensorFlow's can take seconds)


def run_job(job: WorkerJob, *, callback: Any, progress: Any, cancel: threading.Event) -> Any:
    """Train ``job`` here (the worker calls this; tests may too) and return its result."""
    if not isinstance(job, WorkerJob):
        raise TypeError(f"job must be a WorkerJob, got {type(job).__name__}")
    if job.policy == FP8_POLICY:
        from explorer.training.fp8 import train_fp8

        keys = ("epochs", "seed", "batch_size", "max_train_samples")
        fields = {k: job.config[k] for k in keys if job.config.get(k) is not None}
        return train_fp8(scaling="delayed", callback=callback, cancel=cancel, progress=progress, **fields)
    from explorer.training.config import TrainingConfig
    from explorer.training.data import load_digits_data
    from explorer.training.keras_loop import train

    config = TrainingConfig(policy=job.policy, **job.config).validated()
    if "histogram_steps" not in job.config:
        n = len(load_digits_data(config.model).x_train)
        if config.max_train_samples is not None:
            n = min(n, config.max_train_samples)
        assert config.epochs is not None
        total = max(n // config.batch_size, 1) * config.epochs
        config = replace(config, histogram_steps=histogram_steps(total, job.histograms))
    return train(config, callback=callback, cancel=cancel, progress=progress)


# ---------------------------------------------------------------- caller side


class TrainingWorker:
    """A started worker process training one :class:`WorkerJob`.

    ``conn`` is the caller's end of the pipe (``multiprocessing.connection.wait`` on several
    workers' ``conn`` at once); :meth:`messages` reads what arrived.
    """

    def __init__(self, job: WorkerJob, threads: int = 1) -> None:
        self.job = job
        self.finished = False
        # unlinked at once: nothing is left behind; closed in close()
        self.output: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        fd = self.output.fileno()
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
        self.conn, child = Pipe()
        self.process: subprocess.Popen[bytes] = _LAUNCHER.run(lambda: self._start(child, max(1, threads)))
        with contextlib.suppress(OSError):  # a worker that died at once shows as EOF
            self.conn.send(list(sys.path))
            self.conn.send(job)

    def _start(self, child: Connection, threads: int) -> subprocess.Popen[bytes]:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        for name in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS"):
            env[name] = str(threads)
        try:
            return subprocess.Popen(
                [sys.executable, "-c", _BOOTSTRAP, str(child.fileno()), str(os.getpid())],
                pass_fds=(child.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=self.output,
                stderr=self.output,
                env=env,
            )
        finally:
            child.close()

    @property
    def pid(self) -> int:
        """The worker's process id."""
        return self.process.pid

    def messages(self) -> list[tuple[Any, ...]]:
        """Every message that arrived (without blocking); a dead worker's end of file becomes
        ``("error", "the worker died (...)", its last output)`` once, unless its result came."""
        out: list[tuple[Any, ...]] = []
        if self.finished:
            return out
        try:
            while self.conn.poll():
                message = self.conn.recv()
                out.append(message)
                if message[0] in ("result", "error"):
                    self.finished = True
                    return out
        except (EOFError, OSError):
            self.finished = True
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(5)
            out.append(
                ("error", f"the training worker died ({describe_exit(self.process.returncode)})", self.tail())
            )
        return out

    def cancel(self) -> None:
        """Ask the run to stop between two steps (its result then says ``cancelled``)."""
        with contextlib.suppress(OSError):
            self.conn.send(("cancel",))

    def tail(self) -> str:
        """The last characters the worker wrote to its stdout and stderr."""
        return file_tail(self.output, OUTPUT_TAIL)

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
