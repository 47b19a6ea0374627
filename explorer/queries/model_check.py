"""The model check: which ops of a user's model run in which dtype on which device, what mixed
precision does to each, and which op overflows or loses its gradients first.

:func:`check_model` traces and runs the model under each policy with the framework's own tools
(:mod:`explorer.runtime.model_keras`, :mod:`~explorer.runtime.model_torch`,
:mod:`~explorer.runtime.model_jax`), reads each op's declared kernel (TensorFlow's registry of
the installed release and the shipped releases; PyTorch's OpInfo), judges the float32 values of
each op against each format (:mod:`explorer.analysis.model_numerics`) and says, per policy and
device, what to do (:mod:`explorer.analysis.model_summary`).  A workaround is offered only
after it was run: the overflowing layer kept in float32, loss scaling.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from explorer.analysis.model_numerics import DEFAULT_FORMATS, headroom_bits, verdict
from explorer.analysis.model_summary import (
    Problem,
    loss_scaling_phrase,
    op_format,
    policy_problem,
    policy_sentence,
    underflow_phrase,
)
from explorer.analysis.model_trace import MergedOp, PolicyRun, merge_traces
from explorer.queries.model_result import KernelStatus, ModelCheck, ModelOp, PolicyResult

#: the default policies per framework (``as_built``, the model with its own dtypes, first where
#: the framework's runner has it; a float32 baseline, everything in float32, is always run)
DEFAULT_POLICIES: dict[str, tuple[str, ...]] = {
    "keras": ("as_built", "float32", "mixed_float16", "mixed_bfloat16"),
    "torch": ("float32", "autocast_float16", "autocast_bfloat16"),
    "jax": ("float32", "float16", "p=f32,c=bf16,o=f32"),
}
#: the devices a check reports on by default (GPU: declared only on a machine without one)
DEFAULT_DEVICES: tuple[str, ...] = ("CPU", "GPU")
#: the framework names a result carries
FRAMEWORK_NAMES: dict[str, str] = {"keras": "TensorFlow", "torch": "PyTorch", "jax": "JAX"}


def framework_of(model: Any) -> str:
    """``keras``, ``torch`` or ``jax`` (a Python function or callable object); TypeError for
    anything else, a builtin (``print``) or a class included: they are no JAX function."""
    from explorer.runtime import model_keras, model_torch

    if model_keras.is_keras_model(model):
        return "keras"
    if model_torch.is_torch_module(model):
        return "torch"
    if inspect.isbuiltin(model) or isinstance(model, type):
        raise TypeError(
            f"check_model takes a Keras model, a torch.nn.Module or a JAX function; "
            f"{getattr(model, '__name__', type(model).__name__)!r} is a builtin or a class, "
            "not a JAX function"
        )
    if callable(model):
        return "jax"
    raise TypeError(
        f"check_model takes a Keras model, a torch.nn.Module or a JAX function, got {type(model).__name__}"
    )


def _runner(framework: str) -> Any:
    if framework == "keras":
        from explorer.runtime import model_keras

        return model_keras
    if framework == "torch":
        from explorer.runtime import model_torch

        return model_torch
    from explorer.runtime import model_jax

    return model_jax


def _as_inputs(example_inputs: Any) -> tuple[Any, ...]:
    items = example_inputs if isinstance(example_inputs, tuple | list) else (example_inputs,)
    out = []
    for x in items:
        if hasattr(x, "detach"):  # a torch tensor
            x = x.detach().cpu().numpy()
        out.append(np.asarray(x))
    return tuple(out)


def default_policies(framework: str) -> tuple[str, ...]:
    """The policies a check runs when none are named: :data:`DEFAULT_POLICIES`, with
    ``as_built`` first wherever the framework's runner has it."""
    chosen = DEFAULT_POLICIES[framework]
    if "as_built" not in chosen and "as_built" in getattr(_runner(framework), "POLICIES", ()):
        chosen = ("as_built", *chosen)
    return chosen


def nonfinite_inputs_text(inputs: Sequence[np.ndarray]) -> str:
    """``your inputs contain 1 NaN and 2 inf`` ("" when every floating input is finite).

    >>> nonfinite_inputs_text([np.array([1.0, np.nan, np.inf, -np.inf])])
    'your inputs contain 1 NaN and 2 inf'
    """
    nan = inf = 0
    for x in inputs:
        if np.issubdtype(x.dtype, np.floating) or np.issubdtype(x.dtype, np.complexfloating):
            nan += int(np.count_nonzero(np.isnan(x)))
            inf += int(np.count_nonzero(np.isinf(x)))
    parts = [f"{nan} NaN" if nan else "", f"{inf} inf" if inf else ""]
    said = " and ".join(p for p in parts if p)
    return f"your inputs contain {said}" if said else ""


def _downstream_text(ops: Sequence[ModelOp]) -> str:
    """What the float32 run made of non-finite inputs, in words."""
    computing = [op for op in ops if not op.data_movement and op.max_abs is not None]
    bad = [i for i, op in enumerate(computing) if not math.isfinite(op.max_abs or 0.0)]
    if not bad:
        return "no op output holds inf/NaN in the float32 run"
    downstream = computing[bad[0] :]
    if len(bad) == len(downstream):
        return f"every op downstream is inf/NaN ({len(bad)} of {len(computing)} in the float32 run)"
    return f"{len(bad)} of the {len(downstream)} ops downstream give inf/NaN in the float32 run"


def _no_gradient_at(ops: Sequence[ModelOp]) -> str:
    """The latest op whose output has an all-zero gradient in the float32 run, in words."""
    for op in reversed(ops):
        if not op.data_movement and op.max_grad == 0.0:
            return f"`{op.layer or '(model)'}` ({op.raw_op})"
    return ""


def check_model(
    model: Any,
    example_inputs: Any,
    *,
    policies: Sequence[str] | None = None,
    devices: Sequence[str] | None = None,
    formats: Sequence[str] | None = None,
    params: Any = None,
    block_formats: Sequence[str] | None = None,
    time_steps: bool = False,
    step_clock: Callable[[], float] | None = None,
) -> ModelCheck:
    """Check ``model`` (a Keras 3 model, a ``torch.nn.Module``, or a JAX function called as
    ``model(*inputs)``, or ``model(params, *inputs)`` when ``params`` is given) on
    ``example_inputs`` (an array or tensor, or a tuple of them).

    ``policies``: names as the framework's section of the docs lists them (Keras ``as_built``,
    the model with the dtypes it was built with, ``float32``, everything in float32,
    ``mixed_float16``, ``mixed_bfloat16``, ``float16``, ``bfloat16``, which keep every layer the
    user built in a dtype of its own; PyTorch ``float32``, ``float16``, ``bfloat16``,
    ``autocast_float16``, ``autocast_bfloat16``; JAX ``float32``, ``float16``, ``bfloat16`` and
    ``p=f32,c=bf16,o=f32`` strings).  ``devices``: ``CPU``, ``GPU``.  ``formats``: those each
    op's float32 values are judged against.  ``block_formats``
    (:data:`explorer.blocks.BLOCK_FORMAT_NAMES`): each layer's weights are quantized to each,
    along the axis the layer contracts, and the RMS relative error kept
    (:func:`explorer.analysis.block_view.layer_block_errors`); so is each op's float32
    activation (``stats.block_rel_rms``).

    Non-finite example inputs are said first, under every policy.  When a policy overflows,
    the smallest set of layers kept in float32 that makes its run finite is searched for
    (:mod:`explorer.queries.model_fix`) and offered only when a run found it.

    ``time_steps``: also time a plain training step (forward and backward, no instrumentation)
    under each policy that ran, here on the CPU (:mod:`explorer.runtime.model_step`: warm-up,
    repeated interleaved samples, median and spread), with its ratio to float32's; it costs
    about 0.2 s per policy beyond the steps' compilation.  ``step_clock``: the clock the steps
    are timed with (seconds; ``time.perf_counter`` by default).

    >>> import numpy as np, jax.numpy as jnp
    >>> check = check_model(lambda p, x: jnp.tanh(x * p), np.ones(3, np.float32), params=np.float32(2.0),
    ...                     policies=["float32", "bfloat16"], devices=["CPU"])
    >>> [(op.raw_op, op.dtype["bfloat16"]) for op in check.ops], check.ok
    ([('convert_element_type', 'bfloat16'), ('mul', 'bfloat16'), ('tanh', 'bfloat16')], True)
    """
    from explorer.analysis.block_view import layer_block_errors
    from explorer.backends import normalize_device
    from explorer.blocks import block_format
    from explorer.formats import resolve
    from explorer.runtime import model_declared

    framework = framework_of(model)
    runner = _runner(framework)
    chosen = tuple(dict.fromkeys(policies or default_policies(framework)))
    for p in chosen:
        runner.check_policy(p)
    wanted_devices = tuple(dict.fromkeys(normalize_device(d) for d in (devices or DEFAULT_DEVICES)))
    fmts = tuple(resolve(f).name for f in (formats or DEFAULT_FORMATS))
    blocks = tuple(dict.fromkeys(block_format(f).name for f in (block_formats or ())))
    inputs = _as_inputs(example_inputs)
    extra = {"params": params} if framework == "jax" else {}
    # the block formats ride along to the per-op statistics (the activations' block errors)
    baseline = runner.run_policy(model, inputs, "float32", fmts + blocks, **extra)
    runs = {"float32": baseline}
    for p in chosen:
        if p not in runs:
            runs[p] = runner.run_policy(model, inputs, p, fmts + blocks, **extra)
    ordered = [runs[p] for p in chosen]
    merged = merge_traces([baseline, *[r for r in ordered if r.policy != "float32"]])
    declared = model_declared.declarations(framework, merged, chosen, wanted_devices)
    rewrites = _grappler_rewrites(model, inputs) if framework == "keras" else []
    ops = tuple(
        _model_op(i, m, chosen, wanted_devices, runs, declared, fmts, framework, rewrites)
        for i, m in enumerate(merged)
    )
    version = f"{FRAMEWORK_NAMES[framework]} {runner.framework_version()}"
    context = _Context(model, inputs, runs, baseline, ops, merged, framework, version, fmts, extra)
    bad_inputs = nonfinite_inputs_text(inputs)
    if bad_inputs:
        context.nonfinite_inputs = f"{bad_inputs}; {_downstream_text(ops)}"
    if baseline.ran and (baseline.zero_grad or 0.0) >= 1.0:
        context.no_gradient_at = _no_gradient_at(ops)
    context.labels = _labels(model, framework, chosen)
    workarounds: dict[str, list[dict[str, Any]]] = {}
    results = []
    for p in chosen:
        cpu: Problem | bool | None = True
        for device in sorted(wanted_devices, key=lambda d: d != "CPU"):  # the CPU run first
            result, tried = _policy_result(context, p, device, workarounds, cpu)
            if device == "CPU" and result.ran:
                cpu = result.problem
            results.append(result)
            if tried:
                workarounds[p] = tried
    results.sort(key=lambda r: (chosen.index(r.policy), wanted_devices.index(r.device)))
    notes = list(runner.NOT_OBSERVED)
    if time_steps and "CPU" in wanted_devices:
        from explorer.queries.model_step_time import with_step_times

        results, step_notes = with_step_times(
            results, runner, model, inputs, tuple(p for p in chosen if runs[p].ran), extra, step_clock
        )
        notes.extend(step_notes)
    if rewrites:
        from explorer.runtime import model_grappler

        computing = [op for op in ops if not op.data_movement]
        notes.extend(model_grappler.notes(rewrites, [op.amp for op in computing]))
    notes.extend(_run_notes(baseline))
    if "GPU" in wanted_devices:
        notes.append(
            "GPU: the declared kernels only, no GPU run on this machine; "
            "its numerics are those of the CPU run"
        )
    weights = runner.layer_weights(params if framework == "jax" else model) if blocks else {}
    axis = getattr(runner, "BLOCK_AXIS_NOTE", "") if blocks else ""
    parts = (framework, version, chosen, wanted_devices, fmts, ops, tuple(results), tuple(notes))
    return ModelCheck(*parts, workarounds, blocks, layer_block_errors(weights, blocks), axis)


def _run_notes(baseline: PolicyRun) -> list[str]:
    """What the float32 run says of how the numerics were judged, in words."""
    notes = []
    if baseline.flush_to_zero:
        flushed = ", ".join(baseline.flush_to_zero)
        notes.append(
            f"this backend flushes {flushed} arithmetic results below the smallest normal to zero here "
            "(a direct run: four times the smallest subnormal times 1 gives 0): those values count as "
            "lost in its verdicts; elsewhere a value is lost when round to nearest takes it to zero "
            "(at most half the smallest subnormal)"
        )
    if baseline.non_trainable:
        shown = ", ".join(baseline.non_trainable[:3]) + (", ..." if len(baseline.non_trainable) > 3 else "")
        notes.append(
            f"zero-gradient fractions are over the trainable variables only; {len(baseline.non_trainable)} "
            f"non-trainable ones are left out ({shown})"
        )
    return notes


def _labels(model: Any, framework: str, policies: Sequence[str]) -> dict[str, str]:
    """policy -> how its sentence names it (``as_built`` with the dtypes the user built in)."""
    runner = _runner(framework)
    if "as_built" not in policies or not hasattr(runner, "user_dtypes"):
        return {}
    built = runner.built_policy(model)
    own = runner.user_dtypes(model)
    extra = ", ".join(f"`{layer}` in {p}" for layer, p in list(own.items())[:3])
    more = f" and {len(own) - 3} more" if len(own) > 3 else ""
    with_own = f" with {extra}{more}" if own else ""
    return {"as_built": f"as_built ({built}{with_own}, as you built it)"}


def _model_op(
    index: int,
    merged: MergedOp,
    policies: Sequence[str],
    devices: Sequence[str],
    runs: dict[str, PolicyRun],
    declared: dict[tuple[int, str, str], tuple[str | None, str | None]],
    formats: Sequence[str],
    framework: str,
    rewrites: Sequence[Any] = (),
) -> ModelOp:
    from explorer.runtime.model_declared import catalog_op

    dtypes = {p: (merged.by_policy[p].dtype if p in merged.by_policy else None) for p in policies}
    kernel: dict[str, dict[str, KernelStatus]] = {}
    for p in policies:
        run = runs[p]
        here = merged.by_policy.get(p)
        kernel[p] = {}
        for device in devices:
            status, first = declared.get((index, p, device), (None, None))
            if device != "CPU" or here is None:
                state, error = "not_run", ""
            elif run.ran:
                state, error = "ran", ""
            elif run.failing_op == here.name:
                state, error = "failed", run.error
            else:
                position = [o.name for o in run.ops].index(here.name)
                failing = (
                    [o.name for o in run.ops].index(run.failing_op)
                    if run.failing_op in [o.name for o in run.ops]
                    else -1
                )
                state = "ran" if framework != "keras" and 0 <= position < failing else "not_reached"
                error = ""
            kernel[p][device] = KernelStatus(status, state, error, first)
    amp = {}
    for p in policies:
        if p != "float32" and p in merged.by_policy:
            op = merged.by_policy[p]
            observed: dict[str, Any] = {"in": list(op.in_dtypes), "out": list(op.out_dtypes)}
            if op.layer_compute_dtype:
                observed["layer_compute_dtype"] = op.layer_compute_dtype
                observed["layer_variable_dtype"] = op.layer_variable_dtype
            amp[p] = observed
    base = merged.by_policy.get("float32")
    for rewrite in rewrites:  # grappler's rewrite of the float32 graph, where it changed it here
        if rewrite.changed and base is not None and base.name in rewrite.dtypes:
            amp[rewrite.name] = {"dtype": rewrite.dtypes[base.name], "observed": "optimised graph"}
    stats = runs["float32"].stats.get(base.name) if base is not None else None
    if stats is None:
        room: dict[str, float] = {}
        verdicts: dict[str, str] = {}
    else:
        room = {f: headroom_bits(stats.max_abs, f) for f in formats}
        flushed = set(runs["float32"].flush_to_zero)
        verdicts = {f: verdict(stats, f, flush_to_zero=f in flushed) for f in formats}
    first_op = next(iter(merged.by_policy.values()))
    return ModelOp(
        index,
        merged.layer,
        merged.raw_op,
        catalog_op(framework, merged.raw_op),
        first_op.data_movement,
        dtypes,
        kernel,
        amp,
        None if stats is None else stats.max_abs,
        None if stats is None else stats.max_grad,
        stats,
        room,
        verdicts,
    )


def _grappler_rewrites(model: Any, inputs: tuple[Any, ...]) -> list[Any]:
    """Grappler's mixed-precision rewrites of the model's float32 graph, read here."""
    from explorer.runtime import model_grappler, model_keras

    return model_grappler.read_rewrites(model_keras.float32_model(model), inputs)


def _index_of(merged: Sequence[MergedOp], policy: str, name: str | None) -> int | None:
    if name is None:
        return None
    for i, m in enumerate(merged):
        op = m.by_policy.get(policy)
        if op is not None and op.name == name:
            return i
    return None


@dataclass
class _Context:
    """What every policy's result is read from (one check)."""

    model: Any
    inputs: tuple[Any, ...]
    runs: dict[str, PolicyRun]
    baseline: PolicyRun
    ops: Sequence[ModelOp]
    merged: Sequence[MergedOp]
    framework: str
    version: str
    formats: Sequence[str]
    extra: dict[str, Any]
    nonfinite_inputs: str = ""
    no_gradient_at: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    _op_dicts: list[dict[str, Any]] | None = None

    @property
    def op_dicts(self) -> list[dict[str, Any]]:
        """The ops as plain data (made once)."""
        if self._op_dicts is None:
            self._op_dicts = [op.to_dict() for op in self.ops]
        return self._op_dicts


def _policy_result(
    c: _Context,
    policy: str,
    device: str,
    done: dict[str, list[dict[str, Any]]],
    cpu: Problem | bool | None,
) -> tuple[PolicyResult, list[dict[str, Any]]]:
    """The result of one policy on one device, with the workaround runs its problem called for.
    ``cpu``: the problem of this policy's CPU run (True: none was made)."""
    from explorer.queries.model_fix import search_keep_float32

    run = c.runs[policy]
    here = device == "CPU"
    failing = _index_of(c.merged, policy, run.failing_op) if here else None
    nonfinite = _index_of(c.merged, policy, run.first_nonfinite) if here else None
    releases = [
        op.kernel[policy][device].first_release
        for op in c.ops
        if op.kernel[policy][device].declared is not None
    ]
    keras = c.framework == "keras"
    first_release = _latest(releases) if keras else None
    ops = c.op_dicts
    problem = policy_problem(
        policy,
        device,
        ops,
        ran=run.ran if here else None,
        error=run.error if here else "",
        failing=failing,
        failing_stage=run.failing_stage,
        failing_name=run.failing_op,
        nonfinite=nonfinite,
        zero_grad=run.zero_grad if here else None,
        zero_grad_scaled=run.zero_grad_scaled if here else None,
        baseline_zero_grad=c.baseline.zero_grad,
        loss_scale=run.loss_scale,
        loss_scaling=run.loss_scaling,
        nonfinite_inputs=c.nonfinite_inputs,
        no_gradient_at=c.no_gradient_at,
        cpu=cpu,
        flush_to_zero=c.baseline.flush_to_zero,
    )
    tried = list(done.get(policy, []))
    # keeping a layer in float32 only means something when the policy computes in another format
    low = any(op_format(op, policy) for op in ops)
    if problem is not None and problem.kind == "overflow" and problem.layer_to_keep and not tried and low:
        tried = search_keep_float32(
            _runner(c.framework), c.model, c.inputs, policy, problem.layer_to_keep, c.formats, c.extra
        )
    if problem is not None and problem.kind == "lost_gradients" and here and low and not tried:
        problem, tried = _gradient_fix(c, policy, problem)
    if problem is not None:
        problem = problem.with_workaround(tried)
    also = []
    if run.loss_scaling and (here or cpu is not True):
        scaled = loss_scaling_phrase(
            policy, run.zero_grad, run.zero_grad_scaled, c.baseline.zero_grad, run.loss_scale
        )
        also = [scaled] if scaled else []
    if problem is not None and problem.kind in ("overflow", "no_gradient", "lost_gradients") and low:
        flushed = underflow_phrase(policy, ops, c.baseline.flush_to_zero)
        if flushed:
            problem = replace(problem, detail=f"{problem.detail}; {flushed}")
    sentence = policy_sentence(
        policy, device, c.version, ops, problem, ran=run.ran if here else None,
        first_release=first_release, oldest_release=_oldest_release() if keras else None,
        label=c.labels.get(policy, ""), kept=run.kept_as_built, also=also,
    )  # fmt: skip
    result = PolicyResult(
        policy,
        device,
        run.ran if here else None,
        run.error if here else "",
        failing,
        nonfinite,
        run.zero_grad if here else None,
        run.zero_grad_scaled if here else None,
        run.loss_scale if here else math.nan,
        first_release,
        sentence,
        problem,
    )
    return result, tried


def _gradient_fix(c: _Context, policy: str, problem: Problem) -> tuple[Problem, list[dict[str, Any]]]:
    """Where ``policy``'s gradients die (the latest op whose gradient is all zero in its run but
    not in float32's), said in the problem, and that layer kept in float32 in one run."""
    from explorer.analysis.model_summary import LOST_GRADIENTS_MARGIN
    from explorer.queries.model_fix import try_keep_for_gradients

    run = c.runs[policy]
    for m in reversed(c.merged):
        mine, base = m.by_policy.get(policy), m.by_policy.get("float32")
        if mine is None or base is None or mine.data_movement or not m.layer:
            continue
        own, ref = run.stats.get(mine.name), c.baseline.stats.get(base.name)
        if own is None or ref is None or own.max_grad != 0.0 or not ref.max_grad:
            continue
        layer = m.layer.split("/", 1)[0]
        detail = f"{problem.detail}; under {policy} the gradient is zero from `{m.layer}` ({m.raw_op}) back"
        tried = try_keep_for_gradients(
            _runner(c.framework), c.model, c.inputs, policy, layer, c.formats, c.extra,
            c.baseline.zero_grad or 0.0, LOST_GRADIENTS_MARGIN,
            run.loss_scale if run.loss_scaling and math.isfinite(run.loss_scale) else 1.0,
        )  # fmt: skip
        return replace(problem, detail=detail, layer_to_keep=layer), tried
    return problem, []


def _oldest_release() -> str | None:
    from explorer.analysis.releases import shipped_releases

    shipped = shipped_releases()
    return shipped[0] if shipped else None


def _latest(releases: Sequence[str | None]) -> str | None:
    from packaging.version import Version

    if not releases or any(r is None for r in releases):
        return None
    return max((r for r in releases if r is not None), key=Version)


__all__ = [
    "DEFAULT_DEVICES",
    "DEFAULT_POLICIES",
    "KernelStatus",
    "ModelCheck",
    "ModelOp",
    "PolicyResult",
    "check_model",
    "default_policies",
    "framework_of",
    "nonfinite_inputs_text",
]
