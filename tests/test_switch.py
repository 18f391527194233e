"""The exact event-driven stick–slip path (`jaxfric.simulate._switch`).

References: the analytic free Coulomb oscillator (Quinn; Farhat et al. 2010,
Sec. 5.1), an independent event-driven scipy `solve_ivp` reference written below
(modes chosen by enumerating every stick/slip combination, not by Farhat's
release loop), hand-computed breakaway times, and 5-point central finite
differences of the scipy reference for every gradient claim.
"""

import functools
import itertools
from typing import ClassVar

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import jaxfric as jf
from jaxfric.simulate._common import finish
from jaxfric.simulate._switch import _events_first

# Stick position of the free oscillator vs the analytic value (Farhat asks 1e-9).
STICK_TOL = 1e-9
# Jacobians vs 5-point central differences of the scipy reference.
JAC_TOL = 1e-6
# States vs the scipy reference at rtol 1e-12 (the path runs at rtol 1e-10).
STATE_TOL = 1e-8
# Breakaway time vs its hand-computed value.
BREAKAWAY_TOL = 1e-10
# vmap vs a loop of single solves: the same operations vectorised, which round
# differently; event times then move inside their 1e-13 bisection bracket.
VMAP_TOL = 1e-10

T1 = 10.0
TS = jnp.linspace(0.0, T1, 1001)
MAX_EVENTS = 12


# --- shared jitted functions (compiled once per session) -----------------------
# Parameters p = (fc, A, omega, x0, ratio, k, fv): ẍ + k x = A sin(omega t) − f,
# x(0) = x0, ẋ(0) = 0, Coulomb with kinetic level fc, static limit fs = ratio·fc
# and viscous term fv·ẋ. Friction, force, system and initial-state parameters.
SENSITIVITIES = [0, 1, 2, 3, 5]  # fc, A, omega, x0, k


def _simulate(p, max_events=MAX_EVENTS, **options):
    fc, amplitude, omega, x0, ratio, stiffness, fv = p
    return jf.simulate(
        jf.systems.Oscillator(mass=1.0, stiffness=stiffness),
        jf.Coulomb(fc, ratio * fc, fv=fv),
        q0=x0,
        qd0=0.0,
        t1=T1,
        force=jf.forces.Sine(amplitude, omega),
        ts=TS,
        max_events=max_events,
        throw=False,
        **options,
    )


def _final_state(p, **options):
    sol = _simulate(p, **options)
    return jnp.stack([sol.q[-1, 0], sol.qd[-1, 0]]), sol


# Reverse mode (the default adjoint), with the forward solution as aux: one
# compilation serves every single-trajectory test.
_jac_rev = jax.jit(jax.jacrev(_final_state, has_aux=True))


def _forward(p):
    return _jac_rev(p)[1]


# Forward mode (jax.jacfwd with diffrax.ForwardMode), vmapped over a batch of
# parameters: one compilation for the vmap and the jacfwd claims.
_final_state_forward_mode = functools.partial(
    _final_state, adjoint=diffrax.ForwardMode()
)
_batched = jax.jit(jax.vmap(jax.jacfwd(_final_state_forward_mode, has_aux=True)))


def _params(
    fc=1.0, amplitude=0.0, omega=1.0, x0=2.75, ratio=1.0, stiffness=1.0, fv=0.0
):
    return jnp.array([fc, amplitude, omega, x0, ratio, stiffness, fv])


FORCED_CASES = [
    # (fc, A, omega, x0): stick, breakaway, slip +, stick, slip −, stick,
    # slip +, reversal, slip − at T.
    (1.0, 1.5, 1.0, 0.3),
    # stick, breakaway, slip +, stick, breakaway, slip −, reversal, slip + at T.
    (1.0, 2.5, 0.8, 0.8),
]
BATCH = jnp.stack(
    [
        _params(x0=2.75),
        _params(x0=5.5),
        _params(*FORCED_CASES[0]),
        _params(*FORCED_CASES[1]),
        _params(1.0, 2.0, 1.0, 0.0, ratio=1.5),
    ]
)


@functools.cache
def _batch_results():
    """``(jacobians, solutions)`` of `BATCH` by the vmapped forward mode."""
    return _batched(BATCH)


# --- independent reference: scipy event-driven, modes by enumeration -----------


class _Reference:
    """``M q̈ = τ(t) − h(q, q̇) − Jᵀ f`` with constant ``M``, ``J``; friction
    element k slips with ``f = slip_force(s, d)`` or sticks with
    ``−lim_neg <= f <= lim_pos``."""

    def __init__(self, mass, bias, applied, jac, slip_force, lim_pos, lim_neg):
        self.mass = np.atleast_2d(mass)
        self.minv = np.linalg.inv(self.mass)
        self.bias, self.applied = bias, applied
        self.jac = np.atleast_2d(jac)
        self.slip_force = slip_force
        self.lim_pos, self.lim_neg = np.asarray(lim_pos), np.asarray(lim_neg)
        self.n, self.m = self.jac.shape[1], self.jac.shape[0]

    def forces(self, t, q, qd, modes):
        s = self.jac @ qd
        f = np.where(modes != 0, self.slip_force(s, np.where(modes >= 0, 1, -1)), 0)
        net = self.applied(t) - self.bias(q, qd)
        stuck = np.nonzero(modes == 0)[0]
        if stuck.size:
            js = self.jac[stuck]
            acc_free = self.minv @ (net - self.jac.T @ f)
            f[stuck] = np.linalg.solve(js @ self.minv @ js.T, js @ acc_free)
        return f, self.minv @ (net - self.jac.T @ f)

    def conditions(self, t, q, qd, modes):
        f, _ = self.forces(t, q, qd, modes)
        margin = np.minimum(self.lim_pos - f, self.lim_neg + f)
        return np.where(modes == 0, margin, modes * (self.jac @ qd))

    def choose_modes(self, t, q, qd, modes, free, breakaway):
        """Try every mode of the `free` elements; keep the consistent one: stick
        forces inside the limits, released elements accelerating their way.
        `breakaway` elements (stick force at its limit) slip towards it."""
        tol = 1e-9
        best = None
        f_stick, _ = self.forces(t, q, qd, modes)
        modes = modes.copy()
        modes[breakaway] = np.where(f_stick[breakaway] > 0, 1, -1)
        free = [k for k in free if k not in breakaway]
        for choice in itertools.product((-1, 0, 1), repeat=len(free)):
            cand = modes.copy()
            cand[free] = choice
            f, acc = self.forces(t, q, qd, cand)
            sdd = self.jac @ acc
            ok = all(
                (-self.lim_neg[k] - tol <= f[k] <= self.lim_pos[k] + tol)
                if cand[k] == 0
                else cand[k] * sdd[k] > 0
                for k in free
            )
            if ok and (best is None or np.sum(cand == 0) > np.sum(best == 0)):
                best = cand
        assert best is not None, "no consistent modes"
        return best

    def zero_velocity(self, qd, elements):
        """Remove the slip velocity of `elements` (kinetic-metric projection)."""
        if not len(elements):
            return qd
        js = self.jac[list(elements)]
        lam = np.linalg.solve(js @ self.minv @ js.T, js @ qd)
        return qd - self.minv @ js.T @ lam

    def simulate(self, q0, qd0, t1, ts, max_events=50):
        n = self.n
        t, q, qd = 0.0, np.array(q0, float), np.array(qd0, float)
        s0 = self.jac @ qd
        modes = np.sign(s0).astype(int)
        zero = list(np.nonzero(s0 == 0)[0])
        modes = self.choose_modes(t, q, qd, modes, zero, [])
        out = np.full((len(ts), 2 * n), np.nan)
        events, mode_history = [], []
        for _ in range(max_events):
            frozen = modes.copy()

            def rhs(time, state, frozen=frozen):
                _, acc = self.forces(time, state[:n], state[n:], frozen)
                return np.concatenate([state[n:], acc])

            def make_event(k, frozen=frozen, start=t):
                # Divided by the elapsed time: an element released at zero
                # velocity starts at the sign of its acceleration, not at 0.
                def ev(time, state):
                    g = self.conditions(time, state[:n], state[n:], frozen)[k]
                    return g / (time - start) if time > start else 1.0

                ev.terminal, ev.direction = True, -1
                return ev

            sol = solve_ivp(
                rhs,
                (t, t1),
                np.concatenate([q, qd]),
                method="DOP853",
                rtol=1e-12,
                atol=1e-14,
                max_step=0.05,  # stick phases have zero error estimates
                dense_output=True,
                events=[make_event(k) for k in range(self.m)],
            )
            t_end = sol.t[-1]
            inside = (ts >= t) & (ts <= t_end)
            if inside.any():
                out[inside] = sol.sol(ts[inside]).T
            mode_history.append((t, frozen))
            if sol.status != 1:
                return out, events, mode_history
            y = sol.y[:, -1]
            t, q, qd = t_end, y[:n], y[n:]
            events.append(t)
            g = self.conditions(t, q, qd, frozen)
            hit = np.nonzero(np.abs(g) < 1e-9)[0]
            breakaway = [int(k) for k in hit if frozen[k] == 0]
            at_zero = sorted(set(np.nonzero(frozen == 0)[0]) | set(hit))
            qd = self.zero_velocity(qd, at_zero)
            modes = self.choose_modes(t, q, qd, frozen, at_zero, breakaway)
        raise AssertionError("reference event budget exhausted")


def _oscillator_reference(fc, amplitude, omega, x0, ratio=1.0, stiffness=1.0):
    fs = ratio * fc
    return _Reference(
        mass=1.0,
        bias=lambda q, qd: stiffness * q,
        applied=lambda t: np.array([amplitude * np.sin(omega * t)]),
        jac=1.0,
        slip_force=lambda s, d: fc * d + 0.0 * s,
        lim_pos=[fs],
        lim_neg=[fs],
    )


def _reference_final(p):
    fc, amplitude, omega, x0, ratio, stiffness, fv = (float(v) for v in p)
    assert fv == 0.0  # the reference has no viscous term
    ref = _oscillator_reference(fc, amplitude, omega, x0, ratio, stiffness)
    out, _, _ = ref.simulate([x0], [0.0], T1, np.array([T1]))
    return out[-1]


def _central_jacobian(fn, p, indices, h=1e-3):
    """5-point central differences with respect to ``p[indices]``."""
    p = np.asarray(p, float)
    cols = []
    for i in indices:
        e = np.zeros_like(p)
        e[i] = h
        cols.append(
            (-fn(p + 2 * e) + 8 * fn(p + e) - 8 * fn(p - e) + fn(p - 2 * e)) / (12 * h)
        )
    return np.stack(cols, axis=1)


# --- free oscillator (Quinn; Farhat et al. 2010, Sec. 5.1) -----------------------


def test_free_oscillator_sticks_at_pi_exactly_still():
    jac, sol = _jac_rev(_params(x0=2.75))
    ts = np.asarray(sol.ts)
    q, qd = np.asarray(sol.q[:, 0]), np.asarray(sol.qd[:, 0])
    assert sol.result == jf.RESULTS.successful
    # Analytic: half a period about +Fc, x = 2Fc − x0 = −0.75, at t = π.
    assert abs(float(sol.event_times[0]) - np.pi) < STICK_TOL
    assert abs(q[-1] + 0.75) < STICK_TOL
    stuck = ts > np.pi
    assert np.all(qd[stuck] == 0.0)
    assert np.all(q[stuck] == q[-1])  # bit-constant
    assert np.all(np.asarray(sol.modes[stuck, 0]) == 0)
    # Stick force balances the spring: f = −k x.
    np.testing.assert_allclose(np.asarray(sol.friction[stuck, 0]), 0.75, atol=1e-9)
    assert int(sol.stats["num_events"]) == 1
    # Analytic derivative of x(T) = 2 Fc/k − x0 (no dependence on A at A = 0).
    np.testing.assert_allclose(
        np.asarray(jac[0, [0, 3, 5]]), [2.0, -1.0, -2.0], atol=JAC_TOL
    )
    np.testing.assert_allclose(np.asarray(jac[1]), 0.0, atol=0.0)


def test_free_oscillator_two_reversals():
    jac, sol = _jac_rev(_params(x0=5.5))
    # Analytic: x0 → 2 − x0 → −2 − x1 → 2 − x2 ... sticks at 6 Fc − x0 = 0.5.
    assert sol.result == jf.RESULTS.successful
    assert abs(float(sol.q[-1, 0]) - 0.5) < STICK_TOL
    np.testing.assert_allclose(
        np.asarray(sol.event_times[:3]), [np.pi, 2 * np.pi, 3 * np.pi], atol=1e-9
    )
    assert int(sol.stats["num_events"]) == 3
    # x(T) = 6 Fc/k − x0.
    np.testing.assert_allclose(
        np.asarray(jac[0, [0, 3, 5]]), [6.0, -1.0, -6.0], atol=JAC_TOL
    )


def test_second_derivative_through_reversals():
    # The same three events in k: t_i = iπ/√k, x(T) = 6 Fc/k − x0, so
    # d²t_i/dk² = (3/4) iπ k^(−5/2) and d²x/dk² = 12 Fc/k³. Each segment after
    # a reversal starts moving at an event time that depends on k; before the
    # start state carried the flow's δ² term, d²x/dk² came out 0.897 (not 12).
    def final(k):
        out, sol = _final_state_forward_mode(_params(x0=5.5, stiffness=k))
        return jnp.concatenate([out[:1], sol.event_times[:3]])

    def second(k):
        first = lambda k: jax.jvp(final, (k,), (jnp.ones_like(k),))[1]  # noqa: E731
        return jax.jvp(first, (k,), (jnp.ones_like(k),))[1]

    d2 = np.asarray(jax.jit(second)(jnp.array(1.0)))
    expected = [12.0, *(0.75 * np.pi * np.arange(1, 4))]
    np.testing.assert_allclose(d2, expected, rtol=0, atol=JAC_TOL)


def test_damped_coulomb_oscillator_sticks_analytically():
    # ẍ + fv ẋ + x = −fc·d (Coulomb with a viscous term, Farhat Eq. 4
    # symmetric): from rest at x0 > fc the first half swing is a damped cosine
    # about +fc, ending at t = π/ω_d at x1 = fc − (x0 − fc)·exp(−ζπ/ω_d),
    # ζ = fv/2, ω_d = √(1 − ζ²); |x1| < fc, so the mass sticks there.
    x0, fc, fv = 3.0, 1.0, 0.2
    zeta = fv / 2
    wd = np.sqrt(1 - zeta**2)
    decay = np.exp(-zeta * np.pi / wd)
    x1 = fc - (x0 - fc) * decay
    dx1_dfv = (x0 - fc) * decay * (np.pi / 2) / (1 - zeta**2) ** 1.5

    # The shared compiled Jacobian: its last parameter is fv.
    jac, sol = _jac_rev(_params(fc=fc, x0=x0, fv=fv))
    assert int(sol.stats["num_events"]) == 1
    assert abs(float(sol.event_times[0]) - np.pi / wd) < STICK_TOL
    assert abs(float(sol.q[-1, 0]) - x1) < STICK_TOL
    stuck = np.asarray(sol.ts) > np.pi / wd
    assert np.all(np.asarray(sol.qd[stuck, 0]) == 0.0)
    assert np.all(np.asarray(sol.q[stuck, 0]) == float(sol.q[-1, 0]))
    assert abs(float(jac[0, 6]) - dx1_dfv) < JAC_TOL


def test_gradient_through_tabulated_breakaway_stick_and_release():
    # A piecewise-linear force: breakaway at 1.29 s, stick at 3.98 s, release
    # at 4.56 s. The gradient of x(5) with respect to a knot value before the
    # breakaway against 5-point central differences of the same solve. Starting
    # each segment at its differentiated event time made diffrax move every
    # step but those clipped onto the knots, and this was 1.8e-5 off.
    knots = jnp.arange(7.0)
    values = jnp.array([0.0, 1.3, 2.0, 2.2, 0.5, 0.0, -0.3])
    law = jf.Coulomb(1.0, fs=1.5)

    def final(v1):
        force = jf.forces.Tabulated(knots, values.at[1].set(v1))
        sol = jf.simulate(
            jf.systems.Oscillator(1.0, 1.0),
            law,
            0.0,
            0.0,
            5.0,
            force=force,
            num_save=2,
            rtol=1e-10,
            atol=1e-13,
        )
        return sol.q[-1, 0], sol

    # One compilation gives the solution, the gradient and the differences.
    value_and_grad = jax.jit(jax.value_and_grad(final, has_aux=True))
    (_, sol), grad = value_and_grad(1.3)
    assert int(sol.stats["num_events"]) == 3
    np.testing.assert_allclose(
        np.asarray(sol.event_times[:3]), [9 / 7, 3.98311, 4.56259], atol=1e-5
    )

    def x(v1):
        return value_and_grad(v1)[0][0]

    h = 1e-3
    fd = (-x(1.3 + 2 * h) + 8 * x(1.3 + h) - 8 * x(1.3 - h) + x(1.3 - 2 * h)) / (12 * h)
    assert abs(float(grad) - float(fd)) < 1e-8 * max(1.0, abs(float(fd)))


# --- forced oscillator: breakaway, reversal, two stick phases --------------------


@pytest.mark.parametrize("index", [0, 1])
def test_forced_jacobian_against_reference(index):
    case = FORCED_CASES[index]
    fc, amplitude, omega, x0 = case
    p = _params(fc, amplitude, omega, x0)
    jac, sol = _jac_rev(p)
    assert sol.result == jf.RESULTS.successful
    modes = np.asarray(sol.modes[:, 0])
    switches = np.nonzero(np.diff(modes))[0]
    sequence = [int(modes[0])] + [int(modes[i + 1]) for i in switches]
    pairs = list(zip(sequence[:-1], sequence[1:], strict=True))
    assert sum(a == 0 and b != 0 for a, b in pairs) >= 1  # breakaway
    assert sum(a * b == -1 for a, b in pairs) >= 1  # reversal
    assert sequence.count(0) >= 2  # two stick phases

    # Reference states along the trajectory.
    ref = _oscillator_reference(fc, amplitude, omega, x0)
    out, events, _ = ref.simulate([x0], [0.0], T1, np.asarray(TS))
    np.testing.assert_allclose(np.asarray(sol.q[:, 0]), out[:, 0], atol=STATE_TOL)
    np.testing.assert_allclose(np.asarray(sol.qd[:, 0]), out[:, 1], atol=STATE_TOL)
    n_events = int(sol.stats["num_events"])
    np.testing.assert_allclose(
        np.asarray(sol.event_times[:n_events]), events, atol=STATE_TOL
    )

    # Jacobian of (x(T), ẋ(T)) w.r.t. (Fc, A, omega, x0, k).
    fd = _central_jacobian(_reference_final, np.asarray(p), SENSITIVITIES)
    np.testing.assert_allclose(
        np.asarray(jac[:, SENSITIVITIES]), fd, atol=JAC_TOL, rtol=0
    )
    # Forward mode (jax.jacfwd with diffrax.ForwardMode, vmapped) agrees.
    jac_fwd = np.asarray(_batch_results()[0][2 + index])
    np.testing.assert_allclose(jac_fwd[:, SENSITIVITIES], fd, atol=JAC_TOL, rtol=0)


def test_grazing_contact_does_not_chatter():
    # ẍ + x = 1.5 sin t − f, x0 = 0.5: stuck, the net force 1.5 sin t − 0.5
    # touches the limit Fs = 1 at t = π/2 without crossing it (grazing), then
    # breaks away backwards at 1.5 sin t − 0.5 = −1.
    p = _params(1.0, 1.5, 1.0, 0.5)
    sol = _forward(p)
    assert sol.result == jf.RESULTS.successful
    ref = _oscillator_reference(1.0, 1.5, 1.0, 0.5)
    out, events, _ = ref.simulate([0.5], [0.0], T1, np.asarray(TS))
    n_events = int(sol.stats["num_events"])
    assert n_events <= len(events) + 2
    np.testing.assert_allclose(np.asarray(sol.q[:, 0]), out[:, 0], atol=STATE_TOL)
    t_first = np.pi + np.arcsin(1.0 / 3.0)  # 1.5 sin t − 0.5 = −1
    assert abs(float(sol.event_times[0]) - t_first) < BREAKAWAY_TOL


def test_static_limit_above_kinetic_breakaway():
    # Karnopp's breakaway 1.5 × slip: Coulomb(fc=1, fs=1.5), x0 = 0 at rest,
    # F = 2 sin t: stuck (net = 2 sin t) until 2 sin t = 1.5.
    p = _params(fc=1.0, amplitude=2.0, omega=1.0, x0=0.0, ratio=1.5)
    sol = _forward(p)
    assert sol.result == jf.RESULTS.successful
    t_break = np.arcsin(0.75)  # hand-computed
    assert abs(float(sol.event_times[0]) - t_break) < BREAKAWAY_TOL
    ts = np.asarray(sol.ts)
    before = ts < t_break
    assert np.all(np.asarray(sol.q[before, 0]) == 0.0)
    assert np.all(np.asarray(sol.qd[before, 0]) == 0.0)
    np.testing.assert_allclose(
        np.asarray(sol.friction[before, 0]), 2.0 * np.sin(ts[before]), atol=1e-12
    )
    # After breakaway the kinetic level acts: acceleration (1.5 − 1)/m > 0.
    just_after = np.nonzero(~before)[0][0]
    assert int(sol.modes[just_after, 0]) == 1
    assert float(sol.friction[just_after, 0]) == 1.0
    ref = _oscillator_reference(1.0, 2.0, 1.0, 0.0, ratio=1.5)
    out, events, _ = ref.simulate([0.0], [0.0], T1, ts)
    np.testing.assert_allclose(np.asarray(sol.q[:, 0]), out[:, 0], atol=STATE_TOL)
    np.testing.assert_allclose(np.asarray(sol.qd[:, 0]), out[:, 1], atol=STATE_TOL)


# --- two DoF: asymmetric Coulomb + viscous (Farhat Eq. 4), simultaneous events ---


class _Linear2(jf.systems.AbstractSystem):
    """``M q̈ + K q = τ − Jᵀ f`` with constant 2×2 ``M``, ``K``, ``J``: one class
    (one compilation) for the two-DoF cases below."""

    mass: jax.Array
    stiffness: jax.Array
    jac: jax.Array
    n_dof: ClassVar[int] = 2
    n_friction: ClassVar[int] = 2

    def mass_matrix(self, q):
        return self.mass

    def bias_force(self, q, qd):
        return self.stiffness @ q

    def friction_jacobian(self, q):
        return self.jac

    def friction_jacobian_dot_qd(self, q, qd):
        return jnp.zeros_like(q)


@jax.jit
def _two_dof(system, fc_pos, fc_neg, fv_pos, fv_neg, q0, amplitude):
    return jf.simulate(
        system,
        jf.CoulombViscous(fc_pos, fc_neg, fv_pos, fv_neg),
        q0=q0,
        qd0=jnp.zeros(2),
        t1=T1,
        force=jf.forces.Sine(amplitude, 1.3),
        ts=TS[::2],
        max_events=30,
        throw=False,
    )


# Karnopp's stacked blocks (m1 = 1 on m2 = 2; springs k1 = 1 from m1, k2 = 3
# from m2 to the ground, k12 = 2 between them): element 1 is the relative
# friction (J row [1, −1]), element 2 the ground friction (a joint friction).
STACKED = _Linear2(
    mass=jnp.diag(jnp.array([1.0, 2.0])),
    stiffness=jnp.array([[3.0, -2.0], [-2.0, 5.0]]),
    jac=jnp.array([[1.0, -1.0], [0.0, 1.0]]),
)
FC_POS, FC_NEG = np.array([0.8, 2.5]), np.array([0.6, 2.0])
FV_POS, FV_NEG = np.array([0.1, 0.3]), np.array([0.2, 0.1])
STACKED_FORCE = np.array([2.0, 0.0])  # amplitude on m1; omega = 1.3 rad/s
STACKED_Q0 = np.array([0.5, -0.3])


def test_asymmetric_coulomb_viscous_two_dof():
    sol = _two_dof(STACKED, FC_POS, FC_NEG, FV_POS, FV_NEG, STACKED_Q0, STACKED_FORCE)
    assert sol.result == jf.RESULTS.successful

    def slip_force(s, d):  # Farhat Eq. 4
        return np.where(d > 0, FC_POS + FV_POS * s, -FC_NEG + FV_NEG * s)

    stiffness = np.asarray(STACKED.stiffness)
    ref = _Reference(
        np.asarray(STACKED.mass),
        lambda q, qd: stiffness @ q,
        lambda t: STACKED_FORCE * np.sin(1.3 * t),
        np.asarray(STACKED.jac),
        slip_force,
        FC_POS,
        FC_NEG,
    )
    ts = np.asarray(sol.ts)
    out, events, _ = ref.simulate(STACKED_Q0, [0.0, 0.0], T1, ts)
    np.testing.assert_allclose(np.asarray(sol.q), out[:, :2], atol=STATE_TOL)
    np.testing.assert_allclose(np.asarray(sol.qd), out[:, 2:], atol=STATE_TOL)
    n_events = int(sol.stats["num_events"])
    assert n_events == len(events)
    np.testing.assert_allclose(
        np.asarray(sol.event_times[:n_events]), events, atol=STATE_TOL
    )
    modes, qd = np.asarray(sol.modes), np.asarray(sol.qd)
    assert np.any(np.all(modes == 0, axis=1))  # both stuck at some time
    # The ground element is a joint friction: m2 exactly still while stuck.
    stuck2 = modes[:, 1] == 0
    assert np.all(qd[stuck2, 1] == 0.0)
    # Stick forces inside the asymmetric limits.
    f = np.asarray(sol.friction)
    for k in range(2):
        stuck = modes[:, k] == 0
        assert np.all((f[stuck, k] <= FC_POS[k]) & (f[stuck, k] >= -FC_NEG[k]))
    # The relative element is held by the Delassus solve: no drift in stick.
    stuck1 = modes[:, 0] == 0
    assert np.all(np.abs(np.asarray(sol.slip_velocity)[stuck1, 0]) < 1e-12)


def test_simultaneous_events_are_one_switch():
    # Two identical unit oscillators with joint friction (J = I), Fc = 1, from
    # x0 = 2.75: both velocities reach zero at t = π, x = −0.75 (Quinn).
    pair = _Linear2(mass=jnp.eye(2), stiffness=jnp.eye(2), jac=jnp.eye(2))
    ones = np.ones(2)
    sol = _two_dof(pair, ones, ones, 0 * ones, 0 * ones, 2.75 * ones, 0 * ones)
    assert sol.result == jf.RESULTS.successful
    assert int(sol.stats["num_events"]) == 1
    np.testing.assert_allclose(np.asarray(sol.q[-1]), -0.75, atol=STICK_TOL)
    assert np.all(np.asarray(sol.qd[-1]) == 0.0)
    assert np.all(np.asarray(sol.modes[-1]) == 0)


# --- batches and budgets ---------------------------------------------------------


def test_vmap_equals_loop():
    # Forward-mode adjoint in the batch, reverse-mode one in the loop: the same
    # forward operations, but for the saves (1001 times, 32 per segment): the
    # batch's steps write them (`StepSaves`), the loop's diffrax's save loop.
    batched = _batch_results()[1]
    for i, p in enumerate(BATCH):
        single = _forward(p)
        for a, b in zip(jax.tree.leaves(batched), jax.tree.leaves(single), strict=True):
            a, b = np.asarray(a)[i], np.asarray(b)
            if np.issubdtype(b.dtype, np.floating):
                np.testing.assert_allclose(a, b, rtol=0, atol=VMAP_TOL)
            else:  # modes, counters, result codes
                np.testing.assert_array_equal(a, b)


def test_event_budget_exhausted():
    # ẍ + x = 3 sin 5t − f from rest: stick/slip twice per forcing period, more
    # than MAX_EVENTS events in 10 s.
    p = _params(1.0, 3.0, 5.0, 0.0)
    sol = _forward(p)
    assert sol.result == jf.RESULTS.max_events_reached
    assert int(sol.stats["num_events"]) == MAX_EVENTS + 1
    assert np.all(np.isfinite(np.asarray(sol.event_times)))
    # Never a silently short trajectory: states past the last event are NaN.
    last = float(sol.event_times[-1])
    assert np.all(np.isnan(np.asarray(sol.q)[np.asarray(sol.ts) > last + 1.0]))
    # `simulate` raises by default (throw=True applies `finish`).
    with pytest.raises(RuntimeError, match="max_events"):
        finish(sol, True)


def test_save_times_with_repeats_event_time_and_t1():
    # Saves are split over segments a few at a time (short save buffers under
    # vmap): repeated times, a time equal to the event (t = π, saved after the
    # switch), several times equal to t1, and uniform grids of 3 and 101 points
    # all give the analytic free oscillator x = 1 + 1.75 cos t, then −0.75;
    # so do the repeats among 40 more times. The last two are written by the
    # steps (`StepSaves`: two and four per segment).
    irregular = jnp.array([0.0, 0.0, 1.0, 1.0, 1.0, 2.0, np.pi, np.pi, 3.5, T1, T1])
    mixed = jnp.sort(jnp.concatenate([irregular, jnp.linspace(0.0, T1, 40)]))
    grids = (jnp.linspace(0.0, T1, 3), jnp.linspace(0.0, T1, 101))
    for ts in (irregular, mixed, *grids):
        sol = jf.simulate(
            jf.systems.Oscillator(mass=1.0, stiffness=1.0),
            jf.Coulomb(1.0),
            2.75,
            0.0,
            T1,
            ts=ts,
        )
        t = np.asarray(ts)
        exact = np.where(t < np.pi, 1.0 + 1.75 * np.cos(t), -0.75)
        np.testing.assert_allclose(np.asarray(sol.q[:, 0]), exact, atol=STICK_TOL)
        stuck = t >= np.pi
        assert np.all(np.asarray(sol.qd[stuck, 0]) == 0.0)
        assert np.all(np.asarray(sol.modes[:, 0]) == np.where(stuck, 0, -1))


@pytest.mark.parametrize(
    "tau, fc",
    [
        # Releasing each joint in the direction of its stick force gives (+, +),
        # where joint 1 accelerates backwards.
        ((3.2, 1.5708), (0.3, 0.15)),
        # Both joints at 4/3 of their limits (a PD-tracked start from rest):
        # the release order is a near tie and only (stuck, slip+) holds.
        ((0.4, 0.2), (0.3 * (1 - 1e-6), 0.15)),
    ],
)
def test_coupled_release_from_rest_picks_the_consistent_modes(tau, fc):
    # Two-link arm at rest in a horizontal plane, both joints' stick forces
    # beyond their limits. The modes must be the ones a brute-force check of all
    # 3² combinations finds consistent (stuck: |f| <= fc; slipping at zero
    # velocity: mode·q̈ >= 0), not a chatter of zero-length segments or a
    # failed solve.
    arm = jf.systems.TwoLinkArm(
        m1=1.0, m2=1.0, l1=0.5, l2=0.5, lc1=0.25, lc2=0.25, I1=0.02, I2=0.02,
        gravity=0.0,
    )  # fmt: skip
    fc, fv, tau = np.array(fc), np.array([0.1, 0.05]), np.array(tau)
    sol = jf.simulate(
        arm,
        jf.CoulombViscous(fc, fc, fv, fv),
        jnp.zeros(2),
        jnp.zeros(2),
        0.5,
        force=jf.forces.Constant(tau),
        num_save=3,
    )
    mass = np.asarray(arm.mass_matrix(jnp.zeros(2)))
    consistent = []
    for modes in itertools.product([-1, 0, 1], repeat=2):
        stuck = np.array(modes) == 0
        # Unknowns (q̈, f): M q̈ + f = τ; q̈_i = 0 if stuck, else f_i = fc_i·mode_i.
        a = np.block([[mass, np.eye(2)], [np.diag(stuck), np.diag(~stuck)]])
        b = np.concatenate([tau, np.where(stuck, 0.0, fc * np.array(modes))])
        acc, f = np.split(np.linalg.solve(a.astype(float), b), 2)
        if all(
            abs(f[i]) <= fc[i] if stuck[i] else modes[i] * acc[i] >= 0 for i in range(2)
        ):
            consistent.append(modes)
    assert len(consistent) == 1
    assert tuple(np.asarray(sol.modes[0])) == consistent[0]
    assert int(sol.stats["num_events"]) <= 4
    assert float(sol.event_times[0]) > 1e-3  # no zero-length segments


def test_block_stuck_on_stuck_block_is_bit_still():
    # Free decay of the stacked blocks ends with both elements stuck: the ground
    # row [0, 1] pins q2 and, with it, the relative row [1, −1] pins q1, so both
    # positions are constant to the last bit and both velocities exactly 0.0
    # (the relative row alone would hold q̇1 − q̇2 only to rounding).
    sol = _two_dof(
        STACKED, FC_POS, FC_NEG, FV_POS, FV_NEG, jnp.array([2.5, -0.3]), jnp.zeros(2)
    )
    assert sol.result == jf.RESULTS.successful
    both = np.all(np.asarray(sol.modes) == 0, axis=1)
    assert both.sum() > 50 and both[-1]
    q, qd = np.asarray(sol.q)[both], np.asarray(sol.qd)[both]
    assert np.all(q == q[-1])
    assert np.all(qd == 0.0)


def test_event_times_come_first_in_order():
    # The segments' event times (increasing, `inf` for segments without an
    # event) moved to the front as `jnp.sort` would, one batch member per row.
    rng = np.random.default_rng(0)
    times = np.cumsum(rng.uniform(0.1, 1.0, (5, 12)), axis=1)
    times[rng.uniform(size=times.shape) < 0.5] = np.inf
    times[0] = np.inf  # no event at all
    times[1] = np.sort(times[1])  # all events first already
    moved = jax.vmap(_events_first)(jnp.asarray(times))
    np.testing.assert_array_equal(moved, np.sort(times, axis=1))
    # Derivatives move with the times, forward and reverse, as the sort's (an
    # `inf` entry's tangent is zero, as the switch path's `where` makes it).
    times = jnp.asarray(times)
    tangents = jnp.where(jnp.isinf(times), 0.0, rng.normal(size=times.shape))
    _, dot = jax.jvp(jax.vmap(_events_first), (times,), (tangents,))
    _, sorted_dot = jax.jvp(lambda t: jnp.sort(t, axis=1), (times,), (tangents,))
    np.testing.assert_array_equal(dot, sorted_dot)

    def weighted(order):
        def total(t):
            moved = order(t)
            return jnp.sum(jnp.where(jnp.isinf(moved), 0.0, moved) * jnp.arange(12.0))

        return jax.grad(total)(times[2])

    np.testing.assert_array_equal(weighted(_events_first), weighted(jnp.sort))
