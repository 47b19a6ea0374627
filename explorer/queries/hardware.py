"""What this machine has for low-precision arithmetic (:func:`hardware`): the CPU's flags (every
flag looked for, true or false) and what they mean, PyTorch's CPU capability, oneDNN's ISA and
the oneDNN implementation PyTorch's matmul ran per dtype (from oneDNN's own verbose output), and
the NVIDIA GPUs with their tensor cores' formats (:mod:`explorer.analysis.gpu_tensor_cores`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from explorer.analysis.cpu_features import CpuFeatures, feature_notes, parse_cpuinfo, parse_onednn_verbose
from explorer.analysis.gpu_tensor_cores import TENSOR_CORE_TABLE, tensor_core_row
from explorer.runtime.hardware import library_probe, nvidia_smi, read_cpuinfo


@dataclass
class HardwareReport:
    """The answer of :func:`hardware`."""

    cpu: CpuFeatures
    #: what the CPU flags say, one sentence each (:func:`~explorer.analysis.cpu_features.feature_notes`)
    notes: list[str] = field(default_factory=list)
    #: ``torch.backends.cpu.get_cpu_capability()`` ("" when PyTorch could not be asked)
    torch_cpu_capability: str = ""
    #: oneDNN's version, ISA and primitives (:class:`~explorer.analysis.cpu_features.OnednnReport`)
    onednn: dict[str, Any] = field(default_factory=dict)
    #: per dtype, what PyTorch's 64x64 CPU matmul ran: the oneDNN implementations it printed
    matmul_paths: dict[str, list[str]] = field(default_factory=dict)
    #: sentences from the libraries' own output
    library_notes: list[str] = field(default_factory=list)
    #: GPUs: name, compute capability, where they were read, and their tensor core row
    gpus: list[dict[str, Any]] = field(default_factory=list)
    #: why a library could not be asked ("" when it could)
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields (``cpu.flags``: every flag looked for, true or false)."""
        return {
            "cpu": self.cpu.to_dict(),
            "notes": list(self.notes),
            "torch_cpu_capability": self.torch_cpu_capability,
            "onednn": self.onednn,
            "matmul_paths": self.matmul_paths,
            "library_notes": list(self.library_notes),
            "gpus": self.gpus,
            "tensor_core_table": [row.to_dict() for row in TENSOR_CORE_TABLE],
            "error": self.error,
        }


def matmul_paths(lines: list[str]) -> dict[str, list[str]]:
    """oneDNN implementations per dtype, from the probe's lines (a ``PX_STEP matmul DTYPE`` line,
    then the oneDNN lines printed while that matmul ran).

    >>> line = "onednn_verbose,v1,primitive,exec,cpu,matmul,brg_matmul:avx512_core_bf16,undef,src:bf16::a,,,1"
    >>> matmul_paths(["PX_STEP matmul float16", "PX_STEP matmul bfloat16", line])
    {'float16': [], 'bfloat16': ['brg_matmul:avx512_core_bf16']}
    """
    paths: dict[str, list[str]] = {}
    step = ""
    chunk: list[str] = []
    for line in [*lines, "PX_STEP end"]:
        if line.startswith("PX_STEP "):
            if step:
                paths[step] = [impl for _, impl, _ in parse_onednn_verbose("\n".join(chunk)).primitives]
            words = line.split()
            step = words[2] if len(words) >= 3 else ""
            chunk = []
        else:
            chunk.append(line)
    return paths


def library_sentences(paths: dict[str, list[str]], capability: str, isa: str) -> list[str]:
    """What the libraries' own output says, in words.

    >>> library_sentences({"float16": [], "bfloat16": ["brg_matmul:avx512_core_bf16"]}, "AVX512", "")[1:]
    ["PyTorch's float16 matmul (64x64, CPU) ran no oneDNN primitive.", \
"PyTorch's bfloat16 matmul (64x64, CPU) ran oneDNN's brg_matmul:avx512_core_bf16."]
    """
    out = []
    if capability:
        out.append(f"PyTorch reports CPU capability {capability} (torch.backends.cpu.get_cpu_capability()).")
    if isa:
        out.append(f"oneDNN reports the ISA it uses: {isa}.")
    for dtype, implementations in paths.items():
        if implementations:
            out.append(f"PyTorch's {dtype} matmul (64x64, CPU) ran oneDNN's {', '.join(implementations)}.")
        else:
            out.append(f"PyTorch's {dtype} matmul (64x64, CPU) ran no oneDNN primitive.")
    return out


def hardware(probe_libraries: bool = True) -> HardwareReport:
    """The CPU's features here, and (``probe_libraries``) what PyTorch, oneDNN and the GPUs report."""
    cpu = parse_cpuinfo(read_cpuinfo())
    report = HardwareReport(cpu=cpu, notes=feature_notes(cpu))
    gpus: list[dict[str, Any]] = [{**gpu, "read_by": "nvidia-smi"} for gpu in nvidia_smi()]
    if probe_libraries:
        probe = library_probe()
        lines = probe.get("onednn_lines", [])
        onednn = parse_onednn_verbose("\n".join(lines))
        report.torch_cpu_capability = str(probe.get("torch_cpu_capability", ""))
        report.onednn = onednn.to_dict()
        report.matmul_paths = matmul_paths(lines)
        report.library_notes = library_sentences(report.matmul_paths, report.torch_cpu_capability, onednn.isa)
        report.error = str(probe.get("error") or probe.get("torch_error") or "")
        if not gpus:
            gpus = [
                {
                    "name": d["name"],
                    "compute_capability": ".".join(str(n) for n in d["capability"]),
                    "read_by": "torch",
                }
                for d in probe.get("cuda_devices", [])
            ]
    for gpu in gpus:
        row = tensor_core_row(gpu["compute_capability"])
        gpu["tensor_cores"] = None if row is None else row.to_dict()
    report.gpus = gpus
    return report


def feature_rows(features: CpuFeatures) -> list[dict[str, str]]:
    """One row per flag looked for on the CPU's architecture: the flag, present or not, and what
    it stands for (the Environment tab's table).

    >>> feature_rows(parse_cpuinfo("flags : avx2"))[0]
    {'flag': 'avx2', 'present': 'yes', 'meaning': 'AVX2: 256-bit integer and float SIMD'}
    """
    from explorer.analysis.cpu_features import ARM_FLAGS, X86_FLAGS

    meanings = ARM_FLAGS if features.architecture == "arm" else X86_FLAGS
    return [
        {"flag": flag, "present": "yes" if features.flags[flag] else "no", "meaning": meaning}
        for flag, meaning in meanings.items()
    ]
