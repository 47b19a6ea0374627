"""``precision-explorer kernels``'s printing: the rows as a table (the failing ones told in
full), the summary of ``--save``, the ``--json`` document with the registry that answered."""

from __future__ import annotations

import argparse
from typing import Any

#: the columns of the rows table
TABLE_COLUMNS = ["backend", "op", "raw_op", "dtype", "device", "mode", "status", "phase", "explanation"]
#: what the ``phase`` of a failed run means (where it stopped), for the ``--save`` summary
PHASE_WORDS = {
    "op_build": "building the op failed, before any kernel was looked up",
    "xla_compile": "the graph was built, but XLA could not compile it",
    "kernel_lookup": "no kernel is registered for that device and dtype",
    "kernel_run": "a kernel was found, but it raised when it ran",
}


def print_result(result: Any, args: argparse.Namespace) -> None:
    """Print ``result`` for the terminal: the rows table (or, with ``--save``, its summary), the
    failing probes told in full when there are few of them (or ``--full``), and the footer."""
    from explorer.cli import print_table
    from explorer.textsafety import strip_control

    # texts may come from a snapshot made elsewhere: no control characters reach the terminal
    rows = [printable(r) for r in result.records(full=True)]
    if args.save is not None:
        _print_save_summary(rows, result, args.save)
        return
    here = getattr(args, "load", None) is None and getattr(args, "tf_version", None) is None
    if here:  # the installed registry answers a sweep made here (not a snapshot, not another release)
        sentences = answer_sentences(rows)
        for sentence in sentences:
            print(strip_control(sentence))
        if sentences:
            print()
    print_table(rows, TABLE_COLUMNS)
    failing = [r for r in rows if r["status"] != "ok" and r["mode"] != "registry"]
    if args.full or 0 < len(failing) <= 6:
        for r in failing:
            where = f" (failed at {r['phase']})" if r.get("phase") and r["phase"] != "ok" else ""
            print(
                f"\n--- {r['backend']} {r['op']} {r['dtype']} {r['device']} {r['mode']}: {r['status']}{where}"
            )
            if r["error"]:
                text = r["error"] if args.full else r["error"].strip().splitlines()[0]
                print(f"error: {text}")
            if r["disagreement"]:
                print(f"registry vs run: {r['disagreement']}")
            if r["workaround"]:
                print(f"workaround ({r['workaround_how']}):\n{r['workaround']}")
    print("\n" + strip_control(_footer(rows, result)))


#: the most answer sentences printed above the table (one per dtype and device of one op)
MAX_ANSWERS = 4


def answer_sentences(rows: list[dict[str, Any]]) -> list[str]:
    """The Kernels tab's answer (:func:`explorer.queries.answers.kernels_answer`: TensorFlow's
    kernel, since which release, the workaround) for each dtype and device of a one-op sweep,
    with the status the TensorFlow eager probe got here; none for several ops or more than
    :data:`MAX_ANSWERS` sentences."""
    from explorer.queries.answers import kernels_answer

    tf_rows = [r for r in rows if r["backend"] == "tensorflow" and r["device"] in ("CPU", "GPU")]
    if len({r["op"] for r in rows}) != 1 or not tf_rows:
        return []
    cells = list(dict.fromkeys((r["op"], r["dtype"], r["device"]) for r in tf_rows))
    if len(cells) > MAX_ANSWERS:
        return []
    sentences = []
    for op, dtype, device in cells:
        eager = next(
            (
                r
                for r in tf_rows
                if (r["op"], r["dtype"], r["device"], r["mode"]) == (op, dtype, device, "eager")
            ),
            None,
        )
        mode, probed = ("eager", str(eager["status"])) if eager is not None else ("registry", None)
        try:
            sentences.append(kernels_answer(op, dtype, device, mode, probed=probed))
        except (KeyError, ValueError):  # an op or dtype the registry cannot phrase: the table says it
            continue
    return sentences


def _footer(rows: list[dict[str, Any]], result: Any) -> str:
    """The last line of the table: counts, the TensorFlow release that answered and from where."""
    disagreements = sum(1 for r in rows if r["disagreement"])
    env = result.environment
    versions = env.get("versions")
    tf_version = env.get("tf_version") or (versions.get("tensorflow") if isinstance(versions, dict) else None)
    source = f"; registry: {env['registry_source']}" if env.get("registry_source") else ""
    return (
        f"{len(rows)} rows; {disagreements} declared/probed disagreements; "
        f"TensorFlow {tf_version}{source}; {result.probed} probed now, {result.cached} from cache"
    )


def _print_save_summary(rows: list[dict[str, Any]], result: Any, path: str) -> None:
    """What ``--save`` wrote, instead of its rows: counts per backend x mode x status, and the path."""
    from collections import Counter

    from explorer.cli import print_table, safe_text
    from explorer.outcome import STATUSES

    counts = Counter((r["backend"], r["mode"], r["status"]) for r in rows)
    present = {status for _, _, status in counts}
    statuses = [s for s in STATUSES if s in present] + sorted(present - set(STATUSES))
    groups = list(dict.fromkeys((r["backend"], r["mode"]) for r in rows))
    table = [
        {
            "backend": b,
            "mode": m,
            "rows": sum(counts[(b, m, s)] for s in statuses),
            **{s: counts[(b, m, s)] for s in statuses},
        }
        for b, m in groups
    ]
    if table:
        print_table(table, ["backend", "mode", "rows", *statuses])
        print()
    phases = Counter((r["mode"], r.get("phase") or "") for r in rows if r["mode"] != "registry")
    failed = {k: n for k, n in phases.items() if k[1] not in ("", "ok")}
    if failed:
        counts_text = "; ".join(f"{mode} {phase} {n}" for (mode, phase), n in sorted(failed.items()))
        print(safe_text(f"failed at: {counts_text}"))
        for phase in sorted({phase for _, phase in failed}):
            print(safe_text(f"  {phase}: {PHASE_WORDS.get(phase, 'a phase this release does not know')}"))
    print(safe_text(_footer(rows, result)))
    print(safe_text(f"saved {len(rows)} rows to {path}"))


def print_json_answered(result: Any, answered: dict[str, Any]) -> None:
    """:func:`explorer.cli.print_json`, with ``answered`` (which registry answered) in the environment."""
    import json
    import sys

    from explorer.cli import _json_default, json_document

    document = json_document(result)
    document["environment"].update(answered)
    json.dump(document, sys.stdout, indent=2, default=_json_default)
    sys.stdout.write("\n")


def printable(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with control characters stripped from its strings (newlines and tabs kept)."""
    from explorer.textsafety import strip_control

    return {k: strip_control(v, keep_newlines=True) if isinstance(v, str) else v for k, v in row.items()}
