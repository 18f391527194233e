"""Joint friction that grows with the joint's reaction loads: the load models
of MotionSolve's ``Force_JointFriction`` per joint type (Altair MotionSolve
Reference, Force_JointFriction, Comments 9–13) on exact Coulomb friction.

A revolute pin rubs harder when the link pulls on it: the friction torque is a
friction coefficient times a load level made of the joint's reaction force and
moment across its axis, plus a preload. The reactions depend on the
accelerations and those on the friction, so the switch path solves that
coupling at every evaluation (`jaxfric.simulate`): no reaction is lagged by a
step.
"""

import abc
from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .._check import (
    AtLeast,
    InRange,
    as_float,
    check_fields_broadcast,
    raise_if_invalid,
)
from .._types import Float, SlipVector
from ..simulate import DYNAMIC_PATH, SWITCH_PATH, AbstractFrictionLaw, AbstractPath
from ..systems import JointReactions
from ._base import AbstractDynamicLaw
from ._coulomb import Coulomb, IsotropicCoulomb

_EFFECTS = ("all", "stiction", "sliding")


def _safe_norm(x, y):
    """``√(x² + y²)`` whose gradient is 0 (not NaN) where both are 0."""
    return _vector_norm(jnp.stack([x, y], axis=-1))


def _vector_norm(v):
    """``|v|`` along the last axis whose gradient is 0 (not NaN) at 0."""
    square = jnp.sum(v * v, axis=-1)
    positive = square > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, square, 1.0)), 0.0)


def _input_bits(inputs: str) -> tuple[bool, bool, bool, bool]:
    """The four bits of MotionSolve's ``inputs`` (preload, reaction force,
    bending moment, torsional moment), as a string of four ``0``/``1``."""
    if not (isinstance(inputs, str) and len(inputs) == 4 and set(inputs) <= {"0", "1"}):
        raise ValueError(
            "`inputs` must be four characters 0 or 1 (preload, reaction force, "
            f"bending moment, torsional moment), e.g. '1111'; got {inputs!r}."
        )
    return tuple(bit == "1" for bit in inputs)  # pyright: ignore[reportReturnType]


class AbstractJointLoad(eqx.Module):
    """The load model of one joint's friction (MotionSolve Comments 9–14): the
    normal loads that the joint's reaction wrench (`jaxfric.systems.JointReactions`
    frame, ``z`` along the axis) presses on its rubbing surfaces, each times its
    arm. The friction force or torque is ``μ·Σ_k c_k`` with ``μ`` the static
    or the kinetic coefficient.
    """

    #: The joint type this model describes: ``"revolute"``, ``"prismatic"``,
    #: ``"cylindrical"`` or ``"spherical"``.
    kind: eqx.AbstractClassVar[str]
    #: The friction rows (tree joints, in order) of the element this model
    #: describes, by joint type: one for a revolute or prismatic joint; a
    #: cylindrical joint's rotation and translation rows; a ball joint's three
    #: rows of relative angular velocity.
    row_kinds: eqx.AbstractClassVar[tuple[str, ...]]
    #: Names of the contributions `contributions` returns, in order.
    contribution_names: eqx.AbstractClassVar[tuple[str, ...]]
    #: MotionSolve's ``inputs``: four bits, preload, reaction force, bending
    #: moment, torsional moment.
    inputs: eqx.AbstractVar[str]

    def __check_init__(self):
        _input_bits(self.inputs)
        raise_if_invalid(self.parameter_checks())

    @abc.abstractmethod
    def parameter_checks(self) -> tuple:
        """The ranges of the geometry and preload (MotionSolve's attributes)."""

    @abc.abstractmethod
    def normal_loads(
        self, wrench: Float[Array, "6"], position: Float[Array, ""], mu_static
    ) -> tuple[Float[Array, " c"], Float[Array, " a"]]:
        """The contact normal forces (N, each ``>= 0``, one per contribution)
        and the arms (m for a revolute joint: its friction force times the
        arm is a torque; 1 for a prismatic one), MotionSolve Comments 9–11:
        one arm per contribution for a revolute or prismatic joint, one per
        friction row for a cylindrical or spherical one (`CylindricalLoad`,
        `SphericalLoad`).

        Args:
            wrench: the joint's reaction, moment (N·m) then force (N), in its
                friction frame.
            position: the joint coordinate, rad or m.
            mu_static: the static coefficient (the preload is converted to an
                equivalent normal force with it, MotionSolve Comment 9).
        """

    def contributions(
        self, wrench: Float[Array, "6"], position: Float[Array, ""], mu_static
    ) -> Float[Array, "4"]:
        """The contributions ``c_k = arm_k·N_k`` (N·m for a revolute joint,
        N for a prismatic one) per unit friction coefficient: Coulomb friction
        at coefficient ``μ`` is ``μ·Σ c_k`` (revolute and prismatic joints:
        `JointFriction`)."""
        normal, arms = self.normal_loads(wrench, position, mu_static)
        return normal * arms


class RevoluteLoad(AbstractJointLoad):
    """Friction load of a revolute (pin) joint, MotionSolve Comment 9.

    With ``N_xy = √(F_x² + F_y²)`` the radial reaction force, ``N_z = |F_z|``
    the axial one and ``N_rxy = √(M_x² + M_y²)/r_b`` the force couple of the
    bending moment, the friction torque at coefficient ``μ`` is
    ``T = μ·(r_p·N_xy + r_n·N_z + r_p·N_rxy) + (μ/μ_s)·T_pre``: pin surface
    (``Tz1``), end caps (``Tz2``), bending (``Tz3``) and preload (``Tz4``, the
    preload's equivalent normal force ``T_pre/(μ_s r_p)`` on the pin).

    Args:
        pin_radius: ``r_p``, m, ``> 0`` (default 1.0, MotionSolve's default of
            one length unit).
        friction_arm: ``r_n``, the effective radius of the axial contact, m,
            ``>= 0`` (default 1.0).
        bending_reaction_arm: ``r_b``, half the width of the inner part, m,
            ``> 0`` (default 1.0).
        torque_preload: ``T_pre``, the static friction torque of the unloaded
            joint, N·m, ``>= 0`` (default 0).
        inputs: which contributions count, four bits ``"1111"`` (default):
            preload, reaction force (``N_xy`` and ``N_z``), bending moment; the
            fourth (torsional moment) does not apply to a revolute joint and
            is ignored, as in MotionSolve.
    """

    pin_radius: Float[Array, ""] = eqx.field(converter=as_float, default=1.0)
    friction_arm: Float[Array, ""] = eqx.field(converter=as_float, default=1.0)
    bending_reaction_arm: Float[Array, ""] = eqx.field(converter=as_float, default=1.0)
    torque_preload: Float[Array, ""] = eqx.field(converter=as_float, default=0.0)
    inputs: str = eqx.field(static=True, default="1111")

    kind: ClassVar[str] = "revolute"
    row_kinds: ClassVar[tuple[str, ...]] = ("revolute",)
    contribution_names: ClassVar[tuple[str, ...]] = (
        "pin (radial force)",
        "end caps (axial force)",
        "bending moment",
        "preload",
    )

    def parameter_checks(self):
        return (
            InRange("pin_radius", self.pin_radius, lower=0.0, lower_open=True),
            InRange("friction_arm", self.friction_arm, lower=0.0),
            InRange(
                "bending_reaction_arm",
                self.bending_reaction_arm,
                lower=0.0,
                lower_open=True,
            ),
            InRange("torque_preload", self.torque_preload, lower=0.0),
        )

    def normal_loads(self, wrench, position, mu_static):
        del position
        preload, reaction, bending, _ = _input_bits(self.inputs)
        moment, force = wrench[:3], wrench[3:]
        normal = jnp.stack(
            [
                _safe_norm(force[0], force[1]) * reaction,  # on the pin
                jnp.abs(force[2]) * reaction,  # on the end caps
                _safe_norm(moment[0], moment[1]) / self.bending_reaction_arm * bending,
                self.torque_preload / (mu_static * self.pin_radius) * preload,
            ]
        )
        rp = self.pin_radius
        return normal, jnp.stack([rp, self.friction_arm, rp, rp])


_OVERLAP = {"constant": 0.0, "increase": 1.0, "decrease": -1.0}


class _AbstractSlidingLoad(AbstractJointLoad):
    """A joint whose parts slide along its axis over an overlap ``x_s``
    (`TranslationalLoad`, `CylindricalLoad`; MotionSolve Comments 10, 11): the
    bending moment presses a force couple ``√(M_x² + M_y²)/x_s`` on them."""

    #: The name of the field that holds the joint's arm (m, ``> 0``).
    arm_name: eqx.AbstractClassVar[str]
    initial_overlap: eqx.AbstractVar[Float[Array, ""]]
    overlap_delta: eqx.AbstractVar[str]
    force_preload: eqx.AbstractVar[Float[Array, ""]]

    def __check_init__(self):
        if self.overlap_delta not in _OVERLAP:
            raise ValueError(
                f"`overlap_delta` must be one of {tuple(_OVERLAP)}; got "
                f"{self.overlap_delta!r}."
            )

    def parameter_checks(self):
        return (
            InRange(
                self.arm_name, getattr(self, self.arm_name), lower=0.0, lower_open=True
            ),
            InRange(
                "initial_overlap", self.initial_overlap, lower=0.0, lower_open=True
            ),
            InRange("force_preload", self.force_preload, lower=0.0),
        )

    def _overlap(self, position):
        """The overlap ``x_s`` of the sliding parts at the joint's `position`,
        m; NaN where none is left (no couple can be carried: `simulate`
        reports the non-finite friction)."""
        overlap = self.initial_overlap + _OVERLAP[self.overlap_delta] * position
        return jnp.where(overlap > 0, overlap, jnp.nan)


class TranslationalLoad(_AbstractSlidingLoad):
    """Friction load of a translational (prismatic) joint, MotionSolve
    Comment 10.

    With ``N = √(F_x² + F_y²)`` the force across the axis (rubbing),
    ``N_t = |M_z|/(2 r_n)`` the force couple of the torsional moment and
    ``N_b = √(M_x² + M_y²)/x_s`` the force couple of the bending moment over
    the overlap ``x_s`` of the sliding parts, the friction force at
    coefficient ``μ`` is ``F = μ·(N + N_t + N_b) + (μ/μ_s)·F_pre``.

    Args:
        reaction_arm: ``r_n``, m, ``> 0`` (default 1.0).
        initial_overlap: the overlap ``x_s`` at joint position 0, m, ``> 0``
            (default 1000.0, MotionSolve's default).
        overlap_delta: ``"constant"`` (default), ``"increase"`` (the overlap
            grows with the joint position, ``x_s = x_0 + q``) or ``"decrease"``
            (``x_s = x_0 − q``). A state where ``x_s <= 0`` (the slider left
            its guide) gives a non-finite friction force, which `simulate`
            reports.
        force_preload: ``F_pre``, the static friction force of the unloaded
            joint, N, ``>= 0`` (default 0).
        inputs: four bits ``"1111"`` (default): preload, reaction force,
            bending moment, torsional moment.
    """

    reaction_arm: Float[Array, ""] = eqx.field(converter=as_float, default=1.0)
    initial_overlap: Float[Array, ""] = eqx.field(converter=as_float, default=1000.0)
    overlap_delta: str = eqx.field(static=True, default="constant")
    force_preload: Float[Array, ""] = eqx.field(converter=as_float, default=0.0)
    inputs: str = eqx.field(static=True, default="1111")

    kind: ClassVar[str] = "prismatic"
    arm_name: ClassVar[str] = "reaction_arm"
    row_kinds: ClassVar[tuple[str, ...]] = ("prismatic",)
    contribution_names: ClassVar[tuple[str, ...]] = (
        "rubbing (transverse force)",
        "torsional moment",
        "bending moment",
        "preload",
    )

    def normal_loads(self, wrench, position, mu_static):
        preload, reaction, bending, torsion = _input_bits(self.inputs)
        moment, force = wrench[:3], wrench[3:]
        overlap = self._overlap(position)
        normal = jnp.stack(
            [
                _safe_norm(force[0], force[1]) * reaction,
                jnp.abs(moment[2]) / (2 * self.reaction_arm) * torsion,
                _safe_norm(moment[0], moment[1]) / overlap * bending,
                self.force_preload / mu_static * preload,
            ]
        )
        return normal, jnp.ones_like(normal)


class CylindricalLoad(_AbstractSlidingLoad):
    """Friction load of a cylindrical joint, MotionSolve Comment 11: a slider
    that turns and slides on a shaft, its friction one force in the plane of
    the contact (3D LuGre, Comment 7, in `JointLuGre`; an exact friction disk
    in `JointFriction`), not two independent ones.

    The joint is two friction rows of the tree, in this order: a revolute
    joint (rotation ``ω`` about the axis) and a prismatic joint (``v_z``
    along it) on the same axis, one the other's parent through a massless
    carriage (either way round: `jaxfric.io.load_motionsolve` builds the
    revolute one first); the outer one's reaction (at the slider's frame) is
    the joint's. The contact slips at ``v = (r_p ω, v_z)``. With
    ``N_xy = √(F_x² + F_y²)`` the radial reaction force, ``N_b = √(M_x² +
    M_y²)/x_s`` the force couple of the bending moment over the overlap
    ``x_s`` of the slider on the shaft, and ``N_pre = F_pre/μ_s``, each
    contribution ``N_k`` carries its own 2D LuGre force ``F_k`` along ``v``
    (`JointLuGre`); the friction torque is ``r_p Σ F_k,rot`` and the axial
    friction force ``Σ F_k,z``. Exact Coulomb friction (`JointFriction`) is
    one contact force ``F`` with ``|F| <= μ_s Σ N_k`` while stuck and ``F =
    μ_d Σ N_k v/|v|`` while slipping, the same torque and force.

    Args:
        pin_radius: ``r_p``, m, ``> 0`` (default 1.0).
        initial_overlap: the overlap ``x_s`` at translation 0, m, ``> 0``
            (default 1000.0, MotionSolve's default).
        overlap_delta: ``"constant"`` (default), ``"increase"`` (``x_s = x_0 +
            z``, ``z`` the prismatic coordinate) or ``"decrease"`` (``x_s =
            x_0 − z``); ``x_s <= 0`` gives a non-finite friction, which
            `simulate` reports.
        force_preload: ``F_pre``, N, ``>= 0`` (default 0).
        inputs: four bits ``"1111"`` (default): preload, reaction force,
            bending moment; the fourth (torsional moment) does not apply to a
            cylindrical joint and is ignored, as in MotionSolve.
    """

    pin_radius: Float[Array, ""] = eqx.field(converter=as_float, default=1.0)
    initial_overlap: Float[Array, ""] = eqx.field(converter=as_float, default=1000.0)
    overlap_delta: str = eqx.field(static=True, default="constant")
    force_preload: Float[Array, ""] = eqx.field(converter=as_float, default=0.0)
    inputs: str = eqx.field(static=True, default="1111")

    kind: ClassVar[str] = "cylindrical"
    arm_name: ClassVar[str] = "pin_radius"
    row_kinds: ClassVar[tuple[str, ...]] = ("revolute", "prismatic")
    contribution_names: ClassVar[tuple[str, ...]] = (
        "radial force",
        "bending moment",
        "preload",
    )

    def normal_loads(self, wrench, position, mu_static):
        """The three normal forces (N) and the arms of the two rows
        (``(r_p, 1)``: rotation, translation). `wrench` is the outer row's
        reaction, `position` the prismatic coordinate (m)."""
        preload, reaction, bending, _ = _input_bits(self.inputs)
        moment, force = wrench[:3], wrench[3:]
        overlap = self._overlap(position)
        normal = jnp.stack(
            [
                _safe_norm(force[0], force[1]) * reaction,
                _safe_norm(moment[0], moment[1]) / overlap * bending,
                self.force_preload / mu_static * preload,
            ]
        )
        return normal, self.arms

    @property
    def arms(self) -> Float[Array, "2"]:
        """The arms of the rotation and translation rows, ``(r_p, 1)``: the
        contact slips at ``(r_p ω, v_z)``."""
        return jnp.stack([self.pin_radius, jnp.ones_like(self.pin_radius)])

    def contributions(self, wrench, position, mu_static) -> Float[Array, "3"]:
        """The three normal forces (N): exact Coulomb friction at coefficient
        ``μ`` is a contact force of norm ``μ·Σ N_k`` (`JointFriction`), its
        torque ``r_p F_rot``."""
        return self.normal_loads(wrench, position, mu_static)[0]


class SphericalLoad(AbstractJointLoad):
    """Friction load of a spherical (ball) joint, MotionSolve Comment 13: the
    ball slides in its socket at ``v = r_b ω_r``, ``ω_r`` its angular velocity
    relative to the socket (three friction rows,
    `jaxfric.systems.RigidBodyTree`'s ball elements), pressed by ``N = |F| +
    N_pre``: the reaction force's magnitude and the preload's equivalent
    normal force ``N_pre = T_pre/(μ_s r_b)`` (as in Comment 9). The friction
    is one force ``F_f`` in the contact, torque ``r_b F_f`` on the ball:
    exact Coulomb friction (`JointFriction`) holds while ``|F_f| <= μ_s N``
    and slips with ``F_f = −μ_d N ω_r/|ω_r|``, a torque of norm ``μ_d N r_b``
    against the relative rotation; `JointLuGre` gives each contribution a 3D
    bristle on ``v`` (Comment 7).

    Args:
        ball_radius: ``r_b``, m, ``> 0`` (default 1.0, MotionSolve's default of
            one length unit).
        torque_preload: ``T_pre``, the static friction torque of the unloaded
            joint, N·m, ``>= 0`` (default 0).
        inputs: four bits ``"1111"`` (default): preload, reaction force; the
            bending and torsional moments do not apply to a spherical joint
            and are ignored, as in MotionSolve.
    """

    ball_radius: Float[Array, ""] = eqx.field(converter=as_float, default=1.0)
    torque_preload: Float[Array, ""] = eqx.field(converter=as_float, default=0.0)
    inputs: str = eqx.field(static=True, default="1111")

    kind: ClassVar[str] = "spherical"
    row_kinds: ClassVar[tuple[str, ...]] = ("spherical",) * 3
    contribution_names: ClassVar[tuple[str, ...]] = ("reaction force", "preload")

    def parameter_checks(self):
        return (
            InRange("ball_radius", self.ball_radius, lower=0.0, lower_open=True),
            InRange("torque_preload", self.torque_preload, lower=0.0),
        )

    def normal_loads(self, wrench, position, mu_static):
        """The two normal forces (N) and the arms of the three rows, ``r_b``
        each. `wrench` is the ball's reaction."""
        del position
        preload, reaction, _, _ = _input_bits(self.inputs)
        normal = jnp.stack(
            [
                _vector_norm(wrench[3:]) * reaction,
                self.torque_preload / (mu_static * self.ball_radius) * preload,
            ]
        )
        return normal, self.arms

    @property
    def arms(self) -> Float[Array, "3"]:
        """The arms of the three rows, ``r_b``: the contact slips at ``r_b
        ω_r``."""
        return jnp.broadcast_to(self.ball_radius, (3,))

    def contributions(self, wrench, position, mu_static) -> Float[Array, "2"]:
        """The two normal forces (N): exact Coulomb friction at coefficient
        ``μ`` is a contact force of norm ``μ·Σ N_k`` (`JointFriction`), its
        torque ``r_b`` times it."""
        return self.normal_loads(wrench, position, mu_static)[0]


def _element_reactions(loads, reactions: JointReactions):
    """Per load model, the reaction wrench and the position it reads: its
    row's, for a `CylindricalLoad` the outer row's wrench and the
    prismatic row's position, for a `SphericalLoad` the ball's reaction (on
    each of its rows). Checks one model per element, of its joint's
    type, in the order of the friction rows."""
    expected = tuple(kind for load in loads for kind in load.row_kinds)
    if len(reactions.kinds) != len(expected):
        raise ValueError(
            f"the load models cover {len(expected)} friction rows (a "
            "CylindricalLoad covers two: its revolute and prismatic joints; a "
            "SphericalLoad three: its ball joint's) but "
            f"the system has {len(reactions.kinds)}: give one load model per "
            "element."
        )
    out, row = [], 0
    for k, load in enumerate(loads):
        rows = len(load.row_kinds)
        found = reactions.kinds[row : row + rows]
        if found != load.row_kinds:
            raise ValueError(
                f"`loads[{k}]` is a {type(load).__name__} (friction rows of "
                f"kinds {load.row_kinds}) but friction rows {row}..{row + rows - 1} "
                f"sit on joints of kinds {found}."
            )
        wrench = reactions.wrench[row]
        if rows == 2:
            wrench = reactions.wrench[_outer_row(k, row, reactions.parent_rows)]
        out.append((wrench, reactions.position[row + rows - 1]))
        row += rows
    return out


def _outer_row(k: int, row: int, parent_rows: tuple[int, ...]) -> int:
    """Of a cylindrical element's rows ``row`` and ``row + 1``, the one whose
    joint is the other's child: its reaction is the cylindrical joint's (at
    the slider's frame, MotionSolve's I marker)."""
    if len(parent_rows) > row + 1:
        if parent_rows[row + 1] == row:
            return row + 1
        if parent_rows[row] == row + 1:
            return row
    raise ValueError(
        f"`loads[{k}]` is a CylindricalLoad but its friction rows {row} and "
        f"{row + 1} are not joints one of which is the other's parent: a "
        "cylindrical joint is a revolute and a prismatic joint on one axis "
        "through a massless carriage."
    )


def _check_loads(law, loads, max_iterations) -> None:
    """Construction checks shared by `JointFriction` and `JointLuGre`."""
    check_fields_broadcast(law, ("mu_static", "mu_dynamic"))
    if not (isinstance(max_iterations, int) and max_iterations >= 1):
        raise ValueError(
            f"`max_iterations` must be an int >= 1; got {max_iterations!r}."
        )
    if not (
        isinstance(loads, tuple)
        and loads
        and all(isinstance(load, AbstractJointLoad) for load in loads)
    ):
        raise ValueError(
            "`loads` must be a non-empty tuple of joint load models "
            "(RevoluteLoad, TranslationalLoad, CylindricalLoad, SphericalLoad), "
            "one per element; "
            f"got {loads!r}."
        )
    for name in ("mu_static", "mu_dynamic"):
        size = jnp.size(getattr(law, name))
        if size not in (1, len(loads)):
            raise ValueError(
                f"`{name}` must be a scalar or have one entry per element of "
                f"`loads` ({len(loads)}); got {size} entries."
            )


def _coefficient_checks(law) -> tuple:
    """``0 < μ_d <= μ_s`` and the load models' own ranges, shared by
    `JointFriction` and `JointLuGre`."""
    return (
        InRange("mu_static", law.mu_static, lower=0.0, lower_open=True),
        InRange("mu_dynamic", law.mu_dynamic, lower=0.0, lower_open=True),
        AtLeast("mu_static", law.mu_static, "mu_dynamic", law.mu_dynamic),
    ) + tuple(c for load in law.loads for c in load.parameter_checks())


class JointFriction(AbstractFrictionLaw):
    """Exact Coulomb joint friction whose levels grow with the joints' reaction
    loads (MotionSolve ``Force_JointFriction`` load models, Comments 9–13, on
    the set-valued Coulomb law of Farhat et al. 2010, Eq. 4–5).

    Element ``k`` sits on a joint with the load model ``loads[k]``; with
    ``c_k`` its contributions (`AbstractJointLoad.contributions`) at the
    current reactions, the element slips with ``f = μ_d·Σ c_k`` against its
    motion and sticks while its stick force stays within ``μ_s·Σ c_k``. The
    reactions depend on the accelerations, which depend on every friction
    force, so at each evaluation the switch path solves ``f = F(f)`` (``f →
    accelerations → reactions → levels → f``) by Newton's method to
    ``1e-12`` of the largest force and differentiates it
    implicitly; where it does not converge in `max_iterations` the friction is
    non-finite and the simulation stops with
    ``RESULTS.load_coupling_failed``, never a lagged reaction. A stuck joint's
    breakaway is the event ``μ_s·Σ c_k − |f| ↓ 0``.

    A cylindrical joint (`CylindricalLoad`, Comment 11) is one element of two
    rows whose contact force ``F`` (N; its contributions are normal forces)
    lies in the disk ``|F| <= μ_s·Σ N_k`` while stuck and is ``μ_d·Σ N_k``
    along the contact slip ``(r_p ω, v_z)`` while slipping: at the reactions
    an `IsotropicCoulomb` with arms ``(r_p, 1)``, whose stop, breakaway and
    slip direction from rest the switch path finds as for a contact. A
    spherical joint (`SphericalLoad`, Comment 13) is one element of three
    rows, its contact force in the ball ``|F| <= μ_s·Σ N_k`` while stuck and
    ``μ_d·Σ N_k`` against the slip ``r_b ω_r``: the `IsotropicCoulomb` of
    three rows with arms ``r_b``. Elements of different sizes mix in one law
    (a revolute crank beside a ball): at the reactions an `IsotropicCoulomb`
    with per-element sizes, each one-row element ``μ_d·Σ c_k`` against its
    slip.

    Needs a system with `joint_reactions` (`jaxfric.systems.RigidBodyTree`).

    Args:
        mu_static: ``μ_s``, ``> 0``, scalar or one per element.
        mu_dynamic: ``μ_d``, ``> 0`` and ``<= mu_static``, scalar or one per
            element.
        loads: one load model per friction element (`RevoluteLoad`,
            `TranslationalLoad`, `CylindricalLoad`, `SphericalLoad`), matching
            the joint's type.
        effect: ``"all"`` (default: static limit ``μ_s``, slip level ``μ_d``),
            ``"stiction"`` (``μ_s`` for both) or ``"sliding"`` (``μ_d`` for
            both), MotionSolve's ``effect``.
        max_iterations: the most Newton steps of the load coupling per
            evaluation, ``>= 1`` (default 50; each is a product with the
            reactions' Jacobian, a stick solve and its derivative in ``f``;
            a few do).
    """

    mu_static: Float[Array, "..."] = eqx.field(converter=as_float)
    mu_dynamic: Float[Array, "..."] = eqx.field(converter=as_float)
    loads: tuple[AbstractJointLoad, ...]
    effect: str = eqx.field(static=True, default="all")
    max_iterations: int = eqx.field(static=True, default=50)

    simulation_path: ClassVar[AbstractPath] = SWITCH_PATH
    load_dependent: ClassVar[bool] = True

    def __check_init__(self):
        if self.effect not in _EFFECTS:
            raise ValueError(
                f"`effect` must be one of {_EFFECTS}; got {self.effect!r}."
            )
        _check_loads(self, self.loads, self.max_iterations)

    def parameter_checks(self):
        return _coefficient_checks(self)

    def ordered_levels(self):
        return (("mu_static", "mu_dynamic"),)

    @property
    def rows_per_element(self) -> int | tuple[int, ...]:
        """1, or 2 for cylindrical joints (`CylindricalLoad`), 3 for
        spherical ones (`SphericalLoad`); each element's where they differ."""
        sizes = tuple(len(load.row_kinds) for load in self.loads)
        return sizes[0] if len(set(sizes)) == 1 else sizes

    def coefficients(self) -> tuple[SlipVector, SlipVector]:
        """``(μ_s, μ_d)`` per element after `effect`."""
        m = len(self.loads)
        mu_s = jnp.broadcast_to(self.mu_static, (m,))
        mu_d = jnp.broadcast_to(self.mu_dynamic, (m,))
        if self.effect == "stiction":
            mu_d = mu_s
        elif self.effect == "sliding":
            mu_s = mu_d
        return mu_s, mu_d

    def contributions(self, reactions: JointReactions) -> Float[Array, "m c"]:
        """The contributions ``c_k`` of every element (rows) at the joints'
        reaction loads (`jaxfric.systems.AbstractSystem.joint_reactions`;
        `AbstractJointLoad.contributions`), N·m or N per unit coefficient:
        ``μ·c`` is each one's share of the friction torque or force (of a
        cylindrical or spherical joint: of its contact force, N). Where load
        models of different kinds mix, each element's row is padded with zeros
        to the longest (in the order of its `contribution_names`)."""
        mu_s, _ = self.coefficients()
        pairs = _element_reactions(self.loads, reactions)
        rows = [
            load.contributions(wrench, position, mu_s[k])
            for k, (load, (wrench, position)) in enumerate(
                zip(self.loads, pairs, strict=True)
            )
        ]
        width = max(row.shape[0] for row in rows)
        return jnp.stack([jnp.pad(row, (0, width - row.shape[0])) for row in rows])

    def at_reactions(self, reactions: JointReactions) -> Coulomb | IsotropicCoulomb:
        """The Coulomb law at the reactions: slip level ``μ_d·Σ c_k``, static
        limit ``μ_s·Σ c_k`` (N·m or N); for cylindrical joints the
        `IsotropicCoulomb` of their contact force (N) with the arms ``(r_p,
        1)`` of their rotation and translation rows; for spherical joints the
        same with the arms ``r_b`` of their three rows. Where sizes mix, one
        `IsotropicCoulomb` with each element's rows (`dims` a tuple), a
        one-row element's level its torque or force ``μ·Σ c_k`` with arm 1."""
        load = jnp.sum(self.contributions(reactions), 1)
        mu_s, mu_d = self.coefficients()
        dims = self.rows_per_element
        if dims == 1:
            return Coulomb(fc=mu_d * load, fs=mu_s * load)
        sizes = dims if isinstance(dims, tuple) else (dims,) * len(self.loads)
        # A one-row element's level is its torque or force itself: arm 1.
        arms = jnp.concatenate(
            [
                load_.arms if size > 1 else jnp.ones(1, dtype=load.dtype)
                for load_, size in zip(self.loads, sizes, strict=True)
            ]
        )
        repeats = np.asarray(sizes)
        return IsotropicCoulomb(
            fc=jnp.repeat(mu_d * load, repeats, total_repeat_length=sum(sizes)),
            fs=jnp.repeat(mu_s * load, repeats, total_repeat_length=sum(sizes)),
            dims=dims,
            arms=arms,
        )


def _abs(v):
    # |v| with derivative 0 at v = 0 (as in `LuGre`): a start from rest does not
    # bias gradients towards one direction.
    return v * jnp.sign(v)


def _contact_lugre(law, k, normal, v, speed, z):
    """``(ż, F)`` of element `k`'s contributions (rows of `normal`, `z`), all
    sliding at the contact velocity `v` (last axis) of norm `speed`: ``ż =
    v − σ0·speed·z/g(speed)``, ``F = N(σ0 z + σ1 ż) + σ2 v`` (MotionSolve
    Comments 3 and 7)."""
    hump = law.mu_static[k] - law.mu_dynamic[k]
    g = law.mu_dynamic[k] + hump * jnp.exp(-((speed / law.vs) ** 2))
    zdot = v - law.sigma0 * speed * z / g
    force = normal * (law.sigma0 * z + law.sigma1 * zdot) + law.sigma2 * v
    return zdot, force


class _LuGreAtLoads(AbstractDynamicLaw):
    """`JointLuGre` at fixed contact normal forces (`JointLuGre.at_reactions`).

    Per element ``k``: ``normal[k]`` its contributions' normal forces and
    ``arms[k]`` (a scalar element: one arm per contribution, each sliding at
    ``arm·s``; a cylindrical or spherical one: the arms of its rows, every
    contribution sliding at ``arms·s``, e.g. ``(r_p ω, v_z)``). The state is
    element-major: a scalar element's one bristle per contribution, a
    cylindrical or spherical one's one per row and contribution."""

    normal: tuple[Float[Array, " c"], ...]
    arms: tuple[Float[Array, " r"], ...]
    mu_static: Float[Array, " m"]
    mu_dynamic: Float[Array, " m"]
    sigma0: Float[Array, ""]
    sigma1: Float[Array, ""]
    sigma2: Float[Array, ""]
    vs: Float[Array, ""]
    rows: tuple[int, ...] = eqx.field(static=True)

    def init_state(self, slip_velocity):
        size = sum(n.shape[0] * r for n, r in zip(self.normal, self.rows, strict=True))
        return jnp.zeros(size, dtype=jnp.asarray(slip_velocity).dtype)

    def _elements(self, state, slip_velocity):
        """``(ż, row forces)`` per element."""
        s = jnp.asarray(slip_velocity)
        out, row, at = [], 0, 0
        for k, (normal, arms, rows) in enumerate(
            zip(self.normal, self.arms, self.rows, strict=True)
        ):
            size = normal.shape[0] * rows
            z = state[at : at + size]
            if rows == 1:
                v = arms * s[row]
                zdot, force = _contact_lugre(self, k, normal, v, _abs(v), z)
                out.append((zdot, jnp.sum(arms * force)[None]))
            else:
                v = arms * s[row : row + rows]
                speed = _vector_norm(v)
                zdot, force = _contact_lugre(
                    self, k, normal[:, None], v[None, :], speed, z.reshape(-1, rows)
                )
                out.append((zdot.reshape(-1), arms * jnp.sum(force, 0)))
            row, at = row + rows, at + size
        return out

    def state_derivative(self, state, slip_velocity):
        return jnp.concatenate(
            [zdot for zdot, _ in self._elements(state, slip_velocity)]
        )

    def force(self, state, slip_velocity):
        return jnp.concatenate([f for _, f in self._elements(state, slip_velocity)])


class JointLuGre(AbstractFrictionLaw):
    """MotionSolve's LuGre joint friction with the joints' reaction loads
    (Altair MotionSolve Reference Guide, Force_JointFriction, Comments 3 and
    9–10; Canudas de Wit et al. 1995).

    Each of the four contributions ``k`` of element ``e`` (`RevoluteLoad`,
    `TranslationalLoad`: normal force ``N_k`` at arm ``r_k``) slides at
    ``v_k = r_k·s`` and has its own bristle state ``z_k``:

        ``ż_k = v_k − σ0·|v_k|·z_k / g(v_k)``,
        ``g(v) = μ_d + (μ_s − μ_d)·exp(−(v/v_s)²)``,
        ``F_k = N_k·(σ0 z_k + σ1 ż_k) + σ2·v_k``,

    and the joint's friction torque (or force) is ``Σ_k r_k·F_k``. A
    cylindrical element (`CylindricalLoad`, Comments 7 and 11) has three
    contributions, each a 2D bristle ``z_k`` on the contact slip ``v = (r_p
    ω, v_z)``: ``ż_k = v − σ0·|v|·z_k/g(|v|)``, ``F_k = N_k(σ0 z_k + σ1
    ż_k) + σ2 v``; its row forces are ``(r_p Σ F_k,rot, Σ F_k,z)``, so
    turning and sliding share one friction limit. A spherical element
    (`SphericalLoad`, Comments 7 and 13) has two contributions, each a 3D
    bristle on ``v = r_b ω_r``, its row forces the torque ``r_b Σ F_k``. The
    normal
    forces come from the reactions, which depend on the accelerations and so
    on this friction: the dynamic-law path solves that coupling at every
    evaluation (the same Newton solve as `JointFriction`). The state is
    element-major (four per scalar element, six per cylindrical or spherical
    one); it
    starts relaxed (``z = 0``).

    Needs a system with `joint_reactions` (`jaxfric.systems.RigidBodyTree`).

    Args:
        mu_static: ``μ_s``, ``> 0``, scalar or one per element.
        mu_dynamic: ``μ_d``, ``> 0`` and ``<= mu_static``.
        loads: one load model per friction element.
        bristle_stiffness: ``σ0``, 1/m, ``> 0`` (MotionSolve's default 100
            per length unit: 1e5 /m for a model in mm).
        damping_effects: ``σ1``, s/m, ``>= 0``.
        viscous_effects: ``σ2``, N·s/m, ``>= 0``.
        stiction_trans_vel: ``v_s``, m/s, ``> 0``.
        max_iterations: the most Newton steps of the load coupling per
            evaluation (default 50); where it does not converge the
            simulation stops with ``RESULTS.load_coupling_failed``.
    """

    mu_static: Float[Array, "..."] = eqx.field(converter=as_float)
    mu_dynamic: Float[Array, "..."] = eqx.field(converter=as_float)
    loads: tuple[AbstractJointLoad, ...]
    bristle_stiffness: Float[Array, ""] = eqx.field(converter=as_float)
    damping_effects: Float[Array, ""] = eqx.field(converter=as_float)
    viscous_effects: Float[Array, ""] = eqx.field(converter=as_float)
    stiction_trans_vel: Float[Array, ""] = eqx.field(converter=as_float)
    max_iterations: int = eqx.field(static=True, default=50)

    simulation_path: ClassVar[AbstractPath] = DYNAMIC_PATH
    load_dependent: ClassVar[bool] = True

    def __check_init__(self):
        _check_loads(self, self.loads, self.max_iterations)

    def parameter_checks(self):
        return _coefficient_checks(self) + (
            InRange(
                "bristle_stiffness", self.bristle_stiffness, lower=0.0, lower_open=True
            ),
            InRange("damping_effects", self.damping_effects, lower=0.0),
            InRange("viscous_effects", self.viscous_effects, lower=0.0),
            InRange(
                "stiction_trans_vel",
                self.stiction_trans_vel,
                lower=0.0,
                lower_open=True,
            ),
        )

    def ordered_levels(self):
        return (("mu_static", "mu_dynamic"),)

    def init_state(self, slip_velocity) -> Float[Array, " n"]:
        """Relaxed bristles, ``z = 0``: four per revolute or translational
        element, six per cylindrical (two per contribution) or spherical
        (three per contribution) one."""
        size = sum(
            len(load.contribution_names) * len(load.row_kinds) for load in self.loads
        )
        return jnp.zeros(size)

    def at_reactions(self, reactions: JointReactions) -> _LuGreAtLoads:
        """The law at the contact normal forces of these reactions."""
        m = len(self.loads)
        mu_s = jnp.broadcast_to(self.mu_static, (m,))
        pairs = [
            load.normal_loads(wrench, position, mu_s[k])
            for k, (load, (wrench, position)) in enumerate(
                zip(self.loads, _element_reactions(self.loads, reactions), strict=True)
            )
        ]
        return _LuGreAtLoads(
            normal=tuple(n for n, _ in pairs),
            arms=tuple(a for _, a in pairs),
            mu_static=mu_s,
            mu_dynamic=jnp.broadcast_to(self.mu_dynamic, (m,)),
            sigma0=self.bristle_stiffness,
            sigma1=self.damping_effects,
            sigma2=self.viscous_effects,
            vs=self.stiction_trans_vel,
            rows=tuple(len(load.row_kinds) for load in self.loads),
        )


__all__ = [
    "AbstractJointLoad",
    "CylindricalLoad",
    "JointFriction",
    "JointLuGre",
    "RevoluteLoad",
    "SphericalLoad",
    "TranslationalLoad",
]
