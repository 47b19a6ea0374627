"""Which ``--op`` names are catalog ops and which are TensorFlow raw ops: the spelling rule.

A catalog op is named as the catalog spells it (``exp``, ``qr``) or in any other case (``EXP``)
unless that spelling is a raw op; a name spelled exactly as TensorFlow spells a raw op
(``Exp``, ``Qr``) is that raw op alone.  ``precision-explorer kernels`` resolves its names with
the installed (or asked-for) registry, ``--history`` with the raw op names of every shipped
release (:class:`ShippedOpNames`).
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any


def resolve_op_names(names: list[str], registry: Callable[[], Any]) -> tuple[list[str], list[str]]:
    """``--op`` names as (catalog op names, TensorFlow raw op names), by the rule of ``--help``.

    In order: a catalog name as written; a raw op as TensorFlow spells it; a catalog name in
    any case; a raw op in any case (as TensorFlow spells it).  ``registry()`` gives the
    TensorFlow registry (``ops``, ``has_op``, ``op``); it is only asked when a name is not a
    catalog name as written.  ValueError (the catalog's, with close matches) for any other name.

    >>> class Reg:
    ...     ops = {"Qr": None, "Exp": None}
    ...     def has_op(self, name): return name.lower() in ("qr", "exp")
    ...     def op(self, name): return type("Info", (), {"name": name.capitalize()})
    >>> resolve_op_names(["qr", "Qr", "EXP", "exp"], Reg)
    (['qr', 'exp'], ['Qr'])
    """
    from explorer.ops import catalog, get_op

    ops = catalog()
    catalog_ops: list[str] = []
    raw_ops: list[str] = []
    reg: Any = None
    for name in names:
        if name in ops:
            catalog_ops.append(name)
            continue
        if reg is None:
            reg = registry()
        if name in reg.ops:
            raw_ops.append(name)
        elif name.lower() in ops:
            catalog_ops.append(name.lower())
        elif reg.has_op(name):
            raw_ops.append(reg.op(name).name)
        else:
            get_op(name)  # raises the catalog's ValueError with close matches
    return list(dict.fromkeys(catalog_ops)), list(dict.fromkeys(raw_ops))


class ShippedOpNames:
    """The raw op names of every shipped release, answering what :func:`resolve_op_names` asks a
    registry (``name in reg.ops``, ``has_op``, ``op(name).name``) without reading a registry.

    >>> names = ShippedOpNames()
    >>> "Range" in names.ops, "range" in names.ops, names.has_op("range"), names.op("range").name
    (True, False, True, 'Range')
    """

    def __init__(self) -> None:
        from explorer.analysis.releases import known_op

        self._known = known_op
        self.ops = self  # ``name in reg.ops``: spelled exactly as a shipped release spells it

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._known(name) == name

    def has_op(self, name: str) -> bool:
        """True when some shipped release has raw op ``name`` (any case)."""
        return self._known(name) is not None

    def op(self, name: str) -> Any:
        """An object whose ``name`` is the raw op's spelling."""
        return SimpleNamespace(name=self._known(name))


__all__ = ["ShippedOpNames", "resolve_op_names"]
