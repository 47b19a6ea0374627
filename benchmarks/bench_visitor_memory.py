"""Memory and first view of one visitor of ``precision-explorer app`` (Voila), read from /proc.

    python -m benchmarks.bench_visitor_memory [--fresh-cache] [--op exp] [--preheat] [--json]

(from the repository root: the server and Chromium come from :mod:`tests.support`).

Starts a fresh ``python -m explorer app`` (the real notebook, notebooks/explorer.ipynb) on a
free port of 127.0.0.1, then:

1. one light HTTP client GETs ``/`` (Voila runs the notebook while it renders the page): the
   seconds until the page is complete, and the kernel's ``VmRSS`` (``/proc/<pid>/status``)
   then and ``--settle`` seconds later;
2. a real browser (Playwright, Chromium at ``/usr/bin/chromium``) opens the page: seconds from
   the request to the ``.px-app`` element and to the Kernels view having content (a figure,
   a table or a message that is not "loading"), the new kernel's VmRSS after that first view,
   then after visiting each viewing tab in turn (``.px-tabs``; ``--op`` is selected before the
   Ranges tab, so that its sweep runs), waiting ``--settle`` seconds on each.

For every reading it says whether the kernel maps a ``libtensorflow*.so`` (``/proc/<pid>/maps``:
TensorFlow imported in the kernel), and the VmRSS of the kernel's descendants (sandbox worker
processes) with the same flag.  ``--fresh-cache`` gives the server an empty ``PX_CACHE_DIR``
(the first visitor of a machine); without it the user cache directory is used as it is.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from explorer.server.process_tree import descendants
from tests.support.browser import launch
from tests.support.page import select_op
from tests.support.voila import VoilaServer, start_app

#: the tabs a visitor who only looks opens, in app order (key, title); Kernels is the first view
VIEW_TABS = [
    ("ranges", "Ranges"),
    ("accuracy", "Accuracy"),
    ("bits", "Bits"),
    ("environment", "Environment"),
    ("explain", "Explain"),
]
_TAB_CONTENT = """key => {
    const tab = document.querySelector('.px-tab-' + key);
    if (!tab) return false;
    if (tab.querySelector('.px-plot img, .px-plot svg, .px-details table, .px-details .px-msg')) return true;
    const msg = tab.querySelector('.px-status .px-msg');
    return msg !== null && !msg.classList.contains('px-msg-loading');
}"""


def vm_rss_mb(pid: int) -> float | None:
    """VmRSS of ``pid`` in MiB (None when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def maps_tensorflow(pid: int) -> bool:
    """Whether ``pid`` maps a libtensorflow shared object (TensorFlow is imported there)."""
    try:
        return "libtensorflow" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def kernels(server_pid: int) -> list[int]:
    """The server's kernel processes (ipykernel in the command line), oldest first."""
    found = []
    for pid, started in descendants(server_pid).items():
        with contextlib.suppress(OSError):
            if b"ipykernel" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append((started, pid))
    return [pid for _, pid in sorted(found)]


def reading(kernel: int, label: str, seconds: float | None = None) -> dict[str, Any]:
    """The kernel's and its workers' VmRSS and TensorFlow flags now."""
    workers = [
        {"pid": pid, "rss_mb": vm_rss_mb(pid), "tensorflow": maps_tensorflow(pid)}
        for pid in descendants(kernel)
    ]
    row: dict[str, Any] = {
        "when": label,
        "kernel_rss_mb": vm_rss_mb(kernel),
        "kernel_tensorflow": maps_tensorflow(kernel),
        "workers": [w for w in workers if w["rss_mb"] is not None],
    }
    if seconds is not None:
        row["seconds"] = round(seconds, 2)
    return row


def start_server(tmp: Path, fresh_cache: bool, preheat: bool) -> VoilaServer:
    """``precision-explorer app --max-kernels 6`` (``--preheat``, else ``--preheat 0``); an empty cache
    when ``fresh_cache``."""
    env = {"PX_CACHE_DIR": str(tmp / "cache")} if fresh_cache else {}
    pool = ["--preheat"] if preheat else ["--preheat", "0"]  # 0: the visitor's kernel is a new one
    return start_app(tmp, "--max-kernels", "6", *pool, env=env, timeout=90)


def wait_for_new_kernel(server: int, known: set[int], timeout: float = 60.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        new = [pid for pid in kernels(server) if pid not in known]
        if new:
            return new[-1]
        time.sleep(0.2)
    raise RuntimeError("no new kernel appeared")


def http_visit(port: int, server: int, settle: float) -> dict[str, Any]:
    """One light client: GET / to the end of the streamed page."""
    known = set(kernels(server))
    start = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    conn.request("GET", "/", headers={"Host": f"127.0.0.1:{port}"})
    resp = conn.getresponse()
    body = resp.read().decode(errors="replace")
    conn.close()
    page_seconds = time.perf_counter() - start
    kernel = wait_for_new_kernel(server, known)
    out = {
        "status": resp.status,
        "page_seconds": round(page_seconds, 2),
        "page_has_widget": "application/vnd.jupyter.widget-view+json" in body,
        "readings": [reading(kernel, "page rendered")],
    }
    time.sleep(settle)
    out["readings"].append(reading(kernel, f"{settle:g} s later"))
    return out


def browser_visit(port: int, server: int, op: str, settle: float, timeout_s: float) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    url = f"http://127.0.0.1:{port}/"
    known = set(kernels(server))
    out: dict[str, Any] = {"readings": []}
    with sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1800})
            page.set_default_timeout(timeout_s * 1000)
            start = time.perf_counter()
            page.goto(url, wait_until="commit")
            page.wait_for_selector(".px-app", state="attached")
            out["to_px_app_seconds"] = round(time.perf_counter() - start, 2)
            page.wait_for_function(_TAB_CONTENT, arg="kernels")
            out["to_kernels_content_seconds"] = round(time.perf_counter() - start, 2)
            kernel = wait_for_new_kernel(server, known)
            out["kernel_pid"] = kernel
            out["readings"].append(reading(kernel, "first view (Kernels)", time.perf_counter() - start))
            for key, title in VIEW_TABS:
                if key == "ranges" and op:
                    select_op(page, op)
                began = time.perf_counter()
                page.locator(".px-tabs .lm-TabBar-tab", has_text=title).first.click()
                page.wait_for_function(_TAB_CONTENT, arg=key)
                shown = time.perf_counter() - began
                time.sleep(settle)
                row = reading(kernel, f"after {title}", shown)
                row["status_text"] = page.inner_text(f".px-tab-{key} .px-status")[:200]
                out["readings"].append(row)
            page.close(run_before_unload=True)
        finally:
            browser.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--fresh-cache", action="store_true", help="an empty PX_CACHE_DIR for the server")
    parser.add_argument("--op", default="exp", help="op selected before the Ranges tab (default exp)")
    parser.add_argument(
        "--settle", type=float, default=8.0, help="seconds to wait after each view (default 8)"
    )
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds any one wait may take")
    parser.add_argument("--preheat", action="store_true", help="serve with --preheat (2 warm kernels)")
    parser.add_argument("--no-browser-phase", action="store_true", help="only the HTTP client")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="px-bench-visitor-") as tmp:
        server = start_server(Path(tmp), args.fresh_cache, args.preheat)
        port, proc = server.port, server.proc
        try:
            result: dict[str, Any] = {"fresh_cache": args.fresh_cache, "preheat": args.preheat, "op": args.op}
            if args.preheat:
                time.sleep(30)  # let the pool's kernels run the notebook
            result["http"] = http_visit(port, proc.pid, args.settle)
            if not args.no_browser_phase:
                result["browser"] = browser_visit(port, proc.pid, args.op, args.settle, args.timeout)
        except Exception:
            print(server.log_text()[-3000:], file=sys.stderr)
            raise
        finally:
            server.stop()
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        _print(result)
    return 0


def _print(result: dict[str, Any]) -> None:
    http_part = result["http"]
    print(
        f"fresh cache: {result['fresh_cache']}, preheat: {result['preheat']}, "
        f"op before Ranges: {result['op']}"
    )
    print(f"HTTP GET / : {http_part['status']} in {http_part['page_seconds']} s")
    rows = [("http", r) for r in http_part["readings"]]
    if "browser" in result:
        b = result["browser"]
        print(
            f"browser: .px-app after {b['to_px_app_seconds']} s, "
            f"Kernels content after {b['to_kernels_content_seconds']} s"
        )
        rows += [("browser", r) for r in b["readings"]]
    print(f"{'client':8} {'when':28} {'kernel MiB':>10} {'TF in kernel':>12}  workers (MiB, TF)")
    for client, r in rows:
        workers = (
            ", ".join(f"{w['rss_mb']:.0f}{' TF' if w['tensorflow'] else ''}" for w in r["workers"]) or "-"
        )
        rss = r["kernel_rss_mb"]
        print(
            f"{client:8} {r['when']:28} {rss if rss is None else round(rss):>10} "
            f"{'yes' if r['kernel_tensorflow'] else 'no':>12}  {workers}"
        )


if __name__ == "__main__":
    raise SystemExit(main())
