"""The Kernels heatmap's re-render time in a real browser (Chromium, driven by Playwright) against
Voila serving notebooks/explorer.ipynb in workshop mode.

    python -m benchmarks.bench_heatmap_browser [--repetitions 20]     # from the repository root

Each repetition changes a control in the page (the dtypes: float32 selected or deselected, as a
dropdown or a toggle button; then the op, alternating between cholesky and exp), timed from
the control's ``change`` event
(dispatched in the page, ``performance.now()``) to the last DOM mutation of the heatmap element
(``.px-heatmap``, seen by a MutationObserver) before 1.5 s of quiet.  The first two changes of each
kind are a warm-up (the kernel computes and caches the two selections) and are not counted, so the
figures are those of going back and forth between selections already computed once.  Prints the
median and p95 per control, and JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.support.browser import launch
from tests.support.voila import start_voila

#: in the page: change ``selector``'s <select> to ``values``, then resolve with the milliseconds
#: from the change event to the heatmap's last mutation before ``quiet`` ms without one
_TIMED_CHANGE = """
async ([selector, values, quiet]) => {
  const heatmap = document.querySelector('.px-kernels-plot .px-heatmap');
  const select = document.querySelector(selector + ' select');
  const toggle = select === null
    ? document.querySelector(selector.replace(/s$/, '') + '-' + values[0]) : null;
  let last = null;
  const observer = new MutationObserver(() => { last = performance.now(); });
  observer.observe(heatmap, {subtree: true, childList: true, attributes: true, characterData: true});
  let start;
  if (select !== null) {
    for (const option of select.options) option.selected = values.includes(option.value);
    start = performance.now();
    select.dispatchEvent(new Event('change', {bubbles: true}));
  } else {  // dtypes as toggle buttons: a click on values[0]'s button selects or deselects it
    start = performance.now();
    toggle.click();
  }
  const deadline = start + 30000;
  while (performance.now() < deadline) {
    await new Promise(r => setTimeout(r, 50));
    if (last !== null && performance.now() - last > quiet) break;
  }
  observer.disconnect();
  return last === null ? -1 : last - start;
}
"""


def _option_value(page: Any, selector: str, label_start: str) -> str:
    return str(
        page.eval_on_selector(
            f"{selector} select",
            "(el, name) => [...el.options].find(o => o.textContent.trim().split(/\\s/)[0] === name).value",
            label_start,
        )
    )


def _summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"n": len(times), "median_ms": statistics.median(times), "p95_ms": p95, "max_ms": ordered[-1]}


def measure(repetitions: int) -> dict[str, Any]:
    """Start Voila, open the app, time ``repetitions`` dtype changes and op changes."""
    from playwright.sync_api import sync_playwright

    server = start_voila(Path(tempfile.mkdtemp(prefix="px-bench-heatmap-")), first_view=False)
    results: dict[str, Any] = {}
    try:
        with sync_playwright() as p:
            browser = launch(p)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            try:
                page.goto(server.url, timeout=120_000)
                page.wait_for_selector(".px-kernels-plot .px-heatmap rect.heatmapcell", timeout=120_000)
                page.wait_for_timeout(1500)
                changes = {
                    "dtype": (".px-dtypes", [["float32"], ["float32"]]),
                    "op": (
                        ".px-op",
                        [[_option_value(page, ".px-op", "cholesky")], [_option_value(page, ".px-op", "exp")]],
                    ),
                }
                for name, (selector, selections) in changes.items():
                    times = []
                    for k in range(repetitions + 2):
                        ms = page.evaluate(_TIMED_CHANGE, [selector, selections[k % 2], 1500])
                        if ms < 0:
                            raise RuntimeError(f"{name} change {k}: the heatmap never changed")
                        if k >= 2:
                            times.append(float(ms))
                    results[name] = _summary(times)
            finally:
                page.close(run_before_unload=True)
                browser.close()
    finally:
        server.stop()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    results = measure(args.repetitions)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for name, r in results.items():
            print(
                f"heatmap re-render after a {name} change (Voila, Chromium): n={r['n']} "
                f"median {r['median_ms']:.0f} ms, p95 {r['p95_ms']:.0f} ms, max {r['max_ms']:.0f} ms"
            )
        print(f"(total {time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
