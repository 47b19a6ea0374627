"""The app's first paint and interaction latency, measured in Chromium against a fresh Voila server.

    python -m benchmarks.bench_app_browser [--loads 5] [--repeats 20] [--json]
        [--preheat [N]] [--first-paint-only]
    python -m benchmarks.bench_app_browser --cold-vs-default [--loads 5] [--write]
    python -m benchmarks.run app_browser

(from the repository root: the Voila server and Chromium come from :mod:`tests.support`).

- first paint: ``--loads`` page loads, each in a new browser context (cold cache, its own
  kernel); in the page, from navigation start (``performance.now()``), the time until the app's
  static preview shows its table (:meth:`explorer.App.preview_html`, written into the page by
  the server), until ``.px-app`` is visible and until the Kernels view has content (a figure or
  a details table with an area).
- interactions, on one page, ``--repeats`` times each: the time from the first input event the
  page sees (pointerdown / keydown / input / change, stamped in the page by a capturing listener)
  to the first DOM mutation after which the view shows the new selection (stamped by a
  MutationObserver), so Playwright's round trips are not counted:
  op change (cycling exp, cholesky, matmul, range, softmax; the details heading names the op),
  dtype change (float16 <-> float16 + bfloat16; the details table's dtypes are the new set; the
  heatmap's labels are not waited for), tab switch to
  Ranges, Accuracy and Bits from Kernels (the tab is shown with a figure or a table and no
  loading message), typing a value in Bits and pressing Enter (the value table changes and names
  the value), clicking a heatmap cell (two cells alternately; the cell details change).
  The first pass of each cycle computes; later ones may be served from the app's caches: both
  are in the figures, and the first value is reported apart.

``--cold-vs-default`` measures first paint twice, each on a fresh server: without a pool
(``precision-explorer app --preheat 0``: each load starts a kernel that runs the notebook then)
and with ``precision-explorer app``'s default pool of one warm kernel
(:data:`explorer.cli.app.DEFAULT_PREHEAT`, each load once the pool is warm again, as the first
visitor of a server started a little before finds it); ``--write`` keeps the table in
``benchmarks/results/app_browser_default.md``.

``--preheat [N]`` starts the server as ``precision-explorer app --preheat N`` does (a pool of
pre-executed kernels); without it every load starts a kernel that runs the notebook then (as
the first visitor of ``precision-explorer app`` without ``--preheat`` has it).  Either way the
server writes the first view beside its template first, as ``precision-explorer app`` does
(:func:`explorer.cli.app.start_first_view`).  ``--first-paint-only`` skips the interactions.
Results kept: ``benchmarks/results/app_browser.json`` (``--loads 5 --repeats 10 --preheat
--json``) and ``benchmarks/results/app_browser_cold.json`` (``--loads 5 --first-paint-only
--json``).

Figures are wall-clock on the machine at hand, under whatever else runs on it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support import page as bs
from tests.support.browser import launch
from tests.support.page import open_tab, select_op
from tests.support.voila import VoilaServer, start_voila

ROOT = Path(__file__).resolve().parents[1]

VIEWPORT: Any = {"width": 1400, "height": 1000}
LOAD_MS = 120_000
OPS = ["exp", "cholesky", "matmul", "range", "softmax"]
BITS_VALUES = ["0.1", "1000", "65519", "1e-8", "3.14159"]

#: the details heading names the op (the heatmap's row labels are not used: in the code measured
#: on 2026-12-01 they did not always follow a change)
_OP_SHOWN = """(op) => {
    const details = document.querySelector('.px-kernels-details');
    const heading = details !== null && [...details.querySelectorAll('h4')]
        .some(h => h.textContent.trim().startsWith(op + ':'));
    return heading;
}"""

_DTYPES_SHOWN = """(want) => {
    const same = s => s.size === want.length && want.every(d => s.has(d));
    const seen = new Set();
    for (const table of document.querySelectorAll('.px-kernels-details table')) {
        if (table.getClientRects().length === 0) continue;
        const heads = [...(table.tHead ? table.tHead.rows[table.tHead.rows.length - 1].cells : [])]
            .map(c => c.textContent.trim());
        const col = heads.indexOf('dtype');
        if (col < 0) continue;
        for (const row of [...table.tBodies].flatMap(b => [...b.rows])) {
            if (row.cells[col]) seen.add(row.cells[col].textContent.trim());
        }
    }
    return same(seen);
}"""

_TAB_SHOWN = """(key) => {
    const tab = document.querySelector('.px-tab-' + key);
    if (!tab || tab.getClientRects().length === 0) return false;
    const loading = tab.querySelector('.px-status .px-msg-loading');
    if (loading) return false;
    return tab.querySelector('.px-plot img, .px-plot svg, .px-plot canvas, .px-details table') !== null;
}"""

_BITS_SHOWN = """([value, before]) => {
    const details = document.querySelector('.px-tab-bits .px-details');
    if (!details) return false;
    const table = details.querySelector('table');
    return table !== null && table.innerText !== before && details.innerText.includes(value);
}"""

_CELL_SHOWN = """(before) => {
    const d = document.querySelector('.px-tab-kernels .px-cell-details');
    return d !== null && d.innerText.trim() !== '' && d.innerText !== before;
}"""


def _summary(ms: list[float]) -> dict[str, Any]:
    import numpy as np

    return {
        "n": len(ms),
        "median_ms": statistics.median(ms),
        "p95_ms": float(np.percentile(ms, 95)),
        "max_ms": max(ms),
        "first_ms": ms[0],
    }


#: most seconds to wait for the pool to be warm
POOL_WAIT_S = 300.0


def _wait_for_pool(log: Path, kernels: int) -> None:
    """Wait until the server's log says ``kernels`` pre-heated kernels in all have run the
    notebook (or POOL_WAIT_S passed): before the first load, the whole pool; before each later
    one, the refill for the kernel the previous load took too.  So each load measures a warm
    pool, not a kernel still starting."""
    from explorer.server.kernels import POOL_READY

    deadline = time.monotonic() + POOL_WAIT_S
    while time.monotonic() < deadline:
        if log.read_text(errors="replace").count(POOL_READY) >= kernels:
            return
        time.sleep(0.25)
    print(f"warning: the pre-heated pool was not warm within {POOL_WAIT_S:.0f} s", file=sys.stderr)


def first_paint(browser: Any, url: str, loads: int, log: Path, preheat: int = 0) -> dict[str, Any]:
    """Milliseconds from navigation start to the static preview's table, to the app visible and
    to the Kernels view, per load (with a pool of ``preheat`` kernels: each load once the pool is
    warm again).  A load whose page showed no preview before the app counts in ``no_preview``."""
    preview: list[float] = []
    app, view = [], []
    no_preview = 0
    for load in range(loads):
        if preheat:
            _wait_for_pool(log, preheat + load)
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        try:
            page.add_init_script(bs.PAINT_INIT_SCRIPT)
            page.goto(url, wait_until="commit", timeout=LOAD_MS)
            got = bs.paint_times(page, LOAD_MS)
            if got["preview_ms"] is None:
                no_preview += 1
            else:
                preview.append(got["preview_ms"])
            app.append(got["app_visible_ms"])
            view.append(got["kernels_view_ms"])
        finally:
            page.close(run_before_unload=True)
            context.close()
    shown = _summary(preview) if preview else {}
    if no_preview:
        shown["note"] = f"{no_preview} of {loads} loads showed no preview"
    return {"preview_table": shown, "app_visible": _summary(app), "kernels_view": _summary(view)}


def _repeat(n: int, one: Callable[[int], float]) -> list[float]:
    return [one(k) for k in range(n)]


def _measured(out: dict[str, Any], name: str, n: int, one: Callable[[int], float]) -> None:
    """``out[name]``: the summary of ``n`` runs of ``one``, or what failed (the others still run)."""
    try:
        out[name] = _summary(_repeat(n, one))
    except Exception as exc:
        out[name] = {"n": 0, "note": f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}


def interactions(page: Any, repeats: int) -> dict[str, Any]:
    """Each interaction ``repeats`` times on ``page`` (showing the app); milliseconds."""
    out: dict[str, Any] = {}
    page.wait_for_function(bs.KERNELS_VIEW_READY, timeout=LOAD_MS)
    bs.choose(page, ".px-dtypes", ["float16"])
    page.wait_for_function(_DTYPES_SHOWN, arg=["float16"], timeout=LOAD_MS)

    def op_change(k: int) -> float:
        op = OPS[(k + 1) % len(OPS)]
        return bs.measure(page, lambda: select_op(page, op), _OP_SHOWN, op, LOAD_MS).ms

    select_op(page, OPS[0])
    page.wait_for_function(_OP_SHOWN, arg=OPS[0], timeout=LOAD_MS)
    _measured(out, "op change (Kernels)", repeats, op_change)
    select_op(page, "exp")
    page.wait_for_function(_OP_SHOWN, arg="exp", timeout=LOAD_MS)

    def dtype_change(k: int) -> float:
        want = ["float16", "bfloat16"] if k % 2 == 0 else ["float16"]
        return bs.measure(page, lambda: bs.choose(page, ".px-dtypes", want), _DTYPES_SHOWN, want, LOAD_MS).ms

    _measured(out, "dtype change (Kernels)", repeats, dtype_change)
    bs.choose(page, ".px-dtypes", ["float16"])
    page.wait_for_function(_DTYPES_SHOWN, arg=["float16"], timeout=LOAD_MS)

    for key, title in (("ranges", "Ranges"), ("accuracy", "Accuracy"), ("bits", "Bits")):

        def switch(_: int, key: str = key, title: str = title) -> float:
            open_tab(page, "Kernels")
            page.wait_for_function(_TAB_SHOWN, arg="kernels", timeout=LOAD_MS)
            return bs.measure(page, lambda: open_tab(page, title), _TAB_SHOWN, key, LOAD_MS).ms

        _measured(out, f"switch tab to {title}", repeats, switch)

    open_tab(page, "Bits")
    page.wait_for_function(_TAB_SHOWN, arg="bits", timeout=LOAD_MS)

    def bits_value(k: int) -> float:
        value = BITS_VALUES[(k + 1) % len(BITS_VALUES)]
        before = page.evaluate(
            "() => { const t = document.querySelector('.px-tab-bits .px-details table');"
            " return t ? t.innerText : ''; }"
        )
        page.fill(".px-value input", value)
        return bs.measure(
            page, lambda: page.press(".px-value input", "Enter"), _BITS_SHOWN, [value, before], LOAD_MS
        ).ms

    _measured(out, "type a value in Bits (Enter)", repeats, bits_value)

    open_tab(page, "Kernels")
    page.wait_for_function(_TAB_SHOWN, arg="kernels", timeout=LOAD_MS)
    cells = page.locator(".px-kernels-plot .px-heatmap rect.heatmapcell")
    if cells.count() >= 2:

        def click_cell(k: int) -> float:
            before = page.evaluate(
                "() => { const d = document.querySelector('.px-tab-kernels .px-cell-details');"
                " return d ? d.innerText : ''; }"
            )
            cell = cells.nth(k % 2)
            return bs.measure(
                page, lambda: cell.click(position={"x": 3, "y": 3}), _CELL_SHOWN, before, LOAD_MS
            ).ms

        _measured(out, "click a heatmap cell", repeats, click_cell)
    else:
        out["click a heatmap cell"] = {
            "n": 0,
            "note": "no interactive heatmap (rect.heatmapcell) on the page",
        }
    return out


def measure_all(
    loads: int = 5, repeats: int = 20, *, preheat: int = 0, interactions_too: bool = True
) -> dict[str, Any]:
    """Start Voila (with a pre-heated kernel pool when ``preheat``) and Chromium, measure first
    paint and (when ``interactions_too``) the interactions; everything is stopped."""
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="px-bench-browser-"))
    server: VoilaServer = start_voila(tmp, preheat=preheat)
    url, log = server.url, server.log
    try:
        with sync_playwright() as p:
            browser = launch(p)
            try:
                paint = first_paint(browser, url, loads, log, preheat)
                if not interactions_too:
                    code = _code_state()
                    return {"first_paint": paint, "interactions": {}, "code": code, "preheat": preheat}
                page = browser.new_page(viewport=VIEWPORT)
                try:
                    page.goto(url, timeout=LOAD_MS)
                    page.wait_for_selector(".px-app", timeout=LOAD_MS)
                    inter = interactions(page, repeats)
                finally:
                    page.close(run_before_unload=True)
            finally:
                browser.close()
    finally:
        server.stop()
    return {"first_paint": paint, "interactions": inter, "code": _code_state(), "preheat": preheat}


def _code_state() -> dict[str, Any]:
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT, check=False)
        return done.stdout.strip()

    return {
        "commit": git("log", "-1", "--format=%h"),
        "uncommitted_changes": bool(git("status", "--porcelain")),
    }


def _table(result: dict[str, Any]) -> str:
    code = result["code"]
    lines = [f"code: commit {code['commit']}, uncommitted changes: {code['uncommitted_changes']}"]
    lines.append(f"{'measure':<36} {'n':>3} {'median ms':>10} {'p95 ms':>9} {'max ms':>9} {'first ms':>9}")
    rows = [(f"first paint: {k.replace('_', ' ')}", v) for k, v in result["first_paint"].items()]
    rows += list(result["interactions"].items())
    for name, s in rows:
        if not s.get("n"):
            lines.append(f"{name:<36}   - {s.get('note', '')}")
            continue
        figures = f"{s['median_ms']:>10.0f} {s['p95_ms']:>9.0f} {s['max_ms']:>9.0f} {s['first_ms']:>9.0f}"
        lines.append(f"{name:<36} {s['n']:>3} {figures}")
    return "\n".join(lines)


def run() -> list[tuple[str, float, str]]:
    """For benchmarks/run.py: median and p95 of every measure (fewer repetitions: 3 loads, 10 each)."""
    result = measure_all(loads=3, repeats=10)
    figures = []
    for name, s in [*result["first_paint"].items(), *result["interactions"].items()]:
        if s.get("n"):
            figures += [(f"{name} median", s["median_ms"], "ms"), (f"{name} p95", s["p95_ms"], "ms")]
    return figures


DEFAULT_RESULTS = ROOT / "benchmarks" / "results" / "app_browser_default.md"


def cold_vs_default(loads: int) -> str:
    """First paint without a pool and with the app's default pool, as a markdown table."""
    from explorer.cli.app import DEFAULT_PREHEAT

    runs = {
        "no pool (--preheat 0)": measure_all(loads, preheat=0, interactions_too=False),
        f"default (a pool of {DEFAULT_PREHEAT})": measure_all(
            loads, preheat=DEFAULT_PREHEAT, interactions_too=False
        ),
    }
    code = _code_state()
    lines = [
        "# First paint: no pool against `precision-explorer app`'s default warm kernel",
        "",
        f"`python -m benchmarks.bench_app_browser --cold-vs-default --loads {loads} --write` at commit "
        f"{code['commit']} (uncommitted changes: {code['uncommitted_changes']}); each server fresh, "
        f"{loads} page loads each in a new browser context at 1400x1000, milliseconds from navigation "
        "start. With the pool, each load comes once the pool is warm again.",
        "",
        "| server | measure | n | median ms | p95 ms | max ms |",
        "|---|---|---|---|---|---|",
    ]
    names = {
        "preview_table": "first view (preview table)",
        "app_visible": "app interactive",
        "kernels_view": "Kernels view",
    }
    for server, result in runs.items():
        for key, label in names.items():
            got = result["first_paint"].get(key, {})
            if not got.get("n"):
                lines.append(f"| {server} | {label} | 0 | - | - | - |")
                continue
            lines.append(
                f"| {server} | {label} | {got['n']} | {got['median_ms']:.0f} | {got['p95_ms']:.0f} "
                f"| {got['max_ms']:.0f} |"
            )
        note = result["first_paint"].get("preview_table", {}).get("note")
        if note:
            lines.append(f"| {server} | note | {note} | | | |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=5, help="fresh page loads for first paint (default 5)")
    parser.add_argument(
        "--repeats", type=int, default=20, help="repetitions of each interaction (default 20)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--preheat",
        type=int,
        nargs="?",
        const=2,
        default=0,
        metavar="N",
        help="serve with a pool of N pre-heated kernels (app --preheat N; default 2), measured once warm",
    )
    parser.add_argument("--first-paint-only", action="store_true", help="measure first paint only")
    parser.add_argument(
        "--cold-vs-default",
        action="store_true",
        help="first paint without a pool and with app's default pool of one (two fresh servers)",
    )
    parser.add_argument(
        "--write",
        action="store_true",
        help=f"with --cold-vs-default: write {DEFAULT_RESULTS.relative_to(ROOT)}",
    )
    args = parser.parse_args(argv)
    if args.loads < 1 or args.repeats < 1:
        parser.error("--loads and --repeats must be at least 1")
    if args.cold_vs_default:
        table = cold_vs_default(args.loads)
        print(table)
        if args.write:
            DEFAULT_RESULTS.write_text(table)
        return 0
    start = time.perf_counter()
    result = measure_all(
        args.loads, args.repeats, preheat=args.preheat, interactions_too=not args.first_paint_only
    )
    result["seconds"] = time.perf_counter() - start
    print(json.dumps(result, indent=2) if args.json else _table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
