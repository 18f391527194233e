"""Levenberg–Marquardt for small parameter counts, as an optimistix
least-squares solver.

Levenberg–Marquardt with the gain-ratio damping update of Nielsen (1999), as in
Madsen, Nielsen & Tingleff, "Methods for non-linear least squares problems"
(2004), Algorithm 3.16:

    (JᵀJ + μ I) h = −Jᵀ r,      ρ = (F(x) − F(x + h)) / (L(0) − L(h)),

``F = ½‖r‖²`` and ``L`` its Gauss–Newton model; ``μ0 = τ·max diag(JᵀJ)``. A step
is accepted when ``ρ > 0``; then ``μ ← μ·max(1/3, 1 − (2ρ − 1)³)``, else
``μ ← μ·ν, ν ← 2ν``. The damping is on the identity, not Marquardt's
``diag(JᵀJ)``: the unknowns are the transformed ``u`` of order one, and a
diagonal scaling lets a weakly identified parameter take a huge step into the
flat tail of its `Positive` transform, where it stays.

Each iteration makes exactly one evaluation of the residuals together with
their (materialised) Jacobian, at the trial point; the Jacobian at the accepted
point is kept, and `postprocess` reports it with the residuals (``stats``), so
`fit` gets the Gauss–Newton covariance without another Jacobian pass.
"""

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.tree_util as jtu
import optimistix as optx
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Bool, Float, Int, PyTree


class _LMState(eqx.Module):
    """The accepted point with its residuals, Jacobian and aux; the trial point;
    the damping; flags."""

    x: Float[Array, " p"]
    residual: Float[Array, " n"]
    jacobian: Float[Array, "n p"]
    aux: PyTree
    x_trial: Float[Array, " p"]
    predicted: Float[Array, ""]  # L(0) − L(h) of the trial step
    mu: Float[Array, ""]
    nu: Float[Array, ""]
    first: Bool[Array, ""]
    done: Bool[Array, ""]
    num_accepted: Int[Array, ""]


class LevenbergMarquardt(optx.AbstractLeastSquaresSolver):
    """Levenberg–Marquardt (Madsen, Nielsen & Tingleff 2004, Algorithm 3.16), the
    default solver of `jaxfric.identify.fit`; usable with `optimistix.least_squares`
    too. Takes the option ``jac`` (``"fwd"``, default, or ``"bwd"``).

    Args:
        rtol, atol: stop when the next step is ``‖h‖ <= atol + rtol·‖x‖``.
        norm: the norm of that test (default the 2-norm).
        gtol: stop when ``‖Jᵀr‖∞ <= gtol·(‖r‖² + tiny)`` (stationary point).
        ftol: stop when an accepted step lowers the loss by less than
            ``ftol`` relative.
        tau: initial damping ``μ0`` relative to the largest diagonal of ``JᵀJ``
            (default 0.01: on ``experiments/bench_identify.py``'s Stribeck
            problem it reaches 2 % in 7 steps where 1e-3 takes 19, to the
            same optimum).
        max_step: largest step in any unknown (a step is scaled down to it), or
            `None` for no limit. The unknowns of `fit` are of order one at the
            start (`jaxfric.identify.Positive` and the other transforms), and a
            step of many units lands a `Positive` parameter deep in the flat
            tail of its softplus (e.g. a Stribeck velocity at 1e-8 of its
            start), where the gradient vanishes and the fit stays; the cap
            keeps the early, badly damped steps of a start far from the optimum
            within reach (default 2: e.g. a factor of about 7 on a `Positive`
            parameter near its start).
    """

    rtol: float = eqx.field(static=True, default=1e-10)
    atol: float = eqx.field(static=True, default=1e-20)
    norm: Callable[[PyTree], Array] = eqx.field(static=True, default=optx.two_norm)
    gtol: float = eqx.field(static=True, default=1e-12)
    ftol: float = eqx.field(static=True, default=1e-14)
    tau: float = eqx.field(static=True, default=1e-2)
    max_step: float | None = eqx.field(static=True, default=2.0)

    def __check_init__(self):
        if self.max_step is not None and not self.max_step > 0:
            raise ValueError(f"`max_step` must be > 0 or None; got {self.max_step}.")
        for name in ("rtol", "atol", "gtol", "ftol", "tau"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"`{name}` must be >= 0; got {getattr(self, name)}.")

    def init(self, fn, y, args, options, f_struct, aux_struct, tags) -> _LMState:
        x0, _ = ravel_pytree(y)
        n = sum(s.size for s in jtu.tree_leaves(f_struct))
        return _LMState(
            x=x0,
            residual=jnp.zeros((n,), x0.dtype),
            jacobian=jnp.zeros((n, x0.size), x0.dtype),
            aux=jtu.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), aux_struct),
            x_trial=x0,
            predicted=jnp.array(0.0, x0.dtype),
            mu=jnp.array(1.0, x0.dtype),
            nu=jnp.array(2.0, x0.dtype),
            first=jnp.array(True),
            done=jnp.array(False),
            num_accepted=jnp.array(0),
        )

    def step(self, fn, y, args, options, state: _LMState, tags):
        """Evaluate the residuals and their Jacobian at the trial point, accept
        or reject it, update the damping and propose the next trial point."""
        _, unravel = ravel_pytree(y)
        jac_fn = jax.jacfwd if options.get("jac", "fwd") == "fwd" else jax.jacrev

        def flat_fn(x):
            r, aux = fn(unravel(x), args)
            r = ravel_pytree(r)[0]
            return r, (r, aux)

        jac_t, (r_t, aux_t) = jac_fn(flat_fn, has_aux=True)(state.x_trial)
        f_old = 0.5 * jnp.sum(state.residual**2)
        f_new = 0.5 * jnp.sum(r_t**2)
        rho = (f_old - f_new) / state.predicted
        finite = jnp.isfinite(f_new) & jnp.all(jnp.isfinite(jac_t))
        accept = state.first | (finite & (rho > 0))

        def pick(new, old):
            return jtu.tree_map(lambda a, b: jnp.where(accept, a, b), new, old)

        x, r, jac, aux = pick(
            (state.x_trial, r_t, jac_t, aux_t),
            (state.x, state.residual, state.jacobian, state.aux),
        )
        jtj = jac.T @ jac
        g = jac.T @ r
        mu0 = self.tau * jnp.max(jnp.diag(jtj))
        mu = jnp.where(
            state.first,
            mu0,
            jnp.where(
                accept,
                state.mu * jnp.maximum(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3),
                state.mu * state.nu,
            ),
        )
        nu = jnp.where(accept, 2.0, 2.0 * state.nu)

        h = jnp.linalg.solve(jtj + mu * jnp.eye(jtj.shape[0], dtype=jtj.dtype), -g)
        if self.max_step is not None:
            # Scale the step down (same direction); the gain ratio below uses
            # the model's prediction for the step actually taken.
            h = h * jnp.minimum(1.0, self.max_step / jnp.max(jnp.abs(h)))
        predicted = -(h @ g) - 0.5 * (h @ (jtj @ h))

        # Stopping tests (Madsen et al. 2004, Eq. 3.15, 3.16): a stationary
        # point, a next step negligible against x, or an accepted step that
        # gained nothing.
        f_acc = 0.5 * jnp.sum(r**2)
        tiny = jnp.finfo(r.dtype).tiny
        stationary = jnp.max(jnp.abs(g)) <= self.gtol * (2.0 * f_acc + tiny)
        small_step = self.norm(h) <= self.atol + self.rtol * self.norm(x)
        small_gain = ~state.first & accept & (f_old - f_new <= self.ftol * f_old)
        hopeless = mu > 1e20
        done = stationary | small_step | small_gain | (f_acc <= tiny) | hopeless
        new_state = _LMState(
            x=x,
            residual=r,
            jacobian=jac,
            aux=aux,
            x_trial=x + h,
            predicted=predicted,
            mu=mu,
            nu=nu,
            first=jnp.array(False),
            done=done,
            num_accepted=state.num_accepted + jnp.where(accept, 1, 0),
        )
        return unravel(x), new_state, aux

    def terminate(self, fn, y, args, options, state: _LMState, tags):
        return state.done, optx.RESULTS.successful

    def postprocess(
        self, fn, y, aux, args, options, state: _LMState, tags, result
    ) -> tuple[Any, Any, dict[str, Any]]:
        """The accepted point, its aux and, in the stats, its residuals and
        Jacobian (in the flattened unknowns) and the number of accepted steps."""
        stats = dict(
            residual=state.residual,
            jacobian=state.jacobian,
            num_accepted=state.num_accepted,
        )
        return y, aux, stats


__all__ = ["LevenbergMarquardt"]
