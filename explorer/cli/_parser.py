"""The command line's parser class and the ``--help`` epilog every verb shares.

:class:`ArgumentParser` makes argparse's usage errors what the help promises: one line on
stderr, ``PROG: error: MESSAGE (see PROG --help)``, and exit status 2.  argparse itself
prints its usage block (3 to 9 lines) before that line; the usage is in ``--help``.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Sequence
from typing import Any, NoReturn

from explorer.textsafety import strip_control

#: width of the --help texts this module wraps (descriptions and epilogs)
HELP_WIDTH = 88


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, with its error made one safe line (no usage block, no control
    characters) that points at ``--help``.

    Arguments that no parser takes are told by the verb's parser (``precision-explorer
    kernels: error: unrecognized arguments: ...``), whose ``--help`` lists the options.

    >>> import contextlib, io
    >>> parser = ArgumentParser(prog="demo")
    >>> _ = parser.add_argument("--n", type=int)
    >>> err = io.StringIO()
    >>> with contextlib.redirect_stderr(err):
    ...     try:
    ...         parser.parse_args(["--n", "x"])
    ...     except SystemExit as exc:
    ...         print(exc.code)
    2
    >>> print(err.getvalue(), end="")
    demo: error: argument --n: invalid int value: 'x' (see demo --help)
    """

    def error(self, message: str) -> NoReturn:
        """Print ``PROG: error: MESSAGE (see PROG --help)`` (one line) on stderr; exit 2."""
        self.exit(2, f"{self.prog}: error: {strip_control(message)} (see {self.prog} --help)\n")

    def parse_args(  # type: ignore[override]  # argparse's overloads; the same call
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> argparse.Namespace:
        """argparse's ``parse_args``; unrecognized arguments are refused by the verb's parser."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self._verb_parser(parsed).error("unrecognized arguments: " + " ".join(extras))
        return parsed

    def _verb_parser(self, parsed: argparse.Namespace) -> argparse.ArgumentParser:
        """The parser of the verb in ``parsed`` (this parser when there is none)."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                verb = getattr(parsed, action.dest, None)
                chosen = action.choices.get(verb) if isinstance(verb, str) else None
                if isinstance(chosen, argparse.ArgumentParser):
                    return chosen
        return self


def fill(text: str, first: str = "", rest: str = "") -> str:
    """``text`` wrapped to :data:`HELP_WIDTH` columns (hyphenated words kept whole).

    >>> fill("a b", "  ")
    '  a b'
    """
    return textwrap.fill(
        text, HELP_WIDTH, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False
    )


def exit_status_epilog(
    exit_1: str | None = None,
    json_result: str | None = None,
    other: str | None = None,
    notes: str | None = None,
) -> str:
    """The ``--help`` epilog of a verb: ``notes``, its exit statuses (``exit_1``: when it exits
    1; ``other``: any other status), and what ``result`` holds in its JSON.

    >>> print(exit_status_epilog("the snapshots differ"))
    exit status:
      0    answered
      1    answered, and the answer is a failure: the snapshots differ
      2    usage: a bad option, value or name (one line on stderr); nothing was run
      70   internal error, a bug (one line on stderr naming the traceback's file)
      130  interrupted; 141: stdout closed early (| head)
    """
    pad = " " * 7
    lines = ["exit status:", "  0    answered"]
    if exit_1:
        lines.append(fill(f"answered, and the answer is a failure: {exit_1}", "  1    ", pad))
    usage = "usage: a bad option, value or name (one line on stderr); nothing was run"
    lines.append(fill(usage, "  2    ", pad))
    lines.append("  70   internal error, a bug (one line on stderr naming the traceback's file)")
    lines.append("  130  interrupted; 141: stdout closed early (| head)")
    if other:
        lines.append(fill(other, "  else ", pad))
    parts = [fill(notes)] if notes else []
    parts.append("\n".join(lines))
    if json_result:
        parts.append(fill('--json prints {"environment": {...}, "result": ...}; result: ' + json_result))
    return "\n\n".join(parts)
