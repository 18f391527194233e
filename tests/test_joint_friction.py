"""Reaction-load joint friction (`JointFriction`, MotionSolve Force_JointFriction
load models) on the exact switch path.

The mechanism: a rotor on a vertical revolute joint, a point-like body of mass
``m`` (with a small inertia ``I``) at radius ``L``. Its reactions follow by hand
from Newton–Euler in the body frame (independent of jaxfric's recursion):
force ``m·(−Lθ̇², Lθ̈, g)``, moment ``(0, −mgL, (mL² + I)θ̈)``. So the pin carries
``N_xy = mL·√(θ̇⁴ + θ̈²)``, the end caps ``N_z = mg`` and the bending couple
``mgL/r_b``; with the MotionSolve revolute model (Comment 9) the friction torque
is ``μ(r_p N_xy + r_n mg + r_p mgL/r_b) + (μ/μ_s)T_pre``, which depends on the
acceleration it produces: the reference solves that scalar equation by
`scipy.optimize.brentq` at every right-hand side of `scipy.integrate.solve_ivp`.
"""

import dataclasses

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import brentq, fsolve

import jaxfric as jf
from jaxfric.simulate._common import check_law_size

M, L, G, INERTIA = 1.0, 0.1, 9.81, 1e-3
RP, RN, RB, T_PRE = 0.005, 0.007, 0.005, 0.002
T1 = 1.6
TS = np.linspace(0.0, T1, 33)
# The switch path at its default tolerances against scipy's DOP853 at 1e-12.
_TRAJECTORY_TOL = 1e-8
# Event times are located to 1e-13 s; the closed-form breakaway is exact.
_EVENT_TOL = 1e-11
# Central differences with a relative step of 1e-6.
_GRADIENT_RTOL = 1e-6


def _rotor():
    return jf.systems.RigidBodyTree(
        [-1],
        ["revolute"],
        [(0.0, 0.0, 1.0)],
        [(0.0, 0.0, 0.0)],
        mass=[M],
        com=[(L, 0.0, 0.0)],
        inertia=[INERTIA * np.eye(3)],
        gravity=(0.0, 0.0, -G),
    )


def _load():
    return jf.RevoluteLoad(
        pin_radius=RP, friction_arm=RN, bending_reaction_arm=RB, torque_preload=T_PRE
    )


class _Ramp(jf.forces.AbstractStatelessForce):
    rate: jax.Array

    def __call__(self, t, q, qd):
        return jnp.atleast_1d(self.rate * t)


def _run(params):
    """``[θ(t1), first event time]`` and the solution, for ``params = (μ_s,
    μ_d, torque rate N·m/s, θ̇(0) rad/s)``."""
    mu_s, mu_d, rate, qd0 = params
    law = jf.JointFriction(mu_static=mu_s, mu_dynamic=mu_d, loads=(_load(),))
    sol = jf.simulate(
        _rotor(), law, q0=jnp.zeros(1), qd0=qd0[None], t1=T1, ts=TS,
        force=_Ramp(rate), adjoint=diffrax.ForwardMode(),
    )  # fmt: skip
    return jnp.stack([sol.q[-1, 0], sol.event_times[0]]), sol


# One compilation serves every simulation below (values and derivatives), as
# a batch of two under `vmap` (the two scenarios; the load coupling's loop runs
# batched); forward mode compiles in about half the time of reverse mode here.
_batch_jac = jax.jit(jax.vmap(jax.jacfwd(_run, has_aux=True)))
_RAMP = (0.5, 0.3, 0.5, 0.0)  # stuck, breaks away under the ramp, slips
_SPIN = (0.5, 0.3, 0.0, 3.0)  # spinning, no torque: stops and stays


def _member(tree, k):
    return jax.tree.map(lambda x: x[k], tree)


def _reference(mu_s, mu_d, rate, t_start, y_start, direction=1.0):
    """scipy: the rotor slipping in `direction` from `t_start`, the friction
    torque's dependence on its own acceleration solved by `brentq`."""
    inertia = INERTIA + M * L * L

    def rhs(t, y):
        _, w = y

        def residual(a):
            load = RP * M * L * np.hypot(w * w, a) + RN * M * G + RP * M * G * L / RB
            torque = mu_d * load + mu_d / mu_s * T_PRE
            return inertia * a - (rate * t - direction * torque)

        return [w, brentq(residual, -1e3, 1e3, xtol=1e-15, rtol=1e-15)]

    stop = lambda t, y: y[1]  # noqa: E731
    stop.terminal = True
    stop.direction = -direction
    return solve_ivp(
        rhs, (t_start, T1), y_start, method="DOP853", rtol=1e-12, atol=1e-14,
        dense_output=True, events=stop,
    )  # fmt: skip


def _static_limit(mu_s):
    """The stuck rotor's breakaway torque: its reactions are the static ones."""
    return mu_s * (RN * M * G + RP * M * G * L / RB) + T_PRE


@pytest.fixture(scope="module")
def batch():
    params = jnp.array([_RAMP, _SPIN])
    jac, sol = _batch_jac(params)
    return params, jac, sol


@pytest.fixture(scope="module")
def breakaway(batch):
    return tuple(_member(x, 0) for x in batch)


def test_joint_reactions_against_newton_euler_by_hand():
    system = _rotor()
    q, qd, qdd = jnp.array([0.7]), jnp.array([2.0]), jnp.array([-3.0])
    zero = jnp.zeros(1)
    reactions = system.joint_reactions(q, qd, qdd, zero, zero)
    w, a = 2.0, -3.0
    moment = [0.0, -M * G * L, (M * L * L + INERTIA) * a]
    force = [-M * L * w * w, M * L * a, M * G]
    np.testing.assert_allclose(reactions.wrench[0], moment + force, atol=1e-14)
    assert reactions.kinds == ("revolute",)
    np.testing.assert_array_equal(reactions.position, q)


def test_stuck_until_the_closed_form_breakaway_then_slips_as_scipy(breakaway):
    (mu_s, mu_d, rate, _), _, sol = breakaway
    assert sol.result == jf.RESULTS.successful
    t_break = _static_limit(float(mu_s)) / float(rate)
    assert abs(float(sol.event_times[0]) - t_break) < _EVENT_TOL
    stuck = np.asarray(sol.ts) < t_break
    # Exactly still while stuck: position and velocity are 0.0 to the bit.
    assert np.all(np.asarray(sol.q)[stuck] == 0.0)
    assert np.all(np.asarray(sol.qd)[stuck] == 0.0)
    # The stick torque balances the ramp.
    np.testing.assert_allclose(
        sol.friction[stuck, 0], float(rate) * np.asarray(sol.ts)[stuck], rtol=1e-12
    )
    ref = _reference(float(mu_s), float(mu_d), float(rate), t_break, [0.0, 0.0])
    slipping = ~stuck
    expected = ref.sol(np.asarray(sol.ts)[slipping])
    np.testing.assert_allclose(sol.q[slipping, 0], expected[0], atol=_TRAJECTORY_TOL)
    np.testing.assert_allclose(sol.qd[slipping, 0], expected[1], atol=_TRAJECTORY_TOL)


def test_spinning_rotor_stops_at_the_reference_time_and_stays(batch):
    mu_s, mu_d, _, qd0 = _SPIN
    sol = _member(batch[2], 1)
    assert sol.result == jf.RESULTS.successful
    ref = _reference(mu_s, mu_d, 0.0, 0.0, [0.0, qd0])
    t_stop = ref.t_events[0][0]
    assert abs(float(sol.event_times[0]) - t_stop) < 1e-9
    after = np.asarray(sol.ts) > t_stop
    assert np.all(np.asarray(sol.qd)[after] == 0.0)
    assert np.all(np.asarray(sol.q)[after] == np.asarray(sol.q)[-1])
    np.testing.assert_allclose(
        sol.q[-1, 0], ref.y_events[0][0][0], atol=_TRAJECTORY_TOL
    )


def test_gradients_through_breakaway_and_slip(breakaway, central_differences):
    params, jac, _ = breakaway
    # d t*/d(μ_s, μ_d, rate) in closed form (t* = T_s(μ_s)/rate).
    mu_s, rate = float(params[0]), float(params[2])
    dt_dmu_s = (RN * M * G + RP * M * G * L / RB) / rate
    dt_drate = -_static_limit(mu_s) / rate**2
    np.testing.assert_allclose(
        jac[1, :3], [dt_dmu_s, 0.0, dt_drate], rtol=1e-9, atol=1e-12
    )

    # θ(t1) against central differences of the same compiled simulation.
    def final_angle(p):
        both = jnp.array([jnp.append(p, params[3]), jnp.array(_SPIN)])
        return float(_batch_jac(both)[1].q[0, -1, 0])

    fd = central_differences(final_angle, params[:3], 1e-6)
    np.testing.assert_allclose(jac[0, :3], fd, rtol=_GRADIENT_RTOL)
    assert np.all(np.abs(jac[0, :3]) > 1e-3)  # not a vanished gradient


def test_load_models_contributions_by_hand():
    wrench = jnp.array([0.3, -0.4, 9.0, 3.0, 4.0, -2.0])  # moment, force
    revolute = jf.RevoluteLoad(
        pin_radius=0.01, friction_arm=0.02, bending_reaction_arm=0.05,
        torque_preload=0.1, inputs="1101",
    )  # fmt: skip
    got = revolute.contributions(wrench, jnp.array(0.0), 0.5)
    # pin 0.01·5, caps 0.02·2, bending switched off, preload 0.1/0.5.
    np.testing.assert_allclose(got, [0.05, 0.04, 0.0, 0.2], rtol=1e-15)
    sliding = jf.TranslationalLoad(
        reaction_arm=0.2, initial_overlap=0.1, overlap_delta="decrease",
        force_preload=1.0,
    )  # fmt: skip
    got = sliding.contributions(wrench, jnp.array(0.05), 0.25)
    # rubbing 5, torsion 9/(2·0.2), bending 0.5/(0.1 − 0.05), preload 1/0.25.
    np.testing.assert_allclose(got, [5.0, 22.5, 10.0, 4.0], rtol=1e-15)
    # The slider out of its guide: no finite friction.
    assert np.isnan(sliding.contributions(wrench, jnp.array(0.2), 0.25)[2])


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: jf.RevoluteLoad(pin_radius=0.0), r"`pin_radius` must lie in \(0.0"),
        (lambda: jf.RevoluteLoad(torque_preload=-1.0), "`torque_preload` must lie"),
        (lambda: jf.RevoluteLoad(inputs="11"), "`inputs` must be four characters"),
        (lambda: jf.TranslationalLoad(overlap_delta="up"), "`overlap_delta` must"),
        (lambda: jf.TranslationalLoad(initial_overlap=0.0), "`initial_overlap`"),
        (
            lambda: jf.JointFriction(0.2, 0.3, loads=(jf.RevoluteLoad(),)),
            "`mu_static` must be >= `mu_dynamic`",
        ),
        (
            lambda: jf.JointFriction(0.5, 0.0, loads=(jf.RevoluteLoad(),)),
            r"`mu_dynamic` must lie in \(0.0",
        ),
        (
            lambda: jf.JointFriction(0.5, 0.3, loads=(jf.RevoluteLoad(),), effect="x"),
            "`effect` must be one of",
        ),
        (lambda: jf.JointFriction(0.5, 0.3, loads=()), "`loads` must be a non-empty"),
    ],
)
def test_bad_parameters_are_named(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_load_model_must_match_the_joint_and_the_system_must_have_joints():
    slider = jf.systems.RigidBodyTree(
        [-1], ["prismatic"], [(0.0, 0.0, 1.0)], [(0.0, 0.0, 0.0)],
        mass=[1.0], com=[(0.0, 0.0, 0.0)], inertia=[np.eye(3)],
    )  # fmt: skip
    law = jf.JointFriction(0.5, 0.3, loads=(jf.RevoluteLoad(),))
    with pytest.raises(ValueError, match=r"`loads\[0\]` is a RevoluteLoad"):
        jf.simulate(slider, law, q0=jnp.zeros(1), qd0=jnp.ones(1), t1=0.1)
    oscillator = jf.systems.Oscillator(mass=1.0, stiffness=1.0)
    with pytest.raises(NotImplementedError, match="Oscillator has no joint reactions"):
        jf.simulate(oscillator, law, q0=1.0, qd0=0.0, t1=0.1)


def test_lugre_with_reaction_loads_against_scipy():
    # MotionSolve's LuGre per contribution (Comment 3 with the normal forces of
    # Comment 9): the reference integrates θ, θ̇ and the four bristle states with
    # Radau, the friction torque's dependence on θ̈ (through N_xy) solved by
    # brentq at every right-hand side.
    s0, s1, s2, vs, mu_s, mu_d, rate = 2e4, 30.0, 0.01, 0.002, 0.5, 0.3, 0.5
    law = jf.JointLuGre(
        mu_s, mu_d, (_load(),), bristle_stiffness=s0, damping_effects=s1,
        viscous_effects=s2, stiction_trans_vel=vs,
    )  # fmt: skip
    ts = TS[::4]

    def run(law):
        return jf.simulate(
            _rotor(), law, jnp.zeros(1), jnp.zeros(1), T1, ts=ts,
            force=_Ramp(jnp.asarray(rate)), rtol=1e-10, atol=1e-12, throw=False,
        )  # fmt: skip

    sol = run(law)
    assert sol.result == jf.RESULTS.successful
    assert sol.friction_state.shape == (len(ts), 4)
    arms = np.array([RP, RN, RP, RP])
    inertia = INERTIA + M * L * L

    def rhs(t, y):
        w, z = y[1], y[2:]
        v = arms * w
        zdot = v - s0 * np.abs(v) * z / (
            mu_d + (mu_s - mu_d) * np.exp(-((v / vs) ** 2))
        )

        def residual(a):
            normal = [
                M * L * np.hypot(w * w, a),
                M * G,
                M * G * L / RB,
                T_PRE / (mu_s * RP),
            ]
            torque = np.sum(arms * (np.array(normal) * (s0 * z + s1 * zdot) + s2 * v))
            return inertia * a - (rate * t - torque)

        return np.r_[w, brentq(residual, -1e4, 1e4, xtol=1e-15, rtol=1e-15), zdot]

    ref = solve_ivp(rhs, (0.0, T1), np.zeros(6), method="Radau", rtol=1e-11,
                    atol=1e-14, t_eval=ts)  # fmt: skip
    # Measured 4.6e-8 rad and 7.1e-8 rad/s at these tolerances.
    np.testing.assert_allclose(sol.q[:, 0], ref.y[0], atol=1e-6)
    np.testing.assert_allclose(sol.qd[:, 0], ref.y[1], atol=1e-6)
    # Presliding: the LuGre joint creeps below the Coulomb breakaway (1.05 s).
    assert 1e-4 < float(sol.q[4, 0]) < 1e-2
    # With σ1 = 1e4 s/m the pin's damping force depends on the acceleration it
    # produces more strongly as the rotor speeds up: between 1.4 s and 1.6 s
    # the coupling's gain reaches one (its solutions merge and vanish), and the
    # run says so (it said `nonfinite_state`; the solve stops just short of
    # the first failing state, where the coupling still converges, with
    # |det(I − ∂F/∂f)| = 1.9e-4). The same compiled simulation.
    damped = jf.JointLuGre(
        mu_s, mu_d, (_load(),), bristle_stiffness=s0, damping_effects=1e4,
        viscous_effects=s2, stiction_trans_vel=vs,
    )  # fmt: skip
    failed = run(damped)
    assert failed.result == jf.RESULTS.load_coupling_failed
    assert np.all(np.isfinite(failed.q[:-1])) and not np.isfinite(failed.q[-1, 0])


def test_slider_breakaway_and_slip_with_overlap_against_scipy():
    # A block on a horizontal prismatic joint along x, its centre of mass at
    # (e, d, 0) from the joint (gravity −z). By hand, in the friction frame
    # (z along the slide): the rubbing force m g, the torsional moment m g d
    # (about the slide) and the bending moment √((m g e)² + (m d a)²), a the
    # block's acceleration, over the overlap x_s = x0 + q ("increase").
    # MotionSolve Comment 10: F = μ (m g + m g d/(2 r_n) + bending/x_s) + (μ/μ_s) F_pre.
    mass, e, d, x0, rn, pre, rate = 2.0, 0.05, 0.02, 0.3, 0.04, 0.5, 10.0
    mu_s, mu_d, t1 = 0.4, 0.25, 1.6
    slider = jf.systems.RigidBodyTree(
        [-1], ["prismatic"], [(1.0, 0.0, 0.0)], [(0.0, 0.0, 0.0)],
        mass=[mass], com=[(e, d, 0.0)], inertia=[1e-3 * np.eye(3)],
        gravity=(0.0, 0.0, -G),
    )  # fmt: skip
    load = jf.TranslationalLoad(
        reaction_arm=rn, initial_overlap=x0, overlap_delta="increase",
        force_preload=pre,
    )  # fmt: skip
    law = jf.JointFriction(mu_s, mu_d, loads=(load,))
    ts = np.linspace(0.0, t1, 16)

    @jax.jit
    def run(law, rate):
        return jf.simulate(
            slider, law, jnp.zeros(1), jnp.zeros(1), t1, ts=ts, force=_Ramp(rate),
            throw=False,
        )  # fmt: skip

    sol = run(law, jnp.asarray(rate))
    assert sol.result == jf.RESULTS.successful

    def level(mu, q, a, x0=x0):
        bending = np.hypot(mass * G * e, mass * d * a) / (x0 + q)
        return mu * (mass * G + mass * G * d / (2 * rn) + bending) + mu / mu_s * pre

    t_break = level(mu_s, 0.0, 0.0) / rate
    assert abs(float(sol.event_times[0]) - t_break) < _EVENT_TOL
    stuck = ts < t_break
    assert np.all(np.asarray(sol.qd)[stuck] == 0.0)

    def rhs(t, y, rate, x0, lowest):
        q, v = y

        def residual(a):
            return mass * a - (rate * t - level(mu_d, q, a, x0))

        return [v, brentq(residual, lowest, 1e3, xtol=1e-15, rtol=1e-15)]

    def reference(t_start, rate, x0, lowest):
        return solve_ivp(
            rhs, (t_start, t1), [0.0, 0.0], method="DOP853", rtol=1e-12,
            atol=1e-14, dense_output=True, args=(rate, x0, lowest),
        )  # fmt: skip

    expected = reference(t_break, rate, x0, -1e3).sol(ts[~stuck])
    np.testing.assert_allclose(sol.q[~stuck, 0], expected[0], atol=_TRAJECTORY_TOL)
    np.testing.assert_allclose(sol.qd[~stuck, 0], expected[1], atol=_TRAJECTORY_TOL)

    # An overlap of 2 mm: once the block slips, the bending couple m d a over
    # x_s feeds the friction back with a gain up to μ_d·d/x_s = 2.5: a
    # fixed-point iteration diverges (it ended this run as
    # `load_coupling_failed`), and two accelerations are consistent with the
    # forward slip, the residual being convex in a (a Painlevé-like
    # ambiguity). Newton's method from f = 0 takes the one nearest the
    # frictionless motion, a > 0, which scipy finds by brentq on [0, 1e3].
    # Under 200 N/s the block breaks away at 1.03 s. The same compiled
    # simulation.
    short = dataclasses.replace(load, initial_overlap=0.002)
    slipped = run(dataclasses.replace(law, loads=(short,)), jnp.asarray(200.0))
    assert slipped.result == jf.RESULTS.successful
    t_short = level(mu_s, 0.0, 0.0, short.initial_overlap) / 200.0
    assert abs(float(slipped.event_times[0]) - t_short) < _EVENT_TOL
    stuck = ts < t_short
    assert np.all(slipped.q[stuck] == 0.0)
    expected = reference(t_short, 200.0, short.initial_overlap, 0.0).sol(ts[~stuck])
    np.testing.assert_allclose(slipped.q[~stuck, 0], expected[0], atol=_TRAJECTORY_TOL)
    np.testing.assert_allclose(slipped.qd[~stuck, 0], expected[1], atol=_TRAJECTORY_TOL)


def test_load_coupling_at_one_state_and_its_failure():
    # The rotor slipping forward at 2 rad/s under 0.4 N·m: the friction torque
    # solves T = μ_d (r_p m L √(ω⁴ + α²) + ...) with α = (u − T)/(I + m L²),
    # here by brentq; one Newton step cannot converge: NaN, never a lagged
    # value.
    from jaxfric.simulate._stick import friction_at_modes, load_coupling_at_modes

    system, w, u = _rotor(), 2.0, 0.4
    q, qd, modes = jnp.zeros(1), jnp.array([w]), jnp.array([1])
    net = jnp.array([u]) - system.bias_force(q, qd)
    inertia = INERTIA + M * L * L

    def residual(a):
        load = RP * M * L * np.hypot(w * w, a) + RN * M * G + RP * M * G * L / RB
        return inertia * a - (u - (0.3 * load + 0.3 / 0.5 * T_PRE))

    alpha = brentq(residual, -1e3, 1e3, xtol=1e-15, rtol=1e-15)
    law = jf.JointFriction(0.5, 0.3, loads=(_load(),))
    friction, acc, levels = friction_at_modes(system, law, q, qd, net, modes)
    np.testing.assert_allclose(acc, [alpha], rtol=1e-12)
    np.testing.assert_allclose(friction, [u - inertia * alpha], rtol=1e-12)
    np.testing.assert_allclose(levels.fs, friction * 0.5 / 0.3, rtol=1e-12)
    once = jf.JointFriction(0.5, 0.3, loads=(_load(),), max_iterations=1)
    friction, acc, _ = friction_at_modes(system, once, q, qd, net, modes)
    assert np.isnan(friction).all() and np.isnan(acc).all()

    # A pin of 0.35 m: the rotor decelerates at α ≈ −1900 rad/s² and the
    # coupling's gain is ∂F/∂f = −0.3·r_p·m·L·(α/|(ω², α)|)/(I + m L²) = 0.95
    # (a fixed-point iteration would close in on the root by 0.95 per
    # iteration, 590 iterations to 1e-12); Newton's method takes a few, and
    # |det(I − ∂F/∂f)| = 1 − 0.95.
    big = dataclasses.replace(_load(), pin_radius=0.35)

    def residual_big(a):
        rp = big.pin_radius
        load = rp * M * L * np.hypot(w * w, a) + RN * M * G + rp * M * G * L / RB
        return inertia * a - (u - (0.3 * load + 0.3 / 0.5 * T_PRE))

    alpha_big = brentq(residual_big, -1e5, 1e5, xtol=1e-15, rtol=1e-15)
    law_big = jf.JointFriction(0.5, 0.3, loads=(big,))
    coupling = load_coupling_at_modes(system, law_big, q, qd, net, modes)
    _, acc, _ = friction_at_modes(system, law_big, q, qd, net, modes)
    np.testing.assert_allclose(acc, [alpha_big], rtol=1e-12)
    assert bool(coupling.converged) and int(coupling.iterations) <= 8
    slope = alpha_big / np.hypot(w * w, alpha_big)
    gain = -0.3 * big.pin_radius * M * L / inertia * slope
    assert 0.9 < gain < 1.0
    np.testing.assert_allclose(coupling.regularity, 1 - gain, rtol=1e-9)

    # Reverse mode (`jax.grad`: optimistix's implicit adjoint of the fixed
    # point, transposed) against the implicit function theorem on the scalar
    # residual R(α; μ_s, μ_d, u) = 0: dα/dp = −(∂R/∂p)/(∂R/∂α). Forward mode
    # through whole simulations is checked against central differences above.
    def acceleration(p):
        law = jf.JointFriction(p[0], p[1], loads=(_load(),))
        tau = jnp.reshape(p[2], (1,)) - system.bias_force(q, qd)
        return friction_at_modes(system, law, q, qd, tau, modes)[1][0]

    grad = jax.grad(acceleration)(jnp.array([0.5, 0.3, u]))
    load = RP * M * L * np.hypot(w * w, alpha) + RN * M * G + RP * M * G * L / RB
    d_alpha = inertia + 0.3 * RP * M * L * alpha / np.hypot(w * w, alpha)
    partials = np.array([-0.3 * T_PRE / 0.5**2, load + T_PRE / 0.5, -1.0])
    np.testing.assert_allclose(grad, -partials / d_alpha, rtol=1e-10)


def test_stick_margin_of_a_load_dependent_law_says_what_to_pass():
    from jaxfric.simulate import stick_margin

    law = jf.JointFriction(0.5, 0.3, loads=(_load(),))
    with pytest.raises(TypeError, match="law.at_reactions"):
        stick_margin(law, jnp.zeros(1))
    reactions = _rotor().joint_reactions(*(jnp.zeros(1),) * 5)
    margin = stick_margin(law.at_reactions(reactions), jnp.zeros(1))
    np.testing.assert_allclose(margin, [_static_limit(0.5)], rtol=1e-14)


# A slider turning and sliding on a horizontal shaft (a cylindrical joint along
# x: prismatic "slide", a massless carriage, revolute "spin"), its centre of
# mass on the axis at C past the spin joint: the spin joint carries the radial
# force m g and the bending moment m g C whatever the motion.
CYL_M, CYL_C, CYL_RP, CYL_X0, CYL_PRE = 2.0, 0.05, 0.02, 0.3, 1.5


def _shaft(axial_inertia, rows=("spin", "slide"), offset=0.0):
    """The slider, its centre of mass `offset` (m) off the axis (then the
    reactions follow the accelerations, and so the friction)."""
    return jf.systems.RigidBodyTree(
        [-1, 0],
        ["prismatic", "revolute"],
        [(1.0, 0.0, 0.0)] * 2,
        [(0.0, 0.0, 0.0)] * 2,
        mass=[0.0, CYL_M],
        com=[(0.0, 0.0, 0.0), (CYL_C, offset, 0.0)],
        inertia=[np.zeros((3, 3)), np.diag([axial_inertia, 0.01, 0.01])],
        gravity=(0.0, 0.0, -G),
        joint_names=["slide", "spin"],
        friction_joints=rows,
    )


def _cylinder():
    return jf.CylindricalLoad(
        pin_radius=CYL_RP, initial_overlap=CYL_X0, overlap_delta="decrease",
        force_preload=CYL_PRE,
    )  # fmt: skip


def test_cylindrical_joint_lugre_against_scipy():
    # MotionSolve's cylindrical joint (Comment 11) with 3D LuGre per
    # contribution (Comment 7): launched turning and sliding, the slider stops
    # under one friction force along its contact slip (r_p ω, ẋ). Reference:
    # the same equations by Radau, the normal forces by hand (radial m g,
    # bending m g C/(x0 − x), preload F/μ_s); with the axial inertia m r_p²
    # both rows have the same mobility, so the slip keeps its direction.
    s0, s1, s2, vs, mu_s, mu_d = 1e4, 20.0, 0.0, 1e-3, 0.4, 0.3
    inertia = CYL_M * CYL_RP**2
    law = jf.JointLuGre(
        mu_s, mu_d, (_cylinder(),), bristle_stiffness=s0, damping_effects=s1,
        viscous_effects=s2, stiction_trans_vel=vs,
    )  # fmt: skip
    system = _shaft(inertia)
    reactions = system.joint_reactions(
        jnp.array([0.1, 0.7]), jnp.array([1.0, 2.0]), *(jnp.zeros(2),) * 3
    )
    normal = law.at_reactions(reactions).normal[0]
    by_hand = [CYL_M * G, CYL_M * G * CYL_C / (CYL_X0 - 0.1), CYL_PRE / mu_s]
    np.testing.assert_allclose(normal, by_hand, rtol=1e-13)

    t1, ts = 0.5, np.linspace(0.0, 0.5, 11)
    qd0 = np.array([0.3, 20.0])  # slide m/s, spin rad/s (contact 0.4 m/s)
    sol = jf.simulate(
        system, law, jnp.zeros(2), jnp.asarray(qd0), t1, ts=jnp.asarray(ts),
        rtol=1e-10, atol=1e-12,
    )  # fmt: skip
    assert sol.friction_state.shape == (len(ts), 6)

    def rhs(t, y):
        x, xd, w, z = y[0], y[2], y[3], y[4:].reshape(3, 2)
        v = np.array([CYL_RP * w, xd])
        speed = np.linalg.norm(v)
        g = mu_d + (mu_s - mu_d) * np.exp(-((speed / vs) ** 2))
        zdot = v - s0 * speed * z / g
        n = np.array([CYL_M * G, CYL_M * G * CYL_C / (CYL_X0 - x), CYL_PRE / mu_s])
        force = np.sum(n[:, None] * (s0 * z + s1 * zdot) + s2 * v, 0)
        return np.r_[xd, w, -force[1] / CYL_M, -CYL_RP * force[0] / inertia,
                     zdot.ravel()]  # fmt: skip

    y0 = np.r_[0.0, 0.0, qd0, np.zeros(6)]
    ref = solve_ivp(rhs, (0.0, t1), y0, method="Radau", rtol=1e-11, atol=1e-14,
                    t_eval=ts)  # fmt: skip
    q, qd = np.asarray(sol.q), np.asarray(sol.qd)
    # Measured 7.2e-10 m, 4.8e-8 rad, 1.3e-9 m/s, 8.8e-8 rad/s.
    np.testing.assert_allclose(q[:, 0], ref.y[0], atol=1e-8)  # slide, m
    np.testing.assert_allclose(q[:, 1], ref.y[1], atol=1e-6)  # spin, rad
    np.testing.assert_allclose(qd[:, 0], ref.y[2], atol=1e-7)
    np.testing.assert_allclose(qd[:, 1], ref.y[3], atol=1e-6)
    # It stopped (Coulomb alone: |v0| m / (μ_d N) = 0.23 s) and one force
    # stopped both motions: the contact slip kept its direction while it slid.
    assert np.all(np.abs(qd[-1]) < 1e-4)
    sliding = ts < 0.2
    ratio = qd[sliding, 0] / (CYL_RP * qd[sliding, 1])
    np.testing.assert_allclose(ratio, qd0[0] / (CYL_RP * qd0[1]), rtol=1e-9)


def test_cylindrical_joint_exact_coulomb_against_scipy():
    # The slider of `_shaft` with exact Coulomb friction on its contact force
    # (Comment 11): |F| <= μ_s N while stuck, F = μ_d N v/|v| while slipping,
    # v = (r_p ω, ẋ). Its centre of mass sits e = 5 mm off the axis, so the
    # weight turns it and the reactions follow the accelerations: at r = (C,
    # e cos θ, e sin θ) from the spin joint, with a_c = (ẍ, −e θ̈ sin θ −
    # e θ̇² cos θ, e θ̈ cos θ − e θ̇² sin θ) and w = m (a_c − g), the radial
    # force is |(w_y, w_z)|, the bending moment |(r × w)_y, (r × w)_z|, so N =
    # |(w_y, w_z)| + |(r × w)_⊥|/(x0 − x) + F_pre/μ_s depends on the friction
    # it sets: the reference solves that scalar equation by `brentq` at every
    # right-hand side of DOP853 (all by hand). The axial inertia 3 m r_p²
    # makes the rows' mobilities differ: the slip turns as it slows.
    mu_s, mu_d0, e = 0.4, 0.3, 0.005
    axial = 3.0 * CYL_M * CYL_RP**2
    inertia = axial + CYL_M * e**2  # about the axis
    system = _shaft(axial, offset=e)
    t1 = 0.5
    ts = jnp.linspace(0.0, t1, 11)

    @jax.jit
    def run(params, rates):
        """``(∂q(t1)/∂(μ_d, ẋ0, ω0), solution)``: one compiled program gives
        the values and their forward-mode derivatives."""

        def end(p):
            law = jf.JointFriction(mu_s, p[0], (_cylinder(),))
            sol = jf.simulate(
                system, law, jnp.zeros(2), p[1:], t1, ts=ts, force=_Ramp(rates),
                adjoint=diffrax.ForwardMode(),
            )  # fmt: skip
            return sol.q[-1], sol

        return jax.jacfwd(end, has_aux=True)(params)

    def normal(x, theta, w, xdd, wd):
        c, s = np.cos(theta), np.sin(theta)
        r = np.array([CYL_C, e * c, e * s])
        load = CYL_M * np.array(
            [xdd, -e * wd * s - e * w**2 * c, e * wd * c - e * w**2 * s + G]
        )
        bending = np.cross(r, load)[1:]
        return (
            np.hypot(load[1], load[2])
            + np.hypot(*bending) / (CYL_X0 - x)
            + CYL_PRE / mu_s
        )

    def accelerations(t, y, mu_d, rates, force):
        """``(ẍ, θ̈)`` under the contact friction `force` (N, (rot, axial))."""
        applied = np.asarray(rates) * t  # slide N, spin N·m
        torque = applied[1] - CYL_M * G * e * np.cos(y[1]) - CYL_RP * force[0]
        return (applied[0] - force[1]) / CYL_M, torque / inertia

    def rhs(t, y, mu_d, rates):
        x, theta, xd, w = y
        v = np.array([CYL_RP * w, xd])
        unit = v / np.linalg.norm(v)

        def excess(n):
            return n - normal(
                x, theta, w, *accelerations(t, y, mu_d, rates, mu_d * n * unit)
            )

        n = brentq(excess, 0.0, 1e3, xtol=1e-15, rtol=1e-15)
        return [xd, w, *accelerations(t, y, mu_d, rates, mu_d * n * unit)]  # fmt: skip

    def stop(t, y, *_):
        return np.hypot(CYL_RP * y[3], y[2]) - 1e-13

    stop.terminal = True

    # Launched at 0.3 m/s and 20 rad/s: it stops in both rows at once, then
    # holds against the weight's torque m g e < μ_s N r_p.
    params = np.array([mu_d0, 0.3, 20.0])
    jac, sol = run(jnp.asarray(params), jnp.zeros(2))
    ref = solve_ivp(
        rhs, (0.0, t1), np.r_[0.0, 0.0, params[1:]], "DOP853", rtol=1e-13,
        atol=1e-15, events=stop, dense_output=True, args=(mu_d0, np.zeros(2)),
    )  # fmt: skip
    t_stop = ref.t_events[0][0]
    assert sol.result == jf.RESULTS.successful
    # Measured: stop 3.1e-13 s; rest 9.8e-14 m, 1.9e-11 rad; while it slid
    # 1.1e-13 m, 1.9e-11 rad, 2.5e-12 m/s, 5.1e-11 rad/s.
    assert abs(float(sol.event_times[0]) - t_stop) < _EVENT_TOL
    np.testing.assert_allclose(sol.q[-1], ref.y_events[0][0][:2], atol=1e-10)
    sliding = np.asarray(ts) < t_stop
    np.testing.assert_allclose(
        np.c_[sol.q, sol.qd][sliding], ref.sol(np.asarray(ts)[sliding]).T, atol=1e-9
    )
    # Then stuck (the ramp is zero): exactly still in both rows.
    assert np.all(np.asarray(sol.modes)[~sliding] == 0)
    assert np.all(np.asarray(sol.qd)[~sliding] == 0.0)
    assert np.all(np.asarray(sol.q)[~sliding] == np.asarray(sol.q[-1]))

    # The derivatives of the rest position through the stop against central
    # differences of the same compiled run (measured 2.2e-10 relative).
    for k in range(3):
        h = 1e-6 * max(1.0, abs(params[k]))
        plus, minus = (
            np.asarray(run(jnp.asarray(params + sign * h * np.eye(3)[k]),
                           jnp.zeros(2))[1].q[-1])
            for sign in (1, -1)
        )  # fmt: skip
        np.testing.assert_allclose(
            jac[:, k], (plus - minus) / (2 * h), rtol=_GRADIENT_RTOL, atol=1e-9
        )

    # From rest under a ramp of axial force and torque: stuck while the
    # contact force P(t) = ((τ't − m g e)/r_p, F't) is within μ_s N, N = m g
    # (1 + C/x0) + F_pre/μ_s at rest (a quadratic in t), then it slips from
    # rest in the direction u of maximum dissipation: the contact's
    # acceleration a_c = (r_p θ̈, ẍ) along u with the friction μ_d N(a_c) u.
    rates = np.array([24.0, 0.3])  # N/s, N·m/s
    _, sol = run(jnp.array([mu_d0, 0.0, 0.0]), jnp.asarray(rates))
    limit = mu_s * normal(0.0, 0.0, 0.0, 0.0, 0.0)
    pull = np.array([rates[1] / CYL_RP, rates[0]])
    weight = np.array([CYL_M * G * e / CYL_RP, 0.0])
    t_break = max(np.roots([pull @ pull, -2 * pull @ weight, weight @ weight
                            - limit**2]).real)  # fmt: skip
    # Measured: breakaway 3.6e-14 s; then 5.7e-14 m, 4.5e-13 rad, 9.5e-13 m/s,
    # 6.8e-12 rad/s. With the mode choice at the levels of the stuck state
    # only (one round) no consistent slip direction was found and the run
    # failed.
    assert sol.result == jf.RESULTS.successful
    assert abs(float(sol.event_times[0]) - t_break) < _EVENT_TOL
    y_break = np.zeros(4)

    def released(unknowns):
        angle, n = unknowns
        u = np.array([np.cos(angle), np.sin(angle)])
        xdd, wd = accelerations(t_break, y_break, mu_d0, rates, mu_d0 * n * u)
        contact = np.array([CYL_RP * wd, xdd])
        return [contact[0] * u[1] - contact[1] * u[0],
                n - normal(0.0, 0.0, 0.0, xdd, wd)]  # fmt: skip

    angle, _ = fsolve(released, [np.arctan2(*(t_break * pull - weight)[::-1]),
                                 limit / mu_s], xtol=1e-14)  # fmt: skip
    u = np.array([np.cos(angle), np.sin(angle)])
    start = 1e-12 * u / np.array([CYL_RP, 1.0])  # just off rest along u
    ref = solve_ivp(
        rhs, (t_break, t1), np.r_[0.0, 0.0, start[1], start[0]], "DOP853",
        rtol=1e-13, atol=1e-15, dense_output=True, args=(mu_d0, rates),
    )  # fmt: skip
    after = np.asarray(ts) > t_break
    np.testing.assert_allclose(
        np.c_[sol.q, sol.qd][after], ref.sol(np.asarray(ts)[after]).T, atol=1e-8
    )
    assert np.all(np.asarray(sol.qd)[~after] == 0.0)


def test_cylindrical_load_checks():
    with pytest.raises(ValueError, match="pin_radius"):
        jf.CylindricalLoad(pin_radius=0.0)
    with pytest.raises(ValueError, match="overlap_delta"):
        jf.CylindricalLoad(overlap_delta="grow")
    # Elements of different sizes mix in one exact law: at the reactions an
    # IsotropicCoulomb with each element's rows (simulated: the ball beside a
    # rotor, below).
    assert jf.JointFriction(
        0.4, 0.3, loads=(_cylinder(), _load())
    ).rows_per_element == (2, 1)
    with pytest.raises(ValueError, match="each 1, 2 or 3"):
        jf.friction.IsotropicCoulomb(fc=1.0, dims=(2, 4))
    with pytest.raises(ValueError, match="at least one above 1"):
        jf.friction.IsotropicCoulomb(fc=1.0, dims=(1, 1))
    assert type(jf.friction.IsotropicCoulomb(fc=1.0, dims=np.int64(3)).dims) is int
    with pytest.raises(ValueError, match="`arms` must lie in"):
        jf.friction.IsotropicCoulomb(fc=1.0, arms=jnp.array([0.0, 1.0]))
    # At the reactions, the exact law is the contact's friction disk: levels
    # μ ΣN_k (N) on both rows, arms (r_p, 1).
    exact = jf.JointFriction(0.4, 0.3, loads=(_cylinder(),))
    reactions = _shaft(1e-3).joint_reactions(
        jnp.array([0.1, 0.7]), *(jnp.zeros(2),) * 4
    )
    disk = exact.at_reactions(reactions)
    total = CYL_M * G * (1 + CYL_C / (CYL_X0 - 0.1)) + CYL_PRE / 0.4
    assert (
        isinstance(disk, jf.friction.IsotropicCoulomb) and exact.rows_per_element == 2
    )
    np.testing.assert_allclose(disk.fc, [0.3 * total] * 2, rtol=1e-13)
    np.testing.assert_allclose(disk.fs, [0.4 * total] * 2, rtol=1e-13)
    np.testing.assert_allclose(disk.arms, [CYL_RP, 1.0], rtol=1e-15)
    # Its two rows must be a revolute then a prismatic joint.
    law = jf.JointLuGre(0.4, 0.3, (_cylinder(),), 1e4, 0.0, 0.0, 1e-3)
    swapped = _shaft(1e-3, rows=("slide", "spin"))
    reactions = swapped.joint_reactions(*(jnp.zeros(2),) * 5)
    with pytest.raises(ValueError, match="friction rows 0..1"):
        law.at_reactions(reactions)

    # Built the other way round (as load_motionsolve does: the revolute joint
    # first, the prismatic one outer), the reaction is the outer joint's, at
    # the slider's frame: bending m g C, not m g (C + x) at the revolute one.
    def tree(parents, kinds, mass):
        return jf.systems.RigidBodyTree(
            parents, kinds, [(1.0, 0.0, 0.0)] * 2, [(0.0, 0.0, 0.0)] * 2,
            mass=mass, com=[(0.0, 0.0, 0.0), (CYL_C, 0.0, 0.0)],
            inertia=[np.eye(3) * 1e-3 * m for m in mass],
            gravity=(0.0, 0.0, -G), joint_names=["spin", "slide"],
        )  # fmt: skip

    q = jnp.array([0.7, 0.1])
    outer = tree([-1, 0], ["revolute", "prismatic"], [0.0, CYL_M])
    normal = law.at_reactions(outer.joint_reactions(q, *(jnp.zeros(2),) * 4))
    by_hand = [CYL_M * G, CYL_M * G * CYL_C / (CYL_X0 - 0.1), CYL_PRE / 0.4]
    np.testing.assert_allclose(normal.normal[0], by_hand, rtol=1e-13)
    # Two joints on the base are not one cylindrical joint.
    apart = tree([-1, -1], ["revolute", "prismatic"], [CYL_M, CYL_M])
    with pytest.raises(ValueError, match="one of which is the other's parent"):
        law.at_reactions(apart.joint_reactions(q, *(jnp.zeros(2),) * 4))


# A ball joint (MotionSolve Comment 13): a 2 kg body whose centre of mass is
# the ball's centre, inertia I·1, on three revolute joints x-y-z through
# massless gimbals. Its reaction is the weight whatever it turns, N = m g +
# T_pre/(μ_s r_b), and a torque along a fixed axis n keeps it turning about n:
# I ω̇ = T(t) − μ_d r_b N sign(ω). All closed form.
BALL_M, BALL_I, BALL_RB, BALL_PRE = 2.0, 0.01, 0.01, 0.05
BALL_AXIS = np.array([1.0, 2.0, 2.0]) / 3.0


def _ball():
    return jf.systems.RigidBodyTree(
        [-1, 0, 1], ["revolute"] * 3, np.eye(3), np.zeros((3, 3)),
        mass=[0.0, 0.0, BALL_M], com=np.zeros((3, 3)),
        inertia=[np.zeros((3, 3)), np.zeros((3, 3)), BALL_I * np.eye(3)],
        gravity=(0.0, 0.0, -G), joint_names=["bx", "by", "bz"],
        friction_joints=[("bx", "by", "bz")],
    )  # fmt: skip


def _gimbal_axes(q):
    """By hand: the joint axes in the socket's frame, x, Rx y, Rx Ry z."""
    c1, s1, c2, s2 = jnp.cos(q[0]), jnp.sin(q[0]), jnp.cos(q[1]), jnp.sin(q[1])
    rx = jnp.array([[1.0, 0, 0], [0, c1, -s1], [0, s1, c1]])
    ry = jnp.array([[c2, 0, s2], [0, 1.0, 0], [-s2, 0, c2]])
    return jnp.stack([jnp.array([1.0, 0, 0]), rx[:, 1], (rx @ ry)[:, 2]], 1)


def _ball_closed_form(mu_s, mu_d, w0, rate, t):
    """``(stop, breakaway, ω·n at t)``: spun at ``w0`` about n against the
    growing torque, it stops at the root of ``w0 − (k_d t + rate t²/2)/I``,
    holds while ``rate·t <= k_s``, then turns back: ``k = μ r_b N``."""
    normal = BALL_M * G + BALL_PRE / (mu_s * BALL_RB)
    kd, ks = mu_d * BALL_RB * normal, mu_s * BALL_RB * normal
    stop = (jnp.sqrt(kd**2 + 2 * rate * BALL_I * w0) - kd) / rate
    breakaway = ks / rate
    back = (rate * (t**2 - breakaway**2) / 2 - kd * (t - breakaway)) / BALL_I
    return jnp.stack([stop, breakaway, -back])


def test_ball_joint_rows_and_reactions_by_hand():
    system = _ball()
    q, qd, qdd = jnp.array([0.3, -0.4, 0.7]), jnp.array([1.0, 2.0, -0.5]), jnp.ones(3)
    assert system.ball_rows == (0,) and system.vector_elements == ((0, 3),)
    np.testing.assert_allclose(system.friction_jacobian(q), _gimbal_axes(q), atol=1e-15)
    # J̇q̇ against central differences of E(q) along q̇.
    h = 1e-6
    fd = (_gimbal_axes(q + h * qd) - _gimbal_axes(q - h * qd)) @ qd / (2 * h)
    np.testing.assert_allclose(
        system.friction_jacobian_dot_qd(q, qd), fd, rtol=0, atol=1e-8
    )
    # The ball's reaction: its centre of mass does not move, so the socket
    # carries the weight; N = m g + T_pre/(μ_s r_b) on every law built on it.
    reactions = system.joint_reactions(q, qd, qdd, jnp.zeros(3), jnp.zeros(3))
    assert reactions.kinds == ("spherical",) * 3
    np.testing.assert_allclose(
        jnp.linalg.norm(reactions.wrench[:, 3:], axis=1), [BALL_M * G] * 3, rtol=1e-14
    )
    load = jf.SphericalLoad(ball_radius=BALL_RB, torque_preload=BALL_PRE)
    normal = BALL_M * G + BALL_PRE / (0.5 * BALL_RB)
    exact = jf.JointFriction(0.5, 0.4, loads=(load,)).at_reactions(reactions)
    np.testing.assert_allclose(exact.fc, [0.4 * normal] * 3, rtol=1e-14)
    np.testing.assert_allclose(exact.arms, [BALL_RB] * 3, rtol=1e-15)
    # LuGre (Comments 3, 7, 13): each contribution's 3D bristle on v = r_b ω.
    s0, s1, s2, vs = 1e4, 20.0, 0.1, 1e-3
    lugre = jf.JointLuGre(0.5, 0.4, (load,), s0, s1, s2, vs).at_reactions(reactions)
    z, slip = jnp.arange(6.0).reshape(2, 3) * 1e-5, jnp.array([0.3, -0.2, 0.1])
    v = BALL_RB * np.asarray(slip)
    speed = np.linalg.norm(v)
    g = 0.4 + 0.1 * np.exp(-((speed / vs) ** 2))
    zdot = v - s0 * speed * np.asarray(z) / g
    force = (
        np.array([BALL_M * G, BALL_PRE / 0.5 / BALL_RB])[:, None]
        * (s0 * np.asarray(z) + s1 * zdot)
        + s2 * v
    )
    np.testing.assert_allclose(
        lugre.force(z.reshape(-1), slip), BALL_RB * force.sum(0), rtol=1e-12
    )
    np.testing.assert_allclose(
        lugre.state_derivative(z.reshape(-1), slip), zdot.reshape(-1), rtol=1e-12
    )


def _ball_and_rotor(ball_inertia):
    """The ball of `_ball` (inertia `ball_inertia`, kg·m², about its centre)
    and beside it a rotor on its own revolute joint (`_rotor`'s body with its
    centre of mass on the axis, so its pin carries only its weight, axially):
    elements of different sizes in one law, the rotor's row first."""
    zero = np.zeros((3, 3))
    return jf.systems.RigidBodyTree(
        [-1, 0, 1, -1], ["revolute"] * 4, [*np.eye(3), (0, 0, 1)], np.zeros((4, 3)),
        mass=[0.0, 0.0, BALL_M, M], com=np.zeros((4, 3)),
        inertia=[zero, zero, ball_inertia, INERTIA * np.eye(3)],
        gravity=(0.0, 0.0, -G), joint_names=["bx", "by", "bz", "rotor"],
        friction_joints=["rotor", ("bx", "by", "bz")],
    )  # fmt: skip


class _BallTorque(jf.forces.AbstractStatelessForce):
    """A torque ``constant − rate·t·n`` (N·m, socket frame) on the ball of
    `_ball_and_rotor`, as joint torques; none on the rotor."""

    constant: jax.Array
    rate: jax.Array

    def __call__(self, t, q, qd):
        torque = self.constant - self.rate * t * jnp.asarray(BALL_AXIS)
        return jnp.append(_gimbal_axes(q[:3]).T @ torque, 0.0)


_BALL_T1 = 1.2
_BALL_TS = jnp.linspace(0.0, _BALL_T1, 25)


def _ball_law(mu_s, mu_d):
    """`JointFriction` on `_ball_and_rotor`: the rotor's `RevoluteLoad` (one
    row), then the ball's `SphericalLoad` (three)."""
    ball = jf.SphericalLoad(ball_radius=BALL_RB, torque_preload=BALL_PRE)
    return jf.JointFriction(mu_s, mu_d, loads=(_load(), ball))


@jax.jit
def _ball_run(params, system, torque):
    """``(∂ends/∂params, (ends, solution))`` for ``params = (μ_s, μ_d, ball
    spin ω0 about n, rotor ω0)`` (rad/s), ``ends`` the first three event times
    and the ball's spin about n at t1. One compiled program serves every ball
    simulation below (systems and torques are arguments)."""

    def ends(p):
        law = _ball_law(p[0], p[1])
        qd0 = jnp.append(p[2] * jnp.asarray(BALL_AXIS), p[3])
        sol = jf.simulate(
            system, law, jnp.zeros(4), qd0, _BALL_T1, ts=_BALL_TS, force=torque,
            adjoint=diffrax.ForwardMode(), throw=False,
        )  # fmt: skip
        spin = (_gimbal_axes(sol.q[-1, :3]) @ sol.qd[-1, :3]) @ BALL_AXIS
        value = jnp.append(sol.event_times[:3], spin)
        return value, (value, sol)

    return jax.jacfwd(ends, has_aux=True)(params)


def test_ball_joint_stops_holds_and_breaks_away_as_the_closed_form():
    # The ball launched at 8 rad/s about n against the torque −0.2 t n (N·m):
    # the exact law stops it, holds it at rest (ω = 0.0 exactly, fixed
    # orientation), then turns it back; beside it in the same JointFriction
    # the rotor spun at 10 rad/s stops at I w0/(μ_d (r_n m g + T_pre/μ_s)).
    # The switch path's events and derivatives against the closed forms.
    system = _ball_and_rotor(BALL_I * np.eye(3))
    assert _ball_law(0.5, 0.4).rows_per_element == (1, 3)
    params = jnp.array([0.5, 0.4, 8.0, 10.0])
    torque = _BallTorque(jnp.zeros(3), jnp.asarray(0.2))
    jac, (value, sol) = _ball_run(params, system, torque)
    assert sol.result == jf.RESULTS.successful

    def closed_form(p):
        rotor = INERTIA * p[3] / (p[1] * (RN * M * G + T_PRE / p[0]))
        stop, breakaway, spin = _ball_closed_form(*p[:3], 0.2, _BALL_T1)
        return jnp.stack([rotor, stop, breakaway, spin])

    # In order (`event_times` is sorted): the rotor stops at 0.344 s, the
    # ball at 0.480 s, and breaks away at 0.741 s.
    expected = closed_form(params)
    np.testing.assert_allclose(value[:3], expected[:3], rtol=0, atol=_EVENT_TOL)
    np.testing.assert_allclose(value[3], expected[3], rtol=_TRAJECTORY_TOL)
    np.testing.assert_allclose(
        jac, jax.jacfwd(closed_form)(params), rtol=1e-7, atol=1e-9
    )
    rotor_stop, stop, breakaway = (float(x) for x in expected[:3])
    rotor_held = np.asarray(_BALL_TS) > rotor_stop
    assert np.all(np.asarray(sol.qd)[rotor_held, 3] == 0.0)
    held = (_BALL_TS > stop + 1e-6) & (_BALL_TS < breakaway - 1e-6)
    assert int(held.sum()) >= 5
    assert float(jnp.max(jnp.abs(sol.qd[held]))) == 0.0
    assert float(jnp.max(jnp.abs(sol.q[held] - sol.q[held][:1]))) == 0.0
    # It turned about n alone: the rotation at rest is exp(θ n×), θ the
    # closed form's angle at the stop.
    theta = (
        8.0 * stop - (0.4 * BALL_RB * (BALL_M * G + BALL_PRE / (0.5 * BALL_RB))
        * stop**2 / 2 + 0.2 * stop**3 / 6) / BALL_I
    )  # fmt: skip
    k = np.cross(BALL_AXIS, np.eye(3)).T  # k v = n × v
    turn = np.eye(3) + np.sin(theta) * k + (1 - np.cos(theta)) * k @ k
    rot, _ = system.forward_kinematics(sol.q[held][0])
    np.testing.assert_allclose(rot[2], turn, atol=1e-10)


def test_ball_joint_checks():
    tree = dict(
        mass=[0.0, 0.0, 1.0], com=np.zeros((3, 3)),
        inertia=[np.zeros((3, 3))] * 2 + [np.eye(3)],
    )  # fmt: skip
    with pytest.raises(ValueError, match="chain in this order"):
        jf.systems.RigidBodyTree(
            [-1, 0, 1], ["revolute"] * 3, np.eye(3), np.zeros((3, 3)),
            friction_joints=[(0, 2, 1)], **tree,
        )  # fmt: skip
    with pytest.raises(ValueError, match="must sit at the first one's"):
        jf.systems.RigidBodyTree(
            [-1, 0, 1], ["revolute"] * 3, np.eye(3),
            [(0, 0, 0), (0, 0, 0.1), (0, 0, 0)], friction_joints=[(0, 1, 2)], **tree,
        )  # fmt: skip
    with pytest.raises(ValueError, match="gimbal lock"):
        jf.systems.RigidBodyTree(
            [-1, 0, 1], ["revolute"] * 3, [(1, 0, 0), (0, 1, 0), (1, 0, 0)],
            np.zeros((3, 3)), friction_joints=[(0, 1, 2)], **tree,
        )  # fmt: skip
    with pytest.raises(ValueError, match="one movable joint or three"):
        jf.systems.RigidBodyTree(
            [-1, 0, 1], ["revolute"] * 3, np.eye(3), np.zeros((3, 3)),
            friction_joints=[(0, 1)], **tree,
        )  # fmt: skip
    with pytest.raises(ValueError, match="`ball_radius` must lie in"):
        jf.SphericalLoad(ball_radius=0.0)
    # A load-independent law must cover the rows with a 3-row element at the
    # ball's.
    law = jf.friction.IsotropicCoulomb(fc=1.0, dims=(1, 2))
    with pytest.raises(ValueError, match="one element of 3 rows"):
        jf.simulate(_ball(), law, q0=jnp.zeros(3), qd0=jnp.ones(3), t1=0.1)
    law = jf.friction.IsotropicCoulomb(fc=1.0, dims=(3, 1))
    with pytest.raises(ValueError, match="does not fit the system's n_friction=3"):
        jf.simulate(_ball(), law, q0=jnp.zeros(3), qd0=jnp.ones(3), t1=0.1)
    # A ball element's load model must be a SphericalLoad, and vice versa.
    law = jf.JointFriction(0.5, 0.3, loads=(jf.RevoluteLoad(),) * 3)
    with pytest.raises(ValueError, match=r"`loads\[0\]` is a RevoluteLoad"):
        jf.simulate(_ball(), law, q0=jnp.zeros(3), qd0=jnp.ones(3), t1=0.1)
    with pytest.raises(ValueError, match="gimbal links .* must be massless"):
        jf.systems.RigidBodyTree(
            [-1, 0, 1], ["revolute"] * 3, np.eye(3), np.zeros((3, 3)),
            friction_joints=[(0, 1, 2)], **{**tree, "mass": [0.1, 0.0, 1.0]},
        )  # fmt: skip
    # Per-element coefficients: one per load model (a ball's three rows).
    two = jf.JointFriction([0.5, 0.6], 0.4, loads=(jf.SphericalLoad(),) * 2)
    check_law_size(two, 6)
    with pytest.raises(ValueError, match=r"must be a scalar or have shape \(6,\)"):
        check_law_size(jf.Coulomb(fc=jnp.ones(4)), 6)
    # Scalar rows on a ball joint would be friction about the socket's axes.
    with pytest.raises(ValueError, match=r"rows 0..2 of the system are one element"):
        jf.simulate(_ball(), jf.Coulomb(fc=0.1), jnp.zeros(3), jnp.ones(3), 0.1)


def test_ball_joint_turning_as_it_slows_stops_and_holds():
    # Inertias (0.05, 0.06, 0.012) kg·m² about the ball and a constant torque
    # of 0.08 N·m across the spin, below the slip level μ_d r_b N = 0.118 N·m:
    # the slip turns a right angle while it slows (an event), then stops and
    # holds; the rotor beside it starts at rest with no torque and stays
    # stuck. Before the slip force was continuous across that right angle the
    # run ended in max_steps_reached with no event (11695 rejected steps).
    system = _ball_and_rotor(np.diag([0.05, 0.06, 0.012]))
    torque = 0.08 * jnp.array([1.0, -1.0, 0.5]) / 1.5
    params = jnp.array([0.5, 0.4, 2.0, 0.0])
    _, (_, sol) = _ball_run(params, system, _BallTorque(torque, jnp.asarray(0.0)))
    assert sol.result == jf.RESULTS.successful
    events = np.asarray(sol.event_times)
    stop = events[np.isfinite(events)][-1]
    assert 0.5 < stop < 1.0 and int(sol.stats["num_events"]) >= 2
    after = np.asarray(_BALL_TS) > stop
    assert int(after.sum()) >= 3 and np.all(np.asarray(sol.qd)[after] == 0.0)
