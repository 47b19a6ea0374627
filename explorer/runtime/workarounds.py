"""Workarounds as code a user can paste: plain TensorFlow (or NumPy, PyTorch), no explorer import.

Each workaround is a self-contained code string: the op's inputs as literal tensors in
the user's dtype, then the op's public call, leaving its answer in a variable called
``result``.  The call is generated from the catalog's own call (its ``tf=`` / ``numpy=`` /
``torch=`` lambda, read with :mod:`ast`; private helpers it calls are inlined), with the
dtype and the parameters written out, so that what is offered is what the probe ran.
:func:`execute_workaround` runs a code string and returns ``result``,
:func:`result_dtype` says which dtype it came back in; the probe worker runs every
candidate, and only one that returns the requested dtype is suggested (see
:mod:`explorer.runtime.probe`).

>>> print(tensorflow_code("range", "float16", compute="float32"))
import tensorflow as tf
<BLANKLINE>
# create in float32, then cast the result to float16
with tf.device("/CPU:0"):
    result = tf.cast(tf.range(12, dtype=tf.float32), tf.float16)
<BLANKLINE>
>>> result_dtype(execute_workaround(tensorflow_code("range", "float16", compute="float32")))
'float16'
"""

from __future__ import annotations

import ast
import copy
import functools
import inspect
import itertools
import linecache
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from explorer.backends.tensorflow_backend import TensorflowBackend
from explorer.formats import resolve
from explorer.ops import Op, get_op

#: wider dtypes tried, in order, when the requested one has no kernel
WIDER: tuple[str, ...] = ("float32", "float64")
#: the module name each framework's code uses
MODULE = {"tf": "tf", "numpy": "np", "torch": "torch", "jax": "jnp"}
#: formats TensorFlow has as ``tf.<name>`` (the others are in ``tf.dtypes.experimental``)
_TF_TOP_LEVEL = ("float16", "bfloat16", "float32", "float64")
#: formats NumPy has itself (the others come from ml_dtypes)
_NUMPY_NATIVE = ("float16", "float32", "float64")
#: significant digits of the literal input values
DIGITS = 3


# ---------------------------------------------------------------- dtypes and inputs in code


def dtype_code(framework: str, name: str) -> str:
    """How ``framework`` code names the dtype ``name``.

    >>> dtype_code("tf", "bfloat16"), dtype_code("tf", "float8_e4m3fn"), dtype_code("numpy", "bfloat16")
    ('tf.bfloat16', 'tf.dtypes.experimental.float8_e4m3fn', 'ml_dtypes.bfloat16')
    """
    if framework == "tf":
        return f"tf.{name}" if name in _TF_TOP_LEVEL else f"tf.dtypes.experimental.{name}"
    if framework == "numpy":
        return f"np.{name}" if name in _NUMPY_NATIVE else f"ml_dtypes.{name}"
    if framework == "jax":
        return f"jnp.{name}"
    return f"torch.{name}"


def literal(values: np.ndarray) -> str:
    """A compact Python literal (nested lists) of ``values``, to :data:`DIGITS` significant digits.

    >>> literal(np.array([[0.123456, -2.0], [1e-5, 3.5]]))
    '[[0.123, -2], [1e-05, 3.5]]'
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim == 0:
        return _number(float(x))
    return "[" + ", ".join(literal(row) if x.ndim > 1 else _number(float(row)) for row in x) + "]"


def _number(v: float) -> str:
    text = np.format_float_positional(v, precision=DIGITS, unique=True, fractional=False, trim="-")
    short = f"{v:.{DIGITS}g}"
    return short if len(short) < len(text) else text


@functools.lru_cache(maxsize=4096)
def _input_lines(framework: str, op: str, dtype: str, names: tuple[str, ...]) -> tuple[str, ...]:
    """The lines that make the op's inputs (seed 0), one per name."""
    values = get_op(op).inputs(seed=0)
    return tuple(_input_line(framework, n, v, dtype) for n, v in zip(names, values, strict=True))


def _input_line(framework: str, name: str, values: np.ndarray, dtype: str) -> str:
    """``name = <literal tensor of values in dtype>`` in ``framework`` code."""
    data = literal(values)
    dt = dtype_code(framework, dtype)
    if framework == "tf":
        if dtype in _TF_TOP_LEVEL:
            return f"{name} = tf.constant({data}, dtype={dt})"
        return f"{name} = tf.constant(np.array({data}, dtype={dt}.as_numpy_dtype))"
    if framework == "numpy":
        return f"{name} = np.array({data}, dtype={dt})"
    if framework == "jax":
        return f"{name} = jnp.asarray({data}, dtype={dt})"
    return f"{name} = torch.tensor({data}, dtype={dt})"


# ---------------------------------------------------------------- the op's call, as source


@dataclass
class Call:
    """An op's call as code: statements to run first, then one expression."""

    #: statements (source lines) the expression needs (from inlined helpers)
    lines: list[str] = field(default_factory=list)
    #: the expression
    expr: str = ""
    #: the names of the input variables the code reads, in order
    inputs: list[str] = field(default_factory=list)


def _function_of(op: Op, framework: str) -> Callable[..., Any] | None:
    # JAX code is written from the NumPy call, with jax.numpy for np
    return {"tf": op.tf, "numpy": op.numpy, "torch": op.torch, "jax": op.numpy}[framework]


def call_source(op: str | Op, framework: str, dtype: str, wide: str | None = None) -> Call:
    """The op's call in ``framework`` (``tf``, ``numpy``, ``torch``) computing in ``wide`` (or
    ``dtype``) on inputs given in ``dtype``, as code without any explorer import.

    >>> c = call_source("exp", "tf", "bfloat16", wide="float32")
    >>> c.inputs, c.expr
    (['x'], 'tf.cast(tf.math.exp(tf.cast(x, tf.float32)), tf.bfloat16)')
    >>> call_source("range", "tf", "float16").expr
    'tf.range(12, dtype=tf.float16)'
    """
    the_op = get_op(op)
    if wide is None or wide == dtype:
        return _copied(_native_call(the_op.name, framework, wide or dtype))
    call = _wide_call(the_op.name, framework, wide)
    if not the_op.float_output:
        return _copied(call)
    return Call(list(call.lines), _convert(framework, call.expr, dtype), list(call.inputs))


def _copied(call: Call) -> Call:
    """A copy of a cached :class:`Call` (its lists are the caller's to change)."""
    return Call(list(call.lines), call.expr, list(call.inputs))


@functools.lru_cache(maxsize=4096)
def _native_call(op: str, framework: str, compute_dtype: str) -> Call:
    """The op's call computing in ``compute_dtype`` on inputs in it (made once per op,
    framework and dtype: the code generation walks and copies syntax trees)."""
    the_op = get_op(op)
    fn = _function_of(the_op, framework)
    if fn is None:
        raise ValueError(f"op {the_op.name} has no {framework} call")
    module = MODULE[framework]
    compute = dtype_code(framework, compute_dtype)
    lam = _lambda_of(fn)
    if lam is None:  # a call given by name: module.<path>(inputs)
        path = inspect.getclosurevars(fn).nonlocals["path"]
        names = ["x"] if the_op.arity == 1 else ["x", "y"]
        body: ast.expr = ast.parse(f"{module}.{path}({', '.join(names)})", mode="eval").body
        lines: list[ast.stmt] = []
    else:
        params = [a.arg for a in lam.args.args]
        names = params[2 : 2 + the_op.arity]
        binding: dict[str, ast.expr] = {params[0]: _name(module), params[1]: _parse(compute)}
        defaults = lam.args.defaults
        for param, default in zip(params[len(params) - len(defaults) :], defaults, strict=True):
            binding[param] = default
        inliner = _Inliner(fn.__globals__, set(names) | {module})
        body = inliner.expression(lam.body, binding)
        lines = inliner.statements
    body = _fold_dtype_tests(body, compute)
    return Call([ast.unparse(s) for s in lines], ast.unparse(body), names)


@functools.lru_cache(maxsize=4096)
def _wide_call(op: str, framework: str, wide: str) -> Call:
    """The op's call computing in ``wide`` on its inputs converted to ``wide``; the result not
    yet converted back (the same for every input dtype, so made once per op, framework, wide)."""
    call = _native_call(op, framework, wide)
    text = "\n".join([*call.lines, call.expr])
    tree = ast.parse(text)
    uses = {n: sum(isinstance(x, ast.Name) and x.id == n for x in ast.walk(tree)) for n in call.inputs}
    lines = []
    swap: dict[str, ast.expr] = {}
    for name in call.inputs:
        converted = _parse(_convert(framework, name, wide, array=True))
        if uses[name] == 1:
            swap[name] = converted
        else:
            lines.append(f"{name}_{wide} = {ast.unparse(converted)}")
            swap[name] = _name(f"{name}_{wide}")
    renamed = [ast.unparse(_Substitute(swap).visit(s)) for s in tree.body]
    return Call(lines + renamed[:-1], renamed[-1], list(call.inputs))


def _convert(framework: str, expr: str, dtype: str, array: bool = False) -> str:
    """``expr`` (an input array when ``array``) converted to ``dtype`` in ``framework`` code."""
    dt = dtype_code(framework, dtype)
    if framework == "tf":
        return f"tf.cast({expr}, {dt})"
    if framework in ("numpy", "jax"):
        module = MODULE[framework]
        return f"{expr}.astype({dt})" if array else f"{module}.asarray({expr}).astype({dt})"
    return f"({expr}).to({dt})"


def _simple(node: ast.expr) -> bool:
    """A name, a constant, or a dotted name (``tf.math.sign``): safe to repeat where it is used."""
    if isinstance(node, ast.Attribute):
        return _simple(node.value)
    if isinstance(node, ast.UnaryOp):
        return _simple(node.operand)
    return isinstance(node, ast.Name | ast.Constant)


def _name(text: str) -> ast.Name:
    return ast.Name(id=text, ctx=ast.Load())


def _parse(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


@functools.cache
def _module_tree(path: str) -> ast.Module:
    with open(path, encoding="utf-8") as handle:
        return ast.parse(handle.read())


@functools.cache
def _module_lambdas(path: str) -> tuple[ast.Lambda, ...]:
    """Every ``lambda`` expression in the module at ``path`` (walked once per module)."""
    return tuple(node for node in ast.walk(_module_tree(path)) if isinstance(node, ast.Lambda))


@functools.cache
def _lambda_of(fn: Callable[..., Any]) -> ast.Lambda | None:
    """The ``lambda`` expression that defined ``fn`` (found in its module's source), or None
    when ``fn`` is not a lambda (a call given by name)."""
    if fn.__name__ != "<lambda>":
        return None
    code = fn.__code__
    params = list(code.co_varnames[: code.co_argcount])
    lambdas = [
        node for node in _module_lambdas(code.co_filename) if [a.arg for a in node.args.args] == params
    ]
    own_line = [node for node in lambdas if node.lineno == code.co_firstlineno and _compiles_to(node, code)]
    if len(own_line) == 1:  # what the search below picks then too (it compiles every lambda: slower)
        return own_line[0]
    found = [node for node in lambdas if _compiles_to(node, code)]
    if len(found) > 1:  # the same call written twice: the one on the function's own line
        found = [node for node in found if node.lineno == code.co_firstlineno]
    if len(found) != 1:
        raise ValueError(f"cannot find the source of {fn!r} (line {code.co_firstlineno})")
    return found[0]


def _compiles_to(node: ast.Lambda, code: Any) -> bool:
    """Whether the source ``node`` compiles to code with the same names and constants as ``code``
    (found by content, so that a file edited since it was imported does not mislead)."""
    compiled = compile(ast.Expression(body=node), code.co_filename, "eval")
    inner = next(c for c in compiled.co_consts if inspect.iscode(c))
    return bool(
        inner.co_names == code.co_names
        and inner.co_varnames == code.co_varnames
        and [c for c in inner.co_consts if not inspect.iscode(c)]
        == [c for c in code.co_consts if not inspect.iscode(c)]
    )


@functools.cache
def _definition(fn: Callable[..., Any]) -> ast.FunctionDef:
    """The parsed ``def`` of a function (copied before it is changed)."""
    definition = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    if not isinstance(definition, ast.FunctionDef):
        raise ValueError(f"cannot read the definition of {fn!r}")
    return definition


class _Substitute(ast.NodeTransformer):
    """Replace names by expressions."""

    def __init__(self, binding: dict[str, ast.expr]) -> None:
        self.binding = binding

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.binding and isinstance(node.ctx, ast.Load):
            return copy.deepcopy(self.binding[node.id])
        return node


class _Inliner:
    """Substitutes a call's parameters and inlines the module's private helpers it calls."""

    def __init__(self, module_globals: dict[str, Any], taken: set[str]) -> None:
        self.globals = module_globals
        self.taken = set(taken)
        self.statements: list[ast.stmt] = []

    def expression(self, node: ast.expr, binding: dict[str, ast.expr]) -> ast.expr:
        node = _Substitute(binding).visit(copy.deepcopy(node))
        return self._inline_calls(node)

    def _inline_calls(self, node: ast.expr) -> ast.expr:
        inliner = self

        class Visit(ast.NodeTransformer):
            def visit_Call(self, call: ast.Call) -> ast.expr:
                self.generic_visit(call)
                helper = inliner._helper(call)
                return call if helper is None else inliner._inline(helper, call)

            def visit_Name(self, name: ast.Name) -> ast.expr:
                return inliner._constant(name) or name

        result: ast.expr = Visit().visit(node)
        return result

    def _helper(self, call: ast.Call) -> ast.FunctionDef | None:
        """The definition of a module-private function ``call`` calls, or None."""
        if not (isinstance(call.func, ast.Name) and call.func.id.startswith("_")):
            return None
        fn = self.globals.get(call.func.id)
        return _definition(fn) if inspect.isfunction(fn) else None

    def _inline(self, helper: ast.FunctionDef, call: ast.Call) -> ast.expr:
        """The helper's return expression with its arguments substituted; its other statements
        (after its docstring) are added to :attr:`statements`."""
        params = [a.arg for a in helper.args.args]
        if call.keywords or len(call.args) != len(params):
            raise ValueError(f"cannot inline {helper.name}: call it with positional arguments only")
        binding: dict[str, ast.expr] = {}
        for param, arg in zip(params, call.args, strict=True):
            if _simple(arg):
                binding[param] = arg
            else:  # computed once, into a variable of its own
                fresh = self._fresh(param)
                binding[param] = _name(fresh)
                target = ast.Name(id=fresh, ctx=ast.Store())
                self.statements.append(ast.Assign(targets=[target], value=arg, lineno=0))
        body = [s for s in helper.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        *steps, last = body
        if not isinstance(last, ast.Return) or last.value is None:
            raise ValueError(f"cannot inline {helper.name}: it must end with a return")
        for step in steps:
            fresh_names: dict[str, str] = {}
            for node in ast.walk(step):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    fresh_names[node.id] = self._fresh(node.id)
                    binding[node.id] = _name(fresh_names[node.id])
            renamed = _Substitute(binding).visit(copy.deepcopy(step))
            for node in ast.walk(renamed):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    node.id = fresh_names[node.id]
            self.statements.append(renamed)
        return self.expression(last.value, binding)

    def _constant(self, node: ast.Name) -> ast.expr | None:
        """The literal value of a module-private constant (a number, tuple or array), or None."""
        value = self.globals.get(node.id)
        if not node.id.startswith("_") or callable(value) or inspect.ismodule(value):
            return None
        if isinstance(value, np.ndarray):
            return _parse(f"np.array({literal(value)})")
        if isinstance(value, int | float | tuple):
            return _parse(repr(value))
        return None

    def _fresh(self, name: str) -> str:
        candidate, n = name, 1
        while candidate in self.taken:
            n += 1
            candidate = f"{name}{n}"
        self.taken.add(candidate)
        return candidate


def _fold_dtype_tests(node: ast.expr, compute: str) -> ast.expr:
    """Decide ``A if <dtype> == <dtype> else B`` where both sides are dtype names written out."""

    class Fold(ast.NodeTransformer):
        def visit_IfExp(self, ifexp: ast.IfExp) -> ast.expr:
            self.generic_visit(ifexp)
            test = ifexp.test
            if (
                isinstance(test, ast.Compare)
                and len(test.ops) == 1
                and isinstance(test.ops[0], ast.Eq | ast.NotEq)
                and ast.unparse(test.left) == compute
                and isinstance(test.comparators[0], ast.Attribute)
            ):
                same = ast.unparse(test.comparators[0]) == compute
                return ifexp.body if same == isinstance(test.ops[0], ast.Eq) else ifexp.orelse
            return ifexp

    folded: ast.expr = Fold().visit(node)
    return folded


# ---------------------------------------------------------------- whole programs


def _check(op: str, dtype: str, mode: str = "eager") -> tuple[Op, str]:
    the_op = get_op(op)
    if mode not in TensorflowBackend.modes:  # the code written here is TensorFlow's
        raise ValueError(f"unknown mode {mode!r}; valid: {', '.join(TensorflowBackend.modes)}")
    return the_op, resolve(dtype).name


def _program(
    framework: str, the_op: Op, dtype: str, call: Call, comment: str, body: list[str], needs_np: bool
) -> str:
    """Imports, the inputs in ``dtype``, a comment, then ``body``."""
    inputs = list(_input_lines(framework, the_op.name, dtype, tuple(call.inputs)))
    text = "\n".join([*inputs, *body])
    imports = []
    if "ml_dtypes." in text:
        imports.append("import ml_dtypes")
    if framework == "numpy" or needs_np or re.search(r"\bnp\.", text):
        imports.append("import numpy as np")
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
    wide = resolve(compute).name if compute is not None else None
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
    wide = resolve(compute).name if compute is not None else None
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
    wide = resolve(compute).name if compute is not None else None
    call = call_source(the_op, framework, dtype, wide)
    body = [*call.lines, f"result = {call.expr}"]
    word = "round" if framework == "numpy" else "convert"
    comment = _wide_comment(the_op, dtype, wide, word)
    return _program(framework, the_op, dtype, call, comment, body, framework == "numpy")


def emulated_code(op: str, dtype: str) -> str:
    """NumPy code emulating ``dtype``: compute in float64, round the result with ml_dtypes."""
    return numpy_code(op, dtype, "float64")


# ---------------------------------------------------------------- choosing and running


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


_RUNS = itertools.count(1)


def execute_workaround(code: str) -> Any:
    """Run a workaround's code in a fresh namespace and return its ``result``."""
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
    return namespace["result"]


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
