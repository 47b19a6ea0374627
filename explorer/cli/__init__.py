"""The ``precision-explorer`` command line: one grammar for every verb.

Each verb is one module in this package with ``VERB``, ``HELP``, ``JSON_RESULT`` (what
``result`` holds in its ``--json`` output), ``add_arguments(parser)`` and
``run(args) -> int``, and ``EXIT_1`` when it can exit 1; adding a verb is adding a module.
Heavy imports happen inside ``run``.

**Shared flags**, defined once here and used by every verb they apply to, with the same
help text and the same checks (:func:`add_op_argument`, :func:`add_dtype_argument`,
:func:`add_backend_argument`, :func:`add_device_argument`, :func:`add_json_argument`):

=========  ========================  ======================  ==========================
verb       ``--op``                  ``--dtype``             ``--backend``, ``--device``
=========  ========================  ======================  ==========================
formats    --                        repeatable (or NAMES)   --
bits       --                        repeatable, required    --
ranges     one (catalog)             repeatable, required    repeatable
accuracy   one (catalog), required   repeatable, required    repeatable
kernels    repeatable (catalog or    repeatable              repeatable
           TensorFlow raw op)
train      --                        --                      --
model      --                        repeatable (formats     ``--device`` repeatable
                                     judged)
explain    --                        --                      --
lab, app   --                        --                      --
=========  ========================  ======================  ==========================

``--verbose`` (before or after the verb) lets TensorFlow's C++/absl/oneDNN/XLA log lines
through; without it they are kept off the terminal (:func:`framework_logging`).

**Op names.**  Catalog ops are lower_case (``exp``, ``qr``, ``linspace``, ``add``); any
case works for them (``EXP``) unless the name is spelled exactly as a TensorFlow raw op.
Where ``--op`` takes raw ops (``kernels``), a name spelled exactly as TensorFlow spells a
raw op (``Qr``, ``LinSpace``, ``Add``, ``Exp``) is that raw op alone, not the catalog op of
the same letters: its registry rows (there are no inputs to run a raw op with).

**--json** prints one object, the same shape in every verb::

    {"environment": {...}, "result": ...}

``environment`` is :func:`explorer.runtime.envcache.environment` of the machine that
printed it (package versions, Python, platform, CPU, GPU evidence; no framework
imported); ``result`` is the verb's answer (its ``JSON_RESULT``; a list of rows or
entries in most verbs, e.g. one entry per ``--dtype``).  ``lab`` and ``app`` print JSON
only with ``--dry-run``.

**Exit status**: 0 answered; 1 answered, and the answer is a failure a script wants to
know (``ranges``/``accuracy``: for some ``--dtype`` none of the requested backends could
run; ``kernels --diff``: the snapshots differ; ``model``: under some ``--policy`` the model
does not run, overflows or loses its gradients); 2 usage (a bad option, value or name;
nothing run; one line on stderr); 70 an internal error, a bug (one line on stderr naming the
file that holds its traceback); 130 interrupted; 141 stdout closed early (``| head``);
``lab``/``app`` otherwise return the server's status.

Bad input is refused before any work, with exit status 2 and one line on stderr:
numbers and names by the argparse ``type=`` functions below (:func:`positive_int`,
:func:`bounded_int`, :func:`positive_float`, :func:`format_name`, :func:`backend_name`,
:func:`device_name`, :func:`catalog_op_name`, :func:`op_or_raw_op_name`), as every
argparse error, by :class:`ArgumentParser` (``precision-explorer VERB: error: ... (see
precision-explorer VERB --help)``, no usage block), the rest by each verb's ``run``
before it starts (``precision-explorer VERB: error: ...``).  Text that came from the user, a snapshot or
an error is printed through :func:`safe_text`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import logging
import math
import os
import pkgutil
import re
import sys
from collections.abc import Callable, Collection, Iterator, Sequence
from types import ModuleType
from typing import Any

from explorer.cli._about import report_bug, version_text
from explorer.cli._parser import ArgumentParser, exit_status_epilog
from explorer.cli._parser import fill as _fill
from explorer.textsafety import strip_control

#: exit status when stdout was closed early (``precision-explorer formats | head``): 128 + SIGPIPE
EXIT_BROKEN_PIPE = 141
#: exit status after Ctrl-C
EXIT_INTERRUPTED = 130
#: longest value text echoed back in an error message
_ECHO_LIMIT = 60
#: what a TensorFlow raw op name can look like (``Cholesky``, ``_FusedConv2D``); whether
#: TensorFlow has it is asked of its registry later, since reading it may need TensorFlow
RAW_OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")

#: environment set (where unset) for a run without ``--verbose``: TensorFlow's C++ logging
#: (absl, oneDNN, XLA service banners) below FATAL filtered out: its ERROR level carries
#: notices too (on a CPU without AVX512-FP16, every float16 op logs "oneDNN supports DT_HALF
#: only on platforms with AVX-512" as an error), and a failing run's error reaches the result
#: as the Python exception's text.  Sandbox workers inherit it; their stderr goes to a file
#: anyway (``PX_SANDBOX_STDERR=1`` shows it).  ``TF_ENABLE_ONEDNN_OPTS`` is left alone:
#: turning oneDNN off would change which kernels run.
QUIET_ENVIRONMENT: dict[str, str] = {"TF_CPP_MIN_LOG_LEVEL": "3"}
#: environment set for a run with ``--verbose``: every C++ log line, and the sandbox
#: workers' stderr on this terminal
VERBOSE_ENVIRONMENT: dict[str, str] = {"TF_CPP_MIN_LOG_LEVEL": "0", "PX_SANDBOX_STDERR": "1"}
#: Python loggers of the frameworks, set to ERROR for a run without ``--verbose``
QUIET_LOGGERS: tuple[str, ...] = ("tensorflow", "absl")


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


def _name_type(check: Callable[[str], str], what: str) -> Callable[[str], str]:
    """An argparse ``type=`` from a checker that raises ValueError (with the valid names)."""

    def parse(text: str) -> str:
        try:
            return check(text)
        except (ValueError, TypeError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = what
    return parse


def _format(text: str) -> str:
    from explorer.formats import resolve

    return resolve(text).name


def _backend(text: str) -> str:
    from explorer.backends import get_backend

    return get_backend(text).name


def _device(text: str) -> str:
    from explorer.backends import normalize_device

    return normalize_device(text)


def _catalog_op(text: str) -> str:
    from explorer.ops import get_op

    return get_op(text).name


def _op_or_raw_op(text: str) -> str:
    from explorer.ops import catalog, get_op

    name = text.strip()
    if name in catalog() or name.lower() in catalog() or RAW_OP_NAME.fullmatch(name):
        return name  # as spelled: the spelling decides catalog op or raw op (kernels' run)
    get_op(text)  # raises the catalog's ValueError with close matches
    return name  # pragma: no cover - get_op raised


#: argparse ``type=`` for ``--dtype``: a format name or alias, as its canonical name
#: (``format_name("half") == "float16"``)
format_name = _name_type(_format, "format name")
#: argparse ``type=`` for ``--backend``: a backend name or alias, as its canonical name
backend_name = _name_type(_backend, "backend name")
#: argparse ``type=`` for ``--device``: ``CPU`` or ``GPU`` (any case, no index)
device_name = _name_type(_device, "device name")
#: argparse ``type=`` for ``--op`` in verbs that run catalog ops: the catalog name (any case)
catalog_op_name = _name_type(_catalog_op, "op name")
#: argparse ``type=`` for ``--op`` in verbs that take raw ops too: the name as spelled
#: (stripped), when it is a catalog op or looks like a TensorFlow raw op
op_or_raw_op_name = _name_type(_op_or_raw_op, "op name")

_REPEAT = "; repeat for several"


def _flag_help(text: str, repeat: bool, default: str | None) -> str:
    return text + (_REPEAT if repeat else "") + (f"; default: {default}" if default else "")


def add_op_argument(
    parser: argparse.ArgumentParser,
    *,
    repeat: bool = True,
    required: bool = False,
    raw_ops: bool = False,
    what: str = "",
    default: str | None = None,
) -> None:
    """``--op NAME``: a catalog op (lower_case, any case accepted); with ``raw_ops`` also a
    TensorFlow raw op, spelled as TensorFlow spells it.

    ``repeat``: ``action="append"`` (a list, or None when not given); ``what``: the verb's
    kind of op (``elementwise op``); ``default``: what no ``--op`` means.
    """
    text = (what or "op") + ": catalog name (exp, add, qr, cholesky; any case)"
    if raw_ops:
        text += (
            ", or a TensorFlow raw op spelled exactly as TensorFlow spells it (Exp, Qr, LinSpace, Add): "
            "that raw op alone, registry rows only"
        )
    parser.add_argument(
        "--op",
        action="append" if repeat else "store",
        required=required,
        type=op_or_raw_op_name if raw_ops else catalog_op_name,
        metavar="NAME",
        help=_flag_help(text, repeat, default),
    )


def add_dtype_argument(
    parser: argparse.ArgumentParser,
    *,
    repeat: bool = True,
    required: bool = False,
    default: str | None = None,
) -> None:
    """``--dtype FORMAT``: a format name or alias, stored as its canonical name."""
    parser.add_argument(
        "--dtype",
        action="append" if repeat else "store",
        required=required,
        type=format_name,
        metavar="FORMAT",
        help=_flag_help("format name or alias (float16, half, bf16, e4m3, fp4, ...)", repeat, default),
    )


def add_backend_argument(
    parser: argparse.ArgumentParser, *, repeat: bool = True, default: str | None = None
) -> None:
    """``--backend NAME``: numpy, tensorflow, emulated, torch, jax or onnxruntime (aliases accepted)."""
    parser.add_argument(
        "--backend",
        action="append" if repeat else "store",
        type=backend_name,
        metavar="NAME",
        help=_flag_help(
            "numpy, tensorflow, emulated, torch, jax or onnxruntime (aliases: np, tf, ml_dtypes, ort)",
            repeat,
            default,
        ),
    )


def add_device_argument(
    parser: argparse.ArgumentParser, *, repeat: bool = True, default: str | None = "CPU"
) -> None:
    """``--device CPU|GPU``: the device type (no index: the first device of the type)."""
    parser.add_argument(
        "--device",
        action="append" if repeat else "store",
        type=device_name,
        metavar="CPU|GPU",
        help=_flag_help("CPU or GPU", repeat, default),
    )


def add_json_argument(parser: argparse.ArgumentParser, note: str = "") -> None:
    """``--json``: print ``{"environment": {...}, "result": ...}`` (see :func:`print_json`)."""
    parser.add_argument(
        "--json",
        action="store_true",
        help='print one JSON object {"environment": {...}, "result": ...}' + (f" ({note})" if note else ""),
    )


def unique(values: Sequence[str] | None) -> list[str]:
    """``values`` without repeats, in order (``[]`` for None).

    >>> unique(["float16", "bfloat16", "float16"])
    ['float16', 'bfloat16']
    """
    return list(dict.fromkeys(values or []))


def _verb_modules() -> list[ModuleType]:
    modules = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "VERB"):
            modules.append(module)
    return modules


_VERBOSE_HELP = (
    "let TensorFlow's C++ log lines (absl, oneDNN, XLA) and the sandbox workers' stderr "
    "through (before or after the verb)"
)


def chosen_verb(argv: Sequence[str]) -> str | None:
    """The verb ``argv`` names: its first word that is not an option (None: no verb).

    >>> chosen_verb(["--verbose", "kernels", "--op", "range"])
    'kernels'
    >>> chosen_verb(["--help"]) is None
    True
    """
    return next((word for word in argv if not word.startswith("-")), None)


def build_parser(options_of: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every verb (each verb's parser is an :class:`ArgumentParser` too).

    With ``options_of``, only those verbs' options are added (every verb keeps its name and help):
    what its options need (the catalog, the formats, ml_dtypes) is imported only for the verb
    the user named, so that ``--help``, ``--version`` and a usage error answer at once.
    """
    parser = ArgumentParser(
        prog="precision-explorer",
        description=_fill(
            "Kernel availability, overflow regions, accuracy and mixed-precision training for "
            "low-precision floating-point formats."
        ),
        epilog=exit_status_epilog(
            "ranges/accuracy: for some --dtype no requested backend could run; "
            "kernels --diff: the snapshots differ",
            "the verb's answer (see precision-explorer VERB --help; lab and app: with --dry-run "
            "only); environment: package versions, Python, platform, CPU, GPUs",
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--verbose", action="store_true", help=_VERBOSE_HELP)
    parser.add_argument(
        "-V",
        "--version",
        action="store_true",
        help="print the version and exit (with --verbose, the frameworks' versions too)",
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    for module in _verb_modules():
        sub = verbs.add_parser(
            module.VERB,
            help=module.HELP,
            description=_fill(module.HELP),
            epilog=exit_status_epilog(
                getattr(module, "EXIT_1", None),
                getattr(module, "JSON_RESULT", None),
                getattr(module, "EXIT_OTHER", None),
                getattr(module, "NOTES", None),
            ),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        if options_of is None or module.VERB in options_of:
            module.add_arguments(sub)
        # after the verb too; SUPPRESS: an absent one leaves the value given before the verb
        sub.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS, help=_VERBOSE_HELP)
        sub.set_defaults(_run=module.run)
    return parser


@contextlib.contextmanager
def framework_logging(verbose: bool = False) -> Iterator[None]:
    """Keep the frameworks' log lines off the terminal (``verbose``: let them through).

    Sets :data:`QUIET_ENVIRONMENT` where the variable is unset (a value set beforehand, e.g.
    ``TF_CPP_MIN_LOG_LEVEL=0``, wins), or with ``verbose`` :data:`VERBOSE_ENVIRONMENT` (the
    flag wins), before anything imports TensorFlow, so that this process and the sandbox
    workers it starts inherit it.  Without ``verbose`` the Python loggers of
    :data:`QUIET_LOGGERS` are set to ERROR.  TensorFlow's import-time lines (written before
    its logging is configured, e.g. "All log messages before absl::InitializeLog() ...") are
    hidden by :func:`explorer.backends.tensorflow_backend.import_tensorflow`, through which
    the in-process imports go (``train`` calls it before Keras loads).  Everything set is
    put back on exit (the CLI can run in a caller's process).

    >>> import os
    >>> saved = os.environ.pop("TF_CPP_MIN_LOG_LEVEL", None)
    >>> with framework_logging():
    ...     print(os.environ["TF_CPP_MIN_LOG_LEVEL"])
    3
    >>> "TF_CPP_MIN_LOG_LEVEL" in os.environ
    False
    >>> if saved is not None:
    ...     os.environ["TF_CPP_MIN_LOG_LEVEL"] = saved
    """
    wanted = VERBOSE_ENVIRONMENT if verbose else QUIET_ENVIRONMENT
    saved = {key: os.environ.get(key) for key in wanted if verbose or key not in os.environ}
    for key in saved:
        os.environ[key] = wanted[key]
    levels = {}
    if not verbose:
        for name in QUIET_LOGGERS:
            logger = logging.getLogger(name)
            levels[name] = logger.level
            if logger.level < logging.ERROR:
                logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (2 for bad input, with a one-line message).

    Bad values of options make argparse exit (``SystemExit(2)``, one error line: see
    :class:`ArgumentParser`); bad input found by a verb (a ValueError, or an OSError such as
    a missing file) prints ``precision-explorer VERB: error: ...`` and returns 2.  A closed stdout
    (``| head``) returns 141 quietly, Ctrl-C returns 130; any other exception is a bug:
    one line saying so and where its traceback is (:func:`report_bug`), status 70.
    ``--version`` prints the version; no verb prints the help.  The verb runs inside
    :func:`framework_logging` (quiet unless ``--verbose``).
    """
    words = list(sys.argv[1:] if argv is None else argv)
    try:
        verb = chosen_verb(words)
        parser = build_parser({verb} if verb else set())
        try:
            args = parser.parse_args(words)
        except SystemExit:
            sys.stdout.flush()  # --help's text: a closed pipe shows up here, inside the try
            raise
        if args.version:
            print(version_text(args.verbose))
            return 0
        if args.verb is None and not words:  # nothing at all: the short help, as git and pip do
            parser.print_help()
            return 0
        if args.verb is None:
            parser.error("a VERB is required")
        try:
            with framework_logging(verbose=args.verbose):
                status = int(args._run(args) or 0)
        except BrokenPipeError:  # an OSError, but not bad input: handled below
            raise
        except (ValueError, OSError) as exc:  # OSError: a user's path (FileNotFoundError, ...)
            print(
                f"precision-explorer {args.verb}: error: {safe_text(exc) or type(exc).__name__}",
                file=sys.stderr,
            )
            return 2
        except Exception as exc:  # anything else is a bug of ours, not the user's input
            return report_bug(args.verb, exc, verbose=args.verbose)
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


def json_document(result: Any) -> dict[str, Any]:
    """The one ``--json`` shape of every verb: ``{"environment": {...}, "result": result}``.

    ``environment`` is :func:`explorer.runtime.envcache.environment` (package metadata, no
    framework import).

    >>> sorted(json_document([1, 2]))
    ['environment', 'result']
    """
    from explorer.runtime.envcache import environment

    return {"environment": environment(), "result": result}


def print_json(result: Any) -> None:
    """Print a verb's ``result`` as :func:`json_document` (indented JSON, one object)."""
    json.dump(json_document(result), sys.stdout, indent=2, default=_json_default)
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
