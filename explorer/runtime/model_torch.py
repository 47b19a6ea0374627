"""Tracing and running a PyTorch ``nn.Module`` under each policy, op by op.

A ``TorchDispatchMode`` sees every aten op the module runs, below autograd and below autocast:
the op, its real input and output dtypes, and its outputs (the same tensor objects autograd
hands back, so ``retain_grad`` on them gives each op instance's gradient after the backward
pass).  The module path comes from forward hooks on every submodule.

Policies: ``float32``; ``float16`` and ``bfloat16`` (a copy of the module and the inputs cast);
``autocast_float16`` and ``autocast_bfloat16`` (``torch.autocast("cpu", dtype=...)`` around the
forward pass, the module as given).  CUDA autocast cannot be observed on a machine without
CUDA.  torch is imported inside the functions; the user's module is never changed (policies
that cast work on a deep copy; hooks are removed after each run).
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from explorer.analysis.model_numerics import tensor_stats, zero_fraction
from explorer.analysis.model_trace import PolicyRun, TracedOp, dtype_name

#: the PyTorch policies
POLICIES: tuple[str, ...] = ("float32", "float16", "bfloat16", "autocast_float16", "autocast_bfloat16")
#: the loss scale of the scaled run (torch.amp.GradScaler starts at 2**16)
LOSS_SCALE = 2.0**16

#: aten op (overload packet) -> the OpInfo entry names it is tested under, where the names differ
OPINFO_NAMES: dict[str, tuple[str, ...]] = {
    "addmm": ("addmm",),
    "convolution": ("nn.functional.conv2d",),
    "native_layer_norm": ("nn.functional.layer_norm",),
    "_softmax": ("softmax",),
    "_log_softmax": ("log_softmax",),
    "native_batch_norm": ("nn.functional.batch_norm",),
    "_native_batch_norm_legit_no_training": ("nn.functional.batch_norm",),
    "_native_batch_norm_legit": ("nn.functional.batch_norm",),
    "max_pool2d_with_indices": ("nn.functional.max_pool2d",),
    "avg_pool2d": ("nn.functional.avg_pool2d",),
    "_adaptive_avg_pool2d": ("nn.functional.adaptive_avg_pool2d",),
    "gelu": ("nn.functional.gelu",),
    "silu": ("nn.functional.silu",),
    "_scaled_dot_product_flash_attention_for_cpu": ("nn.functional.scaled_dot_product_attention",),
    "_to_copy": ("to",),
    "bmm": ("bmm",),
    "baddbmm": ("baddbmm",),
}


def is_torch_module(model: Any) -> bool:
    """True for a ``torch.nn.Module`` (no import when torch is not loaded)."""
    import sys

    torch = sys.modules.get("torch")
    return torch is not None and isinstance(model, torch.nn.Module)


#: what mixed precision does that this module cannot observe here, in words
NOT_OBSERVED: tuple[str, ...] = (
    "CUDA autocast (torch.autocast('cuda')): not observable on a machine without CUDA; its op lists "
    "differ from CPU autocast's",
)


def check_policy(policy: str) -> None:
    """ValueError unless ``policy`` is a PyTorch policy name (:data:`POLICIES`)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown PyTorch policy {policy!r}; valid: {', '.join(POLICIES)}")


def framework_version() -> str:
    """The installed torch's version."""
    import torch

    return str(torch.__version__)


def opinfo_candidates(raw_op: str) -> tuple[str, ...]:
    """The OpInfo entry names an aten op may be tested under, most likely first.

    >>> opinfo_candidates("aten.native_layer_norm"), opinfo_candidates("aten.relu")
    (('nn.functional.layer_norm',), ('relu', 'nn.functional.relu'))
    """
    name = raw_op.removeprefix("aten.")
    if name in OPINFO_NAMES:
        return OPINFO_NAMES[name]
    bare = name.rstrip("_").lstrip("_")
    return tuple(dict.fromkeys((bare, f"nn.functional.{bare}")))


def _dtype(name: str) -> Any:
    import torch

    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[name]


def _policy_dtype(policy: str) -> str:
    return policy.removeprefix("autocast_")


@contextlib.contextmanager
def _module_paths(model: Any, stack: list[str]) -> Iterator[None]:
    """Forward hooks that keep ``stack`` at the path of the running submodule."""
    handles = []
    for name, module in model.named_modules():
        if not name:
            continue

        def enter(_module: Any, _args: Any, name: str = name) -> None:
            stack.append(name)

        def leave(_module: Any, _args: Any, _out: Any) -> None:
            if stack:
                stack.pop()

        handles.append(module.register_forward_pre_hook(enter))
        handles.append(module.register_forward_hook(leave))
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def _recorder(stack: list[str]) -> Any:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class Recorder(TorchDispatchMode):
        """Records each aten op: its module path, dtypes and output tensors."""

        def __init__(self) -> None:
            super().__init__()
            self.ops: list[TracedOp] = []
            self.outputs: list[list[Any]] = []
            self.counts: dict[str, int] = {}
            self.failure: tuple[str | None, str] | None = None
            self.recording = True

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            raw_op = f"aten.{func.overloadpacket.__name__}"
            inputs = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
            n = self.counts.get(raw_op, 0)
            self.counts[raw_op] = n + 1
            name = f"{raw_op}#{n}" if self.recording else f"backward:{raw_op}#{n}"
            in_floats = [t.dtype for t in inputs if t.dtype.is_floating_point]
            if self.recording:  # listed before it runs: an op that fails is in the list too
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
            self.ops[-1] = replace(
                self.ops[-1],
                dtype=dtype_name(floats[0]) if floats else (dtype_name(outs[0].dtype) if outs else None),
                out_dtypes=tuple(dtype_name(t.dtype) for t in outs),
            )
            self.outputs[-1] = outs
            return out

    return Recorder()


def _prepare(model: Any, policy: str, keep_float32: Sequence[str]) -> Any:
    """The module a policy runs: ``model`` itself (float32, autocast without ``keep_float32``) or a
    deep copy (cast to the policy's dtype; the modules in ``keep_float32`` in float32, their
    floating inputs cast to float32 and outputs back)."""
    import torch

    if policy not in POLICIES:
        raise ValueError(f"unknown PyTorch policy {policy!r}; valid: {', '.join(POLICIES)}")
    if policy == "float32" and not keep_float32:
        return model
    module = copy.deepcopy(model)
    if policy in ("float16", "bfloat16"):
        module = module.to(_dtype(policy))
    back = _dtype(_policy_dtype(policy))
    modules = dict(module.named_modules())
    for name in keep_float32:
        if name not in modules:
            raise ValueError(f"no submodule {name!r}; submodules: {', '.join(n for n in modules if n)}")
        sub = modules[name].float()
        forward = sub.forward

        def as_float32(*args: Any, _forward: Any = forward, **kwargs: Any) -> Any:
            cast = [a.float() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
            with torch.autocast("cpu", enabled=False):
                out = _forward(*cast, **kwargs)
            if policy.startswith("autocast_"):
                return out
            return out.to(back) if isinstance(out, torch.Tensor) and out.is_floating_point() else out

        sub.forward = as_float32
    return module


def layer_weights(model: Any) -> dict[str, list[np.ndarray]]:
    """Each module that holds parameters of its own (path as the op list names it, ``""`` for
    the model) -> those parameters, float32 arrays in registration order."""
    out: dict[str, list[np.ndarray]] = {}
    for name, module in model.named_modules():
        own = [p.detach().float().cpu().numpy() for p in module.parameters(recurse=False)]
        if own:
            out[name] = own
    return out


def _flat_tensors(value: Any) -> list[Any]:
    import torch
    from torch.utils._pytree import tree_flatten

    return [t for t in tree_flatten(value)[0] if isinstance(t, torch.Tensor)]


def _pass(module: Any, inputs: Sequence[np.ndarray], policy: str, scale: float) -> tuple[Any, Any]:
    """One forward and backward pass under ``policy``; (recorder, parameter gradients or None)."""
    import torch

    stack: list[str] = []
    recorder = _recorder(stack)
    dtype = _dtype(policy) if policy in ("float16", "bfloat16") else torch.float32
    tensors = [
        torch.tensor(x).to(dtype).requires_grad_() if np.issubdtype(x.dtype, np.floating) else torch.tensor(x)
        for x in inputs
    ]  # the inputs' gradients too: a module without parameters still has a backward pass
    autocast = (
        torch.autocast("cpu", dtype=_dtype(_policy_dtype(policy)))
        if policy.startswith("autocast_")
        else contextlib.nullcontext()
    )
    module.zero_grad(set_to_none=True)
    try:
        with _module_paths(module, stack), recorder:
            with autocast:
                out = module(*tensors)
            recorder.recording = False
            outs = _flat_tensors(out)
            for outputs in recorder.outputs:
                for t in outputs:
                    if t.requires_grad and t.grad_fn is not None:
                        t.retain_grad()
            losses = [torch.mean(torch.square(t.float())) for t in outs if t.is_floating_point()]
            (torch.stack(losses).sum() * scale).backward()
    except (RuntimeError, NotImplementedError, TypeError) as exc:
        if recorder.failure is None:
            recorder.failure = (None, f"{type(exc).__name__}: {exc}")
        return recorder, None
    grads = [p.grad.detach().float().numpy() for p in module.parameters() if p.grad is not None]
    return recorder, grads


def run_policy(
    model: Any,
    inputs: Sequence[np.ndarray],
    policy: str,
    formats: Sequence[str],
    keep_float32: Sequence[str] = (),
) -> PolicyRun:
    """``model`` under ``policy``: the aten ops it ran with their real dtypes, one forward and
    backward pass (without and with loss scaling; per-op statistics from the unscaled one), and
    the op that failed with its error, if one did."""
    module = _prepare(model, policy, keep_float32)
    was_training = module.training
    module.eval()
    try:
        recorder, grads = _pass(module, inputs, policy, 1.0)
        ops = tuple(recorder.ops)
        if grads is None:
            failing, error = recorder.failure or (None, "the pass failed outside any aten op")
            stage = "backward" if failing and failing.startswith("backward:") else "forward"
            return PolicyRun(policy, ops, False, error, failing, stage)
        stats = {}
        first_nonfinite = None
        for op, outputs in zip(ops, recorder.outputs, strict=True):
            floats = [t for t in outputs if t.is_floating_point()]
            if not floats:
                continue
            t = floats[0]
            value = t.detach().float().numpy()
            grad = None if t.grad is None else t.grad.detach().float().numpy()
            stats[op.name] = tensor_stats(value, grad, formats)
            if first_nonfinite is None and not np.all(np.isfinite(value)):
                first_nonfinite = op.name
        unscaled = zero_fraction(grads)
        scale, scaled = LOSS_SCALE, None
        while scale >= 1.0:  # as GradScaler does: lower the scale while the gradients overflow
            _, again = _pass(module, inputs, policy, scale)
            if again is not None and all(np.all(np.isfinite(g)) for g in again):
                scaled = zero_fraction(again)
                break
            scale /= 2.0**4
        return PolicyRun(
            policy,
            ops,
            True,
            first_nonfinite=first_nonfinite,
            zero_grad=unscaled,
            zero_grad_scaled=scaled,
            loss_scale=scale if scaled is not None else math.nan,
            stats=stats,
        )
    finally:
        module.train(was_training)
        module.zero_grad(set_to_none=True)


def training_step(model: Any, inputs: Sequence[np.ndarray], policy: str) -> Any:
    """A callable running one plain training step of a copy of ``model`` under ``policy`` (in
    eval mode, as the check runs it: the forward pass, under ``torch.autocast`` for the autocast
    policies, the loss in float32, ``backward`` to the parameters and floating inputs; no
    optimizer update, no recording), returning when it is done."""
    import torch

    module = _prepare(model, policy, ())
    if module is model:
        module = copy.deepcopy(model)
    module.eval()
    dtype = _dtype(policy) if policy in ("float16", "bfloat16") else torch.float32
    tensors = [
        torch.tensor(x).to(dtype).requires_grad_() if np.issubdtype(x.dtype, np.floating) else torch.tensor(x)
        for x in inputs
    ]

    def step() -> None:
        module.zero_grad(set_to_none=True)
        for t in tensors:
            t.grad = None
        autocast = (
            torch.autocast("cpu", dtype=_dtype(_policy_dtype(policy)))
            if policy.startswith("autocast_")
            else contextlib.nullcontext()
        )
        with autocast:
            out = module(*tensors)
        losses = [torch.mean(torch.square(t.float())) for t in _flat_tensors(out) if t.is_floating_point()]
        torch.stack(losses).sum().backward()

    return step


__all__ = [
    "LOSS_SCALE",
    "NOT_OBSERVED",
    "OPINFO_NAMES",
    "POLICIES",
    "check_policy",
    "framework_version",
    "is_torch_module",
    "layer_weights",
    "opinfo_candidates",
    "run_policy",
    "training_step",
]
