"""``explain`` for every kind of low-precision error, not only missing kernels (issue #24, item 1).

Fixtures are real messages: quoted from GitHub issues, written from the framework's format string
(source cited), or raised here by TensorFlow 2.21, Keras 3.15, PyTorch 2.13 and JAX 0.10 (the
call cited, the traceback's last lines verbatim).  Expectations are read from the message by
hand or checked against the installed frameworks (registries, sources, runs)."""

from __future__ import annotations

import html
import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explorer.analysis.error_text import CPU_DEDUCTION, MAX_TEXT_BYTES, PATTERNS, ParsedError, parse_error
from explorer.cli import main
from explorer.queries.diagnose import diagnose
from explorer.queries.explain_kinds import xla_only_devices
from tests.support.require import require_module
from tests.test_explain import ORIGINAL, ORIGINAL_KERNELS

#: the TensorFlow and JAX workers diagnose() starts are handed on between tests/test_explain.py and
#: tests/test_explain_kinds.py instead of being started cold twice (tests/conftest.py)
SHARES_APP_PROBE_WORKERS = True

# ------------------------------------------------------------------------------------ fixtures

#: tensorflow/tensorflow#56736 (TF 2.9, graph mode): the node name breaks across a line, the attrs
#: list holds nested brackets before T, and the registered devices and labelled kernels follow
TF_56736 = """tensorflow.python.framework.errors_impl.InvalidArgumentError: No OpKernel was registered to support Op 'DepthwiseConv2dNativeBackpropInput' used by {{node gradient_tape/deeplab/wall_bottom_horizontal_conv1/depthwise/DepthwiseConv2dNativeBackpropInput
}} with these attrs: [padding="VALID", dilations=[1, 1, 1, 1], T=DT_BFLOAT16, data_format="NCHW", strides=[1, 1, 1, 1], explicit_paddings=[]]

Registered devices: [CPU, GPU]
Registered kernels:
  device='XLA_CPU_JIT'; T in [DT_FLOAT, DT_DOUBLE, DT_BFLOAT16, DT_HALF]
  device='XLA_GPU_JIT'; T in [DT_FLOAT, DT_DOUBLE, DT_BFLOAT16, DT_HALF]
  device='GPU'; label='cudnn_grouped_convolution'; T in [DT_DOUBLE]
  device='GPU'; label='cudnn_grouped_convolution'; T in [DT_FLOAT]
  device='GPU'; label='cudnn_grouped_convolution'; T in [DT_HALF]
  device='GPU'; T in [DT_DOUBLE]
  device='GPU'; T in [DT_FLOAT]
  device='GPU'; T in [DT_HALF]"""  # noqa: E501

#: TensorFlow 2.21 here: tf.math.erfinv(tf.constant([0.1], tf.float16)) (eager); only XLA lists DT_HALF
TF_ERFINV = """tensorflow.python.framework.errors_impl.NotFoundError: Could not find device for node: {{node Erfinv}} = Erfinv[T=DT_HALF]
All kernels registered for op Erfinv:
  device='XLA_CPU_JIT'; T in [DT_FLOAT, DT_DOUBLE, DT_BFLOAT16, DT_HALF]
  device='XLA_GPU_JIT'; T in [DT_FLOAT, DT_DOUBLE, DT_BFLOAT16, DT_HALF]
  device='GPU'; T in [DT_DOUBLE]
  device='GPU'; T in [DT_FLOAT]
  device='CPU'; T in [DT_DOUBLE]
  device='CPU'; T in [DT_FLOAT]
 [Op:Erfinv] name: """  # noqa: E501

#: TensorFlow 2.21 here: tf.multiply(tf.constant([1.0], tf.float16), tf.constant([2.0], tf.float32))
TF_MUL = """  File "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/tensorflow/python/framework/ops.py", line 6027, in raise_from_not_ok_status
    raise core._status_to_exception(e) from None  # pylint: disable=protected-access
    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
tensorflow.python.framework.errors_impl.InvalidArgumentError: cannot compute Mul as input #1(zero-based) was expected to be a half tensor but is a float tensor [Op:Mul] name: """  # noqa: E501

#: Keras 3.15.1 on TensorFlow 2.21 here: a layer whose call() adds tf.constant(1.0), called under
#: keras.mixed_precision.set_global_policy("mixed_float16") (the colour codes are Keras' own)
KERAS_AUTOCAST = """  File "/tmp/explain_gen/gen_tf.py", line 23, in call
    return x + tf.constant(1.0)
           ~~^~~~~~~~~~~~~~~~~~
tensorflow.python.framework.errors_impl.InvalidArgumentError: Exception encountered when calling AddOne.call().

\x1b[1mcannot compute AddV2 as input #1(zero-based) was expected to be a half tensor but is a float tensor [Op:AddV2] name: \x1b[0m

Arguments received by AddOne.call():
  • x=tf.Tensor(shape=(2, 2), dtype=float16)"""  # noqa: E501

#: the same layer in a keras.Sequential model: the graph-building form (op_def_library.py)
KERAS_AUTOCAST_GRAPH = """TypeError: Exception encountered when calling AddOne.call().

\x1b[1mCould not automatically infer the output shape / dtype of 'add_one_1' (of type AddOne). Either the `AddOne.call()` method is incorrect, or you need to implement the `AddOne.compute_output_spec() / compute_output_shape()` method. Error encountered:

Input 'y' of 'AddV2' Op has type float32 that does not match type float16 of argument 'x'.\x1b[0m"""  # noqa: E501

#: jax-ml/jax#10818: reverse-mode AD of lax.dot_general with preferred_element_type on float16
JAX_10818 = "TypeError: lax.dot_general requires arguments to have the same dtypes, got float32, float16."
#: JAX 0.10.2 here: lax.add(jnp.ones((2, 2), jnp.float16), jnp.ones((2, 2), jnp.float32))
JAX_ADD = (
    "TypeError: lax.add requires arguments to have the same dtypes, got float16, float32. (Tip: jnp.add is "
    "a similar function that does automatic type promotion on inputs)."
)

#: Keras 3.15.1 here: the removed and renamed mixed-precision names, (text, raw name, replacement)
KERAS_API = [
    (
        # tf.keras.mixed_precision.experimental.LossScaleOptimizer
        "AttributeError: module 'keras.mixed_precision' has no attribute 'experimental'",
        "keras.mixed_precision.experimental",
        "set_global_policy",
    ),
    (
        # keras.mixed_precision.set_policy("mixed_float16")
        "AttributeError: module 'keras.mixed_precision' has no attribute 'set_policy'",
        "keras.mixed_precision.set_policy",
        "set_global_policy",
    ),
    (
        # keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(), loss_scale="dynamic")
        '  File "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/keras/src/optimizers/'
        'loss_scale_optimizer.py", line 90, in __init__\n    raise ValueError(\n'
        "ValueError: LossScaleOptimizer does not support arguments: `loss_scale`.",
        "LossScaleOptimizer(loss_scale=...)",
        "initial_scale",
    ),
    (
        # LossScaleOptimizer(keras.optimizers.SGD()).get_scaled_loss(loss)
        "AttributeError: 'LossScaleOptimizer' object has no attribute 'get_scaled_loss'",
        "LossScaleOptimizer.get_scaled_loss",
        "scale_loss",
    ),
    (
        # keras.mixed_precision.LossScaleOptimizer("sgd")
        "    self.inner_optimizer.loss_scale_factor = None\n"
        "AttributeError: 'str' object has no attribute 'loss_scale_factor'",
        "LossScaleOptimizer(str)",
        "keras.optimizers.SGD()",
    ),
]

#: openxla/xla#19105 (XLA CPU on aarch64, a JAX bfloat16 test): LLVM's selection failure, first lines
XLA_19105 = """[ RUN      ] LaxTest.testConvGeneralDilatedLocal8 (n=2, lhs_spec='NHCW', rhs_spec='OHWI', out_spec='HWCN', dtype=<class 'ml_dtypes.bfloat16'>, precision=Precision.HIGHEST, padding='VALID')
LLVM ERROR: Cannot select: 0xe0d25c00bb70: nxv8bf16 = AArch64ISD::UINT_TO_FP_MERGE_PASSTHRU 0xe0d25c152000, 0xe0d25c00bda0, undef:nxv8bf16
  0xe0d25c152000: nxv8i1 = AArch64ISD::PTRUE TargetConstant:i32<31>"""  # noqa: E501
#: ROCm/xla#215: the same failure with no target named, in an XLA fusion
ROCM_215 = """LLVM ERROR: Cannot select: 0x55bb4f6dbdb0: bf16 = uint_to_fp # D:1 0x55bb6f999200
   0x55bb6f999200: i1 = and # D:1 0x55bbac7f0e40, 0x55bb7793db10
 In function: loop_convert_fusion_105"""
#: jax-ml/jax#23585 (float8_e4m3 support): XLA's "Unsupported type" with the PrimitiveType number
JAX_23585 = (
    "xla.python.xla_extension.XlaRuntimeError: INVALID_ARGUMENT: Unsupported type in "
    "PrimitiveTypeToDataType 28"
)
#: pytorch/xla#2917 (AMP on TPU): torch_xla's form, float16 (XLA type 10) being cast
TORCH_XLA_2917 = """Exception in device=TPU:0: Error while lowering: f32[128,10]{1,0} xla::cast, type=f32, dtype=Float, stype=Half
Error: torch_xla/csrc/convert_ops.cpp:83 : Unsupported XLA type 10"""  # noqa: E501
#: jax-ml/jax#5447: XLA's HLO verifier rejecting an instruction that mixes bfloat16 and float32
JAX_5447 = (
    "RuntimeError: Internal: Seen floating point types of different precisions in %compare.199 = "
    "pred[20,20]{1,0} compare(f32[20,20]{1,0} %divide.196, bf16[20,20]{1,0} %broadcast.198), "
    "direction=GT, but mixed precision is disallowed."
)
#: jax-ml/jax#28416 (a Pallas kernel on GPU): Triton has no float8 -> bfloat16 conversion in that mode
JAX_28416 = """Unsupported conversion from f8E4M3FN to bf16 with rounding mode rtne
LLVM ERROR: Unsupported rounding mode for conversion.
    @     0x556de0d88510       1840  mlir::triton::gpu::ElementwiseOpConversionBase<>::matchAndRewrite()"""

#: JAX 0.10.2 here: jnp.fft.rfft(jnp.ones(8, jnp.float16)) (the older form is jax-ml/jax#17954)
JAX_RFFT = """  File "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/jax/_src/numpy/fft.py", line 110, in _fft_core_nd
    return lax_fft.fft(arr, fft_type, tuple(s))
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
ValueError: RFFT input must be float32 or float64, got float16"""  # noqa: E501
#: JAX 0.10.2 here: jnp.linalg.qr(jnp.eye(3, dtype=jnp.bfloat16)) on the CPU
JAX_QR = """  File "/tmp/explain_gen/gen_jax.py", line 18, in <lambda>
    out["qr_bf16"] = error_of(lambda: jnp.linalg.qr(jnp.eye(3, dtype=jnp.bfloat16)))
                                      ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/jaxlib/lapack.py", line 62, in build_lapack_fn_target
    raise NotImplementedError(err, f"Unsupported dtype {dtype}.") from err
NotImplementedError: (KeyError(<class 'ml_dtypes.bfloat16'>), 'Unsupported dtype bfloat16.')"""  # noqa: E501
#: jax-ml/jax#16673 (a jmp policy computing in float8_e4m3fn): a float8 constant JAX could not lower
JAX_16673 = """policy = jmp.Policy(compute_dtype=jnp.float8_e4m3fn,
                       param_dtype=jnp.float16,
                       output_dtype=jnp.float8_e4m3fn)
~/.local/lib/python3.10/site-packages/jax/_src/interpreters/mlir.py in _numpy_array_constant(x, canonicalize_types)
--> 249   attr = ir.DenseElementsAttr.get(x, type=element_type, shape=shape)
    250   return (hlo.ConstantOp(attr).result,)

ValueError: cannot include dtype '4' in a buffer"""  # noqa: E501

#: PyTorch 2.13 here: torch.nn.LocalResponseNorm(2)(torch.ones(1, 4, 3, 3, dtype=torch.float16))
TORCH_LRN = """  File "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/torch/nn/modules/normalization.py", line 65, in forward
    return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/torch/nn/functional.py", line 3085, in local_response_norm
    div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
NotImplementedError: "avg_pool3d_out_frame" not implemented for 'Half'"""  # noqa: E501
#: PyTorch 2.13 here: torch.linalg.qr(torch.eye(3, dtype=torch.bfloat16))
TORCH_QR = """    out["qr_bf16"] = error_of(lambda: torch.linalg.qr(torch.eye(3, dtype=torch.bfloat16)))
                                      ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
NotImplementedError: "geqrf_cpu" not implemented for 'BFloat16'"""
#: PyTorch 2.13 here: torch.ones(2, dtype=torch.float8_e4m3fn) + torch.ones(2, dtype=torch.float8_e4m3fn)
TORCH_F8_ADD = """NotImplementedError: "add_stub" not implemented for 'Float8_e4m3fn'"""
#: PyTorch 2.13 here: torch.nn.Linear(2, 2)(torch.ones(2, 2, dtype=torch.float16))
TORCH_LINEAR = """  File "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/torch/nn/modules/linear.py", line 134, in forward
    return F.linear(input, self.weight, self.bias)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
RuntimeError: mat1 and mat2 must have the same dtype, but got Half and Float"""  # noqa: E501

#: microsoft/onnxruntime#32186 (onnxruntime 1.29 on aarch64, a float16 model): the long form, from
#: KernelRegistry::TryFindKernel (onnxruntime/core/framework/kernel_registry.cc)
ORT_32186 = """onnxruntime.capi.onnxruntime_pybind11_state.NotImplemented: [ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Failed to find kernel for com.microsoft.BiasGelu(1) (node:'BiasGelu' ep:'CPUExecutionProvider'). Op with name (BiasGelu) domain (com.microsoft) and type (BiasGelu) kernel is not supported in CPUExecutionProvider. Encountered following errors: (Kernel found kernel in the supported version range (node_version: 1). However the types are incompatible. This op has been implemented only for the following types (tensor(float),), but the node in the model has the following type (tensor(float16))
)"""  # noqa: E501
#: the short form, written from VerifyEachNodeIsAssignedToAnEpImpl's format string
#: (onnxruntime/core/session/inference_session.cc: "Could not find an implementation for ",
#: node.OpType(), "(", node.SinceVersion(), ") node with name '", node.Name(), "'"), as
#: microsoft/onnxruntime#24919 reports it for Resize(13) on the CPU provider
ORT_SHORT = """    sess = InferenceSession("model_fp16.onnx", providers=["CPUExecutionProvider"])
onnxruntime.capi.onnxruntime_pybind11_state.NotImplemented: [ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for Resize(13) node with name '/Resize'"""  # noqa: E501


def parsed(text: str) -> ParsedError:
    """The parse of ``text``, which must be recognised."""
    result = parse_error(text)
    assert result is not None, text[-300:]
    return result


def facts(p: ParsedError) -> tuple[Any, ...]:
    return (p.framework, p.kind, p.raw_op, p.op, p.dtype, p.device)


# ------------------------------------------------------------------------------------ TensorFlow


def test_graph_mode_no_opkernel_with_long_attrs_and_the_devices_after_it() -> None:
    p = parsed(TF_56736)  # tensorflow/tensorflow#56736
    assert facts(p) == (
        "tensorflow",
        "no_opkernel_registered",
        "DepthwiseConv2dNativeBackpropInput",
        None,
        "bfloat16",
        "CPU",
    )
    assert p.attr == "T" and p.dtype_text == "DT_BFLOAT16"  # T comes after dilations=[1, 1, 1, 1]
    assert p.labelled_kernels == 3 and len(p.listed_kernels) == 5
    assert CPU_DEDUCTION in p.notes  # "Registered devices: [CPU, GPU]": the CPU had no kernel
    # the listed bfloat16 kernels are on the two XLA devices only: jit_compile=True is the fix to test
    assert xla_only_devices(p) == ["XLA_CPU_JIT", "XLA_GPU_JIT"]
    assert any("jit_compile=True" in note for note in p.notes)


def test_kernel_list_naming_only_xla_devices_offers_jit_compile() -> None:
    p = parsed(TF_ERFINV)  # TensorFlow 2.21 here
    assert facts(p) == ("tensorflow", "no_kernel_for_device", "Erfinv", "erfinv", "float16", "CPU")
    assert xla_only_devices(p) == ["XLA_CPU_JIT", "XLA_GPU_JIT"]
    work = diagnose(TF_ERFINV, run_workaround=False)["workaround"]
    assert "jit_compile=True" in work["description"] and "jit_compile=True" in work["code"]
    assert "tf.math.erfinv(" in work["code"]


def test_kernel_list_with_only_xla_devices_agrees_with_the_installed_registry() -> None:
    require_module("tensorflow")
    from explorer.runtime.registry import get_registry

    reg = get_registry()
    declared = [
        d
        for d in ("CPU", "GPU", "XLA_CPU_JIT", "XLA_GPU_JIT")
        if reg.declared("Erfinv", "float16", d).value == "ok"
    ]
    assert declared == xla_only_devices(parsed(TF_ERFINV))


def test_the_original_range_error_says_what_its_list_means() -> None:
    d = diagnose(ORIGINAL, run_workaround=False)
    assert "the message names no device" not in " ".join(d["notes"])
    meaning = next(n for n in d["notes"] if "is not the devices TensorFlow tried" in n)
    for device in dict.fromkeys(dev for dev, _ in ORIGINAL_KERNELS):  # the message's own list, by device
        dtypes = [t for dev, c in ORIGINAL_KERNELS if dev == device for t in c["Tidx"]]
        assert f"{device}: {', '.join(dict.fromkeys(dtypes))}" in meaning
    assert "none of them takes float16" in meaning
    assert CPU_DEDUCTION in d["notes"] and "which device the op was placed on" in CPU_DEDUCTION


def test_tensorflow_dtype_mismatch() -> None:
    p = parsed(TF_MUL)  # TensorFlow 2.21 here; tensorflow/core/framework/op_kernel.cc's wording
    assert facts(p) == ("tensorflow", "tf_dtype_mismatch", "Mul", "mul", "float16", None)
    assert p.operand_dtypes == ("float16", "float32")  # "a half tensor but is a float tensor"
    d = diagnose(TF_MUL, run_workaround=False)
    assert "fails on every device" in d["explanation"] and "tf.cast" in d["explanation"]
    assert "x = tf.constant" in d["workaround"]["code"] and "tf.float16" in d["workaround"]["code"]


@pytest.mark.parametrize("text", [KERAS_AUTOCAST, KERAS_AUTOCAST_GRAPH], ids=["eager", "graph"])
def test_keras_autocast_mismatch(text: str) -> None:
    p = parsed(text)  # Keras 3.15.1 here
    assert (p.framework, p.raw_op, p.op, p.dtype, p.device) == ("keras", "AddV2", "add", "float16", None)
    assert set(p.operand_dtypes) == {"float16", "float32"}
    assert "AddOne" in " ".join(p.notes)
    explanation = diagnose(text, run_workaround=False)["explanation"]
    assert "Keras layer AddOne" in explanation and "self.compute_dtype" in explanation


@pytest.mark.parametrize(("text", "raw", "replacement"), KERAS_API, ids=[k[1] for k in KERAS_API])
def test_loss_scaling_and_policy_api_errors(text: str, raw: str, replacement: str) -> None:
    p = parsed(text)  # Keras 3.15.1 here
    assert facts(p) == ("keras", "keras_mixed_precision_api", raw, None, None, None)
    explanation = diagnose(text, run_workaround=False)["explanation"]
    assert replacement in explanation and "no op, dtype or device is involved" in explanation


# ------------------------------------------------------------------------------------ JAX


def test_jax_dot_general_and_lax_type_errors() -> None:
    dot = parsed(JAX_10818)  # jax-ml/jax#10818
    assert facts(dot) == ("jax", "jax_dtype_mismatch", "lax.dot_general", "matmul", "float16", None)
    assert dot.operand_dtypes == ("float32", "float16")
    add = parsed(JAX_ADD)  # JAX 0.10.2 here
    assert facts(add) == ("jax", "jax_dtype_mismatch", "lax.add", "add", "float16", None)
    assert ".astype(jnp.float16)" in diagnose(JAX_ADD, run_workaround=False)["explanation"]


def test_jax_own_messages() -> None:
    rfft = parsed(JAX_RFFT)  # JAX 0.10.2's wording; jax-ml/jax#17954's older one is in test_explain
    assert facts(rfft) == ("jax", "jax_fft_dtype", "RFFT", "rfft", "float16", None)
    assert rfft.allowed == ("float32", "float64")
    qr = parsed(JAX_QR)  # through jaxlib/lapack.py: the CPU backend's LAPACK
    assert facts(qr) == ("jax", "jax_unsupported_dtype", "qr", "qr", "bfloat16", "CPU")
    constant = parsed(JAX_16673)  # jax-ml/jax#16673
    assert facts(constant) == ("jax", "jax_constant_lowering", "constant", None, "float8_e4m3fn", None)


def test_numpy_type_character_of_the_float8_constant_is_ml_dtypes_own() -> None:
    import ml_dtypes
    import numpy as np

    assert np.dtype(ml_dtypes.float8_e4m3fn).char == "4"  # what jax-ml/jax#16673 printed


# ------------------------------------------------------------------------------------ compilers


def test_xla_and_llvm_compile_failures_for_a_low_precision_type() -> None:
    aarch64 = parsed(XLA_19105)  # openxla/xla#19105
    assert facts(aarch64) == (
        "xla",
        "llvm_cannot_select",
        "AArch64ISD::UINT_TO_FP_MERGE_PASSTHRU",
        None,
        "bfloat16",
        "CPU",
    )
    fusion = parsed(ROCM_215)  # ROCm/xla#215: no target in the node, so no device
    assert (fusion.dtype, fusion.device, fusion.raw_op) == ("bfloat16", None, "uint_to_fp")
    assert any("loop_convert_fusion_105" in n for n in fusion.notes)
    unsupported = parsed(JAX_23585)  # jax-ml/jax#23585: PrimitiveType 28
    assert (unsupported.kind, unsupported.dtype, unsupported.dtype_text) == (
        "xla_unsupported_type",
        "float8_e4m3",
        "F8E4M3",
    )
    torch_xla = parsed(TORCH_XLA_2917)  # pytorch/xla#2917: type 10 while casting a Half tensor
    assert (torch_xla.framework, torch_xla.dtype) == ("torch", "float16")
    mixed = parsed(JAX_5447)  # jax-ml/jax#5447
    assert (mixed.kind, mixed.raw_op, mixed.dtype, mixed.operand_dtypes) == (
        "xla_mixed_precision",
        "compare",
        "bfloat16",
        ("float32", "bfloat16"),
    )
    triton = parsed(JAX_28416)  # jax-ml/jax#28416
    assert (triton.kind, triton.dtype, triton.device, triton.operand_dtypes) == (
        "mlir_unsupported_conversion",
        "float8_e4m3fn",
        "GPU",
        ("float8_e4m3fn", "bfloat16"),
    )
    for text in (XLA_19105, JAX_23585, JAX_5447, JAX_28416):
        d = diagnose(text, run_workaround=False)
        assert "What to do" in d["explanation"] and d["workaround"]["code"] == ""


# ------------------------------------------------------------------------------------ PyTorch


def test_pytorch_kernel_that_is_not_the_function_called() -> None:
    lrn = parsed(TORCH_LRN)  # PyTorch 2.13 here
    assert (lrn.raw_op, lrn.dtype, lrn.device, lrn.called) == (
        "avg_pool3d_out_frame",
        "float16",
        None,
        "local_response_norm",
    )
    explanation = diagnose(TORCH_LRN, run_workaround=False)["explanation"]
    assert "avg_pool3d_out_frame" in explanation and "local_response_norm" in explanation
    assert "the kernel of avg_pool3d" in explanation
    qr = parsed(TORCH_QR)
    assert facts(qr) == ("torch", "torch_not_implemented", "geqrf_cpu", "qr", "bfloat16", "CPU")
    explanation = diagnose(TORCH_QR, run_workaround=False)["explanation"]
    assert "geqrf is the routine qr runs" in explanation and "the _cpu in its name" in explanation


def test_pytorch_kernel_name_without_a_device() -> None:
    p = parsed(TORCH_F8_ADD)  # PyTorch 2.13 here: no _cpu or _cuda in "add_stub"
    assert facts(p) == ("torch", "torch_not_implemented", "add_stub", "add", "float8_e4m3fn", None)
    assert any("does not say the device" in n for n in p.notes)


def test_pytorch_operand_mismatch() -> None:
    p = parsed(TORCH_LINEAR)  # PyTorch 2.13 here
    assert facts(p) == ("torch", "torch_dtype_mismatch", "mm", "matmul", "float16", None)
    assert p.operand_dtypes == ("float16", "float32")


# ------------------------------------------------------------------------------------ ONNX Runtime


def test_onnx_runtime_kernel_gap() -> None:
    long = parsed(ORT_32186)  # microsoft/onnxruntime#32186
    assert (long.framework, long.kind, long.raw_op, long.dtype, long.provider, long.device) == (
        "onnxruntime",
        "ort_kernel_not_supported",
        "BiasGelu",
        "float16",
        "CPUExecutionProvider",
        "CPU",
    )
    assert long.allowed == ("float32",)
    explanation = diagnose(ORT_32186, run_workaround=False)["explanation"]
    assert "ONNX Runtime kernel gap" in explanation and "not a backend explorer probes" in explanation
    short = parsed(ORT_SHORT)
    assert (short.kind, short.raw_op, short.provider, short.dtype) == (
        "ort_no_implementation",
        "Resize",
        "CPUExecutionProvider",
        None,
    )
    assert any("names no dtype" in n for n in short.notes)


# ------------------------------------------------------------------------------------ CLI and app


def test_cli_and_app_say_the_same_and_the_app_escapes(capsys: pytest.CaptureFixture[str]) -> None:
    from explorer.app.explain_tab import result_html

    assert main(["explain", "--no-run", TORCH_LRN]) == 0
    out = capsys.readouterr().out
    assert "called" in out and "local_response_norm" in out
    result = diagnose(TORCH_LRN, run_workaround=False)
    markup = result_html(result)
    assert html.escape(result["explanation"], quote=True) in markup and "local_response_norm" in markup
    hostile = ORT_32186.replace("(BiasGelu) domain", "(<img src=x onerror=alert(1)>) domain")
    markup = result_html(diagnose(hostile, run_workaround=False))
    assert "<img" not in markup and "ONNX Runtime" in markup


def test_every_pattern_is_listed_in_what_was_looked_for() -> None:
    d = diagnose("nothing to see here", run_workaround=False)
    assert len(d["looked_for"]) == len(PATTERNS)
    assert any(line.startswith("ONNX Runtime:") for line in d["looked_for"])


# ------------------------------------------------------------------------------------ hostile input

#: beginnings of every recognised message, to build texts that reach the readers
_FRAGMENTS = [p.looks_like[:60] for p in PATTERNS] + [
    "{{node ",
    "}} = ",
    "[T=DT_HALF",
    "device='CPU'; T in [",
    "Registered devices: [",
    "All kernels registered for op X:\n",
    "\"add_cpu\" not implemented for 'Half'",
    "Op with name (",
    "tensor(float16)",
    "Exception encountered when calling ",
    "LLVM ERROR: Cannot select: ",
    "jnp.linalg.qr(",
    'File "/x/torch/nn/functional.py", line 1, in ',
    "\x00\x1b[1m\r\n\t",
    "((((",
    "]]]]",
    "'",
    '"',
]


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=3000))
def test_no_text_makes_the_parser_raise(text: str) -> None:
    result = parse_error(text)
    assert result is None or isinstance(result, ParsedError)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(_FRAGMENTS), st.text(max_size=40)), max_size=40))
def test_no_text_built_from_message_pieces_makes_explain_raise(pieces: list[str]) -> None:
    d = diagnose("".join(pieces), run_workaround=False)
    json.dumps(d)  # plain data, whatever was recognised
    assert isinstance(d["explanation"], str) and d["explanation"]


def _pathological() -> list[str]:
    """Texts that make a backtracking regex quadratic or worse: long runs a pattern can start at
    every position of, unclosed brackets, thousands of matches.  A quarter of the size limit is
    enough: a quadratic pattern would take hours on it."""
    n = MAX_TEXT_BYTES // 4
    rng = random.Random(24)
    nested = "".join(rng.choice("{}[]()'\"") for _ in range(n))
    repeat = [
        "a",
        "tf.",
        "{{node ",
        "[",
        "Invalid type for Range half\n",
        "No OpKernel was registered to support Op 'X' used by {{node " + "a" * 200,
        "device='CPU'; " + "T" * 300 + "\n",
        "cannot compute " + "M" * 90 + " as input #1(zero-based) was expected to be a ",
        "lax.add requires arguments to have the same dtypes, got " + "float16, " * 9,
        "Op with name (" + "n" * 400,
        "Exception encountered when calling " + "L" * 150,
        "Seen floating point types of different precisions in %a = " + "x" * 100,
        "jnp.linalg." * 10 + "(",
        '"' + "x" * 150 + '" ',
    ]
    return [nested] + [(unit * (n // len(unit) + 1))[:n] for unit in repeat]


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_pathological_texts_parse_in_linear_time() -> None:
    """Each text is parsed; the whole set runs under pytest-timeout.  The parser is linear by
    construction (bounded repetitions, one sweep over the matches), which a quadratic regex
    would break by hours, not seconds, on texts this long."""
    for text in _pathological():
        result = parse_error(text)
        assert result is None or isinstance(result, ParsedError)


@pytest.mark.timeout(5)
def test_one_pathological_text_parses_under_the_timeout() -> None:
    text = ("Op with name (" + "n" * 400) * (MAX_TEXT_BYTES // 420)
    assert parse_error(text) is None


# ------------------------------------------------------------------------------------ slow: live runs


def test_xla_primitive_type_numbers_are_jaxlibs_own() -> None:
    """The XLA PrimitiveType numbers "Unsupported type 28" is read with, from jaxlib's own enum."""
    require_module("jax")
    from jax._src.lib import xla_client

    from explorer.analysis.error_text import XLA_TYPE_ENUM, XLA_TYPE_NAMES

    for number, name in XLA_TYPE_ENUM.items():
        assert int(getattr(xla_client.PrimitiveType, name)) == number
    assert set(XLA_TYPE_ENUM.values()) == set(XLA_TYPE_NAMES)


def test_local_response_norm_runs_avg_pool3d_in_pytorchs_source() -> None:
    """PyTorch's own source (read, not imported): local_response_norm calls avg_pool3d, whose
    kernel the message names."""
    require_module("torch")
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.submodule_search_locations
    source = (Path(next(iter(spec.submodule_search_locations))) / "nn" / "functional.py").read_text()
    body = source.split("def local_response_norm(", 1)[1].split("\ndef ", 1)[0]
    assert "avg_pool3d(" in body


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, Any]]:
    """diagnose() with the workarounds run here, in the TensorFlow, Keras and JAX workers (those of
    tests/test_explain.py, started just before, are reused while warm)."""
    require_module("tensorflow")
    require_module("jax")
    mul = diagnose(TF_MUL)  # first: it starts the TensorFlow worker, so XLA's compile has its own timeout
    return {
        "mul": mul,
        "erfinv": diagnose(TF_ERFINV),
        "keras": diagnose(KERAS_API[0][0]),
        "rfft": diagnose(JAX_RFFT),
    }


@pytest.mark.slow
def test_jit_compile_and_the_cast_ran_here_before_they_are_offered(runs: dict[str, dict[str, Any]]) -> None:
    for key in ("erfinv", "mul"):
        work = runs[key]["workaround"]
        assert work["ran"] is True and work["result_dtype"] == "float16", work
    assert "jit_compile=True" in runs["erfinv"]["workaround"]["code"]
    assert "ran here, returned float16" in runs["erfinv"]["explanation"]


@pytest.mark.slow
def test_keras_names_offered_ran_here(runs: dict[str, dict[str, Any]]) -> None:
    work = runs["keras"]["workaround"]  # set_global_policy, LossScaleOptimizer(initial_scale=), scale_loss
    assert work["ran"] is True and work["result_dtype"] == "float32", work
    assert "initial_scale=" in work["code"] and "scale_loss(" in work["code"]


@pytest.mark.slow
def test_a_text_naming_no_device_is_run_here_on_the_cpu(runs: dict[str, dict[str, Any]]) -> None:
    check = runs["rfft"]["device_check"]
    assert check["device"] == "CPU" and check["ran"] is False and "float16" in check["error"]
    assert "the CPU lacks the kernel" in runs["rfft"]["explanation"]
    assert (
        runs["rfft"]["workaround"]["ran"] is True and runs["rfft"]["workaround"]["result_dtype"] == "float16"
    )
