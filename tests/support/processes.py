"""Waiting for what other processes do, and standing in for another process on the machine.

>>> wait_until(lambda: True, 1, "nothing to wait for")
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: ``python -c HOLD_A_SLOT PATH``: takes the lock on PATH (a worker slot's file), prints "held",
#: then sleeps: another visitor's kernel holding one of the machine's worker slots
HOLD_A_SLOT = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(600)
"""


def wait_until(
    predicate: Callable[[], object], seconds: float = 120.0, what: str = "", every: float = 0.05
) -> None:
    """Call ``predicate`` every ``every`` seconds until it is true; AssertionError naming ``what``
    after ``seconds`` (a generous bound, not a measurement)."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what or predicate} after {seconds:g} s")
        time.sleep(every)
