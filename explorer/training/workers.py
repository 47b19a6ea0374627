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

The worker is started, spoken to and killed through the runtime's one worker-process
protocol (:mod:`explorer.runtime.process`, shared with the probe sandboxes): a fresh
interpreter started from the long-lived launcher thread, dying with its parent
(``PR_SET_PDEATHSIG``, a thread watching ``getppid()``, the end of file on its pipe), its
output in a private file whose last characters a failed run quotes.

Each worker limits TensorFlow's and OpenMP's thread pools to ``threads`` (the caller passes
its share of the cores), so several workers side by side do not each start a thread per core.
"""

from __future__ import annotations

import os
import threading
import traceback
from dataclasses import dataclass, field, replace
from typing import Any

from explorer.runtime.process import ParentPipe, WorkerGone, WorkerProcess
from explorer.runtime.threads import start_daemon
from explorer.training.config import FP8_POLICY

#: gradient histograms a run takes (evenly spaced steps, the first and the last included)
DEFAULT_HISTOGRAMS = 12


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


def worker_main(pipe: ParentPipe) -> None:
    """The worker process: receive one :class:`WorkerJob`, train, stream, exit."""
    try:
        job = pipe.recv()
    except EOFError:
        os._exit(1)
    cancel = threading.Event()

    def listen() -> None:
        while True:
            try:
                message = pipe.recv()
            except EOFError:  # the parent is gone (or closed its end): stop now
                os._exit(1)
            if isinstance(message, tuple) and message[:1] == ("cancel",):
                cancel.set()

    start_daemon(listen, name="px-training-worker-listen")
    send = pipe.send  # from the training thread and the listener alike; the parent gone ends us
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


class TrainingWorker(WorkerProcess):
    """A started worker process training one :class:`WorkerJob`.

    ``conn`` is the caller's end of the pipe (``multiprocessing.connection.wait`` on several
    workers' ``conn`` at once); :meth:`messages` reads what arrived.  ``close(grace)`` waits
    for the process to exit before it kills it; ``kill()`` kills it at once.
    """

    def __init__(self, job: WorkerJob, threads: int = 1) -> None:
        threads = max(1, threads)
        env = dict(os.environ)
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        for name in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS"):
            env[name] = str(threads)
        super().__init__("explorer.training.workers:worker_main", env=env)
        self.job = job
        self.finished = False
        self.send_message(job)  # a worker that died at once shows as EOF

    def messages(self) -> list[tuple[Any, ...]]:
        """Every message that arrived (without blocking); a dead worker's end of file becomes
        ``("error", "the training worker died (...)", its last output)`` once, unless its result came."""
        out: list[tuple[Any, ...]] = []
        if self.finished:
            return out
        try:
            while self.wait_message():
                message = self.recv_message()
                out.append(message)
                if message[0] in ("result", "error"):
                    self.finished = True
                    return out
        except WorkerGone as gone:
            self.finished = True
            out.append(("error", f"the training worker died ({gone})", gone.output))
        return out

    def cancel(self) -> None:
        """Ask the run to stop between two steps (its result then says ``cancelled``)."""
        self.send_message(("cancel",))

    def tail(self) -> str:
        """The last characters the worker wrote to its stdout and stderr."""
        return self.output_tail()
