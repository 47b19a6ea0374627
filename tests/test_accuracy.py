"""Both ULP measures checked against independent computations written here: exhaustive step
counts from float16 bit patterns, and ulp errors from mpmath with Goldberg's ulp computed from the
spec table of tests/support/oracles.py."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import math
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import pytest

from explorer.queries.accuracy import DEFINITIONS, accuracy, ulp_distance, ulp_error, ulp_of, ulp_steps
from tests.support import oracles


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
    assert numpy.max_ulp_steps == ulps.max()
    assert numpy.mean_ulp_steps == pytest.approx(ulps.mean(), rel=1e-12, abs=1e-15)
    assert numpy.correctly_rounded_fraction == pytest.approx(np.mean(ulps == 0))
    emulated = acc.by_backend("emulated")
    assert emulated.max_ulp_steps == 0.0 and emulated.correctly_rounded_fraction == 1.0
    assert emulated.max_ulp_error is not None and emulated.max_ulp_error <= 0.5


@pytest.mark.slow
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
    assert tf_acc.max_ulp_steps == ulps.max()
    assert tf_acc.correctly_rounded_fraction == pytest.approx(np.mean(ulps == 0))
    differ = x[y_tf.astype(np.float64) != y_np.astype(np.float64)]
    rows = acc.disagreements(limit=None)
    assert [r["input"] for r in rows] == differ.tolist()
    assert acc.n_disagreements() == differ.size


def test_unsupported_backend_is_reported_not_raised() -> None:
    acc = accuracy("exp", "bfloat16", ("numpy", "emulated"))
    numpy = acc.by_backend("numpy")
    assert numpy.status == "unsupported_dtype" and numpy.max_ulp_steps is None and numpy.n_inputs == 0
    assert numpy.max_ulp_error is None
    assert acc.by_backend("emulated").n_inputs == 65279


def test_ulp_distance_counts_code_points_across_zero_and_to_inf() -> None:
    assert ulp_distance(np.array([-(2.0**-24)]), np.array([2.0**-24]), "float16").tolist() == [2.0]
    assert ulp_distance(np.array([np.inf]), np.array([65504.0]), "float16").tolist() == [1.0]
    assert np.isnan(ulp_distance(np.array([np.nan]), np.array([1.0]), "float16")[0])
    assert ulp_distance(np.array([np.nan]), np.array([np.nan]), "float16").tolist() == [0.0]


def test_binary_op_accuracy_on_a_grid() -> None:
    acc = accuracy("mul", "float8_e4m3fn", ("emulated",))
    emulated = acc.by_backend("emulated")
    assert emulated.exhaustive and emulated.n_inputs == 253**2 and emulated.max_ulp_steps == 0.0


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
    entry = json.loads(out.getvalue())["result"][0]
    rows = entry["backends"]
    assert [r["backend"] for r in rows] == ["numpy", "emulated"]
    keys = {"backend", "max_ulp_steps", "mean_ulp_steps", "max_ulp_error", "mean_ulp_error"}
    keys |= {"correctly_rounded_fraction", "n_inputs", "exhaustive"}
    assert all(keys <= set(r) for r in rows)
    assert set(entry["definitions"]) == {"ulp_steps", "ulp_error"}
    assert "|y - f(x)| / ulp(f(x))" in entry["definitions"]["ulp_error"]
    assert rows[1]["max_ulp_steps"] == 0 and rows[1]["max_ulp_error"] <= 0.5


def test_cli_accuracy_table_names_and_defines_both_measures() -> None:
    from explorer.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["accuracy", "--op", "exp", "--dtype", "float16", "--backend", "emulated"]) == 0
    text = out.getvalue()
    header = text.splitlines()[1].split()
    assert {"max_ulp_steps", "mean_ulp_steps", "max_ulp_error", "mean_ulp_error"} <= set(header)
    for line in DEFINITIONS.values():
        assert line in text


def test_ulp_plot_overlays_every_backend_that_ran() -> None:
    from explorer.plots.accuracy import plot_ulp_error

    result = accuracy("exp", "float16", ("numpy", "emulated"))
    fig = plot_ulp_error(result)
    assert len([line for line in fig.axes[0].lines if line.get_label()[0] != "_"]) == 2
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert all("ulp_error max" in label and "ulp_steps max" in label for label in labels)
    assert "ulp_error" in fig.axes[0].get_ylabel()
    steps = plot_ulp_error(result, measure="ulp_steps")
    assert "ulp_steps" in steps.axes[0].get_ylabel()
    with pytest.raises(ValueError, match="unknown measure"):
        plot_ulp_error(result, measure="ulps")


# ---------------------------------------------------------------- ulp_error (Goldberg's ulp)


def _goldberg_ulp(value: mpmath.mpf, name: str) -> mpmath.mpf:
    """Goldberg's ulp from the spec table: 2**(max(e, emin) - p + 1), 2**e <= |value| < 2**(e+1)."""
    spec = oracles.SPECS[name]
    e = oracles.emin(spec) if value == 0 else int(mpmath.floor(mpmath.log(abs(value), 2)))
    if value != 0 and mpmath.mpf(2) ** (e + 1) <= abs(value):  # log2 rounded up at a power of two
        e += 1
    return mpmath.mpf(2) ** (max(e, oracles.emin(spec)) - oracles.precision(spec) + 1)


def _mpmath_ulp_errors(x: np.ndarray, y: np.ndarray, name: str) -> np.ndarray:
    """|y - exp(x)| / ulp(exp(x)) at 80 bits, for finite results y."""
    out = []
    with mpmath.workprec(80):
        for xi, yi in zip(x.tolist(), y.tolist(), strict=True):
            f = mpmath.exp(mpmath.mpf(xi))
            out.append(float(abs(mpmath.mpf(yi) - f) / _goldberg_ulp(f, name)))
    return np.array(out)


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_ulp_error_of_exp_matches_mpmath_and_is_at_most_half_when_correctly_rounded(name: str) -> None:
    acc = accuracy("exp", name, ("numpy", "emulated") if name == "float16" else ("emulated",))
    x = acc.inputs[0]
    for backend in acc.results:
        y = acc.results[backend]
        finite = np.isfinite(y) & np.isfinite(acc.reference_rounded)
        sample = np.nonzero(finite)[0][::7]
        wrong = np.nonzero(finite & (acc.ulp_steps[backend] > 0))[0]
        idx = np.union1d(sample, wrong)
        independent = _mpmath_ulp_errors(x[idx], y[idx], name)
        np.testing.assert_allclose(acc.ulp_errors[backend][idx], independent, rtol=0, atol=1e-9)
        # correctly rounded results (ulp_steps 0): at most half an ulp; one step off: more than that
        steps = acc.ulp_steps[backend][idx]
        assert np.all(independent[steps == 0] <= 0.5 + 1e-12)
        assert np.all((independent[steps == 1] > 0.5) & (independent[steps == 1] < 1.5))
    emulated = acc.by_backend("emulated")
    assert emulated.max_ulp_steps == 0 and emulated.max_ulp_error <= 0.5
    if name == "float16":
        # NumPy's float16 exp (computed in float32, rounded again) is faithful; where it is not
        # correctly rounded depends on the CPU's float32 exp kernel (2 near-ties on an AVX2
        # machine, 4 on an AVX512 one): each result one step off is between 0.5 and 1 ulp away
        numpy = acc.by_backend("numpy")
        off = np.nonzero(acc.ulp_steps["numpy"] == 1)[0]
        assert numpy.max_ulp_steps <= 1
        assert off.size == np.count_nonzero(acc.ulp_steps["numpy"] > 0)
        if off.size:
            errors = _mpmath_ulp_errors(x[off], acc.results["numpy"][off], name)
            assert np.all((errors > 0.5) & (errors < 1.0))
            assert numpy.max_ulp_error == pytest.approx(errors.max(), abs=1e-9)


def test_ulp_error_by_hand_from_the_ieee_tables() -> None:
    """float16 has p = 11 and emin = -14 (IEEE 754 Table 3.5): ulp is 2**-10 in [1, 2), 2**-24 in
    the subnormals, 32 in the top binade; bfloat16 has p = 8: ulp is 2**-9 in [1/4, 1/2)."""
    half = lambda values: np.array(values, dtype=np.float64)
    # 1 + 2**-11 is the midpoint of 1 and 1 + 2**-10: both are half an ulp away; the tie goes to
    # the even 1 (0 steps), 1 + 2**-10 is one step off with the same error, 0.5
    f = half([1 + 2**-11, 1 + 2**-11])
    y = half([1.0, 1 + 2**-10])
    assert ulp_error(y, f, "float16").tolist() == [0.5, 0.5]
    assert ulp_steps(y, oracles.round_array(f, "float16"), "float16").tolist() == [0.0, 1.0]
    # just below a power of two: ulp(2 - 2**-12) = 2**-10 (the binade of f, Goldberg), so 2 is
    # 0.25 away (correctly rounded) and 2 - 2**-10 is 0.75 away (faithful, one step off)
    f = half([2 - 2**-12, 2 - 2**-12])
    y = half([2.0, 2 - 2**-10])
    assert ulp_error(y, f, "float16").tolist() == [0.25, 0.75]
    assert ulp_steps(y, oracles.round_array(f, "float16"), "float16").tolist() == [0.0, 1.0]
    # below the smallest subnormal 2**-24: the ulp is the subnormal spacing, 2**-24
    f = half([0.75 * 2**-24, 0.75 * 2**-24])
    assert ulp_error(half([2**-24, 0.0]), f, "float16").tolist() == [0.25, 0.75]
    # at the overflow bound 65520 (rounds to inf): inf is the correctly rounded result (error 0,
    # by convention), 65504 is half an ulp (32) away and one step off
    f = half([65520.0, 65520.0])
    assert ulp_error(half([np.inf, 65504.0]), f, "float16").tolist() == [0.0, 0.5]
    assert ulp_steps(half([np.inf, 65504.0]), half([np.inf, np.inf]), "float16").tolist() == [0.0, 1.0]
    # inf where the correctly rounded value is finite, and NaN on one side only
    assert ulp_error(half([np.inf]), half([100.0]), "float16").tolist() == [np.inf]
    assert np.isnan(ulp_error(half([np.nan]), half([1.0]), "float16")[0])
    assert ulp_error(half([np.nan]), half([np.nan]), "float16").tolist() == [0.0]
    # bfloat16: 1/3 rounds to 171/512, 1/3 of an ulp (2**-9) away
    third = float(Fraction(1, 3))
    assert oracles.round_exact(Fraction(1, 3), oracles.target("bfloat16")) == 171 / 512
    assert ulp_error(half([171 / 512]), half([third]), "bfloat16")[0] == pytest.approx(1 / 3, abs=1e-12)


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float8_e4m3fn", "float4_e2m1fn"])
def test_ulp_of_is_goldbergs_ulp_from_the_spec_table(name: str) -> None:
    values = oracles.finite_values(name)
    values = values[values > 0][::5]
    with mpmath.workprec(80):
        want = [float(_goldberg_ulp(mpmath.mpf(v), name)) for v in values.tolist()]
    assert ulp_of(values, name).tolist() == want
    spec = oracles.SPECS[name]
    assert ulp_of([0.0], name)[0] == float(oracles.smallest_subnormal(spec))
    assert math.isinf(ulp_of([np.inf], name)[0])


def _shown_tick_labels(ax: Any, axis: str) -> list[Any]:
    """The tick labels drawn inside the axis' limits (a separate reading of the drawn figure)."""
    lo, hi = sorted(ax.get_xlim() if axis == "x" else ax.get_ylim())
    ticks = ax.get_xticks() if axis == "x" else ax.get_yticks()
    labels = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    return [label for tick, label in zip(ticks, labels, strict=True) if lo <= tick <= hi]


def test_accuracy_figure_is_readable_for_a_room() -> None:
    """Issue #28 item 9: distances start at 0, ticks are round plain numbers that do not overlap,
    axes are titled and legends are at least 12 pt."""
    import re

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from explorer.analysis.accumulation import summation_study
    from explorer.plots.accuracy import accuracy_figure

    result = accuracy("exp", "float16", ("numpy", "emulated"))
    fig = accuracy_figure(result, summation_study("float16", n=2000))
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    ulp_ax, sum_ax = fig.axes
    assert ulp_ax.get_ylim()[0] == 0.0  # ulp_error cannot be negative
    assert sum_ax.get_ylim()[0] == 0.0  # nor a running sum of uniform [0, 1) terms
    assert sum_ax.get_xlim()[0] == 0.0
    plain = re.compile(r"^[-\u2212]?\d+(\.\d+)?(e[-+]\d+)?$")
    for ax in (ulp_ax, sum_ax):
        assert ax.get_xlabel() and ax.get_ylabel() and (ax.get_title(loc="left") or ax.get_title())
        assert ax.get_legend() is not None
        # 12 pt: at least 12 px in the app, where the SVG is drawn at 0.96 px a point or more
        assert min(t.get_fontsize() for t in ax.get_legend().get_texts()) >= 12
        for axis in ("x", "y"):
            shown = _shown_tick_labels(ax, axis)
            assert len(shown) >= 2
            texts = [t.get_text() for t in shown]
            assert all(plain.match(text) for text in texts), texts  # no 5.25286x10^-1
            boxes = [t.get_window_extent(renderer) for t in shown]
            for a, b in itertools.pairwise(boxes):
                assert not a.overlaps(b), texts
    # the ulp_error's ticks: 0, the correctly rounded bound 0.5, then powers of ten
    values = [float(t.get_text()) for t in _shown_tick_labels(ulp_ax, "y")]
    assert values[:3] == [0.0, 0.5, 1.0]
    # the legend below the ulp plot stays clear of the running-sum plot
    assert ulp_ax.get_legend().get_window_extent(renderer).y0 > sum_ax.get_window_extent(renderer).y1
