"""The environment a result belongs to, and a small on-disk JSON cache keyed by it.

The cache lives in ``$PX_CACHE_DIR`` when set, else the user cache directory
(``platformdirs``; ``~/.cache/precision-explorer`` on Linux).  Writes are atomic
(a temporary file in the same directory, then ``os.replace``); a cache file that cannot
be read, parsed or is of the wrong shape is removed and rebuilt by the caller, never
fatal; a cache directory that cannot be used means "no cache" (one warning).  The probe
records themselves live in a SQLite store (:mod:`explorer.runtime.probe_store`).

Nothing here imports a framework: versions come from package metadata, so the
environment key is cheap enough for a cached answer in well under a second.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import importlib.metadata
import json
import logging
import os
import platform
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from explorer.runtime.atomic_file import write_bytes_atomically

log = logging.getLogger(__name__)

#: packages whose versions change what a probe returns
FRAMEWORKS: tuple[str, ...] = (
    "tensorflow",
    "numpy",
    "ml_dtypes",
    "torch",
    "jax",
    "jaxlib",
    "precision-explorer",
)


class CacheUnavailable(OSError):
    """The cache directory cannot be used (``$PX_CACHE_DIR`` is a file, or not writable)."""


#: (path, reason) pairs already warned about in this process (one line per problem, not per call)
_WARNED: set[tuple[str, str]] = set()


def warn_once(path: str | Path, reason: str) -> None:
    """Log ``reason`` about ``path`` as a warning, once per process."""
    key = (str(path), reason)
    if key not in _WARNED:
        _WARNED.add(key)
        log.warning("%s", reason)


def _default_cache_dir() -> Path:
    env = os.environ.get("PX_CACHE_DIR")
    if env:
        return Path(env)
    try:
        import platformdirs

        return Path(platformdirs.user_cache_dir("precision-explorer"))
    except ImportError:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return Path(base) / "precision-explorer"


def cache_dir() -> Path:
    """The cache directory (created): ``$PX_CACHE_DIR`` or the platform user cache dir.

    Raises :class:`CacheUnavailable` when it cannot be created or written to; callers
    that can do without a cache use :func:`cache_dir_or_none`.
    """
    path = _default_cache_dir()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CacheUnavailable(f"cache directory {path} cannot be created ({exc})") from None
    if not path.is_dir():
        raise CacheUnavailable(f"cache directory {path} is not a directory")
    if not os.access(path, os.W_OK | os.X_OK):
        raise CacheUnavailable(f"cache directory {path} is not writable")
    return path


def cache_dir_or_none() -> Path | None:
    """:func:`cache_dir`, or None (no cache, with one warning) when it cannot be used.

    >>> import os, tempfile
    >>> from unittest import mock
    >>> with tempfile.NamedTemporaryFile() as f, mock.patch.dict(os.environ, PX_CACHE_DIR=f.name):
    ...     print(cache_dir_or_none())  # a file, not a directory
    None
    """
    try:
        return cache_dir()
    except CacheUnavailable as exc:
        warn_once(_default_cache_dir(), f"{exc}; working without a cache")
        return None


def read_cache_json(path: str | Path, expect: Mapping[str, type | tuple[type, ...]] | None = None) -> Any:
    """The JSON in the project's own cache file ``path``, or None when it is missing, corrupt
    or not of the ``expect``-ed shape (a dict whose keys hold values of those types).

    Self-repairing: a corrupt or misshapen file is removed (with one warning) so that the
    caller rebuilds it.  Only for cache files this project writes; user files use :func:`read_json`.

    >>> import json, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "c.json"
    ...     _ = path.write_text(json.dumps({"version": "one"}))
    ...     print(read_cache_json(path, expect={"version": int}), path.exists())
    None False
    """
    path = Path(path)
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        problem = "is a directory"
    except OSError as exc:
        warn_once(path, f"cache file {path} unreadable ({exc}); not using it")
        return None
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, nested too deep
        problem = f"is corrupt ({str(exc)[:200]})"
    else:
        problem = _shape_problem(data, expect)
        if not problem:
            return data
    log.warning("cache file %s %s; rebuilding it", path, problem)
    remove_or_move_aside(path)
    return None


def remove_or_move_aside(path: Path) -> None:
    """Remove a broken cache file; a directory in its place is renamed ``<name>.broken-<ns>``."""
    with contextlib.suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            path.rename(path.with_name(f"{path.name}.broken-{time.time_ns()}"))
        else:
            path.unlink()


def _shape_problem(data: Any, expect: Mapping[str, type | tuple[type, ...]] | None) -> str:
    if expect is None:
        return ""
    if not isinstance(data, dict):
        return f"holds a {type(data).__name__}, not an object"
    for key, kind in expect.items():
        if key not in data:
            return f"lacks {key!r}"
        value = data[key]
        if (isinstance(value, bool) and kind is int) or not isinstance(value, kind):
            return f"has a {type(value).__name__} for {key!r}"
    return ""


def read_json(path: str | Path) -> Any | None:
    """The JSON in ``path``, or None when it is missing or corrupt; the file is never touched.

    (Kept for callers of the old name; cache files use :func:`read_cache_json`.)
    """
    path = Path(path)
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError) as exc:
        log.warning("file %s unreadable or not JSON (%s)", path, str(exc)[:200])
        return None


def write_json_atomic(path: str | Path, data: Any) -> Path:
    """Write ``data`` as JSON to ``path`` atomically (temp file + ``os.replace``), making its
    folder (a cache folder of explorer's own) if need be."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_bytes_atomically(path, json.dumps(data, default=str).encode("utf-8"))


def write_cache_json(path: str | Path, data: Any) -> bool:
    """:func:`write_json_atomic` for a cache file: a failure (full disk, read-only directory,
    a directory in the way) is one warning and False, never an error."""
    try:
        write_json_atomic(path, data)
    except OSError as exc:
        warn_once(path, f"cache file {path} not written ({exc}); working without it")
        return False
    return True


def framework_versions() -> dict[str, str | None]:
    """Installed versions of the frameworks (None when absent), from package metadata."""
    versions: dict[str, str | None] = {}
    for name in FRAMEWORKS:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), or ``platform.processor()``."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_fingerprint() -> list[str]:
    """Cheap evidence of GPUs without importing a framework (NVIDIA driver entries, visible set)."""
    found = []
    for info in sorted(glob.glob("/proc/driver/nvidia/gpus/*/information")):
        try:
            with open(info, encoding="utf-8") as handle:
                model = next((ln.split(":", 1)[1].strip() for ln in handle if ln.startswith("Model")), "")
            found.append(model or os.path.basename(os.path.dirname(info)))
        except OSError:
            continue
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        found.append(f"CUDA_VISIBLE_DEVICES={visible}")
    return found


def environment() -> dict[str, Any]:
    """Where results come from: versions, Python, platform, CPU model, GPU evidence."""
    return {
        "versions": framework_versions(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "gpus": gpu_fingerprint(),
    }


#: the sources (globs under explorer/) that decide what a probe records: the op catalog, the
#: backends, the probe runner and the workaround code (written, then run)
FINGERPRINT_SOURCES: tuple[str, ...] = (
    "ops/*.py",
    "backends/*.py",
    "runtime/probe.py",
    "runtime/workaround*.py",
)


def code_fingerprint() -> str:
    """Hash of the sources that decide what a probe records (:data:`FINGERPRINT_SOURCES`)."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for pattern in FINGERPRINT_SOURCES:
        for path in sorted(root.glob(pattern)):
            with contextlib.suppress(OSError):
                digest.update(path.name.encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def environment_key(env: dict[str, Any] | None = None) -> str:
    """A short hash of the environment plus the code fingerprint: the cache key."""
    env = environment() if env is None else env
    text = json.dumps([env, code_fingerprint(), sys.version_info[:2]], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
