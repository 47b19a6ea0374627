"""A kernel per visitor, not per page request (issue 39): page requests that never open their
websocket give their kernels back after the grace time, so they do not lock the server; one
client address starts at most ``--client-starts`` kernels a minute."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support import kernel_ws, voila
from tests.support.voila import VoilaServer, write_notebook
from tests.support.voila import http_get as get

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc"),
]

#: the grace the server is started with (seconds)
GRACE_S = 2


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VoilaServer]:
    tmp = tmp_path_factory.mktemp("visitors")
    app = voila.start_app(
        tmp,
        "--max-kernels=3",
        "--preheat=0",
        f"--connect-grace={GRACE_S}",
        "--client-starts=5",
        notebook=write_notebook(tmp / "small.ipynb", "1 + 1"),
    )
    try:
        yield app
    finally:
        app.stop()


def kernel_id(page: str) -> str:
    match = re.search(r'"kernelId":\s*"([0-9a-f-]{36})"', page)
    assert match, page[-2000:]
    return match.group(1)


async def visit(port: int, kernel: str) -> None:
    """What a browser's page does: open the kernel's websocket (and keep it a moment)."""
    ws = await kernel_ws.connect(port, kernel)
    await asyncio.sleep(0.5)
    await kernel_ws.close(ws)


def test_pages_without_websocket_give_their_kernels_back(server: VoilaServer) -> None:
    with ThreadPoolExecutor(3) as pool:  # three clients that never run the page's JavaScript
        pages = list(pool.map(lambda _: get(server.port, "/"), range(3)))
    assert [status for status, _, _ in pages] == [200, 200, 200]
    silent = {kernel_id(page) for _, _, page in pages}
    assert set(server.kernel_ids()) == silent  # the cap (3) is taken
    status, _, page = get(server.port, "/")  # on main: 503 "The explorer is full" for 15 minutes
    assert status == 200 and "px-full" not in page, page[-500:]
    visitor = kernel_id(page)
    asyncio.run(visit(server.port, visitor))
    assert visitor in server.kernel_ids() and not silent & set(server.kernel_ids())
    assert "kernel given back: no websocket connected" in server.log_text()
    # the connected visitor's kernel outlives the grace; silent pages' kernels do not
    status, _, page = get(server.port, "/")
    assert status == 200
    asyncio.run(asyncio.sleep(GRACE_S * 2))
    assert visitor in server.kernel_ids() and kernel_id(page) not in server.kernel_ids()


def test_one_address_starts_at_most_client_starts_kernels_a_minute(server: VoilaServer) -> None:
    """Five starts a minute from 127.0.0.1: the previous test made five; the next is 429."""
    status, headers, page = get(server.port, "/")
    assert status == 429 and "px-busy" in page and int(headers["retry-after"]) >= 1
    assert "Too many page loads from your address" in page
