"""Readings of ``/proc``: a process's resident memory, start time and command line, whether it
loaded TensorFlow; the machine's free memory and load.  Each returns None (or empty) when the
process is gone or the file cannot be read, never raises.

>>> import os
>>> vm_rss_bytes(os.getpid()) > 0, start_time(os.getpid()) is not None, mib(3 * 2**20)
(True, True, 3.0)
"""

from __future__ import annotations

from pathlib import Path


def vm_rss_bytes(pid: int) -> int | None:
    """Resident memory of ``pid`` (``VmRSS`` in ``/proc/PID/status``) in bytes; None if gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def tensorflow_loaded(pid: int) -> bool | None:
    """Whether ``pid`` has TensorFlow's shared library mapped; None if it cannot be read."""
    try:
        with open(f"/proc/{pid}/maps", "rb") as fh:
            return any(b"libtensorflow" in line or b"_pywrap_tensorflow" in line for line in fh)
    except OSError:
        return None


def meminfo_bytes(key: str) -> int | None:
    """A field of ``/proc/meminfo`` (``MemAvailable``, ``MemTotal``) in bytes."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages."""
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except (OSError, ValueError):
        return []


def start_time(pid: int) -> int | None:
    """The start time of ``pid`` (clock ticks after boot, ``/proc/PID/stat``); None if gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def mib(value: float | None) -> float | None:
    return None if value is None else round(value / 2**20, 1)
