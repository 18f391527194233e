"""Forward kinematics of a `TreeModel` (pure functions)."""

import jax
import jax.numpy as jnp

from ..._types import Array, Float, Vector
from . import _spatial as sp
from ._model import TreeModel, structure


def joint_poses(
    model: TreeModel, q: Vector
) -> tuple[Float[Array, "dof 3 3"], Float[Array, "dof 3"]]:
    """Every body's pose in its parent body's frame at coordinates `q`.

    Revolute: ``R = R_o·Rot(axis, q_i)``, ``p = p_o``; prismatic: ``R = R_o``,
    ``p = p_o + R_o·axis·q_i`` (Featherstone 2008, Table 4.1, in pose form).
    """
    st = structure(model)
    # In the state's floating dtype: float32 states give float32 poses with x64
    # on too.
    axes = jnp.asarray(st.s_omega + st.s_vel, dtype=jnp.result_type(q, float))
    angle = jnp.where(st.prismatic, 0.0, q)
    shift = jnp.where(st.prismatic, q, 0.0)
    rot_o, pos_o = model.origin_rotation, model.origin_translation
    rot = sp.matmul(rot_o, sp.axis_rotation(axes, angle))
    pos = pos_o + sp.matvec(rot_o, axes * shift[:, None])
    return rot, pos


@jax.jit
def forward_kinematics(
    model: TreeModel, q: Vector
) -> tuple[Float[Array, "dof 3 3"], Float[Array, "dof 3"]]:
    """World (base-frame) poses of every body.

    Args:
        model: the tree.
        q: joint coordinates, rad or m, shape ``(dof,)``.

    Returns:
        ``(R, p)``: body axes in base coordinates, shape ``(dof, 3, 3)``, and body
        origins in base coordinates, m, shape ``(dof, 3)``.
    """
    rot, pos = joint_poses(model, q)
    # Body by body from the base (``parents[i] < i``): static slices and one
    # composition each, instead of pointer jumping (log2(depth) compositions of
    # all bodies at once, whose gathers by index arrays ran slower under `vmap`
    # on a CPU: README, Performance).
    world_rot, world_pos = [], []
    for i, parent in enumerate(model.parents):
        if parent < 0:
            world_rot.append(rot[i])
            world_pos.append(pos[i])
        else:
            r, p = sp.compose(world_rot[parent], world_pos[parent], rot[i], pos[i])
            world_rot.append(r)
            world_pos.append(p)
    return jnp.stack(world_rot), jnp.stack(world_pos)


@jax.jit
def link_poses(
    model: TreeModel, q: Vector
) -> tuple[Float[Array, "link 3 3"], Float[Array, "link 3"]]:
    """World poses of every link frame (fixed-joint links included), in the order
    of `model.link_names`.

    Args:
        model: the tree.
        q: joint coordinates, shape ``(dof,)``.

    Returns:
        ``(R, p)`` of shapes ``(link, 3, 3)`` and ``(link, 3)``.
    """
    rot_w, pos_w = forward_kinematics(model, q)
    bodies = jnp.asarray([max(b, 0) for b in model.link_bodies])
    on_base = jnp.asarray([b < 0 for b in model.link_bodies])
    # Links welded to the base: the identity pose in place of a body's pose.
    rot_b = jnp.where(on_base[:, None, None], jnp.eye(3)[None], rot_w[bodies])
    pos_b = jnp.where(on_base[:, None], 0.0, pos_w[bodies])
    return sp.compose(rot_b, pos_b, model.link_rotation, model.link_translation)
