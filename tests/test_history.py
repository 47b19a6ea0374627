"""Answers for any shipped TensorFlow release: ``kernels --tf-version``, ``kernels --history``, the
installed release served from its shipped file, and the app's history strip.

Every status is checked against an independent reading: the shipped ``json.gz`` files parsed
here with gzip and json (the minimal reader of ``tests/support/shipped_registries.py``), and for the app also
``release_registry(v).declared`` directly; never against the code under test.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import textwrap
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import pytest

from explorer.analysis import releases
from explorer.cli import main
from explorer.runtime import registry
from tests.support import hostile
from tests.support.shipped_registries import CASES, expected_status, index, raw

ROOT = Path(__file__).resolve().parents[1]
#: the user's device name for a registry device type
USER_DEVICE = {"CPU": "CPU", "GPU": "GPU"}


pytestmark = pytest.mark.usefixtures("cache_dir")  # tests/conftest.py


def shipped() -> list[str]:
    """The shipped releases, oldest first, read from the index (not from the code under test)."""
    from packaging.version import Version

    return sorted((e["release"] for e in index()["releases"]), key=Version)


def _document(capsys: Any, *argv: str) -> dict[str, Any]:
    assert main(["kernels", *argv, "--json"]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def _changes(statuses: list[str], versions: list[str]) -> list[dict[str, str]]:
    return [
        {"version": versions[i], "status": statuses[i], "before": statuses[i - 1]}
        for i in range(1, len(statuses))
        if statuses[i] != statuses[i - 1]
    ]


# ---------------------------------------------------------------- --history, the cases of issue 10


@pytest.mark.parametrize(("op", "attr", "dtype", "device"), CASES, ids=["-".join(c) for c in CASES])
def test_history_json_of_each_case_matches_the_shipped_files(
    capsys: Any, op: str, attr: str, dtype: str, device: str
) -> None:
    document = _document(capsys, "--op", op, "--dtype", dtype, "--device", USER_DEVICE[device], "--history")
    (cell,) = document["result"]
    versions = shipped()
    expected = [expected_status(raw(v), op, attr, dtype, device) for v in versions]
    assert (cell["raw_op"], cell["dtype"], cell["device"]) == (op, dtype, device)
    assert [e["version"] for e in cell["history"]] == versions
    assert [e["status"] for e in cell["history"]] == expected
    assert all(bool(e["reason"]) == (e["status"] == "absent") for e in cell["history"])
    assert cell["changes"] == _changes(expected, versions)
    assert cell["first_release_with_kernel"] == next(
        (v for v, s in zip(versions, expected, strict=True) if s == "ok"), None
    )
    assert document["environment"]["tf_releases"] == versions
    assert document["environment"]["registry_source"].startswith("shipped registries of")


def test_range_float16_cpu_gets_its_kernel_once_and_keeps_it(capsys: Any) -> None:
    """The seed case, read three ways: the CLI, the raw files, each release's Registry."""
    (cell,) = _document(capsys, "--op", "Range", "--dtype", "float16", "--history")["result"]
    statuses = [e["status"] for e in cell["history"]]
    by_registry = [releases.release_registry(v).declared("Range", "float16", "CPU").value for v in shipped()]
    by_file = [expected_status(raw(v), "Range", "Tidx", "float16", "CPU") for v in shipped()]
    assert statuses == by_registry == by_file
    assert set(statuses) <= {"no_kernel", "ok"}
    first = statuses.index("ok") if "ok" in statuses else len(statuses)
    assert statuses == ["no_kernel"] * first + ["ok"] * (len(statuses) - first)  # once, for good
    assert [c["version"] for c in cell["changes"]] == shipped()[first : first + 1]


def test_history_of_a_catalog_op_covers_its_raw_ops_default_dtypes_and_xla(capsys: Any) -> None:
    from explorer.ops import get_op

    cells = _document(capsys, "--op", "qr", "--history", "--mode", "registry", "--mode", "xla")["result"]
    raws = list(get_op("qr").tf_raw_ops)
    assert list(dict.fromkeys(c["raw_op"] for c in cells)) == raws
    assert {c["dtype"] for c in cells} == {"float16", "bfloat16", "float32", "float64"}
    assert {c["device"] for c in cells} == {"CPU", "XLA_CPU_JIT"}
    assert len(cells) == len(raws) * 4 * 2
    attrs = {r: releases.release_registry(shipped()[-1]).op(r).data_attr for r in raws}
    for c in cells:
        assert "qr" in c["ops"]
        want = [
            expected_status(raw(v), c["raw_op"], attrs[c["raw_op"]], c["dtype"], c["device"])
            for v in shipped()
        ]
        assert [e["status"] for e in c["history"]] == want, c["raw_op"]


def test_history_table_prints_one_letter_per_release(capsys: Any) -> None:
    assert main(["kernels", "--op", "range", "--history"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    versions = shipped()
    minors = list(dict.fromkeys(".".join(v.split(".")[:2]) for v in versions))
    assert lines[0].split() == minors
    letter = {"ok": "+", "no_kernel": "N", "unsupported_dtype": "U", "absent": "-"}
    for dtype in ("float16", "bfloat16", "float32", "float64"):
        (row,) = [line for line in lines if line.split()[:3] == ["Range", dtype, "CPU"]]
        statuses = [expected_status(raw(v), "Range", "Tidx", dtype, "CPU") for v in versions]
        tokens = row.split()
        assert tokens[3 : 3 + len(versions)] == [letter[s] for s in statuses]
        changed = [f"{c['version']}: {c['status']}" for c in _changes(statuses, versions)]
        assert " ".join(tokens[3 + len(versions) :]) == (", ".join(changed) or "-")
    assert "no TensorFlow imported" in out and "+ ok" in out


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--history", "--tf-version", "2.15.0"], "--history cannot be combined with --tf-version"),
        (["--history", "--backend", "numpy"], "--history is TensorFlow's"),
        (["--history", "--op", "NoSuchRawOpAnywhere"], "Valid ops"),
        (["--tf-version", "1.15.0"], "shipped: 2.12.0, "),
        (["--tf-version", "2.15.0", "--mode", "eager"], "drop --mode eager or --tf-version"),
        (["--tf-version", "2.15.0", "--backend", "numpy"], "add --backend tensorflow"),
        (["--tf-version", "2.12.0", "--op", "FFTND"], "TensorFlow 2.12.0 has no op FFTND"),
    ],
)
def test_release_options_are_refused_with_the_choices(capsys: Any, argv: list[str], said: str) -> None:
    assert main(["kernels", "--op", "range", *argv]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1, err


# ---------------------------------------------------------------- --tf-version


def test_tf_version_answers_registry_rows_from_that_release(capsys: Any) -> None:
    document = _document(capsys, "--op", "Range", "--dtype", "float16", "--tf-version", "2.15.0")
    rows = document["result"]
    data = raw("2.15.0")
    assert {(r["mode"], r["backend"], r["raw_op"]) for r in rows} == {("registry", "tensorflow", "Range")}
    assert {r["device"] for r in rows} == {"CPU", "XLA_CPU_JIT"}
    for r in rows:
        assert r["status"] == expected_status(data, "Range", "Tidx", "float16", r["device"]), r
        assert "TensorFlow 2.15.0" in r["explanation"]
    env = document["environment"]
    assert env["tf_version"] == "2.15.0" and env["tf_release"] == "2.15.0"
    assert env["registry_source"] == f"shipped 2.15.0 (captured {data['captured']})"
    # the catalog op: every float dtype that release has
    rows = _document(capsys, "--op", "range", "--tf-version", "2.15.0")["result"]
    assert {r["dtype"] for r in rows} == set(data["float_dtypes"])
    assert all(r["status"] == expected_status(data, "Range", "Tidx", r["dtype"], r["device"]) for r in rows)


def test_tf_version_table_names_the_release_and_its_source(capsys: Any) -> None:
    assert main(["kernels", "--op", "Range", "--dtype", "float16", "--tf-version", "2.15.0.post1"]) == 0
    out = capsys.readouterr().out
    assert "TensorFlow 2.15.0; registry: shipped 2.15.0.post1 (captured " in out.splitlines()[-1]


# ---------------------------------------------------------------- no TensorFlow import


_NO_TENSORFLOW = """
import io, json, sys
from contextlib import redirect_stdout
from explorer.cli import main
out = io.StringIO()
with redirect_stdout(out):
    status = main(sys.argv[1:])
assert status == 0, status
assert "tensorflow" not in sys.modules, "tensorflow imported"
print(json.dumps(json.loads(out.getvalue())["environment"]))
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["--op", "Range", "--dtype", "float16", "--tf-version", "2.15.0"],
        ["--op", "range", "--history"],
        ["--op", "Qr", "--history", "--mode", "xla"],
        # the installed release, no disk cache: its file (reads TensorFlow's version: seconds)
        pytest.param(["--op", "range", "--mode", "registry"], marks=pytest.mark.slow),
    ],
    ids=["tf-version", "history", "history-raw-op", "installed"],
)
def test_release_answers_import_no_tensorflow(tmp_path: Path, argv: list[str]) -> None:
    poison = tmp_path / "poison" / "tensorflow"
    poison.mkdir(parents=True)
    (poison / "__init__.py").write_text("raise ImportError('tensorflow must not be imported here')\n")
    env = dict(os.environ, PX_CACHE_DIR=str(tmp_path / "empty-cache"))
    env["PYTHONPATH"] = os.pathsep.join([str(poison.parent), str(ROOT), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", _NO_TENSORFLOW, "kernels", *argv, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    environment = json.loads(done.stdout.strip().splitlines()[-1])
    if argv[-1] == "registry":
        installed = registry.shipped_installed_release()
        if installed is None:
            pytest.skip("the installed TensorFlow has no shipped registry that answers for this machine")
        assert environment["registry_source"].startswith(f"shipped {installed} (captured ")


# ---------------------------------------------------------------- get_registry: the installed release's file


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """No registry read yet in this process, and the live readers replaced by ones that log."""
    reads: list[str] = []
    monkeypatch.setattr(registry, "_REGISTRY", None)
    monkeypatch.setattr(registry, "_SOURCE", "")

    def read_here() -> dict[str, Any]:
        reads.append("here")
        return dict(releases.release_data(shipped()[-1]))

    def no_sandbox() -> Any:
        raise AssertionError("a TensorFlow worker was started")

    import explorer.runtime.sandbox

    monkeypatch.setattr(registry, "read_registry_data", read_here)
    monkeypatch.setattr(explorer.runtime.sandbox, "default_sandbox", no_sandbox)
    return reads


def test_get_registry_serves_the_installed_release_from_its_file(fresh_registry: list[str]) -> None:
    installed = registry.shipped_installed_release()
    if installed is None:
        pytest.skip("the installed TensorFlow has no shipped registry that answers for this machine")
    reg = registry.get_registry()
    assert fresh_registry == [] and reg is releases.release_registry(installed)
    assert registry.registry_source() == f"shipped {installed} (captured {raw(installed)['captured']})"
    assert reg.declared("Range", "float16", "CPU").value == expected_status(
        raw(installed), "Range", "Tidx", "float16", "CPU"
    )
    # refresh and where="here" still read the live registry (here: the logging stand-in)
    registry.get_registry(where="here", refresh=True)
    assert fresh_registry == ["here"]
    assert (
        registry.registry_source().startswith("live TensorFlow ")
        and "in this process" in registry.registry_source()
    )


def test_a_disk_cache_wins_over_the_shipped_file(fresh_registry: list[str], monkeypatch: Any) -> None:
    registry.get_registry(where="here", refresh=True)  # a live read writes the disk cache
    monkeypatch.setattr(registry, "_REGISTRY", None)
    registry.get_registry()
    assert fresh_registry == ["here"]
    assert "disk cache" in registry.registry_source()


@pytest.mark.parametrize("why", ["another platform", "device plugins"])
def test_no_shipped_answer_where_the_file_may_differ(
    fresh_registry: list[str], monkeypatch: pytest.MonkeyPatch, why: str
) -> None:
    if why == "another platform":
        monkeypatch.setattr(registry, "SHIPPED_PLATFORM", "no-such-platform")
    else:
        monkeypatch.setattr(registry, "_has_device_plugins", lambda: True)
    assert registry.shipped_installed_release() is None
    if "tensorflow" in sys.modules:  # auto reads here when TensorFlow is imported already
        registry.get_registry()
        assert fresh_registry == ["here"]
    else:  # else in a worker (the stand-in refuses)
        with pytest.raises(AssertionError, match="a TensorFlow worker was started"):
            registry.get_registry()


# ---------------------------------------------------------------- the app's history strip


class _Boxes(HTMLParser):
    """The history boxes of an HTML fragment: (strip title, version, status, changed)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.strips: list[str] = []
        self.boxes: list[tuple[str, str, str, bool]] = []
        self.letters: list[str] = []
        self._box_open = self._want_letter = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if "px-history" in classes:
            self.strips.append(a.get("aria-label") or "")
        if "px-history-box" in classes:
            changed = "px-history-changed" in classes
            self.boxes.append((self.strips[-1], a["data-version"] or "", a["data-status"] or "", changed))
            self._box_open = True
        if tag == "b" and self._box_open:
            self._want_letter = True

    def handle_data(self, data: str) -> None:
        if self._want_letter:  # the first bold text of a box: its letter
            self.letters.append(data)
            self._box_open = self._want_letter = False


def _boxes(markup: str) -> _Boxes:
    parser = _Boxes()
    parser.feed(markup)
    parser.close()
    return parser


def _declared(version: str, op: str, dtype: str, device_type: str) -> str:
    reg = releases.release_registry(version)
    if not reg.has_op(op) or dtype not in reg.float_dtypes or device_type not in reg.device_types:
        return "absent"
    return reg.declared(op, dtype, device_type).value


def _chips(tab: Any) -> _Boxes:
    """The release chips the Kernels tab shows, read from its widgets as a browser shows them:
    each strip's title, and per chip (button) the release, the status its tooltip names, whether
    it is marked changed (the triangle), and its letter."""
    found = _Boxes()
    shown = tab.chips.strips.children
    for title_widget, chips in zip(shown[::3], shown[1::3], strict=True):
        title = html.unescape(re.sub(r"<style>.*?</style>|<[^>]+>", "", title_widget.value))
        found.strips.append(title)
        for (label, version), tip in zip(chips.options, chips.tooltips, strict=True):
            status = tip.split(": ", 1)[1].split(" ", 1)[0]
            found.boxes.append((title, version, status, label.endswith("\u25b2")))
            found.letters.append(label.split()[1].rstrip("\u25b2"))
    return found


def test_app_shows_the_selected_cells_history_before_tensorflow_loads() -> None:
    import explorer

    app = explorer.App(load_tensorflow=False, tab="kernels", op="range", dtypes=["float16"], device="CPU")
    tab = app.tabs["kernels"]
    assert "px-msg-loading" not in tab.status.value  # the registry view is served from the shipped file
    found = _chips(tab)
    assert found.strips == ["Range · float16 · CPU"]
    want = [(v, _declared(v, "Range", "float16", "CPU")) for v in shipped()]
    assert [(v, s) for _, v, s, _ in found.boxes] == want
    assert [c for *_, c in found.boxes] == [i > 0 and want[i][1] != want[i - 1][1] for i in range(len(want))]
    assert found.letters == [{"ok": "+", "no_kernel": "N"}[s] for _, s in want]
    # every chip is a button (ToggleButtons): pressing one tells that release beside the heatmap
    assert all(isinstance(w, widgets.ToggleButtons) for w in tab.chips.strips.children[1::3])
    # the strip follows the selection: dtypes, device and mode (XLA's device type)
    app.state.set(dtypes=("bfloat16", "float16"), device="GPU", mode="xla")
    found = _chips(tab)
    assert found.strips == ["Range · bfloat16 · XLA_GPU_JIT", "Range · float16 · XLA_GPU_JIT"]
    for title in found.strips:
        dtype = title.split(" · ")[1]
        got = [(v, s) for t, v, s, _ in found.boxes if t == title]
        assert got == [(v, _declared(v, "Range", dtype, "XLA_GPU_JIT")) for v in shipped()]


def test_app_history_of_an_op_no_release_has_is_a_note() -> None:
    import explorer

    app = explorer.App(load_tensorflow=False, tab="kernels", op="NoSuchRawOpAnywhere", dtypes=["float16"])
    tab = app.tabs["kernels"]
    assert "No shipped TensorFlow release has the raw op NoSuchRawOpAnywhere" in tab.chips.notes.value
    assert _chips(tab).boxes == []


def test_history_strip_escapes_every_string_and_never_relies_on_colour_alone() -> None:
    from explorer.plots.history import HISTORY_COLORS, STATUS_LETTERS, history_strip_html

    payload = hostile.ALL_PAYLOADS
    entries = [
        (payload, "ok", ""),
        ("2.13.0", payload, payload),
        ("2.14.0", "absent", payload),
    ]
    markup = history_strip_html(entries, title=payload)
    assert hostile.dangerous_markup(markup) == []
    text = hostile.visible_text(markup)
    for piece in hostile.PAYLOADS:
        assert piece in text
    assert len(set(STATUS_LETTERS.values())) == len(STATUS_LETTERS)
    assert len(set(HISTORY_COLORS.values())) == len(HISTORY_COLORS)
    found = _boxes(markup)
    assert [c for *_, c in found.boxes] == [False, True, True]
    assert found.letters == ["+", "?", "-"]


@pytest.mark.slow
def test_bench_history_script_runs(tmp_path: Path) -> None:
    """The benchmark's figures come out (the numbers themselves are printed, not asserted)."""
    code = textwrap.dedent(
        """
        from benchmarks import bench_history
        figures = bench_history.run(repeats=1)
        assert figures and all(value > 0 for _, value, _ in figures), figures
        """
    )
    env = dict(os.environ, PX_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
