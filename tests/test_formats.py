"""Formats against ml_dtypes / NumPy finfo, bit round trips, names and aliases."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from explorer.formats import (
    FORMAT_NAMES,
    Format,
    all_formats,
    all_values,
    decode,
    encode,
    resolve,
)

NATIVE = [f for f in all_formats() if not f.emulated]
SMALL = [f for f in all_formats() if f.bits <= 8]


def test_every_numpy_and_ml_dtypes_float_format_is_known():
    ml_float_types = {
        name
        for name in dir(ml_dtypes)
        if name.startswith(("float", "bfloat"))
        and name != "finfo"
        and isinstance(getattr(ml_dtypes, name), type)
    }
    assert ml_float_types <= set(FORMAT_NAMES)
    assert {"float64", "float32", "float16", "tf32"} <= set(FORMAT_NAMES)
    assert len(all_formats()) == 16


@pytest.mark.parametrize("fmt", NATIVE, ids=str)
def test_facts_match_finfo(fmt: Format):
    info = ml_dtypes.finfo(fmt.storage_dtype)
    assert fmt.bits == info.bits
    assert fmt.exponent_bits == info.nexp
    assert fmt.mantissa_bits == info.nmant
    assert fmt.max == float(info.max)
    assert fmt.smallest_normal == float(info.smallest_normal)
    assert fmt.smallest_subnormal == float(info.smallest_subnormal)
    assert fmt.eps == float(info.eps)


@pytest.mark.parametrize("fmt", [f for f in all_formats() if f.enumerable], ids=str)
def test_facts_match_enumeration(fmt: Format):
    with np.errstate(invalid="ignore"):  # ml_dtypes warns when casting bfloat16 NaN payloads
        values = all_values(fmt).astype(np.float64)
    finite = values[np.isfinite(values)]
    assert fmt.max == finite.max()
    positive = finite[finite > 0]
    assert fmt.smallest_subnormal == positive.min()
    assert fmt.has_inf == bool(np.isinf(values).any())
    assert fmt.has_nan == bool(np.isnan(values).any())
    above_one = positive[positive > 1.0]
    assert fmt.eps == above_one.min() - 1.0
    # the bias is the exponent field of 1.0
    one = int(encode(1.0, fmt))
    assert (one >> fmt.mantissa_bits) & ((1 << fmt.exponent_bits) - 1) == fmt.bias


@pytest.mark.parametrize("fmt", all_formats(), ids=str)
def test_overflow_behaviour_matches_a_cast(fmt: Format):
    with np.errstate(over="ignore"):
        cast = float(fmt.round(np.array([fmt.max * 8.0 if fmt.max < 1e300 else np.inf]))[0])
    expected = {"inf": np.isinf(cast), "nan": np.isnan(cast), "saturate": cast == fmt.max}
    assert expected[fmt.overflow]


def test_overflow_families():
    by = {f.name: f.overflow for f in all_formats()}
    assert by["float16"] == by["bfloat16"] == by["float8_e5m2"] == "inf"
    assert by["float8_e4m3fn"] == by["float8_e4m3fnuz"] == "nan"
    assert by["float4_e2m1fn"] == by["float6_e2m3fn"] == "saturate"


def test_tf32_is_float32_with_ten_mantissa_bits():
    tf32 = resolve("tf32")
    assert tf32.emulated and tf32.mantissa_bits == 10 and tf32.bits == 19
    largest = np.array(0x7F7FE000, dtype=np.uint32).view(np.float32)
    assert tf32.max == float(largest)
    assert tf32.eps == 2.0**-10
    rounded = tf32.round(np.array([1 + 2**-11, 1 + 3 * 2**-11, 1.0 + 2**-10], dtype=np.float32))
    assert rounded.tolist() == [1.0, 1 + 2**-9, 1 + 2**-10]  # ties to even
    assert decode(encode(1.5, tf32), tf32).tolist() == 1.5
    assert encode([1.5, 2.0], tf32).shape == (2,)


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_every_16_bit_pattern_round_trips(name):
    fmt = resolve(name)
    patterns = np.arange(1 << 16, dtype=np.uint16)
    values = decode(patterns, fmt)
    back = encode(values, fmt)
    nan = np.isnan(values)
    assert nan.sum() > 0
    np.testing.assert_array_equal(back[~nan], patterns[~nan])
    assert np.isnan(decode(back[nan], fmt)).all()


@pytest.mark.parametrize("fmt", SMALL, ids=str)
def test_every_small_pattern_round_trips(fmt: Format):
    patterns = np.arange(1 << fmt.bits)
    values = decode(patterns, fmt)
    np.testing.assert_array_equal(values, all_values(fmt).astype(np.float64))
    back = encode(values, fmt)
    keep = ~np.isnan(values)
    np.testing.assert_array_equal(back[keep], patterns[keep])


def test_all_float16_values():
    values = all_values("float16")
    assert values.dtype == np.float16 and values.size == 65536
    assert np.unique(values.view(np.uint16)).size == 65536
    with pytest.raises(ValueError, match="16 bits or fewer"):
        all_values("float32")


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        ("half", "float16"),
        ("fp16", "float16"),
        ("f16", "float16"),
        ("FP16", "float16"),
        (np.float16, "float16"),
        (np.dtype("float16"), "float16"),
        ("float", "float32"),
        ("bf16", "bfloat16"),
        (ml_dtypes.bfloat16, "bfloat16"),
        ("double", "float64"),
        ("fp8_e4m3", "float8_e4m3fn"),
        ("e5m2", "float8_e5m2"),
        ("e4m3fnuz", "float8_e4m3fnuz"),
        (ml_dtypes.float8_e8m0fnu, "float8_e8m0fnu"),
        ("fp4", "float4_e2m1fn"),
        ("TF32", "tf32"),
        ("float6-e2m3fn", "float6_e2m3fn"),
        (np.float64, "float64"),
    ],
)
def test_resolve_aliases(spec, name):
    assert resolve(spec).name == name


def test_resolve_framework_dtypes_without_importing_them():
    class dtype:  # what torch.bfloat16 looks like to us
        __module__ = "torch"

        def __str__(self):
            return "torch.bfloat16"

    assert resolve(dtype()).name == "bfloat16"


def test_resolve_tensorflow_dtypes():
    from explorer.backends.tensorflow_backend import import_tensorflow

    tf = import_tensorflow()
    assert resolve(tf.float16).name == "float16"
    assert resolve(tf.bfloat16).name == "bfloat16"
    assert resolve(tf.dtypes.as_dtype("float8_e4m3fn")).name == "float8_e4m3fn"


def test_bad_names_name_the_closest_match_and_the_valid_names():
    with pytest.raises(ValueError, match=r"did you mean 'half'.*Valid names: float64"):
        resolve("halff")
    with pytest.raises(ValueError, match="Valid names"):
        resolve("int8")
    with pytest.raises(TypeError, match="cannot interpret"):
        resolve(object())
    with pytest.raises(TypeError, match="integers"):
        decode(np.array([1.5]), "float16")
    with pytest.raises(ValueError, match=r"\[0, 2\*\*8\)"):
        decode(256, "float8_e4m3fn")


@pytest.mark.parametrize("fmt", [f for f in all_formats() if f.enumerable and f.has_sign], ids=str)
def test_round_from_float64_is_correctly_rounded(fmt: Format):
    # an independent nearest search over every finite value of the format
    with np.errstate(invalid="ignore"):
        values = np.unique(all_values(fmt).astype(np.float64))
    values = values[np.isfinite(values)]
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, 20_000) * fmt.max * rng.choice([1e-6, 1e-3, 0.1, 1.0], 20_000)
    i = np.clip(np.searchsorted(values, x), 1, values.size - 1)
    below, above = values[i - 1], values[i]
    nearest = np.where(x - below < above - x, below, above)
    rounded = fmt.round(x).astype(np.float64)
    ties = (x - below) == (above - x)
    np.testing.assert_array_equal(rounded[~ties], nearest[~ties])
    # the double-rounding trap of a cast through float32
    if fmt.name == "bfloat16":
        assert float(fmt.round(np.float64(1 + 2**-8 + 2**-40))) == 1 + 2**-7
