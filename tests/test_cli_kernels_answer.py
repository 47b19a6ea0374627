"""``precision-explorer kernels`` for one op and dtype: its first printed line is the answer in
words (the Kernels tab's sentence, with the history), checked against the table's registry row
(itself checked against the registry oracle in ``tests/test_cli_kernels.py``) and the
``--history`` rows of the shipped releases."""

from __future__ import annotations

import json

import pytest

from explorer.cli import main
from explorer.runtime.registry import get_registry

pytestmark = pytest.mark.usefixtures("cache_dir")  # tests/conftest.py


@pytest.mark.slow  # TensorFlow's registry is read: seconds
def test_the_seed_command_answers_first_in_words_with_the_history(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["kernels", "--op", "range", "--dtype", "float16", "--device", "CPU"]
    assert main([*argv, "--history", "--json"]) == 0
    cells = json.loads(capsys.readouterr().out)["result"]
    history = next(c for c in cells if c["raw_op"] == "Range" and c["device"] == "CPU")["history"]
    # the first release from which every later one has the kernel, and the one before it
    index = len(history) - 1
    while index > 0 and history[index - 1]["status"] == "ok":
        index -= 1
    since, before = history[index]["version"], history[index - 1]["version"]

    assert main([*argv, "--mode", "registry"]) == 0
    lines = capsys.readouterr().out.splitlines()
    first = lines[0]
    row = next(
        line.split()
        for line in lines
        if line.split()[:7] == ["tensorflow", "range", "Range", "float16", "CPU", "registry", "ok"]
    )
    assert row  # the registry row below says ok: the sentence says yes
    version = get_registry().tf_version
    assert first.startswith(f"Yes: TensorFlow {version} has a float16 CPU kernel for Range (tf.range)")
    assert f"since {since}; on {before} and earlier there is none" in first


@pytest.mark.slow
def test_several_ops_get_no_sentence(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["kernels", "--op", "range", "--op", "exp", "--dtype", "float16", "--device", "CPU"]
    assert main([*argv, "--mode", "registry"]) == 0
    assert capsys.readouterr().out.splitlines()[0].split()[:2] == ["backend", "op"]  # the table's header
