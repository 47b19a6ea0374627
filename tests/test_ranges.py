"""Regions and thresholds, checked against independent exhaustive computations written here."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from explorer.formats import FORMAT_NAMES, all_formats, from_ordinals, ordinals, resolve
from explorer.ops import Op, uniform
from explorer.queries import ranges as R
from tests.support import oracles
from tests.support.require import require

ALL16 = np.arange(1 << 16, dtype=np.uint16)


def _finite_float16() -> np.ndarray:
    x = ALL16.view(np.float16)
    return np.unique(x[np.isfinite(x)].astype(np.float64))


def _test_op(name: str, ref, np_call, tf_call) -> Op:  # type: ignore[no-untyped-def]
    return Op(
        name, "unary", 1, uniform(-1, 1), ref, f"tf.math.{name}", (), tf_call, numpy=np_call, elementwise=True
    )


SQUARE = _test_op("square", np.square, lambda np, dt, x: np.square(x), lambda tf, dt, x: tf.math.square(x))
RECIPROCAL = _test_op(
    "reciprocal", np.reciprocal, lambda np, dt, x: np.reciprocal(x), lambda tf, dt, x: tf.math.reciprocal(x)
)


# ---------------------------------------------------------------- number line


@pytest.mark.parametrize("fmt", all_formats(), ids=lambda f: f.name)
def test_number_line_boundaries_match_the_casts(fmt) -> None:  # type: ignore[no-untyped-def]
    line = R.number_line(fmt)
    # probe with the neighbours of each boundary in float32 (float64 for the wide formats):
    # ml_dtypes casts float32 in one rounding (its float64 casts go through float32)
    probe = np.float64 if fmt.name in ("float64", "float32") else np.float32
    up = lambda v: np.nextafter(probe(v), probe(np.inf))
    down = lambda v: np.nextafter(probe(v), probe(0))
    with np.errstate(over="ignore", invalid="ignore"):
        cast = lambda v: float(fmt.round(np.array([v], dtype=probe))[0])
        if line.zero_bound is not None and fmt.name != "float64":
            assert probe(line.zero_bound) == line.zero_bound
            assert cast(line.zero_bound) == 0.0
            assert cast(up(line.zero_bound)) == fmt.smallest_subnormal
        if fmt.name == "float64":
            return
        assert probe(line.overflow_bound) == line.overflow_bound
        above = cast(up(line.overflow_bound))
        below = cast(down(line.overflow_bound))
    assert below == fmt.max
    if fmt.overflow == "saturate":
        assert above == fmt.max
    else:
        assert not np.isfinite(above)
    assert line.overflow_gives == fmt.overflow


@pytest.mark.parametrize("name", list(oracles.SPECS))
def test_number_line_bounds_are_exact_and_say_whether_they_are_included(name: str) -> None:
    """The bounds against the spec table and the oracle's integer rounding (tests/support/oracles.py)."""
    if name not in FORMAT_NAMES:  # float8_e5m3fnu needs ml_dtypes 0.7 (CI installs the newest)
        require(False, f"{name} is not in the installed ml_dtypes {ml_dtypes.__version__}")
    spec, t = oracles.SPECS[name], oracles.target(name)
    line = R.number_line(name)
    top = oracles.max_value(spec)
    quantum = Fraction(2) ** (oracles.emax(spec) - spec.mantissa_bits)
    bound = top + quantum / 2  # exact, even for float64
    tiny = Fraction(1, 2**200)
    rounds = lambda v: oracles.round_exact(v, t)
    past = lambda v: not math.isfinite(rounds(v)) if not t.saturating else v >= bound
    assert rounds(bound - tiny * bound) == float(top) and past(bound + tiny * bound)
    # included iff the tie itself rounds past max: the significand of max is odd
    assert line.overflow_bound_included == (not math.isfinite(rounds(bound)) if not t.saturating else True)
    if name in ("float8_e4m3fn",):
        assert not line.overflow_bound_included and "|x| > 464 rounds to NaN" in line.overflow_rule
    sign = ">=" if line.overflow_bound_included else ">"
    assert line.overflow_rule.startswith(f"|x| {sign} ")
    if name != "float64":
        assert line.overflow_bound == float(bound)
    else:
        assert line.overflow_rule.startswith("|x| >= 1.7976931348623157e+308 + 2^970 rounds to inf")
    if not spec.has_zero:
        assert line.zero_bound is None
        return
    zero = oracles.smallest_subnormal(spec) / 2
    assert rounds(zero) == 0.0 and rounds(zero + tiny * zero) == float(oracles.smallest_subnormal(spec))
    assert line.zero_bound_included
    exponent = zero.denominator.bit_length() - 1
    assert line.underflow_rule.startswith(f"|x| <= 2^-{exponent} rounds to 0 (bound included")
    if name != "float64":
        assert line.zero_bound == float(zero)
    assert R.number_line("float16").overflow_rule.startswith("|x| >= 65520 rounds to inf (bound included")


def test_ordinals_are_consecutive_over_every_float16_value() -> None:
    x = _finite_float16()
    ords = ordinals(x, "float16")
    assert ords[0] == -0x7BFF and ords[-1] == 0x7BFF
    assert np.all(np.diff(ords) == 1)
    np.testing.assert_array_equal(from_ordinals(ords, "float16"), x)


# ---------------------------------------------------------------- unary regions, float16, exhaustive


def _independent_kinds_float16(y16: np.ndarray, x: np.ndarray, ref: np.ndarray) -> dict[str, np.ndarray]:
    y = y16.astype(np.float64)
    return {
        "overflow": np.isinf(y) & ~np.isinf(ref),
        "underflow": (y == 0) & (ref != 0),
        "subnormal": (y != 0) & (np.abs(y) < np.finfo(np.float16).tiny),
    }


def test_exp_float16_numpy_thresholds_match_an_exhaustive_scan() -> None:
    x = _finite_float16()
    with np.errstate(over="ignore", under="ignore"):
        y = np.exp(x.astype(np.float16))
    regions = R.op_regions("exp", "float16", "numpy")
    assert regions.exhaustive and regions.inputs.size == x.size == 63487
    first_inf = x[np.isinf(y)].min()
    assert regions.thresholds["overflow"]["positive"]["min"] == first_inf
    assert regions.thresholds["overflow"]["positive"]["max"] == 65504.0
    assert regions.thresholds["underflow"]["negative"]["max"] == x[y == 0].max()
    sub = (y != 0) & (np.abs(y) < 2.0**-14)
    negative = regions.thresholds["subnormal"]["negative"]
    assert (negative["min"], negative["max"]) == (x[sub].min(), x[sub].max())
    # the neighbours outside the run are the next float16 values, of another kind
    assert negative["before"] == np.nextafter(np.float16(x[sub].min()), np.float16(-np.inf))
    assert negative["after"] == np.nextafter(np.float16(x[sub].max()), np.float16(0))
    assert negative["runs"] == 1 and negative["count"] == int(sub.sum())
    # the float64 reference overflows above ~709.8 and underflows below ~-745: still overflow/underflow
    assert regions.counts()["overflow"] == int(np.isinf(y).sum())
    assert regions.counts()["underflow"] == int((y == 0).sum())


def test_exp_float16_emulated_threshold_is_where_the_true_value_rounds_past_max() -> None:
    x = _finite_float16()
    with np.errstate(over="ignore"):
        rounded = np.exp(x).astype(np.float16)
    regions = R.op_regions("exp", "float16", "emulated")
    assert regions.thresholds["overflow"]["positive"]["min"] == x[np.isinf(rounded)].min()
    # exp(11.0859375) = 65355.6 rounds to max; the next float16 input 11.09375 gives 65868 -> inf
    assert regions.thresholds["overflow"]["positive"]["min"] == 11.09375


def test_square_float16_overflows_from_256_on_both_sides() -> None:
    x = _finite_float16()
    with np.errstate(over="ignore", under="ignore"):
        y = np.square(x.astype(np.float16))
    regions = R.op_regions(SQUARE, "float16", "numpy")
    kinds = _independent_kinds_float16(y, x, np.square(x))
    assert regions.thresholds["overflow"]["positive"]["min"] == x[kinds["overflow"] & (x > 0)].min() == 256.0
    assert regions.thresholds["overflow"]["negative"]["max"] == -256.0
    assert regions.counts()["underflow"] == int(kinds["underflow"].sum())
    assert regions.counts()["subnormal"] == int(kinds["subnormal"].sum())
    # the TF guide's examples: 256**2 overflows, 1e-5**2 underflows
    kind_at = dict(zip(regions.inputs.tolist(), R.kind_names(regions.kinds).tolist(), strict=True))
    assert kind_at[256.0] == "overflow"
    assert kind_at[float(np.float16(1e-5))] == "underflow"


def test_reciprocal_float16_overflows_for_tiny_inputs_and_zero_is_a_pole() -> None:
    x = _finite_float16()
    with np.errstate(over="ignore", divide="ignore"):
        y = np.reciprocal(x.astype(np.float16)).astype(np.float64)
    regions = R.op_regions(RECIPROCAL, "float16", "numpy")
    overflow = np.isinf(y) & (x != 0)
    assert regions.thresholds["overflow"]["positive"]["max"] == x[overflow & (x > 0)].max()
    assert regions.thresholds["overflow"]["count"] == int(overflow.sum())
    assert not regions.thresholds["overflow"]["at_zero"]  # 1/0 = inf is the exact answer
    sub = (y != 0) & (np.abs(y) < 2.0**-14)
    assert regions.thresholds["subnormal"]["positive"]["min"] == x[sub & (x > 0)].min()


def test_log_outside_its_domain_is_nan_and_intervals_tile_the_inputs() -> None:
    regions = R.op_regions("log", "float16", "numpy")
    negative = regions.inputs < 0
    assert np.all(regions.kinds[negative] == R.NAN)
    assert np.all(regions.kinds[regions.inputs == 0] == R.OK)  # log(0) = -inf exactly
    intervals = regions.intervals
    assert sum(i.count for i in intervals) == regions.inputs.size
    assert intervals[0].lo == regions.inputs[0] and intervals[-1].hi == regions.inputs[-1]
    for left, right in itertools.pairwise(intervals):
        assert left.kind != right.kind and left.hi < right.lo


@pytest.mark.parametrize("op", ["exp", SQUARE, RECIPROCAL], ids=["exp", "square", "reciprocal"])
def test_tensorflow_regions_match_an_independent_tensorflow_scan(op) -> None:  # type: ignore[no-untyped-def]
    from explorer.backends.tensorflow_backend import import_tensorflow

    tf = import_tensorflow()
    x = _finite_float16()
    call = op.tf if isinstance(op, Op) else (lambda tf, dt, t: tf.math.exp(t))
    y = call(tf, tf.float16, tf.constant(x.astype(np.float16))).numpy().astype(np.float64)
    regions = R.regions_all(op, "float16", ("tensorflow", "emulated"))["tensorflow"]
    assert regions.status == "ok"
    # exp, x**2 and 1/x are finite and nonzero for every finite x != 0 (1/0 is a true pole)
    assert regions.counts()["overflow"] == int((np.isinf(y) & (x != 0)).sum())
    assert regions.counts()["underflow"] == int(((y == 0) & (x != 0)).sum())
    assert regions.counts()["subnormal"] == int(((y != 0) & (np.abs(y) < 2.0**-14)).sum())


def test_bfloat16_sweep_covers_every_value_and_numpy_reports_unsupported() -> None:
    regions = R.regions_all("exp", "bfloat16", ("numpy", "emulated"))
    assert regions["numpy"].status == "unsupported_dtype" and not regions["numpy"].ran
    emulated = regions["emulated"]
    with np.errstate(invalid="ignore"):
        values = np.arange(1 << 16, dtype=np.uint16).view(ml_dtypes.bfloat16).astype(np.float64)
    assert emulated.inputs.size == np.unique(values[np.isfinite(values)]).size
    # the true value rounds past max from half a unit (2**120) above max on
    with np.errstate(over="ignore"):
        past = np.exp(emulated.inputs) > float(ml_dtypes.finfo(ml_dtypes.bfloat16).max) + 2.0**119
    assert emulated.thresholds["overflow"]["positive"]["min"] == emulated.inputs[past].min() == 89.0


def test_float32_sampling_refines_the_overflow_threshold_to_the_exact_value() -> None:
    regions = R.op_regions("exp", "float32", "numpy")
    assert not regions.exhaustive
    # independent: walk float32 neighbours around ln(FLT_MAX)
    x = np.float32(np.log(np.finfo(np.float32).max))
    candidates = [x]
    for _ in range(40):
        candidates.append(np.nextafter(candidates[-1], np.float32(np.inf)))
    candidates = [np.nextafter(x, np.float32(0))] * 0 + candidates
    with np.errstate(over="ignore"):
        first = min(float(c) for c in candidates if np.isinf(np.exp(np.float32(c))))
        below = np.nextafter(np.float32(first), np.float32(0))
        assert np.isfinite(np.exp(below))
    assert regions.thresholds["overflow"]["positive"]["min"] == first


# ---------------------------------------------------------------- classification corner cases


def test_classify_saturation_poles_and_float64_overflow() -> None:
    fp4 = resolve("float4_e2m1fn")
    x = np.array([1.0, 2.0, 3.0])
    ref = np.exp(x)  # 2.7 -> ok; 7.39 -> past 6 + 1 (half ulp) -> saturated; 20 -> saturated
    y = np.array([3.0, 6.0, 6.0])
    assert R.kind_names(R.classify((x,), ref, y, fp4)).tolist() == ["ok", "overflow", "overflow"]
    # 7 is the overflow bound of fp4 (6 + half its ulp 2): the tie goes to the even significand,
    # 8 = 1.0 * 2**3, past max, so 7 itself overflows (saturates); 6.99 rounds to 6
    near = np.array([6.99, 7.0])
    assert R.kind_names(R.classify((near,), near, np.array([6.0, 6.0]), fp4)).tolist() == ["ok", "overflow"]
    inf_ref = np.array([np.inf, np.inf])
    kinds = R.classify(
        (np.array([0.0, 1000.0]),),
        inf_ref,
        np.array([np.inf, np.inf]),
        "float16",
        pole=np.array([True, False]),
    )
    assert R.kind_names(kinds).tolist() == ["ok", "overflow"]
    kinds = R.classify(
        (np.array([-1000.0]),), np.array([0.0]), np.array([0.0]), "float16", tiny=np.array([True])
    )
    assert R.kind_names(kinds).tolist() == ["underflow"]
    e4m3 = resolve("float8_e4m3fn")  # no inf: overflow gives NaN
    kinds = R.classify((np.array([7.0, 1.0]),), np.array([1096.6, 2.7]), np.array([np.nan, np.nan]), e4m3)
    assert R.kind_names(kinds).tolist() == ["overflow", "nan"]


def test_reference_flags_tell_poles_from_float64_overflow() -> None:
    x = np.array([0.0, 1e-320, 2.0])
    with np.errstate(all="ignore"):
        values = np.reciprocal(x)
    pole, tiny = R.reference_flags(np.reciprocal, (x,), values)
    assert pole.tolist() == [True, False, False] and not tiny.any()


# ---------------------------------------------------------------- binary maps


def test_mul_float8_map_is_every_pair_and_matches_an_independent_count() -> None:
    bmap = R.binary_map("mul", "float8_e4m3fn", "emulated")
    assert bmap.exhaustive
    codes = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    axis = np.unique(codes[np.isfinite(codes)])
    np.testing.assert_array_equal(bmap.a, axis)
    a, b = np.meshgrid(axis, axis, indexing="ij")
    exact = a * b
    with np.errstate(over="ignore", invalid="ignore"):
        y = exact.astype(ml_dtypes.float8_e4m3fn).astype(np.float64)
    counts = bmap.counts()
    assert counts["overflow"] == int(np.isnan(y).sum())
    assert counts["underflow"] == int(((y == 0) & (exact != 0)).sum())
    assert counts["subnormal"] == int(((y != 0) & (np.abs(y) < 2.0**-6)).sum())
    assert sum(counts.values()) == axis.size**2


def test_add_float16_map_on_a_log_grid() -> None:
    bmap = R.binary_map("add", "float16", "numpy", points=65)
    assert not bmap.exhaustive and bmap.kinds.shape == (bmap.a.size, bmap.b.size)
    i = int(np.argmax(bmap.a))
    j = int(np.argmax(bmap.b))
    assert R.KINDS[bmap.kinds[i, j]] == "overflow"  # max + max


# ---------------------------------------------------------------- errors


def test_bad_input_gets_clear_errors() -> None:
    with pytest.raises(ValueError, match="valid ops"):
        R.op_regions("add", "float16")
    with pytest.raises(ValueError, match="Valid ops"):
        R.op_regions("nonsense", "float16")
    with pytest.raises(ValueError, match="Valid backends"):
        R.op_regions("exp", "float16", "mxnet")
    with pytest.raises(ValueError, match="Valid names"):
        R.number_line("float17")
    with pytest.raises(ValueError, match="elementwise binary"):
        R.binary_map("exp", "float16")
    with pytest.raises(ValueError, match="samples"):
        R.unary_inputs("float32", samples=1)


def test_cli_ranges_json_shape() -> None:
    import contextlib
    import io
    import json

    from explorer.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["ranges", "--dtype", "half", "--op", "exp", "--json"]) == 0
    data = json.loads(out.getvalue())["result"][0]
    assert {"format", "op", "backend", "thresholds", "regions"} <= set(data)
    assert data["format"] == "float16" and data["backend"] == "numpy"
    assert data["thresholds"]["overflow"]["positive"]["min"] == 11.09375
    assert all(set(r) >= {"kind", "lo", "hi"} for r in data["regions"])


@pytest.mark.slow  # over a second (the fast tier: python -m pytest -m "not slow")
def test_plots_are_pure_figures() -> None:
    import subprocess
    import sys

    from matplotlib.figure import Figure

    from explorer.plots.ranges import plot_binary_map, plot_number_lines, plot_regions

    fig = plot_number_lines(R.number_lines(["float64", "float16", "float8_e8m0fnu", "float4_e2m1fn"]))
    assert isinstance(fig, Figure) and len(fig.axes[0].patches) == 16
    regions = R.regions_all("exp", "float16", ("numpy", "emulated"))
    assert isinstance(plot_regions(regions), Figure)
    assert isinstance(plot_binary_map(R.binary_map("mul", "float4_e2m1fn", "emulated")), Figure)
    # drawing never needs pyplot (checked in a fresh interpreter: TensorFlow itself imports it)
    code = (
        "import sys; from explorer.analysis import regions, bits, accumulation; "
        "from explorer.plots import ranges as p, bits as b, accumulation as a; "
        "p.plot_number_lines(regions.number_lines()); b.plot_bit_fields(bits.inspect_value(1.0, 'half')); "
        "a.plot_running_sum(accumulation.summation_study(n=100)); "
        "assert 'matplotlib.pyplot' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_div_float16_map_matches_an_independent_count() -> None:
    bmap = R.binary_map("div", "float16", "numpy", points=129)
    a, b = np.meshgrid(bmap.a, bmap.b, indexing="ij")
    with np.errstate(all="ignore"):
        y = (a.astype(np.float16) / b.astype(np.float16)).astype(np.float64)
    counts = bmap.counts()
    assert counts["nan"] == int(np.isnan(y).sum()) == 1  # 0 / 0
    assert counts["overflow"] == int((np.isinf(y) & (b != 0)).sum())  # x / 0 = inf is exact
    assert counts["underflow"] == int(((y == 0) & (a != 0)).sum())


def test_threshold_summary_has_every_unary_op() -> None:
    ops = ["exp", SQUARE, "log"]
    table = R.threshold_summary("float16", ops=ops, backends=("numpy", "emulated"))
    assert set(table["op"]) == {"exp", "square", "log"}
    row = table[(table.op == "square") & (table.backend == "emulated") & (table.kind == "overflow")]
    assert row["positive_min"].tolist() == [256.0] and row["negative_max"].tolist() == [-256.0]


def test_a_device_that_is_absent_is_an_outcome_not_an_error() -> None:
    from explorer.backends import get_backend

    regions = R.op_regions("exp", "float16", "numpy", device="GPU")
    expected = "ok" if "GPU" in get_backend("numpy").devices() else "no_device"
    assert regions.status == expected
    with pytest.raises(ValueError, match="valid devices"):
        R.op_regions("exp", "float16", "numpy", device="TPU")


# ---------------------------------------------------------------- flush to zero, exact rules


def test_flushed_inputs_need_clear_evidence() -> None:
    f16 = lambda values: np.array(values, dtype=np.float64)
    normal, tiny = 2.0**-14, 2.0**-24  # float16's smallest normal and smallest subnormal
    x = f16([-normal, -(2.0**-15), -tiny, 0.0, tiny, 2.0**-15, normal])
    # log on a backend that reads subnormal inputs as zero: -inf where NaN (x < 0) or log(x) is due
    correct = f16([np.nan, np.nan, np.nan, -np.inf, -16.640625, -10.3984375, -9.703125])
    y = f16([np.nan, -np.inf, -np.inf, -np.inf, -np.inf, -np.inf, -9.703125])
    flushed = R.flushed_inputs(x, y, correct, [-np.inf, -np.inf], "float16")
    assert flushed.tolist() == [False, True, True, False, True, True, False]
    kinds = R.classify((x,), correct, y, "float16", (0, np.inf), at_zero=[-np.inf, -np.inf], rounded=correct)
    assert R.kind_names(kinds).tolist() == ["nan", *["flush_to_zero"] * 2, "ok", *["flush_to_zero"] * 2, "ok"]
    # exp(x) - 1 in float16 loses every small input, the smallest normal too: not a flush
    elu_correct = f16([-normal, -(2.0**-15), -tiny, 0.0])
    elu = f16([0.0, 0.0, 0.0, 0.0])
    assert not R.flushed_inputs(x[:4], elu, elu_correct, [0.0, -0.0], "float16").any()
    # one step from f(0) is a rounding error, not evidence (acos near pi/2 in float16)
    x1 = f16([-(2.0**-18), 2.0**-14])
    acos = f16([1.5703125, 1.5703125])
    acos_correct = f16([1.5712890625, 1.5703125])
    assert not R.flushed_inputs(x1, acos, acos_correct, [1.5703125, 1.5703125], "float16").any()


def _bfloat16_subnormals() -> np.ndarray:
    patterns = np.concatenate([np.arange(1, 0x80), np.arange(0x8001, 0x8080)]).astype(np.uint16)
    return np.sort(patterns.view(ml_dtypes.bfloat16).astype(np.float64))


@pytest.mark.parametrize(
    ("op", "returns"), [("log", ["-inf"]), ("sqrt", ["-0", "0"]), ("rsqrt", ["-inf", "inf"])]
)
def test_tensorflow_bfloat16_reads_subnormal_inputs_as_zero(op: str, returns: list[str]) -> None:
    from explorer.backends.tensorflow_backend import import_tensorflow

    tf = import_tensorflow()
    sub = _bfloat16_subnormals()
    call = {"log": tf.math.log, "sqrt": tf.math.sqrt, "rsqrt": tf.math.rsqrt}[op]
    # inside an array, as in a sweep (observed in TF 2.21 on x86: the last len % 8 elements of an
    # array, computed one by one, differ: log gives -104 there)
    padded = np.concatenate([np.ones(64), sub, np.ones(64)]).astype(ml_dtypes.bfloat16)
    direct = call(tf.constant(padded)).numpy().astype(np.float64)[64:-64]
    at_zero = call(tf.constant(np.array([0.0, -0.0], ml_dtypes.bfloat16))).numpy().astype(np.float64)
    # observed: each subnormal input gives what +0 or -0 gives (-inf, -0/0, -inf/inf), not NaN
    # (negative inputs) or f(x)
    assert np.all((direct == at_zero[0]) | (direct == at_zero[1]))
    regions = R.regions_all(op, "bfloat16", ("tensorflow", "emulated"))
    tf_regions = regions["tensorflow"]
    flushed = tf_regions.inputs[tf_regions.kinds == R.FLUSH_TO_ZERO]
    np.testing.assert_array_equal(flushed, sub)
    entry = tf_regions.thresholds["flush_to_zero"]
    assert entry["count"] == sub.size == 254 and entry["returns"] == returns
    assert entry["negative"]["before"] == -entry["positive"]["after"] == -(2.0**-126)  # normals: themselves
    assert "flush_to_zero" not in regions["emulated"].thresholds
    assert regions["emulated"].thresholds["nan"]["negative"]["max"] == -(2.0**-133)


@pytest.mark.parametrize("op", ["log", "sqrt", "rsqrt", "elu", "acos", "expm1"])
def test_numpy_never_reads_subnormal_inputs_as_zero(op: str) -> None:
    regions = R.op_regions(op, "float16", "numpy")
    assert "flush_to_zero" not in regions.thresholds


def test_cli_ranges_gives_exact_rules_with_the_bounds_included() -> None:
    import contextlib
    import io
    import json

    from explorer.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["ranges", "--dtype", "half", "--op", "sigmoid", "--backend", "emulated", "--json"]) == 0
    data = json.loads(out.getvalue())["result"][0]
    under = data["thresholds"]["underflow"]["negative"]
    assert (under["min"], under["max"], under["after"], under["runs"]) == (-65504.0, -17.34375, -17.328125, 1)
    assert under["rule"] == "x <= -17.34375 (not -17.328125, the neighbouring input)"
    line = data["number_line"]
    assert (line["zero_bound"], line["zero_bound_included"]) == (2.0**-25, True)
    assert (line["overflow_bound"], line["overflow_bound_included"]) == (65520.0, True)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["ranges", "--dtype", "half", "--op", "exp", "--backend", "emulated"]) == 0
    text = out.getvalue()
    rule = "overflow: x >= 11.09375 (not 11.0859375, the neighbouring input); 12916 inputs; returns inf"
    assert rule in text
    assert "|x| >= 65520 rounds to inf (bound included" in text


def test_declared_zeros_and_poles_find_what_the_floating_point_flags_miss() -> None:
    import mpmath
    import scipy.special

    from explorer.ops import get_op

    erfc, lgamma = get_op("erfc"), get_op("lgamma")
    x = np.array([30.0, 1.0])
    values = scipy.special.erfc(x)  # erfc(30) is 0 in float64, and SciPy raises no flag
    assert values[0] == 0 and mpmath.erfc(30) > 0  # the exact value is 2.6e-393
    assert not R.reference_flags(erfc.reference, (x,), values)[1][0]
    pole, tiny = R.reference_flags(erfc.reference, (x,), values, erfc.zeros, erfc.poles)
    assert tiny.tolist() == [True, False] and not pole.any()
    # -3e38 is an integer (every float that large is): a pole of lgamma, as is -2
    x = np.array([-3e38, -2.0, 1e306])
    with np.errstate(over="ignore"):
        values = scipy.special.gammaln(x)
    assert np.isinf(values).all()
    assert R.reference_flags(lgamma.reference, (x,), values)[0].tolist() == [False, True, False]
    pole, _ = R.reference_flags(lgamma.reference, (x,), values, lgamma.zeros, lgamma.poles)
    assert pole.tolist() == [True, True, False]  # lgamma(1e306) overflows float64: finite
