"""The kinematic tree: static structure plus the arrays of a fixed-base robot.

Structure (parents, joint types, axes, names) is static, so the algorithms in
`_kinematics.py` and `_dynamics.py` unroll over the bodies at trace time; origins,
inertias and gravity are arrays, so they are differentiable parameters.

Fixed joints are merged here, as Pinocchio does: the link behind a fixed joint is
welded to the nearest movable body upstream (its inertia added to that body's),
and its frame is kept as a link frame for forward kinematics. Links welded to the
fixed base never move and carry no dynamics.
"""

import functools
from collections.abc import Sequence
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..._check import check_finite, check_range, is_concrete
from ..._types import Array, Float
from . import _spatial as sp

MOVABLE = ("revolute", "continuous", "prismatic")
JOINT_TYPES = (*MOVABLE, "fixed")


class TreeModel(eqx.Module):
    """A fixed-base kinematic tree with one body per movable joint.

    Body ``i`` is moved by joint ``i`` (coordinate ``q[i]``); its frame is the
    joint frame (URDF: the child link frame). Joint ``i`` places body ``i`` in the
    frame of body ``parents[i]`` (``-1``: the fixed base) by the constant origin
    ``(origin_rotation[i], origin_translation[i])`` followed by the joint motion
    about/along ``axes[i]`` (unit vector in the joint frame).

    Use `build_model` (or `RigidBodyTree`) to make one from per-link data.

    Attributes:
        parents: parent body of each body, ``-1`` for the base; ``parents[i] < i``.
        joint_types: ``"revolute"``, ``"continuous"`` or ``"prismatic"`` per body.
        axes: unit joint axes in the joint frame.
        joint_names: one name per movable joint.
        origin_rotation: joint origin rotations, shape ``(dof, 3, 3)``.
        origin_translation: joint origin translations, m, shape ``(dof, 3)``.
        mass: body masses (fixed-joint links merged), kg.
        first_moment: ``m·c``, the mass times the centre of mass in the body
            frame, kg·m, shape ``(dof, 3)``.
        inertia: rotational inertia about the body-frame origin, kg·m², shape
            ``(dof, 3, 3)``.
        gravity: gravity acceleration in the base frame, m/s², shape ``(3,)``.
        link_names: every link, the base link first.
        link_bodies: body each link is welded to (``-1``: the base).
        link_rotation, link_translation: each link frame in its body's frame.
    """

    parents: tuple[int, ...] = eqx.field(static=True)
    joint_types: tuple[str, ...] = eqx.field(static=True)
    axes: tuple[tuple[float, float, float], ...] = eqx.field(static=True)
    joint_names: tuple[str, ...] = eqx.field(static=True)
    origin_rotation: Float[Array, "dof 3 3"]
    origin_translation: Float[Array, "dof 3"]
    mass: Float[Array, " dof"]
    first_moment: Float[Array, "dof 3"]
    inertia: Float[Array, "dof 3 3"]
    gravity: Float[Array, "3"]
    link_names: tuple[str, ...] = eqx.field(static=True)
    link_bodies: tuple[int, ...] = eqx.field(static=True)
    link_rotation: Float[Array, "link 3 3"]
    link_translation: Float[Array, "link 3"]

    @property
    def n_bodies(self) -> int:
        return len(self.parents)


class Structure(NamedTuple):
    """Static arrays of a tree, derived from its structure (read-only NumPy).

    Attributes:
        ancestors: ``ancestors[i, j]`` is true when body ``j`` is body ``i`` or one
            of its ancestors; its transpose marks subtrees.
        prismatic: per body, true for prismatic joints.
        s_omega, s_vel: the joint motion subspace ``S_i = (s_omega, s_vel)`` in
            the body frame: ``(axis, 0)`` revolute, ``(0, axis)`` prismatic.
    """

    ancestors: np.ndarray
    prismatic: np.ndarray
    s_omega: np.ndarray
    s_vel: np.ndarray


@functools.lru_cache(maxsize=256)
def _structure(parents: tuple, joint_types: tuple, axes: tuple) -> Structure:
    n = len(parents)
    ancestors = np.zeros((n, n), dtype=bool)
    for i in range(n):
        j = i
        while j >= 0:
            ancestors[i, j] = True
            j = parents[j]
    prismatic = np.array([t == "prismatic" for t in joint_types], dtype=bool)
    axes_arr = np.asarray(axes, dtype=float).reshape(n, 3)
    s_omega = np.where(prismatic[:, None], 0.0, axes_arr)
    s_vel = np.where(prismatic[:, None], axes_arr, 0.0)
    out = Structure(ancestors, prismatic, s_omega, s_vel)
    for arr in out:
        arr.setflags(write=False)
    return out


def structure(model: "TreeModel") -> Structure:
    """The static arrays of `model`'s tree (cached per structure)."""
    return _structure(model.parents, model.joint_types, model.axes)


def _static_axes(axes, n: int, joint_names) -> tuple[tuple[float, float, float], ...]:
    arr = np.asarray(axes, dtype=float)
    if arr.shape != (n, 3):
        raise ValueError(f"`axes` must have shape ({n}, 3); got {arr.shape}.")
    out = []
    for name, a in zip(joint_names, arr, strict=True):
        norm = np.linalg.norm(a)
        if not np.isfinite(norm) or norm < 1e-12:
            raise ValueError(f"joint {name!r}: the axis must be a non-zero vector.")
        out.append(tuple(float(x) for x in a / norm))
    return tuple(out)


def _check_inertia(name: str, mass, inertia) -> None:
    """Masses ``>= 0``; inertias finite and symmetric, with principal moments
    ``>= 0`` that satisfy the triangle inequality ``I_k <= I_i + I_j`` (the
    moments of a body with a non-negative density, as MuJoCo's compiler
    requires; Pinocchio loads such files without a check). Traced values pass
    unchecked."""
    if not (is_concrete(mass) and is_concrete(inertia)):
        return
    check_range(f"mass of {name}", mass, lower=0.0)
    inertia = np.asarray(inertia)
    check_finite(f"inertia of {name}", inertia)
    scale = max(1.0, float(np.max(np.abs(inertia))))
    if np.max(np.abs(inertia - inertia.T)) > 1e-12 * scale:
        raise ValueError(f"inertia of {name} must be symmetric; got {inertia!r}.")
    eig = np.sort(np.linalg.eigvalsh(inertia))
    # Round-off of the eigen-solve, and inertias printed to 6 significant
    # digits in files (a flat plate has I_3 = I_1 + I_2 exactly).
    tol = 1e-9 * scale
    if eig[0] < -tol:
        raise ValueError(
            f"inertia of {name} is not physical (principal moments {eig!r} must be "
            ">= 0)."
        )
    if eig[2] > eig[0] + eig[1] + tol + 1e-6 * eig[2]:
        raise ValueError(
            f"inertia of {name} is not physical: its principal moments {eig!r} "
            "break the triangle inequality (the largest must be <= the sum of the "
            f"other two, {eig[0] + eig[1]!r}); no mass distribution has them."
        )


def _stack(arrays) -> Array:
    return jnp.asarray(jnp.stack([jnp.asarray(a) for a in arrays]), dtype=float)


def build_model(
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
    joint_names: Sequence[str] | None = None,
    link_names: Sequence[str] | None = None,
    base_name: str = "base",
) -> TreeModel:
    """Build a `TreeModel` from per-joint data, merging fixed joints.

    Entry ``k`` of every argument describes joint ``k`` and its child link
    ``k``. Joints must be in topological order.

    Args:
        parents: for each joint, the joint whose child link is this joint's parent
            link, or ``-1`` for the base link; ``parents[k] < k``.
        joint_types: ``"revolute"``, ``"continuous"``, ``"prismatic"`` or
            ``"fixed"`` per joint.
        axes: joint axes in the joint frame, shape ``(k, 3)`` (normalised here;
            ignored for fixed joints).
        origin_translation: joint origin in the parent link frame, m, ``(k, 3)``.
        origin_rotation: joint origin rotation (columns: joint axes in the parent
            link frame), ``(k, 3, 3)``; identity by default.
        mass: child link masses, kg, ``(k,)``, ``>= 0``.
        com: child link centres of mass in the link frame, m, ``(k, 3)``.
        inertia: child link rotational inertias about the centre of mass, in the
            link frame, kg·m², ``(k, 3, 3)``.
        gravity: gravity in the base frame, m/s², ``(3,)``.
        joint_names, link_names: names (defaults ``joint{k}``, ``link{k}``).
        base_name: name of the base link.

    Returns:
        The `TreeModel`, one body per movable joint.
    """
    parents = tuple(int(p) for p in parents)
    joint_types = tuple(str(t) for t in joint_types)
    k = len(parents)
    joint_names = tuple(joint_names or (f"joint{i}" for i in range(k)))
    link_names = tuple(link_names or (f"link{i}" for i in range(k)))
    if len(joint_types) != k or len(joint_names) != k or len(link_names) != k:
        raise ValueError(
            "`parents`, `joint_types`, `joint_names` and `link_names` must have the "
            f"same length; got {k}, {len(joint_types)}, {len(joint_names)}, "
            f"{len(link_names)}."
        )
    for i, (p, t, name) in enumerate(
        zip(parents, joint_types, joint_names, strict=True)
    ):
        if t not in JOINT_TYPES:
            raise ValueError(
                f"joint {name!r}: type {t!r} is not supported; allowed {JOINT_TYPES}."
            )
        if not -1 <= p < i:
            raise ValueError(
                f"joint {name!r}: parent index {p} must lie in [-1, {i - 1}] "
                "(joints in topological order)."
            )
    axes = _static_axes(axes, k, joint_names)
    arrays = dict(
        origin_translation=origin_translation,
        origin_rotation=np.broadcast_to(np.eye(3), (k, 3, 3))
        if origin_rotation is None
        else origin_rotation,
        mass=mass,
        com=com,
        inertia=inertia,
        gravity=gravity,
    )
    # Concrete inputs are merged in NumPy (no tracing or dispatch cost); traced
    # ones in jax.numpy, so that a model built under `jit` stays differentiable.
    concrete = all(is_concrete(x) for x in jax.tree_util.tree_leaves(arrays))
    xp = np if concrete else jnp
    arrays = {name: xp.asarray(v, dtype=float) for name, v in arrays.items()}
    shapes = dict(
        origin_translation=(k, 3),
        origin_rotation=(k, 3, 3),
        mass=(k,),
        com=(k, 3),
        inertia=(k, 3, 3),
        gravity=(3,),
    )
    for name, shape in shapes.items():
        if arrays[name].shape != shape:
            raise ValueError(
                f"`{name}` must have shape {shape}; got {arrays[name].shape}."
            )
        check_finite(name, arrays[name])
    mass, com, inertia = arrays["mass"], arrays["com"], arrays["inertia"]
    for i in range(k):
        _check_inertia(f"link {link_names[i]!r}", mass[i], inertia[i])
    link_inertia = sp.inertia_about_origin(mass, com, inertia)

    eye, zero = xp.eye(3), xp.zeros(3)
    # attach[k] = (body, rotation, translation) of link k's frame in that body.
    attach: list = []
    body_joint: list[int] = []
    body_parent: list[int] = []
    body_origin: list = []
    body_inertia: list = []
    for i in range(k):
        b, rot_b, pos_b = attach[parents[i]] if parents[i] >= 0 else (-1, eye, zero)
        rot, pos = sp.compose(
            rot_b,
            pos_b,
            arrays["origin_rotation"][i],
            arrays["origin_translation"][i],
        )
        link = tuple(x[i] for x in link_inertia)
        if joint_types[i] == "fixed":
            attach.append((b, rot, pos))
            if b >= 0:  # welded to a moving body: add its inertia there
                moved = sp.transform_inertia(rot, pos, *link)
                body_inertia[b] = tuple(
                    x + y for x, y in zip(body_inertia[b], moved, strict=True)
                )
        else:
            body = len(body_joint)
            attach.append((body, eye, zero))
            body_joint.append(i)
            body_parent.append(b)
            body_origin.append((rot, pos))
            body_inertia.append(link)
    if not body_joint:
        raise ValueError("the tree has no movable joint (revolute/prismatic).")

    links = [(-1, eye, zero), *attach]
    return TreeModel(
        parents=tuple(body_parent),
        joint_types=tuple(joint_types[i] for i in body_joint),
        axes=tuple(axes[i] for i in body_joint),
        joint_names=tuple(joint_names[i] for i in body_joint),
        origin_rotation=_stack([r for r, _ in body_origin]),
        origin_translation=_stack([p for _, p in body_origin]),
        mass=_stack([m for m, _, _ in body_inertia]),
        first_moment=_stack([h for _, h, _ in body_inertia]),
        inertia=_stack([i for _, _, i in body_inertia]),
        gravity=jnp.asarray(arrays["gravity"]),
        link_names=(base_name, *link_names),
        link_bodies=tuple(b for b, _, _ in links),
        link_rotation=_stack([r for _, r, _ in links]),
        link_translation=_stack([p for _, _, p in links]),
    )


def diagonal_at_zero(model: TreeModel) -> np.ndarray:
    """Diagonal of the mass matrix at ``q = 0``, in NumPy (a construction-time
    check: a zero entry means a joint moves nothing with inertia)."""
    st = structure(model)
    rot_o = np.asarray(model.origin_rotation)
    pos_o = np.asarray(model.origin_translation)
    world: list = []
    for i, p in enumerate(model.parents):
        pose = (rot_o[i], pos_o[i])
        world.append(pose if p < 0 else sp.compose(*world[p], *pose))
    rot_w = np.stack([r for r, _ in world])
    pos_w = np.stack([t for _, t in world])
    s_w = sp.motion_to_frame(rot_w, pos_w, st.s_omega, st.s_vel)
    body = (np.asarray(model.mass), np.asarray(model.first_moment))
    inertia_w = sp.transform_inertia(rot_w, pos_w, *body, np.asarray(model.inertia))
    sub = st.ancestors.T.astype(float)
    composite = (
        sub @ inertia_w[0],
        sub @ inertia_w[1],
        np.einsum("ik,kab->iab", sub, inertia_w[2]),
    )
    moment, force = sp.inertia_apply(*composite, *s_w)
    return np.sum(s_w[0] * moment + s_w[1] * force, axis=-1)
