"""Tracing and running a JAX function ``fn(params, *inputs)`` (or ``fn(*inputs)`` without
params) under each policy, equation by equation.

``jax.make_jaxpr`` gives the op list: one entry per equation, with call-like equations
(``jit``, ``pjit``, ``custom_jvp_call``, ``custom_vjp_call``, ``closed_call``) opened into the
equations they call, the layer path from ``jax.named_scope``.  A small interpreter binds each
equation's primitive in turn: the real run, each equation's output, and (under ``jax.grad``,
with a zero added to each output) the gradient of the loss with respect to each output.

Policies: ``float32``; ``float16`` and ``bfloat16`` (the params and inputs cast); and
jmp-style ``p=f32,c=bf16,o=f32`` strings (params stored in ``p``, cast to ``c`` for the
computation, outputs cast to ``o``).  jax is imported inside the functions.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from explorer.analysis.model_numerics import tensor_stats, zero_fraction
from explorer.analysis.model_trace import PolicyRun, TracedOp, dtype_name

#: the named cast policies (jmp strings are accepted too, see :func:`check_policy`)
POLICIES: tuple[str, ...] = ("float32", "float16", "bfloat16")
#: the loss scale of the scaled run
LOSS_SCALE = 2.0**15
#: what this module cannot observe, in words
NOT_OBSERVED: tuple[str, ...] = (
    "JAX declares no kernels per dtype: the kernel column is the real run on this CPU (XLA)",
)
_JMP = re.compile(r"^p=(?P<p>f32|f16|bf16),c=(?P<c>f32|f16|bf16),o=(?P<o>f32|f16|bf16)$")
_SHORT = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}
#: call-like primitives whose inner equations are listed instead of the call
_CALLS = (
    "jit",
    "pjit",
    "closed_call",
    "core_call",
    "custom_jvp_call",
    "custom_vjp_call",
    "remat",
    "checkpoint",
)
_INNER_KEYS = ("jaxpr", "call_jaxpr", "fun_jaxpr")


def check_policy(policy: str) -> None:
    """ValueError unless ``policy`` is a JAX policy: a cast policy or a jmp-style string.

    >>> check_policy("p=f32,c=bf16,o=f32")
    """
    if policy not in POLICIES and not _JMP.match(policy):
        raise ValueError(
            f"unknown JAX policy {policy!r}; valid: {', '.join(POLICIES)} "
            "or p=..,c=..,o=.. with f32, f16, bf16"
        )


def policy_dtypes(policy: str) -> tuple[str, str, str]:
    """(params, compute, output) dtypes of a policy.

    >>> policy_dtypes("bfloat16"), policy_dtypes("p=f32,c=f16,o=f32")
    (('bfloat16', 'bfloat16', 'bfloat16'), ('float32', 'float16', 'float32'))
    """
    check_policy(policy)
    match = _JMP.match(policy)
    if match:
        return _SHORT[match["p"]], _SHORT[match["c"]], _SHORT[match["o"]]
    return policy, policy, policy


def framework_version() -> str:
    """The installed jax's version."""
    import jax

    return str(jax.__version__)


#: the axis each weight's blocks run along (:func:`layer_weights` puts it last), in words
BLOCK_AXIS_NOTE = (
    "leaves named `kernel` (Flax's layout) are blocked along the axis a matrix multiplication "
    "contracts: (in, out) along in (axis 0), a convolution kernel (h, w, in, out) over h x w x in; "
    "other leaves along their last axis as stored"
)


def layer_weights(params: Any) -> dict[str, list[np.ndarray]]:
    """The floating leaves of ``params`` grouped by their parent's key path (``dense/kernel``
    belongs to ``dense``; a leaf at the top to ``""``), as float32 arrays; a ``kernel`` leaf with
    its contraction axis made last (:data:`BLOCK_AXIS_NOTE`: ``(in, out)`` -> ``(out, in)``).

    >>> {k: [w.shape for w in v] for k, v in layer_weights({"dense": {"kernel": np.ones((2, 3))}}).items()}
    {'dense': [(3, 2)]}
    """
    import jax

    out: dict[str, list[np.ndarray]] = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]:
        array = np.asarray(leaf)
        if not np.issubdtype(array.dtype, np.floating) and array.dtype.kind != "V":
            continue
        keys = [str(getattr(k, "key", getattr(k, "idx", getattr(k, "name", k)))) for k in path]
        weight = array.astype(np.float32)
        if weight.ndim >= 2 and keys and keys[-1] == "kernel":  # Flax's matmul and conv kernels
            weight = weight.reshape(-1, weight.shape[-1]).T
        out.setdefault("/".join(keys[:-1]), []).append(weight)
    return out


def _cast_tree(tree: Any, dtype: str) -> Any:
    import jax
    import jax.numpy as jnp

    def cast(x: Any) -> Any:
        x = jnp.asarray(x)
        return x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x

    return jax.tree_util.tree_map(cast, tree)


def _inner(eqn: Any) -> Any:
    if eqn.primitive.name not in _CALLS:
        return None
    for key in _INNER_KEYS:
        if key in eqn.params:
            return eqn.params[key]
    return None


class _Interpreter:
    """Evaluates a closed jaxpr equation by equation, opening calls; records each leaf."""

    def __init__(self, eps: Sequence[Any] | None = None) -> None:
        self.eps = eps
        self.ops: list[TracedOp] = []
        self.values: list[Any] = []
        self.failure: tuple[str, str] | None = None

    def run(self, closed: Any, args: Sequence[Any], path: str = "") -> list[Any]:
        from jax.extend.core import Literal

        jaxpr = getattr(closed, "jaxpr", closed)
        consts = getattr(closed, "consts", ())
        env: dict[Any, Any] = {}

        def read(v: Any) -> Any:
            return v.val if isinstance(v, Literal) else env[v]

        env.update(zip(jaxpr.constvars, consts, strict=True))
        env.update(zip(jaxpr.invars, args, strict=True))
        for eqn in jaxpr.eqns:
            scope = str(eqn.source_info.name_stack)
            here = "/".join(p for p in (path, scope) if p)
            invals = [read(v) for v in eqn.invars]
            inner = _inner(eqn)
            if inner is not None:
                n_consts = eqn.params.get("num_consts", 0) if eqn.primitive.name == "custom_vjp_call" else 0
                outs = self.run(inner, invals[n_consts:] if n_consts else invals, here)
            else:
                outs = self._bind(eqn, invals, here)
            env.update(zip(eqn.outvars, outs, strict=True))
        return [read(v) for v in jaxpr.outvars]

    def _bind(self, eqn: Any, invals: list[Any], layer: str) -> list[Any]:
        import jax.numpy as jnp

        index = len(self.ops)
        name = f"{eqn.primitive.name}#{index}"
        outvars = eqn.outvars
        floats = [v.aval.dtype for v in outvars if jnp.issubdtype(v.aval.dtype, jnp.floating)]
        self.ops.append(
            TracedOp(
                name=name,
                layer=layer,
                raw_op=eqn.primitive.name,
                dtype=dtype_name(floats[0])
                if floats
                else (dtype_name(outvars[0].aval.dtype) if outvars else None),
                in_dtypes=tuple(dtype_name(getattr(x, "dtype", type(x).__name__)) for x in invals),
                out_dtypes=tuple(dtype_name(v.aval.dtype) for v in outvars),
            )
        )
        bind_params = eqn.primitive.get_bind_params(eqn.params)
        if isinstance(bind_params, tuple):  # older jax: (subfuns, params)
            subfuns, params = bind_params
        else:
            subfuns, params = (), bind_params
        try:
            ans = eqn.primitive.bind(*subfuns, *invals, **params)
        except Exception as exc:
            if self.failure is None:
                self.failure = (name, f"{type(exc).__name__}: {exc}")
            raise
        outs = list(ans) if eqn.primitive.multiple_results else [ans]
        if self.eps is not None and outs and jnp.issubdtype(outs[0].dtype, jnp.floating):
            outs[0] = outs[0] + self.eps[index].astype(outs[0].dtype)
        self.values.append(outs[0] if outs else None)
        return outs


def _policy_fn(fn: Any, policy: str, with_params: bool = True) -> tuple[Any, str]:
    _, compute, output = policy_dtypes(policy)

    def wrapped(params: Any, *xs: Any) -> Any:
        cast = _cast_tree(xs, compute)
        out = fn(_cast_tree(params, compute), *cast) if with_params else fn(*cast)
        return _cast_tree(out, output)

    return wrapped, policy_dtypes(policy)[0]


def check_call(fn: Any, n_inputs: int, params: Any) -> None:
    """ValueError when ``fn`` cannot be called as the check calls it: ``fn(params, *inputs)``
    with ``params``, ``fn(*inputs)`` without (read from its signature, nothing is run)."""
    import inspect

    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # no signature to read (a C callable): the trace says
    args = (None,) * (n_inputs + (params is not None))
    try:
        signature.bind(*args)
    except TypeError as exc:
        call = f"fn(params, {n_inputs} input(s))" if params is not None else f"fn({n_inputs} input(s))"
        other = "without params=" if params is not None else "with params=..."
        raise ValueError(
            f"the JAX function {getattr(fn, '__name__', 'fn')}{signature} cannot be called as {call}: {exc}; "
            f"pass the inputs as a tuple, or call check_model {other}"
        ) from None


def _loss(outs: Sequence[Any]) -> Any:
    import jax.numpy as jnp

    return sum(
        jnp.mean(jnp.square(o.astype(jnp.float32))) for o in outs if jnp.issubdtype(o.dtype, jnp.floating)
    )


def run_policy(
    fn: Any,
    inputs: Sequence[np.ndarray],
    policy: str,
    formats: Sequence[str],
    params: Any = None,
    keep_float32: Sequence[str] = (),
) -> PolicyRun:
    """``fn(params, *inputs)`` under ``policy``: its equations with their dtypes, one forward and
    backward pass (without and with loss scaling), and the equation that failed, if one did."""
    import jax
    import jax.numpy as jnp

    if keep_float32:
        raise ValueError("keep_float32 is not supported for JAX functions")
    check_call(fn, len(inputs), params)
    wrapped, param_dtype = _policy_fn(fn, policy, params is not None)
    stored = _cast_tree(params, param_dtype) if params is not None else ()
    xs = tuple(jnp.asarray(x) for x in inputs)
    closed = jax.make_jaxpr(wrapped)(stored, *xs)
    if not any(jnp.issubdtype(v.aval.dtype, jnp.floating) for v in closed.jaxpr.outvars):
        raise ValueError(
            f"{getattr(fn, '__name__', 'the function')} returns no floating array when traced by JAX: "
            "check_model takes a JAX function of arrays (a Keras model or a torch.nn.Module otherwise)"
        )
    flat = jax.tree_util.tree_leaves((stored, xs))
    probe = _Interpreter()
    try:
        with np.errstate(over="ignore", invalid="ignore"):  # the overflow is what is measured
            outs = probe.run(closed, flat)
    except Exception as exc:  # a primitive this backend cannot run in the dtype
        failing, error = probe.failure or (None, f"{type(exc).__name__}: {exc}")
        return PolicyRun(policy, tuple(probe.ops), False, error, failing, "forward")
    n_params = len(jax.tree_util.tree_leaves(stored))
    shapes = [jnp.zeros(v.shape, jnp.float32) if v is not None else jnp.zeros(()) for v in probe.values]

    def loss(param_leaves: list[Any], eps: list[Any], scale: float) -> Any:
        return _loss(_Interpreter(eps).run(closed, [*param_leaves, *flat[n_params:]])) * scale

    try:
        with np.errstate(over="ignore", invalid="ignore"):
            param_grads, eps_grads = jax.grad(loss, argnums=(0, 1))(flat[:n_params], shapes, 1.0)
    except Exception as exc:
        return PolicyRun(policy, tuple(probe.ops), False, f"{type(exc).__name__}: {exc}", None, "backward")
    stats = {}
    first_nonfinite = None
    for op, value, grad in zip(probe.ops, probe.values, eps_grads, strict=True):
        if value is None or not jnp.issubdtype(value.dtype, jnp.floating):
            continue
        array = np.asarray(value.astype(jnp.float32))
        stats[op.name] = tensor_stats(array, np.asarray(grad), formats)
        if first_nonfinite is None and not np.all(np.isfinite(array)):
            first_nonfinite = op.name
    unscaled = zero_fraction(np.asarray(g.astype(jnp.float32)) for g in param_grads)
    scale, scaled = LOSS_SCALE, None
    while scale >= 1.0:
        with np.errstate(over="ignore", invalid="ignore"):
            again = jax.grad(loss)(flat[:n_params], shapes, scale)
        arrays = [np.asarray(g.astype(jnp.float32)) for g in again]
        if all(np.all(np.isfinite(a)) for a in arrays):
            scaled = zero_fraction(arrays)
            break
        scale /= 2.0**4
    del outs
    return PolicyRun(
        policy,
        tuple(probe.ops),
        True,
        first_nonfinite=first_nonfinite,
        zero_grad=unscaled,
        zero_grad_scaled=scaled,
        loss_scale=scale if scaled is not None else math.nan,
        stats=stats,
    )


def training_step(fn: Any, inputs: Sequence[np.ndarray], policy: str, params: Any = None) -> Any:
    """A callable running one plain training step of ``fn(params, *inputs)`` under ``policy``
    (``jax.jit`` of ``jax.grad`` of the loss in float32 with respect to the params and the
    floating inputs; no optimizer update), returning when it is done
    (``jax.block_until_ready``)."""
    import jax
    import jax.numpy as jnp

    wrapped, param_dtype = _policy_fn(fn, policy, params is not None)
    stored = _cast_tree(params, param_dtype) if params is not None else ()
    xs = [jnp.asarray(x) for x in inputs]
    floating = [i for i, x in enumerate(xs) if jnp.issubdtype(x.dtype, jnp.floating)]

    def loss(differentiable: Any) -> Any:
        param_tree, float_xs = differentiable
        args = list(xs)
        for i, value in zip(floating, float_xs, strict=True):
            args[i] = value
        return _loss(jax.tree_util.tree_leaves(wrapped(param_tree, *args)))

    gradient = jax.jit(jax.grad(loss))
    differentiable = (stored, [xs[i] for i in floating])
    return lambda: jax.block_until_ready(gradient(differentiable))


__all__ = [
    "BLOCK_AXIS_NOTE",
    "LOSS_SCALE",
    "NOT_OBSERVED",
    "POLICIES",
    "check_call",
    "check_policy",
    "framework_version",
    "layer_weights",
    "policy_dtypes",
    "run_policy",
    "training_step",
]
