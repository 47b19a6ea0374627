"""Measure the memory one attendee's server takes on the shipped JupyterHub config.

    python -m deploy.jupyterhub.measure_user_memory [--settle-s 90] [--json]   # from the repository root

Starts the hub (``jupyterhub_config.py``, loopback, a temporary directory), logs one user in
through the login form in Chromium, waits for the app (``.px-app``) and reads, from
``/proc``, VmRSS (``/proc/PID/status``) and Pss (``/proc/PID/smaps_rollup``) of that user's
single-user server and of every process under it (its kernel, and whatever the kernel
started, such as the explorer's sandbox workers), summed.  Read twice: when the app appears, and once
the sum has stopped growing (less than 1 % over 10 s, or after ``--settle-s`` seconds) with
the page left open and untouched — a viewing visitor, no probe, no training.  It also says
whether TensorFlow's library is mapped into any of those processes at each reading.

RSS counts shared library pages once per process (an upper bound per user); Pss splits them
between the processes sharing them.  Needs configurable-http-proxy, Playwright and Chromium.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from deploy.jupyterhub import hub_session
from tests.support.browser import launch

USER = "visitor"
#: Relative growth over :data:`SETTLE_WINDOW_S` below which the memory counts as settled.
SETTLE_FRACTION = 0.01
SETTLE_WINDOW_S = 10.0


def settle(hub: hub_session.Hub, user: str, limit_s: float) -> tuple[dict[str, Any], float]:
    """Read the user's memory until it grows by less than 1 % over 10 s (or ``limit_s`` passed)."""
    start = time.monotonic()
    previous = hub.user_memory_kib(user)
    while time.monotonic() - start < limit_s:
        time.sleep(SETTLE_WINDOW_S)
        current = hub.user_memory_kib(user)
        grew = current["rss_total_kib"] - previous["rss_total_kib"]
        if grew < SETTLE_FRACTION * previous["rss_total_kib"]:
            return current, time.monotonic() - start
        previous = current
    return previous, time.monotonic() - start


def measure(settle_s: float) -> dict[str, Any]:
    """Both readings (see the module doc) as a dict."""
    from playwright.sync_api import sync_playwright

    with (
        tempfile.TemporaryDirectory(prefix="px-hub-measure-") as tmp,
        hub_session.running_hub(Path(tmp)) as hub,
        sync_playwright() as p,
    ):
        browser = launch(p, Path(tmp))
        try:
            page = browser.new_context().new_page()
            hub_session.log_in(page, hub, USER)
            page.wait_for_selector(".px-app", timeout=120_000)
            shown = hub.user_memory_kib(USER)
            settled, waited = settle(hub, USER, settle_s)
            page.close(run_before_unload=True)
        finally:
            browser.close()
    return {"app_shown": shown, "settled": settled, "settled_after_s": round(waited, 1)}


def _mib(kib: int) -> str:
    return f"{kib / 1024:.0f} MiB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settle-s", type=float, default=90.0, help="longest wait for the memory to settle")
    parser.add_argument("--json", action="store_true", help="print the readings as JSON")
    args = parser.parse_args(argv)
    result = measure(args.settle_s)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for name, reading in (("app shown", result["app_shown"]), ("settled", result["settled"])):
        kernels, others = len(reading["kernel_pids"]), len(reading["other_pids"])
        print(
            f"{name:>9}: RSS {_mib(reading['rss_total_kib'])}, PSS {_mib(reading['pss_total_kib'])} "
            f"(server + {kernels} kernel(s) + {others} other process(es) under it; "
            f"TensorFlow {'loaded' if reading['tensorflow_loaded'] else 'not loaded'} in any of them)"
        )
        server = reading["server_pid"]
        print(f"{'':>11}server alone: RSS {_mib(reading['rss_kib'][server])}")
    print(f"settled after {result['settled_after_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
