"""Friction whose levels depend on the joints' reaction loads: the coupling
friction → accelerations → reactions → levels → friction, solved exactly at
one state (shared by the switch path and the dynamic-law path)."""

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optimistix as optx

from .._types import Coordinates, SlipVector, Vector
from ..systems import AbstractSystem, Dynamics
from ._law import AbstractFrictionLaw


class LoadCoupling(NamedTuple):
    """The load coupling solved at one state (`solve_load_coupling`).

    Attributes:
        friction: the friction ``f``, N or N·m, shape ``(m,)``.
        law_at: the law at the reactions of ``f``
            (`AbstractFrictionLaw.at_reactions`).
        converged: whether the iteration converged within the law's
            ``max_iterations``.
        iterations: the iterations it took (``max_iterations`` when it did not
            converge).
    """

    friction: SlipVector
    law_at: AbstractFrictionLaw
    converged: jax.Array
    iterations: jax.Array


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
) -> LoadCoupling:
    """The friction ``f`` with ``f = friction_of(law at the reactions of f)``.

    The accelerations are ``q̈ = acc_net − M⁻¹Jᵀ f``, the reactions
    `AbstractSystem.joint_reactions` at them, the law's levels
    ``law.at_reactions(reactions)``. The reactions are affine in ``f``
    (Newton–Euler is linear in ``q̈``; a closed chain's loop forces in ``q̈``,
    ``τ`` and ``f``), so they are evaluated once with their Jacobian and each
    iteration is a product. Fixed-point iteration from ``f = 0``
    (`optimistix.fixed_point`, at most ``law.max_iterations``) to a change of
    ``max(1e-12, 1000·eps)`` of the largest force; the derivative is the
    implicit-function one (`optimistix.ImplicitAdjoint`). The iteration
    contracts by about ``μ·r/ℓ`` (a pin radius over a link length).

    Args:
        applied: generalised applied forces ``τ``, N or N·m.
        acc_net: ``M⁻¹(τ − h)``, the accelerations without friction.
        minv_jt: ``M⁻¹Jᵀ``.
        friction_of: the friction of every element given the law at the loads
            (e.g. a stick solve with fixed modes).
        dynamics: `system.dynamics(q, q̇)`, which the reactions reuse where
            they share work with it (a closed chain's closure solve).

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

    tol = max(1e-12, 1e3 * float(jnp.finfo(like.dtype).eps))
    fixed = optx.fixed_point(
        lambda friction, _: friction_of(law_at(friction)),
        optx.FixedPointIteration(rtol=tol, atol=1e-30),
        like,
        max_steps=law.max_iterations,  # pyright: ignore[reportAttributeAccessIssue]
        throw=False,
    )
    return LoadCoupling(
        fixed.value,
        law_at(fixed.value),
        fixed.result == optx.RESULTS.successful,
        fixed.stats["num_steps"],
    )
