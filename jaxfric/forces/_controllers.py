"""Joint-space tracking controllers as applied forces: PD, PID (integrator state
in the ODE) and computed torque.

A reference trajectory is any (pytree) object with ``position(t)`` and
``velocity(t)`` methods, plus ``acceleration(t)`` for computed torque, each
returning a scalar or one value per coordinate (rad or m, and their
derivatives); `jaxfric.forces.FourierSeries` is one. Gains are scalars or one
per coordinate. Farhat et al. (2010, Sec. 5.4) run their robot under PID along
sinusoidal and Fourier trajectories.
"""

from typing import ClassVar, Protocol, runtime_checkable

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array

from .._check import InRange, as_float, check_broadcastable
from .._types import Float, State, Vector
from ..systems import AbstractSystem
from ._base import AbstractForce, AbstractStatelessForce


@runtime_checkable
class Trajectory(Protocol):
    """A reference with ``position(t)`` and ``velocity(t)``."""

    def position(self, t): ...

    def velocity(self, t): ...


@runtime_checkable
class SmoothTrajectory(Trajectory, Protocol):
    """A reference with ``position(t)``, ``velocity(t)`` and ``acceleration(t)``."""

    def acceleration(self, t): ...


class _AbstractTracker(AbstractForce):
    """A controller that tracks `reference` with the gains `gain_names`
    (scalars or one per coordinate, finite and ``>= 0``)."""

    reference: eqx.AbstractVar[Trajectory]
    #: The names of the gain fields, e.g. ``("kp", "kd")``.
    gain_names: eqx.AbstractClassVar[tuple[str, ...]]

    def __check_init__(self):
        check_broadcastable({n: getattr(self, n) for n in self.gain_names})

    def parameter_checks(self):
        return tuple(InRange(n, getattr(self, n), lower=0.0) for n in self.gain_names)

    def _tracking_error(self, t, q, qd):
        """``(e, ė) = (q_r(t) − q, q̇_r(t) − q̇)``, rad and rad/s (or m and
        m/s)."""
        return self.reference.position(t) - q, self.reference.velocity(t) - qd


class PD(_AbstractTracker, AbstractStatelessForce):
    """Proportional–derivative joint tracking,
    ``τ = kp (q_r(t) − q) + kd (q̇_r(t) − q̇)``.

    Args:
        reference: the trajectory ``q_r`` (``position(t)``, ``velocity(t)``).
        kp: position gain, N·m/rad or N/m, ``>= 0``.
        kd: velocity gain, N·m·s/rad or N·s/m, ``>= 0``.
    """

    reference: Trajectory
    kp: Float[Array, "..."] = eqx.field(converter=as_float)
    kd: Float[Array, "..."] = eqx.field(converter=as_float)

    gain_names: ClassVar[tuple[str, ...]] = ("kp", "kd")

    def __call__(self, t, q: Vector, qd: Vector) -> Float[Array, "*dof"]:
        error, error_rate = self._tracking_error(t, q, qd)
        return self.kp * error + self.kd * error_rate


class PID(_AbstractTracker):
    """Proportional–integral–derivative joint tracking,
    ``τ = kp e + ki x + kd ė`` with ``e = q_r(t) − q`` and the integrator state
    ``ẋ = e``, ``x(t0) = 0`` (one entry per coordinate, part of the ODE state, so
    it is integrated to the solver's tolerance and differentiable).

    Args:
        reference: the trajectory ``q_r`` (``position(t)``, ``velocity(t)``).
        kp: proportional gain, N·m/rad or N/m, ``>= 0``.
        ki: integral gain, N·m/(rad·s) or N/(m·s), ``>= 0``.
        kd: derivative gain, N·m·s/rad or N·s/m, ``>= 0``.
    """

    reference: Trajectory
    kp: Float[Array, "..."] = eqx.field(converter=as_float)
    ki: Float[Array, "..."] = eqx.field(converter=as_float)
    kd: Float[Array, "..."] = eqx.field(converter=as_float)

    gain_names: ClassVar[tuple[str, ...]] = ("kp", "ki", "kd")

    def init_state(self, q0: Vector, qd0: Vector) -> State:
        return jnp.zeros_like(q0)

    def state_derivative(self, t, q: Vector, qd: Vector, state: State) -> State:
        return jnp.broadcast_to(self.reference.position(t) - q, state.shape)

    def force(self, t, q: Vector, qd: Vector, state: State) -> Float[Array, "*dof"]:
        error, error_rate = self._tracking_error(t, q, qd)
        return self.kp * error + self.ki * state + self.kd * error_rate


class ComputedTorque(_AbstractTracker, AbstractStatelessForce):
    """Computed-torque (inverse dynamics) control,
    ``τ = M(q) (q̈_r + kd ė + kp e) + h(q, q̇)``, ``e = q_r − q``.

    On the exact model without friction the error obeys
    ``ë + kd ė + kp e = 0``. Friction is not compensated (it is what the
    controller is tested against); `system` is the controller's model and may
    differ from the simulated one.

    Args:
        system: the model used by the controller (`jaxfric.systems`).
        reference: the trajectory (``position``, ``velocity``, ``acceleration``).
        kp: stiffness of the error dynamics, 1/s², ``>= 0``.
        kd: damping of the error dynamics, 1/s, ``>= 0``.
    """

    system: AbstractSystem
    reference: SmoothTrajectory
    kp: Float[Array, "..."] = eqx.field(converter=as_float)
    kd: Float[Array, "..."] = eqx.field(converter=as_float)

    gain_names: ClassVar[tuple[str, ...]] = ("kp", "kd")

    def __call__(self, t, q: Vector, qd: Vector) -> Float[Array, "*dof"]:
        error, error_rate = self._tracking_error(t, q, qd)
        qdd = self.reference.acceleration(t) + self.kd * error_rate + self.kp * error
        qdd = jnp.broadcast_to(qdd, q.shape)
        return self.system.mass_matrix(q) @ qdd + self.system.bias_force(q, qd)
