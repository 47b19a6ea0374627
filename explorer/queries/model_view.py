"""The model check as a view shows it: ops grouped by layer with the verdict per policy, the
largest |activation| per layer, the first problem in words, and one op's kernel history and
workaround.  Read from a :class:`~explorer.queries.model_check.ModelCheck`; nothing is run again
(the kernel history is read from the registries shipped with explorer).

The "Your model" tab draws these; ``precision-explorer model`` prints the check itself.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from explorer.analysis.model_summary import Problem

if TYPE_CHECKING:
    from explorer.queries.history import CellHistory
    from explorer.queries.model_check import ModelCheck, ModelOp

#: the name a view gives the model's own code (ops outside any layer)
MODEL_LAYER = "(model)"


def layer_of(op: ModelOp) -> str:
    """The top-level layer an op instance belongs to (:data:`MODEL_LAYER` for the model's own code).

    >>> from types import SimpleNamespace
    >>> layer_of(SimpleNamespace(layer="attention/query")), layer_of(SimpleNamespace(layer=""))
    ('attention', '(model)')
    """
    return op.layer.split("/", 1)[0] if op.layer else MODEL_LAYER


def policy_verdict(op: ModelOp, policy: str) -> str:
    """What ``policy`` does to ``op``, in one word: ``fails`` (its kernel failed in the run here),
    the verdict of the format it computes in (``fits``, ``overflows``, ``underflows``,
    ``loses_gradients``), ``float32`` when it stays in float32 (a float32 policy, or mixed
    precision kept it there), its dtype when that is not floating, ``-`` when the policy's trace
    has no such op."""
    kernel = op.kernel.get(policy, {}).get("CPU")
    if kernel is not None and kernel.run == "failed":
        return "fails"
    dtype = op.dtype.get(policy)
    if dtype is None:
        return "-"
    if dtype in op.verdict:
        return op.verdict[dtype]
    return dtype


@dataclass(frozen=True)
class LayerGroup:
    """One top-level layer of the model: its op instances, in execution order."""

    layer: str
    ops: tuple[ModelOp, ...]
    #: the largest |activation| over its ops in the float32 pass (None: no floating output)
    max_abs: float | None
    #: policy -> the worst of its ops' :func:`policy_verdict` words
    verdicts: dict[str, str]


#: :func:`policy_verdict` words, worst first (a layer shows its worst op's)
_WORST_FIRST = ("fails", "overflows", "loses_gradients", "underflows", "fits")


def _worst(words: Sequence[str]) -> str:
    for word in _WORST_FIRST:
        if word in words:
            return word
    return words[0] if words else "-"


def _largest(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    if not known:
        return None
    if any(math.isnan(v) for v in known):
        return math.nan
    return max(known)


def layer_groups(check: ModelCheck) -> list[LayerGroup]:
    """The check's op instances grouped by top-level layer, layers in the order their first op ran
    (an op of a layer that runs again later joins its group; data movement included)."""
    order: dict[str, list[ModelOp]] = {}
    for op in check.ops:
        order.setdefault(layer_of(op), []).append(op)
    groups = []
    for layer, ops in order.items():
        computing = [op for op in ops if not op.data_movement] or ops
        verdicts = {p: _worst([policy_verdict(op, p) for op in computing]) for p in check.policies}
        groups.append(LayerGroup(layer, tuple(ops), _largest([op.max_abs for op in ops]), verdicts))
    return groups


def layer_maxima(check: ModelCheck) -> tuple[list[str], list[float | None]]:
    """(layers, largest |activation| of each) in execution order: what the model plot draws.

    >>> from types import SimpleNamespace as NS
    >>> ops = (NS(layer="dense", max_abs=3.0, data_movement=False, kernel={}, dtype={}, verdict={}),
    ...        NS(layer="dense", max_abs=5.0, data_movement=False, kernel={}, dtype={}, verdict={}))
    >>> layer_maxima(NS(ops=ops, policies=()))
    (['dense'], [5.0])
    """
    groups = layer_groups(check)
    return [g.layer for g in groups], [g.max_abs for g in groups]


def first_problem_text(check: ModelCheck) -> str:
    """The first problem in words: the sentence of the policy and device it was found under, or
    that none was found."""
    problem = check.first_problem
    if problem is None:
        policies = ", ".join(check.policies)
        return f"No problem found: the model ran under {policies} on this CPU ({check.framework_version})."
    for result in check.results:
        if result.problem == problem:
            return result.sentence
    return problem.detail


@dataclass(frozen=True)
class OpDetail:
    """One op instance, as a view shows it when it is picked: its kernels across releases and
    the workarounds of the problems found at it."""

    op: ModelOp
    #: TensorFlow: the history of the op in each floating dtype a policy runs it in, per device
    #: (CPU, GPU), from the registries shipped with explorer; empty for other frameworks
    history: tuple[CellHistory, ...]
    #: what the history column says where there is none, in words ("" when there is one)
    history_note: str
    #: the problems found at this op or its layer, with the workaround each offers
    problems: tuple[Problem, ...]


def op_detail(check: ModelCheck, index: int) -> OpDetail:
    """The :class:`OpDetail` of ``check.ops[index]``; IndexError names the valid range."""
    if not 0 <= index < len(check.ops):
        raise IndexError(f"op index {index} out of range; the check has ops 0 to {len(check.ops) - 1}")
    op = check.ops[index]
    history: list[CellHistory] = []
    note = ""
    if check.framework == "keras":
        history, note = _tf_history(op, check.policies)
    elif check.framework == "torch":
        note = (
            "PyTorch: no release history ships with explorer; the kernel column is what the installed "
            "release's OpInfo declares and the run here"
        )
    else:
        note = "JAX declares no kernels per dtype: the kernel column is the run here"
    problems = tuple(
        r.problem
        for r in check.results
        if r.problem is not None
        and (
            r.problem.index == op.index or (r.problem.layer and r.problem.layer.split("/")[0] == layer_of(op))
        )
    )
    unique: list[Problem] = []
    for problem in problems:  # one per policy: the first device's (CPU: the one observed here)
        if all((problem.kind, problem.policy) != (u.kind, u.policy) for u in unique):
            unique.append(problem)
    return OpDetail(op, tuple(history), note, tuple(unique))


def _tf_history(op: ModelOp, policies: Sequence[str]) -> tuple[list[CellHistory], str]:
    from explorer.queries.history import cell_history

    dtypes = [d for d in dict.fromkeys(op.dtype.get(p) for p in policies) if d]
    dtypes = [d for d in dtypes if d.startswith(("float", "bfloat"))]
    cells = []
    missing = []
    for dtype in dtypes:
        for device in ("CPU", "GPU"):
            try:
                cells.append(cell_history(op.raw_op, dtype, device, (op.op,) if op.op else ()))
            except ValueError:  # a raw op (or device type) no shipped release has
                missing.append(f"{op.raw_op} {dtype} {device}")
    note = ""
    if not dtypes:
        note = f"{op.raw_op} computes in no floating dtype here: no kernel history to read"
    elif missing:
        note = "no shipped release has " + ", ".join(missing)
    return cells, note


def check_builtin(
    name: str,
    framework: str = "keras",
    *,
    policies: Sequence[str] | None = None,
    devices: Sequence[str] | None = None,
    formats: Sequence[str] | None = None,
    in_worker: bool = False,
    timeout: float = 600.0,
) -> ModelCheck:
    """:func:`~explorer.queries.model_check.check_model` of the built-in model ``name`` in
    ``framework`` on its seeded example inputs (ValueError lists the valid names).

    ``in_worker``: run it in a sandbox worker process (:func:`explorer.runtime.model_builtin.model_sandbox`):
    a crash or a hang past ``timeout`` seconds raises ``SandboxError`` here and costs only the
    worker."""
    from explorer.queries.model_check import check_model
    from explorer.runtime import model_builtin

    model_builtin.get_builtin(name)  # bad names refused here, before a worker starts
    if framework not in model_builtin.FRAMEWORKS:
        raise ValueError(f"unknown framework {framework!r}; valid: {', '.join(model_builtin.FRAMEWORKS)}")
    if in_worker:
        key = model_builtin.WORKER_KEYS[framework]
        return model_builtin.model_sandbox().call(
            key, check_builtin_here, name, framework, policies, devices, formats, timeout=timeout
        )
    model = model_builtin.build(name, framework)
    return check_model(
        model,
        model_builtin.example_inputs(name, framework),
        policies=policies,
        devices=devices,
        formats=formats,
    )


def builtin_choices() -> tuple[list[tuple[str, str]], tuple[str, ...]]:
    """The built-in models as (label, name) pairs, and the frameworks each is built in.

    >>> choices, frameworks = builtin_choices()
    >>> choices[0], frameworks
    (('mlp: three dense layers with ReLU', 'mlp'), ('keras', 'torch'))
    """
    from explorer.runtime.model_builtin import BUILTINS, FRAMEWORKS

    return [(f"{name}: {b.description}", name) for name, b in BUILTINS.items()], FRAMEWORKS


def check_builtin_here(
    name: str,
    framework: str,
    policies: Sequence[str] | None,
    devices: Sequence[str] | None,
    formats: Sequence[str] | None,
) -> ModelCheck:
    """Worker side of :func:`check_builtin` (``in_worker=True``): the check, in this process."""
    return check_builtin(name, framework, policies=policies, devices=devices, formats=formats)


__all__ = [
    "MODEL_LAYER",
    "LayerGroup",
    "OpDetail",
    "builtin_choices",
    "check_builtin",
    "check_builtin_here",
    "first_problem_text",
    "layer_groups",
    "layer_maxima",
    "layer_of",
    "op_detail",
    "policy_verdict",
]
