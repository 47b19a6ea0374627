"""What TensorFlow's shipped releases say about a parsed error: which releases list exactly the
kernels the message lists (the message is evidence of the user's release), and the history of
the op × dtype × device over the releases.

Pure: the facts come from :mod:`explorer.analysis.releases` (the shipped registries' data) and
the parsed message (:func:`explorer.analysis.error_text.parse_error`).

>>> from explorer.analysis.error_text import parse_error
>>> parsed = parse_error("Could not find device for node: {{node Range}} = Range[Tidx=DT_HALF]")
>>> history_device(parsed)
('CPU', '')
>>> tf_history(canonical_raw_op(parsed.raw_op), parsed.dtype, "CPU", parsed.attr)["first_release_with_kernel"]
'2.18.0'
"""

from __future__ import annotations

from typing import Any

from explorer.analysis.error_text import ParsedError

#: registry device types a history can be asked for
HISTORY_DEVICES = ("CPU", "GPU", "XLA_CPU_JIT", "XLA_GPU_JIT")


def canonical_raw_op(raw_op: str | None) -> str | None:
    """The raw op as the shipped releases spell it (``Conv2d`` -> ``Conv2D``), or None."""
    from explorer.analysis import releases

    if not raw_op:
        return None
    known = getattr(releases, "known_op", None)
    if known is not None:
        found: str | None = known(raw_op)
        return found
    reg = releases.release_registry(releases.shipped_releases()[-1])
    return reg.op(raw_op).name if reg.has_op(raw_op) else None


def _release_kernels(version: str, raw_op: str) -> list[tuple[str, dict[str, list[str]]]] | None:
    """Kernels (device type, constraints) shipped release ``version`` registers for ``raw_op``
    (None: the release has no such op).  Reads the per-op index where releases has one."""
    from explorer.analysis import releases

    per_op = getattr(releases, "_op_registry", None)  # one small file instead of every release
    reg = per_op(version, raw_op) if per_op is not None else releases.release_registry(version)
    if reg is None or not reg.has_op(raw_op):
        return None
    return [(device, dict(constraints)) for device, constraints in reg.data["kernels"].get(raw_op, [])]


def kernel_set(
    kernels: list[tuple[str, dict[str, list[str]]]], attr: str | None, devices: set[str]
) -> set[str]:
    """``device:dtype`` for each kernel on ``devices`` and each dtype its constraint on ``attr``
    lists (``device:*`` for a kernel that does not constrain it): what two kernel lists are
    compared by.

    >>> sorted(kernel_set([("CPU", {"T": ["float32", "int32"]}), ("GPU", {})], "T", {"CPU", "GPU"}))
    ['CPU:float32', 'CPU:int32', 'GPU:*']
    """
    out: set[str] = set()
    for device, constraints in kernels:
        if device not in devices:
            continue
        values = (
            constraints.get(attr, ["*"]) if attr else [t for v in constraints.values() for t in v] or ["*"]
        )
        out.update(f"{device}:{v}" for v in values)
    return out


def matching_releases(parsed: ParsedError, raw_op: str | None) -> dict[str, Any] | None:
    """Which shipped releases register exactly the kernels the message lists for its op, on the
    devices the message lists; otherwise the closest (fewest differences).  None when the message
    lists no kernels.

    >>> from explorer.analysis.error_text import parse_error
    >>> p = parse_error("Could not find device for node: {{node Range}} = Range[Tidx=DT_HALF]\\n"
    ...                 "All kernels registered for op Range:\\n  device='CPU'; Tidx in [DT_FLOAT]")
    >>> matching_releases(p, "Range")["exact"]
    []
    """
    from explorer.analysis import releases

    if not parsed.listed_kernels or not raw_op:
        return None
    devices = {device for device, _ in parsed.listed_kernels}
    listed = kernel_set(list(parsed.listed_kernels), parsed.attr, devices)
    compared: list[tuple[int, str, set[str]]] = []
    for version in releases.shipped_releases():
        kernels = _release_kernels(version, raw_op)
        if kernels is None:
            continue
        shipped = kernel_set(kernels, parsed.attr, devices)
        compared.append((len(listed ^ shipped), version, shipped))
    if not compared:
        return {"exact": [], "closest": [], "differences": None, "devices": sorted(devices), "compared": 0}
    fewest = min(n for n, _, _ in compared)
    closest = [(v, s) for n, v, s in compared if n == fewest]
    first_closest = closest[0][1]
    return {
        "exact": [v for v, _ in closest] if fewest == 0 else [],
        "closest": [v for v, _ in closest],
        "differences": fewest,
        "only_in_message": sorted(listed - first_closest),
        "only_in_closest": sorted(first_closest - listed),
        "devices": sorted(devices),
        "compared": len(compared),
    }


def history_device(parsed: ParsedError) -> tuple[str | None, str]:
    """The registry device type to follow through the releases, and a note when it is assumed."""
    if parsed.device in HISTORY_DEVICES:
        return parsed.device, ""
    if parsed.device is not None:
        return None, f"no shipped release has kernels for device type {parsed.device}"
    assumed = "XLA_CPU_JIT" if parsed.mode == "xla" else "CPU"
    return assumed, f"the message names no device; the history is shown for {assumed}"


def tf_history(raw_op: str | None, dtype: str | None, device: str | None, attr: str | None) -> dict[str, Any]:
    """The history of ``raw_op`` × ``dtype`` × registry device type ``device`` over the shipped
    releases: ``history`` and ``changes`` (``[{version, status, reason}]``),
    ``first_release_with_kernel`` and a ``history_note`` saying why there is none.

    >>> tf_history("Range", None, "CPU", "Tidx")["history_note"]
    'the message names no floating dtype, so there is no history to follow'
    """
    from explorer.analysis import releases

    empty: dict[str, Any] = {"history": [], "changes": [], "first_release_with_kernel": None}
    if raw_op is None:
        return {**empty, "history_note": "no shipped release has this op"}
    if dtype is None:
        return {
            **empty,
            "history_note": "the message names no floating dtype, so there is no history to follow",
        }
    if device is None:
        return {**empty, "history_note": "the message's device is not one the shipped registries have"}
    try:
        entries = releases.history(raw_op, dtype, device, attr)
    except ValueError as exc:
        return {**empty, "history_note": str(exc)}
    first = next((e.version for e in entries if e.status == "ok"), None)
    return {
        "history": [{"version": e.version, "status": e.status, "reason": e.reason} for e in entries],
        "changes": [
            {"version": e.version, "status": e.status, "reason": e.reason} for e in releases.changes(entries)
        ],
        "first_release_with_kernel": first,
        "history_note": "",
    }
