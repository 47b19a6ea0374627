"""Backend runs of the Ranges/Accuracy sweeps made in a sandboxed worker process, cached on disk.

A sweep (:func:`explorer.queries.ranges.sweep`, :func:`~explorer.queries.ranges.binary_sweep`)
asks each backend for one vectorised run over an input grid.  :class:`WorkerRunner` makes the
runs of the backends in :data:`WORKER_BACKENDS` (TensorFlow) in a worker process
(:mod:`explorer.runtime.sandbox`) instead of importing the framework in the caller, and keeps every
answer in ``sweeps.sqlite3`` in the cache directory, keyed by what determines it: the
environment key (:func:`explorer.runtime.envcache.environment_key`: framework versions,
TensorFlow's included, platform, CPU, the code of ops and backends), the backend, op, format,
device and a SHA-256 of the input grid.  A later process with the same environment and grid
reads the answer back without starting a worker or importing the framework.

Nothing read back is trusted.  A row is used only when its metadata is JSON with exactly the
expected keys, types and bounded lengths, a known status, the backend asked for and a
result of exactly ``8 * len(grid)`` bytes (little-endian float64, read with
``numpy.frombuffer``: no pickle, nothing executed), and its HMAC (the probe store's
per-cache-directory secret, :func:`explorer.runtime.store.load_secret`) binds it to its
key.  Anything else is deleted (one warning) and computed again.  Runs that crashed or timed
out are not stored.  The file holds at most :data:`MAX_ENTRIES` rows and :data:`MAX_BYTES` of
results (oldest removed first).  A damaged database file is moved aside once; a cache
directory that cannot be used means "no cache", never a wrong or missing answer.

>>> import tempfile
>>> from pathlib import Path
>>> from explorer.queries.ranges import sweep
>>> with tempfile.TemporaryDirectory() as tmp:
...     runner = WorkerRunner(SweepStore(Path(tmp)), env_key="doc", worker_backends=("emulated",))
...     s = sweep("exp", "float16", ("emulated",), runner=runner)
...     again = sweep("exp", "float16", ("emulated",), runner=runner.cached_only())
...     runner.worker_runs, bool((s.runs["emulated"].result == again.runs["emulated"].result).all())
(1, True)
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import sqlite3
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from explorer.analysis.regions import BackendRun
from explorer.formats import Format
from explorer.ops import Op
from explorer.outcome import STATUSES, Status
from explorer.runtime import envcache, store
from explorer.runtime.store import SignedStore
from explorer.runtime.worker_slots import SlottedSandbox, WorkersBusy

log = logging.getLogger(__name__)

#: the database file in the cache directory
DB_NAME = "sweeps.sqlite3"
#: ``PRAGMA user_version`` of the schema below; another value means rebuild
SCHEMA_VERSION = 1
#: backends whose sweep runs are made in a worker process (never imported by the caller)
WORKER_BACKENDS: tuple[str, ...] = ("tensorflow",)
#: most rows kept (oldest removed first)
MAX_ENTRIES = 512
#: most bytes of results kept in all (oldest removed first)
MAX_BYTES = 256 << 20
#: the longest grid stored (values); a float16 unary sweep has 63,489, a 129 x 129 binary grid 16,641
MAX_VALUES = 1 << 22
#: the longest error or detail text stored
MAX_TEXT = 1 << 14
#: the longest backend, status or device name
MAX_NAME = 200
#: seconds one worker run may take (the worker's TensorFlow import is not counted)
RUN_TIMEOUT = 300.0
#: seconds a sweep worker may stay idle before it is stopped (its memory given back)
IDLE_RELEASE_S = 120.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    key      TEXT PRIMARY KEY,  -- run_key(): sha256 of env key, backend, op, format, device, grid
    backend  TEXT NOT NULL,
    op       TEXT NOT NULL,
    format   TEXT NOT NULL,
    meta     TEXT NOT NULL,     -- JSON: backend, status, error, detail, device, n, has_result, has_at_zero
    result   BLOB,              -- n little-endian float64, or NULL
    at_zero  BLOB,              -- 2 little-endian float64 (unary sweeps), or NULL
    mac      TEXT NOT NULL,     -- HMAC-SHA256 of key, meta, sha256(result), sha256(at_zero)
    saved_at REAL NOT NULL
);
"""

#: the keys of a row's metadata and the types their values must have
META_FIELDS: dict[str, tuple[type, ...]] = {
    "backend": (str,),
    "status": (str,),
    "error": (str,),
    "detail": (str,),
    "device": (str, type(None)),
    "n": (int,),
    "has_result": (bool,),
    "has_at_zero": (bool,),
}
_NAME_FIELDS = ("backend", "status", "device")


class NotCachedYet(LookupError):
    """A run the cache does not hold, asked of a runner that must not start a worker."""


def grid_digest(inputs: tuple[np.ndarray, ...]) -> str:
    """SHA-256 of an input grid (each operand as little-endian float64, with its shape).

    >>> grid_digest((np.array([1.0, 2.0]),)) == grid_digest((np.array([1.0, 2.0], np.float32),))
    True
    """
    digest = hashlib.sha256()
    for x in inputs:
        values = np.ascontiguousarray(x, dtype="<f8")
        digest.update(json.dumps(list(values.shape)).encode())
        digest.update(values.tobytes())
    return digest.hexdigest()


def run_key(
    env_key: str, backend: str, op: str, fmt: str, device: str, inputs: tuple[np.ndarray, ...]
) -> str:
    """The cache key of one backend run: what determines its answer."""
    text = json.dumps(["sweep-run", env_key, backend, op, fmt, device, grid_digest(inputs)])
    return hashlib.sha256(text.encode()).hexdigest()


def meta_problem(meta: Any, backend: str, n: int, unary: bool) -> str:
    """Why ``meta`` is not the metadata of a run of ``backend`` over ``n`` inputs ("" when it is).

    >>> meta_problem({"backend": "tensorflow"}, "tensorflow", 3, True)
    "lacks 'detail', 'device', 'error', 'has_at_zero', 'has_result', 'n', 'status'"
    """
    if not isinstance(meta, dict):
        return f"is a {type(meta).__name__}, not an object"
    if meta.keys() != META_FIELDS.keys():
        missing = sorted(set(META_FIELDS) - set(meta))
        extra = sorted(str(k)[:40] for k in set(meta) - set(META_FIELDS))
        return f"lacks {', '.join(map(repr, missing))}" if missing else f"has unknown keys {extra[:5]}"
    for name, kinds in META_FIELDS.items():
        value = meta[name]
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            return f"has a {type(value).__name__} for {name!r}"
        limit = MAX_NAME if name in _NAME_FIELDS else MAX_TEXT
        if isinstance(value, str) and len(value) > limit:
            return f"has {len(value)} characters in {name!r} (at most {limit})"
    if meta["status"] not in STATUSES:
        return f"has unknown status {meta['status'][:40]!r}"
    if meta["backend"] != backend:
        return f"is a run of {meta['backend'][:40]!r}, not {backend!r}"
    if meta["n"] != n:
        return f"is for {meta['n']} inputs, not {n}"
    if meta["has_at_zero"] and not unary:
        return "has results at zero for a binary sweep"
    return ""


def _blob_digest(blob: bytes | None) -> str:
    return "" if blob is None else hashlib.sha256(blob).hexdigest()


def _mac(secret: bytes, key: str, meta_text: str, result: bytes | None, at_zero: bytes | None) -> str:
    message = json.dumps(["sweep-run", key, meta_text, _blob_digest(result), _blob_digest(at_zero)])
    return hmac.new(secret, message.encode(), hashlib.sha256).hexdigest()


def _floats(blob: Any, count: int) -> np.ndarray | None:
    """``count`` little-endian float64 from ``blob`` (a copy), or None when it is not exactly that."""
    if not isinstance(blob, bytes) or len(blob) != 8 * count:
        return None
    return np.frombuffer(blob, dtype="<f8").astype(np.float64)


class SweepStore(SignedStore):
    """Worker-made backend runs in ``directory/sweeps.sqlite3`` (None: no cache).

    Safe to use from any thread; a problem of the store itself is one warning, after which
    it acts as an empty store.
    """

    DB_NAME = DB_NAME
    SCHEMA = SCHEMA
    SCHEMA_VERSION = SCHEMA_VERSION
    TABLES = ("runs",)
    LABEL = "sweep cache"

    def load(self, key: str, backend: str, n: int, unary: bool) -> BackendRun | None:
        """The valid stored run ``key`` of ``backend`` over ``n`` inputs, or None (an invalid row
        is deleted, with a warning)."""

        def work(conn: sqlite3.Connection) -> BackendRun | None:
            row = conn.execute(
                "SELECT CAST(meta AS BLOB), result, at_zero, CAST(mac AS BLOB) FROM runs WHERE key = ?",
                (key,),
            ).fetchone()
            if row is None:
                return None
            run, problem = self._verify(key, backend, n, unary, *row)
            if problem:
                log.warning(
                    "sweep cache %s: a stored %s run %s; discarded, computing it again",
                    self.path,
                    backend,
                    problem,
                )
                with contextlib.suppress(sqlite3.OperationalError):
                    conn.execute("DELETE FROM runs WHERE key = ?", (key,))
            return run

        return self._do("reading", work, None)

    def _verify(
        self,
        key: str,
        backend: str,
        n: int,
        unary: bool,
        raw_meta: Any,
        result: Any,
        at_zero: Any,
        raw_mac: Any,
    ) -> tuple[BackendRun | None, str]:
        if not isinstance(raw_meta, bytes) or len(raw_meta) > 4 * MAX_TEXT:
            return None, "has metadata that is not short text"
        try:
            meta = json.loads(raw_meta.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return None, "has metadata that is not JSON"
        problem = meta_problem(meta, backend, n, unary)
        if problem:
            return None, f"has metadata that {problem}"
        values = _floats(result, n) if meta["has_result"] else None
        if meta["has_result"] and values is None:
            return None, f"has a result that is not {n} float64 values"
        if not meta["has_result"] and result is not None:
            return None, "has a result it says it lacks"
        zeros = _floats(at_zero, 2) if meta["has_at_zero"] else None
        if meta["has_at_zero"] and zeros is None:
            return None, "has results at zero that are not 2 float64 values"
        if not meta["has_at_zero"] and at_zero is not None:
            return None, "has results at zero it says it lacks"
        expected = _mac(self._secret, key, raw_meta.decode("utf-8"), result, at_zero)
        if not store.mac_matches(raw_mac, expected):
            return None, "fails verification (edited or copied by hand?)"
        run = BackendRun(
            meta["backend"], meta["status"], meta["error"], meta["detail"], values, meta["device"], zeros
        )
        return run, ""

    def save(self, key: str, op: str, fmt: str, run: BackendRun, n: int) -> bool:
        """Store one run over ``n`` inputs; False when it was not stored."""
        result = None if run.result is None else np.ascontiguousarray(run.result, dtype="<f8").ravel()
        at_zero = None if run.at_zero is None else np.ascontiguousarray(run.at_zero, dtype="<f8").ravel()
        if (
            n > MAX_VALUES
            or (result is not None and result.size != n)
            or (at_zero is not None and at_zero.size != 2)
        ):
            return False
        meta = {
            "backend": run.backend,
            "status": run.status,
            "error": run.error[:MAX_TEXT],
            "detail": run.detail[:MAX_TEXT],
            "device": run.device,
            "n": n,
            "has_result": result is not None,
            "has_at_zero": at_zero is not None,
        }
        if meta_problem(meta, run.backend, n, unary=True):
            return False
        text = json.dumps(meta, sort_keys=True)
        result_bytes = None if result is None else result.tobytes()
        zero_bytes = None if at_zero is None else at_zero.tobytes()

        def work(conn: sqlite3.Connection) -> bool:
            mac = _mac(self._secret, key, text, result_bytes, zero_bytes)
            with store.transaction(conn):
                conn.execute(
                    "INSERT OR REPLACE INTO runs "
                    "(key, backend, op, format, meta, result, at_zero, mac, saved_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (key, run.backend, op, fmt, text, result_bytes, zero_bytes, mac, time.time()),
                )
                _trim(conn)
            return True

        return bool(self._do("writing", work, False))

    def count(self) -> int:
        """How many rows the store holds (valid or not)."""
        return int(
            self._do("counting", lambda conn: conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0], 0)
        )


def _trim(conn: sqlite3.Connection) -> None:
    """Keep at most MAX_ENTRIES rows and MAX_BYTES of results, newest first."""
    conn.execute(
        "DELETE FROM runs WHERE key NOT IN (SELECT key FROM runs ORDER BY saved_at DESC LIMIT ?)",
        (MAX_ENTRIES,),
    )
    total = 0
    for key, size in conn.execute(
        "SELECT key, COALESCE(LENGTH(result), 0) + COALESCE(LENGTH(at_zero), 0) "
        "FROM runs ORDER BY saved_at DESC"
    ).fetchall():
        total += int(size)
        if total > MAX_BYTES:
            conn.execute("DELETE FROM runs WHERE key = ?", (key,))


def open_store() -> SweepStore:
    """The sweep store of the cache directory (a disabled, empty one when there is none)."""
    return SweepStore(envcache.cache_dir_or_none())


# ---------------------------------------------------------------- the worker


def run_in_worker(backend: str, op: str, fmt: str, inputs: tuple[np.ndarray, ...], device: str) -> BackendRun:
    """Worker side: one backend run of a sweep (:func:`explorer.queries.ranges.run_backend`)."""
    from explorer.formats import resolve
    from explorer.ops import get_op
    from explorer.runtime.backend_run import run_backend

    return run_backend(backend, get_op(op), resolve(fmt), inputs, device)


_SANDBOX = SlottedSandbox(IDLE_RELEASE_S)


def sweep_sandbox() -> SlottedSandbox:
    """The process-wide sandbox of sweep runs (workers stopped after :data:`IDLE_RELEASE_S` idle)."""
    return _SANDBOX


def worker_call(key: str, func: Callable[..., Any], *args: Any, timeout: float = RUN_TIMEOUT) -> Any:
    """``func(*args)`` in the sweep sandbox's worker ``key`` (its framework imported first)."""
    return _SANDBOX.call(key, func, *args, timeout=timeout)


class WorkerRunner:
    """A sweep's backend runner (``ranges.sweep(..., runner=...)``): the runs of ``worker_backends``
    come from the store, else from a worker process (then stored); others run here.

    ``cached_only()`` is the same runner that raises :class:`NotCachedYet` instead of starting a
    worker.  ``worker_runs`` counts the runs a worker made.
    """

    def __init__(
        self,
        store: SweepStore,
        env_key: str | None = None,
        worker_backends: tuple[str, ...] = WORKER_BACKENDS,
        allow_worker: bool = True,
        timeout: float = RUN_TIMEOUT,
    ) -> None:
        self.store = store
        self.env_key = env_key if env_key is not None else envcache.environment_key()
        self.worker_backends = worker_backends
        self.allow_worker = allow_worker
        self.timeout = timeout
        self.worker_runs = 0

    def cached_only(self) -> WorkerRunner:
        """This runner, reading the store only."""
        other = WorkerRunner(self.store, self.env_key, self.worker_backends, allow_worker=False)
        return other

    def __call__(
        self, name: str, op: Op, fmt: Format, inputs: tuple[np.ndarray, ...], device: str
    ) -> BackendRun:
        from explorer.runtime.backend_run import run_backend

        if name not in self.worker_backends:
            return run_backend(name, op, fmt, inputs, device)
        unary = len(inputs) == 1
        n = int(inputs[0].size)
        key = run_key(self.env_key, name, op.name, fmt.name, device, inputs)
        stored = self.store.load(key, name, n, unary)
        if stored is not None:
            return stored
        if not self.allow_worker:
            raise NotCachedYet(f"{name} {op.name} {fmt.name}: not in the sweep cache")
        run = self._from_worker(name, op, fmt, inputs, device)
        if run.status not in (Status.CRASHED.value, Status.TIMEOUT.value):
            self.store.save(key, op.name, fmt.name, run, n)
        return run

    def _from_worker(
        self, name: str, op: Op, fmt: Format, inputs: tuple[np.ndarray, ...], device: str
    ) -> BackendRun:
        from explorer.runtime.sandbox import SandboxCrash, SandboxError, SandboxTimeout

        self.worker_runs += 1
        try:
            run = worker_call(
                name, run_in_worker, name, op.name, fmt.name, inputs, device, timeout=self.timeout
            )
        except SandboxCrash as exc:
            return BackendRun(name, Status.CRASHED.value, str(exc).splitlines()[0], str(exc))
        except (SandboxTimeout, WorkersBusy) as exc:
            return BackendRun(name, Status.TIMEOUT.value, str(exc))
        except SandboxError as exc:
            return BackendRun(name, Status.ERROR.value, str(exc).splitlines()[0], str(exc))
        if not isinstance(run, BackendRun):
            raise TypeError(f"the {name} worker answered a {type(run).__name__}, not a BackendRun")
        return run
