"""A solid sphere on an incline: exact isotropic Coulomb friction (jaxfric)
against MuJoCo's soft contact, both against the closed form.

Released from rest on a plane inclined by ``θ`` with friction coefficient
``μ``: a solid sphere rolls without slipping while ``tan θ <= 3.5 μ`` (the
friction rolling needs, ``(2/7) m g sin θ``, is within ``μ m g cos θ``), with
centre acceleration ``(5/7) g sin θ`` and its contact point still; on a steeper
plane it slips, the centre accelerating at ``g (sin θ − μ cos θ)`` and the
contact slip growing at ``g (sin θ − 3.5 μ cos θ)``.

- jaxfric: `FreeBodies` with a `PlaneContact` (penalty normal force, resting at
  its static penetration) and `IsotropicCoulomb` on the switch path; the
  incline is the gravity vector tilted by ``θ`` in the plane's frame.
- MuJoCo: a free sphere on a plane with the same tilted gravity, ``condim 3``,
  sliding friction ``μ`` (``timestep`` from the settings), default solver
  settings and an elliptic cone with ``noslip_iterations``.

Reported per case and engine: the centre velocity at ``t1`` against the closed
form, the largest contact-point slip speed while the sphere should roll (the
creep), the contact point's travel relative to the plane over the run, and the
time per simulation (jaxfric after compilation). Writes
``results/incline_creep/figure.png`` and ``summary.json``.

Run: ``python experiments/incline_creep.py [SETTINGS.toml]``.
"""

import time

import jax
import jax.numpy as jnp
import numpy as np
from _common import (
    claim,
    enable_float64,
    load_settings,
    print_claims,
    print_table,
    results_dir,
    write_json,
)

enable_float64()

import jaxfric as jf  # noqa: E402

NAME = "incline_creep"


def tilted_gravity(g: float, angle: float) -> np.ndarray:
    """Gravity in the plane's frame (``x`` down the slope, ``z`` normal), m/s²."""
    return np.array([g * np.sin(angle), 0.0, -g * np.cos(angle)])


def closed_form(case, sphere, ts):
    """``(centre velocity, contact slip velocity)`` along the slope at `ts`."""
    g, angle, mu = float(sphere["gravity"]), np.radians(case["angle_deg"]), case["mu"]
    if np.tan(angle) <= 3.5 * mu:
        return 5 / 7 * g * np.sin(angle) * ts, 0.0 * ts
    centre = g * (np.sin(angle) - mu * np.cos(angle)) * ts
    return centre, g * (np.sin(angle) - 3.5 * mu * np.cos(angle)) * ts


def run_jaxfric(case, settings):
    """The exact law; returns ``(ts, centre velocity, contact slip, wall s)``."""
    sphere, exp = settings["sphere"], settings["experiment"]
    mass, radius = float(sphere["mass"]), float(sphere["radius"])
    stiffness = float(sphere["contact_stiffness"])
    gravity = tilted_gravity(float(sphere["gravity"]), np.radians(case["angle_deg"]))
    system = jf.systems.FreeBodies(
        mass,
        [0.4 * mass * radius**2] * 3,
        gravity=tuple(gravity),
        contact=jf.systems.PlaneContact(
            radius, stiffness, float(sphere["contact_damping"])
        ),
    )
    height = radius + mass * gravity[2] / stiffness  # static penetration
    q0 = jnp.array([0.0, 0.0, height, 1.0, 0.0, 0.0, 0.0])
    law = jf.friction.IsotropicCoulomb(mu=case["mu"])

    @jax.jit
    def simulate(q0):
        return jf.simulate(
            system, law, q0, jnp.zeros(6), t1=exp["t1"], num_save=exp["num_save"],
            throw=False,
        )  # fmt: skip

    sol = simulate(q0)
    sol.q.block_until_ready()
    start = time.perf_counter()
    sol = simulate(q0)
    sol.q.block_until_ready()
    wall = time.perf_counter() - start
    result = "successful" if sol.result == jf.RESULTS.successful else str(sol.result)
    slip = np.linalg.norm(np.asarray(sol.slip_velocity), axis=1)
    return np.asarray(sol.ts), np.asarray(sol.qd)[:, 0], slip, wall, result


def mujoco_sphere(mass, radius, mu, gravity, dt, option):
    """MuJoCo's free solid sphere (``condim 3``, sliding friction `mu`) on the
    plane ``z = 0``, its centre at ``(0, 0, radius)``; `gravity` (3,) m/s²,
    timestep `dt` s, `option` the extra ``<option>`` attributes."""
    import mujoco

    attributes = " ".join(f'{k}="{v}"' for k, v in option.items())
    inertia = 0.4 * mass * radius**2
    xml = f"""
    <mujoco>
      <option timestep="{dt}" gravity="{gravity[0]} {gravity[1]} {gravity[2]}"
              {attributes}/>
      <worldbody>
        <geom type="plane" size="50 50 0.1" friction="{mu} 0 0"/>
        <body pos="0 0 {radius}">
          <freejoint/>
          <geom type="sphere" size="{radius}" mass="{mass}"
                friction="{mu} 0 0" condim="3"/>
          <inertial pos="0 0 0" mass="{mass}"
                    diaginertia="{inertia} {inertia} {inertia}"/>
        </body>
      </worldbody>
    </mujoco>"""
    return mujoco.MjModel.from_xml_string(xml)


def run_mujoco(case, settings, variant):
    """MuJoCo; returns ``(ts, centre velocity, contact slip, wall s)``."""
    import mujoco

    sphere, exp = settings["sphere"], settings["experiment"]
    mass, radius = float(sphere["mass"]), float(sphere["radius"])
    gravity = tilted_gravity(float(sphere["gravity"]), np.radians(case["angle_deg"]))
    dt = float(settings["mujoco"]["timestep"])
    model = mujoco_sphere(mass, radius, case["mu"], gravity, dt, variant["option"])
    data = mujoco.MjData(model)
    t1, num = float(exp["t1"]), int(exp["num_save"])
    steps = int(round(t1 / dt))
    every = steps // (num - 1)
    ts, centre, slip = [0.0], [0.0], [0.0]
    velocity = np.zeros(6)
    start = time.perf_counter()
    for k in range(1, steps + 1):
        mujoco.mj_step(model, data)
        if k % every == 0:
            # World-frame [angular; linear] velocity at the sphere's centre.
            mujoco.mj_objectVelocity(
                model, data, mujoco.mjtObj.mjOBJ_BODY, 1, velocity, 0
            )
            omega, v = velocity[:3], velocity[3:]
            contact = v + np.cross(omega, [0.0, 0.0, -radius])
            ts.append(data.time)
            centre.append(v[0])
            slip.append(float(np.linalg.norm(contact[:2])))
    wall = time.perf_counter() - start
    return np.array(ts), np.array(centre), np.array(slip), wall, "successful"


def summarise(case, engine, run, settings):
    ts, centre, slip, wall, result = run
    ref_centre, ref_slip = closed_form(case, settings["sphere"], ts)
    rolls = np.tan(np.radians(case["angle_deg"])) <= 3.5 * case["mu"]
    travel = float(np.sum(0.5 * (slip[1:] + slip[:-1]) * np.diff(ts)))
    return {
        "case": case["name"],
        "engine": engine,
        "result": result,
        "v_t1": float(centre[-1]),
        "v_t1_error": float(centre[-1] / ref_centre[-1] - 1),
        "slip_t1": float(slip[-1]),
        "slip_t1_closed": float(abs(ref_slip[-1])),
        "max_slip_rolling": float(np.max(slip)) if rolls else None,
        "contact_travel": travel if rolls else None,
        "wall_ms": 1e3 * wall,
    }


def make_figure(curves, settings):
    from matplotlib.figure import Figure

    cases = settings["cases"]
    fig = Figure(figsize=(12.0, 4.5 * len(cases)), layout="constrained")
    axes = fig.subplots(len(cases), 2, squeeze=False)
    for i, case in enumerate(cases):
        for engine, (ts, centre, slip, *_) in curves[case["name"]].items():
            ref, _ = closed_form(case, settings["sphere"], ts)
            axes[i, 0].plot(ts, centre - ref, label=engine, lw=1.0)
            axes[i, 1].semilogy(ts[1:], np.maximum(slip[1:], 1e-20), label=engine)
        axes[i, 0].set(title=f"{case['name']}: centre velocity − closed form",
                       xlabel="t [s]", ylabel="m/s")  # fmt: skip
        axes[i, 1].set(title="contact-point slip speed", xlabel="t [s]",
                       ylabel="m/s (floored at 1e-20)")  # fmt: skip
        axes[i, 0].legend(fontsize=7)
    return fig


def main():
    settings = load_settings(NAME)
    rows, curves = [], {}
    for case in settings["cases"]:
        curves[case["name"]] = {}
        runs = [("jaxfric IsotropicCoulomb (exact)", run_jaxfric(case, settings))]
        for variant in settings["mujoco"]["variants"]:
            runs.append((variant["name"], run_mujoco(case, settings, variant)))
        for engine, run in runs:
            curves[case["name"]][engine] = run
            rows.append(summarise(case, engine, run, settings))
    columns = [
        ("case", "case", ""),
        ("engine", "engine", ""),
        ("v_t1", "v(t1) [m/s]", ".9f"),
        ("v_t1_error", "v(t1)/closed − 1", ".1e"),
        ("slip_t1", "slip(t1) [m/s]", ".2e"),
        ("slip_t1_closed", "closed slip(t1)", ".3f"),
        ("max_slip_rolling", "max slip rolling [m/s]", ".1e"),
        ("contact_travel", "contact travel [m]", ".1e"),
        ("wall_ms", "wall [ms]", ".1f"),
        ("result", "result", ""),
    ]
    table = print_table(rows, columns)
    c = settings["claims"]
    claims = []
    for r in rows:
        label = f"{r['case']} | {r['engine']}"
        if not r["engine"].startswith("jaxfric"):
            if r["max_slip_rolling"] is not None:
                text = (
                    f"{label}: contact slips while it should roll, max "
                    f"{r['max_slip_rolling']:.1e} m/s, travel "
                    f"{r['contact_travel']:.1e} m (reported)"
                )
                claims.append(claim(True, text))
            continue
        claims.append(
            claim(
                abs(r["v_t1_error"]) <= c["velocity_rtol"],
                f"{label}: v(t1)/closed form − 1 = {r['v_t1_error']:.1e}; target "
                f"|.| <= {c['velocity_rtol']:g}",
            )
        )
        if r["max_slip_rolling"] is not None:
            claims.append(
                claim(
                    r["max_slip_rolling"] <= c["rolling_slip"],
                    f"{label}: max contact slip while rolling "
                    f"{r['max_slip_rolling']:.1e} m/s; target <= {c['rolling_slip']:g}",
                )
            )
    print_claims(claims)
    out_dir = results_dir(NAME)
    make_figure(curves, settings).savefig(out_dir / "figure.png", dpi=130)
    write_json(
        {
            "experiment": NAME,
            "settings": settings,
            "rows": rows,
            "table_markdown": table,
            "claims": claims,
            "notes": {
                "contact_travel": "integral of the contact point's slip speed over "
                "the run (0 for rolling without slip)",
                "wall_ms": "one simulation; jaxfric after compilation (jit), MuJoCo "
                "mj_step in a Python loop with velocity readout every save",
            },
        },
        out_dir / "summary.json",
    )
    print(f"wrote {out_dir / 'figure.png'} and {out_dir / 'summary.json'}")


if __name__ == "__main__":
    main()
