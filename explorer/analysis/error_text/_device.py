"""The device an error text names, read from its device vocabulary: CPU (with the ISA extensions it
names), CUDA (with a compute capability from ``sm_XX``, ``compute capability X.Y``, a ``(8, 6)``
capability tuple or a GPU model name), ROCm (``gfx942``, MI300), Apple MPS (with the macOS
version), Intel XPU, TPU and DirectML.

Each mention is weighed by how surely it names the device that ran (``sm_86`` or a kernel's
``_cuda`` suffix more than the word ``GPU`` in prose); a compute capability the text gives as a
requirement (``requires compute capability >= 8.9``) is kept apart from the device's own.

>>> d = read_device("RuntimeError: torch._scaled_mm is only supported on CUDA devices with "
...                 "compute capability >= 9.0 or 8.9")
>>> d.type, d.compute_capability, d.required_compute_capability
('cuda', None, '8.9')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from explorer.analysis.gpu_models import find_gpu_models

Span = tuple[int, int, str]

#: (device type, weight, regular expression): how surely each spelling names the device that ran
_DEVICE_WORDS: tuple[tuple[str, int, re.Pattern[str]], ...] = (
    ("cuda", 3, re.compile(r"(?<![\w])(?:cuda:\d|device='cuda|device\(type='cuda'|CUDA error|CUDA kernel)")),
    (
        "cuda",
        2,
        re.compile(
            r"(?<![A-Za-z])(?:CUDA|cuda|cuBLAS|cublas\w*|cuDNN|cudnn\w*|CUBLAS\w*|NVIDIA|nvcc|NCCL|nccl)(?![A-Za-z])"
        ),
    ),
    ("cuda", 2, re.compile(r"_cuda(?=_?(?!\w))|\bsm_\d{2,3}a?\b|no kernel image is available")),
    (
        "cuda",
        3,
        re.compile(r"/device:GPU:\d|/gpu:\d|\bXLA_GPU_JIT\b|\"\w{0,80}?_(?:cuda|CUDA)(?:_\w{0,80})?\""),
    ),
    ("cpu", 3, re.compile(r"\"\w{0,80}?_(?:cpu|CPU)(?:_\w{0,80})?\"")),
    # PyTorch's legacy type names: CUDAHalfType, CPUFloatType, XPUBFloat16Type
    ("cuda", 3, re.compile(r"\bCUDA(?=(?:[A-Z][a-z]\w{0,20}|BFloat16)Type\b)")),
    ("cpu", 3, re.compile(r"\bCPU(?=(?:[A-Z][a-z]\w{0,20}|BFloat16)Type\b)")),
    ("xpu", 3, re.compile(r"\bXPU(?=(?:[A-Z][a-z]\w{0,20}|BFloat16)Type\b)")),
    ("xpu", 3, re.compile(r"\"\w{0,80}?_(?:xpu|XPU)(?:_\w{0,80})?\"|_xpu(?=_?(?!\w))")),
    ("cuda", 1, re.compile(r"\bGPU\b|\bgpu\b|\b(?:Volta|Turing|Ampere|Ada|Hopper|Blackwell)\b")),
    (
        "cpu",
        3,
        re.compile(
            r"(?<![A-Za-z])(?:cpu:\d|device='cpu|device\(type='cpu'|CPUExecutionProvider|XLA_CPU_JIT)"
        ),
    ),
    (
        "cpu",
        3,
        re.compile(
            r"platform (?:'|\")?cpu|backend (?:'|\")?cpu|'CPU' backend|\bCPU backend|on CPU\b|for CPU\b"
        ),
    ),
    (
        "cpu",
        2,
        re.compile(
            r"(?<!\w)(?:CPU|cpu)(?!\w)|_cpu(?=_?(?!\w))|/device:CPU|oneDNN|onednn|mkldnn|MKLDNN|dnnl|\bDNNL\b"
            r"|\bAArch64\w*|\baarch64\b|\bX86ISD\b|\bx86[_-]64\b"
        ),
    ),
    (
        "rocm",
        3,
        re.compile(
            r"\bgfx\d{3,4}[a-z]?\b|\bROCm\b|\brocm\b|\bhipError\w*|\bHIP\b|\bMI\d{3}X?\b|\bamdgpu\b|MIOpen|hipBLASLt"
            r"|HIP_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES|\bhipblas\w*|\bRadeon\b|\bInstinct\b"
        ),
    ),
    ("mps", 3, re.compile(r"\bMPS\b|\bmps(?::\d)?\b|MPSGraph|\bMetal\b|\bMPSNDArray|device='mps")),
    ("mps", 1, re.compile(r"\bmacOS\b|\bMacOS\b|\bApple M\d\b")),
    (
        "xpu",
        3,
        re.compile(
            r"\bxpu(?::\d)?\b|\bXPU\b|Intel(?:\(R\))? (?:Arc|Data Center GPU)|\bSYCL\b|\bLevel.Zero\b"
            # Intel Arc boards (A310-A770 Alchemist, B570/B580 Battlemage); no NVIDIA board is named so
            r"|\b(?:Arc\s?)?[AB][3-7][1-8]0M?\b"
        ),
    ),
    ("tpu", 3, re.compile(r"\bTPU\b|\btpu\b|TpuDevice|TPU_\d|\bv[2-6]e?-\d+\b")),
    ("directml", 3, re.compile(r"DirectML|DmlExecutionProvider|\bDML\b|torch_directml|privateuseone")),
)
_REQUIRED = re.compile(
    r"(?:requir\w*|need\w*|at least|minimum|or (?:higher|above|newer|later)|>=?|≥|only supported"
    r"|supported only"
    r"|only available|must be|expected)",
    re.IGNORECASE,
)
_CC_TEXT = re.compile(
    # CC/SM as words, not a file's extension (engine.cc:80 is a C++ file and its line)
    r"(?:compute[ _]capability|cuda capability|capability|(?<![./\w])CC\b|(?<![./\w])SM\b)"
    r"\s*(?:of\s*|is\s*|=\s*|:\s*|>=?\s*|"
    r"≥\s*|\(?)(?:(?P<major>\d{1,2})\.(?P<minor>\d)|\((?P<tmaj>\d{1,2}),\s?(?P<tmin>\d)\)|(?P<sm>\d{2,3})(?!\d)(?!\.\d))",
    re.IGNORECASE,
)
_SM = re.compile(r"\b(?:sm|SM|compute)(?:_| ?)(?P<sm>\d{2,3})[af]?\b")
_TUPLE = re.compile(
    r"(?:capability\w*\(\)|capability)\s*(?:==|is|returns|:|=)?\s*\((?P<maj>\d{1,2}),\s?(?P<min>\d)\)"
)
_MACOS = re.compile(r"\b(?:macOS|MacOS|macos|OS X|Mac OS)[\s-]*(?:version\s*)?(?P<v>\d{2}(?:\.\d{1,2}){0,2})")
_ISA = re.compile(
    r"\b(?P<isa>avx512_?(?:bf16|fp16|vnni|core|f)|avx2_vnni(?:_2)?|avx_vnni(?:_int8)?|avx512\w{0,10}|amx_?(?:bf16|fp16|int8|tile)"
    r"|\bAMX\b|AVX2|avx2|AVX-512(?:_BF16|_FP16)?|sse4_2|neon|sve2?|AVX512\w{0,10}|AVX_VNNI\w{0,5}|AVX2_VNNI\w{0,2}|AMX_(?:BF16|FP16|INT8|TILE))",
)


@dataclass(frozen=True)
class DeviceReading:
    """The device a text names."""

    #: cpu | cuda | rocm | mps | xpu | tpu | directml | None (not named)
    type: str | None = None
    #: the device's own compute capability ("8.6"), None when the text does not give it
    compute_capability: str | None = None
    #: the compute capability the text says is required (``>= 8.9``), None when it names none
    required_compute_capability: str | None = None
    #: the GPU model as written (``RTX 3090``), None when none is named
    name: str | None = None
    #: where the compute capability came from: "text", "sm", "tuple" or "model table" (with its source)
    capability_from: str | None = None
    #: the macOS version the device runs, when the text gives it
    macos: str | None = None
    #: the macOS version the text says is needed (``only supported on MacOS 14 or newer``)
    required_macos: str | None = None
    #: the CPU ISA extensions named (``avx512_bf16``)
    isa: tuple[str, ...] = ()
    #: the AMD LLVM target (``gfx942``) when named or implied by a model name
    gfx: str | None = None
    #: (start, end, text) of what each fact was read from
    evidence: dict[str, Span] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields (evidence as ``{fact: [start, end, text]}``)."""
        return {
            "type": self.type,
            "compute_capability": self.compute_capability,
            "required_compute_capability": self.required_compute_capability,
            "name": self.name,
            "capability_from": self.capability_from,
            "macos": self.macos,
            "required_macos": self.required_macos,
            "isa": list(self.isa),
            "gfx": self.gfx,
            "evidence": {k: list(v) for k, v in self.evidence.items()},
        }


def _is_required(text: str, start: int, end: int, reach: int = 90) -> bool:
    """Whether a capability at ``text[start:end]`` is stated as a requirement (its clause says
    ``requires``, ``>=``, ``or higher`` ...), not as the device's own."""
    window = max(0, start - reach)
    line_start = max(text.rfind("\n", window, start), text.rfind(". ", window, start), window - 1) + 1
    before = text[line_start:start]
    after = text[end : end + 25]
    own = re.search(
        r"(?:current|your|this|the) (?:device|GPU|gpu)\w*[^.\n]{0,25}$|has (?:compute )?capab"
        r"|device capability|got|found|detected|which is of",
        before,
        re.I,
    )
    if own and not re.search(r">=|or higher|at least|\+", before[own.end() :] + after[:12]):
        return False
    return bool(
        _REQUIRED.search(before[-60:])
        or re.match(r"\+|\s*(?:or (?:higher|above|newer|later)|and above)", after)
    )


#: NVIDIA architectures and the first compute capability of each (the tensor-core table's rows)
_ARCH_CC = {
    "volta": "7.0",
    "turing": "7.5",
    "ampere": "8.0",
    "ada": "8.9",
    "hopper": "9.0",
    "blackwell": "10.0",
}
_ARCH = re.compile(r"\b(?:Volta|Turing|Ampere|Ada|Hopper|Blackwell)\b")


_MACOS_NEED_BEFORE = re.compile(
    r"(?:requires?|needs?|added in|introduced in|since|supported (?:on|from)|at least|>=?)\s*$", re.IGNORECASE
)
_NEGATED = re.compile(r"(?:\bwithout|\bno|\bnot|\bnon)[ -](?:an? |any )?$", re.IGNORECASE)


def _model_is_required(text: str, start: int, end: int) -> bool:
    """Whether a GPU model at ``text[start:end]`` is named as what a feature needs (``or ROCm MI300+``,
    ``requires an H100``, ``H100 or newer``), not as the GPU that ran."""
    before = text[max(0, start - 20) : start]
    after = text[end : end + 20]
    if re.match(r"\+|\s*(?:or (?:higher|above|newer|later)|and (?:above|newer|later))", after):
        return True
    if re.search(r"(?:>=?|≥|at least|requires?(?: an?)?|needs?(?: an?)?)\s*(?:NVIDIA\s*)?$", before):
        return True
    clause = text[max(0, start - 90) : start]
    return bool(re.search(r"\bor (?:ROCm |AMD |NVIDIA )?$", before) and _REQUIRED.search(clause))


def _lowest(a: str | None, b: str) -> str:
    """The lower of two compute capabilities ("8.9" < "9.0" < "10.0"); ``b`` when ``a`` is None."""
    if a is None:
        return b
    return min(a, b, key=lambda cc: tuple(int(p) for p in cc.split(".")))


def _cc(major: str, minor: str) -> str:
    return f"{int(major)}.{int(minor)}"


def _sm_cc(sm: str) -> str:
    return f"{int(sm[:-1])}.{sm[-1]}"


#: lines that list what a build registers (TensorFlow's kernel lists), not the device that ran
_REGISTRY_LINES = re.compile(
    r"^[ \t]*device='\w+'[^\n]*$|Registered devices: \[[^\]\n]*\]|All kernels registered for op \w+"
    r"|CUDA/cuDNN version|GPU model and memory|CUDA version|cuDNN version|use_cudnn_on_gpu=\w+"
    # PyTorch's collect_env: a line saying a device is absent, and the CPU's whole flag list
    r"|^[ \t]*[\w ./-]{0,60}(?:CUDA|ROCM|ROCm|HIP|MIOpen|XNNPACK|GPU|cuDNN|Nvidia|MPS|XPU)[\w ./-]{0,40}:"
    r"[ \t]*(?:False|N/A|None|No CUDA|Could not collect)[^\n]*$"
    r"|^[ \t]*Flags:[^\n]*$",
    re.MULTILINE,
)


def read_device(text: str) -> DeviceReading:
    """The device ``text`` names (type, compute capability, model, macOS, ISA), each with evidence.

    >>> d = read_device("GPU 0: NVIDIA GeForce RTX 3080 (UUID: ...)")
    >>> d.type, d.compute_capability, d.name, d.capability_from
    ('cuda', '8.6', 'RTX 3080', 'model table (https://developer.nvidia.com/cuda-gpus)')
    """
    text = _REGISTRY_LINES.sub(lambda m: " " * len(m.group(0)), text)
    scores: dict[str, float] = {}
    last: dict[str, tuple[int, int]] = {}
    n = max(len(text), 1)
    for kind, weight, regex in _DEVICE_WORDS:
        for match in regex.finditer(text):
            position = match.start() / n
            factor = 0.25 if _is_required(text, match.start(), match.end()) else 1.0
            if _NEGATED.search(text[max(0, match.start() - 12) : match.start()]):
                factor = 0.0  # "without TPU", "no GPU": the device the text rules out
            scores[kind] = scores.get(kind, 0.0) + weight * factor * (1.0 + position)
            if kind not in last or weight >= 2:
                last[kind] = match.span()
    evidence: dict[str, Span] = {}
    own_cc: tuple[str, str, tuple[int, int]] | None = None
    required: str | None = None
    for match in _CC_TEXT.finditer(text):
        if match.group("major"):
            cc = _cc(match.group("major"), match.group("minor"))
        elif match.group("tmaj"):
            cc = _cc(match.group("tmaj"), match.group("tmin"))
        else:
            cc = _sm_cc(match.group("sm"))
        if _is_required(text, match.start(), match.end()):
            required = _lowest(required, cc)
            listed = re.match(r"(?:\s*(?:or|,|and|/)\s*\d{1,2}\.\d\b)+", text[match.end() : match.end() + 60])
            for major, minor in re.findall(r"(\d{1,2})\.(\d)", listed.group(0) if listed else ""):
                required = _lowest(required, _cc(major, minor))
        else:
            own_cc = (cc, "text", match.span())
    for match in _ARCH.finditer(text):
        if _is_required(text, match.start(), match.end()) or re.match(
            r"[^.\n]{0,20}or (?:later|newer|above)", text[match.end() :]
        ):
            required = _lowest(required, _ARCH_CC[match.group(0).lower()])
    for match in _TUPLE.finditer(text):
        own_cc = (_cc(match.group("maj"), match.group("min")), "tuple", match.span())
    for match in _SM.finditer(text):
        cc = _sm_cc(match.group("sm"))
        if _is_required(text, match.start(), match.end()):
            required = _lowest(required, cc)
        elif own_cc is None or own_cc[1] == "sm":
            own_cc = (cc, "sm", match.span())
    models = []
    for model, span in find_gpu_models(text):
        if not _model_is_required(text, *span):
            models.append((model, span))
        elif model.compute_capability:  # "H100+", "requires an H100": the generation needed
            required = _lowest(required, model.compute_capability)
    name = None
    gfx = None
    if models:
        model, span = models[-1]
        name = text[span[0] : span[1]]
        evidence["name"] = (span[0], span[1], name)
        scores[model.vendor_api] = scores.get(model.vendor_api, 0.0) + 4.0
        if model.compute_capability and own_cc is None:
            own_cc = (model.compute_capability, f"model table ({model.source})", span)
        gfx = model.gfx
    gfx_match = re.search(r"\bgfx\d{3,4}[a-z]?\b", text)
    if gfx_match:
        gfx = gfx_match.group(0)
        evidence["gfx"] = (*gfx_match.span(), gfx)
    if own_cc is not None or required is not None:
        scores["cuda"] = scores.get("cuda", 0.0) + 3.0
    macos = None
    required_macos = None
    for mac in _MACOS.finditer(text):
        before = text[max(0, mac.start() - 30) : mac.start()]
        after = text[mac.end() : mac.end() + 20]
        if _MACOS_NEED_BEFORE.search(before) or re.match(r"\s*(?:or (?:newer|later|above|higher)|\+)", after):
            required_macos = mac.group("v")  # "needs macOS 14", "added in macOS 13.3"
        else:
            macos = mac.group("v")
            evidence["macos"] = (mac.start(), mac.end(), mac.group(0))
    isa = tuple(dict.fromkeys(m.group("isa").lower().replace("-", "") for m in _ISA.finditer(text)))
    isa_match = _ISA.search(text)
    if isa_match:
        evidence["isa"] = (*isa_match.span(), isa_match.group(0))
        scores["cpu"] = scores.get("cpu", 0.0) + 3.0
    if not scores:
        return DeviceReading(macos=macos, required_macos=required_macos, isa=isa, evidence=evidence)
    kind = max(scores, key=lambda k: (scores[k], last.get(k, (0, 0))[0]))
    if kind in last:
        a, b = last[kind]
        evidence["type"] = (a, b, text[a:b])
    device_cc: str | None = None
    how: str | None = None
    if kind == "cuda" and own_cc is not None:
        device_cc, how, (a, b) = own_cc
        evidence["compute_capability"] = (a, b, text[a:b])
    return DeviceReading(
        type=kind,
        compute_capability=device_cc,
        required_compute_capability=required,
        name=name if kind in ("cuda", "rocm") else None,
        capability_from=how,
        macos=macos,
        required_macos=required_macos,
        isa=isa if kind == "cpu" else (),
        gfx=gfx if kind == "rocm" else None,
        evidence=evidence,
    )
