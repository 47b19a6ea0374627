"""The structural reader scored on the development half of the error-text corpus (issue 34).

The expectations in ``tests/data/error_corpus/dev.jsonl`` were written by the person who collected
each text from its public thread (its URL is on the row), reading the text, not this code: they are
the oracle.  The held-out half is scored only by ``benchmarks/explain_corpus.py --split heldout``.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.explain_corpus import load, score, score_row

DEV = Path(__file__).parent / "data" / "error_corpus" / "dev.jsonl"
#: the least share of dev texts right on framework, op, dtype and device together (148 of the
#: 157 texts now: python benchmarks/explain_corpus.py --split dev)
ALL_FOUR_AT_LEAST = 0.94
#: the least share of dev texts whose kind (missing_kernel, hardware_gate, ...) is read right
KIND_AT_LEAST = 0.75


def test_dev_corpus_is_read_right_on_all_four_and_never_empty() -> None:
    rows = load(DEV)
    assert len(rows) >= 40
    result = score(rows)
    missed = [row["id"] for row, _, _ in result["misses"]]
    assert result["totals"]["all"] >= ALL_FOUR_AT_LEAST * len(rows), missed
    assert result["totals"]["empty"] == 0
    assert result["totals"]["kind"] >= KIND_AT_LEAST * len(rows)


def test_scoring_follows_the_schema_rules() -> None:
    """The scorer itself, on hand-made readings: a wrong compute capability is a miss only when the
    expectation gives one; the raw op counts with its module prefix removed, in any case."""
    row = {
        "expected": {
            "framework": "torch",
            "op": "_scaled_mm",
            "dtypes": ["float8_e4m3fn"],
            "device": {"type": "cuda", "compute_capability": None},
        }
    }
    reading = {
        "framework": "torch",
        "op": {"raw": "torch._Scaled_MM", "name": None},
        "dtypes": [{"name": "float8_e4m3fn"}],
        "device": {"type": "cuda", "compute_capability": "8.6"},
    }
    assert score_row(row, reading)["all"]
    row["expected"]["device"]["compute_capability"] = "8.9"
    assert not score_row(row, reading)["device"]
    reading["dtypes"] = []
    nothing = {"type": None, "compute_capability": None}
    result = score_row(row, {**reading, "framework": None, "device": nothing})
    assert result["empty"] and not result["dtype"]
    assert json.dumps(result)
