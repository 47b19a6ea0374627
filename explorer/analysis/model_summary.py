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
KINDS: tuple[str, ...] = ("missing_kernel", "run_failed", "overflow", "lost_gradients")
#: more zero gradients than the float32 run by this fraction of all parameter gradients: the
#: policy loses gradients
LOST_GRADIENTS_MARGIN = 0.05
_KERNEL_ERROR = re.compile(
    r"Could not find device for node|No OpKernel was registered|not implemented for|no kernel", re.IGNORECASE
)
_SHORT = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "float32": "float32",
          "float16": "float16", "bfloat16": "bfloat16"}  # fmt: skip


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

    def with_workaround(self, tried: Sequence[Mapping[str, Any]]) -> Problem:
        """This problem with the workaround runs made for it, and the one that worked named."""
        text = self.workaround
        for t in tried:
            if t.get("workaround") == "keep_float32":
                where = f"`{t['layer']}`"
                if t.get("finite"):
                    text = f"keeping {where} in float32 was run on CPU and gives finite values"
                else:
                    why = _first_line(t.get("error", "")) or "still inf/NaN"
                    text = f"keeping {where} in float32 was run on CPU and does not help ({why})"
        return replace(self, workaround=text, tried=tuple(dict(t) for t in tried))

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
        }


def _first_line(text: str, limit: int = 200) -> str:
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    first = lines[0] if lines else ""
    return first if len(first) <= limit else first[: limit - 3] + "..."


def _top_layer(layer: str) -> str:
    return layer.split("/", 1)[0]


def _in_format(op: Mapping[str, Any], policy: str, fmt: str) -> bool:
    return op["dtype"].get(policy) == fmt


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
) -> Problem | None:
    """The first blocker of ``policy`` on ``device``: a failed run (CPU) or a declared missing
    kernel (a device not run here), an overflow (confirmed by the run's first inf/NaN on CPU),
    or gradients lost without loss scaling; None when there is none."""
    fmt = compute_format(policy)
    if ran is False:
        op = ops[failing] if failing is not None else None
        kind = "missing_kernel" if _KERNEL_ERROR.search(error) or _torch_kernel_error(error) else "run_failed"
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
    if fmt == "float32":
        return None
    predicted = next(
        (op for op in ops if _in_format(op, policy, fmt) and op["verdict"].get(fmt) == "overflows"), None
    )
    if (ran is None and predicted is not None) or (ran and nonfinite is not None):
        op = predicted if predicted is not None else ops[nonfinite]  # type: ignore[index]
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
        )
    if ran and zero_grad is not None:
        base = baseline_zero_grad or 0.0
        if zero_grad - base > LOST_GRADIENTS_MARGIN:
            detail = (
                f"{zero_grad:.0%} of the parameters' gradients are zero without loss scaling "
                f"({base:.0%} in float32)"
            )
            workaround = ""
            if zero_grad_scaled is not None:
                detail += f", {zero_grad_scaled:.0%} with loss scale {loss_scale:g}"
                if zero_grad_scaled - base <= LOST_GRADIENTS_MARGIN:
                    workaround = f"loss scaling (scale {loss_scale:g}) was run and keeps the gradients"
            lost = next(
                (
                    op
                    for op in ops
                    if _in_format(op, policy, fmt)
                    and not op.get("data_movement")
                    and op["verdict"].get(fmt) == "loses_gradients"
                ),
                None,
            )
            return Problem(
                "lost_gradients",
                policy,
                device,
                lost["index"] if lost else None,
                lost["layer"] if lost else "",
                lost["raw_op"] if lost else "",
                detail,
                True,
                "",
                workaround,
            )
    if ran is None:
        lost = next(
            (
                op
                for op in ops
                if _in_format(op, policy, fmt)
                and not op.get("data_movement")
                and op["verdict"].get(fmt) == "loses_gradients"
            ),
            None,
        )
        if lost is not None:
            return Problem(
                "lost_gradients",
                policy,
                device,
                lost["index"],
                lost["layer"],
                lost["raw_op"],
                f"layer `{lost['layer'] or '(model)'}` gradients fall below {fmt}'s smallest subnormal "
                f"(max |gradient| {number_text(lost['max_grad'])})",
                False,
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


#: error_text kinds in which PyTorch says a dtype has no kernel
_TORCH_KERNEL_KINDS = frozenset({"torch_not_implemented", "torch_unsupported_dtype"})


def _torch_kernel_error(error: str) -> bool:
    """True when :func:`~explorer.analysis.error_text.parse_error` reads ``error`` as PyTorch
    saying a dtype has no kernel (``MKL FFT doesn't support tensors of type: Half``)."""
    from explorer.analysis.error_text import parse_error

    try:
        parsed = parse_error(error)
    except ValueError:  # a text too long to read
        return False
    return parsed is not None and parsed.kind in _TORCH_KERNEL_KINDS


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
) -> str:
    """One sentence for ``policy`` on ``device``: the kernels, the numerics, what to do.

    >>> policy_sentence("float32", "CPU", "PyTorch 2.13.0", [], None, ran=True)
    'float32 on CPU, PyTorch 2.13.0: every op ran (forward and backward); no problem found'
    """
    head = f"{policy} on {device}, {version}"
    if ran is None:
        declared = [
            op for op in ops if op["kernel"].get(policy, {}).get(device, {}).get("declared") is not None
        ]
        kernels = f"every op has a declared kernel (not run: no {device} here)"
        undeclared = _undeclared(ops, policy, device)
        if undeclared:
            computing = sum(
                1
                for op in ops
                if not op.get("data_movement")
                and (op["dtype"].get(policy) or "").startswith(("float", "bfloat"))
            )
            kernels = (
                f"{computing - sum(undeclared.values())} of {computing} ops have a declared kernel, "
                f"not declared: {', '.join(undeclared)} (not run: no {device} here)"
            )
        if not declared:
            kernels = f"no declaration to read and no {device} here to run"
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
    if problem is None:
        return f"{head}: {kernels}; no problem found"
    if problem.kind in ("missing_kernel", "run_failed"):
        at = f" at `{problem.layer or '(model)'}` ({problem.raw_op})" if problem.raw_op else ""
        text = f"{head}: {'fails' if problem.observed else 'no kernel'}{at}: {problem.detail}"
    else:
        text = f"{head}: {kernels}; {problem.detail}"
    if problem.workaround:
        text += f"; {problem.workaround}"
    elif problem.kind == "overflow":
        text += "; keep it in float32 or scale its input"
    elif problem.kind == "lost_gradients":
        text += "; use loss scaling"
    return text


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
    "policy_problem",
    "policy_sentence",
]
