"""Benchmark of issue 19, item 2: what saving a trajectory costs.

1000 free Coulomb oscillators (unit mass and stiffness, released at rest from
``x0`` evenly spaced over ``x0_range``) on the exact switch path under `jax.vmap`,
saving ``num_save`` uniform times over ``[0, t1]`` (2: the initial and final
states only). For each ``num_save``: the batch's forward time and that of the
gradient of the sum of all saved positions with respect to the Coulomb level
(``vmap`` of ``jax.grad``, the default checkpointed adjoint), best of
``repeats`` warm calls; the batch's forward time with
``adjoint=diffrax.ForwardMode()`` (the save path of forward-mode runs:
`StepSaves` for up to 64 save times per segment, against 4 under the default
adjoint) and its largest difference from the default's positions; the same
for one unbatched simulation; the steps taken
(the switch path ends a segment every ``⌈(num_save − 1)/32⌉``-th save time);
and the largest error against the exact solution (Den Hartog 1931) over all
saved times. Prints the table with the load average and issue 19's targets
(time with ``num_save`` over time with 2) as PASS/FAIL; writes
``results/bench_saving/summary.json`` and ``figure.png``.

Run: ``python experiments/bench_saving.py [SETTINGS.toml]``.
"""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
from _common import (
    best_time,
    claim,
    enable_float64,
    exact_free,
    load_average,
    load_settings,
    print_claims,
    print_table,
    results_dir,
    write_json,
)

enable_float64()

import jaxfric as jf  # noqa: E402

NAME = "bench_saving"


def runners(settings, num_save):
    """Jitted ``(batch forward, batch gradient, single forward, batch forward
    with diffrax.ForwardMode)`` functions."""
    system = jf.systems.Oscillator(mass=1.0, stiffness=1.0)
    t1 = settings["t1"]

    def sim(fc, x0, adjoint=None):
        return jf.simulate(
            system,
            jf.Coulomb(fc),
            x0,
            0.0,
            t1,
            num_save=num_save,
            adjoint=adjoint,
            throw=False,
        )

    def total(fc, x0):
        return jnp.sum(sim(fc, x0).q)

    def forward_mode(fc, x0):
        return sim(fc, x0, diffrax.ForwardMode())

    batch = jax.jit(jax.vmap(sim, in_axes=(None, 0)))
    grad = jax.jit(jax.vmap(jax.grad(total), in_axes=(None, 0)))
    single = jax.jit(sim)
    batch_forward_mode = jax.jit(jax.vmap(forward_mode, in_axes=(None, 0)))
    return batch, grad, single, batch_forward_mode


def main():
    settings = load_settings(NAME)
    if 2 not in settings["num_saves"]:
        raise ValueError("bench_saving.toml: num_saves must hold 2 (the baseline)")
    repeats = settings["repeats"]
    fc = jnp.asarray(settings["fc"])
    x0 = np.linspace(*settings["x0_range"], settings["batch"])
    rows = []
    for num_save in settings["num_saves"]:
        batch, grad, single, batch_forward_mode = runners(settings, num_save)
        ts = np.linspace(0.0, settings["t1"], num_save)
        forward_s, sol = best_time(batch, (fc, jnp.asarray(x0)), repeats)
        forward_mode_s, sol_fm = best_time(
            batch_forward_mode, (fc, jnp.asarray(x0)), repeats
        )
        grad_s, g = best_time(grad, (fc, jnp.asarray(x0)), repeats)
        single_s, _ = best_time(
            single, (fc, jnp.asarray(settings["single_x0"])), repeats
        )
        exact, _ = exact_free(x0, ts, settings["fc"])
        rows.append(
            dict(
                num_save=num_save,
                forward_ms=forward_s * 1e3,
                forward_mode_ms=forward_mode_s * 1e3,
                forward_mode_diff=float(np.max(np.abs(np.asarray(sol_fm.q - sol.q)))),
                grad_ms=grad_s * 1e3,
                single_ms=single_s * 1e3,
                mean_steps=float(np.mean(sol.stats["num_steps"])),
                max_steps=int(np.max(sol.stats["num_steps"])),
                error=float(np.max(np.abs(np.asarray(sol.q[..., 0]) - exact))),
                grad_finite=bool(np.all(np.isfinite(np.asarray(g)))),
                ok=bool(jnp.all(sol.result == jf.RESULTS.successful)),
                load=load_average(),
            )
        )
        print(
            f"num_save {num_save}: forward {rows[-1]['forward_ms']:.1f} ms, "
            f"grad {rows[-1]['grad_ms']:.1f} ms",
            flush=True,
        )
    base = next(r for r in rows if r["num_save"] == 2)
    for r in rows:
        for key in ("forward", "forward_mode", "grad", "single"):
            r[f"{key}_ratio"] = r[f"{key}_ms"] / base[f"{key}_ms"]
    print_table(
        rows,
        [
            ("num_save", "saved times", "d"),
            ("forward_ms", "vmap forward ms", ".1f"),
            ("forward_ratio", "× 2 saves", ".2f"),
            ("forward_mode_ms", "ForwardMode ms", ".1f"),
            ("forward_mode_ratio", "× 2 saves", ".2f"),
            ("grad_ms", "vmap grad ms", ".1f"),
            ("grad_ratio", "× 2 saves", ".2f"),
            ("single_ms", "single ms", ".3f"),
            ("single_ratio", "× 2 saves", ".2f"),
            ("mean_steps", "mean steps", ".1f"),
            ("error", "max |x − exact|", ".1e"),
        ],
    )
    targets = {int(k): v for k, v in settings["targets"].items()}
    missing = set(targets) - {r["num_save"] for r in rows}
    if missing:
        raise ValueError(
            f"bench_saving.toml: targets {sorted(missing)} are not in num_saves"
        )
    claims = [
        claim(
            r["forward_ratio"] <= targets[r["num_save"]],
            f"{r['num_save']} saved times cost {r['forward_ratio']:.2f}× the final "
            f"state alone on the vmap batch (target {targets[r['num_save']]:g}×)",
            measured=r["forward_ratio"],
        )
        for r in rows
        if r["num_save"] in targets
    ]
    claims.append(
        claim(
            all(r["error"] <= settings["error"] and r["ok"] for r in rows),
            "every case solved, largest error against the exact solution "
            f"{max(r['error'] for r in rows):.1e} (≤ {settings['error']:g})",
            measured=max(r["error"] for r in rows),
        )
    )
    claims.append(
        claim(
            all(r["forward_mode_diff"] <= settings["adjoints_agree"] for r in rows),
            "forward mode's positions (its save path) agree with the default's to "
            f"{max(r['forward_mode_diff'] for r in rows):.1e} "
            f"(≤ {settings['adjoints_agree']:g})",
            measured=max(r["forward_mode_diff"] for r in rows),
        )
    )
    claims.append(
        claim(
            all(r["grad_finite"] for r in rows),
            "every gradient finite",
            measured=int(sum(r["grad_finite"] for r in rows)),
        )
    )
    ok = print_claims(claims)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    saves = [r["num_save"] for r in rows]
    for key, label in (
        ("forward", "vmap forward"),
        ("forward_mode", "vmap forward, ForwardMode"),
        ("grad", "vmap grad"),
        ("single", "single forward"),
    ):
        ax.plot(saves, [r[f"{key}_ratio"] for r in rows], "o-", label=label)
    for n, target in targets.items():
        ax.plot(n, target, "k_", markersize=16)
    ax.set_xscale("log")
    ax.set_xlabel("saved times")
    ax.set_ylabel("time / time with 2 saved times (— issue 19 target)")
    ax.legend()
    fig.tight_layout()
    out = results_dir(NAME)
    fig.savefig(out / "figure.png", dpi=120)
    write_json({"rows": rows, "claims": claims}, out / "summary.json")
    print(f"wrote {out / 'figure.png'} and {out / 'summary.json'}")
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
