"""The user's own call, read from a pasted traceback, and a PyTorch lesson written with its names.

A Python traceback shows the source line that failed under each ``File "...", line N`` entry.
:func:`user_call` finds the line that calls the op (``features = F.conv2d(images, filters,
padding=1)``) and takes it apart with :mod:`ast`; :func:`torch_lesson` writes the fix with the
user's names: the tensors cast to float32 for the call, the result cast back::

    features = F.conv2d(images.to(torch.float32), filters.to(torch.float32),
                        padding=1).to(torch.float8_e4m3fn)

Nothing is run or imported here: pure text work.

>>> tb = '''Traceback (most recent call last):
...   File "train.py", line 6, in <module>
...     features = F.conv2d(images, filters, padding=1)
... NotImplementedError: "slow_conv2d_cpu" not implemented for 'Float8_e4m3fn'
... '''
>>> call = user_call(tb, ("conv2d",))
>>> call.target, call.function, call.tensors
('features =', 'F.conv2d', ('images', 'filters'))
>>> print(torch_lesson(call, "float8_e4m3fn"))
# images, filters: your float8_e4m3fn tensors, cast to float32 for the call
features = F.conv2d(images.to(torch.float32), filters.to(torch.float32), padding=1).to(torch.float8_e4m3fn)
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

#: a traceback's frame header; the source line follows it, indented
_FRAME = re.compile(r'^\s*File "[^"]*", line \d+')
#: keyword arguments that hold tensors in PyTorch's functions (others, like ``padding``, are kept)
TENSOR_KEYWORDS = frozenset({"input", "weight", "bias", "other", "tensor", "mat1", "mat2", "vec", "target"})
#: longest source line read (a pasted line longer than this is not a call to rewrite)
MAX_LINE = 400


@dataclass(frozen=True)
class UserCall:
    """One call in the user's code, as the traceback shows it."""

    #: the source line as shown (stripped)
    line: str
    #: what the line does with the result: ``features =``, ``return``, or "" (then the lesson
    #: assigns it to ``result``)
    target: str
    #: the called function as written (``F.conv2d``, ``torch.matmul``, ``x.matmul``)
    function: str
    #: the positional arguments, as written
    args: tuple[str, ...]
    #: the keyword arguments, as written, in order
    keywords: tuple[tuple[str, str], ...]

    @property
    def tensors(self) -> tuple[str, ...]:
        """The arguments read as tensors: positional ones that are names, attributes or
        subscripts (not literals), and keyword ones in :data:`TENSOR_KEYWORDS`; the receiver of
        a method call (``x`` in ``x.matmul(y)``) first."""
        out = [self.function.rsplit(".", 1)[0]] if self._is_method else []
        out += [a for a in self.args if _is_tensor_like(a)]
        out += [v for k, v in self.keywords if k in TENSOR_KEYWORDS and _is_tensor_like(v)]
        return tuple(dict.fromkeys(out))

    @property
    def _is_method(self) -> bool:
        head = self.function.rsplit(".", 1)[0] if "." in self.function else ""
        return bool(head) and head not in _MODULE_NAMES


#: names a call's function is looked up on that are modules, not tensors
_MODULE_NAMES = frozenset(
    {"torch", "F", "nn.functional", "torch.nn.functional", "torch.special", "torch.linalg", "torch.fft"}
)


def _is_tensor_like(source: str) -> bool:
    try:
        node = ast.parse(source, mode="eval").body
    except SyntaxError:
        return False
    return isinstance(node, ast.Name | ast.Attribute | ast.Subscript)


#: a frame in an installed package (the framework's own code), not the user's
_LIBRARY = re.compile(r"[/\\](?:site|dist)-packages[/\\]|[/\\]lib[/\\]python\d")


def _source_lines(text: str) -> list[str]:
    """The source lines a traceback shows (the line after each frame header) in the user's own
    files (not in installed packages), last first."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines[:-1]):
        if _FRAME.match(line) and not _LIBRARY.search(line):
            source = lines[i + 1].strip()
            if source and not _FRAME.match(lines[i + 1]) and len(source) <= MAX_LINE:
                out.append(source)
    return out[::-1]


def _call_in(source: str, names: tuple[str, ...]) -> UserCall | None:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    if len(tree.body) != 1:
        return None
    statement = tree.body[0]
    target = ""
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = ast.unparse(statement.targets[0]) + " ="
    elif isinstance(statement, ast.Return):
        target = "return"
    for node in ast.walk(statement):
        if not isinstance(node, ast.Call):
            continue
        function = ast.unparse(node.func)
        if function.rsplit(".", 1)[-1] not in names:
            continue
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return None  # *args / **kwargs: the tensors cannot be told apart
        outer = isinstance(statement, ast.Assign | ast.Return) and statement.value is node
        return UserCall(
            line=source,
            target=target if outer else "",
            function=function,
            args=tuple(ast.unparse(a) for a in node.args),
            keywords=tuple((str(k.arg), ast.unparse(k.value)) for k in node.keywords),
        )
    return None


def user_call(text: str, names: tuple[str, ...]) -> UserCall | None:
    """The innermost call in the traceback ``text`` to a function named one of ``names``
    (the last part of the name: ``conv2d`` matches ``F.conv2d``), or None.

    >>> user_call("RuntimeError: boom", ("conv2d",)) is None
    True
    """
    wanted = tuple(n for n in names if n)
    if not wanted:
        return None
    for source in _source_lines(text):
        call = _call_in(source, wanted)
        if call is not None:
            return call
    return None


def torch_lesson(call: UserCall, dtype: str, compute: str = "float32") -> str:
    """The fix written with the user's names: each tensor argument cast to ``compute`` for the
    call, the result cast back to ``dtype`` (a comment line, then the call)."""
    tensors = set(call.tensors)
    up = f".to(torch.{compute})"

    def arg(source: str) -> str:
        if source not in tensors:
            return source
        wrapped = source if _is_tensor_like(source) and "[" not in source else f"({source})"
        return wrapped + up

    if call._is_method:
        receiver, method = call.function.rsplit(".", 1)
        function = f"{arg(receiver)}.{method}"
    else:
        function = call.function
    parts = [arg(a) for a in call.args]
    parts += [f"{k}={arg(v) if k in TENSOR_KEYWORDS else v}" for k, v in call.keywords]
    expression = f"{function}({', '.join(parts)}).to(torch.{dtype})"
    names = ", ".join(call.tensors) or "the inputs"
    plural = "tensors" if len(call.tensors) != 1 else "tensor"
    comment = f"# {names}: your {dtype} {plural}, cast to {compute} for the call"
    statement = f"{call.target or 'result ='} {expression}"
    return f"{comment}\n{statement}"
