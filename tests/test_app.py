"""The app headless: set widget values, assert on the state and on what the tabs render."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from explorer.app.jobs import Job
from explorer.app.loader import BackgroundLoader
from explorer.app.state import AppState


def png_of(tab: Any) -> str:
    assert "px-msg-error" not in tab.status.value, tab.status.value
    (bundle,) = tab.plot.outputs
    return str(bundle["data"]["image/png"])


def html_of(out: Any) -> str:
    return "".join(str(o["data"].get("text/html", "")) for o in out.outputs)


@pytest.fixture
def app() -> Any:
    import explorer

    return explorer.App(
        load_tensorflow=False, tab="ranges", op="exp", dtypes=["float16"], backends=["numpy", "emulated"]
    )


# ------------------------------------------------------------------------------------- state


def test_state_validates_normalises_and_notifies_once() -> None:
    state = AppState()
    seen: list[dict[str, Any]] = []
    state.observe(seen.append)
    state.set(dtypes=["bf16", "half", "fp16"], device="gpu")
    assert state.dtypes == ("bfloat16", "float16")
    assert state.device == "GPU"
    assert len(seen) == 1 and set(seen[0]) == {"dtypes", "device"}
    state.set(dtypes=("bfloat16", "float16"))  # no change, no notification
    assert len(seen) == 1


@pytest.mark.parametrize(
    ("field", "value", "listed"),
    [
        ("op", "expp", "exp"),
        ("dtypes", ["float17"], "float16"),
        ("device", "TPU", "GPU"),
        ("backends", ["mxnet"], "emulated"),
        ("mode", "jit", "xla"),
        ("value", "one", "nan"),
        ("policies", ["float8"], "mixed_float16"),
    ],
)
def test_state_rejects_bad_values_listing_the_choices(field: str, value: Any, listed: str) -> None:
    state = AppState()
    before = state.as_dict()
    with pytest.raises(ValueError, match=listed):
        state.set(**{field: value, "mode": "eager"} if field != "mode" else {field: value})
    assert state.as_dict() == before  # nothing half-written


def test_state_unknown_field_and_observer_names() -> None:
    state = AppState()
    with pytest.raises(ValueError, match="valid fields"):
        state.set(colour="red")
    with pytest.raises(ValueError, match="valid fields"):
        state.observe(lambda c: None, names=["colour"])
    with pytest.raises(TypeError):
        state.observe("not callable")  # type: ignore[arg-type]


def test_state_observer_filter_and_unobserve() -> None:
    state = AppState()
    ops: list[Any] = []
    stop = state.observe(lambda ch: ops.append(ch["op"]), names=["op"])
    state.set(dtypes=["float32"])
    state.set(op="log")
    stop()
    state.set(op="exp")
    assert ops == [("range", "log")]


# ------------------------------------------------------------------------------------- widgets <-> state


def test_import_app_is_light_and_app_without_tensorflow_does_not_import_it() -> None:
    code = (
        "import sys, explorer; assert 'ipywidgets' not in sys.modules; "
        "app = explorer.App(load_tensorflow=False); "
        "print(sorted(m for m in ('tensorflow', 'keras', 'torch', 'matplotlib.pyplot') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


def test_widgets_write_to_state_and_follow_it(app: Any) -> None:
    c = app.controls
    c.dtypes.value = ("bfloat16", "float8_e4m3fn")
    assert app.state.dtypes == ("bfloat16", "float8_e4m3fn")
    c.op.value = "log"
    assert app.state.op == "log"
    c.mode.value = "xla"
    assert app.state.mode == "xla"
    app.state.set(dtypes=["float16"], device="GPU", backends=["numpy"])
    assert tuple(c.dtypes.value) == ("float16",)
    assert c.device.value == "GPU"
    assert tuple(c.backends.value) == ("numpy",)


def test_empty_selection_is_refused_with_a_message_and_widget_restored(app: Any) -> None:
    app.controls.dtypes.value = ()
    assert app.state.dtypes == ("float16",)
    assert tuple(app.controls.dtypes.value) == ("float16",)
    assert "at least one dtype" in app.controls.message.value


def test_op_search_narrows_the_dropdown(app: Any) -> None:
    app.controls.op_search.value = "log"
    names = [v for _, v in app.controls.op.options]
    assert "log" in names and "exp" in names  # exp is the current op: always kept
    assert all("log" in n.lower() or n == "exp" for n in names)  # raw ops too: Log, LogSoftmax


def test_every_widget_has_a_stable_css_class(app: Any) -> None:
    c = app.controls
    for widget, css in [
        (c.op, "px-op"),
        (c.dtypes, "px-dtypes"),
        (c.device, "px-device"),
        (c.backends, "px-backends"),
        (c.mode, "px-mode"),
        (c.op_search, "px-op-search"),
    ]:
        assert css in widget._dom_classes
    for key, tab in app.tabs.items():
        assert "px-plot" in tab.plot._dom_classes and f"px-{key}-plot" in tab.plot._dom_classes


# ------------------------------------------------------------------------------------- rendering


def test_ranges_tab_shows_the_exact_float16_exp_overflow_threshold(app: Any) -> None:
    tab = app.tabs["ranges"]
    assert app.selected_tab is tab and not tab.dirty
    assert png_of(tab)
    values = np.arange(2**16, dtype=np.uint16).view(np.float16)
    finite = values[np.isfinite(values)]
    with np.errstate(over="ignore"):
        first_inf = float(finite[np.isinf(np.exp(finite))].min())  # independent: every float16 input
    assert first_inf == 11.09375
    assert repr(first_inf) in html_of(tab.details)


def test_changing_dtype_or_op_rerenders_ranges(app: Any) -> None:
    tab = app.tabs["ranges"]
    before = png_of(tab)
    app.controls.dtypes.value = ("bfloat16",)
    after_dtype = png_of(tab)
    assert after_dtype != before
    app.controls.op.value = "square"
    assert png_of(tab) != after_dtype
    assert "square" in str(tab.figure.axes[1].get_title())


def test_non_elementwise_op_shows_number_lines_and_a_note(app: Any) -> None:
    app.controls.op.value = "cholesky"
    tab = app.tabs["ranges"]
    assert png_of(tab)
    assert "not an elementwise op" in tab.status.value


def test_tabs_render_lazily_when_selected(app: Any) -> None:
    bits = app.tabs["bits"]
    app.state.set(value="65519")
    assert bits.dirty and bits.render_count == 0
    app.select("bits")
    assert not bits.dirty and bits.render_count == 1


def test_bits_tab_agrees_with_ml_dtypes(app: Any) -> None:
    app.state.set(dtypes=["float16", "bfloat16", "float8_e4m3fn"], value="0.1")
    tab = app.select("bits")
    markup = html_of(tab.details)
    for dtype, width in ((np.float16, 16), (ml_dtypes.bfloat16, 16), (ml_dtypes.float8_e4m3fn, 8)):
        pattern = np.array([0.1]).astype(dtype).view(np.uint16 if width == 16 else np.uint8)[0]
        assert format(int(pattern), f"0{width}b") in markup
    assert "Every value of float8_e4m3fn (256 code points)" in markup
    tab.value.value = "not a number"
    assert app.state.value == "0.1"
    assert "must be a number" in tab.status.value


def test_accuracy_tab_lists_each_backend(app: Any) -> None:
    tab = app.select("accuracy")
    assert png_of(tab)
    markup = html_of(tab.details)
    assert "numpy" in markup and "emulated" in markup and "max_ulp" in markup


def test_accuracy_tab_shows_where_a_bfloat16_sum_stagnates(app: Any) -> None:
    app.state.set(dtypes=["bfloat16"], op="cholesky")  # accumulation is shown for any op
    tab = app.select("accuracy")
    assert png_of(tab) and "not an elementwise op" in tab.status.value
    terms = np.random.default_rng(0).uniform(0, 1, 10_000).astype(ml_dtypes.bfloat16)
    acc = ml_dtypes.bfloat16(0)
    for t in terms:  # independent: a bfloat16 accumulator, rounded after every addition
        acc = ml_dtypes.bfloat16(np.float32(acc) + np.float32(t))
    assert float(acc) == 256.0
    assert "<td>256.0</td>" in html_of(tab.details)


def test_errors_are_shown_as_a_readable_message(app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    tab = app.tabs["accuracy"]

    def boom() -> None:
        raise RuntimeError("the engine fell over\nsecond line of detail")

    monkeypatch.setattr(tab, "render", boom)
    tab.refresh()
    assert "the engine fell over" in tab.status.value
    assert "px-msg-error" in tab.status.value
    assert "Traceback" not in tab.status.value


def test_figure_export_png_and_svg(app: Any, tmp_path: Path) -> None:
    tab = app.tabs["ranges"]
    assert tab.export("png").startswith(b"\x89PNG")
    assert b"<svg" in tab.export("svg")[:2000]
    with pytest.raises(ValueError, match="png, svg"):
        tab.export("gif")
    path = app.export("ranges", str(tmp_path / "ranges.svg"))
    assert Path(path).read_bytes().lstrip().startswith(b"<?xml")
    tab.export_png.click()
    assert "download=" in tab.export_link.value and "data:image/png;base64," in tab.export_link.value


def test_kernels_tab_shows_the_registry_before_tensorflow_loads(app: Any) -> None:
    """The installed release's shipped registry answers while TensorFlow is not loaded (the
    fixture's App never loads it): cholesky's declared rows are those of a separate reading of
    TensorFlow's registry (tests/registry_oracle.py)."""
    from registry_oracle import oracle

    tab = app.select("kernels")
    assert not tab.needs_tensorflow
    app.state.set(op="cholesky", dtypes=("float16", "bfloat16"), backends=("tensorflow",), mode="registry")
    tab.refresh()
    assert "px-msg-loading" not in tab.status.value, tab.status.value
    assert app.ctx.tf_loader.status == "idle"
    rows = tab.declared_frame(["cholesky"], ("float16", "bfloat16"))
    truth = oracle()
    for dtype in ("float16", "bfloat16"):
        for device in ("CPU", "XLA_CPU_JIT"):
            cell = (rows["raw_op"] == "Cholesky") & (rows["dtype"] == dtype) & (rows["device"] == device)
            got = rows[cell]["status"].tolist()
            assert got == [truth.declared("Cholesky", dtype, device)], (dtype, device, got)


@pytest.mark.parametrize("registry_at_hand", [False, True])
def test_failed_tensorflow_load_is_reported_readably(registry_at_hand: bool, monkeypatch: Any) -> None:
    """Without a registry at hand the kernels tab says it needs TensorFlow; with the shipped one
    it still shows the declared rows.  Either way the banner gives the import error, no traceback."""
    import explorer
    from explorer.analysis import registry

    monkeypatch.setattr(registry, "available_without_tensorflow", lambda: registry_at_hand)

    def fail() -> None:
        raise ImportError("libcudart.so.12: cannot open shared object file")

    loader = BackgroundLoader("TensorFlow", fail)
    app = explorer.App(tf_loader=loader, tab="kernels")
    deadline = time.monotonic() + 10
    while "could not be loaded" not in app.banner.value and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "could not be loaded" in app.banner.value and "libcudart" in app.banner.value
    app.selected_tab.refresh()
    status = app.selected_tab.status.value
    if registry_at_hand:
        assert "declared by TensorFlow" in status and "px-msg-error" not in status, status
    else:
        assert "needs TensorFlow, which could not be loaded" in status
    assert "Traceback" not in status


# ------------------------------------------------------------------------------------- jobs and loader


def test_job_reports_progress_and_can_be_cancelled() -> None:
    started = threading.Event()
    seen: list[float] = []

    def work(ctx: Any) -> int:
        for i in range(10_000):
            ctx.progress(i / 10_000, f"step {i}")
            started.set()
            ctx.check()
            time.sleep(0.001)
        return 1

    job = Job("loop", work).on_progress(lambda j: seen.append(j.fraction))
    job.start()
    assert started.wait(5)
    job.cancel()
    job.wait(5)
    assert job.status == "cancelled" and job.result is None
    assert seen and max(seen) < 1.0


def test_failed_job_keeps_a_readable_error() -> None:
    job = Job("bad", lambda ctx: 1 / 0).start()
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        job.wait(5)
    assert job.status == "failed"


def test_loader_runs_once_and_calls_back() -> None:
    calls: list[str] = []
    loader = BackgroundLoader("x", lambda: calls.append("ran") or 7)
    got: list[int] = []
    loader.add_done_callback(lambda ld: got.append(ld.result))
    loader.start().start()
    assert loader.wait(5) == 7
    loader.add_done_callback(lambda ld: got.append(ld.result))  # already done: called at once
    assert calls == ["ran"] and got == [7, 7]


# ------------------------------------------------------------------------------------- launchers


def test_voila_launcher_is_workshop_mode_and_offline(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "explorer", "app", "--dry-run", "--no-browser"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=Path(__file__).parents[1],
    )
    cmd = out.stdout
    for part in (
        "voila",
        "explorer.ipynb",
        "--Voila.ip=127.0.0.1",
        "disable_check_xsrf",
        "cull_idle_timeout=900",
        "cull_interval=60",
        "--template=px-offline",
        "--no-browser",
    ):
        assert part in cmd
    from explorer.cli.app import write_offline_template

    root = write_offline_template(tmp_path)
    template = (root / "voila" / "templates" / "px-offline" / "index.html.j2").read_text()
    assert "https://" not in template and "super.super()" in template
    assert json.loads((root / "voila" / "templates" / "px-offline" / "conf.json").read_text()) == {
        "base_template": "lab"
    }


def test_lab_launcher_opens_the_explorer_notebook() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "explorer", "lab", "--dry-run"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=Path(__file__).parents[1],
    )
    assert "--LabApp.default_url=/lab/tree/notebooks/explorer.ipynb" in out.stdout
    assert "--ip=127.0.0.1" in out.stdout


def test_launchers_reject_bad_ports() -> None:
    from explorer.cli.app import voila_command
    from explorer.cli.lab import lab_command

    with pytest.raises(ValueError, match="port"):
        voila_command(Path("x.ipynb"), 0)
    with pytest.raises(ValueError, match="port"):
        lab_command(Path("."), Path("./x.ipynb"), 70000)


# ------------------------------------------------------------------------------------- with TensorFlow


@pytest.fixture(scope="module")
def tf_app() -> Any:
    import explorer

    app = explorer.App(
        tab="kernels",
        op="cholesky",
        dtypes=["float16", "bfloat16"],
        backends=["tensorflow", "numpy", "emulated"],
    )
    app.ctx.tf_loader.wait(300)
    deadline = time.monotonic() + 60
    while (app.tabs["kernels"].dirty or not app.tabs["kernels"].plot.outputs) and time.monotonic() < deadline:
        time.sleep(0.1)
    return app


@pytest.mark.slow
def test_kernels_tab_shows_the_registry_and_follows_the_dtype(tf_app: Any) -> None:
    from explorer.analysis.registry import get_registry

    tab = tf_app.select("kernels")
    before = png_of(tab)
    markup = html_of(tab.details)
    reg = get_registry()
    for dtype in ("float16", "bfloat16"):
        assert reg.declared("Cholesky", dtype, "CPU").value in markup
    tf_app.controls.dtypes.value = ("float32",)
    assert png_of(tab) != before
    assert "ok" in html_of(tab.details)
    # raw ops are searchable once the registry has loaded
    tf_app.controls.op_search.value = "BatchMatMulV"
    assert any(v.startswith("BatchMatMulV") for _, v in tf_app.controls.op.options)


@pytest.mark.slow
def test_kernels_tab_loads_a_snapshot_from_another_machine(tf_app: Any, tmp_path: Path) -> None:
    from explorer.analysis.availability import availability
    from explorer.analysis.snapshot import save_snapshot

    result = availability(
        ops=["cholesky", "matmul"],
        dtypes=["float16", "bfloat16"],
        backends=["tensorflow"],
        devices=["GPU"],
        modes=["registry"],
        progress=False,
    )
    result.environment["hostname"] = "gpu-box"
    path = save_snapshot(result, tmp_path / "gpu.json")
    tf_app.state.set(op="cholesky", dtypes=["float16", "bfloat16"], mode="registry", device="GPU")
    tf_app.load_snapshot(str(path))
    tab = tf_app.tabs["kernels"]
    assert "gpu.json" in tab.snapshot_label.value
    assert png_of(tab) and "snapshot" in tab.status.value
    tab.clear_snapshot()
    assert tab.snapshot is None
    saved = json.loads(tab.snapshot_bytes())  # this machine's rows, loadable elsewhere
    assert saved["kind"] == "precision-explorer/kernels" and saved["rows"]
    assert {r["op"] for r in saved["rows"]} >= {"cholesky"}
    tab.save_button.click()
    assert "download=" in tab.save_link.value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"kind": "something else"}))
    with pytest.raises(ValueError, match="not a precision-explorer kernels snapshot"):
        tf_app.load_snapshot(str(bad))
    tf_app.state.set(device="CPU")


@pytest.mark.slow
def test_environment_tab_counts_gpu_kernels_from_the_registry(tf_app: Any) -> None:
    from explorer.analysis.registry import get_registry

    tab = tf_app.select("environment")
    assert png_of(tab)
    markup = html_of(tab.details)
    reg = get_registry()
    frame = reg.matrix(ops=reg.ops_with_kernels(), dtypes=[tf_app.state.dtype], device_types=["GPU"])
    assert f"<td>{int((frame['status'] == 'ok').sum())}</td>" in markup
    assert "tensorflow" in markup


@pytest.mark.slow
def test_training_tab_trains_live_and_cancels(tf_app: Any) -> None:
    tab = tf_app.select("training")
    tf_app.state.set(policies=["float32", "fp8_emulated"])
    tab.epochs.value = 1
    job = tab.start(wait=True)
    assert job.status == "done", job.error
    assert png_of(tab)
    markup = html_of(tab.details)
    assert "float32" in markup and "fp8_emulated" in markup
    assert all(len(r.epochs) == 1 for r in tab.runs.values())
    tab.epochs.value = 50
    job = tab.start()
    time.sleep(0.5)
    tab.cancel()
    job.wait(120)
    assert job.status in ("cancelled", "done")
    assert "cancelled" in tab.status.value or job.status == "done"


@pytest.mark.slow
def test_probe_now_runs_in_the_background_and_explains_failures(tf_app: Any) -> None:
    tf_app.state.set(
        op="cholesky", dtypes=["float16"], backends=["tensorflow"], mode="registry", device="CPU"
    )
    tab = tf_app.select("kernels")
    job = tab.start_probe()
    assert job.running or job.status == "done"  # the call returns at once
    job.wait(600)
    assert job.status == "done", job.error
    assert tf_app.state.mode == "eager"  # the view switches to what was probed
    markup = html_of(tab.details)
    assert png_of(tab)
    from explorer.backends import get_backend

    outcome = get_backend("tensorflow").run("cholesky", "float16")  # independent: a real run here
    assert outcome.status.value in markup
    if not outcome.ran:
        assert "<b>Workaround</b>" in markup
    tf_app.state.set(mode="registry", backends=["tensorflow", "numpy", "emulated"])


def test_binder_installs_every_runtime_dependency_and_fails_on_errors() -> None:
    import re
    import tomllib

    root = Path(__file__).parents[1]
    deps = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=!~ \[]", d)[0].lower().replace("_", "-") for d in deps}
    env = (root / "binder" / "environment.yml").read_text()
    listed = {
        re.split(r"[<>=!~ ]", line.strip()[2:])[0].lower().replace("_", "-")
        for line in env.splitlines()
        if line.strip().startswith("- ")
    }
    assert names <= listed, f"binder/environment.yml misses {sorted(names - listed)}"
    post = (root / "binder" / "postBuild").read_text()
    assert "set -e" in post or "set -euo pipefail" in post
    assert "pip install -e ." in post


def _all_markup(widget: Any) -> list[str]:
    """Every piece of HTML the widget tree sends to the browser: HTML widgets' values and the
    text/html of Output widgets, depth first."""
    import ipywidgets as widgets

    found: list[str] = []
    if isinstance(widget, widgets.HTML | widgets.HTMLMath):
        found.append(str(widget.value))
    if isinstance(widget, widgets.Output):
        found.extend(str(o.get("data", {}).get("text/html", "")) for o in widget.outputs)
    for child in getattr(widget, "children", ()) or ():
        found.extend(_all_markup(child))
    return found


@pytest.mark.slow
def test_hostile_snapshot_reaches_the_page_escaped(tf_app: Any, tmp_path: Path) -> None:
    """Payloads in every free-text column and the environment are shown as text, never as markup
    (checked with the standard library's HTML parser, not with the app's own escaping)."""
    import hostile

    tab = tf_app.tabs["kernels"]
    tf_app.state.set(op="range", dtypes=["float16", "bfloat16"], mode="registry", device="CPU")
    path = hostile.write(tmp_path / "hostile.json", hostile.hostile_valid_snapshot())
    try:
        tf_app.load_snapshot(str(path))
        assert tab.snapshot is not None
        for mode in ("registry", "eager"):
            tf_app.state.set(mode=mode)
            tab.refresh()
            markup = "".join(_all_markup(tf_app.widget))
            assert hostile.dangerous_markup(markup) == [], mode
            # the payloads are there, as text: escaped, not dropped
            assert "onerror=" in hostile.visible_text(markup), mode
    finally:
        tab.clear_snapshot()
        tf_app.state.set(mode="registry")


@pytest.mark.slow
@pytest.mark.parametrize("column", ["backend", "dtype", "device", "mode", "status"])
def test_hostile_snapshot_with_a_bad_name_is_refused_and_named(
    tf_app: Any, tmp_path: Path, column: str
) -> None:
    import hostile

    path = hostile.write(tmp_path / f"bad-{column}.json", hostile.hostile_invalid_snapshots()[column])
    before = path.read_bytes()
    with pytest.raises(ValueError, match=rf"rows\[0\]\.{column}"):
        tf_app.load_snapshot(str(path))
    assert path.read_bytes() == before  # the user's file is left as it was
    assert tf_app.tabs["kernels"].snapshot is None
