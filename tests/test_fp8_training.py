"""Emulated fp8 training: fp8-representable matmul inputs, delayed scaling, comparison with float32."""

from __future__ import annotations

import threading

import ml_dtypes
import numpy as np
import pytest

from explorer.training import fp8 as F
from explorer.training import load_digits_data
from explorer.training.fp8 import (
    DelayedScaler,
    Fp8Config,
    Fp8EpochRecord,
    Fp8StepRecord,
    compare_fp8,
    quantize,
    train_fp8,
)

E4M3 = ml_dtypes.float8_e4m3fn
E5M2 = ml_dtypes.float8_e5m2
SMALL = {"epochs": 2, "max_train_samples": 512}


def test_quantize_is_mldtypes_rounding_with_saturation() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(0, 30, 1000).astype(np.float32)
    q = quantize(x, "float8_e4m3fn", scale=4.0)
    assert q.dtype == E4M3
    expected = np.clip(x * 4.0, -448, 448).astype(E4M3)
    np.testing.assert_array_equal(q.astype(np.float32), expected.astype(np.float32))
    assert np.abs(q.astype(np.float32)).max() == 448  # saturated, never NaN
    assert not np.isnan(q.astype(np.float32)).any()
    q2 = quantize(x, "e5m2", scale=1e4)
    assert q2.dtype == E5M2 and np.abs(q2.astype(np.float32)).max() == 57344
    with pytest.raises(ValueError, match="scale"):
        quantize(x, "e4m3", 0.0)
    with pytest.raises(ValueError, match="float7"):
        quantize(x, "float7", 1.0)


def test_stochastic_quantize_rounds_to_a_neighbour_and_is_unbiased() -> None:
    x = np.full(20000, 1.1, np.float32)  # between e4m3 neighbours 1.0 and 1.125
    q = quantize(x, "e4m3", 1.0, stochastic=True, rng=np.random.default_rng(0)).astype(np.float32)
    assert set(np.unique(q).tolist()) == {1.0, 1.125}
    assert q.mean() == pytest.approx(1.1, abs=2e-3)


def test_delayed_scaler_follows_the_amax_history() -> None:
    s = DelayedScaler("float8_e4m3fn", history_len=3)
    assert s.scale == 1.0  # TransformerEngine starts at 1
    s.update(2.0)
    assert s.scale == 448 / 2.0
    s.update(8.0)
    s.update(1.0)
    assert s.scale == 448 / 8.0  # the max over the history
    s.update(1.0)
    s.update(1.0)  # 8.0 has left the 3-step window
    assert s.scale == 448 / 1.0
    s.update(0.0)
    assert s.scale == 448 / 1.0
    m = DelayedScaler("e5m2", history_len=4, margin=2)
    m.update(1.0)
    assert m.scale == 57344 / 4
    off = DelayedScaler("e5m2", enabled=False)
    off.update(1e-6)
    assert off.scale == 1.0
    with pytest.raises(ValueError, match="history_len"):
        DelayedScaler("e4m3", history_len=0)


def test_forward_uses_fp8_inputs_exactly() -> None:
    """The engine's layer output equals a matmul of ml_dtypes-cast inputs, computed here independently."""
    config = Fp8Config().validated()
    net = F._Mlp((60, 64, 64, 10), seed=0, lr=1e-3)
    engine = F._Fp8Engine(config, 3)
    x = load_digits_data("mlp").x_train[:64]
    engine.forward(net, x, record=True)  # step 1: scale 1, histories filled
    sx, sw = engine.scalers["layer0.x"].scale, engine.scalers["layer0.w"].scale
    assert sx == pytest.approx(448 / np.abs(x).max()) and sw == pytest.approx(448 / np.abs(net.w[0]).max())
    _, cache = engine.forward(net, x, record=True)
    qx = np.clip(x * np.float32(sx), -448, 448).astype(E4M3).astype(np.float32)
    qw = np.clip(net.w[0] * np.float32(sw), -448, 448).astype(E4M3).astype(np.float32)
    expected = (qx @ qw) / np.float32(sx * sw) + net.b[0]
    np.testing.assert_array_equal(cache[0][4], expected)
    # and it differs from the float32 product: the rounding is real
    assert not np.allclose(cache[0][4], x @ net.w[0], rtol=1e-4, atol=0)


@pytest.mark.parametrize("stochastic", [False, True])
def test_matmul_inputs_are_fp8_representable_after_scaling(stochastic) -> None:
    r = train_fp8(scaling="delayed", stochastic_rounding=stochastic, **SMALL)
    captured = r.last_matmul_inputs
    assert set(captured) == {f"layer{i}.{s}" for i in range(3) for s in ("x", "w", "dy")}
    for site, (q, scale, fmt) in captured.items():
        dtype = E5M2 if site.endswith(".dy") else E4M3
        assert fmt == ("float8_e5m2" if site.endswith(".dy") else "float8_e4m3fn")
        # the round trip through the fp8 dtype is exact: these values are fp8 values
        np.testing.assert_array_equal(q.astype(dtype).astype(np.float32), q)
        assert np.abs(q).max() <= float(ml_dtypes.finfo(dtype).max)
        assert scale > 0 and scale != 1.0  # delayed scaling moved off its initial value
        # the values use the format's range: amax near the top after scaling
        assert np.abs(q).max() >= float(ml_dtypes.finfo(dtype).max) / 64
    step_scales = r.steps[-1].scales
    assert step_scales["layer0.x"] == captured["layer0.x"][1]


def test_no_scaling_keeps_scale_one_and_float32_has_no_fp8() -> None:
    r = train_fp8(scaling="none", **SMALL)
    assert all(scale == 1.0 for _, scale, _ in r.last_matmul_inputs.values())
    assert all(v == 1.0 for v in r.steps[-1].scales.values())
    ref = train_fp8(scaling="float32", **SMALL)
    assert ref.last_matmul_inputs == {} and ref.steps[0].scales == {}
    assert ref.label == "float32" and r.label == "fp8 none"


def test_fp8_with_delayed_scaling_tracks_float32() -> None:
    ref, fp8 = compare_fp8(({"scaling": "float32"}, {"scaling": "delayed"}), epochs=3)
    assert [e.loss for e in fp8.epochs] == sorted((e.loss for e in fp8.epochs), reverse=True)
    assert fp8.final["loss"] == pytest.approx(ref.final["loss"], rel=0.15)
    assert fp8.final["val_accuracy"] > 0.85
    assert fp8.final["loss"] != ref.final["loss"]  # fp8 changed the numbers
    assert fp8.epochs[-1].grad_underflow_fraction < 0.01


def test_small_gradients_need_scaling_in_e5m2() -> None:
    # loss x 2**-10 puts the output gradients below e5m2's smallest subnormal (2**-16)
    ref, delayed, none = compare_fp8(
        ({"scaling": "float32"}, {"scaling": "delayed"}, {"scaling": "none"}),
        loss_multiplier=2.0**-10,
        epochs=3,
    )
    assert none.epochs[-1].grad_underflow_fraction > 0.5
    assert delayed.epochs[-1].grad_underflow_fraction < 0.01
    assert none.final["loss"] > 2 * ref.final["loss"]
    assert delayed.final["loss"] == pytest.approx(ref.final["loss"], rel=0.15)


def test_runs_are_seeded() -> None:
    a = train_fp8(stochastic_rounding=True, **SMALL)
    b = train_fp8(stochastic_rounding=True, **SMALL)
    c = train_fp8(stochastic_rounding=False, **SMALL)
    assert [s.loss for s in a.steps] == [s.loss for s in b.steps]
    assert [s.loss for s in a.steps] != [s.loss for s in c.steps]


def test_callback_progress_and_cancel() -> None:
    seen: list = []
    progress: list = []
    r = train_fp8(callback=seen.append, progress=lambda d, t: progress.append((d, t)), **SMALL)
    assert [type(x) for x in seen].count(Fp8StepRecord) == 16
    assert [type(x) for x in seen].count(Fp8EpochRecord) == 2 and isinstance(seen[-1], Fp8EpochRecord)
    assert progress[-1] == (16, 16) and len(progress) == 16
    assert not r.cancelled

    cancel = threading.Event()

    def stop(record) -> None:
        if isinstance(record, Fp8StepRecord) and record.step == 3:
            cancel.set()

    r = train_fp8(callback=stop, cancel=cancel, **SMALL)
    assert r.cancelled and len(r.steps) == 4 and r.epochs == []


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"scaling": "current"}, "valid: delayed, none, float32"),
        ({"epochs": 0}, "epochs"),
        ({"amax_history_len": 0}, "amax_history_len"),
        ({"learning_rate": 0.0}, "learning_rate"),
        ({"forward_format": "float7"}, "float7"),
        ({"max_train_samples": 10}, "max_train_samples"),
        # issue 24, item 4: a NaN margin was accepted (the scale became NaN)
        ({"margin": float("nan")}, "margin must be an integer from 0 to 32"),
        ({"margin": 2.5}, "margin"),
        ({"margin": -1}, "margin"),
        ({"margin": 33}, "margin"),
        ({"margin": True}, "margin"),
        ({"loss_multiplier": float("inf")}, "loss_multiplier"),
        ({"learning_rate": float("nan")}, "learning_rate"),
    ],
)
def test_bad_input_is_a_clear_error(fields, message) -> None:
    with pytest.raises(ValueError, match=message):
        train_fp8(**fields)


def test_bad_config_type() -> None:
    with pytest.raises(TypeError, match="Fp8Config"):
        train_fp8(config={"scaling": "delayed"})  # type: ignore[arg-type]


def test_fp8_plots() -> None:
    from explorer.plots.training import plot_curves, plot_fp8_scales, plot_grad_zero_fraction

    results = compare_fp8(({"scaling": "float32"}, {"scaling": "delayed"}), epochs=1, max_train_samples=256)
    assert len(plot_curves(results, "loss").get_lines()) == 2
    assert len(plot_fp8_scales(results[1]).get_lines()) == 9
    assert len(plot_grad_zero_fraction(results).get_lines()) == 2
