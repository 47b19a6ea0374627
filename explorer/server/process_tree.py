"""Run a server in a session of its own and stop it together with every process it started.

Why not just forward the signal: jupyter_client starts each kernel in a session of
its own (``start_new_session``), so the server's process group does not contain its
kernels, and once the server is gone they are re-parented (to PID 1) and can no longer be
found by walking the tree.  So :func:`supervise` keeps a list of the server's
descendants while it runs, read from ``/proc`` (pid *and* start time, so a reused pid is
never signalled), and :func:`stop_process_tree`, after the server has stopped (on its
own, within a grace period, or by SIGKILL), signals whatever on that list is still alive.

Where ``/proc`` does not exist the descendants are unknown; only the server's process
group is signalled.  No dependency beyond the standard library.

A launcher killed by SIGKILL stops nothing: so the server, told its launcher's pid in
:data:`LAUNCHER_ENV`, stops itself when the launcher dies (:func:`stop_with_launcher`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType

#: Seconds the server gets to shut its kernels down after SIGTERM, before SIGKILL.
STOP_GRACE_S = 10.0
#: Seconds processes that outlived the server get after SIGTERM, before SIGKILL.
LEFTOVER_GRACE_S = 3.0
#: Seconds between two refreshes of the list of descendants while the server runs.
REFRESH_S = 1.0

#: Seconds between two looks at the parent's pid in :func:`stop_with_launcher`.
WATCH_S = 0.5
#: The environment variable that gives the server its launcher's pid.
LAUNCHER_ENV = "PX_LAUNCHER_PID"
#: The environment variable that gives the server its launcher's temporary directory (named
#: ``LAUNCHER_DIR_PREFIX...``), for the server to remove if the launcher is killed.
LAUNCHER_DIR_ENV = "PX_LAUNCHER_DIR"
LAUNCHER_DIR_PREFIX = "px-voila-"

_PROC = Path("/proc")
_PR_SET_PDEATHSIG = 1


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, start time in clock ticks) of a process from ``/proc/PID/stat``; None if gone."""
    try:
        fields = (_PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1]), int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def descendants(pid: int) -> dict[int, int]:
    """Every live descendant of ``pid`` as ``{pid: start time}`` (empty without ``/proc``).

    >>> child = subprocess.Popen(["sleep", "5"])
    >>> child.pid in descendants(os.getpid())
    True
    >>> child.kill(); child.wait()
    -9
    """
    children: dict[int, list[tuple[int, int]]] = {}
    try:
        entries = [int(e.name) for e in _PROC.iterdir() if e.name.isdigit()]
    except OSError:
        return {}
    for child in entries:
        stat = _stat(child)
        if stat is not None and stat[0] != "Z":
            children.setdefault(stat[1], []).append((child, stat[2]))
    found: dict[int, int] = {}
    todo = [pid]
    while todo:
        for child, started in children.get(todo.pop(), []):
            if child not in found:
                found[child] = started
                todo.append(child)
    return found


def is_alive(pid: int, started: int) -> bool:
    """Whether the process ``pid`` that started at ``started`` still runs (zombies do not count)."""
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z" and stat[2] == started


def _send(pid: int, sig: int, *, group: bool = False) -> None:
    """Send ``sig`` to a process (or its process group); a process already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if group and hasattr(os, "killpg"):
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)


def _still_alive(known: Mapping[int, int]) -> dict[int, int]:
    return {pid: started for pid, started in known.items() if is_alive(pid, started)}


def stop_process_tree(
    proc: subprocess.Popen[bytes],
    known: Mapping[int, int] | None = None,
    grace_s: float = STOP_GRACE_S,
) -> None:
    """Stop ``proc`` (started with ``start_new_session=True``) and all its descendants.

    SIGTERM to the server's process group; after ``grace_s`` SIGKILL to it.  Then every
    descendant seen (``known`` plus those found now) that outlived it gets SIGTERM and,
    after :data:`LEFTOVER_GRACE_S`, SIGKILL.  Returns once ``proc`` has been reaped.
    """
    seen = dict(known or {})
    if proc.poll() is None:
        seen.update(descendants(proc.pid))
        _send(proc.pid, signal.SIGTERM, group=True)
        deadline = time.monotonic() + grace_s
        while proc.poll() is None and time.monotonic() < deadline:
            seen.update(descendants(proc.pid))
            time.sleep(0.1)
        if proc.poll() is None:
            seen.update(descendants(proc.pid))
            _send(proc.pid, signal.SIGKILL, group=True)
            proc.wait()
    leftovers = _still_alive(seen)
    for pid in leftovers:
        _send(pid, signal.SIGTERM)
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    while leftovers and time.monotonic() < deadline:
        time.sleep(0.1)
        leftovers = _still_alive(leftovers)
    for pid in leftovers:
        _send(pid, signal.SIGKILL)


#: Signals that stop :func:`supervise` (SIGHUP: the terminal was closed).
STOP_SIGNALS = tuple(
    s for s in (signal.SIGTERM, signal.SIGINT, getattr(signal, "SIGHUP", None)) if s is not None
)


def supervise(
    cmd: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    grace_s: float = STOP_GRACE_S,
) -> int:
    """Run ``cmd`` in its own session until it exits or this process gets SIGTERM, SIGINT or SIGHUP.

    Either way the whole tree is stopped (:func:`stop_process_tree`) before returning.
    Returns the command's exit status, or 128 + the signal number when a signal stopped it.
    Must run in the main thread (it installs signal handlers, restored on return).
    """
    received: list[int] = []

    def request_stop(signum: int, frame: FrameType | None) -> None:
        received.append(signum)

    previous = {sig: signal.signal(sig, request_stop) for sig in STOP_SIGNALS}
    known: dict[int, int] = {}
    proc: subprocess.Popen[bytes] | None = None
    try:
        proc = subprocess.Popen(list(cmd), env=None if env is None else dict(env), start_new_session=True)
        while not received:
            try:
                status = proc.wait(timeout=REFRESH_S)
            except subprocess.TimeoutExpired:
                known = _still_alive({**known, **descendants(proc.pid)})
            else:
                return 128 - status if status < 0 else status
        return 128 + received[0]
    finally:
        try:
            if proc is not None:
                stop_process_tree(proc, known, grace_s)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def stop_with_launcher(launcher_pid: int, grace_s: float = STOP_GRACE_S) -> threading.Thread:
    """In the server, before it starts anything: get SIGTERM when the launcher ``launcher_pid``
    (the parent) dies, and exit ``grace_s`` seconds later if still running.

    SIGTERM is the server's own clean stop (Voila shuts its kernels down); it comes from
    ``PR_SET_PDEATHSIG`` (Linux), else from a thread that watches ``getppid()``; that thread
    also ends the process with ``os._exit(1)`` ``grace_s`` seconds after the launcher died, for
    a main thread too busy to stop.  A launcher already gone exits this process at once.
    Returns the watching thread (a daemon).
    """
    armed = False  # whether the kernel sends the SIGTERM
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) == 0
    if os.getppid() != launcher_pid:  # it died before the line above took effect
        os._exit(1)

    def watch() -> None:
        while os.getppid() == launcher_pid:
            time.sleep(WATCH_S)
        if not armed:
            os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(grace_s)
        os._exit(1)

    watcher = threading.Thread(target=watch, name="px-launcher-watch", daemon=True)
    watcher.start()
    return watcher
