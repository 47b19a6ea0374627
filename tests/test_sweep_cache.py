"""The on-disk cache of worker-made sweep runs (explorer/runtime/sweep_store.py) trusts nothing
it reads: a crafted, tampered, misplaced or corrupt entry is never returned, is deleted and the
run is made again in a worker; nothing stored is ever unpickled or executed.

The runs here are those of the ``emulated`` backend made in a real worker process (cheap to
start; the same path TensorFlow's runs take), and checked against ml_dtypes directly.
"""

from __future__ import annotations

import json
import os
import pickle
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from explorer.queries.ranges import sweep
from explorer.runtime import sweep_store as sweep_cache
from explorer.runtime.sweep_store import SweepStore, WorkerRunner
from tests.support.processes import HOLD_A_SLOT


def every_float16() -> np.ndarray:
    values = np.arange(2**16, dtype=np.uint16).view(np.float16)
    return np.unique(values[np.isfinite(values)].astype(np.float64))


def oracle_exp_float16() -> np.ndarray:
    """exp of every finite float16 (-0 merged with 0), rounded once from float64 by ml_dtypes."""
    x = every_float16()
    with np.errstate(over="ignore"):
        return np.exp(x).astype(np.float16).astype(np.float64)


def runner_in(directory: Path) -> WorkerRunner:
    return WorkerRunner(SweepStore(directory), env_key="test-env", worker_backends=("emulated",))


def stored_rows(directory: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(directory / sweep_cache.DB_NAME) as conn:
        return conn.execute("SELECT key, meta, result, at_zero, mac FROM runs").fetchall()


def rewrite(directory: Path, sql: str, *args: Any) -> None:
    with sqlite3.connect(directory / sweep_cache.DB_NAME) as conn:
        conn.execute(sql, args)


def fresh_sweep(directory: Path) -> tuple[np.ndarray, WorkerRunner]:
    runner = runner_in(directory)
    s = sweep("exp", "float16", ("emulated",), runner=runner)
    result = s.runs["emulated"].result
    assert result is not None
    return result, runner


@pytest.fixture
def cached(tmp_path: Path) -> Path:
    """A cache directory holding one genuine run (exp in float16, emulated, made in a worker)."""
    result, runner = fresh_sweep(tmp_path)
    assert runner.worker_runs == 1
    assert np.array_equal(result, oracle_exp_float16(), equal_nan=True)
    assert len(stored_rows(tmp_path)) == 1
    return tmp_path


def test_a_genuine_entry_is_read_back_without_a_worker(cached: Path) -> None:
    runner = runner_in(cached).cached_only()
    s = sweep("exp", "float16", ("emulated",), runner=runner)
    assert runner.worker_runs == 0
    assert np.array_equal(s.runs["emulated"].result, oracle_exp_float16(), equal_nan=True)


def _tamper_values(directory: Path) -> None:
    ((key, _meta, result, _, _),) = stored_rows(directory)
    forged = np.full(len(result) // 8, 42.0).astype("<f8").tobytes()
    rewrite(directory, "UPDATE runs SET result = ? WHERE key = ?", forged, key)


def _forge_mac_with_another_secret(directory: Path) -> None:
    ((key, meta, result, at_zero, _),) = stored_rows(directory)
    forged = np.full(len(result) // 8, 42.0).astype("<f8").tobytes()
    mac = sweep_cache._mac(b"\x00" * 32, key, meta, forged, at_zero)
    rewrite(directory, "UPDATE runs SET result = ?, mac = ? WHERE key = ?", forged, mac, key)


def _pickle_payload(directory: Path) -> None:
    """A pickle that would create a file when unpickled, in place of the result."""
    marker = directory / "EXECUTED"

    class Boom:
        def __reduce__(self) -> Any:
            return (os.system, (f"touch {marker}",))

    ((key, *_),) = stored_rows(directory)
    rewrite(directory, "UPDATE runs SET result = ? WHERE key = ?", pickle.dumps(Boom()), key)


def _meta_not_json(directory: Path) -> None:
    rewrite(directory, "UPDATE runs SET meta = ?", "{not json")


def _meta_for_other_size(directory: Path) -> None:
    ((key, meta, *_),) = stored_rows(directory)
    data = json.loads(meta)
    data["n"] = 3
    rewrite(
        directory, "UPDATE runs SET meta = ?, result = ? WHERE key = ?", json.dumps(data), b"\0" * 24, key
    )


def _meta_with_extra_keys(directory: Path) -> None:
    ((key, meta, *_),) = stored_rows(directory)
    data = dict(json.loads(meta), extra="<script>alert(1)</script>")
    rewrite(directory, "UPDATE runs SET meta = ? WHERE key = ?", json.dumps(data), key)


def _truncated_result(directory: Path) -> None:
    ((key, _meta, result, *_),) = stored_rows(directory)
    rewrite(directory, "UPDATE runs SET result = ? WHERE key = ?", result[:-8], key)


def _row_moved_to_another_key(directory: Path) -> None:
    """A genuine row copied under the key of another op (log): its MAC binds it to exp's key."""
    import explorer.formats as formats
    from explorer.analysis.regions import unary_inputs

    ((key, *_),) = stored_rows(directory)
    x, _ = unary_inputs(formats.resolve("float16"))
    other = sweep_cache.run_key("test-env", "emulated", "log", "float16", "CPU", (np.concatenate([x]),))
    rewrite(
        directory,
        "INSERT INTO runs SELECT ?, backend, 'log', format, meta, result, at_zero, mac, saved_at "
        "FROM runs WHERE key = ?",
        other,
        key,
    )
    rewrite(directory, "DELETE FROM runs WHERE key = ?", key)


@pytest.mark.parametrize(
    "damage",
    [
        _tamper_values,
        _forge_mac_with_another_secret,
        _pickle_payload,
        _meta_not_json,
        _meta_for_other_size,
        _meta_with_extra_keys,
        _truncated_result,
    ],
)
def test_a_crafted_or_corrupt_entry_is_ignored_deleted_and_computed_again(
    cached: Path, damage: Any, caplog: pytest.LogCaptureFixture
) -> None:
    damage(cached)
    with pytest.raises(sweep_cache.NotCachedYet):  # never returned, not even by a cache-only reader
        sweep("exp", "float16", ("emulated",), runner=runner_in(cached).cached_only())
    result, runner = fresh_sweep(cached)
    assert runner.worker_runs == 1  # computed again, in a worker
    assert np.array_equal(result, oracle_exp_float16(), equal_nan=True)
    assert not (cached / "EXECUTED").exists()
    assert "discarded" in caplog.text
    # the store now holds the genuine run again
    again = runner_in(cached).cached_only()
    s = sweep("exp", "float16", ("emulated",), runner=again)
    assert np.array_equal(s.runs["emulated"].result, oracle_exp_float16(), equal_nan=True)


def test_a_row_copied_to_another_key_is_not_used_for_it(cached: Path) -> None:
    _row_moved_to_another_key(cached)
    runner = runner_in(cached)
    s = sweep("log", "float16", ("emulated",), runner=runner)
    assert runner.worker_runs == 1
    x = every_float16()
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.log(x).astype(np.float16).astype(np.float64)
    assert np.array_equal(s.runs["emulated"].result, expected, equal_nan=True)


def test_a_database_that_is_not_sqlite_is_moved_aside(tmp_path: Path) -> None:
    (tmp_path / sweep_cache.DB_NAME).write_bytes(b"this is not a database" * 100)
    result, runner = fresh_sweep(tmp_path)
    assert runner.worker_runs == 1
    assert np.array_equal(result, oracle_exp_float16(), equal_nan=True)
    assert list(tmp_path.glob(f"{sweep_cache.DB_NAME}.corrupt-*"))
    assert len(stored_rows(tmp_path)) == 1


def test_no_cache_directory_still_answers(tmp_path: Path) -> None:
    runner = WorkerRunner(SweepStore(None), env_key="x", worker_backends=("emulated",))
    s = sweep("exp", "float16", ("emulated",), runner=runner)
    assert np.array_equal(s.runs["emulated"].result, oracle_exp_float16(), equal_nan=True)


def test_the_store_keeps_at_most_max_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from explorer.analysis.regions import BackendRun

    monkeypatch.setattr(sweep_cache, "MAX_ENTRIES", 3)
    store = SweepStore(tmp_path)
    for i in range(5):
        run = BackendRun("emulated", "ok", result=np.array([float(i)]), device="CPU", at_zero=np.zeros(2))
        assert store.save(f"k{i}", "exp", "float16", run, 1)
    assert store.count() == 3
    assert store.load("k0", "emulated", 1, True) is None
    kept = store.load("k4", "emulated", 1, True)
    assert kept is not None and kept.result is not None and kept.result.tolist() == [4.0]


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_workers_of_the_whole_machine_share_the_slots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With one slot held by another process (another visitor's kernel), a sweep that needs a worker
    waits, then reports a timeout that is not cached; once that process is killed (its lock goes
    with it), the next sweep gets the slot and runs."""
    import subprocess
    import sys

    monkeypatch.setenv("PX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PX_WORKER_SLOTS", "1")
    slot_file = tmp_path / "cache" / "worker-slots" / "slot-0.lock"
    slot_file.parent.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", HOLD_A_SLOT, str(slot_file)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        sweep_cache.sweep_sandbox().close()  # no sandbox of this process holds a slot already
        store_dir = tmp_path / "store"
        runner = WorkerRunner(
            SweepStore(store_dir), env_key="slots", worker_backends=("emulated",), timeout=1.0
        )
        busy = sweep("exp", "float16", ("emulated",), runner=runner).runs["emulated"]
        assert busy.status == "timeout" and "worker slots of this machine" in busy.error, busy
        assert sweep_cache.sweep_sandbox().workers() == {}, "no worker may start without a slot"
        assert not (store_dir / sweep_cache.DB_NAME).exists() or stored_rows(store_dir) == []
    finally:
        holder.kill()
        holder.wait(10)
        assert holder.stdout is not None
        holder.stdout.close()
    runner = WorkerRunner(SweepStore(tmp_path / "store"), env_key="slots", worker_backends=("emulated",))
    ran = sweep("exp", "float16", ("emulated",), runner=runner).runs["emulated"]
    assert runner.worker_runs == 1
    assert np.array_equal(ran.result, oracle_exp_float16(), equal_nan=True)
    sweep_cache.sweep_sandbox().close()
