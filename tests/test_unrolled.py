"""`UnrolledERK`: diffrax's explicit Runge–Kutta methods with the stages written
out give diffrax's steps (values, error estimates, dense output, derivatives),
under `vmap` too; `StepSaves` gives diffrax's saved values."""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _joint_rotor import _rotor
from jax.extend import core as jax_core

import jaxfric as jf
from jaxfric.simulate._saves import StepSaves, saved_states
from jaxfric.simulate._unrolled import (
    Tsit5Dense,
    UnrolledERK,
    for_backend,
    stages_written_out,
)


def _vector_field(t, y, args):
    # A forced Duffing oscillator: nonlinear, time-dependent, a pytree state.
    q, qd = y
    return qd, args[0] * jnp.sin(args[1] * t) - q - 0.3 * q**3 - 0.1 * qd


_Y0 = (jnp.array([0.5]), jnp.array([0.0]))
_ARGS = jnp.array([1.3, 2.1])
_SOLVERS = [diffrax.Tsit5(), diffrax.Dopri5(), diffrax.Dopri8(), diffrax.Bosh3()]
_SOLVERS += [diffrax.Heun()]  # not first-same-as-last


def _solve(solver, args, controller, ts=None):
    return diffrax.diffeqsolve(
        diffrax.ODETerm(_vector_field),
        solver,
        0.0,
        5.0,
        0.05,
        _Y0,
        args=args,
        saveat=diffrax.SaveAt(t1=True) if ts is None else diffrax.SaveAt(ts=ts),
        stepsize_controller=controller,
        max_steps=100_000,
    )


@pytest.mark.parametrize("solver", _SOLVERS, ids=lambda s: type(s).__name__)
def test_unrolled_step_matches_diffrax(solver):
    term = diffrax.ODETerm(_vector_field)
    steps = []
    for s in (solver, UnrolledERK(solver)):
        state = s.init(term, 0.3, 0.5, _Y0, _ARGS)
        # Two steps: the second reuses the first's last stage (FSAL).
        y1, _, _, state, _ = s.step(term, 0.3, 0.5, _Y0, _ARGS, state, False)
        y2, err, dense, _, result = s.step(term, 0.5, 0.7, y1, _ARGS, state, False)
        assert result == diffrax.RESULTS.successful
        mid = s.interpolation_cls(t0=0.5, t1=0.7, **dense).evaluate(0.63)
        steps.append((y2, err, mid))
    (y_ref, err_ref, mid_ref), (y_out, err_out, mid_out) = steps
    for a, b in zip(y_out + mid_out, y_ref + mid_ref, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-14, atol=1e-15)
    # The error estimate is a difference of O(1) sums: equal to their rounding.
    for a, b in zip(err_out, err_ref, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-15)


@pytest.mark.parametrize(
    "solver", [diffrax.Tsit5(), diffrax.Dopri8()], ids=lambda s: type(s).__name__
)
def test_unrolled_solve_matches_diffrax(solver):
    ts = jnp.linspace(0.05, 4.95, 7)  # between steps: the dense output
    fixed = diffrax.ConstantStepSize()
    ref = _solve(solver, _ARGS, fixed, ts)
    out = _solve(UnrolledERK(solver), _ARGS, fixed, ts)
    for a, b in zip(out.ys, ref.ys, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-13)
    # Adaptive: step sizes follow the error estimates, equal to rounding, so
    # the solutions agree to the tolerance.
    pid = diffrax.PIDController(rtol=1e-8, atol=1e-10)
    ref = _solve(solver, _ARGS, pid, ts)
    out = _solve(UnrolledERK(solver), _ARGS, pid, ts)
    assert abs(int(out.stats["num_steps"]) - int(ref.stats["num_steps"])) <= 1
    for a, b in zip(out.ys, ref.ys, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-7)


def test_tsit5_dense_output_is_diffraxs_written_out():
    # The wrapped solvers' dense output for Tsit5 (`Tsit5Dense`): diffrax's
    # weights, the stage sum written out. Equal to rounding at points across
    # the step, in its increment form, for a step of zero length, in its
    # derivative with respect to the time, and under `vmap`.
    assert UnrolledERK(diffrax.Tsit5()).interpolation_cls is Tsit5Dense
    assert UnrolledERK(diffrax.Dopri5()).interpolation_cls is (
        diffrax.Dopri5.interpolation_cls
    )
    rng = np.random.default_rng(3)
    y0 = (jnp.asarray(rng.normal(size=2)), jnp.asarray(rng.normal(size=(2, 3))))
    y1 = jax.tree.map(jnp.zeros_like, y0)  # unused by both
    k = jax.tree.map(lambda y: jnp.asarray(rng.normal(size=(7, *y.shape))), y0)
    kinds = (diffrax.Tsit5.interpolation_cls, Tsit5Dense)

    def both(t0, t1, k, *at):
        return [cls(t0=t0, t1=t1, y0=y0, y1=y1, k=k).evaluate(*at) for cls in kinds]

    def close(pair):
        # Values and time derivatives of O(1–100): a few ulps apart (the sums
        # are added in another order than diffrax's).
        for a, b in zip(*(jax.tree.leaves(v) for v in pair), strict=True):
            np.testing.assert_allclose(
                np.asarray(b), np.asarray(a), rtol=1e-13, atol=1e-14
            )

    for t in (0.2, 0.2 + 1e-9, 0.31, 0.45, 0.5):
        close(both(0.2, 0.5, k, t))
    # (diffrax's own increment form does not take a tuple state.)
    at_end, at_start = both(0.2, 0.5, k, 0.4)[0], both(0.2, 0.5, k, 0.25)[0]
    increment = Tsit5Dense(t0=0.2, t1=0.5, y0=y0, y1=y1, k=k).evaluate(0.25, 0.4)
    close([jax.tree.map(jnp.subtract, at_end, at_start), increment])
    close(both(0.3, 0.3, k, 0.3))  # zero length: y0
    close(jax.vmap(lambda t: both(0.2, 0.5, k, t))(jnp.linspace(0.2, 0.5, 5)))
    # The derivative in the time (an event time's derivative goes through it).
    t, dt = jnp.asarray(0.37), jnp.asarray(1.0)
    close(
        [
            jax.jvp(lambda t, c=c: both(0.2, 0.5, k, t)[c], (t,), (dt,))[1]
            for c in (0, 1)
        ]
    )


def test_step_saves_match_diffraxs_save_loop():
    # `StepSaves` writes the save times from each accepted step's dense output
    # in one vectorised pass: the values of diffrax's `SaveAt(ts=...)` loop on
    # the same adaptive solve (rejected steps included: the controller is
    # tight), times on step boundaries, at the start and at the end, a time at
    # a jump (diffrax steps from just before it to just after it), under
    # `vmap`, and their derivatives (reverse mode). Times the solve did not
    # reach stay NaN.
    ts = jnp.concatenate([jnp.linspace(0.0, 5.0, 23), jnp.array([5.0, 7.0])])
    controller = diffrax.ClipStepSizeController(
        diffrax.PIDController(rtol=1e-9, atol=1e-9), jump_ts=ts[7:8]
    )

    def both(args):
        diffrax_saves = _solve(UnrolledERK(diffrax.Tsit5()), args, controller, ts[:-1])
        stepper = StepSaves(UnrolledERK(diffrax.Tsit5()), lambda _: ts)
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(_vector_field),
            stepper,
            0.0,
            5.0,
            0.05,
            _Y0,
            args=args,
            saveat=diffrax.SaveAt(t1=True, solver_state=True),
            stepsize_controller=controller,
            max_steps=100_000,
        )
        return diffrax_saves.ys, saved_states(sol.solver_state)

    reference, step_saves = jax.jit(both)(_ARGS)
    stats = _solve(UnrolledERK(diffrax.Tsit5()), _ARGS, controller).stats
    assert int(stats["num_rejected_steps"]) > 0
    for ref, got in zip(reference, step_saves, strict=True):
        np.testing.assert_allclose(
            np.asarray(got[:-1]), np.asarray(ref), rtol=1e-13, atol=1e-14
        )
        assert np.all(np.isnan(np.asarray(got[-1])))
    batch = jnp.stack([_ARGS, _ARGS * 1.1])
    batched = jax.jit(jax.vmap(both))(batch)
    for ref, got in zip(*batched, strict=True):
        np.testing.assert_allclose(
            np.asarray(got[:, :-1]), np.asarray(ref), rtol=1e-13, atol=1e-14
        )

    # Derivatives of the saved positions with respect to the forcing.
    jacobians = jax.jit(jax.jacrev(lambda args: [y[0][:23] for y in both(args)]))
    ref, got = jacobians(_ARGS)
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-9, atol=1e-12)
    assert np.all(np.abs(np.asarray(ref)[1:]) > 0)


def test_unrolled_gradient_and_vmap_match_diffrax():
    def final(solver, args):
        return _solve(solver, args, diffrax.ConstantStepSize()).ys[0][-1, 0]

    unrolled = UnrolledERK(diffrax.Tsit5())
    ref = jax.grad(lambda a: final(diffrax.Tsit5(), a))(_ARGS)
    out = jax.grad(lambda a: final(unrolled, a))(_ARGS)
    np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=1e-11)
    batch = jnp.stack([_ARGS, _ARGS * 1.1, _ARGS * 0.7])
    reference = jax.jit(lambda a: final(diffrax.Tsit5(), a))
    looped = [reference(a) for a in batch]
    vmapped = jax.vmap(lambda a: final(unrolled, a))(batch)
    np.testing.assert_allclose(np.asarray(vmapped), np.asarray(looped), atol=1e-13)


def test_for_backend_wraps_explicit_rk_on_cpu_only(monkeypatch):
    if jax.default_backend() != "cpu":
        monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    reverse = diffrax.RecursiveCheckpointAdjoint()
    for solver in (diffrax.Tsit5(), diffrax.Dopri8()):
        wrapped = for_backend(solver, reverse)
        assert isinstance(wrapped, UnrolledERK) and wrapped.solver.scan_kind is None
    # The stage loop of the derivative follows the adjoint, as in diffrax.
    assert for_backend(diffrax.Tsit5(), diffrax.ForwardMode()).solver.scan_kind == "lax"
    direct = for_backend(diffrax.Tsit5(), diffrax.DirectAdjoint())
    assert direct.solver.scan_kind == "bounded"
    for solver in (diffrax.Kvaerno5(), diffrax.Euler()):
        assert for_backend(solver, reverse) is solver
    # Systems whose evaluation is costly keep diffrax's stage loop.
    assert type(for_backend(diffrax.Tsit5(), reverse, unroll=False)) is diffrax.Tsit5
    assert jf.systems.Oscillator.unrolled_stages
    assert not jf.systems.ClosedChain.unrolled_stages
    # So do load-dependent laws (a Newton loop in every evaluation) on any
    # system.
    rotor = _rotor()
    assert stages_written_out(rotor, jf.Coulomb(1.0))
    joint = jf.JointFriction(0.5, 0.3, loads=(jf.RevoluteLoad(),))
    assert not stages_written_out(rotor, joint)


def _calls(jaxpr, name: str) -> int:
    """How many equations call the jitted function `name`, at any depth (XLA
    inlines each: it is compiled once per call)."""
    return sum(
        (eqn.params.get("name") == name)
        + sum(_calls(sub, name) for sub in jax_core.jaxprs_in_params(eqn.params))
        for eqn in jaxpr.eqns
    )


def test_the_stick_solve_is_compiled_at_few_places():
    # The stick solve at fixed modes (`friction_at_modes`; for a load-dependent
    # law the load coupling's Newton loop) on the switch path: the vector field
    # (diffrax's stage loop), the event conditions (`DipGuard` at the start and
    # per step, the event's sign test, its root find), the event's old modes,
    # the mode choice's loop, the saved friction. Was 15 (the mode choice's
    # first levels, its loop and its check traced apart, the switch's second
    # solve, the root finder's and diffrax's first evaluations).
    rotor = _rotor()
    law = jf.JointFriction(0.5, 0.3, loads=(jf.RevoluteLoad(),))

    def run(law):
        return jf.simulate(
            rotor, law, jnp.zeros(1), jnp.ones(1), 0.5, num_save=3, throw=False
        )

    calls = _calls(jax.make_jaxpr(run)(law).jaxpr, "friction_at_modes")
    assert 1 <= calls <= 8


def test_gpu_solver_path_differentiates_in_forward_mode(monkeypatch):
    # On a GPU `for_backend` keeps diffrax's own Runge–Kutta step inside the
    # event guard, where diffrax's adjoint no longer sets its stage loop: with
    # the checkpointed default, `jax.jacfwd` with `ForwardMode` failed on an
    # H200. The GPU's choice, run here on the CPU, against central differences.
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    forward = diffrax.ForwardMode()
    solver = for_backend(diffrax.Tsit5(), forward)
    assert type(solver) is diffrax.Tsit5 and solver.scan_kind == "lax"
    assert for_backend(diffrax.Tsit5(), diffrax.DirectAdjoint()).scan_kind == "bounded"
    system = jf.systems.Oscillator(mass=1.0, stiffness=1.0)

    def final(p):
        force = jf.forces.Sine(p[2], 2.0)
        sol = jf.simulate(
            system, jf.Coulomb(p[0]), p[1], 0.0, 10.0, force=force, adjoint=forward
        )
        return jnp.stack([sol.q[-1, 0], sol.event_times[0]])

    params = jnp.array([1.0, 0.0, 1.5])
    jac = np.asarray(jax.jacfwd(final)(params))
    h = 1e-6
    central = [
        (final(params + h * e) - final(params - h * e)) / (2 * h) for e in np.eye(3)
    ]
    np.testing.assert_allclose(jac, np.stack(central, axis=1), rtol=1e-8, atol=1e-9)


def test_unrolled_forward_mode_matches_reverse_mode():
    def final(adjoint, args):
        solver = for_backend(diffrax.Tsit5(), adjoint)
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(_vector_field),
            solver,
            0.0,
            2.0,
            0.05,
            _Y0,
            args=args,
            stepsize_controller=diffrax.PIDController(rtol=1e-8, atol=1e-10),
            adjoint=adjoint,
        )
        return sol.ys[0][-1, 0]

    rev = jax.grad(lambda a: final(diffrax.RecursiveCheckpointAdjoint(), a))(_ARGS)
    fwd = jax.jacfwd(lambda a: final(diffrax.ForwardMode(), a))(_ARGS)
    np.testing.assert_allclose(np.asarray(fwd), np.asarray(rev), rtol=1e-11)


def test_gradient_through_recomputed_checkpoints_is_unchanged():
    # The checkpointed adjoint recomputes the states between its checkpoints
    # through the step's JVP rule; values that differ from the forward pass's by
    # rounding made the gradient with few checkpoints 1e-7 off (relative).
    def final(checkpoints, args):
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(_vector_field),
            UnrolledERK(diffrax.Tsit5()),
            0.0,
            5.0,
            0.05,
            _Y0,
            args=args,
            stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-12),
            adjoint=diffrax.RecursiveCheckpointAdjoint(checkpoints=checkpoints),
            max_steps=4096,
        )
        return sol.ys[0][-1, 0], sol.stats["num_steps"]

    # 4096 checkpoints: every state kept; 4: most recomputed.
    grads = {k: jax.grad(lambda a, k=k: final(k, a)[0])(_ARGS) for k in (4096, 4)}
    assert int(final(4096, _ARGS)[1]) > 100
    # (1.3e-7 apart when the rule returned diffrax's values.)
    np.testing.assert_allclose(
        np.asarray(grads[4]), np.asarray(grads[4096]), rtol=1e-13, atol=0
    )
