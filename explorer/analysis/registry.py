"""Loading TensorFlow's kernel registry: once per process, from a disk cache, or from a sandbox worker.

The data and the rules to query it are TensorFlow knowledge and live beside the TensorFlow
backend (:mod:`explorer.backends.tensorflow_registry`); this module decides where the data
comes from.

>>> from explorer.analysis.registry import get_registry
>>> get_registry().declared("Cholesky", "bfloat16", "CPU").value
'unsupported_dtype'
"""

from __future__ import annotations

import importlib.metadata
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


def _disk_key() -> str:
    try:
        version = importlib.metadata.version("tensorflow")
    except importlib.metadata.PackageNotFoundError:
        version = "none"
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
    ``"sandbox"`` in the TensorFlow sandbox worker, ``"auto"`` here when TensorFlow
    is already imported, else in the worker.  The parsed data is cached in the
    cache directory keyed by the TensorFlow version, so later processes need no
    TensorFlow import at all; ``refresh=True`` re-reads it.
    """
    global _REGISTRY
    if where not in ("auto", "here", "sandbox"):
        raise ValueError(f"unknown where {where!r}; valid: auto, here, sandbox")
    if _REGISTRY is not None and not refresh:
        return _REGISTRY
    from explorer.analysis.envcache import cache_dir_or_none, read_cache_json, warn_once, write_cache_json

    directory = cache_dir_or_none()
    path = None if directory is None else directory / _disk_key()
    data: Any = None if refresh or path is None else read_cache_json(path, expect=_DISK_SHAPE)
    from_disk = data is not None and data["data_version"] == DATA_VERSION
    if not from_disk:
        if where == "auto":
            where = "here" if "tensorflow" in sys.modules else "sandbox"
        if where == "here":
            data = read_registry_data()
        else:
            from explorer.analysis.probe import warm_worker
            from explorer.sandbox import default_sandbox

            box = default_sandbox()
            data = box.call(warm_worker(box, "tensorflow"), read_registry_data, timeout=300.0)
        if path is not None:
            write_cache_json(path, data)
    try:
        _REGISTRY = Registry(data)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        if not from_disk:
            raise
        warn_once(str(path), f"registry cache {path} is damaged ({type(exc).__name__}: {exc}); rebuilding it")
        return get_registry(where, refresh=True)
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
    "get_registry",
    "read_registry_data",
    "registry_device",
    "time_registry",
]
