"""Issue 34 (4): Explain answers first, then runs: the reading is out before the workaround's
run and check begin, in the CLI and in the Explain tab.

Oracles: what stdout holds at the moment the workaround's run is asked for (Reading.finish
replaced by a stand-in that records it, and that waits on an event in the tab's case); the
words of the issue for what the reading holds."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

SLOW_CONV = "RuntimeError: \"slow_conv2d_cpu\" not implemented for 'Half'"


def test_read_error_runs_nothing_and_marks_the_workaround_pending(monkeypatch: pytest.MonkeyPatch) -> None:
    from explorer.queries import diagnose as module

    def no_sandbox(*args: Any) -> Any:
        raise AssertionError("the reading ran something")

    monkeypatch.setattr(module, "_sandbox_call", no_sandbox)
    reading = module.read_error(SLOW_CONV)
    result = reading.result
    assert (result["framework"], result["op"], result["dtype"], result["device"]) == (
        "torch",
        "conv2d",
        "float16",
        "CPU",
    )
    assert result["workaround"]["pending"] and result["workaround"]["check"]["status"] == "pending"
    assert module.PENDING in result["explanation"]
    written = reading.finish(run_workaround=False)["workaround"]
    assert not written["pending"] and written["check"]["summary"].startswith("not checked: ")


def test_the_cli_prints_the_reading_before_the_workaround_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from explorer.cli import main
    from explorer.queries.diagnose import Reading

    seen: list[str] = []
    finish = Reading.finish

    def recording_finish(self: Reading, run_workaround: bool = True) -> dict[str, Any]:
        seen.append(capsys.readouterr().out)  # what was printed when the run was asked for
        return finish(self, run_workaround=False)

    monkeypatch.setattr(Reading, "finish", recording_finish)
    assert main(["explain", SLOW_CONV]) == 0
    rest = capsys.readouterr().out
    assert len(seen) == 1
    before = seen[0]
    for label in ("framework", "op", "dtype", "device", "explanation"):
        assert f"\n{label} " in "\n" + before, label
    assert "\nworkaround " not in before and "\ncheck " not in before
    assert rest.startswith("workaround ") and "\ncheck        not checked: " in rest


def test_no_run_prints_the_reading_only(capsys: pytest.CaptureFixture[str]) -> None:
    from explorer.cli import main

    assert main(["explain", "--no-run", SLOW_CONV]) == 0
    out = capsys.readouterr().out
    assert "conv2d" in out and "explanation" in out
    assert "\nworkaround " not in out and "torch.tensor(" not in out


@pytest.fixture()
def held_finish(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Reading.finish held until the event is set (then it writes the workaround, runs nothing)."""
    from explorer.queries.diagnose import Reading

    release = threading.Event()
    finish = Reading.finish

    def held(self: Reading, run_workaround: bool = True) -> dict[str, Any]:
        assert release.wait(60)
        return finish(self, run_workaround=False)

    monkeypatch.setattr(Reading, "finish", held)
    yield release
    release.set()


def _until(condition: Any, seconds: float = 60) -> None:
    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, "not shown"
        time.sleep(0.01)


def test_the_tab_shows_the_reading_while_the_workaround_runs(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, held_finish: threading.Event
) -> None:
    monkeypatch.setenv("PX_CACHE_DIR", str(tmp_path))
    import explorer

    app = explorer.App(load_tensorflow=False, tab="explain")
    tab = app.tab("explain")
    tab.text.value = SLOW_CONV
    tab.button.click()
    _until(lambda: "px-explain-facts" in str(tab.details.value))
    shown = str(tab.details.value)
    assert tab.job is not None and tab.job.running  # the workaround has not finished
    assert "conv2d" in shown and "float16" in shown
    assert "running the workaround and checking it against the float64 reference" in shown
    assert "px-explain-check" not in shown and "<pre" not in shown
    held_finish.set()
    with contextlib.suppress(RuntimeError):
        tab.job.wait(60)
    done = str(tab.details.value)
    assert "px-explain-pending" not in done and "px-explain-check" in done and "<pre" in done
    assert "not checked: " in done  # the stand-in ran nothing, and the tab says so
