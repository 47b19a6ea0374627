"""Which catalog op a name in an error text stands for: a TensorFlow raw op (``Cholesky``), a
PyTorch kernel (``slow_conv2d_cpu``), a function a traceback calls (``jnp.linalg.qr``), a LAPACK
routine JAX names (``potrf``); and the device a PyTorch kernel name gives."""

from __future__ import annotations

import functools
import re

from explorer.analysis.call_trace import trace_call

#: PyTorch kernel-name stems that do not contain the name (or call) of the catalog op they
#: implement: BLAS and LAPACK routine names, and kernels named after what they compute
TORCH_KERNEL_STEMS: dict[str, str] = {
    "addmm": "matmul",  # Linear layers and @ of 2-D tensors: BLAS gemm with bias
    "mm": "matmul",
    "bmm": "batch_matmul",
    "baddbmm": "batch_matmul",
    "addmv": "matvec",
    "geqrf": "qr",  # LAPACK QR factorisation
    "potrf": "cholesky",  # LAPACK Cholesky factorisation
    "threshold": "relu",  # relu's kernel in older releases
    "div_floor": "floordiv",
    "fft_r2c": "rfft",  # real-to-complex FFT
    "fft_c2c": "fft",
    "max_all": "reduce_max",
    "gemm": "matmul",  # BLAS / cuBLAS general matrix multiply
    "gemv": "matvec",
    "min_all": "reduce_min",
}
#: LAPACK routines that JAX's CPU linear algebra (jaxlib/lapack.py) names in its tracebacks
LAPACK_ROUTINES: dict[str, str] = {
    "geqrf": "qr",
    "potrf": "cholesky",
    "syevd": "eigh",
    "heevd": "eigh",
    "gesdd": "svd",
    "gesvd": "svd",
    "trsm": "triangular_solve",
}


@functools.cache
def _catalog_raw_names() -> dict[str, str]:
    from explorer.ops import catalog

    return {raw.lower(): raw for op in catalog().values() for raw in op.tf_raw_ops}


def catalog_ops_for_raw_op(raw_op: str | None) -> tuple[str | None, tuple[str, ...]]:
    """The catalog op whose own kernel is TensorFlow raw op ``raw_op`` (any case), and the other
    catalog ops that run it inside.

    >>> catalog_ops_for_raw_op("Cholesky")
    ('cholesky', ('lstsq',))
    >>> catalog_ops_for_raw_op("StridedSlice")[0] is None
    True
    """
    from explorer.ops import find_by_raw_op

    if not raw_op:
        return None, ()
    raw = _catalog_raw_names().get(raw_op.lower())
    if raw is None:
        return None, ()
    ops = find_by_raw_op(raw)
    own = sorted(
        (op for op in ops if op.tf_raw_ops[0] == raw),
        key=lambda op: (op.name.replace("_", "") != raw.lower(), len(op.tf_raw_ops) != 1),
    )  # Conv2D: conv2d, not conv1d (which runs Conv2D too); stable, so catalog order breaks ties
    first = own[0].name if own else None
    return first, tuple(op.name for op in ops if op.name != first)


def _camel(snake: str) -> str:
    """``matrix_determinant`` -> ``MatrixDeterminant`` (the raw op a ``gen_*_ops`` function wraps)."""
    return "".join(part[:1].upper() + part[1:] for part in snake.split("_"))


def _snake(name: str) -> str:
    """``LayerNormKernelImpl`` -> ``layer_norm_kernel_impl``; snake_case is kept."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


@functools.cache
def _call_names(framework: str) -> dict[str, tuple[str, ...]]:
    """Catalog op -> the names a kernel or function of ``framework`` may be called by: the op's
    name and the last part of every module function its call uses (``torch.nn.functional.conv2d``
    -> ``conv2d``)."""
    from explorer.ops import catalog

    out: dict[str, tuple[str, ...]] = {}
    for name, op in catalog().items():
        call, module = (op.torch, "torch") if framework == "torch" else (op.numpy, "np")
        inputs = tuple(f"x{i}" for i in range(op.arity))
        traced = trace_call(call, module, f"{module}.float32", inputs)
        leaves = [c.rsplit(".", 1)[-1] for c in traced.calls] if traced else []
        out[name] = tuple(dict.fromkeys([name, *leaves]))
    return out


def _best_op(tokens: list[str], candidates: dict[str, tuple[str, ...]], stems: dict[str, str]) -> str | None:
    """The catalog op one of whose names is the longest run of whole ``tokens``; an op's own name
    beats a call it makes; a stem of the table counts as a name of its op."""
    best: tuple[tuple[int, int, int], str] | None = None

    def contains(name: str) -> bool:
        parts = name.split("_")
        return any(tokens[i : i + len(parts)] == parts for i in range(len(tokens) - len(parts) + 1))

    table: dict[str, tuple[str, ...]] = {}
    for stem, op in stems.items():
        table[op] = (*table.get(op, ()), stem)
    for op, names in list(candidates.items()) + list(table.items()):
        for name in names:
            if not contains(name):
                continue
            score = (len(name.split("_")), int(name == op), -len(candidates.get(op, names)))
            if best is None or score > best[0]:
                best = (score, op)
    return None if best is None else best[1]


def torch_kernel_ops(kernel: str) -> list[str]:
    """Catalog ops a PyTorch kernel name stands for, one per ``/``-separated part (empty: none).

    >>> torch_kernel_ops("add_cpu/sub_cpu"), torch_kernel_ops("slow_conv2d_cpu")
    (['add', 'sub'], ['conv2d'])
    >>> torch_kernel_ops("LayerNormKernelImpl"), torch_kernel_ops("addmm_impl_cpu_")
    (['layer_norm'], ['matmul'])
    """
    ops: list[str] = []
    for part in kernel.split("/"):
        tokens = [t for t in _snake(part.strip()).split("_") if t]
        op = _best_op(tokens, _call_names("torch"), TORCH_KERNEL_STEMS)
        if op is not None and op not in ops:
            ops.append(op)
    return ops


def op_for_function(name: str, framework: str) -> str | None:
    """The catalog op a function of ``framework`` (``torch``, or ``numpy`` for NumPy-like APIs such
    as ``jax.numpy``) called ``name`` computes: the op of that name, else the first op whose call
    uses a function of that name.

    >>> op_for_function("arange", "torch"), op_for_function("cholesky", "numpy")
    ('range', 'cholesky')
    """
    names = _call_names(framework)
    if name in names:
        return name
    return next((op for op, calls in names.items() if name in calls[1:]), None)


def _torch_device(kernel: str) -> str | None:
    tokens = set(_snake(kernel).replace("/", "_").split("_"))
    if "cuda" in tokens or "cudnn" in tokens:
        return "GPU"
    if "cpu" in tokens:
        return "CPU"
    return None


def _tf_call_op(text: str) -> tuple[str | None, str]:
    """(raw op, public call) of the last TensorFlow call of a catalog op a traceback shows
    (``tf.linalg.qr(x)`` in "in user code:"), matched by the op's public name, else its last part."""
    from explorer.ops import catalog

    ops = list(catalog().values())
    for call in reversed(re.findall(r"(?<![\w.])(tf(?:\.\w{1,100}){1,8})\(", text)):
        leaf = call.rsplit(".", 1)[-1]
        found = next((op for op in ops if op.tf_public == call), None) or next(
            (op for op in ops if op.tf_public.rsplit(".", 1)[-1] == leaf), None
        )
        if found is not None:
            return found.tf_raw_ops[0], call
    return None, ""


def _op_from_traceback(text: str, framework: str) -> tuple[str | None, str | None, str]:
    """(function, catalog op, how it was found) from the last framework call a traceback shows
    (``jax.lax.linalg.qr(x)``, ``torch.fft.rfft(x)``), or for JAX the LAPACK routine it names."""
    if framework == "torch":
        prefix = r"\btorch\.(?:fft\.|linalg\.|special\.|nn\.functional\.)?"
    else:
        prefix = r"\b(?:jax\.numpy|jnp|jax\.lax|lax|jax\.scipy|jsp)\.(?:linalg\.|fft\.|special\.)?"
    for call in reversed(re.findall(prefix + r"(\w+)\(", text)):
        op = op_for_function(call, "torch" if framework == "torch" else "numpy")
        if op is not None:
            return call, op, f"the op is read from the call {call}(...) in the traceback"
    if framework == "jax":
        routines = re.findall(r"(?<![A-Za-z0-9])[sdcz]?(" + "|".join(LAPACK_ROUTINES) + r")", text)
        if routines:
            routine = routines[-1]
            how = f"the op is read from the LAPACK routine {routine} in the traceback"
            return routine, LAPACK_ROUTINES[routine], how
    return None, None, ""


@functools.cache
def registry_names(*modules: str) -> frozenset[str]:
    """The op and function names the frameworks' registries (:data:`REGISTRY_OPS`) give ``modules``."""
    from explorer.analysis.error_text._op_table import REGISTRY_OPS

    return frozenset(name for module in modules for name in REGISTRY_OPS[module].split())


#: the registries a module prefix of a message's op names
PREFIX_REGISTRIES = (
    (
        ("jnp.", "jax.", "lax."),
        (
            "jax.numpy",
            "jax.numpy.linalg",
            "jax.numpy.fft",
            "jax.lax",
            "jax.lax.linalg",
            "jax.nn",
            "jax.random",
        ),
    ),
    (
        ("torch.", "F."),
        ("torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special", "torch dispatcher"),
    ),
)


@functools.cache
def all_registry_names() -> frozenset[str]:
    """Every function name of the Python-level registries (torch, jax), without dispatcher namespaces."""
    from explorer.analysis.error_text._op_table import REGISTRY_OPS

    modules = [m for m in REGISTRY_OPS if m.startswith(("torch", "jax")) and m != "torch.Tensor"]
    return frozenset(n.split("::")[-1] for n in registry_names(*modules))
