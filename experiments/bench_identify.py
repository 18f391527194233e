"""Benchmark: time to identify Stribeck friction (fc, fs, vs, fv) to 2 % on every
parameter, 1-DoF mass on a spring driven by sines, 1 % noisy positions, start
50 % off: the identify_stribeck_1dof problem (its four records, noise, weights
and first start, built by `_stribeck_1dof.py` from
``configs/experiments/identify_stribeck_1dof.toml``).

- (a) `jaxfric.identify.fit` with Adam;
- (b) `jaxfric.identify.fit` with the built-in Levenberg–Marquardt;
- (c) `scipy.optimize.least_squares` (trust-region reflective, 2-point
  finite-difference Jacobian, the same weighted residuals) over an event-driven
  `scipy.integrate.solve_ivp` simulation of the same stick–slip model
  (written here, independently of jaxfric: slip segments end when the
  velocity reaches zero, stick segments when the spring and input force reach
  the static level);
- (d) the linear least-squares baseline (Coulomb + viscous, its accuracy).

Times: jaxfric's first call includes compilation; the warm call reuses it. The
steps to 2 % come from each fit's parameter history; the time to 2 % is that
fraction of the warm call. scipy's time is the whole solve (checked to reach 2 %).
Target (issue 5): (b) at least 10x faster than (c).

Run: ``python experiments/bench_identify.py [SETTINGS.toml]``.
"""

import os
import time

import numpy as np
import scipy.integrate
import scipy.optimize
from _common import (
    enable_float64,
    format_table,
    load_settings,
    results_dir,
    write_json,
)

enable_float64()

from _stribeck_1dof import PARAMS, build, free, load_setup  # noqa: E402

from jaxfric.identify import (  # noqa: E402
    LevenbergMarquardt,
    default_adam,
    fit,
    linear_least_squares,
)

NAME = "bench_identify"

# The problem (system, records, noise, starts) comes from the
# identify_stribeck_1dof settings; these are the benchmark's own.
DEFAULT_SETTINGS = {
    "target": 0.02,
    "min_speedup": 10.0,
    "adam": {"learning_rate": 0.05, "max_steps": 400},
    # alt_tau: a second LM run with a larger initial damping (reported beside
    # the default; the claim is on the default).
    "lm": {"max_steps": 80, "alt_tau": 0.01},
    "scipy": {"rtol": 1e-8, "atol": 1e-10, "max_nfev": 400},
}


# ---------------------------------------------------------------------------
# Independent event-driven reference: m x'' + k x = A sin(w t) - f.


def scipy_simulate(params, system, amp, omega, ts, rtol, atol):
    """Positions at `ts` of ``m x'' + k x = amp sin(omega t) − f`` with Stribeck
    friction `params` = (fc, fs, vs, fv), from rest at x = 0."""
    fc, fs, vs, fv = params
    m, k = system["mass"], system["stiffness"]

    def applied(t, x):
        return amp * np.sin(omega * t) - k * x

    def slip_rhs(direction):
        def rhs(t, y):
            x, v = y
            g = fc + (fs - fc) * np.exp(-((v / vs) ** 2))
            return [v, (applied(t, x) - direction * g - fv * v) / m]

        return rhs

    def stop_at_zero_velocity(t, y):
        return y[1]

    stop_at_zero_velocity.terminal = True

    def breakaway(t, y):
        return abs(applied(t, y[0])) - fs

    breakaway.terminal = True
    breakaway.direction = 1

    t, x, v = ts[0], 0.0, 0.0
    out = np.empty(ts.size)
    mode = 0 if abs(applied(t, x)) <= fs else int(np.sign(applied(t, x)))
    t1 = ts[-1]
    for _ in range(10_000):
        if t >= t1:
            break
        if mode == 0:
            sol = scipy.integrate.solve_ivp(
                lambda t, y: [0.0, 0.0],
                (t, t1),
                [x, 0.0],
                events=breakaway,
                rtol=rtol,
                atol=atol,
                max_step=0.01,
            )
            seg_end = sol.t_events[0][0] if sol.t_events[0].size else t1
            mask = (ts >= t) & (ts <= seg_end)
            out[mask] = x
            t = seg_end
            mode = int(np.sign(applied(t, x)))
        else:
            stop_at_zero_velocity.direction = -mode
            sol = scipy.integrate.solve_ivp(
                slip_rhs(mode),
                (t, t1),
                [x, v],
                events=stop_at_zero_velocity,
                rtol=rtol,
                atol=atol,
                dense_output=True,
            )
            seg_end = sol.t_events[0][0] if sol.t_events[0].size else t1
            mask = (ts >= t) & (ts <= seg_end)
            out[mask] = sol.sol(ts[mask])[0]
            x = float(sol.sol(seg_end)[0])
            v = 0.0
            t = seg_end
            net = applied(t, x)
            mode = 0 if abs(net) <= fs else int(np.sign(net))
    return out


def main():
    settings = load_settings(NAME, DEFAULT_SETTINGS)
    setup = load_setup()
    data = build(setup)
    truth, ts = data.truth, data.ts
    rec = setup["records"]
    records = list(zip(rec["amplitude"], rec["omega"], strict=True))
    sp = settings["scipy"]

    def scipy_records(p):
        return [
            scipy_simulate(p, setup["system"], a, w, ts, sp["rtol"], sp["atol"])
            for a, w in records
        ]

    # The independent scipy model agrees with jaxfric's switch path.
    agreement = float(
        max(
            np.max(np.abs(x - q[:, 0]))
            for x, q in zip(scipy_records(truth), data.clean, strict=True)
        )
    )
    start = np.asarray(
        [getattr(data.starts[0], p) for p in PARAMS], dtype=float
    ).ravel()
    target = settings["target"]
    rows = []

    # (a), (b): jaxfric.
    for label, optimizer, steps in (
        (
            "(a) jaxfric Adam",
            default_adam(
                settings["adam"]["learning_rate"], settings["adam"]["max_steps"]
            ),
            settings["adam"]["max_steps"],
        ),
        (
            "(b) jaxfric Levenberg–Marquardt",
            LevenbergMarquardt(),
            settings["lm"]["max_steps"],
        ),
        (
            f"(b') jaxfric LM, tau = {settings['lm']['alt_tau']:g}",
            LevenbergMarquardt(tau=settings["lm"]["alt_tau"]),
            settings["lm"]["max_steps"],
        ),
    ):
        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            result = fit(
                data.system,
                data.starts[0],
                data.experiments,
                free=free,
                optimizer=optimizer,
                max_steps=steps,
                position_weight=data.weights,
            )
            times.append(time.perf_counter() - t0)
        err = np.abs(result.parameter_history - truth) / truth
        hit = np.flatnonzero(np.all(err <= target, axis=1))
        steps_to = int(hit[0]) + 1 if hit.size else None
        rows.append(
            dict(
                method=label,
                first=times[0],
                warm=times[1],
                steps=result.num_steps,
                steps_to=steps_to,
                to_target=(times[1] * steps_to / result.num_steps)
                if hit.size
                else None,
                max_err=100 * float(np.max(np.abs(result.values - truth) / truth)),
                per_step=times[1] / result.num_steps,
            )
        )

    # (c): scipy least_squares with finite differences over solve_ivp, on the
    # same residuals (each record divided by its noise level).
    noisy = [q[:, 0] for q in data.noisy]

    evaluations = []  # (seconds since start, parameters) per residual call

    def residual(p):
        evaluations.append((time.perf_counter() - t0, np.array(p)))
        return np.concatenate(
            [
                (x - y) / s
                for x, y, s in zip(scipy_records(p), noisy, data.sigma, strict=True)
            ]
        )

    t0 = time.perf_counter()
    ls = scipy.optimize.least_squares(
        residual,
        start,
        jac="2-point",
        method="trf",
        bounds=(np.full(4, 1e-6), np.full(4, np.inf)),
        max_nfev=sp["max_nfev"],
        x_scale=start,
    )
    scipy_s = time.perf_counter() - t0
    scipy_err = np.abs(ls.x - truth) / truth
    # Generous to scipy: the time of its first residual evaluation (finite-
    # difference probes included) at a point within the target.
    within = [
        (t, k + 1)
        for k, (t, p) in enumerate(evaluations)
        if np.all(np.abs(p - truth) / truth <= target)
    ]
    rows.append(
        dict(
            method="(c) scipy least_squares + solve_ivp",
            first=scipy_s,
            warm=scipy_s,
            steps=int(ls.nfev),
            steps_to=within[0][1] if within else None,
            to_target=within[0][0] if within else None,
            max_err=100 * float(np.max(scipy_err)),
            per_step=scipy_s / ls.nfev,
        )
    )

    # (d): linear least squares (Coulomb + viscous), its final accuracy.
    t0 = time.perf_counter()
    lins = [
        linear_least_squares(ts, q, a * np.sin(w * ts), stiffness=True, window=31)
        for q, (a, w) in zip(noisy, records, strict=True)
    ]
    lin_s = time.perf_counter() - t0
    lin_fc = float(np.mean([lin.params["fc_pos"][0] for lin in lins]))
    lin_fv = float(np.mean([lin.params["fv"][0] for lin in lins]))
    lin_err = [abs(lin_fc - truth[0]) / truth[0], abs(lin_fv - truth[3]) / truth[3]]
    rows.append(
        dict(
            method="(d) linear least squares (fc, fv only)",
            first=lin_s,
            warm=lin_s,
            steps=1,
            steps_to=None,
            to_target=None,
            max_err=100 * float(max(lin_err)),
        )
    )

    lm_row, scipy_row = rows[1], rows[3]
    speedup = (
        scipy_row["to_target"] / lm_row["to_target"]
        if lm_row["to_target"] and scipy_row["to_target"]
        else None
    )
    alt = rows[2]
    speedup_alt = (
        scipy_row["to_target"] / alt["to_target"]
        if alt["to_target"] and scipy_row["to_target"]
        else None
    )
    load = os.getloadavg()
    table = format_table(
        rows,
        [
            ("method", "method", ""),
            ("first", "first call s", ".2f"),
            ("warm", "warm call s", ".3f"),
            ("steps", "steps / nfev", ""),
            ("steps_to", f"steps to {100 * target:g} %", ""),
            ("to_target", f"time to {100 * target:g} % s", ".3f"),
            ("max_err", "final max err %", ".3f"),
            ("per_step", "s per step / eval", ".3f"),
        ],
    )
    print(table)
    print(
        f"\nscipy model vs jaxfric switch path, max |x| difference: {agreement:.2e} m"
    )
    if speedup_alt:
        print(f"{alt['method']} vs scipy, time to target: {speedup_alt:.1f}x")
    print(f"load average (1, 5, 15 min): {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    holds = speedup is not None and speedup >= settings["min_speedup"]
    print(
        f"{'PASS' if holds else 'FAIL'}  claim: (b) LM at least "
        f"{settings['min_speedup']:g}x faster than (c) scipy to "
        f"{100 * target:g} % on every parameter: "
        + (f"{speedup:.1f}x" if speedup else "n/a (one did not reach the target)")
    )

    folder = results_dir(NAME)
    write_json(
        dict(
            settings=settings,
            rows=rows,
            scipy_x=ls.x,
            scipy_model_agreement_m=agreement,
            speedup_lm_vs_scipy=speedup,
            speedup_alt_tau_vs_scipy=speedup_alt,
            claim=f"(b) at least {settings['min_speedup']:g}x faster than (c)",
            claim_holds=holds,
            load_average=load,
            setup=setup,
            linear=dict(fc=lin_fc, fv=lin_fv),
        ),
        folder / "summary.json",
    )
    _figure(folder / "figure.png", rows, target)
    print(f"wrote {folder / 'figure.png'} and {folder / 'summary.json'}")


def _figure(path, rows, target):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    labels = [r["method"] for r in rows[:4]]
    values = [r["to_target"] or np.nan for r in rows[:4]]
    ax.barh(labels, values, color=["C0", "C1", "C3", "C2"])
    ax.set_xscale("log")
    ax.set_xlabel(f"time to {100 * target:g} % on every parameter (s, warm)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
