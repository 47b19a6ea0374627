"""Tracing and running a PyTorch ``nn.Module`` under each policy, op by op.

One recorded pass per policy (:mod:`explorer.runtime.torch_recorder`, a ``TorchDispatchMode``)
sees every aten op the module runs, below autograd and below autocast: the op, its real input
and output dtypes, and its values at its return; the module path comes from forward hooks on
every submodule.  The loss-scaled gradients are taken through the same pass's graph.

Policies: ``as_built`` (the module as the user built it: its submodules' own dtypes, the
autocast regions its forward opens); ``float32`` (everything in float32); ``float16`` and
``bfloat16`` (the module and the inputs cast); ``autocast_float16`` and ``autocast_bfloat16``
(``torch.autocast("cpu", dtype=...)`` around the forward pass). The named low-precision policies
keep every submodule the user built in a dtype of its own in that dtype (:func:`kept_as_built`).
CUDA autocast cannot be observed on a machine without CUDA. Every policy runs on a copy of the
module (:func:`explorer.runtime.torch_state.working_copy`) and on copies of the inputs: the
user's module, its gradients and the input tensors are not changed. Runs are kept per module
while its state and the inputs are unchanged (:data:`RUNS`). torch is imported inside the
functions.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from explorer.analysis.model_numerics import tensor_stats, zero_fraction
from explorer.analysis.model_trace import PolicyRun
from explorer.runtime.torch_recorder import make_recorder
from explorer.runtime.torch_state import RunCache, fingerprint, working_copy

#: the PyTorch policies
POLICIES: tuple[str, ...] = (
    "as_built",
    "float32",
    "float16",
    "bfloat16",
    "autocast_float16",
    "autocast_bfloat16",
)
#: the loss scale of the scaled run (torch.amp.GradScaler starts at 2**16)
LOSS_SCALE = 2.0**16


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


def _name_candidates(name: str) -> tuple[str, ...]:
    bare = name.strip("_")
    spaces = ("nn.functional", "special", "linalg", "fft")
    return tuple(dict.fromkeys((name, bare, *(f"{space}.{bare}" for space in spaces))))


_CALLED_BY: dict[int, dict[str, list[str]]] = {}


def _called_by(data: Mapping[str, Any]) -> dict[str, list[str]]:
    """aten op -> the names of the OpInfo entries whose samples call it, most specific first:
    the entries that call the fewest distinct aten ops, then default variants, then the names
    closest to the aten op's."""
    key = id(data)
    if key not in _CALLED_BY:
        found: dict[str, list[tuple[int, int, float, str]]] = {}
        for entry in data["entries"]:
            calls = entry.get("calls", [])
            for aten in calls:
                closeness = difflib.SequenceMatcher(
                    None, aten.strip("_"), entry["name"].split(".")[-1]
                ).ratio()
                found.setdefault(aten, []).append(
                    (len(calls), entry["variant"] != "", -closeness, entry["name"])
                )
        _CALLED_BY.clear()
        _CALLED_BY[key] = {
            aten: list(dict.fromkeys(name for *_, name in sorted(ranked))) for aten, ranked in found.items()
        }
    return _CALLED_BY[key]


def _by_words(data: Mapping[str, Any]) -> dict[str, list[str]]:
    """Each default-variant OpInfo name's last part -> its names (``layer_norm`` ->
    ``nn.functional.layer_norm``), for :func:`opinfo_candidates`' word rule."""
    out: dict[str, list[str]] = {}
    for entry in data["entries"]:
        if entry["variant"] == "":
            out.setdefault(entry["name"].split(".")[-1], []).append(entry["name"])
    return out


def _word_candidates(name: str, data: Mapping[str, Any]) -> list[str]:
    """The OpInfo names whose last part is a run of whole words of ``name`` (split at ``_``),
    longest first: ``_scaled_dot_product_flash_attention_for_cpu`` ->
    ``nn.functional.scaled_dot_product_attention`` needs the run to be words in order, so
    ``native_layer_norm`` -> ``layer_norm``; a one-letter word alone is not a match."""
    words = [w for w in name.split("_") if w]
    found: list[tuple[int, str]] = []
    for leaf, names in _by_words(data).items():
        parts = leaf.split("_")
        if len(leaf) < 2:
            continue
        it = iter(words)
        if all(any(p == w for w in it) for p in parts):  # the leaf's words, in order, among the op's
            found.extend((-len(parts), n) for n in names)
    return [n for _, n in sorted(found)]


def opinfo_candidates(raw_op: str, data: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """The OpInfo entry names a traced aten op may be declared under, most likely first: by name
    (the op itself, without its underscores, in ``nn.functional``, ``special``, ``linalg``,
    ``fft``); then the entries whose sample inputs call it (``calls`` of
    :func:`explorer.runtime.torch_declared.read_opinfo_data`, most specific first); then the
    entries whose name's words are among the op's (``_scaled_dot_product_flash_attention_for_cpu``
    -> ``nn.functional.scaled_dot_product_attention``).  ``data``: that database (None: read
    it, :func:`~explorer.runtime.torch_declared.opinfo_data`, or the names alone where it
    cannot be read).

    >>> opinfo_candidates("aten.relu_", {"entries": []})
    ('relu_', 'relu', 'nn.functional.relu', 'special.relu', 'linalg.relu', 'fft.relu')
    >>> entry = {"name": "cdist", "variant": "", "calls": ["_cdist_forward"]}
    >>> opinfo_candidates("aten._cdist_forward", {"entries": [entry]})[-1]
    'cdist'
    >>> entry = {"name": "nn.functional.layer_norm", "variant": "", "calls": []}
    >>> opinfo_candidates("aten.native_layer_norm", {"entries": [entry]})[-1]
    'nn.functional.layer_norm'
    """
    name = raw_op.removeprefix("aten.")
    if data is None:
        from explorer.runtime import torch_declared

        try:
            data = torch_declared.opinfo_data()
        except RuntimeError:
            return _name_candidates(name)
    key = (id(data), name)
    if key not in _CANDIDATES:
        if len(_CANDIDATES) > 4096 or any(k[0] != key[0] for k in _CANDIDATES):
            _CANDIDATES.clear()  # another database: the names found for the last one go
        traced = _called_by(data).get(name, [])
        _CANDIDATES[key] = tuple(
            dict.fromkeys((*_name_candidates(name), *traced, *_word_candidates(name, data)))
        )
    return _CANDIDATES[key]


_CANDIDATES: dict[tuple[int, str], tuple[str, ...]] = {}


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


def user_dtypes(model: Any) -> dict[str, str]:
    """The submodules the user built in a floating dtype other than float32 (their own
    parameters and buffers, all of one dtype): name -> dtype (``"(model)"`` for the root).

    >>> import torch
    >>> net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2).to(torch.float16))
    >>> user_dtypes(net)
    {'1': 'float16'}
    """
    out = {}
    for name, sub in model.named_modules():
        tensors = [*sub.parameters(recurse=False), *sub.buffers(recurse=False)]
        own = {t.dtype for t in tensors if t.is_floating_point()}
        if len(own) == 1:
            dtype = str(next(iter(own))).removeprefix("torch.")
            if dtype != "float32":
                out[name or "(model)"] = dtype
    return out


def built_policy(model: Any) -> str:
    """How the module was built, in words, for the ``as_built`` label: PyTorch has no global
    policy; what the user chose is the dtypes of its submodules (:func:`user_dtypes`) and the
    autocast regions its forward opens, both kept by ``as_built``."""
    return "its own dtypes and autocast regions"


def kept_as_built(model: Any, policy: str) -> dict[str, str]:
    """The submodules a policy keeps in the dtype the user built them in: every one of
    :func:`user_dtypes` under a named policy other than ``float32`` (which means everything in
    float32) and ``as_built`` (where nothing is changed)."""
    return {} if policy in ("as_built", "float32") else user_dtypes(model)


def _keep_own_dtype(sub: Any, dtype: Any, policy: str) -> None:
    """Run ``sub`` in ``dtype`` (the user's) under ``policy``: autocast off inside it, its floating
    inputs cast to ``dtype``, its floating outputs back to the policy's dtype for a cast policy."""
    import torch

    forward = sub.forward
    back = _dtype(policy) if policy in ("float16", "bfloat16") else None

    def in_own_dtype(*args: Any, _forward: Any = forward, **kwargs: Any) -> Any:
        cast = [a.to(dtype) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
        with torch.autocast("cpu", enabled=False):
            out = _forward(*cast, **kwargs)
        if back is not None and isinstance(out, torch.Tensor) and out.is_floating_point():
            return out.to(back)
        return out

    sub.forward = in_own_dtype


def _prepare(module: Any, policy: str, keep_float32: Sequence[str]) -> Any:
    """The module a policy runs, made from ``module`` (the check's copy, changed in place):
    ``as_built`` as it is; ``float32`` everything in float32; a cast policy casts to its dtype
    and an autocast policy runs under ``torch.autocast``, both keeping each submodule the user
    built in a dtype of its own (:func:`kept_as_built`) in that dtype; the modules in
    ``keep_float32`` in float32, their floating inputs cast to float32 and outputs back."""
    import torch

    check_policy(policy)
    own = kept_as_built(module, policy)
    if policy == "float32":
        module = module.float()
    elif policy in ("float16", "bfloat16"):
        module = module.to(_dtype(policy))
    modules = dict(module.named_modules())
    for name, dtype_name in own.items():
        sub = modules["" if name == "(model)" else name]
        dtype = getattr(torch, dtype_name)  # a torch dtype's own name (float64, float16, ...)
        _keep_own_dtype(sub.to(dtype), dtype, policy)
    back = _dtype(_policy_dtype(policy)) if policy != "as_built" else torch.float32
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


#: how :func:`layer_weights` lays out each weight for block quantization, in words
BLOCK_AXIS_NOTE = (
    "PyTorch weight blocks run along the contraction axis: a Linear weight (out, in) along in; a "
    "convolution weight (out, in/groups, *kernel) over in/groups x kernel (transposed convolutions: "
    "(in, out/groups, *kernel) taken per output channel); other parameters along their last axis"
)


def _contraction_rows(module: Any, name: str, weight: np.ndarray) -> np.ndarray:
    """``weight`` as rows, one per output, each running along what the output contracts over."""
    import torch

    conv = isinstance(module, torch.nn.modules.conv._ConvNd)
    if not conv or name != "weight" or weight.ndim < 3:
        return weight
    if getattr(module, "transposed", False):  # (in, out/groups, *k) -> (out, in/groups * k)
        groups = int(module.groups)
        cin, per_out, kernel = weight.shape[0], weight.shape[1], weight.shape[2:]
        w = weight.reshape(groups, cin // groups, per_out, *kernel)
        w = np.moveaxis(w, 2, 1)  # (groups, out/groups, in/groups, *k)
        return np.ascontiguousarray(w).reshape(groups * per_out, -1)
    return weight.reshape(weight.shape[0], -1)  # (out, in/groups, *k) -> (out, in/groups * k)


def layer_weights(model: Any) -> dict[str, list[np.ndarray]]:
    """Each module that holds parameters of its own (path as the op list names it, ``""`` for
    the model) -> those parameters, float32 arrays in registration order, each laid out so that
    its last axis is the one a block format's blocks run along (:data:`BLOCK_AXIS_NOTE`): a Linear
    weight (out, in) as it is, a convolution weight as (out, in/groups x kernel)."""
    out: dict[str, list[np.ndarray]] = {}
    for path, module in model.named_modules():
        own = [
            _contraction_rows(module, name, p.detach().float().cpu().numpy())
            for name, p in module.named_parameters(recurse=False)
        ]
        if own:
            out[path] = own
    return out


def _flat_tensors(value: Any) -> list[Any]:
    import torch
    from torch.utils._pytree import tree_flatten

    return [t for t in tree_flatten(value)[0] if isinstance(t, torch.Tensor)]


def _input_tensors(inputs: Sequence[np.ndarray], policy: str) -> tuple[list[Any], list[Any]]:
    """(leaves, what the module gets): each floating input a fresh leaf that requires grad (a
    module without parameters still has a backward pass), passed on as a copy, so that a forward
    that writes into its input (``x += 1``) runs as it does for the user; other inputs as they are."""
    import torch

    dtype = _dtype(policy) if policy in ("float16", "bfloat16") else torch.float32
    leaves, given = [], []
    for x in inputs:
        t = torch_tensor(x)
        if np.issubdtype(np.asarray(x).dtype, np.floating):
            t = t.to(dtype).requires_grad_()
            leaves.append(t)
            given.append(t.clone())
        else:
            given.append(t)
    return leaves, given


def torch_tensor(x: np.ndarray) -> Any:
    """A torch tensor holding a copy of ``x``."""
    import torch

    return torch.tensor(np.array(x, copy=True))


def _autocast(policy: str) -> Any:
    import torch

    if policy.startswith("autocast_"):
        return torch.autocast("cpu", dtype=_dtype(_policy_dtype(policy)))
    return contextlib.nullcontext()


def _loss(out: Any) -> Any:
    """The float32 loss the check differentiates: the sum of each floating output's mean square."""
    import torch

    losses = [torch.mean(torch.square(t.float())) for t in _flat_tensors(out) if t.is_floating_point()]
    if not losses:
        raise TypeError("the module returns no floating tensor: there is nothing to differentiate")
    return torch.stack(losses).sum()


def _pass(module: Any, inputs: Sequence[np.ndarray], policy: str) -> tuple[Any, Any, Any, bool]:
    """One recorded forward and backward pass under ``policy``: (recorder, loss with its graph
    kept, the parameters that require grad, whether it ran).  Every exception the module raises
    is recorded (``recorder.failure``), with the stage it was raised in (``recorder.recording``
    is False in the backward pass)."""
    stack: list[str] = []
    recorder = make_recorder(stack)
    _, given = _input_tensors(inputs, policy)
    params = [p for p in module.parameters() if p.requires_grad]
    loss = None
    try:
        with _module_paths(module, stack), recorder:
            with _autocast(policy):
                out = module(*given)
            recorder.recording = False
            for outputs in recorder.outputs:
                for t in outputs:
                    if t.requires_grad and t.grad_fn is not None:
                        t.retain_grad()
            loss = _loss(out)
            loss.backward(retain_graph=True)
    except Exception as exc:
        if recorder.failure is None:
            recorder.failure = (None, f"{type(exc).__name__}: {exc}")
        return recorder, None, params, False
    return recorder, loss, params, True


def _scaled_gradients(loss: Any, params: Sequence[Any], scale: float) -> list[np.ndarray] | None:
    """The parameters' gradients of ``loss * scale`` through the pass's kept graph (the forward
    pass does not depend on the scale, so it is not run again); None when the backward fails."""
    import torch

    if not params:
        return []
    try:
        grads = torch.autograd.grad(loss * scale, list(params), retain_graph=True, allow_unused=True)
    except Exception:
        return None
    return [g.detach().float().numpy() for g in grads if g is not None]


#: the check's runs of each module, while its state and the inputs are unchanged
RUNS = RunCache()


def clear_cache() -> None:
    """Forget the runs kept for reuse (:data:`RUNS`)."""
    RUNS.clear()


def run_policy(
    model: Any,
    inputs: Sequence[np.ndarray],
    policy: str,
    formats: Sequence[str],
    keep_float32: Sequence[str] = (),
) -> PolicyRun:
    """``model`` under ``policy``: the aten ops it ran with their real dtypes, one forward and
    backward pass (per-op statistics from it, each op's values as the op returned them; the
    parameters' gradients without and with loss scaling), and the op that failed with its
    error, if one did.  It runs on a copy (:func:`explorer.runtime.torch_state.working_copy`):
    ``model`` is not changed.  A run of the same module, state, inputs and arguments in this
    process is reused (:data:`RUNS`)."""
    check_policy(policy)
    key = (fingerprint(model, inputs), policy, tuple(formats), tuple(keep_float32))
    kept = RUNS.get(model, key)
    if kept is not None:
        return kept
    kept = tuple(sorted(kept_as_built(model, policy).items()))
    with working_copy(model) as copied:
        run = _run_policy(_prepare(copied, policy, keep_float32), inputs, policy, formats, kept)
    RUNS.put(model, key, run)
    return run


def _run_policy(
    module: Any,
    inputs: Sequence[np.ndarray],
    policy: str,
    formats: Sequence[str],
    kept: tuple[tuple[str, str], ...] = (),
) -> PolicyRun:
    module.eval()
    module.zero_grad(set_to_none=True)
    recorder, loss, params, ran = _pass(module, inputs, policy)
    ops = tuple(recorder.ops)
    if not ran:
        failing, error = recorder.failure or (None, "the pass failed outside any aten op")
        in_backward = (failing or "").startswith("backward:") or not recorder.recording
        return PolicyRun(policy, ops, False, error, failing, "backward" if in_backward else "forward")
    stats = {}
    first_nonfinite = None
    for index, (op, outputs) in enumerate(zip(ops, recorder.outputs, strict=True)):
        t = next((o for o in outputs if o.is_floating_point()), None)
        if t is None:
            continue
        value = recorder.value(index, t).detach().float().numpy()
        grad = recorder.grad(index, t)
        grad = None if grad is None else grad.detach().float().numpy()
        stats[op.name] = tensor_stats(value, grad, formats)
        if first_nonfinite is None and not np.all(np.isfinite(value)):
            first_nonfinite = op.name
    grads = [p.grad.detach().float().numpy() for p in params if p.grad is not None]
    unscaled = zero_fraction(grads)
    scale, scaled = LOSS_SCALE, None
    while scale >= 1.0:  # as GradScaler does: lower the scale while the gradients overflow
        again = _scaled_gradients(loss, params, scale)
        if again is not None and all(np.all(np.isfinite(g)) for g in again):
            scaled = zero_fraction(again)
            break
        scale /= 2.0**4
    return PolicyRun(
        policy,
        ops,
        True,
        kept_as_built=kept,
        first_nonfinite=first_nonfinite,
        zero_grad=unscaled,
        zero_grad_scaled=scaled,
        loss_scale=scale if scaled is not None else math.nan,
        stats=stats,
    )


def training_step(model: Any, inputs: Sequence[np.ndarray], policy: str) -> Any:
    """A callable running one plain training step of a copy of ``model`` under ``policy`` (in
    eval mode, as the check runs it: the forward pass, under ``torch.autocast`` for the autocast
    policies, the loss in float32, ``backward`` to the parameters and floating inputs; no
    optimizer update, no recording), returning when it is done."""
    module = _prepare(copy.deepcopy(model), policy, ())
    module.eval()
    leaves, _ = _input_tensors(inputs, policy)
    others = [torch_tensor(x) for x in inputs if not np.issubdtype(np.asarray(x).dtype, np.floating)]

    def step() -> None:
        module.zero_grad(set_to_none=True)
        floats, rest = iter(leaves), iter(others)
        given = [
            next(floats).clone() if np.issubdtype(np.asarray(x).dtype, np.floating) else next(rest)
            for x in inputs
        ]  # a fresh copy each step: a forward may write into its input
        with _autocast(policy):
            out = module(*given)
        _loss(out).backward()

    return step


__all__ = [
    "BLOCK_AXIS_NOTE",
    "LOSS_SCALE",
    "NOT_OBSERVED",
    "POLICIES",
    "built_policy",
    "check_policy",
    "clear_cache",
    "framework_version",
    "is_torch_module",
    "kept_as_built",
    "layer_weights",
    "opinfo_candidates",
    "run_policy",
    "training_step",
    "user_dtypes",
]
