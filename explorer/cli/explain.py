"""``precision-explorer explain``: what an error text says, what the releases say, and a fix to paste."""

from __future__ import annotations

import argparse
import os
import stat
import sys
import textwrap
from typing import IO, Any

VERB = "explain"
HELP = (
    "explain a low-precision error text (TensorFlow, Keras, PyTorch, JAX, XLA/LLVM, ONNX Runtime: "
    "missing kernels, dtype mismatches, mixed-precision API errors, compile failures): the op, dtype "
    "and device, which "
    "shipped TensorFlow releases match the kernels it lists, the first release with the kernel, "
    "and a workaround that was run here"
)
EXIT_1 = "the text was not recognised as a low-precision error (what was looked for is printed)"
JSON_RESULT = (
    "one object: recognised, framework, kind, raw_op, op, dtype, device, mode, attr, called, called_op, "
    "operand_dtypes, provider, device_check, listed_kernels, "
    "matching_releases {exact, closest, differences, ...}, installed {release, status, ...}, history "
    "[{version, status, reason}] (for history_device), changes, first_release_with_kernel, "
    "explanation, workaround {description, code, ran, result_dtype, note, check {status, summary, "
    "max_ulps, tolerance_ulps, cases, layout}}; looked_for when not "
    "recognised"
)
NOTES = (
    "The text: an argument, --file PATH, or stdin ('-', or no argument when stdin is not a "
    "terminal); at most 1 MB is read. The reading is printed first; the workaround follows once "
    "it was run in a sandbox worker and its output checked against the float64 reference rounded "
    "to the dtype, on inputs laid out as the framework lays them out (a workaround whose check "
    "fails is not offered; --no-run: the reading only). PyTorch and JAX code is run only where "
    "the framework is installed."
)
#: width of the human output's wrapped lines
_WIDTH = 100
_LABEL = 12


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The verb's options."""
    from explorer.cli import add_json_argument

    parser.add_argument(
        "text",
        nargs="?",
        metavar="TEXT",
        help="the error text (quote it); '-' reads stdin, as does no TEXT when stdin is not a terminal",
    )
    parser.add_argument("--file", metavar="PATH", help="read the error text from a file (never changed)")
    parser.add_argument(
        "--no-run",
        action="store_true",
        help="print the reading only (nothing is run; with --json: the workaround written, not run)",
    )
    add_json_argument(parser)


def _read_bounded(stream: IO[bytes], limit: int) -> bytes:
    """At most ``limit + 1`` bytes of ``stream`` (one more than allowed tells "too long")."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = stream.read(min(1 << 16, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _check_size(data: bytes, where: str, limit: int) -> bytes:
    if len(data) > limit:
        raise ValueError(f"{where} holds more than {limit:,} bytes; paste the end of the traceback")
    return data


def read_file(path: str, limit: int) -> bytes:
    """The bytes of a regular file (at most ``limit``; it is opened read-only, never changed).

    A missing path, a directory, a FIFO or a device is refused with a ValueError of one line.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise ValueError(f"--file {path!r}: no such file") from None
    except OSError as exc:
        raise ValueError(f"--file {path!r}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        kind = (
            "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file (a FIFO, socket or device)"
        )
        raise ValueError(f"--file {path!r} is {kind}")
    try:
        with open(path, "rb") as stream:
            return _check_size(_read_bounded(stream, limit), f"--file {path!r}", limit)
    except OSError as exc:
        raise ValueError(f"--file {path!r}: {exc.strerror or exc}") from None


def read_text(args: argparse.Namespace) -> bytes | str:
    """The error text the arguments name: TEXT, ``--file``, or stdin."""
    from explorer.analysis.error_text import MAX_TEXT_BYTES

    if args.file is not None and args.text is not None:
        raise ValueError("give the error text as TEXT or with --file, not both")
    if args.file is not None:
        return read_file(args.file, MAX_TEXT_BYTES)
    if args.text is not None and args.text != "-":
        return str(args.text)
    stdin = sys.stdin
    if args.text is None and (stdin is None or stdin.isatty()):
        raise ValueError("give the error text as TEXT, with --file PATH, or on stdin (TEXT '-')")
    if stdin is None:
        raise ValueError("stdin is closed; give the error text as TEXT or with --file PATH")
    buffer = getattr(stdin, "buffer", None)
    if buffer is not None:
        return _check_size(_read_bounded(buffer, MAX_TEXT_BYTES), "stdin", MAX_TEXT_BYTES)
    text = stdin.read(MAX_TEXT_BYTES + 1)
    return _check_size(text.encode("utf-8", "replace"), "stdin", MAX_TEXT_BYTES)


def _line(label: str, value: Any) -> str:
    from explorer.cli import safe_text

    prefix = f"{label:<{_LABEL}} "
    return textwrap.fill(
        safe_text(value),
        _WIDTH,
        initial_indent=prefix,
        subsequent_indent=" " * len(prefix),
        break_on_hyphens=False,
    )


def _listed(result: dict[str, Any]) -> str:
    per_device: dict[str, list[str]] = {}
    for kernel in result["listed_kernels"]:
        values = [t for v in kernel["constraints"].values() for t in v] or ["any dtype"]
        per_device.setdefault(kernel["device"], []).extend(values)
    return "; ".join(f"{d}: {', '.join(dict.fromkeys(v))}" for d, v in per_device.items())


def _releases(m: dict[str, Any]) -> str:
    from explorer.analysis.error_explanation import releases_text

    if m["exact"]:
        return f"the listed kernels are exactly those of {releases_text(m['exact'])}"
    if not m["closest"]:
        return "no shipped release has the op"
    return (
        f"no exact match among {m['compared']} shipped releases; closest: {m['closest'][0]}"
        + (f" to {m['closest'][-1]} ({len(m['closest'])} releases)" if len(m["closest"]) > 1 else "")
        + f", {m['differences']} differences"
        + (f" (only in the message: {', '.join(m['only_in_message'][:6])})" if m["only_in_message"] else "")
    )


def print_human(result: dict[str, Any]) -> None:
    """The reading (:func:`print_reading`), then the workaround (:func:`print_workaround`)."""
    print_reading(result)
    if result["recognised"]:
        print_workaround(result)


def print_reading(result: dict[str, Any]) -> None:
    """The reading: a few labelled lines (framework, op, dtype, device, kind...) and the explanation."""
    from explorer.analysis.error_explanation import history_summary

    if not result["recognised"]:
        from explorer.cli import safe_text

        reason = safe_text(result["explanation"].split(" Looked for:")[0])
        print(textwrap.fill(f"not recognised: {reason}", _WIDTH, break_on_hyphens=False))
        print("looked for:")
        for line in result["looked_for"]:
            print(textwrap.fill(safe_text(line), _WIDTH, initial_indent="  - ", subsequent_indent="    "))
        return
    print(_line("error", result["message"]))
    print(_line("framework", f"{result['framework']} ({result['kind']})"))
    op = result["op"] or "no catalog op"
    print(_line("op", f"{op} ({result['framework']} name: {result['raw_op'] or 'not named'})"))
    print(
        _line(
            "dtype", f"{result['dtype'] or 'not a floating format'} ({result['dtype_text'] or 'not named'})"
        )
    )
    from explorer.analysis.error_text import CPU_DEDUCTION

    deduced = " (deduced: see the note)" if CPU_DEDUCTION in result["notes"] else ""
    print(_line("device", (result["device"] or "not named") + deduced))
    from explorer.queries.explain_kinds import extra_facts

    for label, value in extra_facts(result):
        print(_line(label, value))
    if result["listed_kernels"]:
        print(_line("listed", _listed(result)))
    if result["matching_releases"]:
        print(_line("releases", _releases(result["matching_releases"])))
    if result["history"]:
        first = result["first_release_with_kernel"] or "none"
        history = (
            f"{result['history_device']}: {history_summary(result['history'])}; first with a kernel: {first}"
        )
        print(_line("history", history))
    installed = result["installed"]
    status = installed.get("status") or installed.get("note") or ""
    ran = f" (ran here: {installed['result_dtype']})" if installed.get("ran") else ""
    said = f"{installed['framework']} {installed['release'] or 'not installed'}"
    print(_line("installed", f"{said}: {status}{ran}" if status or ran else said))
    for note in result["notes"]:
        print(_line("note", note))
    print(_line("explanation", result["explanation"]))


def check_text(work: dict[str, Any]) -> str:
    """The workaround's check in words: passed or failed with its figure, or "not checked: why".

    >>> check_text({"check": {"status": "passed", "summary": "checked: max error 0 ulps"}})
    'passed: checked: max error 0 ulps'
    """
    check = work.get("check") or {}
    status, summary = check.get("status"), check.get("summary") or ""
    if status in ("passed", "failed"):
        return f"{status}: {summary}"
    return summary or "not checked: no check was made"


def print_workaround(result: dict[str, Any]) -> None:
    """The workaround: what it does, its check against the float64 reference, and its code."""
    from explorer.textsafety import strip_control

    work = result["workaround"]
    if work["code"]:
        how = f"ran here: {work['result_dtype']}" if work["ran"] else work["note"]
        print(_line("workaround", f"{work['description']} ({how})"))
        print(_line("check", check_text(work)))
        if work.get("lesson"):  # the fix written with the names of the user's own line
            print(_line("your line", work["lesson_from"]))
            print()
            print(textwrap.indent(strip_control(work["lesson"], keep_newlines=True), "    "))
            print(_line("runnable", "the same with the example inputs it ran on:"))
        print()
        print(textwrap.indent(strip_control(work["code"], keep_newlines=True), "    "), end="")
    else:
        print(_line("workaround", f"none: {work['note']}"))


def run(args: argparse.Namespace) -> int:
    """Explain the error text; exit 0 when it was recognised, 1 when not.

    The reading is printed (and flushed) first; the workaround, run and checked against the
    float64 reference, follows when done.  ``--no-run`` prints the reading only."""
    from explorer.cli import print_json
    from explorer.queries.diagnose import read_error

    reading = read_error(read_text(args))
    if args.json:
        result = reading.finish(run_workaround=not args.no_run)
        print_json(result)
        return 0 if result["recognised"] else 1
    if args.no_run:
        result = reading.finish(run_workaround=False)
        print_reading(result)
        return 0 if result["recognised"] else 1
    print_reading(reading.result)
    sys.stdout.flush()
    if not reading.result["recognised"]:
        return 1
    print_workaround(reading.finish())
    return 0
