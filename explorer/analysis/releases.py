"""TensorFlow's declared kernel availability across releases, from the registries shipped with explorer.

``scripts/capture_registries.py`` installs every TensorFlow release in a throwaway venv and
reads its kernel registry there with explorer's own reader; the results ship as package data
(``explorer/data/registries``): one ``tensorflow-<release>.json.gz`` per release, holding
what :class:`~explorer.backends.tensorflow_registry.Registry` needs, ``index.json`` (files,
sha256, sizes, and the releases that could not be captured), and ``ops-index.json.gz``, the
same data regrouped per op so that the history of one op reads one small file.

Nothing here imports TensorFlow.

>>> from explorer.analysis.releases import changes, history
>>> [(e.version, e.status) for e in changes(history("Range", "float16", "CPU"))]
[('2.18.0', 'ok')]

A release that does not know the op, the dtype or the device type answers ``absent``, with
the reason, in the middle of a history (never an exception): the op ``FFTND`` and the dtype
``float8_e4m3fnuz`` are younger than TensorFlow 2.12.

>>> history("Cast", "float8_e4m3fnuz", "CPU")[0]
ReleaseStatus(version='2.12.0', status='absent', reason='TensorFlow 2.12.0 has no float8_e4m3fnuz dtype')
"""

from __future__ import annotations

import difflib
import functools
import gzip
import hashlib
import importlib.resources
import itertools
import json
from typing import Any, NamedTuple

from packaging.version import Version

from explorer.backends.tensorflow_registry import Registry
from explorer.outcome import Status

#: the status of a release that does not know the op, the dtype or the device type
ABSENT = "absent"
#: the kernel table key under which a one-op registry lists its release's device types
#: (no op can be named so: op names are CamelCase identifiers)
_DEVICE_TYPES_KEY = " device types"
_INDEX = "index.json"
_OPS_INDEX = "ops-index.json.gz"


class ReleaseStatus(NamedTuple):
    """What one TensorFlow release declares for raw op × dtype × registry device type."""

    #: the release, as pip names it (``"2.15.0.post1"``)
    version: str
    #: ``ok``, ``no_kernel``, ``unsupported_dtype`` (see :class:`Registry.declared`) or ``absent``
    status: str
    #: why, for ``absent``: what the release does not know ("" otherwise)
    reason: str = ""


def _data_dir() -> Any:
    return importlib.resources.files("explorer").joinpath("data", "registries")


@functools.cache
def _index() -> dict[str, Any]:
    try:
        text = _data_dir().joinpath(_INDEX).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError) as exc:
        raise RuntimeError(
            f"explorer's shipped registries are missing ({exc}); run scripts/capture_registries.py"
        ) from None
    index: dict[str, Any] = json.loads(text)
    return index


@functools.cache
def _entries() -> dict[str, dict[str, Any]]:
    return {entry["release"]: entry for entry in _index()["releases"]}


def shipped_releases() -> list[str]:
    """Every TensorFlow release whose registry ships with explorer, oldest first.

    >>> releases = shipped_releases()
    >>> releases[0] < releases[-1] and "2.21.0" in releases
    True
    """
    return sorted(_entries(), key=Version)


def failed_releases() -> dict[str, str]:
    """Releases the capture could not read (release -> stage and reason), as the index records them."""
    return {f["release"]: f"{f['stage']}: {f['reason']}" for f in _index()["failed"]}


def _read_verified(name: str, sha256: str) -> bytes:
    body = _data_dir().joinpath(name).read_bytes()
    digest = hashlib.sha256(body).hexdigest()
    if digest != sha256:
        raise RuntimeError(
            f"shipped registry file {name} is damaged (sha256 {digest}, index says {sha256}); "
            "reinstall explorer or rerun scripts/capture_registries.py"
        )
    return gzip.decompress(body)


def _check_release(version: str) -> str:
    entries = _entries()
    if version in entries:
        return version
    failed = failed_releases()
    why = f" (its capture failed: {failed[version]})" if version in failed else ""
    raise ValueError(
        f"no shipped registry for TensorFlow {version!r}{why}; shipped: {', '.join(shipped_releases())}"
    )


@functools.cache
def release_data(version: str) -> dict[str, Any]:
    """The shipped registry data of one release (what ``Registry(data)`` takes, plus its origin:
    ``release``, ``captured``, ``python``, ``numpy``, ``capture_script_version``).  Cached."""
    entry = _entries()[_check_release(version)]
    data: dict[str, Any] = json.loads(_read_verified(entry["file"], entry["sha256"]))
    return data


def release_source(version: str) -> str:
    """Where the shipped registry of ``version`` came from, in words (from the index: no data file read).

    >>> release_source("2.15.0").startswith("shipped 2.15.0 (captured ")
    True
    """
    entry = _entries()[_check_release(version)]
    return f"shipped {version} (captured {entry.get('captured', 'on an unknown date')})"


@functools.cache
def release_registry(version: str) -> Registry:
    """The :class:`Registry` of TensorFlow ``version`` as shipped; ValueError names the shipped ones.

    >>> release_registry("2.21.0").declared("Cholesky", "bfloat16", "CPU").value
    'unsupported_dtype'
    """
    return Registry(release_data(version))


# ---------------------------------------------------------------- the per-op index


@functools.cache
def _ops_index() -> dict[str, Any] | None:
    """The per-op index, or None when it does not match the release files (then they are read)."""
    entry = _index().get("ops_index")
    if not entry:
        return None
    ops_index: dict[str, Any] = json.loads(_read_verified(entry["file"], entry["sha256"]))
    sources = {release: e["sha256"] for release, e in _entries().items()}
    return ops_index if ops_index.get("sources") == sources else None


@functools.cache
def _op_variants(op: str) -> dict[str, Any] | None:
    ops_index = _ops_index()
    assert ops_index is not None
    text = ops_index["ops"].get(op)
    return None if text is None else dict(json.loads(text))


@functools.cache
def _op_registry(version: str, op: str) -> Registry | None:
    """A Registry of ``version`` that holds only ``op`` (None: the release has no such op).

    It answers like the release's full Registry for that op: the kernel table also lists the
    release's device types (under a key no op has), which is all Registry reads from the other ops.
    """
    ops_index = _ops_index()
    if ops_index is None:
        full = release_registry(version)
        return full if full.has_op(op) else None
    variants = _op_variants(op)
    if variants is None or version not in variants["releases"]:
        return None
    op_def, kernels = variants["variants"][variants["releases"][version]]
    facts = ops_index["release_facts"][version]
    return Registry(
        {
            "tf_version": facts["tf_version"],
            "float_dtypes": facts["float_dtypes"],
            "ops": {op: op_def},
            "kernels": {op: kernels, _DEVICE_TYPES_KEY: [[d, {}] for d in facts["device_types"]]},
        }
    )


def _release_facts(version: str) -> dict[str, Any]:
    ops_index = _ops_index()
    if ops_index is not None:
        facts: dict[str, Any] = ops_index["release_facts"][version]
        return facts
    reg = release_registry(version)
    return {
        "tf_version": reg.tf_version,
        "float_dtypes": list(reg.float_dtypes),
        "device_types": reg.device_types,
    }


def release_float_dtypes(version: str) -> list[str]:
    """The float dtypes shipped release ``version`` has, in its order.

    >>> "bfloat16" in release_float_dtypes("2.21.0")
    True
    """
    return list(_release_facts(_check_release(version))["float_dtypes"])


@functools.cache
def _all_op_names() -> dict[str, str]:
    """Lower-cased op name -> op name, over every shipped release."""
    ops_index = _ops_index()
    if ops_index is not None:
        names: set[str] = set(ops_index["ops"])
    else:
        names = {n for v in shipped_releases() for n in release_registry(v).ops}
    return {n.lower(): n for n in sorted(names)}


def known_op(raw_op: str) -> str | None:
    """The spelling of raw op ``raw_op`` (any case) in the shipped releases, or None when none has it.

    >>> known_op("range"), known_op("NoSuchOp")
    ('Range', None)
    """
    names = _all_op_names()
    if raw_op in names.values():
        return raw_op
    return names.get(raw_op.lower())


def releases_with_op(raw_op: str) -> list[str]:
    """The shipped releases that have raw op ``raw_op`` (as TensorFlow spells it), oldest first.

    >>> releases_with_op("Range")[-1]
    '2.21.0'
    """
    return [v for v in shipped_releases() if _op_registry(v, raw_op) is not None]


def _canonical_op(raw_op: str) -> str:
    if not isinstance(raw_op, str):
        raise TypeError(f"raw op name must be a string, got {type(raw_op).__name__}")
    names = _all_op_names()
    if raw_op in names.values():
        return raw_op
    if raw_op.lower() in names:
        return names[raw_op.lower()]
    close = difflib.get_close_matches(raw_op, list(names.values()), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise ValueError(
        f"no shipped TensorFlow release ({', '.join(shipped_releases())}) has op {raw_op!r}{hint}"
    )


# ---------------------------------------------------------------- histories


def declared_in(
    version: str, raw_op: str, dtype: str, device_type: str, attr: str | None = None
) -> ReleaseStatus:
    """What TensorFlow ``version`` declares for raw op × dtype × registry device type.

    ``absent`` (with the reason) when that release has no such op, dtype, device type or
    type attribute.

    >>> declared_in("2.21.0", "Cholesky", "bf16", "CPU")
    ReleaseStatus(version='2.21.0', status='unsupported_dtype', reason='')
    """
    from explorer.formats import resolve

    version = _check_release(version)
    op = _canonical_op(raw_op)
    name = resolve(dtype).name
    facts = _release_facts(version)
    reg = _op_registry(version, op)
    if reg is None:
        return ReleaseStatus(version, ABSENT, f"TensorFlow {version} has no op {op}")
    if name not in facts["float_dtypes"]:
        return ReleaseStatus(version, ABSENT, f"TensorFlow {version} has no {name} dtype")
    if device_type not in facts["device_types"]:
        return ReleaseStatus(
            version, ABSENT, f"TensorFlow {version} has no kernels for device type {device_type}"
        )
    if attr is not None and attr not in reg.op(op).attrs:
        return ReleaseStatus(version, ABSENT, f"{op} has no type attribute {attr} in TensorFlow {version}")
    status: Status = reg.declared(op, name, device_type, attr)
    return ReleaseStatus(version, status.value)


def history(raw_op: str, dtype: str, device_type: str, attr: str | None = None) -> list[ReleaseStatus]:
    """What every shipped release declares for raw op × dtype × registry device type, oldest first.

    ValueError only for names no shipped release knows (an op, a device type) and for dtype
    names explorer does not know; a release that lacks one of them answers ``absent``.

    >>> h = history("Cholesky", "bfloat16", "CPU")
    >>> h[-1]
    ReleaseStatus(version='2.21.0', status='unsupported_dtype', reason='')
    """
    op = _canonical_op(raw_op)
    releases = shipped_releases()
    known_devices = {d for v in releases for d in _release_facts(v)["device_types"]}
    if device_type not in known_devices:
        raise ValueError(
            f"no shipped TensorFlow release has device type {device_type!r}; "
            f"valid: {', '.join(sorted(known_devices))}"
        )
    return [declared_in(v, op, dtype, device_type, attr) for v in releases]


def changes(entries: list[ReleaseStatus]) -> list[ReleaseStatus]:
    """The entries of a :func:`history` whose status differs from the release before (the first
    release is the baseline, not a change).

    >>> changes([ReleaseStatus("2.12.0", "absent", "no op"), ReleaseStatus("2.13.0", "ok"),
    ...          ReleaseStatus("2.14.0", "ok")])
    [ReleaseStatus(version='2.13.0', status='ok', reason='')]
    """
    return [now for before, now in itertools.pairwise(entries) if now.status != before.status]


def first_release_with_kernel(
    raw_op: str, dtype: str, device_type: str, attr: str | None = None
) -> str | None:
    """The oldest shipped release that declares a kernel (status ``ok``), or None.

    >>> first_release_with_kernel("Cholesky", "bfloat16", "CPU") is None
    True
    """
    for entry in history(raw_op, dtype, device_type, attr):
        if entry.status == Status.OK.value:
            return entry.version
    return None


__all__ = [
    "ABSENT",
    "ReleaseStatus",
    "changes",
    "declared_in",
    "failed_releases",
    "first_release_with_kernel",
    "history",
    "known_op",
    "release_data",
    "release_float_dtypes",
    "release_registry",
    "release_source",
    "releases_with_op",
    "shipped_releases",
]
