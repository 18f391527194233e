"""Spatial algebra on rotation/translation pairs (Featherstone 2008, Ch. 2).

Motion vectors are ``(ω, v)`` (angular first, ``v`` the velocity of the point at
the frame origin); force vectors are ``(n, f)`` (moment about the frame origin,
force). A pose ``(R, p)`` of a frame B in a frame A holds B's axes in A
coordinates (columns of ``R``) and B's origin in A coordinates. Spatial inertias
are kept as ``(m, h, I_O)``: mass, first moment of mass ``h = m·c`` and
rotational inertia about the frame origin; this form adds without dividing by
the mass (massless links are fine) and transforms linearly.

Every function broadcasts over leading axes and works on NumPy arrays (model
building, no tracing cost) as well as JAX arrays (the traced algorithms).
"""

import jax
import jax.numpy as jnp
import numpy as np

from ..._math import sincos


def _xp(*arrays):
    """NumPy for NumPy inputs, `jax.numpy` as soon as one input is a JAX array."""
    return jnp if any(isinstance(a, jax.Array) for a in arrays) else np


def _sincos(xp, angle):
    """``(sin, cos)`` of `angle` with `xp`'s functions; `jaxfric._math.sincos`
    (vectorised float64) for `jax.numpy`."""
    return sincos(angle) if xp is jnp else (np.sin(angle), np.cos(angle))


# Products are written as broadcast multiplies and sums rather than `dot`s:
# on CPU, XLA fuses them with their neighbours, which keeps the number of
# kernels (and so the compile time) of a robot's dynamics low. (Sums over a
# tree's bodies are the exception, `_dynamics._tree_sum`.)


def matmul(a, b):
    """Batched 3×3 matrix product ``a @ b``."""
    xp = _xp(a, b)
    return (xp.expand_dims(a, -1) * xp.expand_dims(b, -3)).sum(-2)


def matvec(a, v):
    """Batched matrix–vector product ``a @ v``."""
    return (a * _xp(a, v).expand_dims(v, -2)).sum(-1)


def cross(a, b):
    """``a × b`` over the last axis."""
    return _xp(a, b).cross(a, b)


def skew(x):
    """Cross-product matrices ``[x]×`` (``[x]× y = x × y``), shape ``(..., 3, 3)``."""
    xp = _xp(x)
    x0, x1, x2 = (x[..., k : k + 1] for k in range(3))
    zero = xp.zeros_like(x0)
    rows = [
        xp.concatenate([zero, -x2, x1], -1),
        xp.concatenate([x2, zero, -x0], -1),
        xp.concatenate([-x1, x0, zero], -1),
    ]
    return xp.stack(rows, axis=-2)


def rpy_matrix(rpy):
    """Rotation matrix of URDF roll-pitch-yaw angles, ``Rz(yaw) Ry(pitch) Rx(roll)``.

    Args:
        rpy: ``(roll, pitch, yaw)``, rad, shape ``(..., 3)``.

    Returns:
        Shape ``(..., 3, 3)``.
    """
    xp = _xp(rpy)
    rpy = xp.asarray(rpy, dtype=float)
    (sr, sp, sy), (cr, cp, cy) = _sincos(xp, xp.moveaxis(rpy, -1, 0))
    rows = [
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ]
    return xp.stack([xp.stack(r, axis=-1) for r in rows], axis=-2)


def axis_rotation(axis, angle):
    """Rotation by `angle` (rad) about the unit vector `axis` (Rodrigues), batched:
    `axis` ``(..., 3)``, `angle` ``(...)`` -> ``(..., 3, 3)``."""
    xp = _xp(axis, angle)
    # The angle's floating dtype (float32 stays float32 with x64 on).
    dtype = xp.result_type(angle, float) if xp is jnp else float
    k = skew(xp.asarray(axis, dtype=dtype))
    s, c = _sincos(xp, angle)
    s, c = s[..., None, None], c[..., None, None]
    eye = xp.eye(3, dtype=dtype)
    return xp.broadcast_to(eye, k.shape) + s * k + (1.0 - c) * matmul(k, k)


def compose(rot1, pos1, rot2, pos2):
    """Pose of frame 2 in frame 0 from 1-in-0 ``(rot1, pos1)`` and 2-in-1."""
    return matmul(rot1, rot2), pos1 + matvec(rot1, pos2)


def inertia_about_origin(mass, com, inertia_com):
    """``(m, h, I_O)`` from mass, centre of mass and inertia about the centre."""
    cx = skew(com)
    return (
        mass,
        mass[..., None] * com,
        inertia_com - mass[..., None, None] * matmul(cx, cx),
    )


def transform_inertia(rot, pos, mass, first_moment, inertia):
    """Spatial inertia ``(m, h, I_O)`` of frame B expressed in frame A, given B's
    pose ``(rot, pos)`` in A.

    Parallel-axis theorem in additive form:
    ``I_O' = R I_O Rᵀ − [Rh]×[p]× − [p]×[Rh]× − m [p]×[p]×``.
    """
    h = matvec(rot, first_moment)
    px, hx = skew(pos), skew(h)
    rot_t = rot.swapaxes(-1, -2)
    hp = matmul(hx, px)
    inertia_a = (
        matmul(matmul(rot, inertia), rot_t)
        - hp
        - hp.swapaxes(-1, -2)
        - mass[..., None, None] * matmul(px, px)
    )
    return mass, h + mass[..., None] * pos, inertia_a


def motion_to_frame(rot, pos, omega, vel):
    """Motion vector in B coordinates at B's origin -> A coordinates at A's origin
    (B's pose in A is ``(rot, pos)``): ``ω' = R ω``, ``v' = R v + p × ω'``."""
    w = matvec(rot, omega)
    return w, matvec(rot, vel) + cross(pos, w)


def force_from_frame(rot, pos, moment, force):
    """Force vector in A coordinates about A's origin -> B coordinates about B's
    origin (B's pose in A is ``(rot, pos)``)."""
    rot_t = rot.swapaxes(-1, -2)
    return matvec(rot_t, moment - cross(pos, force)), matvec(rot_t, force)


def inertia_apply(mass, first_moment, inertia, omega, vel):
    """Spatial inertia times a motion vector: the momentum ``(n, f)``,
    ``n = I_O ω + h × v``, ``f = m v − h × ω``."""
    return (
        matvec(inertia, omega) + cross(first_moment, vel),
        mass[..., None] * vel - cross(first_moment, omega),
    )


def cross_motion(omega, vel, omega2, vel2):
    """Spatial motion cross product ``v ×m u`` (Featherstone Eq. 2.31)."""
    return cross(omega, omega2), cross(omega, vel2) + cross(vel, omega2)


def cross_force(omega, vel, moment, force):
    """Spatial force cross product ``v ×* f`` (Featherstone Eq. 2.32)."""
    return cross(omega, moment) + cross(vel, force), cross(omega, force)
