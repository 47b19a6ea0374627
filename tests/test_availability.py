"""Kernel availability: real registry, real sandbox runs, explanations, workarounds, cache, snapshots.

The TensorFlow rows are checked against two independent paths: the registry oracle
(``tests/support/registry_oracle.py``, its own reading of TensorFlow's registry) for what is declared,
and a direct run of TensorFlow's public function in this test process for what runs.
"""

from __future__ import annotations

from typing import Any

import pytest

from explorer.analysis.availability_rows import ROW_KEYS, AvailabilityRow
from explorer.outcome import Status
from explorer.queries import availability as av
from explorer.queries.availability_probes import cache_path
from explorer.queries.availability_result import AvailabilityResult
from explorer.queries.snapshot import diff_snapshots, load_snapshot, save_snapshot
from explorer.runtime.probe import Probe, run_probes
from explorer.runtime.registry import Registry, get_registry
from explorer.runtime.sandbox import Sandbox, default_sandbox
from explorer.runtime.workaround_exec import workaround_result_dtype
from tests.support.registry_oracle import Oracle, oracle

RAN = ("ok", "fallback")
SEED_OPS = ("range", "cholesky", "exp")
SEED_DTYPES = ("float16", "bfloat16")
#: the raw op each seed op runs, and the registry device type of each mode on CPU (written out here)
RAW = {"range": "Range", "cholesky": "Cholesky", "exp": "Exp"}
CPU_DEVICE_TYPE = {"eager": "CPU", "xla": "XLA_CPU_JIT"}
#: the status of a failed run, from what the registry declares for the raw op that failed
FAILED_AS = {"no_kernel": "no_kernel", "unsupported_dtype": "unsupported_dtype", "ok": "error"}


pytestmark = pytest.mark.usefixtures("cache_dir")  # tests/conftest.py


@pytest.fixture(scope="module")
def reg() -> Registry:
    return get_registry()


@pytest.fixture(scope="module")
def orc() -> Oracle:
    return oracle()


@pytest.fixture(scope="module")
def seed_result(reg: Registry, tmp_path_factory) -> AvailabilityResult:  # type: ignore[no-untyped-def]
    mp = pytest.MonkeyPatch()
    mp.setenv("PX_CACHE_DIR", str(tmp_path_factory.mktemp("seedcache")))
    try:
        return av.availability(
            ops=list(SEED_OPS),
            dtypes=list(SEED_DTYPES),
            backends=["tensorflow", "numpy", "emulated"],
            progress=False,
            registry=reg,
        )
    finally:
        mp.undo()


def _public_call(tf: Any, op: str, dtype: Any) -> tuple[Any, list[Any]]:
    """TensorFlow's public function for a seed op and its inputs, written here (not the catalog's).
    Every input is an argument, range's limit too: written as a literal inside a compiled
    function, tf.range would be folded into a constant and XLA's Range never asked."""
    spd = [[4.0, 1.0, 0.5, 0.2], [1.0, 3.0, 0.3, 0.1], [0.5, 0.3, 2.0, 0.4], [0.2, 0.1, 0.4, 1.5]]
    return {
        "range": (lambda limit: tf.range(limit, dtype=dtype), [tf.constant(12, dtype=dtype)]),
        "cholesky": (tf.linalg.cholesky, [tf.constant(spd, dtype=dtype)]),
        "exp": (tf.math.exp, [tf.constant([-2.0, -0.5, 0.0, 1.5], dtype=dtype)]),
    }[op]


@pytest.fixture(scope="module")
def direct() -> dict[tuple[str, str, str], bool]:
    """(op, dtype, mode) -> did TensorFlow's public call run on CPU and return that dtype, run here."""
    import tensorflow as tf

    out = {}
    for op in SEED_OPS:
        for name in SEED_DTYPES:
            dtype = tf.dtypes.as_dtype(name)
            for mode in ("eager", "xla"):
                with tf.device("/CPU:0"):
                    try:
                        fn, inputs = _public_call(tf, op, dtype)
                        compiled = tf.function(fn, jit_compile=True, autograph=False)
                        result = fn(*inputs) if mode == "eager" else compiled(*inputs)
                    except (tf.errors.OpError, TypeError, ValueError):
                        out[(op, name, mode)] = False
                        continue
                out[(op, name, mode)] = result.dtype == dtype
    return out


def _expected(orc: Oracle, direct: dict[tuple[str, str, str], bool], op: str, dtype: str, mode: str) -> dict:
    """What a probed TensorFlow row must say, from the oracle and the direct run alone."""
    declared = orc.declared(RAW[op], dtype, CPU_DEVICE_TYPE[mode])
    ran = direct[(op, dtype, mode)]
    return {
        "declared": declared,
        "ran": ran,
        "status": "ok" if ran else FAILED_AS[declared],
        "disagreement": ran != (declared == "ok"),
    }


def _row(result: AvailabilityResult, **keys: str) -> dict:
    rows = [r for r in result.records(full=True) if all(r[k] == v for k, v in keys.items())]
    assert len(rows) == 1, (keys, rows)
    return rows[0]


@pytest.mark.slow
def test_rows_have_every_key(seed_result: AvailabilityResult) -> None:
    for r in seed_result.records():
        assert tuple(r) == ROW_KEYS
        assert r["status"] in [s.value for s in Status]


@pytest.mark.slow
def test_registry_rows_match_the_oracle(seed_result: AvailabilityResult, orc: Oracle) -> None:
    rows = seed_result.filter(backend="tensorflow", mode="registry").records(full=True)
    assert {(r["op"], r["dtype"], r["device"]) for r in rows} == {
        (op, dtype, device) for op in SEED_OPS for dtype in SEED_DTYPES for device in CPU_DEVICE_TYPE.values()
    }
    for r in rows:
        assert r["raw_op"] == RAW[r["op"]]
        assert r["status"] == r["declared"] == orc.declared(RAW[r["op"]], r["dtype"], r["device"]), r


@pytest.mark.slow
def test_seed_case_range_float16(
    seed_result: AvailabilityResult, orc: Oracle, direct: dict[tuple[str, str, str], bool]
) -> None:
    for mode in ("eager", "xla"):
        run = _row(seed_result, backend="tensorflow", op="range", dtype="float16", device="CPU", mode=mode)
        want = _expected(orc, direct, "range", "float16", mode)
        assert run["declared"] == want["declared"]
        assert run["status"] == want["status"]
        assert bool(run["disagreement"]) == want["disagreement"], run
    # TensorFlow 2.21: tf.range in float16 and bfloat16 runs eagerly; under XLA the declared
    # kernel's lowering rejects both dtypes ("Invalid type for Range half/bfloat16")
    for dtype, spelled in (("float16", "half"), ("bfloat16", "bfloat16")):
        assert (direct[("range", dtype, "eager")], direct[("range", dtype, "xla")]) == (True, False)
        xla = _row(seed_result, backend="tensorflow", op="range", dtype=dtype, device="CPU", mode="xla")
        assert f"Invalid type for Range {spelled}" in xla["error"]
        assert xla["phase"] == "xla_compile"
        assert "lowering it to HLO failed" in xla["explanation"]
        assert xla["workaround_how"] == f"run it eagerly on CPU, where the registry has a {dtype} kernel"
        assert f"registry declares a {dtype} kernel, but running it failed (error)" in xla["disagreement"]
        eager = _row(seed_result, backend="tensorflow", op="range", dtype=dtype, device="CPU", mode="eager")
        assert eager["phase"] == "ok" and eager["result_dtype"] == dtype
    # numpy float16 works (the comparison the seed question makes)
    assert _row(seed_result, backend="numpy", op="range", dtype="float16", device="CPU")["status"] == "ok"


@pytest.mark.slow
def test_every_tensorflow_cell_matches_a_direct_run(
    seed_result: AvailabilityResult, orc: Oracle, direct: dict[tuple[str, str, str], bool]
) -> None:
    """The disagreement flag is set exactly where the oracle's declaration and the direct run differ."""
    rows = [
        r for r in seed_result.records(full=True) if r["backend"] == "tensorflow" and r["mode"] != "registry"
    ]
    assert {(r["op"], r["dtype"], r["mode"]) for r in rows} == set(direct)
    for r in rows:
        want = _expected(orc, direct, r["op"], r["dtype"], r["mode"])
        assert r["device"] == "CPU", r
        assert (r["result_dtype"] == r["dtype"]) == want["ran"], r
        assert r["declared"] == want["declared"], r
        assert (r["status"] in RAN) == want["ran"], r
        assert r["status"] == want["status"], r
        assert bool(r["disagreement"]) == want["disagreement"], r
        assert bool(r["error"]) == (not want["ran"]), r
        assert bool(r["workaround"]) == (not want["ran"]), r  # every failed cell here has one
    # the seed cells hold each kind: runs, failures, and a disagreement
    outcomes = [_expected(orc, direct, r["op"], r["dtype"], r["mode"]) for r in rows]
    assert {o["ran"] for o in outcomes} == {True, False}
    assert {o["disagreement"] for o in outcomes} == {True, False}


@pytest.mark.slow
def test_cholesky_float16_cpu(
    seed_result: AvailabilityResult, orc: Oracle, direct: dict[tuple[str, str, str], bool]
) -> None:
    # TensorFlow 2.21 (oracle and direct run agree): no float16 CPU kernel, an XLA one
    assert orc.declared("Cholesky", "float16", "CPU") == "no_kernel"
    assert orc.declared("Cholesky", "float16", "XLA_CPU_JIT") == "ok"
    assert (direct[("cholesky", "float16", "eager")], direct[("cholesky", "float16", "xla")]) == (False, True)
    run = _row(seed_result, backend="tensorflow", op="cholesky", dtype="float16", device="CPU", mode="eager")
    assert run["status"] == "no_kernel" and not run["disagreement"]
    assert run["phase"] == "kernel_lookup"
    explanation = run["explanation"]
    assert "Cholesky accepts float16" in explanation
    assert "registers no float16 kernel for it on CPU" in explanation
    listed = (
        explanation.split("float16 kernels exist only for ")[1]
        .split(".")[0]
        .replace(" and ", ", ")
        .split(", ")
    )
    assert set(listed) == orc.kernel_device_types("Cholesky", "float16")
    assert (
        run["workaround_how"]
        == "compile it with XLA (jit_compile=True) on CPU, where the registry has a float16 kernel"
    )
    xla = _row(seed_result, backend="tensorflow", op="cholesky", dtype="float16", device="CPU", mode="xla")
    assert xla["status"] == "ok" and not xla["disagreement"] and xla["result_dtype"] == "float16"
    assert xla["explanation"] == "cholesky runs natively in float16 on CPU under XLA with tensorflow."


@pytest.mark.slow
def test_cholesky_bfloat16_unsupported(
    seed_result: AvailabilityResult, orc: Oracle, direct: dict[tuple[str, str, str], bool]
) -> None:
    # TensorFlow 2.21: Cholesky's signature leaves bfloat16 out, and neither run works
    allowed = orc.type_attrs("Cholesky")["T"]
    assert allowed is not None
    allowed_floats = {orc.name_of(v) for v in allowed if v in orc.float_types}
    assert "bfloat16" not in allowed_floats and "float16" in allowed_floats
    for mode in ("eager", "xla"):
        assert orc.declared("Cholesky", "bfloat16", CPU_DEVICE_TYPE[mode]) == "unsupported_dtype"
        assert direct[("cholesky", "bfloat16", mode)] is False
        run = _row(
            seed_result, backend="tensorflow", op="cholesky", dtype="bfloat16", device="CPU", mode=mode
        )
        assert run["status"] == "unsupported_dtype" and not run["disagreement"]
        assert run["phase"] == "op_build"  # the signature refuses it: no kernel is even looked up
        assert "Cholesky does not accept bfloat16 at all" in run["explanation"]
        said = run["explanation"].split("allows ")[1].split(" (TensorFlow")[0]
        assert set(said.split(", ")) == allowed_floats


@pytest.mark.slow
def test_every_suggested_workaround_runs_in_the_requested_dtype(seed_result: AvailabilityResult) -> None:
    suggested = [r for r in seed_result.records(full=True) if r["workaround"]]
    assert suggested
    for code in sorted({r["workaround"] for r in suggested}):
        dtype = next(r["dtype"] for r in suggested if r["workaround"] == code)
        assert default_sandbox().call("tensorflow", workaround_result_dtype, code, timeout=120) == dtype


@pytest.mark.slow
def test_numpy_bfloat16_is_unsupported_with_a_workaround(seed_result: AvailabilityResult) -> None:
    r = _row(seed_result, backend="numpy", op="exp", dtype="bfloat16", device="CPU")
    assert r["status"] == "unsupported_dtype"
    assert workaround_result_dtype(r["workaround"]) == "bfloat16"


def test_cache_round_trip_and_corrupt_cache_rebuilt(reg: Registry) -> None:
    kwargs = dict(
        ops=["exp"],
        dtypes=["float16", "float32"],
        backends=["numpy", "emulated"],
        modes=["eager"],
        progress=False,
        registry=reg,
    )
    first = av.availability(**kwargs)
    assert first.probed == 4 and first.cached == 0
    second = av.availability(**kwargs)
    assert second.probed == 0 and second.cached == 4
    assert second.records() == first.records()
    assert [r["phase"] for r in second.records(full=True)] == ["ok"] * 4  # the phase survives the store
    path = cache_path()
    path.write_text("{not json")
    third = av.availability(**kwargs)
    assert third.probed == 4
    assert third.records() == first.records()
    fourth = av.availability(**kwargs)  # the rebuilt store holds the fresh records
    assert fourth.probed == 0 and fourth.cached == 4


NUMPY_PROBES = [Probe("numpy", op, "float16", "CPU", "eager") for op in ("exp", "log", "sqrt")]


@pytest.mark.parametrize(
    ("fault", "status", "error"),
    [
        ("segfault", "crashed", "SIGSEGV"),
        pytest.param("hang", "timeout", "did not finish within 2 s", marks=pytest.mark.slow),  # waits 2 s
        ("exit", "error", "SystemExit"),
    ],
)
def test_a_fault_loses_only_the_probe_it_happened_in(fault: str, status: str, error: str) -> None:
    from tests.support import faults

    box = Sandbox()
    try:
        # this worker (and only it: not the one that replaces it) misbehaves in the second probe
        box.call("numpy", faults.misbehave_in_backend, "numpy", {"log": fault}, timeout=60)
        arrived: list[tuple[str, str]] = []
        out = run_probes(
            NUMPY_PROBES,
            probe_timeout=2,
            sandbox=box,
            on_record=lambda key, record: arrived.append((key, record["status"])),
        )
    finally:
        box.close()
    exp, log, sqrt = (out[p.key] for p in NUMPY_PROBES)
    assert exp["status"] == "ok" and sqrt["status"] == "ok"
    assert log["status"] == status and error in log["error"]
    assert arrived == [(p.key, out[p.key]["status"]) for p in NUMPY_PROBES]  # each as it came, in order


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_run_probes_reports_each_record_as_it_arrives_and_leaves_no_temporary_files() -> None:
    import glob
    import os
    import tempfile

    pattern = os.path.join(tempfile.gettempdir(), "px-*")
    before = set(glob.glob(pattern))
    during: list[set[str]] = []
    progress: list[int] = []
    box = Sandbox()
    try:
        out = run_probes(
            NUMPY_PROBES,
            sandbox=box,
            on_progress=progress.append,
            on_record=lambda key, record: during.append(set(glob.glob(pattern)) - before),
        )
    finally:
        box.close()
    assert [r["status"] for r in out.values()] == ["ok", "ok", "ok"]
    assert progress == [1, 1, 1]
    assert during == [set(), set(), set()]  # no progress file while the batch runs
    assert set(glob.glob(pattern)) == before
    with pytest.raises(ValueError, match="probe_timeout"):
        run_probes(NUMPY_PROBES, probe_timeout=float("nan"), sandbox=box)


@pytest.mark.slow
def test_raw_op_without_catalog_entry_gets_registry_rows_only(reg: Registry, orc: Oracle) -> None:
    from explorer.ops import catalog

    used = {raw for op in catalog().values() for raw in op.tf_raw_ops}
    raw = next(
        op for op in sorted(orc.op_defs) if op not in used and orc.kernels.get(op) and orc.data_attr(op)
    )
    res = av.availability(ops=[raw], dtypes=["float16", "float32"], progress=False, registry=reg)
    assert set(res.rows["mode"]) == {"registry"}
    assert set(res.rows["raw_op"]) == {raw}
    got = {(r["dtype"], r["device"]): r["status"] for r in res.records()}
    assert got == {
        (d, t): orc.declared(raw, d, t) for d in ("float16", "float32") for t in ("CPU", "XLA_CPU_JIT")
    }


def test_bad_input_lists_valid_choices(reg: Registry) -> None:
    with pytest.raises(ValueError, match="Valid ops"):
        av.availability(ops=["no_such_op"], progress=False, registry=reg)
    with pytest.raises(ValueError, match="valid"):
        av.availability(ops=["exp"], modes=["jit"], progress=False, registry=reg)
    with pytest.raises(ValueError, match="valid"):
        av.availability(ops=["exp"], devices=["TPU"], progress=False, registry=reg)


@pytest.mark.slow
def test_snapshot_save_load_diff(seed_result: AvailabilityResult, tmp_path) -> None:  # type: ignore[no-untyped-def]
    a_path = save_snapshot(seed_result, tmp_path / "a.json")
    loaded = load_snapshot(a_path)
    assert loaded.records(full=True) == seed_result.records(full=True)
    assert loaded.environment["versions"]["tensorflow"]
    assert loaded.environment["cpu"]
    assert diff_snapshots(seed_result, loaded).empty
    changed = load_snapshot(a_path)
    changed.rows.loc[0, "status"] = "crashed"
    changed.environment["versions"] = dict(changed.environment["versions"], tensorflow="9.9.9")
    save_snapshot(changed, tmp_path / "b.json")
    diff = diff_snapshots(loaded, load_snapshot(tmp_path / "b.json"))
    assert len(diff) == 1 and diff.loc[0, "status_b"] == "crashed" and diff.loc[0, "change"] == "changed"
    with pytest.raises(ValueError, match="not a precision-explorer"):
        (tmp_path / "c.json").write_text("[]")
        load_snapshot(tmp_path / "c.json")


@pytest.mark.slow
def test_snapshots_without_a_phase_column_load_and_a_bad_phase_is_refused(
    seed_result: AvailabilityResult, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    import json

    data = json.loads(save_snapshot(seed_result, tmp_path / "a.json").read_text())
    assert {r["phase"] for r in data["rows"]} >= {"ok", "op_build", "xla_compile", "kernel_lookup"}
    for row in data["rows"]:  # as written before the phase was a column
        del row["phase"]
    (tmp_path / "old.json").write_text(json.dumps(data))
    old = load_snapshot(tmp_path / "old.json")
    assert set(old.rows["phase"]) == {""}
    assert old.records() == seed_result.records()
    data["rows"][0]["phase"] = "somewhere"
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(
        ValueError, match=r"rows\[0\]\.phase: 'somewhere' is not a phase; valid: ok, op_build"
    ):
        load_snapshot(tmp_path / "bad.json")


def test_registry_gaps_and_only_on(reg: Registry, orc: Oracle) -> None:
    gaps = av.registry_gaps(ops=["cholesky", "exp"], registry=reg)
    got = {
        (r.raw_op, r.dtype): (r.status, set(filter(None, r.kernel_devices.split(", "))))
        for r in gaps.itertuples()
    }
    want = {
        (raw, dtype): (orc.declared(raw, dtype, "CPU"), orc.kernel_device_types(raw, dtype))
        for raw in ("Cholesky", "Exp")
        for dtype in ("float16", "bfloat16")
        if orc.declared(raw, dtype, "CPU") != "ok"
    }
    assert got == want
    assert set(want) == {("Cholesky", "float16"), ("Cholesky", "bfloat16")}  # TensorFlow 2.21

    def served(op: str, device: str) -> bool:
        return any(orc.serves(k, device) for k in orc.kernels.get(op, ()))

    gpu_only = sorted(
        op
        for op in orc.float_ops()
        if served(op, "GPU")
        and served(op, "CPU")
        and orc.cells[(op, "float16", "GPU")] == "ok"
        and orc.cells[(op, "float16", "CPU")] == "no_kernel"
    )
    assert len(gpu_only) > 10
    assert av.only_on("float16", "GPU", "CPU", registry=reg) == gpu_only


@pytest.mark.slow
def test_plots_and_table(seed_result: AvailabilityResult) -> None:
    from explorer.plots.availability import STATUS_COLORS, heatmap, heatmaps, styled_table

    ax = heatmap(seed_result, "tensorflow", "CPU", "eager")
    labels = {t.get_text() for t in ax.figure.legends[0].get_texts()}
    grid_statuses = set(seed_result.filter(backend="tensorflow", device="CPU", mode="eager").rows["status"])
    assert labels == grid_statuses
    assert labels <= set(STATUS_COLORS)
    fig = heatmaps(seed_result)
    assert [a.get_title() for a in fig.axes] == [
        "tensorflow · CPU · eager",
        "tensorflow · CPU · xla",
        "numpy · CPU · eager",
        "emulated · CPU · eager",
    ]
    html = styled_table(seed_result.filter(group="linalg")).to_html()
    chol = _row(seed_result, backend="tensorflow", op="cholesky", dtype="float16", device="CPU", mode="eager")
    assert "cholesky" in html and "range" not in html
    assert chol["explanation"].split(":")[0][:40] in html
    with pytest.raises(ValueError, match="valid"):
        heatmap(seed_result, "tensorflow", "GPU", "eager")


# ---------------------------------------------------------------- torch.compile cells


def _torch_compiles(op: str, dtype_name: str) -> bool:
    """Does ``torch.compile`` of the op's torch function (written here) run on CPU and return the
    dtype?  Run in this process."""
    import warnings

    import torch

    dtype = getattr(torch, dtype_name)
    x = torch.tensor([-2.0, -0.5, 0.0, 1.5]).to(dtype)
    fn = {"exp": lambda: torch.exp(x), "add": lambda: torch.add(x, x)}[op]
    torch._dynamo.reset()
    try:
        with warnings.catch_warnings():  # Inductor's own imports warn (torch.jit deprecations)
            warnings.simplefilter("ignore", DeprecationWarning)
            out = torch.compile(fn, fullgraph=True)()
    except Exception:
        return False
    return bool(out.dtype == dtype)


@pytest.mark.slow
def test_torch_compile_cells_when_asked_cached_by_mode_and_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """Compile cells are in the matrix when asked for (and only then), for torch alone, with the
    status a direct torch.compile run gives, compared with OpInfo's CPU dtypes; they are stored per
    mode, and a different torch version is a different cache."""
    import concurrent.futures

    from explorer.runtime import envcache
    from explorer.runtime import probe_store as probe_cache

    ops, dtypes = ["exp", "add"], ["float16", "float8_e4m3fn"]
    asked: dict[str, Any] = dict(
        ops=ops, dtypes=dtypes, backends=["torch", "numpy"], modes=["eager", "compile"], progress=False
    )

    def sweeps() -> tuple[AvailabilityResult, AvailabilityResult]:
        default = av.availability(ops=["exp"], dtypes=["float16"], backends=["torch"], progress=False)
        return default, av.availability(**asked)

    # the sweeps wait on their torch worker in a thread while the direct compiles run here
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        swept = pool.submit(sweeps)
        direct = {(op, dtype): _torch_compiles(op, dtype) for op in ops for dtype in dtypes}
        default, result = swept.result()
    assert set(default.rows["mode"]) == {"registry", "eager"}  # compile is asked for by name
    compiled = result.rows[result.rows["mode"] == "compile"]
    assert sorted(zip(compiled["backend"], compiled["op"], compiled["dtype"], strict=True)) == sorted(
        ("torch", op, dtype) for op in ops for dtype in dtypes
    )
    for row in compiled.to_dict("records"):
        ran = direct[(row["op"], row["dtype"])]
        assert (row["status"] in RAN) == ran, row
        assert (row["phase"] == "ok") if ran else (row["phase"] not in ("", "ok")), row
    cells = result.rows[result.rows["backend"] == "torch"].set_index(["op", "dtype", "mode"])
    # float8 add: eager PyTorch has no CPU kernel, Inductor's code computes it; OpInfo lists no
    # float8 dtype for add, so the compiled cell is flagged and the eager one is not
    assert direct[("add", "float8_e4m3fn")]
    flagged = cells.loc[("add", "float8_e4m3fn", "compile"), "disagreement"]
    assert "does not list float8_e4m3fn" in flagged and "torch.compile" in flagged
    assert cells.loc[("add", "float8_e4m3fn", "eager"), "status"] == "no_kernel"
    assert cells.loc[("add", "float8_e4m3fn", "eager"), "disagreement"] == ""
    assert cells.loc[("exp", "float16", "compile"), "declared"] == "ok"
    assert cells.loc[("exp", "float16", "compile"), "disagreement"] == ""
    # stored per mode: a second sweep runs nothing, and eager and compile records are apart
    again = av.availability(**asked)
    assert again.probed == 0 and again.cached == len(result.rows)
    with probe_cache.open_store() as store:
        keys = store.keys(envcache.environment_key())
    assert {f"torch|{op}|{d}|CPU|{m}" for op in ops for d in dtypes for m in ("eager", "compile")} <= keys
    # another torch version is another environment: the compile cell is probed again
    versions = envcache.framework_versions
    monkeypatch.setattr(envcache, "framework_versions", lambda: {**versions(), "torch": "0.0.0-other"})
    other = av.availability(
        ops=["exp"], dtypes=["float16"], backends=["torch"], modes=["compile"], progress=False
    )
    assert other.probed == 1 and other.cached == 0


def test_records_are_plain_python_values_row_by_row() -> None:
    """``records`` turns each row into plain Python values (numpy scalars unboxed, NaN as None),
    in row order, with the columns asked for; checked against values written out here."""
    import numpy as np
    import pandas as pd

    from explorer.analysis.availability_rows import EXTRA_KEYS

    columns = list(ROW_KEYS) + list(EXTRA_KEYS)
    rows = [dict.fromkeys(columns, "") for _ in range(3)]
    for n, row in enumerate(rows):
        row.update(op=f"op{n}", cached=bool(n % 2))
    frame = pd.DataFrame(rows, columns=columns)
    frame["seconds"] = np.array([0.5, np.nan, 2.0])
    frame["declared"] = [None, np.int64(3), "ok"]
    short = AvailabilityResult(frame).records()
    assert [r["op"] for r in short] == ["op0", "op1", "op2"] and list(short[0]) == list(ROW_KEYS)
    full = AvailabilityResult(frame).records(full=True)
    assert [r["seconds"] for r in full] == [0.5, None, 2.0]
    assert [type(r["seconds"]) for r in full] == [float, type(None), float]
    assert [r["declared"] for r in full] == [None, 3, "ok"] and type(full[1]["declared"]) is int
    assert [r["cached"] for r in full] == [False, True, False] and type(full[1]["cached"]) is bool


def _assert_typed_rows_are_the_records(result: AvailabilityResult) -> None:
    """Each typed row holds its record's values, column by column, with the same types."""
    from dataclasses import FrozenInstanceError, fields

    from explorer.analysis.availability_rows import EXTRA_KEYS

    typed, records = result.typed_rows(), result.records(full=True)
    assert len(typed) == len(records) == len(result.rows) > 0
    assert tuple(f.name for f in fields(AvailabilityRow)) == ROW_KEYS + EXTRA_KEYS
    for row, record in zip(typed, records, strict=True):
        assert isinstance(row, AvailabilityRow)
        for name in ROW_KEYS + EXTRA_KEYS:
            value = getattr(row, name)
            assert value == record[name] and type(value) is type(record[name]), (name, value, record)
    with pytest.raises(FrozenInstanceError):
        typed[0].status = "ok"  # type: ignore[misc]


def test_typed_rows_equal_the_records_of_a_registry_query(reg: Registry, orc: Oracle) -> None:
    """cholesky float16, registry mode: one typed row per registry device type, each what the
    oracle declares, and field by field what ``records(full=True)`` says."""
    res = av.availability(
        ops=["cholesky"],
        dtypes=["float16"],
        backends=["tensorflow"],
        modes=["registry"],
        progress=False,
        registry=reg,
    )
    _assert_typed_rows_are_the_records(res)
    got = {(r.raw_op, r.device): r.status for r in res.typed_rows()}
    assert got == {("Cholesky", t): orc.declared("Cholesky", "float16", t) for t in CPU_DEVICE_TYPE.values()}


def test_typed_rows_equal_the_records_of_probed_rows(seed_result: AvailabilityResult) -> None:
    """Probed rows too (seconds, ran_on, result_dtype and cached filled, declared None for NumPy)."""
    _assert_typed_rows_are_the_records(seed_result)


def test_a_background_read_returns_its_value_or_raises_its_error_in_the_caller() -> None:
    import threading

    from explorer.queries.availability_probes import InBackground

    seen: list[str] = []
    done = InBackground(lambda a, b: seen.append(threading.current_thread().name) or a + b, 2, 3)
    assert done.result() == 5 and seen == ["explorer-background"]

    def fails() -> None:
        raise RuntimeError("no OpInfo here")

    with pytest.raises(RuntimeError, match="no OpInfo here"):
        InBackground(fails).result()
