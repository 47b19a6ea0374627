"""The ``blocks`` verb and its query: the numbers against readings computed here (gfloat for
MX, the exact NVFP4 reading, the spec table for per-tensor scaling), the statistics against
hand-counted examples, and a user's .npy file read as hostile input."""

from __future__ import annotations

import hashlib
import json
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from explorer.analysis.block_errors import error_stats, synthetic_tensor
from explorer.cli import main
from explorer.queries.blocks import compare_blocks
from explorer.runtime import tensor_file
from tests.support import oracles
from tests.support.block_oracles import mx_reading, nvfp4_reading
from tests.support.require import require_module


def _json(capsys: Any, *argv: str, status: int = 0) -> Any:
    assert main([*argv, "--json"]) == status, capsys.readouterr().err
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"environment", "result"}
    return data["result"]


def _rel(q: np.ndarray, x: np.ndarray) -> np.ndarray:
    nonzero = x != 0
    return np.abs(q[nonzero] - x[nonzero]) / np.abs(x[nonzero])


# ---------------------------------------------------------------- the statistics, by hand


def test_error_stats_count_what_a_reader_counts() -> None:
    """Two blocks of 4: [1, 0.01, 3, 0] -> [1, 0, 2.5, 0] and [8, -8, 0.5, 100] -> [8, -8,
    0.5, 10] with 10 the largest held: one flush among 7 nonzero values, one saturation among
    8 finite ones."""
    x = np.array([1.0, 0.01, 3.0, 0.0, 8.0, -8.0, 0.5, 100.0])
    q = np.array([1.0, 0.0, 2.5, 0.0, 8.0, -8.0, 0.5, 10.0])
    stats = error_stats(x, q, np.full(8, 10.0), block_size=4)
    rel = [0, 1, 0.5 / 3, 0, 0, 0, 0.9]
    assert stats.rel_rms == pytest.approx(np.sqrt(np.mean(np.square(rel))))
    assert stats.rel_max == 1.0 and stats.elements == 7
    assert stats.flushed == 1 / 7 and stats.saturated == 1 / 8
    assert stats.flushed_block_max == 1 / 3 and stats.saturated_block_max == 1 / 4
    assert stats.blocks_flushing == 0.5 and stats.blocks_saturating == 0.5
    assert stats.norm_rel == pytest.approx(np.linalg.norm(q - x) / np.linalg.norm(x))
    empty = error_stats(np.zeros(3), np.zeros(3))
    assert empty.rel_rms is None and empty.norm_rel is None and empty.flushed == 0.0
    with pytest.raises(ValueError, match="shape"):
        error_stats(np.zeros(3), np.zeros(4))


def test_synthetic_tensors_are_what_they_say() -> None:
    normal, laplace, outliers = (synthetic_tensor(n) for n in ("normal", "laplace", "outliers"))
    assert normal.shape == (256, 256) and abs(normal.std() - 1) < 0.02
    assert abs(np.abs(laplace).mean() - 1) < 0.02  # Laplace(0, 1): E|x| = 1
    big = np.abs(outliers) > 10
    assert 30 < big.sum() < 110 and np.abs(outliers).max() > 100  # ~65 of 65536 times 100
    np.testing.assert_array_equal(synthetic_tensor("normal", seed=3), synthetic_tensor("normal", seed=3))
    with pytest.raises(ValueError, match="valid: normal, laplace, outliers"):
        synthetic_tensor("uniform")


# ---------------------------------------------------------------- the verb against readings


def test_blocks_json_matches_gfloat_and_the_spec(capsys: Any) -> None:
    """MXFP8 E4M3 and MXFP4 on the outliers tensor recomputed through gfloat; the per-tensor
    E4M3 baseline from the spec table's rounding with the float32 scale max|x| / 448."""
    require_module("gfloat", "pip install gfloat (the test extra)")
    import gfloat
    import gfloat.formats

    result = _json(
        capsys, "blocks", "--format", "mxfp8_e4m3", "--format", "MXFP4", "--tensor", "outliers",
        "--block-size", "32", "--dtype", "e4m3",
    )  # fmt: skip
    x = synthetic_tensor("outliers")
    assert result["tensor"] == "outliers" and result["shape"] == [256, 256]
    assert [r["format"] for r in result["formats"]] == ["mxfp8_e4m3", "mxfp4_e2m1"]
    for row in result["formats"]:
        q = mx_reading(gfloat, row["format"], x)
        rel = _rel(q, x)
        assert row["rel_rms"] == pytest.approx(np.sqrt(np.mean(rel**2)), rel=1e-12)
        assert row["rel_max"] == rel.max() and row["flushed"] == np.mean(q[x != 0] == 0)
        assert row["block_size"] == 32 and row["scaling"] == "block"
    assert [(b["format"], b["block_size"]) for b in result["block_sizes"]] == [
        ("mxfp8_e4m3", 32),
        ("mxfp4_e2m1", 32),
    ]
    assert result["block_sizes"][1]["rel_rms"] == result["formats"][1]["rel_rms"]
    (base,) = result["per_tensor"]
    scale = float(np.float32(np.abs(x).max() / 448))
    q = oracles.round_array(x / scale, "float8_e4m3fn") * scale  # max|x| / scale is 448: no overflow
    assert base["format"] == "float8_e4m3fn" and base["scaling"] == "per_tensor"
    assert base["rel_rms"] == pytest.approx(np.sqrt(np.mean(_rel(q, x) ** 2)), rel=1e-12)
    assert base["bits_per_element"] == 8 + 32 / x.size


def test_blocks_on_a_file_matches_the_nvfp4_reading(capsys: Any, tmp_path: Path) -> None:
    """A user's tensor (6 x 40: a ragged last block of 8) in NVFP4, against the exact reading."""
    rng = np.random.default_rng(4)
    x = (rng.laplace(size=(6, 40)) * 3).astype(np.float32)
    path = tmp_path / "weights.npy"
    np.save(path, x)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    result = _json(capsys, "blocks", "--format", "nvfp4", "--tensor", str(path), "--block-size", "16")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest  # only read
    x64 = x.astype(np.float64)
    _, _, flat = nvfp4_reading(np.pad(x64, ((0, 0), (0, 8))).ravel().tolist())
    q = np.array(flat).reshape(6, 48)[:, :40]
    (row,) = result["formats"]
    rel = _rel(q, x64)
    assert row["rel_rms"] == pytest.approx(np.sqrt(np.mean(rel**2)), rel=1e-12)
    assert row["rel_max"] == rel.max() and row["bits_per_element"] == 4.5
    assert result["shape"] == [6, 40] and result["tensor"] == str(path)


def test_blocks_table_and_block_sizes(capsys: Any) -> None:
    assert main(["blocks", "--format", "nvfp4", "--tensor", "laplace", "--block-size", "8"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("tensor: laplace (256 x 256); blocks along the last axis\nformat ")
    assert "\nnvfp4 " in out and "\nfloat4_e2m1fn " in out and "rel_rms@8" in out


def test_the_query_smaller_blocks_cost_less_error() -> None:
    """The block-size effect: MXFP4's error grows with its block on every synthetic tensor."""
    for tensor in ("normal", "laplace", "outliers"):
        result = compare_blocks(tensor, ["mxfp4_e2m1"], block_sizes=[8, 32, 128], per_tensor=[])
        errors = [b.rel_rms for b in result.block_sizes]
        assert errors == sorted(errors), (tensor, errors)


# ---------------------------------------------------------------- bad input


def test_bad_names_exit_2_with_the_valid_ones(capsys: Any) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["blocks", "--format", "mxfp9"])
    assert exc.value.code == 2
    assert "Valid names: mxfp8_e4m3, mxfp8_e5m2" in capsys.readouterr().err
    assert main(["blocks", "--tensor", "uniform"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["precision-explorer blocks: error: unknown tensor 'uniform'; valid: normal, laplace, "
                   "outliers or a FILE.npy"]  # fmt: skip


def _hostile_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    files: dict[str, tuple[Path, str]] = {}
    objects = tmp_path / "objects.npy"
    np.save(objects, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    files["objects"] = (objects, "holds object values")
    archive = tmp_path / "archive.npy"
    np.savez(archive, a=np.ones(3))
    (tmp_path / "archive.npy.npz").rename(archive)
    files["npz"] = (archive, "is a zip archive (an .npz?)")
    pickled = tmp_path / "pickled.npy"
    pickled.write_bytes(pickle.dumps([1.0, 2.0]))
    files["pickle"] = (pickled, "not a .npy file")
    odd = {"complex": np.ones(3, complex), "strings": np.array(["a"]), "empty": np.ones(0)}
    for name, array in odd.items():
        path = tmp_path / f"{name}.npy"
        np.save(path, array)
        files[name] = (path, "empty array" if name == "empty" else "a tensor of real numbers is needed")
    truncated = tmp_path / "truncated.npy"
    np.save(truncated, np.ones(1000))
    truncated.write_bytes(truncated.read_bytes()[:300])
    files["truncated"] = (truncated, "is cut short: its header promises 8,000 bytes")
    (tmp_path / "folder.npy").mkdir()
    files["folder"] = (tmp_path / "folder.npy", "is a directory")
    files["missing"] = (tmp_path / "missing.npy", "no such file")
    return files


def test_hostile_files_are_refused_in_one_line_and_left_alone(capsys: Any, tmp_path: Path) -> None:
    for name, (path, says) in _hostile_files(tmp_path).items():
        before = path.read_bytes() if path.is_file() else None
        assert main(["blocks", "--format", "nvfp4", "--tensor", str(path)]) == 2, name
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("precision-explorer blocks: error: "), (name, err)
        assert says in err[0], (name, err)
        assert (path.read_bytes() if path.is_file() else None) == before


def test_files_over_the_cap_are_refused_before_reading(tmp_path: Path, monkeypatch: Any) -> None:
    path = tmp_path / "big.npy"
    np.save(path, np.ones(1000))
    monkeypatch.setattr(tensor_file, "MAX_TENSOR_BYTES", 1000)
    with pytest.raises(ValueError, match=r"is 8,128 bytes; at most 1,000 are read"):
        tensor_file.load_tensor(path)
    monkeypatch.setattr(tensor_file, "MAX_TENSOR_BYTES", 10**6)
    monkeypatch.setattr(tensor_file, "MAX_TENSOR_ELEMENTS", 999)
    with pytest.raises(ValueError, match=r"holds 1,000 elements; at most 999 are read"):
        tensor_file.load_tensor(path)
