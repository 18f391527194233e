"""The main demo: exact stick-slip, its gradient, and what smoothing does instead.

The Quinn/Farhat oscillator ``ẍ + x = −f``, Coulomb ``Fc = 1``, ``x(0) = 2.75``,
``ẋ(0) = 0`` (Farhat et al. 2010, Sec. 5.1). Exact answer: one half swing, then stuck
from ``t = π`` at ``x = −0.75`` for ever, so
``x(T) = 2·Fc − x0`` and ``dx(T)/d(Fc, x0) = (2, −1)``.

Writes results/demo/{figure.png, summary.json} and prints what it checks.
"""

import time

import jax
import numpy as np
from _common import enable_float64, format_table, results_dir, write_json

enable_float64()
import jaxfric as jf  # noqa: E402

T1 = 10.0
X0 = 2.75
system = jf.systems.Oscillator(mass=1.0, stiffness=1.0)


@jax.jit
def exact(fc, x0):
    return jf.simulate(system, jf.Coulomb(fc), x0, 0.0, T1)


@jax.jit
def smoothed(eps):
    law = jf.Regularized(jf.Coulomb(1.0), eps)
    return jf.simulate(system, law, X0, 0.0, T1)


def final_position(fc, x0):
    return exact(fc, x0).q[-1, 0]


def main():
    start = time.perf_counter()
    sol = exact(1.0, X0)
    jax.block_until_ready(sol.q)
    wall = time.perf_counter() - start
    ts, x, v = np.asarray(sol.ts), np.asarray(sol.q[:, 0]), np.asarray(sol.qd[:, 0])
    stuck = ts > np.pi + 1e-6
    grad = jax.grad(final_position, argnums=(0, 1))(1.0, X0)
    events = np.asarray(sol.event_times)
    rows = [
        {
            "model": "exact switch (jf.Coulomb)",
            "x_end": x[-1],
            "err": abs(x[-1] + 0.75),
            "creep": np.ptp(x[stuck]),
            "vmax": np.abs(v[stuck]).max(),
            "evals": int(sol.stats["num_vf_evals"]),
        }
    ]
    for eps in (1e-2, 1e-4):
        s = smoothed(eps)
        xs, vs = np.asarray(s.q[:, 0]), np.asarray(s.qd[:, 0])
        rows.append(
            {
                "model": f"Regularized tanh, eps={eps:g}",
                "x_end": xs[-1],
                "err": abs(xs[-1] + 0.75),
                "creep": np.ptp(xs[stuck]),
                "vmax": np.abs(vs[stuck]).max(),
                "evals": int(s.stats["num_vf_evals"]),
            }
        )
    print(
        format_table(
            rows,
            [
                ("model", "model", ""),
                ("x_end", "x(10)", ".12f"),
                ("err", "|x(10) + 0.75|", ".2e"),
                ("creep", "creep for t > π", ".2e"),
                ("vmax", "max |v| for t > π", ".2e"),
                ("evals", "vf evals", "d"),
            ],
        )
    )
    first = events[np.isfinite(events)]
    print(f"\nevent times: {first}  (exact stick at π = {np.pi:.12f})")
    print(f"d x(10) / d(Fc, x0) = ({grad[0]:.10f}, {grad[1]:.10f})   analytic (2, -1)")
    print(f"first call incl. compile: {wall:.2f} s")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(ts, x, label="exact switch (Coulomb)", lw=2)
    for eps in (1e-2,):
        s = smoothed(eps)
        ax.plot(ts, np.asarray(s.q[:, 0]), "--", label=f"Regularized tanh eps={eps:g}")
    ax.axhline(-0.75, color="k", lw=0.5)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("x [m]")
    ax.legend()
    ax.set_title("ẍ + x = −Fc·sgn(ẋ): stick at x = −0.75 from t = π")
    out = results_dir("demo")
    fig.savefig(out / "figure.png", dpi=120, bbox_inches="tight")
    write_json(
        {
            "rows": rows,
            "event_times": first,
            "grad_final_position_wrt_fc_x0": [float(grad[0]), float(grad[1])],
        },
        out / "summary.json",
    )
    print(f"wrote {out / 'figure.png'} and {out / 'summary.json'}")
    assert abs(x[-1] + 0.75) < 1e-9 and np.all(v[stuck] == 0.0)
    assert abs(grad[0] - 2.0) < 1e-6 and abs(grad[1] + 1.0) < 1e-6


if __name__ == "__main__":
    main()
