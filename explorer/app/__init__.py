"""The Precision Explorer app (ipywidgets): ``explorer.App()``.

Imported lazily by ``explorer.App``; ``import explorer`` never loads widgets.
"""

from __future__ import annotations

from explorer.app.main import App
from explorer.app.state import AppState

__all__ = ["App", "AppState"]
