"""Input checks and conversions shared by the simulation paths."""

from collections.abc import Callable

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._check import AbstractCheck, SaveTimes, as_vector, check_finite, is_concrete
from .._math import element_sizes, element_starts
from ..forces import AbstractForce, FunctionForce
from ..systems import AbstractSystem, ConfigurationStatus
from ._law import AbstractFrictionLaw
from ._loads import LoadCoupling
from ._solution import RESULTS


def as_force(force, t0, q0, qd0) -> AbstractForce | None:
    """`None`, an `AbstractForce`, or a callable ``fn(t, q, qd)`` -> a force.

    A callable is closure-converted at ``(t0, q0, qd0)``: values it closes over
    that are traced (under `jit`, `grad`, `vmap`) become inputs of the force
    instead of constants that leak out of their trace, so `jax.grad` with
    respect to them works."""
    if force is None or isinstance(force, AbstractForce):
        return force
    if isinstance(force, Callable):
        t0 = jnp.asarray(t0, dtype=q0.dtype)
        name = getattr(force, "__qualname__", None) or type(force).__name__
        return FunctionForce(eqx.filter_closure_convert(force, t0, q0, qd0), name)
    raise TypeError(
        "`force` must be None, a jaxfric.forces force, or a callable "
        f"fn(t, q, qd); got {type(force).__name__}."
    )


def state_vector(name: str, value, n: int, why: str, throw: bool = True):
    """Convert an initial state (position, velocity, a law's state) to shape
    ``(n,)``, checking it (`why`: where ``n`` comes from, for the message).

    A concrete non-finite entry raises `ValueError`; a traced one raises through
    `eqx.error_if` with `throw`, else the run reports it as
    ``RESULTS.nonfinite_state`` (a program without host callbacks, which JAX's
    persistent compilation cache can keep)."""
    arr = as_vector(name, value, n, why)
    check_finite(name, arr)
    if not throw:
        return arr
    return eqx.error_if(arr, ~jnp.all(jnp.isfinite(arr)), f"`{name}` is not finite.")


def check_law_size(friction: AbstractFrictionLaw, m: int) -> None:
    """Each array inside the law must be a scalar or have one entry per
    friction row (`m`, the system's `n_friction`), or one per element of a law
    whose elements have load models (`JointFriction`'s `loads`: a cylindrical
    or spherical element spans several rows)."""
    import jax

    sizes = {m}
    loads = getattr(friction, "loads", None)
    if isinstance(loads, tuple):
        sizes.add(len(loads))
    for path, leaf in jax.tree_util.tree_leaves_with_path(friction):
        shape = np.shape(leaf)
        if shape != () and shape not in {(k,) for k in sizes}:
            name = jax.tree_util.keystr(path)
            per = f"({m},)" + (
                f" or, one per load model, ({len(loads)},)"
                if isinstance(loads, tuple) and len(loads) != m
                else ""
            )
            raise ValueError(
                f"friction parameter `{type(friction).__name__}{name}` has shape "
                f"{shape}; the system has n_friction={m} rows, so it must be a "
                f"scalar or have shape {per}."
            )


def check_law_elements(friction: AbstractFrictionLaw, system) -> None:
    """A load-independent law's elements must cover the system's friction
    rows, and its elements on the system's vector elements
    (`AbstractSystem.vector_elements`, e.g. a ball joint's three rows) must be
    of their size, starting at their rows: scalar rows on a ball joint would
    be friction about three axes of the socket's frame, not one torque
    against the rotation. (Load models check their own rows.)"""
    if friction.load_dependent:
        return
    name = type(friction).__name__
    dims = friction.rows_per_element
    try:
        sizes = element_sizes(dims, system.n_friction)
    except ValueError as error:
        raise ValueError(
            f"the law `{name}` with elements of {dims} row(s) does not fit the "
            f"system's n_friction={system.n_friction} rows: {error}"
        ) from None
    starts = dict(
        zip(element_starts(dims, system.n_friction).tolist(), sizes, strict=True)
    )
    for start, rows in system.vector_elements:
        if starts.get(start) != rows:
            raise ValueError(
                f"friction rows {start}..{start + rows - 1} of the system are one "
                f"element of {rows} rows (a ball joint's relative angular "
                f"velocity), but the law `{name}` has elements of {dims} row(s) "
                f"(from row 0): use a law with a {rows}-row element that starts "
                f"there, e.g. IsotropicCoulomb(dims={rows}) (or a tuple of each "
                "element's rows), or JointFriction with SphericalLoad."
            )


def save_times(t0, t1, ts, num_save: int):
    """The saved times: `ts` if given (checked), else `num_save` uniform points."""
    if ts is None:
        if (
            isinstance(num_save, bool)
            or not isinstance(num_save, int | np.integer)
            or num_save < 2
        ):
            raise ValueError(
                "`num_save` must be an integer >= 2 when `ts` is None (the saved "
                f"times run from t0 to t1); got {num_save!r}."
            )
        return jnp.linspace(t0, t1, num_save)
    ts = jnp.asarray(ts, dtype=float)
    if ts.ndim != 1 or ts.shape[0] < 1:
        raise ValueError(f"`ts` must be a non-empty 1-D array; got shape {ts.shape}.")
    # Traced save times are checked with the parameters (`input_checks`).
    SaveTimes("ts", ts, t0, t1).raise_if_invalid()
    return ts


def check_interval(t0, t1) -> None:
    if is_concrete(t0) and is_concrete(t1):
        check_finite("t0", t0)
        check_finite("t1", t1)
        if not float(t1) > float(t0):
            raise ValueError(f"`t1` must be greater than `t0`; got t0={t0}, t1={t1}.")


def check_fixed_step(dt0, t0, t1) -> None:
    """Raise `ValueError` unless a fixed step `dt0` (or `None`) is at most
    ``t1 − t0`` (a fixed step longer than the interval was cut to it silently:
    a different, often unstable, step). Its lower bound is `SimulateOptions`'s.
    """
    if dt0 is not None and all(map(is_concrete, (dt0, t0, t1))):
        span = float(t1) - float(t0)
        if float(dt0) > span:
            raise ValueError(
                f"`dt0` must lie in (0, t1 - t0] = (0, {span!r}] on the fixed-step "
                f"paths (Karnopp, Kikuuwe); got {float(dt0)!r}."
            )


def check_jump_times(force, jump_ts):
    """`jump_ts` if given (checked), else ``force.jump_times()``; `None` if empty.

    Sorted, finite and 1-D, as `diffrax.ClipStepSizeController` needs.
    """
    if jump_ts is None:
        jump_ts = None if force is None else force.jump_times()
        if jump_ts is None:
            return None
    jump_ts = jnp.asarray(jump_ts, dtype=float)
    if jump_ts.ndim != 1:
        raise ValueError(f"`jump_ts` must be 1-D; got shape {jump_ts.shape}.")
    if jump_ts.shape[0] == 0:
        return None
    if is_concrete(jump_ts):
        arr = np.asarray(jump_ts)
        if not np.all(np.isfinite(arr)):
            raise ValueError("`jump_ts` must be finite.")
        if np.any(np.diff(arr) < 0):
            raise ValueError("`jump_ts` must be non-decreasing.")
    return jump_ts


def step_controller(rtol, atol, dtmax, jump_ts):
    """The adaptive step-size controller of the switch and smooth paths.

    A PID controller on (``rtol``, ``atol``), steps at most ``dtmax``, clipped
    to step exactly onto the force's jump times (`check_jump_times`). The jump
    times are not differentiated: where a step lands is a numerical choice,
    not part of the solution.
    """
    import diffrax
    import jax

    controller = diffrax.PIDController(rtol=rtol, atol=atol, dtmax=dtmax)
    if jump_ts is not None:
        controller = diffrax.ClipStepSizeController(
            controller, jump_ts=jax.lax.stop_gradient(jump_ts)
        )
    return StopOnNonfinite(controller)


class StopOnNonfinite(diffrax.AbstractAdaptiveStepSizeController):
    """An adaptive controller that ends the solve with `diffrax.RESULTS.nonfinite`
    when a rejected step was non-finite and no smaller step can follow.

    diffrax's PID controller turns a NaN error estimate into a NaN next step
    (and an implicit solver's failed Newton solve on a NaN vector field shrinks
    the step to zero), so such a solve rejected steps until `max_steps` and
    reported ``max_steps_reached``; this names the cause (`classify`) and stops
    at once. An infinite error estimate with a finite next step (an overshoot
    that a smaller step avoids) is left to the wrapped controller.

    Attributes:
        controller: the wrapped adaptive controller (its `rtol`, `atol`, `norm`
            are this controller's, for the implicit solvers' tolerances).
    """

    controller: diffrax.AbstractAdaptiveStepSizeController

    @property
    def rtol(self):
        return self.controller.rtol

    @property
    def atol(self):
        return self.controller.atol

    @property
    def norm(self):  # pyright: ignore[reportIncompatibleMethodOverride]
        return self.controller.norm

    def wrap(self, direction):
        return StopOnNonfinite(self.controller.wrap(direction))

    def init(self, terms, t0, t1, y0, dt0, args, func, error_order):
        return self.controller.init(terms, t0, t1, y0, dt0, args, func, error_order)

    def adapt_step_size(
        self, t0, t1, y0, y1_candidate, args, y_error, error_order, controller_state
    ):
        keep, next_t0, next_t1, jump, state, result = self.controller.adapt_step_size(
            t0, t1, y0, y1_candidate, args, y_error, error_order, controller_state
        )
        finite = jnp.array(True)
        for leaf in jax.tree.leaves((y1_candidate, y_error)):
            finite = finite & jnp.all(jnp.isfinite(leaf))
        # `next_t1 > next_t0` is False for a NaN step too.
        stuck = ~keep & ~finite & ~(next_t1 > next_t0)
        result = diffrax.RESULTS.where(stuck, diffrax.RESULTS.nonfinite, result)
        return keep, next_t0, next_t1, jump, state, result


def nondifferentiable(tree):
    """`jax.lax.stop_gradient` of the arrays of `tree` (other leaves kept)."""
    arrays, static = eqx.partition(tree, eqx.is_array)
    return eqx.combine(jax.lax.stop_gradient(arrays), static)


def name_configuration_failure(system: AbstractSystem, result, q_stop) -> RESULTS:
    """`result`, with a `nonfinite_state` renamed after the cause the system
    reports at `q_stop`, the coordinates where the solve stopped
    (`AbstractSystem.configuration_status`): `RESULTS.closure_failed` or
    `RESULTS.singular_configuration`. Free for systems that keep the default
    status (nothing is traced)."""
    if type(system).configuration_status is AbstractSystem.configuration_status:
        return result
    status = system.configuration_status(q_stop)
    named = RESULTS.where(
        status == ConfigurationStatus.singular,
        RESULTS.singular_configuration,
        RESULTS.closure_failed,
    )
    # A solve that spent `max_steps` at a singular configuration (a toggle,
    # where the vector field is not Lipschitz and the steps shrink without
    # end) stopped for that reason too.
    stalled = (result == RESULTS.nonfinite_state) | (
        result == RESULTS.max_steps_reached
    )
    failed = stalled & (status != ConfigurationStatus.ok)
    return RESULTS.where(failed, named, result)


# `name_load_coupling_failure`: below this |det(I − ∂F/∂f)| at the state where
# a solve stalled, the load coupling is taken to have failed there.
_SINGULAR_COUPLING = 1e-3


def name_load_coupling_failure(
    law: AbstractFrictionLaw,
    result,
    coupling_at: Callable[..., LoadCoupling],
    *stop,
) -> RESULTS:
    """`result`, with a failure renamed `RESULTS.load_coupling_failed` where
    the load coupling of a `load_dependent` law (`solve_load_coupling`) fails
    at the state where the solve stopped: ``coupling_at(*stop)`` evaluates it
    there (with the modes the switch path last tried), not differentiated (a
    result code has no derivative). Free for other laws (nothing is traced).

    A coupling that did not converge makes the friction non-finite, which
    ends a solve as ``nonfinite_state`` (a step that cannot be shortened
    further), ``max_steps_reached`` (steps shrinking until the budget is
    spent), ``stick_solve_failed`` (no finite friction for the modes at an
    event) or ``event_location_failed`` (a root find on non-finite
    conditions); those are renamed. The others are not: ``max_events_reached``
    is a budget, ``invalid_parameters`` and the configuration failures
    (`name_configuration_failure`, applied first) name an earlier cause.

    A solve that ran into states where the coupling has no solution stopped
    just short of them (every longer trial step failed), where Newton's
    method still converges but ``I − ∂F/∂f`` is nearly singular (the
    coupling's gain near one: two solutions about to merge): so a coupling
    with ``|det(I − ∂F/∂f)| < 1e-3`` or one that needed all of
    ``max_iterations`` counts as failed too (as a nearly rank-deficient
    closure Jacobian counts as singular, `name_configuration_failure`).
    Measured: a LuGre rotor whose bristle damping makes the coupling fold
    stopped where the determinant was 1.9e-4; the same rotor less damped
    ended its run at 1.002."""
    if not law.load_dependent:
        return result
    at_stop = coupling_at(*nondifferentiable(stop))
    max_iterations = law.max_iterations  # pyright: ignore[reportAttributeAccessIssue]
    failing = (
        ~at_stop.converged
        | (at_stop.iterations >= max_iterations)
        | (at_stop.regularity < _SINGULAR_COUPLING)
    )
    stalled = (
        (result == RESULTS.nonfinite_state)
        | (result == RESULTS.max_steps_reached)
        | (result == RESULTS.stick_solve_failed)
        | (result == RESULTS.event_location_failed)
    )
    return RESULTS.where(stalled & failing, RESULTS.load_coupling_failed, result)


def last_finite(q):
    """The last row of saved coordinates `q` (shape ``(t, n)``) that is
    finite (the first row if none is): where a fixed-step solve stopped."""
    finite = jnp.all(jnp.isfinite(q), axis=1)
    index = jnp.max(jnp.where(finite, jnp.arange(q.shape[0]), 0))
    return q[index]


def classify(result) -> RESULTS:
    """A diffrax result code of a path's solve as a `RESULTS` code: a non-finite
    solve (`StopOnNonfinite`, a NaN inside an accepted step) is
    `RESULTS.nonfinite_state`."""
    result = RESULTS.promote(result)
    return RESULTS.where(result == RESULTS.nonfinite, RESULTS.nonfinite_state, result)


def check_system(system) -> None:
    if not isinstance(system, AbstractSystem):
        raise TypeError(
            "`system` must be a jaxfric.systems system (an AbstractSystem); got "
            f"{type(system).__name__}."
        )


_CHECKED = (AbstractSystem, AbstractFrictionLaw, AbstractForce)


def _is_checked(node) -> bool:
    return isinstance(node, _CHECKED)


def input_checks(
    system, friction, force, ts, t0, t1
) -> list[tuple[str, AbstractCheck]]:
    """What `simulate` checks of its inputs under `jit`, `vmap` or `grad`: the
    `parameter_checks` of the system, law and force, and the save times
    (`SaveTimes`: the segments would save a non-monotone `ts` wrongly)."""
    return parameter_checks((system, friction, force)) + [
        ("simulate", SaveTimes("ts", ts, t0, t1))
    ]


def parameter_checks(tree) -> list[tuple[str, AbstractCheck]]:
    """The declared checks (``parameter_checks()``) of every system, law and
    force in `tree`, nested ones included (the law inside `Regularized` or
    `Karnopp`, a controller's system or reference), each with its owner's
    class name. The structure is static, so the list is fixed at trace time.
    """
    import dataclasses

    import jax

    found = []
    for node in jax.tree_util.tree_leaves(tree, is_leaf=_is_checked):
        if _is_checked(node):
            found += [(type(node).__name__, c) for c in node.parameter_checks()]
            fields = [getattr(node, f.name) for f in dataclasses.fields(node)]
            found += parameter_checks(fields)
    return found


def raise_invalid_parameters(x, checks: list[tuple[str, AbstractCheck]]):
    """Raise if a check of `parameter_checks` fails (`simulate` with ``throw``).

    Concrete values fail with the constructors' `ValueError` (a module changed
    with `eqx.tree_at` skipped them); traced values (a module built inside
    `jit`, `vmap` or `grad`) through `eqx.branched_error_if`, whose message
    names the owner, the parameter and its range (under `vmap`, the
    latest-declared of the members' first violated checks). `simulate` calls
    this before `_solve`, so under an eager `vmap` or `grad` a bad parameter
    fails without compiling the solve.

    Args:
        x: a pytree the solve depends on (the initial state), returned through
            the error check so that the check runs before the solve.
        checks: from `parameter_checks`.

    Returns:
        `x`.
    """
    for _, check in checks:
        check.raise_if_invalid()
    traced = [(owner, check) for owner, check in checks if check.is_traced()]
    if not traced:
        return x
    bad = jnp.stack([check.invalid() for _, check in traced])
    msgs = [
        f"Invalid parameter of {owner}: {check.requirement()}. (The value was "
        "traced under jit, vmap or grad, so `simulate` checked it instead of the "
        "constructor.)"
        for owner, check in traced
    ]
    return eqx.branched_error_if(x, jnp.any(bad), jnp.argmax(bad), msgs)


def invalid_parameters(checks: list[tuple[str, AbstractCheck]]):
    """True (a boolean scalar, one per `vmap` member) if a check of
    `parameter_checks` fails; `finish` makes it `RESULTS.invalid_parameters`."""
    if not checks:
        return jnp.asarray(False)
    return jnp.any(jnp.stack([check.invalid() for _, check in checks]))


def _flag_invalid_parameters(solution, invalid):
    """`RESULTS.invalid_parameters` and NaN states (value and gradient) where
    `invalid`: a trajectory of invalid parameters is never plausible."""
    # ×NaN rather than where(invalid, NaN, x): its gradient is NaN too, and
    # ×1.0 leaves valid members bit for bit.
    scale = jnp.where(invalid, jnp.nan, 1.0)
    names = ("q", "qd", "friction", "slip_velocity", "friction_state")
    names += ("force_state", "event_times")
    solution = eqx.tree_at(
        lambda s: [getattr(s, n) for n in names],
        solution,
        [getattr(solution, n) * scale for n in names],
    )
    result = RESULTS.where(invalid, RESULTS.invalid_parameters, solution.result)
    return eqx.tree_at(lambda s: s.result, solution, result)


def input_anchor(tree):
    """The sum of every inexact array in `tree` (`None` if there is none): a
    scalar whose tangent is the sum of the inputs' tangents, to make outputs
    depend on the inputs without changing their values."""
    leaves = jax.tree.leaves(eqx.filter(tree, eqx.is_inexact_array))
    if not leaves:
        return None
    return sum(jnp.sum(leaf) for leaf in leaves)


@jax.custom_jvp
def _nan_tangent(x, anchor, poison):
    """`x`, whose derivative gains ``poison · d(anchor)`` (see `_poison_failed`)."""
    del anchor, poison
    return x


@_nan_tangent.defjvp
def _nan_tangent_jvp(primals, tangents):
    x, _, poison = primals
    dx, d_anchor, _ = tangents
    return x, dx + (poison * d_anchor).astype(dx.dtype)


def _poison_failed(solution, differentiated):
    """NaN derivatives for a failed solve, values unchanged.

    A failed solve's states are NaN constants (or stop early), so without this
    its derivative is 0.0 and an optimiser reads a failure as a flat loss. Every
    float output gets a term of value zero whose derivative is NaN times the
    sum of the input tangents where the result is not successful, and exactly
    0 elsewhere (successful members' derivatives unchanged, per `vmap` member).

    Args:
        solution: the path's `Solution`.
        differentiated: every input of the solve (system, law, force, initial
            state, times); their inexact arrays are what derivatives flow from.
    """
    anchor = input_anchor(differentiated)
    if anchor is None:
        return solution
    failed = solution.result != RESULTS.successful
    poison = jax.lax.stop_gradient(jnp.where(failed, jnp.nan, 0.0))
    dynamic, static = eqx.partition(solution, eqx.is_inexact_array)
    dynamic = jax.tree.map(lambda x: _nan_tangent(x, anchor, poison), dynamic)
    return eqx.combine(dynamic, static)


def force_name(force: AbstractForce) -> str:
    """How error messages name a force: its callable's name, or its class."""
    if isinstance(force, FunctionForce):
        fn = force.fn
        name = force.name or getattr(fn, "__qualname__", None) or type(fn).__name__
        return f"the force callable `{name}`"
    return f"the force `{type(force).__name__}`"


def check_force_output(force: AbstractForce | None, t0, q0, qd0) -> None:
    """Raise `ValueError` naming the force unless ``force.force(t0, q0, qd0, x0)``
    has shape ``()``, ``(1,)`` or ``(n_dof,)`` (broadcast to every coordinate).

    Checked on shapes only (`jax.eval_shape`, nothing runs); its value at `t0`
    is checked by `check_force_start`.
    """
    if force is None:
        return
    n = qd0.shape[0]

    def at_start():
        return force.force(t0, q0, qd0, force.init_state(q0, qd0))

    out = jax.eval_shape(at_start)
    if not (
        hasattr(out, "shape")
        and out.shape in ((), (1,), (n,))
        and jnp.issubdtype(out.dtype, jnp.number)
    ):
        shape = getattr(out, "shape", type(out).__name__)
        raise ValueError(
            f"{force_name(force)} must return a number or an array of shape "
            f"({n},) (n_dof={n}) at (t, q, qd); got {shape}."
        )


def check_force_start(x, force: AbstractForce | None, t0, q0, qd0, throw: bool):
    """The applied force at `t0`, once per solve: finite, else the solve is
    `RESULTS.nonfinite_state` (with `throw`, an error naming the force).

    Args:
        x: a pytree the solve depends on, returned through `eqx.error_if`.
        force, t0, q0, qd0: as handed to the path.
        throw: raise (before the solve runs) or only report.

    Returns:
        ``(x, nonfinite)``: `nonfinite` a boolean scalar (one per `vmap`
        member) for `finish`.
    """
    if force is None:
        return x, jnp.asarray(False)
    tau0 = force.force(t0, q0, qd0, force.init_state(q0, qd0))
    nonfinite = ~jnp.all(jnp.isfinite(tau0))
    if throw:
        x = eqx.error_if(
            x,
            nonfinite,
            f"{force_name(force)} returned a non-finite value (NaN or inf) at t0.",
        )
    return x, nonfinite


def finish(
    solution,
    throw: bool,
    invalid_parameters=None,
    *,
    nonfinite_start=None,
    differentiated=(),
):
    """Raise on a failed result when `throw`, as `diffrax.diffeqsolve` does.

    `invalid_parameters` (from the function of that name) marks the solution
    `RESULTS.invalid_parameters`; `nonfinite_start` (a non-finite applied force
    at ``t0``, `check_force_start`, or start state) marks it
    `RESULTS.nonfinite_state`. A failed solution's derivatives with
    respect to `differentiated` (the solve's inputs) are NaN
    (`_poison_failed`).
    """
    if nonfinite_start is not None:
        result = RESULTS.where(
            nonfinite_start, RESULTS.nonfinite_state, solution.result
        )
        solution = eqx.tree_at(lambda s: s.result, solution, result)
    if invalid_parameters is not None:
        solution = _flag_invalid_parameters(solution, invalid_parameters)
    solution = _poison_failed(solution, differentiated)
    if throw:
        failed = solution.result != RESULTS.successful
        # `simulate` raised already, naming the parameter; a second error would
        # replace that message (XLA runs on after a failed callback, and
        # `eqx.filter_jit` shows the last one).
        failed = failed & (solution.result != RESULTS.invalid_parameters)
        solution = solution.result.error_if(solution, failed)
    return solution
