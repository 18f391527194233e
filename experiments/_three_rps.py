"""The 3-RPS parallel manipulator of `farhat_3rps.py` (Farhat et al. 2010,
Sec. 5.2, Fig. 11), shared with ``tests/test_closed_3rps.py``: one builder.

A fixed base, a moving platform and three legs at angles ``θ_i`` (90°, 210°,
330°) around the base circle. Leg ``i``: a revolute joint at
``B_i = r_b (cos θ_i, sin θ_i, 0)`` with its axis tangent to the base circle,
``u_i = (−sin θ_i, cos θ_i, 0)``; a prismatic joint along the leg (the
actuated joint, coordinate = leg length, m, from the base joint to the
spherical joint); a spherical joint at the platform point
``P_i = r_p (cos θ_i, sin θ_i, 0)`` (platform frame, from its centre).

As a `RigidBodyTree` (9 coordinates): leg 1 carries the platform through its
spherical joint, three revolute joints in series about ``u_1``, the radial
direction ``(cos θ_1, sin θ_1, 0)`` and ``z`` (massless intermediate links: the
spherical joint is exact, and ``M`` stays positive definite because the
platform's inertia reaches all three axes). This gimbal is singular only when
its middle angle is ±90°; at the home pose (platform level) the angles are
``(−φ_1, 0, 0)`` with the leg tilt ``φ_1`` ≈ −15°, and along the experiment's
trajectories the middle angle stays below 15° (checked there), far from the
singularity. Legs 2 and 3 end at their spherical points, which two ball
`LoopJoint` s tie to the platform's points ``P_2``, ``P_3``: 6 closure
equations, 3 degrees of freedom, the three leg lengths independent.

All numbers (geometry, masses, inertias) come from the ``[mechanism]`` table of
``configs/experiments/farhat_3rps.toml``.
"""

from collections.abc import Mapping
from typing import Any

import jax.numpy as jnp
import numpy as np

import jaxfric as jf
from jaxfric.systems import ClosedChain, LoopJoint, RigidBodyTree

LEG_ANGLES_DEG = (90.0, 210.0, 330.0)
LEGS = ("leg1", "leg2", "leg3")  # the prismatic (actuated) joints


def _cylinder_inertia(mass: float, length: float, radius: float) -> np.ndarray:
    """Inertia of a solid cylinder along ``z`` about its centre, kg·m²."""
    side = mass * (3.0 * radius**2 + length**2) / 12.0
    return np.diag([side, side, 0.5 * mass * radius**2])


def _rotation(axis, angle: float) -> np.ndarray:
    """Rodrigues: rotation by `angle` (rad) about the unit `axis`."""
    k = np.asarray(axis, float)
    kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(angle) * kx + (1.0 - np.cos(angle)) * kx @ kx


def tree_spec(mechanism: Mapping[str, Any]) -> dict[str, Any]:
    """The tree's joints and links as plain arrays (also used to build the
    Pinocchio oracle of the test): ``parents``, ``joint_types``, ``axes``,
    ``origins``, ``mass``, ``com``, ``inertia``, ``joint_names``,
    ``link_names``, the loop attachment points and the home configuration."""
    r_b, r_p = mechanism["base_radius"], mechanism["platform_radius"]
    height = mechanism["home_height"]
    theta = np.deg2rad(LEG_ANGLES_DEG)
    radial = np.stack([np.cos(theta), np.sin(theta), np.zeros(3)], axis=1)
    tangent = np.stack([-np.sin(theta), np.cos(theta), np.zeros(3)], axis=1)
    ez = np.array([0.0, 0.0, 1.0])

    cyl = mechanism["cylinder"]
    rod = mechanism["rod"]
    plat = mechanism["platform"]
    cyl_inertia = _cylinder_inertia(cyl["mass"], cyl["length"], cyl["radius"])
    rod_inertia = _cylinder_inertia(rod["mass"], rod["length"], rod["radius"])
    plat_inertia = np.diag([plat["inertia_xx"], plat["inertia_yy"], plat["inertia_zz"]])
    cyl_com = [0.0, 0.0, cyl["com_from_base_joint"]]
    rod_com = [0.0, 0.0, -rod["com_from_tip"]]  # rod frame origin: the leg tip
    zero3, zero33 = [0.0, 0.0, 0.0], np.zeros((3, 3))

    def leg(i, first):
        """Rows of leg ``i``'s base revolute and prismatic joints, the first one
        at tree index `first`: (parent, type, axis, origin, mass, com, inertia,
        joint name, link name); "cylinder" moves with the base revolute joint,
        "rod" with the prismatic one."""
        n = i + 1
        return [
            (-1, "revolute", tangent[i], r_b * radial[i], cyl["mass"], cyl_com,
             cyl_inertia, f"base{n}", f"cylinder{n}"),
            (first, "prismatic", ez, zero3, rod["mass"], rod_com, rod_inertia,
             f"leg{n}", f"rod{n}"),
        ]  # fmt: skip

    # Leg 1's spherical joint (massless gimbal links), then the platform.
    spherical = [
        (1, "revolute", tangent[0], zero3, 0.0, zero3, zero33, "sph1_a", "gimbal1"),
        (2, "revolute", radial[0], zero3, 0.0, zero3, zero33, "sph1_b", "gimbal2"),
        (3, "revolute", ez, zero3, plat["mass"], -r_p * radial[0], plat_inertia,
         "sph1_c", "platform"),
    ]  # fmt: skip
    rows = leg(0, 0) + spherical + leg(1, 5) + leg(2, 7)
    parents, types, axes, origins, mass, com, inertia, jnames, lnames = map(
        list, zip(*rows, strict=True)
    )

    # Home pose: platform level at `height`, centred over the base.
    tilt = np.arctan2(r_p - r_b, height)  # about u_i; < 0: leaning inwards
    length = np.hypot(r_p - r_b, height)
    q_home = np.array([tilt, length, -tilt, 0.0, 0.0, tilt, length, tilt, length])
    # Platform points of legs 2 and 3 in the platform frame (origin at P_1).
    attach = [r_p * (radial[i] - radial[0]) for i in (1, 2)]
    return dict(
        parents=parents,
        joint_types=types,
        axes=np.array(axes),
        origins=np.array(origins),
        mass=np.array(mass),
        com=np.array(com),
        inertia=np.array(inertia),
        joint_names=jnames,
        link_names=lnames,
        attachments=attach,
        q_home=q_home,
        home_leg_length=float(length),
    )


def build_chain(mechanism: Mapping[str, Any]) -> tuple[ClosedChain, dict[str, Any]]:
    """The 3-RPS manipulator as a `ClosedChain` with friction elements on the
    three prismatic joints (in leg order) and the leg lengths independent.

    Args:
        mechanism: the ``[mechanism]`` table of the experiment's TOML.

    Returns:
        ``(chain, spec)`` with `spec` from `tree_spec`.
    """
    spec = tree_spec(mechanism)
    tree = RigidBodyTree(
        spec["parents"],
        spec["joint_types"],
        spec["axes"],
        spec["origins"],
        mass=spec["mass"],
        com=spec["com"],
        inertia=spec["inertia"],
        gravity=(0.0, 0.0, -mechanism["gravity"]),
        friction_joints=list(LEGS),
        joint_names=spec["joint_names"],
        link_names=spec["link_names"],
    )
    loops = [
        LoopJoint("ball", f"rod{i}", "platform", translation_b=attach)
        for i, attach in zip((2, 3), spec["attachments"], strict=True)
    ]
    chain = ClosedChain(tree, loops, independent=list(LEGS), q_guess=spec["q_home"])
    return chain, spec


def platform_pose(spec: Mapping[str, Any], q_tree) -> tuple[np.ndarray, np.ndarray]:
    """Platform centre position (m) and rotation from tree coordinates, by
    numpy forward kinematics of leg 1 (for plots and checks)."""
    q = np.asarray(q_tree, float)
    axes, origins = spec["axes"], spec["origins"]
    rot, pos = np.eye(3), np.zeros(3)
    for k in range(5):  # base1, leg1, sph1_a, sph1_b, sph1_c
        pos = pos + rot @ origins[k]
        if spec["joint_types"][k] == "prismatic":
            pos = pos + rot @ (axes[k] * q[k])
        else:
            rot = rot @ _rotation(axes[k], q[k])
    return pos + rot @ spec["com"][4], rot


def reference(settings, name, offset):
    """The leg-length reference `name` of ``[trajectories]`` as a
    `jaxfric.forces.FourierSeries` about `offset` (m)."""
    table = settings["trajectories"][name]
    return jf.forces.FourierSeries(
        a=np.array(table["a"], float),
        b=np.array(table["b"], float),
        omega=table["omega"],
        offset=offset,
    )


def tracking_start(chain, law, controller):
    """Initial state on the reference's velocity, the leg lengths lagging by
    the proportional controller's steady error ``e0 = (h + f)/kp`` (gravity
    and the slip friction at that velocity, with the integrator state zero), so
    that the run starts in tracking (``M z̈ ≈ 0``) instead of a start-up
    transient in which the legs would stop at once. ``h`` is evaluated at the
    reference position (``e0`` is a few mm)."""
    ref = controller.reference
    z_ref, zd0 = ref.position(0.0), ref.velocity(0.0)
    load = chain.bias_force(z_ref, zd0) + law.slip_force(zd0, jnp.sign(zd0))
    return z_ref - load / controller.kp, zd0
