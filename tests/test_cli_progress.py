"""The CLI's progress on stderr (a tqdm bar only on a terminal, never with --json) and a missing
framework said in words in `hardware` and `speed`, counted apart from the cells measured."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from explorer.backends import get_backend
from explorer.cli import main
from explorer.cli._progress import bar, elapsed, wanted
from explorer.queries.speed import plan

PYTORCH_MISSING = "PyTorch is not installed: pip install -e '.[torch]'"


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_progress_only_on_a_terminal_and_never_with_json() -> None:
    assert wanted(False, Terminal()) and not wanted(True, Terminal())
    assert not wanted(False, io.StringIO())  # piped
    screen = Terminal()
    cells = bar(3, "timing", "cell", True, stream=screen)
    assert cells is not None
    cells.update(2)
    cells.refresh()  # tqdm draws at most every 0.1 s on its own
    cells.close()
    assert "timing" in screen.getvalue() and "2/3" in screen.getvalue()
    assert bar(3, "timing", "cell", False) is None and bar(0, "timing", "cell", True) is None
    screen = Terminal()
    with elapsed("checking the model", True, stream=screen):
        pass
    assert "checking the model" in screen.getvalue()
    quiet = Terminal()
    with elapsed("checking the model", False, stream=quiet):
        pass
    assert quiet.getvalue() == ""


@pytest.fixture
def no_pytorch(monkeypatch: pytest.MonkeyPatch) -> None:
    """PyTorch reported as not installed (its backend's find_spec answer)."""
    monkeypatch.setattr(type(get_backend("torch")), "is_installed", lambda self: False)


def test_speed_without_pytorch_says_so_and_counts_its_cells_apart(
    no_pytorch: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["speed", "--op", "exp", "--backend", "torch", "--dtype", "float16"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == PYTORCH_MISSING
    assert "not_installed" not in out
    torch_cells = len(plan(["exp"], ["float16"], ["torch"], ["eager", "xla"]))  # float32 and float16
    assert torch_cells == 2
    assert err.strip().splitlines()[-1] == (
        f"measured 0 of 0 cells in {err.split(' in ')[1].split(' s')[0]} s; {torch_cells} more not timed "
        f"({PYTORCH_MISSING})"
    )


def test_speed_json_without_pytorch_keeps_stdout_json(
    no_pytorch: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["speed", "--op", "exp", "--backend", "torch", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["result"] == [] and PYTORCH_MISSING in err


def test_hardware_without_pytorch_says_so_in_words(
    no_pytorch: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def never(*_: Any) -> Any:
        raise AssertionError("PyTorch's library probe started without PyTorch")

    monkeypatch.setattr("explorer.queries.hardware.library_probe", never)
    assert main(["hardware"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(PYTORCH_MISSING)
    assert "ModuleNotFoundError" not in out and "PyTorch sees no CUDA device" not in out
    assert main(["hardware", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["result"]["error"].startswith(PYTORCH_MISSING)
