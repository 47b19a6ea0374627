"""Measuring each backend's cast behaviour (:meth:`explorer.backends.base.Backend.cast_behaviour`)
where the range sweeps run the backend: in this process, except the backends of
:data:`~explorer.runtime.sweep_store.WORKER_BACKENDS` (TensorFlow), measured in their worker.

Each backend's measurements are made once per process and format (the worker keeps them too) and
come back as plain dicts (:meth:`~explorer.backends.cast_behaviour.CastBehaviour.to_dict`, plus
``backend`` and ``version``).
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
        if sandbox is not None:
            found = sandbox.call(backend, measure_backend, backend, missing, timeout=timeout)
        elif in_worker(backend):  # the worker the range sweeps run it in
            found = worker_call(backend, measure_backend, backend, missing, timeout=timeout)
        else:  # here, as the range sweeps run it
            found = measure_backend(backend, missing)
        for name, behaviour in zip(missing, found, strict=True):
            _MEASURED[(backend, name)] = behaviour
    return {f: _MEASURED[(backend, f)] for f in formats}


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
