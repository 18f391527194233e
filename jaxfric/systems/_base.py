"""The mechanical-system interface of jaxfric.

A system has generalised coordinates ``q`` (n = `n_dof`), a mass matrix ``M(q)``,
bias forces ``h(q, q̇)`` (Coriolis/centrifugal, gravity, springs, passive damping)
and m = `n_friction` friction elements acting on slip coordinates
``s = J(q) q̇``. Its motion obeys (Farhat et al. 2010, Eq. 1 generalised)

    M(q) q̈ = τ − h(q, q̇) − J(q)ᵀ f.
"""

import abc
from typing import Any, ClassVar, NamedTuple

import equinox as eqx
import equinox.internal as eqxi

from .._check import AbstractCheck, check_shape, raise_if_invalid
from .._linalg import spd_solve
from .._types import Array, Coordinates, Float, Jacobian, Matrix, SlipVector, Vector


class ConfigurationStatus(eqxi.Enumeration):  # pyright: ignore[reportGeneralTypeIssues]
    """Whether a system's quantities are defined at a configuration
    (`AbstractSystem.configuration_status`); `jaxfric.simulate` turns the two
    failures into its result codes ``closure_failed`` and
    ``singular_configuration``."""

    ok = "The system is defined at this configuration."
    closure_failed = "The loop-closure equations could not be solved here."
    singular = "The dependent coordinates' closure Jacobian is (nearly) singular."


class Dynamics(NamedTuple):
    """Every state-dependent term of the equations of motion at one state
    ``(q, q̇)`` (`AbstractSystem.dynamics`)."""

    mass: Matrix  # M(q), kg or kg·m²
    bias: Vector  # h(q, q̇), N or N·m
    jac: Jacobian  # J(q)
    jdot_qd: SlipVector  # J̇(q, q̇) q̇
    # What the system computed on the way that its `joint_reactions` at the
    # same state can reuse (a closed chain's assembled tree state: its closure
    # solve); None for systems with nothing to share.
    shared: Any = None


class JointReactions(NamedTuple):
    """The reaction loads of the joints that carry friction elements, one row
    per element (`AbstractSystem.joint_reactions`), in the frame MotionSolve
    uses for joint friction (Altair MotionSolve Reference, Force_JointFriction):
    ``z`` along the joint axis, ``x``/``y`` across it, origin at the joint.
    """

    # What the parent side exerts on the child side through the joint: moment
    # about the joint origin (N·m), then force (N); components along the axis
    # that the joint moves along (the drive and friction) included.
    wrench: Float[Array, "m 6"]
    # The joint coordinate of each element, rad or m (a sliding joint's overlap
    # changes with it).
    position: SlipVector
    # ``"revolute"``, ``"prismatic"`` or ``"spherical"`` per friction row
    # (static): a cylindrical joint's element (`jaxfric.friction.CylindricalLoad`)
    # is its two rows, revolute then prismatic; a ball joint's
    # (`jaxfric.friction.SphericalLoad`) three ``"spherical"`` rows, each with
    # the ball's reaction.
    kinds: tuple[str, ...]
    # Per friction row, the row whose joint is its joint's parent in the tree,
    # -1 where that joint has no friction row (static): which of a cylindrical
    # joint's two tree joints is the outer one, whose reaction is the joint's.
    parent_rows: tuple[int, ...] = ()


class AbstractSystem(eqx.Module):
    """Abstract mechanical system. Final subclasses implement the four methods and
    the two sizes; all numbers inside are differentiable parameters. Each method
    checks its arguments' shapes with `check_vectors` first.
    """

    n_dof: eqx.AbstractVar[int]
    n_friction: eqx.AbstractVar[int]

    @property
    def n_coord(self) -> int:
        """Number of position coordinates ``q``: `n_dof` (one per velocity)
        unless the configuration has a non-vector part, e.g. the unit
        quaternions of `FreeBodies` (7 coordinates for 6 velocities per body).
        """
        return self.n_dof

    def coordinate_rate(self, q: Coordinates, qd: Vector) -> Coordinates:
        """``dq/dt`` from the velocities ``q̇`` (shape ``(n_coord,)``): ``q̇``
        itself by default. A system whose `n_coord` differs from `n_dof`
        overrides it (a unit quaternion's rate from the angular velocity,
        Kikuuwe & Yamamoto 2008, Eq. 26: ``Q(ω, q)``)."""
        del q
        return qd

    def step_limit(self) -> Array | None:
        """The largest step, s, that an explicit adaptive solver may take on
        this system's stiffest known mode (a penalty contact's spring: ``1/ω``),
        or `None` (default: no such mode). `jaxfric.simulate` caps its default
        `dtmax` there: a stiff mode at rest shows no local error, so the
        step-size controller would step far past its stability limit, and the
        mode's sensitivities (the gradients) would grow from rounding while the
        trajectory stays right (measured on a resting sphere: 1.6 % gradient
        error at 4× the limit, exact below it).
        """
        return None

    def normal_forces(self, q: Coordinates, qd: Vector) -> SlipVector:
        """The normal force pressing each friction element's surfaces together,
        N, shape ``(n_friction,)`` (the same for the rows of one contact): the
        load of contact friction whose level is ``μ·N`` (Kikuuwe & Yamamoto
        2008, Eq. 22–23; `jaxfric.friction.Kikuuwe` with `mu`). Only systems
        with contacts have them (`FreeBodies` on a plane); the default raises
        `NotImplementedError`.
        """
        del q, qd
        raise NotImplementedError(
            f"{type(self).__name__} has no contact normal forces: friction with a "
            "coefficient `mu` needs a system with contacts, e.g. "
            "jaxfric.systems.FreeBodies with a PlaneContact."
        )

    def parameter_checks(self) -> tuple[AbstractCheck, ...]:
        """The ranges of this system's parameters, checked on concrete values at
        construction and on traced values inside `jaxfric.simulate`. Default:
        none.
        """
        return ()

    def __check_init__(self):
        # Runs after the subclass's own (shape) checks: equinox calls every
        # class's `__check_init__` along the MRO.
        raise_if_invalid(self.parameter_checks())

    def configuration_status(self, q: Coordinates) -> ConfigurationStatus:
        """Whether `mass_matrix` and the other methods are defined at `q`: a
        simulation whose state turned non-finite asks this at the state where
        it stopped, to name the cause. Default: always `ConfigurationStatus.ok`
        (a system with a constrained configuration space overrides it, e.g.
        `ClosedChain`)."""
        del q
        return ConfigurationStatus.ok

    #: Whether the switch path writes out its Runge–Kutta stages on the CPU
    #: (`jaxfric.simulate`'s `UnrolledERK`): under `vmap` that pays where a
    #: vector-field evaluation is cheap next to diffrax's stage bookkeeping
    #: (lumped systems, robots); a system whose evaluation is costly (a closed
    #: chain's closure solve) compiles and runs faster in diffrax's stage loop,
    #: which traces the vector field once instead of once per stage. A
    #: load-dependent friction law (a Newton loop in every evaluation) takes
    #: the stage loop on any system (`jaxfric.simulate`'s
    #: `stages_written_out`; the written-out stages are for the CPU only).
    unrolled_stages: ClassVar[bool] = True

    #: Whether the friction rows ``J(q)`` are linearly independent wherever
    #: the mass matrix is regular, so that every Delassus block ``J_S M⁻¹
    #: J_Sᵀ`` is definite and no stick solve needs the least-norm split of
    #: redundant stick forces (`jaxfric.simulate`'s `psd_solve`): it is then
    #: not compiled (a fifth of a robot's program; README, Performance).
    #: Default False, right for any system (closed chains, bodies on several
    #: contacts, ball joints through gimbal lock).
    independent_friction_rows: ClassVar[bool] = False

    @property
    def vector_elements(self) -> tuple[tuple[int, int], ...]:
        """``(first row, rows)`` of the friction elements whose rows belong
        together, e.g. a ball joint's relative angular velocity (its friction
        is one torque, isotropic): a load-independent law on them must have
        elements of that many rows (`jaxfric.friction.IsotropicCoulomb` with
        `dims` 3), checked by `jaxfric.simulate`. Default: none."""
        return ()

    def near(self, q: Coordinates) -> "AbstractSystem":
        """The same system with its internal solves started near ``q`` (a
        configuration it is evaluated close to, e.g. a simulation segment's
        start): equal results, less work. Default: the system itself; a
        `ClosedChain` moves the start of its closure continuation there."""
        del q
        return self

    @abc.abstractmethod
    def mass_matrix(self, q: Coordinates) -> Matrix:
        """Symmetric positive definite mass matrix ``M(q)``, kg or kg·m²."""

    @abc.abstractmethod
    def bias_force(self, q: Coordinates, qd: Vector) -> Vector:
        """Bias forces ``h(q, q̇)`` (everything but applied forces and friction,
        moved to the left-hand side), N or N·m."""

    @abc.abstractmethod
    def friction_jacobian(self, q: Coordinates) -> Jacobian:
        """``J(q)`` with ``s = J(q) q̇``, shape ``(n_friction, n_dof)``."""

    @abc.abstractmethod
    def friction_jacobian_dot_qd(self, q: Coordinates, qd: Vector) -> SlipVector:
        """``J̇(q, q̇) q̇``, the velocity-product term of the slip acceleration
        ``ṡ = J q̈ + J̇ q̇``; zero for constant ``J``."""

    def check_vectors(
        self, *, q=None, qd=None, qdd=None, applied=None, friction=None
    ) -> None:
        """Raise `ValueError` naming the argument unless each given vector has
        its shape: ``(n_coord,)`` for the coordinates `q`; ``(n_dof,)`` for the
        velocities `qd`, accelerations `qdd` and applied forces `applied`;
        ``(n_friction,)`` for the friction forces `friction`. Shapes are
        static, so this is a trace-time check (free under `jit`); every method
        calls it first, since JAX would broadcast a vector of length 1
        silently.
        """
        dof = f"{type(self).__name__} with n_dof={self.n_dof}"
        if q is not None and self.n_coord != self.n_dof:
            why = f"{type(self).__name__} with n_coord={self.n_coord}"
            check_shape("q", q, (self.n_coord,), why)
            q = None
        for name, value in (("q", q), ("qd", qd), ("qdd", qdd), ("applied", applied)):
            if value is not None:
                check_shape(name, value, (self.n_dof,), dof)
        if friction is not None:
            m = self.n_friction
            why = f"{type(self).__name__} with n_friction={m}"
            check_shape("friction", friction, (m,), why)

    def dynamics(self, q: Coordinates, qd: Vector) -> Dynamics:
        """``M``, ``h``, ``J`` and ``J̇q̇`` at ``(q, q̇)`` at once: what the
        simulation paths evaluate at every state. Default: the four methods. A
        system whose terms share expensive work overrides it (`ClosedChain`:
        one closure solve instead of one per method)."""
        self.check_vectors(q=q, qd=qd)
        return Dynamics(
            self.mass_matrix(q),
            self.bias_force(q, qd),
            self.friction_jacobian(q),
            self.friction_jacobian_dot_qd(q, qd),
        )

    def joint_reactions(
        self,
        q: Coordinates,
        qd: Vector,
        qdd: Vector,
        applied: Vector,
        friction: SlipVector,
        dynamics: Dynamics | None = None,
    ) -> JointReactions:
        """The reaction wrenches of the joints that carry the friction elements
        at the state ``(q, q̇, q̈)`` under the generalised forces `applied` and
        the friction `friction` (N or N·m): the loads of reaction-load friction
        (`jaxfric.friction.JointFriction`). Only systems made of joints have
        them (`RigidBodyTree`, `ClosedChain`); the default raises
        `NotImplementedError`. `dynamics`, when given, is `dynamics(q, q̇)` at
        the same state: a system reuses what it shares with the reactions
        (`Dynamics.shared`) instead of computing it again.
        """
        del q, qd, qdd, applied, friction, dynamics
        raise NotImplementedError(
            f"{type(self).__name__} has no joint reactions: reaction-load joint "
            "friction (JointFriction) needs a system made of joints, e.g. "
            "jaxfric.systems.RigidBodyTree."
        )

    def slip_velocity(self, q: Coordinates, qd: Vector) -> SlipVector:
        """Slip velocities ``s = J(q) q̇``, m/s or rad/s."""
        self.check_vectors(q=q, qd=qd)
        return self.friction_jacobian(q) @ qd

    def acceleration(
        self, q: Coordinates, qd: Vector, applied: Vector, friction: SlipVector
    ) -> Vector:
        """Forward dynamics ``q̈ = M⁻¹(τ − h − Jᵀ f)`` by `jaxfric._linalg.spd_solve`."""
        self.check_vectors(q=q, qd=qd, applied=applied, friction=friction)
        terms = self.dynamics(q, qd)
        rhs = applied - terms.bias - terms.jac.T @ friction
        return spd_solve(terms.mass, rhs)
