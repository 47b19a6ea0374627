"""The CPU's features that decide how low-precision arithmetic runs, read from the kernel's list
of CPU flags (``/proc/cpuinfo``: ``flags`` on x86, ``Features`` on ARM; ``lscpu``'s ``Flags:``
line is the same list) by :func:`parse_cpuinfo`, and what each one present or absent means
(:func:`feature_notes`): only what the flag itself stands for.

Pure: the text is read elsewhere (:mod:`explorer.runtime.hardware`).

>>> f = parse_cpuinfo("model name : Example\\nflags : fpu sse2 avx2 avx512f avx512_bf16\\n")
>>> f.flags["avx512_bf16"], f.flags["amx_bf16"], f.architecture
(True, False, 'x86')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

#: the x86 flags looked for, with what each one is (Linux's names, arch/x86/include/asm/cpufeatures.h)
X86_FLAGS: dict[str, str] = {
    "avx2": "AVX2: 256-bit integer and float SIMD",
    "fma": "FMA3: fused multiply-add on 256-bit vectors",
    "f16c": "F16C: conversion between float16 and float32 (no float16 arithmetic)",
    "avx512f": "AVX-512 Foundation: 512-bit SIMD",
    "avx512bw": "AVX-512 byte and word instructions",
    "avx512_vnni": "AVX-512 VNNI: int8/int16 dot products",
    "avx512_bf16": "AVX512_BF16: bfloat16 dot products into float32 (VDPBF16PS), conversion to bfloat16",
    "avx512_fp16": "AVX512_FP16: float16 arithmetic in 512-bit vectors",
    "avx_vnni": "AVX-VNNI: int8 dot products in 256-bit vectors",
    "amx_tile": "AMX: tile registers for matrix multiplication",
    "amx_bf16": "AMX-BF16: bfloat16 tile matrix multiplication into float32",
    "amx_int8": "AMX-INT8: int8 tile matrix multiplication",
    "amx_fp16": "AMX-FP16: float16 tile matrix multiplication into float32",
}
#: the ARM (aarch64) flags looked for (Linux's hwcap names, Documentation/arch/arm64/elf_hwcaps.rst)
ARM_FLAGS: dict[str, str] = {
    "asimd": "Advanced SIMD (NEON)",
    "fphp": "float16 scalar arithmetic",
    "asimdhp": "float16 arithmetic in Advanced SIMD vectors",
    "asimdfhm": "float16 multiply-add into float32 (FMLAL)",
    "bf16": "bfloat16 dot products and matrix multiply-accumulate into float32 (BFDOT, BFMMLA)",
    "i8mm": "int8 matrix multiply-accumulate",
    "sve": "Scalable Vector Extension",
    "sve2": "Scalable Vector Extension 2",
    "svebf16": "SVE bfloat16 instructions",
    "svei8mm": "SVE int8 matrix multiply",
    "sme": "Scalable Matrix Extension",
}
#: every flag looked for, x86's then ARM's
FLAGS_LOOKED_FOR: tuple[str, ...] = (*X86_FLAGS, *ARM_FLAGS)

_KEY_VALUE = re.compile(r"^\s*([^:]+?)\s*:\s*(.*)$")


@dataclass(frozen=True)
class CpuFeatures:
    """The flags of the first CPU listed, as true/false for every flag looked for."""

    #: "x86", "arm" or "unknown" (from which flag line the text has)
    architecture: str
    #: the model name line (x86), or "" when the text has none
    model: str
    #: every flag of :data:`FLAGS_LOOKED_FOR`: present or not
    flags: dict[str, bool] = field(default_factory=dict)
    #: every flag the CPU lists, in its order
    all_flags: tuple[str, ...] = ()

    def present(self) -> list[str]:
        """The flags looked for that the CPU has, in :data:`FLAGS_LOOKED_FOR` order."""
        return [name for name, has in self.flags.items() if has]

    def to_dict(self) -> dict[str, Any]:
        """Architecture, model and every flag looked for with true/false."""
        return {"architecture": self.architecture, "model": self.model, "flags": dict(self.flags)}


def parse_cpuinfo(text: str) -> CpuFeatures:
    """The features of the first processor in ``/proc/cpuinfo`` (or ``lscpu``) text.

    x86 lists its flags under ``flags``, aarch64 under ``Features``, lscpu under ``Flags``.

    >>> parse_cpuinfo("Features\\t: fp asimd asimdhp sve bf16\\nCPU implementer\\t: 0x41\\n").present()
    ['asimd', 'asimdhp', 'bf16', 'sve']
    >>> parse_cpuinfo("").architecture
    'unknown'
    """
    if not isinstance(text, str):
        raise TypeError(f"cpuinfo text must be a string, got {type(text).__name__}")
    model = ""
    listed: list[str] | None = None
    key_seen = ""
    for line in text.splitlines():
        match = _KEY_VALUE.match(line)
        if match is None:
            continue
        key, value = match.group(1).strip().lower(), match.group(2)
        if key in ("model name", "cpu model") and not model:
            model = value.strip()
        if key in ("flags", "features") and listed is None:
            listed = value.split()
            key_seen = key
    words = tuple(listed or ())
    if not words:
        architecture = "unknown"
    elif key_seen == "features" or "asimd" in words:
        architecture = "arm"
    else:
        architecture = "x86"
    present = set(words)
    return CpuFeatures(
        architecture=architecture,
        model=model,
        flags={name: name in present for name in FLAGS_LOOKED_FOR},
        all_flags=words,
    )


def feature_notes(features: CpuFeatures) -> list[str]:
    """What the flags say about float16 and bfloat16 arithmetic on this CPU, one sentence each:
    only what the instructions the flags stand for do (which kernels a library picks is the
    library's to say: its own output, see :mod:`explorer.runtime.hardware`).

    >>> feature_notes(parse_cpuinfo("flags : avx2 f16c"))[:2]  # doctest: +NORMALIZE_WHITESPACE
    ['No avx512_bf16 and no amx_bf16: the CPU has no instruction that multiplies bfloat16 values;
    bfloat16 values are converted to float32 for arithmetic.',
     'No avx512_fp16 and no amx_fp16: the CPU has no instruction that multiplies float16 values;
     F16C converts float16 to and from float32, so float16 values are converted for arithmetic.']
    """
    f = features.flags
    notes: list[str] = []
    if features.architecture == "x86":
        if f["amx_bf16"]:
            notes.append("amx_bf16: bfloat16 matrix multiplication in AMX tiles, accumulating in float32.")
        if f["avx512_bf16"]:
            notes.append("avx512_bf16: bfloat16 dot products into float32 in 512-bit vectors (VDPBF16PS).")
        if not f["avx512_bf16"] and not f["amx_bf16"]:
            notes.append(
                "No avx512_bf16 and no amx_bf16: the CPU has no instruction that multiplies bfloat16 "
                "values; bfloat16 values are converted to float32 for arithmetic."
            )
        if f["amx_fp16"]:
            notes.append("amx_fp16: float16 matrix multiplication in AMX tiles, accumulating in float32.")
        if f["avx512_fp16"]:
            notes.append("avx512_fp16: float16 arithmetic in 512-bit vectors.")
        if not f["avx512_fp16"] and not f["amx_fp16"]:
            how = "F16C converts float16 to and from float32" if f["f16c"] else "no F16C conversion either"
            notes.append(
                "No avx512_fp16 and no amx_fp16: the CPU has no instruction that multiplies float16 "
                f"values; {how}, so float16 values are converted for arithmetic."
            )
        if not f["avx512f"]:
            notes.append("No avx512f: vectors are at most 256 bits wide (AVX2).")
    elif features.architecture == "arm":
        if f["asimdhp"]:
            notes.append("asimdhp: float16 arithmetic in Advanced SIMD vectors.")
        else:
            notes.append("No asimdhp: no float16 arithmetic in Advanced SIMD vectors.")
        if f["bf16"]:
            notes.append("bf16: bfloat16 dot products and matrix multiply-accumulate into float32.")
        else:
            notes.append(
                "No bf16: no bfloat16 arithmetic instructions; bfloat16 is converted for arithmetic."
            )
        if f["sve"]:
            notes.append("sve: scalable vectors" + (" (and SVE2)." if f["sve2"] else "."))
    else:
        notes.append("No CPU flag list was found (not Linux, or /proc/cpuinfo unreadable).")
    return notes


@dataclass(frozen=True)
class OnednnReport:
    """What oneDNN printed with ``ONEDNN_VERBOSE=1``: its version, the ISA it dispatches to, and
    each primitive it ran (kind, implementation, source dtype)."""

    version: str = ""
    isa: str = ""
    #: (primitive kind, implementation, source data type): ("matmul", "brg_matmul:avx512_core_bf16", "bf16")
    primitives: tuple[tuple[str, str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields."""
        return {
            "version": self.version,
            "isa": self.isa,
            "primitives": [
                {"kind": k, "implementation": i, "source_dtype": d} for k, i, d in self.primitives
            ],
        }


def parse_onednn_verbose(text: str) -> OnednnReport:
    """oneDNN's verbose lines (``onednn_verbose,...``, or ``dnnl_verbose,...`` of older releases).

    >>> r = parse_onednn_verbose(
    ...     "onednn_verbose,v1,info,oneDNN v3.1.0 (commit x)\\n"
    ...     "onednn_verbose,v1,info,cpu,isa:Intel AVX-512 with Intel DL Boost and bfloat16 support\\n"
    ...     "onednn_verbose,v1,primitive,exec,cpu,matmul,brg_matmul:avx512_core_bf16,undef,"
    ...     "src:bf16::blocked:ab::f0 wei:bf16::blocked:ab::f0,,,64x64:64x64,6.3\\n")
    >>> r.version, r.isa
    ('v3.1.0', 'Intel AVX-512 with Intel DL Boost and bfloat16 support')
    >>> r.primitives
    (('matmul', 'brg_matmul:avx512_core_bf16', 'bf16'),)
    """
    version, isa = "", ""
    primitives: list[tuple[str, str, str]] = []
    for line in text.splitlines():
        if not line.startswith(("onednn_verbose,", "dnnl_verbose,")):
            continue
        fields = line.strip().split(",")
        rest = (
            fields[2:]
            if len(fields) > 1 and fields[1].startswith("v") and fields[1][1:].isdigit()
            else fields[1:]
        )
        if rest[:1] == ["info"]:
            joined = ",".join(rest[1:])
            version_match = re.search(r"oneDNN (v[\d.]+)", joined)
            if version_match and not version:
                version = version_match.group(1)
            if joined.startswith("cpu,isa:") and not isa:
                isa = joined.removeprefix("cpu,isa:")
            continue
        if rest[:2] == ["primitive", "exec"]:
            rest = rest[2:]
        elif rest[:1] == ["exec"]:
            rest = rest[1:]
        else:
            continue
        if len(rest) < 5:
            continue
        kind, implementation = rest[1], rest[2]
        source = re.search(r"src(?:_f32)?:(\w+)", ",".join(rest[4:]))
        primitives.append((kind, implementation, source.group(1) if source else ""))
    return OnednnReport(version, isa, tuple(dict.fromkeys(primitives)))
