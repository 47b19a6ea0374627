"""The kinds of low-precision error beyond a missing kernel: dtype mismatches between operands,
mixed-precision API errors, XLA and LLVM compile failures, JAX's own messages and ONNX Runtime's
kernel gaps.  Each regular expression is written from the framework's own format string (cited
beside it) and is linear by construction: every repetition is bounded, and no repeated group can
match the same text two ways."""

from __future__ import annotations

import re
from typing import NamedTuple


class Pattern(NamedTuple):
    """One kind of error message :func:`parse_error` recognises."""

    #: the name of the pattern (ParsedError.kind)
    kind: str
    #: the framework whose message it is
    framework: str
    #: what the message says, in the framework's words (shown when nothing is recognised)
    looks_like: str
    #: the regular expression (its span must cover every pattern it contains)
    regex: re.Pattern[str]


_DTYPE = r"\w{1,40}"
_TORCH_DTYPE = r"(?:c10::)?\w{1,40}"

#: the kinds added to :data:`~explorer.analysis.error_text.PATTERNS` after the missing-kernel ones
MORE_PATTERNS: tuple[Pattern, ...] = (
    Pattern(  # tensorflow/core/framework/op_kernel.cc (the eager input check)
        "tf_dtype_mismatch",
        "tensorflow",
        "cannot compute Mul as input #1(zero-based) was expected to be a half tensor but is a float tensor",
        re.compile(
            rf"cannot compute (?P<op>\w{{1,100}}) as input #(?P<index>\d{{1,3}})\(zero-based\) was "
            rf"expected to be a (?P<expected>{_DTYPE}) tensor but is a (?P<got>{_DTYPE}) tensor"
        ),
    ),
    Pattern(  # tensorflow/python/framework/op_def_library.py (graph building, Keras autocast)
        "tf_input_type_mismatch",
        "tensorflow",
        "Input 'y' of 'AddV2' Op has type float32 that does not match type float16 of argument 'x'",
        re.compile(
            rf"Input '(?P<param>\w{{1,100}})' of '(?P<op>\w{{1,100}})' Op has type (?P<got>{_DTYPE}) that "
            rf"does not match (?:type (?P<expected>{_DTYPE}) of argument '(?P<arg>\w{{1,100}})'|"
            rf"expected type of (?P<expected2>{_DTYPE}))"
        ),
    ),
    Pattern(  # tensorflow/python/framework/ops.py (convert_to_tensor)
        "tf_conversion_dtype",
        "tensorflow",
        "Tensor conversion requested dtype float32 for Tensor with dtype float16",
        re.compile(
            rf"Tensor conversion requested dtype (?P<expected>{_DTYPE}) for Tensor with dtype "
            rf"(?P<got>{_DTYPE})"
        ),
    ),
    Pattern(  # jax/_src/lax/lax.py (check_same_dtypes)
        "jax_dtype_mismatch",
        "jax",
        "lax.add requires arguments to have the same dtypes, got float16, float32",
        re.compile(
            rf"lax\.(?P<op>\w{{1,100}}) requires arguments to have the same dtypes, got "
            rf"(?P<dtypes>{_DTYPE}(?:, {_DTYPE}){{1,8}})"
        ),
    ),
    Pattern(  # aten/src/ATen/native (LinearAlgebra.cpp, Convolution.cpp) and torch's dtype checks
        "torch_dtype_mismatch",
        "torch",
        "expected m1 and m2 to have the same dtype, but got: c10::Half != float (or mat1 and mat2 must "
        "have the same dtype; Input type (c10::Half) and bias type (float) should be the same)",
        re.compile(
            rf"expected (?P<a>m1|mat1|scalar type|both vectors) and (?P<b>m2|mat2|\w{{1,30}}) to have "
            rf"the same dtype, but got: (?P<x>{_TORCH_DTYPE}) ?!= ?(?P<y>{_TORCH_DTYPE})"
            rf"|(?<!\w)(?P<a2>mat1|m1|self|input) and (?P<b2>mat2|m2|other|vec2|weight) must have the same "
            rf"dtype, but got (?P<x2>{_TORCH_DTYPE}) and (?P<y2>{_TORCH_DTYPE})"
            rf"|Input type \((?P<x3>{_TORCH_DTYPE})\) and (?P<b3>weight|bias) type "
            rf"\((?P<y3>{_TORCH_DTYPE})\) should be the same"
            rf"|expected scalar type (?P<x4>\w{{1,40}}) but found (?P<y4>\w{{1,40}})"
        ),
    ),
    Pattern(  # keras/src/optimizers/loss_scale_optimizer.py and the removed experimental names
        "keras_mixed_precision_api",
        "keras",
        "module 'keras.mixed_precision' has no attribute 'experimental' (or 'set_policy'); "
        "LossScaleOptimizer does not support arguments: `loss_scale`; 'LossScaleOptimizer' object has "
        "no attribute 'get_scaled_loss'",
        re.compile(
            r"module '(?P<module>[\w.]{0,200}mixed_precision(?:\.experimental)?)' has no attribute "
            r"'(?P<attr>\w{1,100})'"
            r"|LossScaleOptimizer does not support arguments: `?(?P<args>\w{1,100})"
            r"|'(?P<cls>LossScaleOptimizer)' object has no attribute '(?P<method>\w{1,100})'"
            r"|LossScaleOptimizer\.__init__\(\) got an unexpected keyword argument '(?P<kwarg>\w{1,100})'"
            r"|'(?P<wrapped>\w{1,100})' object has no attribute 'loss_scale_factor'"
        ),
    ),
    Pattern(  # llvm/lib/CodeGen/SelectionDAG/SelectionDAGISel.cpp (CannotYetSelect)
        "llvm_cannot_select",
        "xla",
        "LLVM ERROR: Cannot select: 0x...: bf16 = uint_to_fp ... In function: loop_convert_fusion",
        re.compile(
            r"(?:LLVM ERROR|error in backend): Cannot select: (?:0x[0-9a-f]{1,16}: |t\d{1,9}: )?"
            r"(?P<type>\w{1,40})(?:,\w{1,20}){0,3} = (?P<node>[\w:]{1,80})"
        ),
    ),
    Pattern(  # xla (PrimitiveTypeToDataType), torch_xla/csrc/convert_ops.cpp
        "xla_unsupported_type",
        "xla",
        "Unsupported type in PrimitiveTypeToDataType 28 (torch_xla: Unsupported XLA type 10)",
        re.compile(
            r"Unsupported (?:XLA )?type(?: in (?P<fn>\w{1,100}))?:? "
            r"(?:(?P<num>\d{1,3})\b|(?P<name>BF16|F16|F8E\w{1,12}|F4E\w{1,8}|F6E\w{1,8})\b)"
        ),
    ),
    Pattern(  # xla/service/hlo_verifier.cc
        "xla_mixed_precision",
        "xla",
        "Seen floating point types of different precisions in %compare = ... but mixed precision is "
        "disallowed",
        re.compile(
            r"Seen floating point types of different precisions in %(?P<op>[\w.]{1,100}) = "
            r"(?P<instruction>[^\n]{0,600}?)but mixed precision is disallowed"
        ),
    ),
    Pattern(  # triton/mlir ElementwiseOpConversion (jax-ml/jax#28416)
        "mlir_unsupported_conversion",
        "xla",
        "Unsupported conversion from f8E4M3FN to bf16 with rounding mode rtne",
        re.compile(
            r"Unsupported conversion from (?P<src>\w{1,20}) to (?P<dst>\w{1,20}) with rounding mode "
            r"(?P<mode>\w{1,10})"
        ),
    ),
    Pattern(  # jax/_src/interpreters/mlir.py (_numpy_array_constant -> DenseElementsAttr)
        "jax_constant_lowering",
        "jax",
        "cannot include dtype '4' in a buffer (a float8 constant JAX could not lower)",
        re.compile(r"cannot include dtype '(?P<char>[^'\n]{1,4})' in a buffer"),
    ),
    Pattern(  # onnxruntime/core/framework/kernel_registry.cc (TryFindKernel)
        "ort_kernel_not_supported",
        "onnxruntime",
        "Op with name (X) and type (X) kernel is not supported in CPUExecutionProvider ... but the node "
        "in the model has the following type (tensor(float16))",
        re.compile(
            r"Op with name \((?P<node>[^()\n]{0,500})\)(?: domain \((?P<domain>[\w.]{0,100})\))? and type "
            r"\((?P<op>\w{1,100})\) kernel is not supported in (?P<provider>\w{1,100})"
        ),
    ),
    Pattern(  # onnxruntime/core/session/inference_session.cc (VerifyEachNodeIsAssignedToAnEp)
        "ort_no_implementation",
        "onnxruntime",
        "Could not find an implementation for X(N) node with name '...'",
        re.compile(
            r"Could not find an implementation for (?P<op>\w{1,100})\((?P<opset>\d{1,4})\) node with name "
            r"'(?P<node>[^'\n]{0,500})'"
        ),
    ),
)
