"""Keeping a user's PyTorch module as it was while the model check runs it, and remembering the
check's runs of a module whose state has not changed.

:func:`working_copy` gives the module a policy runs: a deep copy, so that the user's parameters,
buffers, gradients, hooks and training flag are never touched; a module ``copy.deepcopy``
refuses is run in place with its parameters, buffers, gradients and training flag saved before
and put back afterwards.  :func:`fingerprint` is a digest of what a run depends on that the
check can read (the module's class, its ``repr``, every parameter and buffer's dtype, shape and
bytes, the training flag, the inputs); :class:`RunCache` keeps runs under it, per module, for
as long as the module lives.  A change to a Python attribute that the forward reads and the
``repr`` does not show is not seen by the digest.  torch is imported inside the functions.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import weakref
from collections.abc import Hashable, Iterator, Sequence
from typing import Any

import numpy as np


@contextlib.contextmanager
def working_copy(model: Any) -> Iterator[Any]:
    """A module to run in place of ``model``: a deep copy; where ``copy.deepcopy`` fails,
    ``model`` itself, its parameters, buffers, gradients and training flag restored on exit."""
    try:
        clone = copy.deepcopy(model)
    except Exception:  # a module holding something deepcopy refuses (a lock, a handle ...)
        clone = None
    if clone is not None:
        yield clone
        return
    saved = [(m, _module_state(m)) for m in model.modules()]
    try:
        yield model
    finally:
        for m, state in saved:
            _put_back(m, state)


_MISSING = object()


def _module_state(m: Any) -> dict[str, Any]:
    """What a policy run may change on module ``m`` itself, copied: its own parameters (object,
    value, gradient), buffers (object, value), training flag and any instance ``forward``."""
    return {
        "parameters": {
            k: (p, p.detach().clone(), None if p.grad is None else p.grad.detach().clone())
            for k, p in m._parameters.items()
            if p is not None
        },
        "buffers": {k: (b, b.detach().clone()) for k, b in m._buffers.items() if b is not None},
        "training": m.training,
        "forward": m.__dict__.get("forward", _MISSING),
    }


def _restore_value(t: Any, value: Any) -> None:
    import torch

    with torch.no_grad():
        if t.dtype == value.dtype and t.shape == value.shape:
            t.copy_(value)
        else:  # cast or replaced by the run: the saved tensor's dtype and shape back
            t.data = value


def _put_back(m: Any, state: dict[str, Any]) -> None:
    for k, (p, value, grad) in state["parameters"].items():
        _restore_value(p, value)
        p.grad = grad
        m._parameters[k] = p
    for k, (b, value) in state["buffers"].items():
        _restore_value(b, value)
        m._buffers[k] = b
    m.training = state["training"]
    if state["forward"] is _MISSING:
        m.__dict__.pop("forward", None)
    else:
        m.__dict__["forward"] = state["forward"]


def _digest_array(h: Any, array: np.ndarray) -> None:
    array = np.ascontiguousarray(array)
    h.update(f"{array.dtype}{array.shape}".encode())
    h.update(repr(array.tolist()).encode() if array.dtype == object else array.data)


def fingerprint(model: Any, inputs: Sequence[np.ndarray]) -> str:
    """A digest of ``model``'s class, ``repr``, training flag, parameters and buffers (dtype,
    shape, bytes) and of ``inputs``: two equal digests mean the check's runs would be the same,
    unless the forward reads a Python attribute the ``repr`` does not show."""
    import torch

    h = hashlib.sha1(usedforsecurity=False)
    h.update(f"{type(model).__module__}.{type(model).__qualname__}|{model!r}".encode())
    h.update(str([m.training for m in model.modules()]).encode())
    for name, t in [*model.named_parameters(), *model.named_buffers()]:
        h.update(name.encode())
        value = t.detach().cpu().contiguous()
        h.update(f"{value.dtype}{tuple(value.shape)}".encode())
        if value.numel():
            h.update(memoryview(value.reshape(-1).view(torch.uint8).numpy()).cast("B"))
    for x in inputs:
        _digest_array(h, np.asarray(x))
    return h.hexdigest()


class RunCache:
    """Runs of the model check per module (held weakly) and key; a module's entries go with it."""

    def __init__(self, per_module: int = 32) -> None:
        self._runs: weakref.WeakKeyDictionary[Any, dict[Hashable, Any]] = weakref.WeakKeyDictionary()
        self.per_module = per_module

    def get(self, model: Any, key: Hashable) -> Any:
        """The run kept for ``model`` under ``key``, or None."""
        try:
            return self._runs.get(model, {}).get(key)
        except TypeError:  # a module that cannot be weakly referenced
            return None

    def put(self, model: Any, key: Hashable, run: Any) -> None:
        """Keep ``run``; the module's oldest entry goes past ``per_module``."""
        try:
            runs = self._runs.setdefault(model, {})
        except TypeError:
            return
        runs[key] = run
        while len(runs) > self.per_module:
            runs.pop(next(iter(runs)))

    def clear(self) -> None:
        """Forget every run."""
        self._runs = weakref.WeakKeyDictionary()


__all__ = ["RunCache", "fingerprint", "working_copy"]
