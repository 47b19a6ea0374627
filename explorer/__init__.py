"""Precision Explorer: which ops run in which low-precision dtype on which device, where
each format overflows and underflows, how accurate each backend is, and whether mixed
precision still trains.

``import explorer`` is cheap: TensorFlow, PyTorch and the widgets load on first use.

>>> import explorer
>>> explorer.resolve("half").max
65504.0
"""

from __future__ import annotations

from typing import Any

from explorer.formats import Format, all_formats, all_values, decode, encode, resolve
from explorer.outcome import STATUSES, Outcome, Status

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # the app pulls in ipywidgets and matplotlib: load it only when asked for
    if name == "App":
        from explorer.app import App

        return App
    raise AttributeError(f"module 'explorer' has no attribute {name!r}")


__all__ = [
    "STATUSES",
    "App",
    "Format",
    "Outcome",
    "Status",
    "all_formats",
    "all_values",
    "decode",
    "encode",
    "resolve",
]
