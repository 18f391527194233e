"""Free rigid bodies with unit-quaternion attitudes and penalty contact with a
plane (Kikuuwe & Yamamoto 2008, Sec. IV-A, Eq. 22, 25–26).

R. Kikuuwe and M. Yamamoto, "A modular software architecture for simulating
mechanical systems involving Coulomb friction integrable by the Runge-Kutta
method", Proc. IEEE/RSJ IROS 2008, pp. 2277-2282.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.scipy.linalg
import numpy as np
from jaxtyping import Array, ArrayLike

from .._check import InRange, as_float, check_finite, is_concrete, raise_if_invalid
from .._types import Coordinates, Float, Jacobian, Matrix, SlipVector, Vector
from ._base import AbstractSystem

# Per body: position p (3) and attitude quaternion (w, x, y, z) (4) in q;
# velocity v (3) and angular velocity ω (3), both in the world frame, in q̇.
_NQ, _NV = 7, 6


def quaternion_to_matrix(quaternion: Float[ArrayLike, "4"]) -> Float[Array, "3 3"]:
    """The rotation matrix (body to world) of the quaternion ``(w, x, y, z)``,
    normalised first: the attitude is defined by its direction, so a norm that
    drifts in integration does not scale the inertia."""
    quaternion = jnp.asarray(quaternion)
    w, x, y, z = quaternion / jnp.linalg.norm(quaternion)
    return jnp.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def quaternion_rate(
    quaternion: Float[ArrayLike, "4"], omega: Float[ArrayLike, "3"]
) -> Float[Array, "4"]:
    """``q̇ = ½ (0, ω) ⊗ q`` for the angular velocity ``ω`` in the world frame,
    rad/s (Kikuuwe & Yamamoto 2008, Eq. 26: the map ``Q(ω, q)``). It keeps
    ``|q|`` constant: ``q·q̇ = 0``."""
    quaternion, omega = jnp.asarray(quaternion), jnp.asarray(omega)
    w, vec = quaternion[0], quaternion[1:]
    return 0.5 * jnp.concatenate(
        [-(omega @ vec)[None], w * omega + jnp.cross(omega, vec)]
    )


def _skew(a: Float[Array, "3"]) -> Float[Array, "3 3"]:
    """``[a]×`` with ``[a]× b = a × b``."""
    zero = jnp.zeros((), a.dtype)
    return jnp.array([[zero, -a[2], a[1]], [a[2], zero, -a[0]], [-a[1], a[0], zero]])


class PlaneContact(eqx.Module):
    """Penalty contact of each body of `FreeBodies`, a sphere, with the plane
    ``z = 0`` (normal ``+z``), Kikuuwe & Yamamoto 2008, Eq. 22 with the
    contact point ``p − R e_z`` (the sphere's lowest point):

        N = max(0, −K z_c − B ż_c)  while z_c = p_z − R < 0,  else 0,

    the plane pushing only (Eq. 22 clipped at zero: it does not pull the
    sphere back as it leaves). Two friction rows per body: the contact
    point's slip velocity ``v + ω × (−R e_z)`` along ``x`` and ``y``, m/s.

    Args:
        radius: sphere radius ``R`` per body (or one for all), m, ``> 0``.
        stiffness: ``K``, N/m, ``> 0``.
        damping: ``B``, N·s/m, ``>= 0``.
    """

    radius: Float[Array, "..."] = eqx.field(converter=as_float)
    stiffness: Float[Array, ""] = eqx.field(converter=as_float)
    damping: Float[Array, ""] = eqx.field(converter=as_float)

    def __check_init__(self):
        raise_if_invalid(self.parameter_checks())

    def parameter_checks(self):
        return (
            InRange("contact radius", self.radius, lower=0.0, lower_open=True),
            InRange("contact stiffness", self.stiffness, lower=0.0, lower_open=True),
            InRange("contact damping", self.damping, lower=0.0),
        )


class FreeBodies(AbstractSystem):
    """Free rigid bodies (Kikuuwe & Yamamoto 2008, Eq. 25–26): Newton's and
    Euler's equations in the world frame,

        m v̇ = f + m g,    I_w ω̇ = τ − ω × I_w ω,    I_w = R I Rᵀ,

    with coordinates ``q = (p, quaternion)`` per body (7, `n_coord`) and
    velocities ``q̇ = (v, ω)`` (6, `n_dof`), both world frame; ``dq/dt`` is
    `coordinate_rate` (``ṗ = v``, ``Q(ω, q)``). Applied generalised forces
    are ``(f, τ)`` per body, N and N·m about the centre of mass, world frame.

    The quaternion's norm is kept by the rate itself (``q·q̇ = 0``) and the
    attitude is taken from the normalised quaternion, so the integration's
    drift of the norm (RK4: below 1e-12 over the tests' runs) does not change
    the dynamics.

    With a `PlaneContact`, each body is a sphere on the plane ``z = 0``: the
    penalty normal force (Eq. 22) is part of the bias ``h``,
    `normal_forces` gives it for friction with a coefficient
    (`jaxfric.friction.Kikuuwe` with `mu` and ``dims = 2``: Eq. 23), and the
    friction rows are the contact points' tangential slip velocities.

    Which paths: Kikuuwe, smooth and dynamic laws (the exact switch path does
    not integrate quaternions yet and refuses the system).

    Args:
        mass: mass per body, kg, ``> 0``, shape ``(n_bodies,)`` (or a scalar
            for one body).
        inertia: rotational inertia about the centre of mass in the body
            frame, kg·m², symmetric positive definite: shape ``(n_bodies, 3,
            3)``, or ``(n_bodies, 3)`` principal moments.
        gravity: gravitational acceleration, m/s², shape ``(3,)`` (default
            ``(0, 0, −9.81)``).
        contact: a `PlaneContact`, or `None` (no contact and no friction rows).
    """

    mass: Float[Array, " b"] = eqx.field(converter=as_float)
    inertia: Float[Array, "b 3 3"] = eqx.field(converter=as_float)
    gravity: Float[Array, "3"] = eqx.field(converter=as_float)
    contact: PlaneContact | None

    def __init__(self, mass, inertia, gravity=(0.0, 0.0, -9.81), contact=None):
        mass = jnp.atleast_1d(as_float(mass))
        inertia = as_float(inertia)
        nb = mass.shape[0]
        if inertia.shape in ((3,), (nb, 3)):  # principal moments
            inertia = jnp.vectorize(jnp.diag, signature="(3)->(3,3)")(inertia)
        if inertia.shape == (3, 3):
            inertia = inertia[None]
        if mass.ndim != 1 or inertia.shape != (mass.shape[0], 3, 3):
            raise ValueError(
                "FreeBodies needs `mass` of shape (n_bodies,) and `inertia` of shape "
                f"(n_bodies, 3, 3) or (n_bodies, 3); got {mass.shape} and "
                f"{inertia.shape}."
            )
        gravity = as_float(gravity)
        if gravity.shape != (3,):
            raise ValueError(f"`gravity` must have shape (3,); got {gravity.shape}.")
        if contact is not None and not isinstance(contact, PlaneContact):
            raise TypeError(
                "`contact` must be a PlaneContact or None; got "
                f"{type(contact).__name__}."
            )
        if contact is not None and jnp.shape(contact.radius) not in ((), mass.shape):
            raise ValueError(
                "`PlaneContact.radius` must be a scalar or have one entry per body "
                f"{mass.shape}; got shape {jnp.shape(contact.radius)}."
            )
        self.mass, self.inertia, self.gravity, self.contact = (
            mass,
            inertia,
            gravity,
            contact,
        )
        if is_concrete(inertia):
            _check_inertia(np.asarray(inertia))

    @property
    def n_bodies(self) -> int:
        return self.mass.shape[0]

    @property
    def n_dof(self) -> int:  # pyright: ignore[reportIncompatibleVariableOverride]
        return _NV * self.n_bodies

    @property
    def n_coord(self) -> int:
        return _NQ * self.n_bodies

    @property
    def n_friction(self) -> int:  # pyright: ignore[reportIncompatibleVariableOverride]
        return 0 if self.contact is None else 2 * self.n_bodies

    def parameter_checks(self):
        checks = (
            InRange("mass", self.mass, lower=0.0, lower_open=True),
            InRange("gravity", self.gravity),
        )
        return checks + (
            () if self.contact is None else self.contact.parameter_checks()
        )

    def _split(self, q, qd=None):
        """``(p, quaternion)`` per body, and ``(v, ω)`` when `qd` is given."""
        nb = self.n_bodies
        q = q.reshape(nb, _NQ)
        if qd is None:
            return q[:, :3], q[:, 3:]
        qd = qd.reshape(nb, _NV)
        return q[:, :3], q[:, 3:], qd[:, :3], qd[:, 3:]

    def _world_inertia(self, quaternions):
        rot = jax.vmap(quaternion_to_matrix)(quaternions)
        return rot @ self.inertia @ jnp.swapaxes(rot, 1, 2)

    def mass_matrix(self, q: Coordinates) -> Matrix:
        self.check_vectors(q=q)
        _, quats = self._split(q)
        world = self._world_inertia(quats)
        nb, zero = self.n_bodies, jnp.zeros((3, 3), q.dtype)
        linear = self.mass[:, None, None] * jnp.eye(3, dtype=q.dtype)[None]
        blocks = [jnp.block([[linear[b], zero], [zero, world[b]]]) for b in range(nb)]
        return jax.scipy.linalg.block_diag(*blocks)

    def _radius(self):
        return jnp.broadcast_to(self.contact.radius, self.mass.shape)

    def _normal(self, q, qd):
        """Penalty normal force per body, N (Eq. 22, clipped at zero)."""
        pos, _, vel, _ = self._split(q, qd)
        height = pos[:, 2] - self._radius()
        push = -self.contact.stiffness * height - self.contact.damping * vel[:, 2]
        return jnp.where(height < 0, jnp.maximum(push, 0.0), 0.0)

    def bias_force(self, q: Coordinates, qd: Vector) -> Vector:
        self.check_vectors(q=q, qd=qd)
        _, quats, _, omega = self._split(q, qd)
        world = self._world_inertia(quats)
        linear = -self.mass[:, None] * self.gravity[None]
        if self.contact is not None:
            linear = linear.at[:, 2].add(-self._normal(q, qd))
        gyro = jnp.cross(omega, jnp.einsum("bij,bj->bi", world, omega))
        return jnp.concatenate([linear, gyro], axis=1).reshape(-1)

    def step_limit(self) -> Array | None:
        """``1/ω`` of the stiffest contact spring, ``ω = √(K/m)``, s (`None`
        without a contact)."""
        if self.contact is None:
            return None
        return jnp.sqrt(jnp.min(self.mass) / self.contact.stiffness)

    def normal_forces(self, q: Coordinates, qd: Vector) -> SlipVector:
        """The contact normal force of each body, repeated for its two
        friction rows, N (Kikuuwe & Yamamoto 2008, Eq. 22)."""
        self.check_vectors(q=q, qd=qd)
        if self.contact is None:
            return super().normal_forces(q, qd)
        return jnp.repeat(self._normal(q, qd), 2)

    def friction_jacobian(self, q: Coordinates) -> Jacobian:
        self.check_vectors(q=q)
        if self.contact is None:
            return jnp.zeros((0, self.n_dof), q.dtype)
        # Contact point velocity v + ω × a, a = (0, 0, −R): rows x and y of
        # [I, −[a]×] per body.
        rows = []
        for b, radius in enumerate(self._radius()):
            arm = jnp.array([0.0, 0.0, -1.0], q.dtype) * radius
            block = jnp.concatenate([jnp.eye(3, dtype=q.dtype), -_skew(arm)], axis=1)
            row = jnp.zeros((2, self.n_dof), q.dtype)
            rows.append(row.at[:, _NV * b : _NV * (b + 1)].set(block[:2]))
        return jnp.concatenate(rows, axis=0)

    def friction_jacobian_dot_qd(self, q: Coordinates, qd: Vector) -> SlipVector:
        self.check_vectors(q=q, qd=qd)
        return jnp.zeros((self.n_friction,), q.dtype)

    def coordinate_rate(self, q: Coordinates, qd: Vector) -> Coordinates:
        """``(ṗ, q̇uat) = (v, Q(ω, quat))`` per body (Kikuuwe & Yamamoto 2008,
        Eq. 26)."""
        self.check_vectors(q=q, qd=qd)
        _, quats, vel, omega = self._split(q, qd)
        rates = jax.vmap(quaternion_rate)(quats, omega)
        return jnp.concatenate([vel, rates], axis=1).reshape(-1)


def _check_inertia(inertia: np.ndarray) -> None:
    """Each body's inertia finite, symmetric and positive definite."""
    check_finite("inertia", inertia)
    for b, matrix in enumerate(inertia):
        scale = max(1e-300, float(np.max(np.abs(matrix))))
        if np.max(np.abs(matrix - matrix.T)) > 1e-12 * scale:
            raise ValueError(f"`inertia` of body {b} must be symmetric; got {matrix}.")
        if np.min(np.linalg.eigvalsh(matrix)) <= 0:
            raise ValueError(
                f"`inertia` of body {b} must be positive definite (principal "
                f"moments > 0); got eigenvalues {np.linalg.eigvalsh(matrix)}."
            )


__all__ = ["FreeBodies", "PlaneContact", "quaternion_rate", "quaternion_to_matrix"]
