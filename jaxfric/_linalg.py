"""Dense linear solves written as XLA loops and unrolled arithmetic, for the
code that runs inside simulations (stick forces, mass matrices, loop closure).

Why not `jnp.linalg`: under `vmap` on the CPU it calls LAPACK through custom
calls that split the batch over XLA's intra-op thread pool and wait for their
parts (jaxlib's `ParallelBatchMap`). Two such calls that XLA runs side by side
each wait for parts queued behind the other, and with as many pool threads as
calls the run hangs for good: measured with jaxlib 0.10.2 on a 2-core machine,
a `vmap` batch of 256 3-RPS simulations (`experiments/bench_gpu.py`) stopped
for good, stuck in `lapack_dgetrf_ffi` and `lapack_dtrsm_ffi`, and so did a
loop of an LU solve beside a Cholesky solve of 9×9 matrices at a batch of
1024 (256: 0.9 s). The solves here are ordinary XLA operations, which XLA
schedules itself: that loop ran in 5.6 s at 1024 and 1.15 s at 256 (1.3×
LAPACK's time there). Up to ``n = 8`` they are unrolled over scalars, which
was also the faster route under `vmap` (README, Performance).
"""

import jax
import jax.numpy as jnp

# Up to this size solves are unrolled over scalars: under `vmap` on the CPU
# LAPACK ran once per batch member for tiny matrices, which dominated run time
# (same results unrolled; timing in README, Performance).
_UNROLL_MAX = 8
# On a GPU, loops over at most this many rows are unrolled: there every
# iteration of a rolled loop is a kernel launch and a host round-trip for its
# condition, and these loops run at every vector-field evaluation of a closed
# chain. A 3-RPS batch of 256 on an H200 (`experiments/bench_gpu.py`): 25.0 ms
# per simulation rolled, 11.3 ms unrolled (15.9 ms with `jnp.linalg`). On the
# CPU unrolling bought nothing at run time (3-RPS batch of 4: 181 → 188 ms per
# simulation) and doubled the compile time (47 → 87 s), so loops stay rolled.
_UNROLL_LOOP_MAX = 16


def _loop(n, step, init):
    """``fori_loop(0, n, step, init)``, unrolled on a GPU (or any backend but
    the CPU) for ``n <= _UNROLL_LOOP_MAX``."""
    unroll = n <= _UNROLL_LOOP_MAX and jax.default_backend() != "cpu"
    return jax.lax.fori_loop(0, n, step, init, unroll=unroll)


def spd_solve(a: jax.Array, b: jax.Array) -> jax.Array:
    """Solve ``a x = b`` for a symmetric positive definite ``a`` (``b`` of shape
    ``(n,)`` or ``(n, k)``).

    Used for the mass matrix ``M``; Delassus blocks ``J_S M⁻¹ J_Sᵀ`` and Gram
    matrices ``J_S J_Sᵀ``, which are singular for redundant elements, go
    through `psd_solve` (the same elimination where they are definite). For
    SPD matrices Gaussian elimination without pivoting is backward stable
    (growth factor 1, Wilkinson 1961): `pivot_solve` with no pivot skipped. A
    singular ``a`` gives non-finite entries, as with pivoting.
    """
    return pivot_solve(a, b, None)[0]


def zero_pivot_tol(dtype) -> float:
    """The pivot below which `pivot_solve` counts a pivot of a semidefinite
    matrix as zero, relative to its diagonal entry: ``max(1e-10, 1000·eps)``."""
    return max(1e-10, 1e3 * float(jnp.finfo(dtype).eps))


def pivot_solve(a: jax.Array, b: jax.Array, tol: float | None):
    """Gaussian elimination without pivoting of a symmetric positive
    semidefinite ``a``, skipping pivots below `tol` of their diagonal entry
    (none with `tol` None), then back substitution: ``(x, upper, singular)``
    as in `_eliminate` (`tol` None: only ``x``). Unrolled over the entries as
    scalars for ``n <= 8`` (no gathers or in-place updates, which under `vmap`
    on CPU cost more than the arithmetic), a loop above."""
    if a.shape[0] > _UNROLL_MAX:
        upper, rhs, singular = _eliminate(a, b, tol)
        return upper_solve(upper, rhs), upper, singular
    return _unrolled_eliminate(a, b, tol)


def upper_solve(upper: jax.Array, rhs: jax.Array) -> jax.Array:
    """``upper⁻¹ rhs`` for an upper triangular ``upper`` (``rhs`` of shape
    ``(n,)`` or ``(n, k)``), by back substitution in a loop."""
    n = upper.shape[0]
    b = rhs if rhs.ndim == 2 else rhs[:, None]

    def step(i, x):
        k = n - 1 - i
        row = jnp.where(jnp.arange(n) > k, upper[k], 0.0)
        return x.at[k].set((b[k] - row @ x) / upper[k, k])

    x = _loop(n, step, jnp.zeros_like(b))
    return x if rhs.ndim == 2 else x[:, 0]


def _eliminate(a: jax.Array, b: jax.Array, tol: float | None):
    """Gaussian elimination without pivoting of a symmetric positive
    semidefinite ``a`` that skips zero pivots (none with `tol` None).

    In a semidefinite matrix a zero pivot has a zero row and column in its
    Schur complement: the row is a combination of the rows before it. Its
    column is not eliminated and its unknown is set to zero, which for a
    consistent ``b`` gives a solution (a basic one). Returns ``(upper, rhs,
    singular)``: the eliminated upper triangle with identity rows at the zero
    pivots, the eliminated right-hand side (zero there) and the mask of zero
    pivots; ``upper⁻¹ rhs`` is the solution and ``upper⁻¹ e_k`` the null
    vector of zero pivot ``k``. A loop: for the solves that are not unrolled.
    """
    n = a.shape[0]
    index = jnp.arange(n)
    diag = jnp.diagonal(a)

    def step(k, carry):
        a, b, singular = carry
        pivot = a[k, k]
        zero = jnp.zeros((), bool) if tol is None else pivot <= tol * diag[k]
        factor = jnp.where((index > k) & ~zero, a[:, k] / jnp.where(zero, 1, pivot), 0)
        a = a - factor[:, None] * a[k][None, :]
        b = b - factor[:, None] * b[k][None, :]
        return a, b, singular.at[k].set(zero)

    b2 = b if b.ndim == 2 else b[:, None]
    a, b2, singular = _loop(n, step, (a, b2, jnp.zeros(n, bool)))
    upper = jnp.where(singular[:, None], jnp.eye(n, dtype=a.dtype), jnp.triu(a))
    b2 = jnp.where(singular[:, None], 0.0, b2)
    return upper, (b2 if b.ndim == 2 else b2[:, 0]), singular


def _unrolled_eliminate(a: jax.Array, b: jax.Array, tol: float | None):
    """Gaussian elimination without pivoting unrolled over the entries as
    scalars (`pivot_solve`), skipping zero pivots as `_eliminate` does unless
    `tol` is None: bit for bit the plain elimination where no pivot is zero.
    Returns ``(x, upper, singular)``, ``upper`` as in `_eliminate` (`tol` None:
    only ``x`` is meaningful)."""
    n = a.shape[0]
    rows = [[a[i, j] for j in range(n)] for i in range(n)]
    rhs = [b[i] for i in range(n)]
    zeros, pivots = [], []
    for k in range(n):
        if tol is None:
            zero, pivot = False, rows[k][k]
        else:
            zero = rows[k][k] <= tol * a[k, k]
            pivot = jnp.where(zero, 1.0, rows[k][k])
        zeros.append(zero)
        pivots.append(pivot)
        for i in range(k + 1, n):
            factor = rows[i][k] / pivot
            if tol is not None:
                factor = jnp.where(zero, 0.0, factor)
            for j in range(k + 1, n):
                rows[i][j] = rows[i][j] - factor * rows[k][j]
            rhs[i] = rhs[i] - factor * rhs[k]
    x = [None] * n
    for k in reversed(range(n)):
        acc = rhs[k]
        for j in range(k + 1, n):
            acc = acc - rows[k][j] * x[j]
        x[k] = (
            acc / pivots[k]
            if tol is None
            else jnp.where(zeros[k], 0.0, acc / pivots[k])
        )
    if tol is None:
        return jnp.stack(x), None, None
    zero = jnp.zeros((), a.dtype)
    upper = [
        [zero] * i
        + [pivots[i]]
        + [jnp.where(zeros[i], 0.0, v) for v in rows[i][i + 1 :]]
        for i in range(n)
    ]
    return jnp.stack(x), jnp.stack([jnp.stack(r) for r in upper]), jnp.stack(zeros)


def _lu(a: jax.Array, b: jax.Array):
    """Gaussian elimination with partial pivoting (LAPACK's ``getrf``
    algorithm, as a loop) of a square ``a`` and a right-hand side ``b`` of
    shape ``(n, k)``: ``(upper, rhs, sign)``, the eliminated upper triangle,
    the eliminated ``b`` and the sign of the row permutation."""
    n = a.shape[0]
    index = jnp.arange(n)

    def step(k, carry):
        a, b, sign = carry
        # The largest entry of column k at or below the diagonal is the pivot.
        p = jnp.argmax(jnp.where(index >= k, jnp.abs(a[:, k]), -1.0))
        swap = jnp.where(index == k, p, jnp.where(index == p, k, index))
        a, b = a[swap], b[swap]
        factor = jnp.where(index > k, a[:, k] / a[k, k], 0.0)
        a = a - factor[:, None] * a[k][None, :]
        b = b - factor[:, None] * b[k][None, :]
        return a, b, jnp.where(p == k, sign, -sign)

    one = jnp.ones((), a.dtype)
    a, b, sign = _loop(n, step, (a, b, one))
    return jnp.triu(a), b, sign


def lu_solve(a: jax.Array, b: jax.Array) -> jax.Array:
    """Solve ``a x = b`` for a square nonsingular ``a`` (``b`` of shape ``(n,)``
    or ``(n, k)``) by Gaussian elimination with partial pivoting, then
    `upper_solve`. A singular ``a`` gives non-finite entries."""
    return lu_solve_det(a, b)[0]


def lu_solve_det(a: jax.Array, b: jax.Array) -> tuple[jax.Array, jax.Array]:
    """`lu_solve` and `det` of ``a`` from one elimination."""
    upper, rhs, sign = _lu(a, b if b.ndim == 2 else b[:, None])
    x = upper_solve(upper, rhs)
    return (x if b.ndim == 2 else x[:, 0]), _pivot_product(upper, sign)


def det(a: jax.Array) -> jax.Array:
    """The determinant of a square ``a``: the product of the pivots of `_lu`
    times the permutation's sign."""
    upper, _, sign = _lu(a, jnp.zeros((a.shape[0], 0), a.dtype))
    return _pivot_product(upper, sign)


def _pivot_product(upper: jax.Array, sign: jax.Array) -> jax.Array:
    return sign * jnp.prod(jnp.diagonal(upper))


def lstsq_solve(a: jax.Array, b: jax.Array) -> jax.Array:
    """``a⁺ b`` for ``a`` of full column rank (``(k, d)``, ``k >= d``) by the
    normal equations (a square ``a``: `lu_solve`). Non-finite where ``a`` is
    rank deficient (a singular configuration)."""
    if a.shape[0] == a.shape[1]:
        return lu_solve(a, b)
    return spd_solve(a.T @ a, a.T @ b)


def min_norm_solve(a: jax.Array, b: jax.Array) -> jax.Array:
    """The least-norm ``x`` with ``a x = b`` for ``a`` of any rank and ``b`` in
    its range (e.g. loop multipliers from redundant closure equations: a
    planar loop closed by a spatial joint): the normal equations ``aᵀa x =
    aᵀb`` solved by `pivot_solve`, which skips the zero pivots of the
    semidefinite ``aᵀa`` (a column of ``a`` that depends on those before it:
    the pivot is the squared sine of its angle to their span), then
    `drop_null_part` removes the null-space part. The form ``x = aᵀ y`` with
    ``a aᵀ y = b`` decided the rank of the larger ``a aᵀ`` instead, whose
    rows need not be comparable: at 3-PPRS poses 1e-5 m off its symmetric
    helix it miscounted a zero pivot and returned loop forces 9e-3 off
    NumPy's least squares (relative to forces of 1–6)."""
    x, upper, singular = pivot_solve(a.T @ a, a.T @ b, zero_pivot_tol(a.dtype))
    null = null_vectors(upper, singular)
    return drop_null_part(x, null, singular, jnp.ones(a.shape[1], a.dtype))


def null_vectors(upper: jax.Array, singular: jax.Array) -> jax.Array:
    """The null vectors of a semidefinite matrix from its `pivot_solve`:
    column ``k`` is ``upper⁻¹ e_k`` for a zero pivot ``k``, zero for the
    others."""
    return upper_solve(upper, jnp.diag(singular.astype(upper.dtype)))


def drop_null_part(
    x: jax.Array, null: jax.Array, singular: jax.Array, inverse_weights: jax.Array
) -> jax.Array:
    """``x`` (shape ``(n,)`` or ``(n, k)``) less its part along the `null`
    vectors (`null_vectors`) in the metric ``Σ x_i² / w_i``: of the
    solutions that differ from ``x`` by null vectors, the one of least
    weighted norm."""
    scaled = null * inverse_weights[:, None]
    gram = null.T @ scaled + jnp.diag((~singular).astype(null.dtype))
    return x - null @ spd_solve(gram, scaled.T @ x)


def _jacobi(g: jax.Array, sweeps: int, vectors: bool):
    """Cyclic Jacobi rotations on the symmetric ``g`` (Golub & Van Loan,
    Matrix Computations, Alg. 8.5.3), `sweeps` sweeps: ``(values, V)`` with
    ``g = V diag(values) Vᵀ`` (unsorted; ``V`` is `None` without `vectors`).
    Quadratic convergence: 12 sweeps is far past float64 for ``d <= 12``."""
    d = g.shape[0]
    pairs = [(p, q) for p in range(d) for q in range(p + 1, d)]

    def sweep(_, carry):
        g, v = carry
        for p, q in pairs:
            # The rotation that zeroes g[p, q] (Golub & Van Loan, Alg. 8.5.1).
            off = g[p, q]
            tau = (g[q, q] - g[p, p]) / (2.0 * jnp.where(off == 0, 1.0, off))
            t = jnp.sign(tau + (tau == 0)) / (jnp.abs(tau) + jnp.sqrt(1.0 + tau**2))
            t = jnp.where(off == 0, 0.0, t)
            c = 1.0 / jnp.sqrt(1.0 + t**2)
            rot = jnp.eye(d, dtype=g.dtype)
            rot = rot.at[p, p].set(c).at[q, q].set(c).at[p, q].set(c * t)
            rot = rot.at[q, p].set(-c * t)
            g = rot.T @ g @ rot
            v = None if v is None else v @ rot
        return g, v

    eye = jnp.eye(d, dtype=g.dtype) if vectors else None
    g, v = jax.lax.fori_loop(0, sweeps, sweep, (g, eye))
    return jnp.diagonal(g), v


def symmetric_eigen(a: jax.Array, sweeps: int = 12) -> tuple[jax.Array, jax.Array]:
    """Eigenvalues (unsorted) and eigenvectors (columns) of the symmetric
    ``a`` by cyclic Jacobi rotations (`_jacobi`): `jnp.linalg.eigh` without
    its LAPACK call (module doc)."""
    return _jacobi(a, sweeps, vectors=True)


def singular_values(a: jax.Array, sweeps: int = 12) -> jax.Array:
    """The singular values of ``a`` (``(k, d)``, ``k >= d``), largest first:
    square roots of the eigenvalues of ``aᵀa`` by cyclic Jacobi rotations
    (`_jacobi`). The smallest ones are accurate to about ``eps·σ_max²/σ``,
    which suffices for a rank test with a tolerance well above
    ``sqrt(eps)``."""
    values, _ = _jacobi(a.T @ a, sweeps, vectors=False)
    return jnp.sqrt(jnp.maximum(jnp.sort(values)[::-1], 0.0))
