"""The search for a fix when a policy overflows: the smallest set of layers to keep in float32
that makes the policy's run finite, found by running it.

Greedy: the layer of the first overflowing op is kept in float32 and the policy run again; while
the run still gives inf/NaN, the layer where it does so first is added (the consumer the overflow
moved to: the softmax after a Dense), else the next layer after those kept, up to
:data:`MAX_RUNS` runs.  Each run is recorded (the layers, whether it ran, whether it was finite);
a set is offered only when its run was finite.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: the most runs one search makes
MAX_RUNS = 4


def _top(layer: str) -> str:
    return layer.split("/", 1)[0]


def search_keep_float32(
    runner: Any,
    model: Any,
    inputs: tuple[Any, ...],
    policy: str,
    first_layer: str,
    formats: Sequence[str],
    extra: dict[str, Any],
    max_runs: int = MAX_RUNS,
) -> list[dict[str, Any]]:
    """The runs of ``policy`` with a growing set of layers kept in float32, from
    ``first_layer``; the last one finite when the search found a fix.  Each: ``workaround``
    (``keep_float32``), ``layers``, ``layer`` (the first), ``ran``, ``finite``, ``error``."""
    kept = [first_layer]
    tried: list[dict[str, Any]] = []
    order: list[str] = []
    while len(tried) < max_runs:
        try:
            again = runner.run_policy(model, inputs, policy, formats, keep_float32=list(kept), **extra)
        except (ValueError, TypeError) as exc:
            tried.append(_record(kept, False, False, str(exc)))
            break
        finite = again.ran and again.first_nonfinite is None
        tried.append(_record(kept, again.ran, finite, again.error))
        if finite or not again.ran:
            break
        if not order:
            order = list(dict.fromkeys(_top(op.layer) for op in again.ops if op.layer))
        layers = {op.name: _top(op.layer) for op in again.ops}
        where = layers.get(again.first_nonfinite or "", "")
        if where and where not in kept:
            kept.append(where)
            continue
        after = (
            [name for name in order[order.index(kept[-1]) + 1 :] if name not in kept]
            if kept[-1] in order
            else []
        )
        if not after:
            break
        kept.append(after[0])
    return tried


def try_keep_for_gradients(
    runner: Any,
    model: Any,
    inputs: tuple[Any, ...],
    policy: str,
    layer: str,
    formats: Sequence[str],
    extra: dict[str, Any],
    baseline_zero_grad: float,
    margin: float,
    scale: float = 1.0,
) -> list[dict[str, Any]]:
    """One run of ``policy`` with ``layer`` (where the gradient dies) kept in float32: does it
    keep the trainable gradients (zero fraction within ``margin`` of float32's), the loss times
    ``scale`` (the loss scale the policy applies already; 1 without)?  The record:
    ``workaround`` (``keep_float32_gradients``), ``layers``, ``layer``, ``ran``,
    ``keeps_gradients``, ``zero_grad``, ``error``."""
    light = getattr(runner, "zero_gradient_fraction", None)  # one plain step where the runner has it
    try:
        if light is not None:
            ran, zero, error = True, light(model, inputs, policy, [layer], scale), ""
        else:
            again = runner.run_policy(model, inputs, policy, formats, keep_float32=[layer], **extra)
            ran, zero, error = again.ran, again.zero_grad, again.error
    except Exception as exc:  # a kernel the framework lacks for this mix: the record says so
        ran, zero, error = False, None, f"{type(exc).__name__}: {exc}"
    keeps = bool(ran and zero is not None and zero - baseline_zero_grad <= margin)
    return [{"workaround": "keep_float32_gradients", "layers": [layer], "layer": layer, "ran": ran,
             "keeps_gradients": keeps, "zero_grad": zero, "scale": scale, "error": error}]  # fmt: skip


def _record(layers: Sequence[str], ran: bool, finite: bool, error: str) -> dict[str, Any]:
    return {
        "workaround": "keep_float32",
        "layers": list(layers),
        "layer": layers[0],
        "ran": ran,
        "finite": finite,
        "error": error,
    }


__all__ = ["MAX_RUNS", "search_keep_float32", "try_keep_for_gradients"]
