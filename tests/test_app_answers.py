"""The app for a newcomer, headless (issue 28): each tab first answers the selection in one
sentence, checked against independent readings (the shipped registry files read here, NumPy
runs, ml_dtypes); the jargon is linked to a glossary; implementation notes stay in the
Environment tab; the wordings the issue found wrong are gone."""

from __future__ import annotations

import html
import importlib.metadata
import re
import sys
from collections.abc import Iterator
from typing import Any

import ipywidgets as widgets
import ml_dtypes
import numpy as np
import pytest

from tests.support import shipped_registries as shipped
from tests.support.probed import one_ok_numpy_cell
from tests.support.sampling import sample_during

#: the terms issue 28 lists, each to be explained in the glossary (typed from the issue)
ISSUE_TERMS = (
    "registry",
    "eager",
    "XLA",
    "compile",
    "declared",
    "fallback",
    "XLA_CPU_JIT",
    "unsupported_dtype",
    "fnuz",
    "e8m0fnu",
    "tf32",
    "emulated",
)


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The app, with an explorer cache of the module's own: what it says of probes never
    depends on what other tests (or the user) stored."""
    import explorer

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PX_CACHE_DIR", str(tmp_path_factory.mktemp("answers") / "cache"))
        yield explorer.App(
            load_tensorflow=False, op="range", dtypes=["float16"], backends=["numpy", "emulated"]
        )


@pytest.fixture(autouse=True)
def _selection_restored(app: Any) -> Any:
    """Each test starts from the same backends and mode (no TensorFlow sweep is ever started:
    tensorflow is selected only on the Kernels tab, which reads the registry)."""
    yield
    app.state.set(backends=["numpy", "emulated"], mode="registry", device="CPU")


def text_of(markup: str) -> str:
    """The text a browser shows for ``markup`` (tags dropped, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def answers_of(tab: Any) -> list[str]:
    return [text_of(p) for p in re.findall(r"<p class='px-answer-sentence'>(.*?)</p>", tab.answer.value)]


# ------------------------------------------------------------------------------- oracles


def releases() -> list[str]:
    return [entry["release"] for entry in shipped.index()["releases"]]


def history(raw_op: str, attr: str, dtype: str, device: str) -> list[tuple[str, str]]:
    """Each shipped release's status, read from its JSON file here."""
    return [(r, shipped.expected_status(shipped.raw(r), raw_op, attr, dtype, device)) for r in releases()]


def installed_tensorflow() -> str:
    return importlib.metadata.version("tensorflow")


# ------------------------------------------------------------------------------- (1) answers


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
@pytest.mark.parametrize(
    ("op", "raw_op", "attr", "dtype", "device"),
    [
        ("range", "Range", "Tidx", "float16", "CPU"),
        ("qr", "Qr", "T", "float16", "CPU"),
        ("qr", "Qr", "T", "bfloat16", "GPU"),
        ("cholesky", "Cholesky", "T", "bfloat16", "CPU"),
    ],
)
def test_kernels_answer_says_yes_or_no_since_when_and_the_workaround(
    app: Any, op: str, raw_op: str, attr: str, dtype: str, device: str
) -> None:
    version = installed_tensorflow()
    if version not in releases():
        pytest.skip(f"the installed TensorFlow {version} has no shipped registry to read here")
    tab = app.select("kernels")
    app.state.set(op=op, dtypes=[dtype], device=device, mode="registry", backends=["tensorflow"])
    # mode registry shows CPU and GPU side by side: a sentence for each
    (sentence,) = [s for s in answers_of(tab) if f" {dtype} {device} kernel" in s]
    statuses = history(raw_op, attr, dtype, device)
    now = dict(statuses)[version]
    assert sentence.startswith("Yes: " if now == "ok" else "No: "), sentence
    assert f"TensorFlow {version}" in sentence and raw_op in sentence and f"{dtype} {device}" in sentence
    if now == "ok":
        ok_since = len(statuses)
        while ok_since > 0 and statuses[ok_since - 1][1] == "ok":
            ok_since -= 1
        if ok_since > 0:
            assert f"since {statuses[ok_since][0]}; on {statuses[ok_since - 1][0]} and earlier" in sentence
    elif all(status != "ok" for _, status in statuses):
        assert f"any of the {len(statuses)} shipped releases" in sentence, sentence
    wide_ok = shipped.expected_status(shipped.raw(version), raw_op, attr, "float32", device) == "ok"
    if now != "ok" or "earlier" in sentence:
        assert ("then tf.cast to " + dtype in sentence) == wide_ok, sentence
    # the answer comes first in the tab, above the intro and the heatmap
    assert tab.widget.children[0] is tab.answer


def test_kernels_answer_follows_the_selection_and_never_lingers(app: Any) -> None:
    tab = app.select("kernels")
    app.state.set(op="range", dtypes=["float16", "bfloat16"], mode="registry", backends=["tensorflow"])
    first = answers_of(tab)
    said = [tuple(s.split(" kernel")[0].split()[-2:]) for s in first]
    assert said == [("float16", "CPU"), ("float16", "GPU"), ("bfloat16", "CPU"), ("bfloat16", "GPU")]
    app.state.set(op="cholesky")
    assert all("Cholesky" in s and "Range" not in s for s in answers_of(tab))
    app.state.set(mode="eager")  # nothing probed here: the answer says it is the registry's
    assert all("not been run on this machine" in s for s in answers_of(tab)), answers_of(tab)
    assert len(answers_of(tab)) == 2  # the selected device only


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_ranges_answer_names_the_first_overflowing_input(app: Any) -> None:
    app.state.set(op="exp", dtypes=["float16"], backends=["emulated"])
    (sentence,) = answers_of(app.select("ranges"))
    x = ml_dtypes.finfo(np.float16)
    values = np.arange(0, 0x7C00, dtype=np.uint16).view(np.float16).astype(np.float64)  # +0 .. max
    threshold = float(x.max) + 2.0 ** (int(x.maxexp) - 1 - int(x.nmant) - 1)  # max + ulp/2: rounds to inf
    with np.errstate(over="ignore"):
        first = values[np.exp(values) >= threshold].min()
    assert sentence.startswith("exp in float16 (emulated): overflows for x >= " + repr(float(first)) + ";")


def test_accuracy_answer_counts_the_inputs_numpy_does_not_round_correctly(app: Any) -> None:
    app.state.set(op="exp", dtypes=["float16"], backends=["numpy", "emulated"])
    (sentence,) = answers_of(app.select("accuracy"))
    bits = np.arange(0, 0x10000, dtype=np.uint32).astype(np.uint16).view(np.float16)
    x = bits[np.isfinite(bits)]
    with np.errstate(all="ignore"):
        got = np.exp(x)
        exact = np.exp(x.astype(np.float64)).astype(np.float16)  # transcendental: no double-rounding ties
    wrong = int(np.sum(got != exact))
    assert f"numpy is at most 1 representable value off ({wrong:,} not correctly rounded)" in sentence
    assert f"({len(x):,})" in sentence or f"({len(x) - 1:,})" in sentence  # -0 and +0 may count once


def test_bits_table_and_sentence_write_an_exact_value_alike(app: Any) -> None:
    assert float(ml_dtypes.bfloat16(0.1015625)) == 0.1015625  # representable: written in full
    app.state.set(value="0.1015625", dtypes=["bfloat16"])
    tab = app.select("bits")
    (sentence,) = answers_of(tab)
    assert "0.1015625 is exactly representable" in sentence
    assert "<td>0.1015625</td>" in tab.details.value and "0.1016" not in text_of(tab.details.value)


# ------------------------------------------------------------------------------- (7) notes, glossary


def test_implementation_notes_are_in_the_environment_tab_only(app: Any) -> None:
    assert app.banner.value == ""  # nothing is loading or failed: the banner is empty
    assert "TensorFlow is not imported" not in app.tabs["kernels"].intro_html.value
    env = app.select("environment")
    assert "How this app runs" in env.details.value
    note = text_of(env.details.value).split("How this app runs", 1)[1]
    if "tensorflow" in sys.modules:  # imported here (or loaded by an earlier test of this process)
        assert "TensorFlow" in note and "in this kernel." in note and "not imported" not in note, note
    else:
        assert "TensorFlow is not imported in this kernel" in note and "sandboxed worker" in note, note
    assert "Kernels needs TensorFlow" not in env.details.value  # it reads the shipped registry


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_glossary_explains_every_term_of_the_issue_and_each_use_links_to_it(app: Any) -> None:
    glossary = app.glossary.value
    ids = set(re.findall(r"<dt id='([^']+)'", glossary))
    for term in ISSUE_TERMS:
        assert re.search(rf"<dt id='[^']+' tabindex='-1'>{re.escape(term)}</dt><dd>\w", glossary), term
    links = []
    for key in app.tabs:
        tab = app.select(key)
        links += re.findall(r"<a class='px-term' href='#([^']+)'>([^<]+)</a>", tab.intro_html.value)
        links += re.findall(r"<a class='px-term' href='#([^']+)'>([^<]+)</a>", tab.answer.value)
    assert links and {target for target, _ in links} <= ids, links
    # the Kernels intro says registry, declared and probed; each links to its entry
    intro = app.tabs["kernels"].intro_html.value
    for word in ("registry", "probed"):
        assert re.search(rf"<a class='px-term' href='#[^']+'>{word}</a>", intro), intro


# ------------------------------------------------------------------------------- (13) wordings


def test_wordings_the_issue_found_wrong() -> None:
    import pandas as pd

    from explorer.analysis.explain import explain
    from explorer.plots.kernel_grid import kernel_grid

    emulated = {"backend": "emulated", "op": "range", "dtype": "float16", "device": "CPU"}
    said = explain({**emulated, "mode": "eager", "status": "ok", "raw_op": ""}, None)
    assert "natively" not in said and "emulated" in said
    cell = {"op": "exp", "raw_op": "Exp", "dtype": "float16", "device": "GPU", "mode": "registry"}
    said_nothing = {"status": "ok", "explanation": "", "error": ""}
    rows = pd.DataFrame([{"backend": b, **cell, **said_nothing} for b in ("tensorflow", "torch")])
    grid = kernel_grid(rows)
    tips = [grid.summary(0, j) for j in range(grid.shape[1])]
    assert not any("tensorflow tensorflow" in t or "torch torch" in t for t in tips), tips
    assert any("PyTorch's OpInfo" in t for t in tips)
    assert not any("torch" in t and "kernel registry" in t for t in tips)


def test_one_backend_is_not_said_to_agree_with_none(app: Any) -> None:
    app.state.set(op="exp", dtypes=["float16"], backends=["emulated"])
    details = text_of(app.select("ranges").details.value)
    assert "0 inputs where backends disagree" not in details
    assert "Only emulated ran" in details


def test_gpu_note_does_not_call_opinfo_a_registry(app: Any) -> None:
    app.select("kernels")
    app.state.set(op="exp", dtypes=["float16"], mode="registry", backends=["tensorflow"])
    status = text_of(app.select("kernels").status.value)
    if "GPU cells are declared" not in status:
        pytest.skip("this machine has a GPU: no note")
    assert "PyTorch has no kernel registry" in status
    assert "registry (TensorFlow's kernel registry, PyTorch's OpInfo)" not in status


# ------------------------------------------------------------------------------- (4) controls that act


def test_device_control_shows_only_where_it_changes_the_view(app: Any) -> None:
    tab = app.select("kernels")
    app.state.set(op="range", dtypes=["float16"], backends=["tensorflow"], mode="registry")
    columns = {c.device for c in tab.heatmap.grid.columns}
    assert {"CPU", "GPU"} <= columns  # the registry view shows both devices side by side...
    assert "device" not in app.controls.visible_fields()  # ...so a Device control would do nothing
    app.state.set(mode="eager")
    assert "device" in app.controls.visible_fields()


def test_device_cpu_shows_no_gpu_column(app: Any, monkeypatch: Any) -> None:
    """Issue 28, item 4: with Device = CPU the GPU columns go (they stayed, declared, before)."""
    tab = app.select("kernels")
    probed = one_ok_numpy_cell()
    monkeypatch.setattr(tab.rows, "probed_frame", lambda ops, dtypes, mode: (probed, 0))
    monkeypatch.setattr(tab.rows, "machine_has_gpu", lambda: False)
    app.state.set(
        op="range", dtypes=["float16"], backends=["tensorflow", "numpy"], mode="eager", device="CPU"
    )
    assert tab.heatmap.grid is not None
    assert {c.device for c in tab.heatmap.grid.columns} == {"CPU"}
    app.state.set(device="GPU")  # no GPU here: what the registry declares for it is shown
    assert any("GPU" in c.device for c in tab.heatmap.grid.columns)
    assert "GPU cells are declared, not run" in text_of(tab.status.value)


def test_backends_are_hidden_in_mode_registry_and_opinfo_has_its_own_switch(app: Any) -> None:
    tab = app.select("kernels")
    app.state.set(op="exp", dtypes=["float16"], mode="registry", backends=["numpy"])
    assert "backends" not in app.controls.visible_fields()
    # TensorFlow's registry answers whatever the (hidden) backends are
    assert {c.backend for c in tab.heatmap.grid.columns} == {"tensorflow"}
    assert any("float16 CPU kernel for Exp" in s for s in answers_of(tab))
    app.state.set(mode="eager")
    assert "backends" in app.controls.visible_fields()
    assert tab.opinfo.layout.display == "none"  # the OpInfo switch is for mode registry only
    app.state.set(mode="registry")
    if not tab._torch_installed:
        pytest.skip("PyTorch is not installed: no OpInfo")
    assert tab.opinfo.layout.display is None
    tab.opinfo.value = True
    try:
        assert {c.backend for c in tab.heatmap.grid.columns} == {"tensorflow", "torch"}
    finally:
        tab.opinfo.value = False


# ------------------------------------------------------------------------------- (6) no stale results


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_a_slow_render_never_shows_the_earlier_selections_result(app: Any, monkeypatch: Any) -> None:
    import time

    import explorer.app.ranges_tab as ranges_tab

    app.state.set(op="exp", dtypes=["float16"], backends=["emulated"])
    tab = app.select("ranges")
    earlier = tab.plot.outputs
    assert earlier and "px-msg-error" not in tab.status.value
    slow = ranges_tab.cached_sweep

    def slower(*args: Any, **kwargs: Any) -> Any:
        time.sleep(1.5)  # a sweep that takes a while
        return slow(*args, **kwargs)

    monkeypatch.setattr(ranges_tab, "cached_sweep", slower)
    seen = sample_during(  # renders now, in this thread
        lambda: app.state.set(op="tanh"), lambda: (tab.plot.outputs, tab.status.value), every_s=0.05
    )
    after_note = [plot for plot, status in seen if "Computing tanh in float16" in status]
    assert after_note, [status for _, status in seen][-3:]
    assert all(plot != earlier for plot in after_note)  # exp's plot gone while tanh computes
    assert "Computing" not in tab.status.value and tab.plot.outputs != earlier
    assert answers_of(tab)[0].startswith("tanh in float16")


def test_nothing_to_show_clears_the_earlier_selections_heatmap(app: Any) -> None:
    tab = app.select("kernels")
    app.state.set(op="MatrixInverse", dtypes=["float16"], backends=["tensorflow"], mode="registry")
    assert tab.plot.outputs and tab.details.value
    app.state.set(mode="eager")  # a raw op: nothing to probe, nothing shown
    assert "raw TensorFlow op" in tab.status.value
    assert tab.plot.outputs == () and tab.details.value == "" and tab.answer.value != ""
    app.state.set(op="range")


def test_a_finished_probe_is_not_reported_beside_another_selection(app: Any) -> None:
    from explorer.app.jobs import Job

    tab = app.select("kernels")
    app.state.set(op="range", dtypes=["float16"], backends=["tensorflow"], mode="registry")
    tab.prober.probed_for = tab.prober.selection()
    job = tab.panel.attach(Job("probing", lambda ctx: None))
    job.start().wait(5)
    assert "probing: done" in tab.panel.label.value
    app.state.set(op="exp")
    assert tab.panel.label.value == "" and tab.panel.progress.value == 0.0


# ------------------------------------------------------------------------------- (8) Find op


def test_find_op_never_traps_the_op_list(app: Any) -> None:
    from explorer.ops import catalog

    c = app.controls
    app.select("kernels")  # the registry's raw ops are offered once the Kernels tab is built
    c.op_search.value = "anh"  # ambiguous (tanh, atanh, ...): the list narrows to the matches
    narrowed = [v for _, v in c.op.options]
    assert "tanh" in narrowed and len(narrowed) < len(catalog())
    assert not any(name.startswith("_") for name in narrowed), narrowed  # no _MklTanhGrad
    c.op.value = "atanh" if "atanh" in narrowed else narrowed[-1]  # picked in the list: every op again
    assert app.state.op == c.op.value
    assert set(catalog()) <= {v for _, v in c.op.options}
    c.op_search.value = "tanh"  # an exact name: selected, and the list is not left narrowed
    assert app.state.op == "tanh"
    assert set(catalog()) <= {v for _, v in c.op.options}
    assert "selected: tanh" in c.message.value
    app.select("training")  # a tab with no Op control: the search's words do not linger
    assert c.message.value == ""
    c.op_search.value = ""


# ------------------------------------------------------------------------------- (11) lesson code


def test_explain_code_is_short_monospace_and_names_the_inputs() -> None:
    from explorer.app.explain_tab import result_html
    from explorer.app.style import CSS
    from explorer.queries.diagnose import diagnose
    from tests.test_explain import TORCH_TEXTS

    texts = [text for _, text, _, op, _, _ in TORCH_TEXTS if op is not None]
    shown = 0
    for text in texts:
        result = diagnose(text, run_workaround=False)
        code = result["workaround"]["code"]
        if not code:
            continue
        markup = result_html(result)
        short = html.unescape(
            re.search(r"<pre class='px-code px-explain-code'[^>]*>(.*?)</pre>", markup, re.S)[1]
        )
        assert "torch.tensor(" not in short and len(short) < 600, short  # no literal tensors
        names = re.findall(r"^(\w+) = torch\.tensor\(", code, flags=re.M)  # the inputs the code makes
        if result["workaround"]["lesson"]:  # written with the names of the user's own line
            assert result["workaround"]["lesson_from"] in text, result["workaround"]
        else:
            assert all(f"# {name}: your " in short for name in names), short
        assert html.escape(code) in markup  # the runnable whole, folded below it
        facts = text_of(re.search(r"<tr><th[^>]*>installed</th>.*?</tr>", markup, re.S)[0])
        assert not facts.rstrip().endswith(":"), facts
        shown += 1
    assert shown
    assert re.search(r"\.px-app pre, \.px-app code, \.px-app \.px-code \{\s*font-family:[^}]*monospace", CSS)


# ------------------------------------------------------------------------------- (10) training output


def test_identical_training_curves_leave_float32_visible_and_the_float16_policies_apart() -> None:
    from types import SimpleNamespace

    from explorer.app.training_tab import LiveRun
    from explorer.plots.training import plot_curves

    epochs = [SimpleNamespace(epoch=e, loss=1.0 / (e + 1)) for e in range(3)]  # the same for every run
    policies = ("mixed_float16", "mixed_float16_no_scaling", "float32")
    ax = plot_curves([LiveRun(p, list(epochs)) for p in policies], "loss")
    lines = {line.get_label(): line for line in ax.get_lines()}
    f32 = lines["float32"]
    assert f32.get_zorder() > max(lines[p].get_zorder() for p in policies[:2])  # drawn on top...
    assert f32.get_linestyle() != "-"  # ...and broken, so the curves under it show through
    assert lines["mixed_float16"].get_linestyle() != lines["mixed_float16_no_scaling"].get_linestyle()


def test_training_results_table_has_readable_numbers_and_no_none(app: Any) -> None:
    from types import SimpleNamespace

    from explorer.app.training_tab import LiveRun

    tab = app.tabs["training"]
    last = SimpleNamespace(epoch=0, loss=0.30324396084655414, val_accuracy=0.9, loss_scale=None)
    markup = tab._summary_table([LiveRun("float32", [last])], {}, None)
    shown = text_of(markup)
    assert "0.3032" in shown and "0.30324396084655414" not in shown and "None" not in shown
    assert "0.30324396084655414" in markup  # the exact value stays, as hover text


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_training_histogram_legend_leaves_the_float16_band_clear() -> None:
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import to_rgba

    from explorer.app.training_tab import LiveRun
    from explorer.plots.palette import format_color
    from explorer.plots.training import live_training_figure
    from explorer.training import POLICIES, GradientHistogram

    edges = list(np.arange(-40.0, 11.0))
    runs = [
        LiveRun(p, histograms=[GradientHistogram(p, 10, "float16", edges, [5] * 50, 3, 0, 253, None)])
        for p in POLICIES  # every Keras policy trained at once: the longest legend
    ]
    fig = live_training_figure(runs)
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    (hist_ax,) = [ax for ax in fig.axes if ax.get_legend() and "log2" in ax.get_xlabel()]
    legend = hist_ax.get_legend().get_window_extent(renderer)
    band_colour = to_rgba(format_color("float16"))[:3]
    (name,) = [t.get_window_extent(renderer) for t in hist_ax.texts if t.get_text() == "float16"]
    bands = [
        box
        for c in hist_ax.collections
        if len(c.get_facecolor()) and tuple(c.get_facecolor()[0][:3]) == band_colour
        for box in [c.get_window_extent(renderer)]
        if box.y0 <= (name.y0 + name.y1) / 2 <= box.y1  # the band the "float16" name sits on
    ]
    assert len(bands) == 2  # the subnormal part and the normal part of float16's range
    assert not any(legend.overlaps(band) for band in bands)
    assert legend.y1 <= hist_ax.get_window_extent(renderer).y0  # below the bands and bars, not on them
    assert not legend.overlaps(hist_ax.xaxis.label.get_window_extent(renderer))
    assert fig.bbox.contains(legend.x0, legend.y0) and fig.bbox.contains(legend.x1, legend.y1)


def test_training_panel_keeps_done_when_a_late_redraw_reports_progress(app: Any) -> None:
    """The redraw thread may report its earlier snapshot after the job ended: the panel keeps
    "training: done", not "starting its worker"; runs not finished at the end say so."""
    from explorer.app.jobs import Job
    from explorer.training.parallel import RunStatus

    tab = app.tabs["training"]
    contexts: list[Any] = []
    job = Job("training", contexts.append)
    tab.panel.attach(job)
    job.start().wait(10)
    assert tab.panel.label.value.startswith("training: done")
    tab._build_bars(["float16"])
    tab.statuses = {"float16": RunStatus("float16", "starting")}
    tab.job = job
    tab.sync_progress(contexts[0])  # the late report, with the stale "starting" snapshot
    assert tab.panel.label.value.startswith("training: done"), tab.panel.label.value
    assert job.message == "" and job.fraction == 1.0
    tab._finished(job)
    (row,) = tab.run_bars.children
    assert "starting" not in row.children[2].value and tab.statuses["float16"].finished
    tab.job, tab.statuses = None, {}
    tab._build_bars([])


# ------------------------------------------------------------------------------- (12) focus


def test_keyboard_focus_has_a_ring_that_meets_wcag_contrast() -> None:
    from explorer.app.style import CSS, contrast_ratio

    rules = re.findall(r"([^{}]*:focus-visible[^{}]*)\{([^}]*)\}", CSS)
    (rule,) = [r for r in rules if ".jupyter-button:focus-visible" in r[0]]
    for target in ("jupyter-button", "widget-toggle-button", "select", "lm-TabBar-tab"):
        assert target in rule[0], target
    width, colour = re.search(r"outline:\s*(\d+)px solid (#[0-9a-f]{6})", rule[1]).groups()
    assert int(width) >= 2  # WCAG 2.2 focus appearance: at least 2 px
    assert contrast_ratio(colour, "#ffffff") >= 3.0  # against the page around it


# ------------------------------------------------------------------------------- (3) details beside


def test_a_clicked_cell_is_told_beside_the_heatmap_and_the_table_follows_it(app: Any) -> None:
    tab = app.select("kernels")
    app.state.set(op="range", dtypes=["float16"], backends=["tensorflow"], mode="registry")
    grid = tab.heatmap.grid
    above = [w.value for w in tab.chips.strips.children if isinstance(w, widgets.HTML)]
    i = next(k for k, op in enumerate(grid.ops) if op != "range")
    j = [c.device for c in grid.columns].index("CPU")
    tab.heatmap.cells._handle_custom_msgs(
        None, {"event": "element_click", "data": {"rowNum": i, "columnNum": j}}
    )
    assert f"{grid.ops[i]} · float16 · " in tab.cell_details.value
    # nothing inserted above the heatmap
    assert [w.value for w in tab.chips.strips.children if isinstance(w, widgets.HTML)] == above
    (main,) = [w for w in tab.widget.children if "px-kernels-main" in w._dom_classes]
    # side by side (wrapping when narrow): the heatmap, then the cell picker above the details
    assert list(main.children) == [tab.plot, tab.side] and tab.cell_details in tab.side.children
    assert f"<h4>{grid.ops[i]}: every cell explained</h4>" in tab.details.value


# ------------------------------------------------------------------------------- (5) narrow tables


def test_ranges_thresholds_show_few_columns_and_fold_the_rest(app: Any) -> None:
    app.state.set(op="exp", dtypes=["float16"], backends=["numpy", "emulated"])
    markup = app.select("ranges").details.value
    before, folded = markup.split("<details class='px-more-columns'>", 1)
    main_heads = re.findall(r"<th>([^<]*)</th>", before.rsplit("<table", 1)[1])
    more_heads = re.findall(r"<th>([^<]*)</th>", folded.split("</details>")[0])
    assert len(main_heads) <= 5 and {"backend", "kind", "first positive"} <= set(main_heads), main_heads
    assert "rule (bounds included)" in more_heads and "last positive" in more_heads
    assert "x &gt;= 11.09375" in folded  # the exact rule, one click away
