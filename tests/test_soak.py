"""``benchmarks/soak.py`` (``python -m benchmarks.soak``): its checks and its record, on made-up
runs (a real soak takes 30 minutes: its record is ``benchmarks/results/soak.md``)."""

from __future__ import annotations

import pytest

from benchmarks.load_test.records import Visitor
from benchmarks.soak import Departure, SoakConfig, SoakState, format_markdown, parse_args, verdict


def made_up_run(rss: list[float]) -> SoakState:
    """Two visitors who came and left cleanly; one row a minute with the given Voila VmRSS."""
    state = SoakState()
    state.visitors = [Visitor(0, "light", interacted_s=5.0), Visitor(1, "browser", interacted_s=9.0)]
    state.departures = [
        Departure(0, "light", "k0", left_s=40.0, gone_s=70.0),
        Departure(1, "browser", "k1", left_s=50.0, gone_s=1.0),
    ]
    state.minutes = [
        {
            "minute": m,
            "voila_rss_mib": r,
            "voila_cpu_s": 1.0,
            "kernels": 1,
            "visitors_present": 1,
            "arrived": 2,
            "departed": 0,
            "failures": 0,
            "load1": 1.0,
        }
        for m, r in enumerate(rss)
    ]
    state.legacy = [{"minute": 1, "refused": True, "status": 400}]
    return state


def test_a_clean_run_passes_and_its_record_has_a_row_a_minute() -> None:
    soak = SoakConfig(minutes=4, warmup=1, rss_bound=64.0)
    state = made_up_run([100.0, 150.0, 170.0, 213.9, 160.0])
    result = verdict(soak, state, None)
    assert result["failures"] == []
    assert result["rss"]["baseline_mib"] == 150.0 and result["rss"]["max_growth_mib"] == 63.9
    assert result["visits"] == {"light": 1, "browser": 1}
    report = {
        "command": "python -m benchmarks.soak --minutes 4",
        "code": {"commit": "abc1234", "uncommitted_app_changes": False},
        "started_at": "t0",
        "finished_at": "t1",
        "server_command": ["python", "-m", "explorer", "app", "--no-browser"],
        "machine": {"cpus": 2, "mem_total_mib": 1.0, "load_at_start": [1], "load_at_end": [2], "note": ""},
        "minutes": state.minutes,
        "result": result,
        "json_name": "soak.json",
    }
    text = format_markdown(report)
    rows = [line for line in text.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [row.split(" | ")[1] for row in rows] == ["100.0", "150.0", "170.0", "213.9", "160.0"]
    assert "Failures: none." in text


def test_each_broken_check_is_a_failure() -> None:
    soak = SoakConfig(minutes=4, warmup=1, rss_bound=64.0)
    state = made_up_run([100.0, 150.0, 214.1, 160.0])
    state.departures.append(Departure(2, "light", "k2", left_s=60.0, lingering=True))
    state.departures.append(Departure(3, "browser", "k3", left_s=200.0))  # never seen gone
    state.visitors.append(Visitor(2, "light"))
    state.visitors[-1].fail("timeout", "first view")
    state.legacy.append({"minute": 2, "refused": False, "status": 101})
    failures = verdict(soak, state, "RuntimeError: the server exited with status 1")["failures"]
    assert len(failures) == 5, failures
    assert "grew 64.1 MiB" in failures[0]
    assert failures[1].startswith("2 departed visitors' kernels") and "#2 (light)" in failures[1]
    assert "#2 (light) timeout" in failures[2]
    assert "1 legacy-protocol clients were not refused" in failures[3]
    assert "exited with status 1" in failures[4]


@pytest.mark.parametrize("options", [["--minutes", "0"], ["--browsers", "3"], ["--warmup", "40"]])
def test_bad_options_exit_2_with_one_line(options: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        parse_args(options)
    assert stop.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
