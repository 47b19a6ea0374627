"""Input builders: functions ``build(rng) -> tuple of float64 arrays`` that make an op's
inputs from one seeded generator, and the shapes the groups share.

Every builder keeps its values meaningful in every format down to float4_e2m1fn
(largest value 6): small magnitudes, no values that round to a pole, matrices that stay
well conditioned (SPD, diagonally dominant) after rounding.

>>> import numpy as np
>>> [x.shape for x in uniform2(-1, 1, shape=(4, 8), shape2=(8,))(np.random.default_rng(0))]
[(4, 8), (8,)]
"""

from __future__ import annotations

import numpy as np

from explorer.ops._op import Builder, Inputs

#: reductions (and the row-wise nn ops) take a (4, 16) array and work along its last axis
ROWS = (4, 16)
#: images are NHWC batches of one 4x4 RGB image
IMAGE = (1, 4, 4, 3)


def uniform(lo: float, hi: float, shape: tuple[int, ...] = (64,)) -> Builder:
    """Builder of one uniform input in [lo, hi).

    >>> bool(np.all(uniform(0.5, 4)(np.random.default_rng(0))[0] >= 0.5))
    True
    """

    def build(rng: np.random.Generator) -> Inputs:
        return (rng.uniform(lo, hi, shape),)

    return build


def uniform2(
    lo: float,
    hi: float,
    lo2: float | None = None,
    hi2: float | None = None,
    shape: tuple[int, ...] = (64,),
    shape2: tuple[int, ...] | None = None,
) -> Builder:
    """Builder of two uniform inputs (the second in [lo2, hi2) when given).

    >>> a, b = uniform2(-4, 4, 0.5, 2)(np.random.default_rng(0))
    >>> bool(b.min() >= 0.5 and a.min() < 0)
    True
    """

    def build(rng: np.random.Generator) -> Inputs:
        b_lo = lo if lo2 is None else lo2
        b_hi = hi if hi2 is None else hi2
        return rng.uniform(lo, hi, shape), rng.uniform(b_lo, b_hi, shape if shape2 is None else shape2)

    return build


def signed(lo: float, hi: float, shape: tuple[int, ...] = (64,)) -> Builder:
    """Builder of one input with magnitudes in [lo, hi) and random signs (no zeros).

    >>> bool(np.all(np.abs(signed(0.5, 4)(np.random.default_rng(0))[0]) >= 0.5))
    True
    """

    def build(rng: np.random.Generator) -> Inputs:
        return (rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape),)

    return build


def concat(*builders: Builder) -> Builder:
    """Builder whose inputs are those of ``builders``, in order, from one generator.

    >>> len(concat(uniform(-2, 2), signed(0.5, 2))(np.random.default_rng(0)))
    2
    """

    def build(rng: np.random.Generator) -> Inputs:
        out: list[np.ndarray] = []
        for b in builders:
            out.extend(b(rng))
        return tuple(out)

    return build


def no_inputs(rng: np.random.Generator) -> Inputs:
    """Builder of creation ops: no inputs.

    >>> no_inputs(np.random.default_rng(0))
    ()
    """
    return ()


def spd_matrix(n: int = 4) -> Builder:
    """Builder of one well-conditioned symmetric positive definite matrix.

    Off-diagonal entries have magnitude below 1 and the diagonal is at least n, so
    the matrix stays diagonally dominant (hence SPD) after rounding to any format.

    >>> (a,) = spd_matrix()(np.random.default_rng(0))
    >>> bool(np.all(np.linalg.eigvalsh(a) > 0))
    True
    """

    def build(rng: np.random.Generator) -> Inputs:
        a = rng.uniform(-0.5, 0.5, (n, n))
        return (a @ a.T + n * np.eye(n),)

    return build


def near_identity(n: int = 4, extra: tuple[int, ...] | None = None) -> Builder:
    """Builder of a diagonally dominant matrix I + E, |E| < 0.2 (condition number < 3),
    optionally followed by a right-hand side of shape ``extra`` in [-1, 1).

    >>> [x.shape for x in near_identity(4, (4, 2))(np.random.default_rng(0))]
    [(4, 4), (4, 2)]
    """

    def build(rng: np.random.Generator) -> Inputs:
        a = np.eye(n) + rng.uniform(-0.2, 0.2, (n, n))
        if extra is None:
            return (a,)
        return a, rng.uniform(-1, 1, extra)

    return build


def lower_triangular_system(n: int = 4) -> Builder:
    """Builder of a lower-triangular L = tril(I + E), |E| < 0.2, and a right-hand side (n, 2).

    >>> lower, rhs = lower_triangular_system()(np.random.default_rng(0))
    >>> bool(np.all(np.triu(lower, 1) == 0)), rhs.shape
    (True, (4, 2))
    """

    def build(rng: np.random.Generator) -> Inputs:
        lower = np.tril(np.eye(n) + rng.uniform(-0.2, 0.2, (n, n)))
        return lower, rng.uniform(-1, 1, (n, 2))

    return build


def tall_system(rng: np.random.Generator) -> Inputs:
    """Builder of a full-rank 6x4 matrix (I + E stacked on a small 2x4 block) and a (6, 2)
    right-hand side: a least-squares problem.

    >>> [x.shape for x in tall_system(np.random.default_rng(0))]
    [(6, 4), (6, 2)]
    """
    a = np.vstack([np.eye(4) + rng.uniform(-0.2, 0.2, (4, 4)), rng.uniform(-0.2, 0.2, (2, 4))])
    return a, rng.uniform(-1, 1, (6, 2))


def norm_inputs(shape: tuple[int, ...], channels: int) -> Builder:
    """Builder of normalisation inputs: x in [-2, 2), offset in [-0.5, 0.5), scale in [0.5, 1.5).

    >>> [x.shape for x in norm_inputs((8, 4), 4)(np.random.default_rng(0))]
    [(8, 4), (4,), (4,)]
    """
    return concat(uniform(-2, 2, shape), uniform(-0.5, 0.5, (channels,)), uniform(0.5, 1.5, (channels,)))


def one_hot_and_logits(rng: np.random.Generator) -> Inputs:
    """Builder of 4 one-hot labels over 8 classes and logits (4, 8) in [-2, 2).

    >>> labels, logits = one_hot_and_logits(np.random.default_rng(0))
    >>> labels.sum(axis=-1).tolist(), logits.shape
    ([1.0, 1.0, 1.0, 1.0], (4, 8))
    """
    labels = np.eye(8)[rng.integers(0, 8, 4)]
    return labels, rng.uniform(-2, 2, (4, 8))
