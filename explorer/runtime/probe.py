"""Run availability probes in their backends' sandbox workers, one record per probe.

:func:`run_probes` sends each backend's probes to its worker as one batch
(:meth:`explorer.runtime.sandbox.Sandbox.map`): a crash or hang costs only the probe it
happened in (recorded as ``crashed`` or ``timeout``), and the rest go on in a
fresh worker.  Each record is reported as soon as it arrives.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from explorer.outcome import Phase, Status
from explorer.runtime.worker_slots import SlottedSandbox

if TYPE_CHECKING:
    from explorer.runtime.sandbox import ItemResult, Sandbox
#: environment variable with the XLA flags of the probe workers
XLA_FLAGS_ENV = "PX_PROBE_XLA_FLAGS"
#: availability only asks whether XLA compiles and runs an op, not how fast the code is: LLVM
#: optimisation off, and XLA:CPU's elemental emitters instead of its fusion emitters (each cell
#: is compiled once, so compile time is most of a JAX probe and of TensorFlow's XLA workarounds).
#: ``benchmarks/bench_catalog_sweep.py --prove-flags jax`` probes every JAX cell under JAX's
#: default flags and under these (XLA cells compiled and run), ``--prove-flags tensorflow
#: --as-probed`` every TensorFlow cell under ``--xla_backend_optimization_level=0`` alone and under
#: these, and each prints every record that differs: none did (jax 0.10.2, TensorFlow 2.21).
#: Set PX_PROBE_XLA_FLAGS="" for the frameworks' defaults; an XLA_FLAGS already set in the
#: environment is always kept.
DEFAULT_PROBE_XLA_FLAGS = "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"


#: environment variable: set to 1 to let the TensorFlow probe workers import Keras
KERAS_ENV = "PX_PROBE_KERAS"
#: environment variable: how many workers run TensorFlow's probes, and JAX's (default: see probe_workers)
PROBE_WORKERS_ENV = "PX_PROBE_WORKERS"
#: environment variable: set to 0 to stop XLA probes after lowering to HLO (faster, and not
#: the same answer everywhere: see :data:`EXECUTE_XLA`)
EXECUTE_XLA_ENV = "PX_PROBE_XLA_EXECUTE"
#: whether XLA probes compile and run (True, the default) or stop after lowering
#: (``$PX_PROBE_XLA_EXECUTE=0``).  Lowering alone cannot see a result that is wrong when
#: run, nor a lowering that XLA then cannot compile: ``benchmarks/bench_catalog_sweep.py
#: --prove-lowering`` (TensorFlow 2.21, CPU) finds svd in float16 lowering (``ok``) and
#: returning NaN when compiled and run (``wrong_result``), and ``--prove-flags jax`` finds 20
#: of JAX's 2,560 cells differ (jax 0.10.2: ``chlo.erfc`` and ``chlo.bessel_i1e`` lower in
#: float8 and float4 but do not compile; sigmoid and silu in float8_e4m3b11fnuz run silently
#: wrong).  So every XLA probe compiles and runs.
EXECUTE_XLA = os.environ.get(EXECUTE_XLA_ENV, "1") != "0"
#: backends whose probes run in workers of their own, started with the probe XLA flags
#: (the others share the backend's worker)
OWN_PROBE_WORKERS = ("tensorflow", "jax")


def worker_key(backend: str) -> str:
    """The sandbox worker that runs a backend's availability probes (TensorFlow and JAX get their
    own, started with the probe XLA flags; the others share the backend's worker).

    >>> worker_key("jax"), worker_key("numpy")
    ('kernels-jax', 'numpy')
    """
    return f"kernels-{backend}" if backend in OWN_PROBE_WORKERS else backend


def probe_xla_flags() -> str:
    """The XLA flags the probe workers start with (unless XLA_FLAGS is set):
    ``$PX_PROBE_XLA_FLAGS``, else :data:`DEFAULT_PROBE_XLA_FLAGS`."""
    return os.environ.get(XLA_FLAGS_ENV, DEFAULT_PROBE_XLA_FLAGS)


def init_worker(backend: str, xla_flags: str) -> list[str]:
    """Worker side: set the XLA flags (unless XLA_FLAGS is set) and import the framework.

    Several TensorFlow probe workers may share a GPU: each takes GPU memory as it needs it
    (``TF_FORCE_GPU_ALLOW_GROWTH``, unless set) instead of all of it at start."""
    if xla_flags and "XLA_FLAGS" not in os.environ:
        os.environ["XLA_FLAGS"] = xla_flags
    if backend == "tensorflow":
        os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")
        if os.environ.get(KERAS_ENV) != "1":
            _without_keras()
    from explorer.runtime.sandbox import warm_backend

    devices = warm_backend(backend)
    if backend == "tensorflow" and devices:
        from explorer.backends.tensorflow_backend import import_tensorflow

        import_tensorflow().get_logger().setLevel("ERROR")  # no retracing chatter per probe
    return devices


def _without_keras() -> None:
    """Keep TensorFlow from importing Keras in this process (it does so eagerly at import, which
    takes about as long as the rest of TensorFlow): ``keras`` becomes an empty module.  No
    catalog op and no workaround uses Keras; ``tf.keras`` does not work in this process."""
    import sys
    import types

    if "keras" not in sys.modules and "tensorflow" not in sys.modules:
        stub = types.ModuleType("keras", "not loaded in the probe worker (see explorer.runtime.probe)")
        stub.__spec__ = None
        sys.modules["keras"] = stub


def _worker_setup(backend: str) -> functools.partial[list[str]]:
    """What a fresh worker for ``backend``'s probes runs first: :func:`init_worker` with the probe flags."""
    return functools.partial(init_worker, backend, probe_xla_flags())


def warm_worker(box: Sandbox, backend: str) -> str:
    """Start (once) the worker for ``backend``'s probes in sandbox ``box``; returns its key."""
    from explorer.runtime.sandbox import WARMUP_TIMEOUT

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
        return f"{self.backend}|{self.op}|{self.dtype}|{self.device}|{self.mode}"


def probe_record(
    probe: Probe,
    seed: int = 0,
    present: list[str] | None = None,
    kernel_places: list[tuple[str, str]] | None = None,
    execute: bool | None = None,
) -> dict[str, Any]:
    """Run one probe here and return its record; for a cell that did not run natively,
    the first candidate workaround that returns the requested dtype is attached.

    ``execute``: whether an XLA probe compiles and runs (True) or stops after lowering
    (False); None: :data:`EXECUTE_XLA`."""
    from explorer.backends import get_backend
    from explorer.ops import get_op
    from explorer.runtime.workaround_exec import first_working
    from explorer.runtime.workarounds import candidates

    backend = get_backend(probe.backend)
    if execute is None:
        execute = EXECUTE_XLA
    outcome = backend.run(
        probe.op, probe.dtype, device=probe.device, mode=probe.mode, seed=seed, execute=execute
    )
    record: dict[str, Any] = {
        "status": outcome.status.value,
        "error": outcome.error,
        "detail": outcome.detail,
        "ran_on": outcome.device,
        "result_dtype": outcome.extra.get("result_dtype")
        if outcome.result is None
        else str(outcome.result.dtype),
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
        the_op = get_op(probe.op)
        how, code, failures = first_working(
            options, probe.dtype if the_op.float_output else None, finite=_reference_finite(probe.op, seed)
        )
        failures = "; ".join(f for f in (failures, skipped) if f)
        record.update(workaround=code, workaround_how=how, workaround_failures=failures)
    return with_phase(record, outcome.phase.value)


@functools.cache
def _reference_finite(op_name: str, seed: int) -> bool:
    """Whether the op's float64 reference is finite on its probe inputs (once per op and seed:
    neither depends on the probe's dtype or device)."""
    from explorer.ops import get_op

    op = get_op(op_name)
    with np.errstate(all="ignore"):
        try:
            values = np.asarray(op.reference(*op.inputs(seed)), dtype=np.float64)
        except (TypeError, ValueError, ArithmeticError):
            return False
    return bool(np.all(np.isfinite(values)))


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


def machine_conditions() -> str:
    """The machine's state when a run timed out, as words: `` at load 16.2 on 2 cores``.

    >>> machine_conditions().startswith(" at load ")
    True
    """
    cores = os.cpu_count() or 1
    return f" at load {os.getloadavg()[0]:.1f} on {cores} core{'s' if cores > 1 else ''}"


def failure_record(status: Status, error: str) -> dict[str, Any]:
    """The record of a probe that did not run: its worker died or hung, or its backend is missing."""
    record = {
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
    return with_phase(record, Phase.UNKNOWN.value)


def with_phase(record: dict[str, Any], phase: str) -> dict[str, Any]:
    """``record`` with its phase (a :class:`~explorer.outcome.Phase` value).

    >>> with_phase({"status": "error"}, "xla_compile")
    {'status': 'error', 'phase': 'xla_compile'}
    """
    return {**record, "phase": phase}


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

    Every backend's probes run at the same time, TensorFlow's shared among
    :func:`probe_workers` workers.  Each probe has ``probe_timeout`` seconds.  A crash or
    hang costs only the probe it happened in (recorded as ``crashed`` or ``timeout``); the
    rest go on in a fresh worker.  As each record arrives, ``on_record(key, record)`` is
    called with it and ``on_progress(1)`` (in the calling thread).

    >>> records = run_probes([Probe("numpy", "exp", "float16", "CPU", "eager")])
    >>> records["numpy|exp|float16|CPU|eager"]["status"]
    'ok'
    """
    from explorer.runtime.sandbox import Group, check_timeout, default_sandbox

    probe_timeout = check_timeout(probe_timeout, "probe_timeout")
    box = sandbox if sandbox is not None else default_sandbox()
    places = places or {}
    by_backend: dict[str, list[Probe]] = {}
    for p in probes:
        by_backend.setdefault(p.backend, []).append(p)
    todo = list(by_backend.values())
    groups = [
        Group(worker_keys(backend), [(p, places.get(p.key)) for p in group], _worker_setup(backend))
        for backend, group in by_backend.items()
    ]
    results: dict[str, dict[str, Any]] = {}

    def deliver(group: int, result: ItemResult) -> None:
        key = todo[group][result.index].key
        results[key] = _record_of(result, probe_timeout)
        if on_record is not None:
            on_record(key, results[key])
        if on_progress is not None:
            on_progress(1)

    box.map_parallel(functools.partial(probe_item, seed=seed), groups, probe_timeout, on_result=deliver)
    return results


#: seconds the app's probe workers may stay idle before they are stopped (their memory given back)
APP_PROBES_IDLE_RELEASE_S = 120.0
_APP_PROBES = SlottedSandbox(APP_PROBES_IDLE_RELEASE_S)


def app_probe_sandbox() -> SlottedSandbox:
    """The sandbox of a kernel's "Probe now" runs and of the workarounds a pasted error gets
    (:mod:`explorer.queries.diagnose`): its workers live only while it holds one of the
    machine's worker slots (:func:`~explorer.runtime.worker_slots.machine_slots`), so the
    visitors of a workshop server together run at most that many such sandboxes at once; they
    are stopped after :data:`APP_PROBES_IDLE_RELEASE_S` idle.  (``precision-explorer kernels``
    probes in the process-wide sandbox.)"""
    return _APP_PROBES


def probe_workers(backend: str) -> int:
    """How many workers run ``backend``'s probes: for TensorFlow and JAX ``$PX_PROBE_WORKERS``,
    else as many as there are CPU cores, at most 2 (one TensorFlow worker needs ~0.7 GB); one for
    the others."""
    if backend not in OWN_PROBE_WORKERS:
        return 1
    value = os.environ.get(PROBE_WORKERS_ENV, "")
    if value.strip().isdigit() and int(value) >= 1:
        return int(value)
    return max(1, min(2, os.cpu_count() or 1))


def worker_keys(backend: str) -> tuple[str, ...]:
    """The sandbox workers that share ``backend``'s probes (the first is :func:`worker_key`).

    >>> worker_keys("numpy")
    ('numpy',)
    """
    first = worker_key(backend)
    return (first, *(f"{first}-{n}" for n in range(2, probe_workers(backend) + 1)))


def probe_item(item: tuple[Probe, list[tuple[str, str]] | None], seed: int) -> dict[str, Any]:
    """Worker side: :func:`probe_in_worker` for one ``(probe, kernel places)`` item."""
    probe, places = item
    return probe_in_worker(probe, seed, {probe.key: places} if places is not None else {})


def _record_of(result: ItemResult, probe_timeout: float) -> dict[str, Any]:
    """The record for one probe's result: its own, or a failure record saying what went wrong."""
    from explorer.runtime.sandbox import SandboxCrash, SandboxTimeout

    error = result.error
    if error is None:
        record: dict[str, Any] = result.value
        return record
    if isinstance(error, SandboxTimeout) and not error.during:
        return failure_record(
            Status.TIMEOUT,
            f"the probe did not finish within {probe_timeout:g} s{machine_conditions()}; its worker was "
            "replaced (a condition of this run, not the op's status: it is run again on the next ask; "
            "a longer --timeout gives it more time)",
        )
    if isinstance(error, SandboxTimeout):  # the worker's setup (the framework import) hung
        return failure_record(Status.TIMEOUT, f"{error}{machine_conditions()}")
    if isinstance(error, SandboxCrash):
        return failure_record(Status.CRASHED, str(error))
    notes = "".join(f"\n{note}" for note in getattr(error, "__notes__", []))  # the worker's traceback
    return failure_record(Status.ERROR, f"{type(error).__name__}: {error}{notes}")
