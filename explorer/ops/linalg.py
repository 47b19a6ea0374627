"""Linear algebra (tf.linalg): products (matmul, batched, matvec, einsum, cross), trace,
factorisations and solvers on small well-conditioned matrices (cholesky, det, slogdet,
inv, solve, triangular_solve, lstsq, qr, svd, eigh).  Factorisations return one canonical
output: R of QR with diag(R) > 0, singular values, eigenvalues, log|det|."""

from __future__ import annotations

from typing import Any

import numpy as np

from explorer.ops._define import define
from explorer.ops._inputs import (
    lower_triangular_system,
    near_identity,
    spd_matrix,
    tall_system,
    uniform,
    uniform2,
)


def _qr_r(r: Any, sign: Any, diag: Any) -> Any:
    """R with each row multiplied by the sign of its diagonal entry (makes QR unique)."""
    return r * sign(diag(r))[..., :, None]


define(
    name="matmul",
    group="linalg",
    arity=2,
    tf_public="tf.linalg.matmul",
    tf_raw_ops=("MatMul",),
    tf=lambda tf, dt, a, b: tf.linalg.matmul(a, b),
    numpy=lambda np, dt, a, b: np.matmul(a, b),
    torch=lambda torch, dt, a, b: torch.matmul(a, b),
    reference=np.matmul,
    make_inputs=uniform2(-1, 1, shape=(4, 8), shape2=(8, 4)),
    doc="(4, 8) @ (8, 4)",
)
define(
    name="batch_matmul",
    group="linalg",
    arity=2,
    tf_public="tf.linalg.matmul",
    tf_raw_ops=("BatchMatMulV2",),
    tf=lambda tf, dt, a, b: tf.linalg.matmul(a, b),
    numpy=lambda np, dt, a, b: np.matmul(a, b),
    torch=lambda torch, dt, a, b: torch.matmul(a, b),
    reference=np.matmul,
    make_inputs=uniform2(-1, 1, shape=(2, 4, 8), shape2=(2, 8, 4)),
    doc="(2, 4, 8) @ (2, 8, 4): tf.linalg.matmul on 3-D inputs",
)
define(
    name="matvec",
    group="linalg",
    arity=2,
    tf_public="tf.linalg.matvec",
    tf_raw_ops=("MatMul", "ExpandDims", "Squeeze"),
    tf=lambda tf, dt, a, v: tf.linalg.matvec(a, v),
    numpy=lambda np, dt, a, v: np.matmul(a, v),
    torch=lambda torch, dt, a, v: torch.mv(a, v),
    reference=np.matmul,
    make_inputs=uniform2(-1, 1, shape=(4, 8), shape2=(8,)),
    doc="(4, 8) matrix times an 8-vector",
)
define(
    name="einsum",
    group="linalg",
    arity=2,
    tf_public="tf.einsum",
    tf_raw_ops=("Einsum",),
    tf=lambda tf, dt, a, b: tf.einsum("ij,jk->ik", a, b),
    numpy=lambda np, dt, a, b: np.einsum("ij,jk->ik", a, b),
    torch=lambda torch, dt, a, b: torch.einsum("ij,jk->ik", a, b),
    reference=lambda a, b: np.einsum("ij,jk->ik", a, b),
    make_inputs=uniform2(-1, 1, shape=(4, 8), shape2=(8, 4)),
    doc="einsum('ij,jk->ik')",
)
define(
    name="cross",
    group="linalg",
    arity=2,
    tf_public="tf.linalg.cross",
    tf_raw_ops=("Cross",),
    tf=lambda tf, dt, a, b: tf.linalg.cross(a, b),
    numpy=lambda np, dt, a, b: np.cross(a, b),
    torch=lambda torch, dt, a, b: torch.linalg.cross(a, b),
    reference=np.cross,
    make_inputs=uniform2(-1, 1, shape=(8, 3)),
    doc="8 cross products of 3-vectors",
)
define(
    name="trace",
    group="linalg",
    arity=1,
    tf_public="tf.linalg.trace",
    tf_raw_ops=("MatrixDiagPartV3", "Sum"),
    tf=lambda tf, dt, a: tf.linalg.trace(a),
    numpy=lambda np, dt, a: np.trace(a),
    torch=lambda torch, dt, a: torch.trace(a),
    reference=np.trace,
    make_inputs=uniform(-1, 1, (4, 4)),
    doc="sum of the diagonal of a 4x4 matrix",
)
define(
    name="cholesky",
    group="linalg",
    arity=1,
    tf_public="tf.linalg.cholesky",
    tf_raw_ops=("Cholesky",),
    tf=lambda tf, dt, a: tf.linalg.cholesky(a),
    numpy=lambda np, dt, a: np.linalg.cholesky(a),
    torch=lambda torch, dt, a: torch.linalg.cholesky(a),
    reference=np.linalg.cholesky,
    make_inputs=spd_matrix(),
    doc="lower Cholesky factor of a 4x4 SPD matrix",
)
define(
    name="det",
    group="linalg",
    arity=1,
    tf_public="tf.linalg.det",
    tf_raw_ops=("MatrixDeterminant",),
    tf=lambda tf, dt, a: tf.linalg.det(a),
    numpy=lambda np, dt, a: np.linalg.det(a),
    torch=lambda torch, dt, a: torch.linalg.det(a),
    reference=np.linalg.det,
    make_inputs=near_identity(),
    doc="determinant of I + E, |E| < 0.2",
)
define(
    name="slogdet",
    group="linalg",
    arity=1,
    tf_public="tf.linalg.slogdet",
    tf_raw_ops=("LogMatrixDeterminant",),
    tf=lambda tf, dt, a: tf.linalg.slogdet(a)[1],
    numpy=lambda np, dt, a: np.linalg.slogdet(a)[1],
    torch=lambda torch, dt, a: torch.linalg.slogdet(a)[1],
    reference=lambda a: np.linalg.slogdet(a)[1],
    make_inputs=near_identity(),
    doc="log|det| of I + E (the canonical output; the sign is dropped)",
)
define(
    name="inv",
    group="linalg",
    arity=1,
    tf_public="tf.linalg.inv",
    tf_raw_ops=("MatrixInverse",),
    tf=lambda tf, dt, a: tf.linalg.inv(a),
    numpy=lambda np, dt, a: np.linalg.inv(a),
    torch=lambda torch, dt, a: torch.linalg.inv(a),
    reference=np.linalg.inv,
    make_inputs=near_identity(),
    doc="inverse of I + E, |E| < 0.2",
)
define(
    name="solve",
    group="linalg",
    arity=2,
    tf_public="tf.linalg.solve",
    tf_raw_ops=("MatrixSolve",),
    tf=lambda tf, dt, a, b: tf.linalg.solve(a, b),
    numpy=lambda np, dt, a, b: np.linalg.solve(a, b),
    torch=lambda torch, dt, a, b: torch.linalg.solve(a, b),
    reference=np.linalg.solve,
    make_inputs=near_identity(4, (4, 2)),
    doc="solve (I + E) X = B",
)
define(
    name="triangular_solve",
    group="linalg",
    arity=2,
    tf_public="tf.linalg.triangular_solve",
    tf_raw_ops=("MatrixTriangularSolve",),
    tf=lambda tf, dt, a, b: tf.linalg.triangular_solve(a, b, lower=True),
    numpy=None,
    torch=lambda torch, dt, a, b: torch.linalg.solve_triangular(a, b, upper=False),
    reference=lambda a, b: np.linalg.solve(a, b),
    make_inputs=lower_triangular_system(),
    doc="solve L X = B for lower-triangular L (NumPy has no triangular solver)",
)
define(
    name="lstsq",
    group="linalg",
    arity=2,
    tf_public="tf.linalg.lstsq",
    tf_raw_ops=("Cholesky", "MatrixTriangularSolve", "MatMul"),
    tf=lambda tf, dt, a, b: tf.linalg.lstsq(a, b),
    numpy=lambda np, dt, a, b: np.linalg.lstsq(a, b, rcond=None)[0],
    torch=lambda torch, dt, a, b: torch.linalg.lstsq(a, b).solution,
    reference=lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0],
    make_inputs=tall_system,
    doc="least-squares solution of a full-rank 6x4 system (TensorFlow's default fast path: "
    "Cholesky of the normal equations, not the MatrixSolveLs raw op)",
)
define(
    name="qr",
    group="linalg",
    arity=1,
    tf_public="tf.linalg.qr",
    tf_raw_ops=("Qr", "MatrixDiagPartV3", "Sign", "StridedSlice", "Mul"),
    tf=lambda tf, dt, a: _qr_r(tf.linalg.qr(a)[1], tf.math.sign, tf.linalg.diag_part),
    numpy=lambda np, dt, a: _qr_r(np.linalg.qr(a)[1], np.sign, np.diagonal),
    torch=lambda torch, dt, a: _qr_r(torch.linalg.qr(a).R, torch.sign, torch.diagonal),
    reference=lambda a: _qr_r(np.linalg.qr(a)[1], np.sign, np.diagonal),
    make_inputs=near_identity(),
    doc="R of A = QR, rows' signs chosen so that diag(R) > 0 (the canonical output)",
)
define(
    name="svd",
    group="linalg",
    arity=1,
    tf_public="tf.linalg.svd",
    tf_raw_ops=("Svd",),
    tf=lambda tf, dt, a: tf.linalg.svd(a, compute_uv=False),
    numpy=lambda np, dt, a: np.linalg.svd(a, compute_uv=False),
    torch=lambda torch, dt, a: torch.linalg.svdvals(a),
    reference=lambda a: np.linalg.svd(a, compute_uv=False),
    make_inputs=uniform(-1, 1, (4, 4)),
    doc="singular values, largest first (the canonical output)",
)
define(
    name="eigh",
    group="linalg",
    arity=1,
    tf_public="tf.linalg.eigh",
    tf_raw_ops=("SelfAdjointEigV2",),
    tf=lambda tf, dt, a: tf.linalg.eigh(a)[0],
    numpy=lambda np, dt, a: np.linalg.eigh(a)[0],
    torch=lambda torch, dt, a: torch.linalg.eigh(a).eigenvalues,
    reference=lambda a: np.linalg.eigvalsh(a),
    make_inputs=spd_matrix(),
    doc="eigenvalues of a symmetric matrix, ascending (the canonical output)",
)
