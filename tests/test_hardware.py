"""CPU feature parsing on recorded flag lists of several CPUs (tests/data/cpuinfo/README.md says
where each came from), oneDNN's verbose output as PyTorch printed it here, the GPU tensor core
table against the sentences of its sources, and the hardware verb's JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from explorer.analysis.cpu_features import (
    FLAGS_LOOKED_FOR,
    feature_notes,
    parse_cpuinfo,
    parse_onednn_verbose,
)
from explorer.analysis.gpu_tensor_cores import FORMAT_COLUMNS, TENSOR_CORE_TABLE, tensor_core_row

DATA = Path(__file__).parent / "data"
CPUINFO = DATA / "cpuinfo"


def listed_flags(text: str) -> set[str]:
    """The test's own reading: the words after the first 'flags', 'Flags' or 'Features' colon."""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            return set(value.split())
    return set()


#: what each recorded CPU has, read off its file (see the README there)
EXPECTED = {
    "amd_epyc_family25_model17.cpuinfo": (
        "x86",
        {"avx2", "avx512f", "avx512_bf16"},
        {"avx512_fp16", "amx_tile", "amx_bf16", "amx_fp16", "sve"},
    ),
    "intel_xeon_platinum_8573c.lscpu": (
        "x86",
        {"avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8"},
        {"amx_fp16", "sve", "bf16"},
    ),
    "intel_xeon_e5_2680v3_haswell.cpuinfo": (
        "x86",
        {"avx2", "fma", "f16c"},
        {"avx512f", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16"},
    ),
    "arm_neoverse_v1.cpuinfo": (
        "arm",
        {"asimd", "fphp", "asimdhp", "asimdfhm", "sve", "svebf16", "bf16", "i8mm"},
        {"sve2", "sme", "avx2", "avx512_bf16"},
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_cpus(name: str) -> None:
    text = (CPUINFO / name).read_text()
    architecture, has, lacks = EXPECTED[name]
    features = parse_cpuinfo(text)
    assert features.architecture == architecture
    assert set(features.flags) == set(FLAGS_LOOKED_FOR)
    assert {f for f in has | lacks if features.flags[f]} == has
    listed = listed_flags(text)
    assert features.flags == {f: f in listed for f in FLAGS_LOOKED_FOR}


def test_notes_follow_the_flags() -> None:
    haswell = feature_notes(parse_cpuinfo((CPUINFO / "intel_xeon_e5_2680v3_haswell.cpuinfo").read_text()))
    assert any(n.startswith("No avx512_bf16 and no amx_bf16") for n in haswell)
    assert any(n.startswith("No avx512f") for n in haswell)
    xeon = feature_notes(parse_cpuinfo((CPUINFO / "intel_xeon_platinum_8573c.lscpu").read_text()))
    assert any(n.startswith("amx_bf16:") for n in xeon) and any(n.startswith("avx512_fp16:") for n in xeon)
    assert not any(n.startswith("No avx512_bf16") for n in xeon)
    arm = feature_notes(parse_cpuinfo((CPUINFO / "arm_neoverse_v1.cpuinfo").read_text()))
    assert any(n.startswith("bf16:") for n in arm) and any(n.startswith("asimdhp:") for n in arm)
    assert feature_notes(parse_cpuinfo("processor : 0")) == [
        "No CPU flag list was found (not Linux, or /proc/cpuinfo unreadable)."
    ]


def test_onednn_verbose_recorded_here() -> None:
    from explorer.queries.hardware import matmul_paths

    lines = (DATA / "onednn_verbose_torch_2.13_amd_epyc.txt").read_text().splitlines()
    report = parse_onednn_verbose("\n".join(lines))
    isa_lines = [line for line in lines if ",info,cpu,isa:" in line]
    assert report.isa == isa_lines[0].split("isa:", 1)[1]
    assert re.fullmatch(r"v\d+\.\d+\.\d+", report.version)
    exec_lines = [line for line in lines if ",primitive,exec," in line]
    assert len(report.primitives) == len(exec_lines) == 1
    assert report.primitives[0][1] in exec_lines[0] and report.primitives[0][2] == "bf16"
    assert matmul_paths(lines) == {"float32": [], "bfloat16": [report.primitives[0][1]], "float16": []}


def capability(row_cc: str) -> tuple[int, int]:
    major, minor = row_cc.split(".")
    return int(major), int(minor)


def test_tensor_core_table_against_its_sources() -> None:
    assert [r.compute_capability for r in TENSOR_CORE_TABLE] == [
        "7.0",
        "7.5",
        "8.0",
        "8.6",
        "8.9",
        "9.0",
        "10.0",
        "12.0",
    ]
    for row in TENSOR_CORE_TABLE:
        cc = capability(row.compute_capability)
        assert set(row.formats) == set(FORMAT_COLUMNS) and row.sources
        assert all(v in (True, False, None, "partial") for v in row.formats.values())
        # PTX ISA: mma .f16 from sm_70, .bf16/.tf32 from sm_80, .e4m3/.e5m2 from sm_89
        assert row.formats["float16"] is True
        assert row.formats["bfloat16"] is (cc >= (8, 0)) and row.formats["tf32"] is (cc >= (8, 0))
        assert row.formats["float8"] is (cc >= (8, 9))
        # Transformer Engine's matrix: MXFP8 and NVFP4 on 10.x; 12.0: MXFP8 no, NVFP4 partial
        assert row.formats["mxfp8"] is (cc[0] == 10)
        assert row.formats["nvfp4"] == ("partial" if cc == (12, 0) else cc[0] == 10)
    assert tensor_core_row((9, 0)) is tensor_core_row("9.0") and tensor_core_row("5.2") is None


def test_hardware_verb_names_every_flag(capsys: pytest.CaptureFixture[str]) -> None:
    from explorer.cli import main

    assert main(["hardware", "--json", "--no-libraries"]) == 0
    result = json.loads(capsys.readouterr().out)["result"]
    flags = result["cpu"]["flags"]
    assert list(flags) == list(FLAGS_LOOKED_FOR) and all(isinstance(v, bool) for v in flags.values())
    here = listed_flags(Path("/proc/cpuinfo").read_text()) if Path("/proc/cpuinfo").exists() else set()
    assert flags == {f: f in here for f in FLAGS_LOOKED_FOR}
    assert len(result["tensor_core_table"]) == len(TENSOR_CORE_TABLE)
