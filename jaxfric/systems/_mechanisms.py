"""Ready-made closed-chain mechanisms built from `RigidBodyTree` and
`LoopJoint`."""

from collections.abc import Sequence

import numpy as np

from .._check import check_range
from ._closed import ClosedChain, LoopJoint
from .rigid._system import RigidBodyTree


def four_bar(
    crank,
    coupler,
    rocker,
    ground,
    *,
    masses=(1.0, 1.0, 1.0),
    crank_angle=np.pi / 3,
    gravity=(0.0, -9.81, 0.0),
    friction_joints: Sequence | None = None,
    damping=0.0,
    ball: bool = False,
) -> ClosedChain:
    """A planar four-bar linkage in the x–y plane, driven at the crank.

    Three uniform rods on revolute joints about z: the crank (joint
    ``"crank"``, at the origin), the coupler (``"coupler"``, at the crank's tip)
    and the rocker (``"rocker"``, at ``(ground, 0, 0)``); a ball loop joint ties
    the coupler's tip to the rocker's tip. The independent coordinate is the
    crank angle, rad; the assembly mode is the one with the coupler–rocker
    joint above the line from the crank's tip to the rocker pivot at
    `crank_angle`.

    With `ball`, the crank–coupler joint is a ball joint instead: three
    revolute joints ``"ball_z"``, ``"ball_y"``, ``"ball_x"`` (about the
    crank's z, then y, then the coupler's own axis) through massless gimbal
    links ``"ball_gimbal_1"``, ``"ball_gimbal_2"``, one ball friction element
    (`RigidBodyTree`) by default. Between two balls the coupler can spin about
    its own axis: a second independent coordinate, ``"ball_x"`` (the rod's
    polar inertia, ``1e-6 m L²``, is the spin's only inertia). The motion of a
    planar start stays planar.

    Args:
        crank, coupler, rocker, ground: link lengths, m, ``> 0``.
        masses: masses of the crank, coupler and rocker rods, kg, ``> 0``
            (rotational inertia ``m L²/12`` about the rod's centre).
        crank_angle: crank angle of the assembly configuration, rad.
        gravity: gravity in the plane, m/s².
        friction_joints: joints with a friction element (names or indices;
            a ball element is the tuple of its three joints). Default: the
            crank, or with `ball` the ball.
        damping: viscous joint damping, N·m·s/rad (scalar or per joint: 3
            entries, or 5 with `ball`, in the order of the joints above).
        ball: whether the crank–coupler joint is a ball joint (above).

    Returns:
        The `ClosedChain`: one independent coordinate, the crank angle (with
        `ball`, two: the crank angle and the coupler's spin, rad).
    """
    lengths = np.array([crank, coupler, rocker], dtype=float)
    check_range("link lengths", np.append(lengths, ground), lower=0.0, lower_open=True)
    masses = np.asarray(masses, dtype=float)
    if masses.shape != (3,):
        raise ValueError(f"`masses` must have 3 entries; got shape {masses.shape}.")
    check_range("masses", masses, lower=0.0, lower_open=True)
    # Thin rods: a small polar moment keeps the inertia physical.
    inertia = np.stack(
        [
            np.diag([1e-6 * m * L**2, m * L**2 / 12, m * L**2 / 12])
            for m, L in zip(masses, lengths, strict=True)
        ]
    )
    com = [[L / 2, 0.0, 0.0] for L in lengths]
    guess = _assembly(lengths, ground, crank_angle)
    independent = ["crank"]
    names = ("crank", "coupler", "rocker")
    links = ("crank_link", "coupler_link", "rocker_link")
    parents, axes = [-1, 0, -1], [[0.0, 0.0, 1.0]] * 3
    origins = [[0.0, 0.0, 0.0], [crank, 0.0, 0.0], [ground, 0.0, 0.0]]
    if friction_joints is None:
        friction_joints = [("ball_z", "ball_y", "ball_x")] if ball else ["crank"]
    if ball:
        names = ("crank", "ball_z", "ball_y", "ball_x", "rocker")
        links = ("crank_link", "ball_gimbal_1", "ball_gimbal_2") + links[1:]
        parents = [-1, 0, 1, 2, -1]
        axes = [[0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
        axes.append([0.0, 0.0, 1.0])
        origins = origins[:2] + [[0.0, 0.0, 0.0]] * 2 + origins[2:]
        masses = np.insert(masses, 1, [0.0, 0.0])
        com = com[:1] + [[0.0, 0.0, 0.0]] * 2 + com[1:]
        inertia = np.insert(inertia, 1, np.zeros((2, 3, 3)), axis=0)
        guess = np.insert(guess, 2, [0.0, 0.0])
        independent.append("ball_x")
    tree = RigidBodyTree(
        parents,
        ["revolute"] * len(names),
        axes,
        origins,
        mass=masses,
        com=com,
        inertia=inertia,
        gravity=gravity,
        damping=damping,
        friction_joints=friction_joints,
        joint_names=names,
        link_names=links,
    )
    loop = LoopJoint(
        "ball",
        "coupler_link",
        "rocker_link",
        translation_a=(coupler, 0.0, 0.0),
        translation_b=(rocker, 0.0, 0.0),
    )
    return ClosedChain(tree, [loop], independent=independent, q_guess=guess)


def _assembly(lengths, ground, theta):
    """Tree coordinates of the four-bar at crank angle `theta` (triangle of the
    coupler, the rocker and the tip–pivot diagonal); raises if it cannot close."""
    a, b, c = lengths
    tip = a * np.array([np.cos(theta), np.sin(theta)])
    pivot = np.array([ground, 0.0])
    diagonal = np.linalg.norm(pivot - tip)
    if not abs(b - c) <= diagonal <= b + c:
        raise ValueError(
            f"the four-bar cannot be assembled at crank_angle={theta}: the "
            f"diagonal {diagonal:.4g} m must lie in [|coupler - rocker|, "
            f"coupler + rocker] = [{abs(b - c):.4g}, {b + c:.4g}] m."
        )
    ex = (pivot - tip) / diagonal
    along = (b**2 - c**2 + diagonal**2) / (2 * diagonal)
    joint = (
        tip
        + along * ex
        + np.sqrt(max(b**2 - along**2, 0.0)) * np.array([-ex[1], ex[0]])
    )
    phi = np.arctan2(*(joint - tip)[::-1])
    psi = np.arctan2(*(joint - pivot)[::-1])
    return np.array([theta, phi - theta, psi])
