"""An op's call as code, read from the catalog's own call (its ``tf=`` / ``numpy=`` / ``torch=``
lambda, found in its module's source and read with :mod:`ast`; private helpers it calls are
inlined, private constants written out), with the dtype and the parameters written out: what
:mod:`explorer.runtime.workarounds` makes whole programs of.  Also the dtype names and the
literal input lines those programs use.

>>> c = call_source("exp", "numpy", "float16", wide="float32")
>>> c.inputs, c.expr
(['x'], 'np.asarray(np.exp(x.astype(np.float32))).astype(np.float16)')
>>> input_lines("numpy", "exp", "float16", ("x",))[0].startswith("x = np.array([")
True
"""

from __future__ import annotations

import ast
import copy
import functools
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from explorer.ops import Op, get_op
from explorer.runtime.workaround_layout import native_inputs, native_layout

#: the module name each framework's code uses
MODULE = {"tf": "tf", "numpy": "np", "torch": "torch", "jax": "jnp"}
#: formats TensorFlow has as ``tf.<name>`` (the others are in ``tf.dtypes.experimental``)
TF_TOP_LEVEL = ("float16", "bfloat16", "float32", "float64")
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
        return f"tf.{name}" if name in TF_TOP_LEVEL else f"tf.dtypes.experimental.{name}"
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


def exact_literal(values: np.ndarray) -> str:
    """A Python literal (nested lists) of ``values`` with every float written in full (``repr``)."""
    return repr(np.asarray(values, dtype=np.float64).tolist())


def _number(v: float) -> str:
    text = np.format_float_positional(v, precision=DIGITS, unique=True, fractional=False, trim="-")
    short = f"{v:.{DIGITS}g}"
    return short if len(short) < len(text) else text


@functools.lru_cache(maxsize=4096)
def input_lines(framework: str, op: str, dtype: str, names: tuple[str, ...]) -> tuple[str, ...]:
    """The lines that make the op's inputs (seed 0) in ``dtype``, one per name, in ``framework`` code,
    laid out as ``framework`` lays them out (:mod:`explorer.runtime.workaround_layout`)."""
    values = native_inputs(framework, op, get_op(op).inputs(seed=0))
    return tuple(input_line(framework, n, v, dtype) for n, v in zip(names, values, strict=True))


def input_line(framework: str, name: str, values: np.ndarray, dtype: str, exact: bool = False) -> str:
    """``name = <literal tensor of values in dtype>`` in ``framework`` code (``exact``: every value
    written in full, ``repr``, rather than to :data:`DIGITS` significant digits).

    >>> input_line("torch", "x", np.array([0.5, 0.1234567]), "float16", exact=True)
    'x = torch.tensor([0.5, 0.1234567], dtype=torch.float16)'
    """
    data = exact_literal(values) if exact else literal(values)
    dt = dtype_code(framework, dtype)
    if framework == "tf":
        if dtype in TF_TOP_LEVEL:
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


def _function_of(op: Op, framework: str) -> tuple[Callable[..., Any] | None, str]:
    """The call to write ``framework`` code from, and the name the code gives its first parameter:
    the call on the framework's own layout where :mod:`explorer.runtime.workaround_layout` has one,
    else the catalog's (JAX code is then written from the NumPy call, with jax.numpy for np)."""
    native = native_layout(framework, op.name)
    if native is not None:
        return native.call, native.module
    fn = {"tf": op.tf, "numpy": op.numpy, "torch": op.torch, "jax": op.numpy}[framework]
    return fn, MODULE[framework]


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
    fn, module = _function_of(the_op, framework)
    if fn is None:
        raise ValueError(f"op {the_op.name} has no {framework} call")
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
            return _parse(f"np.array({exact_literal(value)})")
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
