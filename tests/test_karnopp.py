"""Karnopp's zero-velocity band and its fixed-step path (Karnopp 1985)."""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxfric as jf
from jaxfric.simulate._karnopp import karnopp_friction as _karnopp_friction

# Float64 rounding of closed-form forces and accelerations.
FORMULA_TOL = 1e-12
# Jacobian vs central finite differences of the fixed-step map (relative).
GRAD_RTOL = 1e-6
FD_STEP = 1e-5
DT = 1e-3  # the path's default step

OSC = jf.systems.Oscillator(mass=1.0, stiffness=1.0)
# Quinn / Farhat et al. 2010, Sec. 5.1: x'' + x = -f, Fc = 1, x(0) = 2.75,
# x'(0) = 0; exact Coulomb solution slides to x = -0.75 and sticks there from
# t = pi (|x| = 0.75 < Fc).
X0, X_STICK, T_STICK, FC = 2.75, -0.75, np.pi, 1.0
BANDS = (0.05, 0.01)
# Deceleration while stopping at x = -0.75: Fc + 0.75.
DECEL = FC + 0.75


# Jitted: eagerly the release loop would be dispatched op by op.
karnopp_friction = eqx.filter_jit(_karnopp_friction)


def test_force_is_karnopp_fig2():
    law = jf.Karnopp(dv=0.1, breakaway=1.5, slip_law=jf.Coulomb(1.0))
    v = jnp.array([0.05, -0.05, 0.0, 0.3, -0.2, 0.09])
    stick = jnp.array([0.4, 2.0, -3.0, 5.0, 5.0, -1.5])
    # Fig. 2(c): in the band the stick force limited to +-FH, outside F_slip(V).
    expected = [0.4, 1.5, -1.5, 1.0, -1.0, -1.5]
    np.testing.assert_allclose(law.force(v, stick), expected, atol=FORMULA_TOL)
    # Breakaway defaults to the slip law's own static level.
    law = jf.Karnopp(dv=0.1, breakaway=None, slip_law=jf.Coulomb(1.0, fs=1.2))
    np.testing.assert_allclose(law.static_limit(jnp.array([1.0, -1.0])), [1.2, 1.2])
    np.testing.assert_allclose(law.force(v, stick)[1], 1.2)
    # Outside the band any set-valued law, e.g. Stribeck, with direction sign(v).
    stribeck = jf.Stribeck(fc=1.0, fs=1.5, vs=0.1, fv=0.2)
    law = jf.Karnopp(dv=0.1, breakaway=None, slip_law=stribeck)
    outside = np.abs(np.asarray(v)) >= 0.1
    expected = stribeck.slip_force(v, jnp.sign(v))
    np.testing.assert_allclose(law.force(v, stick)[outside], expected[outside])


@pytest.mark.parametrize(
    "args, error, match",
    [
        ((0.0, None, jf.Coulomb(1.0)), ValueError, r"`dv` must lie in \(0.0, inf\]"),
        ((-1.0, None, jf.Coulomb(1.0)), ValueError, r"`dv` must lie in \(0.0"),
        ((0.1, -1.0, jf.Coulomb(0.0)), ValueError, r"`breakaway` must lie in \[0.0"),
        ((0.1, 0.5, jf.Coulomb(1.0)), ValueError, "`breakaway` must be >= "),
        ((np.full(3, 0.1), [1.0, 2.0], jf.Coulomb(0.5)), ValueError, "broadcast"),
        ((np.nan, None, jf.Coulomb(1.0)), ValueError, "`dv` must be finite"),
        ((0.1, None, jf.Kikuuwe(1.0, 1.0, 1.0)), TypeError, "`slip_law`"),
        ((0.1, None, 1.0), TypeError, "`slip_law`"),
    ],
)
def test_bad_parameters(args, error, match):
    with pytest.raises(error, match=match):
        jf.Karnopp(*args)


def test_relative_stick_force_is_karnopp_eq11():
    m1, m2, f1, f2 = 2.0, 3.0, 1.0, -0.5
    law = jf.Karnopp(dv=0.01, breakaway=2.0, slip_law=jf.Coulomb(1.0))
    # Two free masses, friction on their relative velocity (Karnopp Fig. 3).
    system = jf.systems.TwoMass(m1, m2)
    sol = jf.simulate(system, law, 0.0, 0.0, 1.0, force=jf.forces.Constant([f1, f2]))
    # m1 x1'' = F1 - f, m2 x2'' = F2 + f with x1'' = x2'': Karnopp Eq. 11 (his F2
    # points the other way).
    f_stick = (m2 * f1 - m1 * f2) / (m1 + m2)
    np.testing.assert_allclose(sol.friction[:, 0], f_stick, atol=FORMULA_TOL)
    # Both masses move together with (F1 + F2) / (m1 + m2); no relative creep.
    acc = (f1 + f2) / (m1 + m2)
    expected = np.outer(0.5 * acc * np.asarray(sol.ts) ** 2, [1.0, 1.0])
    np.testing.assert_allclose(sol.q, expected, rtol=1e-10, atol=FORMULA_TOL)
    assert np.all(sol.slip_velocity == 0.0) and np.all(sol.modes == 0)


def test_interacting_frictions_karnopp_sec4():
    m1, m2, f1, f2 = 1.0, 2.0, 0.8, 0.3
    # m1 sliding on m2 sliding on the ground, no springs (Karnopp Fig. 4).
    system = jf.systems.StackedBlocks(m1, m2)
    law = jf.Karnopp(dv=0.01, breakaway=jnp.array([1.0, 5.0]), slip_law=jf.Coulomb(0.5))
    q, qd = jnp.zeros(2), jnp.zeros(2)
    # Case (a), both stuck: Karnopp Eq. 15-16 without springs, f_r = F1,
    # f_f = F1 + F2 (our sign of F2).
    f, acc, qd_kin = karnopp_friction(system, law, q, qd, jnp.array([f1, f2]))
    np.testing.assert_allclose(f, [f1, f1 + f2], atol=FORMULA_TOL)
    np.testing.assert_allclose(acc, [0.0, 0.0], atol=FORMULA_TOL)
    # F1 beyond the relative breakaway 1.0: f_r is held at 1.0, m1 accelerates
    # by (F1 - 1)/m1, m2 stays stuck with f_f = F2 + 1 (Eq. 18 with F_r = FH).
    f1 = 3.0
    f, acc, _ = karnopp_friction(system, law, q, qd, jnp.array([f1, f2]))
    np.testing.assert_allclose(f, [1.0, f2 + 1.0], atol=FORMULA_TOL)
    np.testing.assert_allclose(acc, [(f1 - 1.0) / m1, 0.0], atol=FORMULA_TOL)
    # Momentum band: velocities inside the band give zero kinematic velocity.
    _, _, qd_kin = karnopp_friction(system, law, q, jnp.array([0.004, -0.003]), acc)
    np.testing.assert_allclose(qd_kin, [0.0, 0.0], atol=FORMULA_TOL)
    # Only the relative element in the band: m1 is carried with m2 (v1 = v2),
    # momentum m1 v1 + m2 v2 conserved.
    qd = jnp.array([0.5, 0.3])
    law = jf.Karnopp(dv=0.25, breakaway=jnp.array([1.0, 5.0]), slip_law=jf.Coulomb(0.5))
    _, _, qd_kin = karnopp_friction(system, law, q, qd, acc)
    v = (m1 * qd[0] + m2 * qd[1]) / (m1 + m2)
    np.testing.assert_allclose(qd_kin, [v, v], atol=FORMULA_TOL)


@eqx.filter_jit
def _oscillator(dv):
    law = jf.Karnopp(dv=dv, breakaway=None, slip_law=jf.Coulomb(FC))
    return jf.simulate(OSC, law, X0, 0.0, 10.0)


@pytest.fixture(scope="module")
def oscillator():
    return jax.vmap(_oscillator)(jnp.array(BANDS))


def test_oscillator_sticks_in_band(oscillator):
    sol = oscillator
    ts = np.asarray(sol.ts[0])
    stuck = ts >= T_STICK + 0.1
    errors = []
    for i, dv in enumerate(BANDS):
        q = np.asarray(sol.q[i, :, 0])
        # Entering the band freezes x up to the stopping distance dv^2/(2 a); the
        # start (x' = 0 is in the band) shifts the amplitude as much again; the
        # step adds at most dv * dt.
        error = abs(q[-1] - X_STICK)
        assert error <= dv**2 / DECEL + dv * DT
        errors.append(error)
        # Stuck: momentum slip velocity inside the band, kinematic velocity and
        # position change exactly zero (Karnopp's momentum band).
        assert np.all(np.abs(np.asarray(sol.friction_state[i, stuck, 0])) < dv)
        assert np.all(np.asarray(sol.qd[i, stuck, 0]) == 0.0)
        assert np.ptp(q[stuck]) == 0.0
        assert np.all(np.asarray(sol.modes[i, stuck, 0]) == 0)
        # At rest the friction balances the spring: f = -x.
        np.testing.assert_allclose(sol.friction[i, stuck, 0], -q[stuck], atol=1e-12)
        # Sliding backward before the stop: the kinetic level.
        sliding = (ts > 0.5) & (ts < T_STICK - 0.5)
        np.testing.assert_allclose(sol.friction[i, sliding, 0], -FC)
    assert errors[1] < errors[0]


def test_oscillator_solution_fields(oscillator):
    sol = oscillator
    assert sol.q.shape == (2, 1001, 1) and sol.force_state.shape == (2, 1001, 0)
    assert sol.event_times.shape == (2, 0)
    np.testing.assert_array_equal(sol.stats["num_steps"], [10000, 10000])
    np.testing.assert_array_equal(sol.stats["num_vf_evals"], [40000, 40000])
    assert np.all(np.asarray(sol.result._value) == jf.RESULTS.successful._value)


def _loss(params):
    x0, fc = params
    law = jf.Karnopp(dv=0.05, breakaway=None, slip_law=jf.Coulomb(fc))
    sol = jf.simulate(OSC, law, x0, 0.0, 4.0, num_save=41, dt0=2e-3)
    # Final (stuck) position plus the mean over the slip phase.
    return sol.q[-1, 0] + jnp.mean(sol.q[:, 0])


def test_gradient_matches_finite_differences(central_differences):
    """Through the slip phase, the band entry and the stick phase. The fixed-step
    map jumps by up to dv * dt where the entry step changes; the differences
    here stay on one side of such a jump."""
    params = jnp.array([X0, FC])
    value_and_grad = jax.jit(jax.value_and_grad(_loss))
    _, grad = value_and_grad(params)
    fd = central_differences(lambda p: value_and_grad(p)[0], params, FD_STEP)
    np.testing.assert_allclose(grad, fd, rtol=GRAD_RTOL)
    # Exact Coulomb: the stick position 2 Fc - x0 moves by -1 per x0, +2 per Fc.
    assert grad[0] < 0 and grad[1] > 0


def test_other_solvers_and_options():
    law = jf.Karnopp(dv=0.01, breakaway=None, slip_law=jf.Coulomb(FC))
    sol = jf.simulate(OSC, law, X0, 0.0, 0.1, solver=diffrax.Heun(), num_save=3)
    assert int(sol.stats["num_vf_evals"]) == 2 * 100
    # Sliding from rest (exact: 1 + 1.75 cos t); the position is frozen until the
    # band exit at t = dv / 1.75, which costs at most 1.75 (dv / 1.75)^2 / 2.
    error = abs(float(sol.q[-1, 0]) - (1 + 1.75 * np.cos(0.1)))
    assert error < 0.01**2 / (2 * DECEL) + 1e-6
    with pytest.raises(ValueError, match="explicit fixed-step solver"):
        jf.simulate(OSC, law, X0, 0.0, 1.0, solver=diffrax.Kvaerno5())
    unused = "`friction_state0` is not an option of the Karnopp path"
    with pytest.raises(ValueError, match=unused):
        jf.simulate(OSC, law, X0, 0.0, 1.0, friction_state0=0.0)
    with pytest.raises(ValueError, match=r"`dt0` must lie in \(0.0, inf\]"):
        jf.simulate(OSC, law, X0, 0.0, 1.0, dt0=0.0)


def test_fixed_steps_of_dt0_end_on_t1():
    """Steps of exactly dt0 and a shorter last one onto t1 (issue 13, item 4).

    Reference: explicit Euler written out for a free mass (no friction level)
    under a constant force F, on the steps dt0, ..., dt0, t1 - k·dt0. Before,
    diffrax's ConstantStepSize took dt0 once, then spread the rest evenly
    (0.3, 0.2, 0.25, 0.25 for dt0 = 0.3 on [0, 1]): a different answer.
    """
    free = jf.systems.Oscillator(mass=2.0, stiffness=0.0)
    law = jf.Karnopp(dv=1e-3, breakaway=None, slip_law=jf.Coulomb(0.0))
    force, x0, v0, horizon, dt0 = 0.7, 0.1, 0.5, 1.0, 0.3
    sol = jf.simulate(
        free,
        law,
        x0,
        v0,
        horizon,
        dt0=dt0,
        solver=diffrax.Euler(),
        force=jf.forces.Constant(force),
        num_save=3,
    )
    times = np.append(np.arange(0.0, horizon, dt0), horizon)
    q, v = x0, v0
    for h in np.diff(times):
        q, v = q + h * v, v + h * force / 2.0
    assert float(sol.ts[-1]) == horizon
    assert int(sol.stats["num_steps"]) == len(times) - 1
    np.testing.assert_allclose(sol.q[-1, 0], q, rtol=0, atol=FORMULA_TOL)
    # A step longer than the interval: before, RK4 with h = t1 - t0 = 10 gave
    # q(10) = 644.4 as a success.
    with pytest.raises(ValueError, match=r"`dt0` must lie in \(0, t1 - t0\]"):
        jf.simulate(OSC, law, X0, 0.0, 10.0, dt0=20.0)
