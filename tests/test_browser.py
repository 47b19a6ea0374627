"""Real-browser tests: Playwright drives Debian's Chromium against Voila and JupyterLab.

(a) Voila serves the app (workshop mode, offline template); changing the dtype
changes the Kernels view; a screenshot of every tab goes to artifacts/screenshots/.
(b) JupyterLab opens a copy of explorer.ipynb, runs it, a widget is changed and
the output changes.

Servers bind 127.0.0.1 on free ports and are always stopped (the ``browser`` and
``voila_server`` fixtures are tests/conftest.py's).  Without Chromium or Playwright these
tests skip, and fail in CI (tests/support/require.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from explorer.server.process_tree import stop_process_tree
from tests.support.browser import keep_local
from tests.support.net import free_port, wait_for_http
from tests.support.page import (
    HEATMAP_CELL,
    ORIGINAL_ERROR,
    TABS,
    heatmap_signature,
    img_src,
    open_tab,
    select_op,
    set_dtypes,
    shoot,
    wait_for_heatmap_change,
    wait_for_tab_content,
)
from tests.support.voila import VoilaServer

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]


def test_voila_serves_the_app_and_dtype_changes_kernels_view(browser: Any, voila_server: VoilaServer) -> None:
    others = set(voila_server.kernels())  # kernels of earlier visitors, not this test's
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    external: list[str] = []
    keep_local(page, external)
    try:
        page.goto(voila_server.url, timeout=120_000)
        page.wait_for_selector(".px-app", timeout=120_000)
        # the Kernels heatmap appears once TensorFlow has loaded in the kernel
        page.wait_for_selector(HEATMAP_CELL, timeout=120_000)
        page.wait_for_timeout(1000)
        before = heatmap_signature(page)
        set_dtypes(page, ["float32"])
        wait_for_heatmap_change(page, before)
        page.wait_for_function(
            "() => { const t = [...document.querySelectorAll('.px-heatmap-header .tick text')]"
            ".map(e => e.textContent.trim()).filter(x => x);"
            " return t.length > 0 && t.every(x => x.endsWith('· float32')); }",
            timeout=60_000,
        )
        page.wait_for_timeout(1000)
        # what the user sees: one cell per op label x column label, each with its letter
        texts = "els => els.map(e => e.textContent.trim()).filter(t => t)"
        columns = page.eval_on_selector_all(".px-heatmap-header .tick text", texts)
        ops = page.eval_on_selector_all(".px-heatmap-body .tick text", texts)
        op_labels = [t for t in ops if t != "float32"]  # the bottom axis repeats the dtype
        assert columns and all(c.endswith("· float32") for c in columns), columns
        assert page.locator(HEATMAP_CELL).count() == len(op_labels) * len(columns)
        header = page.inner_text(".px-heatmap-header")
        assert "CPU declared" in header and "GPU declared" in header  # CPU and GPU side by side
        assert "this machine has no GPU" in page.inner_text(".px-kernels-status")
        cell = page.locator(HEATMAP_CELL).first
        cell.hover()
        page.wait_for_function(
            "() => { const t = document.querySelector('.px-heatmap-tip-text');"
            " return t !== null && t.textContent.includes('float32')"
            " && t.textContent.includes('declared'); }",
            timeout=30_000,
        )
        cell.click()
        page.wait_for_function(
            "() => { const d = document.querySelector('.px-kernels-cell');"
            " return d !== null && d.textContent.includes('float32')"
            " && d.textContent.includes('not run here'); }",
            timeout=30_000,
        )
        shoot(page, "voila-kernels-click")
        set_dtypes(page, ["float16", "bfloat16"])
        select_op(page, "exp")  # an elementwise op: every tab has something to show
        page.wait_for_function(
            "() => document.querySelector('.px-kernels-status').textContent.includes('ops ×')", timeout=60_000
        )
        for key, title in TABS:
            open_tab(page, title)
            wait_for_tab_content(page, key, 120_000)
            if key == "training":  # a short real run in the background: curves appear, the page stays live
                page.select_option(".px-policies select", ["float32", "fp8_emulated"])
                page.fill(".px-epochs input", "2")
                page.press(".px-epochs input", "Enter")
                page.click(".px-train")
                page.wait_for_selector(".px-training-plot img", timeout=120_000)
                page.wait_for_function(
                    "() => document.querySelector('.px-training-progress .progress-bar-success, "
                    ".px-training-progress .widget-progress-success, .px-training-progress [class*=success]')"
                    " !== null",
                    timeout=120_000,
                )
            if key == "explain":  # paste the original error: the explanation names the first release
                from explorer.analysis.releases import first_release_with_kernel

                first = first_release_with_kernel("Range", "float16", "CPU")
                page.fill(".px-explain-text textarea", ORIGINAL_ERROR)
                page.click(".px-explain-button")
                page.wait_for_function(
                    "first => { const d = document.querySelector('.px-explain-details'); return d !== null"
                    " && d.textContent.includes('Range') && d.textContent.includes(first); }",
                    arg=first,
                    timeout=120_000,
                )
            page.wait_for_timeout(300)
            assert shoot(page, f"voila-{key}").stat().st_size > 0
        assert not external, f"the page fetched from outside 127.0.0.1: {external}"
        if Path("/proc").exists():  # workshop mode: leaving the page shuts the visitor's kernel down
            # this visitor's kernel: other tests' visitors may still be leaving (any order runs)
            mine = set(voila_server.kernels()) - others
            assert mine, "no kernel for this visitor?"
            page.unroute("**/*")  # an intercepted beacon would die with the page
            page.goto("about:blank")  # beforeunload: Voila's shutdown beacon (needs the xsrf setting)
            deadline = time.monotonic() + 30
            while mine & set(voila_server.kernels()) and time.monotonic() < deadline:
                time.sleep(0.5)
            assert not mine & set(voila_server.kernels()), "Voila left the visitor's kernel running"
    finally:
        page.close(run_before_unload=True)


#: what a truncated button is: its label wider than the box (every visible button of the app)
TRUNCATED_BUTTONS_JS = """() => [...document.querySelectorAll('.px-app button')]
    .filter(b => b.offsetParent !== null && b.scrollWidth > b.clientWidth)
    .map(b => `${b.textContent.trim()} (${b.scrollWidth} > ${b.clientWidth})`)"""
#: the elements of the Explain result that reach past its panel (or make it scroll sideways)
EXPLAIN_WIDER_THAN_PANEL_JS = """() => {
    const panel = document.querySelector('.px-tab-explain .px-explain-details');
    const right = panel.getBoundingClientRect().right + 1;
    const wide = [...panel.querySelectorAll('*')].filter(e => e.getBoundingClientRect().right > right)
        .map(e => `${e.tagName}.${e.className} ${Math.round(e.getBoundingClientRect().right)} > ${right}`);
    if (panel.scrollWidth > panel.clientWidth) wide.push(`panel ${panel.scrollWidth} > ${panel.clientWidth}`);
    return wide.slice(0, 8);
}"""
VISIBLE_BUTTONS_JS = (
    "() => [...document.querySelectorAll('.px-app button')].filter(b => b.offsetParent !== null).length"
)


@pytest.mark.parametrize("size", [(1024, 768), (1400, 1000)])
def test_voila_no_button_label_is_truncated(
    browser: Any, voila_server: VoilaServer, size: tuple[int, int]
) -> None:
    """At 1024x768 and 1400x1000, on every tab, no visible button of the app cuts its label
    (``scrollWidth <= clientWidth``), and the dtype toggles show all 16 formats."""
    from explorer.formats import FORMAT_NAMES

    width, height = size
    page = browser.new_page(viewport={"width": width, "height": height})
    try:
        page.goto(voila_server.url, timeout=120_000)
        page.wait_for_selector(".px-app .px-dtypes .px-toggle", timeout=120_000)
        shown = page.eval_on_selector_all(
            ".px-dtypes .px-toggle", "els => els.filter(e => e.offsetParent !== null).length"
        )
        assert shown == len(FORMAT_NAMES)
        truncated: dict[str, list[str]] = {}
        for key, title in TABS:
            open_tab(page, title)
            page.wait_for_selector(f".px-tab-{key}", state="visible", timeout=60_000)
            page.wait_for_timeout(500)
            assert page.evaluate(VISIBLE_BUTTONS_JS) > 0, key
            found = page.evaluate(TRUNCATED_BUTTONS_JS)
            if found:
                truncated[key] = found
            if key == "kernels":  # its answer sentence wraps inside the window (issue 28, items 1 and 2)
                fits = page.eval_on_selector(
                    ".px-tab-kernels .px-answer-box",
                    "el => [el.scrollWidth <= el.clientWidth, el.getBoundingClientRect().right <= innerWidth,"
                    " el.innerText]",
                )
                assert fits[0] and fits[1] and fits[2].startswith(("Yes:", "No:")), (size, fits)
            if key == "explain" and width == 1024:  # the history strip and sentences wrap (item 2)
                page.fill(".px-explain-text textarea", ORIGINAL_ERROR)
                page.click(".px-explain-button")
                page.wait_for_function(  # the answer: the history strip up to the first release
                    "() => { const d = document.querySelector('.px-explain-details');"
                    " return d !== null && d.textContent.includes('first release with a kernel'); }",
                    timeout=120_000,
                )
                wider = page.evaluate(EXPLAIN_WIDER_THAN_PANEL_JS)
                assert not wider, f"Explain at {width}x{height}: elements wider than the panel: {wider}"
        shoot(page, f"voila-buttons-{width}x{height}")
        assert not truncated, f"truncated buttons at {width}x{height}: {truncated}"
        # a button reached by the keyboard shows a ring of at least 2 px (issue 28, item 12)
        open_tab(page, "Kernels")
        page.focus(".px-tab-kernels .px-probe")
        page.keyboard.press("Tab")
        page.keyboard.press("Shift+Tab")
        ring = page.evaluate(
            "() => { const s = getComputedStyle(document.activeElement); "
            "return [document.activeElement.className, s.outlineStyle, parseFloat(s.outlineWidth)]; }"
        )
        assert "px-probe" in ring[0] and ring[1] == "solid" and ring[2] >= 2, ring
    finally:
        page.close(run_before_unload=True)


# ---------------------------------------------------------------------------------------- JupyterLab


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("lab")
    root = tmp / "root"
    root.mkdir()
    shutil.copy(ROOT / "notebooks" / "explorer.ipynb", root / "explorer.ipynb")  # Lab autosaves: use a copy
    settings = tmp / "settings"
    settings.mkdir()
    (settings / "overrides.json").write_text(
        json.dumps(
            {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False}}
        )
    )
    port = free_port()
    log = tmp / "lab.log"
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--allow-root",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--ServerApp.root_dir={root}",
        "--IdentityProvider.token=",
        "--PasswordIdentityProvider.hashed_password=",
        "--ServerApp.disable_check_xsrf=True",
        "--LabApp.expose_app_in_browser=True",
        f"--LabApp.app_settings_dir={settings}",
        "--LabApp.news_url=None",
    ]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=root, start_new_session=True
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(f"{base}/api/status", proc, log)
        _delete_sessions(base)
        _LAB_ROOTS[base] = root
        yield base
    finally:
        try:
            _delete_sessions(base)
        finally:
            stop_process_tree(proc)


#: the directory each JupyterLab fixture serves, by base URL
_LAB_ROOTS: dict[str, Path] = {}


def _lab_root(base: str) -> Path:
    return _LAB_ROOTS[base]


def _delete_sessions(base: str) -> None:
    with urllib.request.urlopen(f"{base}/api/sessions", timeout=10) as resp:
        sessions = json.load(resp)
    for session in sessions:
        req = urllib.request.Request(f"{base}/api/sessions/{session['id']}", method="DELETE")
        urllib.request.urlopen(req, timeout=10).close()


def test_jupyterlab_runs_explorer_notebook_and_widget_changes_output(browser: Any, lab: str) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 2200})
    try:
        page.goto(f"{lab}/lab/tree/explorer.ipynb?reset", timeout=120_000)
        page.wait_for_function(
            "() => { const s = document.querySelector('#jp-main-statusbar');"
            " return s !== null && s.textContent.includes('Python 3 (ipykernel) | Idle'); }",
            timeout=120_000,
        )
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.wait_for_selector(".px-app", timeout=120_000)
        open_tab(page, "Ranges")
        page.locator(".px-ranges-plot img").first.scroll_into_view_if_needed(timeout=120_000)
        page.wait_for_selector(".px-ranges-plot img", timeout=120_000)
        before = img_src(page, ".px-ranges-plot img")
        select_op(page, "exp")
        page.wait_for_function(
            "before => { const i = document.querySelector('.px-ranges-plot img');"
            " return i !== null && i.getAttribute('src') !== before; }",
            arg=before,
            timeout=60_000,
        )
        assert img_src(page, ".px-ranges-plot img") != before
        page.wait_for_timeout(500)
        shoot(page, "lab-ranges")
        prompts = page.locator(".jp-CodeCell .jp-InputArea-prompt").all_inner_texts()
        assert prompts and all(p.strip().startswith("[") and p.strip() != "[ ]:" for p in prompts), prompts
    finally:
        page.close(run_before_unload=True)


# ---------------------------------------------------------------------------------------- hostile snapshots


def _upload(page: Any, name: str, document: dict[str, Any]) -> None:
    """Upload through the button, as a user does (ipywidgets makes its file input on click)."""
    with page.expect_file_chooser() as chooser:
        page.click(".px-snapshot-upload")
    chooser.value.set_files(
        files=[{"name": name, "mimeType": "application/json", "buffer": json.dumps(document).encode()}]
    )


def _expose_everything(page: Any) -> None:
    """Open every <details> and hover every table cell, so no payload stays unrendered."""
    page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
    for cell in page.locator(".px-tab-kernels td").all()[:12]:
        cell.hover(timeout=5_000)
    page.wait_for_timeout(1_000)


def _load_hostile_snapshots(page: Any) -> None:
    """Upload a valid snapshot carrying payloads in every free field (and its file name), then one
    snapshot per checked column with a payload there; assert each is shown as text or refused."""
    from tests.support import hostile

    page.wait_for_selector(HEATMAP_CELL, timeout=120_000)  # the registry view is drawn
    _upload(page, f"{hostile.SHORT_PAYLOAD}.json", hostile.hostile_valid_snapshot())
    page.wait_for_function(
        "() => document.querySelector('.px-kernels-status').textContent.includes('snapshot')", timeout=60_000
    )
    for mode in ("registry", "eager"):
        page.select_option(".px-mode select", label=mode)
        page.wait_for_function(
            "m => document.querySelector('.px-kernels-status').textContent.includes('snapshot')",
            arg=mode,
            timeout=60_000,
        )
        _expose_everything(page)
        assert "onerror=" in page.inner_text(".px-tab-kernels")  # the payload is there, as text
    page.click(".px-snapshot-clear")
    for column, document in hostile.hostile_invalid_snapshots().items():
        _upload(page, f"bad-{column}.json", document)
        page.wait_for_function(
            "c => document.querySelector('.px-tab-kernels').textContent.includes('rows[0].' + c)",
            arg=column,
            timeout=60_000,
        )
    _expose_everything(page)


def _assert_nothing_ran(page: Any, root: Path) -> None:
    assert page.evaluate("() => window.__px_pwned === undefined"), "a payload ran in the page"
    for frame in page.frames:
        assert frame.evaluate("() => window.__px_pwned === undefined"), f"a payload ran in {frame.url}"
    assert not list(root.rglob("pwned*")), "a payload wrote a file"


def test_voila_shows_hostile_snapshots_as_text(browser: Any, voila_server: VoilaServer) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    try:
        page.goto(voila_server.url, timeout=120_000)
        _load_hostile_snapshots(page)
        _assert_nothing_ran(page, ROOT)
        shoot(page, "voila-hostile-snapshot")
    finally:
        page.close(run_before_unload=True)


def test_jupyterlab_shows_hostile_snapshots_as_text(browser: Any, lab: str) -> None:
    root = _lab_root(lab)
    page = browser.new_page(viewport={"width": 1400, "height": 2200})
    try:
        page.goto(f"{lab}/lab/tree/explorer.ipynb?reset", timeout=120_000)
        page.wait_for_function(
            "() => { const s = document.querySelector('#jp-main-statusbar');"
            " return s !== null && s.textContent.includes('Python 3 (ipykernel) | Idle'); }",
            timeout=120_000,
        )
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.wait_for_selector(".px-app", timeout=120_000)
        page.locator(".px-kernels-plot").first.scroll_into_view_if_needed(timeout=120_000)
        _load_hostile_snapshots(page)
        _assert_nothing_ran(page, root)
        shoot(page, "lab-hostile-snapshot")
    finally:
        page.close(run_before_unload=True)
