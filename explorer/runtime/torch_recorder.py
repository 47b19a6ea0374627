"""A ``TorchDispatchMode`` that records every aten op a PyTorch module runs, in one pass.

It sees each op below autograd and autocast: the op, its real input and output dtypes, and its
outputs (the tensor objects autograd hands back, so ``retain_grad`` on them gives each op
instance's gradient after the backward pass).  An op's values are its values *at its return*:
when a later op writes into an output's storage in place (``ReLU(inplace=True)``, ``x += 1``,
``out=``), the output is copied just before that write, and a hook on the tensor as it was
keeps the gradient of that version.  torch is imported inside the functions.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from explorer.analysis.model_trace import TracedOp, dtype_name


def _written(func: Any, args: Any, kwargs: dict[str, Any]) -> list[Any]:
    """The tensors ``func`` writes into (its schema's mutable arguments, ``out=`` included)."""
    import torch

    schema = func._schema
    if not schema.is_mutable:
        return []
    out: list[Any] = []
    for i, arg in enumerate(schema.arguments):
        if arg.alias_info is None or not arg.alias_info.is_write:
            continue
        value = kwargs.get(arg.name, args[i] if i < len(args) and not arg.kwarg_only else None)
        values = value if isinstance(value, list | tuple) else [value]
        out.extend(v for v in values if isinstance(v, torch.Tensor))
    return out


def _storage_key(t: Any) -> int | None:
    try:
        return int(t.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):  # a tensor without storage (sparse, meta ...)
        return None


def _keeper(grads: dict[int, Any], index: int) -> Any:
    """A tensor hook keeping the first gradient it sees in ``grads[index]``."""

    def keep(grad: Any) -> None:
        grads.setdefault(index, grad.detach().clone())

    return keep


def make_recorder(stack: list[str]) -> Any:
    """A new recorder; ``stack`` holds the path of the running submodule (its last item)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class Recorder(TorchDispatchMode):
        """Records each aten op: its module path, dtypes and output tensors (see the module)."""

        def __init__(self) -> None:
            super().__init__()
            self.ops: list[TracedOp] = []
            self.outputs: list[list[Any]] = []
            self.counts: dict[str, int] = {}
            self.failure: tuple[str | None, str] | None = None
            self.recording = True
            #: op index -> a copy of its first floating output, taken before an in-place write
            self.snapshots: dict[int, Any] = {}
            #: op index -> the gradient of its first floating output as returned (hooked)
            self.early_grads: dict[int, Any] = {}
            self._by_storage: dict[int, list[int]] = {}

        def value(self, index: int, tensor: Any) -> Any:
            """Op ``index``'s first floating output as it was at the op's return."""
            return self.snapshots.get(index, tensor)

        def grad(self, index: int, tensor: Any) -> Any:
            """The gradient of that output (None: none flowed)."""
            if index in self.snapshots:
                return self.early_grads.get(index)
            return tensor.grad

        def _before_write(self, written: list[Any]) -> None:
            for target in written:
                key = _storage_key(target)
                for index in self._by_storage.pop(key, []) if key is not None else []:
                    t = next(o for o in self.outputs[index] if o.is_floating_point())
                    self.snapshots[index] = t.detach().clone()
                    if t.requires_grad:  # the hook holds the dict alone: no cycle through the graph
                        t.register_hook(_keeper(self.early_grads, index))

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            raw_op = f"aten.{func.overloadpacket.__name__}"
            inputs = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
            n = self.counts.get(raw_op, 0)
            self.counts[raw_op] = n + 1
            name = f"{raw_op}#{n}" if self.recording else f"backward:{raw_op}#{n}"
            in_floats = [t.dtype for t in inputs if t.dtype.is_floating_point]
            if self.recording:  # listed before it runs: an op that fails is in the list too
                self._before_write(_written(func, args, kwargs))
                self.ops.append(
                    TracedOp(
                        name=name,
                        layer=stack[-1] if stack else "",
                        raw_op=raw_op,
                        dtype=dtype_name(in_floats[0]) if in_floats else None,
                        in_dtypes=tuple(dtype_name(t.dtype) for t in inputs),
                    )
                )
                self.outputs.append([])
            try:
                out = func(*args, **kwargs)
            except Exception as exc:
                if self.failure is None:
                    self.failure = (name, f"{type(exc).__name__}: {exc}")
                raise
            if not self.recording:
                return out
            outs = [o for o in tree_flatten(out)[0] if isinstance(o, torch.Tensor)]
            floats = [t.dtype for t in outs + inputs if t.dtype.is_floating_point]
            index = len(self.ops) - 1
            self.ops[index] = replace(
                self.ops[index],
                dtype=dtype_name(floats[0]) if floats else (dtype_name(outs[0].dtype) if outs else None),
                out_dtypes=tuple(dtype_name(t.dtype) for t in outs),
            )
            self.outputs[index] = outs
            first = next((o for o in outs if o.is_floating_point()), None)
            key = None if first is None else _storage_key(first)
            if key is not None:
                self._by_storage.setdefault(key, []).append(index)
            return out

    return Recorder()


__all__ = ["make_recorder"]
