"""Read a user's tensor from a ``.npy`` file, as hostile input.

The file is opened read-only and never written; it must be a plain ``.npy`` array (no pickled
objects: ``allow_pickle=False``; not an ``.npz`` archive) of real numbers, at most
:data:`MAX_TENSOR_BYTES` on disk and :data:`MAX_TENSOR_ELEMENTS` elements.  Every refusal
is a ValueError (or the OSError of a missing or unreadable path) with one clear line.

>>> import tempfile, os, numpy as np
>>> path = os.path.join(tempfile.mkdtemp(), "w.npy")
>>> np.save(path, np.arange(4, dtype=np.float32))
>>> load_tensor(path).tolist()
[0.0, 1.0, 2.0, 3.0]
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

#: the largest file read, in bytes (a float32 tensor of 64 Mi elements)
MAX_TENSOR_BYTES = 256 * 1024 * 1024
#: the most elements read (each becomes a float64 in memory)
MAX_TENSOR_ELEMENTS = 64 * 1024 * 1024
_NPY_MAGIC = b"\x93NUMPY"


def load_tensor(path: str | os.PathLike[str]) -> np.ndarray:
    """The array in the ``.npy`` file ``path`` as float64 (a copy: the file is not kept open).

    Refused with a ValueError: a path that is not a regular file, a file over the caps, one
    that is not a ``.npy`` array (an ``.npz``, a pickle, text), an array of objects,
    strings, booleans, complex numbers or records, and an empty array.
    """
    name = os.fspath(path)
    file = Path(name)
    if not file.is_file():
        if not file.exists():
            raise FileNotFoundError(f"no such file: {name!r}")
        raise ValueError(f"{name!r} is not a regular file")
    size = file.stat().st_size
    if size > MAX_TENSOR_BYTES:
        raise ValueError(f"{name!r} is {size:,} bytes; at most {MAX_TENSOR_BYTES:,} are read")
    with open(file, "rb") as handle:
        if handle.read(len(_NPY_MAGIC)) != _NPY_MAGIC:
            raise ValueError(f"{name!r} is not a .npy file (save one with numpy.save)")
        handle.seek(0)
        try:
            array = np.load(handle, allow_pickle=False, mmap_mode=None)
        except (ValueError, OSError, EOFError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ValueError(f"{name!r} is not a plain .npy array ({reason})") from None
    if not isinstance(array, np.ndarray):  # pragma: no cover - np.load of a .npy gives an array
        raise ValueError(f"{name!r} did not hold one array")
    if array.dtype.kind not in "fiu" or array.dtype.names is not None:
        raise ValueError(f"{name!r} holds {array.dtype} values; a tensor of real numbers is needed")
    if array.size == 0:
        raise ValueError(f"{name!r} holds an empty array (shape {array.shape})")
    if array.size > MAX_TENSOR_ELEMENTS:
        raise ValueError(f"{name!r} holds {array.size:,} elements; at most {MAX_TENSOR_ELEMENTS:,} are read")
    return np.array(array, dtype=np.float64)
