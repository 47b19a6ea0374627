"""The report of a run: the summary (medians, p95s, memory, failures, culling) computed from the
per-visitor records, the text table printed on stdout, and the JSON file."""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path
from typing import Any

from benchmarks.load_test.records import Visitor


def percentile(values: list[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) with linear interpolation between closest ranks; None when empty.

    >>> percentile([1.0, 2.0, 3.0, 4.0], 0.5), percentile([5.0], 0.95), percentile([], 0.5)
    (2.5, 5.0, None)
    """
    ordered = sorted(values)
    if not ordered:
        return None
    rank = (len(ordered) - 1) * q
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return round(ordered[low] + (ordered[high] - ordered[low]) * (rank - low), 3)


def stats(values: list[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "median": percentile(values, 0.5),
        "p95": percentile(values, 0.95),
        "max": round(max(values), 3) if values else None,
    }


def summarize(visitors: list[Visitor], result: dict[str, Any]) -> dict[str, Any]:
    """Medians, p95s, memory, failures and culling from the per-visitor records."""
    summary: dict[str, Any] = {"first_view_s": {}, "interaction_view_s": {}, "interaction_reply_s": {}}
    for kind in ("browser", "light", "all"):
        chosen = [v for v in visitors if kind in ("all", v.kind)]
        summary["first_view_s"][kind] = stats([v.first_view_s for v in chosen if v.first_view_s is not None])
        steps = [i for v in chosen for i in v.interactions]
        summary["interaction_view_s"][kind] = stats([i.view_s for i in steps if i.view_s is not None])
        summary["interaction_reply_s"][kind] = stats([i.reply_s for i in steps if i.reply_s is not None])
    summary["page_s"] = {
        "light": stats([v.page_s for v in visitors if v.kind == "light" and v.page_s is not None])
    }
    rss = [v.kernel_rss_mib for v in visitors if v.kernel_rss_mib is not None]
    summary["memory"] = {
        "kernel_rss_after_own_interactions_mib": {
            "n": len(rss),
            "mean": round(sum(rss) / len(rss), 1) if rss else None,
            "max": max(rss) if rss else None,
            "total": round(sum(rss), 1),
        },
        "kernels_with_tensorflow_after_own_interactions": sum(bool(v.kernel_tensorflow) for v in visitors),
        "when_all_had_interacted": {
            k: v for k, v in (result.get("memory_after_interactions") or {}).items() if k != "kernel_rss_mib"
        },
        "peak_kernels_total_mib": max(
            (s["kernels_rss_mib"] or 0 for s in result.get("samples", [])), default=None
        ),
        "peak_voila_mib": max((s["voila_rss_mib"] or 0 for s in result.get("samples", [])), default=None),
        "min_mem_available_mib": min(
            (s["mem_available_mib"] for s in result.get("samples", []) if s["mem_available_mib"] is not None),
            default=None,
        ),
        "peak_kernels": max((s["kernels"] for s in result.get("samples", [])), default=None),
    }
    failures: dict[str, int] = {}
    for v in visitors:
        if v.failure:
            failures[v.failure] = failures.get(v.failure, 0) + 1
    summary["failures"] = {"total": sum(failures.values()), "by_kind": failures}
    steps = [i for v in visitors for i in v.interactions]
    summary["interactions"] = {
        "done": sum(1 for i in steps if not i.error),
        "light_redrawn": sum(1 for i in steps if i.redrawn),
        "light_echoed": sum(
            1 for v in visitors if v.kind == "light" for i in v.interactions if i.echo_s is not None
        ),
        "op_changed": sum(1 for v in visitors if v.final_op == result["config"]["op"] != v.initial_op),
    }
    summary["app_errors_shown"] = sum(v.app_errors_shown for v in visitors)
    summary["culling"] = result.get("culling")
    cull_lines = (result.get("server") or {}).get("cull_lines", [])
    summary["culled_by_connections"] = {
        n: sum(1 for line in cull_lines if line.endswith(f"with {n} connections"))
        for n in sorted({line.rsplit(" ", 2)[-2] for line in cull_lines})
    }
    summary["processes_left"] = (result.get("stopped") or {}).get("processes_left")
    summary["stopped_by"] = result.get("stopped_by")
    return summary


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}{unit}"
    return f"{value}{unit}"


def _row(label: str, s: dict[str, Any]) -> str:
    return f"{label:<34}{s['n']:>4}{_fmt(s['median']):>9}{_fmt(s['p95']):>9}{_fmt(s['max']):>9}"


def format_report(result: dict[str, Any]) -> str:
    """The text table."""
    cfg, summary, code, machine = result["config"], result["summary"], result["code"], result["machine"]
    kinds = {k: sum(1 for v in result["visitors"] if v["kind"] == k) for k in ("browser", "light")}
    command = (result.get("server") or {}).get("command", [])[1:]
    changes = (
        f" + uncommitted app changes ({code['diff_stat_summary']})" if code["uncommitted_app_changes"] else ""
    )
    lines = [
        f"load test: {cfg['visitors']} visitors ({kinds['browser']} browser, {kinds['light']} light), "
        f"arrivals {result['arrivals']}, after interacting: {cfg['after']}",
        f"server: python {' '.join(shlex.quote(a) for a in command)}",
        f"code: {code['commit']}{changes}",
        f"machine: {machine['cpus']} CPUs, {machine['mem_total_mib']} MiB; load "
        f"{machine['load_at_start']} at start, {machine.get('load_at_end')} at end",
        *(
            [
                f"pre-heated pool: {cfg['preheat']} kernels ran the notebook {result['pool_warm_s']} s after "
                f"the server started (load {machine.get('load_when_pool_warm')}); visitors came after that"
            ]
            if cfg.get("preheat") and "pool_warm_s" in result
            else []
        ),
        "",
        f"{'seconds':<34}{'n':>4}{'median':>9}{'p95':>9}{'max':>9}",
    ]
    rows = [
        ("first view", "first_view_s"),
        ("interaction (view)", "interaction_view_s"),
        ("interaction (reply)", "interaction_reply_s"),
    ]
    for label, key in rows:
        for kind in ("browser", "light", "all"):
            if summary[key][kind]["n"] or kind == "all":
                lines.append(_row(f"{label} {kind}", summary[key][kind]))
    if summary["page_s"]["light"]["n"]:
        lines.append(_row("page received light", summary["page_s"]["light"]))
    memory = summary["memory"]
    own = memory["kernel_rss_after_own_interactions_mib"]
    when = memory["when_all_had_interacted"]
    mb = " MiB"
    lines += [
        "",
        f"memory per visitor (kernel VmRSS after its interactions): mean {_fmt(own['mean'], mb)}, "
        f"max {_fmt(own['max'], mb)}, total {_fmt(own['total'], mb)} over {own['n']} kernels; "
        f"TensorFlow loaded in {memory['kernels_with_tensorflow_after_own_interactions']}",
        f"when all had interacted: {when.get('kernels')} kernels, "
        f"total {_fmt(when.get('kernels_total_mib'), mb)}, mean {_fmt(when.get('kernel_mean_mib'), mb)}, "
        f"max {_fmt(when.get('kernel_max_mib'), mb)}, TensorFlow in {when.get('kernels_with_tensorflow')}; "
        f"Voila {_fmt(when.get('voila_rss_mib'), mb)}",
        f"peak: kernels total {_fmt(memory['peak_kernels_total_mib'], mb)}, "
        f"Voila {_fmt(memory['peak_voila_mib'], mb)}, {memory['peak_kernels']} kernels; "
        f"lowest MemAvailable {_fmt(memory['min_mem_available_mib'], mb)}",
        f"failures: {summary['failures']['total']} {summary['failures']['by_kind'] or ''}; "
        f"app error messages shown: {summary['app_errors_shown']}",
        f"interactions: {summary['interactions']}; "
        f"client event loop lag max {_fmt(result.get('client_loop_lag_max_s'), ' s')}",
    ]
    culling = summary["culling"]
    if culling and culling["reached_zero"]:
        lines.append(
            f"culling: {culling['kernels_at_start']} {'visitor ' if cfg.get('preheat') else ''}kernels -> 0 "
            f"in {culling['seconds']} s after the "
            f"last visitor went idle (bound {culling['bound_s']:.0f} s; "
            f"cull-idle-timeout {cfg['cull_idle_timeout']} s, cull-interval {cfg['cull_interval']} s)"
        )
    elif culling:
        lines.append(
            f"culling: {culling['kernels_left']} kernels still running after {culling['bound_s']:.0f} s"
        )
    else:
        lines.append("culling: not checked (the run stopped before every visitor had interacted)")
    lines.append(f"culled (server log), by open connections: {summary['culled_by_connections']}")
    stopped = summary["stopped_by"] or "end of run"
    lines.append(f"processes left after stop: {summary['processes_left']}; stopped by: {stopped}")
    return "\n".join(lines)


def write_json(result: dict[str, Any], path: Path) -> None:
    """The full report, every visitor and sample included, as JSON at ``path`` (its folder made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1, default=str) + "\n")
