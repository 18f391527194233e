"""The Kikuuwe path: the generalised RK4 of Kikuuwe & Yamamoto, Eq. 21
(`StageStepRK4`), which hands each stage its step size."""

from typing import ClassVar

import equinox as eqx
import jax

from ..forces import AbstractForce
from ..systems import AbstractSystem
from ._fixed_step import StageStepTerm, solve_fixed_step
from ._law import AbstractFrictionLaw
from ._path import (
    AbstractFixedStepPath,
    applied_force,
    eventless_solution,
    fixed_step_result,
    force_state0,
    friction_state0,
)


class _KikuuweField(eqx.Module):
    """Vector field of the Kikuuwe path; a Module (not a closure) so that repeated
    `simulate` calls with the same structure reuse the compiled solve."""

    system: AbstractSystem
    law: AbstractFrictionLaw
    force: AbstractForce | None

    def __call__(self, t, y, args, stage_step):
        q, qd, e, x = y
        v = self.system.slip_velocity(q, qd)
        law = self.law.at_state(self.system, q, qd)
        f, e_dot = law.force_and_rate(e, v, stage_step)
        applied, x_dot = applied_force(self.force, t, q, qd, x)
        acc = self.system.acceleration(q, qd, applied, f)
        return self.system.coordinate_rate(q, qd), acc, e_dot, x_dot


class KikuuwePath(AbstractFixedStepPath):
    """Kikuuwe et al.'s friction, integrated by `StageStepRK4`.

    State ``(q, q̇, e, x)`` with the law's spring displacement ``e`` (Eq. 19) and
    the applied force's state ``x``. Each stage evaluates
    ``f, ė = Z(J q̇, e; τ)`` (Eq. 19) and ``q̈ = M⁻¹(τ − h − Jᵀ f)``
    (Kikuuwe & Yamamoto, Eq. 13 and 22).

    Options: `dt0` (the fixed step, ``0 < dt0 <= t1 − t0``, default
    ``min(1e-3, t1 − t0)`` s; the last step is shorter and ends on ``t1`` when
    `dt0` does not divide the interval (`FixedStep`); stability needs roughly
    ``dt0 < 2 √(m / K)`` for an element of inertia ``m``), `max_steps` (the
    number of steps ``ceil((t1 − t0) / dt0)`` must not exceed it: otherwise
    `RESULTS.max_steps_reached`), `friction_state0` (initial ``e``, default 0),
    `adjoint`. The integrator is fixed: no `solver`.

    Returns (`run`): a `Solution` with `friction` the force of Eq. 19 at the
    saved states with ``τ = dt0`` (Eq. 20a), `friction_state` = ``e``,
    `modes` = ``sign(s)``, no events, and ``num_vf_evals = 4 num_steps``.
    """

    name: ClassVar[str] = "the Kikuuwe path"
    coordinate_rates: ClassVar[bool] = True
    options: ClassVar[frozenset[str]] = frozenset(
        ("dt0", "max_steps", "friction_state0", "adjoint")
    )

    def run(self, system, law, force, q0, qd0, t0, t1, ts, options):
        e0 = friction_state0(law, system, q0, qd0, options.friction_state0)
        term = StageStepTerm(_KikuuweField(system, law, force))
        y0 = (q0, qd0, e0, force_state0(force, q0, qd0))
        sol = solve_fixed_step(term, options.solver, t0, t1, y0, ts, options)
        dt = options.dt0
        q, qd, e, x = sol.ys
        slip = jax.vmap(system.slip_velocity)(q, qd)
        f = jax.vmap(
            lambda qi, qdi, ei, si: law.at_state(system, qi, qdi).force(ei, si, dt)
        )(q, qd, e, slip)
        return eventless_solution(
            sol,
            options.solver,
            fixed_step_result(system, sol, q, qd, e),
            ts,
            q=q,
            qd=qd,
            friction=f,
            slip_velocity=slip,
            friction_state=e,
            force_state=x,
        )


KIKUUWE_PATH = KikuuwePath()
