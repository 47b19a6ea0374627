"""Run many probes in one sandbox call, losing only the current probe to a crash or hang.

The worker side (:func:`run_probe_batch`) runs a list of probes one after the
other, appending one JSON line per event to a progress file: ``start`` before
each probe, ``done`` with its record after, and ``timeout`` from a watchdog
thread that ends the worker when one probe runs past its time limit.  The
parent side (:func:`run_probes`) reads that file when the worker dies, records
the probe it died on as ``crashed`` (or ``timeout``), and sends the rest to a
fresh worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import astuple, dataclass
from typing import Any

from explorer.outcome import Status

#: exit status the watchdog uses when a probe runs past its limit
TIMEOUT_EXIT = 86
#: environment variable with the XLA flags of the TensorFlow probe worker
XLA_FLAGS_ENV = "PX_PROBE_XLA_FLAGS"
#: availability only asks whether XLA compiles and runs an op, not how fast the code is:
#: LLVM optimisation off halves compile time (set PX_PROBE_XLA_FLAGS="" for TF's defaults;
#: an XLA_FLAGS already set in the environment is always kept)
DEFAULT_PROBE_XLA_FLAGS = "--xla_backend_optimization_level=0"


def worker_key(backend: str) -> str:
    """The sandbox worker that runs a backend's availability probes (TensorFlow gets its own,
    started with the probe XLA flags; the others share the backend's worker)."""
    return "kernels-tensorflow" if backend == "tensorflow" else backend


def init_worker(backend: str, xla_flags: str) -> list[str]:
    """Worker side: set the XLA flags (unless XLA_FLAGS is set) and import the framework."""
    if xla_flags and "XLA_FLAGS" not in os.environ:
        os.environ["XLA_FLAGS"] = xla_flags
    from explorer.sandbox import warm_backend

    return warm_backend(backend)


def warm_worker(box: Any, backend: str) -> str:
    """Start (once) the worker for ``backend``'s probes in sandbox ``box``; returns its key."""
    from explorer.sandbox import WARMUP_TIMEOUT

    key = worker_key(backend)
    if key not in box.workers():
        flags = os.environ.get(XLA_FLAGS_ENV, DEFAULT_PROBE_XLA_FLAGS)
        box.call(key, init_worker, backend, flags, timeout=WARMUP_TIMEOUT)
    return key


@dataclass(frozen=True, order=True)
class Probe:
    """One cell to run: backend × catalog op × dtype × device × mode."""

    backend: str
    op: str
    dtype: str
    device: str
    mode: str

    @property
    def key(self) -> str:
        """``"tensorflow|range|float16|CPU|eager"``: the cache key within one environment."""
        return "|".join(astuple(self))


def _append(path: str, event: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(event, default=str) + "\n")
        handle.flush()


def _watchdog(path: str, index: int, limit: float) -> threading.Timer:
    def expire() -> None:
        with contextlib.suppress(Exception):
            _append(path, {"event": "timeout", "index": index, "limit": limit})
        os._exit(TIMEOUT_EXIT)

    timer = threading.Timer(limit, expire)
    timer.daemon = True
    timer.start()
    return timer


def probe_record(
    probe: Probe,
    seed: int = 0,
    present: list[str] | None = None,
    kernel_places: list[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """Run one probe here and return its record; for a cell that did not run natively,
    the first candidate workaround that returns the requested dtype is attached."""
    from explorer.analysis.workarounds import candidates, first_working
    from explorer.backends import get_backend

    backend = get_backend(probe.backend)
    outcome = backend.run(probe.op, probe.dtype, device=probe.device, mode=probe.mode, seed=seed)
    record: dict[str, Any] = {
        "status": outcome.status.value,
        "error": outcome.error,
        "detail": outcome.detail,
        "ran_on": outcome.device,
        "result_dtype": None if outcome.result is None else str(outcome.result.dtype),
        "seconds": float(outcome.extra.get("seconds", 0.0)),
        "workaround": "",
        "workaround_how": "",
        "workaround_failures": "",
    }
    if outcome.status not in (Status.OK, Status.NOT_INSTALLED):
        if present is None:
            present = backend.devices() if backend.is_installed() else []
        options = candidates(
            probe.backend, probe.op, probe.dtype, probe.device, probe.mode, kernel_places or [], present
        )
        skipped = ""
        if probe.backend == "tensorflow" and not _tf_can_cast(probe.dtype, present[0] if present else "CPU"):
            options = [o for o in options if "then cast to" not in o[0]]
            skipped = f"TensorFlow cannot cast float32 to {probe.dtype} here, so computing wide cannot help"
        how, code, failures = first_working(options, probe.dtype)
        failures = "; ".join(f for f in (failures, skipped) if f)
        record.update(workaround=code, workaround_how=how, workaround_failures=failures)
    return record


_CASTS: dict[tuple[str, str], bool] = {}


def _tf_can_cast(dtype: str, device: str) -> bool:
    """Whether TensorFlow can cast float32 to ``dtype`` on ``device`` (memoised per process)."""
    key = (dtype, device)
    if key not in _CASTS:
        from explorer.backends.tensorflow_backend import import_tensorflow

        tf = import_tensorflow()
        try:
            with tf.device(f"/{device}:0"):
                tf.cast(tf.constant([1.0], tf.float32), tf.dtypes.as_dtype(dtype)).numpy()
            _CASTS[key] = True
        except Exception:
            _CASTS[key] = False
    return _CASTS[key]


def run_probe_batch(
    probes: list[Probe],
    progress_path: str,
    probe_timeout: float,
    seed: int = 0,
    places: dict[str, list[tuple[str, str]]] | None = None,
) -> list[dict[str, Any]]:
    """Worker side: run ``probes`` in order, logging each to ``progress_path``.

    ``places`` maps ``probe.key`` to the ``(device, mode)`` pairs where the registry has
    a kernel (used to suggest moving the op there).  A probe past ``probe_timeout``
    seconds ends this process (after logging ``timeout``).
    """
    from explorer.backends import get_backend

    present_by_backend: dict[str, list[str]] = {}
    records = []
    if any(p.backend == "tensorflow" for p in probes):
        from explorer.backends.tensorflow_backend import import_tensorflow

        import_tensorflow().get_logger().setLevel("ERROR")  # no retracing chatter per probe
    for index, probe in enumerate(probes):
        if probe.backend not in present_by_backend:
            b = get_backend(probe.backend)
            present_by_backend[probe.backend] = b.devices() if b.is_installed() else []
        _append(progress_path, {"event": "start", "index": index})
        timer = _watchdog(progress_path, index, probe_timeout)
        try:
            record = probe_record(
                probe, seed, present_by_backend[probe.backend], (places or {}).get(probe.key)
            )
        finally:
            timer.cancel()
        _append(progress_path, {"event": "done", "index": index, "record": record})
        records.append(record)
    return records


def _read_progress(path: str) -> tuple[dict[int, dict[str, Any]], set[int]]:
    done: dict[int, dict[str, Any]] = {}
    timed_out: set[int] = set()
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue  # a line cut short by the crash
                if event.get("event") == "done":
                    done[int(event["index"])] = event["record"]
                elif event.get("event") == "timeout":
                    timed_out.add(int(event["index"]))
    except OSError:
        pass
    return done, timed_out


def failure_record(status: Status, error: str) -> dict[str, Any]:
    """The record of a probe that did not run: its worker died or hung, or its backend is missing."""
    return {
        "status": status.value,
        "error": error,
        "detail": "",
        "ran_on": None,
        "result_dtype": None,
        "seconds": 0.0,
        "workaround": "",
        "workaround_how": "",
        "workaround_failures": "",
    }


def run_probes(
    probes: Iterable[Probe],
    probe_timeout: float = 60.0,
    chunk: int = 40,
    seed: int = 0,
    places: dict[str, list[tuple[str, str]]] | None = None,
    on_progress: Callable[[int], None] | None = None,
    sandbox: Any = None,
) -> dict[str, dict[str, Any]]:
    """Run probes in their backends' sandbox workers, in chunks; returns records by probe key.

    A crash or hang costs only the probe it happened in (recorded as ``crashed`` or
    ``timeout``); the rest of its chunk goes to a fresh worker.
    """
    from explorer.sandbox import SandboxCrash, SandboxTimeout, default_sandbox

    if probe_timeout <= 0:
        raise ValueError(f"probe_timeout must be positive, got {probe_timeout}")
    box = sandbox if sandbox is not None else default_sandbox()
    results: dict[str, dict[str, Any]] = {}
    by_backend: dict[str, list[Probe]] = {}
    for p in probes:
        by_backend.setdefault(p.backend, []).append(p)
    for backend, todo in by_backend.items():
        queue = list(todo)
        while queue:
            batch, queue = queue[:chunk], queue[chunk:]
            try:
                key = warm_worker(box, backend)
            except (SandboxCrash, SandboxTimeout) as exc:
                for p in batch + queue:
                    results[p.key] = failure_record(
                        Status.CRASHED, f"starting the {backend} worker failed: {exc}"
                    )
                if on_progress:
                    on_progress(len(batch) + len(queue))
                break
            fd, path = tempfile.mkstemp(prefix="px-probe-", suffix=".jsonl")
            os.close(fd)
            start = time.perf_counter()
            try:
                records = box.call(
                    key,
                    run_probe_batch,
                    batch,
                    path,
                    probe_timeout,
                    seed,
                    places,
                    timeout=probe_timeout * len(batch) + 30.0,
                )
                for p, r in zip(batch, records, strict=True):
                    results[p.key] = r
                if on_progress:
                    on_progress(len(batch))
            except (SandboxCrash, SandboxTimeout) as exc:
                done, timed_out = _read_progress(path)
                for i, r in done.items():
                    results[batch[i].key] = r
                lost = next(i for i in range(len(batch)) if i not in done)
                if lost in timed_out or isinstance(exc, SandboxTimeout):
                    elapsed = time.perf_counter() - start
                    results[batch[lost].key] = failure_record(
                        Status.TIMEOUT,
                        f"the probe did not finish within {probe_timeout:g} s "
                        f"(batch ran {elapsed:.1f} s); its worker was replaced",
                    )
                else:
                    results[batch[lost].key] = failure_record(Status.CRASHED, str(exc))
                queue = batch[lost + 1 :] + queue
                if on_progress:
                    on_progress(len(done) + 1)
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(path)
    return results
