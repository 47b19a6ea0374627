"""Soak test: one workshop server, visitors arriving and leaving for N minutes.

    python -m benchmarks.soak --minutes 30          # writes benchmarks/results/soak.md and soak.json
    python -m benchmarks.soak --minutes 3 --out-dir /tmp/soak

(from the repository root).  What it does, with the pieces of :mod:`benchmarks.load_test`:

- starts one ``precision-explorer app --no-browser`` on a free port of 127.0.0.1 (its own
  ``TMPDIR``; ``--cull-idle-timeout``/``--cull-interval`` short, so that a visitor who leaves
  without the shutdown beacon is culled within the run; ``--max-kernels``);
- for ``--minutes``: a light visitor (:func:`benchmarks.load_test.light.light_visitor`: HTTP
  page, kernel websocket in the v1 protocol, widget state, four tabs and an op change) arrives
  every ``--arrival-interval`` seconds, stays ``--dwell`` seconds (spread by a seeded random
  draw) and leaves by closing its websocket (no beacon: its kernel is culled); two Chromium
  browsers (one Playwright-driven Chromium process each,
  :func:`benchmarks.load_test.browser.browser_visitor`) each visit, stay ``--browser-dwell``
  seconds, leave by closing the tab (``beforeunload``: Voila's shutdown beacon), and come
  back after ``--browser-pause`` seconds, in a fresh browser context each time;
- every ``--legacy-every`` minutes a client asks for a live visitor's kernel websocket in
  jupyter_server's legacy protocol (no subprotocol) and sends ``request_states`` if let in:
  the server must refuse it (:mod:`explorer.server.websocket`);
- samples, once a minute: the Voila process's VmRSS and CPU time (``/proc``), the number of
  kernel processes, the visitors present; every 5 s, which departed visitors' kernels are
  still alive;
- after the last minute: the visitors still there leave, and it waits (up to the culling
  bound) until every departed visitor's kernel is gone; then it stops the server and every
  process it (or this script) started.

Checks (each failed one is listed, and the exit status is 1):

- Voila's VmRSS at every minute from ``--warmup`` on is at most ``--rss-bound`` MiB above its
  value at minute ``--warmup`` (the first visitors have come and gone by then);
- every departed visitor's kernel is gone within the bound: ``cull-idle-timeout + 3 x
  cull-interval + 30`` s after it left (light clients), 30 s (browsers, whose tab sent the
  beacon) — and none is alive at the end;
- no visitor failed (the failure kinds of :mod:`benchmarks.load_test`), the server did not
  exit, and every legacy-protocol client was refused.

Figures are wall-clock on the machine at hand; on a shared machine they are noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.load_test.browser import browser_visitor
from benchmarks.load_test.config import Config
from benchmarks.load_test.context import RunContext
from benchmarks.load_test.light import light_visitor
from benchmarks.load_test.limits import kill_own_children
from benchmarks.load_test.procfs import load_average, meminfo_bytes, mib, vm_rss_bytes
from benchmarks.load_test.records import Visitor
from benchmarks.load_test.run import code_state
from benchmarks.load_test.sampling import Sampler
from benchmarks.load_test.server import AppServer, app_command, start_server, stop_server, voila_pid
from explorer.server.process_tree import descendants

ROOT = Path(__file__).resolve().parents[1]
#: Seconds between two looks at the departed visitors' kernels.
DEPARTURE_POLL_S = 5.0
#: Seconds a browser visitor's kernel may outlive the tab (the shutdown beacon stops it).
BEACON_BOUND_S = 30.0
#: Most minutes a soak may run.
MAX_MINUTES = 240


@dataclass
class SoakConfig:
    minutes: float = 30.0
    arrival_interval: float = 30.0
    dwell: float = 30.0
    browsers: int = 2
    browser_dwell: float = 30.0
    browser_pause: float = 15.0
    legacy_every: float = 5.0
    cull_idle_timeout: int = 60
    cull_interval: int = 10
    max_kernels: int = 12
    warmup: int = 3
    rss_bound: float = 64.0
    seed: int = 1
    out_dir: Path = ROOT / "benchmarks" / "results"

    def check(self) -> None:
        """ValueError (one line) unless the options make sense."""
        if not 0 < self.minutes <= MAX_MINUTES:
            raise ValueError(f"--minutes must be between 0 and {MAX_MINUTES}")
        if not 1 <= self.arrival_interval <= 600 or not 0 <= self.dwell <= 3600:
            raise ValueError("--arrival-interval must be 1 to 600 s and --dwell 0 to 3600 s")
        if not 0 <= self.browsers <= 2:
            raise ValueError("--browsers must be 0, 1 or 2")
        if self.cull_idle_timeout < 1 or self.cull_interval < 1 or self.max_kernels < 1:
            raise ValueError("--cull-idle-timeout, --cull-interval and --max-kernels must be at least 1")
        if not 0 <= self.warmup < self.minutes:
            raise ValueError("--warmup must be at least 0 and less than --minutes")

    def load_config(self) -> Config:
        """The :class:`benchmarks.load_test.config.Config` the visitors and the server take."""
        return Config(
            visitors=self.max_kernels,
            browsers=self.browsers,
            after="stay",
            cull_idle_timeout=self.cull_idle_timeout,
            cull_interval=self.cull_interval,
            max_kernels=self.max_kernels,
        )

    def departure_bound(self, kind: str) -> float:
        """Seconds a departed visitor's kernel may stay alive."""
        if kind == "browser":
            return BEACON_BOUND_S
        return self.cull_idle_timeout + 3 * self.cull_interval + 30.0


@dataclass
class Departure:
    """A visitor who left: when, and when its kernel was seen gone."""

    index: int
    kind: str
    kernel_id: str | None
    left_s: float
    gone_s: float | None = None  #: seconds from leaving until its kernel was gone
    lingering: bool = False  #: still alive past the bound


@dataclass
class SoakState:
    """What the soak has seen so far."""

    start: float = field(default_factory=time.monotonic)
    visitors: list[Visitor] = field(default_factory=list)
    present: dict[int, Visitor] = field(default_factory=dict)
    departures: list[Departure] = field(default_factory=list)
    minutes: list[dict[str, Any]] = field(default_factory=list)
    legacy: list[dict[str, Any]] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    def now(self) -> float:
        return round(time.monotonic() - self.start, 1)


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of ``pid`` in seconds (``/proc/PID/stat``); None if gone.

    >>> cpu_seconds(os.getpid()) > 0
    True
    """
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def rss_growth(minutes: list[dict[str, Any]], warmup: int) -> dict[str, Any]:
    """Voila's VmRSS growth after minute ``warmup``: the baseline there, the largest later value
    above it, and the growth from the baseline to the last sample.

    >>> rows = [{"minute": m, "voila_rss_mib": r} for m, r in enumerate([100, 150, 160, 158, 170, 165])]
    >>> rss_growth(rows, 2)
    {'baseline_minute': 2, 'baseline_mib': 160, 'max_mib': 170, 'max_growth_mib': 10, 'end_growth_mib': 5}
    """
    later = [row for row in minutes if row["minute"] >= warmup and row.get("voila_rss_mib") is not None]
    if not later:
        return {"baseline_minute": warmup, "baseline_mib": None}
    base = later[0]["voila_rss_mib"]
    peak = max(row["voila_rss_mib"] for row in later)
    return {
        "baseline_minute": later[0]["minute"],
        "baseline_mib": base,
        "max_mib": peak,
        "max_growth_mib": round(peak - base, 1),
        "end_growth_mib": round(later[-1]["voila_rss_mib"] - base, 1),
    }


def dwell_times(count: int, mean: float, seed: int) -> list[float]:
    """Seconds each of ``count`` light visitors stays: uniform in [mean/2, 3 mean/2], seeded.

    >>> times = dwell_times(50, 60.0, 1)
    >>> len(times), min(times) >= 30.0, max(times) <= 90.0, dwell_times(50, 60.0, 1) == times
    (50, True, True, True)
    """
    draw = random.Random(seed)
    return [round(draw.uniform(mean / 2, 3 * mean / 2), 1) for _ in range(count)]


async def visit(
    v: Visitor, dwell: float, cfg: Config, server: AppServer, state: SoakState, browser: Any = None
) -> None:
    """One visitor: arrives, interacts, stays ``dwell`` seconds (or until the soak ends), leaves."""
    ctx = RunContext(cfg, Sampler(server, 0))  # its own release; the sampler is not started
    state.present[v.index] = v
    if v.kind == "browser":
        task = asyncio.ensure_future(browser_visitor(v, cfg, server, state.start, ctx, browser))
    else:
        task = asyncio.ensure_future(light_visitor(v, cfg, server, state.start, ctx))
    try:
        while not task.done() and v.interacted_s is None and v.failure is None:
            await asyncio.sleep(0.2)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(state.stop.wait(), dwell)
        ctx.release.set()
        try:
            await asyncio.wait_for(task, 60)
        except TimeoutError:
            v.fail("timeout", "did not leave within 60 s")
        except Exception as exc:
            v.fail("error", f"{type(exc).__name__}: {exc}")
        if v.interacted_s is None and v.failure is None:
            v.fail("error", "ended without interacting")
    finally:
        task.cancel()
        del state.present[v.index]
        state.departures.append(Departure(v.index, v.kind, v.kernel_id, state.now()))


async def legacy_client(server: AppServer, kernel_id: str) -> dict[str, Any]:
    """Ask for ``kernel_id``'s websocket in the legacy protocol (no subprotocol) and, if let in,
    send the widget ``request_states``; what the server did."""
    from tornado.httpclient import HTTPClientError
    from tornado.websocket import websocket_connect

    url = f"ws://127.0.0.1:{server.port}/api/kernels/{kernel_id}/channels?session_id={uuid.uuid4().hex}"
    try:
        ws = await websocket_connect(url, connect_timeout=30)
    except HTTPClientError as exc:
        return {"refused": True, "status": exc.code}
    except Exception as exc:
        return {"refused": False, "error": f"{type(exc).__name__}: {exc}"}
    session = uuid.uuid4().hex
    control = uuid.uuid4().hex
    for msg_type, content in (
        ("comm_open", {"comm_id": control, "target_name": "jupyter.widget.control", "data": {}}),
        ("comm_msg", {"comm_id": control, "data": {"method": "request_states"}}),
    ):
        header = {"msg_id": uuid.uuid4().hex, "msg_type": msg_type, "session": session, "version": "5.3"}
        ws.write_message(
            json.dumps(
                {
                    "header": header,
                    "parent_header": {},
                    "metadata": {},
                    "content": content,
                    "channel": "shell",
                    "buffers": [],
                }
            )
        )
    await asyncio.sleep(5)
    ws.close()
    return {"refused": False, "status": 101}


async def arrivals(soak: SoakConfig, cfg: Config, server: AppServer, state: SoakState) -> None:
    """Light visitors, one every ``arrival_interval`` seconds until the end."""
    count = int(soak.minutes * 60 // soak.arrival_interval) + 1
    stays = dwell_times(count, soak.dwell, soak.seed)
    tasks = []
    for i in range(count):
        when = state.start + i * soak.arrival_interval
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(state.stop.wait(), max(0.0, when - time.monotonic()))
        if state.stop.is_set():
            break
        v = Visitor(len(state.visitors), "light", arrival_s=state.now())
        state.visitors.append(v)
        tasks.append(asyncio.ensure_future(visit(v, stays[i], cfg, server, state)))
    await asyncio.gather(*tasks, return_exceptions=True)


async def browser_seat(soak: SoakConfig, cfg: Config, server: AppServer, state: SoakState) -> None:
    """One Chromium process whose tab visits, stays, leaves and comes back until the end."""
    from playwright.async_api import async_playwright

    from tests.support.browser import launch_options

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(**launch_options())
        try:
            while not state.stop.is_set():
                v = Visitor(len(state.visitors), "browser", arrival_s=state.now())
                state.visitors.append(v)
                await visit(v, soak.browser_dwell, cfg, server, state, browser)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(state.stop.wait(), soak.browser_pause)
        finally:
            await browser.close()


def kernels_alive(server: AppServer) -> set[str]:
    return set(server.kernel_ids())


async def watch_departures(soak: SoakConfig, server: AppServer, state: SoakState) -> None:
    """Every :data:`DEPARTURE_POLL_S`: note when each departed visitor's kernel is gone, and flag
    those alive past their bound."""
    while True:
        alive = await asyncio.to_thread(kernels_alive, server)
        now = state.now()
        for d in state.departures:
            if d.gone_s is not None or d.kernel_id is None:
                continue
            if d.kernel_id not in alive:
                d.gone_s = round(now - d.left_s, 1)
            elif now - d.left_s > soak.departure_bound(d.kind):
                d.lingering = True
        await asyncio.sleep(DEPARTURE_POLL_S)


def minute_sample(server: AppServer, state: SoakState, minute: int) -> dict[str, Any]:
    """The row of one minute: Voila's VmRSS and CPU time, kernels, visitors, load."""
    pid = voila_pid(server)
    return {
        "minute": minute,
        "t_s": state.now(),
        "voila_rss_mib": mib(vm_rss_bytes(pid)) if pid else None,
        "voila_cpu_s": round(cpu, 1) if pid and (cpu := cpu_seconds(pid)) is not None else None,
        "kernels": len(server.kernel_ids()),
        "visitors_present": len(state.present),
        "arrived": len(state.visitors),
        "departed": len(state.departures),
        "failures": sum(1 for v in state.visitors if v.failure),
        "mem_available_mib": mib(meminfo_bytes("MemAvailable")),
        "load1": (load_average() or [None])[0],
    }


async def soak_run(soak: SoakConfig, server: AppServer, state: SoakState) -> None:
    """The visitors and the samples for ``soak.minutes``; then the last departures."""
    from tornado.httpclient import AsyncHTTPClient

    cfg = soak.load_config()
    AsyncHTTPClient.configure(None, max_clients=soak.max_kernels + 8, max_body_size=64 * 2**20)
    state.start = time.monotonic()
    state.minutes.append(minute_sample(server, state, 0))
    workers = [asyncio.ensure_future(arrivals(soak, cfg, server, state))]
    workers += [asyncio.ensure_future(browser_seat(soak, cfg, server, state)) for _ in range(soak.browsers)]
    watcher = asyncio.ensure_future(watch_departures(soak, server, state))
    end = state.start + soak.minutes * 60
    minute = 0
    next_legacy = soak.legacy_every
    try:
        while time.monotonic() < end:
            minute += 1
            await asyncio.sleep(max(0.0, min(end, state.start + 60 * minute) - time.monotonic()))
            if server.proc.poll() is not None:
                raise RuntimeError(f"the server exited with status {server.proc.returncode}")
            state.minutes.append(await asyncio.to_thread(minute_sample, server, state, minute))
            kernel = next((v.kernel_id for v in list(state.present.values()) if v.kernel_id), None)
            if soak.legacy_every and minute >= next_legacy and kernel:
                next_legacy += soak.legacy_every
                state.legacy.append({"minute": minute, **await legacy_client(server, kernel)})
        state.stop.set()
        await asyncio.wait_for(asyncio.gather(*workers, return_exceptions=True), 120)
        bound = max(soak.departure_bound(kind) for kind in ("light", "browser")) + DEPARTURE_POLL_S
        deadline = time.monotonic() + bound
        while time.monotonic() < deadline and any(
            d.gone_s is None and d.kernel_id and not d.lingering for d in state.departures
        ):
            await asyncio.sleep(1.0)
        state.minutes.append(
            {**await asyncio.to_thread(minute_sample, server, state, minute + 1), "after": True}
        )
    finally:
        state.stop.set()
        watcher.cancel()
        for task in workers:
            task.cancel()
        await asyncio.gather(watcher, *workers, return_exceptions=True)


def verdict(soak: SoakConfig, state: SoakState, server_exit: str | None) -> dict[str, Any]:
    """The checks of the module doc: ``failures`` lists each one that failed."""
    growth = rss_growth(state.minutes, soak.warmup)
    failures = []
    if growth.get("baseline_mib") is None:
        failures.append(f"no VmRSS of Voila at minute {soak.warmup} or later")
    elif growth["max_growth_mib"] > soak.rss_bound:
        failures.append(
            f"Voila's VmRSS grew {growth['max_growth_mib']} MiB after minute {growth['baseline_minute']} "
            f"(bound {soak.rss_bound} MiB)"
        )
    lingering = [d for d in state.departures if d.kernel_id and (d.lingering or d.gone_s is None)]
    if lingering:
        failures.append(
            f"{len(lingering)} departed visitors' kernels outlived their bound: "
            + ", ".join(f"#{d.index} ({d.kind})" for d in lingering[:10])
        )
    failed = [v for v in state.visitors if v.failure]
    if failed:
        failures.append(
            f"{len(failed)} visitors failed: "
            + "; ".join(f"#{v.index} ({v.kind}) {v.failure}: {v.failure_detail[:80]}" for v in failed[:10])
        )
    let_in = [probe for probe in state.legacy if not probe.get("refused")]
    if let_in:
        failures.append(f"{len(let_in)} legacy-protocol clients were not refused")
    if server_exit:
        failures.append(server_exit)
    gone: dict[str, list[float]] = {}
    for d in state.departures:
        if d.gone_s is not None:
            gone.setdefault(d.kind, []).append(d.gone_s)
    return {
        "rss": {**growth, "bound_mib": soak.rss_bound},
        "visits": {kind: sum(1 for v in state.visitors if v.kind == kind) for kind in ("light", "browser")},
        "kernel_gone_after_leaving_s": {
            kind: {
                "count": len(v),
                "median": sorted(v)[len(v) // 2],
                "max": max(v),
                "bound": soak.departure_bound(kind),
            }
            for kind, v in gone.items()
        },
        "legacy_clients": len(state.legacy),
        "failures": failures,
    }


def _cell(value: Any) -> str:
    return "–" if value is None else str(value)


def format_markdown(report: dict[str, Any]) -> str:
    """The Markdown record: the command, the machine, the checks, one row per minute."""
    result = report["result"]
    lines = [
        "# Soak test (`benchmarks/soak.py`)",
        "",
        f"Command: `{report['command']}` (code {report['code']['commit']}"
        + (", uncommitted app changes" if report["code"]["uncommitted_app_changes"] else "")
        + f"), {report['started_at']} to {report['finished_at']}.",
        "",
        f"Server: `{' '.join(report['server_command'][2:])}` (loopback only).",
        "",
        f"Machine: {report['machine']['cpus']} CPUs, {report['machine']['mem_total_mib']} MiB; "
        f"load averages at the start {report['machine']['load_at_start']}, at the end "
        f"{report['machine']['load_at_end']}. {report['machine']['note']}",
        "",
        f"Visits: {result['visits']['light']} light clients, {result['visits']['browser']} browser "
        f"visits (two Chromium processes); {result['legacy_clients']} legacy-protocol clients.",
        "",
        f"Voila VmRSS: {result['rss'].get('baseline_mib')} MiB at minute "
        f"{result['rss'].get('baseline_minute')}"
        f" (baseline), at most {result['rss'].get('max_mib')} MiB later: growth "
        f"{result['rss'].get('max_growth_mib')} MiB (bound {result['rss']['bound_mib']} MiB), "
        f"{result['rss'].get('end_growth_mib')} MiB at the end.",
        "",
        "Departed visitors' kernels gone after (s): "
        + "; ".join(
            f"{kind}: {g['count']} kernels, median {g['median']}, max {g['max']} (bound {g['bound']})"
            for kind, g in result["kernel_gone_after_leaving_s"].items()
        )
        + ".",
        "",
        "Failures: " + ("none." if not result["failures"] else ""),
        *[f"- {failure}" for failure in result["failures"]],
        "",
        "| minute | Voila VmRSS (MiB) | Voila CPU (s, cumulative) | kernels | visitors present "
        "| arrived | departed | failed | load (1 min) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report["minutes"]:
        label = f"{row['minute']} (after the last departures)" if row.get("after") else str(row["minute"])
        cells = [
            row["voila_rss_mib"],
            row["voila_cpu_s"],
            row["kernels"],
            row["visitors_present"],
            row["arrived"],
            row["departed"],
            row["failures"],
            row["load1"],
        ]
        lines.append(f"| {label} | " + " | ".join(_cell(c) for c in cells) + " |")
    lines += ["", f"Full record (every visitor, departure and legacy probe): `{report['json_name']}`.", ""]
    return "\n".join(lines)


def run_soak(soak: SoakConfig, command: str) -> dict[str, Any]:
    """Start the server, run the soak, stop everything; returns the report."""
    soak.check()
    report: dict[str, Any] = {
        "command": command,
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(soak).items()},
        "code": code_state(),
        "machine": {
            "cpus": os.cpu_count(),
            "mem_total_mib": mib(meminfo_bytes("MemTotal")),
            "load_at_start": load_average(),
            "note": "The machine was shared with other work while this ran (see the load averages).",
        },
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    workdir = Path(tempfile.mkdtemp(prefix="px-soak-"))
    children_before = descendants(os.getpid())
    state = SoakState()
    server: AppServer | None = None
    server_exit = None
    try:
        cfg = soak.load_config()
        server = start_server(cfg, workdir)
        report["server_command"] = app_command(cfg, server.port)
        asyncio.run(soak_run(soak, server, state))
    except (TimeoutError, RuntimeError) as exc:
        server_exit = f"{type(exc).__name__}: {exc}"
    except KeyboardInterrupt:
        server_exit = "stopped by a signal before the end"
    finally:
        if server is not None:
            report["server_log_tail"] = server.log_text()[-4000:]
            report["stopped"] = stop_server(server)
        report["own_children_killed"] = kill_own_children(children_before)
        shutil.rmtree(workdir, ignore_errors=True)
    report["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    report["machine"]["load_at_end"] = load_average()
    report["minutes"] = state.minutes
    report["legacy"] = state.legacy
    report["departures"] = [asdict(d) for d in state.departures]
    report["visitors"] = [asdict(v) for v in state.visitors]
    report["result"] = verdict(soak, state, server_exit)
    return report


def parse_args(argv: list[str] | None) -> SoakConfig:
    """The options as a checked :class:`SoakConfig`; exit status 2 with one line otherwise."""
    defaults = SoakConfig()
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__.split("\n\n")[0])
    for name, help_text in (
        ("minutes", "how long visitors come and go"),
        ("arrival_interval", "seconds between two light visitors' arrivals"),
        ("dwell", "mean seconds a light visitor stays after interacting (uniform, half to 1.5 times)"),
        ("browsers", "Chromium browsers visiting in turn (0 to 2)"),
        ("browser_dwell", "seconds a browser tab stays after interacting"),
        ("browser_pause", "seconds before a browser visits again"),
        ("legacy_every", "minutes between two legacy-protocol clients (0: none)"),
        ("cull_idle_timeout", "the server's --cull-idle-timeout"),
        ("cull_interval", "the server's --cull-interval"),
        ("max_kernels", "the server's --max-kernels"),
        ("warmup", "the minute whose Voila VmRSS is the baseline"),
        ("rss_bound", "MiB Voila's VmRSS may grow above the baseline"),
        ("seed", "seed of the light visitors' stays"),
    ):
        default = getattr(defaults, name)
        parser.add_argument(
            "--" + name.replace("_", "-"),
            type=type(default),
            default=default,
            help=f"{help_text} (default {default})",
        )
    parser.add_argument(
        "--out-dir", type=Path, default=defaults.out_dir, help="where soak.md and soak.json go"
    )
    args = parser.parse_args(argv)
    soak = SoakConfig(**vars(args))
    try:
        soak.check()
    except ValueError as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    return soak


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.soak``: run, write ``soak.md`` and ``soak.json``; 0 when every check held."""
    soak = parse_args(argv)
    command = "python -m benchmarks.soak " + " ".join(sys.argv[1:] if argv is None else argv)
    report = run_soak(soak, command.strip())
    soak.out_dir.mkdir(parents=True, exist_ok=True)
    report["json_name"] = "soak.json"
    (soak.out_dir / "soak.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    markdown = format_markdown(report)
    (soak.out_dir / "soak.md").write_text(markdown)
    print(markdown)
    return 1 if report["result"]["failures"] else 0


if __name__ == "__main__":
    import signal

    signal.signal(signal.SIGTERM, signal.default_int_handler)
    signal.signal(signal.SIGHUP, signal.default_int_handler)
    sys.exit(main())
