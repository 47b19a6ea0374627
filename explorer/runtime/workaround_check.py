"""Checking a workaround, not only running it: its output against the float64 reference.

:func:`run_and_check` runs a workaround's code as written (its dtype), then again with its input
tensors replaced: by the catalog's example inputs and, for the ops whose inputs carry a layout,
by inputs of distinct, non-square sizes (:data:`~explorer.runtime.workaround_layout.CHECK_SHAPES`),
each laid out as the user's framework lays them out
(:mod:`~explorer.runtime.workaround_layout`: PyTorch NCHW / OIHW, TensorFlow NHWC / HWIO, JAX's
lax conv NCHW / OIHW).  Every input value is first rounded to the target dtype and written in
full, so the code's tensors hold exactly those values (read back from the code's namespace and
compared).  The reference is the catalog's float64 computation (NumPy, :mod:`explorer.ops`, never
the framework) on the same values, rearranged into the framework's layout and rounded to the
target dtype.

The error of each value is measured in ulps of the target format at the reference's magnitude
there, or at :data:`FLOOR` times the largest reference magnitude where that is larger (a sum that
cancels to near zero is measured on the scale of its terms); the tolerance is :data:`TOLERANCE_ULPS`
ulps.  Ops whose output is not a float (argmax...) must match exactly.

>>> from explorer.runtime.workarounds import numpy_code
>>> check = run_and_check(numpy_code("exp", "float16"), "numpy", "exp", "float16")
>>> check["status"], check["max_ulps"] <= TOLERANCE_ULPS
('passed', True)
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

#: the largest error accepted, in ulps of the target format (see the module docstring)
TOLERANCE_ULPS = 2.0
#: magnitudes under this fraction of the largest reference magnitude are measured at it
FLOOR = 2.0**-10
#: the framework names of :func:`explorer.queries.diagnose` -> workaround_source's names
SOURCE_NAMES = {"tensorflow": "tf", "keras": "tf", "torch": "torch", "jax": "jax", "numpy": "numpy"}
_INPUT = re.compile(r"^(?!result )(?P<name>\w+) = (?:tf\.constant|np\.array|jnp\.asarray|torch\.tensor)\(")


def not_checked(why: str) -> dict[str, Any]:
    """A check result saying that no check was made, and why."""
    return {
        "status": "not checked",
        "summary": f"not checked: {why}",
        "max_ulps": None,
        "tolerance_ulps": TOLERANCE_ULPS,
        "cases": [],
        "layout": "",
        "result_dtype": None,
    }


def dtype_of(name: str) -> np.dtype[Any]:
    """The NumPy dtype of a format name (ml_dtypes for bfloat16 and the float8 / float4 formats)."""
    if name in ("float16", "float32", "float64"):
        return np.dtype(name)
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, name))


def ulp(magnitude: np.ndarray, dtype: str) -> np.ndarray:
    """The spacing of ``dtype``'s values at each (non-negative) ``magnitude``: 2**(e - mantissa
    bits) with e the exponent of the magnitude, at least the format's smallest normal exponent.

    >>> float(ulp(np.array([1.0]), "float16")[0]), float(ulp(np.array([0.0]), "bfloat16")[0])
    (0.0009765625, 9.183549615799121e-41)
    """
    import ml_dtypes

    info = ml_dtypes.finfo(dtype_of(dtype))
    m = np.asarray(magnitude, dtype=np.float64)
    with np.errstate(divide="ignore"):
        exponent = np.floor(np.log2(np.where(m > 0, m, 1.0)))
    exponent = np.where(m > 0, np.maximum(exponent, info.minexp), info.minexp)
    return np.asarray(np.exp2(exponent - info.nmant))


def as_float64(value: Any) -> np.ndarray:
    """A framework's tensor (PyTorch, TensorFlow, JAX) or an array as a float64 NumPy array."""
    if hasattr(value, "detach"):  # torch.Tensor: .numpy() refuses bfloat16 and float8
        import torch

        return np.asarray(value.detach().cpu().to(torch.float64).numpy())
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):  # tf.Tensor
        value = value.numpy()
    return np.asarray(value).astype(np.float64)


def error_ulps(got: np.ndarray, reference: np.ndarray, dtype: str) -> float:
    """The largest error of ``got`` against the float64 ``reference`` rounded to ``dtype``, in
    ulps of ``dtype`` (see the module docstring); inf where a NaN or infinity is not the
    reference's own."""
    rounded = reference.astype(dtype_of(dtype)).astype(np.float64)
    finite = np.isfinite(rounded)
    same_special = (np.isnan(got) & np.isnan(rounded)) | (~finite & (got == rounded))
    if np.any(~finite & ~same_special) or np.any(finite & ~np.isfinite(got)):
        return float("inf")
    if not np.any(finite):
        return 0.0
    scale = FLOOR * float(np.max(np.abs(reference[finite])))
    spacing = ulp(np.maximum(np.abs(reference[finite]), scale), dtype)
    return float(np.max(np.abs(got[finite] - rounded[finite]) / spacing))


def _case_inputs(op: Any, dtype: str, shapes: tuple[tuple[int, ...], ...] | None) -> list[np.ndarray]:
    """Catalog-layout inputs rounded to ``dtype`` (as float64): the op's example inputs, or
    inputs of ``shapes`` drawn (seed 1) in each example input's own range."""
    example = [np.asarray(v, dtype=np.float64) for v in op.inputs(seed=0)]
    if shapes is not None:
        rng = np.random.default_rng(1)
        example = [rng.uniform(v.min(), v.max(), shape) for v, shape in zip(example, shapes, strict=True)]
    return [v.astype(dtype_of(dtype)).astype(np.float64) for v in example]


def _with_inputs(code: str, lines: list[str]) -> str:
    """``code`` with its literal input lines (top-level ``name = <constructor>(...)``) replaced by
    ``lines``, in order; ValueError when the counts differ."""
    out, replaced = [], 0
    for line in code.splitlines():
        if _INPUT.match(line):
            if replaced >= len(lines):
                raise ValueError("the code makes more input tensors than the op takes")
            out.append(lines[replaced])
            replaced += 1
        else:
            out.append(line)
    if replaced != len(lines):
        raise ValueError(f"the code makes {replaced} input tensors, the op takes {len(lines)}")
    return "\n".join(out) + "\n"


def input_names(code: str) -> list[str]:
    """The names of the code's literal input tensors, in order."""
    return [m["name"] for m in map(_INPUT.match, code.splitlines()) if m]


def _check_case(
    code: str, framework: str, op: Any, dtype: str, shapes: tuple[tuple[int, ...], ...] | None
) -> dict[str, Any]:
    """One case: the code on inputs in the framework's layout, against the reference."""
    from explorer.runtime.workaround_exec import execute_namespace
    from explorer.runtime.workaround_layout import native_inputs, native_output
    from explorer.runtime.workaround_source import input_line

    catalog = _case_inputs(op, dtype, shapes)
    native = native_inputs(framework, op.name, catalog)
    names = input_names(code)
    lines = [input_line(framework, n, v, dtype, exact=True) for n, v in zip(names, native, strict=False)]
    case: dict[str, Any] = {"shapes": [list(v.shape) for v in native], "max_ulps": None, "error": ""}
    try:
        namespace = execute_namespace(_with_inputs(code, lines))
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return {**case, "error": f"{type(exc).__name__}: {first}"[:300]}
    for name, want in zip(names, native, strict=True):
        if not np.array_equal(as_float64(namespace[name]), want):
            return {**case, "error": f"input {name} did not hold the values written (not a check)"}
    reference = native_output(framework, op.name, np.asarray(op.reference(*catalog), dtype=np.float64))
    got = as_float64(namespace["result"])
    if got.shape != reference.shape:
        return {
            **case,
            "error": f"returned shape {tuple(got.shape)}; the reference has shape {tuple(reference.shape)}",
        }
    if not op.float_output:
        differ = int(np.sum(got != reference))
        return {**case, "max_ulps": 0.0 if differ == 0 else float("inf"), "differ": differ}
    return {**case, "max_ulps": error_ulps(got, reference, dtype)}


def run_and_check(code: str, framework: str, op_name: str | None, dtype: str | None) -> dict[str, Any]:
    """Run a workaround's ``code`` and check its output against the float64 reference.

    ``framework``: ``tensorflow``, ``keras``, ``torch``, ``jax`` or ``numpy``; ``op_name``: the
    catalog op the code computes (None: not a catalog op's code, then it is only run).  Returns
    ``status`` (``passed``, ``failed`` or ``not checked``), ``summary`` (one line, with the
    figure), ``max_ulps``, ``tolerance_ulps``, ``cases`` (``shapes``, ``max_ulps``, ``error``),
    ``layout`` (in words) and ``result_dtype`` (of the code run as written; None when it
    raised: then the check failed).  Top-level, so a sandbox worker can run it.
    """
    from explorer.runtime.workaround_exec import execute_workaround, result_dtype

    try:
        result = execute_workaround(code)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        error = f"{type(exc).__name__}: {first}"[:300]
        return {**not_checked(""), "status": "failed", "summary": f"check failed: the code raised {error}"}
    torch_dtype = str(getattr(result, "dtype", ""))
    torch_named = torch_dtype.startswith("torch.")
    got_dtype = torch_dtype.removeprefix("torch.") if torch_named else result_dtype(result)
    source = SOURCE_NAMES.get(framework)
    if op_name is None or dtype is None or source is None:
        why = "the code computes no catalog op, so there is no float64 reference to compare it with"
        return {**not_checked(why), "result_dtype": got_dtype}
    from explorer.ops import get_op
    from explorer.runtime.workaround_layout import CHECK_SHAPES, layout_words

    op = get_op(op_name)
    checks = [None] + ([CHECK_SHAPES[op.name]] if op.name in CHECK_SHAPES else [])
    cases = [_check_case(code, source, op, dtype, shapes) for shapes in checks]
    layout = layout_words(source, op.name)
    worst = max((c["max_ulps"] for c in cases if c["max_ulps"] is not None), default=None)
    failed = [c for c in cases if c["error"] or c["max_ulps"] is None or c["max_ulps"] > TOLERANCE_ULPS]
    if op.float_output and got_dtype != dtype:
        failed.append({"error": f"came back in {got_dtype}, not {dtype}", "shapes": []})
    shapes = "; ".join(" and ".join(str(tuple(s)) for s in c["shapes"]) for c in cases if c["shapes"])
    against = f"the float64 reference rounded to {dtype}"
    on = f"on inputs {shapes}" if shapes else "(the op takes no inputs)"
    on += f" ({layout})" if layout else ""
    if not op.float_output:
        measure = "exact match required"
        figure = "every value equal" if worst == 0.0 else "values differ"
    else:
        measure = f"tolerance {TOLERANCE_ULPS:g} ulps"
        figure = f"max error {worst:.3g} ulps of {dtype}" if worst is not None else "no figure"
    out = {
        "status": "failed" if failed else "passed",
        "max_ulps": worst,
        "tolerance_ulps": TOLERANCE_ULPS,
        "cases": cases,
        "layout": layout,
        "result_dtype": got_dtype,
    }
    if failed:
        bad = failed[0]
        why = bad["error"] or f"{bad['max_ulps']:.3g} ulps of {dtype} off"
        listed = " and ".join(str(tuple(s)) for s in bad["shapes"])
        where = f" on inputs {listed}" if listed else ""
        out["summary"] = f"check failed{where}: {why} (against {against}, {measure})"
    else:
        out["summary"] = f"checked against {against} {on}: {figure} ({measure})"
    return out
