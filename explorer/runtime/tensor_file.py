"""Read a user's tensor from a ``.npy`` file, as hostile input: the one reader of
``blocks --tensor`` and ``model --inputs``.

The file is opened read-only and never written.  Its header is read and checked first
(:func:`read_header`: the magic string, the format version, the header dictionary parsed by
NumPy's own ``read_array_header_1_0``/``2_0`` with their size limit, the dtype, and
``prod(shape) x itemsize`` against the file's size and the caps) before any array is
allocated; only then are exactly that many bytes read.  It must be a plain ``.npy`` array of
real numbers (no pickled objects, not an ``.npz`` archive), at most :data:`MAX_TENSOR_BYTES` on
disk and :data:`MAX_TENSOR_ELEMENTS` elements.  Every refusal is a ValueError (or the
FileNotFoundError of a missing path) with one line that names the file.

>>> import tempfile, os, numpy as np
>>> path = os.path.join(tempfile.mkdtemp(), "w.npy")
>>> np.save(path, np.arange(4, dtype=np.float32))
>>> load_tensor(path).tolist()
[0.0, 1.0, 2.0, 3.0]
>>> read_header(path).shape, read_header(path).dtype
((4,), dtype('float32'))
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from explorer.runtime.user_path import regular_file

#: the largest file read, in bytes (a float32 tensor of 64 Mi elements)
MAX_TENSOR_BYTES = 256 * 1024 * 1024
#: the most elements read (each becomes a float64 in memory)
MAX_TENSOR_ELEMENTS = 64 * 1024 * 1024
#: the longest header read (NumPy's own default limit for ``read_array_header``)
MAX_HEADER_BYTES = 10_000
_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK"


@dataclass(frozen=True)
class NpyHeader:
    """What a checked ``.npy`` header says, and where its data start."""

    #: the path as given
    path: str
    shape: tuple[int, ...]
    dtype: np.dtype
    fortran_order: bool
    #: the byte offset of the first element
    data_offset: int

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)


def _refuse(name: str, why: str) -> ValueError:
    return ValueError(f"{name!r} {why}")


def read_header(path: str | os.PathLike[str]) -> NpyHeader:
    """The checked header of the ``.npy`` file ``path``; nothing of the array is allocated.

    Refused with a ValueError of one line: not a regular file, empty, over
    :data:`MAX_TENSOR_BYTES`, not a ``.npy`` file (a zip such as an ``.npz``, text, anything
    else), a version other than 1.0 and 2.0, a header NumPy cannot parse or that is cut short,
    a dtype other than real numbers (objects, pickles, strings, booleans, complex, records),
    an empty array, more than :data:`MAX_TENSOR_ELEMENTS` elements, or fewer data bytes in the
    file than the header promises.
    """
    name = os.fspath(path)
    file = regular_file(name)
    size = file.stat().st_size
    if size == 0:
        raise _refuse(name, "is empty (0 bytes); a .npy file is needed (save one with numpy.save)")
    if size > MAX_TENSOR_BYTES:
        raise _refuse(name, f"is {size:,} bytes; at most {MAX_TENSOR_BYTES:,} are read")
    with open(file, "rb") as handle:
        start = handle.read(len(_NPY_MAGIC))
        if start.startswith(_ZIP_MAGIC):
            raise _refuse(name, "is a zip archive (an .npz?), not a .npy array; save one with numpy.save")
        if start != _NPY_MAGIC:
            raise _refuse(name, "is not a .npy file (save one with numpy.save)")
        handle.seek(0)
        try:
            version = np.lib.format.read_magic(handle)
            if version == (1, 0):
                header = np.lib.format.read_array_header_1_0(handle, max_header_size=MAX_HEADER_BYTES)
            elif version == (2, 0):
                header = np.lib.format.read_array_header_2_0(handle, max_header_size=MAX_HEADER_BYTES)
            else:
                raise _refuse(
                    name, f"is a .npy file of version {version[0]}.{version[1]}; 1.0 and 2.0 are read"
                )
        except ValueError as exc:
            if str(exc).startswith(repr(name)):
                raise
            raise _refuse(name, f"has a .npy header that cannot be read ({_first_line(exc)})") from None
        except Exception as exc:  # EOFError, SyntaxError, tokenize errors of a cut or forged header
            raise _refuse(name, f"has a .npy header that cannot be read ({_first_line(exc)})") from None
        offset = handle.tell()
    shape, fortran_order, dtype = header
    if dtype.hasobject or dtype.names is not None or dtype.subdtype is not None or dtype.kind not in "fiu":
        raise _refuse(name, f"holds {dtype} values; a tensor of real numbers is needed")
    info = NpyHeader(name, tuple(int(n) for n in shape), dtype, bool(fortran_order), offset)
    if info.size == 0:
        raise _refuse(name, f"holds an empty array (shape {info.shape})")
    if info.size > MAX_TENSOR_ELEMENTS:
        raise _refuse(name, f"holds {info.size:,} elements; at most {MAX_TENSOR_ELEMENTS:,} are read")
    needed = info.size * dtype.itemsize
    if size - offset < needed:
        raise _refuse(
            name,
            f"is cut short: its header promises {needed:,} bytes of data (shape {info.shape}, "
            f"{dtype}), the file holds {size - offset:,}",
        )
    return info


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


def _read(header: NpyHeader, start: int, count: int) -> np.ndarray:
    """``count`` elements from element ``start`` in file order, as stored (exactly those bytes)."""
    with open(header.path, "rb") as handle:
        handle.seek(header.data_offset + start * header.dtype.itemsize)
        values = np.fromfile(handle, dtype=header.dtype, count=count)
    if values.size != count:  # the file shrank since its header was read
        raise _refuse(header.path, "changed while it was read")
    return values


def load_tensor(path: str | os.PathLike[str]) -> np.ndarray:
    """The array in the ``.npy`` file ``path`` as float64 (a copy: the file is not kept open),
    after :func:`read_header` checked it."""
    header = read_header(path)
    values = _read(header, 0, header.size)
    shaped = values.reshape(header.shape, order="F" if header.fortran_order else "C")
    return np.array(shaped, dtype=np.float64)


def row_chunks(header: NpyHeader, max_elements: int, multiple: int = 1) -> Iterator[np.ndarray]:
    """The tensor as 2-D float64 pieces ``(rows, columns)`` of at most ``max_elements`` elements
    (at least one row segment), row after row, along the last axis: whole rows where they fit,
    else each row cut at multiples of ``multiple`` elements (a block size: blocks stay whole).
    Only one piece is in memory at a time."""
    length = header.shape[-1] if header.shape else 1
    rows = header.size // length
    width = length if length <= max_elements else max(multiple, max_elements // multiple * multiple)
    if header.fortran_order:
        mapped = np.load(header.path, mmap_mode="r", allow_pickle=False).reshape(rows, length, order="F")
        for first in range(0, rows, max(1, max_elements // width)):
            last = min(rows, first + max(1, max_elements // width))
            for col in range(0, length, width):
                yield np.array(mapped[first:last, col : col + width], dtype=np.float64)
        return
    if width == length:
        step = max(1, max_elements // length)
        for first in range(0, rows, step):
            count = min(step, rows - first)
            piece = _read(header, first * length, count * length)
            yield piece.astype(np.float64).reshape(count, length)
        return
    for row in range(rows):
        for col in range(0, length, width):
            count = min(width, length - col)
            yield _read(header, row * length + col, count).astype(np.float64).reshape(1, count)
