"""The structural reader (issue 34 item 1) and the hardware-gate words (item 2), against oracles
found apart from it: errors PyTorch and JAX raise here for dtypes the test chose, the tensor-core
table's own example GPUs, the dev corpus's evidence offsets, and NVIDIA's sm_XX numbering.
"""

from __future__ import annotations

import json
import traceback
from pathlib import Path

import pytest

from explorer.analysis.error_explanation import not_recognised
from explorer.analysis.error_text import parse_error, read_text
from explorer.analysis.error_text._device import read_device
from explorer.analysis.gpu_models import GPU_MODELS, find_gpu_models
from explorer.analysis.gpu_tensor_cores import TENSOR_CORE_TABLE, tensor_core_row
from explorer.analysis.reading_explanation import gate_sentence
from tests.support.require import require_module

DEV = Path(__file__).parent / "data" / "error_corpus" / "dev.jsonl"


def _raised(call) -> str:  # type: ignore[no-untyped-def]
    """The traceback ``call()`` prints, as a user would paste it."""
    try:
        call()
    except Exception:
        return traceback.format_exc()
    raise AssertionError("the call did not raise")


def test_torch_errors_raised_here_give_the_dtypes_the_test_passed() -> None:
    """Each text is what PyTorch prints for operands of the two dtypes the test chose; the reader
    must give exactly those two dtypes, framework torch, and the role of each where it says it."""
    require_module("torch")
    import torch

    pairs = [(torch.float16, torch.float32), (torch.bfloat16, torch.float64)]
    for a, b in pairs:
        x = torch.ones(2, 2, dtype=a)
        y = torch.ones(2, 2, dtype=b)
        reading = read_text(_raised(lambda x=x, y=y: torch.mm(x, y)))
        assert reading.framework == "torch"
        assert set(reading.dtype_names) == {str(a).removeprefix("torch."), str(b).removeprefix("torch.")}
        assert reading.kind == "dtype_mismatch"
    conv = _raised(
        lambda: torch.nn.functional.conv2d(
            torch.ones(1, 1, 3, 5, dtype=torch.bfloat16), torch.ones(1, 1, 2, 2), torch.ones(1)
        )
    )
    reading = read_text(conv)
    roles = {d.name: d.role for d in reading.dtypes}
    assert roles == {"bfloat16": "input", "float32": "bias"}
    assert reading.op.name == "conv2d"  # the traceback's own line calls torch.nn.functional.conv2d
    promo = _raised(lambda: torch.ones(2, dtype=torch.float8_e4m3fn) + torch.ones(2, dtype=torch.bool))
    assert set(read_text(promo).dtype_names) == {"float8_e4m3fn", "bool"}


def test_jax_error_raised_here_names_framework_op_and_dtypes() -> None:
    require_module("jax")
    import jax.numpy as jnp
    from jax import lax

    text = _raised(lambda: lax.add(jnp.ones(2, jnp.float16), jnp.ones(2, jnp.float32)))
    reading = read_text(text)
    assert (reading.framework, reading.op.name) == ("jax", "add")
    assert set(reading.dtype_names) == {"float16", "float32"}


def test_every_example_gpu_of_the_tensor_core_table_maps_to_its_row() -> None:
    """The tensor-core table lists example GPUs per compute capability (written from its own
    sources); the model table must map each of them to that compute capability."""
    checked = 0
    for row in TENSOR_CORE_TABLE:
        for example in row.examples.split(", "):
            found = find_gpu_models(f"my GPU is an NVIDIA {example.replace(' series', '80')}")
            assert found, example
            assert found[-1][0].compute_capability == row.compute_capability, (example, found)
            checked += 1
    assert checked >= 12
    assert all(m.source.startswith("https://") for m in GPU_MODELS)


@pytest.mark.parametrize("sm", [70, 75, 80, 86, 89, 90, 100, 120])
def test_sm_numbers_give_the_compute_capability_and_requirements_stay_apart(sm: int) -> None:
    major, minor = divmod(sm, 10)
    own = read_device(f"RuntimeError: CUDA error: no kernel image is available for execution (sm_{sm})")
    assert (own.type, own.compute_capability) == ("cuda", f"{major}.{minor}")
    needed = read_device(f"this kernel requires compute capability >= {major}.{minor}")
    assert (needed.compute_capability, needed.required_compute_capability) == (None, f"{major}.{minor}")


def test_evidence_spans_point_at_what_they_name_on_every_dev_text() -> None:
    for line in DEV.read_text(encoding="utf-8").splitlines():
        text = json.loads(line)["text"]
        reading = read_text(text)
        for d in reading.dtypes:
            assert d.start < 0 or text[d.start : d.end] == d.text
        for start, end, said in [*reading.evidence.values(), *reading.device.evidence.values()]:
            assert text[start:end] == said
        if reading.op.raw and reading.op.start >= 0:
            assert text[reading.op.start : reading.op.end] == reading.op.raw


def test_parsed_error_carries_the_reading_and_old_fields_stay() -> None:
    parsed = parse_error("RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'")
    assert parsed is not None and parsed.op == "matmul" and parsed.dtype == "float16"
    assert parsed.reading is not None and parsed.reading.device.type == "cpu"
    assert parsed.to_dict()["reading"]["kind"] == "missing_kernel"


def test_gate_sentence_says_device_support_need_and_instead_from_the_table() -> None:
    text = "AssertionError: Device compute capability 8.9 or higher required for FP8 execution (RTX 3060)"
    said = gate_sentence(read_text(text))
    assert said is not None
    row = tensor_core_row("8.6")
    assert row is not None and row.formats["float8"] is False and row.formats["bfloat16"] is True
    first_fp8 = next(r for r in TENSOR_CORE_TABLE if r.formats["float8"] is True)
    assert "compute capability 8.6 (Ampere)" in said and "not float8" in said
    assert f"needs compute capability {first_fp8.compute_capability}" in said
    assert "compute in bfloat16" in said and "emulated backend" in said
    turing = gate_sentence(read_text(text.replace("RTX 3060", "Tesla T4")))
    assert turing is not None and "compute in float16" in turing  # Turing has no bfloat16 tensor cores


def test_unrecognised_text_still_says_what_it_names() -> None:
    result = not_recognised(reading=read_text("TypeError: Cannot convert a MPS Tensor to float64 dtype"))
    assert (result["framework"], result["dtype"], result["device"]) == ("torch", "float64", "mps")
    assert "Read from the text: PyTorch" in result["explanation"]
    assert read_text("all good, thanks").empty


def test_a_long_paste_is_read_from_its_end_with_offsets_in_the_whole_text() -> None:
    message = "RuntimeError: Input type (c10::Half) and bias type (float) should be the same (sm_86)"
    text = "log line\n" * 20_000 + message
    reading = read_text(text)
    assert set(reading.dtype_names) == {"float16", "float32"}
    assert all(text[d.start : d.end] == d.text for d in reading.dtypes)
    assert reading.device.compute_capability == "8.6"
    start, end, said = reading.device.evidence["compute_capability"]
    assert text[start:end] == said == "sm_86"


def test_every_named_row_of_the_model_table_is_found_by_its_own_name() -> None:
    """Each row written as a model name (not a series rule) is found in a sentence, as itself or a
    row of the same compute capability (``RTX 4090`` may be read by the RTX 40 series rule)."""
    for model in GPU_MODELS:
        if "(" in model.name or "series" in model.name or "generation" in model.name:
            continue  # a series rule, not a name
        found = find_gpu_models(f"Found GPU0 {model.name} (device 0)")
        assert found, model.name
        assert (found[0][0].compute_capability, found[0][0].gfx) == (model.compute_capability, model.gfx)


def test_macos_the_device_runs_is_told_apart_from_the_macos_needed() -> None:
    reading = read_text(
        "RuntimeError: MPS BFloat16 is only supported on MacOS 14 or newer (I am on macOS 13.6)"
    )
    assert (reading.device.type, reading.device.macos, reading.device.required_macos) == ("mps", "13.6", "14")
    said = gate_sentence(reading)
    assert said is not None and "macOS 13.6" in said and "needs macOS 14" in said
    added = read_text(
        "RuntimeError: MPS does not support cumsum op with int64 input. Support has been added in macOS 13.3"
    )
    assert (added.device.macos, added.device.required_macos, added.op.name) == (None, "13.3", "cumsum")


def test_devices_a_text_rules_out_do_not_count() -> None:
    """A device the text says is absent ("without TPU", collect_env's "Is CUDA available: False")
    is not the device; the CPU flag list of collect_env is not the ISA the error names."""
    ruled_out = read_device("tried the model with GPU (without TPU): no OpKernel for bfloat16")
    assert ruled_out.type == "cuda"
    env = "Is CUDA available: False\nCUDA used to build PyTorch: None\nFlags: fpu avx2 avx512_bf16 amx_bf16\n"
    reading = read_text("RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'\n" + env)
    assert (reading.device.type, reading.device.isa) == ("cpu", ())
