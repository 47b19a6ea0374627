"""Which number formats NVIDIA's tensor cores take natively, per compute capability, each row
with the documents it was read from (:data:`TENSOR_CORE_TABLE`, :func:`tensor_core_row`).

A value is True or False when a cited document says so, ``"partial"`` where it says partial,
and None where none of the cited documents says (left open rather than guessed).  What the
documents describe differs: the PTX ISA says which ``mma`` instructions a target has (the
hardware); Transformer Engine's support matrix and TensorRT-RTX's say which formats those
libraries run on each compute capability (a library may lag the hardware).

>>> tensor_core_row("9.0").architecture, tensor_core_row("9.0").formats["float8"]
('Hopper', True)
>>> tensor_core_row("7.5").formats["bfloat16"]
False
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: the format columns, in order
FORMAT_COLUMNS: tuple[str, ...] = (
    "float16",
    "bfloat16",
    "tf32",
    "float8",
    "float6",
    "float4",
    "mxfp8",
    "nvfp4",
)

PTX_ISA = (
    "https://docs.nvidia.com/cuda/parallel-thread-execution/ (mma, Target ISA notes: .f16 from sm_70; "
    ".bf16 and .tf32 from sm_80; .e4m3/.e5m2 from sm_89)"
)
TE_MATRIX = (
    "https://nvidia.github.io/TransformerEngine/support_matrix.html (BF16 needs compute capability 8.0; "
    "FP8 per tensor 8.9; FP8 block scaling 9.0; MXFP8 and NVFP4 10.0/10.3; on 12.0 MXFP8 no, NVFP4 partial)"
)
TRT_RTX = (
    "https://docs.nvidia.com/deeplearning/tensorrt-rtx/latest/getting-started/support-matrix-1/1.0.html "
    "(7.5: FP16 yes, BF16/FP8/FP4 no; 8.6: FP8/FP4 no; 8.9: FP8 yes, FP4 no; 12.0: FP8 and FP4 GEMM yes)"
)


@dataclass(frozen=True)
class TensorCoreRow:
    """One compute capability."""

    #: "major.minor", e.g. "9.0"
    compute_capability: str
    architecture: str
    #: examples of GPUs with it
    examples: str
    #: each of :data:`FORMAT_COLUMNS`: True, False, "partial" or None (no cited source says)
    formats: dict[str, bool | str | None] = field(default_factory=dict)
    #: the documents the values were read from
    sources: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields."""
        return {
            "compute_capability": self.compute_capability,
            "architecture": self.architecture,
            "examples": self.examples,
            "formats": dict(self.formats),
            "sources": list(self.sources),
        }


def _row(cc: str, arch: str, examples: str, values: tuple[Any, ...], *sources: str) -> TensorCoreRow:
    return TensorCoreRow(cc, arch, examples, dict(zip(FORMAT_COLUMNS, values, strict=True)), sources)


#: float16, bfloat16, tf32, float8, float6, float4, mxfp8, nvfp4 per compute capability
TENSOR_CORE_TABLE: tuple[TensorCoreRow, ...] = (
    _row("7.0", "Volta", "V100", (True, False, False, False, None, None, False, False), PTX_ISA),
    _row(
        "7.5",
        "Turing",
        "T4, RTX 20 series",
        (True, False, False, False, None, False, False, False),
        PTX_ISA,
        TRT_RTX,
    ),
    _row("8.0", "Ampere", "A100", (True, True, True, False, None, None, False, False), PTX_ISA, TE_MATRIX),
    _row(
        "8.6",
        "Ampere",
        "A10, A40, RTX 30 series",
        (True, True, True, False, None, False, False, False),
        PTX_ISA,
        TE_MATRIX,
        TRT_RTX,
    ),
    _row(
        "8.9",
        "Ada Lovelace",
        "L4, L40S, RTX 40 series",
        (True, True, True, True, None, False, False, False),
        PTX_ISA,
        TE_MATRIX,
        TRT_RTX,
    ),
    _row(
        "9.0", "Hopper", "H100, H200", (True, True, True, True, None, None, False, False), PTX_ISA, TE_MATRIX
    ),
    _row(
        "10.0",
        "Blackwell (data center)",
        "B200",
        (True, True, True, True, None, True, True, True),
        PTX_ISA,
        TE_MATRIX,
    ),
    _row(
        "12.0",
        "Blackwell (workstation, consumer)",
        "RTX PRO 6000, RTX 50 series",
        (True, True, True, True, None, True, False, "partial"),
        PTX_ISA,
        TE_MATRIX,
        TRT_RTX,
    ),
)


def tensor_core_row(compute_capability: str | tuple[int, int]) -> TensorCoreRow | None:
    """The row of ``compute_capability`` (``"8.9"`` or ``(8, 9)``); None when the table has none.

    >>> tensor_core_row((8, 9)).formats["float8"], tensor_core_row("6.1") is None
    (True, True)
    """
    key = (
        ".".join(str(n) for n in compute_capability)
        if isinstance(compute_capability, tuple)
        else compute_capability
    )
    return next((row for row in TENSOR_CORE_TABLE if row.compute_capability == key.strip()), None)
