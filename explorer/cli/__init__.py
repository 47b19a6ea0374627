"""The ``precision-explorer`` command line.

Each verb is one module in this package with ``VERB``, ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int``; adding a verb is adding a
module.  Heavy imports happen inside ``run``.

Bad input is refused before any work, with exit status 2 and one line on stderr:
numbers by the argparse ``type=`` functions below (:func:`positive_int`,
:func:`bounded_int`, :func:`positive_float`: argparse prints its usage and the
line), names (formats, ops, backends, devices, groups) by each verb's ``run``
before it starts (``precision-explorer VERB: error: ...``).  Text that came from
the user, a snapshot or an error is printed through :func:`safe_text`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import pkgutil
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, NoReturn

from explorer.textsafety import strip_control

#: exit status when stdout was closed early (``precision-explorer formats | head``): 128 + SIGPIPE
EXIT_BROKEN_PIPE = 141
#: exit status after Ctrl-C
EXIT_INTERRUPTED = 130
#: longest value text echoed back in an error message
_ECHO_LIMIT = 60


def safe_text(text: Any) -> str:
    """``text`` as one line with no control characters, safe to print to a terminal.

    Newlines and tabs become spaces; every other C0/C1 control character (the ESC of
    escape sequences included), DEL and the Unicode bidi controls are removed
    (:func:`explorer.textsafety.strip_control`).

    >>> safe_text("bad\\x1b]0;title\\x07 name\\nsecond line")
    'bad]0;title name second line'
    """
    return strip_control(text)


def _echo(text: str) -> str:
    """A value the user typed, quoted for an error message (control characters escaped, shortened)."""
    shown = text if len(text) <= _ECHO_LIMIT else text[:_ECHO_LIMIT] + "..."
    return repr(shown)


def bounded_int(minimum: int, maximum: int) -> Callable[[str], int]:
    """An argparse ``type=``: an integer from ``minimum`` to ``maximum`` (inclusive).

    >>> bounded_int(0, 10)("7")
    7
    >>> bounded_int(0, 10)("11")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be an integer from 0 to 10, got '11'
    """

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:  # also strings of more digits than int() reads
            raise argparse.ArgumentTypeError(
                f"must be an integer from {minimum} to {maximum}, got {_echo(text)}"
            ) from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(
                f"must be an integer from {minimum} to {maximum}, got {_echo(text)}"
            )
        return value

    parse.__name__ = f"integer from {minimum} to {maximum}"
    return parse


def positive_int(maximum: int) -> Callable[[str], int]:
    """An argparse ``type=``: an integer from 1 to ``maximum``.

    >>> positive_int(100)("5")
    5
    """
    return bounded_int(1, maximum)


def positive_float(maximum: float) -> Callable[[str], float]:
    """An argparse ``type=``: a finite number greater than 0 and at most ``maximum``.

    ``nan``, ``inf``, zero and negative numbers are refused.

    >>> positive_float(3600)("1.5")
    1.5
    >>> positive_float(3600)("nan")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be a number greater than 0 and at most 3600, got 'nan'
    """

    def parse(text: str) -> float:
        message = f"must be a number greater than 0 and at most {maximum:g}, got {_echo(text)}"
        try:
            value = float(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(message) from None
        if not (math.isfinite(value) and 0 < value <= maximum):
            raise argparse.ArgumentTypeError(message)
        return value

    parse.__name__ = f"number in (0, {maximum:g}]"
    return parse


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, with its error line made safe: one line, no control characters."""

    def error(self, message: str) -> NoReturn:
        """Print the usage and ``PROG: error: MESSAGE`` (one line) on stderr; exit 2."""
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {safe_text(message)}\n")


def _verb_modules() -> list[ModuleType]:
    modules = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "VERB"):
            modules.append(module)
    return modules


def build_parser() -> argparse.ArgumentParser:
    """The parser of every verb (each verb's parser is an :class:`ArgumentParser` too)."""
    parser = ArgumentParser(
        prog="precision-explorer",
        description="Kernel availability, overflow regions, accuracy and mixed-precision "
        "training for low-precision floating-point formats.",
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True
    for module in _verb_modules():
        sub = verbs.add_parser(module.VERB, help=module.HELP, description=module.HELP)
        module.add_arguments(sub)
        sub.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (2 for bad input, with a one-line message).

    Bad values of options make argparse exit (``SystemExit(2)``, usage and one error
    line); bad input found by a verb (a ValueError, TypeError or OSError such as a missing file)
    prints ``precision-explorer VERB: error: ...`` and returns 2.  A closed stdout
    (``| head``) returns 141 quietly, Ctrl-C returns 130; any other exception is a bug
    and propagates.
    """
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit:
            sys.stdout.flush()  # --help's text: a closed pipe shows up here, inside the try
            raise
        try:
            status = int(args._run(args) or 0)
        except BrokenPipeError:  # an OSError, but not bad input: handled below
            raise
        except (ValueError, TypeError, OSError) as exc:  # OSError: a user's path (FileNotFoundError, ...)
            print(
                f"precision-explorer {args.verb}: error: {safe_text(exc) or type(exc).__name__}",
                file=sys.stderr,
            )
            return 2
        sys.stdout.flush()  # a closed pipe shows up here, inside the try
        return status
    except BrokenPipeError:
        _stdout_to_devnull()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null, so that Python's flush at exit does not fail again.

    What the Python docs recommend for a closed pipe (library/signal.html, "Note on SIGPIPE").
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout has no file descriptor (captured in tests)
        pass


def print_json(data: Any) -> None:
    """Print JSON the same way in every verb."""
    json.dump(data, sys.stdout, indent=2, default=_json_default)
    sys.stdout.write("\n")


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "value"):
        return value.value
    return str(value)


def print_table(rows: list[dict[str, Any]], columns: Sequence[str]) -> None:
    """Print rows as an aligned plain-text table (cells one line each, control characters removed)."""
    header = [safe_text(c) for c in columns]
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
    for r in cells:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if value is None:
        return ""
    return safe_text(value)
