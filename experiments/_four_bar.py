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


def potential(theta, mech):
    """Gravity potential ``V(θ)`` of the four-bar (open-elbow mode), J: the
    coupler–rocker joint from the triangle of the coupler, the rocker and the
    diagonal from the crank's tip to the rocker pivot."""
    a, b, c, d = (mech[k] for k in ("crank", "coupler", "rocker", "ground"))
    tip = a * np.array([np.cos(theta), np.sin(theta)])
    pivot = np.array([d, 0.0])
    diag = np.linalg.norm(pivot - tip)
    ex = (pivot - tip) / diag
    along = (b**2 - c**2 + diag**2) / (2 * diag)
    joint = tip + along * ex + np.sqrt(b**2 - along**2) * np.array([-ex[1], ex[0]])
    heights = np.array([tip[1] / 2, (tip[1] + joint[1]) / 2, joint[1] / 2])
    return mech["gravity"] * float(np.dot(mech["masses"], heights))


def breakaway_time(mech, fc, rate):
    """``t* = (fc + g(θ0))/rate``: the crank, stuck at ``θ0`` under its gravity
    load ``g = dV/dθ`` and the ramp torque ``rate·t``, breaks away when the
    torque its friction must hold reaches ``fc`` (Farhat et al. 2010, Eq. 5)."""
    theta0, h = mech["crank_angle"], 1e-5
    load = (potential(theta0 + h, mech) - potential(theta0 - h, mech)) / (2 * h)
    return (fc + load) / rate
