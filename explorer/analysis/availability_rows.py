"""The columns of an availability row, and the modes a user may ask for: the schema the
availability query, the CLI's ``--json`` and snapshots share."""

from __future__ import annotations

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
