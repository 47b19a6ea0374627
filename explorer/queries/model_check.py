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

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from explorer.analysis.model_numerics import DEFAULT_FORMATS, TensorStats, headroom_bits, verdict
from explorer.analysis.model_summary import (
    Problem,
    compute_format,
    first_problem,
    policy_problem,
    policy_sentence,
)
from explorer.analysis.model_trace import MergedOp, PolicyRun, merge_traces
from explorer.analysis.speed import TimingSummary

#: the default policies per framework (the first is the float32 baseline every check runs)
DEFAULT_POLICIES: dict[str, tuple[str, ...]] = {
    "keras": ("float32", "mixed_float16", "mixed_bfloat16"),
    "torch": ("float32", "autocast_float16", "autocast_bfloat16"),
    "jax": ("float32", "float16", "p=f32,c=bf16,o=f32"),
}
#: the devices a check reports on by default (GPU: declared only on a machine without one)
DEFAULT_DEVICES: tuple[str, ...] = ("CPU", "GPU")
#: the framework names a result carries
FRAMEWORK_NAMES: dict[str, str] = {"keras": "TensorFlow", "torch": "PyTorch", "jax": "JAX"}


@dataclass(frozen=True)
class KernelStatus:
    """One op instance's kernel under one policy on one device."""

    #: what the framework declares: ``ok``, ``no_kernel``, ``unsupported_dtype``; None: no
    #: declaration covers it (an integer dtype, no OpInfo entry, JAX)
    declared: str | None
    #: the real run on this machine: ``ran``, ``failed``, ``not_reached`` (the run stopped at
    #: an earlier op), ``not_run`` (no such device here)
    run: str
    #: the error of the op that failed ("" otherwise)
    error: str = ""
    #: TensorFlow: the first shipped release that declares a kernel (None: none does, or not TF)
    first_release: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {
            "declared": self.declared,
            "run": self.run,
            "error": self.error,
            "first_release": self.first_release,
        }


@dataclass(frozen=True)
class ModelOp:
    """One op instance of the model, across policies."""

    index: int
    #: the user's layer or module path ("" for the model's own code)
    layer: str
    raw_op: str
    #: the catalog op it is, where there is one
    op: str | None
    #: True for ops that only move data (kept, never dropped)
    data_movement: bool
    #: policy -> the dtype it computes in (None: the policy's trace has no such instance)
    dtype: dict[str, str | None]
    #: policy -> device -> :class:`KernelStatus`
    kernel: dict[str, dict[str, KernelStatus]]
    #: mixed policy -> what it did to the op, observed (input/output dtypes; Keras: the layer's
    #: compute and variable dtype)
    amp: dict[str, dict[str, Any]]
    #: largest |activation| and |gradient| in the float32 pass (None: no floating output)
    max_abs: float | None
    max_grad: float | None
    #: the float32 statistics (None: no floating output)
    stats: TensorStats | None
    #: format -> headroom in bits to the format's max
    headroom_bits: dict[str, float]
    #: format -> ``fits``, ``overflows``, ``underflows``, ``loses_gradients``
    verdict: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        """Plain data (the JSON entry of an op)."""
        return {
            "index": self.index,
            "layer": self.layer,
            "raw_op": self.raw_op,
            "op": self.op,
            "data_movement": self.data_movement,
            "dtype": dict(self.dtype),
            "kernel": {p: {d: k.to_dict() for d, k in ks.items()} for p, ks in self.kernel.items()},
            "amp": self.amp,
            "max_abs": _finite_or_text(self.max_abs),
            "max_grad": _finite_or_text(self.max_grad),
            "stats": None if self.stats is None else self.stats.to_dict(),
            "headroom_bits": {f: _finite_or_text(v) for f, v in self.headroom_bits.items()},
            "verdict": dict(self.verdict),
        }


@dataclass(frozen=True)
class PolicyResult:
    """One policy on one device: the real run (CPU), the sentence and the blocker."""

    policy: str
    device: str
    #: True when the forward and backward pass ran here (None: not run, e.g. no GPU)
    ran: bool | None
    error: str
    #: the index in :attr:`ModelCheck.ops` of the op that failed, and of the first that gave
    #: inf/NaN (None: none)
    failing_op: int | None
    first_nonfinite: int | None
    zero_grad: float | None
    zero_grad_scaled: float | None
    loss_scale: float
    #: TensorFlow: the first shipped release in which every op has a kernel (None: none, or not TF)
    first_release: str | None
    sentence: str
    problem: Problem | None
    #: the measured training step (forward and backward) under this policy here, when the check
    #: was asked to time it (``time_steps=True``; None otherwise, on other devices, or when the
    #: step did not run)
    step_time: TimingSummary | None = None
    #: the step's median over float32's (None without both)
    step_ratio_to_float32: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {
            "policy": self.policy,
            "device": self.device,
            "ran": self.ran,
            "error": self.error,
            "failing_op": self.failing_op,
            "first_nonfinite": self.first_nonfinite,
            "zero_grad": self.zero_grad,
            "zero_grad_scaled": self.zero_grad_scaled,
            "loss_scale": _finite_or_text(self.loss_scale),
            "first_release": self.first_release,
            "sentence": self.sentence,
            "problem": None if self.problem is None else self.problem.to_dict(),
            "step_time": None if self.step_time is None else self.step_time.to_dict(),
            "step_ratio_to_float32": self.step_ratio_to_float32,
        }


@dataclass(frozen=True)
class ModelCheck:
    """The answer of :func:`check_model`."""

    #: ``keras``, ``torch`` or ``jax``
    framework: str
    #: ``TensorFlow 2.21.0``, ``PyTorch 2.13.0``, ``JAX 0.10.0``
    framework_version: str
    policies: tuple[str, ...]
    devices: tuple[str, ...]
    formats: tuple[str, ...]
    ops: tuple[ModelOp, ...]
    results: tuple[PolicyResult, ...]
    #: what could not be observed here, in words
    notes: tuple[str, ...] = ()
    #: policy -> the workaround runs made for it (what, and what they gave)
    workarounds: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: the block formats the layers' weights were quantized to (``block_formats=``)
    block_formats: tuple[str, ...] = ()
    #: layer -> block format -> RMS relative error of its weights quantized to it (None: no
    #: nonzero weight); only layers that hold weights
    weight_block_errors: dict[str, dict[str, float | None]] = field(default_factory=dict)

    @property
    def summary(self) -> list[str]:
        """One sentence per policy and device."""
        return [r.sentence for r in self.results]

    @property
    def first_problem(self) -> Problem | None:
        """The first blocker over the policies in order (missing kernel, overflow, lost gradients)."""
        return first_problem([r.problem for r in self.results])

    @property
    def ok(self) -> bool:
        """True when the model ran under every policy on this machine with no problem found."""
        return self.first_problem is None

    def to_dict(self) -> dict[str, Any]:
        """Plain data (the ``result`` of ``precision-explorer model --json``)."""
        problem = self.first_problem
        return {
            "framework": self.framework,
            "framework_version": self.framework_version,
            "policies": list(self.policies),
            "devices": list(self.devices),
            "formats": list(self.formats),
            "ops": [op.to_dict() for op in self.ops],
            "results": [r.to_dict() for r in self.results],
            "summary": self.summary,
            "first_problem": None if problem is None else problem.to_dict(),
            "notes": list(self.notes),
            "workarounds": self.workarounds,
            "block_formats": list(self.block_formats),
            "weight_block_errors": self.weight_block_errors,
        }


def _finite_or_text(value: float | None) -> float | str | None:
    if value is None or math.isfinite(value):
        return value
    return str(value)


def framework_of(model: Any) -> str:
    """``keras``, ``torch`` or ``jax`` (a plain callable); TypeError for anything else."""
    from explorer.runtime import model_keras, model_torch

    if model_keras.is_keras_model(model):
        return "keras"
    if model_torch.is_torch_module(model):
        return "torch"
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
    ``model(params, *inputs)``) on ``example_inputs`` (an array or tensor, or a tuple of them).

    ``policies``: names as the framework's section of the docs lists them (Keras ``float32``,
    ``mixed_float16``, ``mixed_bfloat16``, ``float16``, ``bfloat16``; PyTorch ``float32``,
    ``float16``, ``bfloat16``, ``autocast_float16``, ``autocast_bfloat16``; JAX ``float32``,
    ``float16``, ``bfloat16`` and ``p=f32,c=bf16,o=f32`` strings).  ``devices``: ``CPU``,
    ``GPU``.  ``formats``: those each op's float32 values are judged against.  ``block_formats``
    (:data:`explorer.blocks.BLOCK_FORMAT_NAMES`): each layer's weights are quantized to each,
    and the RMS relative error kept (:func:`explorer.analysis.block_view.layer_block_errors`);
    so is each op's float32 activation (``stats.block_rel_rms``).

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
    chosen = tuple(dict.fromkeys(policies or DEFAULT_POLICIES[framework]))
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
    workarounds: dict[str, list[dict[str, Any]]] = {}
    results = []
    for p in chosen:
        for device in wanted_devices:
            result, tried = _policy_result(
                model,
                inputs,
                p,
                device,
                runs,
                baseline,
                ops,
                merged,
                framework,
                version,
                fmts,
                extra,
                workarounds,
            )
            results.append(result)
            if tried:
                workarounds[p] = tried
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
    if "GPU" in wanted_devices:
        notes.append("GPU: the declared kernels only; no GPU run on this machine")
    weights = runner.layer_weights(params if framework == "jax" else model) if blocks else {}
    if blocks and getattr(runner, "BLOCK_AXES", None):
        notes.append(runner.BLOCK_AXES)  # the axis the weight blocks run along, in words
    parts = (framework, version, chosen, wanted_devices, fmts, ops, tuple(results), tuple(notes))
    return ModelCheck(*parts, workarounds, blocks, layer_block_errors(weights, blocks))


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
        if compute_format(p) != "float32" and p in merged.by_policy:
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
        verdicts = {f: verdict(stats, f) for f in formats}
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
    from explorer.runtime import model_grappler

    return model_grappler.read_rewrites(model, inputs)


def _index_of(merged: Sequence[MergedOp], policy: str, name: str | None) -> int | None:
    if name is None:
        return None
    for i, m in enumerate(merged):
        op = m.by_policy.get(policy)
        if op is not None and op.name == name:
            return i
    return None


def _policy_result(
    model: Any,
    inputs: tuple[Any, ...],
    policy: str,
    device: str,
    runs: dict[str, PolicyRun],
    baseline: PolicyRun,
    ops: Sequence[ModelOp],
    merged: Sequence[MergedOp],
    framework: str,
    version: str,
    formats: Sequence[str],
    extra: dict[str, Any],
    done: dict[str, list[dict[str, Any]]],
) -> tuple[PolicyResult, list[dict[str, Any]]]:
    """The result of one policy on one device, with the workaround runs its problem called for."""
    run = runs[policy]
    here = device == "CPU"
    failing = _index_of(merged, policy, run.failing_op) if here else None
    nonfinite = _index_of(merged, policy, run.first_nonfinite) if here else None
    releases = [
        op.kernel[policy][device].first_release
        for op in ops
        if op.kernel[policy][device].declared is not None
    ]
    first_release = _latest(releases) if framework == "keras" else None
    problem = policy_problem(
        policy,
        device,
        [op.to_dict() for op in ops],
        ran=run.ran if here else None,
        error=run.error if here else "",
        failing=failing,
        failing_stage=run.failing_stage,
        failing_name=run.failing_op,
        nonfinite=nonfinite,
        zero_grad=run.zero_grad if here else None,
        zero_grad_scaled=run.zero_grad_scaled if here else None,
        baseline_zero_grad=baseline.zero_grad,
        loss_scale=run.loss_scale,
    )
    tried = list(done.get(policy, []))
    # keeping a layer in float32 only means something when the policy computes in another format
    wants_float32_run = compute_format(policy) != "float32" and framework != "jax"
    if problem is not None and problem.layer_to_keep and not tried and wants_float32_run:
        tried.append(
            _keep_float32_run(model, inputs, policy, problem.layer_to_keep, framework, formats, extra)
        )
    if problem is not None:
        problem = problem.with_workaround(tried)
    sentence = policy_sentence(
        policy, device, version, [op.to_dict() for op in ops], problem, ran=run.ran if here else None,
        first_release=first_release if framework == "keras" else None,
        oldest_release=_oldest_release() if framework == "keras" else None,
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


def _keep_float32_run(
    model: Any,
    inputs: tuple[Any, ...],
    policy: str,
    layer: str,
    framework: str,
    formats: Sequence[str],
    extra: dict[str, Any],
) -> dict[str, Any]:
    """Run ``policy`` again with ``layer`` kept in float32; what it gave."""
    runner = _runner(framework)
    try:
        again = runner.run_policy(model, inputs, policy, formats, keep_float32=[layer], **extra)
    except (ValueError, TypeError) as exc:
        return {
            "workaround": "keep_float32",
            "layer": layer,
            "ran": False,
            "finite": False,
            "error": str(exc),
        }
    return {
        "workaround": "keep_float32",
        "layer": layer,
        "ran": again.ran,
        "finite": again.ran and again.first_nonfinite is None,
        "error": again.error,
    }


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
    "framework_of",
]
