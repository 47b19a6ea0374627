"""The machine-wide training queue and the training worker processes, observed from outside:
several real processes (multiprocessing 'spawn'), their start/end times in a log file, /proc."""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from explorer.training.queue import (
    Place,
    TrainingQueue,
    check_slots,
    configured_slots,
    default_slots,
    process_start_time,
)
from tests.support.processes import wait_until

ROOT = Path(__file__).resolve().parents[1]
SPAWN = multiprocessing.get_context("spawn")


# ------------------------------------------------------------------ helpers run in spawned processes


def _log(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def _hold(directory: str, slots: int, label: str, log: str, seconds: float) -> None:
    """Enter the queue, wait for a slot, log start and end (monotonic ns, system-wide), leave."""
    queue = TrainingQueue(Path(directory), slots=slots)
    ticket = queue.enter(label)
    _log(log, f"entered {label} {time.monotonic_ns()}")
    held = queue.wait_for_slot(ticket, poll=0.02)
    assert held is not None
    _log(log, f"start {label} {time.monotonic_ns()}")
    time.sleep(seconds)
    _log(log, f"end {label} {time.monotonic_ns()}")
    queue.leave(held)
    queue.close()


def _hold_forever(directory: str, slots: int, log: str) -> None:
    queue = TrainingQueue(Path(directory), slots=slots)
    ticket = queue.wait_for_slot(queue.enter("forever"), poll=0.02)
    assert ticket is not None
    _log(log, f"holding {os.getpid()}")
    time.sleep(3600)


def _events(log: Path) -> list[tuple[str, str, int]]:
    rows = [line.split() for line in log.read_text().splitlines() if line.strip()]
    return [(kind, label, int(ns)) for kind, label, ns in rows]


def _max_overlap(events: list[tuple[str, str, int]]) -> int:
    """The most holders between their start and end at any moment (ends sort before starts at a tie)."""
    timeline = sorted((ns, 0 if kind == "end" else 1) for kind, _, ns in events if kind in ("start", "end"))
    now = peak = 0
    for _, is_start in timeline:
        now += 1 if is_start else -1
        peak = max(peak, now)
    return peak


def _gone(pid: int) -> bool:
    """Not in /proc, or a zombie (read /proc directly, not through the code under test)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


# ------------------------------------------------------------------ the queue


@pytest.mark.slow
@pytest.mark.parametrize("slots", [1, 2])
def test_at_most_k_processes_hold_a_slot_at_once(tmp_path: Path, slots: int) -> None:
    log = tmp_path / "log"
    holders = [
        SPAWN.Process(target=_hold, args=(str(tmp_path), slots, f"h{i}", str(log), 0.4)) for i in range(5)
    ]
    for p in holders:
        p.start()
    for p in holders:
        p.join(300)
        assert p.exitcode == 0
    events = _events(log)
    assert sorted(label for kind, label, _ in events if kind == "end") == [f"h{i}" for i in range(5)]
    assert _max_overlap(events) <= slots
    assert TrainingQueue(tmp_path, slots=slots).tickets() == []


@pytest.mark.slow
def test_tickets_start_first_come_first_served(tmp_path: Path) -> None:
    queue = TrainingQueue(tmp_path, slots=1)
    blocker = queue.enter("blocker")
    assert queue.try_start(blocker).state == "running"
    log = tmp_path / "log"
    order = [f"v{i}" for i in range(4)]
    holders = []
    for i, label in enumerate(order):  # each enters only after the previous one's ticket is in
        p = SPAWN.Process(target=_hold, args=(str(tmp_path), 1, label, str(log), 0.05))
        p.start()
        holders.append(p)
        wait_until(lambda n=i: len(queue.tickets()) == n + 2, what=f"{label}'s ticket")
    third = queue.tickets()[3]
    assert third.label == "v2" and third.state == "waiting"
    queue.leave(blocker)
    for p in holders:
        p.join(300)
        assert p.exitcode == 0
    starts = [label for kind, label, _ in sorted(_events(log), key=lambda e: e[2]) if kind == "start"]
    assert starts == order
    assert _max_overlap(_events(log)) == 1


@pytest.mark.slow
def test_a_sigkilled_holder_frees_its_slot(tmp_path: Path) -> None:
    log = tmp_path / "log"
    holder = SPAWN.Process(target=_hold_forever, args=(str(tmp_path), 1, str(log)))
    holder.start()
    wait_until(lambda: log.exists() and "holding" in log.read_text(), what="the holder")
    queue = TrainingQueue(tmp_path, slots=1)
    mine = queue.enter("next")
    place = queue.try_start(mine)
    assert (place.state, place.running, place.ahead) == ("waiting", 1, 0)
    assert [t.owner_pid for t in queue.tickets()] == [holder.pid, os.getpid()]
    os.kill(holder.pid, signal.SIGKILL)
    holder.join(60)
    assert _gone(holder.pid)
    assert queue.try_start(mine).state == "running"  # the dead holder's ticket was removed
    assert [t.owner_pid for t in queue.tickets()] == [os.getpid()]


def test_a_recorded_worker_that_died_frees_the_slot(tmp_path: Path) -> None:
    queue = TrainingQueue(tmp_path, slots=1)
    ticket = queue.enter("run")
    assert queue.try_start(ticket).state == "running"
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    queue.set_worker(ticket, worker.pid)
    assert [t.worker_pid for t in queue.tickets()] == [worker.pid]
    worker.kill()
    worker.wait()
    assert queue.tickets() == []


def test_cancel_while_waiting_removes_the_ticket(tmp_path: Path) -> None:
    queue = TrainingQueue(tmp_path, slots=1)
    holder = queue.enter("holder")
    assert queue.try_start(holder).state == "running"
    cancel = threading.Event()
    places: list[Place] = []
    got: list[Any] = []
    waiter = threading.Thread(
        target=lambda: got.append(
            TrainingQueue(tmp_path, slots=1).wait_for_slot(
                queue.enter("waiter"), cancel, places.append, poll=0.02
            )
        )
    )
    waiter.start()
    wait_until(lambda: bool(places), what="a place")
    assert places[0].describe() == "waiting: 1st in the queue, 1 run training (1 slot)"
    cancel.set()
    waiter.join(60)
    assert got == [None]
    assert [t.label for t in queue.tickets()] == ["holder"]


def test_place_names_the_rank_and_the_runs_training(tmp_path: Path) -> None:
    queue = TrainingQueue(tmp_path, slots=2)
    tickets = [queue.enter(f"t{i}") for i in range(5)]
    places = queue.try_start_many(tickets)
    assert [p.state for p in places] == ["running", "running", "waiting", "waiting", "waiting"]
    assert places[4].describe() == "waiting: 3rd in the queue, 2 runs training (2 slots)"
    queue.leave(tickets[0])
    assert queue.place(tickets[4]) == Place("waiting", 2, 1, 2)
    assert queue.try_start(tickets[4]).state == "waiting"  # t2 and t3 came first
    assert queue.try_start(tickets[2]).state == "running"


def test_slot_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    assert configured_slots({"PX_TRAINING_SLOTS": "3"}) == 3
    assert configured_slots({}) == default_slots() == max(3, len(os.sched_getaffinity(0)) // 2)
    for bad in ("0", "-1", "two", "1.5", "257", "١"):
        with pytest.raises(ValueError, match="PX_TRAINING_SLOTS"):
            configured_slots({"PX_TRAINING_SLOTS": bad})
    with pytest.raises(ValueError):
        check_slots(True)
    monkeypatch.setenv("PX_TRAINING_SLOTS", "5")
    assert TrainingQueue(Path("/nonexistent-not-opened")).slots == 5


def test_the_queue_lives_in_the_cache_dir_or_where_it_is_told(tmp_path: Path) -> None:
    import tempfile

    from explorer.training.queue import queue_dir

    assert queue_dir({"PX_TRAINING_QUEUE_DIR": str(tmp_path / "q")}) == tmp_path / "q"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PX_CACHE_DIR", str(tmp_path / "cache"))
        assert queue_dir({}) == tmp_path / "cache" / "training-queue"
        (tmp_path / "file").write_text("")
        mp.setenv("PX_CACHE_DIR", str(tmp_path / "file"))  # a file: the cache cannot be used
        fallback = queue_dir({})
        assert fallback.parent.parent == Path(tempfile.gettempdir())
        assert fallback.name == "training-queue"


def test_a_damaged_database_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "training-queue.sqlite3").write_bytes(b"not a database" * 100)
    queue = TrainingQueue(tmp_path, slots=1)
    assert queue.try_start(queue.enter("a")).state == "running"
    assert any(p.name.startswith("training-queue.sqlite3.corrupt-") for p in tmp_path.iterdir())


def test_process_start_time_matches_proc() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        fields = Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()
        assert process_start_time(child.pid) == int(fields[19])
    finally:
        child.kill()
        child.wait()
    assert process_start_time(child.pid) is None


# ------------------------------------------------------------------ records cross the pipe


def test_every_record_class_survives_pickling() -> None:
    from explorer.training import EpochRecord, GradientHistogram, StepRecord
    from explorer.training.fp8 import Fp8EpochRecord, Fp8StepRecord

    records = [
        StepRecord("float16", 3, 0, 2.1, 0.25, 32768.0, 0.1, 0.01, 0.0, False, 0.002, 0.1),
        EpochRecord("float16", 0, 2.0, 0.3, 1.9, 0.35, None, 0.1, 0.0, 0.0, 0, 0.002, 1.5, 0.5),
        GradientHistogram("float16", 3, "float16", [0.0, 1.0], [4], 1, 0, 5, None),
        Fp8StepRecord("fp8 delayed", 1, 0, 2.2, 0.2, 0.01, 0.0, {"layer0.x": 2.0}, 0.01, 0.05),
        Fp8EpochRecord("fp8 delayed", 0, 2.2, 0.2, 2.1, 0.3, 0.01, 0.0, {"layer0.x": 2.0}, 1.0, 1.0),
    ]
    for record in records:
        assert pickle.loads(pickle.dumps(record)) == record


# ------------------------------------------------------------------ training in workers

_KERNEL_SCRIPT = """
import json, sys
from pathlib import Path
import explorer
from explorer.training.queue import TrainingQueue

app = explorer.App(load_tensorflow=False, tab="training")
tab = app.select("training")
app.state.set(policies=["float32", "fp8_emulated"])
tab.epochs.value = 2
tab.extra_config = {"max_train_samples": 256}
tab.queue = TrainingQueue(Path(sys.argv[1]), slots=2)
job = tab.start(wait=True)
print(json.dumps({
    "status": job.status,
    "error": job.error,
    "imported": sorted(m for m in ("tensorflow", "keras", "torch", "jax") if m in sys.modules),
    "pids": {p: s.pid for p, s in tab.statuses.items()},
    "states": {p: s.state for p, s in tab.statuses.items()},
    "bars": [row.children[2].value for row in tab.run_bars.children],
    "panel": tab.panel.label.value,
    "fp8_losses": [r.loss for r in tab.runs["fp8_emulated"].steps],
    "f32_losses": [r.loss for r in tab.runs["float32"].steps],
    "f32_hist_steps": [h.step for h in tab.runs["float32"].histograms],
    "epochs": {p: len(r.epochs) for p, r in tab.runs.items()},
    "figure": tab.figure is not None,
    "details": tab.details.value,
}))
"""


@pytest.mark.slow
def test_the_tab_trains_in_workers_and_the_kernel_never_imports_tensorflow(tmp_path: Path) -> None:
    kernel = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_KERNEL_SCRIPT), str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        # oracles: the same runs in this process, while the kernel's workers train
        from explorer.training import train
        from explorer.training.fp8 import train_fp8

        fp8 = train_fp8(scaling="delayed", epochs=2, max_train_samples=256)
        f32 = train(policy="float32", epochs=2, max_train_samples=256, histogram_steps=(0, -1))
        stdout, stderr = kernel.communicate(timeout=600)
    finally:
        if kernel.poll() is None:
            kernel.kill()
            kernel.communicate()
    assert kernel.returncode == 0, stderr[-3000:]
    got = json.loads(stdout.strip().splitlines()[-1])
    assert got["status"] == "done", got["error"]
    assert got["imported"] == []  # the visitor's kernel: no framework at all
    assert got["states"] == {"float32": "done", "fp8_emulated": "done"}
    assert all(_gone(pid) for pid in got["pids"].values())
    assert got["pids"]["float32"] != got["pids"]["fp8_emulated"]
    assert got["epochs"] == {"float32": 2, "fp8_emulated": 2}
    assert got["bars"] == ["done: 8 steps", "done: 8 steps"]  # 256 samples / batch 64 = 4 steps x 2 epochs
    assert got["panel"].startswith("training: done")
    assert got["figure"]
    assert "all at step 7" in got["details"]  # the one Keras run: its last step
    np.testing.assert_allclose(got["fp8_losses"], [s.loss for s in fp8.steps], rtol=1e-6)
    np.testing.assert_allclose(got["f32_losses"], [s.loss for s in f32.steps], rtol=1e-4)
    assert got["f32_hist_steps"] == list(range(8))  # 12 evenly spaced steps of 8: all of them
    assert TrainingQueue(tmp_path, slots=2).tickets() == []


@pytest.mark.slow
def test_comparisons_queue_together_and_cancel_kills_the_workers(tmp_path: Path) -> None:
    from explorer.training.parallel import train_in_workers
    from explorer.training.workers import WorkerJob

    queue = TrainingQueue(tmp_path, slots=1)
    seen: list[Any] = []
    cancel = threading.Event()
    final: list[Any] = []
    jobs = [WorkerJob("fp8_emulated", {"epochs": 1000}), WorkerJob("float32", {"epochs": 1000})]
    runner = threading.Thread(
        target=lambda: final.extend(
            train_in_workers(jobs, queue=queue, on_status=seen.append, cancel=cancel, poll=0.1)
        )
    )
    runner.start()
    wait_until(lambda: any(s.policy == "fp8_emulated" and s.state == "training" for s in seen), 300)
    waiting = [s for s in seen if s.policy == "float32" and s.state == "queued" and s.place is not None]
    assert waiting and waiting[-1].place.describe() == "waiting: 1st in the queue, 1 run training (1 slot)"
    pid = next(s.pid for s in seen if s.pid is not None)
    assert not _gone(pid)
    assert [t.state for t in queue.tickets()] == ["running", "waiting"]
    cancel.set()
    runner.join(120)
    assert not runner.is_alive()
    assert [(s.policy, s.state) for s in final] == [("fp8_emulated", "cancelled"), ("float32", "cancelled")]
    assert final[0].result is not None and final[0].result.cancelled  # it stopped between two steps
    assert final[1].pid is None  # it never started
    assert _gone(pid)
    assert queue.tickets() == []


_PARENT_SCRIPT = """
import json, sys, time
from pathlib import Path
from explorer.training.parallel import train_in_workers
from explorer.training.queue import TrainingQueue
from explorer.training.workers import WorkerJob

pids = {}
def on_status(s):
    if s.pid is not None and s.policy not in pids:
        pids[s.policy] = s.pid
        Path(sys.argv[2] + ".tmp").write_text(json.dumps(pids))
        Path(sys.argv[2] + ".tmp").replace(sys.argv[2])  # whole, never half written
jobs = [WorkerJob("fp8_emulated", {"epochs": 1000}), WorkerJob("float32", {"epochs": 1000})]
train_in_workers(jobs, queue=TrainingQueue(Path(sys.argv[1]), slots=2), on_status=on_status)
"""


@pytest.mark.slow
def test_workers_die_when_their_parent_is_killed(tmp_path: Path) -> None:
    pids_file = tmp_path / "pids.json"
    parent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_PARENT_SCRIPT), str(tmp_path), str(pids_file)], cwd=ROOT
    )
    try:
        two = lambda: pids_file.exists() and len(json.loads(pids_file.read_text() or "{}")) == 2
        wait_until(two, 300, "2 workers")
        pids = list(json.loads(pids_file.read_text()).values())
        assert not any(_gone(pid) for pid in pids)
        assert len(TrainingQueue(tmp_path, slots=2).tickets()) == 2
        parent.send_signal(signal.SIGKILL)
        parent.wait(60)
        wait_until(lambda: all(_gone(pid) for pid in pids), 60, "the workers to die with their parent")
        assert TrainingQueue(tmp_path, slots=2).tickets() == []  # stale tickets removed
    finally:
        parent.kill()
        parent.wait()


# ------------------------------------------------------------------ precision-explorer app --training-slots


def test_app_dry_run_shows_the_training_slots(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from explorer.cli import main

    notebook = tmp_path / "nb.ipynb"
    notebook.write_text("{}")
    assert main(["app", "--dry-run", "--notebook", str(notebook), "--training-slots", "3"]) == 0
    assert capsys.readouterr().out.startswith("PX_TRAINING_SLOTS=3 ")
    assert main(["app", "--dry-run", "--json", "--notebook", str(notebook), "--training-slots", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["result"]["env"] == {"PX_TRAINING_SLOTS": "2"}
    with pytest.raises(SystemExit) as exit_status:
        main(["app", "--dry-run", "--notebook", str(notebook), "--training-slots", "0"])
    assert exit_status.value.code == 2
    assert "--training-slots: must be an integer from 1 to 256" in capsys.readouterr().err


@pytest.mark.slow
def test_every_kernel_of_the_app_gets_the_training_slots(tmp_path: Path) -> None:
    from tests.support.voila import http_get, running_app, write_notebook

    notebook = write_notebook(tmp_path / "tiny.ipynb")
    with running_app(tmp_path, "--training-slots", "3", notebook=notebook) as server:
        status, _, _ = http_get(server.port, "/")
        assert status == 200
        [kernel] = server.wait_for_kernels(1)
        environ = Path(f"/proc/{kernel}/environ").read_bytes().split(b"\0")
        assert b"PX_TRAINING_SLOTS=3" in environ
