"""One op of the catalog, ready to be timed: its inputs already on the device in the dtype,
its function already built (traced, jitted or compiled on the first call), and a call that
returns only when the device has finished (:func:`prepared_call`).

The calls are the backends' own (:mod:`explorer.backends`): the op's ``tf``/``torch`` entry and
JAX's :func:`~explorer.backends.jax_backend.jax_call`, in the mode the availability probes use
(``tf.function(jit_compile=True)``, ``jax.jit``, ``torch.compile`` with Inductor), so what is
timed is what the Kernels view says runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from explorer.backends.base import first_output
from explorer.backends.silent import held_in
from explorer.formats import Format
from explorer.ops import Op

#: a prepared call: no arguments, returns the op's output once the device is done
Call = Callable[[], Any]


def inputs_for(op: Op, shapes: tuple[tuple[int, ...], ...], seed: int = 0) -> tuple[np.ndarray, ...]:
    """The op's catalog inputs (float64, valid in every format) tiled to ``shapes``.

    >>> from explorer.ops import get_op
    >>> [x.shape for x in inputs_for(get_op("matmul"), ((64, 64), (64, 32)))]
    [(64, 64), (64, 32)]
    """
    catalog_inputs = op.inputs(seed)
    if len(shapes) != len(catalog_inputs):
        raise ValueError(f"op {op.name} takes {len(catalog_inputs)} inputs, got {len(shapes)} shapes")
    return tuple(np.resize(x, shape) for x, shape in zip(catalog_inputs, shapes, strict=True))


@contextlib.contextmanager
def prepared_call(
    backend: str, op: Op, fmt: Format, device: str, mode: str, inputs: tuple[np.ndarray, ...]
) -> Iterator[Call]:
    """A context in which the returned call runs ``op`` on ``inputs`` in ``fmt`` (exceptions of
    a failed run propagate from the call; the first call compiles where the mode compiles)."""
    if backend == "torch":
        yield _torch_call(op, fmt, device, mode, inputs)
    elif backend == "tensorflow":
        from explorer.backends.tensorflow_backend import import_tensorflow

        tf = import_tensorflow()
        with tf.device(f"/{device}:0"):
            yield _tensorflow_call(tf, op, fmt, device, mode, inputs)
    elif backend == "jax":
        from explorer.backends.jax_backend import import_jax

        jax = import_jax()
        target = jax.devices("gpu" if device == "GPU" else "cpu")[0]
        with jax.enable_x64(True), jax.default_device(target):
            yield _jax_call(jax, target, op, fmt, mode, inputs)
    elif backend == "numpy":
        yield _numpy_call(op, fmt, inputs)
    else:  # a backend that keeps its own timed call
        from explorer.backends import get_backend

        own = get_backend(backend).timed_call(op, fmt, device, mode, inputs)
        if own is None:
            raise ValueError(
                f"no timed calls for the {backend} backend; valid: torch, tensorflow, jax, numpy"
            )
        yield own


def output_dtype(value: Any) -> str:
    """The dtype name of a framework's output (``"bfloat16"``, ``"float32"`` ...).

    >>> output_dtype(np.zeros(2, np.float16))
    'float16'
    """
    dtype = getattr(value, "dtype", None)
    name = getattr(dtype, "name", None) or str(dtype)
    return name.removeprefix("torch.")


def _torch_call(op: Op, fmt: Format, device: str, mode: str, inputs: tuple[np.ndarray, ...]) -> Call:
    from explorer.backends.torch_backend import _compiled, import_torch, torch_dtype

    torch = import_torch()
    dtype = torch_dtype(fmt)
    if op.torch is None or dtype is None:
        raise ValueError(f"PyTorch has no implementation of {op.name} in {fmt.name}")
    target = "cuda" if device == "GPU" else "cpu"
    tensors = [torch.from_numpy(held_in(fmt, x)).to(target).to(dtype) for x in inputs]
    entry = op.torch

    def fn(*args: Any) -> Any:
        return first_output(entry(torch, dtype, *args))

    run = _compiled(torch, fn) if mode == "compile" else fn
    sync = torch.cuda.synchronize if target == "cuda" else None

    def call() -> Any:
        out = run(*tensors)
        if sync is not None:
            sync()
        return out

    return call


def _tensorflow_call(
    tf: Any, op: Op, fmt: Format, device: str, mode: str, inputs: tuple[np.ndarray, ...]
) -> Call:
    from explorer.backends.tensorflow_backend import tf_dtype, traced_arguments, traced_function

    dtype = tf_dtype(fmt)
    if dtype is None:
        raise ValueError(f"TensorFlow has no {fmt.name} dtype")
    sync_devices = getattr(getattr(tf.test, "experimental", None), "sync_devices", None)
    sync = sync_devices if device == "GPU" and sync_devices is not None else None
    if mode == "xla":
        args = [tf.constant(a) for a in traced_arguments(op, tuple(held(fmt, inputs)), fmt)]
        fn = traced_function(op, tf, dtype, jit_compile=True)

        def run() -> Any:
            return fn(*args)

    else:
        tensors = [tf.constant(x.astype(fmt.storage_dtype)) for x in held(fmt, inputs)]
        entry = op.tf

        def run() -> Any:
            return first_output(entry(tf, dtype, *tensors))

    def call() -> Any:
        out = run()
        if sync is not None:
            sync()
        return out

    return call


def held(fmt: Format, inputs: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    """``inputs`` rounded to ``fmt`` (float64), as the backends hand them over."""
    return [held_in(fmt, x) for x in inputs]


def _jax_call(jax: Any, target: Any, op: Op, fmt: Format, mode: str, inputs: tuple[np.ndarray, ...]) -> Call:
    from explorer.backends.jax_backend import _function, jax_call, jax_dtype

    if jax_call(op) is None or jax_dtype(fmt) is None:
        raise ValueError(f"JAX has no implementation of {op.name} in {fmt.name}")
    arrays = [jax.device_put(x.astype(fmt.storage_dtype), target) for x in held(fmt, inputs)]
    fn = _function(op.name, fmt.name, mode == "xla")

    def call() -> Any:
        return jax.block_until_ready(fn(*arrays))

    return call


def _numpy_call(op: Op, fmt: Format, inputs: tuple[np.ndarray, ...]) -> Call:
    from explorer.backends import get_backend

    if op.numpy is None or not get_backend("numpy").supports_format(fmt):
        raise ValueError(f"NumPy has no implementation of {op.name} in {fmt.name}")
    entry = op.numpy
    dtype = fmt.storage_dtype
    arrays = [x.astype(dtype) for x in held(fmt, inputs)]

    def call() -> Any:
        with np.errstate(all="ignore"):
            return first_output(entry(np, dtype, *arrays))

    return call
