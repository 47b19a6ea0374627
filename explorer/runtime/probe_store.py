"""The probe store: every probe record, in one SQLite database in the cache directory.

One row per (environment key, probe key) in ``probes.sqlite3`` (WAL mode, a busy
timeout, one short ``INSERT OR REPLACE`` transaction per record), so that concurrent
sweeps merge, a sweep saves as it goes, and probing again (``use_cache=False``)
replaces only the cells it probed.

Nothing read back is trusted: a record must have exactly the keys of
:func:`explorer.runtime.probe.failure_record` with values of the right types and
bounded lengths, and an HMAC that binds it to its environment key and probe key,
computed with a per-cache-directory secret (``probes.key``, mode 0600).  A record
that fails is discarded with one warning and probed again.  A database file that is
not SQLite, truncated, or a directory is moved aside (one warning) and a new one
started.  A cache directory that cannot be used, or a full disk, means "no cache"
(one warning): answers are never wrong or missing because of the store.

>>> import tempfile
>>> from explorer.runtime.probe import failure_record
>>> from explorer.outcome import Status
>>> with tempfile.TemporaryDirectory() as tmp, ProbeStore(Path(tmp)) as store:
...     store.save("env1", "numpy|exp|float16|CPU|eager", failure_record(Status.ERROR, "boom"))
...     store.load("env1")["numpy|exp|float16|CPU|eager"]["error"]
True
'boom'
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import math
import os
import secrets
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Collection
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from explorer.outcome import PHASES, STATUSES
from explorer.runtime import envcache

log = logging.getLogger(__name__)

#: the database file in the cache directory
DB_NAME = "probes.sqlite3"
#: the secret the record HMACs are computed with (created 0600 beside the database)
KEY_NAME = "probes.key"
#: ``PRAGMA user_version`` of the schema below; another value means rebuild
SCHEMA_VERSION = 2
#: seconds a writer waits for another one's transaction
BUSY_TIMEOUT = 30.0
#: the longest text a record field may hold (errors and workaround notes can be long)
MAX_TEXT = 1 << 20
#: the longest status, device and dtype name
MAX_NAME = 200
#: the longest devices description (JSON characters)
MAX_DEVICES = 1 << 16

SCHEMA = """
CREATE TABLE IF NOT EXISTS probes (
    env_key   TEXT NOT NULL,  -- envcache.environment_key()
    probe_key TEXT NOT NULL,  -- Probe.key, "numpy|exp|float16|CPU|eager"
    record    TEXT NOT NULL,  -- the record, JSON with sorted keys
    mac       TEXT NOT NULL,  -- HMAC-SHA256 of ["probe", env_key, probe_key, record]
    saved_at  REAL NOT NULL,  -- time.time()
    PRIMARY KEY (env_key, probe_key)
);
CREATE TABLE IF NOT EXISTS devices (
    env_key  TEXT PRIMARY KEY,
    devices  TEXT NOT NULL,   -- availability_probes.worker_devices(), JSON
    mac      TEXT NOT NULL,   -- HMAC-SHA256 of ["devices", env_key, devices]
    saved_at REAL NOT NULL
);
"""

#: the keys of a probe record and the types their values must have
RECORD_FIELDS: dict[str, tuple[type, ...]] = {
    "status": (str,),
    "error": (str,),
    "detail": (str,),
    "ran_on": (str, type(None)),
    "result_dtype": (str, type(None)),
    "seconds": (float,),
    "workaround": (str,),
    "workaround_how": (str,),
    "workaround_failures": (str,),
    "phase": (str,),
}
_SHORT_FIELDS = ("status", "ran_on", "result_dtype")

T = TypeVar("T")


def record_problem(record: Any) -> str:
    """Why ``record`` is not a valid probe record ("" when it is).

    >>> record_problem({"status": "ok"})
    "lacks 'detail', 'error', 'phase', 'ran_on', 'result_dtype', 'seconds', ..."
    """
    if not isinstance(record, dict):
        return f"is a {type(record).__name__}, not an object"
    if record.keys() != RECORD_FIELDS.keys():
        return _keys_problem(record)
    for name, kinds in RECORD_FIELDS.items():
        value = record[name]
        if not isinstance(value, kinds):
            return f"has a {type(value).__name__} for {name!r}"
        limit = MAX_NAME if name in _SHORT_FIELDS else MAX_TEXT
        if isinstance(value, str) and len(value) > limit:
            return f"has {len(value)} characters in {name!r} (at most {limit})"
    if record["status"] not in STATUSES:
        return f"has unknown status {record['status'][:40]!r}"
    if record["phase"] not in PHASES:
        return f"has unknown phase {record['phase'][:40]!r}"
    if not (math.isfinite(record["seconds"]) and record["seconds"] >= 0):
        return f"has seconds {record['seconds']!r}"
    return ""


def _keys_problem(record: dict[Any, Any]) -> str:
    missing = sorted(set(RECORD_FIELDS) - set(record))
    if missing:
        names = ", ".join(map(repr, missing[:6])) + (", ..." if len(missing) > 6 else "")
        return f"lacks {names}"
    extra = sorted(map(str, set(record) - set(RECORD_FIELDS)))
    return f"has unknown key {extra[0][:40]!r}"


def _mac(secret: bytes, *parts: str) -> str:
    """HMAC-SHA256 (hex) of ``parts``, each length-prefixed so that no two lists of parts collide."""
    message = "".join(f"{len(part)}:{part}" for part in parts).encode()
    return hmac.digest(secret, message, hashlib.sha256).hex()


def _decode_json(raw: Any) -> Any:
    """``raw`` (bytes from the database) as JSON; ValueError when it is not UTF-8 JSON."""
    if not isinstance(raw, bytes):
        raise ValueError(f"a {type(raw).__name__}, not text")
    try:
        return json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except UnicodeDecodeError:
        raise ValueError("not UTF-8") from None


def _new_secret_file(path: Path, replace: bool) -> None:
    """Write a fresh secret to ``path`` (mode 0600); unless ``replace``, a concurrent creator wins."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secrets.token_hex(32))
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
    (with one warning: every record it signed is then probed again)."""
    path = directory / KEY_NAME
    for _ in range(3):
        try:
            text = path.read_bytes().strip()
        except FileNotFoundError:
            _new_secret_file(path, replace=False)
            continue
        except IsADirectoryError:
            text = b""
        if len(text) == 64 and all(c in b"0123456789abcdef" for c in text):
            return bytes.fromhex(text.decode("ascii"))
        log.warning("probe cache key %s is invalid; replacing it (stored probes will run again)", path)
        envcache.remove_or_move_aside(path)
        _new_secret_file(path, replace=True)
    raise OSError(f"probe cache key {path} cannot be created")


def _is_broken_file(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says the database file is damaged (move it aside), not the machine (full
    disk, read-only, locked: work without the cache)."""
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc)
        return text.startswith(("no such table", "no such column")) or "has no column" in text
    return not isinstance(exc, sqlite3.ProgrammingError | sqlite3.InterfaceError)


def move_database_aside(path: Path) -> Path:
    """Rename the SQLite file ``path`` (and its -wal/-shm companions) to ``<name>.corrupt-<ns>``, so
    a new database can start; returns the new name.  Raises OSError when the renaming fails."""
    aside = path.with_name(f"{path.name}.corrupt-{time.time_ns()}")
    if path.exists() or path.is_symlink():
        os.replace(path, aside)
    for suffix in ("-wal", "-shm"):
        companion = Path(f"{path}{suffix}")
        if companion.exists() and not companion.is_dir():
            os.replace(companion, f"{aside}{suffix}")
    return aside


class ProbeStore:
    """Probe records of every environment in ``directory/probes.sqlite3`` (None: no cache).

    Every method is safe to call from any thread and never raises for a problem of the
    store itself: it warns once and then acts as an empty store.
    """

    def __init__(self, directory: Path | None) -> None:
        #: the cache directory (None: no cache)
        self.directory = directory
        #: the database file (None: no cache)
        self.path = None if directory is None else directory / DB_NAME
        #: True once the store gave up (no cache directory, full disk, ...)
        self.disabled = directory is None
        self._conn: sqlite3.Connection | None = None
        self._secret = b""
        self._lock = threading.RLock()
        self._moved_aside = False

    def __enter__(self) -> ProbeStore:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the database connection (a later call opens it again)."""
        with self._lock:
            if self._conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.close()
                self._conn = None

    # ------------------------------------------------------------ opening, healing

    def _open(self) -> sqlite3.Connection:
        assert self.path is not None and self.directory is not None
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.path.exists() and not self.path.is_file():
            raise sqlite3.DatabaseError("is not a file")
        self._secret = load_secret(self.directory)
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False)
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            # WAL with synchronous NORMAL: a record survives the process being killed (it is in
            # the WAL when save returns); only a power cut can lose the last ones
            conn.execute("PRAGMA synchronous = NORMAL")
            if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                conn.execute("BEGIN IMMEDIATE")
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version != SCHEMA_VERSION:
                    if version != 0:
                        log.warning("probe cache %s has schema %s; rebuilding it", self.path, version)
                        conn.execute("DROP TABLE IF EXISTS probes")
                        conn.execute("DROP TABLE IF EXISTS devices")
                    for statement in SCHEMA.split(";"):
                        if statement.strip():
                            conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                conn.execute("COMMIT")
        except BaseException:
            conn.close()
            raise
        return conn

    def _move_aside(self, problem: str) -> None:
        assert self.path is not None
        self.close()
        self._moved_aside = True
        try:
            aside = move_database_aside(self.path)
        except OSError as exc:
            self._give_up(f"cannot be moved aside ({exc})")
            return
        log.warning(
            "probe cache %s %s; moved it aside to %s and started a new one", self.path, problem, aside
        )

    def _give_up(self, problem: str) -> None:
        self.close()
        self.disabled = True
        envcache.warn_once(str(self.path), f"probe cache {self.path} {problem}; working without the cache")

    def _do(self, action: str, work: Callable[[sqlite3.Connection], T], default: T) -> T:
        """``work(connection)``, healing a broken file once; ``default`` when the store is off."""
        with self._lock:
            while not self.disabled:
                try:
                    if self._conn is None:
                        self._conn = self._open()
                    return work(self._conn)
                except sqlite3.Error as exc:
                    if not _is_broken_file(exc):
                        self._give_up(f"{action} failed ({exc})")
                    elif self._moved_aside:
                        self._give_up(f"{action} failed again after a rebuild ({exc})")
                    else:
                        self._move_aside(f"is damaged ({exc})")
                except OSError as exc:  # the secret file: read-only directory, full disk
                    self._give_up(f"{action} failed ({exc})")
            return default

    # ------------------------------------------------------------ records

    def load(self, env_key: str, wanted: Collection[str] | None = None) -> dict[str, dict[str, Any]]:
        """The valid records of environment ``env_key`` by probe key (only those in ``wanted``,
        when given); invalid ones are deleted (one warning) so that they are probed again."""

        def work(conn: sqlite3.Connection) -> dict[str, dict[str, Any]]:
            rows = conn.execute(
                "SELECT rowid, CAST(probe_key AS BLOB), CAST(record AS BLOB), CAST(mac AS BLOB) "
                "FROM probes WHERE env_key = ?",
                (env_key,),
            ).fetchall()
            good: dict[str, dict[str, Any]] = {}
            bad: list[tuple[Any, Any, str, str]] = []
            for rowid, raw_key, raw_record, raw_mac in rows:
                try:
                    key = raw_key.decode("utf-8")
                    if wanted is not None and key not in wanted:
                        continue
                except (AttributeError, UnicodeDecodeError):
                    bad.append((rowid, raw_record, repr(raw_key)[:60], "has a key that is not UTF-8 text"))
                    continue
                record, problem = self._verify(("probe", env_key, key), raw_record, raw_mac, record_problem)
                if problem:
                    bad.append((rowid, raw_record, key, problem))
                else:
                    good[key] = record
            if bad:
                _, _, key, problem = bad[0]
                log.warning(
                    "probe cache %s: %d invalid record(s) discarded, to be probed again (%s %s)",
                    self.path,
                    len(bad),
                    key[:120],
                    problem,
                )
                with contextlib.suppress(sqlite3.OperationalError):  # read-only: they are skipped anyway
                    conn.executemany(
                        "DELETE FROM probes WHERE rowid = ? AND CAST(record AS BLOB) IS ?",
                        [(rowid, raw) for rowid, raw, _, _ in bad],
                    )
            return good

        return self._do("reading", work, {})

    def _verify(
        self, mac_parts: tuple[str, ...], raw: Any, raw_mac: Any, check: Callable[[Any], str]
    ) -> tuple[Any, str]:
        """``(value, "")`` for a stored JSON value that passes ``check`` and its HMAC, else
        ``(None, why not)``."""
        try:
            value = _decode_json(raw)
        except ValueError as exc:
            return None, f"is not valid JSON ({str(exc)[:80]})"
        problem = check(value)
        if problem:
            return None, problem
        expected = _mac(self._secret, *mac_parts, raw.decode("utf-8"))
        if not (isinstance(raw_mac, bytes) and hmac.compare_digest(raw_mac, expected.encode())):
            return None, "fails verification (edited or copied by hand?)"
        return value, ""

    def keys(self, env_key: str) -> set[str]:
        """Probe keys with a valid record in environment ``env_key``."""
        return set(self.load(env_key))

    def save(self, env_key: str, probe_key: str, record: dict[str, Any]) -> bool:
        """Store one record (its own transaction); False when it was not stored."""
        problem = record_problem(record)
        if problem:
            envcache.warn_once(str(self.path), f"probe cache: a probe record was not stored: it {problem}")
            return False
        text = json.dumps(record, sort_keys=True)

        def work(conn: sqlite3.Connection) -> bool:
            mac = _mac(self._secret, "probe", env_key, probe_key, text)
            conn.execute(
                "INSERT OR REPLACE INTO probes (env_key, probe_key, record, mac, saved_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (env_key, probe_key, text, mac, time.time()),
            )
            return True

        return self._do("writing", work, False)

    # ------------------------------------------------------------ devices

    def devices(self, env_key: str) -> dict[str, Any]:
        """The device description stored for ``env_key`` ({} when none or invalid)."""

        def work(conn: sqlite3.Connection) -> dict[str, Any]:
            row = conn.execute(
                "SELECT CAST(devices AS BLOB), CAST(mac AS BLOB) FROM devices WHERE env_key = ?", (env_key,)
            ).fetchone()
            if row is None:
                return {}
            devices, problem = self._verify(("devices", env_key), row[0], row[1], _devices_problem)
            if problem:
                log.warning("probe cache %s: devices record %s; discarded", self.path, problem)
                with contextlib.suppress(sqlite3.OperationalError):
                    conn.execute("DELETE FROM devices WHERE env_key = ?", (env_key,))
                return {}
            return dict(devices)

        return self._do("reading", work, {})

    def save_devices(self, env_key: str, devices: dict[str, Any]) -> bool:
        """Store the device description of ``env_key``; False when it was not stored."""
        text = json.dumps(devices, sort_keys=True, default=str)
        problem = _devices_problem(json.loads(text))
        if problem:
            envcache.warn_once(str(self.path), f"probe cache: devices not stored: they {problem}")
            return False

        def work(conn: sqlite3.Connection) -> bool:
            mac = _mac(self._secret, "devices", env_key, text)
            conn.execute(
                "INSERT OR REPLACE INTO devices (env_key, devices, mac, saved_at) VALUES (?, ?, ?, ?)",
                (env_key, text, mac, time.time()),
            )
            return True

        return self._do("writing", work, False)

    # ------------------------------------------------------------ housekeeping

    def clear(self) -> int:
        """Delete every record of every environment; returns how many probe records there were."""

        def work(conn: sqlite3.Connection) -> int:
            conn.execute("BEGIN IMMEDIATE")
            removed = conn.execute("DELETE FROM probes").rowcount
            conn.execute("DELETE FROM devices")
            conn.execute("COMMIT")
            return int(removed)

        return self._do("clearing", work, 0)


def _devices_problem(devices: Any) -> str:
    if not isinstance(devices, dict):
        return f"are a {type(devices).__name__}, not an object"
    if len(json.dumps(devices)) > MAX_DEVICES:
        return f"are longer than {MAX_DEVICES} characters"
    return ""


def open_store() -> ProbeStore:
    """The probe store of the cache directory (a disabled, empty one when there is none)."""
    return ProbeStore(envcache.cache_dir_or_none())


def store_stamp() -> tuple[Any, ...]:
    """A cheap value that changes whenever the store is written (path, size and mtime of the
    database and its write-ahead log): cache what you read from the store under it."""
    directory = envcache.cache_dir_or_none()
    if directory is None:
        return (None,)
    path = directory / DB_NAME
    stamp: list[Any] = [str(path)]
    for name in (path, Path(f"{path}-wal")):
        try:
            st = name.stat()
            stamp += [st.st_mtime_ns, st.st_size, st.st_ino]
        except OSError:
            stamp += [None, None, None]
    return tuple(stamp)
