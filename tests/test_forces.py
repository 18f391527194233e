"""Applied forces against their formulas; Fourier-series derivatives against
autodiff and finite differences; tabulated interpolation against numpy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxfric as jf

# Closed-form evaluations in float64: agreement to rounding.
_TOLERANCE = 1e-12
# Central differences with step 1e-5 on O(1) smooth signals: truncation ~h² ~1e-10.
_FD_TOLERANCE = 1e-7

_Q = jnp.zeros(2)


def _close(a, b, tol=_TOLERANCE):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def test_constant_and_function_force():
    _close(jf.forces.Constant([1.0, -2.0])(0.3, _Q, _Q), [1.0, -2.0])
    fn = jf.forces.FunctionForce(lambda t, q, qd: t * (q + 1.0) - qd)
    _close(fn(2.0, jnp.array([0.5, 1.0]), jnp.array([0.1, 0.2])), [2.9, 3.8])


def test_callable_closing_over_a_traced_value():
    # `simulate` closure-converts a plain callable: a value it closes over that
    # is traced (here by `grad`) is an input of the solve, so the derivative of
    # an event time reaches it. Without the conversion this raised "No constant
    # handler for type LinearizeTracer". Closed form: from rest the mass is
    # stuck until a·sin(2t) reaches fs = 1, t* = arcsin(1/a)/2, so
    # dt*/da = −1/(2a·sqrt(a² − 1)).
    system = jf.systems.Oscillator(mass=1.0, stiffness=1.0)

    @jax.jit
    @jax.value_and_grad
    def breakaway(a):
        force = lambda t, q, qd: a * jnp.sin(2.0 * t)  # noqa: E731
        sol = jf.simulate(system, jf.Coulomb(1.0), 0.0, 0.0, 1.0, force=force)
        return sol.event_times[0]

    a = 1.5
    t_star, grad = breakaway(a)
    np.testing.assert_allclose(t_star, np.arcsin(1 / a) / 2, rtol=1e-9)
    np.testing.assert_allclose(grad, -1 / (2 * a * np.sqrt(a**2 - 1)), rtol=1e-7)


def test_sine_formula():
    force = jf.forces.Sine(amplitude=[1.5, -0.5], omega=2.0, phase=0.3, offset=0.1)
    for t in (0.0, 0.7, 3.2):
        expected = 0.1 + np.array([1.5, -0.5]) * np.sin(2.0 * t + 0.3)
        _close(force(t, _Q, _Q), expected)
    # Differentiable in its parameters: d τ/d omega = A t cos(ω t + φ).
    grad = jax.grad(lambda w: jf.forces.Sine(1.5, w, 0.3)(0.7, _Q, _Q))(2.0)
    _close(grad, 1.5 * 0.7 * np.cos(2.0 * 0.7 + 0.3))


def test_sine_stateless_interface():
    force = jf.forces.Sine(amplitude=1.0, omega=1.0)
    state = force.init_state(_Q, _Q)
    assert state.shape == (0,)
    _close(force.force(0.5, _Q, _Q, state), np.sin(0.5))


_A = np.array([[0.8, -0.3], [0.2, 0.5], [-0.1, 0.05]])
_B = np.array([[0.1, 0.4], [-0.25, 0.0], [0.3, -0.2]])
_W = 1.3
_OFFSET = np.array([0.2, -0.4])


def _fourier():
    return jf.forces.FourierSeries(a=_A, b=_B, omega=_W, offset=_OFFSET)


def test_fourier_position_formula():
    # Swevers et al. 1997 finite Fourier series, summed by hand in numpy.
    t = 0.83
    ell = np.arange(1, 4)[:, None]
    expected = _OFFSET + np.sum(
        _A / (ell * _W) * np.sin(ell * _W * t) - _B / (ell * _W) * np.cos(ell * _W * t),
        axis=0,
    )
    _close(_fourier().position(t), expected)
    _close(_fourier()(t, _Q, _Q), expected)
    # Periodic with period 2π/ω.
    _close(_fourier().position(t + 2 * np.pi / _W), expected, tol=1e-10)


@pytest.mark.parametrize("t", [0.0, 0.83, 4.1])
def test_fourier_derivatives(t):
    fs = _fourier()
    _close(jax.jacfwd(fs.position)(t), fs.velocity(t))
    _close(jax.jacfwd(fs.velocity)(t), fs.acceleration(t))
    h = 1e-5
    fd_vel = (fs.position(t + h) - fs.position(t - h)) / (2 * h)
    fd_acc = (fs.velocity(t + h) - fs.velocity(t - h)) / (2 * h)
    _close(fs.velocity(t), fd_vel, tol=_FD_TOLERANCE)
    _close(fs.acceleration(t), fd_acc, tol=_FD_TOLERANCE)


def test_fourier_one_coordinate():
    fs = jf.forces.FourierSeries(a=[1.0, 0.5], b=[0.0, 0.2], omega=2.0)
    t = 0.4
    expected = (
        1.0 / 2.0 * np.sin(2.0 * t)
        + 0.5 / 4.0 * np.sin(4.0 * t)
        - 0.2 / 4.0 * np.cos(4.0 * t)
    )
    assert fs.position(t).shape == ()
    _close(fs.position(t), expected)


_TS = np.array([0.0, 0.4, 1.1, 1.5, 2.6])
_VALUES = np.array([[0.0, 1.0], [2.0, -1.0], [1.5, 0.5], [-0.5, 0.2], [1.0, 3.0]])
_QUERY = np.array([-0.5, 0.0, 0.2, 0.4, 0.9, 1.1, 1.49, 2.0, 2.6, 3.5])


def test_tabulated_linear_matches_numpy_interp():
    force = jf.forces.Tabulated(_TS, _VALUES)
    got = jax.vmap(lambda t: force(t, _Q, _Q))(jnp.asarray(_QUERY))
    for col in range(2):
        _close(got[:, col], np.interp(_QUERY, _TS, _VALUES[:, col]))
    scalar = jf.forces.Tabulated(_TS, _VALUES[:, 0])
    _close(
        jax.vmap(lambda t: scalar(t, _Q, _Q))(jnp.asarray(_QUERY)),
        np.interp(_QUERY, _TS, _VALUES[:, 0]),
    )


def test_tabulated_previous_is_zero_order_hold():
    force = jf.forces.Tabulated(_TS, _VALUES[:, 1], kind="previous")
    got = jax.vmap(lambda t: force(t, _Q, _Q))(jnp.asarray(_QUERY))
    # Last sample at or before t, first sample before the table (independent
    # index search in numpy).
    idx = np.clip(np.searchsorted(_TS, _QUERY, side="right") - 1, 0, len(_TS) - 1)
    _close(got, _VALUES[idx, 1])


def test_tabulated_gradient_wrt_values():
    # Linear interpolation is linear in the samples: d τ(t)/d values = hat weights.
    t = 0.9
    grad = jax.grad(lambda v: jf.forces.Tabulated(_TS, v)(t, _Q, _Q))(
        jnp.asarray(_VALUES[:, 0])
    )
    w = (t - 0.4) / (1.1 - 0.4)
    _close(grad, [0.0, 1.0 - w, w, 0.0, 0.0])


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: jf.forces.Sine(1.0, -1.0), r"`omega` must lie in \[0.0, inf\]"),
        (lambda: jf.forces.Sine(float("inf"), 1.0), r"`amplitude` must be finite"),
        (lambda: jf.forces.Sine(np.ones((2, 2)), 1.0), r"one entry per coordinate"),
        (lambda: jf.forces.Sine([1.0, 2.0], [1.0, 2.0, 3.0]), r"do not broadcast"),
        (
            lambda: jf.forces.FourierSeries([1.0], [1.0], omega=0.0),
            r"`omega` must lie in \(0.0, inf\]",
        ),
        (
            lambda: jf.forces.FourierSeries([1.0, 2.0], [1.0], omega=1.0),
            r"`b` must have the shape of `a`",
        ),
        (
            lambda: jf.forces.FourierSeries([float("nan")], [1.0], omega=1.0),
            r"`a` must be finite",
        ),
        (
            lambda: jf.forces.FourierSeries(
                np.ones((2, 2)), np.ones((2, 2)), 1.0, [0, 1, 2]
            ),
            r"do not broadcast",
        ),
        (
            lambda: jf.forces.Tabulated([0.0, 1.0, 1.0], [1.0, 2.0, 3.0]),
            r"`ts` must be strictly increasing",
        ),
        (
            lambda: jf.forces.Tabulated([0.0, 1.0, 2.0], [1.0, 2.0]),
            r"`values` must have shape \(T,\) or \(T, n\) with T = len\(ts\) = 3",
        ),
        (
            lambda: jf.forces.Tabulated([0.0, 1.0], [1.0, float("inf")]),
            r"`values` must be finite",
        ),
        (lambda: jf.forces.Tabulated([0.0], [1.0]), r"at least 2 samples"),
        (
            lambda: jf.forces.Tabulated([0.0, 1.0], [1.0, 2.0], kind="cubic"),
            r"`kind` must be one of",
        ),
    ],
)
def test_force_validation(build, match):
    with pytest.raises(ValueError, match=match):
        build()
