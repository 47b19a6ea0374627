"""Fourier transforms (tf.signal): fft, ifft, rfft, fft2d, rfft2d of real inputs, and the
DCT-II.  Every complex result is its magnitude |X| (the canonical output), in the
reference and in every call."""

from __future__ import annotations

from typing import Any

import numpy as np

from explorer.ops._define import define
from explorer.ops._inputs import uniform


def _tf_complex(tf: Any, dt: Any, x: Any) -> Any:
    """x as the complex dtype TensorFlow's FFT takes: complex128 for float64, complex64 otherwise."""
    return tf.cast(x, tf.complex128 if dt == tf.float64 else tf.complex64)


def _ref_dct(x: np.ndarray) -> np.ndarray:
    n = x.shape[-1]
    k = np.arange(n)[:, None]
    basis = 2.0 * np.cos(np.pi * k * (2 * np.arange(n)[None, :] + 1) / (2 * n))
    return x @ basis.T


define(
    name="fft",
    group="fft",
    arity=1,
    tf_public="tf.signal.fft",
    tf_raw_ops=("FFT", "Cast", "ComplexAbs"),
    tf=lambda tf, dt, x: tf.math.abs(tf.signal.fft(_tf_complex(tf, dt, x))),
    numpy=lambda np, dt, x: np.abs(np.fft.fft(x)),
    torch=lambda torch, dt, x: torch.abs(torch.fft.fft(x)),
    reference=lambda x: np.abs(np.fft.fft(x)),
    make_inputs=uniform(-1, 1, (16,)),
    doc="|FFT| of 16 real values, cast to complex64 (complex128 for float64) for TensorFlow",
)
define(
    name="ifft",
    group="fft",
    arity=1,
    tf_public="tf.signal.ifft",
    tf_raw_ops=("IFFT", "Cast", "ComplexAbs"),
    tf=lambda tf, dt, x: tf.math.abs(tf.signal.ifft(_tf_complex(tf, dt, x))),
    numpy=lambda np, dt, x: np.abs(np.fft.ifft(x)),
    torch=lambda torch, dt, x: torch.abs(torch.fft.ifft(x)),
    reference=lambda x: np.abs(np.fft.ifft(x)),
    make_inputs=uniform(-1, 1, (16,)),
    doc="|inverse FFT| of 16 real values",
)
define(
    name="rfft",
    group="fft",
    arity=1,
    tf_public="tf.signal.rfft",
    tf_raw_ops=("RFFT", "ComplexAbs"),
    tf=lambda tf, dt, x: tf.math.abs(tf.signal.rfft(x)),
    numpy=lambda np, dt, x: np.abs(np.fft.rfft(x)),
    torch=lambda torch, dt, x: torch.abs(torch.fft.rfft(x)),
    reference=lambda x: np.abs(np.fft.rfft(x)),
    make_inputs=uniform(-1, 1, (16,)),
    doc="|real FFT| of 16 values (9 bins)",
)
define(
    name="fft2d",
    group="fft",
    arity=1,
    tf_public="tf.signal.fft2d",
    tf_raw_ops=("FFT2D", "Cast", "ComplexAbs"),
    tf=lambda tf, dt, x: tf.math.abs(tf.signal.fft2d(_tf_complex(tf, dt, x))),
    numpy=lambda np, dt, x: np.abs(np.fft.fft2(x)),
    torch=lambda torch, dt, x: torch.abs(torch.fft.fft2(x)),
    reference=lambda x: np.abs(np.fft.fft2(x)),
    make_inputs=uniform(-1, 1, (8, 8)),
    doc="|2-D FFT| of an 8x8 real array",
)
define(
    name="rfft2d",
    group="fft",
    arity=1,
    tf_public="tf.signal.rfft2d",
    tf_raw_ops=("RFFT2D", "ComplexAbs"),
    tf=lambda tf, dt, x: tf.math.abs(tf.signal.rfft2d(x)),
    numpy=lambda np, dt, x: np.abs(np.fft.rfft2(x)),
    torch=lambda torch, dt, x: torch.abs(torch.fft.rfft2(x)),
    reference=lambda x: np.abs(np.fft.rfft2(x)),
    make_inputs=uniform(-1, 1, (8, 8)),
    doc="|2-D real FFT| of an 8x8 array",
)
define(
    name="dct",
    group="fft",
    arity=1,
    tf_public="tf.signal.dct",
    tf_raw_ops=(
        "RFFT",
        "Real",
        "Complex",
        "Exp",
        "Mul",
        "Neg",
        "RealDiv",
        "Pad",
        "StridedSlice",
        "Range",
        "Cast",
    ),
    tf=lambda tf, dt, x: tf.signal.dct(x, type=2),
    numpy=None,
    torch=None,
    reference=_ref_dct,
    make_inputs=uniform(-1, 1, (16,)),
    doc="unnormalised DCT-II of 16 values (real output; TensorFlow computes it through RFFT)",
)
