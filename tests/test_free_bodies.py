"""Free rigid bodies (unit quaternions), penalty contact with a plane and
Kikuuwe's friction with a normal force (Kikuuwe & Yamamoto 2008, Eq. 22–26)."""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import jaxfric as jf
from jaxfric.friction import Kikuuwe, gsat
from jaxfric.systems import (
    FreeBodies,
    PlaneContact,
    quaternion_rate,
    quaternion_to_matrix,
)

G = 9.8
# Kikuuwe & Yamamoto, Sec. IV-A: solid spheres, K = 1e5 N/m, B = 10 N·s/m.
MASS, RADIUS, K, B = 0.3, 0.2, 1e5, 10.0
FORWARD = diffrax.ForwardMode()


def _spheres(mus):
    n = len(mus)
    system = FreeBodies(
        [MASS] * n,
        [[0.4 * MASS * RADIUS**2] * 3] * n,
        gravity=(0.0, 0.0, -G),
        contact=PlaneContact(RADIUS, K, B),
    )
    law = Kikuuwe(k=K, b=B, mu=jnp.repeat(jnp.asarray(mus, float), 2), dims=2)
    return system, law


def _sphere_start(velocities):
    """Spheres side by side, level attitude, at the static penetration m g / K
    (Sec. IV-A drops them from 1.01 R: they bounce, and the normal force's
    mean is m g only over the bounces; see experiments/kikuuwe_sphere.py)."""
    height = RADIUS - MASS * G / K
    q0 = [[3.0 * b, 0.0, height, 1.0, 0.0, 0.0, 0.0] for b in range(len(velocities))]
    qd0 = [[*v, 0.0, 0.0, 0.0] for v in velocities]
    return jnp.asarray(q0, float).ravel(), jnp.asarray(qd0, float).ravel()


def _simulate_spheres(mus, velocities, t1, num_save):
    system, law = _spheres(mus)
    q0, qd0 = _sphere_start(velocities)
    return jf.simulate(
        system,
        law,
        q0=q0,
        qd0=qd0,
        t1=t1,
        dt0=1e-4,
        num_save=num_save,
        max_steps=20_000,
    )


@pytest.fixture(scope="module")
def rolling():
    """Two spheres, μ = 0.1 sliding along x at 2 m/s and μ = 0.2 along y at
    1 m/s, 1 s with Kikuuwe's RK4 at T = 1e-4 s (the paper's setting)."""
    return _simulate_spheres((0.1, 0.2), ((2.0, 0.0, 0.0), (0.0, 1.0, 0.0)), 1.0, 10001)


def test_spheres_reach_pure_rolling_at_the_closed_form_time(rolling):
    # Solid sphere, constant slip direction: the contact point's speed falls as
    # v0 − (7/2) μ g t, so rolling starts at t = 2 v0 / (7 μ g) (Kikuuwe &
    # Yamamoto: "reaches zero at t = 0.58 s" for v0 = 2, μ = 0.1) with the
    # centre at 5 v0 / 7.
    assert rolling.result == jf.RESULTS.successful
    ts = np.asarray(rolling.ts)
    slip = np.asarray(rolling.slip_velocity)
    for body, (v0, row, mu) in enumerate(((2.0, 0, 0.1), (1.0, 1, 0.2))):
        # The first zero of the contact point's speed, interpolated between
        # steps (afterwards Kikuuwe's spring rings about zero and decays).
        speed = slip[:, 2 * body + row]
        i = np.argmax(speed <= 0)
        t_roll = ts[i - 1] + (ts[i] - ts[i - 1]) * speed[i - 1] / (
            speed[i - 1] - speed[i]
        )
        assert t_roll == pytest.approx(2 * v0 / (7 * mu * G), abs=1e-6)
        centre = np.asarray(rolling.qd)[-1, 6 * body + row]
        assert centre == pytest.approx(5 * v0 / 7, rel=1e-9)
        # Rolling is held afterwards: the contact point's slip decays with
        # the spring-damper's transient (rate about B / (2m/7) = 117 1/s) to
        # rounding, not to a creep (Kikuuwe's anchor holds while |f| < μN).
        late = ts > t_roll + 0.3
        assert np.max(np.abs(slip[late, 2 * body : 2 * body + 2])) < 1e-12
    # The quaternions stay unit (the rate keeps the norm; RK4 drifts by rounding).
    quats = np.asarray(rolling.q).reshape(len(ts), 2, 7)[:, :, 3:]
    assert np.max(np.abs(np.linalg.norm(quats, axis=2) - 1)) < 1e-12
    # The spheres rest on the plane at the static penetration m g / K.
    heights = np.asarray(rolling.q)[-1, [2, 9]]
    np.testing.assert_allclose(heights, RADIUS - MASS * G / K, rtol=0, atol=1e-7)


def test_gradient_in_slip_matches_central_differences():
    # d v_x(t)/d μ while slipping: about −(g t) (the mean normal force is m g),
    # exactly what central differences of the same discretisation give.
    def speed(mu):
        sol = _simulate_spheres((mu,), ((2.0, 0.0, 0.0),), 0.3, 2)
        return sol.qd[-1, 0]

    mu, h = 0.1, 1e-6
    grad = jax.grad(speed)(mu)
    central = (speed(mu + h) - speed(mu - h)) / (2 * h)
    assert grad == pytest.approx(float(central), rel=1e-6)
    assert grad == pytest.approx(-G * 0.3, rel=0.02)


def test_torque_free_body_matches_eulers_equations_in_the_body_frame():
    # An asymmetric body in free flight: jaxfric's world-frame Newton–Euler
    # with a quaternion against scipy's body-frame Euler equations with a
    # rotation matrix (an independent formulation), and the parabola.
    inertia = np.diag([0.01, 0.02, 0.035])
    system = FreeBodies(2.0, inertia, gravity=(0.0, 0.0, -9.81))
    angle = 0.3
    quat0 = np.array([np.cos(angle), 0.6 * np.sin(angle), 0.0, 0.8 * np.sin(angle)])
    rot0 = np.asarray(quaternion_to_matrix(jnp.asarray(quat0)))
    omega_body0 = np.array([0.3, 4.0, 0.5])  # near the unstable middle axis
    q0 = jnp.asarray(np.concatenate([[0.1, 0.2, 0.3], quat0]))
    qd0 = jnp.asarray(np.concatenate([[1.0, -0.5, 3.0], rot0 @ omega_body0]))
    sol = jf.simulate(
        system, Kikuuwe(k=1.0, b=1.0, f=0.0), q0=q0, qd0=qd0, t1=2.0, dt0=1e-3
    )

    def euler(t, y):
        w, rot = y[:3], y[3:].reshape(3, 3)
        dw = np.linalg.solve(inertia, -np.cross(w, inertia @ w))
        skew = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
        return np.concatenate([dw, (rot @ skew).ravel()])

    y0 = np.concatenate([omega_body0, rot0.ravel()])
    ref = solve_ivp(euler, (0, 2), y0, method="DOP853", rtol=1e-12, atol=1e-12)
    omega_body, rot = ref.y[:3, -1], ref.y[3:, -1].reshape(3, 3)
    q, qd = np.asarray(sol.q[-1]), np.asarray(sol.qd[-1])
    np.testing.assert_allclose(quaternion_to_matrix(q[3:]), rot, atol=1e-10)
    np.testing.assert_allclose(qd[3:], rot @ omega_body, atol=1e-9)
    centre = q0[:3] + 2.0 * qd0[:3] + 0.5 * 4.0 * np.array([0.0, 0.0, -9.81])
    np.testing.assert_allclose(q[:3], centre, atol=1e-12)
    assert abs(np.linalg.norm(q[3:]) - 1) < 1e-13


def test_quaternion_rate_is_the_derivative_of_the_rotation():
    quat = jnp.array([0.8, 0.1, -0.5, 0.3])
    quat = quat / jnp.linalg.norm(quat)
    omega = jnp.array([0.4, -1.2, 2.0])
    rate = quaternion_rate(quat, omega)
    assert float(quat @ rate) == pytest.approx(0.0, abs=1e-15)
    # Ṙ = [ω]× R for an angular velocity in the world frame.
    dot = jax.jvp(quaternion_to_matrix, (quat,), (rate,))[1]
    rot = quaternion_to_matrix(quat)
    np.testing.assert_allclose(dot, jnp.cross(omega[:, None], rot, axis=0), atol=1e-14)
    np.testing.assert_allclose(rot @ rot.T, np.eye(3), atol=1e-15)


def test_vector_gsat_saturates_the_norm():
    x = jnp.array([3.0, 4.0, 0.1, 0.2, 0.0, 0.0])
    out = gsat(jnp.array([1.0, 1.0, 1.0, 1.0, 2.0, 2.0]), x, dims=2)
    np.testing.assert_allclose(out, [0.6, 0.8, 0.1, 0.2, 0.0, 0.0], atol=1e-15)
    np.testing.assert_array_equal(gsat(0.5, x), jnp.clip(x, -0.5, 0.5))
    # Finite gradients at zero slip (the norm's own is undefined there).
    jac = jax.jacobian(lambda x: gsat(1.0, x, dims=2))(jnp.zeros(2))
    np.testing.assert_array_equal(jac, np.eye(2))
    with pytest.raises(ValueError, match="multiple of 2"):
        gsat(1.0, jnp.ones(3), dims=2)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="mass"):
        FreeBodies(-1.0, [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="positive definite"):
        FreeBodies(1.0, [1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match="contact stiffness"):
        FreeBodies(1.0, [1.0, 1.0, 1.0], contact=PlaneContact(RADIUS, 0.0, B))
    with pytest.raises(ValueError, match="contact radius"):
        FreeBodies(1.0, [1.0, 1.0, 1.0], contact=PlaneContact(-0.1, K, B))
    with pytest.raises(ValueError, match="`f`.*`mu`"):
        Kikuuwe(k=K, b=B)
    with pytest.raises(ValueError, match="`f`.*`mu`"):
        Kikuuwe(k=K, b=B, f=1.0, mu=0.1)
    with pytest.raises(ValueError, match="mu"):
        Kikuuwe(k=K, b=B, mu=-0.1, dims=2)
    system, law = _spheres((0.1,))
    q0, qd0 = _sphere_start(((1.0, 0.0, 0.0),))
    # Every path integrates quaternion rates; Karnopp's band (per row) slips
    # the contact at v0 − 3.5 μ g t.
    karnopp = jf.Karnopp(dv=1e-3, breakaway=None, slip_law=jf.Coulomb(0.1 * MASS * G))
    sol = jf.simulate(system, karnopp, q0=q0, qd0=qd0, t1=0.1, dt0=1e-3)
    assert float(sol.slip_velocity[-1, 0]) == pytest.approx(
        1.0 - 0.35 * G * 0.1, rel=1e-9
    )
    with pytest.raises(ValueError, match=r"shape \(7,\) for a system with n_coord=7"):
        jf.simulate(system, law, q0=qd0, qd0=qd0, t1=0.1, dt0=1e-4)
    # A friction coefficient needs normal forces.
    osc = jf.systems.Oscillator(mass=1.0, stiffness=1.0)
    with pytest.raises(NotImplementedError, match="normal forces"):
        jf.simulate(osc, Kikuuwe(k=K, b=B, mu=0.1), q0=1.0, qd0=0.0, t1=0.1)
    # Without a contact there are no friction rows.
    free = FreeBodies(1.0, [1.0, 1.0, 1.0], contact=None)
    assert free.n_friction == 0 and free.n_coord == 7 and free.n_dof == 6


# Exact isotropic Coulomb friction on the switch path.


class _Push(jf.forces.AbstractStatelessForce):
    """``(f, τ) = constant + rate·t`` on the body, N and N·m (world frame)."""

    constant: jax.Array
    rate: jax.Array

    def __call__(self, t, q, qd):
        return self.constant + self.rate * t


def _push(constant=(0.0, 0.0), rate=(0.0, 0.0)):
    pad = [0.0] * 4
    return _Push(jnp.asarray([*constant, *pad]), jnp.asarray([*rate, *pad]))


def _exact(mu, mu_s, v0, force, t1=1.0, arms=None):
    """One sphere resting on the plane (static penetration), exact law; every
    call has the same structure (but `arms`), so the tests share one
    compilation."""
    system, _ = _spheres((mu,))
    law = jf.friction.IsotropicCoulomb(mu=mu, mu_s=mu_s, arms=arms)
    q0, qd0 = _sphere_start((v0,))
    return jf.simulate(system, law, q0=q0, qd0=qd0, t1=t1, num_save=101, force=force)


def test_exact_sphere_rolls_at_the_closed_form_time_and_holds_exactly():
    mu, v0 = 0.1, 2.0
    sol = _exact(mu, mu, (v0, 0.0, 0.0), _push())
    assert sol.result == jf.RESULTS.successful
    t_roll = 2 * v0 / (7 * mu * G)
    assert int(sol.stats["num_events"]) == 1
    assert float(sol.event_times[0]) == pytest.approx(t_roll, abs=1e-12)
    # Slipping: f = μN along the slip, N = m g to 1e-11 (the penalty spring
    # rings at rounding level); rolling: no force, modes stuck.
    ts = np.asarray(sol.ts)
    before, after = ts < t_roll, ts > t_roll
    np.testing.assert_allclose(sol.friction[before, 0], mu * MASS * G, rtol=1e-9)
    assert np.all(np.asarray(sol.modes)[after] == 0)
    # The contact point's slip is projected to zero at the stop and held by
    # the stick solve: rounding, no creep (it does not grow).
    slip = np.abs(np.asarray(sol.slip_velocity)[after])
    assert np.max(slip) < 1e-15
    x_roll = v0 * t_roll - 0.5 * mu * G * t_roll**2
    x1 = x_roll + 5 * v0 / 7 * (1.0 - t_roll)
    assert float(sol.q[-1, 0]) == pytest.approx(x1, abs=1e-13)


def test_exact_sphere_batch_under_vmap():
    # A batch over μ rolls at each member's own closed-form time.
    mus = jnp.array([0.1, 0.25])
    sols = jax.vmap(lambda mu: _exact(mu, mu, (2.0, 0.0, 0.0), _push()))(mus)
    assert np.all(np.asarray(sols.result._value) == jf.RESULTS.successful._value)
    t_roll = 4.0 / (7 * np.asarray(mus) * G)
    np.testing.assert_allclose(sols.event_times[:, 0], t_roll, rtol=0, atol=1e-12)
    np.testing.assert_allclose(sols.qd[:, -1, 0], 10.0 / 7, rtol=1e-12)


def test_exact_breakaway_under_a_ramp_and_slip_along_the_push():
    # A horizontal push k·t at 30° on the centre: rolling needs the friction
    # (2/7)·k·t (solid sphere), which reaches μs·m g at t = 3.5 μs m g / k;
    # then the contact slips along the push (isotropic Delassus matrix).
    mu, mu_s, k, angle = 0.1, 0.15, 2.0, np.pi / 6
    direction = (np.cos(angle), np.sin(angle))
    sol = _exact(mu, mu_s, (0.0, 0.0, 0.0), _push(rate=tuple(k * np.array(direction))))
    assert sol.result == jf.RESULTS.successful
    t_break = 3.5 * mu_s * MASS * G / k
    assert float(sol.event_times[0]) == pytest.approx(t_break, abs=1e-11)
    ts = np.asarray(sol.ts)
    stuck = ts < t_break
    assert np.all(np.asarray(sol.modes)[stuck] == 0)
    # Rolling while pushed: the stick solve holds the contact's slip at
    # rounding of the growing velocities (no coordinate is pinned by a
    # contact row, unlike a joint's), with no drift that outgrows it.
    assert np.max(np.abs(np.asarray(sol.slip_velocity)[stuck])) < 1e-14
    slip = np.asarray(sol.slip_velocity)[ts > t_break + 0.05]
    unit = slip / np.linalg.norm(slip, axis=1)[:, None]
    np.testing.assert_allclose(unit, np.broadcast_to(direction, slip.shape), atol=1e-12)


def test_exact_slip_turning_past_a_right_angle_matches_scipy():
    # A constant push at the centre against the slip: the contact point obeys
    # v̇ = F/m − (7/2) μ g v/|v| (solid sphere), whose direction turns past
    # 90° from the start (a direction event) and never stops (|F|/m > 3.5μg).
    mu, accel, v0 = 0.2, np.array([-8.0, 5.0]), 2.0
    sol = _exact(mu, mu, (v0, 0.0, 0.0), _push(constant=tuple(MASS * accel)))
    assert sol.result == jf.RESULTS.successful
    assert int(sol.stats["num_events"]) >= 1
    assert np.all(np.asarray(sol.modes) == 1)

    def contact(t, v):
        return accel - 3.5 * mu * G * v / np.linalg.norm(v)

    ts = np.asarray(sol.ts)
    ref = solve_ivp(contact, (0, ts[-1]), [v0, 0.0], t_eval=ts, method="DOP853",
                    rtol=1e-12, atol=1e-12)  # fmt: skip
    np.testing.assert_allclose(np.asarray(sol.slip_velocity), ref.y.T, atol=1e-9)
    turned = np.asarray(sol.slip_velocity)[-1] @ np.array([1.0, 0.0]) < 0
    assert turned


def test_exact_elliptic_friction_matches_scipy():
    # Anisotropic friction in the contact plane (MotionSolve Comment 8's
    # ellipse, maximum dissipation): μ_x = 0.2, μ_y = 0.1 as μ = 0.2 with arms
    # (1, 1/2): while slipping f = N (μ_x² v_x, μ_y² v_y)/|(μ_x v_x, μ_y v_y)|,
    # so the contact point of a solid sphere obeys v̇ = −(7/2)(f/m), its slip
    # turning towards the y axis as it slows, until it stops and rolls.
    mu, arms, v0 = 0.2, np.array([1.0, 0.5]), np.array([2.0, 1.0])
    sol = _exact(mu, mu, (*v0, 0.0), _push(), arms=jnp.asarray(arms))
    assert sol.result == jf.RESULTS.successful
    assert int(sol.stats["num_events"]) == 1

    def contact(t, v):
        return -3.5 * mu * G * arms**2 * v / np.linalg.norm(arms * v)

    def stop(t, v):
        return np.linalg.norm(v) - 1e-13

    stop.terminal = True
    ts = np.asarray(sol.ts)
    ref = solve_ivp(contact, (0, ts[-1]), v0, method="DOP853", rtol=1e-13,
                    atol=1e-15, events=stop, dense_output=True)  # fmt: skip
    t_roll = ref.t_events[0][0]
    before, after = ts < t_roll, ts > t_roll
    slip = np.asarray(sol.slip_velocity)
    # Measured 5.3e-10 s and 5.1e-10 m/s: near the stop the slip's direction
    # swings at |ṡ|/|s|, which no step resolves, so the stop is located to
    # the slip's last nanoseconds (an isotropic one to 1e-13 s).
    assert float(sol.event_times[0]) == pytest.approx(t_roll, abs=2e-9)
    np.testing.assert_allclose(slip[before], ref.sol(ts[before]).T, atol=2e-9)
    # The contact force on the ellipse |f/a| = μ N (N = m g to the penalty
    # spring's ringing); then rolling, the slip held at rounding.
    force = np.asarray(sol.friction)[before]
    np.testing.assert_allclose(
        np.linalg.norm(force / arms, axis=1), mu * MASS * G, rtol=1e-9
    )
    assert np.all(np.asarray(sol.modes)[after] == 0)
    assert np.max(np.abs(slip[after])) < 1e-15


def test_exact_gradients_through_slip_stop_roll_and_breakaway():
    # Launched at 2 m/s while a push k·t grows along the slip (μ = 0.1, μs =
    # 0.15, k = 0.5 N/s): the contact slips (v̇ = k t/m − 3.5 μ g), stops at
    # 0.704 s, rolls while (2/7) k t <= μs m g, breaks away at t_b = 3.5 μs m
    # g / k = 3.087 s and slips again. Derivatives of the final position and
    # both event times in (μ, μs, k) against central differences, and of t_b
    # against its closed form.
    system, _ = _spheres((0.1,))
    q0, qd0 = _sphere_start(((2.0, 0.0, 0.0),))

    def outputs(params):
        mu, mu_s, k = params
        law = jf.friction.IsotropicCoulomb(mu=mu, mu_s=mu_s)
        push = _Push(jnp.zeros(6), jnp.zeros(6).at[0].set(k))
        sol = jf.simulate(
            system, law, q0, qd0, t1=3.5, num_save=2, force=push, adjoint=FORWARD
        )
        out = jnp.stack([sol.q[-1, 0], sol.event_times[0], sol.event_times[1]])
        return out, out

    # Forward mode (3 inputs): 50 s against 72 s for `jax.jacrev` on the
    # 2-core machine, mostly compilation; test_switch checks that reverse mode
    # equals forward mode. One compilation gives the values too (as `aux`),
    # also those of the central differences.
    jacobian = jax.jit(jax.jacfwd(outputs, has_aux=True))
    params = jnp.array([0.1, 0.15, 0.5])
    jac, values = (np.asarray(x) for x in jacobian(params))
    t_break = 3.5 * 0.15 * MASS * G / 0.5
    assert float(values[1]) == pytest.approx(0.704, abs=1e-3)
    assert float(values[2]) == pytest.approx(t_break, abs=1e-10)
    h = 1e-6
    central = np.stack(
        [
            (jacobian(params + h * e)[1] - jacobian(params - h * e)[1]) / (2 * h)
            for e in np.eye(3)
        ],
        axis=1,
    )
    # Central differences of an event time carry ~1e-6 of noise (its location
    # to 1e-13 s over h = 1e-6, and the penalty spring's ringing).
    np.testing.assert_allclose(jac, central, rtol=1e-6, atol=1e-5)
    # The closed form holds N = m g; the penalty spring rings at ~1e-9 after
    # the stop, which the derivative sees.
    np.testing.assert_allclose(
        jac[2], [0.0, 3.5 * MASS * G / 0.5, -t_break / 0.5], rtol=1e-7, atol=1e-9
    )


def test_contact_lugre_reaches_rolling_near_the_closed_form():
    # MotionSolve's N-dimensional LuGre (Comment 7) with the contact's normal
    # force: an approximate law. Sphere 0 (μ = 0.1, launched along x): its
    # rolling time is within 2e-3 s of the closed form (the bristles'
    # presliding), its final velocity exact (momentum about the contact line),
    # and it does not creep once rolling. Sphere 1, in the same run: the
    # ellipse μ_x = 0.2, μ_y = 0.1 (arms (1, 1/2), Velenis et al.'s form)
    # launched along (2, 1) m/s follows the exact elliptic law's slip (scipy,
    # as in test_exact_elliptic_friction_matches_scipy) to the bristles' lag.
    system, _ = _spheres((0.1, 0.2))
    mu = jnp.array([0.1, 0.1, 0.2, 0.2])
    law = jf.friction.ContactLuGre(
        mu_s=mu, mu_d=mu, sigma0=1e5, sigma1=100.0, sigma2=0.0, vs=1e-3,
        arms=jnp.array([1.0, 1.0, 1.0, 0.5]),
    )  # fmt: skip
    q0, qd0 = _sphere_start(((2.0, 0.0, 0.0), (2.0, 1.0, 0.0)))
    sol = jf.simulate(system, law, q0, qd0, t1=1.0, num_save=1001)
    assert sol.result == jf.RESULTS.successful
    ts, slip = np.asarray(sol.ts), np.asarray(sol.slip_velocity)
    t_roll = ts[np.argmax(slip[:, 0] <= 0)]
    assert abs(t_roll - 4.0 / (7 * 0.1 * G)) < 2e-3
    assert float(sol.qd[-1, 0]) == pytest.approx(10.0 / 7, rel=1e-12)
    assert np.max(np.abs(slip[ts > 0.9, :2])) < 1e-12

    arms, v0 = np.array([1.0, 0.5]), np.array([2.0, 1.0])

    def contact(t, v):
        return -3.5 * 0.2 * G * arms**2 * v / np.linalg.norm(arms * v)

    def stop(t, v):
        return np.linalg.norm(v) - 1e-13

    stop.terminal = True
    ref = solve_ivp(contact, (0, 1.0), v0, method="DOP853", rtol=1e-13,
                    atol=1e-15, events=stop, dense_output=True)  # fmt: skip
    before = ts < ref.t_events[0][0]
    # Measured 6.6e-3 m/s: the ~1 ms presliding transient at launch (the
    # contact point's mass on the bristles' spring N σ0), kept thereafter.
    # Coefficients per row instead of arms (μ = (0.2, 0.1), no arms: force
    # N(μ_x v_x, μ_y v_y)/|v|, on the ellipse but not of maximum dissipation)
    # turn the slip elsewhere: 0.15 m/s from the reference (measured).
    np.testing.assert_allclose(slip[before, 2:], ref.sol(ts[before]).T, atol=1e-2)
    slipping = before & (ts > 0.05) & (ts < ref.t_events[0][0] - 0.05)
    force = np.asarray(sol.friction)[slipping, 2:]
    # On the ellipse |f/a| = μN (measured 5.7e-5), along the slip of maximum
    # dissipation a² s/|a s| to the bristles' lag (measured 6.5e-3 of μN).
    np.testing.assert_allclose(
        np.linalg.norm(force / arms, axis=1), 0.2 * MASS * G, rtol=2e-4
    )
    s = slip[slipping, 2:]
    along = arms**2 * s / np.linalg.norm(arms * s, axis=1)[:, None]
    np.testing.assert_allclose(force / (0.2 * MASS * G), along, atol=1e-2)
    np.testing.assert_allclose(sol.qd[-1, 6:8], 5 / 7 * v0, rtol=1e-12)
    assert np.max(np.abs(slip[ts > 0.9, 2:])) < 1e-12
    with pytest.raises(ValueError, match="dims"):
        jf.friction.ContactLuGre(0.1, 0.1, 1e5, 100.0, 0.0, 1e-3, dims=1)
    with pytest.raises(ValueError, match="mu_s"):
        jf.friction.ContactLuGre(0.05, 0.1, 1e5, 100.0, 0.0, 1e-3)
    with pytest.raises(ValueError, match="arms"):
        jf.friction.ContactLuGre(0.1, 0.1, 1e5, 100.0, 0.0, 1e-3, arms=(1.0, 0.0))


def test_contact_lugre_ellipse_is_velenis_tsiotras():
    # The state equation against Velenis, Tsiotras & Canudas-de-Wit (2005)'s
    # 2-D LuGre written with their matrices M_k = μd diag(a), M_s = μs diag(a):
    # ż_i = v_i − λ σ0 z_i/μ_ki², λ = |M_k² v|/g_V, g_V = |M_k² v|/|M_k v| +
    # (|M_s² v|/|M_s v| − |M_k² v|/|M_k v|) exp(−(|v|/vs)²); and the settled
    # force against the exact law's slip force on the same ellipse.
    mu_s, mu_d, sigma0, vs = 0.15, 0.1, 1e5, 1e-2
    arms = np.array([1.0, 0.5, 0.7, 1.3])
    normal = np.array([2.0, 2.0, 3.0, 3.0])
    law = jf.friction.ContactLuGre(
        mu_s, mu_d, sigma0, 50.0, 0.0, vs, arms=arms, normal=normal
    )

    def velenis(z, v):
        out = []
        rows = (arms.reshape(2, 2), v.reshape(2, 2), z.reshape(2, 2))
        for a, vk, zk in zip(*rows, strict=True):
            mk, ms = mu_d * np.diag(a), mu_s * np.diag(a)
            kinetic = np.linalg.norm(mk @ mk @ vk) / np.linalg.norm(mk @ vk)
            static = np.linalg.norm(ms @ ms @ vk) / np.linalg.norm(ms @ vk)
            g = kinetic + (static - kinetic) * np.exp(-((np.linalg.norm(vk) / vs) ** 2))
            lam = np.linalg.norm(mk @ mk @ vk) / g
            out.append(vk - lam * sigma0 * zk / np.diag(mk) ** 2)
        return np.concatenate(out)

    rng = np.random.default_rng(0)
    for scale in (1e-3, 1e-2, 1.0):
        v, z = scale * rng.normal(size=4), 1e-6 * rng.normal(size=4)
        np.testing.assert_allclose(law.state_derivative(z, v), velenis(z, v),
                                   rtol=1e-13, atol=1e-15 * scale)  # fmt: skip

        def norms(x):
            return np.repeat(np.linalg.norm(x.reshape(2, 2), axis=1), 2)

        g = mu_d + (mu_s - mu_d) * np.exp(-((norms(v) / vs) ** 2))
        settled = arms**2 * g * v / (sigma0 * norms(arms * v))
        exact = jf.friction.IsotropicCoulomb(fc=normal * g, arms=arms).force(v)
        np.testing.assert_allclose(law.force(settled, v), exact, rtol=1e-12,
                                   atol=1e-13)  # fmt: skip


def test_penalty_joints_conserve_energy_and_their_rows_are_consistent():
    # A double pendulum of two bars hanging from the world by penalty joints
    # (axis y) under gravity, undamped and without friction: kinetic +
    # gravity + spring energy (½K|gap|² + K_r(1 − u_c·u_p) per joint) is
    # conserved; the joint rows' J̇q̇ is the derivative of J(q) q̇ along the
    # motion.
    K, KR, m, length = 1e4, 1e2, 0.5, 0.3
    axis = (0.0, 1.0, 0.0)
    joints = (
        jf.systems.PenaltyJoint(
            -1, 0, (0, 0, 0), (0, 0, 0.15), axis, axis, K, 0, KR, 0
        ),
        jf.systems.PenaltyJoint(
            0, 1, (0, 0, -0.15), (0, 0, 0.15), axis, axis, K, 0, KR, 0
        ),
    )
    inertia = [m * length**2 / 12, m * length**2 / 12, 1e-3]
    system = FreeBodies([m, m], [inertia] * 2, gravity=(0, 0, -9.81), joints=joints)
    q0 = jnp.array([0, 0, -0.15, 1, 0, 0, 0, 0, 0, -0.45, 1, 0, 0, 0.0])
    qd0 = jnp.array([0.3, 0, 0, 0, 1.0, 0.2, 0.6, 0, 0, 0.1, 2.0, 0.0])
    law = jf.friction.Regularized(jf.friction.Coulomb(fc=0.0), eps=1e-3)
    sol = jf.simulate(system, law, q0, qd0, t1=1.0, num_save=11, rtol=1e-11, atol=1e-11)

    def energy(q, qd):
        total = 0.0
        for b in range(2):
            _, rot, v, w = system.body_state(q, qd, b)
            world = rot @ system.inertia[b] @ rot.T
            total += 0.5 * m * v @ v + 0.5 * w @ world @ w + 9.81 * m * q[7 * b + 2]
        for joint in joints:
            (a_p, _, u_p, _, _), (a_c, _, u_c, _, _) = joint._frames(system, q, qd)
            gap = a_c - a_p
            total += 0.5 * K * gap @ gap + KR * (1 - u_c @ u_p)
        return total

    energies = np.array([energy(q, qd) for q, qd in zip(sol.q, sol.qd, strict=True)])
    assert np.max(np.abs(energies - energies[0])) < 1e-8 * abs(energies[0]) + 1e-9
    q, qd = sol.q[5], sol.qd[5]
    along = jax.jvp(
        lambda q: system.friction_jacobian(q) @ qd,
        (q,),
        (system.coordinate_rate(q, qd),),
    )[1]
    np.testing.assert_allclose(
        system.friction_jacobian_dot_qd(q, qd), along, atol=1e-12
    )
    with pytest.raises(ValueError, match="parent"):
        FreeBodies([m], [inertia], joints=(jf.systems.PenaltyJoint(
            2, 0, (0, 0, 0), (0, 0, 0), axis, axis, K, 0, KR, 0),))  # fmt: skip
    with pytest.raises(ValueError, match="joint stiffness"):
        jf.systems.PenaltyJoint(-1, 0, (0, 0, 0), (0, 0, 0), axis, axis, -K, 0, KR, 0)
    with pytest.raises(ValueError, match=r"joint parent_axis norm.*\[0\.999999"):
        jf.systems.PenaltyJoint(
            -1, 0, (0, 0, 0), (0, 0, 0), (0, 0, 0), axis, K, 0, KR, 0
        )
    with pytest.raises(ValueError, match="joint child_axis norm"):
        jf.systems.PenaltyJoint(
            -1, 0, (0, 0, 0), (0, 0, 0), axis, (0, 2, 0), K, 0, KR, 0
        )


def test_box_on_its_corners_conserves_energy_and_holds_on_an_incline():
    # A box (0.2 × 0.1 × 0.05 m, 1 kg) touching the plane at its four lower
    # corners (`PlaneContact` spheres of radius 0 at body-fixed centres).
    # Frictionless and undamped, dropped tilted and spinning: kinetic +
    # gravity + Σ ½K h_k² is conserved (the corners' forces and moments), and
    # J̇q̇ is the derivative of J(q) q̇ along the motion.
    m, size = 1.0, np.array([0.2, 0.1, 0.05])
    corners = [[x, y, -size[2] / 2] for x in (-0.1, 0.1) for y in (-0.05, 0.05)]
    inertia = m / 12 * (np.sum(size**2) - size**2)

    def box(gravity, damping):
        contact = PlaneContact(0.0, K, damping, centres=corners)
        return FreeBodies(m, inertia, gravity=gravity, contact=contact)

    system = box((0.0, 0.0, -G), 0.0)

    def heights(q):
        rot = np.asarray(system.rotation(q, 0))
        return q[2] + (np.asarray(corners) @ rot.T)[:, 2]

    tilt = jnp.array([np.cos(0.05), np.sin(0.05) * 0.6, np.sin(0.05) * 0.8, 0.0])
    q0 = jnp.array([0.0, 0.0, 0.0, *tilt])
    q0 = q0.at[2].set(1e-3 - np.min(heights(q0)))  # lowest corner 1 mm up
    qd0 = jnp.array([0.2, 0.1, -0.3, 1.0, -2.0, 3.0])
    law = jf.friction.Regularized(jf.friction.Coulomb(fc=0.0), eps=1e-3)
    sol = jf.simulate(system, law, q0, qd0, t1=0.3, num_save=31, rtol=1e-11, atol=1e-11)

    def energy(q, qd):
        _, rot, v, w = system.body_state(q, qd, 0)
        spring = 0.5 * K * np.sum(np.minimum(heights(q), 0.0) ** 2)
        world = rot @ system.inertia[0] @ rot.T
        return 0.5 * m * v @ v + 0.5 * w @ world @ w + m * G * q[2] + spring

    energies = np.array([energy(q, qd) for q, qd in zip(sol.q, sol.qd, strict=True)])
    # It hits the plane, corners first (not all of them at once).
    lowest = np.array([np.sort(heights(q))[:2] for q in sol.q])
    first = np.argmax(lowest[:, 0] < 0)
    assert np.min(lowest[:, 0]) < -1e-5 and lowest[first, 1] > 0
    assert np.max(np.abs(energies - energies[0])) < 1e-8 * abs(energies[0])
    q, qd = sol.q[15], sol.qd[15]
    rate = system.coordinate_rate(q, qd)
    along = jax.jvp(lambda q: system.friction_jacobian(q) @ qd, (q,), (rate,))[1]
    np.testing.assert_allclose(
        system.friction_jacobian_dot_qd(q, qd), along, atol=1e-12
    )

    # Kikuuwe's friction (RK4, T = 1e-4 s) at the corners, μ = 0.3, on an
    # incline of 10° (below the friction angle): after its presliding the box
    # holds (measured 3.6e-19 m of travel and 7e-18 m/s over [5, 10] s); at
    # 30° it slides at g (sin θ − μ cos θ) (measured to 5.9e-13 m/s²).
    def incline(degrees, t1):
        theta = np.radians(degrees)
        gravity = (G * np.sin(theta), 0.0, -G * np.cos(theta))
        start = jnp.array([0.0, 0.0, size[2] / 2 - m * G * np.cos(theta) / (4 * K),
                           1.0, 0.0, 0.0, 0.0])  # fmt: skip
        kikuuwe = Kikuuwe(k=1e5, b=10.0, mu=0.3, dims=2)
        sol = jf.simulate(box(gravity, B), kikuuwe, start, jnp.zeros(6), t1=t1,
                          dt0=1e-4, num_save=101, max_steps=100_000)  # fmt: skip
        assert sol.result == jf.RESULTS.successful
        return np.asarray(sol.ts), np.asarray(sol.q), np.asarray(sol.qd), theta

    ts, q, qd, _ = incline(10.0, 10.0)
    late = ts >= 5.0
    assert np.ptp(q[late, 0]) < 1e-15 and np.max(np.abs(qd[late, :2])) < 1e-15
    assert 0 < q[-1, 0] < 1e-5  # the presliding deflection, ~5 µm
    ts, q, qd, theta = incline(30.0, 2.0)
    late = ts >= 1.0
    slope = np.polyfit(ts[late], qd[late, 0], 1)[0]
    assert slope == pytest.approx(G * (np.sin(theta) - 0.3 * np.cos(theta)), abs=1e-9)
    with pytest.raises(ValueError, match="centres"):
        PlaneContact(0.0, K, B, centres=[0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="centres"):
        FreeBodies(m, inertia, contact=PlaneContact(0.0, K, B, centres=[corners] * 2))
    with pytest.raises(ValueError, match="stiffness"):
        PlaneContact(0.0, [K, K], B, centres=corners)


def test_exact_box_on_a_face_patch_stops_holds_and_slides():
    # The same box on its four lower corners as one patch (`PlaneContact`'s
    # `patch`: rows slip x, y at the centre of the corners' loads and r ω_z)
    # with the exact law, μ = 0.3, resting at its static penetration on a
    # plane tilted by θ. Flat, launched at v0: it stops at v0/(μ g) and holds
    # exactly; on 10° it never slips; on 30° it slides at g (sin θ − μ cos θ).
    # (Derivatives through the patch's stop: experiments/incline_creep.py.)
    m, size = 1.0, np.array([0.2, 0.1, 0.05])
    corners = [[x, y, -size[2] / 2] for x in (-0.1, 0.1) for y in (-0.05, 0.05)]
    inertia = m / 12 * (np.sum(size**2) - size**2)
    mu = 0.3

    @jax.jit
    def simulate(v0, theta):
        gravity = jnp.stack([G * jnp.sin(theta), 0.0, -G * jnp.cos(theta)])
        contact = PlaneContact(0.0, K, B, centres=corners, patch=True)
        system = FreeBodies(m, inertia, gravity=gravity, contact=contact)
        law = jf.friction.IsotropicCoulomb(mu=mu, dims=3)
        height = size[2] / 2 - m * G * jnp.cos(theta) / (4 * K)
        q0 = jnp.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]).at[2].set(height)
        qd0 = jnp.zeros(6).at[0].set(v0)
        return jf.simulate(system, law, q0, qd0, t1=1.0, num_save=101, throw=False)

    def corners_world(q):
        rot = jax.vmap(quaternion_to_matrix)(q[:, 3:])
        return q[:, None, :3] + jnp.einsum("tij,kj->tki", rot, jnp.asarray(corners))

    v0 = 1.0
    sol = simulate(v0, 0.0)
    assert sol.result == jf.RESULTS.successful
    t_stop = float(sol.event_times[0])
    assert t_stop == pytest.approx(v0 / (mu * G), abs=1e-12)
    after = np.asarray(sol.ts) > t_stop
    assert np.all(np.asarray(sol.modes)[after] == 0)
    assert np.max(np.abs(np.asarray(sol.slip_velocity)[after])) < 1e-15

    # The patch at rest flat: its centre below the centre of mass, r the
    # corners' distance from it, the weight on its three rows.
    system = FreeBodies(
        m, inertia, gravity=(0.0, 0.0, -G),
        contact=PlaneContact(0.0, K, B, centres=corners, patch=True),
    )  # fmt: skip
    q0, qd0 = sol.q[0], jnp.zeros(6)
    rows = system.friction_jacobian(q0)
    h, r = size[2] / 2, np.hypot(0.1, 0.05)
    expected = [[1, 0, 0, 0, -h, 0], [0, 1, 0, h, 0, 0], [0, 0, 0, 0, 0, r]]
    np.testing.assert_allclose(rows, expected, atol=1e-15)
    np.testing.assert_allclose(system.normal_forces(q0, qd0), m * G, rtol=1e-12)
    # Two bodies (centres per body): rows body by body, each in its columns.
    two = FreeBodies(
        [m, m], [inertia] * 2,
        contact=PlaneContact(0.0, K, B, centres=[corners, corners], patch=True),
    )  # fmt: skip
    q2 = jnp.concatenate([q0, q0.at[0].set(1.0)])
    rows2 = np.asarray(two.friction_jacobian(q2))
    assert rows2.shape == (6, 12)
    np.testing.assert_allclose(rows2[:3, :6], expected, atol=1e-15)
    np.testing.assert_allclose(rows2[3:, 6:], expected, atol=1e-15)
    assert not rows2[:3, 6:].any() and not rows2[3:, :6].any()
    # All eight corners: the unloaded upper ones carry no weight in the patch.
    eight = [[x, y, z] for x, y, _ in corners for z in (-size[2] / 2, size[2] / 2)]
    system8 = FreeBodies(
        m, inertia, gravity=(0.0, 0.0, -G),
        contact=PlaneContact(0.0, K, B, centres=eight, patch=True),
    )  # fmt: skip
    np.testing.assert_allclose(system8.friction_jacobian(q0), rows, atol=1e-15)

    # 10°: stuck from the start, slip at rounding (as the box rocks to its
    # loads' new balance the rows move with the loads: a wrong J̇q̇ would
    # drift the held slip); the corners still over the second half.
    sol = simulate(0.0, float(np.radians(10.0)))
    assert sol.result == jf.RESULTS.successful
    assert np.all(np.asarray(sol.modes) == 0)
    assert np.max(np.abs(np.asarray(sol.slip_velocity))) < 1e-15
    late = np.asarray(sol.ts) >= 0.5
    travel = np.ptp(np.asarray(corners_world(sol.q))[late, :, :2], axis=0)
    assert np.max(travel) < 1e-14

    # 30°: it breaks away at once and slides at g (sin θ − μ cos θ).
    theta = float(np.radians(30.0))  # a Python float: the same compilation
    sol = simulate(0.0, theta)
    assert sol.result == jf.RESULTS.successful
    late = np.asarray(sol.ts) >= 0.5
    slope = np.polyfit(np.asarray(sol.ts)[late], np.asarray(sol.qd)[late, 0], 1)[0]
    assert slope == pytest.approx(G * (np.sin(theta) - mu * np.cos(theta)), abs=1e-9)
    # Kikuuwe's law (RK4, dims 3) on the same rows slides it at the same rate.
    gravity = (G * np.sin(theta), 0.0, -G * np.cos(theta))
    contact = PlaneContact(0.0, K, B, centres=corners, patch=True)
    kikuuwe = jf.simulate(
        FreeBodies(m, inertia, gravity=gravity, contact=contact),
        Kikuuwe(k=1e5, b=10.0, mu=mu, dims=3), sol.q[0], jnp.zeros(6), t1=1.0,
        dt0=1e-4, num_save=101, max_steps=11_000,
    )  # fmt: skip
    assert kikuuwe.result == jf.RESULTS.successful
    ts, qd = np.asarray(kikuuwe.ts), np.asarray(kikuuwe.qd)
    slope = np.polyfit(ts[ts >= 0.5], qd[ts >= 0.5, 0], 1)[0]
    assert slope == pytest.approx(G * (np.sin(theta) - mu * np.cos(theta)), abs=1e-9)
    with pytest.raises(ValueError, match="patch"):
        PlaneContact(0.0, K, B, patch=True)
    with pytest.raises(ValueError, match="two per body"):
        PlaneContact(0.0, K, B, centres=corners[:1], patch=True)
    joint = jf.systems.PenaltyJoint(-1, 0, np.zeros(3), np.zeros(3), [0, 0, 1],
                                    [0, 0, 1], 1e4, 1.0, 1e2, 0.1)  # fmt: skip
    with pytest.raises(ValueError, match="no `joints`"):
        FreeBodies(m, inertia, contact=contact, joints=[joint])
