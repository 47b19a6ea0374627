"""Score the structural error reader on an error-text corpus (issue 34): framework, op, dtypes,
device, all four, and "empty" answers, per source, with the time the reading takes per text.

    python benchmarks/explain_corpus.py                       # tests/data/error_corpus/dev.jsonl
    python benchmarks/explain_corpus.py --split heldout       # the held-out half (score it only at the end)
    python benchmarks/explain_corpus.py --file PATH --misses  # any corpus file, each miss printed

The scoring rules are those of the corpus schema: framework equal (None == none named); op right
when the reader's catalog op equals the expected op, or its raw op (module prefix removed) equals
it case-insensitively, or both are None; dtypes right when the sets are equal; device right when
the type is equal and, where the expectation gives a compute capability, that is equal too;
"empty" when the reader gives no framework, dtype or device although the expectation names one.
The kind (missing_kernel, hardware_gate, ...) is counted apart, outside "all four".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CORPUS = ROOT / "tests" / "data" / "error_corpus"


def load(path: Path) -> list[dict[str, Any]]:
    """The corpus rows of ``path`` (one JSON object a line; blank lines skipped)."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rows.append(json.loads(line))
    return rows


def _op_right(reading: dict[str, Any], expected: str | None) -> bool:
    op = reading["op"]
    if expected is None:
        return op["raw"] is None and op["name"] is None
    if op["name"] == expected:
        return True
    raw = op["raw"]
    return raw is not None and raw.rsplit(".", 1)[-1].lower() == expected.lower()


def score_row(row: dict[str, Any], reading: dict[str, Any]) -> dict[str, bool]:
    """Which of framework, op, dtype, device the reading gets right for ``row``, and ``all``/``empty``."""
    exp = row["expected"]
    device = exp.get("device") or {}
    got_device = reading["device"]
    framework = reading["framework"] == exp.get("framework")
    op = _op_right(reading, exp.get("op"))
    dtypes = {d["name"] for d in reading["dtypes"]} == set(exp.get("dtypes") or [])
    device_right = got_device["type"] == device.get("type") and (
        device.get("compute_capability") is None
        or got_device["compute_capability"] == device["compute_capability"]
    )
    names_something = bool(exp.get("framework") or exp.get("dtypes") or device.get("type"))
    empty = names_something and not (reading["framework"] or reading["dtypes"] or got_device["type"])
    return {
        "framework": framework,
        "op": op,
        "dtype": dtypes,
        "device": device_right,
        "all": framework and op and dtypes and device_right,
        "empty": empty,
        "kind": reading.get("kind") == exp.get("kind"),
    }


def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Read every row's text and score it: totals, per-source totals, misses and seconds per text."""
    from explorer.analysis.error_text import read_text

    totals = dict.fromkeys(("framework", "op", "dtype", "device", "all", "empty", "kind"), 0)
    per_source: dict[str, dict[str, int]] = {}
    misses = []
    seconds: list[float] = []
    for row in rows:
        began = time.perf_counter()
        reading = read_text(row["text"]).to_dict()
        seconds.append(time.perf_counter() - began)
        result = score_row(row, reading)
        source = per_source.setdefault(row["source"], dict.fromkeys(("n", *totals), 0))
        source["n"] += 1
        for key, value in result.items():
            totals[key] += int(value)
            source[key] += int(value)
        if not result["all"]:
            misses.append((row, reading, result))
    return {"n": len(rows), "totals": totals, "per_source": per_source, "misses": misses, "seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    """Print the score of one corpus file."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=("dev", "heldout"), default="dev")
    parser.add_argument("--file", type=Path, default=None, help="a corpus file (overrides --split)")
    parser.add_argument("--misses", action="store_true", help="print every text not right on all four")
    args = parser.parse_args(argv)
    path = args.file or CORPUS / f"{args.split}.jsonl"
    if not path.is_file():
        print(
            f"no corpus file at {path} (the corpus halves live in tests/data/error_corpus/)", file=sys.stderr
        )
        return 2
    rows = load(path)
    from explorer.analysis.error_text import read_text

    read_text("warm-up: import the catalog once")  # the first reading builds the op-name tables
    result = score(rows)
    n = max(result["n"], 1)
    print(f"corpus: {path} ({result['n']} texts)")
    for key in ("framework", "op", "dtype", "device", "all"):
        value = result["totals"][key]
        print(f"  {key + ' right':<16} {value:>4} / {result['n']}  ({100 * value / n:.1f}%)")
    print(f"  {'empty answers':<16} {result['totals']['empty']:>4}")
    kind = result["totals"]["kind"]
    print(f"  {'kind right':<16} {kind:>4} / {result['n']}  ({100 * kind / n:.1f}%, not part of all four)")
    seconds = sorted(result["seconds"])
    if seconds:
        mean = sum(seconds) / len(seconds)
        print(
            f"  reading time per text: mean {1000 * mean:.2f} ms, "
            f"median {1000 * seconds[len(seconds) // 2]:.2f} ms, max {1000 * seconds[-1]:.2f} ms"
        )
    if rows:
        joined = "\n".join(row["text"] for row in rows)
        long_text = (joined * (990_000 // max(len(joined), 1) + 1))[:990_000]
        while len(long_text.encode()) > 990_000:  # under the reader's byte cap, whatever the letters
            long_text = long_text[: len(long_text) - 10_000]
        began = time.perf_counter()
        read_text(long_text)
        print(f"  one 990,000-character paste (the texts joined): {time.perf_counter() - began:.2f} s")
    print("\nper source: n framework op dtype device all empty")
    for source, counts in sorted(result["per_source"].items()):
        cells = " ".join(
            f"{counts[k]:>3}" for k in ("n", "framework", "op", "dtype", "device", "all", "empty")
        )
        print(f"  {source:<22} {cells}")
    if args.misses:
        print("\nmisses:")
        for row, reading, res in result["misses"]:
            wrong = [k for k in ("framework", "op", "dtype", "device") if not res[k]]
            exp = row["expected"]
            got = {
                "framework": reading["framework"],
                "op": [reading["op"]["raw"], reading["op"]["name"]],
                "dtype": sorted(d["name"] for d in reading["dtypes"]),
                "device": [reading["device"]["type"], reading["device"]["compute_capability"]],
            }
            want = {
                "framework": exp.get("framework"),
                "op": exp.get("op"),
                "dtype": sorted(exp.get("dtypes") or []),
                "device": [
                    (exp.get("device") or {}).get("type"),
                    (exp.get("device") or {}).get("compute_capability"),
                ],
            }
            print(f"- {row['id']}: " + "; ".join(f"{k}: got {got[k]} want {want[k]}" for k in wrong))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
