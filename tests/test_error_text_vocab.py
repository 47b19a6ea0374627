"""The reader's dtype vocabulary against the frameworks' own registries read here, live (not the
committed table): every PyTorch dtype attribute, str, legacy tensor type and ``{Backend}{Scalar}Type``
name, every ml_dtypes type, and ONNX's TensorProto names; plus device words that only look like one.
"""

from __future__ import annotations

from explorer.analysis.error_text._device import read_device
from explorer.analysis.error_text._lexicon import dtype_mentions
from tests.support.require import require_module

#: the corpus schema's dtype names (tests/data/error_corpus/README.md)
SCHEMA = {
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float4_e2m1fn",
    "float8_e8m0fnu",
    "complex64",
    "complex128",
}


def _names(text: str) -> list[str]:
    return [m.name for m in dtype_mentions(text)]


def test_every_torch_float_dtype_spelling_is_read_as_torch_names_it() -> None:
    require_module("torch")
    import torch

    checked = 0
    for attr in dir(torch):
        dtype = getattr(torch, attr)
        if not isinstance(dtype, torch.dtype):
            continue
        name = str(dtype).removeprefix("torch.").removesuffix("_x2")
        if name not in SCHEMA:
            continue
        legacy = torch.empty(0, dtype=dtype).type().rsplit(".", 1)[-1]  # torch.HalfTensor
        scalar = legacy.removesuffix("Tensor")  # Half, Float8_e4m3fn
        for text in (
            f"expected dtype torch.{attr} here",
            f"got {legacy} instead",
            f"Input type (CUDA{scalar}Type) should be the same",
            f"not implemented for '{scalar}'",
        ):
            assert _names(text) == [name], (text, _names(text))
            checked += 1
    assert checked >= 4 * 10


def test_every_ml_dtypes_and_onnx_float_name_is_read() -> None:
    require_module("ml_dtypes")
    require_module("onnx")
    import ml_dtypes
    import numpy as np
    import onnx
    import onnx.helper as helper

    for attr in dir(ml_dtypes):
        if not isinstance(getattr(ml_dtypes, attr), type):
            continue
        try:
            name = np.dtype(getattr(ml_dtypes, attr)).name
        except (TypeError, ValueError):  # finfo, iinfo, functions
            continue
        if name in SCHEMA:
            assert _names(f"dtype {attr} is not supported") == [name], attr
    for key, value in onnx.TensorProto.DataType.items():
        if key in ("UNDEFINED", "STRING"):
            continue
        name = helper.tensor_dtype_to_np_dtype(value).name
        if name in SCHEMA:
            assert _names(f"TensorProto.{key} input") == [name], key


def test_a_source_file_named_cc_is_not_a_compute_capability() -> None:
    """``engine.cc:80`` is a C++ file and line; ``CC 8.0`` and ``compute capability 8.6`` are capabilities."""
    text = "GPU: 1080Ti\nI0623 engine.cc:80] You specify FP16 mode, but the hardware do not support FP16"
    device = read_device(text)
    assert (device.type, device.compute_capability) == ("cuda", "6.1")  # GTX 1080 Ti is Pascal, 6.1
    assert read_device("an A10 GPU with CC 8.0").compute_capability == "8.0"


def test_a_bare_geforce_number_is_a_gpu_only_where_a_gpu_is_named() -> None:
    """``on my 3090`` and ``2080Ti`` are the RTX boards (their rows of the table, read by their full
    names); ``line 3090`` and ``port 4090`` are numbers."""
    from explorer.analysis.gpu_models import model_by_name

    for text, board in (("on my 3090", "RTX 3090"), ("GPU: 4090", "RTX 4090"), ("a 2080Ti", "RTX 2080 Ti")):
        row = model_by_name(board)
        assert row is not None
        assert read_device(text).compute_capability == row.compute_capability, text
    for text in ('File "x.py", line 3090, in f', "port 4090 refused", "in 2050 we"):
        assert read_device(text).type is None, text


def test_vendor_cpp_type_names_are_read_and_dunders_are_not() -> None:
    """The C++ spellings of CUDA (cuda_fp16.h ``__half``, cuda_fp8.h ``__nv_fp8_e4m3``,
    library_types.h ``CUDA_R_16BF``), CUTLASS (``cutlass::half_t``, ``float_e4m3_t``), c10's
    ScalarType constants (``at::kBFloat16``) and Triton's ``tl.float8e4nv`` (its E4M3 with NaN only,
    e4m3fn); Python's ``__float__`` / ``__int__`` are methods, not dtypes."""
    cases = {
        "__half": "float16",
        "__nv_fp8_e4m3": "float8_e4m3fn",
        "__nv_fp8_e5m2": "float8_e5m2",
        "CUDA_R_16BF": "bfloat16",
        "CUDA_R_8F_E4M3": "float8_e4m3fn",
        "cutlass::half_t": "float16",
        "cutlass::float_e5m2_t": "float8_e5m2",
        "at::kBFloat16": "bfloat16",
        "at::ScalarType::Half": "float16",
        "tl.float8e4nv": "float8_e4m3fn",
        "tl.float8e5": "float8_e5m2",
    }
    for text, name in cases.items():
        assert _names(f"unsupported type {text} here") == [name], text
    for text in ("x.__float__()", "int.__int__", "__bool__"):
        assert _names(text) == [], text


def test_dispatcher_ops_of_any_namespace_are_read_from_torch_itself() -> None:
    """Ops PyTorch's dispatcher registers here (read live), outside ``aten``, in the message
    PyTorch's XPU fallback prints; a log line's module path (``crate::module: ...``) is no op."""
    require_module("torch")
    import torch

    from explorer.analysis.error_text._op_reading import read_op

    names = sorted(
        {n.split(".")[0] for n in torch._C._dispatch_get_all_op_names() if not n.startswith("aten::")}
    )
    picked = [n for n in names if n.startswith(("quantized::", "prims::", "mkldnn::"))][:12]
    assert len(picked) >= 6
    for qualified in picked:
        text = f"NotImplementedError: The operator '{qualified}' is not currently implemented for the XPU"
        assert read_op(text, "torch").raw == qualified.split("::")[1], qualified
    assert read_op("INFO mistralrs_core::paged_attention: block size 32", None).raw is None


def test_module_names_no_registry_has_are_not_ops() -> None:
    """``jnp.arrays`` in prose is no jax.numpy function (checked live), so no op; ``jnp.einsum`` is."""
    require_module("jax")
    import jax.numpy as jnp

    from explorer.analysis.error_text._op_reading import read_op

    assert not hasattr(jnp, "arrays") and hasattr(jnp, "einsum")
    assert read_op("I get a TypeError when using bf16 typed jnp.arrays in jax2tf.", "jax").raw is None
    assert read_op("TypeError: jnp.einsum got bfloat16 operands", "jax").name == "einsum"


def test_intel_arc_boards_are_xpu_and_nvidia_a_boards_stay_cuda() -> None:
    """Intel's Arc A-series (A310-A770) and B-series (B570, B580) are XPU devices; NVIDIA's A100,
    A40, A6000 keep their rows of NVIDIA's table."""
    from explorer.analysis.gpu_models import model_by_name

    for text in ("Intel Arc A770", "on my A750", "B580 driver 101"):
        assert read_device(text).type == "xpu", text
    for board in ("A100", "A40", "RTX A6000"):
        row = model_by_name(board)
        assert row is not None
        device = read_device(f"running on an {board}")
        assert (device.type, device.compute_capability) == ("cuda", row.compute_capability), board


def test_a_text_about_another_framework_names_none_of_ours() -> None:
    """A mistral.rs log that mentions vLLM in passing is no PyTorch text; a torch traceback that
    mentions llama.cpp in passing still is."""
    from explorer.analysis.error_text import read_text

    rust = (
        "This works fine on vllm.\n"
        "INFO mistralrs_core::paged_attention: KV cache type is F8E4M3\n"
        "INFO mistralrs_core::utils::normal: DType selected is BF16.\n"
        "Error: internal error 'F8E4M3 not supported in CUDA backend'"
    )
    assert read_text(rust).framework is None
    torch_text = (
        "I tried llama.cpp before.\n"
        '  File "/usr/lib/python3.11/site-packages/torch/nn/functional.py", line 2, in linear\n'
        "    return torch._C._nn.linear(input, weight, bias)\n"
        "RuntimeError: expected m1 and m2 to have the same dtype, but got: c10::Half != float"
    )
    assert read_text(torch_text).framework == "torch"
