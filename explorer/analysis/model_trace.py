"""What a traced model is made of, as plain data the framework runners fill in
(:mod:`explorer.runtime.model_keras`, ``model_torch``, ``model_jax``), and the pure rules
that read it: which ops only move data, the Keras layer path of a TensorFlow node name, the
node a TensorFlow error names, and merging the traces of several policies into one op list.

>>> tf_layer_path("mlp_1/dense_1_1/BiasAdd", {"dense_1", "dense_2"})
'dense_1'
>>> failing_node("Could not find device for node: {{node mlp_1/dense_1/MatMul}} = MatMul[T=DT_HALF]")
'mlp_1/dense_1/MatMul'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from explorer.analysis.model_numerics import TensorStats

#: TensorFlow raw ops, aten ops and JAX primitives that only move, view or name data (no
#: arithmetic): kept in the op list, marked ``data_movement``, never judged by their kernel alone
DATA_MOVEMENT: frozenset[str] = frozenset(
    {
        # TensorFlow
        "Placeholder",
        "ReadVariableOp",
        "Identity",
        "IdentityN",
        "NoOp",
        "Const",
        "Reshape",
        "Shape",
        "StridedSlice",
        "Pack",
        "Unpack",
        "ConcatV2",
        "Transpose",
        "ExpandDims",
        "Squeeze",
        "GatherV2",
        "Fill",
        "Cast",
        "StopGradient",
        # aten (overload packet names)
        "t",
        "view",
        "_unsafe_view",
        "reshape",
        "permute",
        "transpose",
        "expand",
        "clone",
        "contiguous",
        "detach",
        "_to_copy",
        "to",
        "unsqueeze",
        "squeeze",
        "split",
        "split_with_sizes",
        "select",
        "slice",
        "alias",
        "empty",
        "empty_like",
        "zeros",
        "zeros_like",
        "copy_",
        "flatten",
        "cat",
        "stack",
        "chunk",
        "unbind",
        # JAX primitives
        "broadcast_in_dim",
        "convert_element_type",
        "expand_dims",
        "concatenate",
        "dynamic_slice",
        "gather",
        "copy",
        "copy_p",
        "stop_gradient",
    }
)

_NODE = re.compile(r"\{\{node (?P<node>[^}\s]{1,500})\}\}")
_GRAD = re.compile(r"^(?:.*/)?gradients(?:_\d+)?/(?P<forward>.+?)_grad/")
_SUFFIX = re.compile(r"^(?P<base>.+)_\d+$")


@dataclass(frozen=True)
class TracedOp:
    """One op instance of a model, as one policy's trace saw it."""

    #: the framework's own name of the instance (TensorFlow node name; ``aten.addmm#3``; eqn index)
    name: str
    #: the user's layer or module path (``""``: the model itself)
    layer: str
    #: the op as the framework names it (``MatMul``, ``aten.addmm``, ``dot_general``)
    raw_op: str
    #: the dtype it computes in (its data type attribute, else its first floating output)
    dtype: str | None
    #: dtypes of its tensor inputs and outputs, as the trace recorded them
    in_dtypes: tuple[str, ...] = ()
    out_dtypes: tuple[str, ...] = ()
    #: Keras: the layer's compute and variable dtype under the policy ("" elsewhere)
    layer_compute_dtype: str = ""
    layer_variable_dtype: str = ""

    @property
    def data_movement(self) -> bool:
        """True for ops that only move or view data (:data:`DATA_MOVEMENT`)."""
        return self.raw_op.removeprefix("aten.") in DATA_MOVEMENT


@dataclass(frozen=True)
class PolicyRun:
    """One policy's trace and its real run on this machine's CPU."""

    #: the policy as named everywhere (``mixed_float16``, ``autocast_bfloat16``, ``p=f32,c=bf16,o=f32``)
    policy: str
    #: the op instances, in execution order
    ops: tuple[TracedOp, ...]
    #: True when the forward and backward pass ran
    ran: bool
    #: the framework's error text when it did not ("" when it ran)
    error: str = ""
    #: the :attr:`TracedOp.name` of the op the error names (None: it names none, or it ran)
    failing_op: str | None = None
    #: ``forward`` or ``backward``: where the failing op failed ("" when it ran)
    failing_stage: str = ""
    #: the first op instance whose output holds an inf or NaN (None: none did)
    first_nonfinite: str | None = None
    #: fraction of the parameters' gradient elements that are zero or not finite, without and
    #: with loss scaling (None: not measured)
    zero_grad: float | None = None
    zero_grad_scaled: float | None = None
    #: the loss scale of the scaled run (1.0 when not run)
    loss_scale: float = 1.0
    #: op name -> its statistics (the float32 run: the numerics; others: their own values)
    stats: dict[str, TensorStats] = field(default_factory=dict)
    #: (layer, dtype policy) of each layer the user built in a dtype of its own, kept as built
    #: under this policy
    kept_as_built: tuple[tuple[str, str], ...] = ()
    #: True when training under this policy scales the loss already (Keras compiles a
    #: ``mixed_float16`` model with a LossScaleOptimizer): lost gradients are judged scaled
    loss_scaling: bool = False
    #: the variables left out of the zero-gradient fractions (not trainable: frozen layers,
    #: BatchNormalization's moving statistics), by name
    non_trainable: tuple[str, ...] = ()
    #: the formats whose arithmetic this backend flushes to zero below the smallest normal
    flush_to_zero: tuple[str, ...] = ()


def tf_layer_path(node: str, layer_names: Iterable[str]) -> str:
    """The Keras layer path of a TensorFlow node name, from its name scopes.

    Keras opens one name scope per layer call; TensorFlow makes a scope name unique in its graph
    by appending ``_N``.  Each scope is matched to a layer name: with one ``_N`` taken off when
    that is a layer name, else as it stands.  The outermost scope (the model) and scopes that
    are no layer's are left out; so are scopes after a gradient marker.

    >>> tf_layer_path("model_1/block_1/attn_1/query_1/MatMul", {"block", "attn", "query"})
    'block/attn/query'
    >>> tf_layer_path("Identity", {"dense"})
    ''
    """
    names = set(layer_names)
    path: list[str] = []
    scopes = node.split("/")[:-1]
    for scope in scopes[1:] if len(scopes) > 1 else scopes:
        match = _SUFFIX.match(scope)
        if match and match["base"] in names:
            path.append(match["base"])
        elif scope in names:
            path.append(scope)
    return "/".join(path)


def failing_node(error: str) -> str | None:
    """The node a TensorFlow error names (``{{node NAME}}``), or None.

    >>> failing_node("no node here") is None
    True
    """
    match = _NODE.search(error)
    return match["node"] if match else None


def forward_node(node: str) -> str | None:
    """The forward node a gradient node stands for (``gradients/a/b/MatMul_grad/MatMul`` ->
    ``a/b/MatMul``), or None for a forward node.

    >>> forward_node("gradients/mlp_1/dense_1/MatMul_grad/MatMul_1"), forward_node("a/MatMul")
    ('mlp_1/dense_1/MatMul', None)
    """
    match = _GRAD.match(node)
    return match["forward"] if match else None


def op_keys(ops: Sequence[TracedOp]) -> list[tuple[str, str, int]]:
    """A key per op instance that names the same instance in another policy's trace: its layer,
    its raw op and how many ops of that layer and raw op came before it.

    >>> a = TracedOp("n1", "dense", "MatMul", "float32")
    >>> op_keys([a, a])
    [('dense', 'MatMul', 0), ('dense', 'MatMul', 1)]
    """
    seen: dict[tuple[str, str], int] = {}
    keys = []
    for op in ops:
        k = (op.layer, op.raw_op)
        keys.append((op.layer, op.raw_op, seen.get(k, 0)))
        seen[k] = seen.get(k, 0) + 1
    return keys


@dataclass(frozen=True)
class MergedOp:
    """One op instance across policies: where it is in each policy's trace."""

    key: tuple[str, str, int]
    layer: str
    raw_op: str
    #: policy -> the instance in that policy's trace (absent: that trace has no such instance,
    #: e.g. a Cast a mixed policy inserts)
    by_policy: dict[str, TracedOp]


def merge_traces(runs: Sequence[PolicyRun]) -> list[MergedOp]:
    """The op instances of every policy's trace as one list in execution order: the first
    policy's order, with each instance only a later policy has placed after the instance that
    precedes it there.

    >>> f32 = PolicyRun("float32", (TracedOp("a", "d", "MatMul", "float32"),), True)
    >>> f16 = PolicyRun("mixed_float16", (TracedOp("c", "d", "Cast", "float16"),
    ...                                   TracedOp("a", "d", "MatMul", "float16")), True)
    >>> [(m.raw_op, sorted(m.by_policy)) for m in merge_traces([f32, f16])]
    [('Cast', ['mixed_float16']), ('MatMul', ['float32', 'mixed_float16'])]
    """
    order: list[tuple[str, str, int]] = []
    merged: dict[tuple[str, str, int], MergedOp] = {}
    for run in runs:
        previous: tuple[str, str, int] | None = None
        for key, op in zip(op_keys(run.ops), run.ops, strict=True):
            if key in merged:
                merged[key].by_policy[run.policy] = op
            else:
                merged[key] = MergedOp(key, op.layer, op.raw_op, {run.policy: op})
                at = 0 if previous is None else order.index(previous) + 1
                order.insert(at, key)
            previous = key
    return [merged[k] for k in order]


def with_ops(run: PolicyRun, ops: Sequence[TracedOp]) -> PolicyRun:
    """``run`` with another op list (a copy; runs are frozen)."""
    return replace(run, ops=tuple(ops))


def dtype_name(value: Any) -> str:
    """A framework dtype's plain name: ``torch.float16`` -> ``float16``, ``<dtype: 'half'>`` via
    ``.name``.

    >>> dtype_name("torch.bfloat16")
    'bfloat16'
    """
    name = getattr(value, "name", None)
    text = str(name if isinstance(name, str) else value)
    return {"half": "float16", "float": "float32", "double": "float64"}.get(text, text).removeprefix("torch.")


__all__ = [
    "DATA_MOVEMENT",
    "MergedOp",
    "PolicyRun",
    "TracedOp",
    "dtype_name",
    "failing_node",
    "forward_node",
    "merge_traces",
    "op_keys",
    "tf_layer_path",
    "with_ops",
]
