"""Benchmark: a closed chain with exact joint stick–slip, jaxfric against MuJoCo,
side by side.

The four-bar of ``closed_chain_fourbar`` (`jaxfric.systems.four_bar`: crank
0.4 m, coupler 1.0 m, rocker 0.8 m, ground 1.0 m, uniform rods): its crank
holds the gravity load ``g(θ0)`` by Coulomb friction ``fc`` while a drive
torque ``rate·t`` grows, and breaks away at ``t* = (fc + g(θ0))/rate``
(closed form, `_four_bar.py`).

Methods:

(a) jaxfric: `ClosedChain` on the exact switch path (Tsit5, defaults), the
    loop closed by Gauss–Newton at every evaluation; one run (`jax.jit`) and a
    batch of ramp rates (`jax.vmap`), on one device and sharded over
    ``[jaxfric] devices`` host CPU devices (the machine's cores,
    docs/sharding.md), time after compilation;
(b) MuJoCo: the same rods as hinge bodies, the loop closed by an equality
    ``connect`` between two sites (a soft constraint), ``frictionloss = fc``
    on the crank hinge, a motor for the ramp, ``dt = 1e-3``; the default
    solver settings and tuned ``noslip_iterations`` / ``solreffriction``;
    one run stepped from Python (for the trajectory) and the batch through
    `mujoco.rollout` (C loop).

Compared: time per simulation; crank creep while the physics says it is stuck
(``t < t*``); the breakaway time; the loop-closure residual (the distance of
the two loop points). The batch timings are compared at equal core counts
(jaxfric's devices, MuJoCo's threads). Timings are taken `timing_passes`
times with the load average (other jobs share this 2-core machine).

Run: ``python experiments/bench_closed_chain.py [SETTINGS.toml]``.
"""

import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from _common import (
    best_time,
    claim,
    enable_float64,
    load_average,
    load_settings,
    print_claims,
    print_table,
    results_dir,
    write_json,
)
from _four_bar import Ramp, breakaway_time, make_four_bar
from jax.sharding import Mesh, NamedSharding, PartitionSpec

enable_float64()

import jaxfric as jf  # noqa: E402

NAME = "bench_closed_chain"


# --- MuJoCo ------------------------------------------------------------------


def mujoco_model(mech, prob, variant, timestep):
    """The four-bar in MJCF: the rods' inertias as in `four_bar` (m L²/12 about
    the centre, 1e-6 m L² about the rod), the loop closed between site ``a``
    (coupler tip) and site ``b`` (rocker tip)."""
    import mujoco

    a, b, c, d = (mech[k] for k in ("crank", "coupler", "rocker", "ground"))

    def inertial(mass, length):
        i = mass * length**2 / 12
        return (
            f'<inertial pos="{length / 2} 0 0" mass="{mass}" '
            f'diaginertia="{1e-6 * mass * length**2} {i} {i}"/>'
        )

    m1, m2, m3 = mech["masses"]
    extra = ""
    if "solreffriction" in variant:
        extra = ' solreffriction="{} {}"'.format(*variant["solreffriction"])
    xml = f"""<mujoco>
  <option timestep="{timestep}" gravity="0 {-mech["gravity"]} 0"
          noslip_iterations="{variant.get("noslip_iterations", 0)}"/>
  <worldbody>
    <body name="crank">
      <joint name="crank" type="hinge" axis="0 0 1" frictionloss="{prob["fc"]}"
             {extra}/>
      {inertial(m1, a)}
      <body name="coupler" pos="{a} 0 0">
        <joint name="coupler" type="hinge" axis="0 0 1"/>
        {inertial(m2, b)}
        <site name="a" pos="{b} 0 0"/>
      </body>
    </body>
    <body name="rocker" pos="{d} 0 0">
      <joint name="rocker" type="hinge" axis="0 0 1"/>
      {inertial(m3, c)}
      <site name="b" pos="{c} 0 0"/>
    </body>
  </worldbody>
  <equality><connect site1="a" site2="b"/></equality>
  <actuator><motor joint="crank" gear="1"/></actuator>
</mujoco>"""
    return mujoco.MjModel.from_xml_string(xml)


def mujoco_run(model, q0, rate, t1):
    """One run stepped from Python: crank angle per step and the largest
    distance of the two loop points, m."""
    import mujoco

    data = mujoco.MjData(model)
    data.qpos[:] = q0
    mujoco.mj_forward(model, data)
    steps = int(round(t1 / model.opt.timestep))
    ts, theta = np.empty(steps), np.empty(steps)
    gap = 0.0
    for k in range(steps):
        data.ctrl[0] = rate * data.time
        mujoco.mj_step(model, data)
        ts[k], theta[k] = data.time, data.qpos[0]
        gap = max(gap, float(np.linalg.norm(data.site_xpos[0] - data.site_xpos[1])))
    return ts, theta, gap


def mujoco_batch(model, q0, rates, t1, threads):
    """Wall time of `mujoco.rollout` over the ramp rates (open-loop controls)."""
    import mujoco
    from mujoco import rollout

    steps = int(round(t1 / model.opt.timestep))
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    data = mujoco.MjData(model)
    data.qpos[:] = q0
    state0 = np.zeros(mujoco.mj_stateSize(model, spec))
    mujoco.mj_getState(model, data, state0, spec)
    init = np.tile(state0, (len(rates), 1))
    # The control applied during step k (time k·dt).
    times = model.opt.timestep * np.arange(steps)
    ctrl = (np.asarray(rates)[:, None] * times[None, :])[:, :, None]
    datas = [mujoco.MjData(model) for _ in range(threads)]
    with rollout.Rollout(nthread=0 if threads == 1 else threads) as runner:
        start = time.perf_counter()
        runner.rollout(
            model,
            datas[0] if threads == 1 else datas,
            init,
            ctrl,
            nstep=steps,
            chunk_size=max(1, len(rates) // threads),
        )
        return time.perf_counter() - start


# --- the run -----------------------------------------------------------------


def main(settings) -> bool:
    mech, prob = settings["mechanism"], settings["problem"]
    jcfg, mj = settings["jaxfric"], settings["mujoco"]
    theta0 = mech["crank_angle"]
    chain = make_four_bar(mech)
    t1 = prob["t1"]
    t_star = breakaway_time(mech, prob["fc"], prob["rate"])
    ts = jnp.linspace(0.0, t1, prob["num_save"])
    rates = np.linspace(*prob["rate_range"], prob["n_batch"])

    def simulate(rate):
        return jf.simulate(
            chain,
            jf.Coulomb(fc=prob["fc"]),
            q0=jnp.array([theta0]),
            qd0=jnp.zeros(1),
            t1=t1,
            force=Ramp(jnp.asarray(rate, float)),
            ts=ts,
        )

    single = jax.jit(simulate)
    batch = jax.jit(jax.vmap(simulate))
    # The same batch split over the host's cores (docs/sharding.md), to compare
    # with MuJoCo on as many threads.
    devices = jax.devices()
    mesh = Mesh(np.array(devices), ("batch",))
    sharded = jax.device_put(
        jnp.asarray(rates), NamedSharding(mesh, PartitionSpec("batch"))
    )
    start = time.perf_counter()
    sol = jax.block_until_ready(single(prob["rate"]))
    compile_single = time.perf_counter() - start
    start = time.perf_counter()
    sols = jax.block_until_ready(batch(jnp.asarray(rates)))
    compile_batch = time.perf_counter() - start

    # Accuracy of jaxfric.
    stuck = np.asarray(sol.ts) < t_star
    creep = float(np.max(np.abs(np.asarray(sol.q)[stuck, 0] - theta0)))
    closure = jax.vmap(lambda z: chain.closure_residual(chain.assemble(z)))(sol.q)
    gap = float(jnp.max(jnp.abs(closure)))
    event = float(sol.event_times[0])
    batch_events = np.asarray(sols.event_times[:, 0])
    batch_star = np.array([breakaway_time(mech, prob["fc"], r) for r in rates])
    batch_err = float(np.max(np.abs(batch_events - batch_star)))
    steps = np.asarray(sols.stats["num_steps"])
    rows = [
        {
            "method": "jaxfric switch path",
            "creep": creep,
            "t_break": event,
            "t_error": abs(event - t_star),
            "batch_t_error": batch_err,
            "gap": gap,
            "steps": int(sol.stats["num_steps"]),
        }
    ]

    # MuJoCo: the same mechanism, the loop as a soft equality constraint.
    q0 = np.asarray(chain.q_guess)
    models = {
        v["name"]: mujoco_model(mech, prob, v, mj["timestep"]) for v in mj["variants"]
    }
    for name, model in models.items():
        mts, theta, mgap = mujoco_run(model, q0, prob["rate"], t1)
        moved = np.abs(theta - theta0) > mj["moved"]
        first = float(mts[np.argmax(moved)]) if moved.any() else float("nan")
        rows.append(
            {
                "method": f"MuJoCo dt {mj['timestep']:g}, {name}",
                "creep": float(np.max(np.abs(theta[mts < t_star] - theta0))),
                "t_break": first,
                "t_error": abs(first - t_star),
                "gap": mgap,
                "steps": len(mts),
            }
        )

    timings = []
    for p in range(settings["timing_passes"]):
        load = load_average()
        one, _ = best_time(single, (prob["rate"],), jcfg["repeats"])
        many, _ = best_time(batch, (jnp.asarray(rates),), jcfg["repeats"])
        split, _ = best_time(batch, (sharded,), jcfg["repeats"])
        for threads, wall in ((1, many), (len(devices), split)):
            timings.append(
                {
                    "pass": p,
                    "load": load[0],
                    "method": f"jaxfric, {threads} core(s)",
                    "threads": threads,
                    "single_ms": 1e3 * one,
                    "batch_ms_per_sim": 1e3 * wall / len(rates),
                }
            )
        for name, model in models.items():
            start = time.perf_counter()
            mujoco_run(model, q0, prob["rate"], t1)
            one = time.perf_counter() - start
            for threads in mj["threads"]:
                wall = mujoco_batch(model, q0, rates, t1, threads)
                timings.append(
                    {
                        "pass": p,
                        "load": load[0],
                        "method": f"MuJoCo {name}, {threads} thread(s)",
                        "threads": threads,
                        "single_ms": 1e3 * one,
                        "batch_ms_per_sim": 1e3 * wall / len(rates),
                    }
                )

    print(f"closed-form breakaway t* = {t_star:.10f} s (rate {prob['rate']})")
    print_table(
        rows,
        [
            ("method", "method", "s"),
            ("creep", "crank creep while stuck, rad", ".2e"),
            ("t_break", "breakaway, s", ".6f"),
            ("t_error", "|t − t*|, s", ".1e"),
            ("batch_t_error", "batch max |t − t*|, s", ".1e"),
            ("gap", "loop gap, m", ".1e"),
            ("steps", "steps", "d"),
        ],
    )
    print(
        f"jaxfric first calls: single {compile_single:.1f} s, batch of "
        f"{len(rates)} {compile_batch:.1f} s; batch steps {steps.min()}–{steps.max()}"
    )
    print_table(
        timings,
        [
            ("pass", "pass", "d"),
            ("load", "load (1 min)", ".2f"),
            ("method", "method", "s"),
            ("single_ms", "one run, ms", ".1f"),
            ("batch_ms_per_sim", f"batch of {len(rates)}, ms/sim", ".2f"),
        ],
    )

    def best(engine, threads):
        return min(
            t["batch_ms_per_sim"]
            for t in timings
            if t["method"].startswith(engine) and t["threads"] == threads
        )

    speed_claims = [
        claim(
            best("jaxfric", n) < best("MuJoCo", n),
            f"jaxfric batch {best('jaxfric', n):.2f} ms/sim vs MuJoCo's best "
            f"{best('MuJoCo', n):.2f} ms/sim on {n} core(s) (faster: the issue's "
            "target)",
        )
        for n in sorted({1, len(devices)} & set(mj["threads"]))
    ]
    claims = [
        claim(
            sol.result == jf.RESULTS.successful
            and bool(np.all(sols.result == jf.RESULTS.successful)),
            "jaxfric: the single run and every batch member successful",
        ),
        claim(
            creep == 0.0 and bool(np.all(np.asarray(sol.qd)[stuck] == 0.0)),
            f"jaxfric: crank creep while stuck {creep:.1e} rad == 0, velocity "
            "exactly 0.0",
        ),
        claim(
            rows[0]["t_error"] <= 1e-8 and batch_err <= 1e-8,
            f"jaxfric: breakaway within {max(rows[0]['t_error'], batch_err):.1e} s "
            "of the closed form (<= 1e-8 s, every batch member)",
        ),
        claim(gap <= 1e-10, f"jaxfric: loop closure {gap:.1e} m <= 1e-10 m"),
        claim(
            rows[1]["creep"] > 0.0,
            f"MuJoCo, default settings: the stuck crank creeps "
            f"({rows[1]['creep']:.1e} rad before t*); with noslip: "
            + ", ".join(f"{r['creep']:.1e} rad" for r in rows[2:])
            + ", at a loop gap of "
            + ", ".join(f"{r['gap']:.1e} m" for r in rows[1:]),
        ),
        *speed_claims,
    ]
    ok = print_claims(claims)
    out = results_dir(NAME)
    _plot(sol, models, q0, prob, t_star, theta0, out / "figure.png")
    write_json(
        {
            "closed_form_breakaway_time": t_star,
            "accuracy": rows,
            "timings": timings,
            "compile_s": {"single": compile_single, "batch": compile_batch},
            "claims": claims,
        },
        out / "summary.json",
    )
    return ok


def _plot(sol, models, q0, prob, t_star, theta0, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(sol.ts, np.asarray(sol.q[:, 0]) - theta0, "k.-", label="jaxfric (exact)")
    for name, model in models.items():
        mts, theta, _ = mujoco_run(model, q0, prob["rate"], prob["t1"])
        ax.plot(mts, theta - theta0, label=f"MuJoCo, {name}")
    ax.axvline(t_star, color="grey", ls=":", label="closed-form breakaway")
    ax.set_xlabel("t, s")
    ax.set_ylabel("crank angle − θ0, rad")
    ax.set_yscale("symlog", linthresh=1e-6)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    settings = load_settings(NAME)
    # The host's cores as JAX devices, for the sharded batch; read when JAX
    # creates its CPU backend, which nothing above has done yet.
    flag = f"--xla_force_host_platform_device_count={settings['jaxfric']['devices']}"
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flag}".strip()
    sys.exit(0 if main(settings) else 1)
