"""What :func:`~explorer.queries.diagnose.diagnose` runs for the kinds of error beyond a missing
kernel: the workaround code of each kind (a cast that makes a mismatch's operands one dtype,
``jit_compile=True`` where only XLA devices list the dtype, Keras' current mixed-precision
names), and, for a text that names no device, the op run here on the CPU to see whether it lacks
the kernel.  Everything offered is run in a sandbox worker first (see
:func:`explorer.queries.diagnose._run_in_sandbox`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from explorer.analysis.error_text import ParsedError

#: the kinds whose operands had two dtypes
MISMATCH_KINDS = (
    "tf_dtype_mismatch",
    "tf_input_type_mismatch",
    "tf_conversion_dtype",
    "jax_dtype_mismatch",
    "torch_dtype_mismatch",
)
#: kinds with nothing this machine can run: a compiler's or another runtime's gap
NOTHING_TO_RUN = {
    "llvm_cannot_select": "the failure is in LLVM's code generation for the user's processor; the "
    "float32 route is described above, not run",
    "xla_unsupported_type": "the failure is in a type conversion of the user's XLA path; nothing here "
    "reproduces it",
    "xla_mixed_precision": "the failing instruction is in the user's compiled program; converting its "
    "operands to one dtype is described above",
    "mlir_unsupported_conversion": "the conversion fails in a GPU compiler this machine does not run",
    "ort_kernel_not_supported": "ONNX Runtime is not a probed backend and is not run here",
    "ort_no_implementation": "ONNX Runtime is not a probed backend and is not run here",
}
#: code using Keras' current mixed-precision names (Keras 3), run before it is offered
KERAS_MIXED_PRECISION_CODE = """import keras

# a policy by its current name (keras.mixed_precision.experimental is gone)
keras.mixed_precision.set_global_policy("mixed_float16")
policy = keras.mixed_precision.global_policy()
keras.mixed_precision.set_global_policy("float32")

# LossScaleOptimizer wraps an optimizer object; initial_scale and dynamic_growth_steps replace loss_scale
optimizer = keras.mixed_precision.LossScaleOptimizer(
    keras.optimizers.SGD(), initial_scale=2.0**15, dynamic_growth_steps=2000
)
# scale_loss replaces get_scaled_loss; apply() unscales the gradients itself
result = optimizer.scale_loss(keras.ops.convert_to_tensor(1.0, dtype=policy.variable_dtype))
"""
#: the framework worker each framework's mismatch code runs in (a Keras layer's mismatch is TensorFlow
#: code; the Keras API code runs in a worker of its own, as TensorFlow's workers do not load Keras)
RUNS_WITH = {"keras": "tensorflow", "tensorflow": "tensorflow", "torch": "torch", "jax": "jax"}


def keras_worker_setup() -> str:
    """Worker side, before Keras is imported: the backend Keras' API code runs on here, JAX when it
    is installed (it loads in seconds, TensorFlow in tens of seconds; keras.mixed_precision is the
    same API on every backend), unless ``KERAS_BACKEND`` is set.  Returns the backend."""
    import importlib.util
    import os

    default = "jax" if importlib.util.find_spec("jax") is not None else "tensorflow"
    return os.environ.setdefault("KERAS_BACKEND", default)


def jax_constant_code(dtype: str) -> str:
    """JAX code compiling a function that holds a ``dtype`` constant (what failed to lower).

    >>> "jnp.float8_e4m3fn" in jax_constant_code("float8_e4m3fn")
    True
    """
    return (
        "import jax\nimport jax.numpy as jnp\nimport numpy as np\n\n"
        f"constant = np.array([1.0, 2.0]).astype(jnp.{dtype})\n"
        "# a function holding the constant, compiled: JAX lowers the constant into the program\n"
        f"result = jax.jit(lambda: jnp.asarray(constant) * jnp.asarray(2, jnp.{dtype}))()\n"
    )


def kind_candidates(parsed: ParsedError, op_name: str | None) -> list[tuple[str, str]] | None:
    """(description, code) of the workarounds of a kind beyond a missing kernel, best first; an empty
    list when the kind has nothing to run here; None for the kinds diagnose handles itself."""
    from explorer.runtime import workarounds

    if parsed.kind in NOTHING_TO_RUN:
        return []
    if parsed.kind == "keras_mixed_precision_api":
        return [
            (
                "Keras' current mixed-precision names (Keras 3; run here on the backend "
                "keras_worker_setup picks, the API being the same on every backend)",
                KERAS_MIXED_PRECISION_CODE,
            )
        ]
    if parsed.kind == "jax_constant_lowering" and parsed.dtype:
        return [(f"a compiled function holding a {parsed.dtype} constant", jax_constant_code(parsed.dtype))]
    if parsed.kind in MISMATCH_KINDS:
        if op_name is None or parsed.dtype is None:
            return []
        other = next((d for d in parsed.operand_dtypes if d != parsed.dtype), "float32")
        how = f"give both operands dtype {parsed.dtype} (convert the {other} one first)"
        if parsed.framework in ("tensorflow", "keras"):
            code = workarounds.tensorflow_code(op_name, parsed.dtype, "CPU", "eager")
            cast = f"# both operands {parsed.dtype}: cast the {other} one first (y = tf.cast(y, x.dtype))\n"
        elif parsed.framework == "torch":
            code = workarounds.torch_code(op_name, parsed.dtype, "cpu", None)
            cast = f"# both operands {parsed.dtype}: convert the {other} one first, e.g. y = y.to(x.dtype)\n"
        else:
            code = workarounds.jax_code(op_name, parsed.dtype, None)
            cast = f"# both operands {parsed.dtype}: convert the {other} one first (y = y.astype(x.dtype))\n"
        return [(how, cast + code)]
    return None


def xla_only_devices(parsed: ParsedError) -> list[str]:
    """The listed devices that take the dtype, when every one of them is an XLA device (then
    ``jit_compile=True`` is the workaround to test); [] otherwise.

    >>> from explorer.analysis.error_text import parse_error
    >>> xla_only_devices(parse_error("Could not find device for node: {{node Erfinv}} = Erfinv[T=DT_HALF]\\n"
    ...     "All kernels registered for op Erfinv:\\n  device='XLA_CPU_JIT'; T in [DT_FLOAT, DT_HALF]\\n"
    ...     "  device='CPU'; T in [DT_FLOAT]"))
    ['XLA_CPU_JIT']
    """
    if not parsed.listed_kernels or parsed.dtype is None:
        return []
    takes = []
    for device, constraints in parsed.listed_kernels:
        every = [t for v in constraints.values() for t in v]
        values = constraints.get(parsed.attr, []) if parsed.attr else every
        if parsed.dtype in values and device not in takes:
            takes.append(device)
    return takes if takes and all(d.endswith("_JIT") for d in takes) else []


def device_check(
    parsed: ParsedError,
    op_name: str | None,
    release: str | None,
    run: Callable[[str, str], tuple[str | None, str]],
) -> dict[str, Any] | None:
    """For a PyTorch or JAX text naming no device: the op run here on the CPU in the message's
    dtype with ``run(framework, code)``; None when there is nothing to run."""
    from explorer.runtime import workarounds

    if parsed.device is not None or parsed.framework not in ("torch", "jax") or release is None:
        return None
    op_name = op_name or parsed.called_op
    if op_name is None or parsed.dtype is None or parsed.kind in MISMATCH_KINDS:
        return None
    try:
        if parsed.framework == "torch":
            code = workarounds.torch_code(op_name, parsed.dtype, "cpu", None)
        else:
            code = workarounds.jax_code(op_name, parsed.dtype, None)
    except ValueError:
        return None
    got, why = run(parsed.framework, code)
    words = {"torch": "PyTorch", "jax": "JAX"}[parsed.framework]
    return {
        "device": "CPU",
        "release": f"{words} {release}",
        "call": op_name,
        "dtype": parsed.dtype,
        "ran": got is not None,
        "result_dtype": got,
        "error": why[:200],
        "code": code,
    }


def extra_facts(result: dict[str, Any]) -> list[tuple[str, str]]:
    """The facts only some kinds have, as (label, text): the function the traceback calls (when the
    failing kernel belongs to another op), a mismatch's operand dtypes, ONNX Runtime's provider.
    The CLI and the app's Explain tab show these rows.

    >>> extra_facts({"called": "local_response_norm", "operand_dtypes": ["float16", "float32"]})
    [('called', 'local_response_norm (no catalog op)'), ('operands', 'float16, float32')]
    """
    rows: list[tuple[str, str]] = []
    if result.get("called"):
        rows.append(("called", f"{result['called']} ({result.get('called_op') or 'no catalog op'})"))
    if result.get("operand_dtypes"):
        rows.append(("operands", ", ".join(result["operand_dtypes"])))
    if result.get("provider"):
        rows.append(("provider", result["provider"]))
    return rows + reading_facts(result.get("reading"), result)


def reading_facts(
    reading: dict[str, Any] | None, shown: dict[str, Any] | None = None
) -> list[tuple[str, str]]:
    """The structural reading's facts as (label, text) rows: the library that raised the error, the
    dtypes with their roles, the device with its compute capability (and where that came from), the
    capability the feature requires, and the kind; each row names the text it was read from.  A row
    that would only repeat ``shown`` (the rows already printed: framework, dtype, device) is left out.

    >>> from explorer.analysis.error_text import read_text
    >>> text = "Input type (c10::Half) and bias type (float) should be the same"
    >>> reading_facts(read_text(text).to_dict())[1]
    ('dtypes', 'float16 (input, "c10::Half"), float32 (bias, "float")')
    """
    if not reading:
        return []
    from explorer.analysis.reading_explanation import KIND_WORDS, NAMES

    shown = shown or {}
    rows: list[tuple[str, str]] = []
    if (reading.get("library") or reading.get("framework")) and reading.get("library") != shown.get(
        "framework"
    ):
        lib = reading.get("library") or reading["framework"]
        evidence = reading.get("evidence", {}).get("library")
        said = f' (read from "{evidence[2]}")' if evidence else ""
        rows.append(("library", f"{NAMES.get(lib, lib)}{said}"))
    dtypes = reading.get("dtypes") or []
    if dtypes and not (
        len(dtypes) == 1 and not dtypes[0].get("role") and dtypes[0]["name"] == shown.get("dtype")
    ):
        cells = []
        for d in reading["dtypes"]:
            role = f"{d['role']}, " if d.get("role") else ""
            cells.append(f'{d["name"]} ({role}"{d["text"]}")')
        rows.append(("dtypes", ", ".join(cells)))
    device = reading.get("device") or {}
    if device.get("type"):
        words = [device["type"]]
        if device.get("name"):
            words.append(device["name"])
        if device.get("compute_capability"):
            words.append(
                f"compute capability {device['compute_capability']} ({device.get('capability_from')})"
            )
        if device.get("macos"):
            words.append(f"macOS {device['macos']}")
        if device.get("isa"):
            words.append("ISA " + ", ".join(device["isa"]))
        if len(words) > 1 or str(shown.get("device") or "").lower() != device["type"]:
            rows.append(("device read", ", ".join(words)))
    if device.get("required_compute_capability"):
        rows.append(("requires", f"compute capability {device['required_compute_capability']}"))
    if reading.get("kind"):
        rows.append(("kind", KIND_WORDS.get(reading["kind"], reading["kind"])))
    return rows
