"""A catalog call (``op.torch``, ``op.numpy``) written out as source text, by running it on
stand-ins that record what is built on them: nothing is imported, no framework runs.

Error texts map PyTorch kernel names to catalog ops through the functions each op's call uses
(:func:`explorer.analysis.error_text.torch_kernel_ops`), and :mod:`explorer.runtime.torch_declared`
finds through them the OpInfo entries an op stands for."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np


class _Expr:
    """A stand-in for a framework module, a dtype or a tensor that records, as source text, the
    expression a catalog call builds on it (``torch.log_softmax(x0, -1)``), and the module
    functions it calls."""

    __slots__ = ("_px_calls", "_px_root", "_px_src")
    _px_src: str
    _px_root: str
    _px_calls: list[str]

    def __init__(self, src: str, root: str, calls: list[str]) -> None:
        object.__setattr__(self, "_px_src", src)
        object.__setattr__(self, "_px_root", root)
        object.__setattr__(self, "_px_calls", calls)

    def _new(self, src: str) -> _Expr:
        return _Expr(src, self._px_root, self._px_calls)

    def __getattr__(self, name: str) -> _Expr:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._new(f"{self._px_src}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> _Expr:
        if re.fullmatch(rf"{re.escape(self._px_root)}(\.\w+)+", self._px_src):
            self._px_calls.append(self._px_src)
        parts = [_render(a) for a in args] + [f"{k}={_render(v)}" for k, v in kwargs.items()]
        return self._new(f"{self._px_src}({', '.join(parts)})")

    def __getitem__(self, key: Any) -> _Expr:
        keys = key if isinstance(key, tuple) else (key,)
        return self._new(f"{self._px_src}[{', '.join(_render(k, index=True) for k in keys)}]")

    def __iter__(self) -> Any:
        raise TypeError("a traced value cannot be iterated")

    def __bool__(self) -> bool:
        raise TypeError("a traced value has no truth value")

    def _binary(self, symbol: str, other: Any, reflected: bool = False) -> _Expr:
        left, right = (_render(other), self._px_src) if reflected else (self._px_src, _render(other))
        return self._new(f"({left} {symbol} {right})")

    def __add__(self, o: Any) -> _Expr:
        return self._binary("+", o)

    def __radd__(self, o: Any) -> _Expr:
        return self._binary("+", o, True)

    def __sub__(self, o: Any) -> _Expr:
        return self._binary("-", o)

    def __rsub__(self, o: Any) -> _Expr:
        return self._binary("-", o, True)

    def __mul__(self, o: Any) -> _Expr:
        return self._binary("*", o)

    def __rmul__(self, o: Any) -> _Expr:
        return self._binary("*", o, True)

    def __truediv__(self, o: Any) -> _Expr:
        return self._binary("/", o)

    def __rtruediv__(self, o: Any) -> _Expr:
        return self._binary("/", o, True)

    def __pow__(self, o: Any) -> _Expr:
        return self._binary("**", o)

    def __rpow__(self, o: Any) -> _Expr:
        return self._binary("**", o, True)

    def __matmul__(self, o: Any) -> _Expr:
        return self._binary("@", o)

    def __neg__(self) -> _Expr:
        return self._new(f"(-{self._px_src})")


def _render(value: Any, index: bool = False) -> str:
    """Source text of a value a catalog call passes (ValueError when it has none)."""
    if isinstance(value, _Expr):
        return value._px_src
    if value is Ellipsis:
        return "..."
    if isinstance(value, slice) and index:
        parts = ["" if v is None else _render(v) for v in (value.start, value.stop, value.step)]
        return ":".join(parts[:2]) + (f":{parts[2]}" if parts[2] else "")
    if value is None or isinstance(value, bool | int | float | str):
        return repr(value)
    if isinstance(value, np.generic):
        return repr(value.item())
    if isinstance(value, np.ndarray):
        return repr(value.tolist())
    if isinstance(value, tuple | list):
        inner = ", ".join(_render(v) for v in value)
        return (
            f"({inner},)"
            if isinstance(value, tuple) and len(value) == 1
            else (f"({inner})" if isinstance(value, tuple) else f"[{inner}]")
        )
    raise ValueError(f"no source text for a {type(value).__name__}")


class TracedCall(NamedTuple):
    """A catalog call written out as source text."""

    #: the expression, in terms of the module name, ``dtype_src`` and the input names
    expression: str
    #: the module functions it calls (dotted, in call order)
    calls: tuple[str, ...]


def trace_call(
    call: Callable[..., Any] | None, module: str, dtype_src: str, inputs: tuple[str, ...]
) -> TracedCall | None:
    """Write a catalog call (``op.torch``, ``op.numpy``) out as source text, or None when it does
    something that cannot be written so (the call is run on stand-ins, nothing is imported).

    >>> from explorer.ops import get_op
    >>> trace_call(get_op("log_softmax").torch, "torch", "torch.float32", ("x0",))
    TracedCall(expression='torch.log_softmax(x0, -1)', calls=('torch.log_softmax',))
    """
    if call is None:
        return None
    calls: list[str] = []
    try:
        out = call(
            _Expr(module, module, calls),
            _Expr(dtype_src, module, calls),
            *[_Expr(name, module, calls) for name in inputs],
        )
        expression = _render(out)
    except Exception:
        return None
    return TracedCall(expression, tuple(calls))
