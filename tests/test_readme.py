"""The README's Python examples (its ``pycon`` blocks) run, and print what the README says they print."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_readme_python_examples_print_what_they_say() -> None:
    blocks = re.findall(r"```pycon\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) >= 2, "the README lost its Python examples"
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    namespace: dict[str, object] = {}  # the blocks are one session, as a reader would type them
    for number, block in enumerate(blocks):
        test = parser.get_doctest(block, namespace, f"README block {number}", str(README), 0)
        runner.run(test, clear_globs=False)
        namespace = test.globs  # (a DocTest copies the namespace it is given)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 6
    assert result.failed == 0


def _set_up_section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Set up\n")
    return text[start : text.index("\n## ", start + 1)]


def test_set_up_says_what_a_newcomer_needs_before_the_first_command(capsys) -> None:  # type: ignore[no-untyped-def]
    """Issue 24, item 3: still two set-up commands (the app, the tests); before them the Python
    version pyproject.toml requires and the disk measured (benchmarks/results/install_size.md);
    that the app opens a browser and ``--no-browser``; the CPU build of the pinned torch from
    PyTorch's CPU index; the npm packages and Debian package ``.ci/run`` installs for the tests."""
    import json
    import tomllib

    from explorer.cli import main

    root = README.parent
    setup = _set_up_section()
    commands = re.findall(r"^    (\S.*)$", setup, flags=re.M)
    assert commands == [
        "python -m pip install -e . && precision-explorer app",
        'python -m pip install -e ".[test]" && python -m pytest',
    ]
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    minimum = re.fullmatch(r">=\s*(\d+\.\d+)", project["requires-python"])
    assert minimum is not None and f"Python {minimum.group(1)} or newer" in setup
    # the disk figures are the measured ones
    measured = (root / "benchmarks" / "results" / "install_size.md").read_text(encoding="utf-8")
    sizes = re.findall(r"^\| `pip install -e ([^`]*)` \| (\d+\.\d)G \|", measured, flags=re.M)
    assert [s for _, s in sizes] == re.findall(r"(\d+\.\d) GB with the (?:first|second)", setup)
    assert [i for i, _ in sizes] == [".", '".[test]"']
    # the browser: opened unless --no-browser (the command the app would run says so)
    opened = []
    for extra in ([], ["--no-browser"]):
        assert main(["app", "--dry-run", "--json", *extra]) == 0
        opened.append("--no-browser" not in json.loads(capsys.readouterr().out)["result"]["command"])
    assert opened == [True, False]
    assert "opens that page in your browser" in setup and "`--no-browser`" in setup
    # the CPU build of the torch the test extra pins
    (pin,) = [r for r in project["optional-dependencies"]["test"] if re.match(r"torch\b", r)]
    cpu_build = f"`python -m pip install {pin} --index-url https://download.pytorch.org/whl/cpu`"
    assert cpu_build in setup
    # issue 40: clone, cd and a virtual environment first; the CUDA note before the command it concerns
    assert "`git clone " in setup and "&& cd precision-explorer`" in setup
    assert "`python -m venv .venv && . .venv/bin/activate`" in setup
    assert (
        setup.index(cpu_build) < setup.index(commands[1])
        and "CUDA build" in setup[: setup.index(commands[1])]
    )
    # what .ci/run installs for the browser and JupyterHub tests
    ci = (root / ".ci" / "run").read_text(encoding="utf-8")
    npm = re.search(r"npm install -g (?:--\S+ )*(.+)$", ci, flags=re.M)
    assert npm is not None
    packages = npm.group(1).split()
    assert f"`npm install -g {' '.join(packages)}`" in setup
    assert all(f"`{p}`" in setup for p in packages)
    assert "apt-get install -y -qq chromium" in ci and "`apt-get install chromium`" in setup
