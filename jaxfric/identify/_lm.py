"""A compact Levenberg–Marquardt solver for small parameter counts.

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
their Jacobian (`jax.jacfwd`, one tangent per unknown: cheap for a handful of
parameters), at the trial point; the Jacobian at the accepted point is kept and
gives the Gauss–Newton covariance at the end without another pass. (The
`optimistix` solvers run the same algorithm family through `fit` too; this one
compiles one simulation pass per loop instead of two.)
"""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int


class LevenbergMarquardt(eqx.Module):
    """Settings of the built-in Levenberg–Marquardt loop of `fit`.

    Args:
        gtol: stop when ``‖Jᵀr‖∞ <= gtol·(‖r‖² + tiny)`` (stationary point).
        xtol: stop when an accepted step ``‖h‖ <= xtol·(‖x‖ + xtol)``.
        ftol: stop when an accepted step lowers the loss by less than
            ``ftol`` relative.
        tau: initial damping ``μ0`` relative to the largest diagonal of ``JᵀJ``.
        jac: ``"fwd"`` (`jax.jacfwd`), ``"bwd"`` (`jax.jacrev`), or `None`:
            `fit`'s `jac`.
        max_step: largest step in any unconstrained unknown ``u`` (a step is
            scaled down to it), or `None` for no limit. The unknowns are of
            order one at the start (`_transforms.py`), and a step of many units
            lands a `Positive` parameter deep in the flat tail of its softplus
            (e.g. a Stribeck velocity at 1e-8 of its start), where the
            gradient vanishes and the fit stays; the cap keeps the early,
            badly damped steps of a start far from the optimum within reach
            (default 2: e.g. a factor of about 7 on a `Positive` parameter
            near its start).
    """

    gtol: float = eqx.field(static=True, default=1e-12)
    xtol: float = eqx.field(static=True, default=1e-10)
    ftol: float = eqx.field(static=True, default=1e-14)
    tau: float = eqx.field(static=True, default=1e-3)
    jac: str | None = eqx.field(static=True, default=None)
    max_step: float | None = eqx.field(static=True, default=2.0)

    def __check_init__(self):
        if self.max_step is not None and not self.max_step > 0:
            raise ValueError(f"`max_step` must be > 0 or None; got {self.max_step}.")
        if self.jac not in (None, "fwd", "bwd"):
            raise ValueError(f"`jac` must be 'fwd' or 'bwd'; got {self.jac!r}.")
        for name in ("gtol", "xtol", "ftol", "tau"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"`{name}` must be >= 0; got {getattr(self, name)}.")


class LMState(eqx.Module):
    """Carry of the loop: the accepted point with its residuals and Jacobian,
    the trial point, the damping, and flags."""

    x: Float[Array, " p"]
    residual: Float[Array, " n"]
    jacobian: Float[Array, "n p"]
    aux: Int[Array, ""]  # number of failed simulation windows
    x_trial: Float[Array, " p"]
    predicted: Float[Array, ""]  # L(0) − L(h) of the trial step
    mu: Float[Array, ""]
    nu: Float[Array, ""]
    first: Bool[Array, ""]
    done: Bool[Array, ""]
    num_accepted: Int[Array, ""]


def lm_init(x0: Float[Array, " p"], n_residuals: int) -> LMState:
    p = x0.shape[0]
    return LMState(
        x=x0,
        residual=jnp.zeros((n_residuals,)),
        jacobian=jnp.zeros((n_residuals, p)),
        aux=jnp.array(0),
        x_trial=x0,
        predicted=jnp.array(0.0),
        mu=jnp.array(1.0),
        nu=jnp.array(2.0),
        first=jnp.array(True),
        done=jnp.array(False),
        num_accepted=jnp.array(0),
    )


def lm_step(settings: LevenbergMarquardt, fn, state: LMState) -> LMState:
    """One iteration: evaluate ``fn(x_trial) -> (r, aux)`` with its Jacobian,
    accept or reject, update the damping and propose the next trial point."""
    jac_fn = jax.jacfwd if settings.jac == "fwd" else jax.jacrev

    def with_value(x):
        r, aux = fn(x)
        return r, (r, aux)

    jac_t, (r_t, aux_t) = jac_fn(with_value, has_aux=True)(state.x_trial)
    f_old = 0.5 * jnp.sum(state.residual**2)
    f_new = 0.5 * jnp.sum(r_t**2)
    rho = (f_old - f_new) / state.predicted
    finite = jnp.isfinite(f_new) & jnp.all(jnp.isfinite(jac_t))
    accept = state.first | (finite & (rho > 0))

    x = jnp.where(accept, state.x_trial, state.x)
    r = jnp.where(accept, r_t, state.residual)
    jac = jnp.where(accept, jac_t, state.jacobian)
    aux = jnp.where(accept, aux_t, state.aux)
    jtj = jac.T @ jac
    g = jac.T @ r
    mu0 = settings.tau * jnp.max(jnp.diag(jtj))
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
    if settings.max_step is not None:
        # Scale the step down (same direction); the gain ratio below uses the
        # model's prediction for the step actually taken.
        h = h * jnp.minimum(1.0, settings.max_step / jnp.max(jnp.abs(h)))
    predicted = -(h @ g) - 0.5 * (h @ (jtj @ h))

    # Stopping tests (Madsen et al. 2004, Eq. 3.15, 3.16): a stationary point,
    # a next step negligible against x, or an accepted step that gained nothing.
    f_acc = 0.5 * jnp.sum(r**2)
    tiny = jnp.finfo(r.dtype).tiny
    stationary = jnp.max(jnp.abs(g)) <= settings.gtol * (2.0 * f_acc + tiny)
    small_step = jnp.linalg.norm(h) <= settings.xtol * (
        jnp.linalg.norm(x) + settings.xtol
    )
    small_gain = ~state.first & accept & (f_old - f_new <= settings.ftol * f_old)
    hopeless = mu > 1e20
    done = stationary | small_step | small_gain | (f_acc <= tiny) | hopeless
    return LMState(
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


__all__ = ["LMState", "LevenbergMarquardt", "lm_init", "lm_step"]
