"""Progress on stderr for the verbs that take seconds: a tqdm bar when stderr is a terminal,
nothing when it is piped or the answer is ``--json`` (:func:`wanted`, :func:`bar`,
:func:`elapsed`).

Plain ``tqdm`` on stderr, never ``tqdm.auto``: that one picks its notebook bar whenever an
IPython shell exists in the process, and that bar prints to stdout among the answer.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from typing import IO, Any

#: seconds between two updates of an elapsed-time bar
TICK = 0.5


def wanted(json_output: bool, stream: IO[str] | None = None) -> bool:
    """True when progress should be shown: not ``--json``, and ``stream`` (default stderr) is a
    terminal.

    >>> import io
    >>> wanted(False, io.StringIO()), wanted(True, io.StringIO())
    (False, False)
    """
    target = sys.stderr if stream is None else stream
    isatty = getattr(target, "isatty", None)
    return not json_output and callable(isatty) and bool(isatty())


def bar(total: int, desc: str, unit: str, enabled: bool, stream: IO[str] | None = None) -> Any:
    """A tqdm bar of ``total`` steps on ``stream`` (default stderr), or None when not ``enabled``
    or there is nothing to count."""
    if not enabled or total <= 0:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr if stream is None else stream, leave=False)


@contextlib.contextmanager
def elapsed(desc: str, enabled: bool, stream: IO[str] | None = None) -> Iterator[None]:
    """While the context lasts, a tqdm line of the seconds spent on ``desc`` (for a call that
    reports no steps of its own), refreshed every :data:`TICK` seconds; nothing when not
    ``enabled``."""
    if not enabled:
        yield
        return
    from tqdm import tqdm

    from explorer.runtime.threads import start_daemon

    line = tqdm(
        desc=desc, bar_format="{desc}: {elapsed}", file=sys.stderr if stream is None else stream, leave=False
    )
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(TICK):
            line.refresh()

    thread = start_daemon(tick, name="explorer-cli-progress")
    try:
        yield
    finally:
        stop.set()
        thread.join(TICK * 4)
        line.close()
