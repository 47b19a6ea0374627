"""Read a framework's error text: which op, which dtype, which device, and what the message itself lists.

Besides missing kernels, the kinds of :data:`~explorer.analysis.error_text._kind_patterns.MORE_PATTERNS`
are read: dtype mismatches between operands (TensorFlow, Keras autocast, JAX's lax, PyTorch), Keras'
mixed-precision API errors, XLA/LLVM/MLIR compile failures for a low-precision type, JAX's constant
lowering, and ONNX Runtime's kernel gaps.

Pure parsing: no framework is imported.  :func:`parse_error` finds the *last* error in a pasted
text (a traceback, a Keras "Exception encountered when calling ..." wrapper, a log) that matches
one of :data:`PATTERNS`, and returns a :class:`ParsedError`, or None when nothing matches
(:func:`looked_for` says what was looked for).

>>> p = parse_error("NotFoundError: Could not find device for node: {{node Range}} = Range[Tidx=DT_HALF]")
>>> p.framework, p.raw_op, p.op, p.dtype, p.device, p.kind
('tensorflow', 'Range', 'range', 'float16', 'CPU', 'no_kernel_for_device')

PyTorch kernel names are mapped to catalog ops through the ops' own PyTorch calls
(:func:`torch_kernel_ops`): ``"slow_conv2d_cpu"`` contains ``conv2d``, the name of the op whose
call is ``torch.nn.functional.conv2d``; only kernel names that do not contain an op's name are
in the small table :data:`TORCH_KERNEL_STEMS`.

>>> parse_error("RuntimeError: \\"log_softmax_lastdim_kernel_impl\\" not implemented for 'Half'").op
'log_softmax'

Device names are the registry's device types (``CPU``, ``GPU``, ``XLA_CPU_JIT``,
``XLA_GPU_JIT``); PyTorch's CUDA is ``GPU``.  A device is only given when the text says it
(or, for TensorFlow's placement errors, implies it: see :data:`CPU_DEDUCTION`).
"""

from explorer.analysis.error_text._dtype_names import TF_DATATYPE_ENUM, format_name, tf_dtype_name
from explorer.analysis.error_text._kernel_lists import parse_kernel_lines
from explorer.analysis.error_text._kind_readers import KERAS_RENAMES, XLA_TYPE_ENUM, XLA_TYPE_NAMES
from explorer.analysis.error_text._op_names import (
    LAPACK_ROUTINES,
    TORCH_KERNEL_STEMS,
    catalog_ops_for_raw_op,
    op_for_function,
    torch_kernel_ops,
)
from explorer.analysis.error_text._parse import (
    CPU_DEDUCTION,
    MAX_TEXT_BYTES,
    ParsedError,
    clean_text,
    looked_for,
    parse_error,
    read_text,
)
from explorer.analysis.error_text._patterns import PATTERNS, Pattern
from explorer.analysis.error_text._structure import KINDS, ErrorReading, read_error_text

__all__ = [
    "CPU_DEDUCTION",
    "KERAS_RENAMES",
    "KINDS",
    "LAPACK_ROUTINES",
    "MAX_TEXT_BYTES",
    "PATTERNS",
    "TF_DATATYPE_ENUM",
    "TORCH_KERNEL_STEMS",
    "XLA_TYPE_ENUM",
    "XLA_TYPE_NAMES",
    "ErrorReading",
    "ParsedError",
    "Pattern",
    "catalog_ops_for_raw_op",
    "clean_text",
    "format_name",
    "looked_for",
    "op_for_function",
    "parse_error",
    "parse_kernel_lines",
    "read_error_text",
    "read_text",
    "tf_dtype_name",
    "torch_kernel_ops",
]
