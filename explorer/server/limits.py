"""How many kernels the workshop server runs at once, by default.

A visitor's kernel with TensorFlow imported held ~706 MB (issue 15: 20 visitors took
14 GB), so the default cap is what three quarters of the machine's memory holds at
:data:`KERNEL_MEMORY_BYTES` each, between 1 and :data:`DEFAULT_MAX_KERNELS`.
"""

from __future__ import annotations

from pathlib import Path

#: The cap when the memory is unknown, and the most the default ever allows.
DEFAULT_MAX_KERNELS = 40
#: Memory assumed per visitor's kernel (TensorFlow imported), with some headroom.
KERNEL_MEMORY_BYTES = 768 * 2**20
#: Share of the machine's memory the kernels may take by default.
MEMORY_SHARE = 0.75


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
    (8, 40, 1)
    """
    if total_bytes is None:
        total_bytes = total_memory_bytes()
    if total_bytes is None:
        return DEFAULT_MAX_KERNELS
    return max(1, min(DEFAULT_MAX_KERNELS, int(total_bytes * MEMORY_SHARE // KERNEL_MEMORY_BYTES)))
