"""Real-browser tests: Playwright drives Debian's Chromium against Voila and JupyterLab.

(a) Voila serves the app (workshop mode, offline template); changing the dtype
changes the Kernels view; a screenshot of every tab goes to artifacts/screenshots/.
(b) JupyterLab opens a copy of explorer.ipynb, runs it, a widget is changed and
the output changes.

Servers bind 127.0.0.1 on free ports and are always stopped.  Without Chromium or
Playwright these tests skip, unless PX_REQUIRE_BROWSER=1 (CI), where they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("PX_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
#: Tabs in app order: (key, title).
TABS = [
    ("kernels", "Kernels"),
    ("ranges", "Ranges"),
    ("accuracy", "Accuracy"),
    ("bits", "Bits"),
    ("training", "Training"),
    ("environment", "Environment"),
    ("explain", "Explain"),
]
#: the error this project started from (TensorFlow 2.4.1), pasted into the Explain tab
ORIGINAL_ERROR = (
    "NotFoundError: Could not find device for node: {{node Range}} = Range[Tidx=DT_HALF]\n"
    "All kernels registered for op Range:\n"
    "  device='CPU'; Tidx in [DT_INT64]\n  device='CPU'; Tidx in [DT_INT32]\n"
    "  device='CPU'; Tidx in [DT_DOUBLE]\n  device='CPU'; Tidx in [DT_FLOAT]\n [Op:Range]"
)


def _missing_browser() -> str:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install playwright)"
    if not Path(CHROMIUM).exists():
        return f"chromium not found at {CHROMIUM} (apt-get install chromium)"
    return ""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    missing = _missing_browser()
    if missing:
        if os.environ.get("PX_REQUIRE_BROWSER") == "1":
            pytest.fail(f"PX_REQUIRE_BROWSER=1 but {missing}")
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_http(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 90.0) -> None:
    """Until ``url`` answers (a ``tcp://host:port`` url: until the port accepts connections)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if url.startswith("tcp://"):
                host, port = url.removeprefix("tcp://").split(":")
                socket.create_connection((host, int(port)), timeout=2).close()
            else:
                with urllib.request.urlopen(url, timeout=5):
                    pass
            return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"server at {url} not ready after {timeout} s:\n{log.read_text()[-3000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def shoot(page: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def img_src(page: Any, selector: str) -> str:
    return str(page.eval_on_selector(selector, "el => el.getAttribute('src')"))


#: a cell of the Kernels heatmap (bqplot GridHeatMap rects)
HEATMAP_CELL = ".px-kernels-plot .px-heatmap-body rect.heatmapcell"

#: in the page: what the Kernels heatmap shows (column and row labels, cell fills, glyphs)
_HEATMAP_SIGNATURE = """() => {
    const h = document.querySelector('.px-kernels-plot .px-heatmap');
    if (h === null) return '';
    const texts = sel => [...h.querySelectorAll(sel)].map(t => t.textContent).join('|');
    const fills = [...h.querySelectorAll('rect.heatmapcell')].map(r => r.style.fill).join(',');
    return [texts('.px-heatmap-header .tick text'), texts('.px-heatmap-body .tick text'), fills,
            texts('.px-heatmap-body text.label, .px-heatmap-body .label text')].join('#');
}"""


def heatmap_signature(page: Any) -> str:
    return str(page.evaluate(_HEATMAP_SIGNATURE))


def wait_for_heatmap_change(page: Any, before: str, timeout_ms: int = 60_000) -> None:
    page.wait_for_function(f"before => ({_HEATMAP_SIGNATURE})() !== before", arg=before, timeout=timeout_ms)


def set_dtypes(page: Any, dtypes: list[str]) -> None:
    """Select exactly ``dtypes``: in a multi-select, or by clicking toggle buttons (``.px-dtype-NAME``)."""
    if page.locator(".px-dtypes select").count():
        page.select_option(".px-dtypes select", dtypes)
        return
    for name in dtypes:  # select the wanted ones first: the selection is never empty
        button = page.locator(f".px-dtype-{name}").first
        if "mod-active" not in (button.get_attribute("class") or ""):
            button.click()
    active = page.eval_on_selector_all(
        ".px-dtypes .px-toggle.mod-active",
        "els => els.map(e => [...e.classList].find(c => c.startsWith('px-dtype-')).slice(9))",
    )
    for name in active:
        if name not in dtypes:
            page.locator(f".px-dtype-{name}").first.click()


def select_op(page: Any, op: str) -> None:
    """Pick ``op`` in the op dropdown (its labels read ``name  ·  group``)."""
    value = page.eval_on_selector(
        ".px-op select",
        "(el, op) => [...el.options].find(o => o.textContent.trim().split(/\\s/)[0] === op).value",
        op,
    )
    page.select_option(".px-op select", value=value)


def open_tab(page: Any, title: str) -> None:
    page.locator(".px-tabs .lm-TabBar-tab", has_text=title).first.click()


def wait_for_tab_content(page: Any, key: str, timeout_ms: int) -> None:
    """Until the tab shows a figure, a table, or a message that is not 'loading'."""
    page.wait_for_function(
        """key => {
            const tab = document.querySelector('.px-tab-' + key);
            if (!tab) return false;
            const shown = '.px-plot img, .px-plot .px-heatmap, .px-details table, .px-details .px-msg';
            if (tab.querySelector(shown)) return true;
            const msg = tab.querySelector('.px-status .px-msg');
            return msg !== null && !msg.classList.contains('px-msg-loading');
        }""",
        arg=key,
        timeout=timeout_ms,
    )


# ---------------------------------------------------------------------------------------- Voila


def kernel_children(pid: int) -> list[int]:
    """Kernel processes (ipykernel) whose parent is ``pid``, read from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == pid and b"ipykernel" in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


@pytest.fixture(scope="module")
def voila_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    from explorer.cli.app import start_first_view, voila_command, voila_env, write_offline_template
    from explorer.training.queue import DIR_ENV as TRAINING_QUEUE_DIR

    tmp = tmp_path_factory.mktemp("voila")
    port = free_port()
    log = tmp / "voila.log"
    cmd = voila_command(ROOT / "notebooks" / "explorer.ipynb", port)
    template_root = write_offline_template(tmp / "share")
    # as precision-explorer app does for its notebook; written before any page is asked for
    assert start_first_view(template_root).wait() == 0, "the server's first view was not written"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd,
            # a queue of its own: training runs elsewhere on the machine take none of its slots
            env={**voila_env(template_root), TRAINING_QUEUE_DIR: str(tmp / "queue")},
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
    try:
        wait_for_http(f"tcp://127.0.0.1:{port}", proc, log)  # GET / would run the notebook
        yield f"http://127.0.0.1:{port}/", proc
    finally:
        stop(proc)


def test_voila_serves_the_app_and_dtype_changes_kernels_view(
    browser: Any, voila_server: tuple[str, subprocess.Popen[bytes]]
) -> None:
    voila_url, proc = voila_server
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    external: list[str] = []

    def route(r: Any) -> None:
        if r.request.url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:")):
            r.continue_()
        else:
            external.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    try:
        page.goto(voila_url, timeout=120_000)
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
            assert kernel_children(proc.pid), "no kernel for this visitor?"
            page.unroute("**/*")  # an intercepted beacon would die with the page
            page.goto("about:blank")  # beforeunload: Voila's shutdown beacon (needs the xsrf setting)
            deadline = time.monotonic() + 30
            while kernel_children(proc.pid) and time.monotonic() < deadline:
                time.sleep(0.5)
            assert kernel_children(proc.pid) == [], "Voila left the visitor's kernel running"
    finally:
        page.close(run_before_unload=True)


#: what a truncated button is: its label wider than the box (every visible button of the app)
TRUNCATED_BUTTONS_JS = """() => [...document.querySelectorAll('.px-app button')]
    .filter(b => b.offsetParent !== null && b.scrollWidth > b.clientWidth)
    .map(b => `${b.textContent.trim()} (${b.scrollWidth} > ${b.clientWidth})`)"""
VISIBLE_BUTTONS_JS = (
    "() => [...document.querySelectorAll('.px-app button')].filter(b => b.offsetParent !== null).length"
)


@pytest.mark.parametrize("size", [(1024, 768), (1400, 1000)])
def test_voila_no_button_label_is_truncated(
    browser: Any, voila_server: tuple[str, subprocess.Popen[bytes]], size: tuple[int, int]
) -> None:
    """At 1024x768 and 1400x1000, on every tab, no visible button of the app cuts its label
    (``scrollWidth <= clientWidth``), and the dtype toggles show all 16 formats."""
    from explorer.formats import FORMAT_NAMES

    voila_url, _ = voila_server
    width, height = size
    page = browser.new_page(viewport={"width": width, "height": height})
    try:
        page.goto(voila_url, timeout=120_000)
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
        shoot(page, f"voila-buttons-{width}x{height}")
        assert not truncated, f"truncated buttons at {width}x{height}: {truncated}"
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
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=root)
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
            stop(proc)


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
    import hostile

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


def test_voila_shows_hostile_snapshots_as_text(
    browser: Any, voila_server: tuple[str, subprocess.Popen[bytes]]
) -> None:
    voila_url, _ = voila_server
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    try:
        page.goto(voila_url, timeout=120_000)
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
