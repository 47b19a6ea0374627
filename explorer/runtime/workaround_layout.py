"""The layout a framework's user gives an op's tensors, where it is not the catalog's.

The catalog (:mod:`explorer.ops`) writes every op on TensorFlow's layout: images NHWC, filters
HWIO (``(kh, kw, in, out)``), so that every framework runs on one set of inputs; its PyTorch
calls permute to NCHW / OIHW and back.  A workaround is code a user pastes onto their own
tensors, so it must take them as the user's framework lays them out: PyTorch's
``F.conv2d(x, w)`` on an NCHW ``x`` and an OIHW ``w``, JAX's ``jax.lax.conv`` on the same
(its default dimension numbers).  Written from the catalog's PyTorch call instead, the code
permuted a PyTorch user's NCHW tensor as if it were NHWC.

:data:`NATIVE` holds, per framework (as :mod:`explorer.runtime.workaround_source` names them:
``tf``, ``numpy``, ``torch``, ``jax``) and op, the call on the framework's own layout and how the
catalog's inputs and output are rearranged into it; an op missing there takes the catalog's
layout (vectors, matrices, and TensorFlow's own NHWC).  :data:`CHECK_SHAPES` gives the
layout-bearing ops inputs of distinct, non-square sizes (catalog layout) for the check of
:mod:`explorer.runtime.workaround_check`, so that a wrong layout cannot pass by accident.

>>> import numpy as np
>>> [a.shape for a in native_inputs("torch", "conv2d", (np.zeros((2, 5, 7, 3)), np.zeros((2, 3, 3, 4))))]
[(2, 3, 5, 7), (4, 3, 2, 3)]
>>> layout_words("torch", "conv2d")
'input NCHW, weight OIHW (PyTorch F.conv2d)'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

Rearrange = Callable[[np.ndarray], np.ndarray]


def _axes(*order: int) -> Rearrange:
    """Rearrange an array's axes into ``order`` (``np.transpose``)."""
    return lambda a: np.transpose(a, order)


def _same(a: np.ndarray) -> np.ndarray:
    return a


def _depthwise_filter(f: np.ndarray) -> np.ndarray:
    """HWCM (TensorFlow's depthwise filter) -> (C*M, 1, kh, kw), PyTorch's / lax's grouped weight
    (output channel c*M + m, as TensorFlow orders them)."""
    kh, kw, c, m = f.shape
    return np.transpose(f, (2, 3, 0, 1)).reshape(c * m, 1, kh, kw)


#: (0.2989, 0.5870, 0.1140): the catalog's grayscale weights (explorer.ops.image), as (1, 3, 1, 1)
_GRAY_NCHW = np.array([0.2989, 0.5870, 0.1140]).reshape(1, 3, 1, 1)


@dataclass(frozen=True)
class NativeLayout:
    """An op's call on a framework's own layout."""

    #: the layout in words, shown with the workaround
    words: str
    #: ``lambda module, dt, *inputs`` on the framework's layout (read as source, like the catalog's)
    call: Callable[..., Any]
    #: per input: the catalog-layout array rearranged into the framework's layout
    inputs: tuple[Rearrange, ...]
    #: the catalog-layout output rearranged into the framework's layout
    output: Rearrange
    #: how the generated code names the module the call's first parameter stands for
    module: str


_NCHW = _axes(0, 3, 1, 2)
_NCW = _axes(0, 2, 1)
_NCDHW = _axes(0, 4, 1, 2, 3)

_TORCH: dict[str, NativeLayout] = {
    "conv1d": NativeLayout(
        "input NCW, weight OIW (PyTorch F.conv1d)",
        lambda torch, dt, x, f: torch.nn.functional.conv1d(x, f),
        (_NCW, _axes(2, 1, 0)),
        _NCW,
        "torch",
    ),
    "conv2d": NativeLayout(
        "input NCHW, weight OIHW (PyTorch F.conv2d)",
        lambda torch, dt, x, f: torch.nn.functional.conv2d(x, f),
        (_NCHW, _axes(3, 2, 0, 1)),
        _NCHW,
        "torch",
    ),
    "depthwise_conv2d": NativeLayout(
        "input NCHW, weight (C*M, 1, kH, kW), groups=C (PyTorch F.conv2d)",
        lambda torch, dt, x, f: torch.nn.functional.conv2d(x, f, groups=x.shape[1]),
        (_NCHW, _depthwise_filter),
        _NCHW,
        "torch",
    ),
    "conv3d": NativeLayout(
        "input NCDHW, weight OIDHW (PyTorch F.conv3d)",
        lambda torch, dt, x, f: torch.nn.functional.conv3d(x, f),
        (_NCDHW, _axes(4, 3, 0, 1, 2)),
        _NCDHW,
        "torch",
    ),
    "max_pool": NativeLayout(
        "input NCHW (PyTorch F.max_pool2d)",
        lambda torch, dt, x: torch.nn.functional.max_pool2d(x, 2),
        (_NCHW,),
        _NCHW,
        "torch",
    ),
    "avg_pool": NativeLayout(
        "input NCHW (PyTorch F.avg_pool2d)",
        lambda torch, dt, x: torch.nn.functional.avg_pool2d(x, 2),
        (_NCHW,),
        _NCHW,
        "torch",
    ),
    "fused_batch_norm": NativeLayout(
        "input NCHW, scale and offset per channel (PyTorch F.batch_norm)",
        lambda torch, dt, x, s, o: torch.nn.functional.batch_norm(
            x, None, None, s, o, training=True, eps=1e-3
        ),
        (_NCHW, _same, _same),
        _NCHW,
        "torch",
    ),
    "resize": NativeLayout(
        "input NCHW (PyTorch F.interpolate)",
        lambda torch, dt, x: torch.nn.functional.interpolate(
            x, size=(8, 8), mode="bilinear", align_corners=False
        ),
        (_NCHW,),
        _NCHW,
        "torch",
    ),
    "resize_nearest": NativeLayout(
        "input NCHW (PyTorch F.interpolate)",
        lambda torch, dt, x: torch.nn.functional.interpolate(x, size=(8, 8), mode="nearest-exact"),
        (_NCHW,),
        _NCHW,
        "torch",
    ),
    "rgb_to_grayscale": NativeLayout(
        "input NCHW, RGB on axis 1 (PyTorch's image layout)",
        lambda torch, dt, x: (x * torch.tensor(_GRAY_NCHW, dtype=dt, device=x.device)).sum(1, keepdim=True),
        (_NCHW,),
        _NCHW,
        "torch",
    ),
}

_JAX: dict[str, NativeLayout] = {
    "conv1d": NativeLayout(
        "input NCW, weight OIW (jax.lax.conv_general_dilated's default)",
        lambda jax, dt, x, f: jax.lax.conv_general_dilated(x, f, (1,), "VALID"),
        (_NCW, _axes(2, 1, 0)),
        _NCW,
        "jax",
    ),
    "conv2d": NativeLayout(
        "input NCHW, weight OIHW (jax.lax.conv's layout)",
        lambda jax, dt, x, f: jax.lax.conv(x, f, (1, 1), "VALID"),
        (_NCHW, _axes(3, 2, 0, 1)),
        _NCHW,
        "jax",
    ),
    "depthwise_conv2d": NativeLayout(
        "input NCHW, weight (C*M, 1, kH, kW), feature_group_count=C (jax.lax.conv_general_dilated)",
        lambda jax, dt, x, f: jax.lax.conv_general_dilated(
            x, f, (1, 1), "VALID", feature_group_count=x.shape[1]
        ),
        (_NCHW, _depthwise_filter),
        _NCHW,
        "jax",
    ),
    "conv3d": NativeLayout(
        "input NCDHW, weight OIDHW (jax.lax.conv_general_dilated's default)",
        lambda jax, dt, x, f: jax.lax.conv_general_dilated(x, f, (1, 1, 1), "VALID"),
        (_NCDHW, _axes(4, 3, 0, 1, 2)),
        _NCDHW,
        "jax",
    ),
}

#: per framework (workaround_source's names) and op: the call on the framework's own layout
NATIVE: dict[str, dict[str, NativeLayout]] = {"torch": _TORCH, "jax": _JAX}

#: catalog-layout shapes of the check's inputs for the ops whose inputs carry a layout: every
#: axis a different size (N=2, C=3, H=5, W=7...), so that a transposed layout fails to run or
#: gives other numbers; the values are drawn in each catalog input's own range
CHECK_SHAPES: dict[str, tuple[tuple[int, ...], ...]] = {
    "conv1d": ((2, 9, 3), (2, 3, 4)),
    "conv2d": ((2, 5, 7, 3), (2, 3, 3, 4)),
    "depthwise_conv2d": ((2, 5, 7, 3), (2, 3, 3, 2)),
    "conv3d": ((2, 4, 5, 6, 3), (2, 3, 2, 3, 4)),
    "max_pool": ((2, 4, 6, 3),),
    "avg_pool": ((2, 4, 6, 3),),
    "fused_batch_norm": ((2, 4, 6, 3), (3,), (3,)),
    "resize": ((2, 5, 7, 3),),
    "resize_nearest": ((2, 5, 7, 3),),
    "rgb_to_grayscale": ((2, 5, 7, 3),),
    "rgb_to_hsv": ((2, 5, 7, 3),),
    "hsv_to_rgb": ((2, 5, 7, 3),),
    "adjust_contrast": ((2, 5, 7, 3),),
    "per_image_standardization": ((2, 5, 7, 3),),
    "batch_matmul": ((2, 3, 5), (2, 5, 4)),
}


def native_layout(framework: str, op: str) -> NativeLayout | None:
    """The op's call on ``framework``'s own layout, or None where it takes the catalog's."""
    return NATIVE.get(framework, {}).get(op)


def layout_words(framework: str, op: str) -> str:
    """The layout the workaround's code takes its tensors in, in words ("" for vectors and
    matrices in the catalog's layout)."""
    native = native_layout(framework, op)
    if native is not None:
        return native.words
    if op in CHECK_SHAPES and op != "batch_matmul":
        return "channels last (NHWC; filters HWIO), as the catalog and TensorFlow lay them out"
    return ""


def native_inputs(framework: str, op: str, values: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The catalog-layout ``values`` rearranged into ``framework``'s layout for ``op``."""
    native = native_layout(framework, op)
    if native is None:
        return [np.asarray(v) for v in values]
    return [np.ascontiguousarray(f(np.asarray(v))) for f, v in zip(native.inputs, values, strict=True)]


def native_output(framework: str, op: str, value: np.ndarray) -> np.ndarray:
    """The catalog-layout output ``value`` rearranged into ``framework``'s layout for ``op``."""
    native = native_layout(framework, op)
    return np.asarray(value) if native is None else np.ascontiguousarray(native.output(np.asarray(value)))
