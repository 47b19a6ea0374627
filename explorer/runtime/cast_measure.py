"""Measuring each backend's cast behaviour (:meth:`explorer.backends.base.Backend.cast_behaviour`)
where the range sweeps run the backend: in this process, except the backends of
:data:`~explorer.runtime.sweep_store.WORKER_BACKENDS` (TensorFlow), measured in their worker.

Each backend's measurements are made once per environment and format: kept in this process and
on disk (a cache file per environment key, checked field by field when read: a file that does not
hold what a measurement holds is not used), so that a second visitor of a workshop server starts
no worker for them.  They come back as plain dicts
(:meth:`~explorer.backends.cast_behaviour.CastBehaviour.to_dict`, plus ``backend`` and ``version``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from explorer.runtime.sandbox import Sandbox

#: seconds a backend's worker may take to start and measure every format asked for
TIMEOUT = 180.0

_MEASURED: dict[tuple[str, str], dict[str, Any] | None] = {}


def measure_backend(backend: str, formats: list[str]) -> list[dict[str, Any] | None]:
    """``backend``'s cast behaviour for each format (None where it has no cast), measured in the
    process that calls it (a worker's, or this one)."""
    from explorer.backends import get_backend

    owner = get_backend(backend)
    if not owner.is_installed():
        return [None for _ in formats]
    version = owner.version()
    out: list[dict[str, Any] | None] = []
    for name in formats:
        found = owner.cast_behaviour(name)
        out.append(None if found is None else {"backend": owner.name, "version": version, **found.to_dict()})
    return out


def measured(
    backend: str, formats: list[str], sandbox: Sandbox | None = None, timeout: float = TIMEOUT
) -> dict[str, dict[str, Any] | None]:
    """``backend``'s cast behaviour per format name, measured the first time in this process: in
    the backend's worker of ``sandbox`` when one is given, else where the range sweeps run the
    backend (:func:`in_worker`).  A worker that fails or times out raises
    (:class:`~explorer.runtime.sandbox.SandboxError`)."""
    from explorer.runtime.sweep_store import worker_call

    missing = [f for f in formats if (backend, f) not in _MEASURED]
    if missing:
        _MEASURED.update(
            {
                (backend, f): _as_measured(row)
                for f, row in _on_disk(backend).items()
                if f in missing and _valid(row, f)
            }
        )
        missing = [f for f in formats if (backend, f) not in _MEASURED]
    if missing:
        if sandbox is not None:
            found = sandbox.call(backend, measure_backend, backend, missing, timeout=timeout)
        elif in_worker(backend):  # the worker the range sweeps run it in
            found = worker_call(backend, measure_backend, backend, missing, timeout=timeout)
        else:  # here, as the range sweeps run it
            found = measure_backend(backend, missing)
        for name, behaviour in zip(missing, found, strict=True):
            _MEASURED[(backend, name)] = behaviour
        _save(backend)
    return {f: _MEASURED[(backend, f)] for f in formats}


#: a measurement's fields and their types (:meth:`CastBehaviour.to_dict` plus backend and version)
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "backend": str,
    "version": (str, type(None)),
    "format": str,
    "above_max": str,
    "inf": str,
    "below_subnormal": str,
    "inputs": list,
    "outputs": list,
    "note": str,
}


def _cache_path(backend: str) -> Any:
    from explorer.runtime import envcache

    folder = envcache.cache_dir_or_none()
    if folder is None:
        return None
    return folder / "casts" / f"{backend}-{envcache.environment_key(envcache.environment())}.json"


def _on_disk(backend: str) -> dict[str, Any]:
    from explorer.runtime import envcache

    path = _cache_path(backend)
    data = None if path is None else envcache.read_cache_json(path)
    return data if isinstance(data, dict) else {}


def _valid(row: Any, fmt: str) -> bool:
    """Whether ``row`` is what a measurement of ``fmt`` holds (None: the backend has no cast)."""
    if row is None:
        return True
    if not isinstance(row, dict) or set(row) != set(_FIELDS) or row["format"] != fmt:
        return False
    if not all(isinstance(row[k], t) for k, t in _FIELDS.items()):
        return False
    numbers = [*row["inputs"], *row["outputs"]]
    return len(numbers) <= 64 and all(isinstance(v, float | int) for v in numbers)


def _as_measured(row: dict[str, Any] | None) -> dict[str, Any] | None:
    """A row read from disk as a measurement gives it (its value lists as tuples)."""
    if row is None:
        return None
    return {**row, "inputs": tuple(row["inputs"]), "outputs": tuple(row["outputs"])}


def _save(backend: str) -> None:
    from explorer.runtime import envcache

    path = _cache_path(backend)
    if path is not None:
        rows = {f: row for (b, f), row in _MEASURED.items() if b == backend}
        envcache.write_cache_json(path, rows)


def in_worker(backend: str) -> bool:
    """Whether ``backend``'s casts are measured in a worker process (not in this one).

    >>> in_worker("tensorflow"), in_worker("numpy")
    (True, False)
    """
    from explorer.runtime.sweep_store import WORKER_BACKENDS

    return backend in WORKER_BACKENDS


def known(backend: str, fmt: str) -> bool:
    """Whether ``backend``'s cast to format ``fmt`` was measured already in this process."""
    return (backend, fmt) in _MEASURED
