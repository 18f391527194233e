"""`jaxfric.optimize`: gradients of the optimisation loss against central finite
differences through the exact switch path (breakaway and a final stick phase),
the analytic minimum-effort control of a frictionless double integrator, limits
respected by the final trajectory, no recompilation, the cubic-spline force
against scipy, and `jaxfric optimize` end to end with typer's CliRunner.

The double-integrator problem is built here from the same objects that the CLI
builds from its TOML (`parameter_selector`, `make_optimizer`), so the CLI test
reuses the compiled step instead of compiling it again.
"""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.interpolate import CubicSpline as ScipyCubicSpline
from typer.testing import CliRunner

import jaxfric as jf
import jaxfric.optimize as jo
from jaxfric.cli import EXIT_BAD_CONFIG, app
from jaxfric.io.optimize_config import make_optimizer, parameter_selector

# Gradient of the objective vs 5-point central differences (step 1e-3) of the
# same objective, relative to the largest entry (measured: 3e-8; the relu²
# penalties limit the stencil's accuracy).
GRAD_RTOL = 1e-6
# Objective at the optimum vs its closed form (the trapezoidal effort on 1001
# saved times adds ~2e-5; the optimiser stops within ~1e-5).
OPTIMUM_TOL = 1e-3
# Knot torques vs the closed-form affine control a + b t (measured: 3e-4; the
# quadrature and the solver tolerance move the discrete optimum slightly).
CONTROL_TOL = 2e-3
# A velocity limit enforced by a penalty of weight 1e5 is exceeded by at most
# this much (m/s) at the optimum, where the penalty's gradient balances the
# effort's (measured: 6e-3 at weight 1e5, 2.4e-2 at 1e4, 6.7e-2 at 1e3).
VELOCITY_PENALTY_TOL = 1e-2
# CubicSpline vs scipy's natural cubic spline.
SPLINE_TOL = 1e-12

# Every XLA compilation, to check that nothing is compiled twice.
_COMPILES = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, duration, **kw: (
        _COMPILES.append(event)
        if event == "/jax/core/compile/backend_compile_duration"
        else None
    )
)

# --- the double integrator: x'' = u, rest to rest from 0 to D in time T ---------
#
# Penalised minimum effort  J(u) = ∫u² dt + w (x(T) − D)² + w v(T)²  has the
# minimiser u(t) = λ1 (T − t) + λ2 (affine, in the span of the terminal-state
# kernels g(t) = (T − t, 1)) with (W + I/w) λ = (D, 0), W = ∫ g gᵀ dt, and
# J* = λᵀ W λ + |λ|²/w (as w → ∞: u = 6D/T² − 12Dt/T³, J = 12 D²/T³).
T_DI, D_DI, W_DI = 1.0, 1.0, 1e3
KNOTS = jnp.linspace(0.0, T_DI, 5)
_GRAMIAN = np.array([[T_DI**3 / 3, T_DI**2 / 2], [T_DI**2 / 2, T_DI]])
_LAMBDA = np.linalg.solve(_GRAMIAN + np.eye(2) / W_DI, [D_DI, 0.0])
J_STAR = float(_LAMBDA @ _GRAMIAN @ _LAMBDA + _LAMBDA @ _LAMBDA / W_DI)
U_STAR = _LAMBDA[0] * (T_DI - np.asarray(KNOTS)) + _LAMBDA[1]

MASS = jf.systems.Oscillator(mass=1.0, stiffness=0.0)
# Zero friction through the smooth path: Regularized Coulomb with fc = 0.
FRICTIONLESS = jf.Regularized(jf.Coulomb(fc=0.0), eps=1e-3)
_VALUES = parameter_selector(("values",))
# L-BFGS with unit steps and no line search (one gradient per step: half the
# compilation of the zoom line search); it converges on this quadratic.
_LBFGS = make_optimizer("lbfgs", 1.0, {"linesearch": "none"}, "test")
_POINT_TO_POINT = jo.PointToPoint(
    target_q=D_DI, position_weight=W_DI, velocity_weight=W_DI
)


def _double_integrator(velocity_limit, velocity_weight):
    return jo.Problem(
        MASS,
        FRICTIONLESS,
        jf.forces.Tabulated(KNOTS, jnp.zeros(5)),
        _POINT_TO_POINT,
        where=_VALUES,
        t1=T_DI,
        num_save=1001,
        limits=(jo.VelocityLimit(velocity_limit, velocity_weight),),
        simulate_options=jf.SimulateOptions(rtol=1e-10, atol=1e-12),
    )


# Two starts: zero torque and an arbitrary profile.
STARTS = jnp.array([[0.0, 0.0, 0.0, 0.0, 0.0], [1.0, 2.0, -1.0, 0.0, 3.0]])


@pytest.fixture(scope="module")
def optimum():
    # Inactive limits (|v| <= 1.5 at the optimum; |u| <= 6): the known optimum.
    result = jo.optimize(
        _double_integrator(10.0, 1.0),
        _LBFGS,
        STARTS,
        max_steps=40,
        batched=True,
        project=jo.Box(-100.0, 100.0),
    )
    return result


def test_minimum_effort_double_integrator(optimum):
    result = optimum
    assert result.success
    assert abs(float(result.value) - J_STAR) < OPTIMUM_TOL
    np.testing.assert_allclose(np.asarray(result.params), U_STAR, atol=CONTROL_TOL)
    # Best kept: the best member's best iterate, no better iterate anywhere.
    assert result.best_index == int(np.argmin(result.member_values))
    assert float(result.value) <= np.nanmin(result.value_history) + 1e-12
    assert result.value_history.shape == (2, 41)
    # The objective starts at the penalty of not moving: w·D² (zero effort).
    assert result.value_history[0, 0] == pytest.approx(W_DI * D_DI**2, rel=1e-12)


def test_no_recompilation_across_iterations_and_calls(optimum):
    # The first call compiled its step once (iterations reuse it); a second call
    # with other starts, another step count and other limit values compiles
    # nothing at all.
    problem, starts = _double_integrator(5.0, 2.0), STARTS + 0.5
    box = jo.Box(-9.0, 9.0)
    before = len(_COMPILES)
    jo.optimize(problem, _LBFGS, starts, max_steps=3, batched=True, project=box)
    assert len(_COMPILES) == before


def test_limits_respected_by_final_trajectory(optimum):
    # Torque |u| <= 5 by projection of the knots (the unconstrained optimum
    # needs 6), speed |v| <= 1.45 by a penalty (the optimum reaches 1.5).
    torque_bound, speed = 5.0, 1.45
    # L-BFGS with unit steps bounces on the stiff relu² penalty; 200 steps reach
    # the optimum from both starts (80 did before `simulate` stepped onto the
    # knots, and then only from one: the bouncing depends on the last digits).
    result = jo.optimize(
        _double_integrator(speed, 1e5),
        _LBFGS,
        STARTS,
        max_steps=200,
        batched=True,
        project=jo.Box(-torque_bound, torque_bound),
    )
    assert result.success
    tau = np.asarray(jo.applied_force(result.solution, result.force))
    assert np.max(np.abs(np.asarray(result.params))) <= torque_bound
    assert np.max(np.abs(tau)) <= torque_bound
    # The bound is active: the optimiser pushed against it.
    assert np.max(np.abs(tau)) == pytest.approx(torque_bound, abs=1e-9)
    qd = np.asarray(result.solution.qd)
    assert np.max(np.abs(qd)) <= speed + VELOCITY_PENALTY_TOL
    assert float(result.violation) <= VELOCITY_PENALTY_TOL
    # The limits cost effort and terminal accuracy, but the motion still goes
    # most of the way (the start, u = 0, has objective w·D² = 1000).
    assert abs(float(result.solution.q[-1, 0]) - D_DI) < 0.1
    assert float(result.value) < 2 * J_STAR
    print(
        f"limits: q(T)={float(result.solution.q[-1, 0]):.5f}, "
        f"v(T)={float(result.solution.qd[-1, 0]):.2e}, objective "
        f"{float(result.value):.4f}, max|v|={np.max(np.abs(qd)):.5f}, "
        f"max|u|={np.max(np.abs(tau)):.5f}"
    )


def test_cubic_spline_matches_scipy():
    # scipy.interpolate.CubicSpline(bc_type="natural"), end values held outside.
    ts = np.array([0.0, 0.3, 0.7, 1.2, 2.0])
    ys = np.array([[0.5, 1.0], [3.0, 0.0], [2.0, 1.0], [-0.3, 2.0], [0.0, 0.0]])
    spline = jf.forces.CubicSpline(ts, ys)
    tt = np.linspace(-0.5, 2.5, 301)
    got = jax.jit(jax.vmap(lambda t: spline(t, jnp.zeros(2), jnp.zeros(2))))(tt)
    ref = ScipyCubicSpline(ts, ys, bc_type="natural")(np.clip(tt, 0.0, 2.0))
    np.testing.assert_allclose(np.asarray(got), ref, rtol=0, atol=SPLINE_TOL)
    with pytest.raises(ValueError, match="strictly increasing"):
        jf.forces.CubicSpline([0.0, 1.0, 1.0], [0.0, 1.0, 2.0])


# --- gradient through the exact switch path -------------------------------------
#
# A unit mass on the ground with Stribeck friction (fs = 1.5 > fc = 1), pushed by
# a spline torque: stuck until the torque reaches fs (breakaway), slides,
# decelerates and sticks again before T (velocity exactly 0 at T).
T_SW = 2.0
KNOTS_SW = jnp.linspace(0.0, T_SW, 6)
TORQUE_SW = jnp.array([0.5, 3.0, 2.0, 0.0, -0.3, 0.0])
SWITCH_PROBLEM = jo.Problem(
    MASS,
    jf.Stribeck(fc=1.0, fs=1.5, vs=0.1, fv=0.1),
    jf.forces.CubicSpline(KNOTS_SW, TORQUE_SW),
    jo.PointToPoint(1.0, 0.0, position_weight=10.0, velocity_weight=10.0),
    where=_VALUES,
    t1=T_SW,
    num_save=101,
    limits=(jo.TorqueLimit(2.5, 10.0), jo.VelocityLimit(1.0, 10.0)),
    simulate_options=jf.SimulateOptions(max_events=8),
)


def _central_differences(fn, x, h):
    grads = []
    for i in range(x.shape[0]):
        e = jnp.zeros_like(x).at[i].set(h)
        grads.append(
            (-fn(x + 2 * e) + 8 * fn(x + e) - 8 * fn(x - e) + fn(x - 2 * e)) / (12 * h)
        )
    return np.array(grads)


def test_gradient_through_stick_slip_matches_central_differences():
    _, grad, aux, sol = jo.value_and_grad(SWITCH_PROBLEM, TORQUE_SW)
    assert bool(aux["success"])
    # stuck -> breakaway -> slip -> stuck at the end, velocity exactly zero.
    modes = np.asarray(sol.modes[:, 0])
    assert modes[0] == 0 and modes[-1] == 0 and np.any(modes == 1)
    assert int(sol.stats["num_events"]) == 2
    assert float(sol.qd[-1, 0]) == 0.0
    # Both penalties are active (their gradients are part of the check).
    assert float(aux["penalty"]) > 0.0

    def objective(x):  # the same compiled function, value only
        return float(jo.value_and_grad(SWITCH_PROBLEM, x)[0])

    fd = _central_differences(objective, TORQUE_SW, 1e-3)
    grad = np.asarray(grad)
    np.testing.assert_allclose(grad, fd, rtol=0, atol=GRAD_RTOL * np.max(np.abs(fd)))


# The same motion under a piecewise-linear `Tabulated` torque: the breakaway at
# t = 0.16 s lies on the segment between the first two knots, so moving them
# moves it. `simulate` steps onto the knots (`Tabulated.jump_times()`); with
# `jump_ts=()` (no step clipping) the steps straddle the kinks and the gradient
# was off by 1.4e-4 relative (measured; 6e-9 with the clipping). The torque
# limit (2.43) is crossed between saved times: a relu² kink exactly on a saved
# sample would limit the central differences to O(h) instead.
TABULATED_PROBLEM = jo.Problem(
    MASS,
    jf.Stribeck(fc=1.0, fs=1.5, vs=0.1, fv=0.1),
    jf.forces.Tabulated(KNOTS_SW, TORQUE_SW),
    jo.PointToPoint(1.0, 0.0, position_weight=10.0, velocity_weight=10.0),
    where=_VALUES,
    t1=T_SW,
    num_save=101,
    limits=(jo.TorqueLimit(2.43, 10.0), jo.VelocityLimit(1.0, 10.0)),
    simulate_options=jf.SimulateOptions(max_events=8),
)


def test_gradient_through_tabulated_breakaway_matches_central_differences():
    _, grad, aux, sol = jo.value_and_grad(TABULATED_PROBLEM, TORQUE_SW)
    assert bool(aux["success"]) and float(aux["penalty"]) > 0.0
    # Breakaway inside the first knot interval, then a final stick.
    events = np.asarray(sol.event_times)
    assert int(sol.stats["num_events"]) == 2
    assert float(KNOTS_SW[0]) < events[0] < float(KNOTS_SW[1])
    assert float(sol.qd[-1, 0]) == 0.0

    def objective(x):
        return float(jo.value_and_grad(TABULATED_PROBLEM, x)[0])

    fd = _central_differences(objective, TORQUE_SW, 1e-3)
    grad = np.asarray(grad)
    np.testing.assert_allclose(grad, fd, rtol=0, atol=GRAD_RTOL * np.max(np.abs(fd)))


# --- CLI --------------------------------------------------------------------------

# The double-integrator problem above, as a configuration file.
_CONFIG = """
[system]
type = "Oscillator"
mass = 1.0
stiffness = 0.0

[friction]
type = "Regularized"
eps = 1e-3

[friction.law]
type = "Coulomb"
fc = 0.0

[force]
type = "Tabulated"
ts = [0.0, 0.25, 0.5, 0.75, 1.0]
values = [0.0, 0.0, 0.0, 0.0, 0.0]

[simulate]
t1 = 1.0
num_save = 1001
rtol = 1e-10
atol = 1e-12

[objective]
type = "PointToPoint"
target_q = 1.0
position_weight = 1e3
velocity_weight = 1e3

[[limits]]
type = "VelocityLimit"
limit = 10.0
weight = 1.0

[optimize]
parameters = ["values"]
optimizer = "lbfgs"
learning_rate = 1.0
max_steps = 40
num_starts = 2
init_noise = 1.0
bounds = [-100.0, 100.0]

[optimize.optimizer_options]
linesearch = "none"
"""

runner = CliRunner()


def test_cli_optimize_writes_report(tmp_path):
    config = tmp_path / "p2p.toml"
    config.write_text(_CONFIG)
    out = tmp_path / "out"
    result = runner.invoke(app, ["optimize", str(config), "--out", str(out)])
    assert result.exit_code == 0, result.output
    names = {
        "optimize.json",
        "history.png",
        "motion.png",
        "trajectory.npz",
        "summary.json",
    }
    assert names <= {p.name for p in out.iterdir()}
    assert (out / "history.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = json.loads((out / "optimize.json").read_text())
    history = np.array(report["history"], dtype=float)
    assert history.shape == (2, 41)
    assert report["success"] and report["num_starts"] == 2
    # The known optimum, from the report.
    assert abs(report["objective"] - J_STAR) < OPTIMUM_TOL
    np.testing.assert_allclose(report["params"][0], U_STAR, atol=CONTROL_TOL)
    assert report["objective"] == pytest.approx(np.nanmin(history), rel=1e-12)
    # The saved trajectory is the reported best one.
    data = np.load(out / "trajectory.npz")
    np.testing.assert_allclose(data["q"][-1], report["final"]["q"], rtol=0, atol=0)


def test_cli_optimize_bad_key(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text(_CONFIG.replace("num_starts = 2", "num_start = 2"))
    result = runner.invoke(app, ["optimize", str(config)])
    assert result.exit_code == EXIT_BAD_CONFIG
    assert "[optimize] unknown key 'num_start'" in result.output


def test_initial_state_from_the_force():
    # q0, qd0 as functions of the force (the first two knot torques, for the
    # test): a frictionless unit mass gives x(T) = x0 + v0 T + ∫ (T − t) u dt,
    # so d x(T)/d values_i = [i = 0] + T [i = 1] + ∫ (T − t) φ_i dt with φ_i the
    # hat function of knot i (integrated here on a fine grid).
    problem = jo.Problem(
        MASS,
        FRICTIONLESS,
        jf.forces.Tabulated(KNOTS, jnp.zeros(5)),
        lambda sol, force: sol.q[-1, 0],
        where=_VALUES,
        q0=lambda f: f.values[0],
        qd0=lambda f: f.values[1],
        t1=T_DI,
        num_save=11,
        simulate_options=jf.SimulateOptions(rtol=1e-10, atol=1e-12),
    )
    values = jnp.array([0.5, -2.0, 1.0, 0.0, 0.3])
    q0, qd0 = problem.initial_state(problem.build(values))
    assert float(q0) == 0.5 and float(qd0) == -2.0
    _, grad, _, sol = jo.value_and_grad(problem, values)
    assert float(sol.q[0, 0]) == 0.5 and float(sol.qd[0, 0]) == -2.0
    t = np.linspace(0.0, T_DI, 200_001)
    knots = np.asarray(KNOTS)
    expected = np.array(
        [np.trapezoid((T_DI - t) * np.interp(t, knots, e), t) for e in np.eye(5)]
    )
    expected[:2] += [1.0, T_DI]
    np.testing.assert_allclose(np.asarray(grad), expected, rtol=0, atol=1e-8)


def test_invalid_arguments_name_the_parameter():
    with pytest.raises(ValueError, match="limit"):
        jo.TorqueLimit(-1.0)
    with pytest.raises(ValueError, match="weight"):
        jo.VelocityLimit(1.0, weight=-1.0)
    with pytest.raises(ValueError, match="upper"):
        jo.Box(1.0, -1.0)
    # The options are one typed object: an unknown name fails as in `simulate`.
    with pytest.raises(TypeError, match="rtoll"):
        jf.SimulateOptions(rtoll=1e-8)
    with pytest.raises(ValueError, match="max_steps"):
        jo.optimize(_double_integrator(10.0, 1.0), _LBFGS, max_steps=-1)
