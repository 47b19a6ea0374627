"""The one way the runtime's stores on disk open and configure SQLite.

Every store (the probe store, the sweep store, the training queue) is one SQLite file in
WAL mode with ``synchronous = NORMAL`` (a committed row survives the process being killed;
only a power cut can lose the last ones) and a busy timeout (a writer waits for another
process's transaction), opened in autocommit mode so that every transaction is an explicit
``BEGIN IMMEDIATE`` (:func:`transaction`).  A schema with a version
(``PRAGMA user_version``) is rebuilt when the file holds another one; a file whose error
says the file itself is damaged (:func:`is_damaged`: not SQLite, truncated, tables missing)
is moved aside (:func:`move_aside`) and a new one started, while the machine's errors (full
disk, read-only, locked) are not the file's.

The two caches (:class:`SignedStore`: probe records, sweep runs) trust nothing they read
back: each row carries an HMAC computed with the cache directory's secret
(:func:`load_secret`, created 0600 with :func:`create_file_atomically`), and a problem of the
store itself is one warning, after which the store acts as an empty one.

>>> import tempfile
>>> from pathlib import Path
>>> with tempfile.TemporaryDirectory() as tmp:
...     conn = open_database(Path(tmp) / "doc.sqlite3", "CREATE TABLE t (x INTEGER)", version=1)
...     with transaction(conn):
...         _ = conn.execute("INSERT INTO t VALUES (42)")
...     mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
...     rows = conn.execute("SELECT x FROM t").fetchall()
...     conn.close()
>>> mode, rows
('wal', [(42,)])
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import os
import secrets
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, TypeVar

from explorer.runtime import envcache

log = logging.getLogger(__name__)

#: seconds a writer waits for another one's transaction
BUSY_TIMEOUT = 30.0
#: the secret the caches' HMACs are computed with (created 0600 in the cache directory)
KEY_NAME = "probes.key"

T = TypeVar("T")


# ---------------------------------------------------------------- opening, transactions


def schema_statements(script: str) -> list[str]:
    """The statements of ``script``, split at the semicolons that end one (not those in a
    comment or a string).

    >>> schema_statements("CREATE TABLE a (x); -- a; comment\\nCREATE TABLE b (y)")
    ['CREATE TABLE a (x);', ' -- a; comment\\nCREATE TABLE b (y);']
    """
    statements, buffer = [], ""
    for piece in script.split(";"):
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            if buffer.strip(" \t\n;"):
                statements.append(buffer)
            buffer = ""
    if buffer.strip(" \t\n;"):  # unfinished: let SQLite say what is wrong with it
        statements.append(buffer)
    return statements


def open_database(
    path: Path,
    schema: str,
    *,
    version: int | None = None,
    drop: Sequence[str] = (),
    on_rebuild: Callable[[int], None] | None = None,
    busy_timeout: float = BUSY_TIMEOUT,
) -> sqlite3.Connection:
    """A connection to the SQLite file ``path`` in WAL mode, its tables those of ``schema``.

    Without ``version`` the schema's statements (``CREATE TABLE IF NOT EXISTS``) run on every
    open.  With one, a file whose ``user_version`` differs is rebuilt in one transaction: the
    ``drop`` tables dropped (``on_rebuild(old_version)`` called first when the old version is
    not 0, a new file's), the schema created, the version set.  The connection is in
    autocommit mode and may be used from any thread (callers hold a lock).
    """
    conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
    try:
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        # WAL with synchronous NORMAL: a row survives the process being killed (it is in the
        # WAL when the transaction returns); only a power cut can lose the last ones
        conn.execute("PRAGMA synchronous = NORMAL")
        if version is None:
            for statement in schema_statements(schema):
                conn.execute(statement)
        elif conn.execute("PRAGMA user_version").fetchone()[0] != version:
            with transaction(conn):
                old = conn.execute("PRAGMA user_version").fetchone()[0]
                if old != version:
                    if old != 0 and on_rebuild is not None:
                        on_rebuild(old)
                    for table in drop:
                        conn.execute(f'DROP TABLE IF EXISTS "{table}"')
                    for statement in schema_statements(schema):
                        conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {int(version)}")
    except BaseException:
        conn.close()
        raise
    return conn


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` (one writer at a time, waiting up to the busy timeout) ... ``COMMIT``;
    rolled back when the block (or the commit) raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise


def is_damaged(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says the database file is damaged (move it aside), not the machine (full
    disk, read-only, locked) or the code (a misuse of the connection).

    >>> is_damaged(sqlite3.DatabaseError("file is not a database"))
    True
    >>> is_damaged(sqlite3.OperationalError("database is locked"))
    False
    """
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc)
        return text.startswith(("no such table", "no such column")) or "has no column" in text
    return not isinstance(exc, sqlite3.ProgrammingError | sqlite3.InterfaceError)


def move_aside(path: Path) -> Path:
    """Rename the SQLite file ``path`` (and its -wal/-shm companions) to ``<name>.corrupt-<ns>``, so
    a new database can start; returns the new name.  A file already gone (another process moved
    it) is no error; OSError when the renaming fails otherwise."""
    aside = path.with_name(f"{path.name}.corrupt-{time.time_ns()}")
    with contextlib.suppress(FileNotFoundError):
        os.replace(path, aside)
    for suffix in ("-wal", "-shm"):
        companion = Path(f"{path}{suffix}")
        if not companion.is_dir():
            with contextlib.suppress(FileNotFoundError):
                os.replace(companion, f"{aside}{suffix}")
    return aside


# ---------------------------------------------------------------- secrets, HMACs


def create_file_atomically(path: Path, data: bytes, *, replace: bool) -> None:
    """Write ``data`` to ``path`` (mode 0600, synced) whole or not at all; unless ``replace``, a
    file already there (a concurrent creator's) wins."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)  # atomic create-if-absent
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def load_secret(directory: Path) -> bytes:
    """The cache directory's HMAC secret, created (0600) on first use; an invalid one is replaced
    (with one warning: every record it signed is then computed again)."""
    path = directory / KEY_NAME
    for _ in range(3):
        try:
            text = path.read_bytes().strip()
        except FileNotFoundError:
            create_file_atomically(path, secrets.token_hex(32).encode("ascii"), replace=False)
            continue
        except IsADirectoryError:
            text = b""
        if len(text) == 64 and all(c in b"0123456789abcdef" for c in text):
            return bytes.fromhex(text.decode("ascii"))
        log.warning("probe cache key %s is invalid; replacing it (stored probes will run again)", path)
        envcache.remove_or_move_aside(path)
        create_file_atomically(path, secrets.token_hex(32).encode("ascii"), replace=True)
    raise OSError(f"probe cache key {path} cannot be created")


def mac(secret: bytes, *parts: str) -> str:
    """HMAC-SHA256 (hex) of ``parts``, each length-prefixed so that no two lists of parts collide.

    >>> mac(b"k", "ab", "c") == mac(b"k", "a", "bc")
    False
    """
    message = "".join(f"{len(part)}:{part}" for part in parts).encode()
    return hmac.digest(secret, message, hashlib.sha256).hex()


def mac_matches(raw_mac: Any, expected: str) -> bool:
    """Whether ``raw_mac`` (bytes read from the database) is the hex HMAC ``expected``, compared
    in constant time."""
    return isinstance(raw_mac, bytes) and hmac.compare_digest(raw_mac, expected.encode())


# ---------------------------------------------------------------- the caches


class HeldConnection:
    """One SQLite connection, opened on first use and held under ``self._lock``; closed on
    leaving a ``with`` block or by :meth:`close` (a later call opens it again).  Subclasses set
    ``self._conn = None`` and ``self._lock`` (a ``threading.RLock``) in their ``__init__``."""

    _conn: sqlite3.Connection | None
    _lock: Any

    def __enter__(self: T) -> T:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the database connection (what it holds stays; a later call opens it again)."""
        with self._lock:
            if self._conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.close()
                self._conn = None


class SignedStore(HeldConnection):
    """A cache in ``directory/DB_NAME`` (None: no cache) whose rows are signed with
    :func:`load_secret`'s secret; subclasses name the file, schema and tables.

    Every method is safe to call from any thread and never raises for a problem of the store
    itself (:meth:`_do`): a damaged file is moved aside once (one warning) and a new one
    started; anything else (no usable directory, a full disk, a second damage) is one warning,
    after which the store is ``disabled`` and acts as an empty one.
    """

    #: the database file in the cache directory
    DB_NAME: ClassVar[str]
    #: the tables (``CREATE TABLE IF NOT EXISTS`` statements)
    SCHEMA: ClassVar[str]
    #: ``PRAGMA user_version`` of the schema; another value means rebuild
    SCHEMA_VERSION: ClassVar[int]
    #: the tables a rebuild drops
    TABLES: ClassVar[tuple[str, ...]]
    #: what the warnings call the store ("probe cache")
    LABEL: ClassVar[str]

    def __init__(self, directory: Path | None) -> None:
        #: the cache directory (None: no cache)
        self.directory = directory
        #: the database file (None: no cache)
        self.path = None if directory is None else directory / self.DB_NAME
        #: True once the store gave up (no cache directory, full disk, ...)
        self.disabled = directory is None
        self._conn: sqlite3.Connection | None = None
        self._secret = b""
        self._lock = threading.RLock()
        self._moved_aside = False
        self._log = logging.getLogger(type(self).__module__)

    def _open(self) -> sqlite3.Connection:
        assert self.path is not None and self.directory is not None
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.path.exists() and not self.path.is_file():
            raise sqlite3.DatabaseError("is not a file")
        self._secret = load_secret(self.directory)

        def rebuilding(old: int) -> None:
            self._log.warning("%s %s has schema %s; rebuilding it", self.LABEL, self.path, old)

        return open_database(
            self.path, self.SCHEMA, version=self.SCHEMA_VERSION, drop=self.TABLES, on_rebuild=rebuilding
        )

    def _move_aside(self, problem: str) -> None:
        assert self.path is not None
        self.close()
        self._moved_aside = True
        try:
            aside = move_aside(self.path)
        except OSError as exc:
            self._give_up(f"cannot be moved aside ({exc})")
            return
        self._log.warning(
            "%s %s %s; moved it aside to %s and started a new one", self.LABEL, self.path, problem, aside
        )

    def _give_up(self, problem: str) -> None:
        self.close()
        self.disabled = True
        envcache.warn_once(str(self.path), f"{self.LABEL} {self.path} {problem}; working without the cache")

    def _do(self, action: str, work: Callable[[sqlite3.Connection], T], default: T) -> T:
        """``work(connection)``, healing a broken file once; ``default`` when the store is off."""
        with self._lock:
            while not self.disabled:
                try:
                    if self._conn is None:
                        self._conn = self._open()
                    return work(self._conn)
                except sqlite3.Error as exc:
                    if not is_damaged(exc):
                        self._give_up(f"{action} failed ({exc})")
                    elif self._moved_aside:
                        self._give_up(f"{action} failed again after a rebuild ({exc})")
                    else:
                        self._move_aside(f"is damaged ({exc})")
                except OSError as exc:  # the secret file: read-only directory, full disk
                    self._give_up(f"{action} failed ({exc})")
            return default
