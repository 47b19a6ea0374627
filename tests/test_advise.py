"""``advise_precision`` against independent computations.

The oracle quantizes with gfloat (the OCP MX formats and float8's element rounding) and with
the NVFP4 reading in exact rationals (tests/support/block_oracles.py), never through
:mod:`explorer.blocks`, and runs the model layer by layer itself: in NumPy, in Keras (each
layer called on the oracle's quantized input, its kernel assigned the oracle's quantized
values) and in PyTorch (each module likewise).  The tool's sensitivity cells and its measured
recipe must match these runs; the integer program must match a brute-force search.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from explorer.analysis import precision_advice as pa
from explorer.analysis.recipe_code import keras_code, torch_code
from tests.support.block_oracles import mx_reading, nvfp4_reading
from tests.support.require import require_module

#: the tiny MLP: 64 -> 32 -> 32 -> 10 (every contraction a multiple of 32: whole MX blocks)
SIZES = [(64, 32), (32, 32), (32, 10)]
NAMES = ["dense_1", "dense_2", "logits"]


@pytest.fixture(scope="module")
def gfloat() -> Any:
    require_module("gfloat", "pip install gfloat (the test extra)")
    import gfloat
    import gfloat.formats

    return gfloat


def _weights() -> list[tuple[np.ndarray, np.ndarray]]:
    """Kernels (in, out), Keras' layout, and biases, seeded."""
    rng = np.random.default_rng(7)
    return [
        (
            (rng.standard_normal((i, o)) / math.sqrt(i)).astype(np.float32),
            (0.1 * rng.standard_normal(o)).astype(np.float32),
        )
        for i, o in SIZES
    ]


def _inputs() -> np.ndarray:
    return np.random.default_rng(8).standard_normal((16, 64)).astype(np.float32)


def oracle_quantize(gfloat: Any, x: np.ndarray, fmt: str) -> np.ndarray:
    """``x`` quantized in blocks along its LAST axis (or per tensor), by gfloat / exact rationals."""
    x64 = np.asarray(x, dtype=np.float64)
    if fmt.startswith("mx"):
        return mx_reading(gfloat, fmt, x64).reshape(x64.shape).astype(np.float32)
    if fmt == "nvfp4":
        _, _, values = nvfp4_reading([float(v) for v in x64.reshape(-1)])
        return np.array(values, dtype=np.float64).reshape(x64.shape).astype(np.float32)
    if fmt == "float8_e4m3fn":  # amax scale in float32, gfloat's saturating nearest-even rounding
        scale = float(np.float32(np.abs(x64).max() / 448.0))
        rounded = gfloat.round_ndarray(gfloat.formats.format_info_ocp_e4m3, x64 / scale, sat=True)
        return (rounded * scale).astype(np.float32)
    if fmt == "bfloat16":
        import ml_dtypes

        return np.asarray(x, dtype=np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)
    raise AssertionError(fmt)


def _oracle_layer(
    gfloat: Any, x: np.ndarray, kernel: np.ndarray, fmt: str | None
) -> tuple[np.ndarray, np.ndarray]:
    """The layer's input and kernel as the oracle quantizes them (kernel blocks along ``in``)."""
    if fmt is None:
        return x, kernel
    return oracle_quantize(gfloat, x, fmt), oracle_quantize(gfloat, kernel.T, fmt).T


def numpy_forward(gfloat: Any, x: np.ndarray, formats: list[str | None]) -> np.ndarray:
    """The MLP in float32 NumPy, layer i quantized to ``formats[i]`` (None: float32)."""
    h = x
    for i, ((kernel, bias), fmt) in enumerate(zip(_weights(), formats, strict=True)):
        xi, ki = _oracle_layer(gfloat, h, kernel, fmt)
        h = (xi @ ki + bias).astype(np.float32)
        if i < len(SIZES) - 1:
            h = np.maximum(h, 0)
    return h


def _keras_mlp() -> Any:
    from explorer.backends.tensorflow_backend import import_tensorflow

    import_tensorflow()
    import keras

    x = inputs = keras.Input((64,), name="x")
    for (_, out), name in zip(SIZES, NAMES, strict=True):
        x = keras.layers.Dense(out, activation=None if name == "logits" else "relu", name=name)(x)
    model = keras.Model(inputs, x)
    model.set_weights([a for pair in _weights() for a in pair])
    return model


def _torch_mlp() -> Any:
    from collections import OrderedDict

    import torch

    layers: list[tuple[str, Any]] = []
    for (i, o), name in zip(SIZES, NAMES, strict=True):
        layers.append((name, torch.nn.Linear(i, o)))
        if name != "logits":
            layers.append((f"relu_{name}", torch.nn.ReLU()))
    model = torch.nn.Sequential(OrderedDict(layers))
    with torch.no_grad():
        for (kernel, bias), name in zip(_weights(), NAMES, strict=True):
            getattr(model, name).weight.copy_(torch.from_numpy(kernel.T.copy()))  # (out, in)
            getattr(model, name).bias.copy_(torch.from_numpy(bias))
    return model


# ---------------------------------------------------------------- pure parts


def test_choose_kept_is_the_brute_force_optimum() -> None:
    """On random instances, the MILP's choice meets the budget and its summed cost of the
    quantized layers equals the least over all 2**n choices that meet it."""
    rng = np.random.default_rng(3)
    for trial in range(24):
        n = 6
        params = [int(p) for p in rng.integers(1, 1000, n)]
        costs = [float(c) for c in rng.exponential(1.0, n)]
        budget = (
            pa.Budget(keep_fraction=float(rng.uniform(0, 0.6)))
            if trial % 2
            else pa.Budget(bits_per_param=float(rng.uniform(5, 20)))
        )
        kept = pa.choose_kept(params, costs, budget, 4.25, 32.0)
        assert budget.fits(params, kept, 4.25, 32.0)
        got = sum(c for c, k in zip(costs, kept, strict=True) if not k)
        best = min(
            sum(c for c, k in zip(costs, choice, strict=True) if not k)
            for choice in itertools.product([False, True], repeat=n)
            if budget.fits(params, list(choice), 4.25, 32.0)
        )
        assert got == pytest.approx(best, rel=1e-9, abs=1e-12)


def test_bits_budget_below_the_format_is_refused() -> None:
    with pytest.raises(ValueError, match="below the format"):
        pa.choose_kept([10, 10], [1.0, 1.0], pa.Budget(bits_per_param=4.0), 4.25, 32.0)


def test_metrics_against_hand_values() -> None:
    ref = np.array([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    out = np.array([[2.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    assert pa.relative_rms(ref, out) == pytest.approx(math.sqrt(2 / 6) / math.sqrt(5 / 6))
    assert pa.top1_agreement(ref, out) == 0.5
    p = np.exp(ref) / np.exp(ref).sum(axis=1, keepdims=True)
    q = np.exp(out) / np.exp(out).sum(axis=1, keepdims=True)
    assert pa.kl_divergence(ref, out) == pytest.approx(np.mean(np.sum(p * np.log(p / q), axis=1)))
    assert pa.accuracy(out, np.array([0, 2])) == 1.0


def test_quantize_along_moves_the_contraction_axis_last(gfloat: Any) -> None:
    """A Keras kernel (in, out) quantized along axis 0 is gfloat's blocks over ``in``."""
    kernel = _weights()[0][0]
    for fmt in ("mxfp4_e2m1", "nvfp4", "float8_e4m3fn"):
        np.testing.assert_array_equal(
            pa.quantize_along(kernel, fmt, 0), oracle_quantize(gfloat, kernel.T, fmt).T
        )


# ---------------------------------------------------------------- the model runs


@pytest.mark.slow
@pytest.mark.parametrize("framework", ["keras", "torch"])
def test_sensitivity_cells_match_the_oracle(gfloat: Any, framework: str) -> None:
    """Every cell (each layer alone quantized, 4 formats) is the relative RMS of the NumPy
    oracle's output with that layer quantized by gfloat / exact rationals."""
    if framework == "torch":
        require_module("torch")
    else:
        require_module("tensorflow")
    from explorer.queries.advise import advise_precision

    model = _keras_mlp() if framework == "keras" else _torch_mlp()
    x = _inputs()
    formats = ["mxfp4_e2m1", "nvfp4", "float8_e4m3fn", "bfloat16"]
    advice = advise_precision(model, x, formats=formats, budget=0.35, seeds=1)
    assert [layer.name for layer in advice.layers] == NAMES
    assert [layer.params for layer in advice.layers] == [i * o for i, o in SIZES]
    reference = numpy_forward(gfloat, x, [None, None, None])
    for fmt in formats:
        for i, name in enumerate(NAMES):
            formats_i: list[str | None] = [None, None, None]
            formats_i[i] = fmt
            want = pa.relative_rms(reference, numpy_forward(gfloat, x, formats_i))
            got = advice.cell(name, fmt)
            assert got.value == pytest.approx(want, rel=2e-3), (fmt, name)
            assert got.error == got.value


def _keras_direct(gfloat: Any, model: Any, x: np.ndarray, formats: list[str | None]) -> np.ndarray:
    """The Keras model's own layers called one by one, each quantized layer's kernel assigned
    the oracle's values and its input the oracle's quantized input."""
    h = x
    for name, fmt in zip(NAMES, formats, strict=True):
        layer = model.get_layer(name)
        original = layer.kernel.numpy().copy()
        hi, ki = _oracle_layer(gfloat, np.asarray(h), original, fmt)
        layer.kernel.assign(ki)
        h = np.asarray(layer(hi))
        layer.kernel.assign(original)
    return h


def _torch_direct(gfloat: Any, model: Any, x: np.ndarray, formats: list[str | None]) -> np.ndarray:
    """The PyTorch modules called one by one, the same way."""
    import torch

    h = torch.from_numpy(x)
    with torch.no_grad():
        for name, module in model.named_children():
            if name in NAMES:
                fmt = formats[NAMES.index(name)]
                original = module.weight.detach().clone()
                hi, ki = _oracle_layer(gfloat, h.numpy(), original.numpy().T, fmt)
                module.weight.copy_(torch.from_numpy(np.ascontiguousarray(ki.T)))
                h = module(torch.from_numpy(np.ascontiguousarray(hi)))
                module.weight.copy_(original)
            else:
                h = module(h)
    return h.numpy()


@pytest.mark.slow
@pytest.mark.parametrize("framework", ["keras", "torch"])
@pytest.mark.parametrize("fmt", ["mxfp4_e2m1", "nvfp4"])
def test_measured_recipe_and_baselines_match_a_direct_run(gfloat: Any, framework: str, fmt: str) -> None:
    """The recipe and the every-layer and first-and-last baselines, applied by the test in the
    framework itself, give the metric the tool reports; the recipe meets the budget."""
    require_module("torch" if framework == "torch" else "tensorflow")
    from explorer.queries.advise import advise_precision

    model = _keras_mlp() if framework == "keras" else _torch_mlp()
    x = _inputs()
    advice = advise_precision(model, x, formats=[fmt], budget=0.35, seeds=3)
    direct = _keras_direct if framework == "keras" else _torch_direct
    reference = direct(gfloat, model, x, [None, None, None])
    a = advice.for_format(fmt)
    assert a.recipe.kept_fraction <= 0.35
    assert a.first_and_last.kept == ("dense_1", "logits") and a.every_layer.kept == ()
    for choice in (a.recipe, a.every_layer, a.first_and_last, a.random):
        formats: list[str | None] = [None if n in choice.kept else fmt for n in NAMES]
        want = pa.relative_rms(reference, direct(gfloat, model, x, formats))
        assert choice.value == pytest.approx(want, rel=2e-3), choice.name
    assert a.random.error == sorted(a.random.seed_errors)[1]
    assert set(a.quantized) == set(NAMES) - set(a.recipe.kept)


# ---------------------------------------------------------------- the code to paste


def test_torch_filter_fn_selects_exactly_the_recipes_layers() -> None:
    require_module("torch")
    from explorer.queries.advise import advise_precision

    model = _torch_mlp()
    advice = advise_precision(model, _inputs(), formats=["mxfp4_e2m1"], budget=0.35, seeds=1)
    a = advice.for_format("mxfp4_e2m1")
    namespace: dict[str, Any] = {}
    exec(a.code, namespace)  # the snippet a user pastes
    chosen = {fqn for fqn, module in model.named_modules() if namespace["filter_fn"](module, fqn)}
    assert chosen == set(a.quantized) and chosen.isdisjoint(a.recipe.kept)
    assert a.code == torch_code("mxfp4_e2m1", a.quantized)


def test_keras_dtype_snippet_sets_exactly_the_recipes_layers() -> None:
    """The bfloat16 snippet's ``with_recipe`` gives the recipe's layers mixed_bfloat16, leaves
    the others float32 and keeps the weights (the output within bfloat16's rounding)."""
    require_module("tensorflow")
    model = _keras_mlp()
    namespace: dict[str, Any] = {}
    exec(keras_code("bfloat16", ["dense_2", "logits"]), namespace)
    new = namespace["with_recipe"](model)
    policies = {layer.name: layer.dtype_policy.name for layer in new.layers if layer.name in NAMES}
    assert policies == {"dense_1": "float32", "dense_2": "mixed_bfloat16", "logits": "mixed_bfloat16"}
    x = _inputs()
    assert pa.relative_rms(np.asarray(model(x)), np.asarray(new(x)).astype(np.float32)) < 0.05


def test_keras_float8_filter_quantizes_exactly_the_recipes_layers() -> None:
    """``model.quantize("float8", filters=quantize_filter)`` (Keras' own) on the snippet's filter."""
    require_module("tensorflow")
    model = _keras_mlp()
    namespace: dict[str, Any] = {}
    exec(keras_code("float8_e4m3fn", ["dense_1"]), namespace)
    model.quantize("float8", filters=namespace["quantize_filter"])
    quantized = {layer.name for layer in model.layers if layer.dtype_policy.name.startswith("float8")}
    assert quantized == {"dense_1"}


def test_layer_names_are_quoted_in_the_code() -> None:
    hostile = ["a'b", 'c"); import os; ("']
    namespace: dict[str, Any] = {}
    exec(torch_code("nvfp4", hostile), namespace)
    assert namespace["LOW_PRECISION"] == set(hostile)


# ---------------------------------------------------------------- the command line


@pytest.mark.slow
def test_cli_json_and_usage_errors(capsys: Any) -> None:
    """``advise --json`` on the PyTorch built-in MLP: one document, its layers in execution
    order, every cell finite, the recipe within the budget; bad input exits 2."""
    require_module("torch")
    import json

    from explorer.cli import main

    argv = [
        "advise",
        "--builtin",
        "mlp",
        "--framework",
        "torch",
        "--format",
        "mxfp4",
        "--seeds",
        "1",
        "--json",
    ]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)["result"]
    assert [layer["name"] for layer in result["layers"]] == ["dense_1", "dense_2", "logits"]
    assert result["formats"] == ["mxfp4_e2m1"] and len(result["sensitivity"]) == 3
    assert all(cell["error"] > 0 for cell in result["sensitivity"])
    recipe = result["advice"][0]["recipe"]
    assert recipe["kept_fraction"] <= 0.1 and "def filter_fn(module, fqn):" in result["advice"][0]["code"]
    assert main(["advise", "--builtin", "mlp", "--format", "fp17"]) == 2
    with pytest.raises(SystemExit) as exc:
        main(
            ["advise", "--builtin", "mlp", "--format", "nvfp4", "--keep-budget", "0.1", "--bits-budget", "6"]
        )
    assert exc.value.code == 2
    assert (
        main(
            ["advise", "--builtin", "mlp", "--framework", "torch", "--format", "nvfp4", "--bits-budget", "3"]
        )
        == 2
    )
    assert capsys.readouterr().err.count("error:") == 3


@pytest.mark.slow
def test_cli_file_inputs_and_labels(capsys: Any, tmp_path: Any) -> None:
    """``advise --file m.keras --inputs x.npy --labels y.npy``: the metric is accuracy, the
    float32 value is the saved model's own accuracy on those rows, and the file is unchanged."""
    require_module("tensorflow")
    import json

    from explorer.cli import main

    model = _keras_mlp()
    path = tmp_path / "m.keras"
    model.save(path)
    before = path.read_bytes()
    x = _inputs()
    labels = np.arange(16) % 10
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", labels)
    argv = [
        "advise",
        "--file",
        str(path),
        "--inputs",
        str(tmp_path / "x.npy"),
        "--labels",
        str(tmp_path / "y.npy"),
    ]
    assert main([*argv, "--format", "nvfp4", "--seeds", "1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["result"]
    want = float(np.mean(np.asarray(model(x)).argmax(axis=1) == labels))
    assert result["metric"] == "accuracy" and result["float32_value"] == pytest.approx(want)
    assert path.read_bytes() == before
