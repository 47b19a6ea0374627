"""What the frameworks declare for each op instance of a traced model: TensorFlow's kernel
registry of the installed release (and, per op, the first shipped release with a kernel),
PyTorch's OpInfo database; and the catalog op each raw op is, where there is one.

JAX declares no kernels per dtype: its ops answer None (the real run decides).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from explorer.analysis.model_trace import MergedOp

#: ops whose kernel is the function's own plumbing, not a kernel a dtype can lack: their declared
#: status is left None
_NOT_KERNELS: frozenset[str] = frozenset({"Placeholder", "NoOp"})
#: aten ops and JAX primitives -> catalog ops, where the names differ
_CATALOG_ALIASES: dict[str, str] = {
    "addmm": "matmul",
    "mm": "matmul",
    "bmm": "batch_matmul",
    "baddbmm": "batch_matmul",
    "dot_general": "matmul",
    "convolution": "conv2d",
    "conv_general_dilated": "conv2d",
    "native_layer_norm": "layer_norm",
    "_softmax": "softmax",
    "_log_softmax": "log_softmax",
    "logistic": "sigmoid",
    "max_pool2d_with_indices": "max_pool",
    "avg_pool2d": "avg_pool",
    "reduce_sum": "sum",
    "reduce_max": "reduce_max",
    "max": "maximum",
    "min": "minimum",
    "exp2": "exp",
    "integer_pow": "pow",
    "erf_inv": "erfinv",
}


@functools.cache
def _tf_catalog() -> dict[str, str]:
    from explorer.ops import catalog

    out: dict[str, str] = {}
    for name, op in catalog().items():  # an op that is one raw op alone: that raw op is it
        if len(op.tf_raw_ops) == 1:
            out.setdefault(op.tf_raw_ops[0], name)
    return out


def catalog_op(framework: str, raw_op: str) -> str | None:
    """The catalog op a raw op is (TensorFlow: the op that dispatches to that raw op alone; aten ops and JAX
    primitives: by name, or :data:`_CATALOG_ALIASES`), or None.

    >>> catalog_op("keras", "Mul"), catalog_op("torch", "aten.addmm"), catalog_op("jax", "tanh")
    ('mul', 'matmul', 'tanh')
    """
    from explorer.ops import catalog

    if framework == "keras":
        return _tf_catalog().get(raw_op)
    name = raw_op.removeprefix("aten.")
    name = _CATALOG_ALIASES.get(name, name)
    return name if name in catalog() else None


@functools.cache
def _tf_declared(raw_op: str, dtype: str, device: str) -> tuple[str | None, str | None]:
    from explorer.analysis import releases
    from explorer.runtime.registry import get_registry

    registry = get_registry()
    if raw_op in _NOT_KERNELS or not registry.has_op(raw_op) or dtype not in registry.float_dtypes:
        return None, None
    if device not in registry.device_types:
        return None, None
    status = registry.declared(raw_op, dtype, device).value
    try:
        first = releases.first_release_with_kernel(raw_op, dtype, device)
    except ValueError:  # an op no shipped release has (a newer TensorFlow's)
        first = None
    return status, first


def _torch_entries(raw_op: str) -> list[dict[str, object]]:
    from explorer.runtime import model_torch, torch_declared

    data = torch_declared.opinfo_data()
    by_name = _opinfo_index(id(data), data)
    for name in model_torch.opinfo_candidates(raw_op):
        if name in by_name:
            return by_name[name]
    return []


_INDEX_CACHE: dict[int, dict[str, list[dict[str, object]]]] = {}


def _opinfo_index(key: int, data: dict[str, object]) -> dict[str, list[dict[str, object]]]:
    if key not in _INDEX_CACHE:
        index: dict[str, list[dict[str, object]]] = {}
        for entry in data["entries"]:  # type: ignore[attr-defined]
            if entry["variant"] == "":
                index.setdefault(entry["name"], []).append(entry)
                for alias in entry["aliases"]:
                    index.setdefault(alias, []).append(entry)
        _INDEX_CACHE.clear()
        _INDEX_CACHE[key] = index
    return _INDEX_CACHE[key]


def _torch_declared(raw_op: str, dtype: str, device: str) -> tuple[str | None, str | None]:
    from explorer.runtime import torch_declared

    entries = _torch_entries(raw_op)
    if not entries or dtype not in torch_declared.TORCH_FORMATS:
        return None, None
    row = {
        "CPU": torch_declared.declared(entries, dtype, "cpu"),
        "GPU": torch_declared.declared(entries, dtype, "cuda"),
    }
    return torch_declared.declared_status(row, device), None


def declarations(
    framework: str, merged: Sequence[MergedOp], policies: Sequence[str], devices: Sequence[str]
) -> dict[tuple[int, str, str], tuple[str | None, str | None]]:
    """(op index, policy, device) -> (declared status, TensorFlow's first release with a kernel)
    for every op instance a policy's trace has, in the dtype it computes in there."""
    out: dict[tuple[int, str, str], tuple[str | None, str | None]] = {}
    if framework == "jax":
        return out
    if framework == "torch":
        try:
            from explorer.runtime import torch_declared

            torch_declared.opinfo_data()
        except RuntimeError:  # OpInfo cannot be read here (expecttest missing): no declarations
            return out
    for i, m in enumerate(merged):
        for p in policies:
            op = m.by_policy.get(p)
            if op is None or op.dtype is None:
                continue
            for device in devices:
                if framework == "keras":
                    out[(i, p, device)] = _tf_declared(op.raw_op, op.dtype, device)
                else:
                    out[(i, p, device)] = _torch_declared(op.raw_op, op.dtype, device)
    return out


__all__ = ["catalog_op", "declarations"]
