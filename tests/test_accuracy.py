"""ULP figures checked against independent exhaustive computations written here."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest

from explorer.analysis.accuracy import accuracy, ulp_distance


def _float16_values() -> np.ndarray:
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    return np.unique(x[np.isfinite(x)].astype(np.float64))


def _ordinal16(values: np.ndarray) -> np.ndarray:
    """Independent float16 ordinal: the int16 bit pattern, negatives mirrored."""
    bits = values.astype(np.float16).view(np.int16).astype(np.int64)
    return np.where(bits < 0, -(bits & 0x7FFF), bits)


def _independent_ulps(result16: np.ndarray, x: np.ndarray, reference) -> np.ndarray:  # type: ignore[no-untyped-def]
    with np.errstate(all="ignore"):
        expected = reference(x).astype(np.float16)  # numpy's float64 -> float16 cast rounds once
    return np.abs(_ordinal16(result16.astype(np.float64)) - _ordinal16(expected.astype(np.float64)))


@pytest.mark.parametrize("name", ["exp", "tanh", "log"])
def test_numpy_float16_ulps_match_an_exhaustive_computation(name: str) -> None:
    x = _float16_values()
    ref = getattr(np, name)
    with np.errstate(all="ignore"):
        defined = ~np.isnan(ref(x))
        x = x[defined]
        y = ref(x.astype(np.float16))
    ulps = _independent_ulps(y, x, ref)
    acc = accuracy(name, "float16", ("numpy", "emulated"))
    numpy = acc.by_backend("numpy")
    assert numpy.n_inputs == x.size and numpy.exhaustive
    assert numpy.max_ulp == ulps.max()
    assert numpy.mean_ulp == pytest.approx(ulps.mean(), rel=1e-12, abs=1e-15)
    assert numpy.correctly_rounded_fraction == pytest.approx(np.mean(ulps == 0))
    emulated = acc.by_backend("emulated")
    assert emulated.max_ulp == 0.0 and emulated.correctly_rounded_fraction == 1.0


def test_tensorflow_float16_exp_ulps_and_disagreements() -> None:
    from explorer.backends.tensorflow_backend import import_tensorflow

    tf = import_tensorflow()
    x = _float16_values()
    y_tf = tf.math.exp(tf.constant(x.astype(np.float16))).numpy()
    with np.errstate(all="ignore"):
        y_np = np.exp(x.astype(np.float16))
    acc = accuracy("exp", "float16", ("numpy", "tensorflow"))
    ulps = _independent_ulps(y_tf, x, np.exp)
    tf_acc = acc.by_backend("tensorflow")
    assert tf_acc.max_ulp == ulps.max()
    assert tf_acc.correctly_rounded_fraction == pytest.approx(np.mean(ulps == 0))
    differ = x[y_tf.astype(np.float64) != y_np.astype(np.float64)]
    rows = acc.disagreements(limit=None)
    assert [r["input"] for r in rows] == differ.tolist()
    assert acc.n_disagreements() == differ.size


def test_unsupported_backend_is_reported_not_raised() -> None:
    acc = accuracy("exp", "bfloat16", ("numpy", "emulated"))
    numpy = acc.by_backend("numpy")
    assert numpy.status == "unsupported_dtype" and numpy.max_ulp is None and numpy.n_inputs == 0
    assert acc.by_backend("emulated").n_inputs == 65279


def test_ulp_distance_counts_code_points_across_zero_and_to_inf() -> None:
    assert ulp_distance(np.array([-(2.0**-24)]), np.array([2.0**-24]), "float16").tolist() == [2.0]
    assert ulp_distance(np.array([np.inf]), np.array([65504.0]), "float16").tolist() == [1.0]
    assert np.isnan(ulp_distance(np.array([np.nan]), np.array([1.0]), "float16")[0])
    assert ulp_distance(np.array([np.nan]), np.array([np.nan]), "float16").tolist() == [0.0]


def test_binary_op_accuracy_on_a_grid() -> None:
    acc = accuracy("mul", "float8_e4m3fn", ("emulated",))
    emulated = acc.by_backend("emulated")
    assert emulated.exhaustive and emulated.n_inputs == 253**2 and emulated.max_ulp == 0.0


def test_bad_names_raise() -> None:
    with pytest.raises(ValueError, match="Valid ops"):
        accuracy("expp", "float16")
    with pytest.raises(ValueError, match="Valid backends"):
        accuracy("exp", "float16", ("numpyy",))
    with pytest.raises(ValueError, match="not elementwise"):
        accuracy("cholesky", "float16")
    with pytest.raises(ValueError, match="no backend"):
        accuracy("exp", "float16", ("numpy",)).by_backend("torch")


def test_cli_accuracy_json_has_one_entry_per_backend() -> None:
    from explorer.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            [
                "accuracy",
                "--op",
                "exp",
                "--dtype",
                "float16",
                "--backend",
                "numpy",
                "--backend",
                "emulated",
                "--json",
            ]
        )
    assert code == 0
    rows = json.loads(out.getvalue())["result"][0]["backends"]
    assert [r["backend"] for r in rows] == ["numpy", "emulated"]
    keys = {"backend", "max_ulp", "mean_ulp", "correctly_rounded_fraction", "n_inputs", "exhaustive"}
    assert all(keys <= set(r) for r in rows)


def test_ulp_plot_overlays_every_backend_that_ran() -> None:
    from explorer.plots.accuracy import plot_ulp_error

    fig = plot_ulp_error(accuracy("exp", "float16", ("numpy", "emulated")))
    assert len(fig.axes[0].lines) == 2
