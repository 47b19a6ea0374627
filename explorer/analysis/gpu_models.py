"""GPU model names as users write them (``NVIDIA GeForce RTX 3090``, ``Tesla T4``, ``H100``) mapped
to their compute capability, each row with the page it was read from (:data:`GPU_MODELS`,
:func:`find_gpu_models`).

The compute capabilities are NVIDIA's, from its CUDA GPUs page (:data:`CUDA_GPUS`), which lists
every CUDA GPU with its compute capability; AMD's Instinct and Radeon names are mapped to their
LLVM target (``gfx942``) from the LLVM AMDGPU processor table (:data:`LLVM_AMDGPU`), not to a
compute capability (a ROCm device has none).

>>> [(m.name, m.compute_capability) for m, _ in find_gpu_models("NVIDIA GeForce RTX 3090 Ti, Tesla T4")]
[('RTX 3090 Ti', '8.6'), ('T4', '7.5')]
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: NVIDIA's list of CUDA GPUs and their compute capabilities
CUDA_GPUS = "https://developer.nvidia.com/cuda-gpus"
#: NVIDIA's legacy list (the older GeForce, Quadro and Tesla boards)
CUDA_LEGACY_GPUS = "https://developer.nvidia.com/cuda-legacy-gpus"
#: the LLVM AMDGPU processor table (gfx target per AMD GPU)
LLVM_AMDGPU = "https://llvm.org/docs/AMDGPUUsage.html#processors"


@dataclass(frozen=True)
class GpuModel:
    """One GPU model: how it is written, its compute capability (NVIDIA) or LLVM target (AMD)."""

    #: the model as NVIDIA or AMD write it (``RTX 3090``)
    name: str
    #: ``cuda`` or ``rocm``
    vendor_api: str
    #: "major.minor" for an NVIDIA GPU, None for AMD
    compute_capability: str | None
    #: the LLVM target of an AMD GPU (``gfx942``), None for NVIDIA
    gfx: str | None
    #: the page the value was read from
    source: str
    #: the regular expression that finds the name in a text
    pattern: str

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields."""
        return {
            "name": self.name,
            "vendor_api": self.vendor_api,
            "compute_capability": self.compute_capability,
            "gfx": self.gfx,
            "source": self.source,
        }


def _nv(cc: str, source: str, *names: str) -> list[GpuModel]:
    rows = []
    for name in names:
        words = [re.escape(w) for w in name.split()]
        # "RTX 3090" matches "RTX3090", "RTX 3090"; a Ti/SUPER suffix is part of the name only when listed
        body = r"[\s-]?".join(words)
        rows.append(GpuModel(name, "cuda", cc, None, source, rf"(?<![\w.]){body}(?!\w)(?!\.\d)"))
    return rows


def _family(cc: str, name: str, pattern: str) -> GpuModel:
    return GpuModel(name, "cuda", cc, None, CUDA_GPUS, rf"(?<![\w.]){pattern}(?!\w)(?!\.\d)")


#: where a bare board number names a GPU: right after "my", "on", "GPU:", "a", "an", "single", "with"
_BARE = r"(?:(?<=my )|(?<=on )|(?<=GPU: )|(?<=GPU )|(?<=GPU:)|(?<=\ba )|(?<=an )|(?<=single )|(?<=with ))"


def _families() -> list[GpuModel]:
    """Whole series by NVIDIA's numbering, for the boards the rows above do not list: every board of
    a series shares its architecture (RTX 40xx and RTX xxxx Ada are Ada, 8.9; GTX 16xx is Turing)."""
    return [
        _family("12.0", "RTX PRO (Blackwell)", r"RTX[\s-]?PRO[\s-]?\d{4}"),
        _family("8.9", "RTX Ada generation", r"RTX[\s-]?\d{4}[\s-]?Ada"),
        _family("8.6", "RTX A series", r"RTX[\s-]?A\d{3,4}"),
        _family("12.0", "GeForce RTX 50 series", r"RTX[\s-]?50[5-9]0(?:[\s-]?Ti|D)?"),
        _family("8.9", "GeForce RTX 40 series", r"RTX[\s-]?40[5-9]0(?:[\s-]?Ti|D)?"),
        _family("8.6", "GeForce RTX 30 series", r"RTX[\s-]?30[5-9]0(?:[\s-]?Ti|D)?"),
        _family("7.5", "GeForce RTX 20 series", r"RTX[\s-]?20[5-8]0(?:[\s-]?Ti|D)?"),
        _family("7.5", "GeForce GTX 16 series", r"GTX[\s-]?16[5-6]0(?:[\s-]?Ti|D)?"),
        _family("6.1", "GeForce GTX 10 series", r"(?:GTX[\s-]?10[5-8]0(?:[\s-]?Ti)?|10[5-8]0[\s-]?Ti)"),
        # the bare number of a GeForce RTX board: with its Ti suffix, or where a GPU is being named
        # ("on my 3090", "GPU: 4090"); elsewhere a four-digit number is a line, a port, a year
        _family("12.0", "GeForce RTX 50 series", _BARE + r"50[5-9]0(?:[\s-]?Ti)?|50[5-9]0[\s-]?Ti"),
        _family("8.9", "GeForce RTX 40 series", _BARE + r"40[5-9]0(?:[\s-]?Ti)?|40[5-9]0[\s-]?Ti"),
        _family("8.6", "GeForce RTX 30 series", _BARE + r"30[5-9]0(?:[\s-]?Ti)?|30[5-9]0[\s-]?Ti"),
        _family("7.5", "GeForce RTX 20 series", _BARE + r"20[5-8]0(?:[\s-]?Ti)?|20[5-8]0[\s-]?Ti"),
        _family("5.2", "GeForce GTX 900 series", r"GTX[\s-]?9[5-8]0(?:[\s-]?Ti|D)?"),
    ]


def _amd(gfx: str, *names: str) -> list[GpuModel]:
    return [
        GpuModel(
            name,
            "rocm",
            None,
            gfx,
            LLVM_AMDGPU,
            r"(?<![\w.])" + r"[\s-]?".join(map(re.escape, name.split())) + r"X?(?!\d)",
        )
        for name in names
    ]


#: the GPU models, most specific spelling first (``RTX 6000 Ada`` before ``RTX 6000``)
GPU_MODELS: tuple[GpuModel, ...] = (
    *_nv("12.0", CUDA_GPUS, "RTX PRO 6000", "RTX PRO 5000", "RTX PRO 4500", "RTX PRO 4000"),
    *_nv("8.9", CUDA_GPUS, "RTX 6000 Ada", "RTX 5000 Ada", "RTX 4500 Ada", "RTX 4000 Ada", "RTX 2000 Ada"),
    *_nv("12.0", CUDA_GPUS, "RTX 5090", "RTX 5080", "RTX 5070 Ti", "RTX 5070", "RTX 5060 Ti", "RTX 5060"),
    *_nv("12.1", CUDA_GPUS, "GB10", "DGX Spark"),
    *_nv("10.3", CUDA_GPUS, "GB300", "B300"),
    *_nv("10.0", CUDA_GPUS, "GB200", "B200", "B100"),
    *_nv("9.0", CUDA_GPUS, "GH200", "H200", "H100", "H800", "H20"),
    *_nv("8.9", CUDA_GPUS, "L40S", "L40", "L4", "L20"),
    *_nv(
        "8.9",
        CUDA_GPUS,
        "RTX 4090",
        "RTX 4080",
        "RTX 4070 Ti",
        "RTX 4070",
        "RTX 4060 Ti",
        "RTX 4060",
        "RTX 4050",
    ),
    *_nv("8.7", CUDA_GPUS, "Jetson AGX Orin", "Jetson Orin"),
    *_nv("8.0", CUDA_GPUS, "A100", "A800", "A30"),
    *_nv(
        "8.6",
        CUDA_GPUS,
        "A10G",
        "A10",
        "A40",
        "A16",
        "A2",
        "RTX A6000",
        "RTX A5000",
        "RTX A4500",
        "RTX A4000",
        "RTX A2000",
        "A6000",
        "A5000",
        "A4000",
        "RTX 3090 Ti",
        "RTX 3090",
        "RTX 3080 Ti",
        "RTX 3080",
        "RTX 3070 Ti",
        "RTX 3070",
        "RTX 3060 Ti",
        "RTX 3060",
        "RTX 3050",
    ),
    *_nv("7.2", CUDA_GPUS, "Jetson AGX Xavier", "Jetson Xavier"),
    *_nv(
        "7.5",
        CUDA_GPUS,
        "Quadro RTX 8000",
        "Quadro RTX 6000",
        "Quadro RTX 5000",
        "Quadro RTX 4000",
        "TITAN RTX",
        "RTX 2080 Ti",
        "RTX 2080",
        "RTX 2070",
        "RTX 2060",
        "GTX 1660 Ti",
        "GTX 1660",
        "GTX 1650",
        "T4",
        "T1000",
        "T600",
        "T400",
    ),
    *_nv("7.0", CUDA_GPUS, "V100", "TITAN V"),
    *_nv("6.0", CUDA_GPUS, "P100"),
    *_nv(
        "6.1",
        CUDA_GPUS,
        "P40",
        "P4",
        "GTX 1080 Ti",
        "GTX 1080",
        "GTX 1070",
        "GTX 1060",
        "GTX 1050 Ti",
        "GTX 1050",
        "TITAN Xp",
        "Quadro P6000",
        "Quadro P5000",
        "Quadro P4000",
        "MX150",
    ),
    *_nv("5.2", CUDA_LEGACY_GPUS, "M60", "M40", "GTX 980 Ti", "GTX 980", "GTX 970", "GTX TITAN X"),
    *_nv("3.7", CUDA_LEGACY_GPUS, "K80"),
    *_families(),
    *_amd("gfx950", "MI355", "MI350"),
    *_amd("gfx942", "MI325", "MI300"),
    *_amd("gfx90a", "MI250", "MI210"),
    *_amd("gfx908", "MI100"),
    *_amd("gfx1100", "RX 7900"),
)


def _digits(name: str) -> int:
    return sum(c.isdigit() for c in name)


#: short names (``T4``, ``A2``) match in their own case only; longer ones and those with three
#: digits or more (``v100``) in any case
#: where a model name can begin: every row's pattern starts with one of these
_ANCHOR = re.compile(
    r"(?i)(?<![\w.])(?:rtx|gtx|titan|quadro|jetson|dgx|rx|mi\d|mx\d|g[bh]\d|[abhlpktvm]\d|10[5-8]0|[2-5]0\d0)"
)
_ANY_MODEL = re.compile(
    "|".join(
        f"(?P<g{i}>(?i:{m.pattern}))" if len(m.name) > 4 or _digits(m.name) >= 3 else f"(?P<g{i}>{m.pattern})"
        for i, m in enumerate(GPU_MODELS)
    )
)  # one pass; at one position the first row that matches wins (the rows run most specific first)


def find_gpu_models(text: str) -> list[tuple[GpuModel, tuple[int, int]]]:
    """The GPU models ``text`` names, each with its (start, end) offsets, in the text's order; a
    name inside a longer one already found (``RTX 3090`` in ``RTX 3090 Ti``) is not repeated.

    >>> [(m.name, m.gfx) for m, _ in find_gpu_models("AMD Instinct MI300X")]
    [('MI300', 'gfx942')]
    """
    found: list[tuple[GpuModel, tuple[int, int]]] = []
    end = 0
    for anchor in _ANCHOR.finditer(text):  # the rows are tried only where a name can begin
        if anchor.start() < end:
            continue
        match = _ANY_MODEL.match(text, anchor.start())
        if match is not None:
            found.append((GPU_MODELS[int((match.lastgroup or "g0")[1:])], match.span()))
            end = match.end()
    return found


def model_by_name(name: str) -> GpuModel | None:
    """The row whose name is ``name`` (any case), or None.

    >>> model_by_name("rtx 4090").compute_capability
    '8.9'
    """
    return next((m for m in GPU_MODELS if m.name.lower() == name.strip().lower()), None)
