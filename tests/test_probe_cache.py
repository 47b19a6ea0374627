"""The probe store: nothing probed is lost, nothing corrupt or edited is trusted, and no usable
cache means no cache (one warning), never a wrong or missing answer.

Real probes with the numpy and emulated backends (fast); the registry is a tiny stand-in
(numpy and emulated eager rows do not use it), so no test here needs TensorFlow.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from explorer.backends import get_backend
from explorer.outcome import Status
from explorer.queries import availability as av
from explorer.queries import availability_probes as av_probes
from explorer.queries.availability_result import AvailabilityResult
from explorer.runtime import envcache, registry
from explorer.runtime import probe_store as probe_cache
from explorer.runtime import store as sqlite_store
from explorer.runtime.probe import Probe, failure_record, probe_record
from explorer.runtime.registry import DATA_VERSION, Registry, get_registry

DTYPES = ["float16", "bfloat16"]
BACKENDS = ["numpy", "emulated"]
#: all a registry needs to hold for numpy and emulated eager rows
REGISTRY_DATA: dict[str, Any] = {
    "data_version": DATA_VERSION,
    "tf_version": "none",
    "ops": {},
    "kernels": {},
    "float_dtypes": DTYPES,
    "labelled_kernels_ignored": 0,
    "xla_error": "",
}
#: NumPy has no bfloat16: the cell whose "ok" a forger would fake
NOT_OK = "numpy|exp|bfloat16|CPU|eager"
OK_CELL = "numpy|exp|float16|CPU|eager"


@pytest.fixture(autouse=True)
def cache(cache_dir: Path) -> Path:
    """Every test's own PX_CACHE_DIR (tests/conftest.py's ``cache_dir``), by the name used here."""
    return cache_dir


@pytest.fixture(scope="module")
def reg() -> Registry:
    return Registry(REGISTRY_DATA)


@pytest.fixture(scope="module")
def truth() -> dict[str, str]:
    """Each cell's status from running the backend directly here (no store, no sandbox)."""
    return {
        Probe(b, op, d, "CPU", "eager").key: get_backend(b)
        .run(op, d, device="CPU", mode="eager")
        .status.value
        for b in BACKENDS
        for op in ("exp", "log", "sqrt")
        for d in DTYPES
    }


def sweep(reg: Registry, ops: tuple[str, ...] = ("exp",), **kwargs: Any) -> AvailabilityResult:
    return av.availability(
        ops=list(ops),
        dtypes=DTYPES,
        backends=BACKENDS,
        modes=["eager"],
        progress=False,
        registry=reg,
        **kwargs,
    )


def statuses(result: AvailabilityResult) -> dict[str, str]:
    keys = ("backend", "op", "dtype", "device", "mode")
    return {Probe(*(r[k] for k in keys)).key: r["status"] for r in result.records()}


def expected(truth: dict[str, str], ops: tuple[str, ...] = ("exp",)) -> dict[str, str]:
    return {k: v for k, v in truth.items() if k.split("|")[1] in ops}


def stored(cache: Path) -> dict[str, dict[str, Any]]:
    with probe_cache.ProbeStore(cache) as store:
        return store.load(envcache.environment_key())


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name.startswith("explorer.runtime")
    ]


def execute(cache: Path, sql: str, *args: Any) -> None:
    conn = sqlite3.connect(cache / probe_cache.DB_NAME)
    with conn:
        conn.execute(sql, args)
    conn.close()


def stored_text(cache: Path, probe_key: str) -> str:
    conn = sqlite3.connect(cache / probe_cache.DB_NAME)
    (text,) = conn.execute("SELECT record FROM probes WHERE probe_key = ?", (probe_key,)).fetchone()
    conn.close()
    return str(text)


def forge(cache: Path, probe_key: str, text: str, env_key: str | None = None) -> None:
    """Store ``text`` as a record with a valid HMAC (only someone holding the secret can)."""
    env_key = env_key or envcache.environment_key()
    secret = probe_cache.load_secret(cache)
    mac = sqlite_store.mac(secret, "probe", env_key, probe_key, text)
    execute(
        cache,
        "INSERT OR REPLACE INTO probes (env_key, probe_key, record, mac, saved_at) VALUES (?, ?, ?, ?, 0)",
        env_key,
        probe_key,
        text,
        mac,
    )


# ------------------------------------------------------------------ nothing probed is lost


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_no_cache_probes_again_and_keeps_the_other_records(
    reg: Registry, cache: Path, truth: dict[str, str]
) -> None:
    ops = ("exp", "log")
    first = sweep(reg, ops)
    assert (first.probed, first.cached) == (8, 0)
    assert statuses(first) == expected(truth, ops)
    again = av.availability(
        ops="exp",
        dtypes="bfloat16",
        backends="numpy",
        modes="eager",
        use_cache=False,
        progress=False,
        registry=reg,
    )
    assert (again.probed, again.cached) == (1, 0)
    assert statuses(again) == {NOT_OK: truth[NOT_OK]}
    assert set(stored(cache)) == set(expected(truth, ops))  # the other 7 are still there
    third = sweep(reg, ops)
    assert (third.probed, third.cached) == (0, 8)
    assert statuses(third) == expected(truth, ops)


def _write_registry_cache(cache: Path) -> None:
    """So that CLI subprocesses find a registry without reading TensorFlow's."""
    cache.mkdir(parents=True, exist_ok=True)
    (cache / registry._disk_key()).write_text(json.dumps(REGISTRY_DATA))


@pytest.mark.slow
def test_two_concurrent_sweeps_in_two_processes_both_end_up_in_the_store(
    cache: Path, truth: dict[str, str]
) -> None:
    _write_registry_cache(cache)

    def cli(*ops: str) -> subprocess.Popen[str]:
        args = [a for op in ops for a in ("--op", op)] + [a for d in DTYPES for a in ("--dtype", d)]
        args += [a for b in BACKENDS for a in ("--backend", b)]
        return subprocess.Popen(
            [sys.executable, "-m", "explorer", "kernels", "--mode", "eager", "--json", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    runs = [cli("exp", "log"), cli("sqrt", "log")]  # both probe log too: the same cells, merged
    outputs = [run.communicate(timeout=300) for run in runs]
    for run, (out, err) in zip(runs, outputs, strict=True):
        assert run.returncode == 0, err
        assert "cache" not in err.lower(), err  # no "database is locked", no "working without"
        rows = json.loads(out)["result"]
        assert {
            Probe(r["backend"], r["op"], r["dtype"], r["device"], r["mode"]).key: r["status"] for r in rows
        }
    have = stored(cache)
    assert set(have) == set(truth)  # exp, log and sqrt: nothing lost to the other writer
    assert {k: r["status"] for k, r in have.items()} == truth


def test_a_sweep_interrupted_after_some_probes_keeps_them(
    reg: Registry, cache: Path, truth: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = av_probes.run_probes

    def interrupted(probes: list[Probe], **kwargs: Any) -> dict[str, dict[str, Any]]:
        real(probes[:2], **kwargs)  # two records arrive (through on_record) ...
        raise KeyboardInterrupt  # ... then Ctrl-C

    monkeypatch.setattr(av_probes, "run_probes", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sweep(reg)
    kept = stored(cache)
    assert len(kept) == 2 and {k: r["status"] for k, r in kept.items()} == {k: truth[k] for k in kept}
    monkeypatch.setattr(av_probes, "run_probes", real)
    resumed = sweep(reg)
    assert (resumed.probed, resumed.cached) == (2, 2)
    assert statuses(resumed) == expected(truth)


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_a_sweep_killed_with_sigkill_keeps_what_finished(cache: Path, truth: dict[str, str]) -> None:
    script = textwrap.dedent(
        f"""
        import sys, time
        from explorer.queries import availability as av
        from explorer.queries import availability_probes as av_probes
        from explorer.runtime.registry import Registry

        real = av_probes.run_probes

        def then_hang(probes, **kwargs):
            real(probes[:3], **kwargs)
            print("three probed", flush=True)
            time.sleep(600)  # killed here, before the sweep ends

        av_probes.run_probes = then_hang
        av.availability(ops=["exp"], dtypes={DTYPES!r}, backends={BACKENDS!r}, modes=["eager"],
                        progress=False, registry=Registry({REGISTRY_DATA!r}))
        """
    )
    with subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True
    ) as run:
        try:
            assert run.stdout is not None
            assert run.stdout.readline().strip() == "three probed"
        finally:
            os.killpg(run.pid, signal.SIGKILL)  # the sweep and its sandbox workers
            run.wait(timeout=60)
    assert run.returncode == -signal.SIGKILL
    kept = stored(cache)
    assert len(kept) == 3
    assert {k: r["status"] for k, r in kept.items()} == {k: truth[k] for k in kept}


# ------------------------------------------------------------------ nothing corrupt is trusted


def _record(cache: Path, **change: Any) -> str:
    record = json.loads(stored_text(cache, NOT_OK))
    record.update(change)
    return json.dumps(record, sort_keys=True)


CORRUPT_RECORDS: dict[str, Any] = {
    # forged: a valid HMAC, so the schema alone must catch them
    "a string": lambda cache: forge(cache, NOT_OK, '"ok"'),
    "unknown status": lambda cache: forge(cache, NOT_OK, _record(cache, status="maybe")),
    "unknown phase": lambda cache: forge(cache, NOT_OK, _record(cache, phase="somewhere")),
    "string seconds": lambda cache: forge(cache, NOT_OK, _record(cache, seconds="0.5")),
    "integer seconds": lambda cache: forge(cache, NOT_OK, _record(cache, seconds=1)),
    "infinite seconds": lambda cache: forge(
        cache, NOT_OK, _record(cache, seconds=1e999).replace("Infinity", "1e999")
    ),
    "missing status": lambda cache: forge(
        cache, NOT_OK, json.dumps({k: v for k, v in json.loads(_record(cache)).items() if k != "status"})
    ),
    "integer error": lambda cache: forge(cache, NOT_OK, _record(cache, error=3)),
    "a list for ran_on": lambda cache: forge(cache, NOT_OK, _record(cache, ran_on=["CPU"])),
    "unknown key": lambda cache: forge(cache, NOT_OK, _record(cache, trusted=True)),
    "huge error": lambda cache: forge(cache, NOT_OK, _record(cache, error="x" * (probe_cache.MAX_TEXT + 1))),
    "deep nesting": lambda cache: forge(cache, NOT_OK, "[" * 100_000 + "]" * 100_000),
    # not even text
    "non-UTF-8 bytes": lambda cache: execute(
        cache, "UPDATE probes SET record = ? WHERE probe_key = ?", b"\x80\xff{", NOT_OK
    ),
    "an integer column": lambda cache: execute(
        cache, "UPDATE probes SET record = 7 WHERE probe_key = ?", NOT_OK
    ),
    # edited or copied by hand: the HMAC does not match
    "edited to ok": lambda cache: execute(
        cache, "UPDATE probes SET record = ? WHERE probe_key = ?", _record(cache, status="ok"), NOT_OK
    ),
    "copied from an ok cell": lambda cache: execute(
        cache,
        "UPDATE probes SET (record, mac) = (SELECT record, mac FROM probes WHERE probe_key = ?) "
        "WHERE probe_key = ?",
        OK_CELL,
        NOT_OK,
    ),
    "copied from another environment": lambda cache: (
        forge(cache, NOT_OK, _record(cache, status="ok"), env_key="0123456789abcdef"),
        execute(
            cache,
            "DELETE FROM probes WHERE env_key = ? AND probe_key = ?",
            envcache.environment_key(),
            NOT_OK,
        ),
        execute(
            cache, "UPDATE probes SET env_key = ? WHERE probe_key = ?", envcache.environment_key(), NOT_OK
        ),
    ),
}


@pytest.mark.parametrize("corrupt", list(CORRUPT_RECORDS), ids=list(CORRUPT_RECORDS))
def test_a_corrupt_or_edited_record_is_discarded_with_one_warning_and_probed_again(
    corrupt: str, reg: Registry, cache: Path, truth: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    assert statuses(sweep(reg)) == expected(truth)
    CORRUPT_RECORDS[corrupt](cache)
    caplog.clear()
    healed = sweep(reg)
    assert statuses(healed) == expected(truth)  # in particular NOT_OK is not "ok"
    assert truth[NOT_OK] == "unsupported_dtype"
    assert (healed.probed, healed.cached) == (1, 3)
    (warning,) = warnings_of(caplog)
    assert "1 invalid record" in warning and NOT_OK in warning
    caplog.clear()
    again = sweep(reg)  # healed in one run
    assert (again.probed, again.cached) == (0, 4) and statuses(again) == expected(truth)
    assert warnings_of(caplog) == []


def _truncate(cache: Path) -> None:
    path = cache / probe_cache.DB_NAME
    os.truncate(path, 4096)  # the header page only


def _directory(cache: Path) -> None:
    path = cache / probe_cache.DB_NAME
    path.unlink()
    path.mkdir()
    (path / "inside").write_text("a directory where the database goes")


CORRUPT_DATABASES: dict[str, Any] = {
    "not SQLite": lambda cache: (cache / probe_cache.DB_NAME).write_bytes(b"{not a database}" * 300),
    "non-UTF-8 garbage": lambda cache: (cache / probe_cache.DB_NAME).write_bytes(bytes(range(256)) * 40),
    "truncated": _truncate,
    "a directory": _directory,
}


@pytest.mark.parametrize("corrupt", list(CORRUPT_DATABASES), ids=list(CORRUPT_DATABASES))
def test_a_corrupt_database_is_moved_aside_with_one_warning(
    corrupt: str, reg: Registry, cache: Path, truth: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    sweep(reg, ("exp", "log"))
    assert len(stored(cache)) == 8
    CORRUPT_DATABASES[corrupt](cache)
    caplog.clear()
    healed = sweep(reg)
    assert statuses(healed) == expected(truth)
    assert (healed.probed, healed.cached) == (4, 0)
    (warning,) = warnings_of(caplog)
    assert "moved it aside" in warning
    assert len(list(cache.glob(f"{probe_cache.DB_NAME}.corrupt-*"))) == 1
    caplog.clear()
    again = sweep(reg)
    assert (again.probed, again.cached) == (0, 4) and statuses(again) == expected(truth)
    assert warnings_of(caplog) == []


def test_an_invalid_secret_is_replaced_and_every_record_probed_again(
    reg: Registry, cache: Path, truth: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    sweep(reg)
    key = cache / probe_cache.KEY_NAME
    assert key.stat().st_mode & 0o777 == 0o600
    key.write_text("not a key")
    caplog.clear()
    healed = sweep(reg)
    assert statuses(healed) == expected(truth) and healed.probed == 4
    key_warning, records_warning = warnings_of(caplog)
    assert "key" in key_warning and "4 invalid record" in records_warning
    assert key.stat().st_mode & 0o777 == 0o600 and len(key.read_text()) == 64
    assert sweep(reg).probed == 0


def test_a_record_that_would_not_validate_is_not_stored(
    cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with probe_cache.ProbeStore(cache) as store:
        assert not store.save("env", OK_CELL, {"status": "ok"})
        assert not store.save("env", OK_CELL, dict(failure_record(Status.OK, ""), seconds=float("nan")))
        assert store.save("env", OK_CELL, failure_record(Status.OK, ""))
        assert store.load("env") == {OK_CELL: failure_record(Status.OK, "")}
        assert store.load("other env") == {}
    assert len(warnings_of(caplog)) == 2


def test_the_record_schema_is_that_of_the_probe_records() -> None:
    assert set(failure_record(Status.CRASHED, "x")) == set(probe_cache.RECORD_FIELDS)
    for key in (OK_CELL, NOT_OK):
        record = probe_record(Probe(*key.split("|")))
        assert probe_cache.record_problem(record) == ""
    assert probe_cache.record_problem(dict(failure_record(Status.OK, ""), status="fine")).startswith(
        "has unknown status"
    )


def test_devices_are_stored_and_verified(
    reg: Registry, cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    env_key = envcache.environment_key()
    devices = {"tensorflow": ["/device:CPU:0"], "gpus": []}
    with probe_cache.ProbeStore(cache) as store:
        assert store.save_devices(env_key, devices)
        assert store.devices(env_key) == devices
    assert sweep(reg).environment["devices"] == devices
    execute(cache, "UPDATE devices SET devices = ?", json.dumps({"tensorflow": ["/device:GPU:0"]}))
    caplog.clear()
    assert sweep(reg).environment["devices"] == {}
    (warning,) = warnings_of(caplog)
    assert "devices" in warning


def test_clear_cache_empties_the_store_and_counts(reg: Registry, cache: Path) -> None:
    sweep(reg)
    assert av_probes.cache_path() == cache / probe_cache.DB_NAME
    assert av_probes.clear_cache() == 4
    assert stored(cache) == {}
    assert av_probes.clear_cache() == 0
    assert sweep(reg).probed == 4


def test_the_code_fingerprint_hashes_the_probe_runner_and_the_workaround_modules() -> None:
    """Every source glob of the environment key's code fingerprint names files that exist (a
    module moved or renamed would drop out of it silently, and records its change decides
    would be trusted), among them the probe runner and the workaround modules (written here)."""
    root = Path(envcache.__file__).resolve().parents[1]
    hashed: set[str] = set()
    for pattern in envcache.FINGERPRINT_SOURCES:
        matched = {path.relative_to(root).as_posix() for path in root.glob(pattern)}
        assert matched, f"{pattern} names no file under {root}"
        hashed |= matched
    assert {
        "runtime/probe.py",
        "runtime/workarounds.py",
        "runtime/workaround_source.py",
        "runtime/workaround_exec.py",
        "ops/unary.py",
    } <= hashed


# ------------------------------------------------------------------ no cache is no error


def _assert_works_without_a_cache(
    reg: Registry, truth: dict[str, str], caplog: pytest.LogCaptureFixture, reason: str
) -> None:
    caplog.clear()
    for _ in range(2):
        result = sweep(reg)
        assert statuses(result) == expected(truth)
        assert (result.probed, result.cached) == (4, 0)
    (warning,) = warnings_of(caplog)  # once, not once per run
    assert reason in warning


def test_cache_dir_that_is_a_file_means_no_cache(
    reg: Registry,
    truth: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    monkeypatch.setenv("PX_CACHE_DIR", str(a_file))
    _assert_works_without_a_cache(reg, truth, caplog, "without a cache")
    assert a_file.read_text() == "not a directory"
    assert envcache.cache_dir_or_none() is None and av_probes.cache_path() is None
    with pytest.raises(envcache.CacheUnavailable):
        envcache.cache_dir()


def test_read_only_cache_dir_means_no_cache(
    reg: Registry,
    truth: dict[str, str],
    cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache.mkdir()
    cache.chmod(0o555)
    if os.geteuid() == 0:  # root writes anyway: make the check see what a user would
        real_access = os.access
        monkeypatch.setattr(
            envcache.os, "access", lambda p, mode: False if Path(p) == cache else real_access(p, mode)
        )
    try:
        _assert_works_without_a_cache(reg, truth, caplog, "not writable")
    finally:
        cache.chmod(0o755)


class FailingWrites:
    """A connection whose writes fail like a full (or read-only) disk."""

    def __init__(self, conn: sqlite3.Connection, error: str) -> None:
        self.conn, self.error = conn, error

    def execute(self, sql: str, *args: Any) -> Any:
        if sql.lstrip().upper().startswith(("INSERT", "DELETE", "UPDATE")):
            raise sqlite3.OperationalError(self.error)
        return self.conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


@pytest.mark.parametrize(
    "error", ["database or disk is full", "attempt to write a readonly database", "disk I/O error"]
)
def test_a_full_disk_means_no_cache_with_one_warning(
    error: str,
    reg: Registry,
    truth: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    real_open = probe_cache.ProbeStore._open
    monkeypatch.setattr(probe_cache.ProbeStore, "_open", lambda self: FailingWrites(real_open(self), error))
    _assert_works_without_a_cache(reg, truth, caplog, error)


def test_no_space_for_the_secret_means_no_cache(
    reg: Registry, truth: dict[str, str], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def no_space(path: Path, data: bytes, replace: bool) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(sqlite_store, "create_file_atomically", no_space)
    _assert_works_without_a_cache(reg, truth, caplog, "No space left on device")


# ------------------------------------------------------------------ the registry's cache file


@pytest.mark.parametrize(
    "content",
    [
        b"\xff\xfe{",
        b'"a string"',
        b'{"data_version": 1}',
        json.dumps(dict(REGISTRY_DATA, ops=[])).encode(),
        json.dumps(dict(REGISTRY_DATA, ops={"Exp": 3})).encode(),  # the right top level, damage inside
        None,  # a directory in its place
    ],
    ids=["not UTF-8", "a string", "keys missing", "ops a list", "op an int", "a directory"],
)
def test_a_damaged_registry_cache_is_rebuilt_with_one_warning(
    content: bytes | None, cache: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    reads: list[int] = []

    def read_registry_data() -> dict[str, Any]:
        reads.append(1)
        return dict(REGISTRY_DATA)

    monkeypatch.setattr(registry, "_REGISTRY", None)
    monkeypatch.setattr(registry, "read_registry_data", read_registry_data)
    cache.mkdir()
    path = cache / registry._disk_key()
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    caplog.clear()
    reg = get_registry(where="here")
    assert reg.float_dtypes == tuple(DTYPES) and reads == [1]
    assert json.loads(path.read_text()) == REGISTRY_DATA
    assert len(warnings_of(caplog)) == 1
    monkeypatch.setattr(registry, "_REGISTRY", None)
    get_registry(where="here")  # from the rebuilt file
    assert reads == [1]


def test_read_json_never_deletes_a_user_file(tmp_path: Path) -> None:
    user_file = tmp_path / "mine.json"
    user_file.write_bytes(b"\xff not json")
    assert envcache.read_json(user_file) is None
    assert user_file.read_bytes() == b"\xff not json"


# ------------------------------------------------------------------ arguments


def test_single_names_are_one_name_each(reg: Registry) -> None:
    one = av.availability(
        ops="exp",
        dtypes="float16",
        backends="numpy",
        devices="cpu",
        modes="eager",
        progress=False,
        registry=reg,
    )
    listed = av.availability(
        ops=["exp"],
        dtypes=["float16"],
        backends=["numpy"],
        devices=["CPU"],
        modes=["eager"],
        progress=False,
        registry=reg,
    )
    assert one.records() == listed.records() and len(one.records()) == 1
    assert one.records()[0]["op"] == "exp"


BAD_ARGUMENTS: list[tuple[dict[str, Any], type[Exception], str]] = [
    *[
        ({"probe_timeout": t}, ValueError, "probe_timeout")
        for t in (0, -1.0, float("nan"), float("inf"), True, "5")
    ],
    ({"ops": ["exp", "nope"]}, ValueError, "nope"),
    ({"ops": [3]}, TypeError, "ops"),
    ({"dtypes": ["float16", "float17"]}, ValueError, "float17"),
    ({"backends": ["numpy", "nope"]}, ValueError, "nope"),
    ({"backends": [None]}, TypeError, "backends"),
    ({"devices": ["CPU", "TPU"]}, ValueError, "TPU"),
    ({"modes": ["eager", "lazy"]}, ValueError, "lazy"),
]


@pytest.mark.parametrize(("kwargs", "error", "match"), BAD_ARGUMENTS)
def test_bad_arguments_are_refused_before_anything_runs(
    kwargs: dict[str, Any],
    error: type[Exception],
    match: str,
    reg: Registry,
    cache: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def must_not_run(*args: Any, **kw: Any) -> Any:
        raise AssertionError("probed before the arguments were checked")

    monkeypatch.setattr(av_probes, "run_probes", must_not_run)
    arguments: dict[str, Any] = dict(ops=["exp"], dtypes=DTYPES, backends=BACKENDS, modes=["eager"])
    arguments.update(kwargs)
    with pytest.raises(error, match=match):
        av.availability(**arguments, progress=False, registry=reg)
    assert stored(cache) == {}


# ------------------------------------------------------------------ the app


def test_kernels_tab_reads_cached_keys_from_the_store_once_per_change(
    reg: Registry, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import explorer

    app = explorer.App(load_tensorflow=False, tab="ranges", op="exp", dtypes=["float16"], backends=["numpy"])
    tab = app.tabs["kernels"]
    assert tab.cached_probe_keys() == set()
    sweep(reg)
    loads: list[str] = []
    real_load = probe_cache.ProbeStore.load

    def counted(self: probe_cache.ProbeStore, env_key: str) -> dict[str, dict[str, Any]]:
        loads.append(env_key)
        return real_load(self, env_key)

    monkeypatch.setattr(probe_cache.ProbeStore, "load", counted)
    four = {Probe(b, "exp", d, "CPU", "eager").key for b in BACKENDS for d in DTYPES}
    assert tab.cached_probe_keys() == four
    assert tab.cached_probe_keys() == four
    assert len(loads) == 1  # the second call: the store did not change, nothing read
    execute(
        cache,
        "UPDATE probes SET record = replace(record, 'unsupported_dtype', 'ok') WHERE probe_key = ?",
        NOT_OK,
    )
    assert tab.cached_probe_keys() == four - {NOT_OK}  # an edited record is not "cached"
