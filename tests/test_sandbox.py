"""Fault injection: a worker that segfaults, aborts or hangs is an outcome, not a dead caller."""

from __future__ import annotations

import os
import signal

import _faults  # tests/ is on sys.path under pytest's default import mode
import pytest

from explorer.outcome import Status
from explorer.sandbox import Sandbox, SandboxCrash, SandboxTimeout


@pytest.fixture
def sandbox():
    box = Sandbox()
    yield box
    box.close()


@pytest.mark.parametrize(
    ("fault", "status", "signal_name"),
    [
        (_faults.segfault, Status.CRASHED, "SIGSEGV"),
        (_faults.abort, Status.CRASHED, "SIGABRT"),
        (_faults.hang, Status.TIMEOUT, None),
    ],
)
def test_fault_becomes_outcome_and_worker_is_replaced(sandbox, fault, status, signal_name):
    first_pid = sandbox.call("faults", _faults.pid, timeout=60)
    outcome = sandbox.outcome("faults", fault, timeout=3)
    assert outcome.status is status
    if signal_name:
        assert signal_name in outcome.error
    else:
        assert "did not answer within 3 s" in outcome.error
    assert sandbox.replaced and sandbox.replaced[-1][0] == "faults"
    # the caller is alive and the next call gets a fresh worker
    assert sandbox.call("faults", _faults.pid, timeout=60) != first_pid
    assert sandbox.outcome("faults", _faults.fine, 7, timeout=60).status is Status.OK


def test_call_raises_typed_errors(sandbox):
    with pytest.raises(SandboxCrash) as crash:
        sandbox.call("faults", _faults.segfault, timeout=60)
    assert crash.value.exitcode == -signal.SIGSEGV
    with pytest.raises(SandboxTimeout):
        sandbox.call("faults", _faults.hang, timeout=1)


def test_worker_is_reused_and_exceptions_propagate(sandbox):
    pids = {sandbox.call("faults", _faults.pid, timeout=60) for _ in range(3)}
    assert len(pids) == 1 and os.getpid() not in pids
    with pytest.raises(ValueError, match="bad value inside the worker"):
        sandbox.call("faults", _faults.raise_value_error, timeout=60)
    assert sandbox.call("faults", _faults.pid, timeout=60) in pids  # an exception keeps the worker


def test_run_probes_a_backend_in_its_worker(sandbox):
    outcome = sandbox.run("numpy", "exp", "half")
    assert outcome.status is Status.OK
    assert outcome.result is not None and outcome.result.dtype.name == "float16"
    assert "numpy" in sandbox.workers()


def test_run_rejects_bad_names_before_starting_a_worker(sandbox):
    with pytest.raises(ValueError, match="Valid ops"):
        sandbox.run("numpy", "expp", "float16")
    with pytest.raises(ValueError, match="Valid names"):
        sandbox.run("numpy", "exp", "float17")
    with pytest.raises(ValueError, match="valid devices"):
        sandbox.run("numpy", "exp", "float16", device="TPU")
    with pytest.raises(ValueError, match="Valid backends"):
        sandbox.run("jax", "exp", "float16")
    with pytest.raises(ValueError, match="positive"):
        sandbox.call("x", _faults.pid, timeout=0)
    assert sandbox.workers() == {}
