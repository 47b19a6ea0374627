"""What the command line says about itself and about its own bugs: ``--version`` and the
one-line report of an internal error (exit status 70)."""

from __future__ import annotations

import sys

from explorer.textsafety import strip_control

#: exit status of an internal error (a bug): EX_SOFTWARE of sysexits.h
EXIT_BUG = 70


def report_bug(verb: str, exc: BaseException, verbose: bool = False) -> int:
    """Say that ``exc`` is a bug (one line on stderr) and where its traceback is; returns
    :data:`EXIT_BUG`.  With ``verbose`` the traceback is printed too; it is always written to
    a file of its own in the temporary directory, named in the line.

    >>> import contextlib, io
    >>> err = io.StringIO()
    >>> with contextlib.redirect_stderr(err):
    ...     status = report_bug("demo", TypeError("boom"))
    >>> status, err.getvalue().startswith("precision-explorer demo: internal error (a bug")
    (70, True)
    """
    import tempfile
    import traceback

    trace = "".join(traceback.format_exception(exc))
    with tempfile.NamedTemporaryFile(
        "w", prefix="precision-explorer-bug-", suffix=".txt", delete=False, encoding="utf-8"
    ) as file:
        file.write(trace)
    if verbose:
        sys.stderr.write(trace)
    print(
        f"precision-explorer {verb}: internal error (a bug, not your input): "
        f"{type(exc).__name__}: {strip_control(str(exc))[:200]}; traceback in {file.name}",
        file=sys.stderr,
    )
    return EXIT_BUG


#: the distributions ``--version --verbose`` reports (read from their metadata: nothing imported)
VERSION_PACKAGES = ("numpy", "ml_dtypes", "tensorflow", "keras", "torch", "jax", "jaxlib", "onnxruntime")


def version_text(verbose: bool = False) -> str:
    """``precision-explorer VERSION``; with ``verbose`` a line per framework (installed or not).

    >>> version_text().split()[0]
    'precision-explorer'
    """
    from importlib import metadata

    text = f"precision-explorer {metadata.version('precision-explorer')}"
    if not verbose:
        return text
    lines = [text, f"Python {sys.version.split()[0]}"]
    for name in VERSION_PACKAGES:
        try:
            lines.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            lines.append(f"{name} not installed")
    return "\n".join(lines)
