"""Accumulation in low precision against independent loops with ml_dtypes scalars."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from explorer.analysis.accumulation import (
    dot_study,
    make_terms,
    pairwise_sum,
    predicted_stagnation,
    running_dot,
    running_sum,
    stagnation,
    summation_study,
)


def _scalar_loop(terms: np.ndarray, dtype) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Sequential sum with the accumulator as an ml_dtypes/NumPy scalar (its own + rounds)."""
    s = dtype(0)
    out = []
    for t in terms.astype(dtype):
        s = dtype(s + t)
        out.append(float(s))
    return np.array(out)


def test_ten_thousand_uniforms_in_bfloat16_stop_at_256() -> None:
    study = summation_study("bfloat16", n=10_000, distribution="uniform", seed=0)
    assert study.final["format"] == 256.0
    assert study.stagnation["format"].stagnated and study.stagnation["format"].value == 256.0
    assert study.predicted == 256.0
    assert study.final["float32"] == pytest.approx(study.exact_final, rel=1e-6)
    assert study.final["float64"] == pytest.approx(study.exact_final, rel=1e-12)
    assert not study.stagnation["float32"].stagnated
    # pairwise summation in bfloat16 is far better than sequential
    assert abs(study.pairwise["format"] - study.exact_final) < 0.01 * study.exact_final


@pytest.mark.parametrize("name", ["bfloat16", "float16", "float8_e4m3fn", "float8_e5m2"])
def test_running_sum_matches_a_scalar_loop(name: str) -> None:
    dtype = np.float16 if name == "float16" else getattr(ml_dtypes, name)
    terms = make_terms("uniform", 6000, seed=1)
    expected = _scalar_loop(terms, dtype)
    np.testing.assert_array_equal(running_sum(terms, name), expected)
    stuck = stagnation(expected)
    assert stuck.stagnated
    assert stuck.value == predicted_stagnation(name, float(terms.astype(dtype).astype(float).max()))


def test_float64_accumulator_is_cumsum_and_float32_accumulator_is_float32_cumsum() -> None:
    terms = make_terms("normal", 2000, seed=2)
    rounded = terms.astype(ml_dtypes.bfloat16).astype(np.float64)
    np.testing.assert_array_equal(running_sum(terms, "bfloat16", "float64"), np.cumsum(rounded))
    np.testing.assert_array_equal(
        running_sum(terms, "bfloat16", "float32"), np.cumsum(rounded.astype(np.float32)).astype(np.float64)
    )


def test_pairwise_sum_matches_an_independent_recursive_sum() -> None:
    terms = make_terms("uniform", 1000, seed=3).astype(np.float16)

    def tree(x: np.ndarray) -> np.float16:
        if x.size == 1:
            return x[0]
        half = 1 << (math.ceil(math.log2(x.size)) - 1)
        return np.float16(tree(x[:half]) + tree(x[half:]))

    assert pairwise_sum(terms.astype(np.float64), "float16") == float(tree(terms))


def test_dot_products_in_each_accumulator() -> None:
    study = dot_study("bfloat16", n=5000, seed=0)
    assert study.final["float64"] == pytest.approx(study.exact_final, rel=1e-12)
    assert study.final["format"] < 0.5 * study.exact_final  # stagnated
    assert stagnation(study.running["format"]).stagnated


def test_bad_arguments_raise() -> None:
    with pytest.raises(ValueError, match="distribution"):
        summation_study("bfloat16", distribution="cauchy")
    with pytest.raises(ValueError, match="accumulator"):
        running_sum([1.0], "bfloat16", "float128")
    with pytest.raises(ValueError, match="n must be an integer from 1 to"):
        make_terms("uniform", 0)
    with pytest.raises(ValueError, match="same size"):
        running_dot([1.0, 2.0], [1.0], "float16")


def test_running_sum_plot_has_one_line_per_accumulator() -> None:
    from explorer.plots.accumulation import plot_running_sum

    fig = plot_running_sum(summation_study("bfloat16", n=2000))
    labels = [line.get_label() for line in fig.axes[0].lines]
    assert sum("accumulator" in label for label in labels) == 3


@pytest.mark.parametrize("n", [10**10, 0, -1, True, 2.0, "10"])
def test_term_counts_outside_the_bound_are_refused_before_any_allocation(n) -> None:  # type: ignore[no-untyped-def]
    """Issue 24, item 4: ``summation_study(n=10**10)`` raised MemoryError and ``dot_study(n=0)``
    IndexError; each is a ValueError naming the limit, raised before anything is allocated (a
    MemoryError or an IndexError would escape ``pytest.raises(ValueError)``)."""
    from explorer.analysis.accumulation import MAX_TERMS

    for study in (summation_study, dot_study):
        with pytest.raises(ValueError, match=f"from 1 to {MAX_TERMS}"):
            study("bfloat16", n=n)


def test_the_largest_term_count_runs() -> None:
    """The bound is one the studies reach: MAX_TERMS ones sum exactly in float32 (2**24 > 10**6)."""
    from explorer.analysis.accumulation import MAX_TERMS

    study = summation_study("bfloat16", n=MAX_TERMS, distribution="ones", accumulators=("float32",))
    assert study.final["float32"] == float(MAX_TERMS) == study.exact_final
