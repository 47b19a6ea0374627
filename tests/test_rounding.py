"""Rounding modes for every format, against neighbours found independently (enumerated values)."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.formats import all_formats, all_values, encode
from explorer.rounding import round_to

FORMATS = list(all_formats())


def _table(fmt) -> np.ndarray | None:  # type: ignore[no-untyped-def]
    """Every finite value of the format, sorted (None for float32/float64)."""
    if fmt.name in ("float32", "float64"):
        return None
    if fmt.emulated:  # tf32: float32 bit patterns with the low 13 mantissa bits zero
        with np.errstate(invalid="ignore"):
            v = (np.arange(1 << 19, dtype=np.uint32) << np.uint32(13)).view(np.float32).astype(np.float64)
    else:
        with np.errstate(invalid="ignore"):
            v = all_values(fmt).astype(np.float64)
    return np.unique(v[np.isfinite(v)])


def _inputs(fmt, rng: np.random.Generator, n: int = 4000) -> np.ndarray:  # type: ignore[no-untyped-def]
    lo, hi = np.log2(fmt.smallest_subnormal) - 2, np.log2(fmt.max)
    mags = 2.0 ** rng.uniform(lo, hi, n)
    signs = rng.choice([-1.0, 1.0], n) if fmt.has_sign else np.ones(n)
    x = np.concatenate([mags * signs, [fmt.max, fmt.smallest_subnormal, fmt.smallest_normal, 1.0]])
    if not fmt.has_sign:  # float8_e8m0fnu: no zero, no negatives: stay within its range
        x = x[(x >= fmt.smallest_subnormal)]
    return x[np.abs(x) <= fmt.max]


def _toward_zero_neighbour(x: np.ndarray, table: np.ndarray) -> np.ndarray:
    mag = np.abs(x)
    down = table[np.searchsorted(table, mag, side="right") - 1]
    return np.copysign(down, x)


def _away_neighbour(x: np.ndarray, table: np.ndarray) -> np.ndarray:
    mag = np.abs(x)
    up = table[np.minimum(np.searchsorted(table, mag, side="left"), table.size - 1)]
    return np.copysign(up, x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["from_float32", "from_float64"])
@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_toward_zero_never_increases_magnitude_and_is_the_neighbour(fmt, dtype) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    with np.errstate(over="ignore", under="ignore"):
        x = _inputs(fmt, rng).astype(dtype)
    x = x[np.abs(x.astype(np.float64)) <= fmt.max]
    r = round_to(x, fmt, "toward_zero").astype(np.float64)
    xs = x.astype(np.float64)
    assert np.all(np.abs(r) <= np.abs(xs))
    table = _table(fmt)
    if table is not None:
        np.testing.assert_array_equal(r, _toward_zero_neighbour(xs, table[table >= 0]))
    elif fmt.name == "float32" and dtype == np.float64:
        with np.errstate(all="ignore"):
            near = xs.astype(np.float32)
            step = np.nextafter(near, np.float32(0)).astype(np.float64)
        np.testing.assert_array_equal(r, np.where(np.abs(near) > np.abs(xs), step, near))
    else:
        np.testing.assert_array_equal(r, xs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["from_float32", "from_float64"])
@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_stochastic_rounding_gives_a_neighbour_and_is_unbiased(fmt, dtype) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    table = _table(fmt)
    with np.errstate(over="ignore", under="ignore"):
        x = _inputs(fmt, rng).astype(dtype).astype(np.float64)
    x = x[np.abs(x) <= fmt.max]
    r = round_to(x.astype(dtype), fmt, "stochastic", rng=3).astype(np.float64)
    if table is not None:
        positive = table[table >= 0]
        down, up = _toward_zero_neighbour(x, positive), _away_neighbour(x, positive)
        assert np.all((r == down) | (r == up))
        assert np.any(r != down) and np.any(r != up)
    # unbiased: a few values between two neighbours, many draws
    probe = np.array([1 / 3, -2.6, 0.7 * fmt.smallest_subnormal, 5.3 * fmt.smallest_normal])
    if not fmt.has_sign:
        probe = np.abs(probe[probe > fmt.smallest_subnormal])
    probe = probe[(np.abs(probe) <= fmt.max) & (np.abs(probe) >= np.finfo(dtype).smallest_subnormal)]
    probe = probe.astype(dtype)
    draws = 40_000
    many = np.repeat(probe, draws)
    means = (
        round_to(many, fmt, "stochastic", rng=7).astype(np.float64).reshape(probe.size, draws).mean(axis=1)
    )
    target = probe.astype(np.float64)
    if table is not None:
        gap = np.abs(_away_neighbour(target, positive) - _toward_zero_neighbour(target, positive))
    else:
        gap = np.maximum(np.abs(target) * 2.0**-22, fmt.smallest_subnormal)
    tolerance = 6 * 0.5 * gap / np.sqrt(draws) + 1e-300
    assert np.all(np.abs(means - target) <= tolerance), (fmt.name, probe, means)


@pytest.mark.parametrize(
    "fmt", [f for f in FORMATS if f.enumerable and f.name != "float8_e8m0fnu"], ids=lambda f: f.name
)
def test_nearest_even_from_float64_is_correctly_rounded_even_next_to_ties(fmt) -> None:  # type: ignore[no-untyped-def]
    table = _table(fmt)
    assert table is not None
    mids = (table[1:] + table[:-1]) / 2
    x = np.concatenate([mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf), table])
    r = round_to(x, fmt).astype(np.float64)
    i = np.clip(np.searchsorted(table, x), 1, table.size - 1)
    lo, hi = table[i - 1], table[i]
    lo_even = (encode(lo, fmt).astype(np.int64) & 1) == 0
    expected = np.where(x - lo < hi - x, lo, np.where(hi - x < x - lo, hi, np.where(lo_even, lo, hi)))
    np.testing.assert_array_equal(r, expected)


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_nearest_even_from_float32_is_the_cast_and_overflow_follows_the_cast(fmt) -> None:  # type: ignore[no-untyped-def]
    x = np.array([0.1, -1.7, 3e-3, 2.5e4, 1e30, -1e30, np.inf, np.nan], dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        expected = fmt.round(x).astype(np.float64)
        for mode in ("nearest_even", "toward_zero", "stochastic"):
            r = round_to(x, fmt, mode, rng=0).astype(np.float64)
            beyond = ~(np.abs(x.astype(np.float64)) <= fmt.max)
            np.testing.assert_array_equal(r[beyond], expected[beyond])
        np.testing.assert_array_equal(round_to(x, fmt).astype(np.float64), expected)


def test_negative_values_below_the_smallest_subnormal_of_fnuz_formats_go_to_zero_not_nan() -> None:
    for name in ("float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e4m3b11fnuz"):
        r = round_to(np.array([-1e-30]), name, "toward_zero").astype(np.float64)
        assert r.tolist() == [0.0]


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="valid modes"):
        round_to([1.0], "float16", "up")
    with pytest.raises(TypeError, match="rng"):
        round_to([1.0], "float16", "stochastic", rng="seed")


def test_formats_does_not_import_rounding() -> None:
    """The dependency is one-way: rounding uses formats; nothing in formats imports rounding
    (Format.round rounds float64 in one step itself)."""
    import ast
    import inspect

    import explorer.formats

    tree = ast.parse(inspect.getsource(explorer.formats))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not [m for m in imported if m.startswith("explorer")], imported


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_nearest_even_is_format_round_bit_for_bit(fmt) -> None:  # type: ignore[no-untyped-def]
    """round_to(x, fmt) and fmt.round(x) are one rounding: same bits, same shape (0-d included)."""
    rng = np.random.default_rng(3)
    x = np.concatenate(
        [rng.normal(0, 2, 500), 2.0 ** rng.uniform(-160, 140, 500), [0.0, -0.0, np.inf, np.nan]]
    )
    if not fmt.has_sign:
        x = np.abs(x)
    with np.errstate(over="ignore", invalid="ignore"):
        expected = np.ascontiguousarray(fmt.round(x))
        got = np.ascontiguousarray(round_to(x, fmt))
        scalar = fmt.round(np.float64(1 + 2**-8 + 2**-40))
    assert got.dtype == expected.dtype == fmt.storage_dtype
    uint = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[fmt.storage_dtype.itemsize]
    np.testing.assert_array_equal(got.view(uint), expected.view(uint))
    assert scalar.shape == ()
