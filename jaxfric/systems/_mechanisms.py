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
    friction_joints: Sequence[int | str] = ("crank",),
    damping=0.0,
) -> ClosedChain:
    """A planar four-bar linkage in the x–y plane, driven at the crank.

    Three uniform rods on revolute joints about z: the crank (joint
    ``"crank"``, at the origin), the coupler (``"coupler"``, at the crank's tip)
    and the rocker (``"rocker"``, at ``(ground, 0, 0)``); a ball loop joint ties
    the coupler's tip to the rocker's tip. The independent coordinate is the
    crank angle, rad; the assembly mode is the one with the coupler–rocker
    joint above the line from the crank's tip to the rocker pivot at
    `crank_angle`.

    Args:
        crank, coupler, rocker, ground: link lengths, m, ``> 0``.
        masses: masses of the crank, coupler and rocker rods, kg, ``> 0``
            (rotational inertia ``m L²/12`` about the rod's centre).
        crank_angle: crank angle of the assembly configuration, rad.
        gravity: gravity in the plane, m/s².
        friction_joints: joints with a friction element (names or indices).
        damping: viscous joint damping, N·m·s/rad (scalar or per joint).

    Returns:
        The `ClosedChain`, one independent coordinate (the crank angle).
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
    tree = RigidBodyTree(
        [-1, 0, -1],
        ["revolute"] * 3,
        [[0.0, 0.0, 1.0]] * 3,
        [[0.0, 0.0, 0.0], [crank, 0.0, 0.0], [ground, 0.0, 0.0]],
        mass=masses,
        com=[[L / 2, 0.0, 0.0] for L in lengths],
        inertia=inertia,
        gravity=gravity,
        damping=damping,
        friction_joints=friction_joints,
        joint_names=("crank", "coupler", "rocker"),
        link_names=("crank_link", "coupler_link", "rocker_link"),
    )
    loop = LoopJoint(
        "ball",
        "coupler_link",
        "rocker_link",
        translation_a=(coupler, 0.0, 0.0),
        translation_b=(rocker, 0.0, 0.0),
    )
    return ClosedChain(
        tree,
        [loop],
        independent=["crank"],
        q_guess=_assembly(lengths, ground, crank_angle),
    )


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
