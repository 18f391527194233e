"""From a robot log to identified friction in the user's MuJoCo model, end to end.

"The robot" is MuJoCo simulating ``configs/robots/two_link_arm.xml``: a
horizontal two-link arm with ``frictionloss`` (0.3, 0.15 N·m), ``damping``
(0.05, 0.02 N·m·s/rad) and ``armature`` per joint, RK4 at 1e-4 s, its friction
constraint stiffened (``solreffriction`` 5e-4 s) so that it approaches Coulomb
friction. Sums of sines drive both motors for 8 s; the joint states (angle,
velocity, motor effort) are logged at 200 Hz into a ROS 2 bag
(`jaxfric.io.write_joint_states`, MCAP storage).

jaxfric then, as a user would:

1. loads the same MJCF (`jaxfric.io.load_mjcf`) with the friction and damping
   replaced by a start 50 % off;
2. reads the bag (`jaxfric.io.load_joint_states`: joints by name, resampled,
   efforts as the input torque);
3. identifies both Coulomb levels (static = kinetic, as MuJoCo's
   ``frictionloss``) and both damping coefficients with the exact switch path
   and Levenberg–Marquardt from the logged angles;
4. writes them into a copy of the MJCF (`jaxfric.io.export_mjcf`), and MuJoCo
   re-simulates that copy under the logged run's torques.

Checks: every identified value within 2 % of MuJoCo's (the remaining error is
MuJoCo's soft friction and the 200 Hz torque interpolation, not noise); the
exported file differs from the source only in the written attributes; the
re-simulation reproduces the log's angles (RMS error reported, against the
start model's for scale).

Run: ``python experiments/identify_from_log.py [SETTINGS.toml]``.
"""

import re
import shutil
import time

import numpy as np
from _common import (
    ROOT,
    claim,
    enable_float64,
    format_table,
    load_settings,
    parameter_claims,
    print_claims,
    print_load_average,
    results_dir,
    write_json,
)

enable_float64()

import mujoco  # noqa: E402

import jaxfric as jf  # noqa: E402
from jaxfric.identify import (  # noqa: E402
    LevenbergMarquardt,
    MultipleShooting,
    fit,
    from_record,
    predict,
)
from jaxfric.io import (  # noqa: E402
    export_mjcf,
    load_joint_states,
    load_mjcf,
    write_joint_states,
)

NAME = "identify_from_log"


def torques(settings, t):
    """Motor torques at times `t`, N·m, shape ``(len(t), 2)``."""
    t = np.atleast_1d(t)[:, None]
    out = []
    for a, f, p in zip(
        settings["amplitude"], settings["frequency"], settings["phase"], strict=True
    ):
        out.append(
            np.sum(np.asarray(a) * np.sin(2 * np.pi * np.asarray(f) * t + p), axis=1)
        )
    return np.stack(out, axis=1)


def run_mujoco(path, settings):
    """Simulate the MJCF at `path` from rest under the torques; the joint
    states at the log rate: ``(ts, q, qd, effort)``."""
    model = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(model)
    every = int(round(1.0 / (settings["log_rate"] * model.opt.timestep)))
    steps = int(round(settings["t1"] / model.opt.timestep))
    ts, q, qd, effort = [], [], [], []
    for k in range(steps + 1):
        if k % every == 0:
            # Logged before the step: the state at t and the torque applied from t.
            data.ctrl[:] = torques(settings, data.time)[0]
            mujoco.mj_forward(model, data)
            ts.append(data.time)
            q.append(data.qpos.copy())
            qd.append(data.qvel.copy())
            effort.append(data.actuator_force.copy())
        data.ctrl[:] = torques(settings, data.time)[0]
        mujoco.mj_step(model, data)
    return tuple(np.asarray(x) for x in (ts, q, qd, effort))


def main():
    settings = load_settings(NAME)
    out = results_dir(NAME)
    robot = ROOT / settings["robot"]
    joints = list(settings["joints"])
    claims = []

    # 1. The robot: MuJoCo, logged to a ROS 2 bag.
    t0 = time.perf_counter()
    ts, q_log, qd_log, effort = run_mujoco(robot, settings)
    bag = out / "log"
    shutil.rmtree(bag, ignore_errors=True)
    write_joint_states(
        bag, ts, joints, q_log, qd_log, effort, storage=settings["storage"]
    )
    print(f"MuJoCo run and bag: {time.perf_counter() - t0:.1f} s, {len(ts)} messages")

    # 2. jaxfric reads the model and the log.
    model_mj = mujoco.MjModel.from_xml_path(str(robot))
    truth_fc = np.asarray(model_mj.dof_frictionloss, float)
    truth_d = np.asarray(model_mj.dof_damping, float)
    factor = np.asarray(settings["start_factor"], float)
    system, _ = load_mjcf(robot, damping=truth_d * factor[1])
    law = jf.Coulomb(truth_fc * factor[0], static_ratio=1.0)
    record = load_joint_states(bag, joints, 1.0 / settings["log_rate"])
    experiment = from_record(record, q0=record.q[0], qd0=record.qd[0])
    print(
        f"record: {record.ts.shape[0]} samples of {record.q.shape[1]} joints, "
        f"inputs from the logged efforts"
    )

    # 3. Identify.
    t0 = time.perf_counter()
    result = fit(
        system,
        law,
        [experiment],
        free=lambda m: (m.friction.fc, m.system.damping),
        optimizer=LevenbergMarquardt(),
        max_steps=settings["max_steps"],
        # Windows restarted at the logged states: from a start 50 % off, one
        # 8 s shot of this arm drifts by radians and LM stalls (RMS 2 rad).
        shooting=MultipleShooting(settings["windows"], free_nodes=False),
        simulate_options=jf.SimulateOptions(max_events=settings["max_events"]),
        callback=lambda step, loss: print(f"  step {step}, loss {loss:.4e}"),
    )
    seconds = time.perf_counter() - t0
    fitted = np.concatenate(
        [np.asarray(result.model.friction.fc), np.asarray(result.model.system.damping)]
    )
    truth = np.concatenate([truth_fc, truth_d])
    start = truth * factor.reshape(-1)
    names = ("fc shoulder", "fc elbow", "damping shoulder", "damping elbow")
    errors = np.abs(fitted / truth - 1)
    rel_se = np.asarray(result.stderr) / np.abs(fitted)
    claims.append(
        claim(
            bool(result.converged) and result.num_failed_solves == 0,
            f"LM converged in {result.num_steps} steps, no failed solve",
        )
    )
    claims += parameter_claims(
        "identified vs MuJoCo's", names, errors, rel_se, settings["target"]
    )
    q_fit, _ = predict(result.model)
    fit_rms = float(np.sqrt(np.mean((np.asarray(q_fit)[0] - record.q) ** 2)))

    # 4. Export into a copy of the MJCF and re-simulate in MuJoCo.
    exported = out / "two_link_arm_fitted.xml"
    notes = export_mjcf(robot, exported, result.model.system, result.model.friction)
    source, written = robot.read_text(), exported.read_text()

    def strip(text):
        return re.sub(r"""\s(frictionloss|damping|armature)=(["']).*?\2""", "", text)

    claims.append(
        claim(
            strip(source) == strip(written) and source != written,
            "exported MJCF differs from the source only in frictionloss, damping, "
            "armature",
        )
    )
    back = mujoco.MjModel.from_xml_path(str(exported))
    reloaded = np.concatenate([back.dof_frictionloss, back.dof_damping])
    claims.append(
        claim(
            np.array_equal(reloaded, fitted),
            "MuJoCo reads the exported values bit for bit",
        )
    )
    start_file = out / "two_link_arm_start.xml"
    export_mjcf(robot, start_file, system, law)
    _, q_re, _, _ = run_mujoco(exported, settings)
    _, q_start, _, _ = run_mujoco(start_file, settings)
    rms_re = float(np.sqrt(np.mean((q_re - q_log) ** 2)))
    rms_start = float(np.sqrt(np.mean((q_start - q_log) ** 2)))
    claims.append(
        claim(
            rms_re < 0.1 * rms_start,
            f"MuJoCo re-simulation of the exported model vs the log: RMS "
            f"{rms_re:.3e} rad (start model {rms_start:.3e} rad; target < 1/10)",
        )
    )

    rows = [
        dict(name=n, truth=t, start=s, fit=f, error=100 * e, se=100 * r)
        for n, t, s, f, e, r in zip(
            names, truth, start, fitted, errors, rel_se, strict=True
        )
    ]
    columns = [
        ("name", "parameter", ""),
        ("truth", "MuJoCo", ".4f"),
        ("start", "start", ".4f"),
        ("fit", "jaxfric", ".5f"),
        ("error", "error %", ".3f"),
        ("se", "std err %", ".3f"),
    ]
    print(format_table(rows, columns))
    print(
        f"fit: {result.num_steps} LM steps, {seconds:.1f} s with compilation; "
        f"jaxfric vs log RMS {fit_rms:.3e} rad"
    )
    for note in notes:
        print(f"export note: {note}")
    print_load_average()
    ok = print_claims(claims)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for i, ax in enumerate(axes):
        ax.plot(ts, q_log[:, i], "k", lw=2, label="log (MuJoCo, true friction)")
        ax.plot(record.ts, np.asarray(q_fit)[0][:, i], "C0--", label="jaxfric fit")
        ax.plot(ts, q_re[:, i], "C1:", label="MuJoCo, exported model")
        ax.plot(ts, q_start[:, i], "C3", alpha=0.5, label="MuJoCo, start model")
        ax.set_ylabel(f"{joints[i]} angle (rad)")
    axes[0].legend(fontsize=8)
    axes[1].set_xlabel("t (s)")
    fig.tight_layout()
    fig.savefig(out / "figure.png", dpi=120)
    write_json(
        {
            "parameters": dict(zip(names, fitted.tolist(), strict=True)),
            "truth": dict(zip(names, truth.tolist(), strict=True)),
            "relative_error": dict(zip(names, errors.tolist(), strict=True)),
            "fit_seconds": seconds,
            "lm_steps": int(result.num_steps),
            "rms_fit_rad": fit_rms,
            "rms_resim_rad": rms_re,
            "rms_start_rad": rms_start,
            "notes": list(notes),
            "claims": claims,
        },
        out / "summary.json",
    )
    print(f"wrote {out / 'figure.png'} and {out / 'summary.json'}")
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
