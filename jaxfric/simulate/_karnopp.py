"""The Karnopp path: fixed-step integration with a zero-velocity band (Karnopp 1985).

Choices, from Karnopp's text (ASME J. Dyn. Syst. Meas. Control 107(1), 100-103):

- Elements with ``|s| < dv`` are stuck. Their stick forces are solved together
  from the Delassus system of `_stick.solve_stick` (Karnopp Eq. 3, 11, 15–21 are
  its special cases; solved here with one factorisation of ``M`` per call, which
  halved the run time of a reverse-mode solve), so the slip accelerations of the
  stuck elements are zero and their slip velocities stay where they entered the
  band.
- A stick force beyond its breakaway level is held at that level (the limiter of
  Fig. 2(c)); the element furthest beyond is released first and the others are
  re-solved, as in the case analysis of Sec. IV. The released element
  accelerates out of the band.
- Momentum band (Eq. 4–5): inside the band the velocity that moves the positions
  is set to zero exactly. For several degrees of freedom this is the velocity
  after a perfectly inelastic impulse on the stuck slip coordinates,
  ``q̇_kin = q̇ − M⁻¹ J_Bᵀ (J_B M⁻¹ J_Bᵀ)⁻¹ J_B q̇`` (``B`` the elements in the
  band), which for one mass is Karnopp's ``V = 0``. So stuck elements do not
  creep, while ``q̇`` (Karnopp's momentum ``P/m``) keeps its small value.
"""

from typing import ClassVar

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp

from .._types import Coordinates, SlipVector, Vector
from ..forces import AbstractForce
from ..systems import AbstractSystem
from ._fixed_step import StageStepRK4, solve_fixed_step
from ._law import AbstractFrictionLaw
from ._path import (
    AbstractFixedStepPath,
    applied_force,
    eventless_solution,
    fixed_step_result,
    force_state0,
)
from ._stick import masked_solve, stick_parts


def karnopp_friction(
    system: AbstractSystem,
    law: AbstractFrictionLaw,
    q: Coordinates,
    qd: Vector,
    net: Vector,
) -> tuple[SlipVector, Vector, Vector]:
    """Friction, acceleration and kinematic velocity of Karnopp's model.

    The stick forces solve the Delassus system of `solve_stick` (Farhat et al.
    2010, Eq. 7 generalised), here with one factorisation of ``M(q)`` shared by
    the release rounds and the momentum band.

    Args:
        system: the mechanical system.
        law: the Karnopp law.
        q, qd: positions and (momentum) velocities.
        net: ``τ − h``, every force but friction, N or N·m.

    Returns:
        ``(f, q̈, q̇_kin)``: friction per element (N or N·m), accelerations, and the
        velocity with which ``q`` moves (zero slip velocity in the band).
    """
    acc_free, minv_jt, jac, delassus, jdot_qd = stick_parts(system, q, qd, net)
    # Slip accelerations without friction: J M⁻¹ (τ − h) + J̇ q̇.
    slip_acc_free = jac @ acc_free + jdot_qd
    slip = jac @ qd
    band = law.in_band(slip)
    f_slip = law.slip_force(slip)
    ones = jnp.ones_like(slip)
    limit_pos = law.static_limit(ones)
    limit_neg = law.static_limit(-ones)
    scale = jnp.maximum(jnp.maximum(limit_pos, limit_neg), 1e-30)
    index = jnp.arange(slip.shape[0])
    least_norm = not system.independent_friction_rows

    def solve(stuck, held):
        given = jnp.where(stuck, 0.0, jnp.where(band, held, f_slip))
        f_stick = masked_solve(
            delassus, slip_acc_free - delassus @ given, stuck, least_norm
        )
        return jnp.where(stuck, f_stick, given)

    def release_one(_, carry):
        stuck, held = carry
        friction = solve(stuck, held)
        # Relative violation, so elements with different force scales compare.
        excess = jnp.maximum(friction - limit_pos, -limit_neg - friction) / scale
        excess = jnp.where(stuck, excess, -jnp.inf)
        worst = jnp.argmax(excess)
        release = (excess[worst] > 0) & (index == worst)
        limited = jnp.clip(friction, -limit_neg, limit_pos)
        return stuck & ~release, jnp.where(release, limited, held)

    stuck, held = jax.lax.fori_loop(
        0, slip.shape[0], release_one, (band, jnp.zeros_like(slip))
    )
    friction = solve(stuck, held)
    acc = acc_free - minv_jt @ friction
    # Momentum band: the impulse that zeroes the band's slip velocities.
    qd_kin = qd - minv_jt @ masked_solve(delassus, slip, band, least_norm)
    return friction, acc, qd_kin


class _KarnoppField(eqx.Module):
    """Vector field of the Karnopp path; a Module (not a closure) so that repeated
    `simulate` calls with the same structure reuse the compiled solve."""

    system: AbstractSystem
    law: AbstractFrictionLaw
    force: AbstractForce | None

    def rates(self, t, y):
        """``(f, q̇_kin, dy/dt)`` for the state ``y = (q, q̇, x)``."""
        q, qd, x = y
        applied, x_dot = applied_force(self.force, t, q, qd, x)
        net = applied - self.system.bias_force(q, qd)
        f, acc, qd_kin = karnopp_friction(self.system, self.law, q, qd, net)
        return f, qd_kin, (self.system.coordinate_rate(q, qd_kin), acc, x_dot)

    def __call__(self, t, y, args):
        return self.rates(t, y)[2]


@eqx.filter_jit
def _saved_rates(field: _KarnoppField, ts, ys):
    # Jitted: run eagerly, the release loop would be dispatched op by op.
    return jax.vmap(field.rates)(ts, ys)


class KarnoppPath(AbstractFixedStepPath):
    """Karnopp's zero-velocity band at a fixed step (Karnopp 1985).

    State ``(q, q̇, x)``: positions, velocities (Karnopp's momenta ``P/m``) and
    the applied force's state. ``dq/dt`` is the kinematic velocity of
    `karnopp_friction` (zero slip velocity in the band), ``dq̇/dt = M⁻¹(τ − h −
    Jᵀ f)``.

    Options: `solver` (default classical RK4, `StageStepRK4`; `diffrax.Euler`
    or any explicit Runge-Kutta solver, e.g. `diffrax.Heun()`), `dt0` (the
    fixed step, ``0 < dt0 <= t1 − t0``, default ``min(1e-3, t1 − t0)`` s, the
    last step shorter to end on ``t1`` (`FixedStep`); the band must be wider
    than one step's change of velocity, ``dv > |q̈| dt0``, or elements step
    across it), `max_steps` (the number of steps ``ceil((t1 − t0) / dt0)``
    must not exceed it: otherwise `RESULTS.max_steps_reached`), `adjoint`.

    Returns (`run`): a `Solution` with `qd` the kinematic velocity (exactly
    zero slip velocity while stuck) and `slip_velocity` = ``J qd``;
    `friction_state` the slip velocity of the momentum ``J q̇`` (inside
    ``(−dv, dv)`` while stuck); `friction` Karnopp's force; `modes` ``0`` in
    the band, else ``sign(s)``; no events.
    """

    name: ClassVar[str] = "the Karnopp path"
    coordinate_rates: ClassVar[bool] = True
    options: ClassVar[frozenset[str]] = frozenset(
        ("solver", "dt0", "max_steps", "adjoint")
    )

    def run(self, system, law, force, q0, qd0, t0, t1, ts, options):
        solver = options.solver
        if not isinstance(solver, StageStepRK4 | diffrax.Euler | diffrax.AbstractERK):
            raise ValueError(
                "the Karnopp path takes an explicit fixed-step solver: None (RK4), "
                "diffrax.Euler or an explicit Runge-Kutta solver; got "
                f"{type(solver).__name__}."
            )
        field = _KarnoppField(system, law, force)
        y0 = (q0, qd0, force_state0(force, q0, qd0))
        sol = solve_fixed_step(diffrax.ODETerm(field), solver, t0, t1, y0, ts, options)
        q, qd, x = sol.ys
        f, qd_kin, _ = _saved_rates(field, ts, sol.ys)
        momentum_slip = jax.vmap(system.slip_velocity)(q, qd)
        slip = jax.vmap(system.slip_velocity)(q, qd_kin)
        band = jax.vmap(law.in_band)(momentum_slip)
        return eventless_solution(
            sol,
            solver,
            fixed_step_result(system, sol, q, qd, f),
            ts,
            q=q,
            qd=qd_kin,
            friction=f,
            slip_velocity=slip,
            friction_state=momentum_slip,
            force_state=x,
            modes=jnp.where(band, 0, jnp.sign(momentum_slip)),
        )


KARNOPP_PATH = KarnoppPath()
