"""Kernel snapshots: round trip, the schema against crafted files, files never changed,
repeated rows, ``kernels --load/--save/--diff`` exit statuses and terminal safety."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import threading
import tracemalloc
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explorer.analysis import snapshot_schema as schema
from explorer.analysis.availability_rows import EXTRA_KEYS, ROW_KEYS
from explorer.cli import main
from explorer.outcome import STATUSES
from explorer.queries.availability_result import AvailabilityResult
from explorer.queries.snapshot import (
    SnapshotWarning,
    diff_snapshots,
    load_snapshot,
    parse_snapshot,
    save_snapshot,
)
from explorer.textsafety import strip_control

COLUMNS = [*ROW_KEYS, *EXTRA_KEYS]
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x9b31m"


def _row(**changes: Any) -> dict[str, Any]:
    row = {
        "backend": "tensorflow",
        "op": "cholesky",
        "raw_op": "Cholesky",
        "dtype": "float16",
        "device": "CPU",
        "mode": "eager",
        "status": "ok",
        "error": "",
        "explanation": "ran natively",
        "workaround": "",
        "group": "linalg",
        "tf_public": "tf.linalg.cholesky",
        "declared": "ok",
        "disagreement": "",
        "detail": "",
        "phase": "ok",
        "workaround_how": "",
        "ran_on": "CPU",
        "result_dtype": "float16",
        "seconds": 0.25,
        "cached": False,
    }
    row.update(changes)
    return row


def _rows() -> list[dict[str, Any]]:
    """Rows like a real sweep's: every backend, mode and device kind, nullable columns set and not."""
    return [
        _row(),
        _row(
            mode="registry",
            device="XLA_GPU_JIT",
            status="no_kernel",
            declared="no_kernel",
            explanation="no kernel registered",
            ran_on=None,
            result_dtype=None,
            seconds=0.0,
        ),
        _row(
            backend="numpy",
            op="matmul",
            raw_op="MatMul,BatchMatMulV2",
            dtype="bfloat16",
            status="fallback",
            error="ошибка: computed in float32\n\tsecond line",
            workaround="x = tf.cast(x, tf.float32)\ny = f(x)",
            workaround_how="cast to float32",
            declared=None,
            detail="computed in float32, not bfloat16",
            result_dtype="float32",
            seconds=1.5,
            cached=True,
        ),
        _row(backend="torch", dtype="float8_e4m3fn", status="not_installed", declared=None, ran_on=None),
        _row(backend="emulated", device="GPU", mode="xla", status="no_device", seconds=3),
    ]


ENVIRONMENT: dict[str, Any] = {
    "versions": {"tensorflow": "2.17.0", "numpy": "2.0.1", "torch": None},
    "python": "3.11.7",
    "cpu_count": 16,
    "gpus": ["NVIDIA H200"],
    "devices": {"tensorflow": ["/device:CPU:0"], "gpus": [{"name": "/physical_device:GPU:0", "cc": "9.0"}]},
    "tf_version": "2.17.0",
    "ratio": 0.5,
    "flag": True,
}


def _document(rows: list[Any] | None = None, **top: Any) -> dict[str, Any]:
    """A snapshot document: the rows given (default :func:`_rows`); ``top`` replaces top-level keys."""
    doc = {
        "kind": "precision-explorer/kernels",
        "version": 1,
        "environment": copy.deepcopy(ENVIRONMENT),
        "rows": _rows() if rows is None else rows,
    }
    doc.update(top)
    return doc


def _write(path: Path, content: bytes | str | dict[str, Any]) -> Path:
    if isinstance(content, dict):
        content = json.dumps(content)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _assert_refused(path: Path, match: str) -> str:
    """load_snapshot raises ValueError matching ``match`` and leaves the file as it was."""
    before = _digest(path)
    with pytest.raises(ValueError, match=match) as info:
        load_snapshot(path)
    assert path.exists() and _digest(path) == before
    message = str(info.value)
    assert "\x1b" not in message and "\x07" not in message
    return message


# ------------------------------------------------------------------------------- round trip


def test_round_trip_gives_the_original_rows_and_environment(tmp_path: Path) -> None:
    frame = pd.DataFrame(_rows(), columns=COLUMNS)
    env = dict(ENVIRONMENT, cc=(9, 0))  # a tuple is saved as a list
    path = save_snapshot(AvailabilityResult(frame.copy(), env), tmp_path / "snap.json")
    loaded = load_snapshot(path)
    expected = frame.assign(seconds=frame["seconds"].astype(float))
    pd.testing.assert_frame_equal(loaded.rows, expected)
    assert loaded.environment == dict(ENVIRONMENT, cc=[9, 0])
    assert [r["status"] for r in loaded.records()] == [
        "ok",
        "no_kernel",
        "fallback",
        "not_installed",
        "no_device",
    ]
    assert not list(tmp_path.glob("*.tmp")) and [p.name for p in tmp_path.iterdir()] == ["snap.json"]


def test_missing_optional_columns_take_defaults(tmp_path: Path) -> None:
    row = {k: v for k, v in _row().items() if k in ROW_KEYS}
    loaded = load_snapshot(_write(tmp_path / "s.json", _document([row])))
    got = loaded.records(full=True)[0]
    assert got == {**row, **schema.EXTRA_DEFAULTS}


def test_utf8_bom_is_accepted_and_the_file_kept(tmp_path: Path) -> None:
    path = _write(tmp_path / "bom.json", b"\xef\xbb\xbf" + json.dumps(_document()).encode())
    before = _digest(path)
    assert len(load_snapshot(path).rows) == len(_rows())
    assert _digest(path) == before


def test_parse_snapshot_reads_uploaded_bytes() -> None:
    result = parse_snapshot(json.dumps(_document()).encode(), "upload.json")
    assert len(result.rows) == len(_rows()) and result.environment == ENVIRONMENT
    with pytest.raises(ValueError, match=r"^upload\.json: rows\[0\]\.mode: 'jit' is not a mode"):
        parse_snapshot(json.dumps(_document([_row(mode="jit")])).encode(), "upload.json")


# ------------------------------------------------------------------------------- crafted files


def _deep(n: int) -> str:
    return "[" * n + "]" * n


#: (what, file content, the start of the error message after "<file>: ")
CRAFTED: list[tuple[str, bytes | str | dict[str, Any], str]] = [
    ("version true", _document(version=True), r"version: true is not the integer 1"),
    ("version 1.0", _document(version=1.0), r"version: 1\.0 is not the integer 1"),
    ("version 2", _document(version=2), r"version: snapshot version 2; this version reads 1"),
    ("no version", {k: v for k, v in _document().items() if k != "version"}, r"version: missing"),
    ("other kind", _document(kind="something else"), r"is not a precision-explorer kernels snapshot"),
    ("a list", "[1, 2]", r"is not a precision-explorer kernels snapshot"),
    ("unknown top key", _document(extra=1), r"'extra': unknown key"),
    ("rows null", dict(_document(), rows=None), r"rows: null is not a list"),
    ("rows an object", _document(rows={}), r"rows: an object \(0 keys\) is not a list"),
    ("no rows", {k: v for k, v in _document().items() if k != "rows"}, r"rows: missing"),
    ("environment a list", _document(environment=[1]), r"environment: a list \(1 item\) is not an object"),
    ("environment null", _document(environment=None), r"environment: null is not an object"),
    (
        "environment too deep",
        _document(environment={"a": {"b": {"c": {"d": {"e": {"f": {"g": 1}}}}}}}),
        r"environment\.a\.b\.c\.d\.e\.f: nested deeper than 6 levels",
    ),
    (
        "environment NaN",
        json.dumps(_document(environment={"x": float("nan")})),
        r"environment\.x: nan is not a finite number",
    ),
    (
        "environment long string",
        _document(environment={"cpu": "x" * 20_001}),
        r"environment\.cpu: a string of 20001 characters",
    ),
    ("row a list", _document([[1]]), r"rows\[0\]: a list \(1 item\) is not an object"),
    (
        "unknown status",
        _document([_row(), _row(status="oops")]),
        r"rows\[1\]\.status: 'oops' is not a status; valid: ok, fallback",
    ),
    (
        "unknown declared",
        _document([_row(declared="maybe")]),
        r"rows\[0\]\.declared: 'maybe' is not a status",
    ),
    ("unknown device", _document([_row(device="TPU")]), r"rows\[0\]\.device: 'TPU' is not a device"),
    ("unknown backend", _document([_row(backend="mxnet")]), r"rows\[0\]\.backend: 'mxnet' is not a backend"),
    ("unknown dtype", _document([_row(dtype="half")]), r"rows\[0\]\.dtype: 'half' is not a format name"),
    ("unknown mode", _document([_row(mode="jit")]), r"rows\[0\]\.mode: 'jit' is not a mode"),
    ("status a number", _document([_row(status=1)]), r"rows\[0\]\.status: 1 is not a status"),
    ("op a number", _document([_row(op=5)]), r"rows\[0\]\.op: 5 is not a string"),
    ("op empty", _document([_row(op="")]), r"rows\[0\]\.op: the empty string is not a name"),
    ("error a list", _document([_row(error=["x"])]), r"rows\[0\]\.error: a list \(1 item\) is not a string"),
    ("seconds a string", _document([_row(seconds="1.5")]), r"rows\[0\]\.seconds: '1\.5' is not a number"),
    ("seconds a bool", _document([_row(seconds=True)]), r"rows\[0\]\.seconds: true is not a number"),
    ("seconds negative", _document([_row(seconds=-1)]), r"rows\[0\]\.seconds: -1 is not a finite number"),
    ("seconds infinite", json.dumps(_document([_row(seconds=float("inf"))])), r"rows\[0\]\.seconds: inf"),
    ("cached a string", _document([_row(cached="yes")]), r"rows\[0\]\.cached: 'yes' is not true or false"),
    ("ran_on a number", _document([_row(ran_on=0)]), r"rows\[0\]\.ran_on: 0 is not a string or null"),
    ("unknown column", _document([_row(extra=1)]), r"rows\[0\]: unknown column 'extra'"),
    (
        "missing column",
        _document([{k: v for k, v in _row().items() if k != "status"}]),
        r"rows\[0\]: missing column 'status'",
    ),
    (
        "long op",
        _document([_row(op="x" * 101)]),
        r"rows\[0\]\.op: a string of 101 characters is longer than 100",
    ),
    ("long error", _document([_row(error="x" * 20_001)]), r"rows\[0\]\.error: a text of 20001 characters"),
    (
        "control in a name",
        _document([_row(op="exp" + ESCAPES)]),
        r"rows\[0\]\.op: 'exp\\x1b.*contains control",
    ),
    ("escape in a status", _document([_row(status=ESCAPES)]), r"rows\[0\]\.status: '\\x1b\]0;pwned"),
    ("empty", b"", r"is not JSON: the file is empty"),
    ("blank", b" \n\t\n", r"is not JSON: the file is empty"),
    ("BOM only", b"\xef\xbb\xbf", r"is not JSON: the file is empty"),
    ("truncated", json.dumps(_document())[:-40], r"is not JSON: "),
    ("plain text", b"hello, this is not json\n", r"is not JSON: Expecting value"),
    ("non-UTF-8", '{"kind": "café"}'.encode("latin-1"), r"is not JSON: not UTF-8 text \(byte 0xe9"),
    ("UTF-16", json.dumps(_document()).encode("utf-16"), r"is not JSON: not UTF-8 text"),
    ("deep nesting", _deep(100_000), r"nested too deeply"),
    ("deep unclosed", "[" * 100_000, r"nested too deeply"),
    (
        "deep in environment",
        '{"kind": "precision-explorer/kernels", "version": 1, "environment": ' + _deep(100_000) + "}",
        r"nested too deeply",
    ),
    ("huge integer", '{"kind": ' + "9" * 5000 + "}", r"is not JSON"),
]


@pytest.mark.parametrize(("content", "match"), [c[1:] for c in CRAFTED], ids=[c[0] for c in CRAFTED])
def test_crafted_file_is_refused_naming_the_field_and_kept(
    tmp_path: Path, content: bytes | str | dict[str, Any], match: str
) -> None:
    path = _write(tmp_path / "snapshot.json", content)
    message = _assert_refused(path, match)
    assert message.startswith(str(path))


def test_first_bad_field_is_named(tmp_path: Path) -> None:
    doc = _document([_row(), _row(op=1, status="oops"), _row(status="also bad")])
    message = _assert_refused(_write(tmp_path / "s.json", doc), r"rows\[1\]\.op")
    assert "status" not in message


def test_too_many_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema, "MAX_ROWS", 3)
    _assert_refused(_write(tmp_path / "s.json", _document()), r"rows: 5 rows are more than 3")


def test_huge_file_fails_before_reading_it(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with open(path, "wb") as handle:  # sparse: 65 MiB that take no disk
        handle.truncate(65 * 1024 * 1024)
    _assert_refused(path, r"is too large for a snapshot \(68157440 bytes")


def test_endless_device_is_read_capped() -> None:
    with pytest.raises(ValueError, match=r"/dev/zero is too large for a snapshot \(more than 67108864 bytes"):
        load_snapshot("/dev/zero")


def test_fifo_is_read_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema, "MAX_FILE_BYTES", 1 << 16)
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)

    def write() -> None:
        try:
            with open(fifo, "wb") as handle:
                handle.write(b" " * (1 << 20))
        except BrokenPipeError:  # the reader stopped at its limit and closed the pipe
            pass

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    with pytest.raises(ValueError, match=r"is too large for a snapshot \(more than 65536 bytes"):
        load_snapshot(fifo)
    writer.join(10)
    assert not writer.is_alive()


def test_directory_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"cannot read snapshot .*: Is a directory"):
        load_snapshot(tmp_path)
    with pytest.raises(FileNotFoundError, match="no snapshot at"):
        load_snapshot(tmp_path / "absent.json")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------- property


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)
POSITIONS = st.sampled_from(
    [("top", k) for k in [*schema.TOP_KEYS, "extra"]]
    + [("row", k) for k in [*COLUMNS, "extra"]]
    + [("env", k) for k in ["versions", "gpus", "new"]]
    + [("whole", ""), ("first row", ""), ("drop top", "rows"), ("drop row", "status")]
)


def _placed(position: tuple[str, str], value: Any) -> Any:
    where, key = position
    doc = _document([_row()])
    if where == "whole":
        return value
    if where == "top":
        doc[key] = value
    elif where == "row":
        doc["rows"][0][key] = value
    elif where == "env":
        doc["environment"][key] = value
    elif where == "first row":
        doc["rows"][0] = value
    elif where == "drop top":
        del doc[key]
    else:
        del doc["rows"][0][key]
    return doc


def _load_only_value_error(path: Path) -> None:
    before = _digest(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SnapshotWarning)
        try:
            result = load_snapshot(path)
        except ValueError as exc:
            assert "\x1b" not in str(exc)
        else:
            assert set(result.rows.columns) == set(COLUMNS)
            assert set(result.rows["status"]) <= set(STATUSES)
    assert _digest(path) == before


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(position=POSITIONS, value=JSON_VALUES)
def test_random_values_in_snapshot_positions_only_raise_value_error(
    tmp_path: Path, position: tuple[str, str], value: Any
) -> None:
    path = _write(tmp_path / "random.json", json.dumps(_placed(position, value)))
    _load_only_value_error(path)


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=2000), byte=st.integers(0, 255), junk=st.binary(max_size=20))
def test_damaged_bytes_only_raise_value_error(tmp_path: Path, cut: int, byte: int, junk: bytes) -> None:
    good = json.dumps(_document([_row()])).encode()
    cut %= len(good)
    damaged = good[:cut] + bytes([byte]) + junk + good[cut + 1 :]
    _load_only_value_error(_write(tmp_path / "damaged.json", damaged))


# ------------------------------------------------------------------------------- saving


def test_save_to_empty_path_or_directory_is_a_clean_error(tmp_path: Path) -> None:
    result = AvailabilityResult(pd.DataFrame(_rows(), columns=COLUMNS), ENVIRONMENT)
    for bad, match in [
        ("", "file name is empty"),
        (tmp_path, "is a directory"),
        (f"{tmp_path}/new/", "names a directory"),
    ]:
        with pytest.raises(ValueError, match=match):
            save_snapshot(result, bad)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        save_snapshot(result, fifo)
    with pytest.raises(ValueError, match=r"fifo is not a directory"):
        save_snapshot(result, fifo / "sub" / "s.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]


def test_saved_file_permissions(tmp_path: Path) -> None:
    """A new snapshot is readable as ``open`` would make it (not the temporary file's 0o600);
    replacing one keeps its permissions."""
    result = AvailabilityResult(pd.DataFrame(_rows(), columns=COLUMNS), ENVIRONMENT)
    old = os.umask(0o027)
    try:
        fresh = save_snapshot(result, tmp_path / "new.json")
    finally:
        os.umask(old)
    assert fresh.stat().st_mode & 0o777 == 0o640
    kept = _write(tmp_path / "kept.json", b"old")
    kept.chmod(0o604)
    save_snapshot(result, kept)
    assert kept.stat().st_mode & 0o777 == 0o604 and len(load_snapshot(kept).rows) == len(_rows())


def test_failed_save_leaves_no_file_and_keeps_the_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = _write(tmp_path / "s.json", b"old contents")

    def fail(*_: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    result = AvailabilityResult(pd.DataFrame(_rows(), columns=COLUMNS), ENVIRONMENT)
    with pytest.raises(ValueError, match=r"cannot save a snapshot to .*s\.json: No space left on device"):
        save_snapshot(result, target)
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"] and target.read_bytes() == b"old contents"


def test_rows_that_would_not_load_are_not_saved(tmp_path: Path) -> None:
    result = AvailabilityResult(pd.DataFrame([_row(status="oops")], columns=COLUMNS), ENVIRONMENT)
    with pytest.raises(ValueError, match=r"rows\[0\]\.status: 'oops' is not a status"):
        save_snapshot(result, tmp_path / "s.json")
    assert list(tmp_path.iterdir()) == []


def test_long_error_texts_are_cut_on_save(tmp_path: Path) -> None:
    result = AvailabilityResult(pd.DataFrame([_row(error="e" * 30_000)], columns=COLUMNS), {})
    error = load_snapshot(save_snapshot(result, tmp_path / "s.json")).rows["error"][0]
    assert len(error) == schema.MAX_TEXT_CHARS and error.startswith("e" * 1000)
    assert error.endswith("more characters not saved in the snapshot]")


# ------------------------------------------------------------------------------- repeated rows


def test_repeated_rows_are_dropped_with_one_warning(tmp_path: Path) -> None:
    path = _write(tmp_path / "dup.json", _document([_row()] * 3000 + [_row(op="exp")]))
    with pytest.warns(SnapshotWarning, match="2999 row") as record:
        result = load_snapshot(path)
    assert len(record) == 1 and list(result.rows["op"]) == ["cholesky", "exp"]


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_diff_of_repeated_rows_is_proportional_to_the_inputs(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.json", _document([_row()] * 3000))
    b = _write(tmp_path / "b.json", _document([_row(status="crashed")] * 3000))
    size = a.stat().st_size + b.stat().st_size
    assert size > 1_000_000
    tracemalloc.start()
    try:
        with pytest.warns(SnapshotWarning):
            left, right = load_snapshot(a), load_snapshot(b)
        changes = diff_snapshots(left, right)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert list(changes["change"]) == ["changed"]
    assert peak < 10 * size, f"peak {peak} bytes for {size} bytes of snapshots"


def test_diff_snapshots_compares_each_cell_once() -> None:
    a = AvailabilityResult(pd.DataFrame([_row()] * 3000, columns=COLUMNS))
    b = AvailabilityResult(pd.DataFrame([_row(status="crashed")] * 3000 + [_row(op="exp")], columns=COLUMNS))
    changes = diff_snapshots(a, b)
    assert changes[["op", "status_a", "status_b", "change"]].to_dict("records") == [
        {"op": "cholesky", "status_a": "ok", "status_b": "crashed", "change": "changed"},
        {"op": "exp", "status_a": None, "status_b": "ok", "change": "only in B"},
    ]


# ------------------------------------------------------------------------------- the CLI


def test_cli_diff_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _write(tmp_path / "a.json", _document())
    rows = [_row(status="crashed"), *_rows()[1:-1], _row(op="exp")]
    b = _write(tmp_path / "b.json", _document(rows, environment={"cpu": "y"}))
    assert main(["kernels", "--diff", str(a), str(a)]) == 0
    assert "no cell changed status" in capsys.readouterr().out
    assert main(["kernels", "--diff", str(a), str(b)]) == 1
    captured = capsys.readouterr()
    assert captured.err == ""
    assert "crashed" in captured.out and "only in A" in captured.out and "only in B" in captured.out
    assert "\n  cpu: null -> y\n" in captured.out and "\n  versions.numpy: 2.0.1 -> null\n" in captured.out
    assert main(["kernels", "--diff", str(a), str(b), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)["result"]  # valid JSON: no NaN for a missing side
    assert {c["change"] for c in data["cells"]} == {"changed", "only in A", "only in B"}


def test_cli_bad_snapshots_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = _write(tmp_path / "good.json", _document())
    bad = _write(tmp_path / "bad.json", _document([_row(status=ESCAPES)]))
    truncated = _write(tmp_path / "cut.json", good.read_bytes()[:100])
    digests = {p: _digest(p) for p in (good, bad, truncated)}
    for argv in (
        ["--load", str(bad)],
        ["--load", str(truncated)],
        ["--load", str(tmp_path)],
        ["--load", str(tmp_path / "absent.json")],
        ["--load", ""],
        ["--diff", str(good), str(bad)],
        ["--diff", str(truncated), str(good)],
    ):
        assert main(["kernels", *argv]) == 2, argv
        captured = capsys.readouterr()
        assert captured.out == ""
        lines = captured.err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("precision-explorer kernels: error: "), captured.err
        assert "\x1b" not in captured.err and "\x07" not in captured.err
    assert {p: _digest(p) for p in digests} == digests


def test_cli_save_to_empty_path_or_directory_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = _write(tmp_path / "good.json", _document())
    for target in ("", str(tmp_path)):
        assert main(["kernels", "--load", str(good), "--save", target]) == 2
        assert "error: cannot save a snapshot" in capsys.readouterr().err
    # saving over the snapshot being loaded is fine (atomic replace)
    assert main(["kernels", "--load", str(good), "--save", str(good), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["result"]) == len(_rows())
    assert len(load_snapshot(good).rows) == len(_rows())


def test_cli_warns_about_repeated_rows_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "dup.json", _document([_row()] * 5))
    assert main(["kernels", "--load", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    assert len(json.loads(captured.out)["result"]) == 1
    assert captured.err.splitlines() == [
        f"precision-explorer kernels: warning: {path}: 4 row(s) repeat an earlier row's cell "
        "(backend, op, raw_op, dtype, device, mode) and were dropped; the first of each is kept"
    ]


def test_escape_sequences_do_not_reach_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        _row(
            status="error",
            error="bad" + ESCAPES + "\nsecond line",
            explanation="why" + ESCAPES,
            workaround="fix" + ESCAPES,
            workaround_how="how" + ESCAPES,
            disagreement="differ" + ESCAPES,
        )
    ]
    env = {"cpu": "cpu" + ESCAPES, "tf_version": "2" + ESCAPES, ESCAPES: ESCAPES}
    a = _write(tmp_path / "a.json", _document(rows, environment=env))
    b = _write(tmp_path / "b.json", _document([_row()]))
    for argv in (["--load", str(a)], ["--load", str(a), "--full"], ["--load", str(a), "--json", "--full"]):
        assert main(["kernels", *argv]) == 0
        captured = capsys.readouterr()
        assert "bad" in captured.out
        for char in "\x1b\x07\x9b":
            assert char not in captured.out + captured.err, argv
    assert main(["kernels", "--diff", str(a), str(b)]) == 1
    captured = capsys.readouterr()
    assert "cpu: cpu]0;pwned[2J31m -> null" in captured.out
    for char in "\x1b\x07\x9b":
        assert char not in captured.out + captured.err


def test_strip_control_removes_every_control_character() -> None:
    every = "".join(chr(c) for c in [*range(0x20), *range(0x7F, 0xA0), 0x202E, 0x2066])
    assert strip_control("a" + every + "b") == "a" + " " * 5 + "b"  # \t \n \v \f \r become spaces
    assert strip_control("a" + every + "b", keep_newlines=True) == "a\t\nb"
    assert strip_control(42) == "42"  # type: ignore[arg-type]
