"""Image ops (tf.image) on NHWC batches of one 4x4 RGB image with values in [0, 1):
colour-space conversions, grayscale, bilinear and nearest resizing (half-pixel centres),
contrast, per-image standardisation."""

from __future__ import annotations

import math

import numpy as np

from explorer.ops._define import define
from explorer.ops._inputs import IMAGE, uniform


def _ref_rgb_to_hsv(x: np.ndarray) -> np.ndarray:
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    v = np.max(x, axis=-1)
    spread = v - np.min(x, axis=-1)
    safe = np.where(spread > 0, spread, 1.0)
    s = np.where(v > 0, spread / np.where(v > 0, v, 1.0), 0.0)
    h = np.select([v == r, v == g], [(g - b) / safe, 2.0 + (b - r) / safe], 4.0 + (r - g) / safe) / 6.0
    h = np.where(spread > 0, h, 0.0)
    h = np.where(h < 0, h + 1.0, h)
    return np.stack([h, s, v], axis=-1)


def _ref_hsv_to_rgb(x: np.ndarray) -> np.ndarray:
    h, s, v = x[..., 0], x[..., 1], x[..., 2]
    dh = h * 6.0
    dr = np.clip(np.abs(dh - 3.0) - 1.0, 0.0, 1.0)
    dg = np.clip(2.0 - np.abs(dh - 2.0), 0.0, 1.0)
    db = np.clip(2.0 - np.abs(dh - 4.0), 0.0, 1.0)
    return np.stack([v * (1 - s + s * d) for d in (dr, dg, db)], axis=-1)


_GRAY = np.array([0.2989, 0.5870, 0.1140])


def _source_index(out_size: int, in_size: int) -> np.ndarray:
    """Half-pixel-centre source coordinates of the output pixels (tf.image.resize)."""
    return (np.arange(out_size) + 0.5) * (in_size / out_size) - 0.5


def _ref_resize_bilinear(x: np.ndarray, size: tuple[int, int] = (8, 8)) -> np.ndarray:
    out = x
    for axis, n in zip((1, 2), size, strict=True):
        src = _source_index(n, out.shape[axis])
        lo = np.floor(src)
        frac = src - lo
        lower = np.clip(lo, 0, out.shape[axis] - 1).astype(int)
        upper = np.clip(np.ceil(src), 0, out.shape[axis] - 1).astype(int)
        shape = [1] * out.ndim
        shape[axis] = n
        w = frac.reshape(shape)
        out = np.take(out, lower, axis=axis) * (1 - w) + np.take(out, upper, axis=axis) * w
    return out


def _ref_resize_nearest(x: np.ndarray, size: tuple[int, int] = (8, 8)) -> np.ndarray:
    out = x
    for axis, n in zip((1, 2), size, strict=True):
        index = np.floor((np.arange(n) + 0.5) * (out.shape[axis] / n))
        out = np.take(out, np.clip(index, 0, out.shape[axis] - 1).astype(int), axis=axis)
    return out


def _ref_adjust_contrast(x: np.ndarray) -> np.ndarray:
    mean = np.mean(x, axis=(1, 2), keepdims=True)
    return (x - mean) * 2.0 + mean


def _ref_standardize(x: np.ndarray) -> np.ndarray:
    mean = np.mean(x, axis=(1, 2, 3), keepdims=True)
    std = np.std(x, axis=(1, 2, 3), keepdims=True)
    return (x - mean) / np.maximum(std, 1.0 / math.sqrt(x[0].size))


define(
    name="rgb_to_hsv",
    group="image",
    arity=1,
    tf_public="tf.image.rgb_to_hsv",
    tf_raw_ops=("RGBToHSV",),
    tf=lambda tf, dt, x: tf.image.rgb_to_hsv(x),
    numpy=None,
    torch=None,
    reference=_ref_rgb_to_hsv,
    make_inputs=uniform(0, 1, IMAGE),
    doc="RGB -> HSV, all in [0, 1]",
)
define(
    name="hsv_to_rgb",
    group="image",
    arity=1,
    tf_public="tf.image.hsv_to_rgb",
    tf_raw_ops=("HSVToRGB",),
    tf=lambda tf, dt, x: tf.image.hsv_to_rgb(x),
    numpy=None,
    torch=None,
    reference=_ref_hsv_to_rgb,
    make_inputs=uniform(0, 1, IMAGE),
    doc="HSV -> RGB, all in [0, 1]",
)
define(
    name="rgb_to_grayscale",
    group="image",
    arity=1,
    tf_public="tf.image.rgb_to_grayscale",
    tf_raw_ops=("MatMul", "Cast", "Reshape", "ExpandDims"),
    tf=lambda tf, dt, x: tf.image.rgb_to_grayscale(x),
    numpy=lambda np, dt, x: np.matmul(x, np.asarray(_GRAY, dtype=dt))[..., None],
    torch=lambda torch, dt, x: torch.matmul(x, torch.tensor(_GRAY, dtype=dt, device=x.device))[..., None],
    reference=lambda x: (x @ _GRAY)[..., None],
    make_inputs=uniform(0, 1, IMAGE),
    doc="0.2989 R + 0.5870 G + 0.1140 B (TensorFlow computes every dtype in float32 and casts back)",
)
define(
    name="resize",
    group="image",
    arity=1,
    tf_public="tf.image.resize",
    tf_raw_ops=("ResizeBilinear",),
    tf=lambda tf, dt, x: tf.image.resize(x, (8, 8), method="bilinear"),
    numpy=None,
    torch=lambda torch, dt, x: torch.nn.functional.interpolate(
        x.permute(0, 3, 1, 2), size=(8, 8), mode="bilinear", align_corners=False
    ).permute(0, 2, 3, 1),
    reference=_ref_resize_bilinear,
    make_inputs=uniform(0, 1, IMAGE),
    doc="bilinear 4x4 -> 8x8, half-pixel centres (TensorFlow returns float32 for every input dtype)",
)
define(
    name="resize_nearest",
    group="image",
    arity=1,
    tf_public="tf.image.resize",
    tf_raw_ops=("ResizeNearestNeighbor",),
    tf=lambda tf, dt, x: tf.image.resize(x, (8, 8), method="nearest"),
    numpy=None,
    torch=lambda torch, dt, x: torch.nn.functional.interpolate(
        x.permute(0, 3, 1, 2), size=(8, 8), mode="nearest-exact"
    ).permute(0, 2, 3, 1),
    reference=_ref_resize_nearest,
    make_inputs=uniform(0, 1, IMAGE),
    doc="nearest-neighbour 4x4 -> 8x8, half-pixel centres",
)
define(
    name="adjust_contrast",
    group="image",
    arity=1,
    tf_public="tf.image.adjust_contrast",
    tf_raw_ops=("AdjustContrastv2",),
    tf=lambda tf, dt, x: tf.image.adjust_contrast(x, 2.0),
    numpy=lambda np, dt, x: (
        (x - np.mean(x, axis=(1, 2), keepdims=True)) * 2 + np.mean(x, axis=(1, 2), keepdims=True)
    ),
    torch=None,
    reference=_ref_adjust_contrast,
    make_inputs=uniform(0, 1, IMAGE),
    doc="(x - channel mean) * 2 + channel mean (TensorFlow computes float64 in float32)",
)
define(
    name="per_image_standardization",
    group="image",
    arity=1,
    tf_public="tf.image.per_image_standardization",
    tf_raw_ops=("Mean", "Sub", "Square", "Sqrt", "Rsqrt", "Maximum", "RealDiv", "Cast"),
    tf=lambda tf, dt, x: tf.image.per_image_standardization(x),
    numpy=None,
    torch=None,
    reference=_ref_standardize,
    make_inputs=uniform(0, 1, IMAGE),
    doc="(x - mean) / max(std, 1/sqrt(N)) per image (TensorFlow returns float32 for float64)",
)
