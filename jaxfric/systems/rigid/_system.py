"""`RigidBodyTree`: a fixed-base robot as a jaxfric system, with joint friction."""

from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..._check import InRange, check_range, is_concrete
from ..._types import Array, Float, Jacobian, Matrix, SlipVector, Vector
from .._base import AbstractSystem, Dynamics, JointReactions
from . import _dynamics, _kinematics
from ._model import TreeModel, build_model, diagonal_at_zero


def _per_joint(name: str, value, n: int) -> Array:
    arr = jnp.asarray(value, dtype=float)
    if arr.ndim == 0:
        arr = jnp.broadcast_to(arr, (n,))
    if arr.shape != (n,):
        raise ValueError(
            f"`{name}` must be a scalar or have one entry per movable joint, shape "
            f"({n},); got shape {arr.shape}."
        )
    check_range(name, arr, lower=0.0)
    return arr


def joint_indices(name: str, joints, joint_names: tuple[str, ...]) -> tuple:
    """Indices into ``q`` of `joints` (indices or names of movable joints),
    checked: known, in range, not repeated; errors name the argument `name`."""
    n = len(joint_names)
    out = []
    for j in joints:
        if isinstance(j, str):
            if j not in joint_names:
                raise ValueError(
                    f"`{name}`: no movable joint named {j!r}; movable joints are "
                    f"{joint_names}."
                )
            out.append(joint_names.index(j))
        else:
            k = int(j)
            if not 0 <= k < n:
                raise ValueError(f"`{name}`: index {k} must lie in [0, {n - 1}].")
            out.append(k)
    if len(set(out)) != len(out):
        raise ValueError(f"`{name}` has repeated joints: {joints}.")
    return tuple(out)


def _check_positive_definite(model: TreeModel, armature) -> None:
    """A movable joint whose subtree has no inertia along its axis (and no
    armature) makes ``M`` singular; name it at construction."""
    leaves = (model.mass, model.first_moment, model.inertia, armature)
    if not all(is_concrete(x) for x in leaves):
        return
    diag = diagonal_at_zero(model) + np.asarray(armature)
    scale = max(1.0, float(np.max(np.abs(diag))))
    for name, d in zip(model.joint_names, diag, strict=True):
        if not d > 1e-12 * scale:
            raise ValueError(
                f"joint {name!r}: the bodies it moves have no mass or inertia along "
                "its axis, so the mass matrix is singular; give the links inertia "
                "or the joint an `armature`."
            )


def axis_frame(axis) -> np.ndarray:
    """A rotation whose rows are unit ``x``, ``y``, ``z`` axes with ``z`` along
    `axis` (static; identity for ``(0, 0, 1)``): the joint-friction frame of
    `JointReactions`."""
    z = np.asarray(axis, float) / np.linalg.norm(axis)
    helper = np.eye(3)[0] if abs(z[0]) < 0.9 else np.eye(3)[1]
    x = helper - (helper @ z) * z
    x = x / np.linalg.norm(x)
    return np.stack([x, np.cross(z, x), z])


def friction_joint_reactions(
    tree: "RigidBodyTree", wrenches: Float[Array, "dof 6"], q: Vector
) -> JointReactions:
    """The rows of `wrenches` (`joint_wrenches` of every joint of `tree`, body
    frames) at the joints with friction elements, in each joint's friction
    frame (``z`` along its axis), with the joint coordinates `q` of the tree."""
    rows = jnp.asarray(tree.friction_joints, int)
    frames = np.stack([axis_frame(tree.model.axes[j]) for j in tree.friction_joints])
    frames = jnp.asarray(frames, dtype=wrenches.dtype)
    moment = jnp.einsum("kij,kj->ki", frames, wrenches[rows, :3])
    force = jnp.einsum("kij,kj->ki", frames, wrenches[rows, 3:])
    types = tree.model.joint_types
    kinds = tuple(
        "prismatic" if types[j] == "prismatic" else "revolute"
        for j in tree.friction_joints
    )
    joints = tree.friction_joints
    parent_rows = tuple(
        joints.index(tree.model.parents[j]) if tree.model.parents[j] in joints else -1
        for j in joints
    )
    return JointReactions(
        jnp.concatenate([moment, force], 1), q[rows], kinds, parent_rows
    )


# Jitted (see `_dynamics`): outside `jit` a call compiles once per tree.
@jax.jit
def _mass_matrix(system: "RigidBodyTree", q):
    return _dynamics.mass_matrix(system.model, q) + jnp.diag(system.armature)


@jax.jit
def _bias_force(system: "RigidBodyTree", q, qd):
    return _dynamics.bias_force(system.model, q, qd) + system.damping * qd


@jax.jit
def _mass_and_bias(system: "RigidBodyTree", q, qd):
    mass, bias = _dynamics.mass_matrix_and_bias(system.model, q, qd)
    return mass + jnp.diag(system.armature), bias + system.damping * qd


@jax.jit
def _inverse_dynamics(system: "RigidBodyTree", q, qd, qdd):
    tau = _dynamics.inverse_dynamics(system.model, q, qd, qdd)
    return tau + system.armature * qdd + system.damping * qd


class RigidBodyTree(AbstractSystem):
    """A fixed-base rigid-body tree (a serial or branched robot arm) with friction
    in its joints.

    ``M(q) q̈ = τ − C(q, q̇) q̇ − g(q) − D q̇ − Jᵀ f``, with ``M`` from the
    composite rigid body algorithm plus the rotor inertias (armature) on the
    diagonal, ``C q̇ + g`` from recursive Newton–Euler (Featherstone 2008,
    Tables 5.1 and 6.2), ``D = diag(damping)`` and one friction element per joint
    in `friction_joints`: the friction Jacobian is the matching rows of the
    identity, so slip velocities are joint velocities and ``f`` are joint
    friction torques/forces (Farhat et al. 2010, Eq. 1).

    Entry ``k`` of every per-joint argument describes joint ``k`` and its child
    link ``k``; joints are in topological order. Fixed joints are merged into the
    movable body upstream, so ``q`` has one entry per revolute, continuous or
    prismatic joint, in input order. Joint limits are not enforced.

    Args:
        parents: for each joint, the joint whose child link is its parent link,
            ``-1`` for the base link (which is fixed to the world).
        joint_types: ``"revolute"``, ``"continuous"``, ``"prismatic"`` or
            ``"fixed"`` per joint.
        axes: joint axes in the joint frame, shape ``(k, 3)``.
        origin_translation: joint origins in the parent link frame, m, ``(k, 3)``.
        origin_rotation: joint origin rotations, ``(k, 3, 3)`` (default identity;
            `jaxfric.systems.rigid.rpy_matrix` converts URDF ``rpy``).
        mass: link masses, kg, ``(k,)``, ``>= 0``.
        com: link centres of mass in the link frame, m, ``(k, 3)``.
        inertia: link inertias about the centre of mass, link axes, kg·m²,
            ``(k, 3, 3)``.
        gravity: gravity acceleration in the base frame, m/s² (default
            ``(0, 0, −9.81)``).
        damping: viscous joint damping, N·m·s/rad or N·s/m, ``>= 0``; scalar or
            one per movable joint.
        armature: rotor inertia added to ``M``'s diagonal, ``>= 0``; scalar or one
            per movable joint.
        friction_joints: movable joints (indices into ``q`` or names) that carry
            a friction element, in the order of the law's entries; default all.
        joint_names, link_names: names per joint / child link.
        base_name: name of the base link.
    """

    model: TreeModel
    damping: Float[Array, " dof"]
    armature: Float[Array, " dof"]
    friction_joints: tuple[int, ...] = eqx.field(static=True)

    def __init__(
        self,
        parents: Sequence[int],
        joint_types: Sequence[str],
        axes,
        origin_translation,
        origin_rotation=None,
        *,
        mass,
        com,
        inertia,
        gravity=(0.0, 0.0, -9.81),
        damping=0.0,
        armature=0.0,
        friction_joints: Sequence[int | str] | None = None,
        joint_names: Sequence[str] | None = None,
        link_names: Sequence[str] | None = None,
        base_name: str = "base",
    ):
        model = build_model(
            parents,
            joint_types,
            axes,
            origin_translation,
            origin_rotation,
            mass=mass,
            com=com,
            inertia=inertia,
            gravity=gravity,
            joint_names=joint_names,
            link_names=link_names,
            base_name=base_name,
        )
        n = model.n_bodies
        self.model = model
        self.damping = _per_joint("damping", damping, n)
        self.armature = _per_joint("armature", armature, n)
        self.friction_joints = (
            tuple(range(n))
            if friction_joints is None
            else joint_indices("friction_joints", friction_joints, model.joint_names)
        )
        _check_positive_definite(model, self.armature)

    def parameter_checks(self):
        # The per-joint numbers one identifies; the link inertias are checked
        # (concrete only) when the model is built.
        return (
            InRange("damping", self.damping, lower=0.0),
            InRange("armature", self.armature, lower=0.0),
        )

    @property
    def n_dof(self) -> int:
        return self.model.n_bodies

    @property
    def n_friction(self) -> int:
        return len(self.friction_joints)

    @property
    def joint_names(self) -> tuple[str, ...]:
        """Names of the movable joints, in the order of ``q``."""
        return self.model.joint_names

    def mass_matrix(self, q: Vector) -> Matrix:
        self.check_vectors(q=q)
        return _mass_matrix(self, q)

    def bias_force(self, q: Vector, qd: Vector) -> Vector:
        self.check_vectors(q=q, qd=qd)
        return _bias_force(self, q, qd)

    def dynamics(self, q: Vector, qd: Vector) -> Dynamics:
        """`AbstractSystem.dynamics` with ``M`` and ``h`` from one forward
        kinematics pass (`mass_matrix_and_bias`)."""
        self.check_vectors(q=q, qd=qd)
        mass, bias = _mass_and_bias(self, q, qd)
        return Dynamics(
            mass,
            bias,
            self.friction_jacobian(q),
            self.friction_jacobian_dot_qd(q, qd),
        )

    def friction_jacobian(self, q: Vector) -> Jacobian:
        self.check_vectors(q=q)
        rows = np.eye(self.n_dof)[list(self.friction_joints)]
        return jnp.asarray(rows, dtype=q.dtype)

    def friction_jacobian_dot_qd(self, q: Vector, qd: Vector) -> SlipVector:
        self.check_vectors(q=q, qd=qd)
        return jnp.zeros((self.n_friction,), dtype=q.dtype)

    def inverse_dynamics(self, q: Vector, qd: Vector, qdd: Vector) -> Vector:
        """Joint forces producing ``q̈`` without friction:
        ``M(q) q̈ + C q̇ + g + D q̇`` (armature included), N·m or N."""
        self.check_vectors(q=q, qd=qd, qdd=qdd)
        return _inverse_dynamics(self, q, qd, qdd)

    def gravity_force(self, q: Vector) -> Vector:
        """Generalised gravity forces ``g(q)``, N·m or N."""
        self.check_vectors(q=q)
        return _dynamics.gravity_force(self.model, q)

    def joint_wrenches(
        self, q: Vector, qd: Vector, qdd: Vector
    ) -> Float[Array, "dof 6"]:
        """Reaction wrench at every joint, see
        `jaxfric.systems.rigid.joint_wrenches` (moment first, body frame)."""
        self.check_vectors(q=q, qd=qd, qdd=qdd)
        return _dynamics.joint_wrenches(self.model, q, qd, qdd)

    def joint_reactions(
        self,
        q: Vector,
        qd: Vector,
        qdd: Vector,
        applied: Vector,
        friction: SlipVector,
        dynamics: Dynamics | None = None,
    ) -> JointReactions:
        """The reaction wrench of every joint with a friction element (rows of
        `joint_wrenches`: Newton–Euler, Featherstone 2008, Table 5.1) in the
        joint's friction frame, ``z`` along its axis. In a tree the reactions
        follow from the motion alone: `applied` and `friction` change them only
        through ``q̈``; `dynamics` has nothing to share with them."""
        del dynamics
        self.check_vectors(q=q, qd=qd, qdd=qdd, applied=applied, friction=friction)
        return friction_joint_reactions(
            self, _dynamics.joint_wrenches(self.model, q, qd, qdd), q
        )

    def forward_kinematics(
        self, q: Vector
    ) -> tuple[Float[Array, "dof 3 3"], Float[Array, "dof 3"]]:
        """World rotation and position of every body (joint frame)."""
        self.check_vectors(q=q)
        return _kinematics.forward_kinematics(self.model, q)

    def link_pose(
        self, q: Vector, link: str
    ) -> tuple[Float[Array, "3 3"], Float[Array, "3"]]:
        """World rotation and position (m) of the named link's frame."""
        self.check_vectors(q=q)
        if link not in self.model.link_names:
            raise ValueError(
                f"no link named {link!r}; links are {self.model.link_names}."
            )
        rot, pos = _kinematics.link_poses(self.model, q)
        k = self.model.link_names.index(link)
        return rot[k], pos[k]
