"""`jaxfric._math.sincos`: the vectorised float64 sine and cosine against 80-bit
`numpy.longdouble`, their special values, dtypes and derivatives."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxfric._math import (
    block_dot,
    block_norm,
    cos,
    element_index,
    element_starts,
    sin,
    sincos,
)

_sincos = jax.jit(sincos)


def _errors(half_width, seed):
    """Errors of `sincos` on 5000 uniform arguments in ``[-half_width, half_width]``:
    ``(max ulp of the result, max absolute error)`` over sine and cosine."""
    x = np.random.default_rng(seed).uniform(-half_width, half_width, 5000)
    ulps, absolute = [], []
    for value, exact_fn in zip(_sincos(jnp.asarray(x)), (np.sin, np.cos), strict=True):
        exact = exact_fn(x.astype(np.longdouble))
        err = np.abs(np.asarray(value) - exact).astype(float)
        ulps.append(np.max(err / np.spacing(np.abs(exact).astype(float))))
        absolute.append(np.max(err))
    return max(ulps), max(absolute)


@pytest.mark.skipif(
    np.finfo(np.longdouble).eps >= np.finfo(np.float64).eps,
    reason="needs an extended-precision numpy.longdouble as the reference",
)
@pytest.mark.parametrize(
    ("half_width", "max_ulp", "max_abs"),
    [(1.0, 1.5, 2e-16), (1e3, 1.5, 2e-16), (1e6, 2.0, 2e-16), (2.0**40, None, 2e-16)],
)
def test_sincos_accuracy_against_extended_precision(half_width, max_ulp, max_abs):
    ulp, absolute = _errors(half_width, seed=int(np.log2(half_width)))
    # Far out only the absolute error means anything: ulp(x) is 1e-4 at 2^40.
    assert max_ulp is None or ulp <= max_ulp, (half_width, ulp)
    assert absolute <= max_abs, (half_width, absolute)


def test_sincos_exact_values_and_quadrants():
    # Multiples of π/2 land on the right quadrant with the right signs.
    k = np.arange(-8, 9)
    s, c = _sincos(jnp.asarray(k * np.pi / 2))
    np.testing.assert_allclose(np.asarray(s), np.sin(k * np.pi / 2), atol=1e-15)
    np.testing.assert_allclose(np.asarray(c), np.cos(k * np.pi / 2), atol=1e-15)
    s, c = _sincos(jnp.array([0.0, 1e-300]))
    assert np.asarray(s).tolist() == [0.0, 1e-300]
    assert np.asarray(c).tolist() == [1.0, 1.0]


def test_sincos_nan_outside_the_reduced_range():
    s, c = _sincos(jnp.array([np.nan, np.inf, -np.inf, 2.0**40 * 1.0001, -1e300]))
    assert np.all(np.isnan(np.asarray(s))) and np.all(np.isnan(np.asarray(c)))
    assert np.isfinite(float(sin(2.0**40)))


def test_sincos_other_dtypes_use_jax_numpy():
    x32 = jnp.linspace(-10.0, 10.0, 101, dtype=jnp.float32)
    s, c = sincos(x32)
    assert s.dtype == jnp.float32 and c.dtype == jnp.float32
    assert np.array_equal(np.asarray(s), np.asarray(jnp.sin(x32)))
    assert np.array_equal(np.asarray(c), np.asarray(jnp.cos(x32)))
    # Integers are promoted to JAX's default float.
    np.testing.assert_allclose(float(sin(3)), np.sin(3.0), rtol=1e-15)


def test_sincos_derivatives():
    x = jnp.linspace(-20.0, 20.0, 41)
    d_sin = jax.vmap(jax.grad(sin))(x)
    d_cos = jax.vmap(jax.grad(cos))(x)
    d2_sin = jax.vmap(jax.jacfwd(jax.grad(sin)))(x)
    np.testing.assert_allclose(np.asarray(d_sin), np.cos(np.asarray(x)), atol=3e-16)
    np.testing.assert_allclose(np.asarray(d_cos), -np.sin(np.asarray(x)), atol=3e-16)
    np.testing.assert_allclose(np.asarray(d2_sin), -np.sin(np.asarray(x)), atol=3e-16)
    # Reverse mode through a pair, under vmap.
    g = jax.vmap(jax.grad(lambda t: sincos(t)[0] * sincos(t)[1]))(x)
    np.testing.assert_allclose(np.asarray(g), np.cos(2 * np.asarray(x)), atol=1e-15)


def test_block_sums_over_elements_of_one_or_several_sizes():
    # Norms and dot products per friction element, repeated on its rows:
    # elements of one size (an int) or of their own sizes (a tuple).
    x = jnp.array([3.0, -2.0, 2.0, 1.0, 4.0, 0.0, 0.0])
    y = jnp.arange(7.0)
    np.testing.assert_allclose(
        block_norm(x, (1, 3, 1, 2))[0], [3.0, 3.0, 3.0, 3.0, 4.0, 0.0, 0.0]
    )
    assert block_norm(x, (1, 3, 1, 2))[1].tolist() == [True] * 5 + [False] * 2
    np.testing.assert_allclose(
        block_dot(x, y, (1, 3, 1, 2)), [0.0, 5.0, 5.0, 5.0, 16.0, 0.0, 0.0]
    )
    np.testing.assert_allclose(
        block_norm(x[:6], 2)[0], np.repeat([np.sqrt(13), np.sqrt(5), 4.0], 2)
    )
    assert element_index((1, 3, 1, 2), 7).tolist() == [0, 1, 1, 1, 2, 3, 3]
    assert element_starts((1, 3, 1, 2), 7).tolist() == [0, 1, 4, 5]
    assert element_starts(2, 4).tolist() == [0, 2]
    # The norm's gradient is finite where it is zero.
    assert np.all(
        np.isfinite(jax.grad(lambda v: block_norm(v, (2, 1))[0][0])(jnp.zeros(3)))
    )
    with pytest.raises(ValueError, match="multiple of 3"):
        block_norm(x, 3)
    with pytest.raises(
        ValueError, match=r"\(1, 3\) rows \(4 in all\) do not cover the 7"
    ):
        block_norm(x, (1, 3))
