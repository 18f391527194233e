"""Benchmark: the 3-RPS parallel manipulator with exact joint stick–slip,
jaxfric against MuJoCo on the same mechanism (issue 14's performance item).

The mechanism is `farhat_3rps`'s (`_three_rps.py`: three legs, each a revolute
base joint and a prismatic actuator, a spherical joint at the platform), its
legs under PD tracking of the sinusoidal leg-length reference scaled by a
factor per batch member, with symmetric Coulomb friction ``fc`` on every leg.

Methods:

(a) jaxfric: `ClosedChain` (leg 1 carries the platform, legs 2 and 3 closed by
    ball loops, solved by Gauss–Newton at every evaluation) on the exact switch
    path (Tsit5, ``[jaxfric]`` tolerances), `jaxfric.forces.PD`; one run
    (`jax.jit`) and the batch (`jax.vmap`), time after compilation;
(b) MuJoCo: the same bodies in MJCF (hinge and slide joints, a ball joint from
    leg 1 to the platform, two equality ``connect`` constraints between the
    tips of legs 2 and 3 and their platform points, ``frictionloss = fc`` on the
    slides; a variant's ``solref`` stiffens the loops), per leg a
    ``position`` and a ``velocity`` actuator whose controls
    are the reference's position and velocity, so the force is the same PD
    law; ``dt = [mujoco] timestep``, the default solver and ``noslip``
    variants; `mujoco.rollout` for the batch.

Compared: time per simulation at equal core count (one); the legs' creep in
MuJoCo while jaxfric holds them stuck (their velocity, and the spread of their
length over each stick phase, one save in from its ends); the loop-closure
gap; the leg lengths of the two engines (MuJoCo's soft constraints and its
time step make them differ).

Run: ``python experiments/bench_3rps.py [SETTINGS.toml]``.
"""

import sys

import jax
import jax.numpy as jnp
import numpy as np
from _common import (
    CONFIGS,
    best_time,
    claim,
    enable_float64,
    load_settings,
    mujoco_rollout,
    print_claims,
    print_table,
    read_settings,
    results_dir,
    stick_phases,
    write_json,
)

enable_float64()

import _three_rps as rps  # noqa: E402

import jaxfric as jf  # noqa: E402

NAME = "bench_3rps"


def _numbers(v) -> str:
    return " ".join(f"{x:.17g}" for x in np.ravel(v))


def mujoco_model(spec, mech, fc, kp, kd, timestep, variant):
    """The `_three_rps` tree in MJCF: the same link frames, masses, centres of
    mass and inertias; leg 1's three gimbal revolutes as one ball joint."""
    import mujoco

    axes, origins, mass = spec["axes"], spec["origins"], spec["mass"]
    com, inertia, joints, links = (
        spec["com"],
        spec["inertia"],
        spec["joint_names"],
        spec["link_names"],
    )

    def inertial(k):
        i = inertia[k]
        full = _numbers([i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[0, 2], i[1, 2]])
        return (
            f'<inertial pos="{_numbers(com[k])}" mass="{mass[k]:.17g}" '
            f'fullinertia="{full}"/>'
        )

    def leg(base, slide, inner):
        return f"""<body name="{links[base]}" pos="{_numbers(origins[base])}">
  <joint name="{joints[base]}" type="hinge" axis="{_numbers(axes[base])}"/>
  {inertial(base)}
  <body name="{links[slide]}">
    <joint name="{joints[slide]}" type="slide" axis="{_numbers(axes[slide])}"
           frictionloss="{fc}"/>
    {inertial(slide)}
    {inner}
  </body>
</body>"""

    platform = f"""<body name="platform">
  <joint name="sph1" type="ball"/>
  {inertial(4)}
  <site name="p2" pos="{_numbers(spec["attachments"][0])}"/>
  <site name="p3" pos="{_numbers(spec["attachments"][1])}"/>
</body>"""
    bodies = (
        leg(0, 1, platform)
        + leg(5, 6, '<site name="t2"/>')
        + leg(7, 8, '<site name="t3"/>')
    )
    actuators = "".join(
        f'<position joint="{leg}" kp="{kp}"/><velocity joint="{leg}" kv="{kd}"/>'
        for leg in rps.LEGS
    )
    stiff = ""
    if "solref" in variant:
        stiff = ' solref="{} {}"'.format(*variant["solref"])
    xml = f"""<mujoco>
  <option timestep="{timestep}" gravity="0 0 {-mech["gravity"]}"
          noslip_iterations="{variant.get("noslip_iterations", 0)}"/>
  <worldbody>{bodies}</worldbody>
  <equality>
    <connect site1="t2" site2="p2"{stiff}/><connect site1="t3" site2="p3"{stiff}/>
  </equality>
  <actuator>{actuators}</actuator>
</mujoco>"""
    return mujoco.MjModel.from_xml_string(xml)


def _gimbal(spec, angles):
    """Leg 1's spherical joint as a rotation: the tree's three revolutes."""
    rot = np.eye(3)
    for k, angle in zip((2, 3, 4), angles, strict=True):
        rot = rot @ rps._rotation(spec["axes"][k], angle)
    return rot


def mujoco_state(spec, q_tree, qd_tree):
    """MuJoCo's ``(qpos, qvel)`` of a tree state: the legs' coordinates as they
    are, the gimbal as a quaternion and its rates as the body-frame angular
    velocity ``vee(Rᵀ Ṙ)`` (central differences, step 1e-6 s)."""
    import mujoco

    rot = _gimbal(spec, q_tree[2:5])
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, rot.ravel())
    h = 1e-6
    rate = (
        _gimbal(spec, q_tree[2:5] + h * qd_tree[2:5])
        - _gimbal(spec, q_tree[2:5] - h * qd_tree[2:5])
    ) / (2 * h)
    skew = rot.T @ rate
    omega = np.array([skew[2, 1], skew[0, 2], skew[1, 0]])
    qpos = np.concatenate([q_tree[:2], quat, q_tree[5:9]])
    qvel = np.concatenate([qd_tree[:2], omega, qd_tree[5:9]])
    return qpos, qvel


def problem(settings):
    """``(chain, spec, mech, law, controller, run, ts)`` of the settings: the 3-RPS,
    the PD controller of a batch member (its reference scaled by ``scale``) and
    its jaxfric run (`scale` to `jaxfric.Solution`) on the exact switch path
    (``[jaxfric]`` tolerances)."""
    base = read_settings(CONFIGS / f"{settings['mechanism_from']}.toml")
    mech = base["mechanism"]
    chain, spec = rps.build_chain(mech)
    home = jnp.asarray(spec["q_home"][[1, 6, 8]])
    law = jf.Coulomb(jnp.full(3, settings["fc"]))
    jcfg, t1 = settings["jaxfric"], settings["t1"]
    ts = jnp.linspace(0.0, t1, settings["num_save"])

    def controller(scale):
        ref = rps.reference(base, settings["trajectory"], home)
        ref = jf.forces.FourierSeries(scale * ref.a, scale * ref.b, ref.omega, home)
        return jf.forces.PD(ref, settings["kp"], settings["kd"])

    def run(scale):
        pd = controller(scale)
        z0, zd0 = rps.tracking_start(chain, law, pd)
        return jf.simulate(
            chain, law, q0=z0, qd0=zd0, t1=t1, force=pd, ts=ts, throw=False,
            rtol=jcfg["rtol"], atol=jcfg["atol"], max_steps=jcfg["max_steps"],
            max_events=jcfg["max_events"],
        )  # fmt: skip

    return chain, spec, mech, law, controller, run, ts


def main(settings) -> bool:
    chain, spec, mech, law, controller, run, ts = problem(settings)
    mj = settings["mujoco"]
    t1, kp, kd = settings["t1"], settings["kp"], settings["kd"]
    scales = jnp.linspace(*settings["scale"], settings["batch"])
    passes = settings["timing_passes"]
    sol, t_single, sols, t_batch = timed_runs(run, scales, passes)
    closure = closure_gap(chain)
    gap_jf = float(closure(sols.q))
    modes, qd = np.asarray(sol.modes), np.asarray(sol.qd)
    stuck = modes == 0
    # MuJoCo's legs stop and start a little apart from jaxfric's events: its
    # creep is read inside jaxfric's stick phases, one save in from each end.
    inside = inside_stick(stuck)
    ok_all = bool(np.all(sols.result == jf.RESULTS.successful))
    stuck_batch = np.asarray(sols.modes) == 0
    stuck_speed = float(np.max(np.abs(np.asarray(sols.qd)[stuck_batch]), initial=0.0))

    # MuJoCo: the same starts and the PD controls of every step.
    def starts_and_controls(scale, dt):
        steps = int(round(t1 / dt))
        step_ts = dt * np.arange(steps)
        pd = controller(scale)
        z0, zd0 = rps.tracking_start(chain, law, pd)
        q_tree, qd_tree = chain.tree_state(z0, zd0)[:2]
        ref = pd.reference
        pos = jax.vmap(ref.position)(jnp.asarray(step_ts))
        vel = jax.vmap(ref.velocity)(jnp.asarray(step_ts))
        ctrl = jnp.stack([pos, vel], axis=-1).reshape(steps, 6)
        return np.asarray(q_tree), np.asarray(qd_tree), np.asarray(ctrl)

    rows = [
        dict(
            engine="jaxfric",
            variant="exact switch path",
            events=int(sol.stats["num_events"]),
            creep_speed=float(np.max(np.abs(qd[stuck]), initial=0.0)),
            creep_spread=stick_spread(np.asarray(sol.q), stuck),
            gap=gap_jf,
            length_diff=0.0,
        )
    ]
    timings = [
        dict(engine="jaxfric", threads=1, single_ms=1e3 * t_single,
             batch_ms=1e3 * t_batch / len(scales)),
    ]  # fmt: skip
    traces = {"jaxfric": qd}
    # Looser tolerances: the stick stays exact, the trajectory moves.
    for loose in settings["jaxfric"].get("variants", []):
        other = dict(settings, jaxfric=dict(settings["jaxfric"], **loose["options"]))
        sol_l, t_single_l, sols_l, t_batch_l = timed_runs(
            problem(other)[5], scales, passes
        )
        stuck_l = np.asarray(sol_l.modes) == 0
        rows.append(
            dict(
                engine="jaxfric",
                variant=loose["name"],
                events=int(sol_l.stats["num_events"]),
                creep_speed=float(
                    np.max(np.abs(np.asarray(sol_l.qd)[stuck_l]), initial=0.0)
                ),
                creep_spread=stick_spread(np.asarray(sol_l.q), stuck_l),
                gap=float(closure(sols_l.q)),
                length_diff=float(np.max(np.abs(np.asarray(sols_l.q - sols.q)))),
            )
        )
        timings.append(
            dict(engine=f"jaxfric {loose['name']}", threads=1,
                 single_ms=1e3 * t_single_l, batch_ms=1e3 * t_batch_l / len(scales))
        )  # fmt: skip
    for variant in mj["variants"]:
        dt = variant.get("timestep", mj["timestep"])
        steps = int(round(t1 / dt))
        members = [starts_and_controls(s, dt) for s in np.asarray(scales)]
        ref_start = starts_and_controls(1.0, dt)
        model = mujoco_model(spec, mech, settings["fc"], kp, kd, dt, variant)
        start = mujoco_state(spec, ref_start[0], ref_start[1])
        _, states = mujoco_rollout(model, [start], ref_start[2][None], steps, 1)
        legs, dofs = leg_indices(model)
        nq = model.nq
        qpos = states[0, :, 1 : 1 + nq]
        qvel = states[0, :, 1 + nq : 1 + nq + model.nv]
        # MuJoCo's state after step k is at (k + 1)·dt; at the saves:
        index = np.clip(np.round(np.asarray(ts) / dt).astype(int) - 1, 0, steps - 1)
        lengths, speeds = qpos[index][:, legs], qvel[index][:, dofs]
        traces[variant["name"]] = speeds
        rows.append(
            dict(
                engine="MuJoCo",
                variant=variant["name"],
                events=None,
                creep_speed=float(np.max(np.abs(speeds[inside]), initial=0.0)),
                creep_spread=stick_spread(lengths, inside),
                gap=loop_gap(model, qpos[:: max(1, steps // 400)]),
                length_diff=float(np.max(np.abs(lengths - np.asarray(sol.q)))),
            )
        )
        starts = [mujoco_state(spec, q, v) for q, v, _ in members]
        controls = np.stack([c for _, _, c in members])
        mujoco_rollout(model, starts, controls, steps, 1)  # warm-up
        walls = [
            mujoco_rollout(model, starts, controls, steps, 1)[0] for _ in range(passes)
        ]
        single_walls = [
            mujoco_rollout(model, [start], ref_start[2][None], steps, 1)[0]
            for _ in range(passes)
        ]
        timings.append(
            dict(engine=f"MuJoCo {variant['name']}", threads=1,
                 single_ms=1e3 * min(single_walls),
                 batch_ms=1e3 * min(walls) / len(starts))
        )  # fmt: skip

    print(f"3-RPS, PD tracking for {t1} s, Coulomb {settings['fc']} N per leg:")
    print_table(
        rows,
        [
            ("engine", "engine", ""),
            ("variant", "variant", ""),
            ("events", "events", ""),
            ("creep_speed", "max |leg v| where jaxfric sticks (m/s)", ".1e"),
            ("creep_spread", "leg length spread per stick phase (m)", ".1e"),
            ("gap", "loop gap (m)", ".1e"),
            ("length_diff", "max |leg length - jaxfric's| (m)", ".1e"),
        ],
    )
    print_table(
        timings,
        [
            ("engine", "engine", ""),
            ("threads", "cores", ""),
            ("single_ms", "one run (ms)", ".1f"),
            ("batch_ms", f"batch of {len(scales)} (ms per sim)", ".2f"),
        ],
    )
    mj_rows = [r for r in rows if r["engine"] == "MuJoCo"]
    loose_rows = [r for r in rows[1:] if r["engine"] == "jaxfric"]
    best_mj = min(t["batch_ms"] for t in timings if t["engine"].startswith("MuJoCo"))
    jf_times = [t for t in timings if t["engine"].startswith("jaxfric")]
    claims = [
        claim(
            ok_all and rows[0]["events"] > 0,
            f"jaxfric: every batch member reaches t1 ({rows[0]['events']} events "
            "in the scale-1 run)",
        ),
        claim(
            stuck_speed == 0.0 and rows[0]["creep_spread"] == 0.0,
            f"jaxfric: stuck legs at velocity exactly 0.0 over the batch (max "
            f"{stuck_speed:.1e} m/s), length spread {rows[0]['creep_spread']:.1e} m",
        ),
        claim(
            gap_jf <= settings["checks"]["closure"],
            f"jaxfric: closure {gap_jf:.1e} m <= {settings['checks']['closure']:g} m",
        ),
        claim(
            all(r["creep_speed"] > 0.0 for r in mj_rows),
            "MuJoCo: legs creep where jaxfric holds them: "
            + ", ".join(
                f"{r['variant']} {r['creep_speed']:.1e} m/s, {r['creep_spread']:.1e} m "
                f"per phase, loop gap {r['gap']:.1e} m"
                for r in mj_rows
            ),
        ),
        *(
            claim(
                r["creep_speed"] == 0.0
                and r["creep_spread"] == 0.0
                and r["gap"] <= settings["checks"]["closure"],
                f"jaxfric {r['variant']}: stuck legs still exactly (0.0), closure "
                f"{r['gap']:.1e} m; leg lengths {r['length_diff']:.1e} m from the "
                "reference tolerances over the batch",
            )
            for r in loose_rows
        ),
        claim(
            timings[0]["batch_ms"] < best_mj,
            "speed, one core: jaxfric's batch "
            + ", ".join(f"{t['engine']} {t['batch_ms']:.2f}" for t in jf_times)
            + f" ms/sim against MuJoCo's best {best_mj:.2f} ms/sim "
            f"({timings[0]['batch_ms'] / best_mj:.2f}x at the reference tolerances)",
        ),
    ]
    ok = print_claims(claims)
    out = results_dir(NAME)
    _plot(np.asarray(ts), traces, stuck, out / "figure.png")
    write_json(
        {"accuracy": rows, "timings": timings, "claims": claims},
        out / "summary.json",
    )
    return ok


def _plot(ts, traces, stuck, path):
    """The velocity of the leg that sticks longest, every engine, at the saves;
    and its size on a log scale where jaxfric holds that leg stuck (jaxfric's
    exact 0.0 is drawn at 1e-18)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    k = int(np.argmax(stuck.sum(axis=0)))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for name, speeds in traces.items():
        top.plot(ts, speeds[:, k], label=name, lw=1.5 if name == "jaxfric" else 1)
        size = np.where(stuck[:, k], np.maximum(np.abs(speeds[:, k]), 1e-18), np.nan)
        bottom.semilogy(ts, size, ".", ms=3, label=name)
    top.set_ylabel(f"leg {k + 1} velocity (m/s)")
    top.legend(fontsize=7)
    bottom.set_ylabel(f"|leg {k + 1} velocity| while\njaxfric sticks (m/s)")
    bottom.set_xlabel("t (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def timed_runs(run, scales, passes):
    """``(sol, one run s, sols, batch s)``: `run` at scale 1 (`jax.jit`) and
    over `scales` (`jax.vmap`), each the best of `passes` warm calls."""
    single, batch = jax.jit(run), jax.jit(jax.vmap(run))
    one = jnp.asarray(1.0)
    sol = jax.block_until_ready(single(one))
    t_single, _ = best_time(single, (one,), passes)
    sols = jax.block_until_ready(batch(scales))
    t_batch, _ = best_time(batch, (scales,), passes)
    return sol, t_single, sols, t_batch


def closure_gap(chain):
    """A jitted ``q -> max |Φ|`` over independent coordinates of any leading
    shape (saves, members), m."""

    @jax.jit
    def gap(q):
        flat = q.reshape(-1, q.shape[-1])
        residual = jax.vmap(lambda z: chain.closure_residual(chain.assemble(z)))(flat)
        return jnp.max(jnp.abs(residual))

    return gap


def inside_stick(stuck):
    """The saves inside a stick phase, one save in from each of its ends (time
    along axis −2, legs last): where another engine's stops, a step apart from
    jaxfric's events, are still compared fairly."""
    inside = stuck & np.roll(stuck, 1, axis=-2) & np.roll(stuck, -1, axis=-2)
    inside[..., [0, -1], :] = False
    return inside


def leg_indices(model):
    """The legs' ``qpos`` and ``qvel`` addresses in a `mujoco_model`."""
    joints = [model.joint(name).id for name in rps.LEGS]
    return [model.jnt_qposadr[j] for j in joints], [model.jnt_dofadr[j] for j in joints]


def stick_spread(lengths, stuck) -> float:
    """The largest spread of a leg's length over one of its stick phases (runs
    of saves where `stuck`; time along axis −2, legs last, any leading members),
    m."""
    spread = 0.0
    for member in np.ndindex(stuck.shape[:-2]):
        for k in range(stuck.shape[-1]):
            for a, b in stick_phases(stuck[member][:, k]):
                spread = max(spread, float(np.ptp(lengths[member][a:b, k])))
    return spread


def loop_gap(model, qpos) -> float:
    """The largest distance between each leg tip and its platform point over
    the configurations `qpos`, m (MuJoCo's kinematics)."""
    import mujoco

    data = mujoco.MjData(model)
    gap = 0.0
    for q in qpos:
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        sites = {model.site(i).name: data.site_xpos[i] for i in range(model.nsite)}
        for a, b in (("t2", "p2"), ("t3", "p3")):
            gap = max(gap, float(np.linalg.norm(sites[a] - sites[b])))
    return gap


if __name__ == "__main__":
    sys.exit(0 if main(load_settings(NAME)) else 1)
