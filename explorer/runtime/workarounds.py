"""Workarounds as code a user can paste: plain TensorFlow (or NumPy, PyTorch), no explorer import.

Each workaround is a self-contained code string: the op's inputs as literal tensors in
the user's dtype, then the op's public call, leaving its answer in a variable called
``result``.  The call is generated from the catalog's own call (its ``tf=`` / ``numpy=`` /
``torch=`` lambda, read with :mod:`ast` in :mod:`explorer.runtime.workaround_source`), with the
dtype and the parameters written out, so that what is offered is what the probe ran.
:func:`candidates` lists the workarounds worth trying for a cell; running them is
:mod:`explorer.runtime.workaround_exec`'s: the probe worker runs every candidate, and only one
that returns the requested dtype is suggested (see :mod:`explorer.runtime.probe`).

>>> print(tensorflow_code("range", "float16", compute="float32"))
import tensorflow as tf
<BLANKLINE>
# create in float32, then cast the result to float16
with tf.device("/CPU:0"):
    result = tf.cast(tf.range(12, dtype=tf.float32), tf.float16)
<BLANKLINE>
"""

from __future__ import annotations

import functools
import re

from explorer.backends.tensorflow_backend import TensorflowBackend
from explorer.formats import format_name
from explorer.ops import Op, get_op
from explorer.runtime.workaround_source import Call, call_source, input_lines

#: wider dtypes tried, in order, when the requested one has no kernel
WIDER: tuple[str, ...] = ("float32", "float64")


# ---------------------------------------------------------------- whole programs


def _check(op: str, dtype: str, mode: str = "eager") -> tuple[Op, str]:
    the_op = get_op(op)
    if mode not in TensorflowBackend.modes:  # the code written here is TensorFlow's
        raise ValueError(f"unknown mode {mode!r}; valid: {', '.join(TensorflowBackend.modes)}")
    return the_op, format_name(dtype)


def _program(
    framework: str, the_op: Op, dtype: str, call: Call, comment: str, body: list[str], needs_np: bool
) -> str:
    """Imports, the inputs in ``dtype``, a comment, then ``body``."""
    inputs = list(input_lines(framework, the_op.name, dtype, tuple(call.inputs)))
    text = "\n".join([*inputs, *body])
    imports = []
    if "ml_dtypes." in text:
        imports.append("import ml_dtypes")
    if framework == "numpy" or needs_np or re.search(r"\bnp\.", text):
        imports.append("import numpy as np")
    if framework == "jax" and re.search(r"\bjax\.", text):  # a jax.lax call (workaround_layout)
        imports.append("import jax")
    imports.append(
        {
            "tf": "import tensorflow as tf",
            "numpy": "",
            "torch": "import torch",
            "jax": "import jax.numpy as jnp",
        }[framework]
    )
    lines = [line for line in imports if line]
    lines += [""] + inputs + ([""] if inputs else [])
    if comment:
        lines.append(f"# {comment}")
    return "\n".join(lines + body) + "\n"


def _wide_comment(the_op: Op, dtype: str, compute: str | None, cast_word: str = "cast") -> str:
    if compute is None or compute == dtype:
        return ""
    verb = "create in" if the_op.arity == 0 else "compute in"
    return f"{verb} {compute}, then {cast_word} the result to {dtype}"


@functools.lru_cache(maxsize=4096)
def tensorflow_code(
    op: str, dtype: str, device: str = "CPU", mode: str = "eager", compute: str | None = None
) -> str:
    """Plain TensorFlow code running catalog ``op`` in ``dtype`` on ``device`` in ``mode``.

    ``compute=None`` runs natively; ``compute="float32"`` computes in float32 and casts the
    result back to ``dtype`` (for creation ops: create in float32, then cast).  Mode ``xla``
    wraps the call in ``tf.function(jit_compile=True)``.

    >>> print(tensorflow_code("exp", "bfloat16", mode="xla").split("\\n\\n", 2)[2])
    @tf.function(jit_compile=True)
    def compute(x):
        return tf.math.exp(x)
    <BLANKLINE>
    <BLANKLINE>
    with tf.device("/CPU:0"):
        result = compute(x)
    <BLANKLINE>
    """
    the_op, dtype = _check(op, dtype, mode)
    wide = format_name(compute) if compute is not None else None
    call = call_source(the_op, "tf", dtype, wide)
    comment = _wide_comment(the_op, dtype, wide)
    place = f'with tf.device("/{device}:0"):'
    if mode == "xla":
        body = ["@tf.function(jit_compile=True)", f"def compute({', '.join(call.inputs)}):"]
        body += [f"    {line}" for line in call.lines] + [f"    return {call.expr}", "", ""]
        body += [place, f"    result = compute({', '.join(call.inputs)})"]
        if comment:
            body, comment = [f"# {comment}", *body], ""
    else:
        body = [place] + [f"    {line}" for line in call.lines] + [f"    result = {call.expr}"]
    return _program("tf", the_op, dtype, call, comment, body, needs_np=False)


@functools.lru_cache(maxsize=4096)
def numpy_code(op: str, dtype: str, compute: str | None = "float32") -> str:
    """NumPy code computing catalog ``op`` in ``compute`` (None: in ``dtype`` itself) on inputs
    in ``dtype``, and rounding the result to ``dtype`` (bfloat16 and float8 come from ml_dtypes).

    >>> print(numpy_code("exp", "bfloat16").splitlines()[-1])
    result = np.asarray(np.exp(x.astype(np.float32))).astype(ml_dtypes.bfloat16)
    """
    return _array_code("numpy", op, dtype, compute)


@functools.lru_cache(maxsize=4096)
def torch_code(op: str, dtype: str, device: str = "cpu", compute: str | None = None) -> str:
    """PyTorch code running catalog ``op`` in ``dtype`` (or in ``compute``, then converting the
    result to ``dtype``) on ``device`` (generated only: PyTorch is optional here).

    >>> print(torch_code("exp", "float16", compute="float32").splitlines()[-1])
        result = (torch.exp(x.to(torch.float32))).to(torch.float16)
    """
    the_op, dtype = _check(op, dtype)
    wide = format_name(compute) if compute is not None else None
    call = call_source(the_op, "torch", dtype, wide)
    body = [f'with torch.device("{device.lower()}"):']
    body += [f"    {line}" for line in call.lines] + [f"    result = {call.expr}"]
    return _program("torch", the_op, dtype, call, _wide_comment(the_op, dtype, wide, "convert"), body, False)


@functools.lru_cache(maxsize=4096)
def jax_code(op: str, dtype: str, compute: str | None = "float32") -> str:
    """JAX code computing catalog ``op`` in ``compute`` (None: in ``dtype`` itself) on inputs in
    ``dtype`` and converting the result to ``dtype``, written from the op's NumPy call with
    ``jax.numpy`` (generated only: JAX is optional here).

    >>> print(jax_code("exp", "bfloat16").splitlines()[-1])
    result = jnp.asarray(jnp.exp(x.astype(jnp.float32))).astype(jnp.bfloat16)
    """
    return _array_code("jax", op, dtype, compute)


def _array_code(framework: str, op: str, dtype: str, compute: str | None) -> str:
    """NumPy-style code (``numpy`` or ``jax``): the inputs, then ``result = <the call>``."""
    the_op, dtype = _check(op, dtype)
    wide = format_name(compute) if compute is not None else None
    call = call_source(the_op, framework, dtype, wide)
    body = [*call.lines, f"result = {call.expr}"]
    word = "round" if framework == "numpy" else "convert"
    comment = _wide_comment(the_op, dtype, wide, word)
    return _program(framework, the_op, dtype, call, comment, body, framework == "numpy")


def emulated_code(op: str, dtype: str) -> str:
    """NumPy code emulating ``dtype``: compute in float64, round the result with ml_dtypes."""
    return numpy_code(op, dtype, "float64")


# ---------------------------------------------------------------- choosing


def candidates(
    backend: str,
    op: str,
    dtype: str,
    device: str,
    mode: str,
    kernel_places: list[tuple[str, str]],
    present: list[str],
) -> list[tuple[str, str]]:
    """Workarounds worth trying for a cell that did not run natively, best first.

    ``kernel_places``: ``(device, mode)`` pairs where the registry has a kernel for the
    dtype; ``present``: device types on this machine.  Returns ``(description, code)``.
    """
    the_op = get_op(op)
    out: list[tuple[str, str]] = []
    if backend == "tensorflow":
        for dev, md in kernel_places:
            if (dev, md) != (device, mode) and dev in present:
                how = "compile it with XLA (jit_compile=True)" if md == "xla" else "run it eagerly"
                out.append(
                    (
                        f"{how} on {dev}, where the registry has a {dtype} kernel",
                        tensorflow_code(op, dtype, dev, md),
                    )
                )
        run_on = device if device in present else "CPU"
        for wide in WIDER:
            if wide != dtype:
                verb = "create it in" if the_op.arity == 0 else "compute in"
                out.append(
                    (
                        f"{verb} {wide} on {run_on} (eagerly), then cast to {dtype}",
                        tensorflow_code(op, dtype, run_on, "eager", compute=wide),
                    )
                )
    elif backend == "numpy" and the_op.numpy is not None:
        for wide in WIDER:
            if wide != dtype:
                out.append(
                    (
                        f"compute in {wide} with NumPy, then round to {dtype} (ml_dtypes)",
                        numpy_code(op, dtype, wide),
                    )
                )
    elif backend in ("emulated", "torch") and the_op.numpy is not None:
        out.append((f"emulate {dtype}: compute in float64, round with ml_dtypes", emulated_code(op, dtype)))
    return out


_INPUT_LINE = re.compile(
    r"^(?P<name>\w+) = (?:tf\.constant|np\.array|jnp\.asarray|torch\.tensor)\((?P<body>.*)\)$"
)
_DTYPE_IN = re.compile(r"dtype=(?:tf|np|jnp|torch|ml_dtypes)\.(\w+)")


def lesson_code(code: str) -> str:
    """A workaround's code for a lesson: each literal input tensor (the example data the probe
    ran) becomes a comment naming the input, so what is left is the fix itself.

    >>> print(lesson_code(tensorflow_code("cholesky", "bfloat16", compute="float32")))
    import tensorflow as tf
    <BLANKLINE>
    # a: your bfloat16 tensor
    <BLANKLINE>
    # compute in float32, then cast the result to bfloat16
    with tf.device("/CPU:0"):
        result = tf.cast(tf.linalg.cholesky(tf.cast(a, tf.float32)), tf.bfloat16)
    <BLANKLINE>
    """
    lines = []
    for line in code.splitlines():
        match = _INPUT_LINE.match(line)
        if match is None:
            lines.append(line)
            continue
        dtype = _DTYPE_IN.search(match["body"])
        lines.append(f"# {match['name']}: your {dtype.group(1) if dtype else 'input'} tensor")
    text = "\n".join(lines)
    for module, alias in (("numpy", "np"), ("ml_dtypes", "ml_dtypes")):
        statement = f"import {module}" + (f" as {alias}" if alias != module else "")
        body = text.replace(statement, "")
        if statement in text and not re.search(rf"\b{alias}\.", body):
            text = "\n".join(line for line in text.splitlines() if line != statement)
    return text.strip("\n") + "\n"
