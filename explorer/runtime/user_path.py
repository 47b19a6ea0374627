"""A user's path, checked before it is opened: a regular file, or a refusal that says what it is."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def _refuse(name: str, why: str) -> ValueError:
    return ValueError(f"{name!r} {why}")


def regular_file(name: str) -> Path:
    """``name`` as a path to a regular file (a symbolic link to one is followed), else a
    ValueError that says what it is (a dangling link, a link to a folder, a folder, a device...);
    FileNotFoundError when nothing is there."""
    file = Path(name)
    try:
        link = file.lstat()
    except FileNotFoundError:
        raise FileNotFoundError(f"no such file: {name!r}") from None
    except OSError as exc:
        raise _refuse(name, f"cannot be read ({exc.strerror or type(exc).__name__})") from None
    if stat.S_ISLNK(link.st_mode):
        target = os.readlink(file)
        if not file.exists():
            raise _refuse(name, f"is a symbolic link to {target!r}, which does not exist")
        if not file.is_file():
            raise _refuse(name, f"is a symbolic link to {target!r}, which is not a regular file")
    elif not stat.S_ISREG(link.st_mode):
        kind = "a directory" if stat.S_ISDIR(link.st_mode) else "not a regular file"
        raise _refuse(name, f"is {kind}")
    return file
