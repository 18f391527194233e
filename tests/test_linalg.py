"""The solves that run inside simulations (`jaxfric._linalg`, XLA loops instead
of LAPACK calls) against numpy's LAPACK."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxfric import _linalg as la


@pytest.mark.parametrize("backend", ["cpu", "gpu"])
def test_solves_match_lapack(backend, monkeypatch):
    # Loops are unrolled on a GPU (`_linalg._loop`): that path is checked here
    # too, with JAX's default backend reported as "gpu".
    monkeypatch.setattr(jax, "default_backend", lambda: backend)
    rng = np.random.default_rng(0)

    @jax.jit
    def solves(a, spd, upper, b, tall, y):
        return (
            la.lu_solve(a, b),
            la.det(a),
            la.spd_solve(spd, b),
            la.upper_solve(upper, b),
            la.lstsq_solve(tall, y),
            *la.lu_solve_det(a, b[:, 0]),
            *la.lu_solve_det(a, b),
        )

    for n in (3, 11):  # unrolled and looped elimination
        a = rng.normal(size=(n, n))
        a[0, 0] = 0.0  # needs a row exchange
        spd = a @ a.T + n * np.eye(n)
        upper = np.triu(a) + 5 * np.eye(n)
        b = rng.normal(size=(n, 2))
        tall, y = rng.normal(size=(n + 4, n)), rng.normal(size=n + 4)
        args = tuple(map(jnp.asarray, (a, spd, upper, b, tall, y)))
        out = solves(*args)
        program = solves.lower(*args).compile().as_text()
        assert ("while" in program) == (backend == "cpu")
        expected = (
            np.linalg.solve(a, b),
            np.linalg.det(a),
            np.linalg.solve(spd, b),
            np.linalg.solve(upper, b),
            np.linalg.lstsq(tall, y, rcond=None)[0],
            np.linalg.solve(a, b[:, 0]),
            np.linalg.det(a),
            np.linalg.solve(a, b),
            np.linalg.det(a),
        )
        for got, ref in zip(out, expected, strict=True):
            np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)
    assert float(la.det(jnp.array([[0.0, 1.0], [1.0, 0.0]]))) == -1.0
    assert not np.all(np.isfinite(la.lu_solve(jnp.zeros((2, 2)), jnp.ones(2))))


def test_min_norm_solve_and_singular_values_of_rank_deficient_rows():
    # A planar loop closed by a spatial joint: 5 closure rows of rank 2.
    rng = np.random.default_rng(1)
    jac = rng.normal(size=(2, 3))
    jac = np.vstack([jac, rng.normal(size=(3, 2)) @ jac])
    lhs = jac.T @ rng.normal(size=5)  # consistent: in the range of jacᵀ
    lam = la.min_norm_solve(jnp.asarray(jac.T), jnp.asarray(lhs))
    np.testing.assert_allclose(lam, np.linalg.pinv(jac.T) @ lhs, rtol=1e-8)
    full = rng.normal(size=(5, 3))
    np.testing.assert_allclose(
        la.singular_values(jnp.asarray(full)),
        np.linalg.svd(full, compute_uv=False),
        rtol=1e-12,
    )
    sv = la.singular_values(jnp.asarray(jac))
    assert float(sv[-1]) < 1e-6 * float(sv[0])  # rank 2 of 3
    # The same rotations with their vectors: eigh of a symmetric matrix.
    sym = full.T @ full - 2.0 * np.eye(3)
    values, vectors = la.symmetric_eigen(jnp.asarray(sym))
    np.testing.assert_allclose(np.sort(values), np.linalg.eigvalsh(sym), rtol=1e-12)
    np.testing.assert_allclose(
        vectors @ np.diag(values) @ vectors.T, sym, rtol=0, atol=1e-12
    )
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(3), rtol=0, atol=1e-14)
