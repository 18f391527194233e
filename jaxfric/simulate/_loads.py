"""Friction whose levels depend on the joints' reaction loads: the coupling
friction → accelerations → reactions → levels → friction, solved exactly at
one state (shared by the switch path and the dynamic-law path)."""

from collections.abc import Callable
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.tree_util as jtu
import optimistix as optx

from .._linalg import det, lu_solve
from .._types import Coordinates, SlipVector, Vector
from ..systems import AbstractSystem, Dynamics
from ._law import AbstractFrictionLaw


class LoadCoupling(NamedTuple):
    """The load coupling solved at one state (`solve_load_coupling`).

    Attributes:
        friction: the friction ``f``, N or N·m, shape ``(m,)``.
        law_at: the law at the reactions of ``f``
            (`AbstractFrictionLaw.at_reactions`).
        converged: whether Newton's method converged within the law's
            ``max_iterations``.
        iterations: the Newton steps it took (``max_iterations`` when it did
            not converge).
        regularity: ``|det(I − ∂F/∂f)|`` at the solution: 1 where the
            friction does not feed its own loads, 0 where the coupling's gain
            reaches one (``1 − gain`` for one element; unchanged by the rows'
            units, a similarity scaling); 0 where not converged; NaN unless
            asked for (`solve_load_coupling`'s `regularity`). A diagnostic:
            not differentiated.
    """

    friction: SlipVector
    law_at: AbstractFrictionLaw
    converged: jax.Array
    iterations: jax.Array
    regularity: jax.Array


def solve_load_coupling(
    system: AbstractSystem,
    law: AbstractFrictionLaw,
    q: Coordinates,
    qd: Vector,
    applied: Vector,
    acc_net: Vector,
    minv_jt: jax.Array,
    friction_of: Callable[[AbstractFrictionLaw], SlipVector],
    dynamics: Dynamics | None = None,
    regularity: bool = False,
    then: Callable[[SlipVector], SlipVector] | None = None,
) -> LoadCoupling:
    """The friction ``f`` with ``f = F(f) = friction_of(law at the reactions
    of f)``, or with `then`, ``F(f) = offset + matrix @ friction_of(...)``.

    The accelerations are ``q̈ = acc_net − M⁻¹Jᵀ f``, the reactions
    `AbstractSystem.joint_reactions` at them, the law's levels
    ``law.at_reactions(reactions)``. The reactions are affine in ``f``
    (Newton–Euler is linear in ``q̈``; a closed chain's loop forces in ``q̈``,
    ``τ`` and ``f``), so they are evaluated once with their Jacobian and each
    iteration is a product. Newton's method on ``f − F(f)`` from ``f = 0``
    (the iteration of its step, `optimistix.fixed_point`, at most
    ``law.max_iterations`` steps) to a step of ``max(1e-12, 1000·eps)`` of
    the largest force. The iteration is not differentiated: the solution
    takes the implicit function's derivative ``ḟ = −A⁻¹ ∂r/∂θ θ̇`` of the
    residual ``r = f − F(f)``, ``A = ∂r/∂f`` at the solution (`_at_root`).
    It fails (not converged) where ``I − ∂F/∂f`` is singular: a gain of one,
    friction raising its own load as fast as it grows (the gain is about
    ``μ·r/ℓ``, a pin radius over a link length, more with LuGre's bristle
    damping).

    Args:
        applied: generalised applied forces ``τ``, N or N·m.
        acc_net: ``M⁻¹(τ − h)``, the accelerations without friction.
        minv_jt: ``M⁻¹Jᵀ``.
        friction_of: the friction of every element given the law at the loads
            (e.g. a stick solve with fixed modes), or with `then` what `then`
            maps to it (the slip forces, zero at stuck elements).
        dynamics: `system.dynamics(q, q̇)`, which the reactions reuse where
            they share work with it (a closed chain's closure solve).
        regularity: whether to compute `LoadCoupling.regularity` (another
            Jacobian: only where a failed solve is named); else it is NaN.
        then: an affine map of `friction_of`'s output that gives the
            friction (the stick solve at fixed modes, from the slip forces:
            ``f = then(friction_of(law))``). It is formed once as a matrix
            (``m`` directions), so that each Newton step evaluates only
            `friction_of`, not the solve.

    Returns:
        A `LoadCoupling`: the friction, the law at its reactions, whether the
        iteration converged and how many iterations it took.
    """
    like = jnp.zeros(minv_jt.shape[1], dtype=acc_net.dtype)

    def reactions(friction):
        acc = acc_net - minv_jt @ friction
        return system.joint_reactions(q, qd, acc, applied, friction, dynamics)

    # One evaluation of the reactions and their linear map: `jacfwd` would
    # trace the reactions once more for its primal, and a closed chain's
    # reactions solve its closure (a `while_loop`) each time. Their static
    # fields (`kinds`, `parent_rows`) leave through this list, not as outputs;
    # its arrays are replaced by the primal ones below.
    traced = []

    def wrench_of(friction):
        out = reactions(friction)
        traced.append(out)
        return out.wrench, out.position

    wrench, linear, position = jax.linearize(wrench_of, like, has_aux=True)
    base = traced[0]._replace(wrench=wrench, position=position)
    eye = jnp.eye(like.shape[0], dtype=like.dtype)
    slope = jnp.moveaxis(jax.vmap(linear)(eye), 0, -1)  # (m, 6, m) as `jacfwd`

    def law_at(friction):
        return law.at_reactions(base._replace(wrench=base.wrench + slope @ friction))

    if then is None:
        coupled = friction_of
    else:
        # `then` is affine: its offset and matrix, at the cost of one solve
        # with ``m`` right-hand sides (3-PPRS, nine elements: each Newton step
        # 80 µs with the solve inside it, measured 2026-11-30).
        offset, then_linear = jax.linearize(then, like)
        matrix = jnp.moveaxis(jax.vmap(then_linear)(eye), 0, -1)

        def coupled(law_at):
            return offset + matrix @ friction_of(law_at)

    def excess(friction):
        """``f − F(f)``: zero at the coupling's solution."""
        return friction - coupled(law_at(friction))

    # The iteration's inputs (the arrays `excess` closes over) are held out
    # of differentiation, and `_at_root` gives its solution the implicit
    # function's derivative. optimistix's implicit adjoint of the Newton map
    # traced the derivatives of the Newton step's own Jacobian as well: a
    # ball-and-rotor `jacfwd` program (the ball-joint test's until 2026-11-29)
    # had 170.7k equations, now 141k.
    converted = eqx.filter_closure_convert(excess, like)
    held = jtu.tree_map(
        lambda x: jax.lax.stop_gradient(x) if eqx.is_array(x) else x, converted
    )

    def newton(friction, _):
        # One Newton step on the residual. `lu_solve` is a loop, not LAPACK
        # (`jaxfric._linalg`).
        r, jac = _residual(held, friction)
        return friction - lu_solve(jac, r)

    # Newton from ``f = 0``: a plain fixed-point iteration contracts only by
    # the coupling's gain (about 0.7 per iteration for LuGre's damped
    # bristles on an offset slider, failing in 50); Newton converges in a
    # few steps wherever ``I − ∂F/∂f`` is regular. A singular one (a gain of
    # one) gives a non-finite step: not converged, reported.
    tol = max(1e-12, 1e3 * float(jnp.finfo(like.dtype).eps))
    fixed = optx.fixed_point(
        newton,
        optx.FixedPointIteration(rtol=tol, atol=1e-30),
        like,
        max_steps=law.max_iterations,  # pyright: ignore[reportAttributeAccessIssue]
        throw=False,
    )
    friction = _at_root(fixed.value, converted)
    converged = (fixed.result == optx.RESULTS.successful) & jnp.all(
        jnp.isfinite(friction)
    )
    if regularity:
        _, jac = _residual(held, jax.lax.stop_gradient(friction))
        regular = jnp.where(converged, jnp.abs(det(jac)), 0.0)
    else:
        regular = jnp.full((), jnp.nan, like.dtype)
    return LoadCoupling(
        friction, law_at(friction), converged, fixed.stats["num_steps"], regular
    )


def _residual(excess, friction):
    """``(r, ∂r/∂f)`` of ``r = excess(f)`` (square): the residual of the load
    coupling and its Jacobian ``I − ∂F/∂f``."""
    r, tangent = jax.linearize(excess, friction)
    eye = jnp.eye(friction.shape[0], dtype=friction.dtype)
    return r, jax.vmap(tangent, out_axes=1)(eye)


@eqx.filter_custom_jvp
def _at_root(root, excess):
    """`root`, a zero of ``excess(f)`` (a closure-converted function: its
    inputs are the arrays it closes over), with the derivative of the
    implicit function, ``ḟ = −A⁻¹ (∂r/∂inputs) inputs_dot``, ``A = ∂r/∂f``
    at the root; the iteration that found it is not differentiated."""
    del excess
    return root


@_at_root.def_jvp
def _at_root_jvp(primals, tangents):
    root, excess = primals
    _, excess_dot = tangents
    # Under an outer derivative (second derivatives) the root moves with the
    # inputs too: through `_at_root` again, as `optimistix`'s implicit JVP.
    root = _at_root(root, excess)
    _, r_dot = eqx.filter_jvp(lambda e: e(root), (excess,), (excess_dot,))
    if r_dot is None:  # none of its inputs has a tangent
        return root, jnp.zeros_like(root)
    _, jac = _residual(excess, root)
    return root, -lu_solve(jac, r_dot)
