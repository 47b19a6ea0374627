"""A probed frame for headless Kernels tests: what the app's probe store returns, made by hand."""

from __future__ import annotations

from typing import Any


def one_ok_numpy_cell(op: str = "range", dtype: str = "float16") -> Any:
    """A one-row probed frame: NumPy ran ``op`` in ``dtype`` eagerly on the CPU."""
    import pandas as pd

    return pd.DataFrame(
        [
            {"backend": "numpy", "op": op, "raw_op": "", "dtype": dtype, "device": "CPU", "mode": "eager",
             "status": "ok", "explanation": "", "error": "", "workaround": ""}
        ]
    )  # fmt: skip
