"""The verdict of a model check per policy and device, in words a person can act on.

Pure: it reads the op entries of a check (plain dicts, as :meth:`ModelOp.to_dict` gives them)
and what the real runs found, and returns the blocker (:class:`Problem`) and the sentence.
A workaround is named as working only when the run that tried it says so.

>>> compute_format("mixed_float16"), compute_format("autocast_bfloat16"), compute_format("p=f32,c=bf16,o=f32")
('float16', 'bfloat16', 'bfloat16')
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from explorer.analysis.model_numerics import number_text

#: problem kinds, worst first
KINDS: tuple[str, ...] = (
    "nonfinite_inputs",
    "missing_kernel",
    "run_failed",
    "overflow",
    "no_gradient",
    "lost_gradients",
    "underflows",
)
#: more zero gradients than the float32 run by this fraction of all parameter gradients: the
#: policy loses gradients
LOST_GRADIENTS_MARGIN = 0.05
_KERNEL_ERROR = re.compile(
    r"Could not find device for node|No OpKernel was registered|not implemented for|no kernel", re.IGNORECASE
)
#: the kinds of explain's reader that are no missing kernel (operands of two dtypes, API misuse)
_NOT_A_KERNEL = frozenset(
    {
        "tf_dtype_mismatch",
        "tf_input_type_mismatch",
        "tf_conversion_dtype",
        "jax_dtype_mismatch",
        "torch_dtype_mismatch",
        "keras_mixed_precision_api",
        "xla_mixed_precision",
        "mlir_unsupported_conversion",
        "jax_constant_lowering",
    }
)
_SHORT = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "float32": "float32",
          "float16": "float16", "bfloat16": "bfloat16"}  # fmt: skip


def is_missing_kernel(error: str) -> bool:
    """True when a framework's error text says a kernel is missing for a dtype: explain's reader
    (:func:`explorer.analysis.error_text.parse_error`) finds one of its missing-kernel kinds in it.

    >>> is_missing_kernel("RuntimeError: MKL FFT doesn't support tensors of type: Half")
    True
    >>> is_missing_kernel("ValueError: Unsupported dtype bfloat16"), is_missing_kernel("shapes do not match")
    (True, False)
    """
    from explorer.analysis.error_text import parse_error

    try:
        parsed = parse_error(str(error)[-100_000:])
    except ValueError:
        parsed = None
    return (parsed is not None and parsed.kind not in _NOT_A_KERNEL) or bool(_KERNEL_ERROR.search(str(error)))


def compute_format(policy: str) -> str:
    """The format a policy computes in: ``mixed_float16`` -> ``float16``; a jmp-style
    ``p=f32,c=bf16,o=f32`` -> its ``c``.

    >>> compute_format("float32"), compute_format("bfloat16")
    ('float32', 'bfloat16')
    """
    if "=" in policy:
        parts = dict(p.split("=", 1) for p in policy.split(",") if "=" in p)
        return _SHORT.get(parts.get("c", "f32"), parts.get("c", "float32"))
    return policy.removeprefix("mixed_").removeprefix("autocast_")


@dataclass(frozen=True)
class Problem:
    """The first blocker of one policy on one device."""

    #: one of :data:`KINDS`
    kind: str
    policy: str
    device: str
    #: the op instance (index in the check's op list; None: the error names none) and its layer
    index: int | None
    layer: str
    raw_op: str
    #: what happened, in words
    detail: str
    #: True when a run here showed it (False: predicted, from declarations or float32 values)
    observed: bool
    #: the layer a keep-in-float32 workaround would keep ("" when there is none to try)
    layer_to_keep: str = ""
    #: the workaround offered, in words ("" when none was run that works)
    workaround: str = ""
    #: the workaround runs made, as :func:`explorer.queries.model_check` records them
    tried: tuple[dict[str, Any], ...] = field(default=())
    #: what to try when no run workaround works ("" when the detail says it all)
    advice: str = ""

    def with_workaround(self, tried: Sequence[Mapping[str, Any]]) -> Problem:
        """This problem with the workaround runs made for it, and the one that worked named."""
        text, advice = self.workaround, self.advice
        failed = []
        for t in tried:
            if t.get("workaround") == "keep_float32":
                layers = t.get("layers") or [t["layer"]]
                where = ", ".join(f"`{name}`" for name in layers)
                if t.get("finite"):
                    text = f"keeping {where} in float32 was run on CPU and gives finite values"
                else:
                    why = _first_line(t.get("error", "")) or "still inf/NaN"
                    failed.append(f"{where} ({why})")
            if t.get("workaround") == "keep_float32_gradients":
                where = f"`{t['layer']}`"
                zero = t.get("zero_grad")
                share = f", {zero:.0%} zero" if isinstance(zero, float) else ""
                if t.get("scale", 1.0) != 1.0:
                    share += f" with loss scale {t['scale']:g}"
                if t.get("keeps_gradients"):
                    text = f"keeping {where} in float32 was run on CPU and keeps the gradients{share}"
                else:
                    advice = f"keeping {where} in float32 was run on CPU and does not keep them{share}"
        if failed and not text:
            advice = "kept in float32, each run on CPU and none finite: " + "; ".join(failed)
        return replace(self, workaround=text, advice=advice, tried=tuple(dict(t) for t in tried))

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {
            "kind": self.kind,
            "policy": self.policy,
            "device": self.device,
            "index": self.index,
            "layer": self.layer,
            "raw_op": self.raw_op,
            "detail": self.detail,
            "observed": self.observed,
            "workaround": self.workaround,
            "tried": list(self.tried),
            "advice": self.advice,
        }


def _first_line(text: str, limit: int = 200) -> str:
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    first = lines[0] if lines else ""
    return first if len(first) <= limit else first[: limit - 3] + "..."


def _top_layer(layer: str) -> str:
    return layer.split("/", 1)[0]


def op_format(op: Mapping[str, Any], policy: str) -> str | None:
    """The low-precision format ``op`` computes in under ``policy`` (its traced dtype, when the
    check judged that format), or None (float32, an integer op, a format not judged)."""
    dtype = op["dtype"].get(policy)
    if dtype is None or dtype == "float32" or dtype not in op["verdict"]:
        return None
    return str(dtype)


def _computing(op: Mapping[str, Any]) -> bool:
    return not op.get("data_movement")


def policy_problem(
    policy: str,
    device: str,
    ops: Sequence[Mapping[str, Any]],
    *,
    ran: bool | None,
    error: str,
    failing: int | None,
    failing_stage: str,
    failing_name: str | None,
    nonfinite: int | None,
    zero_grad: float | None,
    zero_grad_scaled: float | None,
    baseline_zero_grad: float | None,
    loss_scale: float,
    loss_scaling: bool = False,
    nonfinite_inputs: str = "",
    no_gradient_at: str = "",
    cpu: Problem | bool | None = True,
    flush_to_zero: Sequence[str] = (),
) -> Problem | None:
    """The first blocker of ``policy`` on ``device``: non-finite example inputs, a failed run
    (CPU) or a declared missing kernel (a device not run here), an overflow (confirmed by the
    run's first inf/NaN on CPU), no gradient at all, gradients lost (judged with the loss
    scaling the policy applies already, ``loss_scaling``), ops that flush more than
    :data:`~explorer.analysis.model_numerics.UNDERFLOW_FRACTION` of their activations to zero
    (below the smallest normal for the formats in ``flush_to_zero``); None when there is none.

    A device not run here (``ran`` None) takes its numerics from the CPU run of the same policy
    (``cpu``: its problem, None when it had none; True when there was no CPU run): the
    declarations say nothing of values, and a prediction never contradicts a run."""
    if nonfinite_inputs:
        return Problem("nonfinite_inputs", policy, device, None, "", "", nonfinite_inputs, True)
    if ran is False:
        op = ops[failing] if failing is not None else None
        kind = "missing_kernel" if is_missing_kernel(error) else "run_failed"
        where = f" ({failing_stage})" if failing_stage else ""
        return Problem(
            kind,
            policy,
            device,
            failing,
            op["layer"] if op else "",
            op["raw_op"] if op else str(failing_name or ""),
            f"{_first_line(error)}{where}",
            True,
            _top_layer(op["layer"]) if op and op["layer"] else "",
        )
    if ran is None:
        for op in ops:
            status = op["kernel"].get(policy, {}).get(device, {}).get("declared")
            if status in ("no_kernel", "unsupported_dtype"):
                dtype = op["dtype"].get(policy)
                return Problem(
                    "missing_kernel",
                    policy,
                    device,
                    op["index"],
                    op["layer"],
                    op["raw_op"],
                    f"{op['raw_op']} declares no {device} kernel for {dtype} ({status})",
                    False,
                )
        if cpu is not True:  # the numerics of the CPU run of this policy, labelled a prediction here
            if not isinstance(cpu, Problem) or cpu.kind not in (
                "overflow",
                "no_gradient",
                "lost_gradients",
                "underflows",
            ):
                return None
            return replace(cpu, device=device, observed=False, detail=f"{cpu.detail} (as run on CPU)")
    low = [op for op in ops if _computing(op) and op_format(op, policy)]
    predicted = next((op for op in low if op["verdict"][op_format(op, policy)] == "overflows"), None)
    if (ran is None and predicted is not None) or (ran and nonfinite is not None):
        op = predicted if predicted is not None else ops[nonfinite]  # type: ignore[index]
        fmt = op_format(op, policy) or str(op["dtype"].get(policy))
        detail = (
            f"layer `{op['layer'] or '(model)'}` overflows {fmt} (max |activation| "
            f"{number_text(op['max_abs'])} > {_format_max(fmt):g})"
            if predicted is not None
            else f"the run gives inf/NaN in {fmt}"
        )
        if ran and nonfinite is not None:
            first = ops[nonfinite]
            detail += f"; the run gives inf/NaN first at `{first['layer'] or '(model)'}` ({first['raw_op']})"
        return Problem(
            "overflow",
            policy,
            device,
            op["index"],
            op["layer"],
            op["raw_op"],
            detail,
            bool(ran),
            _top_layer(op["layer"]),
            advice="keep it in float32 or scale its input" if predicted is not None else "",
        )
    if ran and baseline_zero_grad is not None and baseline_zero_grad >= 1.0 and (zero_grad or 0.0) >= 1.0:
        why = f"; the gradient is zero from {no_gradient_at} back" if no_gradient_at else ""
        return Problem(
            "no_gradient",
            policy,
            device,
            None,
            "",
            "",
            "no gradient flowed: every trainable gradient is zero, in float32 too, for the check's loss "
            f"(the mean of the squared outputs){why}; nothing about gradients can be judged",
            True,
        )
    lost = _lost_gradients(policy, device, low, ran, zero_grad, zero_grad_scaled, baseline_zero_grad,
                           loss_scale, loss_scaling)  # fmt: skip
    if lost is not None:
        return lost
    from explorer.analysis.model_numerics import UNDERFLOW_FRACTION

    flushing = [
        op for op in low if _zero_share(op, str(op_format(op, policy)), flush_to_zero) > UNDERFLOW_FRACTION
    ]
    if flushing:
        first = flushing[0]
        fmts = "/".join(sorted({str(op_format(op, policy)) for op in flushing}))
        return Problem(
            "underflows",
            policy,
            device,
            first["index"],
            first["layer"],
            first["raw_op"],
            f"{len(flushing)} of {len(low)} ops computing in {fmts} underflow: each flushes more than "
            f"{UNDERFLOW_FRACTION:.0%} of its nonzero float32 activations to zero, first "
            f"`{first['layer'] or '(model)'}` ({first['raw_op']})",
            False,
            _top_layer(first["layer"]),
            advice="keep those layers in float32",
        )
    return None


def underflowing_ops(
    policy: str, ops: Sequence[Mapping[str, Any]], flush_to_zero: Sequence[str] = ()
) -> list[Mapping[str, Any]]:
    """The computing ops that run in a low format under ``policy`` and flush more than
    :data:`~explorer.analysis.model_numerics.UNDERFLOW_FRACTION` of their nonzero float32
    activations to zero there."""
    from explorer.analysis.model_numerics import UNDERFLOW_FRACTION

    out = []
    for op in ops:
        fmt = op_format(op, policy)
        if fmt and _computing(op) and _zero_share(op, fmt, flush_to_zero) > UNDERFLOW_FRACTION:
            out.append(op)
    return out


def underflow_phrase(policy: str, ops: Sequence[Mapping[str, Any]], flush_to_zero: Sequence[str] = ()) -> str:
    """The underflowing ops in a phrase, said beside another problem ("" when there are none).

    >>> underflow_phrase("mixed_float16", [])
    ''
    """
    flushing = underflowing_ops(policy, ops, flush_to_zero)
    if not flushing:
        return ""
    low = [op for op in ops if _computing(op) and op_format(op, policy)]
    first = flushing[0]
    return (
        f"also {len(flushing)} of {len(low)} ops computing in a low format underflow (more than 1% of "
        f"their activations to zero), first `{first['layer'] or '(model)'}` ({first['raw_op']})"
    )


def _zero_share(op: Mapping[str, Any], fmt: str, flush_to_zero: Sequence[str]) -> float:
    """The share of ``op``'s nonzero float32 activations that become zero in ``fmt``."""
    stats = op.get("stats") or {}
    key = "below_normal" if fmt in flush_to_zero else "to_zero"
    return float((stats.get(key) or {}).get(fmt, 0.0))


def _lost_gradients(
    policy: str,
    device: str,
    low: Sequence[Mapping[str, Any]],
    ran: bool | None,
    zero_grad: float | None,
    zero_grad_scaled: float | None,
    baseline_zero_grad: float | None,
    loss_scale: float,
    loss_scaling: bool,
) -> Problem | None:
    lost_op = next((op for op in low if op["verdict"][op_format(op, policy)] == "loses_gradients"), None)
    index: int | None = lost_op["index"] if lost_op else None
    layer: str = lost_op["layer"] if lost_op else ""
    raw_op: str = lost_op["raw_op"] if lost_op else ""
    base = baseline_zero_grad or 0.0
    if ran and loss_scaling and zero_grad_scaled is not None:
        if zero_grad_scaled - base <= LOST_GRADIENTS_MARGIN:
            return None  # the loss scaling the policy applies keeps them
        detail = (
            f"{zero_grad_scaled:.0%} of the trainable gradients are zero with the loss scaling "
            f"{policy} applies (scale {loss_scale:g}; {base:.0%} in float32)"
        )
        return Problem("lost_gradients", policy, device, index, layer, raw_op, detail, True, "",
                       advice="keep the layers that lose them in float32")  # fmt: skip
    if ran and zero_grad is not None and zero_grad - base > LOST_GRADIENTS_MARGIN:
        detail = (
            f"{zero_grad:.0%} of the trainable gradients are zero without loss scaling "
            f"({base:.0%} in float32)"
        )
        workaround, advice = "", "use loss scaling"
        if zero_grad_scaled is not None:
            detail += f", {zero_grad_scaled:.0%} with loss scale {loss_scale:g}"
            if zero_grad_scaled - base <= LOST_GRADIENTS_MARGIN:
                workaround = f"loss scaling (scale {loss_scale:g}) was run and keeps the gradients"
            else:
                detail += ": loss scaling was run and does not keep them"
                advice = "keep the layers that lose them in float32"
        return Problem(
            "lost_gradients",
            policy,
            device,
            index,
            layer,
            raw_op,
            detail,
            True,
            "",
            workaround,
            advice=advice,
        )
    if ran is None and lost_op is not None and not loss_scaling:
        return Problem(
            "lost_gradients",
            policy,
            device,
            index,
            layer,
            raw_op,
            f"layer `{lost_op['layer'] or '(model)'}` gradients round to zero in "
            f"{op_format(lost_op, policy)} (max |gradient| {number_text(lost_op['max_grad'])})",
            False,
            advice="use loss scaling",
        )
    return None


def _format_max(fmt: str) -> float:
    from explorer.formats import resolve

    return resolve(fmt).max


def _undeclared(ops: Sequence[Mapping[str, Any]], policy: str, device: str) -> dict[str, int]:
    """raw op -> how many of its instances that compute under ``policy`` in a floating dtype have
    no declaration for ``device`` (data movement left out)."""
    out: dict[str, int] = {}
    for op in ops:
        dtype = op["dtype"].get(policy) or ""
        if op.get("data_movement") or not dtype.startswith(("float", "bfloat")):
            continue
        if op["kernel"].get(policy, {}).get(device, {}).get("declared") is None:
            out[op["raw_op"]] = out.get(op["raw_op"], 0) + 1
    return out


def policy_sentence(
    policy: str,
    device: str,
    version: str,
    ops: Sequence[Mapping[str, Any]],
    problem: Problem | None,
    *,
    ran: bool | None,
    first_release: str | None = None,
    oldest_release: str | None = None,
    label: str = "",
    kept: Sequence[tuple[str, str]] = (),
    also: Sequence[str] = (),
) -> str:
    """One sentence for ``policy`` on ``device``: the kernels, the numerics, what to do.
    ``label``: the policy as said (``as_built (mixed_bfloat16, as you built it)``); ``kept``:
    (layer, dtype) the policy left as the user built them; ``also``: phrases said before the
    verdict.

    >>> policy_sentence("float32", "CPU", "PyTorch 2.13.0", [], None, ran=True)
    'float32 on CPU, PyTorch 2.13.0: every op ran (forward and backward); no problem found'
    >>> policy_sentence("mixed_float16", "CPU", "TF", [], None, ran=True, kept=[("logits", "float32")])[26:]
    'every op ran (forward and backward); `logits` kept in float32 as you built it; no problem found'
    >>> policy_sentence("float32", "GPU", "PyTorch 2.13.0", [], None, ran=None)[32:]
    'no declaration to read and no GPU here to run; nothing to judge, so no verdict'
    """
    head = f"{label or policy} on {device}, {version}"
    judged = True
    if ran is None:
        declared = [
            op for op in ops if op["kernel"].get(policy, {}).get(device, {}).get("declared") is not None
        ]
        kernels = f"a prediction from declarations (no {device} here): every op has a declared kernel"
        undeclared = _undeclared(ops, policy, device)
        if undeclared:
            computing = sum(
                1
                for op in ops
                if not op.get("data_movement")
                and (op["dtype"].get(policy) or "").startswith(("float", "bfloat"))
            )
            kernels = (
                f"a prediction from declarations (no {device} here): "
                f"{computing - sum(undeclared.values())} of {computing} ops have a declared kernel, "
                f"not declared: {', '.join(undeclared)}"
            )
        if not declared:  # nothing traced to look up, nothing run: no verdict either way
            kernels = f"no declaration to read and no {device} here to run"
            judged = False
    elif ran:
        kernels = "every op ran (forward and backward)"
    else:
        kernels = "the run fails"
    if first_release and (problem is None or problem.kind != "missing_kernel"):
        kernels += (
            f"; every op has a kernel in every shipped release ({first_release} on)"
            if first_release == oldest_release
            else f"; every op has a kernel since TensorFlow {first_release}"
        )
    for layer, dtype in kept:
        kernels += f"; `{layer}` kept in {_policy_dtype(dtype)} as you built it"
    for phrase in also:
        kernels += f"; {phrase}"
    if problem is None:
        return f"{head}: {kernels}; " + ("no problem found" if judged else "nothing to judge, so no verdict")
    if problem.kind == "nonfinite_inputs":
        return f"{head}: {problem.detail}"
    if problem.kind in ("missing_kernel", "run_failed"):
        at = f" at `{problem.layer or '(model)'}` ({problem.raw_op})" if problem.raw_op else ""
        text = f"{head}: {'fails' if problem.observed else 'no kernel'}{at}: {problem.detail}"
    else:
        text = f"{head}: {kernels}; {problem.detail}"
    if problem.workaround:
        text += f"; {problem.workaround}"
    elif problem.advice:
        text += f"; {problem.advice}"
    return text


def _policy_dtype(policy: str) -> str:
    """A Keras dtype policy's name as a dtype: ``mixed_float16`` -> ``float16`` (compute),
    ``float32`` as it is."""
    return compute_format(policy) if policy.startswith("mixed_") else policy


def loss_scaling_phrase(
    policy: str,
    zero_grad: float | None,
    zero_grad_scaled: float | None,
    baseline_zero_grad: float | None,
    loss_scale: float,
) -> str:
    """What the loss scaling a policy applies already did, when it kept gradients that would be
    lost without it ("" otherwise).

    >>> loss_scaling_phrase("mixed_float16", 0.4, 0.0, 0.0, 32768.0)
    'the loss scaling mixed_float16 applies (scale 32768, run here) keeps the gradients (40% zero without it)'
    """
    base = baseline_zero_grad or 0.0
    if zero_grad is None or zero_grad_scaled is None or zero_grad - base <= LOST_GRADIENTS_MARGIN:
        return ""
    if zero_grad_scaled - base > LOST_GRADIENTS_MARGIN:
        return ""
    return (
        f"the loss scaling {policy} applies (scale {loss_scale:g}, run here) keeps the gradients "
        f"({zero_grad:.0%} zero without it)"
    )


def first_problem(problems: Sequence[Problem | None]) -> Problem | None:
    """The first problem found on this machine (observed), else the first predicted one.

    >>> first_problem([None, None]) is None
    True
    """
    found = [p for p in problems if p is not None]
    observed = [p for p in found if p.observed]
    chosen = observed or found
    return chosen[0] if chosen else None


__all__ = [
    "KINDS",
    "LOST_GRADIENTS_MARGIN",
    "Problem",
    "compute_format",
    "first_problem",
    "is_missing_kernel",
    "loss_scaling_phrase",
    "op_format",
    "policy_problem",
    "policy_sentence",
    "underflow_phrase",
    "underflowing_ops",
]
