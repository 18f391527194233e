"""The smooth simulation paths: single-valued laws (`Regularized`, any
`AbstractSmoothLaw`) and dynamic laws (`LuGre`, `Dahl`).

Both integrate ``M(q) q̈ = τ − h − Jᵀ f`` with one `diffrax.diffeqsolve`, on the
flat state vector ``y = [q, q̇, z, x]`` (positions, velocities, the law's internal
state ``z`` — empty for memoryless laws — and the applied force's state ``x``).
"""

from collections.abc import Callable
from typing import ClassVar

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import optimistix as optx
from jaxtyping import Array

from .._types import Coordinates, Float, SlipVector, State, Vector
from ..forces import AbstractForce
from ..systems import AbstractSystem
from ._common import (
    classify,
    name_configuration_failure,
    name_load_coupling_failure,
    step_controller,
)
from ._law import AbstractFrictionLaw
from ._loads import LoadCoupling, solve_load_coupling
from ._options import SimulateOptions
from ._path import (
    AbstractPath,
    applied_force,
    eventless_solution,
    force_state0,
    friction_state0,
)
from ._solution import Solution
from ._stick import free_acceleration

# Defaults. Smooth laws: the tolerance must sit far below the regularisation
# error (order eps) so that the eps study measures the law, not the solver.
SMOOTH_RTOL = 1e-8
SMOOTH_ATOL = 1e-8
# Dynamic laws: the bristle state z is of order fc/σ0 (1e-5 m for σ0 = 1e5 N/m,
# fc = 1 N), so the absolute tolerance must be far below it.
DYNAMIC_RTOL = 1e-6
DYNAMIC_ATOL = 1e-10


class StateLayout(eqx.Module):
    """Sizes of the blocks of the flat state ``y = [q, q̇, z, x]``.

    Attributes:
        n_coord: number of position coordinates (`AbstractSystem.n_coord`).
        n_dof: number of velocities ``q̇``.
        n_internal: size of the friction law's internal state ``z``.
        n_force: size of the applied force's state ``x``.
    """

    n_coord: int = eqx.field(static=True)
    n_dof: int = eqx.field(static=True)
    n_internal: int = eqx.field(static=True)
    n_force: int = eqx.field(static=True)

    def split(
        self, y: Float[Array, " y"]
    ) -> tuple[Coordinates, Vector, Float[Array, " z"], State]:
        """``y -> (q, q̇, z, x)``."""
        k, n, nz = self.n_coord, self.n_dof, self.n_internal
        return (
            y[:k],
            y[k : k + n],
            y[k + n : k + n + nz],
            y[k + n + nz : k + n + nz + self.n_force],
        )

    def join(
        self, q: Coordinates, qd: Vector, z: Float[Array, " z"], x: State
    ) -> Float[Array, " y"]:
        """``(q, q̇, z, x) -> y``."""
        return jnp.concatenate([q, qd, z, x])


class _VectorField(eqx.Module):
    """The vector field of ``M(q) q̈ = τ(t, q, q̇, x) − h(q, q̇) − J(q)ᵀ f`` on
    the flat state; a Module (not a closure) so that its numbers are traced,
    not baked into the compiled solve.

    Attributes:
        friction_fn: ``(t, slip_velocity, z) -> (f, ż)``: friction force per
            element and the derivative of the law's internal state (shape
            ``(0,)`` for memoryless laws).
    """

    system: AbstractSystem
    force: AbstractForce | None
    friction_fn: Callable
    layout: StateLayout

    def __call__(self, t, y, args):
        q, qd, z, x = self.layout.split(y)
        applied, xdot = applied_force(self.force, t, q, qd, x)
        slip = self.system.slip_velocity(q, qd)
        friction, zdot = self.friction_fn(t, q, qd, applied, slip, z)
        qdd = self.system.acceleration(q, qd, applied, friction)
        qdot = self.system.coordinate_rate(q, qd)
        return self.layout.join(qdot, qdd, zdot, xdot)


class _SmoothFriction(eqx.Module):
    """``friction_fn`` of a memoryless law: ``(t, q, q̇, τ, s, z) -> (φ(s),
    ż = [])`` (the law at the state: `AbstractFrictionLaw.at_state`)."""

    law: AbstractFrictionLaw
    system: AbstractSystem

    def __call__(self, t, q, qd, applied, slip_velocity: SlipVector, state):
        law = self.law.at_state(self.system, q, qd)
        return law.force(slip_velocity), state


class _DynamicFriction(eqx.Module):
    """``friction_fn`` of a dynamic law: ``(t, q, q̇, τ, s, z) -> (f(z, s),
    ż(z, s))`` (the law at the state: `AbstractFrictionLaw.at_state`, e.g. a
    contact's normal force)."""

    law: AbstractFrictionLaw
    system: AbstractSystem

    def __call__(self, t, q, qd, applied, slip_velocity: SlipVector, state):
        law = self.law.at_state(self.system, q, qd)
        return (
            law.force(state, slip_velocity),
            law.state_derivative(state, slip_velocity),
        )


class _LoadedDynamicFriction(eqx.Module):
    """``friction_fn`` of a dynamic law whose force depends on the joints'
    reaction loads (`jaxfric.friction.JointLuGre`): the force is the fixed
    point of force → accelerations → reactions → force at this state
    (`solve_load_coupling`); non-finite where that does not converge
    (`_solve` then names the failure, `name_load_coupling_failure`)."""

    law: AbstractFrictionLaw
    system: AbstractSystem

    def __call__(self, t, q, qd, applied, slip_velocity: SlipVector, state):
        coupling = self.coupling(q, qd, applied, slip_velocity, state)
        friction = coupling.law_at.force(state, slip_velocity)
        return (
            jnp.where(coupling.converged, friction, jnp.nan),
            coupling.law_at.state_derivative(state, slip_velocity),
        )

    def coupling(
        self, q, qd, applied, slip_velocity: SlipVector, state, regularity=False
    ) -> LoadCoupling:
        """The load coupling at this state (`solve_load_coupling`, its
        `regularity` where asked)."""
        # The same `dynamics` as the vector field's `acceleration` (computed
        # once after common-subexpression elimination).
        dynamics = self.system.dynamics(q, qd)
        acc_net, minv_jt, _ = free_acceleration(
            self.system, q, qd, applied - dynamics.bias, dynamics
        )
        return solve_load_coupling(
            self.system,
            self.law,
            q,
            qd,
            applied,
            acc_net,
            minv_jt,
            lambda law_at: law_at.force(state, slip_velocity),
            dynamics,
            regularity,
        )


def _saved_outputs(
    system: AbstractSystem,
    force: AbstractForce | None,
    friction_fn: Callable,
    layout: StateLayout,
    ts: Float[Array, " t"],
    ys: Float[Array, "t y"],
) -> tuple[Array, ...]:
    """``(q, q̇, f, s, z, x)`` at the states saved at `ts`."""

    def one(t, y):
        q, qd, z, x = layout.split(y)
        slip = system.slip_velocity(q, qd)
        applied, _ = applied_force(force, t, q, qd, x)
        friction, _ = friction_fn(t, q, qd, applied, slip, z)
        return q, qd, friction, slip, z, x

    return jax.vmap(one)(ts, ys)


def _solve(
    system, friction_fn, force, q0, qd0, z0, t0, t1, ts, options: SimulateOptions
) -> Solution:
    x0 = force_state0(force, q0, qd0)
    layout = StateLayout(system.n_coord, system.n_dof, z0.shape[0], x0.shape[0])
    y0 = layout.join(q0, qd0, z0, x0)
    controller = step_controller(
        options.rtol, options.atol, options.dtmax, options.jump_ts
    )
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(_VectorField(system, force, friction_fn, layout)),
        options.solver,
        t0,
        t1,
        options.dt0,
        y0,
        # The last accepted state too: where a failed solve stopped.
        saveat=diffrax.SaveAt(
            subs=(diffrax.SubSaveAt(ts=ts), diffrax.SubSaveAt(t1=True))
        ),
        stepsize_controller=controller,
        max_steps=options.max_steps,
        adjoint=options.adjoint,
        throw=False,  # failures become `Solution.result`; `simulate` applies throw
    )
    ys, at_stop = sol.ys
    fields = _saved_outputs(system, force, friction_fn, layout, ts, ys)
    result = classify(sol.result)
    q_stop = layout.split(at_stop[-1])[0]
    result = name_configuration_failure(system, result, q_stop)

    def coupling_at(friction_fn, force, t_stop, y_stop):
        q, qd, z, x = layout.split(y_stop[-1])
        applied, _ = applied_force(force, t_stop[-1], q, qd, x)
        slip = friction_fn.system.slip_velocity(q, qd)
        return friction_fn.coupling(q, qd, applied, slip, z, regularity=True)

    result = name_load_coupling_failure(
        friction_fn.law, result, coupling_at, friction_fn, force, sol.ts[1], at_stop
    )
    return eventless_solution(sol, options.solver, result, ts, *fields)


_ADAPTIVE_OPTIONS = frozenset(
    ("solver", "rtol", "atol", "dt0", "dtmax", "jump_ts", "max_steps", "adjoint")
)


class SmoothPath(AbstractPath):
    """Memoryless single-valued laws (e.g. `Regularized`).

    State ``y = [q, q̇, x]``. Default solver `diffrax.Tsit5` (explicit, adaptive)
    with a `diffrax.PIDController` at ``rtol = atol = 1e-8``. An explicit solver
    pays for a small regularisation width: the law's slope ``fc/eps`` bounds the
    stable step in stick to a few ``eps·m`` (Farhat et al. 2010, Sec. 1).

    Returns (`run`): a `Solution` with ``friction_state`` of shape ``(t, 0)``,
    ``modes = sign(s)`` and no events. ``result`` is diffrax's result code
    (e.g. ``max_steps_reached``) promoted to `jaxfric.simulate.RESULTS`;
    ``nonfinite_state`` when the state or the force became NaN or inf.
    """

    name: ClassVar[str] = "the smooth path"
    coordinate_rates: ClassVar[bool] = True
    options: ClassVar[frozenset[str]] = _ADAPTIVE_OPTIONS

    def defaults(self, options, t0, t1, dtype):
        return options.with_defaults(
            solver=diffrax.Tsit5(), rtol=SMOOTH_RTOL, atol=SMOOTH_ATOL
        )

    def run(self, system, law, force, q0, qd0, t0, t1, ts, options):
        z0 = jnp.zeros((0,), dtype=q0.dtype)
        friction_fn = _SmoothFriction(law, system)
        return _solve(system, friction_fn, force, q0, qd0, z0, t0, t1, ts, options)


def default_dynamic_solver() -> diffrax.Kvaerno5:
    """`diffrax.Kvaerno5` with a Newton root finder at the step-size controller's
    tolerances (the default chord iteration gave NaN gradients through LuGre)."""
    newton = diffrax.with_stepsize_controller_tols(optx.Newton)()
    return diffrax.Kvaerno5(root_finder=newton)


class DynamicPath(AbstractPath):
    """Dynamic laws (`LuGre`, `Dahl`): the bristle state joins the ODE.

    State ``y = [q, q̇, z, x]``. The bristle dynamics are stiff (time scale
    ``fc/(σ0·|v|)`` and presliding frequency ``√(σ0/m)``), so the default solver
    is `default_dynamic_solver()` (Kvaerno5, Newton) with a
    `diffrax.PIDController` at ``rtol = 1e-6``, ``atol = 1e-10``. The initial
    bristle state is `friction_state0` (shape ``(m,)``) or the law's
    `init_state` (relaxed, ``z = 0``).

    Returns (`run`): a `Solution`; ``friction_state`` holds ``z`` (m or rad),
    ``modes = sign(s)``, no events. ``stats["num_vf_evals"]`` counts stage
    evaluations only (see `evals_per_step`).
    """

    name: ClassVar[str] = "the dynamic-law path"
    coordinate_rates: ClassVar[bool] = True
    options: ClassVar[frozenset[str]] = _ADAPTIVE_OPTIONS | {"friction_state0"}

    def defaults(self, options, t0, t1, dtype):
        return options.with_defaults(
            solver=default_dynamic_solver(), rtol=DYNAMIC_RTOL, atol=DYNAMIC_ATOL
        )

    def run(self, system, law, force, q0, qd0, t0, t1, ts, options):
        z0 = friction_state0(law, system, q0, qd0, options.friction_state0)
        if law.load_dependent:
            friction_fn = _LoadedDynamicFriction(law, system)
        else:
            friction_fn = _DynamicFriction(law, system)
        return _solve(system, friction_fn, force, q0, qd0, z0, t0, t1, ts, options)


SMOOTH_PATH = SmoothPath()
DYNAMIC_PATH = DynamicPath()
