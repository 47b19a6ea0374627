"""The one ``.npy`` reader of ``blocks --tensor`` and ``model --inputs``: headers checked before
any allocation, one-line refusals, and ``blocks`` piece by piece in bounded memory."""

from __future__ import annotations

import math
import sys
import warnings
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from explorer.blocks import quantize_blocks, quantize_per_tensor
from explorer.cli import main
from explorer.queries import blocks as blocks_query
from explorer.runtime import tensor_file


def _npy_header(shape: tuple[int, ...], descr: str = "<f4") -> bytes:
    """A version 1.0 ``.npy`` header as NumPy writes it (written here, not by NumPy)."""
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape!r}, }}"
    total = 10 + len(text) + 1
    text += " " * (-total % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode("latin1")


def hostile_npy_files(folder: Path) -> dict[str, tuple[Path, str]]:
    """The hostile ``.npy`` files of issue 39, with what the refusal must say."""
    files: dict[str, tuple[Path, str]] = {}
    huge = folder / "huge_header.npy"
    huge.write_bytes(_npy_header((10**6, 10**6)) + bytes(64))
    files["10**12 elements"] = (huge, "holds 1,000,000,000,000 elements; at most 67,108,864 are read")
    cut = folder / "cut_header.npy"
    cut.write_bytes(_npy_header((4,))[:30])
    files["truncated header"] = (cut, "has a .npy header that cannot be read")
    empty = folder / "empty.npy"
    empty.write_bytes(b"")
    files["0 bytes"] = (empty, "is empty (0 bytes)")
    npz = folder / "archive.npy"
    np.savez(folder / "archive.npz", a=np.ones(3))
    (folder / "archive.npz").rename(npz)
    files["npz renamed"] = (npz, "is a zip archive (an .npz?)")
    pickled = folder / "objects.npy"
    np.save(pickled, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    files["object dtype"] = (pickled, "holds object values")
    short = folder / "short_data.npy"
    short.write_bytes(_npy_header((1000,)) + bytes(40))
    files["data cut short"] = (short, "is cut short: its header promises 4,000 bytes")
    return files


def test_the_huge_header_is_refused_before_numpy_allocates(tmp_path: Path, monkeypatch: Any) -> None:
    path, says = hostile_npy_files(tmp_path)["10**12 elements"]
    assert path.stat().st_size == 192
    calls: list[Any] = []
    monkeypatch.setattr(np, "fromfile", lambda *a, **k: calls.append(a))
    with pytest.raises(ValueError, match=says):
        tensor_file.read_header(path)
    assert calls == []


@pytest.mark.parametrize("verb", ["blocks", "model"])
def test_each_hostile_npy_file_is_one_line_and_exit_2(verb: str, tmp_path: Path, capsys: Any) -> None:
    heavy = {"tensorflow", "torch", "jax"}
    before = heavy & set(sys.modules)
    for name, (path, says) in hostile_npy_files(tmp_path).items():
        content = path.read_bytes()
        if verb == "blocks":
            argv = ["blocks", "--format", "nvfp4", "--tensor", str(path)]
        else:
            argv = ["model", "--builtin", "mlp", "--inputs", str(path)]
        assert main(argv) == 2, name
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"precision-explorer {verb}: error: "), (name, err)
        assert says in err[0], (name, err)
        assert path.read_bytes() == content
    assert heavy & set(sys.modules) == before  # refused before any framework was imported


def test_a_valid_file_reads_like_numpy(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    for array in [
        rng.standard_normal((3, 5)).astype(np.float16),
        np.asfortranarray(rng.integers(-9, 9, (4, 6))),
    ]:
        path = tmp_path / "x.npy"
        np.save(path, array)
        np.testing.assert_array_equal(tensor_file.load_tensor(path), np.load(path).astype(np.float64))


@pytest.mark.parametrize("layout", ["rows", "fortran", "one long row"])
def test_blocks_on_a_file_is_read_piece_by_piece(layout: str, tmp_path: Path, monkeypatch: Any) -> None:
    """Pieces of at most PIECE_ELEMENTS elements, the whole file never loaded, the same answer
    as the direct whole-array computation."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 100)) * np.exp(rng.normal(0, 4, (6, 100)))
    x = {"rows": x, "fortran": np.asfortranarray(x), "one long row": x.ravel()}[layout]
    path = tmp_path / "t.npy"
    np.save(path, x)
    monkeypatch.setattr(blocks_query, "PIECE_ELEMENTS", 64)
    monkeypatch.setattr(tensor_file, "load_tensor", None)  # never called on this path
    seen: list[int] = []
    real = blocks_query.quantize_blocks

    def spy(piece: np.ndarray, *args: Any, **kwargs: Any) -> Any:
        seen.append(piece.size)
        return real(piece, *args, **kwargs)

    monkeypatch.setattr(blocks_query, "quantize_blocks", spy)
    result = blocks_query.compare_blocks(
        str(path), ["nvfp4", "mxfp4_e2m1"], block_sizes=[8], per_tensor=["float8_e4m3fn"]
    )
    assert seen and max(seen) <= 64
    for row in result.rows:  # the oracle: the whole array quantized at once, the formula by hand
        q = quantize_blocks(x, row.format).values
        rel = np.abs(q - x) / np.abs(x)
        assert row.stats.rel_rms == pytest.approx(math.sqrt(np.mean(rel**2)), rel=1e-12)
        assert row.stats.rel_max == pytest.approx(rel.max(), rel=1e-15)
        assert row.stats.norm_rel == pytest.approx(np.linalg.norm(q - x) / np.linalg.norm(x), rel=1e-12)
        assert row.stats.flushed == np.mean(q == 0)
    per = result.per_tensor[0]
    q = quantize_per_tensor(x, "float8_e4m3fn").values
    assert per.stats.rel_rms == pytest.approx(math.sqrt(np.mean((np.abs(q - x) / np.abs(x)) ** 2)), rel=1e-12)


def test_blocks_near_float64_max_is_finite_without_warnings(tmp_path: Path) -> None:
    x = np.full((2, 32), 1.7e308)
    x[0, :16] = -1.0e308
    x[1, 3] = 3.0
    path = tmp_path / "big.npy"
    np.save(path, x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = blocks_query.compare_blocks(
            str(path), ["nvfp4", "mxfp8_e4m3"], block_sizes=[], per_tensor=["float8_e4m3fn"]
        )
    nvfp4, mx = result.rows
    per = result.per_tensor[0]
    for cost, q in [
        (nvfp4, quantize_blocks(x, "nvfp4").values),
        (per, quantize_per_tensor(x, "float8_e4m3fn").values),
    ]:
        exact = [
            (Fraction(float(a)) - Fraction(float(b))) / Fraction(float(b))
            for a, b in zip(q.ravel(), x.ravel(), strict=True)
        ]
        rms = math.sqrt(float(sum(r * r for r in exact) / len(exact)))
        assert cost.stats.rel_rms == pytest.approx(rms, rel=1e-12), cost.format
        diff = sum(
            (Fraction(float(a)) - Fraction(float(b))) ** 2 for a, b in zip(q.ravel(), x.ravel(), strict=True)
        )
        norm = sum(Fraction(float(b)) ** 2 for b in x.ravel())
        assert cost.stats.norm_rel == pytest.approx(math.sqrt(diff / norm), rel=1e-12), cost.format
    # MX: blocks whose shared exponent exceeds E8M0's 127 decode to NaN (the spec); said, not averaged
    q = quantize_blocks(x, "mxfp8_e4m3").values
    assert mx.stats.nonfinite == np.mean(np.isnan(q)) > 0
    assert mx.stats.rel_rms is None or math.isfinite(mx.stats.rel_rms)
