"""`jaxfric simulate` end to end with typer's CliRunner: the four result files,
their contents, and configuration errors reported with the key."""

import csv
import json

import numpy as np
from typer.testing import CliRunner

from jaxfric.cli import EXIT_BAD_CONFIG, EXIT_FAILED_SOLVE, app

# A file round trip of float64 values written with repr: exact.
_TOLERANCE = 0.0
# The smoothed oscillator (eps = 1e-2) after its first half-cycle, t in [0, 2]:
# the exact Coulomb solution is x = 1 + 1.75 cos t, and a regularised law of
# width eps only changes it by O(eps) while |v| >> eps (Farhat et al. 2010, Sec. 5.1).
_SLIP_TOLERANCE = 5e-3

_CONFIG = """
[system]
type = "Oscillator"
mass = 1.0
stiffness = 1.0

[friction]
type = "Regularized"
eps = 1e-2

[friction.law]
type = "Coulomb"
fc = 1.0

[simulate]
t1 = 2.0
q0 = 2.75
qd0 = 0.0
num_save = 21
"""

runner = CliRunner()


def test_simulate_writes_four_files(tmp_path):
    config = tmp_path / "osc.toml"
    config.write_text(_CONFIG)
    out = tmp_path / "out"
    result = runner.invoke(app, ["simulate", str(config), "--out", str(out)])
    assert result.exit_code == 0, result.output
    names = {"trajectory.npz", "trajectory.csv", "trajectory.png", "summary.json"}
    assert names <= {p.name for p in out.iterdir()}
    assert (out / "trajectory.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    data = np.load(out / "trajectory.npz")
    ts, q = data["ts"], data["q"]
    np.testing.assert_allclose(ts, np.linspace(0.0, 2.0, 21), rtol=1e-15)
    assert q.shape == (21, 1)
    np.testing.assert_allclose(
        q[:, 0], 1.0 + 1.75 * np.cos(ts), rtol=0, atol=_SLIP_TOLERANCE
    )

    with (out / "trajectory.csv").open() as f:
        rows = list(csv.reader(f))
    header = rows[0]
    assert header[:3] == ["t", "q_0", "qd_0"]
    assert {"friction_0", "slip_velocity_0", "mode_0"} <= set(header)
    table = np.array(rows[1:], dtype=float)
    assert table.shape == (21, len(header))
    np.testing.assert_allclose(table[:, 1], q[:, 0], rtol=_TOLERANCE)

    summary = json.loads((out / "summary.json").read_text())
    assert summary["success"] is True and summary["result"] == "successful"
    assert summary["final"]["q"] == [float(q[-1, 0])]
    assert summary["stats"]["num_vf_evals"] == int(data["stats_num_vf_evals"]) > 0
    assert summary["config"]["friction"]["type"] == "Regularized"


def test_simulate_reports_config_error_with_key(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text(_CONFIG.replace("stiffness = 1.0", "stifness = 1.0"))
    result = runner.invoke(app, ["simulate", str(config), "--out", str(tmp_path)])
    assert result.exit_code == EXIT_BAD_CONFIG
    assert "[system]" in result.output and "'stifness'" in result.output
    assert not (tmp_path / "summary.json").exists()


def test_failed_solve_writes_files_then_exits_1(tmp_path):
    """Three steps cannot reach t1: the files are still written (for inspection),
    then the exit code says the solve failed."""
    config = tmp_path / "short.toml"
    config.write_text(_CONFIG + "max_steps = 3\n")
    out = tmp_path / "out"
    result = runner.invoke(app, ["simulate", str(config), "--out", str(out)])
    assert result.exit_code == EXIT_FAILED_SOLVE
    assert f"wrote {out / 'summary.json'}" in result.output
    assert "error: the solve failed: The maximum number of solver steps" in (
        result.output
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["success"] is False


def test_missing_config_file_is_rejected(tmp_path):
    result = runner.invoke(app, ["simulate", str(tmp_path / "nope.toml")])
    assert result.exit_code != 0
