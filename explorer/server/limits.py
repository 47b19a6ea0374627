"""How many kernels the workshop server runs at once, by default.

A visitor who only looks imports no TensorFlow in their kernel: 150-230 MiB resident
(``python benchmarks/bench_visitor_memory.py``), against ~706 MB when every kernel imported
TensorFlow.  TensorFlow runs in worker processes: training workers are bounded for the whole
machine (``--training-slots``); probe and sweep workers stop when idle.  The default cap is
what three quarters of the machine's memory holds at :data:`KERNEL_MEMORY_BYTES` each,
between 1 and :data:`DEFAULT_MAX_KERNELS`.
"""

from __future__ import annotations

from pathlib import Path

#: The cap when the memory is unknown, and the most the default ever allows.
DEFAULT_MAX_KERNELS = 40
#: Memory assumed per visitor's kernel (no TensorFlow in it), with headroom for its workers.
KERNEL_MEMORY_BYTES = 384 * 2**20
#: Share of the machine's memory the kernels may take by default.
MEMORY_SHARE = 0.75
#: Default seconds a page's kernel stays quiet without its websocket before it is given back
#: (:class:`explorer.server.kernels.CappedKernelManager`).
DEFAULT_CONNECT_GRACE_S = 20.0
#: Default kernel starts per client address per :data:`RATE_WINDOW_S`.
DEFAULT_CLIENT_STARTS = 10
#: The window of the per-client limit, in seconds.
RATE_WINDOW_S = 60.0


def total_memory_bytes(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """``MemTotal`` from ``/proc/meminfo`` in bytes; None where it cannot be read (not Linux)."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def default_max_kernels(total_bytes: int | None = None) -> int:
    """The default ``--max-kernels``: kernels that fit in 3/4 of the memory, 1 to 40.

    >>> default_max_kernels(8 * 2**30), default_max_kernels(2**40), default_max_kernels(2**28)
    (16, 40, 1)
    """
    if total_bytes is None:
        total_bytes = total_memory_bytes()
    if total_bytes is None:
        return DEFAULT_MAX_KERNELS
    return max(1, min(DEFAULT_MAX_KERNELS, int(total_bytes * MEMORY_SHARE // KERNEL_MEMORY_BYTES)))
