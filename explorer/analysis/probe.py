"""Run availability probes in their backends' sandbox workers, one record per probe.

:func:`run_probes` sends each backend's probes to its worker as one batch
(:meth:`explorer.sandbox.Sandbox.map`): a crash or hang costs only the probe it
happened in (recorded as ``crashed`` or ``timeout``), and the rest go on in a
fresh worker.  Each record is reported as soon as it arrives.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from dataclasses import astuple, dataclass
from typing import TYPE_CHECKING, Any

from explorer.outcome import Status

if TYPE_CHECKING:
    from explorer.sandbox import ItemResult, Sandbox
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

    devices = warm_backend(backend)
    if backend == "tensorflow" and devices:
        from explorer.backends.tensorflow_backend import import_tensorflow

        import_tensorflow().get_logger().setLevel("ERROR")  # no retracing chatter per probe
    return devices


def _worker_setup(backend: str) -> functools.partial[list[str]]:
    """What a fresh worker for ``backend``'s probes runs first: :func:`init_worker` with the probe flags."""
    return functools.partial(init_worker, backend, os.environ.get(XLA_FLAGS_ENV, DEFAULT_PROBE_XLA_FLAGS))


def warm_worker(box: Sandbox, backend: str) -> str:
    """Start (once) the worker for ``backend``'s probes in sandbox ``box``; returns its key."""
    from explorer.sandbox import WARMUP_TIMEOUT

    key = worker_key(backend)
    if key not in box.workers():
        box.call(key, _worker_setup(backend), timeout=WARMUP_TIMEOUT)
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


_PRESENT: dict[str, list[str]] = {}


def probe_in_worker(probe: Probe, seed: int, places: dict[str, list[tuple[str, str]]]) -> dict[str, Any]:
    """Worker side: :func:`probe_record` for one probe; ``places`` maps ``probe.key`` to the
    ``(device, mode)`` pairs where the registry has a kernel (to suggest moving the op there)."""
    from explorer.backends import get_backend

    if probe.backend not in _PRESENT:
        backend = get_backend(probe.backend)
        _PRESENT[probe.backend] = backend.devices() if backend.is_installed() else []
    return probe_record(probe, seed, _PRESENT[probe.backend], places.get(probe.key))


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
    seed: int = 0,
    places: dict[str, list[tuple[str, str]]] | None = None,
    on_progress: Callable[[int], None] | None = None,
    sandbox: Sandbox | None = None,
    on_record: Callable[[str, dict[str, Any]], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Run probes in their backends' sandbox workers; returns records by probe key.

    Each probe has ``probe_timeout`` seconds.  A crash or hang costs only the probe it
    happened in (recorded as ``crashed`` or ``timeout``); the rest go on in a fresh
    worker.  As each record arrives, ``on_record(key, record)`` is called with it and
    ``on_progress(1)``.

    >>> records = run_probes([Probe("numpy", "exp", "float16", "CPU", "eager")])
    >>> records["numpy|exp|float16|CPU|eager"]["status"]
    'ok'
    """
    from explorer.sandbox import check_timeout, default_sandbox

    probe_timeout = check_timeout(probe_timeout, "probe_timeout")
    box = sandbox if sandbox is not None else default_sandbox()
    results: dict[str, dict[str, Any]] = {}
    by_backend: dict[str, list[Probe]] = {}
    for p in probes:
        by_backend.setdefault(p.backend, []).append(p)
    for backend, todo in by_backend.items():

        def deliver(result: ItemResult, todo: list[Probe] = todo) -> None:
            key = todo[result.index].key
            results[key] = _record_of(result, probe_timeout)
            if on_record is not None:
                on_record(key, results[key])
            if on_progress is not None:
                on_progress(1)

        box.map(
            worker_key(backend),
            functools.partial(probe_in_worker, seed=seed, places=_places_of(todo, places or {})),
            todo,
            probe_timeout,
            on_result=deliver,
            setup=_worker_setup(backend),
        )
    return results


def _places_of(
    probes: list[Probe], places: dict[str, list[tuple[str, str]]]
) -> dict[str, list[tuple[str, str]]]:
    """The part of ``places`` that concerns ``probes`` (what their worker is sent)."""
    return {p.key: places[p.key] for p in probes if p.key in places}


def _record_of(result: ItemResult, probe_timeout: float) -> dict[str, Any]:
    """The record for one probe's result: its own, or a failure record saying what went wrong."""
    from explorer.sandbox import SandboxCrash, SandboxTimeout

    error = result.error
    if error is None:
        record: dict[str, Any] = result.value
        return record
    if isinstance(error, SandboxTimeout) and not error.during:
        return failure_record(
            Status.TIMEOUT, f"the probe did not finish within {probe_timeout:g} s; its worker was replaced"
        )
    if isinstance(error, SandboxTimeout):  # the worker's setup (the framework import) hung
        return failure_record(Status.TIMEOUT, str(error))
    if isinstance(error, SandboxCrash):
        return failure_record(Status.CRASHED, str(error))
    notes = "".join(f"\n{note}" for note in getattr(error, "__notes__", []))  # the worker's traceback
    return failure_record(Status.ERROR, f"{type(error).__name__}: {error}{notes}")
