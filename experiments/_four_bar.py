"""The four-bar's closed-form statics, shared by the closed-chain experiments:
computed from the geometry alone, independently of jaxfric."""

import numpy as np


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
