"""The README's Python examples (its ``pycon`` blocks) run, and print what the README says they print."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


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
