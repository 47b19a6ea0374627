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
import json
import logging
import math
import sqlite3
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from explorer.outcome import PHASES, STATUSES
from explorer.runtime import envcache, store
from explorer.runtime.store import KEY_NAME, SignedStore, load_secret

log = logging.getLogger(__name__)

#: the database file in the cache directory
DB_NAME = "probes.sqlite3"
#: ``PRAGMA user_version`` of the schema below; another value means rebuild
SCHEMA_VERSION = 2
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

__all__ = [
    "DB_NAME",
    "KEY_NAME",
    "RECORD_FIELDS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "ProbeStore",
    "load_secret",
    "open_store",
    "record_problem",
    "store_stamp",
]


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


class ProbeStore(SignedStore):
    """Probe records of every environment in ``directory/probes.sqlite3`` (None: no cache).

    Every method is safe to call from any thread and never raises for a problem of the
    store itself: it warns once and then acts as an empty store.
    """

    DB_NAME = DB_NAME
    SCHEMA = SCHEMA
    SCHEMA_VERSION = SCHEMA_VERSION
    TABLES = ("probes", "devices")
    LABEL = "probe cache"

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
        expected = store.mac(self._secret, *mac_parts, raw.decode("utf-8"))
        if not store.mac_matches(raw_mac, expected):
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
            mac = store.mac(self._secret, "probe", env_key, probe_key, text)
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
            mac = store.mac(self._secret, "devices", env_key, text)
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
            with store.transaction(conn):
                removed = conn.execute("DELETE FROM probes").rowcount
                conn.execute("DELETE FROM devices")
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
