"""Fault injection: a worker that segfaults, aborts or hangs is an outcome, not a dead caller."""

from __future__ import annotations

import functools
import json
import math
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from explorer.outcome import Status
from explorer.runtime.sandbox import ItemResult, Sandbox, SandboxCrash, SandboxError, SandboxTimeout
from tests.support import faults

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


@pytest.fixture
def sandbox():
    box = Sandbox()
    yield box
    box.close()


@pytest.mark.parametrize(
    ("fault", "status", "signal_name"),
    [
        (faults.segfault, Status.CRASHED, "SIGSEGV"),
        (faults.abort, Status.CRASHED, "SIGABRT"),
        pytest.param(faults.hang, Status.TIMEOUT, None, marks=pytest.mark.slow),  # waits out a timeout
    ],
)
def test_fault_becomes_outcome_and_worker_is_replaced(sandbox, fault, status, signal_name):
    first_pid = sandbox.call("faults", faults.pid, timeout=60)
    outcome = sandbox.outcome("faults", fault, timeout=3)
    assert outcome.status is status
    if signal_name:
        assert signal_name in outcome.error
    else:
        assert "did not answer within 3 s" in outcome.error
    assert sandbox.replaced and sandbox.replaced[-1][0] == "faults"
    # the caller is alive and the next call gets a fresh worker
    assert sandbox.call("faults", faults.pid, timeout=60) != first_pid
    assert sandbox.outcome("faults", faults.fine, 7, timeout=60).status is Status.OK


def test_call_raises_typed_errors(sandbox):
    with pytest.raises(SandboxCrash) as crash:
        sandbox.call("faults", faults.segfault, timeout=60)
    assert crash.value.exitcode == -signal.SIGSEGV
    with pytest.raises(SandboxTimeout):
        sandbox.call("faults", faults.hang, timeout=1)


def test_worker_is_reused_and_exceptions_propagate(sandbox):
    pids = {sandbox.call("faults", faults.pid, timeout=60) for _ in range(3)}
    assert len(pids) == 1 and os.getpid() not in pids
    with pytest.raises(ValueError, match="bad value inside the worker"):
        sandbox.call("faults", faults.raise_value_error, timeout=60)
    assert sandbox.call("faults", faults.pid, timeout=60) in pids  # an exception keeps the worker


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
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
        sandbox.run("mxnet", "exp", "float16")
    with pytest.raises(ValueError, match="positive"):
        sandbox.call("x", faults.pid, timeout=0)
    assert sandbox.workers() == {}


# ------------------------------------------------------------------ Sandbox.map


@pytest.mark.slow
def test_map_hang_costs_only_its_item(sandbox):
    seen: list[ItemResult] = []
    start = time.monotonic()
    # 6 s per item: long enough for a fresh worker to answer at a load of 15 (2 s was not)
    results = sandbox.map("faults", faults.behave, ["a", "hang", "b", "c"], 6, on_result=seen.append)
    elapsed = time.monotonic() - start
    assert [r.index for r in results] == [0, 1, 2, 3]
    assert seen == results  # every result was reported, in order
    assert isinstance(results[1].error, SandboxTimeout) and results[1].error.timeout == 6
    assert [r.value[0] for r in (results[0], results[2], results[3])] == ["a", "b", "c"]
    assert results[0].value[1] != results[2].value[1] == results[3].value[1]  # the rest ran in a new worker
    assert sandbox.replaced == [("faults", str(results[1].error))]
    assert 6 <= elapsed < 60  # the hang cost its time limit, not the batch's (generous sanity bound)


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_map_crash_costs_only_its_item(sandbox):
    results = sandbox.map("faults", faults.behave, ["a", "segfault", "b"], 60)
    assert results[0].ok and results[2].ok and not results[1].ok
    assert isinstance(results[1].error, SandboxCrash) and "SIGSEGV" in str(results[1].error)
    assert results[0].value[1] != results[2].value[1]
    assert sandbox.workers() == {"faults": results[2].value[1]}


def test_map_exception_costs_its_item_and_keeps_the_worker(sandbox):
    results = sandbox.map("faults", faults.behave, ["a", "raise", "b"], 60)
    assert isinstance(results[1].error, ValueError)
    assert "bad value inside the worker" in str(results[1].error)
    assert results[0].value[1] == results[2].value[1]
    assert sandbox.replaced == []


def test_map_reports_each_result_while_the_batch_runs(sandbox, tmp_path):
    flag = tmp_path / "first result seen"

    def on_result(result: ItemResult) -> None:
        if result.index == 0:
            flag.touch()  # the second item waits for this file

    results = sandbox.map("faults", faults.behave, ["a", ("wait_for", str(flag))], 60, on_result=on_result)
    assert results[1].value[0] == ("found", str(flag))


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_map_setup_runs_in_every_worker_it_starts(sandbox):
    setup = functools.partial(faults.set_env, "PX_FAULT_MARK", "set up")
    results = sandbox.map("faults", faults.behave, ["a", "segfault", "b"], 60, setup=setup)
    assert results[0].value[2] == results[2].value[2] == "set up"
    assert results[0].value[1] != results[2].value[1]
    # a worker that is already running is used as it is
    assert sandbox.map("faults", faults.behave, ["c"], 60, setup=faults.segfault)[0].value[2] == "set up"


def test_map_failed_setup_fails_every_item(sandbox):
    results = sandbox.map("faults", faults.behave, ["a", "b"], 60, setup=faults.segfault)
    assert [type(r.error) for r in results] == [SandboxCrash, SandboxCrash]
    assert "during its setup" in str(results[0].error)
    assert sandbox.workers() == {}
    assert sandbox.map("faults", faults.behave, [], 60) == []


# ------------------------------------------------------------ answers match requests


@pytest.mark.slow
def test_interrupted_call_never_delivers_its_answer(sandbox, tmp_path):
    """The SIGINT is sent once the worker says it is inside the call (a file it creates), not after
    a fixed time, so a loaded machine cannot make the call end before the interrupt."""
    first_pid = sandbox.call("faults", faults.pid, timeout=60)
    mark = tmp_path / "inside-the-call"
    main = threading.main_thread().ident
    assert main is not None

    def interrupt_once_inside() -> None:
        deadline = time.monotonic() + 60
        while not mark.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        signal.pthread_kill(main, signal.SIGINT)

    interrupt = threading.Thread(target=interrupt_once_inside)
    interrupt.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            sandbox.call(
                "faults", faults.mark_then_sleep, str(mark), "the interrupted call's answer", 30.0, timeout=90
            )
    finally:
        interrupt.join()
    assert sandbox.call("faults", faults.echo, "its own answer", timeout=60) == "its own answer"
    assert sandbox.call("faults", faults.pid, timeout=60) != first_pid
    assert sandbox.replaced[-1] == ("faults", "call interrupted by KeyboardInterrupt")


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_map_stopped_by_its_callback_delivers_nothing_more(sandbox):
    seen: list[ItemResult] = []

    def stop(result: ItemResult) -> None:
        seen.append(result)
        raise RuntimeError("stop here")

    items = ["first", ("wait_for", "/nonexistent/px-never"), "third"]
    with pytest.raises(RuntimeError, match="stop here"):
        sandbox.map("faults", faults.behave, items, 60, on_result=stop)
    assert [r.index for r in seen] == [0]
    assert sandbox.call("faults", faults.echo, "its own answer", timeout=60) == "its own answer"
    assert sandbox.replaced[-1] == ("faults", "call interrupted by RuntimeError")


def test_a_reply_to_an_earlier_request_is_discarded():
    from explorer.runtime.call_worker import CallWorker

    worker = CallWorker("ids")
    try:
        echo = pickle.dumps(faults.echo)
        worker.send(echo, [pickle.dumps(("first",))])
        second = worker.send(echo, [pickle.dumps(("second",))])
        assert worker.receive(second, 60) == (0, "ok", "second")
    finally:
        worker.kill()


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -1, 0, True, "3", None])
def test_bad_timeout_is_rejected_before_anything_is_sent(sandbox, bad):
    pid = sandbox.call("faults", faults.pid, timeout=60)
    with pytest.raises(ValueError, match=f"got {bad!r}"):
        sandbox.call("faults", faults.echo, "never sent", timeout=bad)
    with pytest.raises(ValueError, match=f"got {bad!r}"):
        sandbox.map("faults", faults.echo, ["never sent"], bad)
    with pytest.raises(ValueError, match=f"got {bad!r}"):
        sandbox.run("numpy", "exp", "float16", timeout=bad)
    assert sandbox.call("faults", faults.echo, "its own answer", timeout=60) == "its own answer"
    assert sandbox.workers() == {"faults": pid}
    assert sandbox.replaced == []


def test_unpicklable_function_fails_before_anything_is_sent(sandbox):
    pid = sandbox.call("faults", faults.pid, timeout=60)
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        sandbox.call("faults", lambda: 1, timeout=60)
    assert sandbox.call("faults", faults.pid, timeout=60) == pid


# ------------------------------------------------------------------ leaks


@pytest.mark.parametrize("name", ["SystemExit", "KeyboardInterrupt", "GeneratorExit"])
def test_base_exception_in_the_worker_comes_back_as_an_error(sandbox, name):
    pid = sandbox.call("faults", faults.pid, timeout=60)
    with pytest.raises(SandboxError, match=name) as raised:
        sandbox.call("faults", faults.raise_base, name, timeout=60)
    assert type(raised.value) is SandboxError
    outcome = sandbox.outcome("faults", faults.raise_base, name, timeout=60)
    assert outcome.status is Status.ERROR and name in outcome.error
    assert sandbox.call("faults", faults.pid, timeout=60) == pid  # the worker lives on


def test_worker_output_stays_off_the_callers_stdout_and_stderr(sandbox, capfd):
    assert sandbox.call("faults", faults.chatter, "value", timeout=60) == "value"
    with pytest.raises(SandboxCrash, match="last words before the abort"):
        sandbox.call("faults", faults.say_then_abort, "last words before the abort", timeout=60)
    out, err = capfd.readouterr()
    assert "chatter" not in out + err
    assert "last words" not in out + err


def test_worker_stderr_can_be_shown_for_debugging(sandbox, capfd, monkeypatch):
    monkeypatch.setenv("PX_SANDBOX_STDERR", "1")
    sandbox.call("faults", faults.chatter, "value", timeout=60)
    out, err = capfd.readouterr()
    assert "chatter: fd 2" in err and "chatter: python stderr" in err
    assert "chatter" not in out


def _driver(code: str, **kwargs) -> subprocess.Popen:  # type: ignore[no-untyped-def]
    """A fresh Python process running ``code`` with the repository importable (explorer, tests.support)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env, text=True, **kwargs
    )


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_probes_that_print_or_exit_leave_the_callers_json_and_exit_status_alone():
    driver = _driver(
        """
        import json
        from tests.support import faults
        from explorer.runtime.probe import Probe, run_probes
        from explorer.runtime.sandbox import Sandbox

        box = Sandbox()
        box.call("numpy", faults.misbehave_in_backend, "numpy", {"log": "chatter", "sqrt": "exit"})
        probes = [Probe("numpy", op, "float16", "CPU", "eager") for op in ("exp", "log", "sqrt")]
        print(json.dumps(run_probes(probes, sandbox=box)))
        box.close()
        """,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = driver.communicate(timeout=300)
    assert driver.returncode == 0, err
    records = json.loads(out)  # nothing but the JSON on stdout
    assert [records[f"numpy|{op}|float16|CPU|eager"]["status"] for op in ("exp", "log", "sqrt")] == [
        "ok",
        "ok",
        "error",
    ]
    assert "SystemExit" in records["numpy|sqrt|float16|CPU|eager"]["error"]
    assert "chatter" not in err


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_kernels_json_is_valid_json(tmp_path):
    args = ["kernels", "--op", "exp", "--backend", "numpy", "--mode", "eager", "--json", "--no-cache"]
    driver = subprocess.run(
        [sys.executable, "-m", "explorer", *args],
        cwd=ROOT,
        env=dict(os.environ, PX_CACHE_DIR=str(tmp_path / "cache")),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert driver.returncode == 0, driver.stderr
    rows = json.loads(driver.stdout)["result"]
    assert rows and {r["backend"] for r in rows} == {"numpy"}


def _children(pid: int) -> set[int]:
    """Running (not zombie) processes whose parent is ``pid``."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_worker_dies_with_its_parent():
    driver = _driver(
        """
        from tests.support import faults
        from explorer.runtime.sandbox import Sandbox

        box = Sandbox()
        print(box.call("k", faults.pid, timeout=60), flush=True)
        box.call("k", faults.hang, timeout=600)
        """,
        stdout=subprocess.PIPE,
    )
    try:
        assert driver.stdout is not None
        worker = int(driver.stdout.readline())
        time.sleep(0.5)  # the hanging call has begun
        assert _children(driver.pid) == {worker}  # the worker, and no resource tracker
    finally:
        driver.kill()
        driver.wait()
        driver.stdout.close()  # type: ignore[union-attr]
    deadline = time.monotonic() + 15
    while _running(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(worker)


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_worker_outlives_the_thread_that_started_it(sandbox):
    pids: list[int] = []
    starter = threading.Thread(target=lambda: pids.append(sandbox.call("faults", faults.pid, timeout=60)))
    starter.start()
    starter.join()
    time.sleep(0.5)  # a parent-death signal tied to that thread would have fired by now
    assert sandbox.call("faults", faults.pid, timeout=60) == pids[0]
    assert sandbox.replaced == []


def slow_behave(item: object) -> object:
    """:func:`faults.behave` after a short sleep, so that every worker of a group gets items."""
    time.sleep(0.2)
    return faults.behave(item)


@pytest.mark.slow
def test_map_parallel_shares_items_among_workers_and_reports_in_the_calling_thread(sandbox):
    from explorer.runtime.sandbox import Group

    caller = threading.get_ident()
    seen: list[tuple[int, int, int]] = []

    def on_result(group: int, result: ItemResult) -> None:
        seen.append((group, result.index, threading.get_ident()))

    names = [f"x{n}" for n in range(8)]
    groups = [Group(("p1", "p2"), names), Group(("q",), ["a", "segfault", "b"])]
    out = sandbox.map_parallel(slow_behave, groups, 60, on_result=on_result, batch=1)
    assert [r.index for r in out[0]] == list(range(8)) and [r.value[0] for r in out[0]] == names
    assert len({r.value[1] for r in out[0]}) == 2  # both workers of the first group ran items
    assert out[1][0].ok and out[1][2].ok and isinstance(out[1][1].error, SandboxCrash)  # costs its item
    assert sorted((g, i) for g, i, _ in seen) == [(0, n) for n in range(8)] + [(1, n) for n in range(3)]
    assert {t for _, _, t in seen} == {caller}  # every result was delivered in the calling thread
