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
    """Drive torque ``τ = rate·t`` on the crank, N·m (a module, so that `rate`
    is a differentiable leaf, not a constant closed over)."""

    rate: jax.Array

    def __call__(self, t, q, qd):
        return jnp.reshape(self.rate * t, (1,))


def make_four_bar(mech):
    """`jaxfric.systems.four_bar` from a ``[mechanism]`` table (gravity along
    −y)."""
    return jf.systems.four_bar(
        mech["crank"],
        mech["coupler"],
        mech["rocker"],
        mech["ground"],
        masses=mech["masses"],
        crank_angle=mech["crank_angle"],
        gravity=(0.0, -mech["gravity"], 0.0),
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


def crank_pin_force(mech, drive):
    """The force the ground exerts on the crank at its pivot, N (x, y), with
    the four-bar at rest at ``θ0`` under the drive torque `drive` (N·m) and
    held by friction at the crank: the nine equilibrium equations of the three
    rods' free-body diagrams (forces and moments; pins frictionless but the
    crank's), solved for the eight pin-force components and the crank's
    friction torque. Affine in `drive`; independent of jaxfric."""
    tip, joint, pivot = _pin_positions(mech, mech["crank_angle"])
    weight = [m * np.array([0.0, -mech["gravity"]]) for m in mech["masses"]]
    centres = [tip / 2, (tip + joint) / 2, (pivot + joint) / 2]

    def moment_rows(r):  # r × F as coefficients of (F_x, F_y)
        return np.array([-r[1], r[0]])

    def moment(r, f):
        return r[0] * f[1] - r[1] * f[0]

    # Unknowns: ground on crank (0:2), crank on coupler (2:4), rocker on
    # coupler (4:6), ground on rocker (6:8), crank friction torque (8).
    lhs, rhs = np.zeros((9, 9)), np.zeros(9)
    lhs[0:2, 0:2], lhs[0:2, 2:4], rhs[0:2] = np.eye(2), -np.eye(2), -weight[0]
    lhs[2, 2:4], lhs[2, 8] = -moment_rows(tip), -1.0
    rhs[2] = -drive - moment(centres[0], weight[0])
    lhs[3:5, 2:4], lhs[3:5, 4:6], rhs[3:5] = np.eye(2), np.eye(2), -weight[1]
    lhs[5, 4:6] = moment_rows(joint - tip)
    rhs[5] = -moment(centres[1] - tip, weight[1])
    lhs[6:8, 6:8], lhs[6:8, 4:6], rhs[6:8] = np.eye(2), -np.eye(2), -weight[2]
    lhs[8, 4:6] = -moment_rows(joint - pivot)
    rhs[8] = -moment(centres[2] - pivot, weight[2])
    return np.linalg.solve(lhs, rhs)[0:2]


def reaction_breakaway_time(mech, pin_radius, mu_static, rate, t_max):
    """The breakaway time of a crank whose friction grows with its pin force
    (MotionSolve Comment 9, pin term only: a planar linkage has no axial force
    and no bending moment): the first ``t`` with ``|rate·t − g(θ0)| =
    μ_s·r_p·|F_O(rate·t)|``, by `scipy.optimize.brentq`."""
    from scipy.optimize import brentq

    theta0, h = mech["crank_angle"], 1e-5
    load = (potential(theta0 + h, mech) - potential(theta0 - h, mech)) / (2 * h)

    def margin(t):
        force = np.linalg.norm(crank_pin_force(mech, rate * t))
        return mu_static * pin_radius * force - abs(rate * t - load)

    if margin(0.0) <= 0:
        raise ValueError("[reaction]: the crank is not held at t = 0.")
    ts = np.linspace(0.0, t_max, 401)
    first = int(np.argmax([margin(t) < 0 for t in ts]))
    return brentq(margin, ts[first - 1], ts[first], xtol=1e-15, rtol=1e-15)
