"""``precision-explorer kernels``: JSON rows, raw ops, GPU rows without a GPU, snapshots.

What the rows say is checked against the registry oracle (``tests/support/registry_oracle.py``) and a
direct run of TensorFlow's public function in this process; the printed workaround is run.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from typing import Any

import pytest

from explorer.analysis.availability_rows import ROW_KEYS
from explorer.cli import main
from explorer.runtime.registry import get_registry
from tests.support.registry_oracle import Oracle, oracle
from tests.support.require import require_module

CPU_DEVICE_TYPE = {"eager": "CPU", "xla": "XLA_CPU_JIT"}
HOW = {"eager": "eagerly", "xla": "under XLA"}


pytestmark = pytest.mark.usefixtures("cache_dir")  # tests/conftest.py


@pytest.fixture(scope="module")
def orc() -> Oracle:
    return oracle()


def _json(capsys, *argv: str) -> list[dict]:  # type: ignore[no-untyped-def]
    assert main(["kernels", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["result"]


def _runs_directly(op: str, mode: str) -> bool:
    """Does TensorFlow's public function run in float16 on CPU (eagerly or with jit_compile=True)?"""
    import tensorflow as tf

    calls: dict[str, tuple[Any, list[Any]]] = {
        "range": (lambda: tf.range(12, dtype=tf.float16), []),
        "cholesky": (tf.linalg.cholesky, [tf.constant([[4.0, 1.0], [1.0, 3.0]], dtype=tf.float16)]),
    }
    fn, inputs = calls[op]
    with tf.device("/CPU:0"):
        try:
            out = (
                fn(*inputs)
                if mode == "eager"
                else tf.function(fn, jit_compile=True, autograph=False)(*inputs)
            )
        except (tf.errors.OpError, TypeError, ValueError):
            return False
    return out.dtype == tf.float16


def _kernel_list(sentence: str, after: str) -> set[str]:
    """The device types a sentence lists after ``after`` ("GPU, XLA_CPU_JIT and XLA_GPU_JIT")."""
    listed = sentence.split(after)[1].split(")")[0].split(".")[0]
    return set(listed.replace(" and ", ", ").split(", "))


def _check_registry_row(r: dict, orc: Oracle, raw: str) -> None:
    declared = orc.declared(raw, "float16", r["device"])
    assert r["status"] == declared, r
    others = orc.kernel_device_types(raw, "float16") - {r["device"]}
    assert declared in ("ok", "no_kernel"), r  # float16 is in the signature of both seed ops
    if declared == "ok":
        assert f"registers a float16 kernel for {raw} on {r['device']}" in r["explanation"]
        assert _kernel_list(r["explanation"], "(also on ") == others
    else:
        assert f"{raw} accepts float16, but TensorFlow" in r["explanation"]
        assert f"registers no float16 kernel for it on {r['device']}" in r["explanation"]
        assert _kernel_list(r["explanation"], "float16 kernels exist only for ") == others


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_seed_case_json(capsys, orc: Oracle) -> None:  # type: ignore[no-untyped-def]
    rows = _json(capsys, "--op", "range", "--dtype", "float16", "--device", "CPU", "--backend", "tensorflow")
    assert rows and all(tuple(r) == ROW_KEYS for r in rows)
    assert {(r["mode"], r["device"]) for r in rows} == {
        ("registry", "CPU"),
        ("registry", "XLA_CPU_JIT"),
        ("eager", "CPU"),
        ("xla", "CPU"),
    }
    for r in rows:
        assert r["raw_op"] == "Range"
        if r["mode"] == "registry":
            _check_registry_row(r, orc, "Range")
            continue
        declared = orc.declared("Range", "float16", CPU_DEVICE_TYPE[r["mode"]])
        ran = _runs_directly("range", r["mode"])
        assert (r["status"] == "ok") == ran, r
        if ran:
            assert (
                r["explanation"] == f"range runs natively in float16 on CPU {HOW[r['mode']]} with tensorflow."
            )
        else:
            assert r["explanation"].startswith(f"tf.range in float16 on CPU {HOW[r['mode']]} failed in Range")
            registry_says = "although the registry declares a kernel" in r["explanation"]
            assert registry_says == (declared == "ok"), r
    # TensorFlow 2.21: eager runs, XLA's declared kernel rejects float16
    assert [_runs_directly("range", mode) for mode in ("eager", "xla")] == [True, False]


@pytest.mark.slow
def test_cholesky_float16_explanation_and_workaround(capsys, tmp_path, orc: Oracle) -> None:  # type: ignore[no-untyped-def]
    """Eager Cholesky in float16 on CPU: no CPU kernel, an XLA one; the printed workaround runs."""
    snap = tmp_path / "chol.json"
    argv = [
        "kernels",
        "--op",
        "cholesky",
        "--dtype",
        "float16",
        "--backend",
        "tensorflow",
        "--save",
        str(snap),
    ]
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"saved 4 rows to {snap}"  # a summary
    assert main(argv[:-2]) == 0  # the same selection as a table (the probes from the cache)
    table = capsys.readouterr().out
    rows = {(r["mode"], r["device"]): r for r in _json(capsys, "--load", str(snap))}
    assert set(rows) == {("registry", "CPU"), ("registry", "XLA_CPU_JIT"), ("eager", "CPU"), ("xla", "CPU")}
    for device in CPU_DEVICE_TYPE.values():
        _check_registry_row(rows[("registry", device)], orc, "Cholesky")
    # the facts, from the oracle and a direct run: no float16 CPU kernel, one for XLA_CPU_JIT
    assert orc.declared("Cholesky", "float16", "CPU") == "no_kernel"
    assert "XLA_CPU_JIT" in orc.kernel_device_types("Cholesky", "float16")
    assert [_runs_directly("cholesky", mode) for mode in ("eager", "xla")] == [False, True]
    eager = rows[("eager", "CPU")]
    assert eager["status"] == "no_kernel"
    text = eager["explanation"]
    assert text.startswith(
        "tf.linalg.cholesky in float16 on CPU eagerly failed in Cholesky: Cholesky accepts float16"
    )
    assert "registers no float16 kernel for it on CPU" in text
    assert _kernel_list(text, "float16 kernels exist only for ") == orc.kernel_device_types(
        "Cholesky", "float16"
    )
    how = "compile it with XLA (jit_compile=True) on CPU, where the registry has a float16 kernel"
    assert text.endswith(f"Workaround: {how}.")
    assert rows[("xla", "CPU")]["status"] == "ok"
    # the table prints the workaround's code; run what it printed, in a fresh interpreter
    block = re.search(re.escape(f"workaround ({how}):\n") + r"(.*?)\n\n(?=---|\d+ rows;)", table, re.S)
    assert block is not None, table
    printed = block.group(1).rstrip("\n")
    assert "jit_compile=True" in printed and printed == eager["workaround"].rstrip("\n")
    done = subprocess.run(
        [sys.executable, "-c", printed + "\nprint('result dtype:', result.dtype.name)"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "result dtype: float16"


def test_raw_op_spelling_selects_the_raw_op_and_lower_case_the_catalog_op(capsys) -> None:  # type: ignore[no-untyped-def]
    argv = ["--dtype", "bf16", "--backend", "tensorflow"]
    rows = _json(capsys, "--op", "Cholesky", *argv, "--mode", "registry")
    assert rows and {(r["op"], r["raw_op"], r["mode"]) for r in rows} == {
        ("Cholesky", "Cholesky", "registry")
    }
    assert all(r["dtype"] == "bfloat16" for r in rows)
    rows = _json(capsys, "--op", "cholesky", *argv, "--mode", "eager")
    assert rows and {(r["op"], r["mode"]) for r in rows} == {("cholesky", "eager")}


def test_raw_op_without_catalog_entry(capsys) -> None:  # type: ignore[no-untyped-def]
    from explorer.ops import catalog

    reg = get_registry()
    used = {raw for op in catalog().values() for raw in op.tf_raw_ops}
    raw = next(op for op in reg.ops_with_kernels() if op not in used and reg.op(op).data_attr)
    rows = _json(capsys, "--op", raw, "--dtype", "float16")
    assert rows and {r["mode"] for r in rows} == {"registry"} and {r["raw_op"] for r in rows} == {raw}


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_gpu_rows_without_a_gpu(capsys) -> None:  # type: ignore[no-untyped-def]
    from explorer.runtime.sandbox import default_sandbox, warm_backend

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


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_save_load_diff(capsys, tmp_path) -> None:  # type: ignore[no-untyped-def]
    a = tmp_path / "a.json"
    assert main(["kernels", "--op", "exp", "--dtype", "float16", "--backend", "numpy", "--save", str(a)]) == 0
    out = capsys.readouterr().out
    assert f"saved 1 rows to {a}" in out
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


def test_save_prints_a_summary_not_the_rows(capsys, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Issue 9.8: ``--save`` over many rows prints counts per backend x mode x status and the path;
    ``--json`` stays the full result."""
    from collections import Counter

    snap = tmp_path / "s.json"
    argv = [
        "kernels",
        "--group",
        "linalg",
        "--backend",
        "tensorflow",
        "--mode",
        "registry",
        "--save",
        str(snap),
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    rows = json.loads(snap.read_text())["rows"]
    assert len(rows) > 50
    lines = out.splitlines()
    assert lines[-1] == f"saved {len(rows)} rows to {snap}"
    assert len(lines) < 10  # not one line per row
    assert not any(r["explanation"] in out for r in rows)
    header, counts = lines[0].split(), lines[1].split()
    assert header[:3] == ["backend", "mode", "rows"] and counts[:3] == [
        "tensorflow",
        "registry",
        str(len(rows)),
    ]
    assert dict(zip(header[3:], map(int, counts[3:]), strict=True)) == Counter(r["status"] for r in rows)
    # --json with --save: the full result, as before
    assert main([*argv, "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["result"]) == len(rows)


def test_live_tf_version_of_the_installed_release_equals_the_live_registry(capsys) -> None:  # type: ignore[no-untyped-def]
    """``--tf-version <installed>`` answers from the shipped file; the rows equal those of a
    registry read from TensorFlow in this process."""
    require_module("tensorflow")
    import pandas as pd

    from explorer.analysis import releases
    from explorer.backends.tensorflow_registry import Registry, read_registry_data
    from explorer.queries.availability import availability

    live = Registry(read_registry_data())
    if live.tf_version not in releases.shipped_releases():
        pytest.skip(f"TensorFlow {live.tf_version} has no shipped registry")
    ops = ["range", "cholesky", "conv2d", "qr", "exp"]
    argv = [a for op in ops for a in ("--op", op)] + [
        "--mode",
        "registry",
        "--device",
        "CPU",
        "--device",
        "GPU",
    ]
    assert main(["kernels", *argv, "--tf-version", live.tf_version, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["environment"]["registry_source"].startswith(f"shipped {live.tf_version} (captured ")
    expected = availability(
        ops=ops, modes=["registry"], devices=["CPU", "GPU"], registry=live, progress=False
    )
    got = pd.DataFrame(document["result"])
    keys = ["op", "raw_op", "dtype", "device", "mode", "status", "explanation"]
    assert len(got) == len(expected.rows) > 100
    pd.testing.assert_frame_equal(
        got[keys].reset_index(drop=True), expected.rows[keys].reset_index(drop=True)
    )
    assert set(got["device"]) == {"CPU", "XLA_CPU_JIT", "GPU", "XLA_GPU_JIT"}


def test_bad_op_exits_2(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["kernels", "--op", "no_such_op"]) == 2
    assert "Valid ops" in capsys.readouterr().err


# ---------------------------------------------------------------- modes per backend (torch.compile)

#: each backend's modes, written here
BACKEND_MODES = {
    "tensorflow": "eager, xla",
    "numpy": "eager",
    "emulated": "eager",
    "torch": "eager, compile",
    "jax": "eager, xla",
}


def test_help_lists_each_backends_modes(capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as done:
        main(["kernels", "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--mode {registry,eager,xla,compile}" in text
    for backend, modes in BACKEND_MODES.items():
        assert f"{backend}: {modes}" in text, backend


def test_a_mode_no_backend_asked_for_has_exits_2(capsys) -> None:  # type: ignore[no-untyped-def]
    prefix = "precision-explorer kernels: error: --mode "
    assert main(["kernels", "--backend", "numpy", "--mode", "compile", "--op", "exp"]) == 2
    assert capsys.readouterr().err == (
        f"{prefix}compile: the numpy backend has no compile mode (its modes: eager); "
        "the compile mode is torch's\n"
    )
    assert main(["kernels", "--backend", "torch", "--backend", "numpy", "--mode", "xla", "--op", "exp"]) == 2
    assert capsys.readouterr().err == (
        f"{prefix}xla: none of the backends asked for has a xla mode (torch: eager, compile; numpy: eager); "
        "the xla mode is tensorflow's and jax's\n"
    )


def _compiles_directly(op: str) -> str:
    """The error of torch.compile of the op's torch function in float16 on CPU, run here ("": it ran)."""
    import torch

    calls: dict[str, tuple[Any, list[Any]]] = {
        "exp": (torch.exp, [torch.tensor([-2.0, -0.5, 0.0, 1.5], dtype=torch.float16)]),
        "cholesky": (torch.linalg.cholesky, [torch.tensor([[4.0, 1.0], [1.0, 3.0]], dtype=torch.float16)]),
    }
    fn, inputs = calls[op]
    torch._dynamo.reset()
    try:
        with warnings.catch_warnings():  # Inductor's own imports warn (torch.jit deprecations)
            warnings.simplefilter("ignore", DeprecationWarning)
            out = torch.compile(lambda *xs: fn(*xs), fullgraph=True)(*inputs)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return "" if out.dtype == torch.float16 else f"came back in {out.dtype}"


@pytest.mark.slow
def test_torch_compile_cells_are_printed_with_status_and_phase(capsys) -> None:  # type: ignore[no-untyped-def]
    argv = ["kernels", "--backend", "torch", "--mode", "compile", "--dtype", "float16", "--op", "exp"]
    assert main([*argv, "--op", "cholesky"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = re.split(r"\s{2,}", lines[0].strip())
    assert header[:8] == ["backend", "op", "raw_op", "dtype", "device", "mode", "status", "phase"]
    cells = {cells[1]: cells for cells in (re.split(r"\s{2,}", line.strip()) for line in lines[1:3])}
    assert set(cells) == {"exp", "cholesky"}
    for op, cell in cells.items():
        assert (cell[0], cell[3], cell[4], cell[5]) == ("torch", "float16", "CPU", "compile")
        error = _compiles_directly(op)
        if not error:
            assert (cell[6], cell[7]) == ("ok", "ok"), cell
        else:  # a dispatch "X" not implemented for 'Half' is no_kernel, found at kernel lookup
            assert "not implemented for 'Half'" in error, error
            assert (cell[6], cell[7]) == ("no_kernel", "kernel_lookup"), cell
    assert any(line.startswith("--- torch cholesky float16 CPU compile: no_kernel") for line in lines)
