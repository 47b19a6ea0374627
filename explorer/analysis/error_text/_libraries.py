"""Which framework and which library an error text comes from, read from its traceback paths
(``site-packages/<pkg>/``), its module names (``torchao.``, ``triton.compiler.errors``) and the
libraries' own words (``[ONNXRuntimeError]``, ``[TRT]``, ``XlaRuntimeError``, ``MPSGraph``).

The library that raised it is the one named where the error is raised: the exception's own line
(its module or its words) first, then the deepest traceback frame of a library more specific than
the framework (``torchao`` over ``torch``), then the framework itself.

>>> read_library('File "/x/site-packages/torchao/float8/float8_utils.py", line 3, in f\\nAssertionError: x')
('torch', 'torchao')
"""

from __future__ import annotations

import bisect
import re

Span = tuple[int, int, str]

#: package / module name -> (library, framework)
PACKAGES: dict[str, tuple[str, str]] = {
    "torchao": ("torchao", "torch"),
    "transformer_engine": ("transformer_engine", "torch"),
    "bitsandbytes": ("bitsandbytes", "torch"),
    "torch_tensorrt": ("torch_tensorrt", "torch"),
    "vllm": ("vllm", "torch"),
    "deepspeed": ("deepspeed", "torch"),
    "triton": ("triton", "torch"),
    "torch": ("torch", "torch"),
    "tensorrt": ("tensorrt", "tensorrt"),
    "onnxruntime": ("onnxruntime", "onnxruntime"),
    "onnxconverter_common": ("onnxconverter_common", "onnxruntime"),
    "keras": ("keras", "keras"),
    "tf_keras": ("keras", "keras"),
    "tensorflow": ("tensorflow", "tensorflow"),
    "jax": ("jax", "jax"),
    "jaxlib": ("jax", "jax"),
    "flax": ("jax", "jax"),
    "numpy": ("numpy", "numpy"),
}
#: libraries that sit on a framework (a frame of theirs says more than the framework's own)
SPECIFIC = frozenset(
    {
        "torchao",
        "transformer_engine",
        "bitsandbytes",
        "torch_tensorrt",
        "vllm",
        "deepspeed",
        "triton",
        "keras",
        "onnxconverter_common",
        "tensorrt",
        "mps",
        "xla",
        "other framework",
    }
)
#: words of a library's own messages -> (library, framework or None when the words do not say)
_WORDS: tuple[tuple[re.Pattern[str], str, str | None], ...] = (
    (
        re.compile(
            r"\[ONNXRuntimeError\]|(?i:onnxruntime)|ORT_\w+|(?<!\w)\w{1,40}ExecutionProvider|InferenceSession|\bORT\b"
            r"|Type Error: Type|tensor\((?:float|double|int|bool|uint|bfloat)\w*\)"
            r"|Load model from \S{1,300}\.onnx"
            r"|\bDirectML EP\b|\bCUDA EP\b|\bDML EP\b|\[ErrorCode:\w+\]"
        ),
        "onnxruntime",
        "onnxruntime",
    ),
    (
        re.compile(r"onnxconverter_common|float16\.convert_float_to_float16|convert_float_to_float16"),
        "onnxconverter_common",
        "onnxruntime",
    ),
    (re.compile(r"Torch-TensorRT|torch_tensorrt|torchtrt|TorchTRT"), "torch_tensorrt", "torch"),
    (re.compile(r"\[TRT\]|TensorRT|tensorrt|nvinfer|trtexec|\bIBuilder\w*|\bTRT\b"), "tensorrt", "tensorrt"),
    (
        re.compile(
            r"TransformerEngine|Transformer Engine|transformer_engine|\bTE\b"
            r"|\bte\.(?:Linear|fp8_autocast|pytorch)"
        ),
        "transformer_engine",
        None,
    ),
    (
        re.compile(r"bitsandbytes|\bbnb\b|Blockwise quantization|quantize_blockwise|Linear8bitLt|Params4bit"),
        "bitsandbytes",
        "torch",
    ),
    (
        re.compile(
            r"DeepSpeed|deepspeed|loss scale already at minimum|OVERFLOW! Rank \d+ Skipping step"
            r"|Attempted loss scale: \d"
        ),
        "deepspeed",
        "torch",
    ),
    (re.compile(r"\bvLLM\b|\bvllm\b"), "vllm", "torch"),
    # PyTorch's own vocabulary: Intel's extension, TorchDynamo/Inductor settings and kernel names
    (
        re.compile(
            r"intel_extension_for_pytorch|\bipex\b|\bTORCHDYNAMO_\w+|\bTORCHINDUCTOR_\w+"
            r"|\btriton_(?:poi|red|per|tem)_fused\w*|\bBackendCompilerFailed\b|\b(?:torch)?inductor\b|\bTorchDynamo\b"
        ),
        "torch",
        "torch",
    ),
    (
        re.compile(r"torchao|\bMXTensor\b|\bNVFP4Tensor\b|\bFloat8Tensor\b|\bFloat8Linear\b"),
        "torchao",
        "torch",
    ),
    (re.compile(r"triton\.compiler|\bTriton\b|\btriton\b|\btl\.\w+|Pallas|pallas"), "triton", None),
    (re.compile(r"MPSGraph|MPSNDArray|\bMPS\b|\bmps\b|Metal Performance"), "mps", "torch"),
    (
        re.compile(r"\bXLA\b|\bHLO\b|\bMLIR\b|\bmlir\b|\bxla\b|StableHLO|stablehlo|XlaRuntimeError|LLVM"),
        "xla",
        None,
    ),
    (
        re.compile(
            r"\bKeras\b|(?<!tf\.)(?<!python\.)(?<!tf_)\bkeras\b|Functional model|dtype_policy|DTypePolicy"
            r"|quantization mode|Layer '\w+' of type|is incompatible with the layer|of layer [\"']\w"
            r"|LossScaleOptimizer"
        ),
        "keras",
        "keras",
    ),
    (
        re.compile(
            r"\bjax\b|\bjnp\.|\bJAX\b|jaxlib|\blax\.|XlaRuntimeError|ShapedArray|Traced<"
            r"|MLIR translation rule for primitive|for platform (?:cpu|cuda|rocm|tpu)\b"
        ),
        "jax",
        "jax",
    ),
    (
        re.compile(
            r"\btf\.|TensorFlow|tensorflow|\bDT_[A-Z0-9]+|OpKernel|\{\{node |\[Op:\w+\]|\btfmot\b"
            r"|Model Optimization|\btf\.keras\b|\btf_keras\b"
        ),
        "tensorflow",
        "tensorflow",
    ),
    (
        re.compile(
            r"\btorch\b|\bPyTorch\b|\w not implemented for '\w|\baten::|\baten\.|\bc10::|GradScaler"
            r"|inf checks were recorded"
            r"|\bnn\.Module|\bF\.\w+\(|\bat::|torch\.\w+|\bc10\b"
        ),
        "torch",
        "torch",
    ),
    (re.compile(r"\bnumpy\b|\bnp\.\w+"), "numpy", "numpy"),
    # frameworks outside the ones read here: where they are what the text is about, no framework
    (
        re.compile(
            r"\bPaddlePaddle\b|\bpaddle\.\w|\bMindSpore\b|\bmindspore\b|\bcandle_core\b|\bmistralrs\w*"
            r"|\bllama\.cpp\b|\bggml\w*|\bmlx\.core\b|\bMXNet\b|\bmxnet\b|\bOpenVINO\b|\bopenvino\b"
        ),
        "other framework",
        None,
    ),
)
_PATH = re.compile(
    r"(?:site|dist)-packages[/\\]+(?P<pkg>\w+)[/\\.]|[/\\](?P<pkg2>torchao|transformer_engine|bitsandbytes|torch_tensorrt|vllm|deepspeed|triton|onnxruntime|keras|tensorflow|jax|jaxlib|torch|tensorrt|onnxconverter_common)[/\\]"
)
_MODULE = re.compile(
    r"(?<![\w/\\.])(?P<pkg>" + "|".join(sorted(PACKAGES, key=len, reverse=True)) + r")\.(?=[A-Za-z_])"
)
#: a traceback frame line
FRAME = re.compile(r'^\s*File "(?P<path>[^"\n]{1,500})", line \d+, in (?P<func>[\w<>.]+)', re.MULTILINE)


def _exception_lines(text: str) -> list[tuple[int, str]]:
    """(offset, line) of the lines that are not traceback frames or their code: the error messages."""
    out: list[tuple[int, str]] = []
    offset = 0
    previous_frame = False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        is_frame = bool(FRAME.match(line))
        code = previous_frame and not is_frame
        if stripped and not is_frame and not code and not set(stripped) <= set("^~ "):
            out.append((offset, line.rstrip("\n")))
        previous_frame = is_frame
        offset += len(line)
    return out


def library_mentions(text: str) -> list[tuple[str, str | None, int, int, str]]:
    """(library, framework, start, end, how) of every path, module name and word naming a library,
    ``how`` being ``path``, ``module`` or ``word``."""
    found: list[tuple[str, str | None, int, int, str]] = []
    for match in _PATH.finditer(text):
        pkg = match.group("pkg") or match.group("pkg2")
        if pkg in PACKAGES:
            lib, fw = PACKAGES[pkg]
            found.append((lib, fw, match.start(), match.end(), "path"))
    for match in _MODULE.finditer(text):
        lib, fw = PACKAGES[match.group("pkg")]
        found.append((lib, fw, match.start(), match.end(), "module"))
    for regex, word_lib, word_fw in _WORDS:
        for match in regex.finditer(text):
            found.append((word_lib, word_fw, match.start(), match.end(), "word"))
    return sorted(found, key=lambda f: f[2])


def read_library(text: str) -> tuple[str | None, str | None]:
    """(framework, library) of ``text``; None where the text does not say (see :func:`read_library_spans`)."""
    framework, library, _ = read_library_spans(text)
    return framework, library


def read_library_spans(text: str) -> tuple[str | None, str | None, dict[str, Span]]:
    """(framework, library, evidence) of ``text``: evidence maps ``framework`` and ``library`` to the
    (start, end, text) each was read from."""
    mentions = library_mentions(text)
    if not mentions:
        return None, None, {}
    message_starts = {o for o, _ in _exception_lines(text)}
    lines = sorted(message_starts)

    def in_message(start: int) -> bool:
        line_start = lines[bisect.bisect_right(lines, start) - 1] if lines and start >= lines[0] else -1
        return line_start in message_starts and text.find("\n", line_start, start) < 0

    n = max(len(text), 1)
    score: dict[str, float] = {}
    where: dict[str, tuple[int, int]] = {}
    for lib, _fw, start, end, how in mentions:
        weight = {"path": 1.0, "module": 1.5, "word": 1.0}[how]
        if in_message(start) and lib in SPECIFIC:
            weight *= 2.0
        weight *= 1.0 + start / n  # later text is nearer the raise
        if lib in SPECIFIC:
            weight *= 3.0 if in_message(start) else 1.5
        score[lib] = score.get(lib, 0.0) + weight
        where[lib] = (start, end)
    deepest = _deepest_frame_library(text)
    if deepest is not None:
        lib, span = deepest
        score[lib] = score.get(lib, 0.0) + (6.0 if lib in SPECIFIC else 3.0)  # the frame that raised it
        where.setdefault(lib, span)
    library = max(score, key=lambda k: (score[k], where[k][0]))
    frameworks = [(fw, s, e) for lib, fw, s, e, _ in mentions if fw is not None]
    fw_score: dict[str, float] = {}
    fw_where: dict[str, tuple[int, int]] = {}
    for fw, s, e in frameworks:
        fw_score[fw] = fw_score.get(fw, 0.0) + (2.0 if in_message(s) else 1.0)
        fw_where[fw] = (s, e)
    framework = _framework_of(library, fw_score)
    evidence: dict[str, Span] = {"library": (*where[library], text[slice(*where[library])])}
    if framework in fw_where:
        evidence["framework"] = (*fw_where[framework], text[slice(*fw_where[framework])])
    return framework, library, evidence


def _deepest_frame_library(text: str) -> tuple[str, tuple[int, int]] | None:
    """The library of the last traceback frame (the code that raised), with the path's span."""
    frames = list(FRAME.finditer(text))
    if not frames:
        return None
    path = frames[-1].group("path")
    found = list(_PATH.finditer(path))
    if not found:
        return None
    pkg = found[-1].group("pkg") or found[-1].group("pkg2")
    if pkg not in PACKAGES:
        return None
    start = frames[-1].start("path")
    return PACKAGES[pkg][0], (start, start + len(path))


def _framework_of(library: str, fw_score: dict[str, float]) -> str | None:
    """The top framework for ``library``: its own when it has one (torchao -> torch), else the
    framework the text names most (XLA under JAX or TensorFlow, Triton under torch or JAX)."""
    own = {lib: fw for lib, fw in PACKAGES.values()}
    own.update({"mps": "torch"})
    if library in ("xla", "triton", "transformer_engine"):
        named = {fw: s for fw, s in fw_score.items() if fw in ("torch", "jax", "tensorflow", "keras")}
        if named:
            return max(named, key=lambda k: named[k])
        return {"transformer_engine": "torch"}.get(library)  # a bare Triton or XLA message: not told
    if library in ("tensorflow", "keras"):
        keras, tensorflow = fw_score.get("keras", 0.0), fw_score.get("tensorflow", 0.0)
        return "keras" if keras >= tensorflow and (keras or library == "keras") else "tensorflow"
    if library == "numpy" and fw_score:
        named = {fw: s for fw, s in fw_score.items() if fw != "numpy"}
        if named:
            return max(named, key=lambda k: named[k])
    return own.get(library)
