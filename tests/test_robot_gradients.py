"""Gradients through a robot simulation with stick–slip (issue 4).

A planar two-link arm (`jaxfric.systems.TwoLinkArm`) in a vertical plane under
gravity, on the exact switch path: the shoulder is held by a static limit far
above its load; the elbow starts stuck, breaks away when the ramped torque
``τ2 = ρ t`` reaches its static limit plus its gravity torque, slips up, sticks
again once the torque falls off after ``t_fall``, and breaks away backwards
when the falling torque can no longer hold it against gravity. One reverse-mode
`jax.value_and_grad` of a weighted sum ``w · outputs(θ)`` is compiled once; the
weights pick which output's gradient a call returns, so the finite differences
and the breakaway-time check reuse the same compiled function.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

import jaxfric as jf

# Central differences (step _FD_STEP, relative) of an adaptive solve at rtol
# 1e-12: measured agreement ~2e-7 relative (truncation ~ step², solver noise).
_FD_TOLERANCE = 2e-6
_FD_STEP = 1e-4
# ∂t*/∂fs = 1/ρ holds exactly; event times are bisected to 1e-13 relative and the
# stick torque is integrated at rtol 1e-12.
_EVENT_TOLERANCE = 1e-9

_G = 9.81
_Q0 = (0.0, -np.pi / 2 + 0.3)  # elbow link 0.3 rad above hanging straight down
_T1 = 1.6
_T_FALL = 0.9  # after the breakaway (t* ≈ 0.82 s for the nominal parameters)
_FALL = 10.0  # N·m/s³
_SHOULDER_LIMIT = 50.0  # N·m, far above the shoulder's load in this run

# θ = (elbow static limit fs, elbow kinetic level fc, ramp rate ρ, elbow mass m2)
_THETA = np.array([0.6, 0.4, 1.0, 0.5])
_NAMES = ("fs", "fc", "rate", "m2")
# outputs = (breakaway time t*, q1(t1), q2(t1), q̇2(t1), re-stick time,
# backward breakaway time)
_T_STAR, _Q1_END, _Q2_END, _QD2_END, _T_STICK, _T_BACK = range(6)
_NUM_OUT = 6


class _FallingRamp(jf.forces.AbstractStatelessForce):
    """Elbow torque ``τ2 = ρ t − κ max(0, t − t_fall)³`` (N·m), shoulder 0:
    exactly the ramp ``ρ t`` up to ``t_fall``, twice continuously
    differentiable."""

    rate: jax.Array

    def __call__(self, t, q, qd):
        late = jnp.maximum(t - _T_FALL, 0.0)
        return jnp.stack([0.0 * t, self.rate * t - _FALL * late**3])


def _arm(m2):
    return jf.systems.TwoLinkArm(
        m1=1.0,
        m2=m2,
        l1=0.3,
        l2=0.3,
        lc1=0.15,
        lc2=0.15,
        I1=0.0075,
        I2=0.0075,
        gravity=_G,
    )


def _outputs(theta):
    fs, fc, rate, m2 = theta
    big = jnp.asarray(_SHOULDER_LIMIT)
    law = jf.Coulomb(fc=jnp.stack([big, fc]), fs=jnp.stack([big, fs]))
    sol = jf.simulate(
        _arm(m2),
        law,
        q0=jnp.asarray(_Q0),
        qd0=jnp.zeros(2),
        t1=_T1,
        ts=jnp.linspace(0.0, _T1, 9),
        force=_FallingRamp(rate),
        rtol=1e-12,
        atol=1e-14,
        max_events=4,
    )
    out = jnp.stack(
        [
            sol.event_times[0],
            sol.q[-1, 0],
            sol.q[-1, 1],
            sol.qd[-1, 1],
            sol.event_times[1],
            sol.event_times[2],
        ]
    )
    return out, (sol.modes, sol.stats["num_events"], sol.ts, sol.q)


@eqx.filter_jit
def _weighted(theta, weights):
    """``(w · outputs(θ), aux), ∂/∂θ``: one compilation for every test here."""

    def loss(theta):
        out, aux = _outputs(theta)
        return jnp.dot(weights, out), (out, aux)

    return jax.value_and_grad(loss, has_aux=True)(theta)


def _gradient(index, theta=_THETA):
    weights = np.zeros(_NUM_OUT)
    weights[index] = 1.0
    (_, (out, aux)), grad = _weighted(jnp.asarray(theta), jnp.asarray(weights))
    return np.asarray(out), aux, np.asarray(grad)


def _central_difference(index):
    """∂ outputs[index] / ∂θ by central differences of the same simulation."""
    fd = np.zeros(len(_THETA))
    for k in range(len(_THETA)):
        h = _FD_STEP * abs(_THETA[k])
        plus, minus = _THETA.copy(), _THETA.copy()
        plus[k] += h
        minus[k] -= h
        fd[k] = (
            _gradient(index, plus)[0][index] - _gradient(index, minus)[0][index]
        ) / (2 * h)
    return fd


def _elbow_torque(t, theta):
    _, _, rate, _ = theta
    return rate * t - _FALL * np.maximum(t - _T_FALL, 0.0) ** 3


def test_scenario_sticks_slips_sticks_and_slips_back():
    """Mode sequence of the elbow, and the backward breakaway at the time
    computed by hand from the re-stick state: stuck at rest, the elbow's stick
    torque is ``τ2(t) − m2 lc2 g cos(q1 + q2)``, which reaches ``−fs`` when the
    falling torque no longer holds it (a root of the cubic ``τ2``, by brentq)."""
    out, (modes, num_events, ts, q), _ = _gradient(_T_STAR)
    elbow = np.asarray(modes)[:, 1]
    assert elbow[0] == 0 and elbow[-1] == -1 and np.any(elbow == 1)
    np.testing.assert_array_equal(np.asarray(modes)[:, 0], 0)  # shoulder holds
    np.testing.assert_array_equal(np.asarray(q)[:, 0], _Q0[0])
    assert int(num_events) == 3
    assert 0.0 < out[_T_STAR] < _T_FALL < out[_T_STICK] < out[_T_BACK] < _T1

    fs, _, _, m2 = _THETA
    # The elbow angle while stuck, from a saved time inside the stick phase.
    inside = (np.asarray(ts) > out[_T_STICK]) & (np.asarray(ts) < out[_T_BACK])
    assert np.any(inside)
    q_stuck = np.asarray(q)[inside][0]
    gravity = m2 * 0.15 * _G * np.cos(q_stuck.sum())
    t_back = scipy.optimize.brentq(
        lambda t: _elbow_torque(t, _THETA) - gravity + fs,
        out[_T_STICK],
        _T1,
        xtol=1e-15,
    )
    np.testing.assert_allclose(out[_T_BACK], t_back, rtol=0, atol=_EVENT_TOLERANCE)


def test_grad_matches_central_differences():
    """Reverse-mode gradients of the final elbow angle and velocity and of the
    re-stick and backward-breakaway times, through three mode switches, against
    central differences of the simulation itself."""
    for index in (_Q2_END, _QD2_END, _T_STICK, _T_BACK):
        _, _, grad = _gradient(index)
        fd = _central_difference(index)
        scale = np.max(np.abs(fd))
        assert scale > 0
        np.testing.assert_allclose(grad, fd, rtol=0, atol=_FD_TOLERANCE * scale)


def test_breakaway_time_derivatives_are_exact():
    """Everything stuck at rest: the elbow's stick torque is ``ρ t − g2(q0)``
    (Delassus solve with J = I), so it breaks away at ``t* = (fs + g2)/ρ`` with
    ``g2 = m2 lc2 g cos(q1 + q2)``: ``∂t*/∂fs = 1/ρ``, ``∂t*/∂fc = 0``,
    ``∂t*/∂ρ = −t*/ρ``, ``∂t*/∂m2 = lc2 g cos(q1 + q2)/ρ``. The held shoulder
    angle does not depend on any parameter."""
    fs, _, rate, m2 = _THETA
    lever = 0.15 * _G * np.cos(sum(_Q0))
    t_star = (fs + m2 * lever) / rate
    out, _, grad = _gradient(_T_STAR)
    np.testing.assert_allclose(out[_T_STAR], t_star, rtol=0, atol=_EVENT_TOLERANCE)
    expected = np.array([1.0 / rate, 0.0, -t_star / rate, lever / rate])
    np.testing.assert_allclose(grad, expected, rtol=0, atol=_EVENT_TOLERANCE)
    _, _, grad_shoulder = _gradient(_Q1_END)
    np.testing.assert_array_equal(grad_shoulder, 0.0)
