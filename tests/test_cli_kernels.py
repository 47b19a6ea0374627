"""``precision-explorer kernels``: JSON rows, raw ops, GPU rows without a GPU, snapshots."""

from __future__ import annotations

import json

import pytest

from explorer.analysis.availability import ROW_KEYS
from explorer.analysis.registry import get_registry
from explorer.cli import main


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PX_CACHE_DIR", str(tmp_path / "cache"))


def _json(capsys, *argv: str) -> list[dict]:  # type: ignore[no-untyped-def]
    assert main(["kernels", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_seed_case_json(capsys) -> None:  # type: ignore[no-untyped-def]
    reg = get_registry()
    rows = _json(capsys, "--op", "range", "--dtype", "float16", "--device", "CPU", "--backend", "tensorflow")
    assert rows and all(tuple(r) == ROW_KEYS for r in rows)
    modes = {r["mode"] for r in rows}
    assert modes == {"registry", "eager", "xla"}
    for r in rows:
        if r["mode"] == "registry":
            assert r["status"] == reg.declared("Range", "float16", r["device"]).value
        else:
            assert r["device"] == "CPU" and r["raw_op"] == "Range"
            assert r["explanation"]


def test_raw_op_name_selects_catalog_op(capsys) -> None:  # type: ignore[no-untyped-def]
    rows = _json(capsys, "--op", "Cholesky", "--dtype", "bf16", "--backend", "tensorflow", "--mode", "eager")
    assert {r["op"] for r in rows} >= {"cholesky"}
    assert all(r["dtype"] == "bfloat16" for r in rows)


def test_raw_op_without_catalog_entry(capsys) -> None:  # type: ignore[no-untyped-def]
    from explorer.ops import catalog

    reg = get_registry()
    used = {raw for op in catalog().values() for raw in op.tf_raw_ops}
    raw = next(op for op in reg.ops_with_kernels() if op not in used and reg.op(op).data_attr)
    rows = _json(capsys, "--op", raw, "--dtype", "float16")
    assert rows and {r["mode"] for r in rows} == {"registry"} and {r["raw_op"] for r in rows} == {raw}


def test_gpu_rows_without_a_gpu(capsys) -> None:  # type: ignore[no-untyped-def]
    from explorer.sandbox import default_sandbox, warm_backend

    if "GPU" in default_sandbox().call("tensorflow", warm_backend, "tensorflow", timeout=300):
        pytest.skip("this machine has a GPU")
    rows = _json(capsys, "--op", "exp", "--dtype", "float16", "--device", "GPU", "--backend", "tensorflow")
    reg = get_registry()
    registry_rows = [r for r in rows if r["mode"] == "registry"]
    assert {r["device"] for r in registry_rows} == {"GPU", "XLA_GPU_JIT"}
    for r in registry_rows:
        assert r["status"] == reg.declared("Exp", "float16", r["device"]).value
    run_rows = [r for r in rows if r["mode"] != "registry"]
    assert run_rows and all(r["status"] == "no_device" for r in run_rows)


def test_save_load_diff(capsys, tmp_path) -> None:  # type: ignore[no-untyped-def]
    a = tmp_path / "a.json"
    assert main(["kernels", "--op", "exp", "--dtype", "float16", "--backend", "numpy", "--save", str(a)]) == 0
    out = capsys.readouterr().out
    assert "exp" in out and "saved to" in out
    loaded = _json(capsys, "--load", str(a))
    assert loaded and all(r["op"] == "exp" for r in loaded)
    data = json.loads(a.read_text())
    data["rows"][0]["status"] = "crashed"
    data["environment"]["cpu"] = "another CPU"
    b = tmp_path / "b.json"
    b.write_text(json.dumps(data))
    assert main(["kernels", "--diff", str(a), str(b)]) == 1  # 1: the snapshots differ
    out = capsys.readouterr().out
    assert "another CPU" in out and "crashed" in out


def test_bad_op_exits_2(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["kernels", "--op", "no_such_op"]) == 2
    assert "Valid ops" in capsys.readouterr().err
