"""The environment a result belongs to, and a small on-disk JSON cache keyed by it.

The cache lives in ``$PX_CACHE_DIR`` when set, else the user cache directory
(``platformdirs``; ``~/.cache/precision-explorer`` on Linux).  Writes are atomic
(a temporary file in the same directory, then ``os.replace``); a file that cannot
be read or parsed is treated as absent (and rebuilt by the caller), never fatal.

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
import tempfile
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: packages whose versions change what a probe returns
FRAMEWORKS: tuple[str, ...] = ("tensorflow", "numpy", "ml_dtypes", "torch", "precision-explorer")


def cache_dir() -> Path:
    """The cache directory (created): ``$PX_CACHE_DIR`` or the platform user cache dir."""
    env = os.environ.get("PX_CACHE_DIR")
    if env:
        path = Path(env)
    else:
        try:
            import platformdirs

            path = Path(platformdirs.user_cache_dir("precision-explorer"))
        except ImportError:
            base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
            path = Path(base) / "precision-explorer"
    path.mkdir(parents=True, exist_ok=True)
    return path


def read_json(path: str | Path) -> Any | None:
    """The JSON in ``path``, or None when it is missing or corrupt (a corrupt file is removed)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("cache file %s unreadable (%s); rebuilding it", path, exc)
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        log.warning("cache file %s is corrupt (%s); rebuilding it", path, exc)
        with contextlib.suppress(OSError):
            path.unlink()
        return None


def write_json_atomic(path: str | Path, data: Any) -> Path:
    """Write ``data`` as JSON to ``path`` atomically (temp file + ``os.replace``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, default=str)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


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


def code_fingerprint() -> str:
    """Hash of the sources that decide what a probe records (op catalog, backends, probe runner)."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for pattern in (
        "ops.py",
        "backends/*.py",
        "analysis/probe.py",
        "analysis/workarounds.py",
    ):
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
