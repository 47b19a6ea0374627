"""A first-come-first-served queue of training runs shared by every process of the machine.

Every visitor of a workshop server has a kernel process of their own; each training run
(one policy) asks this queue for a slot before its worker process starts, so that at most
``slots`` runs train at once on the machine, whoever started them.  The queue is one
SQLite database (opened by :func:`explorer.runtime.store.open_database`: WAL mode, a busy
timeout) holding one row per ticket:

- :meth:`TrainingQueue.enter` adds a ``waiting`` ticket (ids only grow: ``AUTOINCREMENT``);
- :meth:`TrainingQueue.try_start` turns it ``running`` inside a ``BEGIN IMMEDIATE``
  transaction (one writer at a time) when fewer than ``slots`` tickets run and fewer
  waiting tickets entered before it than there are free slots;
- :meth:`TrainingQueue.leave` deletes it (run over, or cancelled while waiting).

A ticket names its owner process by pid *and* start time (``/proc/PID/stat`` field 22,
as :mod:`explorer.server.process_tree` does; a reused pid never matches), and the worker
process once it runs.  Every transaction first deletes the tickets whose owner is gone, or
whose recorded worker is gone, so a kernel killed with SIGKILL frees its slots at the next
look by anyone.  Without ``/proc`` liveness is ``os.kill(pid, 0)``.

Where: ``$PX_TRAINING_QUEUE_DIR``, else ``training-queue/`` in the project's cache directory
(:func:`explorer.runtime.envcache.cache_dir`: ``$PX_CACHE_DIR`` or the platform user cache
dir).  Pids are only comparable on one machine (one pid namespace): the directory must be
local to it, not shared over a network file system.

How many: ``$PX_TRAINING_SLOTS``, else :func:`default_slots`.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as tmp:
...     q = TrainingQueue(Path(tmp), slots=1)
...     first, second = q.enter("float32"), q.enter("float16")
...     a, b = q.try_start(first), q.try_start(second)
...     q.leave(first)
...     c = q.try_start(second)
...     q.close()
>>> a.state, b.state, b.describe(), c.state
('running', 'waiting', 'waiting: 1st in the queue, 1 run training (1 slot)', 'running')
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from explorer.runtime import store

#: environment variable: most training runs at once on this machine
SLOTS_ENV = "PX_TRAINING_SLOTS"
#: environment variable: the directory holding the queue's database
DIR_ENV = "PX_TRAINING_QUEUE_DIR"
#: the database file in that directory
DB_NAME = "training-queue.sqlite3"
#: the most slots a setting may ask for
MAX_SLOTS = 256
#: seconds a transaction waits for another process's one
BUSY_TIMEOUT = store.BUSY_TIMEOUT
#: longest label a ticket keeps (characters)
MAX_LABEL = 200

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tickets (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_pid      INTEGER NOT NULL,
    owner_started  INTEGER NOT NULL,  -- /proc/PID/stat start time (clock ticks); 0 without /proc
    worker_pid     INTEGER,           -- the training worker, once it runs
    worker_started INTEGER,
    label          TEXT NOT NULL,
    state          TEXT NOT NULL CHECK (state IN ('waiting', 'running')),
    entered        REAL NOT NULL,     -- time.time()
    began          REAL
)
"""


def process_start_time(pid: int) -> int | None:
    """Start time of process ``pid`` in clock ticks since boot (``/proc/PID/stat`` field 22);
    0 where there is no ``/proc`` but the process exists; None when it is gone or a zombie.

    >>> process_start_time(os.getpid()) is not None
    True
    """
    try:
        fields = Path(f"/proc/{int(pid)}/stat").read_text().rsplit(")", 1)[1].split()
        return None if fields[0] == "Z" else int(fields[19])
    except FileNotFoundError:
        if Path("/proc/self/stat").exists():
            return None
    except (OSError, ValueError, IndexError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return 0
    return 0


def _alive(pid: int | None, started: int | None) -> bool:
    if pid is None:
        return True  # nothing recorded: nothing to check
    now = process_start_time(pid)
    return now is not None and (started == 0 or now == started)


#: runs in the app's default comparison (float32, mixed_float16, mixed_bfloat16)
DEFAULT_COMPARISON = 3


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask where known, else ``os.cpu_count``)."""
    with contextlib.suppress(AttributeError, OSError):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def default_slots(cores: int | None = None) -> int:
    """Training runs at once by default: half the cores, and never fewer than the app's default
    comparison (:data:`DEFAULT_COMPARISON` runs), so one visitor's policies train side by side.

    One run of the digits MLP is one Python process stepping a small ``tf.function``
    (or NumPy for fp8) with batches of 64: it keeps about one core busy.  Half the cores
    leaves the other half to the visitors' kernels and the server (widget messages, the
    live figure redrawn every few seconds in each kernel).  On a small machine the floor wins:
    the runs share the cores and take longer, but their curves grow together.

    >>> default_slots(2), default_slots(16), default_slots(1)
    (3, 8, 3)
    """
    return max(DEFAULT_COMPARISON, (available_cores() if cores is None else cores) // 2)


def check_slots(value: object, where: str = "slots") -> int:
    """``value`` as a slot count from 1 to :data:`MAX_SLOTS` (an int, or a string of digits);
    ValueError naming ``where`` otherwise.

    >>> check_slots("3"), check_slots(2)
    (3, 2)
    """
    if isinstance(value, bool):
        raise ValueError(f"{where} must be an integer from 1 to {MAX_SLOTS}, got {value!r}")
    if isinstance(value, str):
        text = value.strip()
        if not text.isascii() or not text.isdigit():
            raise ValueError(f"{where} must be an integer from 1 to {MAX_SLOTS}, got {value[:40]!r}")
        value = int(text)
    if not isinstance(value, int) or not 1 <= value <= MAX_SLOTS:
        raise ValueError(f"{where} must be an integer from 1 to {MAX_SLOTS}, got {value!r}")
    return value


def configured_slots(environ: Mapping[str, str] | None = None) -> int:
    """``$PX_TRAINING_SLOTS`` (checked: ValueError when it is not 1 to 256), else :func:`default_slots`."""
    env = os.environ if environ is None else environ
    raw = env.get(SLOTS_ENV, "")
    return check_slots(raw, SLOTS_ENV) if raw.strip() else default_slots()


def queue_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$PX_TRAINING_QUEUE_DIR``, else ``<cache dir>/training-queue``; where the cache
    directory cannot be used, ``precision-explorer-<uid>/training-queue`` in the temp dir."""
    env = os.environ if environ is None else environ
    raw = env.get(DIR_ENV, "")
    if raw:
        return Path(raw)
    from explorer.runtime.envcache import CacheUnavailable, cache_dir

    try:
        return cache_dir() / "training-queue"
    except CacheUnavailable:
        uid = os.getuid() if hasattr(os, "getuid") else 0
        return Path(tempfile.gettempdir()) / f"precision-explorer-{uid}" / "training-queue"


@dataclass(frozen=True)
class Ticket:
    """One run's place in the queue."""

    id: int
    label: str


@dataclass(frozen=True)
class Place:
    """Where a ticket stands: ``waiting`` (``ahead`` tickets entered before it still wait),
    ``running`` (it holds a slot), or ``gone`` (not in the queue: left, or its owner died)."""

    state: str
    ahead: int
    running: int
    slots: int

    def describe(self) -> str:
        """One line for the visitor: ``waiting: 3rd in the queue, 2 runs training (2 slots)``."""
        slots = f"{self.slots} slot" + ("" if self.slots == 1 else "s")
        runs = f"{self.running} run" + ("" if self.running == 1 else "s")
        if self.state == "waiting":
            return f"waiting: {_ordinal(self.ahead + 1)} in the queue, {runs} training ({slots})"
        if self.state == "running":
            return f"has a slot ({runs} training, {slots})"
        return "not in the queue"


def _ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``11th``, ``22nd``."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


@dataclass(frozen=True)
class TicketRow:
    """A ticket as stored (for benchmarks and tests)."""

    id: int
    owner_pid: int
    worker_pid: int | None
    label: str
    state: str
    entered: float
    began: float | None


class TrainingQueue(store.HeldConnection):
    """The machine-wide queue in ``directory`` (default :func:`queue_dir`) with ``slots`` slots
    (default :func:`configured_slots`).  Thread-safe; one SQLite connection per object."""

    def __init__(self, directory: Path | None = None, slots: int | None = None) -> None:
        self.directory = Path(directory) if directory is not None else queue_dir()
        self.slots = configured_slots() if slots is None else check_slots(slots)
        self.path = self.directory / DB_NAME
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.RLock()
        self._pid = os.getpid()
        self._started = process_start_time(self._pid) or 0

    # ------------------------------------------------------------ database

    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        self._pid = os.getpid()  # a connection never crosses a fork
        self._started = process_start_time(self._pid) or 0
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._conn = store.open_database(self.path, _SCHEMA, busy_timeout=BUSY_TIMEOUT)
        return self._conn

    def _transaction(self, work: Callable[[sqlite3.Connection], object]) -> object:
        """``work(conn)`` inside ``BEGIN IMMEDIATE`` after removing stale tickets; a damaged
        database file is moved aside once and a new one started."""
        with self._lock:
            for attempt in (1, 2):
                try:
                    conn = self._connect()
                    with store.transaction(conn):
                        self._purge(conn)
                        return work(conn)
                except sqlite3.Error as exc:
                    if attempt == 2 or not store.is_damaged(exc):
                        raise
                    self.close()
                    store.move_aside(self.path)
            raise AssertionError("unreachable")

    def _purge(self, conn: sqlite3.Connection) -> None:
        """Delete tickets whose owner process (or recorded worker) is gone."""
        rows = conn.execute(
            "SELECT id, owner_pid, owner_started, worker_pid, worker_started FROM tickets"
        ).fetchall()
        dead = [
            (row[0],)
            for row in rows
            if not _alive(row[1], row[2]) or (row[3] is not None and not _alive(row[3], row[4]))
        ]
        if dead:
            conn.executemany("DELETE FROM tickets WHERE id = ?", dead)

    # ------------------------------------------------------------ tickets

    def enter(self, label: str) -> Ticket:
        """Add a waiting ticket at the end of the queue (owned by this process)."""
        text = str(label)[:MAX_LABEL]

        def work(conn: sqlite3.Connection) -> int:
            cursor = conn.execute(
                "INSERT INTO tickets (owner_pid, owner_started, label, state, entered) "
                "VALUES (?, ?, ?, 'waiting', ?)",
                (self._pid, self._started, text, time.time()),
            )
            assert cursor.lastrowid is not None
            return int(cursor.lastrowid)

        ticket_id = self._transaction(work)
        assert isinstance(ticket_id, int)
        return Ticket(ticket_id, text)

    def try_start(self, ticket: Ticket) -> Place:
        """Give ``ticket`` a slot if its turn has come; returns where it stands now."""
        [place] = self.try_start_many([ticket])
        return place

    def try_start_many(self, tickets: Sequence[Ticket]) -> list[Place]:
        """:meth:`try_start` for several tickets in one transaction, oldest first."""

        def work(conn: sqlite3.Connection) -> list[Place]:
            places: dict[int, Place] = {}
            for ticket in sorted(tickets, key=lambda t: t.id):
                row = conn.execute("SELECT state FROM tickets WHERE id = ?", (ticket.id,)).fetchone()
                running = conn.execute("SELECT COUNT(*) FROM tickets WHERE state = 'running'").fetchone()[0]
                if row is None:
                    places[ticket.id] = Place("gone", 0, running, self.slots)
                    continue
                if row[0] == "running":
                    places[ticket.id] = Place("running", 0, running, self.slots)
                    continue
                ahead = conn.execute(
                    "SELECT COUNT(*) FROM tickets WHERE state = 'waiting' AND id < ?", (ticket.id,)
                ).fetchone()[0]
                if running < self.slots and ahead < self.slots - running:
                    conn.execute(
                        "UPDATE tickets SET state = 'running', began = ? WHERE id = ?",
                        (time.time(), ticket.id),
                    )
                    places[ticket.id] = Place("running", 0, running + 1, self.slots)
                else:
                    places[ticket.id] = Place("waiting", ahead, running, self.slots)
            return [places[t.id] for t in tickets]

        value = self._transaction(work)
        assert isinstance(value, list)
        return value

    def place(self, ticket: Ticket) -> Place:
        """Where ``ticket`` stands, without starting it."""

        def work(conn: sqlite3.Connection) -> Place:
            running = conn.execute("SELECT COUNT(*) FROM tickets WHERE state = 'running'").fetchone()[0]
            row = conn.execute("SELECT state FROM tickets WHERE id = ?", (ticket.id,)).fetchone()
            if row is None:
                return Place("gone", 0, running, self.slots)
            ahead = conn.execute(
                "SELECT COUNT(*) FROM tickets WHERE state = 'waiting' AND id < ?", (ticket.id,)
            ).fetchone()[0]
            return Place(str(row[0]), ahead if row[0] == "waiting" else 0, running, self.slots)

        value = self._transaction(work)
        assert isinstance(value, Place)
        return value

    def set_worker(self, ticket: Ticket, pid: int) -> None:
        """Record the worker process that uses ``ticket``'s slot (its death frees the slot too)."""
        started = process_start_time(pid)
        self._transaction(
            lambda conn: conn.execute(
                "UPDATE tickets SET worker_pid = ?, worker_started = ? WHERE id = ?",
                (int(pid), 0 if started is None else started, ticket.id),
            )
        )

    def leave(self, ticket: Ticket) -> None:
        """Remove ``ticket`` (its run is over, or it was cancelled while waiting)."""
        self._transaction(lambda conn: conn.execute("DELETE FROM tickets WHERE id = ?", (ticket.id,)))

    def tickets(self) -> list[TicketRow]:
        """Every live ticket, oldest first."""

        def work(conn: sqlite3.Connection) -> list[TicketRow]:
            rows = conn.execute(
                "SELECT id, owner_pid, worker_pid, label, state, entered, began FROM tickets ORDER BY id"
            ).fetchall()
            return [TicketRow(*row) for row in rows]

        value = self._transaction(work)
        assert isinstance(value, list)
        return value

    def wait_for_slot(
        self,
        ticket: Ticket,
        cancel: threading.Event | None = None,
        on_place: Callable[[Place], None] | None = None,
        poll: float = 0.5,
    ) -> Ticket | None:
        """Block until ``ticket`` runs, or ``cancel`` is set (the ticket is then removed: None).

        Returns the ticket holding the slot: ``ticket``, or a new one when ``ticket`` was
        found gone (its database replaced) and entered again at the end.  ``on_place(place)``
        is called after each look while it waits.
        """
        current = ticket
        try:
            while True:
                place = self.try_start(current)
                if place.state == "running":
                    return current
                if place.state == "gone":
                    current = self.enter(ticket.label)
                    continue
                if on_place is not None:
                    on_place(place)
                if cancel is not None:
                    if cancel.wait(poll):
                        self.leave(current)
                        return None
                else:
                    time.sleep(poll)
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                self.leave(current)
            raise
