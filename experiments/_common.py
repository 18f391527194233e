"""Helpers shared by the experiment scripts: settings, output folder, reports.

Every experiment ``experiments/<name>.py`` reads its settings from
``configs/experiments/<name>.toml`` (the only source of settings: a missing file
or key is an error naming both), writes ``results/<name>/figure.png`` and
``results/<name>/summary.json``, and prints its tables (with the load average)
and its checked claims (``PASS``/``FAIL`` with the measured number).
"""

import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "configs" / "experiments"


def enable_float64() -> None:
    """Experiments run in float64 (the switch path locates events to ~1e-10);
    call before building any array."""
    jax.config.update("jax_enable_x64", True)


class SettingsError(KeyError):
    """A setting the script needs is missing from its TOML file."""

    def __str__(self) -> str:
        return str(self.args[0])


class Settings(dict):
    """A TOML table whose missing keys raise `SettingsError` naming the file and
    the key (``file: missing setting 'models[3].simulate.max_steps'``); nested
    tables (also inside arrays) are `Settings` too."""

    def __init__(self, table: Mapping[str, Any], file: Path, where: str = ""):
        prefix = f"{where}." if where else ""
        super().__init__({k: _wrap(v, file, prefix + k) for k, v in table.items()})
        self.file = file
        self.where = where

    def __missing__(self, key):
        name = f"{self.where}.{key}" if self.where else key
        raise SettingsError(f"{self.file}: missing setting {name!r}")


def _wrap(value, file, where):
    if isinstance(value, Mapping):
        return Settings(value, file, where)
    if isinstance(value, list):
        return [_wrap(v, file, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def read_settings(path: Path) -> Settings:
    """The TOML file at `path` as `Settings`; a missing file is an error."""
    from jaxfric.io import read_toml

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"settings file {path} not found")
    return Settings(read_toml(path), path)


def load_settings(name: str) -> Settings:
    """``configs/experiments/<name>.toml``, or the path given as the first
    command-line argument, as `Settings`."""
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else CONFIGS / f"{name}.toml"
    print(f"settings: {path}")
    return read_settings(path)


def results_dir(name: str) -> Path:
    """``results/<name>/`` at the repository root, created."""
    path = ROOT / "results" / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_json(data: Any, path: Path) -> Path:
    """Write JSON (arrays to lists, non-finite floats to null)."""
    from jaxfric.io import write_json as _write

    return _write(data, path)


def format_table(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str, str]]
) -> str:
    """A Markdown table.

    Args:
        rows: one dict per row.
        columns: ``(key, header, format spec)`` per column, e.g.
            ``("error", "|x − x*|", ".2e")``; missing values print as ``—``.

    Returns:
        The table as text.
    """

    def cell(row, key, spec):
        value = row.get(key)
        if value is None:
            return "—"
        return format(value, spec) if spec else str(value)

    body = [[cell(r, k, s) for k, _, s in columns] for r in rows]
    headers = [h for _, h, _ in columns]
    widths = [
        max(len(h), *(len(b[i]) for b in body)) if body else len(h)
        for i, h in enumerate(headers)
    ]

    def line(cells):
        return (
            "| "
            + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True))
            + " |"
        )

    out = [line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out.extend(line(b) for b in body)
    return "\n".join(out)


def load_average() -> list[float]:
    """The 1-, 5- and 15-minute load averages, rounded to 0.01."""
    return [round(x, 2) for x in os.getloadavg()]


def print_table(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str, str]]
) -> str:
    """Print `format_table` and the load average under it (timings on a shared
    machine are read with it); returns the table."""
    table = format_table(rows, columns)
    print(table)
    print_load_average()
    return table


def print_load_average() -> None:
    """Print the load average (after a table of timings)."""
    load = " ".join(f"{x:.2f}" for x in load_average())
    print(f"load average (1, 5, 15 min): {load}")


def stick_phases(stuck) -> list[tuple[int, int]]:
    """``[(start, stop)]`` index ranges (stop exclusive) of the runs of True in
    the boolean sequence `stuck` (e.g. ``modes[:, k] == 0`` of a `Solution`)."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], np.asarray(stuck, int), [0]])))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))


def claim(ok, text: str, **data) -> dict[str, Any]:
    """One checked claim: ``PASS: <text>`` or ``FAIL: <text>``, where `text`
    states the measured number and its target; `data` (e.g. the number) goes
    into the JSON beside it. Print with `print_claims`."""
    return {"pass": bool(ok), "claim": f"{'PASS' if ok else 'FAIL'}: {text}", **data}


def parameter_claims(
    label: str, names, errors, stderr, target: float, spec: str = ".3f"
) -> list[dict]:
    """One claim per fitted parameter: its relative error within `target`.

    Args:
        label: the fit (start, noise level, ...).
        names: the parameters' names.
        errors: relative errors of the fitted values.
        stderr: relative standard errors (printed beside the error).
        target: the largest relative error that passes.
        spec: format of the errors, printed in percent.
    """
    return [
        claim(
            err <= target,
            f"{label}: {name} error {100 * err:{spec}} % (std err "
            f"{100 * se:{spec}} %) <= {100 * target:g} %",
        )
        for name, err, se in zip(names, errors, stderr, strict=True)
    ]


def print_claims(claims: Sequence[Mapping[str, Any]]) -> bool:
    """Print the claims' lines; returns whether all of them pass."""
    for c in claims:
        print(c["claim"])
    return all(c["pass"] for c in claims)


# --- Independent reference: an event-driven stick–slip loop with scipy -------


def exact_free(x0, ts, fc):
    """Positions and velocities of free Coulomb oscillators (unit mass and
    stiffness, level `fc`, released at rest from each of `x0`) at times `ts`,
    exact: half-periods of π about ±fc until |x| <= fc (Den Hartog 1931)."""
    x = np.empty((len(x0), len(ts)))
    v = np.empty_like(x)
    for i, start in enumerate(np.asarray(x0, dtype=float)):
        xk, tk = start, 0.0
        xi, vi = np.full(len(ts), np.nan), np.full(len(ts), np.nan)
        while True:
            after = ts >= tk
            if abs(xk) <= fc:  # stuck for good
                xi[after], vi[after] = xk, 0.0
                break
            c = np.sign(xk) * fc
            phase = ts[after] - tk
            xi[after] = c + (xk - c) * np.cos(phase)
            vi[after] = -(xk - c) * np.sin(phase)
            xk, tk = 2.0 * c - xk, tk + np.pi
            if tk > ts[-1]:
                break
        x[i], v[i] = xi, vi
    return x, v


def scipy_stick_slip(
    ts,
    *,
    t1: float,
    amplitude: float,
    omega: float,
    fc: float,
    fs: float | None = None,
    vs: float = 1.0,
    fv: float = 0.0,
    mass: float = 1.0,
    stiffness: float = 1.0,
    x0: float = 0.0,
    method: str = "RK45",
    rtol: float,
    atol: float,
    stick_max_step: float,
    slip_max_step: float = float("inf"),
):
    """``m ẍ + k x = A sin ωt − f`` from rest at ``x0``, written apart from
    jaxfric with `scipy.integrate.solve_ivp` and terminal events (Farhat's
    switch logic).

    Slip (mode ±1): ``f = ±g(ẋ) + fv ẋ``, ``g = fc + (fs − fc) exp(−(ẋ/vs)²)``
    (Stribeck; ``g = fc`` when `fs` is None), until ``mode·ẋ ↓ 0``. Stick (mode
    0): ``x`` held, ``ẋ = 0``, until the spring and input force reach the static
    level ``fs`` (breakaway); `stick_max_step` keeps the integrator from stepping
    over a breakaway.

    Returns:
        ``(x, ẋ, num_events)``: positions and velocities at `ts` (m, m/s) and
        the number of stick/slip switches.
    """
    from scipy.integrate import solve_ivp

    static = fc if fs is None else fs

    def net(t, x):
        return amplitude * np.sin(omega * t) - stiffness * x

    def slip_level(v):
        return fc if fs is None else fc + (fs - fc) * np.exp(-((v / vs) ** 2))

    def stick_or_slip(t, x):
        n = net(t, x)
        return 0 if abs(n) <= static else (1 if n > 0 else -1)

    ts = np.asarray(ts)
    t, x, v = 0.0, float(x0), 0.0
    mode = stick_or_slip(t, x)
    xs, vs_out = np.full(len(ts), np.nan), np.full(len(ts), np.nan)
    num_events = 0
    while t < t1:
        if mode == 0:

            def rhs(t, y):
                return (0.0, 0.0)

            def event(t, y):
                return static - abs(net(t, y[0]))

            max_step = stick_max_step
        else:

            def rhs(t, y, s=mode):
                return (y[1], (net(t, y[0]) - s * slip_level(y[1]) - fv * y[1]) / mass)

            def event(t, y, s=mode):
                return s * y[1]

            max_step = slip_max_step
        event.terminal, event.direction = True, -1
        todo = (ts >= t) & (ts <= t1)
        sol = solve_ivp(
            rhs,
            (t, t1),
            [x, v],
            method=method,
            rtol=rtol,
            atol=atol,
            events=event,
            max_step=max_step,
            t_eval=ts[todo],
        )
        n_out = np.size(sol.t)  # a list when no save time falls in the segment
        if n_out:
            idx = np.flatnonzero(todo)[:n_out]
            xs[idx], vs_out[idx] = sol.y[0], sol.y[1]
        if sol.status == 1:
            num_events += 1
            t = float(sol.t_events[0][0])
            x, v = (float(a) for a in sol.y_events[0][0])
            if mode == 0:
                mode = 1 if net(t, x) > 0 else -1
            else:
                v = 0.0
                mode = stick_or_slip(t, x)
        elif sol.status == 0:
            t = t1
        else:
            raise RuntimeError(sol.message)
    return xs, vs_out, num_events


# --- Robots: example-robot-data URDFs and Pinocchio comparisons ---------------


def example_robot_urdf(relative: str) -> str:
    """Path of a URDF shipped by PyPI ``example-robot-data``, e.g.
    ``"ur_description/urdf/ur5_robot.urdf"`` (relative to its ``robots/``)."""
    import importlib.metadata

    dist = importlib.metadata.distribution("example-robot-data")
    path = dist.locate_file(f"cmeel.prefix/share/example-robot-data/robots/{relative}")
    return str(path)


def pinocchio_configuration(model, q):
    """jaxfric joint positions ``q`` (rad, m), shape ``(dof,)`` -> the
    configuration vector of the Pinocchio `model` (continuous joints are stored
    as ``(cos q, sin q)`` there, other joints as ``q``)."""

    out = np.zeros(model.nq)
    for k, joint in enumerate(model.joints[1:]):
        if joint.nq == 2:
            out[joint.idx_q : joint.idx_q + 2] = np.cos(q[k]), np.sin(q[k])
        else:
            out[joint.idx_q] = q[k]
    return out


def random_robot_states(seed: int, num: int, n_dof: int):
    """Seeded random joint states for dynamics comparisons, each ``(num, n_dof)``:
    ``q ~ U(−π, π)`` rad, ``q̇ ~ N(0, 2²)`` rad/s, ``q̈ ~ N(0, 5²)`` rad/s² and
    ``τ ~ N(0, 10²)`` N·m, drawn in that order. Returns ``(q, q̇, q̈, τ)``."""

    rng = np.random.default_rng(seed)
    return (
        rng.uniform(-np.pi, np.pi, (num, n_dof)),
        rng.normal(0.0, 2.0, (num, n_dof)),
        rng.normal(0.0, 5.0, (num, n_dof)),
        rng.normal(0.0, 10.0, (num, n_dof)),
    )


def tree_energy(system, q, qd):
    """Kinetic plus gravitational energy of a `RigidBodyTree` at ``(q, q̇)``,
    J: ``½ q̇ᵀ M q̇ − g·Σ_k (m_k p_k + R_k c_k)`` (``c_k`` the first moment
    of link ``k`` in its frame; massless links add nothing)."""
    import jax.numpy as jnp

    model = system.model
    rot, pos = system.forward_kinematics(q)
    first = model.mass[:, None] * pos + jnp.einsum(
        "kij,kj->ki", rot, model.first_moment
    )
    return 0.5 * qd @ system.mass_matrix(q) @ qd - model.gravity @ jnp.sum(first, 0)


def friction_energy_balance(sol, system, force=None) -> tuple[float, float]:
    """``(friction work, energy lost)`` of a `RigidBodyTree` or `ClosedChain`
    solution, J: the work ``∫ Σ f_k s_k dt`` of every friction row (``s = J
    q̇``) by Simpson's rule on the saved times, piecewise between events (where
    the friction power has kinks, and jumps where a load-dependent level
    changes with another element's mode), and the drop of `tree_energy` (of
    the assembled tree, for a closed chain) from the first saved state to the
    last, plus the work of the applied force `force(t, q, q̇)` where given.

    The save interval holding an event is integrated from both sides: the
    quadratic through the three saves before it up to the event, the one
    through the three after it from there (Simpson across a jump errs by up
    to half the jump times the interval: 2.9e-4 J at the four-bar rocker's
    dead point with 1.25 ms saves)."""
    from scipy.integrate import simpson

    ts = np.asarray(sol.ts)
    events = np.asarray(sol.event_times)
    events = events[np.isfinite(events) & (events > ts[0]) & (events < ts[-1])]
    # Save k is the first at or after its event (saved after the switch);
    # 0 < k < len(ts) as ts[0] < event < ts[-1].
    cuts = np.unique(np.searchsorted(ts, events))

    def extrapolated(power, index, lo, hi):
        # ∫ from lo to hi of the quadratic through the saves `index` (in time
        # from lo: absolute times cost the fit digits).
        x = ts[index] - lo
        poly = np.polyint(np.polyfit(x, power[index], len(index) - 1))
        return np.polyval(poly, hi - lo) - np.polyval(poly, 0.0)

    def integral(power):
        work, bounds = 0.0, np.r_[0, cuts, len(ts)]
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            if hi - lo >= 2:
                work += simpson(power[lo:hi], x=ts[lo:hi])
        for j, k in enumerate(cuts):
            inside = events[(events > ts[k - 1]) & (events <= ts[k])]
            # Saves of this interval's neighbours only, not across another
            # event.
            before = np.arange(max(k - 3, bounds[j]), k)
            after = np.arange(k, min(k + 3, bounds[j + 2]))
            work += extrapolated(power, before, ts[k - 1], inside[0])
            work += extrapolated(power, after, inside[-1], ts[k])
            # Several events in one interval: the short middle by the
            # trapezoid of its ends (first order; such intervals are rare).
            work += 0.5 * (power[k - 1] + power[k]) * (inside[-1] - inside[0])
        return work

    slip = jax.vmap(system.slip_velocity)(sol.q, sol.qd)
    work = integral(np.sum(np.asarray(sol.friction) * np.asarray(slip), axis=1))

    def energy(q, qd):
        if not hasattr(system, "loops"):
            return tree_energy(system, q, qd)
        q_tree = system.assemble(q)
        return tree_energy(system.tree, q_tree, system.velocity_map(q_tree) @ qd)

    e = jax.vmap(energy)(sol.q, sol.qd)
    lost = float(e[0] - e[-1])
    if force is not None:
        applied = jax.vmap(force)(sol.ts, sol.q, sol.qd)
        lost += integral(np.sum(np.asarray(applied) * np.asarray(sol.qd), axis=1))
    return float(work), lost


def timed(fn, args, repeats):
    """``(first call s, best of `repeats` warm calls s, output)``: the first
    call compiles (and runs once)."""
    return timed_alternating([(fn, args)], repeats)[0]


def timed_alternating(calls, repeats):
    """`timed` of several ``(fn, args)``, their warm calls taken in turn
    (``a b a b …``), so that a slow spell of a shared machine falls on all of
    them alike: a list of ``(first call s, best of `repeats` s, output)``."""
    firsts, outs = [], []
    for fn, args in calls:
        start = time.perf_counter()
        outs.append(jax.block_until_ready(fn(*args)))
        firsts.append(time.perf_counter() - start)
    bests = [float("inf")] * len(calls)
    for _ in range(repeats):
        for k, (fn, args) in enumerate(calls):
            start = time.perf_counter()
            outs[k] = jax.block_until_ready(fn(*args))
            bests[k] = min(bests[k], time.perf_counter() - start)
    return list(zip(firsts, bests, outs, strict=True))


def best_time(fn, args, repeats):
    """``(best wall time of `repeats` warm calls, s; the output)``, after one
    call that compiles."""
    _, best, out = timed(fn, args, repeats)
    return best, out


def mujoco_rollout(model, starts, controls, steps, threads):
    """``(wall s, states)`` of `mujoco.rollout` from each start ``(qpos,
    qvel)`` with open-loop `controls` (members, steps, actuators; `None` for a
    model without actuators). `states`: (members, steps, full physics state)."""
    import mujoco
    from mujoco import rollout

    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    data = mujoco.MjData(model)
    init = []
    for qpos, qvel in starts:
        data.qpos[:], data.qvel[:] = qpos, qvel
        state = np.zeros(mujoco.mj_stateSize(model, spec))
        mujoco.mj_getState(model, data, state, spec)
        init.append(state)
    datas = [mujoco.MjData(model) for _ in range(threads)]
    with rollout.Rollout(nthread=0 if threads == 1 else threads) as runner:
        start = time.perf_counter()
        states, _ = runner.rollout(
            model,
            datas[0] if threads == 1 else datas,
            np.array(init),
            controls,
            nstep=steps,
            chunk_size=max(1, len(starts) // threads),
        )
        return time.perf_counter() - start, states
