"""The block formats in the Bits and Ranges tabs and in the model check, against independent
readings: gfloat's ``encode_block`` (scale and element codes) for one block, the OCP MX
spec's scale rule computed here for a block's range, and the test oracle of the block
formats (gfloat's rounding for MX) for a layer's weights read directly from the model."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest

from tests.support.block_oracles import mx_reading, nvfp4_reading
from tests.support.require import require_module


@pytest.fixture(scope="module")
def gfloat() -> Any:
    require_module("gfloat", "pip install gfloat (the test extra)")
    import gfloat
    import gfloat.formats

    return gfloat


@pytest.fixture(scope="module")
def app() -> Any:
    import explorer

    return explorer.App(load_tensorflow=False, tab="bits")


def _spec_scale(amax: float, emax: int) -> float:
    """OCP MX v1.0, 6.3: the shared scale 2**(floor(log2 amax) - emax_elem)."""
    return 2.0 ** (math.floor(math.log2(amax)) - emax)


def _shown_rows(markup: str) -> list[list[str]]:
    body = markup.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [re.findall(r"<td>(.*?)</td>", row, re.S) for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


@pytest.mark.parametrize(("name", "seed"), [("mxfp8_e4m3", 1), ("mxfp6_e3m2", 2), ("mxfp4_e2m1", 3)])
def test_bits_tab_block_against_gfloat_encode_block(app: Any, gfloat: Any, name: str, seed: int) -> None:
    """Values typed into the Bits tab's block: the scale's bits and each element's bits are
    gfloat's ``encode_block`` codes, the error is gfloat's decoded element times the scale
    minus the input."""
    block = app.select("bits").block
    info = getattr(gfloat.formats, f"format_info_{name}")
    x = np.random.default_rng(seed).standard_normal(32) * 4.0**seed
    x[5] = np.abs(x).max() * 1e-8  # below every MX element format's smallest times the scale: 0
    block.format.value = name
    block.values.value = ", ".join(repr(float(v)) for v in x)
    scale = _spec_scale(float(np.abs(x).max()), info.etype.emax)
    codes = list(gfloat.encode_block(info, scale, x / scale))
    shown = block.output.value
    assert f"<code class='px-block-scale-bits'>{codes[0]:08b}</code>" in shown
    rows = _shown_rows(shown)
    assert len(rows) == 32
    width = info.etype.bits
    assert [r[3] for r in rows] == [f"<code>{c:0{width}b}</code>" for c in codes[1:]]
    from explorer.analysis.block_view import inspect_block

    decoded = np.array([gfloat.decode_float(info.etype, c).fval for c in codes[1:]]) * scale
    view = inspect_block(name, x)
    np.testing.assert_array_equal([r.error for r in view.rows], decoded - x)
    assert view.rows[5].element == 0.0 and view.rows[5].relative_error == 1.0


def test_bits_tab_block_seeded_sample_and_bad_input(app: Any, gfloat: Any) -> None:
    """No values: a seeded standard normal block of the format's size (NVFP4: 16); a word that
    is not a number, or too many values, is a message naming it."""
    block = app.select("bits").block
    block.values.value = ""
    block.format.value = "mxfp4_e2m1"
    block.seed.value = 7
    x = np.random.default_rng(7).standard_normal(32)
    info = gfloat.formats.format_info_mxfp4_e2m1
    scale = _spec_scale(float(np.abs(x).max()), info.etype.emax)
    codes = list(gfloat.encode_block(info, scale, x / scale))
    assert [r[3] for r in _shown_rows(block.output.value)] == [f"<code>{c:04b}</code>" for c in codes[1:]]
    block.format.value = "nvfp4"
    assert len(_shown_rows(block.output.value)) == 16 and "tensor scale (float32)" in block.output.value
    block.values.value = "1, two"
    assert "not a number: &#x27;two&#x27;" in block.output.value
    block.values.value = ", ".join(["1"] * 17)
    assert "nvfp4 has 16 elements per block, got 17 values" in block.output.value


@pytest.mark.parametrize("name", ["mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e2m3", "mxfp4_e2m1", "mxint8"])
@pytest.mark.parametrize("block_max", [1.0, 0.3, 1000.0, 3e-30])
def test_block_range_against_the_mx_spec(gfloat: Any, name: str, block_max: float) -> None:
    """scale = 2**(floor(log2 amax) - emax_elem); largest and smallest nonzero are the
    element's max and smallest positive value times it (gfloat's format facts); a block
    quantized by gfloat's rounding flushes at half the smallest and holds the largest."""
    from explorer.analysis.block_view import block_range

    etype = getattr(gfloat.formats, f"format_info_{name}").etype
    got = block_range(name, block_max)
    scale = _spec_scale(block_max, etype.emax)
    want = (scale, etype.max * scale, etype.smallest * scale)
    assert (got.scale, got.largest, got.smallest_nonzero) == want
    probe = np.zeros(32)
    probe[:4] = [block_max, got.flush_below, got.flush_below * 1.0001, -got.largest]
    reading = mx_reading(gfloat, name, probe)
    assert reading[1] == 0.0 and reading[2] == got.smallest_nonzero and reading[3] == -got.largest


def test_block_range_nvfp4_and_the_ranges_tab(app: Any) -> None:
    """NVFP4 against the NVFP4 reading of the tests (block and tensor scales); the Ranges tab's
    view shows the largest and smallest nonzero of the chosen format and block max."""
    from explorer.analysis.block_view import block_range

    for block_max, tensor_max in [(1.0, None), (3.0, 1000.0), (1e-3, 2.0)]:
        got = block_range("nvfp4", block_max, tensor_max)
        values = [block_max] + [0.0] * 15 + ([tensor_max] + [0.0] * 15 if tensor_max else [])
        tensor, scales, _ = nvfp4_reading(values)
        assert got.scale == scales[0] * tensor and got.largest == 6 * scales[0] * tensor
        assert got.smallest_nonzero == 0.5 * scales[0] * tensor
    view = app.select("ranges").block_range
    view.format.value = "mxfp4_e2m1"
    view.block_max.value = 100.0  # 2**(6 - 2) = 16: largest 96, smallest 8
    shown = view.output.value
    assert "<span class='px-fact px-block-largest'>96</span>" in shown
    assert "<span class='px-fact px-block-smallest'>8</span>" in shown
    view.block_max.value = -1.0
    assert "block_max must be a finite number above 0" in view.output.value


def _padded_reading(gfloat: Any, name: str, w: np.ndarray) -> np.ndarray:
    """``mx_reading`` of ``w`` (2-D or 1-D) along its last axis, zero-padded to blocks of 32."""
    rows = np.atleast_2d(np.asarray(w, dtype=np.float64))
    width = -(-rows.shape[1] // 32) * 32
    padded = np.zeros((rows.shape[0], width))
    padded[:, : rows.shape[1]] = rows
    return mx_reading(gfloat, name, padded)[:, : rows.shape[1]].reshape(np.shape(w))


def _rms_relative(pairs: list[tuple[np.ndarray, np.ndarray]]) -> float:
    rel = np.concatenate([np.abs(q[w != 0] - w[w != 0]) / np.abs(w[w != 0]) for w, q in pairs])
    return float(np.sqrt(np.mean(rel**2)))


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_model_check_weights_and_activations_against_the_oracles(gfloat: Any) -> None:
    """A JAX function: each layer's weights (its params) and each op's float32 activation
    quantized by the oracles (gfloat's MX rounding; the NVFP4 reading), RMS of the relative
    error over the nonzero values."""
    from explorer.queries.model_check import check_model

    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 32)).astype(np.float32)
    params = {
        "scale": {"w": (rng.laplace(size=(2, 32)) * 10.0 ** rng.integers(-3, 3, (2, 32))).astype(np.float32)},
        "shift": {"b": rng.standard_normal(32).astype(np.float32)},
    }
    check = check_model(
        lambda p, x: x * p["scale"]["w"] + p["shift"]["b"],
        x,
        params=params,
        policies=["float32"],
        devices=["CPU"],
        block_formats=["mxfp4", "MXFP8_E5M2", "nvfp4"],
    )
    got = check.to_dict()
    assert got["block_formats"] == ["mxfp4_e2m1", "mxfp8_e5m2", "nvfp4"]
    errors = got["weight_block_errors"]
    assert sorted(errors) == ["scale", "shift"]
    for layer, (w,) in (("scale", [params["scale"]["w"]]), ("shift", [params["shift"]["b"]])):
        w64 = w.astype(np.float64)
        for name in ("mxfp4_e2m1", "mxfp8_e5m2"):
            want = _rms_relative([(w64, _padded_reading(gfloat, name, w64))])
            assert errors[layer][name] == pytest.approx(want)
        # NVFP4's tensor scale spans the whole array; rows of 32 hold whole blocks of 16
        nv = np.array(nvfp4_reading(w64.ravel().tolist())[2]).reshape(w64.shape)
        assert errors[layer]["nvfp4"] == pytest.approx(_rms_relative([(w64, nv)]))
    product = x.astype(np.float32) * params["scale"]["w"]  # float32, as the float32 run computes it
    mul = next(op for op in got["ops"] if op["raw_op"] == "mul")
    assert mul["stats"]["block_rel_rms"]["mxfp4_e2m1"] == pytest.approx(
        _rms_relative([(product.astype(np.float64), _padded_reading(gfloat, "mxfp4_e2m1", product))])
    )
    assert set(mul["stats"]["below_normal"]) == set(check.formats)
    with pytest.raises(ValueError, match="unknown block format 'mxfp5'"):
        check_model(lambda p, x: x * p, x, params=np.float32(2.0), block_formats=["mxfp5"])


@pytest.mark.slow
def test_model_cli_json_weight_errors_against_weights_read_from_the_module(gfloat: Any, capsys: Any) -> None:
    """``model --builtin mlp --framework torch --block-format mxfp4 --json``: each layer's
    entry is the oracle's RMS relative error on the module's own parameters."""
    require_module("torch", "pip install torch")
    import json

    from explorer.cli import main
    from explorer.runtime import model_builtin

    argv = ["model", "--builtin", "mlp", "--framework", "torch", "--policy", "float32", "--device", "CPU"]
    assert main([*argv, "--block-format", "mxfp4", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["result"]
    module = model_builtin.build("mlp", "torch")
    for layer in ("dense_1", "dense_2", "logits"):
        arrays = [p.detach().double().numpy() for p in getattr(module, layer).parameters()]
        want = _rms_relative([(w, _padded_reading(gfloat, "mxfp4_e2m1", w)) for w in arrays])
        assert result["weight_block_errors"][layer]["mxfp4_e2m1"] == pytest.approx(want)
    with pytest.raises(SystemExit) as refused:  # argparse checks the name, before any run
        main([*argv, "--block-format", "mxfp5"])
    assert refused.value.code == 2 and "unknown block format 'mxfp5'" in capsys.readouterr().err
