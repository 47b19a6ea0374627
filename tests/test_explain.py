"""``explain``: error texts read right, checked against facts found independently.

Fixtures are real error texts: the project's original TF 2.4.1 error (verbatim), texts quoted from
GitHub issues (cited beside each), and errors TensorFlow 2.21 raises here, produced by running it
in a subprocess.  Tests that run TensorFlow fail (not skip) when it is missing.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from explorer.analysis import releases
from explorer.analysis.error_text import MAX_TEXT_BYTES, PATTERNS, parse_error
from explorer.cli import main
from explorer.queries.diagnose import diagnose
from tests.support.require import require_module

#: the TensorFlow and JAX workers diagnose() starts are handed on between tests/test_explain.py and
#: tests/test_explain_kinds.py instead of being started cold twice (tests/conftest.py)
SHARES_APP_PROBE_WORKERS = True

# ------------------------------------------------------------------------------------ fixtures

#: the original error (TensorFlow 2.4.1, from the project's start), verbatim
ORIGINAL = """NotFoundError: Could not find device for node: {{node Range}} = Range[Tidx=DT_HALF]
All kernels registered for op Range:
  device='CPU'; Tidx in [DT_INT64]
  device='CPU'; Tidx in [DT_INT32]
  device='CPU'; Tidx in [DT_DOUBLE]
  device='CPU'; Tidx in [DT_FLOAT]
  device='GPU'; Tidx in [DT_FLOAT]
  device='GPU'; Tidx in [DT_DOUBLE]
  device='GPU'; Tidx in [DT_INT32]
  device='GPU'; Tidx in [DT_INT64]
  device='XLA_CPU_JIT'; Tidx in [DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64]
  device='XLA_GPU_JIT'; Tidx in [DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64]
 [Op:Range]
"""
#: the original's kernel list, written out by hand (device, dtype), in the message's order
ORIGINAL_KERNELS = [
    ("CPU", {"Tidx": ["int64"]}),
    ("CPU", {"Tidx": ["int32"]}),
    ("CPU", {"Tidx": ["float64"]}),
    ("CPU", {"Tidx": ["float32"]}),
    ("GPU", {"Tidx": ["float32"]}),
    ("GPU", {"Tidx": ["float64"]}),
    ("GPU", {"Tidx": ["int32"]}),
    ("GPU", {"Tidx": ["int64"]}),
    ("XLA_CPU_JIT", {"Tidx": ["float32", "float64", "int32", "int64"]}),
    ("XLA_GPU_JIT", {"Tidx": ["float32", "float64", "int32", "int64"]}),
]

#: tensorflow/tensorflow#45920 (TF 2.4.0, "since TF 2.4.0 FloorMod float16 fails"): the issue's title
TF_45920 = "Could not find device for node: {{node FloorMod}} = FloorMod[T=DT_HALF]"
#: tensorflow/tpu#100 (TF 1.7): the older "No OpKernel was registered" form, attrs in the node line
TPU_100 = """InvalidArgumentError (see above for traceback): No OpKernel was registered to support Op 'Conv2D' with these attrs.  Registered devices: [CPU,GPU], Registered kernels:
  device='CPU'; T in [DT_FLOAT]
  device='CPU'; T in [DT_HALF]
  device='GPU'; T in [DT_FLOAT]
  device='GPU'; T in [DT_HALF]

\t [[Node: cg/conv2d/Conv2D = Conv2D[T=DT_BFLOAT16, data_format="NHWC", dilations=[1, 1, 1, 1], padding="VALID", strides=[1, 2, 2, 1], use_cudnn_on_gpu=true](cg/Pad, Cast)]]"""  # noqa: E501
#: tensorflow/tensorflow#12327 (TF 1.3): a labelled kernel, and no dtype named
TF_12327 = """tensorflow.python.framework.errors_impl.InvalidArgumentError: No OpKernel was registered to support Op 'DepthwiseConv2dNative' with these attrs.  Registered devices: [CPU,GPU], Registered kernels:
  device='CPU'; label='neon'; T in [DT_FLOAT]
  device='CPU'; T in [DT_DOUBLE]
  device='CPU'; T in [DT_FLOAT]
  device='GPU'; T in [DT_DOUBLE]
  device='GPU'; T in [DT_FLOAT]"""  # noqa: E501
#: tensorflow/tensorflow#50282 (a maintainer's comment quoting the error)
TF_50282 = """InvalidArgumentError: Value for attr 'T' of bfloat16 is not in the list of allowed values: double, float, half, complex64, complex128
\t; NodeDef: {{node Qr}}; Op<name=Qr; signature=input:T -> q:T, r:T; attr=full_matrices:bool,default=false; attr=T:type,allowed=[DT_DOUBLE, DT_FLOAT, DT_HALF, DT_COMPLEX64, DT_COMPLEX128]> [Op:Qr]"""  # noqa: E501
#: keras-team/tf-keras#278 (TF 2.4.1): the attr error without an op name
TF_KERAS_278 = (
    "InvalidArgumentError: Value for attr 'dtype' of bfloat16 is not in the list of allowed values: "
    "uint8, int32, int64, half, float, double"
)
#: tensorflow/tensorflow#61352 (TF 2.12): the Python-side dtype check
TF_61352 = (
    "Value passed to parameter 'input' has DataType bfloat16 not in list of allowed values: "
    "float16, float32, float64"
)
#: tensorflow/tensorflow#122049 (TF 2.21): XLA rejecting float16 Range
TF_122049 = "Invalid type for Range half"
#: tensorflow/tensorflow#126007 (TF 2.14): an op with no XLA kernel in any dtype
TF_126007 = (
    "xla : InvalidArgumentError Detected unsupported operations when trying to compile graph ... on "
    "XLA_CPU_JIT: StringFormat (No registered 'StringFormat' OpKernel for XLA_CPU_JIT devices "
    "compatible with node {{node StringFormat}})"
)
#: horovod/horovod#2590: an op no shipped release has, on XLA_GPU_JIT
HOROVOD_2590 = (
    "tensorflow.python.framework.errors_impl.InvalidArgumentError: Detected unsupported operations when "
    'trying to compile graph __inference_train_step_keras_83604[_XlaMustCompile=true,config_proto="\\n\\007'
    '\\n\\0...02\\001\\000",executor_type=""] on XLA_GPU_JIT: HorovodAllreduce (No registered '
    "'HorovodAllreduce' OpKernel for XLA_GPU_JIT devices compatible with node "
    "{{node HorovodAllreduce_grads_0}}){{node HorovodAllreduce_grads_0}}"
)

#: PyTorch texts: (source, text, kernel, op, dtype, device)
TORCH_TEXTS = [
    (
        "pytorch/pytorch#89366",
        "import torch\ninput = torch.rand([5], dtype=torch.float16)\n"
        "print(torch.nn.functional.log_softmax(input, dim=-1))\n\n"
        "result: RuntimeError: \"log_softmax_lastdim_kernel_impl\" not implemented for 'Half'",
        "log_softmax_lastdim_kernel_impl",
        "log_softmax",
        "float16",
        None,
    ),
    (
        "microsoft/unilm#36",
        "`RuntimeError: \"add_cpu/sub_cpu\" not implemented for 'Half'`",
        "add_cpu/sub_cpu",
        "add",
        "float16",
        "CPU",
    ),
    (
        "datvuthanh/HybridNets#28",
        "RuntimeError: \"slow_conv2d_cpu\" not implemented for 'Half'",
        "slow_conv2d_cpu",
        "conv2d",
        "float16",
        "CPU",
    ),
    (
        "BlinkDL/ChatRWKV#7",
        textwrap.dedent(
            """\
            Traceback (most recent call last):
              File "chat.py", line 175, in <module>
                model = RWKV_RNN(args)
              File "/root/work/ChatRWKV/src/model_run.py", line 111, in LN
                return F.layer_norm(x, (self.args.n_embd,), weight=w.weight, bias=w.bias)
              File "/opt/conda/lib/python3.8/site-packages/torch/nn/functional.py", line 2346, in layer_norm
                return torch.layer_norm(input, normalized_shape, weight, bias, eps, torch.backends.cudnn.enabled)
            RuntimeError: "LayerNormKernelImpl" not implemented for 'BFloat16'"""  # noqa: E501
        ),
        "LayerNormKernelImpl",
        "layer_norm",
        "bfloat16",
        None,
    ),
    (
        "zai-org/ChatGLM3#628",
        'python3.11/site-packages/torch/nn/modules/linear.py", line 114, in forward\n'
        "    return F.linear(input, self.weight, self.bias)\n"
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'",
        "addmm_impl_cpu_",
        "matmul",
        "float16",
        "CPU",
    ),
    (
        "pytorch/pytorch#116609",
        "RuntimeError: \"eye\" not implemented for 'BFloat16'",
        "eye",
        "eye",
        "bfloat16",
        None,
    ),
    (
        "HomebrewML/HeavyBall#57",
        "tmp[:, sort_idx], _ = torch.linalg.qr(tmp[:, sort_idx])\n\n"
        "\"geqrf_cuda\" not implemented for 'BFloat16'",
        "geqrf_cuda",
        "qr",
        "bfloat16",
        "GPU",
    ),
    (
        "pytorch/xla#2494",
        "Sep 16 01:13:30 RuntimeError: \"std_cpu\" not implemented for 'BFloat16'",
        "std_cpu",
        "std",
        "bfloat16",
        "CPU",
    ),
    (
        "pytorch/pytorch#89372 (no catalog op)",
        "result: RuntimeError: \"hardshrink_cpu\" not implemented for 'BFloat16'",
        "hardshrink_cpu",
        None,
        "bfloat16",
        "CPU",
    ),
]

#: JAX texts: (source, text, op, dtype, kind)
JAX_TEXTS = [
    (
        "jax-ml/jax#30176",
        "import jax\nx = jax.numpy.eye(3, dtype='bfloat16')\njax.lax.linalg.qr(x)\n```\n\n```\n"
        "NotImplementedError: (KeyError(<class 'ml_dtypes.bfloat16'>), 'Unsupported dtype bfloat16.')",
        "qr",
        "bfloat16",
        "jax_unsupported_dtype",
    ),
    (
        "jax-ml/jax#38825",
        "x = jnp.eye(4, dtype=jnp.float16)\njax.scipy.linalg.inv(x)\n\n"
        "NotImplementedError: (KeyError(<class 'numpy.float16'>), 'Unsupported dtype float16.')",
        "inv",
        "float16",
        "jax_unsupported_dtype",
    ),
    (
        "jax-ml/jax#17954",
        'loc("jit(fft)/jit(main)/fft[fft_type=FftType.RFFT fft_lengths=(50,)]"("<stdin>":1:0)): error: '
        "RFFT requires f32 or f64 input type, but is given 'f16'.\nTraceback (most recent call last):\n"
        '  File "/opt/conda/envs/trix/lib/python3.10/site-packages/jax/_src/numpy/fft.py", '
        "line 167, in rfft\n"
        "    return _fft_core_1d('rfft', xla_client.FftType.RFFT, a, n=n, axis=axis,",
        "rfft",
        "float16",
        "jax_fft_dtype",
    ),
]

#: what TensorFlow 2.21 raises here, produced by the subprocess of :func:`tf_run`
TF_SCRIPT = r"""
import json, os, traceback
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf
import keras

def error_of(f):
    try:
        f()
    except Exception:
        return traceback.format_exc()
    return None

def qr_graph(x):
    return tf.linalg.qr(x)

facts = {
    "version": tf.__version__,
    "range_float16_cpu": tf.range(12, dtype=tf.float16).dtype.name,
    "qr_bfloat16": error_of(lambda: tf.linalg.qr(tf.eye(3, dtype=tf.bfloat16))),
    "qr_bfloat16_graph": error_of(lambda: tf.function(qr_graph)(tf.eye(3, dtype=tf.bfloat16))),
    "cholesky_float16": error_of(lambda: tf.linalg.cholesky(tf.eye(3, dtype=tf.float16))),
    "det_xla": error_of(lambda: tf.function(tf.linalg.det, jit_compile=True)(tf.eye(3))),
    "range_float16_xla": error_of(
        lambda: tf.function(lambda: tf.range(12, dtype=tf.float16), jit_compile=True, autograph=False)()
    ),
    "keras_erfinv": error_of(
        lambda: keras.layers.Lambda(tf.math.erfinv, dtype="float16")(tf.constant([0.1], tf.float16))
    ),
}
print("FACTS " + json.dumps(facts))
"""


def require_tensorflow() -> None:
    """TensorFlow is installed: these tests run it (they skip without it, and fail in CI)."""
    require_module("tensorflow")


def start_python(code: str, script: Path | None = None) -> subprocess.Popen[str]:
    """Start ``code`` in a fresh Python (from the file ``script`` when given, so that tracebacks
    show its source lines, as a user's script does); :func:`python_output` waits for it."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    if script is not None:
        script.write_text(code, encoding="utf-8")
    command = [sys.executable, str(script)] if script is not None else [sys.executable, "-c", code]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def python_output(proc: subprocess.Popen[str], timeout: float = 300) -> str:
    """The stdout of a Python :func:`start_python` started, once it has exited with status 0."""
    stdout, stderr = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, stderr[-3000:]
    return stdout


@contextlib.contextmanager
def stopped_at_exit(proc: subprocess.Popen[str]) -> Iterator[subprocess.Popen[str]]:
    """``proc``, killed (if still running) and reaped when the block ends."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


# Each fresh Python imports TensorFlow (seconds): the errors script, the diagnosis's sandbox
# worker and the workaround's fresh Python run side by side, on the machine's cores, not one
# after the other.  The script starts first; the diagnosis is made while it runs; the
# workaround's Python starts as soon as the diagnosis gives its code.


@pytest.fixture(scope="module")
def _errors_script(tmp_path_factory: pytest.TempPathFactory) -> Iterator[subprocess.Popen[str]]:
    """:data:`TF_SCRIPT`, started in a fresh Python from a file."""
    require_tensorflow()
    with stopped_at_exit(start_python(TF_SCRIPT, script=tmp_path_factory.mktemp("tf") / "errors.py")) as p:
        yield p


@pytest.fixture(scope="module")
def original(_errors_script: subprocess.Popen[str]) -> dict[str, Any]:
    """diagnose() of the original error, the workaround run in the sandbox."""
    require_tensorflow()
    return diagnose(ORIGINAL)


@pytest.fixture(scope="module")
def _workaround_in_a_fresh_python(original: dict[str, Any]) -> Iterator[subprocess.Popen[str]]:
    """The diagnosis's workaround code, started in a fresh Python that prints the result's dtype."""
    code = original["workaround"]["code"] + "\nprint('DTYPE', result.dtype.name)\n"
    with stopped_at_exit(start_python(code)) as proc:
        yield proc


@pytest.fixture(scope="module")
def tf_run(_errors_script: subprocess.Popen[str], _workaround_in_a_fresh_python: Any) -> dict[str, Any]:
    """Errors TensorFlow raises here, and the dtype ``tf.range(12, dtype=tf.float16)`` returns.
    (It asks for the workaround's Python only to start it while the script runs.)"""
    out = python_output(_errors_script)
    line = next(line for line in out.splitlines() if line.startswith("FACTS "))
    facts: dict[str, Any] = json.loads(line.removeprefix("FACTS "))
    return facts


# ------------------------------------------------------------------------------------ parsing


def test_original_error_is_range_float16_cpu_with_its_kernels_exactly() -> None:
    parsed = parse_error(ORIGINAL)
    assert parsed is not None
    assert (parsed.framework, parsed.kind, parsed.raw_op, parsed.op) == (
        "tensorflow",
        "no_kernel_for_device",
        "Range",
        "range",
    )
    assert (parsed.dtype, parsed.dtype_text, parsed.attr, parsed.device) == (
        "float16",
        "DT_HALF",
        "Tidx",
        "CPU",
    )
    assert [(d, c) for d, c in parsed.listed_kernels] == ORIGINAL_KERNELS
    assert parsed.labelled_kernels == 0


def test_real_tensorflow_issue_texts() -> None:
    floormod = parse_error(TF_45920)  # tensorflow/tensorflow#45920
    assert floormod is not None and (floormod.raw_op, floormod.op, floormod.dtype) == (
        "FloorMod",
        "floormod",
        "float16",
    )
    conv = parse_error(TPU_100)  # tensorflow/tpu#100: attrs in the node line under the kernels
    assert conv is not None and conv.kind == "no_opkernel_registered"
    assert (conv.raw_op, conv.op, conv.dtype, conv.device) == ("Conv2D", "conv2d", "bfloat16", "CPU")
    assert conv.listed_kernels == (
        ("CPU", {"T": ["float32"]}),
        ("CPU", {"T": ["float16"]}),
        ("GPU", {"T": ["float32"]}),
        ("GPU", {"T": ["float16"]}),
    )
    depthwise = parse_error(TF_12327)  # tensorflow/tensorflow#12327: a labelled kernel, no dtype
    assert depthwise is not None and depthwise.op == "depthwise_conv2d" and depthwise.dtype is None
    assert depthwise.labelled_kernels == 1 and len(depthwise.listed_kernels) == 4
    qr = parse_error(TF_50282)  # tensorflow/tensorflow#50282
    assert qr is not None and (qr.kind, qr.raw_op, qr.op, qr.dtype, qr.attr, qr.device) == (
        "attr_not_allowed",
        "Qr",
        "qr",
        "bfloat16",
        "T",
        None,
    )
    assert qr.allowed == ("float64", "float32", "float16", "complex64", "complex128")
    keras_attr = parse_error(TF_KERAS_278)  # keras-team/tf-keras#278: no op named
    assert keras_attr is not None and keras_attr.raw_op is None and keras_attr.dtype == "bfloat16"
    param = parse_error(TF_61352)  # tensorflow/tensorflow#61352
    assert param is not None and param.kind == "param_not_allowed" and param.dtype == "bfloat16"
    invalid = parse_error(TF_122049)  # tensorflow/tensorflow#122049
    assert invalid is not None and (invalid.kind, invalid.op, invalid.dtype, invalid.mode) == (
        "xla_invalid_type",
        "range",
        "float16",
        "xla",
    )
    string_format = parse_error(TF_126007)  # tensorflow/tensorflow#126007
    assert string_format is not None and (string_format.kind, string_format.raw_op, string_format.device) == (
        "xla_unsupported_op",
        "StringFormat",
        "XLA_CPU_JIT",
    )
    horovod = parse_error(HOROVOD_2590)  # horovod/horovod#2590
    assert horovod is not None and (horovod.raw_op, horovod.op, horovod.device) == (
        "HorovodAllreduce",
        None,
        "XLA_GPU_JIT",
    )


@pytest.mark.parametrize(("source", "text", "kernel", "op", "dtype", "device"), TORCH_TEXTS)
def test_pytorch_texts_from_github_issues(
    source: str, text: str, kernel: str, op: str | None, dtype: str, device: str | None
) -> None:
    parsed = parse_error(text)
    assert parsed is not None, source
    assert (parsed.framework, parsed.kind) == ("torch", "torch_not_implemented")
    assert (parsed.raw_op, parsed.op, parsed.dtype, parsed.device) == (kernel, op, dtype, device), source


def test_pytorch_combined_kernel_names_both_ops() -> None:
    parsed = parse_error(TORCH_TEXTS[1][1])  # "add_cpu/sub_cpu"
    assert parsed is not None and (parsed.op, parsed.other_ops) == ("add", ("sub",))


@pytest.mark.parametrize(("source", "text", "op", "dtype", "kind"), JAX_TEXTS)
def test_jax_texts_from_github_issues(source: str, text: str, op: str, dtype: str, kind: str) -> None:
    parsed = parse_error(text)
    assert parsed is not None, source
    assert (parsed.framework, parsed.kind, parsed.op, parsed.dtype) == ("jax", kind, op, dtype), source


def test_the_last_error_of_a_traceback_is_the_one_read() -> None:
    text = TF_45920 + "\n\nDuring handling of the above exception, another exception occurred:\n\n" + TF_50282
    parsed = parse_error(text)
    assert parsed is not None and parsed.raw_op == "Qr"


@pytest.mark.slow
def test_real_tensorflow_errors_raised_here(tf_run: dict[str, Any]) -> None:
    expected = {  # key: (kind, raw_op, op, dtype, device)
        "qr_bfloat16": ("attr_not_allowed", "Qr", "qr", "bfloat16", None),
        "qr_bfloat16_graph": ("param_not_allowed", "Qr", "qr", "bfloat16", None),
        "cholesky_float16": ("no_kernel_for_device", "Cholesky", "cholesky", "float16", "CPU"),
        "det_xla": ("xla_unsupported_op", "MatrixDeterminant", "det", None, "XLA_CPU_JIT"),
        "range_float16_xla": ("xla_unsupported_dtype", "Range", "range", "float16", None),
        "keras_erfinv": ("no_kernel_for_device", "Erfinv", "erfinv", "float16", "CPU"),
    }
    for key, facts in expected.items():
        text = tf_run[key]
        assert text, f"TensorFlow {tf_run['version']} no longer raises for {key}"
        parsed = parse_error(text)
        assert parsed is not None, text
        assert (parsed.kind, parsed.raw_op, parsed.op, parsed.dtype, parsed.device) == facts, key
    # the kernel list of the real Cholesky error is what the installed release's registry has
    parsed = parse_error(tf_run["cholesky_float16"])
    assert parsed is not None
    from explorer.runtime.registry import get_registry

    reg = get_registry()
    for device in ("CPU", "GPU", "XLA_CPU_JIT"):
        listed = {t for d, c in parsed.listed_kernels if d == device for t in c["T"]}
        declared = {f for f in reg.float_dtypes if reg.declared("Cholesky", f, device).value == "ok"}
        assert declared == listed & set(reg.float_dtypes), device


# ------------------------------------------------------------------------------------ diagnose


def _kernel_pairs(kernels: list[Any], devices: set[str]) -> set[tuple[str, str]]:
    return {(d, t) for d, c in kernels if d in devices for t in c.get("Tidx", ["*"])}


@pytest.mark.slow
def test_matching_releases_against_the_shipped_registries(original: dict[str, Any]) -> None:
    devices = {d for d, _ in ORIGINAL_KERNELS}
    listed = _kernel_pairs(ORIGINAL_KERNELS, devices)
    distance = {
        v: len(listed ^ _kernel_pairs(releases.release_registry(v).data["kernels"]["Range"], devices))
        for v in releases.shipped_releases()
    }
    fewest = min(distance.values())
    matches = original["matching_releases"]
    assert matches["exact"] == [v for v, n in distance.items() if n == 0]
    assert matches["closest"] == [v for v, n in distance.items() if n == fewest]
    assert matches["differences"] == fewest
    assert matches["exact"] == []  # no shipped release (2.12+) is 2.4.1


@pytest.mark.slow
def test_history_and_first_release_from_the_shipped_registries(original: dict[str, Any]) -> None:
    statuses = {
        v: releases.release_registry(v).declared("Range", "float16", "CPU").value
        for v in releases.shipped_releases()
    }
    assert [(h["version"], h["status"]) for h in original["history"]] == list(statuses.items())
    first = next(v for v, s in statuses.items() if s == "ok")
    assert original["first_release_with_kernel"] == first
    assert original["changes"][0]["version"] == first
    assert first in original["explanation"] and "float32" in original["explanation"]


@pytest.mark.slow
def test_installed_release_really_has_range_float16_on_cpu(
    original: dict[str, Any], tf_run: dict[str, Any]
) -> None:
    assert tf_run["range_float16_cpu"] == "float16"  # run directly, in a subprocess
    assert original["installed"]["release"] == tf_run["version"]
    assert original["installed"]["status"] == "ok"
    assert original["installed"]["ran"] is True and original["installed"]["result_dtype"] == "float16"


@pytest.mark.slow
def test_the_workaround_runs_in_a_fresh_process_and_returns_float16(
    original: dict[str, Any], _workaround_in_a_fresh_python: subprocess.Popen[str]
) -> None:
    work = original["workaround"]
    assert work["ran"] is True and work["result_dtype"] == "float16"
    assert "tf.cast" in work["code"] and "float32" in work["code"]
    assert "DTYPE float16" in python_output(_workaround_in_a_fresh_python)


@pytest.mark.slow
def test_keys_of_a_diagnosis(original: dict[str, Any]) -> None:
    keys = {
        "framework",
        "raw_op",
        "op",
        "dtype",
        "device",
        "kind",
        "listed_kernels",
        "matching_releases",
        "installed",
        "history",
        "changes",
        "first_release_with_kernel",
        "explanation",
        "workaround",
        "recognised",
    }
    assert keys <= set(original)
    assert {"code", "ran", "result_dtype", "note"} <= set(original["workaround"])
    assert original["recognised"] is True
    json.dumps(original)  # plain data


@pytest.mark.slow
def test_signature_error_offers_float32_and_cast(tf_run: dict[str, Any]) -> None:
    d = diagnose(tf_run["qr_bfloat16"])
    assert d["installed"]["status"] == "unsupported_dtype"
    assert d["first_release_with_kernel"] is None
    assert d["workaround"]["ran"] is True and d["workaround"]["result_dtype"] == "bfloat16"


@pytest.mark.slow
def test_pytorch_and_jax_code_is_written_but_not_run_without_the_framework() -> None:
    for framework, text in (("torch", TORCH_TEXTS[2][1]), ("jax", JAX_TEXTS[0][1])):
        d = diagnose(text)
        work = d["workaround"]
        assert d["framework"] == framework and work["code"]
        compile(work["code"], "<workaround>", "exec")  # valid Python
        if importlib.util.find_spec(framework) is None:
            assert work["ran"] is False and "not installed" in work["note"]
            assert d["installed"]["release"] is None
    torch_code = diagnose(TORCH_TEXTS[2][1], run_workaround=False)["workaround"]["code"]
    assert "torch.nn.functional.conv2d(" in torch_code and ".to(torch.float16)" in torch_code


def test_an_op_no_release_has_is_explained_without_history() -> None:
    d = diagnose(HOROVOD_2590, run_workaround=False)
    assert d["recognised"] and d["history"] == [] and d["op"] is None
    assert "no catalog op" in d["workaround"]["note"]


# ------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "text",
    ["", "   \n", "hello world", "Traceback (most recent call last):\nValueError: x", "\x00\xff\x1b[2J" * 50],
)
def test_unrecognised_text_says_what_was_looked_for(text: str) -> None:
    d = diagnose(text)
    assert d["recognised"] is False
    assert len(d["looked_for"]) == len(PATTERNS)
    assert "Could not find device for node" in d["explanation"]


def test_binary_garbage_and_huge_text() -> None:
    assert diagnose(bytes(range(256)) * 100)["recognised"] is False
    with pytest.raises(ValueError, match="at most"):
        parse_error("x" * (MAX_TEXT_BYTES + 1))


# ------------------------------------------------------------------------------------ CLI


def test_cli_argument_human_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--no-run", ORIGINAL]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^op\s+range", out, re.M) and re.search(r"^dtype\s+float16", out, re.M)
    assert re.search(r"^device\s+CPU", out, re.M) and "2.18.0" in out and "tf.cast" in out


def test_cli_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--no-run", "--json", TF_45920]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"environment", "result"}
    result = doc["result"]
    assert (result["raw_op"], result["op"], result["dtype"], result["device"]) == (
        "FloorMod",
        "floormod",
        "float16",
        "CPU",
    )
    assert result["workaround"]["ran"] is False and result["workaround"]["code"]


def test_cli_file_is_read_and_left_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "error.txt"
    path.write_text(TF_50282, encoding="utf-8")
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    assert main(["explain", "--no-run", "--json", "--file", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["result"]["raw_op"] == "Qr"
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


@pytest.mark.parametrize("kind", ["missing", "directory", "fifo"])
def test_cli_file_that_is_not_a_regular_file(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / kind
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    assert main(["explain", "--file", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "explain: error:" in err


def test_cli_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(TORCH_TEXTS[0][1].encode()), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    assert main(["explain", "--no-run", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["result"]["op"] == "log_softmax"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"nothing to see"), encoding="utf-8"))
    assert main(["explain", "-"]) == 1
    assert "not recognised" in capsys.readouterr().out


def test_cli_bad_input_gives_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    huge = tmp_path / "huge.txt"
    huge.write_bytes(b"a" * (MAX_TEXT_BYTES + 10))
    assert main(["explain", "--file", str(huge)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert main(["explain", "TEXT", "--file", str(huge)]) == 2
    assert "not both" in capsys.readouterr().err
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(256)) * 10)
    assert main(["explain", "--file", str(garbage)]) == 1
    capsys.readouterr()


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_cli_in_a_subprocess_from_stdin() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "explorer", "explain", "--no-run", "--json"],
        input=TF_122049,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["kind"] == "xla_invalid_type"


def test_cli_hostile_text_is_printed_without_control_characters(capsys: pytest.CaptureFixture[str]) -> None:
    text = "RuntimeError: \"\x1b]0;pwned\x07<img src=x onerror=alert(1)>\" not implemented for 'Half'"
    assert main(["explain", "--no-run", text]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out


# ------------------------------------------------------------------------------------ app


def _html(tab: Any) -> str:
    return str(tab.details.value)


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_app_tab_explains_the_original_error() -> None:
    require_tensorflow()
    import explorer

    app = explorer.App(load_tensorflow=False, tab="explain")
    tab = app.tab("explain")
    tab.text.value = ORIGINAL
    tab.button.click()
    assert tab.job is not None
    tab.job.wait(600)
    markup = _html(tab)
    assert "Range" in markup and "float16" in markup and "2.18.0" in markup
    assert "<pre" in markup and "tf.cast" in markup
    assert "px-msg-error" not in tab.status.value


def test_app_tab_escapes_hostile_text() -> None:
    import explorer
    from tests.support import hostile

    app = explorer.App(load_tensorflow=False, tab="explain")
    tab = app.tab("explain")
    tab.run_workaround.value = False
    for payload in hostile.PAYLOADS:  # in the node name, which the explanation shows
        tab.text.value = (
            f"Could not find device for node: {{{{node {payload}}}}} = Range[Tidx=DT_HALF]\n{payload}"
        )
        tab.explain(wait=True)
        markup = _html(tab)
        assert hostile.dangerous_markup(markup) == [], payload
        assert "<img" not in markup
        assert payload in hostile.visible_text(markup)
    tab.text.value = hostile.ALL_PAYLOADS  # not recognised: the text is not echoed as markup either
    tab.explain(wait=True)
    assert hostile.dangerous_markup(_html(tab)) == [] and "Not recognised" in _html(tab)
