"""TensorFlow's kernel registry as read by explorer.analysis.registry, checked against the raw data."""

from __future__ import annotations

import pytest

from explorer.analysis.registry import COMPUTE_DEVICE_TYPES, Registry, get_registry, registry_device
from explorer.outcome import Status


@pytest.fixture(scope="module")
def reg() -> Registry:
    return get_registry()


def _raw_declared(reg: Registry, op: str, dtype: str, device: str) -> str:
    """Independent reading of the raw registry data: OpDef allowed list, then kernels (DEFAULT too)."""
    opdef = reg.data["ops"][op]
    attr = reg.op(op).data_attr
    allowed = opdef["attrs"][attr]["allowed"]
    if allowed is not None and dtype not in allowed:
        return "unsupported_dtype"
    for dev, constraint in reg.data["kernels"].get(op, []):
        if dev in (device, "DEFAULT") and (attr not in constraint or dtype in constraint[attr]):
            return "ok"
    return "no_kernel"


def test_registry_covers_all_ops_and_xla_device_types(reg: Registry) -> None:
    assert len(reg.ops) > 1000
    assert len(reg.ops_with_kernels()) > 1000
    for device in ("CPU", "GPU", "XLA_CPU_JIT", "XLA_GPU_JIT"):
        assert device in reg.device_types
    assert "DEFAULT" not in reg.device_types
    assert {"float16", "bfloat16", "float32"} <= set(reg.float_dtypes)


def test_full_declared_matrix_matches_raw_registry(reg: Registry) -> None:
    frame = reg.matrix()
    assert len(frame) == len(reg.ops) * len(reg.float_dtypes) * len(reg.device_types)
    assert set(frame["status"]) <= {"ok", "no_kernel", "unsupported_dtype"}
    sample = frame[frame["data_attr"].notna()].sample(400, random_state=0)
    for r in sample.itertuples(index=False):
        assert r.status == _raw_declared(reg, r.op, r.dtype, r.device_type), r


def test_seed_case_range_float16(reg: Registry) -> None:
    for device in COMPUTE_DEVICE_TYPES:
        assert reg.declared("Range", "float16", device).value == _raw_declared(
            reg, "Range", "float16", device
        )
    # the data attribute of Range is Tidx, the one typing its output
    assert reg.op("Range").data_attr == "Tidx"


def test_cholesky_float16_and_bfloat16(reg: Registry) -> None:
    allowed = reg.allowed_dtypes("Cholesky")
    assert allowed is not None
    cpu = reg.declared("Cholesky", "float16", "CPU")
    assert cpu.value == _raw_declared(reg, "Cholesky", "float16", "CPU")
    if cpu is Status.NO_KERNEL:
        assert "float16" in allowed
        assert "CPU" not in reg.kernel_devices("Cholesky", "float16")
    bf16 = reg.declared("Cholesky", "bfloat16", "CPU")
    assert (bf16 is Status.UNSUPPORTED_DTYPE) == ("bfloat16" not in allowed)
    if bf16 is Status.UNSUPPORTED_DTYPE:
        assert reg.kernel_devices("Cholesky", "bfloat16") == []


def test_data_attribute_rule(reg: Registry) -> None:
    # several type attributes: the one that can hold a float, output first, then inputs
    assert reg.op("Cast").data_attr == "DstT"
    assert reg.op("ArgMax").data_attr == "T"
    assert reg.op("RandomUniform").data_attr == "dtype"
    assert reg.op("MatMul").data_attr == "T"
    # an explicit attribute can be asked for
    assert reg.declared("Cast", "float16", "CPU", attr="SrcT") in (Status.OK, Status.NO_KERNEL)


def test_default_device_kernels_apply_everywhere(reg: Registry) -> None:
    with_default = [op for op, ks in reg.data["kernels"].items() if any(d == "DEFAULT" for d, _ in ks)]
    assert with_default
    op = with_default[0]
    for device in reg.device_types:
        assert reg.op(op).kernels.get(device)


def test_registry_device_and_bad_input(reg: Registry) -> None:
    assert registry_device("CPU", "xla") == "XLA_CPU_JIT"
    assert registry_device("gpu", "eager") == "GPU"
    with pytest.raises(ValueError, match="valid"):
        registry_device("TPU", "eager")
    with pytest.raises(ValueError, match="Cholesky"):
        reg.op("Choleski")
    with pytest.raises(ValueError, match="valid"):
        reg.declared("Exp", "float16", "QPU")
    with pytest.raises(ValueError):
        reg.declared("Exp", "float6_e2m3fn", "CPU")
    with pytest.raises(ValueError, match="valid"):
        get_registry(where="moon")

