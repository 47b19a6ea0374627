"""PyTorch's declared dtypes (OpInfo) against a separate reading of ``op_db`` and against probes.

The oracle is this file's own reading of the database, in a subprocess of its own: the raw
attributes PyTorch's tests fill (``dtypes`` and ``dtypesIf["cuda"]``, the CPU set where CUDA has
none; an empty CUDA set, as histogram's, stays empty), not :func:`OpInfo.supported_dtypes` as
the module under test reads them.  The probes are direct runs of each op's torch call.  These
tests need torch and expecttest (``pip install torch expecttest``): without them they fail, they
are not skipped.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from explorer.ops import catalog, get_op
from explorer.runtime import torch_declared
from tests.support import oracles
from tests.support.require import require_module

#: slow tier: PyTorch's OpInfo database read in workers (a fresh torch import)
pytestmark = pytest.mark.slow

_ORACLE = textwrap.dedent(
    """
    import json, sys
    from torch.testing._internal.common_methods_invocations import op_db
    out = {}
    for info in op_db:
        cuda = info.dtypesIf.get("cuda")
        cuda = info.dtypes if cuda is None else cuda
        key = info.name + ("." + info.variant_test_name if info.variant_test_name else "")
        out[key] = {
            "cpu": sorted(str(d).split(".")[-1] for d in info.dtypes),
            "cuda": sorted(str(d).split(".")[-1] for d in cuda),
        }
    json.dump(out, sys.stdout)
    """
)


@pytest.fixture(scope="module")
def _oracle_reading() -> Iterator[subprocess.Popen[str]]:
    """The oracle's subprocess, started before the module's worker reads ``op_db``: the two
    (each a fresh torch import and a read of PyTorch's test suite) run side by side."""
    require_module("torch")
    require_module("expecttest")
    proc = subprocess.Popen(
        [sys.executable, "-c", _ORACLE], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


@pytest.fixture(scope="module")
def opinfo(tmp_path_factory: pytest.TempPathFactory, _oracle_reading: Any) -> dict[str, Any]:
    """The module's data, read in its worker into a fresh disk cache (while the oracle's
    subprocess reads the database too)."""
    require_module("torch")
    require_module("expecttest")
    mp = pytest.MonkeyPatch()
    mp.setenv("PX_CACHE_DIR", str(tmp_path_factory.mktemp("opinfo-cache")))
    mp.setattr(torch_declared, "_DATA", None)
    try:
        yield torch_declared.opinfo_data()
    finally:
        mp.undo()


@pytest.fixture(scope="module")
def oracle(_oracle_reading: subprocess.Popen[str]) -> dict[str, dict[str, list[str]]]:
    """op_db read by this file's own code, in a subprocess."""
    stdout, stderr = _oracle_reading.communicate(timeout=300)
    assert _oracle_reading.returncode == 0, stderr[-2000:]
    return json.loads(stdout)


def test_every_entry_matches_the_separate_reading(opinfo, oracle):
    ours = {torch_declared.entry_label(e): e for e in opinfo["entries"]}
    assert len(opinfo["entries"]) == len(oracle) > 600
    assert set(ours) == set(oracle)
    for label, want in oracle.items():
        assert ours[label]["cpu"] == want["cpu"], label
        assert ours[label]["cuda"] == want["cuda"], label


def test_known_declarations(opinfo):
    """Facts of torch 2.13's op_db, as its source writes them."""
    by_label = {torch_declared.entry_label(e): e for e in opinfo["entries"]}
    assert {"float16", "bfloat16"} <= set(by_label["exp"]["cpu"])
    assert "float16" not in by_label["linalg.cholesky"]["cpu"]
    assert "float16" not in by_label["fft.fft"]["cpu"] and "float16" in by_label["fft.fft"]["cuda"]
    assert by_label["linalg.cholesky"]["backward_cpu"] == ["complex128", "complex64", "float32", "float64"]


def test_reading_leaves_this_process_alone(opinfo):
    """Read in a worker: this process never imports PyTorch's test suite."""
    assert "torch.testing._internal.common_methods_invocations" not in sys.modules
    assert "expecttest" not in sys.modules


def test_disk_cache_answers_without_a_worker(opinfo, monkeypatch, tmp_path):
    monkeypatch.setenv("PX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(torch_declared, "_DATA", None)
    from explorer.runtime.envcache import write_cache_json

    write_cache_json(tmp_path / torch_declared._disk_name(), opinfo)

    def no_worker(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("read in a worker although the disk cache has the data")

    monkeypatch.setattr(torch_declared, "read_in_worker", no_worker)
    assert torch_declared.opinfo_data()["entries"] == opinfo["entries"]


def test_missing_expecttest_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(torch_declared, "_DATA", None)

    def missing(*args: Any, **kwargs: Any) -> Any:
        raise ModuleNotFoundError("No module named 'expecttest'")

    monkeypatch.setattr(torch_declared, "read_in_worker", missing)
    with pytest.raises(RuntimeError, match=r"needs torch and expecttest: pip install torch expecttest"):
        torch_declared.opinfo_data()


@pytest.mark.parametrize(
    ("op", "labels"),
    [
        ("exp", "exp"),
        ("div", "div.no_rounding_mode"),
        ("maximum", "maximum"),
        ("relu", "nn.functional.relu"),
        ("bessel_i0", "i0"),
        ("igamma", "igamma"),
        ("euclidean_norm", "linalg.vector_norm"),
        ("resize", "nn.functional.interpolate.bilinear"),
        ("resize_nearest", "nn.functional.interpolate.nearest-exact"),
        ("fft", "fft.fft, abs"),
        ("bias_add", "add"),
        ("cast", "to"),
    ],
)
def test_catalog_ops_map_to_their_entries(opinfo, op, labels):
    entries = torch_declared.entries_for(op, opinfo)
    assert ", ".join(torch_declared.entry_label(e) for e in entries) == labels


def test_every_torch_op_has_an_entry(opinfo):
    rows = torch_declared.declared_rows(opinfo, formats=("float16",))
    assert {r["op"] for r in rows} == {n for n, op in catalog().items() if op.torch is not None}
    assert [r["op"] for r in rows if not r["opinfo"]] == []


def test_declared_rows_follow_the_oracle(opinfo, oracle):
    """Each row says True exactly when every entry it names lists the format (the oracle's sets)."""
    for row in torch_declared.declared_rows(opinfo, formats=("float16", "bfloat16", "float8_e4m3fn")):
        labels = row["opinfo"].split(", ")
        assert row["CPU"] == all(row["format"] in oracle[label]["cpu"] for label in labels), row
        assert row["GPU"] == all(row["format"] in oracle[label]["cuda"] for label in labels), row


# ---------------------------------------------------------------- declared against probed


def _probe_directly(op_name: str, fmt: str) -> dict[str, Any]:
    """Run the op's torch call in this process, as a user would: ran, or the error's text."""
    import torch

    op = get_op(op_name)
    dtype = getattr(torch, fmt)
    inputs = [torch.from_numpy(oracles.round_array(x, fmt)).to(dtype) for x in op.inputs(0)]
    try:
        op.torch(torch, dtype, *inputs)
    except (RuntimeError, NotImplementedError, TypeError) as exc:
        text = f"{type(exc).__name__}: {exc}"
        status = "no_kernel" if "not implemented for" in text else "unsupported_dtype"
        return {"status": status, "error": text, "mode": "eager"}
    return {"status": "ok", "mode": "eager"}


#: CPU eager disagreements of torch 2.13 (op -> declared): all in float8, all "ran although not
#: declared"; float16 and bfloat16 have none
DISAGREE_FLOAT8_E4M3FN = {
    "zeros": False,
    "ones": False,
    "fill": False,
    "abs": False,
    "mul": False,
    "matmul": False,
    "cast": False,
    "cast_to_int32": False,
    "cast_from_int32": False,
}


@pytest.mark.parametrize("fmt", ["float16", "bfloat16", "float8_e4m3fn"])
def test_declared_against_probed_on_cpu(opinfo, fmt):
    ops = [n for n, op in catalog().items() if op.torch is not None]
    with np.errstate(all="ignore"):
        probed = {(n, fmt): _probe_directly(n, fmt) for n in ops}
    rows = torch_declared.declared_rows(opinfo, ops, formats=(fmt,))
    compared = torch_declared.compare(rows, probed, "CPU", opinfo)
    assert len(compared) == len(ops)
    disagree = {r["op"]: r["declared"] for r in compared if r["agree"] is False}
    assert disagree == (DISAGREE_FLOAT8_E4M3FN if fmt == "float8_e4m3fn" else {})
    for row in compared:
        if row["agree"] is False:
            assert "leave float8 out" in row["reason"], row


def test_a_declared_dtype_that_fails_names_the_failing_kernel(opinfo):
    rows = torch_declared.declared_rows(opinfo, ["mean"], formats=("float32",))
    probed = {
        ("mean", "float32"): {"status": "no_kernel", "error": "\"sum_cpu\" not implemented for 'Float'"}
    }
    [row] = torch_declared.compare(rows, probed, "CPU", opinfo)
    assert row["agree"] is False
    assert "mean lists float32 on CPU, but the call failed (no_kernel" in row["reason"]
    assert "the kernel that failed, sum_cpu, is that of sum" in row["reason"]


def test_declared_status_tells_a_device_gap_from_a_refused_dtype(opinfo):
    rows = {
        r["op"]: r for r in torch_declared.declared_rows(opinfo, ["fft", "cholesky", "exp"], ("float16",))
    }
    assert torch_declared.declared_status(rows["fft"], "CPU") == "no_kernel"  # CUDA lists it
    assert torch_declared.declared_status(rows["fft"], "GPU") == "ok"
    assert torch_declared.declared_status(rows["cholesky"], "CPU") == "unsupported_dtype"
    assert torch_declared.declared_status(rows["exp"], "CPU") == "ok"


def test_availability_shows_opinfo_rows_and_flags_disagreements(opinfo, oracle):
    """The kernels matrix has PyTorch's declared rows (mode registry) beside its probes, with the
    statuses the separate reading of op_db gives, and flags a probe that contradicts them."""
    from explorer.queries.availability import availability

    result = availability(
        ops=["exp", "cholesky", "matmul"],
        dtypes=["float16", "float8_e4m3fn"],
        backends=["torch"],
        progress=False,
    )
    rows = result.rows
    declared = rows[rows["mode"] == "registry"]
    assert len(declared) == 6
    for _, row in declared.iterrows():
        listed = all(row["dtype"] in oracle[label]["cpu"] for label in row["raw_op"].split(", "))
        on_cuda = all(row["dtype"] in oracle[label]["cuda"] for label in row["raw_op"].split(", "))
        want = "ok" if listed else ("no_kernel" if on_cuda else "unsupported_dtype")
        assert row["status"] == want, dict(row)
    probed = rows[rows["mode"] == "eager"].set_index(["op", "dtype"])
    # matmul runs in float8_e4m3fn on CPU although OpInfo does not list it: flagged, with the reason
    assert probed.loc[("matmul", "float8_e4m3fn"), "status"] == "ok"
    assert "does not list float8_e4m3fn" in probed.loc[("matmul", "float8_e4m3fn"), "disagreement"]
    assert probed.loc[("exp", "float16"), "disagreement"] == ""
