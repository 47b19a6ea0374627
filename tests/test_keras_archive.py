"""``.keras`` files checked before Keras builds anything (explorer.runtime.keras_archive), and a
fuzz over crafted ``.keras`` and ``.npy`` files: a load or a one-line refusal, never a traceback."""

from __future__ import annotations

import io
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.hostile_files import dense, keras_files, sequential_config, write_keras
from explorer.cli import main
from explorer.runtime import keras_archive, tensor_file
from explorer.runtime.keras_archive import check_keras_archive, json_depth


def test_each_hostile_keras_file_is_one_line_and_exit_2_before_tensorflow(
    tmp_path: Path, capsys: Any
) -> None:
    before = {"tensorflow", "keras"} & set(sys.modules)
    for name, (path, says) in keras_files(tmp_path).items():
        content = path.read_bytes() if path.is_file() else None
        assert main(["model", "--file", str(path)]) == 2, name
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("precision-explorer model: error: "), (name, err)
        assert says in err[0], (name, err)
        assert (path.read_bytes() if path.is_file() else None) == content
    assert {"tensorflow", "keras"} & set(sys.modules) == before


def test_parameters_are_the_layer_formulas(tmp_path: Path) -> None:
    """Counted by hand: Dense is units x inputs + units; the cap is refused at its first excess."""
    config = sequential_config([dense(300, 20, "a"), dense(7, 300, "b")], [None, 20])
    summary = check_keras_archive(write_keras(tmp_path / "ok.keras", config))
    assert summary.parameters == (300 * 20 + 300) + (7 * 300 + 7)
    assert summary.layers == 3  # InputLayer and the two Dense
    limit = keras_archive.MAX_PARAMETERS
    units = limit // 101 + 1  # (100 inputs + bias) x units: one parameter group past the limit
    big = sequential_config([dense(units, 100, "big")], [None, 100])
    with pytest.raises(ValueError, match=f"declares more than {limit:,} parameters .*'big'"):
        check_keras_archive(write_keras(tmp_path / "big.keras", big))
    fits = sequential_config([dense(limit // 101, 100, "fits")], [None, 100])
    assert check_keras_archive(write_keras(tmp_path / "fits.keras", fits)).parameters == limit // 101 * 101


def test_layers_are_counted_from_the_parsed_config(tmp_path: Path) -> None:
    """Below the "class_name" count, above the layer cap: the parsed config's layers are counted."""
    layers = [{"module": "keras.layers", "class_name": "Dense", "config": {"units": 1}} for _ in range(6_000)]
    path = write_keras(tmp_path / "many.keras", sequential_config(layers, [None, 1]))
    assert json.loads(zipfile.ZipFile(path).read("config.json")).keys()  # a valid config
    with pytest.raises(ValueError, match="declares more than 5,000 layers"):
        check_keras_archive(path)


def test_a_huge_declared_input_is_refused(tmp_path: Path) -> None:
    config = sequential_config([], [None, 100_000, 100_000])
    with pytest.raises(
        ValueError, match=r"declares a shape \(None, 100000, 100000\) of 10,000,000,000 elements"
    ):
        check_keras_archive(write_keras(tmp_path / "wide.keras", config))


def test_a_symlink_to_a_model_is_followed_and_a_link_to_a_folder_is_named(tmp_path: Path) -> None:
    real = write_keras(tmp_path / "real.keras", sequential_config([dense(2, 4)], [None, 4]))
    (tmp_path / "link.keras").symlink_to(real)
    assert check_keras_archive(tmp_path / "link.keras").parameters == 10
    (tmp_path / "dir.keras").symlink_to(tmp_path)
    with pytest.raises(ValueError, match=r"is a symbolic link to .*, which is not a regular file"):
        check_keras_archive(tmp_path / "dir.keras")


@given(
    st.recursive(
        st.none() | st.integers() | st.text(alphabet='[]{}"\\ab'),
        lambda inner: st.lists(inner) | st.dictionaries(st.text(alphabet='[]{}"\\'), inner),
        max_leaves=30,
    )
)
@settings(max_examples=50, deadline=None)
def test_json_depth_is_the_nesting_depth(value: Any) -> None:
    def depth(v: Any) -> int:  # the oracle: recursion over the parsed value
        if isinstance(v, list):
            return 1 + max((depth(x) for x in v), default=0)
        if isinstance(v, dict):
            return 1 + max((depth(x) for x in v.values()), default=0)
        return 0

    assert json_depth(json.dumps(value).encode()) == depth(value)


def _valid_keras() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("metadata.json", '{"keras_version": "3.15.1"}')
        archive.writestr("config.json", json.dumps(sequential_config([dense(3, 4)], [None, 4])))
        archive.writestr("model.weights.h5", bytes(64))
    return buffer.getvalue()


def _valid_npy() -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.arange(12, dtype=np.float32).reshape(3, 4))
    return buffer.getvalue()


_MUTATIONS = st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=6)


def _mutate(data: bytes, edits: list[tuple[int, int]], cut: int | None) -> bytes:
    buffer = bytearray(data)
    for where, value in edits:
        buffer[where % len(buffer)] = value
    return bytes(buffer[:cut] if cut is not None else buffer)


def _one_line_or_load(check: Any, path: Path) -> None:
    try:
        check(path)
    except (ValueError, FileNotFoundError) as exc:
        text = str(exc)
        assert text and "\n" not in text and text.startswith(repr(str(path))), text


@given(edits=_MUTATIONS, cut=st.none() | st.integers(0, 400), header=st.booleans())
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_fuzzed_keras_files_load_or_are_refused_in_one_line(
    tmp_path: Path, edits: list[tuple[int, int]], cut: int | None, header: bool
) -> None:
    data = _valid_keras()
    if header:  # mutations inside the first member's local header and the central directory
        edits = [(w % 40 if i % 2 else len(data) - 1 - w % 120, v) for i, (w, v) in enumerate(edits)]
    path = tmp_path / "fuzz.keras"
    path.write_bytes(_mutate(data, edits, cut))
    _one_line_or_load(check_keras_archive, path)


@given(edits=_MUTATIONS, cut=st.none() | st.integers(0, 200), text=st.none() | st.text(max_size=80))
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_fuzzed_npy_files_load_or_are_refused_in_one_line(
    tmp_path: Path, edits: list[tuple[int, int]], cut: int | None, text: str | None
) -> None:
    data = _valid_npy()
    if text is not None:  # a forged header dictionary
        raw = text.encode("latin1", "replace")[:100]
        data = data[:8] + len(raw).to_bytes(2, "little") + raw + data[128:]
    edits = [(w % 128, v) for w, v in edits]  # the header
    path = tmp_path / "fuzz.npy"
    path.write_bytes(_mutate(data, edits, cut))
    _one_line_or_load(tensor_file.load_tensor, path)


@pytest.mark.slow
def test_parameters_match_keras_count_params(tmp_path: Path) -> None:
    """The oracle: Keras' own count_params of saved models of every layer kind with a formula."""
    keras = pytest.importorskip("keras")
    layers = keras.layers
    inp = keras.Input((8, 8, 3))
    x = layers.Conv2D(4, 3)(inp)
    x = layers.BatchNormalization()(x)
    x = layers.DepthwiseConv2D(3)(x)
    x = layers.SeparableConv2D(5, 2, use_bias=False)(x)
    x = layers.Reshape((-1, 5))(x)
    x = layers.LSTM(6, return_sequences=True)(x)
    x = layers.GRU(3, return_sequences=True, reset_after=False)(x)
    x = layers.SimpleRNN(2, return_sequences=True)(x)
    x = layers.MultiHeadAttention(2, 4)(x, x)
    x = layers.LayerNormalization()(x)
    x = layers.Flatten()(x)
    x = layers.Dense(7)(x)
    x = layers.Conv1DTranspose(2, 3)(layers.Reshape((7, 1))(x))
    functional = keras.Model(inp, x)
    inner = keras.Sequential([layers.Dense(2)])
    sequential = keras.Sequential([keras.Input((4,)), layers.Dense(3), layers.Embedding(10, 2), inner])
    for model in (functional, sequential):
        path = tmp_path / f"{model.name}.keras"
        model.save(path)
        assert check_keras_archive(path).parameters == model.count_params()
    from explorer.runtime.model_keras import load_safely

    assert load_safely(str(tmp_path / f"{functional.name}.keras")).count_params() == functional.count_params()
