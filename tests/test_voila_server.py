"""The workshop server (``precision-explorer app``) against real requests on loopback.

Each server is ``python -m explorer app`` serving a one-cell notebook on a free port
of 127.0.0.1, with its own temp dir (``TMPDIR``), so that what it leaves there can be
checked.  Kernels are found in the process tree (``/proc``): Voila standalone has no
``/api/kernels`` listing.  A websocket client (tornado) stands in for a browser tab
that stays open.  Deadlines are generous; nothing asserts how fast anything is.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from explorer.server.process_tree import descendants, is_alive
from tests.support import kernel_ws, voila
from tests.support.voila import SLIDER_CELL, VoilaServer, write_notebook
from tests.support.voila import http_get as get

pytestmark = [
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)"),
]


def start_app(tmp: Path, *options: str, cell: str = SLIDER_CELL) -> VoilaServer:
    """``python -m explorer app`` with ``options`` serving a one-cell notebook (by default a
    slider: a page load is quick and starts one kernel); returns once the port accepts connections."""
    notebook = write_notebook(tmp / "tiny.ipynb", cell)
    return voila.start_app(tmp, *options, notebook=notebook, timeout=90)


def get_once_a_slot_is_free(server: VoilaServer, timeout: float = 30.0) -> tuple[int, dict[str, str], str]:
    """GET ``/``, retrying while it answers 503.

    A culled kernel's process ends before the kernel manager forgets it, so the slot frees
    a moment after :meth:`VoilaServer.wait_for_kernels` sees no kernel.
    """
    deadline = time.monotonic() + timeout
    while (answer := get(server.port, "/"))[0] == 503 and time.monotonic() < deadline:
        time.sleep(0.5)
    return answer


def kernel_id(page: str) -> str:
    match = re.search(r'"kernelId":\s*"([0-9a-f-]+)"', page)
    assert match, page[-2000:]
    return match.group(1)


# ------------------------------------------------------------------ one server: Host, cap, culling


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VoilaServer]:
    app = start_app(
        tmp_path_factory.mktemp("voila-server"),
        "--max-kernels=1",
        "--cull-idle-timeout=5",
        "--cull-interval=2",
        "--allow-host=workshop.example.org",
    )
    try:
        yield app
    finally:
        app.stop()


#: a kernel id that no server has (fixed, so that every collection of the suite names the same tests)
NO_SUCH_KERNEL = "6a1f3c1e-0000-4000-8000-000000000000"


@pytest.mark.slow
@pytest.mark.parametrize("path", ["/", "/voila/static/voila.js", f"/api/kernels/{NO_SUCH_KERNEL}/channels"])
@pytest.mark.parametrize(
    "host", ["evil.example.com", "evil.example.com:{port}", "localhost.evil.example.com"]
)
def test_a_foreign_host_gets_403_and_no_kernel(server: VoilaServer, host: str, path: str) -> None:
    status, headers, body = get(server.port, path, host=host.format(port=server.port))
    assert status == 403
    assert headers["content-type"].startswith("text/plain")
    assert body.startswith("403 Forbidden") and "<" not in body
    assert server.kernels() == {}
    assert "Kernel started" not in server.log_text()


@pytest.mark.slow
@pytest.mark.parametrize("host", ["localhost:{port}", "[::1]:{port}", "workshop.example.org", "127.0.0.1"])
def test_allowed_hosts_are_served(server: VoilaServer, host: str) -> None:
    status, _, body = get(server.port, "/voila/static/voila.js", host=host.format(port=server.port))
    assert status == 200 and body


@pytest.mark.slow
def test_a_visitor_past_max_kernels_gets_the_full_page_and_no_kernel(server: VoilaServer) -> None:
    server.wait_for_kernels(0)
    status, _, page = get(server.port, "/", host=f"127.0.0.1:{server.port}")
    assert status == 200, page[-2000:]
    first = kernel_id(page)
    asyncio.run(visited(server.port, first))  # a visitor: its page connected (the cap counts those)
    kernels = server.kernels()
    assert len(kernels) == 1

    status, headers, body = get(server.port, "/", host=f"localhost:{server.port}")
    assert status == 503
    assert headers["content-type"].startswith("text/html")
    assert headers["retry-after"].isdigit()
    assert "The explorer is full (1 visitor); try again in a few minutes" in body
    assert server.kernels() == kernels, "a refused visitor must not get a kernel"
    assert server.log_text().count("Kernel started") == 1, server.log_text()[-3000:]

    server.wait_for_kernels(0)  # nobody connected: culled after the idle timeout
    assert f"({first}) with 0 connections" in server.log_text()
    status, _, _ = get_once_a_slot_is_free(server)
    assert status == 200
    assert server.log_text().count("Kernel started") == 2


async def visited(port: int, kernel: str) -> None:
    """What a browser's page does: open its kernel's websocket (then close it): from then on the
    kernel is a visitor's, which the cap counts (a page that never connects gives it back)."""
    ws = await kernel_ws.connect(port, kernel)
    await kernel_ws.close(ws)


def wait_for_log(server: VoilaServer, text: str, count: int, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while server.log_text().count(text) < count and time.monotonic() < deadline:
        time.sleep(0.3)
    assert server.log_text().count(text) >= count, f"{text!r} x{count}:\n{server.log_text()[-3000:]}"


@pytest.mark.slow
def test_a_preheated_pool_serves_run_pages_and_refills_only_within_the_cap(tmp_path: Path) -> None:
    """--preheat 2 --max-kernels 3: two kernels run the notebook before anyone comes; a visitor
    gets one of them (its page already has the cell's output); the pool is refilled while the
    cap leaves room, and not beyond it; past the cap the visitor gets the full page."""
    from explorer.cli.app import REFILL_DELAY_S
    from explorer.server.kernels import POOL_READY

    app = start_app(tmp_path, "--preheat", "2", "--max-kernels", "3", "--cull-idle-timeout", "600")
    try:
        wait_for_log(app, POOL_READY, 2)
        pooled = app.wait_for_kernels(2)
        assert "2 of 2 ready" in app.log_text()

        status, _, page = get(app.port, "/")
        assert status == 200 and "application/vnd.jupyter.widget-view+json" in page, page[-2000:]
        asyncio.run(visited(app.port, kernel_id(page)))
        assert f"Using pre-heated kernel: {kernel_id(page)}" in app.log_text()
        assert app.kernels().keys() == pooled.keys(), "the visitor must get a pooled kernel, not a new one"

        wait_for_log(app, POOL_READY, 3, timeout=REFILL_DELAY_S + 90)  # refilled: 1 visitor + 2 pooled
        assert len(app.wait_for_kernels(3)) == 3
        status, _, page = get(app.port, "/")
        assert status == 200  # 2 visitors + 1 pooled: no room for a refill
        asyncio.run(visited(app.port, kernel_id(page)))
        wait_for_log(app, "pre-heated pool not refilled: 3 kernels running, at most 3", 1)
        time.sleep(REFILL_DELAY_S + 2)
        assert len(app.wait_for_kernels(3)) == 3
        status, _, page = get(app.port, "/")
        assert status == 200  # the last pooled kernel
        asyncio.run(visited(app.port, kernel_id(page)))
        status, _, body = get(app.port, "/")
        assert status == 503 and "The explorer is full (3 visitors)" in body
        assert len(app.wait_for_kernels(3)) == 3
        assert app.log_text().count("Kernel started") == 3, app.log_text()[-3000:]
    finally:
        app.stop()


#: a cell that appends "start end" (seconds since the epoch) to the file $PX_TEST_STAMPS
STAMPED_CELL = (
    "import os, time\n"
    "start = time.time()\n"
    "time.sleep(1.5)\n"
    "with open(os.environ['PX_TEST_STAMPS'], 'a') as f:\n"
    "    f.write(f'{start} {time.time()}\\n')"
)


@pytest.mark.slow
def test_pooled_kernels_run_the_notebook_one_per_core_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from explorer.server.kernels import POOL_READY

    stamps = tmp_path / "stamps.txt"
    monkeypatch.setenv("PX_TEST_STAMPS", str(stamps))
    pool = (os.cpu_count() or 1) + 2
    app = start_app(tmp_path, "--preheat", str(pool), "--max-kernels", str(pool + 1), cell=STAMPED_CELL)
    try:
        wait_for_log(app, POOL_READY, pool, timeout=120)
        assert f"{pool} of {pool} ready" in app.log_text()
    finally:
        app.stop()
    runs = [tuple(map(float, line.split())) for line in stamps.read_text().splitlines()]
    assert len(runs) == pool
    most_at_once = max(sum(1 for a, b in runs if a <= t < b) for t, _ in runs)
    assert most_at_once <= (os.cpu_count() or 1), runs


async def _stay_connected_until_culled(server: VoilaServer, kid: str, timeout: float) -> float:
    """Open the kernel's websocket like a browser tab, talk once, then idle until the kernel is gone.

    Returns the seconds the connection stayed open while waiting.
    """
    ws = await kernel_ws.connect(server.port, kid)
    try:
        request = kernel_ws.message("kernel_info_request", {})
        kernel_ws.send(ws, request)
        msg_id = request["header"]["msg_id"]

        def is_reply(msg: dict[str, object]) -> bool:  # proves the tab is connected to a live kernel
            parent = msg.get("parent_header")
            return (
                msg.get("channel") == "shell" and isinstance(parent, dict) and parent.get("msg_id") == msg_id
            )

        await kernel_ws.receive_until(ws, is_reply, 60)
        opened = time.monotonic()
        deadline = opened + timeout
        while server.kernels() and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
        return time.monotonic() - opened
    finally:
        await kernel_ws.close(ws)


@pytest.mark.slow
def test_a_connected_idle_kernel_is_culled(server: VoilaServer) -> None:
    server.wait_for_kernels(0)
    status, _, page = get_once_a_slot_is_free(server)
    assert status == 200
    kid = kernel_id(page)
    waited = asyncio.run(_stay_connected_until_culled(server, kid, timeout=60))
    assert server.kernels() == {}, f"connected idle kernel not culled after {waited:.0f} s"
    assert f"({kid}) with 1 connections" in server.log_text(), server.log_text()[-3000:]


# ------------------------------------------------------------------ stopping: signals, temp dirs


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_voila_every_kernel_and_removes_the_temp_dir(tmp_path: Path, signum: int) -> None:
    app = start_app(tmp_path, "--max-kernels=2")
    try:
        for _ in range(2):
            status, _, page = get(app.port, "/")
            assert status == 200, page[-2000:]
        kernels = app.wait_for_kernels(2)
        tree = descendants(app.proc.pid)
        assert set(kernels) < set(tree)  # Voila itself, and its kernels
        assert [p.name for p in app.tmpdir.iterdir() if p.name.startswith("px-voila-")]

        app.proc.send_signal(signum)
        assert app.proc.wait(90) == 128 + signum
        left = [pid for pid, started in tree.items() if is_alive(pid, started)]
        assert left == [], f"still running after the app exited: {left}"
        assert list(app.tmpdir.iterdir()) == []
    finally:
        app.stop()


def test_dry_run_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from explorer.cli import main

    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    notebook = write_notebook(tmp_path / "nb.ipynb")
    before = sorted(tmp_path.iterdir())
    assert main(["app", "--dry-run", "--notebook", str(notebook), "--max-kernels", "3"]) == 0
    out = capsys.readouterr().out
    assert "explorer.server.voila_main" in out and "--CappedKernelManager.max_kernels=3" in out
    assert "cull_connected=True" in out
    assert sorted(tmp_path.iterdir()) == before


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--port", "70000"], "port"),
        (["--port", "0"], "port"),
        (["--cull-idle-timeout", "0"], "at least 1 second"),
        (["--cull-interval", "0"], "at least 1 second"),
        (["--max-kernels", "0"], "max_kernels"),
        (["--preheat", "--max-kernels", "2"], "max_kernels"),
        (["--preheat", "5", "--max-kernels", "5"], "max_kernels"),
        (["--allow-host", "evil.example.com:80"], "--allow-host"),
        (["--allow-host", "http://x"], "--allow-host"),
    ],
)
def test_bad_options_are_one_line_errors_before_any_work(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    options: list[str],
    message: str,
) -> None:
    from explorer.cli import main

    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    assert main(["app", "--notebook", str(tmp_path / "missing.ipynb"), *options]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("precision-explorer app: error:") and message in err and "\n" not in err
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ pieces, in process


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1", True),
        ("127.0.0.1:8866", True),
        ("localhost:8866", True),
        ("LOCALHOST", True),
        ("[::1]:8866", True),
        ("[::1]", True),
        ("workshop.example.org:443", True),
        ("evil.example.com", False),
        ("localhost.evil.example.com", False),
        ("127.0.0.1.nip.io", False),
        ("127.0.0.2", False),
        ("0.0.0.0", False),
        ("::1", False),  # unbracketed: not a valid Host header
        ("localhost:80:80", False),
        ("", False),
    ],
)
def test_host_check(host: str, allowed: bool) -> None:
    from explorer.server.hosts import host_allowed

    assert host_allowed(host, ["workshop.example.org"]) is allowed


def test_full_page_is_escaped_html() -> None:
    from explorer.server.voila_main import full_page

    page = full_page(40)
    assert "The explorer is full (40 visitors); try again in a few minutes" in page
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page


@pytest.mark.slow
def test_concurrent_starts_never_exceed_the_cap(tmp_path: Path) -> None:
    from explorer.server.kernels import CappedKernelManager, ServerFull

    async def race() -> tuple[list[object], int]:
        manager = CappedKernelManager(max_kernels=1, connection_dir=str(tmp_path))
        try:
            results = await asyncio.gather(
                manager.start_kernel(kernel_name="python3"),
                manager.start_kernel(kernel_name="python3"),
                manager.start_kernel(kernel_name="python3"),
                return_exceptions=True,
            )
            return list(results), len(manager.list_kernel_ids())
        finally:
            await manager.shutdown_all(now=True)

    results, running = asyncio.run(race())
    assert running == 1
    assert sum(isinstance(r, str) for r in results) == 1
    full = [r for r in results if isinstance(r, ServerFull)]
    assert len(full) == 2 and all(r.status_code == 503 and r.visitors == 1 for r in full)


# ------------------------------------------------------------------ the default pool of one warm kernel


def _dry_run_command(capsys: pytest.CaptureFixture[str], notebook: Path, *options: str) -> list[str]:
    import json

    from explorer.cli import main

    assert main(["app", "--dry-run", "--json", "--notebook", str(notebook), *options]) == 0
    command: list[str] = json.loads(capsys.readouterr().out)["result"]["command"]
    return command


@pytest.mark.parametrize(
    ("options", "pool"),
    [
        ([], 1),
        (["--max-kernels", "1"], 0),
        (["--preheat", "0"], 0),
        (["--preheat"], 2),
        (["--preheat", "3"], 3),
    ],
)
def test_the_default_is_a_pool_of_one_warm_kernel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], pool: int
) -> None:
    command = _dry_run_command(capsys, write_notebook(tmp_path / "nb.ipynb"), *options)
    assert ("--preheat_kernel=True" in command) == (pool > 0)
    assert [arg for arg in command if arg.startswith("--pool_size=")] == (
        [f"--pool_size={pool}"] if pool else []
    )


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_voila_parses_the_app_command_without_a_deprecation_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Voila's own parser takes every option of the command under warnings-as-errors (traitlets
    deprecates ``{...}``/``[...]`` literals for dict and list options) and gets the settings."""
    from explorer.cli.app import PAGE_EXTENSIONS

    command = _dry_run_command(capsys, write_notebook(tmp_path / "nb.ipynb"))
    voila_args = command[command.index("explorer.server.voila_main") + 1 :]
    # in a process of its own: a Jupyter application made in the test process outlives the test
    # (its logging then writes to pytest's closed capture files)
    parse = (
        "import json, sys, warnings\n"
        "from explorer.server.voila_main import WorkshopVoila\n"
        "app = WorkshopVoila()\n"
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('error')\n"
        "    app.parse_command_line(sys.argv[1:])\n"
        "print(json.dumps([bool(app.config.Voila.tornado_settings['disable_check_xsrf']),\n"
        "                  list(app.config.VoilaConfiguration.extension_allowlist)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", parse, *voila_args], capture_output=True, text=True, timeout=120, check=True
    )
    xsrf_off, allowlist = json.loads(done.stdout.strip().splitlines()[-1])
    assert xsrf_off  # tornado's test is truthiness
    assert allowlist == list(PAGE_EXTENSIONS)


def test_the_help_quotes_the_warm_kernels_memory_from_the_benchmark(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``app --help`` says what the warm kernel holds: the figure benchmarks/results/warm_kernel.md
    (written by ``python -m benchmarks.bench_warm_kernel --write``) gives for ``--help``."""
    from explorer.cli import main

    results = (Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "warm_kernel.md").read_text()
    match = re.search(
        r"^help figure \(median PSS of the warm kernel, rounded to 10 MiB\): (\d+) MiB$", results, re.M
    )
    assert match, results
    with pytest.raises(SystemExit):
        main(["app", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"holds ~{match.group(1)} MiB of memory (PSS, benchmarks/results/warm_kernel.md)" in help_text


@pytest.mark.slow
def test_the_first_visitor_gets_the_pooled_kernel_and_a_stop_cancels_the_refill(tmp_path: Path) -> None:
    """Default options: a page asked for as soon as the port answers (the pool's kernel still
    starting) is served from that kernel, not from a second one started for it; the refill
    that follows waits out its delay, and stopping the server then cancels it."""
    app = start_app(tmp_path, "--max-kernels=3")
    try:
        status, _, page = get(app.port, "/")
        assert status == 200, page[-2000:]
        kid = kernel_id(page)
        log = app.log_text()
        assert f"Using pre-heated kernel: {kid}" in log, log[-3000:]
        started = re.findall(r"Kernel started: ([0-9a-f-]+)", log)
        assert started[0] == kid, log[-3000:]
        app.proc.send_signal(signal.SIGTERM)
        app.proc.wait(60)
        log = app.log_text()
        assert "1 pre-heated pool refill(s) cancelled before their delay ran out" in log, log[-3000:]
        assert re.findall(r"Kernel started: ([0-9a-f-]+)", log) == [kid], log[-3000:]
    finally:
        app.stop()
