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

from .._check import (
    InRange,
    as_float,
    as_optional_float,
    check_finite,
    is_concrete,
    raise_if_invalid,
)
from .._types import Coordinates, Float, Jacobian, Matrix, SlipVector, Vector
from ._base import AbstractSystem
from .rigid._spatial import skew

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


class PlaneContact(eqx.Module):
    """Penalty contact of the bodies of `FreeBodies` with the plane ``z = 0``
    (normal ``+z``), Kikuuwe & Yamamoto 2008, Eq. 22, at each of a body's
    contact spheres: radius ``R`` centred at ``c_k``, a point fixed in the
    body (default one at the centre of mass: the body is a sphere; a box's
    eight corners with ``R = 0``: vertices, as MuJoCo's box–plane contacts).
    Sphere ``k`` touches at its lowest point ``a_k = R_b c_k − R e_z`` from
    the centre of mass (``R_b`` the body's attitude), at height ``h_k = p_z
    + a_k,z``; there

        N_k = max(0, −K h_k − B ḣ_k)  while h_k < 0,  else 0,

    with ``ḣ_k`` the normal velocity of the body's point at ``a_k``, the plane
    pushing only (Eq. 22 clipped at zero: it does not pull the body back as it
    leaves). ``N_k`` acts at ``a_k`` (force ``N_k e_z``, moment ``a_k × N_k
    e_z``). Two friction rows per contact: its slip velocity ``v + ω × a_k``
    along ``x`` and ``y``, m/s. Kikuuwe's law and `ContactLuGre` take several
    contacts per body; the exact `IsotropicCoulomb` takes one per body, or a
    patch: with several point contacts on a face its stick solve fails at the
    first stop (``RESULTS.stick_solve_failed``: the corners' stuck rows change
    rank as the face tilts, `docs/contact_friction.md`).

    With ``patch=True`` a body's contacts are one face (patch) with three
    friction rows: the slip ``v + ω × a_c`` (``x``, ``y``) of the point at the
    centre ``a_c`` of the springs' loads (the contacts weighted by their
    penetrations) and the spin ``r ω_z``, with ``r`` the loads' mean distance
    from ``a_c`` in the plane; each row carries the patch's total normal force
    ``N = Σ N_k``. `IsotropicCoulomb` with ``dims = 3`` (or Kikuuwe's law)
    on these rows bounds the friction force ``F`` and the moment ``M = r f_3``
    about the normal by the ellipsoid ``|F|² + (M/r)² <= (μN)²`` with slip
    along the maximum dissipation: the ellipsoidal limit surface of Goyal,
    Ruina & Papadopoulos (1991) and Howe & Cutkosky (1996). While the loads
    are the springs' (no normal motion, so the dampers carry none) it is
    exact for a patch that translates (``|F| = μN`` against the slip) and for
    a spin about the centre (``M = μ Σ N_k ρ_k``); a slip with spin is
    approximate (measured in `docs/contact_friction.md`). While two or more
    contacts carry load the stuck rows have rank 3 however the face rocks,
    so a box held on an incline does not move. On one loaded contact ``r =
    0`` and the spin row vanishes, and at a touch-down the rows change at a
    rate ``~ḣ/Σ w``: a patch is for a body resting or sliding on a face.
    Dropped tilted onto a corner, one run failed
    (``RESULTS.max_steps_reached``, `docs/contact_friction.md`); use point
    contacts with Kikuuwe's law for impacts. Friction on a patch takes
    three-row elements, so a system with a patch has no `PenaltyJoint` s.

    Args:
        radius: sphere radius ``R`` per body (or one for all), m, ``>= 0``.
        stiffness: ``K`` of every contact, N/m, ``> 0`` (a scalar).
        damping: ``B`` of every contact, N·s/m, ``>= 0`` (a scalar).
        centres: the spheres' centres in the body frame, m: shape ``(k, 3)``
            for every body or ``(n_bodies, k, 3)``; default ``None``, one at
            the centre of mass.
        patch: whether each body's contacts are one patch with three friction
            rows (static; needs `centres`, at least two per body); default
            ``False``, two rows per contact.
    """

    radius: Float[Array, "..."] = eqx.field(converter=as_float)
    stiffness: Float[Array, ""] = eqx.field(converter=as_float)
    damping: Float[Array, ""] = eqx.field(converter=as_float)
    centres: Float[Array, "..."] | None = eqx.field(
        converter=as_optional_float, default=None
    )
    patch: bool = eqx.field(static=True, default=False)

    def __check_init__(self):
        for name in ("stiffness", "damping"):
            if jnp.ndim(getattr(self, name)) != 0:
                raise ValueError(
                    f"`{name}` must be a scalar (the same for every contact); "
                    f"got shape {jnp.shape(getattr(self, name))}."
                )
        if self.centres is not None and (
            self.centres.ndim not in (2, 3) or self.centres.shape[-1] != 3
        ):
            raise ValueError(
                "`centres` must have shape (k, 3) or (n_bodies, k, 3); got "
                f"{self.centres.shape}."
            )
        if self.patch and (self.centres is None or self.centres.shape[-2] < 2):
            raise ValueError(
                "`patch=True` needs the patch's contact points `centres`, at "
                "least two per body (a face's corners, shape (k, 3) or "
                "(n_bodies, k, 3))."
            )
        raise_if_invalid(self.parameter_checks())

    def parameter_checks(self):
        centres = () if self.centres is None else (InRange("centres", self.centres),)
        return centres + (
            InRange("contact radius", self.radius, lower=0.0),
            InRange("contact stiffness", self.stiffness, lower=0.0, lower_open=True),
            InRange("contact damping", self.damping, lower=0.0),
        )

    @property
    def points_per_body(self) -> int:
        """``k``, the contact spheres of each body (static)."""
        return 1 if self.centres is None else self.centres.shape[-2]

    @property
    def rows_per_body(self) -> int:
        """Friction rows per body (static): 3 with `patch`, else 2 per
        contact."""
        return 3 if self.patch else 2 * self.points_per_body


# How far from 1 the norm of a `PenaltyJoint` axis may be (float32 rounding of
# a normalised vector is ~1e-7).
_AXIS_TOL = 1e-6


class PenaltyJoint(eqx.Module):
    """A revolute joint between two bodies of `FreeBodies` (or a body and the
    world) as a stiff spring-damper, Kikuuwe & Yamamoto 2008, Sec. IV-C: forces
    and moments that penalise the separation of the articulation points and
    the bending of the joint axes, leaving the rotation about the axis free.

    With the articulation points ``a_p``, ``a_c`` and axes ``u_p``, ``u_c`` of
    parent and child in the world frame, the child gets the force
    ``F = −K (a_c − a_p) − B (ȧ_c − ȧ_p)`` at ``a_c`` and the moment
    ``K_r (u_c × u_p) − B_r P (ω_c − ω_p)`` (``P`` removes the component along
    ``u_p``); the parent gets the opposite. The joint's friction row is the
    relative angular velocity about the axis, ``(ω_c − ω_p)·u_p``, rad/s.

    Args:
        parent: parent body index, or ``-1`` for the world (static).
        child: child body index (static).
        parent_point: the articulation point in the parent's frame, m (the
            world frame for the world).
        child_point: the articulation point in the child's frame, m.
        parent_axis: the joint axis in the parent's frame (unit: its norm
            within 1e-6 of 1).
        child_axis: the joint axis in the child's frame (unit, as
            `parent_axis`).
        stiffness: ``K``, N/m, ``> 0``.
        damping: ``B``, N·s/m, ``>= 0``.
        angular_stiffness: ``K_r``, N·m/rad, ``> 0``.
        angular_damping: ``B_r``, N·m·s/rad, ``>= 0``.
    """

    parent: int = eqx.field(static=True)
    child: int = eqx.field(static=True)
    parent_point: Float[Array, "3"] = eqx.field(converter=as_float)
    child_point: Float[Array, "3"] = eqx.field(converter=as_float)
    parent_axis: Float[Array, "3"] = eqx.field(converter=as_float)
    child_axis: Float[Array, "3"] = eqx.field(converter=as_float)
    stiffness: Float[Array, ""] = eqx.field(converter=as_float)
    damping: Float[Array, ""] = eqx.field(converter=as_float)
    angular_stiffness: Float[Array, ""] = eqx.field(converter=as_float)
    angular_damping: Float[Array, ""] = eqx.field(converter=as_float)

    def __check_init__(self):
        for name in ("parent_point", "child_point", "parent_axis", "child_axis"):
            if jnp.shape(getattr(self, name)) != (3,):
                raise ValueError(f"PenaltyJoint `{name}` must have shape (3,).")
        raise_if_invalid(self.parameter_checks())

    def parameter_checks(self):
        # Unit axes: a zero one would leave the joint's friction row zero
        # (`FreeBodies.independent_friction_rows` counts on it).
        axes = tuple(
            InRange(
                f"joint {name} norm",
                jnp.linalg.norm(getattr(self, name)),
                lower=1.0 - _AXIS_TOL,
                upper=1.0 + _AXIS_TOL,
            )
            for name in ("parent_axis", "child_axis")
        )
        return axes + (
            InRange("joint stiffness", self.stiffness, lower=0.0, lower_open=True),
            InRange("joint damping", self.damping, lower=0.0),
            InRange(
                "joint angular_stiffness",
                self.angular_stiffness,
                lower=0.0,
                lower_open=True,
            ),
            InRange("joint angular_damping", self.angular_damping, lower=0.0),
        )

    def _frames(self, system, q, qd):
        """World-frame points, their velocities, the axes and the angular
        velocities of parent and child."""
        out = []
        for body, point, axis in (
            (self.parent, self.parent_point, self.parent_axis),
            (self.child, self.child_point, self.child_axis),
        ):
            pos, rot, vel, omega = system.body_state(q, qd, body)
            arm = rot @ point
            out.append((pos + arm, vel + jnp.cross(omega, arm), rot @ axis, omega, arm))
        return out

    def generalised_force(self, system, q, qd) -> Vector:
        """The joint's forces and moments on parent and child as a generalised
        force, shape ``(n_dof,)``."""
        (a_p, va_p, u_p, w_p, arm_p), (a_c, va_c, u_c, w_c, arm_c) = self._frames(
            system, q, qd
        )
        force = -self.stiffness * (a_c - a_p) - self.damping * (va_c - va_p)
        relative = w_c - w_p
        bending = relative - (relative @ u_p) * u_p
        moment = self.angular_stiffness * jnp.cross(u_c, u_p)
        moment = moment - self.angular_damping * bending
        out = jnp.zeros((system.n_dof,), q.dtype)
        c = _NV * self.child
        out = out.at[c : c + 3].add(force)
        out = out.at[c + 3 : c + 6].add(moment + jnp.cross(arm_c, force))
        if self.parent >= 0:
            p = _NV * self.parent
            out = out.at[p : p + 3].add(-force)
            out = out.at[p + 3 : p + 6].add(-moment - jnp.cross(arm_p, force))
        return out

    def jacobian_row(self, system, q) -> Vector:
        """``∂/∂q̇`` of ``(ω_c − ω_p)·u_p``, shape ``(n_dof,)``."""
        zero = jnp.zeros((system.n_dof,), q.dtype)
        axis = system.rotation(q, self.parent) @ self.parent_axis
        row = zero.at[_NV * self.child + 3 : _NV * self.child + 6].set(axis)
        if self.parent >= 0:
            p = _NV * self.parent
            row = row.at[p + 3 : p + 6].set(-axis)
        return row

    def jacobian_dot_qd(self, system, q, qd) -> Float[Array, ""]:
        """``J̇ q̇`` of the row: ``(ω_c − ω_p)·(ω_p × u_p)``."""
        _, rot, _, w_p = system.body_state(q, qd, self.parent)
        w_c = system.body_state(q, qd, self.child)[3]
        axis = rot @ self.parent_axis
        return (w_c - w_p) @ jnp.cross(w_p, axis)


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

    With a `PlaneContact`, each body touches the plane ``z = 0`` at its
    contact spheres (one sphere by default; a box's corners): the penalty
    normal forces (Eq. 22) and their moments are part of the bias ``h``,
    `normal_forces` gives them for friction with a coefficient
    (`jaxfric.friction.Kikuuwe` with `mu` and ``dims = 2``, or 3 on a patch:
    Eq. 23), and the friction rows are the contact points' tangential slip
    velocities (or a patch's slip and spin, `PlaneContact`'s ``patch``).

    With `PenaltyJoint` s, bodies are joined to each other or to the world by
    stiff spring-dampers (Kikuuwe & Yamamoto Sec. IV-C): one friction row per
    joint, the relative angular velocity about its axis. Friction rows: two
    per contact (or three per patch) first (body by body, its contacts in
    order), then one per joint. A drive torque ``τ`` about the joints' axes is
    the generalised force ``J_jointᵀ τ`` (the joint rows of
    `friction_jacobian`).

    Which paths: all of them (each integrates ``q`` by `coordinate_rate`).

    Args:
        mass: mass per body, kg, ``> 0``, shape ``(n_bodies,)`` (or a scalar
            for one body).
        inertia: rotational inertia about the centre of mass in the body
            frame, kg·m², symmetric positive definite: shape ``(n_bodies, 3,
            3)``, or ``(n_bodies, 3)`` principal moments.
        gravity: gravitational acceleration, m/s², shape ``(3,)`` (default
            ``(0, 0, −9.81)``).
        contact: a `PlaneContact`, or `None` (no contact rows).
        joints: `PenaltyJoint` s (default none).
    """

    mass: Float[Array, " b"] = eqx.field(converter=as_float)
    inertia: Float[Array, "b 3 3"] = eqx.field(converter=as_float)
    gravity: Float[Array, "3"] = eqx.field(converter=as_float)
    contact: PlaneContact | None
    joints: tuple["PenaltyJoint", ...]

    def __init__(
        self, mass, inertia, gravity=(0.0, 0.0, -9.81), contact=None, joints=()
    ):
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
        if (
            contact is not None
            and contact.centres is not None
            and contact.centres.ndim == 3
            and contact.centres.shape[0] != mass.shape[0]
        ):
            raise ValueError(
                "`PlaneContact.centres` of shape (n_bodies, k, 3) needs one row "
                f"per body ({mass.shape[0]}); got {contact.centres.shape}."
            )
        joints = tuple(joints)
        if contact is not None and contact.patch and joints:
            raise ValueError(
                "FreeBodies with a patch contact takes no `joints`: friction "
                "on a patch is three-row elements, a joint's is one row."
            )
        for j, joint in enumerate(joints):
            if not isinstance(joint, PenaltyJoint):
                raise TypeError(
                    f"`joints[{j}]` must be a PenaltyJoint; got {type(joint).__name__}."
                )
            if not (-1 <= joint.parent < nb and 0 <= joint.child < nb):
                raise ValueError(
                    f"`joints[{j}]`: parent {joint.parent} and child {joint.child} "
                    f"must be body indices 0 to {nb - 1} (parent -1: the world)."
                )
        self.mass, self.inertia, self.gravity, self.contact = (
            mass,
            inertia,
            gravity,
            contact,
        )
        self.joints = joints
        if is_concrete(inertia):
            _check_inertia(np.asarray(inertia))

    @property
    def n_bodies(self) -> int:
        """The number of bodies (static)."""
        return self.mass.shape[0]

    @property
    def n_dof(self) -> int:  # pyright: ignore[reportIncompatibleVariableOverride]
        return _NV * self.n_bodies

    @property
    def n_coord(self) -> int:
        return _NQ * self.n_bodies

    @property
    def n_friction(self) -> int:  # pyright: ignore[reportIncompatibleVariableOverride]
        return self._n_contact_rows + len(self.joints)

    @property
    def independent_friction_rows(self) -> bool:  # pyright: ignore[reportIncompatibleVariableOverride]
        """True with one point contact per body (a sphere each: its two rows
        alone carry the body's ``v_x``, ``v_y``, so no combination of rows
        vanishes) and at most one `PenaltyJoint` (its row, about a unit axis,
        has no linear velocity). Not for several contacts per body (a box's
        corners: eight rows of rank at most five, none has ``v_z``) or a
        patch, whose spin row vanishes on one loaded contact."""
        one_point = self.contact is None or (
            not self.contact.patch and self.contact.points_per_body == 1
        )
        return one_point and len(self.joints) <= 1

    @property
    def _n_contact_rows(self) -> int:
        if self.contact is None:
            return 0
        return self.n_bodies * self.contact.rows_per_body

    def parameter_checks(self):
        checks = (
            InRange("mass", self.mass, lower=0.0, lower_open=True),
            InRange("gravity", self.gravity),
        )
        checks += sum((joint.parameter_checks() for joint in self.joints), ())
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

    def _contact_arms(self, q):
        """``a_k = R_b c_k − R e_z`` per body and contact, world frame, m,
        shape ``(n_bodies, k, 3)``, and the body-fixed part ``R_b c_k``."""
        _, quats = self._split(q)
        nb, k = self.n_bodies, self.contact.points_per_body
        radius = jnp.broadcast_to(self.contact.radius, (nb,)).astype(q.dtype)
        if self.contact.centres is None:
            fixed = jnp.zeros((nb, k, 3), q.dtype)
        else:
            centres = jnp.broadcast_to(self.contact.centres, (nb, k, 3))
            rot = jax.vmap(quaternion_to_matrix)(quats)
            fixed = jnp.einsum("bij,bkj->bki", rot, centres.astype(q.dtype))
        return fixed.at[..., 2].add(-radius[:, None]), fixed

    def _patch(self, q):
        """Each body's patch (`PlaneContact.patch`): the arm ``a_c`` of the
        centre of its springs' loads, world frame, m, shape ``(n_bodies, 3)``,
        and the loads' mean distance ``r`` from it in the plane, m, shape
        ``(n_bodies,)``. The weights are the penetrations ``max(0, −h_k)``
        (the springs' loads over ``K``); a body off the plane takes its lowest
        contact and ``r = 0``."""
        height, arms = self._heights(q)
        weight = jnp.maximum(-height, 0.0)
        total = jnp.sum(weight, axis=1)
        touching = total > 0
        share = weight / jnp.where(touching, total, 1.0)[:, None]
        lowest = jnp.take_along_axis(
            arms, jnp.argmin(height, axis=1)[:, None, None], axis=1
        )[:, 0]
        centre = jnp.where(
            touching[:, None], jnp.einsum("bk,bki->bi", share, arms), lowest
        )
        # |(a_k − a_c)_xy| with a zero-safe derivative (a lone loaded contact
        # sits at the centre).
        square = jnp.sum((arms - centre[:, None])[..., :2] ** 2, axis=-1)
        some = square > 0
        reach = jnp.where(some, jnp.sqrt(jnp.where(some, square, 1.0)), 0.0)
        return centre, jnp.sum(share * reach, axis=1)

    def _heights(self, q):
        """Each contact's height ``h_k = p_z + a_k,z`` above the plane, m,
        shape ``(n_bodies, k)``, and the arms ``a_k``."""
        arms, _ = self._contact_arms(q)
        return self._split(q)[0][:, None, 2] + arms[..., 2], arms

    def _normal(self, q, qd):
        """Penalty normal force per body and contact, N, shape ``(n_bodies,
        k)`` (Eq. 22, clipped at zero), and the contacts' arms ``a_k``."""
        _, _, vel, omega = self._split(q, qd)
        height, arms = self._heights(q)
        rate = vel[:, None, 2] + jnp.cross(omega[:, None], arms)[..., 2]
        push = -self.contact.stiffness * height - self.contact.damping * rate
        return jnp.where(height < 0, jnp.maximum(push, 0.0), 0.0), arms

    def bias_force(self, q: Coordinates, qd: Vector) -> Vector:
        self.check_vectors(q=q, qd=qd)
        _, quats, _, omega = self._split(q, qd)
        world = self._world_inertia(quats)
        linear = -self.mass[:, None] * self.gravity[None]
        gyro = jnp.cross(omega, jnp.einsum("bij,bj->bi", world, omega))
        if self.contact is not None:
            normal, arms = self._normal(q, qd)
            linear = linear.at[:, 2].add(-jnp.sum(normal, axis=1))
            # The moment a_k × N_k e_z = N_k (a_k,y, −a_k,x, 0).
            moment = normal[..., None] * jnp.stack(
                [arms[..., 1], -arms[..., 0], jnp.zeros_like(normal)], axis=-1
            )
            gyro = gyro - jnp.sum(moment, axis=1)
        h = jnp.concatenate([linear, gyro], axis=1).reshape(-1)
        for joint in self.joints:
            h = h - joint.generalised_force(self, q, qd)
        return h

    def step_limit(self) -> Array | None:
        """``1/ω`` for a bound on the stiffest contact mode, s: ``ω² = Σ_k
        K (1/m + |c_k|²/I_min)`` per body (the contact springs in parallel,
        each at its centre's distance from the centre of mass; ``√(K/m)`` for
        a sphere). `None` without a contact; penalty joints are not included
        (their bending modes depend on the inertias and the geometry)."""
        if self.contact is None:
            return None
        nb, k = self.n_bodies, self.contact.points_per_body
        # A cap on the step, not physics: no derivatives through it (and
        # none of `eigvalsh` at a sphere's equal principal moments).
        mass, inertia, stiffness = jax.lax.stop_gradient(
            (self.mass, self.inertia, self.contact.stiffness)
        )
        omega2 = k * stiffness / mass
        if self.contact.centres is not None:
            centres = jax.lax.stop_gradient(self.contact.centres)
            reach = jnp.sum(jnp.broadcast_to(centres, (nb, k, 3)) ** 2, -1)
            smallest = jnp.linalg.eigvalsh(inertia)[:, 0]
            omega2 = omega2 + stiffness * jnp.sum(reach, axis=1) / smallest
        return 1 / jnp.sqrt(jnp.max(omega2))

    def normal_forces(self, q: Coordinates, qd: Vector) -> SlipVector:
        """The normal force of each contact, repeated for its two friction
        rows (a patch's total, on its three rows), N (Kikuuwe & Yamamoto
        2008, Eq. 22)."""
        self.check_vectors(q=q, qd=qd)
        if self.contact is None:
            return super().normal_forces(q, qd)
        # Joint rows carry no normal force.
        joints = jnp.zeros((len(self.joints),), q.dtype)
        normal = self._normal(q, qd)[0]
        if self.contact.patch:  # the patch's total on its three rows
            return jnp.concatenate([jnp.repeat(jnp.sum(normal, axis=1), 3), joints])
        return jnp.concatenate([jnp.repeat(normal.reshape(-1), 2), joints])

    def _contact_rows(self, q):
        """The contact rows of `friction_jacobian`."""
        # A point's velocity v + ω × a: rows x and y of [I, −[a]×], in its
        # body's columns.
        nb = self.n_bodies
        if self.contact.patch:
            arms, radius = self._patch(q)
            arms = arms[:, None]
        else:
            arms, _ = self._contact_arms(q)
        k = arms.shape[1]
        eye = jnp.broadcast_to(jnp.eye(3, dtype=q.dtype), (nb, k, 3, 3))
        block = jnp.concatenate([eye, -jax.vmap(jax.vmap(skew))(arms)], axis=-1)
        block = block[:, :, :2]
        if self.contact.patch:  # and the spin r ω_z
            spin = jnp.zeros((nb, 1, 1, 6), q.dtype)
            spin = spin.at[..., 5].set(radius[:, None, None])
            block = jnp.concatenate([block, spin], axis=2)
        columns = jnp.eye(nb, dtype=q.dtype)
        placed = jnp.einsum("bkrc,bd->bkrdc", block, columns)
        return placed.reshape(self._n_contact_rows, self.n_dof)

    def friction_jacobian(self, q: Coordinates) -> Jacobian:
        self.check_vectors(q=q)
        rows = [jnp.zeros((0, self.n_dof), q.dtype)]
        if self.contact is not None:  # before the joint rows
            rows.append(self._contact_rows(q))
        rows += [joint.jacobian_row(self, q)[None] for joint in self.joints]
        return jnp.concatenate(rows, axis=0)

    def friction_jacobian_dot_qd(self, q: Coordinates, qd: Vector) -> SlipVector:
        self.check_vectors(q=q, qd=qd)
        contact = jnp.zeros((self._n_contact_rows,), q.dtype)
        if self.contact is not None and self.contact.patch:
            # The patch's centre and radius move with the loads: d/dt of the
            # rows along the motion, at fixed (v, ω).
            rate = self.coordinate_rate(q, qd)
            contact = jax.jvp(lambda q: self._contact_rows(q) @ qd, (q,), (rate,))[1]
        elif self.contact is not None and self.contact.centres is not None:
            # d/dt (ω × a_k) at fixed (v, ω): ω × (ω × R_b c_k), the body-fixed
            # part of the arm turning with the body.
            _, _, _, omega = self._split(q, qd)
            _, fixed = self._contact_arms(q)
            turn = jnp.cross(omega[:, None], jnp.cross(omega[:, None], fixed))
            contact = turn[..., :2].reshape(-1)
        joints = [joint.jacobian_dot_qd(self, q, qd)[None] for joint in self.joints]
        return jnp.concatenate([contact, *joints])

    def body_state(self, q: Coordinates, qd: Vector, body: int):
        """``(p, R, v, ω)`` of body `body` (world frame; ``-1``: the world, at
        rest at the origin)."""
        if body < 0:
            zero = jnp.zeros(3, q.dtype)
            return zero, jnp.eye(3, dtype=q.dtype), zero, zero
        pos, quats, vel, omega = self._split(q, qd)
        return pos[body], self.rotation(q, body), vel[body], omega[body]

    def rotation(self, q: Coordinates, body: int) -> Float[Array, "3 3"]:
        """The attitude of body `body` (body to world; ``-1``: the world's,
        the identity)."""
        if body < 0:
            return jnp.eye(3, dtype=q.dtype)
        return quaternion_to_matrix(self._split(q)[1][body])

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


__all__ = [
    "FreeBodies",
    "PenaltyJoint",
    "PlaneContact",
    "quaternion_rate",
    "quaternion_to_matrix",
]
