"""Lazy access to the engine modules the tabs render from.

The engines (``explorer.analysis.*`` and ``explorer.plots.*``) are imported on
first use.  A module or function that is not there yet becomes
:class:`~explorer.app.tab.NotAvailableYet`, which the tab shows as a calm
message instead of an error.
"""

from __future__ import annotations

import importlib
from typing import Any

from explorer.app.tab import NotAvailableYet


def module(name: str) -> Any:
    """Import ``explorer.<name>``; NotAvailableYet when it does not exist."""
    full = f"explorer.{name}"
    try:
        return importlib.import_module(full)
    except ModuleNotFoundError as exc:
        if exc.name and (exc.name == full or full.startswith(exc.name + ".") or exc.name.startswith(full)):
            raise NotAvailableYet(f"This view needs {full}, which is not available yet.") from None
        raise


def function(module_name: str, *names: str) -> Any:
    """The first of ``names`` that ``explorer.<module_name>`` defines."""
    mod = module(module_name)
    for name in names:
        if hasattr(mod, name):
            return getattr(mod, name)
    raise NotAvailableYet(f"explorer.{module_name} has no {' / '.join(names)} yet.")


def has(module_name: str) -> bool:
    """True when ``explorer.<module_name>`` can be found (without importing it)."""
    import importlib.util

    try:
        return importlib.util.find_spec(f"explorer.{module_name}") is not None
    except ModuleNotFoundError:
        return False
