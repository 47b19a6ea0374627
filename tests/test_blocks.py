"""Block formats against independent implementations: gfloat's ``encode_block`` /
``decode_block`` and ``format_info_mx*`` for the OCP MX formats, and a scalar reading of
NVIDIA's NVFP4 written here with exact rationals (``fractions``) and the spec table's rounding
(tests/support/oracles.py).  The blocks: random ones over wide magnitudes, and adversarial
ones (all zeros, one huge outlier, subnormal-only, NaN and inf inside a block, values exactly
at rounding midpoints and nudged off them).  Each test counts the blocks it compared."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from explorer import blocks as B
from tests.support import oracles
from tests.support.block_oracles import nvfp4_reading
from tests.support.require import require_module

MX_NAMES = [n for n in B.BLOCK_FORMAT_NAMES if n != "nvfp4"]


@pytest.fixture(scope="module")
def gfloat() -> Any:
    require_module("gfloat", "pip install gfloat (the test extra)")
    import gfloat
    import gfloat.formats

    return gfloat


def _gfloat_info(gfloat: Any, name: str) -> Any:
    return getattr(gfloat.formats, f"format_info_{name}")


def _element_grid(name: str) -> np.ndarray:
    """Every non-negative value of a block format's element, from the spec table (MXINT8:
    the integers 0..127 times 2**-6)."""
    element = B.block_format(name).element
    if element == "int8":
        return np.arange(128) / 64.0
    values = oracles.decode_bits(np.arange(1 << oracles.SPECS[element].bits), oracles.SPECS[element])
    return np.unique(values[np.isfinite(values) & (values >= 0)])


def _adversarial_blocks(name: str, size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Blocks built to break a wrong rule: zeros (and -0), one outlier among tiny values,
    float64 subnormals only, every midpoint of the element grid (scaled so the block's max
    sets the scale to 1) exactly and nudged by one float64 ulp either way, and values at the
    element's largest value and just past it (saturation)."""
    grid = _element_grid(name)
    top = grid[-1]
    emax = B.block_format(name).element_emax
    out = [
        np.zeros(size),
        -np.zeros(size),
        np.concatenate([[1e30], rng.standard_normal(size - 1) * 1e-3]),
        np.concatenate([[-3.0], rng.standard_normal(size - 1)]) * 1e-310,  # float64 subnormals
        np.full(size, 5e-324),
    ]
    mids = (grid[1:] + grid[:-1]) / 2
    for values in (mids, np.nextafter(mids, np.inf), np.nextafter(mids, 0)):
        for start in range(0, values.size, size - 1):
            chunk = values[start : start + size - 1]
            signs = rng.choice([-1.0, 1.0], chunk.size)
            # 2**emax pins the scale to 1: every value keeps its place on the element grid
            out.append(np.concatenate([[2.0**emax], chunk * signs]))
    out.append(np.concatenate([[top, -top, top * 1.01, -top * 1.1], np.linspace(-top, top, size - 4)]))
    out.append(np.concatenate([[2.0 ** (emax + 1) * 0.999], np.linspace(-1, 1, size - 1)]))
    return [np.resize(b, size) for b in out]


def _random_blocks(count: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """Blocks of mixed magnitudes: each has its own spread (2**+-20 around 2**+-60)."""
    centre = rng.uniform(-60, 60, (count, 1))
    spread = rng.uniform(0, 20, (count, 1))
    magnitudes = 2.0 ** (centre + spread * rng.uniform(-1, 1, (count, size)))
    return magnitudes * rng.choice([-1.0, 1.0], (count, size))


def _same(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Elementwise: equal values with equal signs of zero, or both NaN."""
    got, want = np.asarray(got, float), np.asarray(want, float)
    both_nan = np.isnan(got) & np.isnan(want)
    return both_nan | ((got == want) & (np.signbit(got) == np.signbit(want)))


# ---------------------------------------------------------------- OCP MX against gfloat


@pytest.mark.parametrize("name", MX_NAMES)
def test_mx_blocks_match_gfloat_encode_and_decode_block(gfloat: Any, name: str) -> None:
    """Block by block with gfloat's scalar ``encode_block`` (the scale from its
    ``compute_scale_amax``, nearest-even, saturating) and ``decode_block``: our scale's and
    elements' bit patterns are gfloat's, and gfloat decodes our codes to our values."""
    info = _gfloat_info(gfloat, name)
    rng = np.random.default_rng(20)
    blocks = [*_adversarial_blocks(name, 32, rng), *_random_blocks(24, 32, rng)]
    compared = 0
    for block in blocks:
        q = B.quantize_blocks(block, name)
        scale = gfloat.compute_scale_amax(info.etype.emax, block)
        assert q.scales[0] == scale, (block, q.scales, scale)
        want_codes = list(gfloat.encode_block(info, scale, block / scale))
        got_codes = [int(q.scale_codes()[0]), *q.element_codes()[0].astype(int).tolist()]
        assert got_codes == want_codes, (block, got_codes, want_codes)
        decoded = np.array(list(gfloat.decode_block(info, got_codes)))
        assert _same(q.values, decoded).all(), (block, q.values, decoded)
        compared += 1
    assert compared == len(blocks) >= 30
    print(f"{name}: {compared} blocks compared with gfloat encode_block/decode_block")


@pytest.mark.parametrize("name", MX_NAMES)
def test_mx_many_blocks_match_gfloat_vectorised(gfloat: Any, name: str) -> None:
    """Thousands of random blocks (and the adversarial ones) against gfloat's vectorised
    ``round_ndarray`` (nearest-even, saturating) and ``decode_ndarray``, with the scale read
    from the spec: ``2**clip(floor(log2 max|x|) - emax, -127, 127)``."""
    info = _gfloat_info(gfloat, name)
    rng = np.random.default_rng(21)
    blocks = np.vstack([_random_blocks(3000, 32, rng), *_adversarial_blocks(name, 32, rng)])
    q = B.quantize_blocks(blocks, name)
    amax = np.abs(blocks).max(axis=1)
    with np.errstate(divide="ignore"):
        shared = np.where(amax > 0, np.floor(np.log2(amax)) - info.etype.emax, -127)
    scales = 2.0 ** np.clip(shared, -127, 127)
    np.testing.assert_array_equal(q.scales[:, 0], scales)
    elements = gfloat.round_ndarray(info.etype, blocks / scales[:, None], sat=True)
    assert _same(q.elements[:, 0, :] + 0.0, elements + 0.0).all()
    codes = q.element_codes()[:, 0, :].astype(np.int64)
    decoded = gfloat.decode_ndarray(info.etype, codes) * scales[:, None]
    assert _same(q.values + 0.0, decoded + 0.0).all()
    print(f"{name}: {blocks.shape[0]} blocks compared with gfloat round_ndarray/decode_ndarray")


@pytest.mark.parametrize("name", MX_NAMES)
def test_mx_nan_and_inf_poison_their_block_only(gfloat: Any, name: str) -> None:
    """OCP MX 6.3: a block whose max |x| is not finite gets the NaN scale (E8M0 0xFF, which
    gfloat decodes to NaN for every element); the other blocks of the tensor are untouched,
    and a shared exponent past 127 is NaN too."""
    info = _gfloat_info(gfloat, name)
    rng = np.random.default_rng(22)
    clean = rng.standard_normal((4, 32))
    poisoned = clean.copy()
    poisoned[1, 5], poisoned[2, 0], poisoned[3, 31] = np.nan, np.inf, -np.inf
    q = B.quantize_blocks(poisoned, name)
    assert q.scale_codes()[1:, 0].tolist() == [0xFF, 0xFF, 0xFF]
    for row in (1, 2, 3):
        codes = [0xFF, *q.element_codes()[row, 0].astype(int).tolist()]
        assert np.isnan(list(gfloat.decode_block(info, codes))).all()
    assert np.isnan(q.values[1:]).all() and np.isnan(q.scales[1:]).all()
    np.testing.assert_array_equal(q.values[0], B.quantize_blocks(clean[0], name).values)
    huge = np.full(32, 2.0 ** (128 + B.block_format(name).element_emax))  # exponent 128 - emax + emax
    assert np.isnan(B.quantize_blocks(huge, name).values).all()
    assert not np.isnan(B.quantize_blocks(huge / 2, name).values).any()


# ---------------------------------------------------------------- NVFP4: a scalar reading


def _nvfp4_tensors(rng: np.random.Generator) -> list[np.ndarray]:
    """Random tensors (one block's scale underflowing E4M3 among them) and adversarial ones:
    E2M1 midpoints at the scale 1 (the tensor max 2688 makes T = 1 and S = max/6), exact
    and nudged; zeros; NaN and inf in one block; a lone outlier."""
    grid = _element_grid("nvfp4")
    mids = (grid[1:] + grid[:-1]) / 2
    # T = 2688 / 2688 = 1; a block led by 6 has S = 6 / 6 = 1: its other values keep their places
    ties = [
        np.concatenate([[6.0, -6.0], m, -m]) for m in (mids, np.nextafter(mids, 0), np.nextafter(mids, 9))
    ]
    tensors = [
        *(rng.standard_normal(512) * 10.0**k for k in range(-4, 5)),
        rng.laplace(size=(3, 32)),
        # E4M3 ties of the block scale: 6 * 1.0625 / 6 (to 1.0) and 6 * 1.1875 / 6 (to 1.25)
        np.concatenate([[2688.0], np.ones(15), [6.375], np.ones(15), [7.125], -np.ones(15)]),
        2.0 ** rng.uniform(-30, 30, 48) * rng.choice([-1, 1], 48),
        np.concatenate([rng.standard_normal(16) * 1e-6, [1e6], rng.standard_normal(15)]),
        np.concatenate([[2688.0], np.ones(15), *ties]),
        np.zeros(32),
        np.concatenate([rng.standard_normal(16), [np.nan], rng.standard_normal(15), [np.inf], np.ones(15)]),
        np.array([-0.0, 1.0, 2.5, -2.5, 0.25, -0.25, 5.0, 7.0]),  # a ragged tail of 8
    ]
    return tensors


def test_nvfp4_matches_the_scalar_reading() -> None:
    rng = np.random.default_rng(23)
    compared = 0
    for tensor in _nvfp4_tensors(rng):
        q = B.quantize_blocks(tensor, "nvfp4")
        want_tensor, want_scales, want_values = nvfp4_reading(tensor.ravel().tolist())
        assert q.tensor_scale == want_tensor
        assert _same(q.scales.ravel(), want_scales).all(), (tensor, q.scales, want_scales)
        assert _same(q.values.ravel(), want_values).all(), (tensor, q.values, want_values)
        compared += len(want_scales)
    assert compared >= 20
    print(f"nvfp4: {compared} blocks compared with the scalar reading")


# ---------------------------------------------------------------- the formats' facts


def test_block_formats_are_the_specs() -> None:
    """Block size, scale format and element format of each, as OCP MX v1.0 (Tables 1-2) and
    NVIDIA state them, and the element facts against the spec table; the bits per element
    with the scale's share (MXFP4 4.25, NVFP4 4.5)."""
    want = {
        "mxfp8_e4m3": ("float8_e4m3fn", 32, "float8_e8m0fnu", 8.25),
        "mxfp8_e5m2": ("float8_e5m2", 32, "float8_e8m0fnu", 8.25),
        "mxfp6_e2m3": ("float6_e2m3fn", 32, "float8_e8m0fnu", 6.25),
        "mxfp6_e3m2": ("float6_e3m2fn", 32, "float8_e8m0fnu", 6.25),
        "mxfp4_e2m1": ("float4_e2m1fn", 32, "float8_e8m0fnu", 4.25),
        "mxint8": ("int8", 32, "float8_e8m0fnu", 8.25),
        "nvfp4": ("float4_e2m1fn", 16, "float8_e4m3fn", 4.5),
    }
    assert tuple(want) == B.BLOCK_FORMAT_NAMES
    for fmt in B.all_block_formats():
        element, size, scale, bits = want[fmt.name]
        assert (fmt.element, fmt.block_size, fmt.scale, fmt.bits_per_element) == (element, size, scale, bits)
        assert fmt.tensor_scale == ("float32" if fmt.name == "nvfp4" else None)
        if element == "int8":  # MX 5.3.3: two's complement with an implicit 2**-6
            assert (fmt.element_max, fmt.element_smallest, fmt.element_emax) == (127 / 64, 1 / 64, 0)
            continue
        spec = oracles.SPECS[element]
        assert fmt.element_max == float(oracles.max_value(spec)) == spec.spec_max
        assert fmt.element_smallest == float(oracles.smallest_subnormal(spec))
        assert fmt.element_emax == oracles.emax(spec)
        facts = fmt.to_dict()
        assert facts["bits_per_element"] == bits and facts["name"] == fmt.name


def test_names_and_refusals() -> None:
    assert B.block_format(" MXFP4 ").name == "mxfp4_e2m1" and B.block_format("NVFP4").name == "nvfp4"
    assert B.block_format(B.block_format("mxint8")).name == "mxint8"
    with pytest.raises(
        ValueError, match=r"unknown block format 'mxfp8'; did you mean 'mxfp8_e.m.'\? Valid names: "
    ):
        B.block_format("mxfp8")
    with pytest.raises(TypeError, match="named by a string"):
        B.block_format(4)
    for bad in (np.array(["a"]), np.array([1 + 2j]), np.array([True]), None):
        with pytest.raises(TypeError, match="real numbers"):
            B.quantize_blocks(bad, "nvfp4")
    with pytest.raises(ValueError, match="valid: nearest_even, stochastic"):
        B.quantize_blocks([1.0], "nvfp4", rounding="up")
    with pytest.raises(TypeError, match="rng must be"):
        B.quantize_blocks([1.0], "nvfp4", rounding="stochastic", rng="seed")  # type: ignore[arg-type]
    for size in (0, B.MAX_BLOCK_SIZE + 1):
        with pytest.raises(ValueError, match="block_size must be in"):
            B.quantize_blocks([1.0], "mxint8", block_size=size)
    with pytest.raises(TypeError, match="block_size must be an int"):
        B.quantize_blocks([1.0], "mxint8", block_size=2.0)  # type: ignore[arg-type]


# ---------------------------------------------------------------- shapes, padding, block size


def test_shapes_padding_and_the_last_axis() -> None:
    """``values`` has the input's shape; a ragged last axis is padded with zeros (which never
    move a block's max, so the real elements quantize as in a shorter block); blocks run
    along the last axis only."""
    rng = np.random.default_rng(24)
    x = rng.standard_normal((3, 5, 40))
    q = B.quantize_blocks(x, "mxfp6_e3m2")
    assert q.values.shape == x.shape and q.scales.shape == (3, 5, 2) and q.elements.shape == (3, 5, 2, 32)
    assert q.padding == 24 and (q.elements[..., 1, 8:] == 0).all()
    row = x[1, 2]
    np.testing.assert_array_equal(q.values[1, 2, 32:], B.quantize_blocks(row[32:], "mxfp6_e3m2").values)
    np.testing.assert_array_equal(q.values[1, 2], B.quantize_blocks(row, "mxfp6_e3m2").values)
    assert B.quantize_blocks(3.0, "mxfp4_e2m1").values.shape == ()
    assert float(B.quantize_blocks(3.0, "mxfp4_e2m1").values) == 3.0
    assert B.quantize_blocks(np.zeros((2, 0)), "nvfp4").values.shape == (2, 0)
    ints = B.quantize_blocks(np.arange(-8, 8, dtype=np.int16), "mxint8")
    np.testing.assert_array_equal(ints.values, np.arange(-8, 8))  # scale 2**-3: every integer held


def test_block_size_one_is_elementwise_with_a_power_of_two_scale() -> None:
    """With blocks of one, every element gets its own scale: MXFP8 E4M3 then keeps each value
    to E4M3's 4 significant bits, whatever its magnitude (saturating in the top eighth of a
    binade, as the MX rule does); the error grows with the block size."""
    rng = np.random.default_rng(25)
    x = rng.laplace(size=4096) * 2.0 ** rng.uniform(-40, 40, 4096)
    one = B.quantize_blocks(x, "mxfp8_e4m3", block_size=1)
    assert one.format.block_size == 1 and one.format.bits_per_element == 16
    # the scale puts each |x| at [256, 512); E4M3 holds up to 448 (1.75 * 2**8): above, it saturates
    scale = 2.0 ** (np.floor(np.log2(np.abs(x))) - 8)
    want = oracles.round_array(np.clip(x / scale, -448, 448), "float8_e4m3fn") * scale
    np.testing.assert_array_equal(one.values, want)
    errors = [
        np.sqrt(np.mean(((B.quantize_blocks(x, "mxfp4_e2m1", block_size=k).values - x) / x) ** 2))
        for k in (1, 8, 32, 256)
    ]
    assert errors == sorted(errors) and errors[0] < errors[-1] / 2


# ---------------------------------------------------------------- stochastic rounding


def test_stochastic_rounding_is_seeded_unbiased_and_on_the_grid() -> None:
    """Each element goes to one of its two neighbours on the element grid (the spec table's
    values), with the mean the exact value; the same seed gives the same draw."""
    grid = _element_grid("mxfp4_e2m1")
    x = np.resize(np.array([6.0, 1.25, -2.6, 0.1, 4.5]), (4000, 5))
    first = B.quantize_blocks(x, "mxfp4_e2m1", rounding="stochastic", rng=7)
    np.testing.assert_array_equal(
        B.quantize_blocks(x, "mxfp4_e2m1", rounding="stochastic", rng=7).values, first.values
    )
    other = B.quantize_blocks(x, "mxfp4_e2m1", rounding="stochastic", rng=np.random.default_rng(8))
    assert not np.array_equal(other.values, first.values)
    assert np.isin(np.abs(first.values), grid).all() and (first.scales == 1.0).all()
    for column, exact in enumerate([6.0, 1.25, -2.6, 0.1, 4.5]):
        drawn = first.values[:, column]
        below, above = grid[grid <= abs(exact)].max(), grid[grid >= abs(exact)].min()
        assert set(np.abs(drawn)) <= {below, above}
        spread = (above - below) / np.sqrt(len(drawn))
        assert abs(drawn.mean() - exact) <= 4 * spread + 1e-12, (exact, drawn.mean())
    int8 = B.quantize_blocks(np.full(4000, 1 / 3), "mxint8", rounding="stochastic", rng=1)
    steps = int8.elements.ravel() * 64  # 1/3 at the scale 2**-2 is 85.33 steps of 2**-6
    assert set(steps) == {85.0, 86.0} and abs(steps.mean() - 256 / 3) < 4 / np.sqrt(steps.size)
