"""MJCF import: a MuJoCo model as a `RigidBodyTree` plus its joint friction.

The file is compiled by MuJoCo itself (PyPI ``mujoco``, the optional extra
``jaxfric[mjcf]``), so everything MuJoCo's compiler resolves — defaults
classes, ``<include>``, inertias from geoms, ``fusestatic``, URDF files given
to MuJoCo — arrives here resolved; this module reads the compiled `MjModel`:
body frames (``body_pos``, ``body_quat``), inertials (``body_mass``,
``body_ipos``, ``body_iquat``, ``body_inertia``), hinge and slide joints
(``jnt_pos`` anchor, ``jnt_axis``), per-dof ``damping``, ``armature`` and
``frictionloss``, and ``opt.gravity`` (each zero where the model's ``<flag>``
disables gravity, the damper, friction loss or all constraints).

Mapping. MuJoCo moves a body by its joints in order, each hinge rotating the
body frame about its anchor ``p`` (MuJoCo's ``mj_kinematics``): body frame =
parent · (pos, quat) · T(p₁) R₁ T(−p₁) · T(p₂) R₂ T(−p₂) ⋯. Each joint becomes
a tree joint whose frame sits at its anchor; a body with several joints gets
massless links in between, and a body without joints a fixed joint (merged
into its parent by `RigidBodyTree`). ``q`` is MuJoCo's ``qpos`` and ``q̇`` its
``qvel``, entry for entry.

What the tree cannot represent is refused with the element's name: free and
ball joints, a joint reference position ``ref`` ≠ 0 (``qpos0`` ≠ 0: MuJoCo
rotates by ``qpos − qpos0``), joint stiffness (springs), polynomial damping or
stiffness, gravity compensation, equality constraints and tendons. Contacts,
actuators, sensors and joint limits are not part of the dynamics the tree
describes and are ignored (actuator forces are the applied force ``τ``).
"""

import os
from typing import Any

import numpy as np

from ..friction import Coulomb
from ..systems.rigid import RigidBodyTree
from .urdf import _override


def _mujoco():
    try:
        import mujoco
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(
            "reading MJCF needs the `mujoco` package: pip install 'jaxfric[mjcf]'."
        ) from None
    return mujoco


def _name(mujoco, model, kind, index: int, fallback: str) -> str:
    name = mujoco.mj_id2name(model, kind, index)
    return name if name else f"{fallback}{index}"


def _matrix(mujoco, quat) -> np.ndarray:
    out = np.zeros(9)
    mujoco.mju_quat2Mat(out, np.asarray(quat, dtype=float))
    return out.reshape(3, 3)


def _refuse(model, mujoco) -> None:
    """Raise on anything of the model the tree would silently get wrong."""
    joint = mujoco.mjtObj.mjOBJ_JOINT
    problems = []
    for j in range(model.njnt):
        name = _name(mujoco, model, joint, j, "joint ")
        kind = int(model.jnt_type[j])
        if kind == int(mujoco.mjtJoint.mjJNT_FREE):
            problems.append(f"joint {name!r} is a free joint (fixed-base trees only)")
        elif kind == int(mujoco.mjtJoint.mjJNT_BALL):
            problems.append(f"joint {name!r} is a ball joint (hinge and slide only)")
        else:
            q0 = float(model.qpos0[model.jnt_qposadr[j]])
            if q0 != 0.0:
                problems.append(
                    f"joint {name!r} has a reference position ref (qpos0 = "
                    f"{q0:.6g} rad or m; it must be 0: jaxfric's q is measured "
                    "from the model's frame)"
                )
        if float(model.jnt_stiffness[j]) != 0.0:
            problems.append(f"joint {name!r} has stiffness (joint springs)")
        poly = getattr(model, "jnt_stiffnesspoly", None)
        if poly is not None and np.any(np.asarray(poly[j]) != 0.0):
            problems.append(f"joint {name!r} has a polynomial stiffness")
    poly = getattr(model, "dof_dampingpoly", None)
    if poly is not None:
        for d in np.flatnonzero(np.any(np.asarray(poly) != 0.0, axis=-1)):
            name = _name(mujoco, model, joint, int(model.dof_jntid[d]), "joint ")
            problems.append(f"joint {name!r} has a polynomial damping")
    for b in np.flatnonzero(np.asarray(model.body_gravcomp) != 0.0):
        name = _name(mujoco, model, mujoco.mjtObj.mjOBJ_BODY, int(b), "body ")
        problems.append(f"body {name!r} has gravcomp")
    if model.neq:
        problems.append(f"{model.neq} equality constraint(s) (closed loops)")
    if model.ntendon:
        problems.append(f"{model.ntendon} tendon(s)")
    if problems:
        raise ValueError(
            "the MuJoCo model has what a fixed-base RigidBodyTree cannot represent: "
            + "; ".join(problems)
            + "."
        )


def build_mjcf(
    model: Any,
    *,
    damping=None,
    friction=None,
    armature=None,
    friction_joints=None,
) -> tuple[RigidBodyTree, Coulomb]:
    """Turn a compiled `mujoco.MjModel` into a `RigidBodyTree` and its joint
    friction (mapping in the module docstring).

    Args:
        model: a `mujoco.MjModel` with hinge and slide joints only.
        damping: viscous joint damping per joint (or scalar), N·m·s/rad or
            N·s/m; default the model's ``damping``.
        friction: Coulomb level per friction joint (or scalar), N·m or N;
            default the model's ``frictionloss``.
        armature: rotor inertia per joint (or scalar), kg·m² or kg; default the
            model's ``armature``.
        friction_joints: joints (names or indices into ``q``) with a friction
            element; default all.

    Returns:
        ``(system, law)``: the tree (``q`` = ``qpos``) and ``Coulomb(fc)``.

    Raises:
        ValueError: free or ball joints, ``ref`` ≠ 0, joint springs,
            polynomial damping or stiffness, gravcomp, equality constraints or
            tendons, each named.
    """
    mujoco = _mujoco()
    _refuse(model, mujoco)
    body, joint = mujoco.mjtObj.mjOBJ_BODY, mujoco.mjtObj.mjOBJ_JOINT
    hinge = int(mujoco.mjtJoint.mjJNT_HINGE)
    parents, types, axes, xyz, rot = [], [], [], [], []
    mass, com, inertia, joint_names, link_names = [], [], [], [], []
    # Per body: index of the tree joint whose child is the body's last frame,
    # and that frame's offset from the body frame (the last anchor).
    last, offset = {0: -1}, {0: np.zeros(3)}
    zero3, eye3 = np.zeros(3), np.eye(3)
    for b in range(1, model.nbody):
        parent = int(model.body_parentid[b])
        body_name = _name(mujoco, model, body, b, "body ")
        pos = np.asarray(model.body_pos[b], dtype=float) - offset[parent]
        r_body = _matrix(mujoco, model.body_quat[b])
        start, count = int(model.body_jntadr[b]), int(model.body_jntnum[b])
        up, anchor = last[parent], zero3
        frames = range(start, start + count) if count else [None]
        for i, j in enumerate(frames):
            first = i == 0
            if j is None:
                types.append("fixed")
                axes.append(np.array([1.0, 0.0, 0.0]))
                joint_names.append(f"{body_name}_weld")
                new_anchor = zero3
            else:
                if int(model.jnt_type[j]) != hinge:
                    types.append("prismatic")
                else:
                    types.append("revolute" if model.jnt_limited[j] else "continuous")
                axes.append(np.asarray(model.jnt_axis[j], dtype=float))
                joint_names.append(_name(mujoco, model, joint, j, "joint "))
                new_anchor = np.asarray(model.jnt_pos[j], dtype=float)
            parents.append(up)
            if first:
                xyz.append(pos + r_body @ new_anchor)
                rot.append(r_body)
            else:
                xyz.append(new_anchor - anchor)
                rot.append(eye3)
            is_last = i == len(frames) - 1
            link_names.append(body_name if is_last else f"{body_name}_{i}")
            if is_last:
                r_inertia = _matrix(mujoco, model.body_iquat[b])
                mass.append(float(model.body_mass[b]))
                com.append(np.asarray(model.body_ipos[b], dtype=float) - new_anchor)
                inertia.append(r_inertia @ np.diag(model.body_inertia[b]) @ r_inertia.T)
            else:
                mass.append(0.0)
                com.append(zero3)
                inertia.append(np.zeros((3, 3)))
            up, anchor = len(types) - 1, new_anchor
        last[b], offset[b] = up, anchor
    movable = np.array([t != "fixed" for t in types])
    names = [n for n, m in zip(joint_names, movable, strict=True) if m]
    order = [
        _name(mujoco, model, joint, int(j), "joint ")
        for j in np.argsort(np.asarray(model.jnt_qposadr))
    ]
    if names != order:  # pragma: no cover - MuJoCo numbers bodies depth first
        raise ValueError(f"joint order {names} differs from MuJoCo's qpos {order}.")
    # What the model's <flag> disables is off here too.
    flags = mujoco.mjtDisableBit
    off = {
        k: bool(model.opt.disableflags & int(getattr(flags, f"mjDSBL_{k.upper()}")))
        for k in ("gravity", "damper", "frictionloss", "constraint")
    }
    gravity = np.asarray(model.opt.gravity, dtype=float)
    gravity = np.zeros(3) if off["gravity"] else gravity
    model_damping = np.asarray(model.dof_damping, dtype=float)
    model_damping = 0 * model_damping if off["damper"] else model_damping
    model_friction = np.asarray(model.dof_frictionloss, dtype=float)
    if off["frictionloss"] or off["constraint"]:
        model_friction = 0 * model_friction
    n = model.nv
    system = RigidBodyTree(
        parents,
        types,
        np.stack(axes),
        np.stack(xyz),
        np.stack(rot),
        mass=np.array(mass),
        com=np.stack(com),
        inertia=np.stack(inertia),
        gravity=gravity,
        damping=_override("damping", damping, model_damping, n),
        armature=_override("armature", armature, np.asarray(model.dof_armature), n),
        friction_joints=friction_joints,
        joint_names=joint_names,
        link_names=link_names,
        base_name=_name(mujoco, model, body, 0, "world"),
    )
    if system.ball_rows:
        raise ValueError(
            "`friction_joints`: MJCF friction levels are per joint; a ball element "
            "(three joints) has one isotropic friction torque: build the tree "
            "with RigidBodyTree and use JointFriction with SphericalLoad or "
            "IsotropicCoulomb(dims=3)."
        )
    levels = model_friction[list(system.friction_joints)]
    fc = _override("friction", friction, levels, system.n_friction)
    if np.any(fc < 0):
        raise ValueError(f"`friction` levels must be >= 0; got {fc!r}.")
    return system, Coulomb(fc)


def load_mjcf(path: str | os.PathLike, **options) -> tuple[RigidBodyTree, Coulomb]:
    """Load a fixed-base robot from an MJCF file (or a URDF, which MuJoCo
    compiles too) through MuJoCo's compiler.

    ``damping`` becomes viscous joint damping in the system's bias force,
    ``frictionloss`` the Coulomb level of each joint's friction element,
    ``armature`` the rotor inertia on ``M``'s diagonal; each can be overridden.

    Args:
        path: the ``.xml`` (or ``.urdf``) file.
        **options: `damping`, `friction`, `armature`, `friction_joints`, as for
            `build_mjcf`.

    Returns:
        ``(system, law)``, a `RigidBodyTree` and a `Coulomb` law.

    Raises:
        ValueError: MuJoCo's compiler error (with the file and element), or
            what the tree cannot represent, named (see `build_mjcf`).
    """
    mujoco = _mujoco()
    try:
        model = mujoco.MjModel.from_xml_path(os.fspath(path))
    except ValueError as e:
        raise ValueError(f"{os.fspath(path)}: MuJoCo cannot compile it: {e}") from e
    return build_mjcf(model, **options)


def load_mjcf_string(text: str, **options) -> tuple[RigidBodyTree, Coulomb]:
    """`load_mjcf` for MJCF text instead of a file (no ``<include>`` or
    relative asset paths)."""
    mujoco = _mujoco()
    try:
        model = mujoco.MjModel.from_xml_string(text)
    except ValueError as e:
        raise ValueError(f"MuJoCo cannot compile the MJCF text: {e}") from e
    return build_mjcf(model, **options)
