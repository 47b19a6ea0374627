"""The Precision Explorer app (ipywidgets): ``explorer.App()``.

Imported lazily by ``explorer.App``; ``import explorer`` never loads widgets, and neither does
importing a light submodule such as :mod:`explorer.app.preview` (``App`` and ``AppState`` load
on first use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from explorer.app.main import App
    from explorer.app.state import AppState

__all__ = ["App", "AppState"]


def __getattr__(name: str) -> Any:
    if name == "App":
        from explorer.app.main import App

        return App
    if name == "AppState":
        from explorer.app.state import AppState

        return AppState
    raise AttributeError(f"module 'explorer.app' has no attribute {name!r}")
