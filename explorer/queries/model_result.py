"""What :func:`explorer.queries.model_check.check_model` answers, as plain dataclasses: one op
across policies (:class:`ModelOp`), one policy on one device (:class:`PolicyResult`), the whole
check (:class:`ModelCheck`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from explorer.analysis.model_numerics import TensorStats
from explorer.analysis.model_summary import Problem, first_problem
from explorer.analysis.speed import TimingSummary


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
    #: the axis each weight's blocks run along, in words ("" without ``block_formats``)
    block_axis: str = ""

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
            "block_axis": self.block_axis,
        }


def _finite_or_text(value: float | None) -> float | str | None:
    if value is None or math.isfinite(value):
        return value
    return str(value)


__all__ = ["KernelStatus", "ModelCheck", "ModelOp", "PolicyResult"]
