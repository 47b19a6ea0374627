"""Small adapters between the app and the engine modules (filled in as the engines land)."""

from __future__ import annotations

from typing import Any

from explorer.app import engines
from explorer.app.context import AppContext


def registry_device_summary(ctx: AppContext, op: str, dtypes: tuple[str, ...]) -> tuple[Any, Any]:
    """(ops with a registered kernel per device type × dtype, the op's status per device × dtype)."""
    engines.module("analysis.registry")
    raise engines.NotAvailableYet("The registry summary is not wired yet.")
