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

from types import SimpleNamespace
from typing import Any

import numpy as np
from _common import CONFIGS, read_settings

import jaxfric as jf
from jaxfric.identify import Experiment

PARAMS = ("fc", "fs", "vs", "fv")
SETUP_NAME = "identify_stribeck_1dof"
SETUP_KEYS = ("system", "true", "records", "noise", "start_factors")


def load_setup(settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The shared setup: `SETUP_KEYS` of `settings`, by default of
    ``configs/experiments/identify_stribeck_1dof.toml``."""
    if settings is None:
        settings = read_settings(CONFIGS / f"{SETUP_NAME}.toml")
    return {k: settings[k] for k in SETUP_KEYS}


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
