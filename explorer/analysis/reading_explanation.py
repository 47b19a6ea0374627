"""The structural reading of an error text in words (:func:`reading_sentence`), and for a hardware
gate what the device is, what it supports, which generation the feature needs and what can be done
on the device instead (:func:`gate_sentence`), from the tensor-core table
(:mod:`explorer.analysis.gpu_tensor_cores`) and the GPU model table
(:mod:`explorer.analysis.gpu_models`).

Pure: data in, text out.

>>> from explorer.analysis.error_text import read_text
>>> r = read_text("    with te.fp8_autocast(enabled=True):\\nAssertionError: Device compute capability "
...               "8.9 or higher required for FP8 execution.\\n(I use an RTX 3090)")
>>> print(reading_sentence(r))  # doctest: +NORMALIZE_WHITESPACE
Read from the text: PyTorch, raised by Transformer Engine; device: CUDA GPU RTX 3090, compute
capability 8.6 (from the GPU model table, https://developer.nvidia.com/cuda-gpus); compute
capability required: 8.9; kind: hardware gate (the feature needs a newer device); formats named:
float8. Not named in the text: op and dtype.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from explorer.analysis.gpu_tensor_cores import (
    FORMAT_COLUMNS,
    TENSOR_CORE_TABLE,
    TensorCoreRow,
    tensor_core_row,
)

if TYPE_CHECKING:
    from explorer.analysis.error_text import ErrorReading

#: each framework and library as a sentence names it
NAMES = {
    "tensorflow": "TensorFlow",
    "keras": "Keras",
    "torch": "PyTorch",
    "jax": "JAX",
    "xla": "XLA",
    "onnxruntime": "ONNX Runtime",
    "onnxconverter_common": "onnxconverter-common",
    "tensorrt": "TensorRT",
    "torch_tensorrt": "Torch-TensorRT",
    "torchao": "torchao",
    "transformer_engine": "Transformer Engine",
    "bitsandbytes": "bitsandbytes",
    "deepspeed": "DeepSpeed",
    "vllm": "vLLM",
    "triton": "Triton",
    "mps": "Apple's MPS backend",
    "numpy": "NumPy",
}
#: each kind in words
KIND_WORDS = {
    "missing_kernel": "missing kernel (no implementation for this dtype on this device)",
    "hardware_gate": "hardware gate (the feature needs a newer device)",
    "dtype_mismatch": "dtype mismatch or promotion (two operands of different dtypes)",
    "lowering_refused": "the compiler refused to lower the type",
    "quantization_constraint": "quantization-format constraint (block size or allowed dtypes)",
    "conversion_error": "conversion error (a converted model, or a device that lacks the dtype)",
    "loss_scaling": "loss scaling (the scaler's API or its state)",
    "overflow_nan": "overflow or NaN",
    "other": "not one of the known kinds",
}
_DEVICE_WORDS = {
    "cpu": "CPU",
    "cuda": "CUDA GPU",
    "rocm": "ROCm GPU",
    "mps": "Apple GPU (MPS)",
    "xpu": "Intel XPU",
    "tpu": "TPU",
    "directml": "DirectML device",
}
#: the tensor-core column each explorer dtype or family belongs to
_COLUMN = {
    "float8_e4m3fn": "float8",
    "float8_e5m2": "float8",
    "float8_e4m3fnuz": "float8",
    "float8_e5m2fnuz": "float8",
    "float8": "float8",
    "float4_e2m1fn": "float4",
    "float4": "float4",
    "mxfp8": "mxfp8",
    "nvfp4": "nvfp4",
    "mxfp4": "float4",
    "mxfp6": "float6",
    "bfloat16": "bfloat16",
    "float16": "float16",
}
#: the macOS release Apple's MPS backend needs for a dtype, as PyTorch's MPS check words it
#: ("MPS BFloat16 is only supported on MacOS 14 or newer")
_MACOS_NEEDED = {"bfloat16": "14"}
#: the block format of :func:`explorer.quantize_blocks` that emulates each gated column
_BLOCK_NAMES = {"mxfp8": "mxfp8_e4m3", "nvfp4": "nvfp4", "mxfp4": "mxfp4_e2m1", "mxfp6": "mxfp6_e2m3"}


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def device_words(reading: ErrorReading) -> str:
    """The device in words: its type, model, compute capability (and where it came from), macOS, ISA.

    >>> from explorer.analysis.error_text import read_text
    >>> device_words(read_text("RuntimeError: no kernel image is available (sm_61)"))
    'CUDA GPU, compute capability 6.1 (from sm_61)'
    """
    device = reading.device
    if device.type is None:
        return "not named"
    parts = [_DEVICE_WORDS.get(device.type, device.type)]
    if device.name:
        parts[0] += f" {device.name}"
    if device.compute_capability:
        source = device.evidence.get("compute_capability", (0, 0, ""))[2]
        how = device.capability_from or ""
        if how.startswith("model table"):
            where = f"from the GPU model table, {how.removeprefix('model table (').rstrip(')')}"
        elif how == "sm":
            where = f"from {source}"
        else:
            where = f'from "{source}"'
        parts.append(f"compute capability {device.compute_capability} ({where})")
    if device.gfx:
        parts.append(f"LLVM target {device.gfx}")
    if device.macos:
        parts.append(f"macOS {device.macos}")
    if device.isa:
        parts.append("ISA " + _join(list(device.isa)))
    return ", ".join(parts)


def reading_sentence(reading: ErrorReading) -> str:
    """What the structural reading found, in one sentence, and what the text did not name."""
    parts = []
    if reading.framework:
        fw = NAMES.get(reading.framework, reading.framework)
        lib = reading.library
        parts.append(fw + (f", raised by {NAMES.get(lib, lib)}" if lib and lib != reading.framework else ""))
    if reading.op.raw:
        catalog = (
            f" (catalog op {reading.op.name})"
            if reading.op.name and reading.op.name != reading.op.raw
            else ""
        )
        parts.append(f"op {reading.op.raw}{catalog}")
    if reading.dtypes:
        dtypes = [f"{d.name}" + (f" ({d.role})" if d.role else "") for d in reading.dtypes]
        parts.append("dtypes " + _join(dtypes) if len(dtypes) > 1 else "dtype " + dtypes[0])
    if reading.device.type:
        parts.append("device: " + device_words(reading))
    if reading.device.required_compute_capability:
        parts.append(f"compute capability required: {reading.device.required_compute_capability}")
    if reading.device.required_macos:
        parts.append(f"macOS required: {reading.device.required_macos}")
    parts.append("kind: " + KIND_WORDS[reading.kind])
    if reading.families:
        parts.append("formats named: " + _join(list(reading.families)))
    unknown = [u for u in reading.unknown if u != "library"]
    tail = f" Not named in the text: {_join(unknown)}." if unknown else ""
    return "Read from the text: " + "; ".join(parts) + "." + tail


def _gated_columns(reading: ErrorReading) -> list[str]:
    columns = [_COLUMN[n] for n in (*reading.dtype_names, *reading.families) if n in _COLUMN]
    narrow = [c for c in dict.fromkeys(columns) if c not in ("float16",)]
    return narrow or list(dict.fromkeys(columns))


def _first_row_with(column: str) -> TensorCoreRow | None:
    return next((row for row in TENSOR_CORE_TABLE if row.formats.get(column) is True), None)


def _supports(row: TensorCoreRow) -> str:
    yes = [c for c in FORMAT_COLUMNS if row.formats.get(c) is True]
    partial = [c for c in FORMAT_COLUMNS if row.formats.get(c) == "partial"]
    no = [c for c in FORMAT_COLUMNS if row.formats.get(c) is False]
    text = (
        f"its tensor cores take {_join(yes)}" if yes else "its tensor cores take none of the table's formats"
    )
    if partial:
        text += f" ({_join(partial)} in part)"
    if no:
        text += f", not {_join(no)}"
    return text


def gate_sentence(reading: ErrorReading) -> str | None:
    """For a hardware gate (compute capability, macOS, CPU ISA): what the device is, what it supports,
    what the feature needs and what to do on this device instead; None for other kinds.

    >>> from explorer.analysis.error_text import read_text
    >>> text = "torch._scaled_mm is only supported on CUDA devices with compute capability >= 9.0 or 8.9"
    >>> said = gate_sentence(read_text(text + " (my GPU: RTX 3090)"))
    >>> print(said)  # doctest: +ELLIPSIS +NORMALIZE_WHITESPACE
    The device is a CUDA GPU RTX 3090, compute capability 8.6 (Ampere): its tensor cores take float16,
    bfloat16 and tf32, not float8, float4, mxfp8 and nvfp4 (sources: ...). The feature needs compute
    capability 8.9 or newer (Ada Lovelace, e.g. L4, L40S, RTX 40 series). What to do on this device
    instead: compute in bfloat16, ...
    """
    if reading.kind != "hardware_gate":
        return None
    device = reading.device
    columns = _gated_columns(reading)
    if device.type == "mps" or device.macos or device.required_macos:
        return _macos_gate(reading, columns)
    if device.type == "cpu":
        isa = f" with {_join(list(device.isa))} named" if device.isa else ""
        return (
            f"The device is a CPU{isa}: the library refuses the format for this CPU's instruction set "
            "(the text names what the CPU has or lacks). What to do on this CPU: compute in float32, or "
            "emulate the low-precision rounding with explorer's emulated backend (backends=['emulated']), "
            "which rounds every result to the format in software."
        )
    if device.type not in ("cuda", None):
        return None
    row = tensor_core_row(device.compute_capability) if device.compute_capability else None
    needed = device.required_compute_capability
    need_row = tensor_core_row(needed) if needed else None
    if need_row is None and columns:
        need_row = _first_row_with(columns[0])
        needed = need_row.compute_capability if need_row else None
    parts = []
    if row is not None:
        name = f" {device.name}" if device.name else ""
        parts.append(
            f"The device is a CUDA GPU{name}, compute capability {row.compute_capability} "
            f"({row.architecture}): {_supports(row)} (sources: {_join([s.split()[0] for s in row.sources])})."
        )
    elif device.compute_capability:
        parts.append(
            f"The device has compute capability {device.compute_capability}, older than every row of the "
            "tensor-core table (from 7.0): its tensor cores take none of the low-precision formats."
        )
    else:
        parts.append("The text does not say which GPU it ran on (its compute capability is unknown).")
    what = f"The {_join(columns)} format" if len(columns) == 1 else f"The {_join(columns)} formats"
    if need_row is not None:
        parts.append(
            f"{what if columns else 'The feature'} needs compute capability {needed} or newer "
            f"({need_row.architecture}, e.g. {need_row.examples})."
        )
    parts.append(_instead(row, list(reading.dtype_names)))
    return " ".join(parts)


def _instead(row: TensorCoreRow | None, dtypes: list[str]) -> str:
    """What to do on the user's device instead: bfloat16 where its tensor cores take it (else
    float16), and the gated format emulated in software."""
    if row is None:
        low = "bfloat16 where the GPU takes it (compute capability 8.0 and newer), else float16"
    elif row.formats.get("bfloat16") is True:
        low = "bfloat16, which its tensor cores take"
    else:
        low = "float16 (its tensor cores take no bfloat16)"
    block = [_BLOCK_NAMES[d] for d in dtypes if d in _BLOCK_NAMES]
    emulate = (
        f"explorer.quantize_blocks(values, {block[0]!r}) rounds values to the block format in software"
        if block
        else "explorer's emulated backend (backends=['emulated']) rounds every result to the format in "
        "software"
    )
    return (
        f"What to do on this device instead: compute in {low}; to see what the gated format would do "
        f"to the numbers, {emulate} (no speed-up: it only shows the rounding)."
    )


def _macos_gate(reading: ErrorReading, columns: list[str]) -> str:
    device = reading.device
    mac = f"macOS {device.macos}" if device.macos else "a macOS release the text does not give"
    dtypes = list(reading.dtype_names) or columns
    dtype = next((c for c in dtypes if c in _MACOS_NEEDED), dtypes[0] if dtypes else None)
    need = device.required_macos or _MACOS_NEEDED.get(dtype or "")
    needs = (
        f"the text says {dtype or 'this'} needs macOS {need}"
        if device.required_macos
        else f"PyTorch's MPS backend runs {dtype} only from macOS {need}"
        if need
        else f"the MPS backend does not run {dtype or 'this format'} on every macOS release"
    )
    return (
        f"The device is an Apple GPU (MPS), named with {mac}: {needs}. What to do on this Mac instead: "
        "compute in float32 (MPS's default dtype), run this op on the CPU, or emulate a "
        "low-precision format's rounding with explorer's emulated backend (backends=['emulated'])."
    )
