"""One backend's vectorised run of a sweep, in this process: the default runner of
:func:`explorer.queries.ranges.sweep` and what a sweep worker runs
(:mod:`explorer.runtime.sweep_store`)."""

from __future__ import annotations

import warnings

import numpy as np

from explorer.analysis.regions import BackendRun
from explorer.formats import Format
from explorer.ops import Op

#: appended to the inputs of unary sweeps: what the backend gives for a zero input, to tell
#: subnormal inputs it reads as zero (:func:`~explorer.analysis.regions.flushed_inputs`)
_ZEROS = np.array([0.0, -0.0])


def run_backend(
    name: str, op: Op, fmt: Format, inputs: tuple[np.ndarray, ...], device: str = "CPU"
) -> BackendRun:
    """One vectorised call of the op on a backend; for unary ops ``+0`` and ``-0`` ride along
    at the end (:attr:`BackendRun.at_zero`).  The default :data:`BackendRunner` of the sweeps."""
    from explorer.backends import get_backend

    backend = get_backend(name)
    unary = len(inputs) == 1
    sent = (np.concatenate([inputs[0].ravel(), _ZEROS]),) if unary else inputs
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        outcome = backend.run(op, fmt, device=device, inputs=sent)
        result = at_zero = None
        if outcome.ran and outcome.result is not None:
            flat = np.asarray(outcome.result).astype(np.float64).ravel()
            if unary:
                flat, at_zero = flat[: -_ZEROS.size], flat[-_ZEROS.size :]
            result = flat.reshape(inputs[0].shape)
    return BackendRun(
        backend.name,
        outcome.status.value,
        outcome.error_first_line,
        outcome.detail,
        result,
        outcome.device,
        at_zero,
    )
