"""The 1-DoF Stribeck identification setup shared by `identify_stribeck_1dof.py`
and `bench_identify.py`: a unit mass on a spring (k = 4 N/m) driven by sines,
Stribeck friction (fc, fs, vs, fv; Gaussian shape), simulated by the exact switch
path; Gaussian noise of 1 % of each record's RMS position.

The setup lives in ``configs/experiments/identify_stribeck_1dof.toml`` (keys
`system`, `true`, `records`, `noise`, `start_factors`); both scripts read it from
there (`load_setup`), so the benchmark always runs the experiment's problem.

Excitation design. The four sines were picked from a grid of amplitudes
(1.55-3 N) and frequencies (1-6 rad/s) by the predicted Gauss-Newton standard
errors at the true parameters, ``sqrt(diag((Σ_b J_bᵀJ_b/σ_b²)⁻¹))`` (forward-mode
Jacobians of the switch path), minimising the largest relative one. Forcing just
above breakaway (1.6-1.7 N against fs = 1.5 N) near the natural frequency (2
rad/s) makes the mass stick and slip at speeds around vs, where the Stribeck
curve bends; the 3 N record slides at speeds up to 1 m/s and fixes fc and fv.
Predicted standard errors: below 0.06 % on every parameter (the previous design,
large slow sines of 3-4 N, left vs at 6 %).
"""

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

import jaxfric as jf
from jaxfric.identify import Experiment

PARAMS = ("fc", "fs", "vs", "fv")
SETUP_FILE = (
    Path(__file__).resolve().parent.parent
    / "configs"
    / "experiments"
    / "identify_stribeck_1dof.toml"
)
SETUP_KEYS = ("system", "true", "records", "noise", "start_factors")

SETUP_DEFAULTS: dict[str, Any] = {
    "system": {"mass": 1.0, "stiffness": 4.0},
    "true": {"fc": 1.0, "fs": 1.5, "vs": 0.1, "fv": 0.2},
    "records": {
        "amplitude": [3.0, 1.7, 1.7, 1.6],
        "omega": [2.0, 2.75, 3.0, 1.75],
        "t1": 16.0,
        "num_samples": 1601,
    },
    "noise": {"relative": 0.01, "seed": 0},
    # Starts 50 % off, each with parameters above and below the truth. All
    # above is no start: with fs > 1.7 N the small records never break away
    # and every gradient is zero.
    "start_factors": [[0.5, 0.5, 1.5, 0.5], [1.5, 1.5, 0.5, 1.5]],
}


def load_setup(settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The shared setup: `SETUP_KEYS` taken from `settings` if given there, else
    from `SETUP_FILE`, else from `SETUP_DEFAULTS`."""
    from jaxfric.io import read_toml

    source = read_toml(SETUP_FILE) if SETUP_FILE.exists() else SETUP_DEFAULTS
    setup = {k: source.get(k, SETUP_DEFAULTS[k]) for k in SETUP_KEYS}
    if settings is not None:
        setup.update({k: settings[k] for k in SETUP_KEYS if k in settings})
    return setup


def free(model):
    """The four Stribeck parameters (the unknowns of `jaxfric.identify.fit`)."""
    return tuple(getattr(model.friction, p) for p in PARAMS)


def build(setup: dict[str, Any]) -> SimpleNamespace:
    """Simulate the records and add noise.

    Returns:
        A namespace with `system`, `truth` (array in `PARAMS` order), `ts`,
        `clean` and `noisy` positions (lists of ``(T, 1)`` arrays), `forces`,
        `sigma` (noise level of each record, m), `experiments` (start at rest,
        known), `weights` (``1/σ`` per record, shape ``(B, 1)``: whitened
        residuals) and `starts` (Stribeck laws at the start factors).
    """
    system = jf.systems.Oscillator(**setup["system"])
    truth = np.array([setup["true"][p] for p in PARAMS], float)
    law = jf.Stribeck(*truth)
    rec = setup["records"]
    ts = np.linspace(0.0, rec["t1"], rec["num_samples"])
    rng = np.random.default_rng(setup["noise"]["seed"])
    clean, noisy, forces, sigma = [], [], [], []
    for amplitude, omega in zip(rec["amplitude"], rec["omega"], strict=True):
        force = jf.forces.Sine(amplitude, omega)
        q = np.asarray(
            jf.simulate(system, law, 0.0, 0.0, rec["t1"], ts=ts, force=force).q
        )
        s = setup["noise"]["relative"] * np.sqrt(np.mean(q**2))
        clean.append(q)
        noisy.append(q + s * rng.normal(size=q.shape))
        forces.append(force)
        sigma.append(s)
    sigma = np.asarray(sigma)
    experiments = [
        Experiment(ts, q, force=f, q0=0.0) for q, f in zip(noisy, forces, strict=True)
    ]
    starts = [
        jf.Stribeck(*(truth * np.asarray(f, float))) for f in setup["start_factors"]
    ]
    return SimpleNamespace(
        system=system,
        truth=truth,
        ts=ts,
        clean=clean,
        noisy=noisy,
        forces=forces,
        sigma=sigma,
        experiments=experiments,
        weights=(1.0 / sigma)[:, None],
        starts=starts,
    )
