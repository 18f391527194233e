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
from _joint_rotor import (
    _EVENT_TOL,
    _GRADIENT_RTOL,
    _TRAJECTORY_TOL,
    INERTIA,
    RB,
    RN,
    RP,
    T1,
    T_PRE,
    TS,
    G,
    L,
    M,
    _load,
    _Ramp,
    _rotor,
)
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

import jaxfric as jf


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
    from jaxfric.simulate import load_coupling
    from jaxfric.simulate._stick import friction_at_modes

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
    # The public diagnostic takes the applied torque, not the net force.
    coupling = load_coupling(system, law_big, q, qd, jnp.array([u]), modes)
    _, acc, _ = friction_at_modes(system, law_big, q, qd, net, modes)
    np.testing.assert_allclose(acc, [alpha_big], rtol=1e-12)
    np.testing.assert_allclose(coupling.friction, [u - inertia * alpha_big], rtol=1e-12)
    with pytest.raises(TypeError, match="no load coupling"):
        load_coupling(system, jf.Coulomb(1.0), q, qd, jnp.array([u]), modes)
    assert bool(coupling.converged) and int(coupling.iterations) <= 8
    slope = alpha_big / np.hypot(w * w, alpha_big)
    gain = -0.3 * big.pin_radius * M * L / inertia * slope
    assert 0.9 < gain < 1.0
    np.testing.assert_allclose(coupling.regularity, 1 - gain, rtol=1e-9)

    # Reverse mode (`jax.grad`: the load coupling's implicit derivative,
    # transposed) against the implicit function theorem on the scalar
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

    # Second derivatives (forward over reverse) against central differences
    # of that gradient: the solution moves with the parameters inside its
    # derivative rule too (measured 1.8e-8 relative to the largest, the
    # differences' own error; with the solution held fixed inside the rule
    # some entries were 5.2× off).
    params = jnp.array([0.5, 0.3, u])
    gradient = jax.jit(jax.grad(acceleration))
    hessian = jax.jit(jax.jacfwd(jax.grad(acceleration)))(params)
    steps = 1e-5 * np.eye(3)
    fd = np.stack(
        [(gradient(params + h) - gradient(params - h)) / 2e-5 for h in steps], axis=1
    )
    np.testing.assert_allclose(hessian, fd, rtol=0, atol=1e-6 * np.max(np.abs(fd)))


def test_stick_margin_of_a_load_dependent_law_says_what_to_pass():
    from jaxfric.simulate import stick_margin

    law = jf.JointFriction(0.5, 0.3, loads=(_load(),))
    with pytest.raises(TypeError, match="law.at_reactions"):
        stick_margin(law, jnp.zeros(1))
    reactions = _rotor().joint_reactions(*(jnp.zeros(1),) * 5)
    margin = stick_margin(law.at_reactions(reactions), jnp.zeros(1))
    np.testing.assert_allclose(margin, [_static_limit(0.5)], rtol=1e-14)
