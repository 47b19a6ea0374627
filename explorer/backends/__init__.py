"""Backends behind one interface, by name.

>>> from explorer.backends import get_backend
>>> get_backend("numpy").run("exp", "float16").status.value
'ok'
"""

from __future__ import annotations

import difflib

from explorer.backends.base import DEVICE_TYPES, MODES, Backend, check_mode, normalize_device
from explorer.backends.emulated import EmulatedBackend
from explorer.backends.jax_backend import JaxBackend
from explorer.backends.numpy_backend import NumpyBackend
from explorer.backends.onnxruntime_backend import OnnxruntimeBackend
from explorer.backends.tensorflow_backend import TensorflowBackend
from explorer.backends.torch_backend import TorchBackend

BACKEND_NAMES: tuple[str, ...] = ("tensorflow", "numpy", "emulated", "torch", "jax", "onnxruntime")

_CLASSES: dict[str, type[Backend]] = {
    "tensorflow": TensorflowBackend,
    "numpy": NumpyBackend,
    "emulated": EmulatedBackend,
    "torch": TorchBackend,
    "jax": JaxBackend,
    "onnxruntime": OnnxruntimeBackend,
}
_INSTANCES: dict[str, Backend] = {}


def get_backend(name: str | Backend) -> Backend:
    """The backend called ``name`` (one shared instance per name)."""
    if isinstance(name, Backend):
        return name
    if not isinstance(name, str):
        raise TypeError(f"backend name must be a string, got {type(name).__name__}")
    key = name.strip().lower()
    key = {
        "tf": "tensorflow",
        "np": "numpy",
        "ml_dtypes": "emulated",
        "pytorch": "torch",
        "ort": "onnxruntime",
    }.get(key, key)
    if key not in _CLASSES:
        close = difflib.get_close_matches(key, list(_CLASSES), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else "."
        raise ValueError(f"unknown backend {name!r}{hint} Valid backends: {', '.join(BACKEND_NAMES)}")
    if key not in _INSTANCES:
        _INSTANCES[key] = _CLASSES[key]()
    return _INSTANCES[key]


def backend_modes() -> dict[str, tuple[str, ...]]:
    """The modes each backend runs in (its :attr:`Backend.modes`), by name; no framework is imported.

    >>> backend_modes()["torch"], backend_modes()["numpy"]
    (('eager', 'compile'), ('eager',))
    """
    return {name: _CLASSES[name].modes for name in BACKEND_NAMES}


def installed_backends() -> list[str]:
    """Names of the backends whose framework can be imported here."""
    return [n for n in BACKEND_NAMES if get_backend(n).is_installed()]


__all__ = [
    "BACKEND_NAMES",
    "DEVICE_TYPES",
    "MODES",
    "Backend",
    "backend_modes",
    "check_mode",
    "get_backend",
    "installed_backends",
    "normalize_device",
]
