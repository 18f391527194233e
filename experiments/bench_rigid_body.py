"""Benchmark of issue 4: rigid-body dynamics against Pinocchio, and the Kikuuwe &
Yamamoto two-link arm as a batch against MuJoCo.

Part 1, dynamics: joint-space mass matrix (CRBA), inverse dynamics (RNEA) and
forward dynamics of UR5 and Panda (URDFs of PyPI ``example-robot-data`` loaded
with `jaxfric.io.load_urdf`), at one state (a jitted call,
Python dispatch included) and over a batch of states (``vmap``, one jitted call;
and ``lax.map`` over chunks of ``chunk`` states, vmapped inside), after
compilation; Pinocchio's Python bindings (``pin.crba``, ``pin.rnea``,
``pin.aba``) in a Python loop over the same states; jaxfric in every dtype of
``dtypes`` (float64, float32). Checked: the largest relative difference to
Pinocchio is below 1e-9 in float64 (issue 4; expected ~1e-14) and 1e-4 in
float32, on both paths (with jaxlib 0.10.2 on a CPU a float32 `vmap` of 4096
Panda states computes wrong values for members 1213 on: README, Precision); per
state, the better of ``vmap`` and chunks takes at most ``loop_ratio_target`` ×
Pinocchio's Python loop (a proxy: issue 19's 1.2× is against its C++,
``bench_pinocchio_cpp.py``). float32 rows compute in float32 (checked).

Part 2, stick–slip batch: the two-link arm of ``experiments/kikuuwe_two_link.py``
(horizontal plane, Coulomb 0.5 N·m in both joints, torques of Kikuuwe & Yamamoto
Eq. 28c–d) for a batch of torque profiles, each joint's profile multiplied by
its own factor drawn uniformly from ``scale_range``. The range is where every
member breaks away during the ramp (factor > 0.5/0.52) and stops before the
drift window (checked: with a joint factor above ~1.035 the arm keeps
stick–slipping past t = 5 s; ±10 % would also include members that never move
or never stop). jaxfric's exact switch path (``lax.map``: one member after the
other, the event loop of each member ends when that member ends; and ``vmap``)
and its Kikuuwe path (``vmap``) against MuJoCo (``mujoco.rollout``, one thread)
on a hinge arm with ``frictionloss`` 0.5 at ``dt = 1e-3``, default soft friction
constraint and tuned variants (``noslip_iterations``, ``solreffriction``).

Reported per variant: wall and CPU time per simulation (compilation excluded,
reported apart), integration steps and switch events per simulation, drift
(max − min of each angle over the drift window on the save grid, max and median
over the batch) and the largest difference of the final angles from the exact
switch path at rtol 1e-10. Checked (PASS/FAIL): the exact path succeeds on
every member, every member stops before the window, its drift is exactly 0;
the target: the per-simulation time of the exact path (the ``target`` variant)
below MuJoCo's at ``dt = 1e-3`` for every MuJoCo variant.

The machine is shared: ``uptime`` is printed at the start and end, and the 1-,
5- and 15-minute load averages are recorded with every timing. Writes
``results/bench_rigid_body/summary.json`` and ``figure.png`` and prints the
tables.

Run: ``python experiments/bench_rigid_body.py [SETTINGS.toml]``.
"""

import importlib.metadata
import os
import subprocess
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from _common import (
    claim,
    enable_float64,
    example_robot_urdf,
    format_table,
    load_average,
    load_settings,
    pinocchio_configuration,
    print_claims,
    random_robot_states,
    results_dir,
    write_json,
)

enable_float64()

import kikuuwe_two_link as two_link  # noqa: E402

import jaxfric as jf  # noqa: E402
from jaxfric.io import ConfigError, build, load_urdf, parse_simulate  # noqa: E402
from jaxfric.systems import rigid  # noqa: E402

NAME = "bench_rigid_body"

#: Agreement with Pinocchio required by issue 4 (max relative difference) in
#: float64; float32 rounding allows about 1e-6 (forward dynamics ~1e-6 times
#: the mass matrix's condition).
PINOCCHIO_TOLERANCE = {"float64": 1e-9, "float32": 1e-4}


_JAXFRIC_KEYS = (
    "name",
    "friction",
    "simulate",
    "batching",
    "chunk",
    "save",
    "reference",
    "target",
)
_MUJOCO_KEYS = ("name", "noslip_iterations", "solreffriction", "solimpfriction")


def _uptime() -> str:
    try:
        return subprocess.run(
            ["uptime"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"load average: {os.getloadavg()}"


def _timed(fn, repeats: int) -> tuple[float, float]:
    """Smallest wall time and smallest process CPU time (all threads) of
    `repeats` calls of ``fn()``, s."""
    wall, cpu = np.inf, np.inf
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    return wall, cpu


# ----------------------------------------------------------------------------
# Part 1: dynamics against Pinocchio


def _all_three(model, q, qd, qdd, tau):
    return (
        rigid.mass_matrix(model, q),
        rigid.inverse_dynamics(model, q, qd, qdd),
        rigid.forward_dynamics(model, q, qd, tau),
    )


# quantity -> (function of (model, q, qd, qdd, tau), Pinocchio function of
# (model, data, q, qd, qdd, tau)); the state arguments each one takes.
_QUANTITIES = {
    "mass_matrix": (
        lambda m, q, qd, qdd, tau: rigid.mass_matrix(m, q),
        lambda pin, m, d, q, qd, qdd, tau: pin.crba(m, d, q),
    ),
    "rnea": (
        lambda m, q, qd, qdd, tau: rigid.inverse_dynamics(m, q, qd, qdd),
        lambda pin, m, d, q, qd, qdd, tau: pin.rnea(m, d, q, qd, qdd),
    ),
    "forward_dynamics": (
        lambda m, q, qd, qdd, tau: rigid.forward_dynamics(m, q, qd, tau),
        lambda pin, m, d, q, qd, qdd, tau: pin.aba(m, d, q, qd, tau),
    ),
    # What a simulation evaluates at every state: M and h from one kinematics
    # pass (Pinocchio: crba, and its nonlinear effects, rnea at zero acceleration).
    "mass_and_bias": (
        lambda m, q, qd, qdd, tau: rigid.mass_matrix_and_bias(m, q, qd),
        lambda pin, m, d, q, qd, qdd, tau: (pin.crba(m, d, q), pin.nle(m, d, q, qd)),
    ),
    "all three": (
        _all_three,
        lambda pin, m, d, q, qd, qdd, tau: (
            pin.crba(m, d, q),
            pin.rnea(m, d, q, qd, qdd),
            pin.aba(m, d, q, qd, tau),
        ),
    ),
}


def _max_relative_difference(ours, ref, quantity) -> float:
    if quantity == "mass_and_bias":
        return max(
            _max_relative_difference(ours[0], [r[0] for r in ref], "mass_matrix"),
            _max_relative_difference(ours[1], [r[1] for r in ref], "bias"),
        )
    ours, ref = np.asarray(ours), np.stack([np.array(r) for r in ref])
    if quantity == "mass_matrix":  # pin.crba fills the upper triangle
        ref = np.triu(ref) + np.transpose(np.triu(ref, 1), (0, 2, 1))
    return float(np.max(np.abs(ours - ref)) / np.max(np.abs(ref)))


def _time_quantity(quantity, model, states, pin_model, pin_states, settings):
    """Time one quantity: jaxfric at one state (jitted calls) and over the batch
    (``vmap``), Pinocchio in a Python loop; and the largest relative difference."""
    import pinocchio as pin

    fn, pin_fn = _QUANTITIES[quantity]
    batch, repeats, calls = (
        settings["batch"],
        settings["repeats"],
        settings["single_calls"],
    )
    pin_data = pin_model.createData()
    single = jax.jit(fn)
    batched = jax.jit(jax.vmap(fn, in_axes=(None, 0, 0, 0, 0)))
    # The same batch as `lax.map` over chunks of `chunk` states, vmapped inside a
    # chunk: smaller intermediates (measured faster than one vmap on CPU).
    chunked = jax.jit(
        lambda m, *x: jax.lax.map(lambda y: fn(m, *y), x, batch_size=settings["chunk"])
    )
    one = tuple(s[0] for s in states)
    jax.block_until_ready(single(model, *one))  # compile
    out = jax.block_until_ready(batched(model, *states))
    out_chunked = jax.block_until_ready(chunked(model, *states))
    for leaf in jax.tree.leaves((out, out_chunked)):  # computed in the dtype asked
        if leaf.dtype != states[0].dtype:
            raise TypeError(f"{quantity}: {leaf.dtype} from {states[0].dtype} input")

    def run_single():
        for _ in range(calls):
            res = single(model, *one)
        jax.block_until_ready(res)

    def run_pin():
        return [pin_fn(pin, pin_model, pin_data, *s) for s in pin_states]

    t_single, _ = _timed(run_single, repeats)
    load_single = load_average()
    t_batch, cpu_batch = _timed(
        lambda: jax.block_until_ready(batched(model, *states)), repeats
    )
    load_batch = load_average()
    t_chunked, cpu_chunked = _timed(
        lambda: jax.block_until_ready(chunked(model, *states)), repeats
    )
    t_pin, _ = _timed(run_pin, repeats)
    load_pin = load_average()
    diff = diff_vmap = None
    if quantity != "all three":
        ref = run_pin()
        diff_vmap = _max_relative_difference(out, ref, quantity)
        diff = _max_relative_difference(out_chunked, ref, quantity)
    return {
        "quantity": quantity,
        "jaxfric_single_us": 1e6 * t_single / calls,
        "jaxfric_batch_us": 1e6 * t_batch / batch,
        "jaxfric_batch_cpu_us": 1e6 * cpu_batch / batch,
        "jaxfric_chunked_us": 1e6 * t_chunked / batch,
        "jaxfric_chunked_cpu_us": 1e6 * cpu_chunked / batch,
        "pinocchio_us": 1e6 * t_pin / batch,
        "max_rel_diff": diff,
        "max_rel_diff_vmap": diff_vmap,
        "load_single": load_single,
        "load_batch": load_batch,
        "load_pinocchio": load_pin,
    }


def _as_dtype(tree, dtype):
    """`tree` with its floating arrays in `dtype`."""
    return jax.tree.map(
        lambda x: x.astype(dtype) if eqx.is_inexact_array(x) else x, tree
    )


def bench_dynamics(settings):
    """Time and compare every quantity of `_QUANTITIES` on every robot, in every
    floating dtype of ``settings["dtypes"]`` (Pinocchio: float64 always)."""
    import pinocchio as pin

    rows = []
    for robot, relative in settings["robots"].items():
        path = example_robot_urdf(relative)
        model64 = load_urdf(path)[0].model
        pin_model = pin.buildModelFromUrdf(path)
        n = model64.n_bodies
        states64 = random_robot_states(settings["seed"], settings["batch"], n)
        pin_q = [pinocchio_configuration(pin_model, x) for x in states64[0]]
        pin_states = list(zip(pin_q, *states64[1:], strict=True))
        for dtype in settings["dtypes"]:
            model = _as_dtype(model64, dtype)
            states = tuple(jnp.asarray(s, dtype=dtype) for s in states64)
            for quantity in _QUANTITIES:
                row = _time_quantity(
                    quantity, model, states, pin_model, pin_states, settings
                )
                best = min(row["jaxfric_batch_us"], row["jaxfric_chunked_us"])
                row["ratio"] = best / row["pinocchio_us"]
                rows.append({"robot": robot, "dof": n, "dtype": dtype, **row})
                print(
                    f"{robot} {dtype} {quantity}: jaxfric "
                    f"{row['jaxfric_single_us']:.1f} µs/call, "
                    f"{row['jaxfric_batch_us']:.2f} µs/state (vmap "
                    f"{settings['batch']}), {row['jaxfric_chunked_us']:.2f} (chunks "
                    f"of {settings['chunk']}); Pinocchio {row['pinocchio_us']:.2f} "
                    f"µs/state ({row['ratio']:.2f}×); load {row['load_pinocchio']}"
                )
    return rows


# ----------------------------------------------------------------------------
# Part 2: the two-link stick–slip batch against MuJoCo


def _scales(settings) -> np.ndarray:
    """Per-member, per-joint torque factors, shape ``(batch, 2)``."""
    lo, hi = settings["scale_range"]
    rng = np.random.default_rng(settings["seed"])
    return rng.uniform(lo, hi, (settings["batch"], 2))


def _save_times(settings, every=None) -> np.ndarray:
    """The save grid: the drift window every `every` s (``save_every`` by
    default), both ends included."""
    lo, hi = settings["drift_window"]
    every = settings["save_every"] if every is None else every
    return np.linspace(lo, hi, int(round((hi - lo) / every)) + 1)


def _drift(q) -> np.ndarray:
    """max − min of each angle over the saved times, per member: ``(batch, 2)``."""
    return np.ptp(q, axis=1)


def _check_variant(variant, keys, frictionloss):
    for key in variant:
        if key not in keys:
            raise ConfigError(
                f"variant {variant.get('name')!r}: unknown key {key!r}; allowed "
                f"keys: {', '.join(keys)}."
            )
    table = variant.get("friction")
    if table is not None:
        level = table.get("fc", table.get("f"))
        if level != frictionloss:
            raise ConfigError(
                f"variant {variant['name']!r}: the friction level ({level}) must "
                f"equal `frictionloss` ({frictionloss}): the same problem as MuJoCo."
            )


def _jaxfric_batch(settings, variant):
    """One jaxfric variant over the batch: saved angles, per-member success,
    steps, rejected steps, events and last event time, timings."""
    system = build("system", settings["system"], section="[two_link] system")
    law = build("friction", variant["friction"], section=variant["name"])
    torque = two_link.make_torque(settings["torque"])
    ts = _save_times(settings, variant.get("save"))
    options = parse_simulate(
        {"t1": settings["t1"], "q0": [0.0, 0.0], "qd0": [0.0, 0.0]}
        | variant.get("simulate", {}),
        section=f"{variant['name']} simulate",
    )
    options["ts"] = ts

    def one(scale):
        force = eqx.tree_at(lambda f: f.scale, torque, scale)
        sol = jf.simulate(system, law, force=force, throw=False, **options)
        events = sol.event_times
        last = jnp.max(
            jnp.where(jnp.isfinite(events), events, -jnp.inf), initial=-jnp.inf
        )
        stats = sol.stats
        return (
            sol.q,
            sol.result == jf.RESULTS.successful,
            stats["num_steps"],
            stats.get("num_rejected_steps", jnp.zeros((), jnp.int32)),
            stats.get("num_events", jnp.zeros((), jnp.int32)),
            last,
        )

    batching = variant.get("batching", "vmap")
    if batching == "vmap":
        run = jax.jit(jax.vmap(one))
    elif batching == "map":
        chunk = int(variant.get("chunk", 1))
        run = jax.jit(lambda s: jax.lax.map(one, s, batch_size=chunk))
    else:
        raise ConfigError(
            f"{variant['name']}: `batching` must be 'vmap' or 'map'; got {batching!r}."
        )
    scales = jnp.asarray(_scales(settings))
    start = time.perf_counter()
    jax.block_until_ready(run(scales))
    first = time.perf_counter() - start
    wall, cpu = _timed(lambda: jax.block_until_ready(run(scales)), settings["repeats"])
    q, ok, steps, rejected, events, last = (np.asarray(x) for x in run(scales))
    return {
        "ts": ts,
        "q": q,
        "ok": ok,
        "steps": steps,
        "rejected": rejected,
        "events": events,
        "last_event": last,
        "wall": wall,
        "cpu": cpu,
        "first": first,
    }


def _mujoco_xml(arm, variant, frictionloss, dt) -> str:
    """A two-link hinge arm (axes z, no gravity) with the inertia of `arm`
    (a `TwoLinkArm` table) and motors on both joints."""
    extra = "".join(
        f' {key}="{variant[key]}"'
        for key in ("solreffriction", "solimpfriction")
        if key in variant
    )
    noslip = int(variant.get("noslip_iterations", 0))

    def body(m, lc, inertia):
        # The x entry is irrelevant for a z hinge; MuJoCo needs it positive.
        return (
            f'<inertial pos="{lc} 0 0" mass="{m}" '
            f'diaginertia="1e-9 {inertia} {inertia}"/>'
        )

    def joint(name):
        return (
            f'<joint name="{name}" type="hinge" axis="0 0 1" '
            f'frictionloss="{frictionloss}"{extra}/>'
        )

    a = arm
    return f"""<mujoco>
  <option timestep="{dt!r}" gravity="0 0 0" noslip_iterations="{noslip}"/>
  <worldbody>
    <body name="link1">
      {joint("j0")}
      {body(a["m1"], a["lc1"], a["I1"])}
      <body name="link2" pos="{a["l1"]} 0 0">
        {joint("j1")}
        {body(a["m2"], a["lc2"], a["I2"])}
      </body>
    </body>
  </worldbody>
  <actuator><motor joint="j0"/><motor joint="j1"/></actuator>
</mujoco>"""


def _torque_profile(settings, times) -> np.ndarray:
    """Eq. 28c–d at `times`, shape ``(len(times), 2)`` (factor 1)."""
    torque = two_link.make_torque(settings["torque"])
    fn = jax.jit(jax.vmap(lambda t: torque(t, jnp.zeros(2), jnp.zeros(2))))
    return np.asarray(fn(jnp.asarray(times)))


def _check_mujoco_mass_matrix(mujoco, model, data, system):
    """The MuJoCo arm has the mass matrix of the jaxfric arm (sanity check)."""
    for q in ([0.0, 0.0], [0.4, 1.3], [-1.0, 2.5]):
        data.qpos[:] = q
        mujoco.mj_forward(model, data)
        full = np.zeros((model.nv, model.nv))
        mujoco.mj_fullM(model, data, full)
        ours = np.asarray(system.mass_matrix(jnp.asarray(q)))
        if not np.allclose(full, ours, rtol=1e-6, atol=1e-8):
            raise RuntimeError(f"MuJoCo and jaxfric mass matrices differ at q={q}.")
    mujoco.mj_resetData(model, data)


def _mujoco_batch(settings, variant, system):
    """One MuJoCo variant over the batch (one thread, chunks of 100 members):
    angles on the save grid and timings per simulation."""
    import mujoco
    from mujoco import rollout

    dt, t1 = settings["dt"], settings["t1"]
    xml = _mujoco_xml(settings["system"], variant, settings["frictionloss"], dt)
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    _check_mujoco_mass_matrix(mujoco, model, data, system)
    nstep = int(round(t1 / dt))
    # Semi-implicit Euler: the control of step k acts over [k dt, (k + 1) dt].
    profile = _torque_profile(settings, np.arange(nstep) * dt)
    scales = _scales(settings)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state0 = np.zeros(mujoco.mj_stateSize(model, spec))
    mujoco.mj_getState(model, data, state0, spec)
    # state[:, k] is the state after step k + 1, at time (k + 1) dt.
    index = np.round(_save_times(settings) / dt).astype(int) - 1
    chunk = 100
    wall = cpu = 0.0
    qs = []
    with rollout.Rollout(nthread=0) as runner:  # the calling thread only
        for c in range(0, len(scales), chunk):
            control = scales[c : c + chunk, None, :] * profile[None]
            init = np.tile(state0, (len(control), 1))
            start, start_cpu = time.perf_counter(), time.process_time()
            state, _ = runner.rollout(model, data, init, control)
            wall += time.perf_counter() - start
            cpu += time.process_time() - start_cpu
            qs.append(state[:, index, 1:3])  # full-physics state: (time, qpos, …)
    return np.concatenate(qs), wall, cpu


def bench_two_link(settings):
    """Every jaxfric and MuJoCo variant on the batch; returns the table rows,
    the claims and the angle traces on the save grid."""
    rows, traces, claims = [], {}, []
    window = settings["drift_window"]
    system = build("system", settings["system"], section="[two_link] system")
    batch = settings["batch"]
    reference = None

    def summarise(variant, engine, ts, q, wall, cpu, extra):
        drift = _drift(q)
        row = {
            "engine": engine,
            "variant": variant["name"],
            "per_sim_ms": 1e3 * wall / batch,
            "per_sim_cpu_ms": 1e3 * cpu / batch,
            # Failed jaxfric members are NaN: left out.
            "drift0_max": float(np.nanmax(drift[:, 0])),
            "drift1_max": float(np.nanmax(drift[:, 1])),
            "drift0_median": float(np.nanmedian(drift[:, 0])),
            "drift1_median": float(np.nanmedian(drift[:, 1])),
            "load": load_average(),
            **extra,
        }
        if reference is not None:
            ok = np.all(np.isfinite(q[:, -1]), axis=1) & reference["ok"]
            error = np.abs(q[ok, -1] - reference["q"][ok, -1])
            row["final_error_max"] = float(np.max(error))
        rows.append(row)
        traces[f"{engine}: {variant['name']}"] = (ts, q)
        print(
            f"{engine} {variant['name']}: {row['per_sim_ms']:.2f} ms/sim, drift max "
            f"{row['drift0_max']:.2e}/{row['drift1_max']:.2e} rad, load {row['load']}"
        )
        return row

    for variant in settings["jaxfric"]:
        _check_variant(variant, _JAXFRIC_KEYS, settings["frictionloss"])
        out = _jaxfric_batch(settings, variant)
        ok = out["ok"]
        if variant.get("reference", False):
            reference = out
        q = np.where(ok[:, None, None], out["q"], np.nan)
        exact = variant["friction"]["type"] != "Kikuuwe"
        row = summarise(
            variant,
            "jaxfric",
            out["ts"],
            q,
            out["wall"],
            out["cpu"],
            {
                "failed": int(np.sum(~ok)),
                "failed_scales": _scales(settings)[~ok],
                "steps_mean": float(np.mean(out["steps"])),
                "rejected_mean": float(np.mean(out["rejected"])),
                "events_mean": float(np.mean(out["events"])) if exact else None,
                "events_max": int(np.max(out["events"])) if exact else None,
                "last_event_max": float(np.max(out["last_event"])) if exact else None,
                "compile_and_first_s": out["first"],
                "batch_wall_s": out["wall"],
                "target": bool(variant.get("target", False)),
                "save_times": len(out["ts"]),
            },
        )
        if exact:
            name = f"jaxfric {variant['name']}"
            claims.append(
                claim(
                    row["failed"] == 0,
                    f"{name}: {batch - row['failed']}/{batch} members successful "
                    f"(max events {row['events_max']}, budget "
                    f"{variant['simulate']['max_events']}); target all",
                )
            )
            claims.append(
                claim(
                    row["last_event_max"] < window[0],
                    f"{name}: last switch (the stop) of every member at t <= "
                    f"{row['last_event_max']:.3f} s; target < {window[0]:g} s "
                    "(stopped before the drift window)",
                )
            )
            still = bool(np.all(q[ok] == q[ok][:, :1]))
            claims.append(
                claim(
                    still and row["failed"] == 0,
                    f"{name}: drift of both angles over [{window[0]:g}, "
                    f"{window[1]:g}] s max {row['drift0_max']:.1e} / "
                    f"{row['drift1_max']:.1e} rad, every saved angle bitwise equal "
                    f"to the first: {still}; target exactly 0",
                )
            )
    for variant in settings["mujoco"]:
        _check_variant(variant, _MUJOCO_KEYS, settings["frictionloss"])
        q, wall, cpu = _mujoco_batch(settings, variant, system)
        summarise(
            variant,
            "MuJoCo",
            _save_times(settings),
            q,
            wall,
            cpu,
            {"failed": 0, "steps_mean": round(settings["t1"] / settings["dt"])},
        )

    def drift(row):
        return max(row["drift0_max"], row["drift1_max"])

    for target in (r for r in rows if r.get("target")):
        for r in (r for r in rows if r["engine"] == "MuJoCo"):
            claims.append(
                claim(
                    target["per_sim_ms"] < r["per_sim_ms"],
                    f"target: jaxfric {target['variant']} {target['per_sim_ms']:.2f} "
                    f"ms/sim (drift max {drift(target):.0e} rad) < MuJoCo "
                    f"{r['variant']} (dt {settings['dt']:g}) {r['per_sim_ms']:.2f} "
                    f"ms/sim (drift max {drift(r):.1e} rad); load {target['load']} "
                    f"/ {r['load']}",
                )
            )
    return rows, claims, traces


def main():
    settings = load_settings(NAME)
    for key in settings:
        if key not in ("dynamics", "two_link"):
            raise ConfigError(f"settings: unknown section {key!r}.")
    uptime_start = _uptime()
    print(uptime_start)
    dyn_rows = bench_dynamics(settings["dynamics"])
    dyn_table = format_table(
        dyn_rows,
        [
            ("robot", "robot", ""),
            ("dtype", "dtype", ""),
            ("quantity", "quantity", ""),
            ("jaxfric_single_us", "jaxfric 1 state [µs/call]", ".1f"),
            ("jaxfric_batch_us", "jaxfric vmap [µs/state]", ".2f"),
            ("jaxfric_chunked_us", "jaxfric lax.map chunks [µs/state]", ".2f"),
            ("jaxfric_chunked_cpu_us", "its CPU time [µs/state]", ".2f"),
            ("pinocchio_us", "Pinocchio loop [µs/state]", ".2f"),
            ("ratio", "best jaxfric / Pinocchio", ".2f"),
            ("max_rel_diff", "max rel diff (chunks)", ".1e"),
            ("max_rel_diff_vmap", "max rel diff (vmap)", ".1e"),
            ("load_pinocchio", "load (1, 5, 15 min)", ""),
        ],
    )
    print(dyn_table)
    claims = []
    for robot in settings["dynamics"]["robots"]:
        ours = [r for r in dyn_rows if r["robot"] == robot]
        for dtype in settings["dynamics"]["dtypes"]:
            rows = [
                r for r in ours if r["dtype"] == dtype and r["max_rel_diff"] is not None
            ]
            if not rows:
                continue
            tolerance = PINOCCHIO_TOLERANCE[dtype]
            worst = max(max(r["max_rel_diff"], r["max_rel_diff_vmap"]) for r in rows)
            claims.append(
                claim(
                    worst < tolerance,
                    f"{robot} {dtype}: max relative difference to Pinocchio "
                    "(chunks / vmap) "
                    + ", ".join(
                        f"{r['quantity']} {r['max_rel_diff']:.1e} / "
                        f"{r['max_rel_diff_vmap']:.1e}"
                        for r in rows
                    )
                    + f"; target < {tolerance:g}",
                )
            )
        target = settings["dynamics"]["loop_ratio_target"]
        for dtype in settings["dynamics"]["dtypes"]:
            ratios = {r["quantity"]: r["ratio"] for r in ours if r["dtype"] == dtype}
            claims.append(
                claim(
                    max(ratios.values()) <= target,
                    f"{robot} {dtype}: per state, best of vmap and chunks over "
                    "Pinocchio's Python loop (issue 19's 1.2x against its C++: "
                    "bench_pinocchio_cpp) "
                    + ", ".join(f"{k} {v:.2f}×" for k, v in ratios.items())
                    + f"; target <= {target:g}×",
                )
            )
    sim_rows, sim_claims, traces = bench_two_link(settings["two_link"])
    claims += sim_claims
    sim_table = format_table(
        sim_rows,
        [
            ("engine", "engine", ""),
            ("variant", "variant", ""),
            ("per_sim_ms", "ms / sim", ".2f"),
            ("per_sim_cpu_ms", "CPU ms / sim", ".2f"),
            ("steps_mean", "steps", ".0f"),
            ("rejected_mean", "rejected", ".0f"),
            ("events_mean", "events", ".1f"),
            ("drift0_max", "drift θ0 max", ".1e"),
            ("drift1_max", "drift θ1 max", ".1e"),
            ("drift0_median", "drift θ0 median", ".1e"),
            ("drift1_median", "drift θ1 median", ".1e"),
            ("final_error_max", "max |θ(t1) − exact|", ".1e"),
            ("failed", "failed", "d"),
            ("load", "load (1, 5, 15 min)", ""),
        ],
    )
    print(sim_table)
    uptime_end = _uptime()
    print(uptime_end)
    print_claims(claims)

    out_dir = results_dir(NAME)
    fig = make_figure(sim_rows, traces, settings["two_link"])
    fig.savefig(out_dir / "figure.png", dpi=130)
    write_json(
        {
            "experiment": NAME,
            "settings": settings,
            "uptime_start": uptime_start,
            "uptime_end": uptime_end,
            "cpu_count": os.cpu_count(),
            "versions": {
                "jax": jax.__version__,
                "mujoco": importlib.metadata.version("mujoco"),
                "pin": importlib.metadata.version("pin"),
            },
            "dynamics_rows": dyn_rows,
            "dynamics_table_markdown": dyn_table,
            "two_link_rows": sim_rows,
            "two_link_table_markdown": sim_table,
            "claims": claims,
            "notes": {
                "timing": "best of `repeats` wall times after compilation "
                "(compile_and_first_s apart); CPU = process CPU time of all "
                "threads; jaxfric single-state times include Python dispatch of a "
                "jitted call; Pinocchio times include its Python loop; MuJoCo runs "
                "mujoco.rollout with one MjData on the calling thread; load = "
                "os.getloadavg() right after the timing (2-core shared machine)",
                "save": "jaxfric saves on the drift window only (every "
                "`save_every` s, or `save` s for a variant); MuJoCo's rollout "
                "records every step, the window grid is picked from it",
                "drift": "max - min of each angle over the saved times in the "
                "drift window, over the batch: max and median (exact: 0)",
                "steps": "integration steps per simulation (mean; jaxfric: "
                "attempted steps incl. rejected ones), events = switch events",
                "final_error_max": "max over members and joints of |θ(t1) − θ(t1) "
                "of the reference exact switch run (rtol 1e-10)|",
                "failed": "members whose jaxfric result is not successful "
                "(excluded from the drift and error columns)",
                "scales": "each member's joint torques are Eq. 28c–d times its own "
                "factor per joint, uniform in scale_range (seeded)",
            },
        },
        out_dir / "summary.json",
    )
    print(f"wrote {out_dir / 'figure.png'} and {out_dir / 'summary.json'}")


def make_figure(rows, traces, settings):
    """Drift ``θ(t) − θ(t_lo)`` of the batch member whose drift is largest, per
    engine/variant and joint, and wall and CPU time per simulation."""
    import matplotlib as mpl
    from matplotlib.figure import Figure

    lo, _ = settings["drift_window"]
    fig = Figure(figsize=(12.0, 11.0), layout="constrained")
    ax0, ax1, ax_t = fig.subplots(3, 1, height_ratios=[1.0, 1.0, 1.2])
    colors = mpl.colormaps["tab10"](np.arange(len(rows)) % 10)
    for color, row in zip(colors, rows, strict=True):
        label = f"{row['engine']}: {row['variant']}"
        ts, q = traces[label]
        drift = _drift(np.nan_to_num(q))
        style = {"marker": "o"} if len(ts) < 10 else {}
        for j, ax in enumerate((ax0, ax1)):
            k = int(np.argmax(drift[:, j]))
            rel = q[k, :, j] - q[k, 0, j]
            ax.plot(ts, rel, color=color, lw=1.0, label=label if j else None, **style)
    for j, ax in enumerate((ax0, ax1)):
        ax.set_ylabel(f"θ{j}(t) − θ{j}({lo:g} s) [rad]\n(worst member)")
        ax.set_yscale("symlog", linthresh=1e-6)
        ax.grid(True, lw=0.3)
    ax0.set_title("drift after the stop (symmetric log scale, linear below 1e-6 rad)")
    ax1.set_xlabel("t [s]")
    y = np.arange(len(rows))
    labels = [f"{r['engine']}: {r['variant']}" for r in rows]
    ax_t.barh(y - 0.2, [r["per_sim_ms"] for r in rows], 0.4, color=colors)
    ax_t.barh(
        y + 0.2,
        [r["per_sim_cpu_ms"] for r in rows],
        0.4,
        color=colors,
        alpha=0.45,
        hatch="//",
    )
    ax_t.set_yticks(y, labels, fontsize="small")
    ax_t.set_xlabel(
        "time per simulation [ms] (batch, after compilation): wall (solid), "
        "process CPU (hatched)"
    )
    ax_t.invert_yaxis()
    ax_t.grid(True, axis="x", lw=0.3)
    fig.legend(loc="outside lower center", ncols=2, fontsize="small")
    fig.suptitle("Two-link arm (Kikuuwe & Yamamoto Eq. 28) batch: jaxfric vs MuJoCo")
    return fig


if __name__ == "__main__":
    main()
