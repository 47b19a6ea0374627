"""Write a file whole or not at all: a temporary file in the same folder, renamed over it.

A reader (or a crash) never sees a half-written file: the payload goes to a temporary file
beside the target, is flushed to disk, and ``os.replace`` puts it in place in one step.  On
failure the target is as it was and the temporary file is removed.  No folder is created.

>>> import tempfile
>>> from pathlib import Path
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = write_bytes_atomically(Path(tmp) / "a.txt", b"whole")
...     path.read_bytes(), sorted(p.name for p in Path(tmp).iterdir())
(b'whole', ['a.txt'])
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path


def write_bytes_atomically(path: str | os.PathLike[str], payload: bytes) -> Path:
    """Write ``payload`` to ``path`` atomically; returns the path.  OSError (with nothing left
    behind and ``path`` unchanged) when it cannot be written, e.g. its folder does not exist.
    A replaced file keeps its permissions; a new one gets ``0o666`` less the umask."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            if hasattr(os, "fchmod"):  # not on Windows before Python 3.13
                os.fchmod(handle.fileno(), file_mode(target))
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target


def file_mode(target: Path) -> int:
    """Permissions for a file written to ``target``: the replaced file's, else 0o666 less the
    umask (as ``open`` would give; a temporary file starts as 0o600)."""
    with contextlib.suppress(OSError):
        return stat.S_IMODE(os.stat(target).st_mode)
    umask = 0o022
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("Umask:"):
                umask = int(line.split()[1], 8)
    return 0o666 & ~umask
