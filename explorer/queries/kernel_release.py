"""One kernel cell in one TensorFlow release: what the Kernels tab's details panel tells when a
release chip (or a heatmap cell) is pressed — the release's status for the cell, the float dtypes
that release registers a kernel for on the device type, and the workaround from the catalogue
(:func:`explorer.runtime.workarounds.candidates`) when the wider dtype has a kernel there.

Read from the registries shipped with explorer (:mod:`explorer.analysis.releases`): no
TensorFlow import.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReleaseCell:
    """Raw op × dtype × registry device type in one shipped release."""

    #: the release, as pip names it
    version: str
    raw_op: str
    dtype: str
    #: the registry device type (``CPU``, ``GPU``, ``XLA_CPU_JIT``, ...)
    device_type: str
    #: ``ok``, ``no_kernel``, ``unsupported_dtype`` or ``absent``
    status: str
    #: why ``absent`` (empty otherwise)
    reason: str
    #: the float dtypes the release registers a kernel for (op × device type), in its order
    registered: tuple[str, ...]
    #: the dtype a workaround computes in (float32; float64 for float32), or "" when none applies
    wide: str
    #: the workaround in words and its code (both "" when none applies)
    workaround_how: str
    workaround_code: str

    @property
    def title(self) -> str:
        """``"Range · float16 · CPU in TensorFlow 2.17.1"``."""
        return f"{self.raw_op} · {self.dtype} · {self.device_type} in TensorFlow {self.version}"


def release_cell(op: str | None, raw_op: str, dtype: str, device_type: str, version: str) -> ReleaseCell:
    """``raw_op`` × ``dtype`` × ``device_type`` in shipped release ``version``; ``op`` (a catalog
    op running the raw op, or None) names the workaround's code.  ValueError for a release, op or
    device type no shipped release has.

    >>> cell = release_cell("range", "Range", "float16", "CPU", "2.17.1")
    >>> cell.status, "float16" in cell.registered, "float32" in cell.registered
    ('no_kernel', False, True)
    >>> cell.workaround_how
    'create it in float32 on CPU (eagerly), then cast to float16'
    """
    from explorer.analysis import releases

    entry = releases.declared_in(version, raw_op, dtype, device_type)
    registered: tuple[str, ...] = ()
    if entry.status != releases.ABSENT or "dtype" in entry.reason:
        floats = releases.release_float_dtypes(version)
        registered = tuple(
            d for d in floats if releases.declared_in(version, raw_op, d, device_type).status == "ok"
        )
    wide = "float64" if dtype == "float32" else "float32"
    how = code = ""
    if entry.status != "ok" and dtype != "float64" and wide in registered and op is not None:
        how, code = _catalogue_workaround(op, dtype, wide, device_type)
    return ReleaseCell(
        version,
        raw_op,
        dtype,
        device_type,
        entry.status,
        entry.reason,
        registered,
        wide if how else "",
        how,
        code,
    )


def _catalogue_workaround(op: str, dtype: str, wide: str, device_type: str) -> tuple[str, str]:
    """The catalogue's "compute (or create) in ``wide``, then cast" workaround for ``op``, as
    ``(how, code)``; ``("", "")`` when the catalogue has none (an op not in the catalog)."""
    from explorer.ops import catalog
    from explorer.runtime.workarounds import candidates, lesson_code

    if op not in catalog():
        return "", ""
    device = "GPU" if "GPU" in device_type else "CPU"
    mode = "xla" if device_type.startswith("XLA_") else "eager"
    for how, code in candidates("tensorflow", op, dtype, device, mode, [], [device]):
        if f" in {wide} " in how:
            return how, lesson_code(code)
    return "", ""
