"""TensorFlow: eager, and XLA through ``tf.function(jit_compile=True)``.

TensorFlow is imported on first use, never at ``import explorer``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
from collections.abc import Iterator
from functools import cache
from typing import Any

import numpy as np

from explorer.backends.base import MODES, Backend, first_output
from explorer.formats import Format
from explorer.ops import Op
from explorer.outcome import Outcome, Status


@cache
def import_tensorflow() -> Any:
    """Import TensorFlow quietly: its C++ start-up chatter (written before logging is
    configured, so TF_CPP_MIN_LOG_LEVEL cannot stop it) is sent to /dev/null."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with _stderr_silenced():
        import tensorflow as tf

        tf.config.list_logical_devices()  # device discovery prints too
    return tf


@contextlib.contextmanager
def _stderr_silenced() -> Iterator[None]:
    try:
        saved = os.dup(2)
    except OSError:  # no real stderr (some embedded interpreters)
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def tf_dtype(fmt: Format) -> Any | None:
    """The ``tf.DType`` for a format, or None when TensorFlow has none."""
    if fmt.emulated:
        return None
    from tensorflow.python.framework import dtypes

    return getattr(dtypes, fmt.name, None)


_NO_KERNEL = re.compile(
    r"Could not find device for node|No registered '.*' OpKernel|"
    r"no kernel|Detected unsupported operations",
    re.IGNORECASE,
)
_UNSUPPORTED = re.compile(
    r"not in the list of allowed values|not in list of allowed values|"
    r"allowed values|Could not satisfy dtype|unsupported type|"
    r"Unsupported dtype|is not a supported|is not supported|requires tf\.float|"
    r"Invalid dtype|one of \[tf\.float",
    re.IGNORECASE,
)


def classify_error(text: str) -> Status:
    """Status for a TensorFlow error message (the registry refines this in analysis)."""
    if _UNSUPPORTED.search(text) and not _NO_KERNEL.search(text.split("\n")[0]):
        return Status.UNSUPPORTED_DTYPE
    if _NO_KERNEL.search(text):
        return Status.NO_KERNEL
    if _UNSUPPORTED.search(text):
        return Status.UNSUPPORTED_DTYPE
    return Status.ERROR


def device_type_of(device_name: str) -> str:
    """``"/job:localhost/replica:0/task:0/device:GPU:0"`` -> ``"GPU"``."""
    match = re.search(r"device:([A-Z_]+):\d+", device_name)
    return match.group(1) if match else device_name


class TensorflowBackend(Backend):
    """Runs each op's TensorFlow call, eagerly or compiled with XLA."""

    name = "tensorflow"
    modes = MODES

    def is_installed(self) -> bool:
        return importlib.util.find_spec("tensorflow") is not None

    def version(self) -> str | None:
        return str(import_tensorflow().__version__) if self.is_installed() else None

    def devices(self) -> list[str]:
        tf = import_tensorflow()
        return sorted(
            {d.device_type for d in tf.config.list_logical_devices() if d.device_type in ("CPU", "GPU")}
        )

    def supports_format(self, fmt: Format) -> bool:
        return tf_dtype(fmt) is not None

    def _run(self, op: Op, inputs: tuple[np.ndarray, ...], fmt: Format, device: str, mode: str) -> Outcome:
        tf = import_tensorflow()
        dtype = tf_dtype(fmt)
        try:
            with tf.device(f"/{device}:0"):
                tensors = [tf.constant(x.astype(fmt.storage_dtype)) for x in inputs]

                def call(*args: Any) -> Any:
                    return first_output(op.tf(tf, dtype, *args))

                if mode == "xla":
                    out = tf.function(call, jit_compile=True, autograph=False)(*tensors)
                else:
                    out = call(*tensors)
                result = out.numpy()
        except Exception as exc:  # TF raises many types; the text tells them apart
            text = f"{type(exc).__name__}: {exc}"
            if isinstance(exc, TypeError | ValueError | tf.errors.OpError):
                return Outcome(classify_error(text), error=text)
            raise
        ran_on = device_type_of(out.device)
        details = []
        status = Status.OK
        if ran_on != device:
            status = Status.FALLBACK
            details.append(f"asked for {device}, ran on {ran_on}")
        if op.float_output and out.dtype != dtype:
            status = Status.FALLBACK
            details.append(f"result came back in {out.dtype.name}, not {fmt.name}")
        return Outcome(status, np.asarray(result), ran_on, detail="; ".join(details))
