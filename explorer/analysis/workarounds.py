"""Workarounds as runnable Python code, and a function that runs them.

Each workaround is a self-contained code string that leaves its answer in a
variable called ``result``; :func:`execute_workaround` runs it and returns that
value, :func:`result_dtype` says which dtype it came back in.  The probe worker
runs every candidate and only the ones that return the requested dtype are
suggested (see :mod:`explorer.analysis.probe`).

>>> code = tensorflow_code("range", "float16", compute="float32")
>>> result_dtype(execute_workaround(code))
'float16'
"""

from __future__ import annotations

from typing import Any

from explorer.backends.base import MODES
from explorer.formats import resolve
from explorer.ops import get_op

#: wider dtypes tried, in order, when the requested one has no kernel
WIDER: tuple[str, ...] = ("float32", "float64")


def tensorflow_code(
    op: str, dtype: str, device: str = "CPU", mode: str = "eager", compute: str | None = None
) -> str:
    """TensorFlow code running catalog ``op`` in ``dtype`` on ``device`` in ``mode``.

    ``compute=None`` runs natively; ``compute="float32"`` computes in float32 and
    casts the result back to ``dtype`` (for creation ops: create in float32, then cast).
    """
    the_op = get_op(op)
    dtype = resolve(dtype).name
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; valid: {', '.join(MODES)}")
    lines = [
        "import tensorflow as tf",
        "from explorer.ops import get_op",
        "",
        f'op = get_op("{the_op.name}")  # {the_op.tf_public}',
        f'dtype = tf.dtypes.as_dtype("{dtype}")',
    ]
    if compute is not None:
        lines.append(f'wide_dtype = tf.dtypes.as_dtype("{compute}")')
    lines += ["inputs = [tf.constant(x.astype(dtype.as_numpy_dtype)) for x in op.inputs(seed=0)]", "", ""]
    lines.append("def compute(*xs):")
    if compute is None:
        lines.append("    return op.tf(tf, dtype, *xs)")
    else:
        what = "create in" if the_op.arity == 0 else "compute in"
        lines += [
            f"    # {what} {compute}, then cast the result to {dtype}",
            "    wide = [tf.cast(x, wide_dtype) for x in xs]",
            "    out = op.tf(tf, wide_dtype, *wide)",
            "    out = out[0] if isinstance(out, (tuple, list)) else out",
            "    return tf.cast(out, dtype)",
        ]
    lines += ["", "", f'with tf.device("/{device}:0"):']
    if mode == "xla":
        lines.append("    result = tf.function(compute, jit_compile=True, autograph=False)(*inputs)")
    else:
        lines.append("    result = compute(*inputs)")
    return "\n".join(lines) + "\n"


def numpy_code(op: str, dtype: str, compute: str = "float32") -> str:
    """NumPy code computing catalog ``op`` in ``compute`` and rounding the result to ``dtype``
    (bfloat16 and float8 dtypes come from ml_dtypes)."""
    the_op = get_op(op)
    dtype = resolve(dtype).name
    return (
        "\n".join(
            [
                "import numpy as np",
                "from explorer.formats import resolve",
                "from explorer.ops import get_op",
                "",
                f'op = get_op("{the_op.name}")',
                f"inputs = [x.astype(np.{compute}) for x in op.inputs(seed=0)]",
                f"# compute in {compute}, then round the result to {dtype}",
                f"out = np.asarray(op.numpy(np, np.{compute}, *inputs))",
                f'result = out.astype(resolve("{dtype}").storage_dtype)',
            ]
        )
        + "\n"
    )


def emulated_code(op: str, dtype: str) -> str:
    """Code computing catalog ``op`` with the emulated (ml_dtypes) backend in ``dtype``."""
    the_op = get_op(op)
    dtype = resolve(dtype).name
    return (
        "\n".join(
            [
                "from explorer.backends import get_backend",
                "",
                "# compute in float64, round the result to the format (ml_dtypes)",
                f'result = get_backend("emulated").run("{the_op.name}", "{dtype}").result',
            ]
        )
        + "\n"
    )


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
    elif backend == "numpy":
        if the_op.numpy is not None:
            for wide in WIDER:
                if wide != dtype:
                    out.append(
                        (
                            f"compute in {wide} with NumPy, then round to {dtype} (ml_dtypes)",
                            numpy_code(op, dtype, wide),
                        )
                    )
        out.append((f"emulate {dtype}: compute in float64, round with ml_dtypes", emulated_code(op, dtype)))
    elif backend in ("emulated", "torch"):
        out.append((f"emulate {dtype}: compute in float64, round with ml_dtypes", emulated_code(op, dtype)))
    return out


def execute_workaround(code: str) -> Any:
    """Run a workaround's code in a fresh namespace and return its ``result``."""
    if not isinstance(code, str) or not code.strip():
        raise ValueError("workaround code must be a non-empty string")
    if "import tensorflow" in code:  # import it quietly first (its C++ start-up chatter hidden)
        from explorer.backends.tensorflow_backend import import_tensorflow

        import_tensorflow()
    namespace: dict[str, Any] = {"__name__": "__workaround__"}
    exec(compile(code, "<workaround>", "exec"), namespace)
    if "result" not in namespace:
        raise ValueError("workaround code did not set a variable called 'result'")
    return namespace["result"]


def result_dtype(result: Any) -> str:
    """The dtype name of a result (TensorFlow tensor or NumPy/ml_dtypes array)."""
    dtype = getattr(result, "dtype", None)
    if dtype is not None and hasattr(dtype, "as_numpy_dtype"):  # tf.DType
        return str(dtype.name)
    import numpy as np

    return str(np.asarray(result).dtype.name)


def first_working(options: list[tuple[str, str]], dtype: str) -> tuple[str, str, str]:
    """The first ``(description, code)`` whose result comes back in ``dtype``.

    Returns ``(description, code, "")``, or ``("", "", why_none_worked)``.
    """
    failures = []
    for description, code in options:
        try:
            got = result_dtype(execute_workaround(code))
        except Exception as exc:
            failures.append(
                f"{description}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            )
            continue
        if got == dtype:
            return description, code, ""
        failures.append(f"{description}: came back in {got}")
    return "", "", "; ".join(failures)


def workaround_result_dtype(code: str) -> str:
    """Run a workaround and return its result's dtype name (top-level, so a sandbox worker can run it)."""
    return result_dtype(execute_workaround(code))
