"""The bit inspector against ml_dtypes, for every code point of every format of 8 bits or fewer."""

from __future__ import annotations

import contextlib
import io
import json
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from explorer.analysis.bits import inspect_value, value_table
from explorer.formats import all_formats

SMALL = [f for f in all_formats() if f.bits <= 8]


def _ml_values(fmt) -> np.ndarray:  # type: ignore[no-untyped-def]
    dtype = np.dtype(getattr(ml_dtypes, fmt.name))
    with np.errstate(invalid="ignore"):
        return np.arange(1 << fmt.bits, dtype=np.uint8).view(dtype).astype(np.float64)


def _from_fields(sign, exponent, mantissa, fmt) -> float:  # type: ignore[no-untyped-def]
    """Textbook decoding, independent of ml_dtypes and of the inspector."""
    s = -1.0 if sign else 1.0
    frac = mantissa / 2**fmt.mantissa_bits
    if fmt.name == "float8_e8m0fnu":
        return 2.0 ** (exponent - 127)
    if exponent == 0:
        return s * frac * 2.0 ** (1 - fmt.bias)
    return s * (1 + frac) * 2.0 ** (exponent - fmt.bias)


@pytest.mark.parametrize("fmt", SMALL, ids=lambda f: f.name)
def test_value_table_matches_ml_dtypes_for_every_code_point(fmt) -> None:  # type: ignore[no-untyped-def]
    table = value_table(fmt)
    values = _ml_values(fmt)
    assert len(table) == 1 << fmt.bits
    np.testing.assert_array_equal(table["value"].to_numpy(), values)
    info = ml_dtypes.finfo(getattr(ml_dtypes, fmt.name))
    for row, v in zip(table.itertuples(), values, strict=True):
        expected = (
            "nan"
            if np.isnan(v)
            else "inf"
            if np.isinf(v)
            else "zero"
            if v == 0
            else "subnormal"
            if abs(v) < float(info.smallest_normal)
            else "normal"
        )
        assert row._5 == expected  # the "class" column
        assert int(row.bits, 2) == row.code
        if np.isfinite(v):
            assert _from_fields(row.sign, row.exponent_field, row.mantissa_field, fmt) == v


@pytest.mark.parametrize("fmt", SMALL, ids=lambda f: f.name)
def test_inspector_round_trips_every_code_point_with_its_neighbours(fmt) -> None:  # type: ignore[no-untyped-def]
    values = _ml_values(fmt)
    ordered = np.unique(values[~np.isnan(values)])  # includes +-inf where the format has them
    for code, v in enumerate(values):
        if np.isnan(v):
            continue
        info = inspect_value(float(v), fmt)
        assert info.value == v
        if v != 0:  # -0 and 0 are one value (fnuz formats have no -0)
            assert int(info.bits, 2) == code
        assert info.rounding_error == 0.0
        i = int(np.searchsorted(ordered, v))
        below = float(ordered[i - 1]) if i > 0 else None
        above = float(ordered[i + 1]) if i + 1 < ordered.size else None
        assert (info.below, info.above) == (below, above), (fmt.name, v)
        s, e, m = info.sign, info.exponent_field, int(info.mantissa_bits or "0", 2)
        if np.isfinite(v):
            assert _from_fields(s, e, m, fmt) == v


def test_inspector_rounds_and_reports_the_exact_error() -> None:
    info = inspect_value("0.1", "float16")
    assert info.value == float(np.float16(0.1))
    assert info.exact == "0.0999755859375"
    assert float(Fraction(info.exact) - Fraction("0.1")) == info.rounding_error
    assert info.below == float(np.nextafter(np.float16(0.1), np.float16(0)))
    assert info.above == float(np.nextafter(np.float16(0.1), np.float16(1)))
    assert inspect_value(65520, "float16").value == np.inf  # 65520 rounds to inf
    assert inspect_value(1e-8, "float16").kind == "zero"
    assert inspect_value(3e-5, "float16").kind == "subnormal"
    tf32 = inspect_value(1 + 2**-11, "tf32")
    assert len(tf32.bits) == 19 and tf32.value == 1.0


def test_bad_input_raises_clear_errors() -> None:
    with pytest.raises(ValueError, match="cannot read"):
        inspect_value("zero point one", "float16")
    with pytest.raises(TypeError, match="number"):
        inspect_value([1.0], "float16")
    with pytest.raises(ValueError, match="8 bits or fewer"):
        value_table("float16")
    with pytest.raises(ValueError, match="Valid names"):
        inspect_value(1.0, "float9")


def test_cli_bits_json_and_negative_values() -> None:
    from explorer.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["bits", "-1.5e-5", "--dtype", "half", "--json"]) == 0
    data = json.loads(out.getvalue())["result"][0]
    assert data["sign"] == 1 and data["kind"] == "subnormal"
    assert data["value"] == float(np.float16(-1.5e-5))


def test_bit_fields_plot_draws_one_box_per_bit() -> None:
    from explorer.plots.bits import plot_bit_fields

    infos = [inspect_value("0.1", "float16"), inspect_value("0.1", "float8_e4m3fn")]
    fig = plot_bit_fields(infos)
    assert len(fig.axes[0].patches) == 16 + 8


def _holds_nan(name: str) -> bool | None:
    """Does the dtype of that name keep a NaN (ml_dtypes' or NumPy's own cast)? None: no such dtype."""
    dtype = getattr(ml_dtypes, name, None) or (name if name in ("float16", "float32", "float64") else None)
    if dtype is None:
        return None
    with np.errstate(invalid="ignore"):
        return bool(np.isnan(np.array(np.nan).astype(dtype).astype(np.float64)))


@pytest.mark.parametrize("fmt", all_formats(), ids=lambda f: f.name)
def test_nan_into_a_format_without_nan_is_said(fmt) -> None:  # type: ignore[no-untyped-def]
    """Issue 24, item 4: ``inspect_value("nan", "float4_e2m1fn")`` returned -0.0 and said nothing;
    the value says the format has no NaN and what was stored, as the beyond-max case says it
    saturates.  Which formats keep a NaN is asked of ml_dtypes/NumPy casts."""
    holds = _holds_nan(fmt.name)
    if holds is None:
        pytest.skip(f"no ml_dtypes or NumPy dtype named {fmt.name} to ask")
    info = inspect_value("nan", fmt)
    assert np.isnan(info.value) == holds
    if holds:
        assert info.explanation == f"NaN stays NaN in {fmt.name}."
    else:
        assert info.explanation.startswith(f"{fmt.name} has no NaN: NaN is stored as "), info.explanation
        stored = float(np.array(np.nan).astype(getattr(ml_dtypes, fmt.name)).astype(np.float64))
        sign = "-" if np.signbit(stored) else ""
        assert f" stored as {sign}{abs(stored):g} " in info.explanation, (stored, info.explanation)


def test_cli_bits_prints_why() -> None:
    from explorer.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["bits", "nan", "--dtype", "float4_e2m1fn", "--dtype", "e4m3"]) == 0
    lines = [line.split(None, 1) for line in out.getvalue().splitlines() if line.strip()]
    why = [text for key, text in lines if key == "explanation"]
    assert len(why) == 2, out.getvalue()
    assert why[0].startswith("float4_e2m1fn has no NaN: NaN is stored as ") and "NaN stays NaN" in why[1]
