"""Applied forces ``τ(t, q, q̇, x)``: open-loop inputs and controllers.

A force may carry its own state ``x`` (a controller's integrator), which joins
the ODE state of the simulation. Forces return one value per generalised
coordinate (N or N·m); a scalar is broadcast to every coordinate by `simulate`.
"""

import abc
from collections.abc import Callable

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._check import AbstractCheck, InRange, raise_if_invalid
from .._types import Coordinates, State, Vector


class AbstractForce(eqx.Module):
    """Base of applied forces and controllers."""

    def parameter_checks(self) -> tuple[AbstractCheck, ...]:
        """The ranges of this force's own parameters (a force, trajectory or
        system inside it declares its own), checked on concrete values at
        construction and on traced values inside `jaxfric.simulate`. Default:
        none.
        """
        return ()

    def __check_init__(self):
        # Runs after the subclass's own (shape) checks: equinox calls every
        # class's `__check_init__` along the MRO.
        raise_if_invalid(self.parameter_checks())

    @abc.abstractmethod
    def init_state(self, q0: Coordinates, qd0: Vector) -> State:
        """Initial internal state ``x(t0)`` (shape ``(0,)`` for stateless forces)."""

    @abc.abstractmethod
    def state_derivative(self, t, q: Coordinates, qd: Vector, state: State) -> State:
        """``ẋ`` of the internal state."""

    @abc.abstractmethod
    def force(
        self, t, q: Coordinates, qd: Vector, state: State
    ) -> Float[Array, "*dof"]:
        """Applied generalised force ``τ``, N or N·m."""

    def jump_times(self) -> Float[Array, " jumps"] | None:
        """Times, s, where ``τ`` or its time derivative jumps (`None`: nowhere).

        The adaptive solvers of `jaxfric.simulate` step exactly onto these
        times (`diffrax.ClipStepSizeController` ``jump_ts``), so no step
        straddles a kink: without it the error of a straddling step depends on
        where the kink falls, and so do its gradients.
        """
        return None


class AbstractStatelessForce(AbstractForce):
    """A force with no internal state: subclasses implement ``__call__(t, q, qd)``."""

    @abc.abstractmethod
    def __call__(self, t, q: Coordinates, qd: Vector) -> Float[Array, "*dof"]:
        """Applied generalised force ``τ(t, q, q̇)``, N or N·m."""

    def init_state(self, q0, qd0) -> State:
        return jnp.zeros((0,), dtype=jnp.result_type(float))

    def state_derivative(self, t, q, qd, state) -> State:
        return state

    def force(self, t, q, qd, state):
        return self(t, q, qd)


class FunctionForce(AbstractStatelessForce):
    """Any JAX-traceable callable ``fn(t, q, qd) -> τ`` as an applied force.

    `name` names it in error messages (default: `fn`'s name). `simulate`
    closure-converts a plain callable it is given, so that traced
    values the callable closes over (a parameter under `jax.grad`) are inputs
    of the force and can be differentiated; an `eqx.Module` force with the
    parameters as fields does the same explicitly.
    """

    fn: Callable
    name: str | None = eqx.field(static=True, default=None)

    def __call__(self, t, q, qd):
        # A closure-converted `fn` takes arrays of its example's dtypes only.
        return self.fn(jnp.asarray(t, dtype=q.dtype), q, qd)


class Constant(AbstractStatelessForce):
    """A constant applied force ``τ = value`` (N or N·m, scalar or per coordinate)."""

    value: Float[Array, "..."] = eqx.field(converter=lambda v: jnp.asarray(v, float))

    def parameter_checks(self):
        return (InRange("value", self.value),)

    def __call__(self, t, q, qd):
        return self.value
