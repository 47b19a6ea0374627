"""Kernel availability: real registry, real sandbox runs, explanations, workarounds, cache, snapshots."""

from __future__ import annotations

import pytest

from explorer.analysis import availability as av
from explorer.analysis.probe import Probe, run_probes
from explorer.analysis.registry import Registry, get_registry
from explorer.analysis.snapshot import diff_snapshots, load_snapshot, save_snapshot
from explorer.analysis.workarounds import workaround_result_dtype
from explorer.outcome import Status
from explorer.sandbox import Sandbox, default_sandbox

RAN = ("ok", "fallback")


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("PX_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def reg() -> Registry:
    return get_registry()


@pytest.fixture(scope="module")
def seed_result(reg: Registry, tmp_path_factory) -> av.AvailabilityResult:  # type: ignore[no-untyped-def]
    mp = pytest.MonkeyPatch()
    mp.setenv("PX_CACHE_DIR", str(tmp_path_factory.mktemp("seedcache")))
    try:
        return av.availability(
            ops=["range", "cholesky", "exp"],
            dtypes=["float16", "bfloat16"],
            backends=["tensorflow", "numpy", "emulated"],
            progress=False,
            registry=reg,
        )
    finally:
        mp.undo()


def _row(result: av.AvailabilityResult, **keys: str) -> dict:
    rows = [r for r in result.records(full=True) if all(r[k] == v for k, v in keys.items())]
    assert len(rows) == 1, (keys, rows)
    return rows[0]


def test_rows_have_every_key(seed_result: av.AvailabilityResult) -> None:
    for r in seed_result.records():
        assert tuple(r) == av.ROW_KEYS
        assert r["status"] in [s.value for s in Status]


def test_seed_case_range_float16(seed_result: av.AvailabilityResult, reg: Registry) -> None:
    for mode, device_type in (("eager", "CPU"), ("xla", "XLA_CPU_JIT")):
        declared = reg.declared("Range", "float16", device_type).value
        reg_row = _row(
            seed_result,
            backend="tensorflow",
            op="range",
            dtype="float16",
            device=device_type,
            mode="registry",
        )
        assert reg_row["status"] == declared
        run = _row(seed_result, backend="tensorflow", op="range", dtype="float16", device="CPU", mode=mode)
        assert run["declared"] == declared
        # the run agrees with the registry, or the disagreement is flagged with a reason
        agrees = (run["status"] in RAN) == (declared == "ok")
        assert agrees or run["disagreement"], run
        if run["status"] not in RAN:
            assert run["error"] and run["workaround"], run
    # numpy float16 works (the comparison the seed question makes)
    assert _row(seed_result, backend="numpy", op="range", dtype="float16", device="CPU")["status"] == "ok"


def test_every_tensorflow_cell_agrees_or_is_flagged(seed_result: av.AvailabilityResult) -> None:
    for r in seed_result.records(full=True):
        if r["backend"] == "tensorflow" and r["mode"] != "registry" and r["declared"]:
            assert ((r["status"] in RAN) == (r["declared"] == "ok")) or r["disagreement"], r


def test_cholesky_float16_cpu(seed_result: av.AvailabilityResult, reg: Registry) -> None:
    declared = reg.declared("Cholesky", "float16", "CPU")
    run = _row(seed_result, backend="tensorflow", op="cholesky", dtype="float16", device="CPU", mode="eager")
    if declared is Status.NO_KERNEL:
        assert run["status"] == "no_kernel"
        for device in reg.kernel_devices("Cholesky", "float16"):
            assert device in run["explanation"]
        assert "Cholesky accepts float16" in run["explanation"]
    xla = _row(seed_result, backend="tensorflow", op="cholesky", dtype="float16", device="CPU", mode="xla")
    if reg.declared("Cholesky", "float16", "XLA_CPU_JIT") is Status.OK:
        assert xla["status"] in RAN or xla["disagreement"]


def test_cholesky_bfloat16_unsupported(seed_result: av.AvailabilityResult, reg: Registry) -> None:
    if reg.declared("Cholesky", "bfloat16", "CPU") is not Status.UNSUPPORTED_DTYPE:
        pytest.skip("this TensorFlow accepts bfloat16 for Cholesky")
    for mode in ("eager", "xla"):
        run = _row(
            seed_result, backend="tensorflow", op="cholesky", dtype="bfloat16", device="CPU", mode=mode
        )
        assert run["status"] == "unsupported_dtype"
        assert "does not accept bfloat16" in run["explanation"]


def test_every_suggested_workaround_runs_in_the_requested_dtype(seed_result: av.AvailabilityResult) -> None:
    suggested = [r for r in seed_result.records(full=True) if r["workaround"]]
    assert suggested
    for code in sorted({r["workaround"] for r in suggested}):
        dtype = next(r["dtype"] for r in suggested if r["workaround"] == code)
        assert default_sandbox().call("tensorflow", workaround_result_dtype, code, timeout=120) == dtype


def test_numpy_bfloat16_is_unsupported_with_a_workaround(seed_result: av.AvailabilityResult) -> None:
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
    path = av.cache_path()
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
        ("hang", "timeout", "did not finish within 2 s"),
        ("exit", "error", "SystemExit"),
    ],
)
def test_a_fault_loses_only_the_probe_it_happened_in(fault: str, status: str, error: str) -> None:
    import _faults  # tests/ is on sys.path

    box = Sandbox()
    try:
        # this worker (and only it: not the one that replaces it) misbehaves in the second probe
        box.call("numpy", _faults.misbehave_in_backend, "numpy", {"log": fault}, timeout=60)
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


def test_raw_op_without_catalog_entry_gets_registry_rows_only(reg: Registry) -> None:
    from explorer.ops import catalog

    used = {raw for op in catalog().values() for raw in op.tf_raw_ops}
    raw = next(op for op in reg.ops_with_kernels() if op not in used and reg.op(op).data_attr)
    res = av.availability(ops=[raw], dtypes=["float16"], progress=False, registry=reg)
    assert set(res.rows["mode"]) == {"registry"}
    assert set(res.rows["raw_op"]) == {raw}


def test_bad_input_lists_valid_choices(reg: Registry) -> None:
    with pytest.raises(ValueError, match="Valid ops"):
        av.availability(ops=["no_such_op"], progress=False, registry=reg)
    with pytest.raises(ValueError, match="valid"):
        av.availability(ops=["exp"], modes=["jit"], progress=False, registry=reg)
    with pytest.raises(ValueError, match="valid"):
        av.availability(ops=["exp"], devices=["TPU"], progress=False, registry=reg)


def test_snapshot_save_load_diff(seed_result: av.AvailabilityResult, tmp_path) -> None:  # type: ignore[no-untyped-def]
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


def test_registry_gaps_and_only_on(reg: Registry) -> None:
    gaps = av.registry_gaps(ops=["cholesky", "exp"], registry=reg)
    for r in gaps.itertuples(index=False):
        assert reg.declared(r.raw_op, r.dtype, "CPU").value == r.status != "ok"
    gpu_only = av.only_on("float16", "GPU", "CPU", registry=reg)
    for op in gpu_only[:20]:
        assert reg.declared(op, "float16", "GPU") is Status.OK
        assert reg.declared(op, "float16", "CPU") is Status.NO_KERNEL


def test_plots_and_table(seed_result: av.AvailabilityResult) -> None:
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
