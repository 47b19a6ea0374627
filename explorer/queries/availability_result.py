"""The result of an availability query: its rows (a DataFrame), where they come from, and the
rows as plain dicts or typed :class:`~explorer.analysis.availability_rows.AvailabilityRow`\\ s.

>>> import pandas as pd
>>> from explorer.analysis.availability_rows import EXTRA_DEFAULTS, EXTRA_KEYS, ROW_KEYS
>>> row = {**dict.fromkeys(ROW_KEYS, ""), **EXTRA_DEFAULTS, "op": "exp", "raw_op": "Exp", "mode": "xla"}
>>> res = AvailabilityResult(pd.DataFrame([row], columns=[*ROW_KEYS, *EXTRA_KEYS]))
>>> res.filter(name="exp", mode="xla").typed_rows()[0].raw_op
'Exp'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from explorer.analysis.availability_rows import EXTRA_KEYS, ROW_KEYS, AvailabilityRow


@dataclass
class AvailabilityResult:
    """Rows (a DataFrame with :data:`ROW_KEYS` + :data:`EXTRA_KEYS`) and where they come from."""

    rows: Any
    #: versions, platform, CPU model, device names
    environment: dict[str, Any] = field(default_factory=dict)
    #: wall-clock seconds the sweep took
    seconds: float = 0.0
    #: probes actually run now (not from the cache; rows of backends not installed are neither)
    probed: int = 0
    #: probe rows taken from the cache
    cached: int = 0

    def disagreements(self) -> Any:
        """Rows where the registry and the run disagree, with the reason."""
        return self.rows[self.rows["disagreement"].astype(bool)]

    def records(self, full: bool = False) -> list[dict[str, Any]]:
        """Rows as plain dicts (only :data:`ROW_KEYS` unless ``full``)."""
        cols = list(ROW_KEYS) + (list(EXTRA_KEYS) if full else [])
        frame = self.rows[cols]  # column by column: DataFrame.to_dict boxes every value on its own
        columns = [[_plain(v) for v in frame[c].tolist()] for c in cols]
        return [dict(zip(cols, values, strict=True)) for values in zip(*columns, strict=True)]

    def typed_rows(self) -> list[AvailabilityRow]:
        """Rows as :class:`AvailabilityRow`\\ s, in row order, with the values of ``records(full=True)``."""
        return [AvailabilityRow(**record) for record in self.records(full=True)]

    def filter(self, group: str | None = None, name: str | None = None, **equal: Any) -> AvailabilityResult:
        """Rows of one op group and/or whose op or raw op contains ``name``; ``equal``
        keeps rows whose column equals the value (e.g. ``mode="eager"``)."""
        rows = filter_rows(self.rows, group=group, name=name, **equal)
        return AvailabilityResult(rows, self.environment, self.seconds, self.probed, self.cached)


#: types a row value already has when it needs no conversion (the common case, checked first)
_PLAIN_TYPES = frozenset({str, bool, int, type(None)})


def _plain(value: Any) -> Any:
    if type(value) in _PLAIN_TYPES:
        return value
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, float) and value != value:  # NaN from pandas
        return None
    return value


def filter_rows(rows: Any, group: str | None = None, name: str | None = None, **equal: Any) -> Any:
    """Filter an availability DataFrame by op group, name substring and column values."""
    from explorer.ops import GROUPS

    mask = rows["op"].notna()
    if group is not None:
        if group not in GROUPS:
            raise ValueError(f"unknown group {group!r}; valid groups: {', '.join(GROUPS)}")
        mask &= rows["group"] == group
    if name:
        key = name.lower()
        mask &= rows["op"].str.lower().str.contains(key, regex=False) | rows[
            "raw_op"
        ].str.lower().str.contains(key, regex=False)
    for column, value in equal.items():
        if column not in rows.columns:
            raise ValueError(f"unknown column {column!r}; valid: {', '.join(rows.columns)}")
        mask &= rows[column] == value
    return rows[mask].reset_index(drop=True)
