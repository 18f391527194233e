"""Saved times written from each step's dense output: `StepSaves`.

diffrax saves a `SaveAt(ts=...)` time in a loop inside its step loop, one
saved time per iteration (its ``save_ts`` loop). Under `jax.vmap` that loop
runs while any member of the batch has a time left inside its step, and each
iteration is a round of small kernels. `StepSaves` writes a segment's few save
times from every step's dense output at once: one vectorised evaluation of
the interpolant at all of them, kept for those not yet written up to the
step's end (diffrax's rule). No loop, and the same interpolant as diffrax's.

The saved states are solver state, which a reverse-mode adjoint carries
through its checkpoints at every step, while diffrax's own save buffers are
exempt. So the switch path uses `StepSaves` for at most
`step_saves_limit(adjoint)` save times per segment (README, Performance, for
the measurements).
"""

from collections.abc import Callable

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp

from ._unrolled import AbstractWrappedSolver

#: The most save times of a `StepSaves` solve: every step evaluates the dense
#: output at all of them, so a long list costs more per step than diffrax's
#: loop over the few inside it. On 1000 oscillators under `vmap` saving 1001
#: times (32 per segment), positions only: 90 → 60 ms; the forward-mode
#: Jacobian of ``bench_identify.py``'s four 1601-sample records (50 per
#: segment): 64.5–65.9 → 54.8–55.3 ms in two rounds, 65.2 → 78.3 ms in a
#: third (README, Performance). Segments of 51–64 were not measured.
MAX_STEP_SAVES = 64
#: The same under a reverse-mode adjoint (diffrax's checkpointed or bounded
#: loops), which copies the saved states into its checkpoints at every step.
#: The `vmap` gradient of that batch with `StepSaves` at every size: 1001
#: saves (32 per segment) 746 → 935 ms, 501 (16) 594–611 → 717–766 ms, 257
#: (8) 526–541 → 542–571 ms, 101 (4) unchanged (414–468 → 437–447 ms).
MAX_REVERSE_STEP_SAVES = 4


def step_saves_limit(adjoint: diffrax.AbstractAdjoint) -> int:
    """The most save times per segment that `StepSaves` writes under
    `adjoint` (`MAX_STEP_SAVES`, `MAX_REVERSE_STEP_SAVES`)."""
    if isinstance(adjoint, diffrax.ForwardMode):
        return MAX_STEP_SAVES
    return MAX_REVERSE_STEP_SAVES


class StepSaves(AbstractWrappedSolver):
    """`solver`, writing the state at the save times ``times(args)`` (shape
    ``(k,)``, nondecreasing) from each accepted step's dense output (module
    doc).

    Each accepted step writes the save times not yet written up to its end
    ``t1`` as the interpolant's value there
    (`diffrax.AbstractLocalInterpolation.evaluate`, the solver's own dense
    output), as diffrax's `SaveAt(ts=...)` loop does: a time on a step boundary
    is written by the step that ends there, and a time that falls between
    steps (diffrax steps from just before to just after a jump time) by the
    next one. diffrax keeps the solver state of accepted steps only, so
    rejected steps write nothing. Times after the solve's end (an event inside
    the last step) hold that step's interpolant: the caller keeps only those
    before the end. Times no step reached stay NaN.

    The saved states are part of the solver state: ``saved_states(state)``,
    a pytree like ``y`` with leading axis ``k`` (returned by
    `diffrax.diffeqsolve` with ``SaveAt(solver_state=True)``). Differentiable
    like the rest of the solve's state.
    """

    solver: diffrax.AbstractAdaptiveSolver
    times: Callable = eqx.field(static=True)

    def init(self, terms, t0, t1, y0, args):
        k = self.times(args).shape[0]
        buffer = jax.tree.map(
            lambda y: jnp.full((k, *jnp.shape(y)), jnp.nan, jnp.result_type(y)), y0
        )
        written = jnp.array(0, jnp.int32)
        return self.solver.init(terms, t0, t1, y0, args), buffer, written

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        inner_state, buffer, written = solver_state
        y1, y_error, dense_info, inner_state, result = self.solver.step(
            terms, t0, t1, y0, args, inner_state, made_jump
        )
        ts = self.times(args)
        reached = ts <= t1
        new = reached & (jnp.arange(ts.shape[0]) >= written)
        # Times not written are evaluated at the step's end: far from the step,
        # the interpolant's powers of the step fraction overflow in float32,
        # and a discarded inf still gives a NaN derivative (0·inf).
        dense = self.interpolation_cls(t0=t0, t1=t1, **dense_info)
        values = jax.vmap(dense.evaluate)(jnp.where(new, ts, t1))

        def keep(value, old):
            mask = new.reshape(new.shape + (1,) * (value.ndim - 1))
            return jnp.where(mask, value, old)

        buffer = jax.tree.map(keep, values, buffer)
        written = jnp.sum(reached, dtype=jnp.int32)
        return y1, y_error, dense_info, (inner_state, buffer, written), result


def saved_states(solver_state):
    """The saved states of a `StepSaves` solve's final solver state."""
    return solver_state[1]


def inner_state(solver_state):
    """The wrapped solver's part of a `StepSaves` solver state."""
    return solver_state[0]
