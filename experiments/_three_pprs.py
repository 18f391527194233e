"""Itul & Pisla's 3-PPRS parallel robot (Itul and Pisla 2007, "The influence
of friction on the dynamic model for a 6-DOF parallel robot with triangular
platform"): the paper's kinematics, its Newton–Euler inverse dynamics
(Eq. 5–8), its friction forces (Eq. 9, 12, 13, 15, 16), and the same
mechanism as a `jaxfric.systems.ClosedChain`; shared by
``experiments/itul_pisla_3pprs.py`` and ``tests/test_three_pprs.py``.

Geometry (the paper's Fig. 2 is not in its text, so the directions are
stated here). Chain ``i`` (``i = 1, 2, 3``, at angle ``δ_i`` = 0°, 120°,
240°; radial ``e_i = (cos δ_i, sin δ_i, 0)``, tangential
``n_i = e_z × e_i``, ``t_i = e_z × n_i = −e_i``):

- active prismatic joint ``B_i`` along ``n_i`` (horizontal; coordinate
  ``q_i``, m, zero at the base circle point ``b_i = R e_i``; carriage mass
  ``m_i``),
- active prismatic joint ``E_i`` along ``e_z`` (coordinate ``q_{i+3}``;
  carriage mass ``m_{i+3}``), so that the revolute joint ``C_i`` sits at
  ``b_i + q_i n_i + q_{i+3} e_z``,
- passive revolute joint ``C_i`` about ``n_i`` (angle ``u_i``, rad, from the
  horizontal ``t_i`` towards ``e_z``): the guiding rod (mass ``m_b``, uniform,
  length ``l``) points along ``v_i = cos u_i t_i + sin u_i e_z``,
- passive spherical joint ``A_i`` at the rod's end, on the platform at
  ``r e_i`` from its centre (``δ'_i = δ_i``).

This is the paper's structure: ``q_i`` moves the whole chain along the
revolute axis (Eq. 8 has no gravity term), ``q_{i+3}`` is vertical (Eq. 7),
and the rod turns in the vertical plane normal to ``n_i`` (Eq. 5). The axes
are tangential: with radial axes the three ``H_i`` would be concurrent at the
platform centre and coplanar, so ``[B]`` (Eq. 4) would be singular at every
pose.

Reaction components (the paper's Eq. 5–9): the force of rod ``i`` on the
platform at ``A_i`` is ``H_i n_i + V_i v_i + W_i w_i`` with
``w_i = v_i × n_i`` (with this ``w_i`` the paper's Eq. 5 and 7 hold as
printed; Eq. 7 lacks the factor ``l`` in its rod term, which Eq. 9 has).

As a `RigidBodyTree` (12 coordinates): chain 1 carries the platform through
its spherical joint, three revolute joints about ``n_1``, ``t_1``, ``e_z``
(massless gimbal links; singular only at a middle angle of ±90°, which a
platform that only translates never nears); chains 2 and 3 end at their
rod tips, tied to the platform's points by two ball `LoopJoint` s: 6 closure
equations, 6 degrees of freedom, the six prismatic joints independent.
"""

from collections.abc import Mapping
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from jaxfric.forces import AbstractStatelessForce, ComputedTorque, Tabulated
from jaxfric.friction import (
    JointFriction,
    RevoluteLoad,
    SphericalLoad,
    TranslationalLoad,
)
from jaxfric.systems import ClosedChain, LoopJoint, RigidBodyTree

ANGLES_DEG = (0.0, 120.0, 240.0)
ACTIVE = ("q1", "q2", "q3", "q4", "q5", "q6")  # the paper's Q1..Q6
PASSIVE = ("u1", "u2", "u3")
# The three ball joints as friction elements (`build_chain(..., balls="tree")`):
# each three gimbal revolutes, one element of three rows.
BALLS = tuple((f"s{k}a", f"s{k}b", f"s{k}c") for k in (1, 2, 3))
EZ = np.array([0.0, 0.0, 1.0])


def directions() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(e, n, t)``: the radial unit vectors ``e_i``, the joint axes
    ``n_i = e_z × e_i`` (tangential) and ``t_i = e_z × n_i = −e_i`` of the
    three chains, shape ``(3, 3)`` each (rows)."""
    d = np.deg2rad(ANGLES_DEG)
    e = np.stack([np.cos(d), np.sin(d), np.zeros(3)], axis=1)
    n = np.cross(EZ[None], e)
    return e, n, np.cross(EZ[None], n)


# -- kinematics (Eq. 3, 4, 10, 11) ------------------------------------------------


def inverse_geometry(mech: Mapping[str, Any], centre, rotation):
    """Joint coordinates of a platform pose, analytic (Eq. 3: one quadratic per
    chain, the rod pointing up).

    Args:
        mech: the ``[mechanism]`` table.
        centre: platform centre ``P``, m, shape ``(3,)``.
        rotation: platform rotation, ``(3, 3)``.

    Returns:
        ``(q, u)``: the six active coordinates (m) and the three rod angles
        (rad).
    """
    e, n, t = directions()
    big_r, small_r, ell = (
        mech["base_radius"],
        mech["platform_radius"],
        mech["rod_length"],
    )
    tips = centre[None, :] + small_r * (e @ rotation.T)  # A_i
    rel = tips - big_r * e  # A_i − b_i
    q_h = jnp.sum(rel * n, axis=1)  # (A − C)·n = 0
    across = jnp.sum(rel * t, axis=1)  # l cos u
    rise = jnp.sqrt(ell**2 - across**2)  # l sin u > 0: the rod points up
    q_v = rel[:, 2] - rise
    return jnp.concatenate([q_h, q_v]), jnp.arctan2(rise, across)


def io_equations(mech, q, centre, rotation):
    """The input–output equations (Eq. 3): ``(P_i − P_ci)² − l²`` and
    ``(P_i − P_ci)·n_i``, shape ``(6,)``, zero at an assembled pose."""
    e, n, _ = directions()
    tips = centre[None, :] + mech["platform_radius"] * (e @ rotation.T)
    joints = mech["base_radius"] * e + q[:3, None] * n + q[3:, None] * EZ[None]
    d = tips - joints
    return jnp.concatenate(
        [jnp.sum(d * d, axis=1) - mech["rod_length"] ** 2, jnp.sum(d * n, axis=1)]
    )


def rotation_matrix(axis, angle):
    """Rodrigues: the rotation by `angle` (rad) about the unit `axis`, (3, 3)."""
    k = jnp.asarray(axis, float)
    kx = jnp.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return jnp.eye(3) + jnp.sin(angle) * kx + (1.0 - jnp.cos(angle)) * kx @ kx


def direct_geometry(mech, q, centre, rotation, iterations: int = 30):
    """Platform pose from the six active coordinates by Newton–Raphson on
    Eq. 3 (the paper's direct model), from the pose ``(centre, rotation)``;
    the rotation is updated by ``exp`` of a rotation-vector step."""
    for _ in range(iterations):
        a, b = jacobians(mech, q, centre, rotation)[:2]
        step = jnp.linalg.solve(b, -io_equations(mech, q, centre, rotation))
        # B·Ẋ is the equations' change along a platform twist (Eq. 4 with
        # q fixed), so B·step = −F is the Newton step.
        centre = centre + step[:3]
        angle = jnp.linalg.norm(step[3:])
        axis = step[3:] / jnp.where(angle > 0, angle, 1.0)
        rotation = rotation_matrix(axis, angle) @ rotation
    return centre, rotation


def jacobians(mech, q, centre, rotation):
    """The kinematic matrices at an assembled pose, analytic.

    Returns:
        ``(A, B, A_u, B_u)``: Eq. 4, ``[A] q̇ = [B] Ẋ`` with
        ``Ẋ = (Ṗ, ω)`` (``ω`` in world axes), and Eq. 10,
        ``[A_u] q̇ = [B_u] u̇``. ``A_u`` needs the direct kinematic model
        ``J = B⁻¹A`` (Eq. 11): ``l u̇_i = w'_i·(Ȧ_i − Ċ_i)``, with
        ``w'_i = n_i × v_i`` the rod's turning direction.
    """
    e, n, _ = directions()
    ell = mech["rod_length"]
    arms = mech["platform_radius"] * (e @ rotation.T)  # o→A_i
    joints = mech["base_radius"] * e + q[:3, None] * n + q[3:, None] * EZ[None]
    d = centre[None, :] + arms - joints  # C_i → A_i = l v_i
    zeros = jnp.zeros((3, 3))
    # F(q, X) = 0 differentiated: F_q q̇ + F_X Ẋ = 0, so A = −F_q, B = F_X.
    a = jnp.block(
        [
            [zeros, jnp.diag(2.0 * d[:, 2])],  # −∂(d²)/∂q: 2 d·n = 0, 2 d·e_z
            [jnp.eye(3), zeros],  # −∂(d·n)/∂q_i = 1
        ]
    )
    b = jnp.block(
        [
            [2.0 * d, 2.0 * jnp.cross(arms, d)],
            [n, jnp.cross(arms, n)],
        ]
    )
    j = jnp.linalg.solve(b, a)  # Eq. 11
    turn = jnp.cross(n, d) / ell  # w'_i = n_i × v_i
    tip_rate = j[None, :3, :] + jnp.cross(
        -arms[:, :, None], j[None, 3:, :], axisa=1, axisb=1, axisc=1
    )  # ∂Ȧ_i/∂q̇ = J_x − [arm_i]× J_ω
    joint_rate = jnp.zeros((3, 3, 6))
    for i in range(3):
        joint_rate = joint_rate.at[i, :, i].set(n[i]).at[i, :, 3 + i].set(EZ)
    a_u = jnp.einsum("ik,ikj->ij", turn, tip_rate - joint_rate)
    b_u = ell * jnp.eye(3)
    return a, b, a_u, b_u


# -- the helical trajectory ---------------------------------------------------------


def helix_angle(t):
    """``λ(t)``, rad: the paper's piecewise law (accelerate on [0, π/2), cruise
    at 2 rad/s, decelerate to rest at 3π/2)."""
    pi = jnp.pi
    return jnp.where(
        t < pi / 2,
        2.0 / pi * t**2,
        jnp.where(
            t < pi,
            2.0 * (t - pi / 2) + pi / 2,
            -2.0 * (t - pi) ** 2 / pi + 2.0 * (t - pi) + 1.5 * pi,
        ),
    )


def platform_path(traj: Mapping[str, Any], t):
    """Platform centre ``(R cos λ, R sin λ, Z0 + ΔZ λ/2π)``, m (a helical
    translation; the paper's ``R`` is the base radius)."""
    lam = helix_angle(t)
    return jnp.stack(
        [
            traj["radius"] * jnp.cos(lam),
            traj["radius"] * jnp.sin(lam),
            traj["z0"] + traj["rise_per_turn"] * lam / (2.0 * jnp.pi),
        ]
    )


def joint_trajectory(mech, traj, t):
    """``(q, q̇, q̈, u, u̇, ü)`` at time `t` (s) along the helix: inverse
    geometry differentiated twice in time by forward-mode autodiff."""

    def coords(s):
        q, u = inverse_geometry(mech, platform_path(traj, s), jnp.eye(3))
        return jnp.concatenate([q, u])

    def rate(s):
        return jax.jvp(coords, (s,), (jnp.ones_like(s),))

    (x, xd), (_, xdd) = jax.jvp(rate, (t,), (jnp.ones_like(t),))
    return x[:6], xd[:6], xdd[:6], x[6:], xd[6:], xdd[6:]


# -- Newton–Euler inverse dynamics, no friction (Eq. 5–8) -------------------------


def newton_euler(mech, qdd, u, ud, udd, rotation, acc, omega, eps):
    """The paper's four steps: drive forces and spherical-joint reactions.

    Args:
        qdd: active accelerations, m/s².
        u, ud, udd: rod angles, rad, and their rates.
        rotation: platform rotation, ``(3, 3)``.
        acc: acceleration of the platform centre (its centre of mass), m/s².
        omega, eps: platform angular velocity and acceleration (world), rad/s,
            rad/s².

    Returns:
        ``(Q, H, V, W)``: drive forces (N, shape ``(6,)``) and the reaction
        components of each spherical joint (N, shape ``(3,)`` each).
    """
    e, n, t = directions()
    g = mech["gravity"]
    m_b, ell = mech["rod_mass"], mech["rod_length"]
    m_h, m_v = mech["slider_mass"], mech["carriage_mass"]
    mass = mech["platform_mass"] + mech["object_mass"]
    inertia = (
        rotation @ jnp.diag(jnp.asarray(mech["platform_inertia"], float)) @ rotation.T
    )
    cu, su = jnp.cos(u), jnp.sin(u)
    v = cu[:, None] * t + su[:, None] * EZ[None]
    w = jnp.cross(v, n)
    # Step 1 (Eq. 5): the rod's moment about the revolute axis.
    big_w = 0.5 * m_b * (g + qdd[3:]) * cu + m_b * ell * udd / 3.0
    # Step 2 (Eq. 6): the platform's Newton–Euler equations in H_i, V_i.
    arms = mech["platform_radius"] * (e @ rotation.T)  # o→A_i
    force = mass * (acc + jnp.array([0.0, 0.0, g])) - jnp.sum(big_w[:, None] * w, 0)
    moment = (
        inertia @ eps
        + jnp.cross(omega, inertia @ omega)
        - jnp.sum(jnp.cross(arms, big_w[:, None] * w), 0)
    )
    cols = jnp.concatenate(
        [
            jnp.concatenate([n.T, v.T], axis=1),
            jnp.concatenate([jnp.cross(arms, n).T, jnp.cross(arms, v).T], axis=1),
        ]
    )
    hv = jnp.linalg.solve(cols, jnp.concatenate([force, moment]))
    big_h, big_v = hv[:3], hv[3:]
    # Step 3 (Eq. 7, with the factor l of the rod's centre, as in Eq. 9).
    rod_rise = 0.5 * m_b * ell * (udd * cu - ud**2 * su)
    q_v = (m_v + m_b) * (qdd[3:] + g) + rod_rise + big_v * su - big_w * cu
    # Step 4 (Eq. 8).
    q_h = (m_h + m_v + m_b) * qdd[:3] + big_h
    return jnp.concatenate([q_h, q_v]), big_h, big_v, big_w


# -- friction (Eq. 9, 12, 13, 15, 16) -------------------------------------------------


def _per_speed(moment, speed):
    """``moment/speed`` where ``speed > 0``, else 0."""
    moving = speed > 0
    return jnp.where(moving, moment / jnp.where(moving, speed, 1.0), 0.0)


def friction_coefficients(table: Mapping[str, Any]) -> dict[str, float]:
    """The ``[friction]`` table with the paper's derived coefficients
    ``μ_r = μ_p + (2s/d_r)/√(1 + μ_p²)`` and ``μ_s = μ_p/3``."""
    mu_p = table["mu_p"]
    return dict(
        table,
        mu_r=mu_p + 2.0 * table["s"] / table["d_r"] / (1.0 + mu_p**2) ** 0.5,
        mu_s=mu_p / 3.0,
    )


def friction_forces(mech, fric, qd, qdd, u, ud, udd, reactions, j_u, j_omega, omega):
    """Additional drive forces from friction, both approaches of the paper.

    Args:
        fric: `friction_coefficients` of the ``[friction]`` table.
        reactions: ``(H, V, W)`` of `newton_euler`.
        j_u, j_omega: ``[J_u]`` (Eq. 10) and ``[J_ω]`` (Eq. 11), ``(3, 6)``.

    Returns:
        A dict of shape-``(6,)`` arrays: ``active`` (Eq. 15–16),
        ``passive_whole`` (Eq. 12, the whole mechanism by virtual power),
        ``passive_chains`` (Eq. 13, independent chains by virtual work) and
        ``passive_projection`` (the virtual-power projection of the same
        friction moments, ``Σ (∂ω_rel/∂q̇)ᵀ k ω_rel``, see the experiment),
        plus the moments' coefficients ``k_r``, ``k_s`` (N·m·s/rad).
    """
    _, n, _ = directions()
    g = mech["gravity"]
    m_b, ell = mech["rod_mass"], mech["rod_length"]
    m_h, m_v = mech["slider_mass"], mech["carriage_mass"]
    big_h, big_v, big_w = reactions
    cu, su = jnp.cos(u), jnp.sin(u)
    # Eq. 9: the reaction at the revolute joint C_i.
    h_star = big_h + m_b * qdd[:3]
    v_star = (
        big_v * su
        - big_w * cu
        + 0.5 * m_b * ell * (udd * cu - ud**2 * su)
        + m_b * (g + qdd[3:])
    )
    w_star = big_v * cu + big_w * su - 0.5 * m_b * ell * (udd * su + ud**2 * cu)
    rel = ud[:, None] * n - omega[None, :]  # ω_n = u̇_i n_i − ω
    rel_speed = jnp.linalg.norm(rel, axis=1)
    spherical_normal = jnp.sqrt(big_h**2 + big_v**2 + big_w**2)
    revolute_normal = jnp.sqrt(v_star**2 + w_star**2)
    # k = c + μ (d/2) N/|x|: the Coulomb part only where the joint moves (at a
    # velocity of exactly zero the Coulomb moment is set-valued).
    k_s = fric["c_s"] + _per_speed(
        fric["mu_s"] * 0.5 * fric["d_s"] * spherical_normal, rel_speed
    )
    k_r = fric["c_r"] + _per_speed(
        fric["mu_r"] * 0.5 * fric["d_r"] * revolute_normal, jnp.abs(ud)
    )
    # Eq. 12 as printed.
    per_chain = (k_r + k_s) * ud - 2.0 * k_s * (n @ omega)
    whole = j_u.T @ per_chain + jnp.sum(k_s) * (j_omega.T @ omega)
    # The projection of the moments M_r = −k_r u̇ n, M_s = −k_s ω_n on q̇.
    rel_jac = j_u[:, None, :] * n[:, :, None] - j_omega[None]  # ∂ω_n/∂q̇
    projection = j_u.T @ (k_r * ud) + jnp.einsum("i,ikj,ik->j", k_s, rel_jac, rel)
    # Eq. 13: chain i alone, the platform held (δq_{i+3} = −l cos u δu).
    torque = k_s * jnp.sum(rel * n, axis=1) + k_r * ud  # −(M_s + M_r)·n_i
    # The drive supplies the power k u̇² at q̇_{i+3} = −l cos u_i u̇_i; the
    # horizontal drive cannot move with the platform held (Eq. 13's first
    # term is garbled in the text), so it gets none.
    chains = jnp.concatenate([jnp.zeros(3), -torque / (ell * cu)])
    # Eq. 15–16: the active joints' normal loads.
    active_normal = jnp.concatenate(
        [
            jnp.sqrt(w_star**2 + (v_star + (m_h + m_v) * g + m_v * qdd[3:]) ** 2),
            jnp.sqrt((h_star + m_v * qdd[:3]) ** 2 + w_star**2),
        ]
    )
    active = fric["c_i"] * qd + fric["mu"] * active_normal * jnp.sign(qd)
    return dict(
        active=active,
        passive_whole=whole,
        passive_chains=chains,
        passive_projection=projection,
        k_r=k_r,
        k_s=k_s,
        active_normal=active_normal,
        revolute_normal=revolute_normal,
        spherical_normal=spherical_normal,
    )


# -- the mechanism as a jaxfric ClosedChain -------------------------------------------


def build_chain(
    mech: Mapping[str, Any], friction_joints=ACTIVE + PASSIVE, balls: str = "loops"
) -> ClosedChain:
    """The 3-PPRS as a `ClosedChain`, the six prismatic joints independent in
    the paper's order ``q1..q6``.

    Args:
        mech: the ``[mechanism]`` table.
        friction_joints: names of the joints with friction elements (a ball:
            its three gimbal joints, `BALLS`, with ``balls="tree"``).
        balls: ``"loops"`` (default): chain 1's ball is three gimbal revolutes
            carrying the platform, chains 2 and 3 close through ball
            `LoopJoint` s (12 tree coordinates, 6 closure equations).
            ``"tree"``: every ball is three gimbal revolutes (``s{k}a``,
            ``s{k}b``, ``s{k}c``, as chain 1's), each carrying a third of the
            platform (``platform``, ``platform2``, ``platform3``), the thirds
            welded together (18 tree coordinates, 12 equations): the same
            mechanism, cut where no joint rubs, so that every ball can carry a
            friction element (`jaxfric.friction.SphericalLoad`).
    """
    if balls not in ("loops", "tree"):
        raise ValueError(f"`balls` must be 'loops' or 'tree'; got {balls!r}.")
    e, n, t = directions()
    big_r, small_r, ell = (
        mech["base_radius"],
        mech["platform_radius"],
        mech["rod_length"],
    )
    m_b = mech["rod_mass"]
    zero3, zero33 = [0.0, 0.0, 0.0], np.zeros((3, 3))
    rows = []

    def chain(i, first):
        """Rows (parent, type, axis, origin, mass, com, inertia, joint, link) of
        chain ``i``'s two sliders and rod, the first at tree index `first`."""
        # A thin uniform rod along t_i: no inertia about its own axis.
        rod_inertia = m_b * ell**2 / 12.0 * (np.eye(3) - np.outer(t[i], t[i]))
        k = i + 1
        return [
            (-1, "prismatic", n[i], big_r * e[i], mech["slider_mass"], zero3,
             zero33, f"q{k}", f"slider{k}"),
            (first, "prismatic", EZ, zero3, mech["carriage_mass"], zero3,
             zero33, f"q{k + 3}", f"carriage{k}"),
            (first + 1, "revolute", n[i], zero3, m_b, 0.5 * ell * t[i],
             rod_inertia, f"u{k}", f"rod{k}"),
        ]  # fmt: skip

    def gimbal(i, rod, mass, com, inertia, link):
        """Rows of chain ``i``'s ball (three revolutes about ``n_i``, ``t_i``,
        ``e_z`` at the rod's tip ``A_i``; massless gimbal links) carrying
        `link`, its frame at ``A_i``, the rod at tree index `rod`."""
        k = i + 1
        return [
            (rod, "revolute", n[i], ell * t[i], 0.0, zero3, zero33, f"s{k}a",
             f"gimbal{k}1" if k > 1 else "gimbal1"),
            (rod + 1, "revolute", t[i], zero3, 0.0, zero3, zero33, f"s{k}b",
             f"gimbal{k}2" if k > 1 else "gimbal2"),
            (rod + 2, "revolute", EZ, zero3, mass, com, inertia, f"s{k}c", link),
        ]  # fmt: skip

    mass_p = mech["platform_mass"] + mech["object_mass"]
    inertia_p = np.diag(mech["platform_inertia"])
    if balls == "loops":
        platform = gimbal(0, 2, mass_p, -small_r * e[0], inertia_p, "platform")
        rows = chain(0, 0) + platform + chain(1, 6) + chain(2, 9)
    else:
        # The platform in three welded thirds (same centre, a third of its
        # mass and inertia each: together the platform): every ball's gimbal
        # then moves inertia, so the tree's mass matrix stays definite.
        def third(i, rod, link):
            return gimbal(i, rod, mass_p / 3, -small_r * e[i], inertia_p / 3, link)

        rows = (
            chain(0, 0) + third(0, 2, "platform")
            + chain(1, 6) + third(1, 8, "platform2")
            + chain(2, 12) + third(2, 14, "platform3")
        )  # fmt: skip
    parents, types, axes, origins, mass, com, inertia, jnames, lnames = map(
        list, zip(*rows, strict=True)
    )
    tree = RigidBodyTree(
        parents,
        types,
        np.array(axes),
        np.array(origins),
        mass=np.array(mass),
        com=np.array(com),
        inertia=np.array(inertia),
        gravity=(0.0, 0.0, -mech["gravity"]),
        friction_joints=list(friction_joints),
        joint_names=jnames,
        link_names=lnames,
    )
    if balls == "loops":
        loops = [
            LoopJoint(
                "ball",
                f"rod{i + 1}",
                "platform",
                translation_a=ell * t[i],
                translation_b=small_r * (e[i] - e[0]),
            )
            for i in (1, 2)
        ]
    else:
        # A level platform has the world's orientation in every chain's
        # last gimbal link (each gimbal undoes its rod's angle).
        loops = [
            LoopJoint(
                "weld",
                f"platform{i + 1}",
                "platform",
                translation_b=small_r * (e[i] - e[0]),
            )
            for i in (1, 2)
        ]
    # Assembly guess: the platform level at the centre of the workspace.
    centre = np.array([0.0, 0.0, mech["guess_height"]])
    q, u = (np.asarray(x) for x in inverse_geometry(mech, centre, np.eye(3)))
    return ClosedChain(
        tree, loops, independent=list(ACTIVE), q_guess=tree_coordinates(q, u, balls)
    )


def tree_coordinates(q, u, balls: str = "loops"):
    """Tree coordinates of a level platform from ``(q, u)`` (`build_chain`'s
    `balls`): per chain ``(q_i, q_{i+3}, u_i)``, followed by its gimbal
    ``(−u_i, 0, 0)`` for chain 1 (``"loops"``, 12) or for every chain
    (``"tree"``, 18)."""
    q, u = jnp.asarray(q), jnp.asarray(u)
    zero = jnp.zeros_like(u[0])
    out = []
    for i in range(3):
        out += [q[i], q[i + 3], u[i]]
        if i == 0 or balls == "tree":
            out += [-u[i], zero, zero]
    return jnp.stack(out)


# -- forward simulation: computed-torque control with exact joint friction --------


class HelixReference(eqx.Module):
    """The helical translation as joint references for
    `jaxfric.forces.ComputedTorque`: ``position``, ``velocity``,
    ``acceleration`` of the six active joints (`joint_trajectory`), m, m/s,
    m/s²."""

    base_radius: float
    platform_radius: float
    rod_length: float
    radius: float
    z0: float
    rise_per_turn: float

    @classmethod
    def from_settings(cls, mech, traj) -> "HelixReference":
        return cls(
            **{
                k: float(mech[k])
                for k in ("base_radius", "platform_radius", "rod_length")
            },
            **{k: float(traj[k]) for k in ("radius", "z0", "rise_per_turn")},
        )

    def _joints(self, t):
        mech = dict(
            base_radius=self.base_radius,
            platform_radius=self.platform_radius,
            rod_length=self.rod_length,
        )
        traj = dict(radius=self.radius, z0=self.z0, rise_per_turn=self.rise_per_turn)
        return joint_trajectory(mech, traj, t)

    def position(self, t):
        return self._joints(t)[0]

    def velocity(self, t):
        return self._joints(t)[1]

    def acceleration(self, t):
        return self._joints(t)[2]


class CompensatedTorque(AbstractStatelessForce):
    """Computed-torque control plus ``weight`` times a tabulated feedforward
    (the paper's friction drive forces along the reference, Eq. 14), N."""

    control: ComputedTorque
    feedforward: Tabulated
    weight: Float[Array, ""] = eqx.field(converter=jnp.asarray)

    def __call__(self, t, q, qd):
        return self.control(t, q, qd) + self.weight * self.feedforward(t, q, qd)


def joint_friction_law(
    fric: Mapping[str, Any], sim: Mapping[str, Any], balls: bool = False
) -> JointFriction:
    """Exact Coulomb friction from the joints' reactions on the nine elements
    of `build_chain` (the six prismatic joints, then the three revolute ones):
    each slider rubs with the reaction force across its axis, ``μ·N``
    (`TranslationalLoad`, reaction force only; the paper's Eq. 15–16), each
    pin with ``μ_r (d_r/2) √(V*² + W*²)`` (`RevoluteLoad`, pin only; Eq. 9);
    with `balls` (friction joints ``ACTIVE + PASSIVE + BALLS`` of
    ``build_chain(..., balls="tree")``) each ball too, a torque of norm
    ``μ_s (d_s/2) √(H² + V² + W²)`` against its relative rotation
    (`SphericalLoad`, reaction force only; Eq. 9).

    Args:
        fric: `friction_coefficients` (``mu_r``, ``d_r``, ``mu_s``, ``d_s``).
        sim: the ``[simulation]`` table (``mu_static``, ``mu_dynamic`` of the
            sliders, ``static_ratio`` of the pins and balls).
        balls: whether the three ball joints carry friction elements.
    """
    loads = (TranslationalLoad(inputs="0100"),) * 6 + (
        RevoluteLoad(pin_radius=0.5 * fric["d_r"], friction_arm=0.0, inputs="0100"),
    ) * 3
    mu_d = [sim["mu_dynamic"]] * 6 + [fric["mu_r"]] * 3
    mu_s = [sim["mu_static"]] * 6 + [sim["static_ratio"] * fric["mu_r"]] * 3
    if balls:
        loads += (SphericalLoad(ball_radius=0.5 * fric["d_s"], inputs="0100"),) * 3
        mu_d += [fric["mu_s"]] * 3
        mu_s += [sim["static_ratio"] * fric["mu_s"]] * 3
    return JointFriction(np.array(mu_s), np.array(mu_d), loads)
