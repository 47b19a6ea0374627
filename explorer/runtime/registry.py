"""Loading TensorFlow's kernel registry: once per process, from a disk cache, from the registry
shipped for the installed release, or from a sandbox worker.

The data and the rules to query it are TensorFlow knowledge and live beside the TensorFlow
backend (:mod:`explorer.backends.tensorflow_registry`); this module decides where the data
comes from, and :func:`registry_source` says where it came from.

>>> from explorer.runtime.registry import get_registry
>>> get_registry().declared("Cholesky", "bfloat16", "CPU").value
'unsupported_dtype'
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
import time
from typing import Any

from explorer.backends.tensorflow_registry import (
    COMPUTE_DEVICE_TYPES,
    DATA_VERSION,
    REGISTRY_DEVICE,
    OpInfo,
    Registry,
    read_registry_data,
    registry_device,
)

_REGISTRY: Registry | None = None
#: where :data:`_REGISTRY` came from, in words (see :func:`registry_source`)
_SOURCE = ""
#: the platform the shipped registries were captured on (``scripts/capture_registries.py``):
#: the wheels of other platforms (macOS, Windows) register other kernels
SHIPPED_PLATFORM = "linux"


def installed_tensorflow_version() -> str | None:
    """The installed TensorFlow's version as pip names it (package metadata: no import), or None.

    >>> version = installed_tensorflow_version()
    >>> version is None or version[0].isdigit()
    True
    """
    try:
        return importlib.metadata.version("tensorflow")
    except importlib.metadata.PackageNotFoundError:
        return None


def _has_device_plugins() -> bool:
    """Whether pluggable-device plugins (``site-packages/tensorflow-plugins``) are installed: they
    register kernels of their own when TensorFlow loads, which no shipped registry has."""
    spec = importlib.util.find_spec("tensorflow")  # finds the package, does not import it
    if spec is None or not spec.submodule_search_locations:
        return False
    from pathlib import Path

    for location in spec.submodule_search_locations:
        plugins = Path(location).parent / "tensorflow-plugins"
        if plugins.is_dir() and any(plugins.iterdir()):
            return True
    return False


def shipped_installed_release() -> str | None:
    """The installed TensorFlow's release when explorer ships its registry and that file answers
    for this machine (the capture's platform, no pluggable-device plugins); else None.

    Reads package metadata and the shipped index; imports no TensorFlow.

    >>> release = shipped_installed_release()
    >>> release is None or release == installed_tensorflow_version()
    True
    """
    version = installed_tensorflow_version()
    if version is None or not sys.platform.startswith(SHIPPED_PLATFORM) or _has_device_plugins():
        return None
    from explorer.analysis import releases

    return version if version in releases.shipped_releases() else None


def registry_source() -> str:
    """Where the registry :func:`get_registry` returned came from, in words ("" before it was read):
    ``shipped 2.21.0 (captured ...)``, ``live TensorFlow 2.21.0, disk cache ...``, ``live
    TensorFlow 2.21.0, read in a sandbox worker`` or ``live TensorFlow 2.21.0, read in this process``.

    >>> reg = get_registry()
    >>> registry_source().startswith(("shipped", "live"))
    True
    """
    return _SOURCE


def available_without_tensorflow() -> bool:
    """Whether :func:`get_registry` can answer without importing TensorFlow or starting a worker:
    it was read already, the shipped registry of the installed release applies, or a disk cache
    of the live one exists.

    >>> isinstance(available_without_tensorflow(), bool)
    True
    """
    if _REGISTRY is not None or shipped_installed_release() is not None:
        return True
    from explorer.runtime.envcache import cache_dir_or_none

    directory = cache_dir_or_none()
    return directory is not None and (directory / _disk_key()).is_file()


def _disk_key() -> str:
    version = installed_tensorflow_version() or "none"
    return f"registry-v{DATA_VERSION}-tf{version}-py{sys.version_info[0]}{sys.version_info[1]}.json"


#: what a registry cache file must hold to be used (else it is rebuilt)
_DISK_SHAPE: dict[str, type] = {
    "data_version": int,
    "tf_version": str,
    "ops": dict,
    "kernels": dict,
    "float_dtypes": list,
}


def get_registry(where: str = "auto", refresh: bool = False) -> Registry:
    """The installed TensorFlow's registry, read once per process (and cached on disk).

    ``where``: ``"here"`` reads it in this process (imports TensorFlow),
    ``"sandbox"`` in the TensorFlow sandbox worker, ``"auto"`` from the disk cache, else
    from the registry explorer ships for the installed release
    (:func:`shipped_installed_release`: no TensorFlow import, no worker), else here when
    TensorFlow is already imported, else in the worker.  A live read is cached in the
    cache directory keyed by the TensorFlow version, so later processes need no
    TensorFlow import at all; ``refresh=True`` reads the live registry again (``here`` or
    ``sandbox``, as ``auto`` would choose without the cache).  :func:`registry_source` says
    where the answer came from.
    """
    global _REGISTRY, _SOURCE
    if where not in ("auto", "here", "sandbox"):
        raise ValueError(f"unknown where {where!r}; valid: auto, here, sandbox")
    if _REGISTRY is not None and not refresh:
        return _REGISTRY
    from explorer.runtime.envcache import cache_dir_or_none, read_cache_json, warn_once, write_cache_json

    directory = cache_dir_or_none()
    path = None if directory is None else directory / _disk_key()
    data: Any = None if refresh or path is None else read_cache_json(path, expect=_DISK_SHAPE)
    from_disk = data is not None and data["data_version"] == DATA_VERSION
    if not from_disk and where == "auto" and not refresh:
        release = shipped_installed_release()
        if release is not None:
            from explorer.analysis import releases

            _REGISTRY, _SOURCE = releases.release_registry(release), releases.release_source(release)
            return _REGISTRY
    if from_disk:
        source = f"live TensorFlow {data['tf_version']}, disk cache {path}"
    else:
        if where == "auto":
            where = "here" if "tensorflow" in sys.modules else "sandbox"
        if where == "here":
            data = read_registry_data()
        else:
            from explorer.runtime.probe import warm_worker
            from explorer.runtime.sandbox import default_sandbox

            box = default_sandbox()
            data = box.call(warm_worker(box, "tensorflow"), read_registry_data, timeout=300.0)
        if path is not None:
            write_cache_json(path, data)
        how = "in this process" if where == "here" else "in a sandbox worker"
        source = f"live TensorFlow {data.get('tf_version')}, read {how}"
    try:
        _REGISTRY = Registry(data)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        if not from_disk:
            raise
        warn_once(str(path), f"registry cache {path} is damaged ({type(exc).__name__}: {exc}); rebuilding it")
        return get_registry(where, refresh=True)
    _SOURCE = source
    return _REGISTRY


def time_registry(repeat: int = 3) -> dict[str, float]:
    """Seconds to read the registry from TensorFlow, to parse it, and to build the full matrix."""
    start = time.perf_counter()
    data = read_registry_data()
    read_s = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(repeat):
        reg = Registry(data)
    parse_s = (time.perf_counter() - start) / repeat
    start = time.perf_counter()
    for _ in range(repeat):
        frame = reg.matrix()
    matrix_s = (time.perf_counter() - start) / repeat
    return {
        "read_s": read_s,
        "parse_s": parse_s,
        "matrix_s": matrix_s,
        "cells": float(len(frame)),
        "ops": float(len(reg.ops)),
    }


__all__ = [
    "COMPUTE_DEVICE_TYPES",
    "REGISTRY_DEVICE",
    "OpInfo",
    "Registry",
    "available_without_tensorflow",
    "get_registry",
    "installed_tensorflow_version",
    "read_registry_data",
    "registry_device",
    "registry_source",
    "shipped_installed_release",
    "time_registry",
]
