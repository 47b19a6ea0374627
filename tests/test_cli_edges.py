"""The command line's edges (issue 24, items 3 and 4): usage errors are one line, output paths
are refused rather than made up, and rows that did not run say why and what to do.

- Every verb's usage error (an unknown option, a missing value, a bad value of each typed
  option, a missing required one) is exactly one line on stderr that points at the verb's
  ``--help``, with exit status 2, as every ``--help`` and the README promise.
- ``kernels --save`` and ``train --out`` into a folder that does not exist exit 2 with one
  line and create nothing; a failed save leaves the named file as it was.
- ``kernels`` rows of a backend that is not installed (made absent for real in this process:
  ``sys.modules[name] = None`` is how Python marks a module that cannot be imported) say how
  to install it, with an extra that pyproject.toml declares.
- ``accuracy`` says why a backend's columns are empty; the ``--save`` summary says what its
  phases mean without pointing at Python internals.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from explorer.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.usefixtures("cache_dir")  # tests/conftest.py


def _run(capsys: Any, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def _verb_parsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no verbs")


def _usage_errors() -> list[tuple[str, list[str]]]:
    """(verb, argv) refused by argparse (no arguments at all print the help: test_validation):
    for every verb an unknown option and, for each of its options that takes a value, that option
    without one and with a value no check takes."""
    cases: list[tuple[str, list[str]]] = [("", ["nosuchverb"]), ("", ["--nosuch"]), ("", ["--verbose"])]
    for verb, sub in sorted(_verb_parsers().items()):
        # lab and app: --dry-run, so that a case argparse took would print, not start a server
        start = [verb, "--dry-run"] if verb in ("lab", "app") else [verb]
        cases.append((verb, [*start, "--no-such-option"]))
        missing_value = False
        for action in sub._actions:
            if not action.option_strings or action.nargs in (0, "?") or action.help == argparse.SUPPRESS:
                continue
            flag = action.option_strings[-1]
            if not missing_value:  # the same argparse error for every option: one per verb
                cases.append((verb, [*start, flag]))  # expected one argument
                missing_value = True
            if action.type is not None or action.choices is not None:
                cases.append((verb, [*start, flag, "@@not a value@@"]))
        if any(a.required and a.option_strings for a in sub._actions):
            cases.append((verb, [verb]))
    return cases


USAGE_ERRORS = _usage_errors()


def test_the_cases_cover_every_verb() -> None:
    assert {verb for verb, _ in USAGE_ERRORS} == {"", *_verb_parsers()}
    assert len(USAGE_ERRORS) > 40


@pytest.mark.parametrize(
    ("verb", "argv"), USAGE_ERRORS, ids=[" ".join(a) or "(none)" for _, a in USAGE_ERRORS]
)
def test_a_usage_error_is_exactly_one_line_pointing_at_help(capsys: Any, verb: str, argv: list[str]) -> None:
    """Issue 24, item 4: argparse printed its usage block (3 to 9 lines) before the error line.
    A value refused by argparse points at ``--help``; one the verb refuses (``app --notebook``
    naming no notebook) is the verb's one line."""
    try:
        code, by_argparse = main(list(argv)), False
    except SystemExit as exc:
        code, by_argparse = exc.code, True
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert out == ""
    prog = f"precision-explorer {verb}".rstrip()
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith(f"{prog}: error: "), err
    assert err.rstrip("\n").endswith(f"(see {prog} --help)") == by_argparse, err


def test_every_help_promises_one_line(capsys: Any) -> None:
    """What the tests above check is what every verb's ``--help`` and the README say."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "exit status 2, one line on stderr" in readme
    for verb in ["", *_verb_parsers()]:
        code, out, _ = _run(capsys, *([verb] if verb else []), "--help")
        assert code == 0 and "2    usage: a bad option, value or name (one line on stderr)" in out, verb


# ------------------------------------------------------------------ output paths


@pytest.fixture(scope="module")
def numpy_snapshot(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A real snapshot, made once without probing (no worker to start): the registry rows of
    exp and log in float16 and bfloat16 of the newest TensorFlow release shipped."""
    import contextlib
    import io

    from explorer.analysis.releases import shipped_releases

    folder = tmp_path_factory.mktemp("snapshot")
    path = folder / "a.json"
    argv = ["kernels", "--op", "exp", "--op", "log", "--dtype", "float16", "--dtype", "bfloat16"]
    argv += [
        "--backend",
        "tensorflow",
        "--mode",
        "registry",
        "--tf-version",
        shipped_releases()[-1],
        "--device",
        "CPU",
    ]
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(io.StringIO()):
        patch.setenv("PX_CACHE_DIR", str(folder / "cache"))
        assert main([*argv, "--save", str(path)]) == 0
    return path.read_bytes()


def _numpy_snapshot(snapshot: bytes, path: Path) -> Path:
    path.write_bytes(snapshot)
    return path


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_save_into_a_missing_folder_is_refused_and_creates_nothing(
    capsys: Any, tmp_path: Path, numpy_snapshot: bytes
) -> None:
    """Issue 24, item 4: ``kernels --save /no/such/dir/x.json`` made the missing folders."""
    snap = _numpy_snapshot(numpy_snapshot, tmp_path / "a.json")
    before = _tree(tmp_path)
    for target in (tmp_path / "no" / "such" / "x.json", tmp_path / "missing" / "x.json"):
        code, out, err = _run(capsys, "kernels", "--load", str(snap), "--save", str(target))
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and err.startswith("precision-explorer kernels: error: "), err
        assert "does not exist" in err, err
        assert _tree(tmp_path) == before  # no folder made, no temporary file left
    # a file where a folder should be
    code, _, err = _run(capsys, "kernels", "--load", str(snap), "--save", str(snap / "x.json"))
    assert code == 2 and "is not a directory" in err and _tree(tmp_path) == before
    # --save cannot come with --diff (which wrote nothing and said nothing of it)
    code, _, err = _run(capsys, "kernels", "--diff", str(snap), str(snap), "--save", str(tmp_path / "d.json"))
    assert code == 2 and "--save cannot be combined with --diff" in err
    assert _tree(tmp_path) == before


def test_a_failed_save_leaves_the_named_file_as_it_was(
    capsys: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, numpy_snapshot: bytes
) -> None:
    """The snapshot is written to a temporary file and renamed: a failure while writing (here,
    os.replace refusing) leaves the old file byte for byte and no temporary file."""
    import os

    snap = _numpy_snapshot(numpy_snapshot, tmp_path / "a.json")
    target = tmp_path / "b.json"
    target.write_bytes(b"the user's own file\n")
    before = _tree(tmp_path)

    def refuse(src: Any, dst: Any) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    code, _, err = _run(capsys, "kernels", "--load", str(snap), "--save", str(target))
    assert code == 2 and "Permission denied" in err and err.count("\n") == 1
    assert target.read_bytes() == b"the user's own file\n"
    assert _tree(tmp_path) == before


def test_save_into_an_existing_folder_still_works(capsys: Any, tmp_path: Path, numpy_snapshot: bytes) -> None:
    snap = _numpy_snapshot(numpy_snapshot, tmp_path / "a.json")
    again = tmp_path / "b.json"
    code, out, _ = _run(capsys, "kernels", "--load", str(snap), "--save", str(again))
    rows = json.loads(snap.read_text())["rows"]
    assert code == 0 and out.splitlines()[-1] == f"saved {len(rows)} rows to {again}"
    assert json.loads(again.read_text())["rows"] == json.loads(snap.read_text())["rows"]


def test_train_out_into_a_missing_parent_is_refused_before_training(capsys: Any, tmp_path: Path) -> None:
    """``train --out`` makes DIR itself (its help says so) but not missing folders above it;
    refused before TensorFlow loads."""
    before = _tree(tmp_path)
    code, out, err = _run(capsys, "train", "--out", str(tmp_path / "no" / "such" / "plots"))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "does not exist" in err, err
    assert _tree(tmp_path) == before
    (tmp_path / "file").write_text("x")
    code, _, err = _run(capsys, "train", "--out", str(tmp_path / "file"))
    assert code == 2 and "not a directory" in err and (tmp_path / "file").read_text() == "x"


# ------------------------------------------------------------------ rows that did not run


def _declared_extras() -> dict[str, list[str]]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return data["project"]["optional-dependencies"]


@pytest.mark.parametrize(("backend", "modules"), [("jax", ("jax", "jaxlib")), ("torch", ("torch",))])
def test_a_backend_that_is_not_installed_says_how_to_install_it(
    capsys: Any, monkeypatch: pytest.MonkeyPatch, backend: str, modules: tuple[str, ...]
) -> None:
    """Issue 24, item 3: jax's ``not_installed`` rows gave no install hint (torch's did).  The
    hint's extra is one pyproject.toml declares, and that extra requires the backend."""
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)  # import fails: not installed, for this process
    argv = ["kernels", "--backend", backend, "--op", "exp", "--dtype", "float16", "--mode", "eager"]
    code, out, err = _run(capsys, *argv, "--no-cache", "--json")
    assert code == 0, err
    rows = json.loads(out)["result"]
    assert rows and all(r["status"] == "not_installed" for r in rows)
    for r in rows:
        hint = re.search(r'pip install -e "\.\[(\w+)\]"', r["explanation"])
        assert hint is not None, r["explanation"]
        requirements = _declared_extras()[hint.group(1)]
        assert any(re.match(rf"{backend}\b", req) for req in requirements), requirements


def test_accuracy_says_why_a_backend_did_not_run(capsys: Any) -> None:
    """Issue 24, item 3: the README's own example printed an ``unsupported_dtype`` row with empty
    columns and no reason.  The reason printed is the row's own error (its JSON)."""
    argv = ["accuracy", "--op", "tanh", "--dtype", "bfloat16", "--backend", "numpy"]
    code, out, _ = _run(capsys, *argv, "--json")
    assert code == 1
    (row,) = json.loads(out)["result"][0]["backends"]
    assert row["status"] != "ok" and row["max_ulp_steps"] is None and row["error"]
    code, out, _ = _run(capsys, *argv)
    assert code == 1
    assert f"  numpy did not run ({row['status']}): {row['error'].splitlines()[0]}" in out.splitlines()


def test_the_save_summary_says_what_each_phase_means(
    capsys: Any, tmp_path: Path, numpy_snapshot: bytes
) -> None:
    """Issue 24, item 3: the summary ended with "(phases: see explorer.outcome.Phase)".  Each
    phase a run can fail at (every :class:`explorer.outcome.Phase` but ``ok`` and unknown) gets
    a line in words.  The snapshot is a real one with its rows' phases set to each of them."""
    from explorer.outcome import Phase

    failing = [p.value for p in Phase if p not in (Phase.OK, Phase.UNKNOWN)]
    snap = _numpy_snapshot(numpy_snapshot, tmp_path / "a.json")
    data = json.loads(snap.read_text())
    assert len(data["rows"]) >= len(failing)
    for row, phase in zip(data["rows"], failing, strict=False):
        row["mode"], row["status"], row["phase"] = "eager", "no_kernel", phase
    snap.write_text(json.dumps(data))
    code, out, _ = _run(capsys, "kernels", "--load", str(snap), "--save", str(tmp_path / "b.json"))
    assert code == 0
    assert "explorer." not in out
    lines = out.splitlines()
    (counts,) = [line for line in lines if line.startswith("failed at: ")]
    for phase in failing:
        assert f"eager {phase} 1" in counts
        (said,) = [line for line in lines if line.startswith(f"  {phase}: ")]
        assert len(said.split(": ", 1)[1].split()) >= 5, said  # a sentence, not a name
