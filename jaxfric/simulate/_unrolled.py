"""Explicit Runge–Kutta steps with the stages written out, for batched CPU runs.

diffrax's Runge–Kutta solvers loop over their stages and keep the stage
derivatives in one buffer ``k[stage, ...]``, updated in place and combined by a
dot product. Under `jax.vmap` the batch axis comes first, so XLA's CPU backend
copies and transposes that buffer at every stage; for a small system (a few
coordinates, a thousand members) this bookkeeping, not the vector field, is the
cost of a step. `UnrolledERK` runs the same method (Butcher tableau, order,
error estimate, first-same-as-last reuse, dense output) with the stage
combinations written out as plain arithmetic.

Timings: README, Performance (``experiments/bench_stick_slip.py``). On its
1000 forced oscillators the sum of the final positions moved by 1.4e-14
(Tsit5) and 1.2e-10 (Dopri8, whose error estimate, a difference of large sums,
rounds differently and moves the step sizes), against errors of 1.3e-10 and
8.5e-11 from the reference.

Two details carry the speed-up:

- Each stage's derivative passes a `jax.lax.cond` (`_fusion_barrier`), a
  boundary XLA's fusion does not cross. Without it the CPU backend (which
  drops `jax.lax.optimization_barrier`) fuses the whole chain of stages into
  each output diffrax selects between (accepted or rejected step) and
  recomputes it there, slower than diffrax's own loop.
- Derivatives (`jax.jvp`, and so `jax.grad` through diffrax's checkpointed
  adjoint) are those of diffrax's own step (differentiating the unrolled
  stages made gradients slower), the values those of the unrolled stages:
  the adjoint recomputes states through the derivative rule, and they must
  be the forward pass's to the last bit. Differentiated programs so evaluate
  both (1000-member `vmap` gradients 4–9 % slower than with diffrax's values).

GPUs evaluate a conditional's predicate on the host, so `for_backend` keeps
diffrax's own solvers on other backends.
"""

from typing import ClassVar

import diffrax
import equinox as eqx
import equinox.internal as eqxi
import jax
import jax.numpy as jnp
from jaxtyping import PyTree

from .._types import ScalarLike
from ..systems import AbstractSystem
from ._law import AbstractFrictionLaw


def _fusion_barrier(x, control):
    """`x`, through a `jax.lax.cond` that XLA does not fuse across (module doc).

    The predicate is unbatched and true unless every member's step `control`
    is NaN (then `x` is NaN too; such steps are NaN anyway). The branches must
    differ: XLA removes a conditional whose branches are the same.
    """
    live = eqxi.unvmap_any(~jnp.isnan(control))
    return jax.lax.cond(
        live, lambda v: v, lambda v: jax.tree.map(lambda z: z * jnp.nan, v), x
    )


def _combine(coeffs, ks, y0=None):
    """``y0 + Σ_j coeffs[j]·ks[j]`` leaf by leaf, zero coefficients skipped
    (`y0` None: the sum alone)."""

    def leaf(*parts):
        total = None if y0 is None else parts[0]
        for a, k in zip(coeffs, parts[0 if y0 is None else 1 :], strict=True):
            if a == 0:
                continue
            term = float(a) * k
            total = term if total is None else total + term
        return total

    return jax.tree.map(leaf, *(() if y0 is None else (y0,)), *ks)


class Tsit5Dense(diffrax.AbstractLocalInterpolation):
    """Tsit5's dense output (Tsitouras 2011, Comput. Math. Appl. 62(2), the
    continuous extension of the 5(4) pair: ``y(t0 + θh) = y0 + Σ_i b_i(θ)
    k_i``, ``k_i = h·f_i`` the stage increments), the same weights as
    `diffrax.Tsit5`'s, with the sum over the seven stages written out.

    diffrax forms the sum as a dot product of the weights with the stacked
    stages. Under `jax.vmap` on a CPU that is a batched dot per saved time and
    per iteration of an event's root find, run by XLA as a library call with
    transposes of the stage buffer, the larger part of a batch's run where it
    saves many times (README, Performance). Written out it is a few fused
    multiply–adds. The wrapped solvers (`AbstractWrappedSolver`) use it in
    place of Tsit5's own; values agree to rounding.
    """

    t0: ScalarLike
    t1: ScalarLike
    y0: PyTree
    k: PyTree  # leaves (7, *y): the stage increments

    def __init__(self, *, t0, t1, y0, y1, k):
        del y1  # the signature of diffrax's dense output
        self.t0, self.t1, self.y0, self.k = t0, t1, y0, k

    def evaluate(self, t0, t1=None, left: bool = True) -> PyTree:
        del left
        if t1 is not None:
            return jax.tree.map(jnp.subtract, self.evaluate(t1), self.evaluate(t0))
        # θ in [0, 1] over the step (0 for a step of zero length).
        same = self.t0 == self.t1
        t = jnp.where(same, 0.0, t0 - self.t0) / jnp.where(same, 1.0, self.t1 - self.t0)
        t2 = t * t
        weights = (
            -1.0530884977290216
            * t
            * (t - 1.3299890189751412)
            * (t2 - 1.4364028541716351 * t + 0.7139816917074209),
            0.1017 * t2 * (t2 - 2.1966568338249754 * t + 1.2949852507374631),
            2.490627285651252793
            * t2
            * (t2 - 2.38535645472061657 * t + 1.57803468208092486),
            -16.54810288924490272
            * (t - 1.21712927295533244)
            * (t - 0.61620406037800089)
            * t2,
            47.37952196281928122
            * (t - 1.203071208372362603)
            * (t - 0.658047292653547382)
            * t2,
            -34.87065786149660974 * (t - 1.2) * (t - 0.666666666666666667) * t2,
            2.5 * (t - 1) * (t - 0.6) * t2,
        )

        def leaf(y0, k):
            # The increment first, then `y0`: one rounding at the scale of
            # `y0`, as diffrax's ``y0 + Σ b_i k_i``.
            with jax.numpy_dtype_promotion("standard"):
                increment = weights[0] * k[0]
                for i in range(1, 7):
                    increment = increment + weights[i] * k[i]
                return y0 + increment

        return jax.tree.map(leaf, self.y0, self.k)


class AbstractWrappedSolver(diffrax.AbstractAdaptiveSolver):
    """A solver that runs another's method (`UnrolledERK`, `DipGuard`): its
    order, error order, vector field and dense output are the wrapped one's
    (Tsit5's with its stage sum written out: `Tsit5Dense`)."""

    solver: eqx.AbstractVar[diffrax.AbstractAdaptiveSolver]
    term_structure: ClassVar = diffrax.AbstractTerm

    @property
    def interpolation_cls(self):
        cls = self.solver.interpolation_cls
        # Tsit5's dense output with its stage sum written out (`Tsit5Dense`).
        return Tsit5Dense if cls is diffrax.Tsit5.interpolation_cls else cls

    def order(self, terms):
        return self.solver.order(terms)

    def error_order(self, terms):
        return self.solver.error_order(terms)

    def func(self, terms, t0, y0, args):
        return self.solver.func(terms, t0, y0, args)


class UnrolledERK(AbstractWrappedSolver):
    """`solver` (a diffrax explicit Runge–Kutta method with an embedded error
    estimate: `diffrax.Tsit5`, `Dopri5`, `Dopri8`, `Bosh3`, …) with its stages
    unrolled (module doc). The same tableau, order, error estimate, first-same-
    as-last reuse and dense output; results agree with `solver` to rounding
    (the stage sums are added in another order).

    Use through `for_backend`, which applies it where it pays: explicit RK
    solvers on the CPU backend.
    """

    solver: diffrax.AbstractERK

    def init(self, terms, t0, t1, y0, args):
        if self.solver.tableau.fsal:
            # (first step, f(t0, y0) of the next step), as diffrax's solvers.
            return jnp.array(True), jax.tree.map(jnp.zeros_like, y0)
        return None

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        return _unrolled_step(
            self.solver, terms, t0, t1, y0, args, solver_state, made_jump
        )


@eqx.filter_custom_jvp
def _unrolled_step(solver, terms, t0, t1, y0, args, solver_state, made_jump):
    """`solver.step` with the stages written out (`UnrolledERK`)."""
    tableau = solver.tableau
    control = terms.contr(t0, t1)

    def vector_field(t, y):
        return _fusion_barrier(terms.vf(t, y, args), control)

    if tableau.fsal:
        first, f0 = solver_state
        f0 = jax.lax.cond(
            eqxi.unvmap_any(first | made_jump),
            lambda: terms.vf(t0, y0, args),
            lambda: f0,
        )
    else:
        f0 = terms.vf(t0, y0, args)
    fs = [f0]
    ks = [terms.prod(f0, control)]
    y_stage = y0
    last = len(tableau.a_lower) - 1
    for i, a_row in enumerate(tableau.a_lower):
        y_stage = _combine(a_row, ks, y0)
        # A first-same-as-last stage is evaluated at exactly (t1, y1).
        t_stage = t0 + float(tableau.c[i]) * (t1 - t0)
        t_stage = t1 if tableau.fsal and i == last else t_stage
        fs.append(vector_field(t_stage, y_stage))
        ks.append(terms.prod(fs[-1], control))
    y1 = y_stage if tableau.fsal else _combine(tableau.b_sol, ks, y0)
    y_error = _combine(tableau.b_error, ks)
    k = jax.tree.map(lambda *stages: jnp.stack(stages), *ks)
    dense_info = dict(y0=y0, y1=y1, k=k)
    state = (jnp.array(False), fs[-1]) if tableau.fsal else None
    return y1, y_error, dense_info, state, diffrax.RESULTS.successful


@_unrolled_step.def_jvp
def _unrolled_step_jvp(primals, tangents):
    # Derivatives are those of diffrax's own step (transposing the unrolled
    # stages was slower: module doc), values those of the unrolled stages:
    # the checkpointed adjoint recomputes the states between its checkpoints
    # through this rule, and states that differ from the forward pass's by
    # rounding gave gradients 1e-7 off (relative) with 8 checkpoints.
    solver = primals[0]

    def diffrax_step(*args):
        y1, y_error, dense_info, state, result = solver.step(*args)
        if state is not None:
            state = (jnp.asarray(state[0]), state[1])
        return y1, y_error, dense_info, state, result

    _, tangents_out = eqx.filter_jvp(diffrax_step, primals[1:], tangents[1:])
    return _unrolled_step(*primals), tangents_out


def stages_written_out(system: AbstractSystem, law: AbstractFrictionLaw) -> bool:
    """Whether the switch path may write out the Runge–Kutta stages of `system`
    under `law` (`for_backend`'s `unroll`): the system's
    `AbstractSystem.unrolled_stages`, unless the law is load-dependent (its
    every evaluation holds the load coupling's Newton loop: traced once in
    diffrax's stage loop, which compiles faster and, single, runs faster;
    README, Performance)."""
    return system.unrolled_stages and not law.load_dependent


def for_backend(
    solver: diffrax.AbstractSolver,
    adjoint: diffrax.AbstractAdjoint,
    unroll: bool = True,
) -> diffrax.AbstractSolver:
    """The solver a simulation path runs with `adjoint`: `UnrolledERK(solver)`
    for a diffrax explicit Runge–Kutta solver with an error estimate when JAX's
    default backend is the CPU and `unroll` (`stages_written_out`), else
    `solver` itself.

    Either way the Runge–Kutta solver's stage loop is set here for the
    adjoint's mode (its ``scan_kind``: a checkpointed loop, reverse mode only,
    by default; a plain loop for `ForwardMode`; a bounded one for
    `DirectAdjoint`), as diffrax's adjoints do: they no longer see the solver
    inside `UnrolledERK` or the paths' event guard (`DipGuard`). Left to the
    adjoint, a GPU run differentiated in forward mode met the checkpointed
    loop's `custom_vjp` (measured on an H200: `jax.jacfwd` with
    `adjoint=diffrax.ForwardMode()` failed).
    """
    if isinstance(adjoint, diffrax.ForwardMode):
        kind = "lax"
    elif isinstance(adjoint, diffrax.DirectAdjoint):
        kind = "bounded"
    else:
        kind = None
    rk = isinstance(solver, diffrax.AbstractRungeKutta)
    if rk and solver.scan_kind is None and kind is not None:
        solver = eqx.tree_at(
            lambda s: s.scan_kind, solver, kind, is_leaf=lambda x: x is None
        )
    if not (
        unroll
        and jax.default_backend() == "cpu"
        and isinstance(solver, diffrax.AbstractERK)
        and isinstance(solver.tableau, diffrax.ButcherTableau)
        and solver.tableau.b_error is not None
    ):
        return solver
    return UnrolledERK(solver)
