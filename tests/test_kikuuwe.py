"""Kikuuwe et al.'s friction law and its generalised-RK4 path (Kikuuwe & Yamamoto,
Eq. 14-21)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxfric as jf

# Float64 rounding of the short formulas of Eq. 14, 16 and 19.
FORMULA_TOL = 1e-12
# Position change over a stick phase: the law claims no drift at all.
DRIFT_TOL = 1e-12
# Jacobian vs central finite differences of the fixed-step map (relative).
GRAD_RTOL = 1e-6
FD_STEP = 1e-5

OSC = jf.systems.Oscillator(mass=1.0, stiffness=1.0)
# Quinn / Farhat et al. 2010, Sec. 5.1: x'' + x = -f, Fc = 1, x(0) = 2.75,
# x'(0) = 0; exact Coulomb solution slides to x = -0.75 and sticks there from
# t = pi (|x| = 0.75 < Fc).
X0, X_STICK, T_STICK, FC = 2.75, -0.75, np.pi, 1.0
STIFFNESSES = (1e3, 1e4)


def _viscosity(k):
    # Critical damping of the unit mass on the model spring: no force overshoot.
    return 2.0 * jnp.sqrt(k)


def _reference_z(k, b, f, v, e, tau):
    """Eq. 19 written out with Eq. 15 as an explicit branch (numpy, elementwise)."""
    force, rate = [], []
    for ki, bi, fi, vi, ei in zip(k, b, f, v, e, strict=True):
        x = (bi + tau * ki) * vi + ki * ei
        fo = x if abs(x) <= fi else fi * x / abs(x)
        force.append(fo)
        rate.append((fo - ki * ei) / (bi + tau * ki))
    return np.array(force), np.array(rate)


# Five elements: saturated forward, saturated backward, unsaturated, zero level,
# unsaturated at zero velocity.
K = np.array([1e3, 2e3, 5e2, 1e3, 4e3])
B = np.array([10.0, 5.0, 30.0, 1.0, 20.0])
F = np.array([1.0, 2.0, 3.0, 0.0, 1.5])
V = np.array([0.5, -0.7, 1e-3, 0.2, 0.0])
E = np.array([1e-3, -2e-4, 1e-3, 3e-4, -1e-4])
LAW = jf.Kikuuwe(k=K, b=B, f=F)


@pytest.mark.parametrize("tau", [0.0, 5e-4, 1e-3])
def test_force_map_matches_eq19(tau):
    f, rate = LAW.force_and_rate(E, V, tau)
    f_ref, rate_ref = _reference_z(K, B, F, V, E, tau)
    np.testing.assert_allclose(f, f_ref, rtol=FORMULA_TOL, atol=FORMULA_TOL)
    np.testing.assert_allclose(rate, rate_ref, rtol=FORMULA_TOL, atol=FORMULA_TOL)
    np.testing.assert_allclose(LAW.force(E, V, tau), f_ref, rtol=FORMULA_TOL)
    # The cases really cover both branches of gsat.
    assert np.any(np.abs(f_ref) == F) and np.any(np.abs(f_ref) < F)


def test_eq14_step_is_backward_euler_eq16():
    T = 1e-3
    f, e = LAW.discrete_step(E, V, T)
    f, e = np.asarray(f), np.asarray(e)
    e_rate = (e - E) / T
    # Eq. 16b: f(k) = K e(k) + B (e(k) - e(k-1)) / T.
    np.testing.assert_allclose(f, K * e + B * e_rate, rtol=1e-9, atol=FORMULA_TOL)
    # Eq. 16a: f(k) = F sgn(v(k) - (e(k) - e(k-1)) / T), sgn set-valued at 0 (Eq. 18).
    w = V - e_rate
    sliding = np.abs(w) > 1e-9
    np.testing.assert_allclose(f[sliding], F[sliding] * np.sign(w[sliding]))
    assert np.all(np.abs(f[~sliding]) <= F[~sliding] + FORMULA_TOL)
    assert np.any(sliding) and np.any(~sliding)
    # Eq. 20: Z(v, e(k-1); T) and e(k) = e(k-1) + T e' reproduce Eq. 14.
    f20, rate20 = LAW.force_and_rate(E, V, T)
    np.testing.assert_allclose(f20, f, rtol=FORMULA_TOL, atol=FORMULA_TOL)
    np.testing.assert_allclose(E + T * np.asarray(rate20), e, atol=FORMULA_TOL)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(k=0.0, b=1.0, f=1.0), r"`k` must lie in \(0.0, inf\]"),
        (dict(k=-1.0, b=1.0, f=1.0), r"`k` must lie in \(0.0, inf\]"),
        (dict(k=1.0, b=0.0, f=1.0), r"`b` must lie in \(0.0, inf\]"),
        (dict(k=1.0, b=1.0, f=-0.1), r"`f` must lie in \[0.0, inf\]"),
        (dict(k=1.0, b=1.0, f=np.nan), r"`f` must be finite"),
        (dict(k=[1.0, 2.0], b=[1.0, 2.0, 3.0], f=1.0), "do not broadcast"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        jf.Kikuuwe(**kwargs)


@eqx.filter_jit
def _oscillator(k, b):
    return jf.simulate(OSC, jf.Kikuuwe(k=k, b=b, f=FC), X0, 0.0, 10.0)


@pytest.fixture(scope="module")
def oscillator():
    ks = jnp.array(STIFFNESSES)
    return jax.vmap(_oscillator)(ks, _viscosity(ks))


def test_oscillator_sticks_at_coulomb_position_without_drift(oscillator):
    sol = oscillator
    ts = np.asarray(sol.ts[0])
    errors = []
    for i, k in enumerate(STIFFNESSES):
        q = np.asarray(sol.q[i, :, 0])
        e = np.asarray(sol.friction_state[i, :, 0])
        # The model spring spans -F/K (slip) to +F/K (stick): error <= 2 F / K.
        error = abs(q[-1] - X_STICK)
        assert error <= 2 * FC / k
        errors.append(error)
        settled = ts >= 5.0
        # No drift: the position is constant once the spring transient has decayed.
        assert np.ptp(q[settled]) <= DRIFT_TOL
        # Eq. 19 gives e' = v while unsaturated: the massless object p = x - e
        # (Fig. 1) does not move during the whole stick phase.
        stuck = ts >= T_STICK + 0.5
        assert np.ptp((q - e)[stuck]) <= DRIFT_TOL
        # At rest x'' = -x - f = 0: the reported force balances the spring.
        np.testing.assert_allclose(sol.friction[i, settled, 0], -q[settled], atol=1e-9)
        assert np.all(np.abs(np.asarray(sol.friction[i, :, 0])) <= FC + FORMULA_TOL)
    # The error falls as K grows (roughly as 1/K).
    assert errors[1] < errors[0] / 5


def test_oscillator_solution_fields(oscillator):
    sol = oscillator
    n = 1001
    assert sol.q.shape == (2, n, 1) and sol.qd.shape == (2, n, 1)
    assert sol.friction.shape == sol.slip_velocity.shape == (2, n, 1)
    assert sol.friction_state.shape == (2, n, 1) and sol.force_state.shape == (2, n, 0)
    assert sol.modes.dtype == jnp.int32
    np.testing.assert_array_equal(sol.modes, np.sign(sol.slip_velocity))
    assert sol.event_times.shape == (2, 0)
    np.testing.assert_array_equal(sol.stats["num_steps"], [10000, 10000])
    np.testing.assert_array_equal(sol.stats["num_vf_evals"], [40000, 40000])
    np.testing.assert_array_equal(sol.stats["num_rejected_steps"], [0, 0])
    assert np.all(np.asarray(sol.result._value) == jf.RESULTS.successful._value)


def _loss(params):
    x0, fc, k = params
    law = jf.Kikuuwe(k=k, b=60.0, f=fc)
    sol = jf.simulate(OSC, law, x0, 0.0, 4.0, num_save=41, dt0=2e-3)
    # Final (stuck) position plus the mean over the slip phase.
    return sol.q[-1, 0] + jnp.mean(sol.q[:, 0])


def test_gradient_matches_finite_differences(central_differences):
    params = jnp.array([X0, FC, 1e3])
    # One compiled function gives the gradient and the values for differences.
    value_and_grad = jax.jit(jax.value_and_grad(_loss))
    _, grad = value_and_grad(params)
    fd = central_differences(lambda p: value_and_grad(p)[0], params, FD_STEP)
    np.testing.assert_allclose(grad, fd, rtol=GRAD_RTOL)
    # Exact Coulomb: the stick position 2 Fc - x0 moves by -1 per x0, +2 per Fc.
    assert grad[0] < 0 and grad[1] > 0


def test_max_steps_gives_result_code():
    law = jf.Kikuuwe(k=1e3, b=60.0, f=FC)
    sol = jf.simulate(OSC, law, X0, 0.0, 1.0, max_steps=10, throw=False, num_save=3)
    assert sol.result == jf.RESULTS.max_steps_reached
    with pytest.raises(Exception, match="maximum number of solver steps"):
        jf.simulate(OSC, law, X0, 0.0, 1.0, max_steps=10, num_save=3)


def test_bad_path_options():
    law = jf.Kikuuwe(k=1e3, b=60.0, f=FC)
    import diffrax

    unused = "`solver` is not an option of the Kikuuwe path"
    with pytest.raises(ValueError, match=unused):
        jf.simulate(OSC, law, X0, 0.0, 1.0, solver=diffrax.Tsit5())
    with pytest.raises(ValueError, match=r"`dt0` must lie in \(0.0, inf\]"):
        jf.simulate(OSC, law, X0, 0.0, 1.0, dt0=-1e-3)
    # Before: cut silently to one step of t1 - t0.
    with pytest.raises(ValueError, match=r"`dt0` must lie in \(0, t1 - t0\]"):
        jf.simulate(OSC, law, X0, 0.0, 1.0, dt0=2.0)
    with pytest.raises(
        ValueError,
        match=r"`friction_state0` must have shape \(1,\) for the state of",
    ):
        jf.simulate(OSC, law, X0, 0.0, 1.0, friction_state0=np.zeros(3))
