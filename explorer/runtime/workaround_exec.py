"""Running workaround code: :func:`execute_workaround` runs a code string in a fresh namespace
and returns its ``result``, :func:`result_dtype` says which dtype it came back in, and
:func:`first_working` picks the first of several candidates that comes back right.

>>> from explorer.runtime.workarounds import tensorflow_code
>>> result_dtype(execute_workaround(tensorflow_code("range", "float16", compute="float32")))
'float16'
"""

from __future__ import annotations

import itertools
import linecache
from typing import Any

import numpy as np

_RUNS = itertools.count(1)


def execute_workaround(code: str) -> Any:
    """Run a workaround's code in a fresh namespace and return its ``result``."""
    return execute_namespace(code)["result"]


def execute_namespace(code: str) -> dict[str, Any]:
    """Run a workaround's code in a fresh namespace and return the namespace (it holds ``result``
    and the input tensors the code made)."""
    if not isinstance(code, str) or not code.strip():
        raise ValueError("workaround code must be a non-empty string")
    if "import tensorflow" in code:  # import it quietly first (its C++ start-up chatter hidden)
        from explorer.backends.tensorflow_backend import import_tensorflow

        import_tensorflow()
    # the source is registered, as for a file, so that tf.function (autograph) can read it
    filename = f"<workaround {next(_RUNS)}>"
    linecache.cache[filename] = (len(code), None, code.splitlines(keepends=True), filename)
    namespace: dict[str, Any] = {"__name__": "__workaround__"}
    exec(compile(code, filename, "exec"), namespace)
    if "result" not in namespace:
        raise ValueError("workaround code did not set a variable called 'result'")
    return namespace


def result_dtype(result: Any) -> str:
    """The dtype name of a result (TensorFlow tensor or NumPy/ml_dtypes array)."""
    dtype = getattr(result, "dtype", None)
    if dtype is not None and hasattr(dtype, "as_numpy_dtype"):  # tf.DType
        return str(dtype.name)
    return str(np.asarray(result).dtype.name)


#: what running each code string gave in this process: its result dtype and whether every value
#: of it is finite, or its error line
_TRIED: dict[str, tuple[str, bool, str]] = {}


def _all_finite(result: Any) -> bool:
    """Whether every value of a result is finite (True for a result that is not numeric)."""
    try:
        values = np.asarray(getattr(result, "numpy", lambda: result)(), dtype=np.float64)
    except (TypeError, ValueError):
        return True
    return bool(np.all(np.isfinite(values)))


def _try(code: str) -> tuple[str, bool, str]:
    """``(result dtype, all finite, "")`` or ``("", False, error line)`` for ``code`` (each code
    runs once per process)."""
    if code not in _TRIED:
        try:
            result = execute_workaround(code)
            _TRIED[code] = (result_dtype(result), _all_finite(result), "")
        except Exception as exc:
            first = str(exc).splitlines()[0] if str(exc) else ""
            _TRIED[code] = ("", False, f"{type(exc).__name__}: {first}")
    return _TRIED[code]


def first_working(
    options: list[tuple[str, str]], dtype: str | None, finite: bool = False
) -> tuple[str, str, str]:
    """The first ``(description, code)`` whose result comes back in ``dtype`` (each one is run;
    ``dtype=None``: in any dtype, for ops whose output is not in their input dtype) and, with
    ``finite`` (the op's float64 reference is finite on its inputs), with no NaN or infinity
    in it: a workaround that returns NaN is no workaround.

    Returns ``(description, code, "")``, or ``("", "", why_none_worked)``.
    """
    failures = []
    for description, code in options:
        got, all_finite, error = _try(code)
        if error:
            failures.append(f"{description}: {error}")
        elif dtype is not None and got != dtype:
            failures.append(f"{description}: came back in {got}")
        elif finite and not all_finite:
            failures.append(f"{description}: came back with NaN or infinity where the exact result is finite")
        else:
            return description, code, ""
    return "", "", "; ".join(failures)


def workaround_result_dtype(code: str) -> str:
    """Run a workaround and return its result's dtype name (top-level, so a sandbox worker can run it)."""
    return result_dtype(execute_workaround(code))
