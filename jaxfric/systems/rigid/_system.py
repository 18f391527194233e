"""`RigidBodyTree`: a fixed-base robot as a jaxfric system, with joint friction."""

from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..._check import InRange, as_vector, check_range, is_concrete
from ..._types import Array, Float, Jacobian, Matrix, SlipVector, Vector
from .._base import AbstractSystem, Dynamics, JointReactions
from . import _dynamics, _kinematics
from ._model import TreeModel, build_model, diagonal_at_zero


def _per_joint(name: str, value, n: int) -> Array:
    arr = as_vector(name, value, n, f"a tree of n_dof={n} (a scalar is broadcast)")
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


def _friction_elements(
    friction_joints, model: TreeModel
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(rows, ball_rows)``: the movable joint of every friction row, and the
    first row of every ball-joint element (a `friction_joints` entry that is
    three joints), checked: a ball element is three revolute joints in chain
    order (each the next one's parent) meeting at one point, their axes
    independent at ``q = 0``, through two massless gimbal links that carry
    nothing else (so that every joint of the chain carries the ball's
    reaction)."""
    n = model.n_bodies
    if friction_joints is None:
        return tuple(range(n)), ()
    entries = [
        tuple(e) if isinstance(e, (tuple, list)) else (e,) for e in friction_joints
    ]
    for e in entries:
        if len(e) not in (1, 3):
            raise ValueError(
                "`friction_joints`: each entry is one movable joint or three "
                f"revolute joints forming a ball joint; got {e!r}."
            )
    rows = joint_indices(
        "friction_joints", [j for e in entries for j in e], model.joint_names
    )
    ball_rows, row = [], 0
    for e in entries:
        if len(e) == 3:
            _check_ball(model, rows[row : row + 3])
            ball_rows.append(row)
        row += len(e)
    return rows, tuple(ball_rows)


def _check_ball(model: TreeModel, joints: tuple[int, ...]) -> None:
    names = [model.joint_names[j] for j in joints]
    where = f"`friction_joints` ball element {tuple(names)}"
    if any(model.joint_types[j] == "prismatic" for j in joints):
        raise ValueError(f"{where}: a ball joint's three joints must be revolute.")
    if model.parents[joints[1]] != joints[0] or model.parents[joints[2]] != joints[1]:
        raise ValueError(
            f"{where}: the three joints must form a chain in this order, each the "
            "next one's parent."
        )
    inner = [j for j in range(model.n_bodies) if model.parents[j] in joints[:2]]
    if inner != list(joints[1:]):
        raise ValueError(
            f"{where}: its gimbal links (the first two joints' children) carry "
            "other joints; a ball joint's reaction is then not one force."
        )
    if is_concrete(model.mass) and np.any(np.asarray(model.mass)[list(joints[:2])]):
        raise ValueError(
            f"{where}: its gimbal links (the first two joints' children) must be "
            "massless: a ball joint's three joints then carry one reaction."
        )
    if not is_concrete(model.origin_translation):
        return
    offsets = np.asarray(model.origin_translation)[list(joints[1:])]
    if np.max(np.abs(offsets)) > 1e-12:
        raise ValueError(
            f"{where}: the second and third joints must sit at the first one's "
            f"origin (a ball joint turns about one point); their origins are "
            f"{offsets.tolist()} m from their parents'."
        )
    if is_concrete(model.origin_rotation):
        rot, _ = _kinematics.joint_poses(model, jnp.zeros(model.n_bodies))
        axes = _ball_axes(model, rot, joints)
        if abs(float(jnp.linalg.det(axes))) < 1e-9:
            raise ValueError(
                f"{where}: the three axes are not independent at q = 0 (a gimbal "
                "lock): they cannot turn the ball about every axis."
            )


def _ball_axes(model: TreeModel, rot, joints) -> Float[Array, "3 3"]:
    """``E``: the axes of a ball element's three joints as columns, expressed
    in the frame of the first joint's parent body (the socket), from the
    bodies' poses in their parents' frames `rot` (`joint_poses`): ``ω_r = E
    q̇`` is the ball's angular velocity relative to the socket, rad/s."""
    frame = jnp.eye(3, dtype=rot.dtype)
    columns = []
    for j in joints:
        frame = frame @ rot[j]
        columns.append(frame @ jnp.asarray(model.axes[j], dtype=rot.dtype))
    return jnp.stack(columns, axis=1)


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
    joints = list(tree.friction_joints)
    types = tree.model.joint_types
    kinds = ["prismatic" if types[j] == "prismatic" else "revolute" for j in joints]
    # A ball element's three rows carry its ball's reaction: the third joint's,
    # in that joint's frame (its massless gimbals pass the socket's force on
    # unchanged; the load model reads only its magnitude).
    wrench_joints = list(joints)
    for row in tree.ball_rows:
        wrench_joints[row : row + 3] = [joints[row + 2]] * 3
        kinds[row : row + 3] = ["spherical"] * 3
    rows = jnp.asarray(wrench_joints, int)
    frames = np.stack([axis_frame(tree.model.axes[j]) for j in wrench_joints])
    frames = jnp.asarray(frames, dtype=wrenches.dtype)
    moment = jnp.einsum("kij,kj->ki", frames, wrenches[rows, :3])
    force = jnp.einsum("kij,kj->ki", frames, wrenches[rows, 3:])
    joints = tree.friction_joints
    parent_rows = tuple(
        joints.index(tree.model.parents[j]) if tree.model.parents[j] in joints else -1
        for j in joints
    )
    return JointReactions(
        jnp.concatenate([moment, force], 1),
        q[jnp.asarray(joints, int)],
        tuple(kinds),
        parent_rows,
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
    Tables 5.1 and 6.2), ``D = diag(damping)`` and the friction elements of
    `friction_joints` (Farhat et al. 2010, Eq. 1): on one joint, a row of the
    identity (its slip velocity is the joint velocity, ``f`` the joint's
    friction torque or force); on a ball joint, three rows ``ω_r = E(q) q̇``,
    the ball's angular velocity relative to the socket in the socket's frame
    (rad/s; ``f`` the friction torque on the ball, N·m, MotionSolve
    Comment 13), ``J̇q̇`` by differentiating ``E(q) q̇`` along the motion.

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
        friction_joints: the friction elements, in the order of the law's
            entries; default one on every movable joint. Each entry is a
            movable joint (an index into ``q`` or a name), or three revolute
            joints in chain order meeting at one point with independent axes
            (a ball joint, e.g. `jaxfric.io.load_motionsolve`'s ``SPHERICAL``):
            one element of three rows.
        joint_names, link_names: names per joint / child link.
        base_name: name of the base link.
    """

    model: TreeModel
    damping: Float[Array, " dof"]
    armature: Float[Array, " dof"]
    #: The movable joint of every friction row (a ball element's three joints,
    #: in chain order).
    friction_joints: tuple[int, ...] = eqx.field(static=True)
    #: The first row of every ball-joint element (three rows each).
    ball_rows: tuple[int, ...] = eqx.field(static=True, default=())

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
        friction_joints: Sequence[int | str | Sequence[int | str]] | None = None,
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
        self.friction_joints, self.ball_rows = _friction_elements(
            friction_joints, model
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
    def independent_friction_rows(self) -> bool:  # pyright: ignore[reportIncompatibleVariableOverride]
        """True without ball elements: a joint's friction row is its unit
        vector (repeated joints are rejected). A ball's rows, its gimbal axes,
        lose rank at gimbal lock, where ``M`` may still be regular (armature,
        gimbal inertia)."""
        return not self.ball_rows

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

    @property
    def vector_elements(self) -> tuple[tuple[int, int], ...]:
        """``(first row, rows)`` of every ball-joint element: three rows whose
        friction is one torque (see `AbstractSystem.vector_elements`)."""
        return tuple((row, 3) for row in self.ball_rows)

    def friction_jacobian(self, q: Vector) -> Jacobian:
        self.check_vectors(q=q)
        rows = jnp.asarray(np.eye(self.n_dof)[list(self.friction_joints)], q.dtype)
        if not self.ball_rows:
            return rows
        rot, _ = _kinematics.joint_poses(self.model, q)
        for row in self.ball_rows:
            joints = self.friction_joints[row : row + 3]
            block = _ball_axes(self.model, rot, joints)
            rows = rows.at[row : row + 3].set(0.0)
            rows = rows.at[row : row + 3, jnp.asarray(joints)].set(block)
        return rows

    def friction_jacobian_dot_qd(self, q: Vector, qd: Vector) -> SlipVector:
        self.check_vectors(q=q, qd=qd)
        if not self.ball_rows:
            return jnp.zeros((self.n_friction,), dtype=q.dtype)
        return jax.jvp(lambda q: self.friction_jacobian(q) @ qd, (q,), (qd,))[1]

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
