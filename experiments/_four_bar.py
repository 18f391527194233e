"""The four-bar of the closed-chain experiments: the jaxfric model from the
settings' ``[mechanism]`` table, the drive ramp, and the closed-form statics
(computed from the geometry alone, independently of jaxfric)."""

import jax
import jax.numpy as jnp
import numpy as np
from _common import enable_float64

enable_float64()  # before jaxfric is imported, as in every experiment

import jaxfric as jf  # noqa: E402


class Ramp(jf.forces.AbstractStatelessForce):
    """Drive torque ``τ = rate·t`` on the crank (the first independent
    coordinate), N·m (a module, so that `rate` is a differentiable leaf, not a
    constant closed over)."""

    rate: jax.Array

    def __call__(self, t, q, qd):
        return jnp.zeros_like(qd).at[0].set(self.rate * t)


def make_four_bar(mech, ball=False):
    """`jaxfric.systems.four_bar` from a ``[mechanism]`` table (gravity along
    −y); with `ball`, a ball joint between crank and coupler (its friction
    element the ball's)."""
    return jf.systems.four_bar(
        mech["crank"],
        mech["coupler"],
        mech["rocker"],
        mech["ground"],
        masses=mech["masses"],
        crank_angle=mech["crank_angle"],
        gravity=(0.0, -mech["gravity"], 0.0),
        ball=ball,
    )


def _pin_positions(mech, theta):
    """``(tip, joint, pivot)``, m: the crank–coupler pin, the coupler–rocker pin
    (open-elbow mode, from the triangle of the coupler, the rocker and the
    diagonal from the crank's tip to the rocker pivot) and the rocker pivot, at
    crank angle `theta`."""
    a, b, c, d = (mech[k] for k in ("crank", "coupler", "rocker", "ground"))
    tip = a * np.array([np.cos(theta), np.sin(theta)])
    pivot = np.array([d, 0.0])
    diag = np.linalg.norm(pivot - tip)
    ex = (pivot - tip) / diag
    along = (b**2 - c**2 + diag**2) / (2 * diag)
    joint = tip + along * ex + np.sqrt(b**2 - along**2) * np.array([-ex[1], ex[0]])
    return tip, joint, pivot


def potential(theta, mech):
    """Gravity potential ``V(θ)`` of the four-bar (open-elbow mode), J: the
    coupler–rocker joint from the triangle of the coupler, the rocker and the
    diagonal from the crank's tip to the rocker pivot."""
    tip, joint, _ = _pin_positions(mech, theta)
    heights = np.array([tip[1] / 2, (tip[1] + joint[1]) / 2, joint[1] / 2])
    return mech["gravity"] * float(np.dot(mech["masses"], heights))


def breakaway_time(mech, fc, rate):
    """``t* = (fc + g(θ0))/rate``: the crank, stuck at ``θ0`` under its gravity
    load ``g = dV/dθ`` and the ramp torque ``rate·t``, breaks away when the
    torque its friction must hold reaches ``fc`` (Farhat et al. 2010, Eq. 5)."""
    theta0, h = mech["crank_angle"], 1e-5
    load = (potential(theta0 + h, mech) - potential(theta0 - h, mech)) / (2 * h)
    return (fc + load) / rate


def held_statics(mech, drive, ball=False):
    """The four-bar at rest at ``θ0`` under the drive torque `drive` (N·m),
    held by friction at the crank or, with `ball`, at the crank–coupler joint
    (a torque pair between crank and coupler; pins frictionless otherwise):
    ``(F_O, F_A, τ_f)``, the force the ground exerts on the crank at its pivot
    and the crank's on the coupler at its tip, N (x, y), and the friction
    torque that holds, N·m. The nine equilibrium equations of the three rods'
    free-body diagrams (forces and moments), solved for the eight pin-force
    components and ``τ_f``. Affine in `drive`; independent of jaxfric."""
    tip, joint, pivot = _pin_positions(mech, mech["crank_angle"])
    weight = [m * np.array([0.0, -mech["gravity"]]) for m in mech["masses"]]
    centres = [tip / 2, (tip + joint) / 2, (pivot + joint) / 2]

    def moment_rows(r):  # r × F as coefficients of (F_x, F_y)
        return np.array([-r[1], r[0]])

    def moment(r, f):
        return r[0] * f[1] - r[1] * f[0]

    # Unknowns: ground on crank (0:2), crank on coupler (2:4), rocker on
    # coupler (4:6), ground on rocker (6:8), friction torque (8).
    lhs, rhs = np.zeros((9, 9)), np.zeros(9)
    lhs[0:2, 0:2], lhs[0:2, 2:4], rhs[0:2] = np.eye(2), -np.eye(2), -weight[0]
    lhs[2, 2:4], lhs[2, 8] = -moment_rows(tip), -1.0
    rhs[2] = -drive - moment(centres[0], weight[0])
    lhs[3:5, 2:4], lhs[3:5, 4:6], rhs[3:5] = np.eye(2), np.eye(2), -weight[1]
    lhs[5, 4:6] = moment_rows(joint - tip)
    lhs[5, 8] = 1.0 if ball else 0.0  # the ball's torque on the coupler
    rhs[5] = -moment(centres[1] - tip, weight[1])
    lhs[6:8, 6:8], lhs[6:8, 4:6], rhs[6:8] = np.eye(2), -np.eye(2), -weight[2]
    lhs[8, 4:6] = -moment_rows(joint - pivot)
    rhs[8] = -moment(centres[2] - pivot, weight[2])
    x = np.linalg.solve(lhs, rhs)
    return x[0:2], x[2:4], x[8]


def reaction_breakaway_time(
    mech, arm, mu_static, rate, t_max, ball=False, torque_preload=0.0
):
    """The breakaway time of friction that grows with the pin force of the
    joint that holds (MotionSolve Comment 9, pin term only: a planar linkage
    has no axial force and no bending moment; with `ball`, Comment 13 at the
    crank–coupler ball, ``N = |F_A| + T_pre/(μ_s r_b)``): the first ``t`` with
    ``|τ_f(rate·t)| = μ_s·arm·|F(rate·t)| + T_pre`` (`held_statics`), by
    `scipy.optimize.brentq`."""
    from scipy.optimize import brentq

    def margin(t):
        f_o, f_a, held = held_statics(mech, rate * t, ball)
        force = np.linalg.norm(f_a if ball else f_o)
        return mu_static * arm * force + torque_preload - abs(held)

    if margin(0.0) <= 0:
        raise ValueError("the four-bar is not held at t = 0.")
    ts = np.linspace(0.0, t_max, 401)
    first = int(np.argmax([margin(t) < 0 for t in ts]))
    return brentq(margin, ts[first - 1], ts[first], xtol=1e-15, rtol=1e-15)
