"""Controllers (`PD`, `PID`, `ComputedTorque`): the control laws by hand, the PID
integrator state against the exact solution of the closed loop, and tracking."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

import jaxfric as jf
from jaxfric.forces import PD, PID, ComputedTorque, FourierSeries

# Simulations run at rtol = atol = 1e-10; exact references are closed forms.
_SIM_TOLERANCE = 1e-7
_TOLERANCE = 1e-13
_FRICTIONLESS = jf.friction.Regularized(jf.Coulomb(0.0), eps=1.0)


class _Quadratic(eqx.Module):
    """A tiny reference ``q_r(t) = a + b t + c t²/2`` with exact derivatives."""

    a: jax.Array
    b: jax.Array
    c: jax.Array

    def position(self, t):
        return self.a + self.b * t + 0.5 * self.c * t**2

    def velocity(self, t):
        return self.b + self.c * t

    def acceleration(self, t):
        return self.c + 0.0 * t


_REF = _Quadratic(jnp.array([0.5, -1.0]), jnp.array([0.2, 0.3]), jnp.array([1.0, 2.0]))


@jax.jit
def _laws(t, q, qd, x):
    """PD, PID and computed torque on the local reference, evaluated together."""
    pd = PD(_REF, kp=jnp.array([10.0, 20.0]), kd=3.0)
    pid = PID(_REF, kp=10.0, ki=4.0, kd=3.0)
    arm = jf.systems.TwoLinkArm(1.0, 0.8, 0.5, 0.4, 0.25, 0.2, 0.02, 0.01)
    ct = ComputedTorque(arm, _REF, kp=25.0, kd=10.0)
    return dict(
        pd=pd(t, q, qd),
        pid=pid.force(t, q, qd, x),
        pid_x0=pid.init_state(q, qd),
        pid_dx=pid.state_derivative(t, q, qd, x),
        ct=ct(t, q, qd),
        mass=arm.mass_matrix(q),
        bias=arm.bias_force(q, qd),
    )


def test_control_laws_by_hand():
    t, q, qd, x = (
        0.5,
        np.array([0.4, -0.7]),
        np.array([0.1, 0.9]),
        np.array([2.0, -1.0]),
    )
    out = _laws(t, jnp.asarray(q), jnp.asarray(qd), jnp.asarray(x))
    q_r = np.array([0.5 + 0.1 + 0.125, -1.0 + 0.15 + 0.25])
    qd_r = np.array([0.2 + 0.5, 0.3 + 1.0])
    e, de = q_r - q, qd_r - qd
    np.testing.assert_allclose(out["pd"], [10, 20] * e + 3 * de, atol=_TOLERANCE)
    np.testing.assert_allclose(out["pid"], 10 * e + 4 * x + 3 * de, atol=_TOLERANCE)
    np.testing.assert_array_equal(out["pid_x0"], [0.0, 0.0])
    np.testing.assert_allclose(out["pid_dx"], e, atol=_TOLERANCE)
    qdd = np.array([1.0, 2.0]) + 10 * de + 25 * e
    expected = np.asarray(out["mass"]) @ qdd + np.asarray(out["bias"])
    np.testing.assert_allclose(out["ct"], expected, atol=_TOLERANCE)


def test_pid_integrator_matches_exact_closed_loop():
    """Mass–spring–damper under PID to a constant reference r (frictionless):
    ``y = (x, v, z)``, ``ẏ = A y + b`` with ``ż = r − x`` is linear, so
    ``y(t) = e^{At} y0 + A⁻¹ (e^{At} − I) b`` exactly."""
    m, k, c = 2.0, 3.0, 0.5
    kp, ki, kd, r = 40.0, 40.0, 24.0, 0.7
    reference = FourierSeries(a=[0.0], b=[0.0], omega=1.0, offset=r)
    system = jf.systems.Oscillator(mass=m, stiffness=k, damping=c)
    ts = np.linspace(0.0, 4.0, 9)
    sol = jf.simulate(
        system,
        _FRICTIONLESS,
        q0=0.2,
        qd0=-0.5,
        t1=4.0,
        ts=ts,
        force=PID(reference, kp=kp, ki=ki, kd=kd),
        rtol=1e-10,
        atol=1e-10,
    )
    a = np.array([[0, 1, 0], [-(k + kp) / m, -(c + kd) / m, ki / m], [-1, 0, 0]])
    b = np.array([0.0, kp * r / m, r])
    y0 = np.array([0.2, -0.5, 0.0])
    exact = []
    for t in ts:
        expm = scipy.linalg.expm(a * t)
        exact.append(expm @ y0 + np.linalg.solve(a, (expm - np.eye(3)) @ b))
    exact = np.array(exact)
    np.testing.assert_allclose(sol.q[:, 0], exact[:, 0], atol=_SIM_TOLERANCE)
    np.testing.assert_allclose(sol.qd[:, 0], exact[:, 1], atol=_SIM_TOLERANCE)
    np.testing.assert_allclose(sol.force_state[:, 0], exact[:, 2], atol=_SIM_TOLERANCE)
    # The integrator removes the spring's steady-state offset: q -> r.
    assert abs(sol.q[-1, 0] - r) < 2e-3


def test_computed_torque_tracks_with_prescribed_error_dynamics():
    """On the exact frictionless model the error obeys ``ë + kd ė + kp e = 0``;
    with ``kp = 25``, ``kd = 10`` (critically damped, rate 5/s)
    ``e(t) = (e0 + (ė0 + 5 e0) t) e^{−5t}``: the arm converges to its reference."""
    arm = jf.systems.TwoLinkArm(1.0, 0.8, 0.5, 0.4, 0.25, 0.2, 0.02, 0.01)
    reference = FourierSeries(
        a=[[0.5, -0.3], [0.2, 0.4]], b=[[0.1, 0.0], [-0.2, 0.3]], omega=2.0
    )
    q0, qd0 = np.array([0.3, -0.4]), np.array([0.0, 0.5])
    ts = np.linspace(0.0, 2.0, 11)
    sol = jf.simulate(
        arm,
        _FRICTIONLESS,
        q0=q0,
        qd0=qd0,
        t1=2.0,
        ts=ts,
        force=ComputedTorque(arm, reference, kp=25.0, kd=10.0),
        rtol=1e-10,
        atol=1e-10,
    )
    e0 = np.asarray(reference.position(0.0)) - q0
    de0 = np.asarray(reference.velocity(0.0)) - qd0
    exact = (e0 + np.outer(ts, de0 + 5 * e0)) * np.exp(-5 * ts)[:, None]
    positions = np.array([reference.position(t) for t in ts])
    np.testing.assert_allclose(positions - sol.q, exact, atol=_SIM_TOLERANCE)
    assert np.max(np.abs(positions[-1] - sol.q[-1])) < 1e-3


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: PD(_REF, kp=-1.0, kd=1.0), "`kp` must lie in"),
        (lambda: PID(_REF, kp=1.0, ki=-1.0, kd=0.0), "`ki` must lie in"),
        (lambda: PID(_REF, kp=1.0, ki=1.0, kd=[1.0, -2.0]), "`kd` must lie in"),
        (lambda: PD(_REF, kp=[1.0, 2.0], kd=[1.0, 2.0, 3.0]), "do not broadcast"),
        (
            lambda: ComputedTorque(jf.systems.Oscillator(1.0, 1.0), _REF, 1.0, -1.0),
            "`kd` must lie in",
        ),
    ],
)
def test_gain_validation(make, match):
    with pytest.raises(ValueError, match=match):
        make()
