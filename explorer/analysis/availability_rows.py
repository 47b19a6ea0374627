"""The columns of an availability row, and the modes a user may ask for: the schema the
availability query, the CLI's ``--json`` and snapshots share; :class:`AvailabilityRow` is one
row with a field per column.

>>> from dataclasses import fields
>>> ROW_KEYS + EXTRA_KEYS == tuple(f.name for f in fields(AvailabilityRow))
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from explorer.backends.base import MODES

#: the keys of every row, in order (``precision-explorer kernels --json``)
ROW_KEYS: tuple[str, ...] = (
    "backend",
    "op",
    "raw_op",
    "dtype",
    "device",
    "mode",
    "status",
    "error",
    "explanation",
    "workaround",
)
#: further columns of :attr:`AvailabilityResult.rows`
#: values of the further columns before a row fills them (and where a snapshot leaves them out)
EXTRA_DEFAULTS: dict[str, Any] = {
    "group": "",
    "tf_public": "",
    "declared": None,
    "disagreement": "",
    "detail": "",
    "phase": "",
    "workaround_how": "",
    "ran_on": None,
    "result_dtype": None,
    "seconds": 0.0,
    "cached": False,
}
EXTRA_KEYS: tuple[str, ...] = tuple(EXTRA_DEFAULTS)
#: modes a user may ask for: ``registry`` (declared) and every mode a backend runs in
AVAILABILITY_MODES: tuple[str, ...] = ("registry", *MODES)
#: modes of a sweep that names none: every mode but ``compile``, which is asked for by name
#: (``torch.compile`` builds C++ code with Inductor for each op and dtype, where an eager probe
#: calls one kernel; ``benchmarks/bench_frameworks.py`` times both)
DEFAULT_AVAILABILITY_MODES: tuple[str, ...] = tuple(m for m in AVAILABILITY_MODES if m != "compile")


@dataclass(frozen=True)
class AvailabilityRow:
    """One availability row, typed: a field per column of :data:`ROW_KEYS` + :data:`EXTRA_KEYS`,
    in that order (:meth:`explorer.queries.availability_result.AvailabilityResult.typed_rows`).

    Values are those of ``records(full=True)``: plain Python, a missing number (NaN) as None.

    >>> row = AvailabilityRow(**dict(dict.fromkeys(ROW_KEYS, ""), **EXTRA_DEFAULTS, op="exp"))
    >>> row.op, row.seconds, row.cached
    ('exp', 0.0, False)
    """

    #: ``tensorflow``, ``numpy``, ``emulated``, ``torch``, ``jax``
    backend: str
    #: the catalog op (or a raw op without a catalog entry)
    op: str
    #: the raw TensorFlow op(s), comma-separated (PyTorch rows: the OpInfo name)
    raw_op: str
    #: the format name (``float16``, ``bfloat16``...)
    dtype: str
    #: ``CPU`` / ``GPU``, or in mode ``registry`` the registry device type (``XLA_CPU_JIT``...)
    device: str
    #: ``registry`` (declared) or a mode the backend runs in (``eager``, ``xla``, ``compile``)
    mode: str
    #: an :class:`explorer.outcome.Status` value
    status: str
    #: the error a probe raised ("" when none)
    error: str
    #: the row in plain words
    explanation: str
    #: code that worked where the cell did not ("" when none was needed or found)
    workaround: str
    #: the catalog op's group
    group: str
    #: TensorFlow's public call for the op
    tf_public: str
    #: what the registry (or PyTorch's OpInfo) declares; None when it says nothing
    declared: str | None
    #: why the registry and the run disagree ("" when they agree)
    disagreement: str
    #: the probe's detail line
    detail: str
    #: where a probe stopped (an :data:`explorer.outcome.PHASES` value, "" when not known)
    phase: str | None
    #: the workaround in words
    workaround_how: str
    #: the device the probe's result came back from
    ran_on: str | None
    #: the dtype of the probe's result
    result_dtype: str | None
    #: seconds the probe took
    seconds: float | None
    #: whether the probe record came from the probe store
    cached: bool
