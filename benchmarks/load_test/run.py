"""One run, from start to report: the visitors planned, a fresh server in a fresh directory, the
sampler, the visitors under their bounds, then everything stopped and removed however it ended."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.load_test.config import Config, browser_slots
from benchmarks.load_test.context import Hook
from benchmarks.load_test.limits import kill_own_children, run_with_limits
from benchmarks.load_test.procfs import load_average, meminfo_bytes, mib, start_time
from benchmarks.load_test.records import Visitor
from benchmarks.load_test.report import summarize
from benchmarks.load_test.sampling import Sampler
from benchmarks.load_test.server import AppServer, app_command, start_server, stop_server, wait_for_pool
from explorer.server.process_tree import descendants

ROOT = Path(__file__).resolve().parents[2]


def code_state() -> dict[str, Any]:
    """The commit and whether the app's sources had uncommitted changes (``git diff --stat``)."""

    def git(*args: str) -> str:
        try:
            out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return out.stdout.strip()

    stat = git("diff", "--stat", "HEAD", "--", "explorer", "notebooks")
    untracked = git("ls-files", "--others", "--exclude-standard", "--", "explorer", "notebooks")
    return {
        "commit": git("log", "-1", "--format=%h"),
        "uncommitted_app_changes": bool(stat or untracked),
        "diff_stat_summary": stat.splitlines()[-1].strip() if stat else "",
        "untracked_app_files": untracked.splitlines()[:50],
    }


def run_load_test(cfg: Config, on_interacted: Hook | None = None) -> dict[str, Any]:
    """Start a fresh server, run the visitors, stop everything; returns the report (see :func:`summarize`).

    ``on_interacted(server, visitors)``, if given, is called in a thread once every visitor has finished
    its interactions (tests observe the kernels then).
    """
    cfg.check()
    interval = cfg.interval()
    slots = browser_slots(cfg.visitors, cfg.browsers)
    visitors = [
        Visitor(i, "browser" if i in slots else "light", arrival_s=round(i * interval, 2))
        for i in range(cfg.visitors)
    ]
    result: dict[str, Any] = {
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()},
        "arrivals": "all at once"
        if interval == 0
        else f"one every {interval:.2f} s (over {interval * (cfg.visitors - 1):.0f} s)",
        "code": code_state(),
        "machine": {
            "cpus": os.cpu_count(),
            "mem_total_mib": mib(meminfo_bytes("MemTotal")),
            "mem_available_mib_at_start": mib(meminfo_bytes("MemAvailable")),
            "load_at_start": load_average(),
        },
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    workdir = Path(tempfile.mkdtemp(prefix="px-load-test-"))
    children_before = descendants(os.getpid())
    server: AppServer | None = None
    sampler: Sampler | None = None
    try:
        launched = time.monotonic()
        server = start_server(cfg, workdir)
        result["server"] = {
            "command": app_command(cfg, server.port),
            "pid": server.proc.pid,
            "start_time": start_time(server.proc.pid),
            "workdir": str(workdir),
        }
        sampler = Sampler(server, int(cfg.min_available_gib * 2**30)).start()
        if cfg.preheat:
            wait_for_pool(server, cfg.preheat)
            result["pool_warm_s"] = round(time.monotonic() - launched, 1)
            result["machine"]["load_when_pool_warm"] = load_average()
        asyncio.run(run_with_limits(cfg, server, sampler, visitors, result, on_interacted))
    except KeyboardInterrupt:
        result.setdefault("stopped_by", "SIGINT")
    finally:
        if sampler is not None:
            sampler.stop()
            result["samples"] = sampler.samples
            result["kernels_seen"] = dict(sampler.seen_kernels)
        if server is not None:
            result["server"]["log_tail"] = server.log_text()[-4000:]
            result["server"]["cull_lines"] = re.findall(
                r"Culling '\w+' kernel .*? with \d+ connections", server.log_text()
            )
            result["server"]["known_pids"] = dict(server.known)
            result["stopped"] = stop_server(server)
        result["own_children_killed"] = kill_own_children(children_before)
        shutil.rmtree(workdir, ignore_errors=True)
        result.pop("_t0", None)
        result["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        result["machine"]["load_at_end"] = load_average()
    result["visitors"] = [asdict(v) for v in visitors]
    result["summary"] = summarize(visitors, result)
    return result
