"""`jaxfric simulate` end to end with typer's CliRunner: the four result files,
their contents, and configuration errors reported with the key; the output
folder checks (never into a user's non-empty folder, checked before anything
runs), one-line I/O errors and the help texts of every subcommand."""

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import jaxfric
import jaxfric.identify
import jaxfric.io.results
import jaxfric.optimize
from jaxfric.cli import EXIT_BAD_CONFIG, EXIT_FAILED_SOLVE, app

_CONFIGS = Path(__file__).resolve().parent.parent / "configs"

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
    out = tmp_path / "out"
    result = runner.invoke(app, ["simulate", str(config), "--out", str(out)])
    assert result.exit_code == EXIT_BAD_CONFIG
    assert "[system]" in result.output and "'stifness'" in result.output
    assert not out.exists()


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
    assert result.exit_code == EXIT_BAD_CONFIG
    assert "does not exist" in result.output


# ---------------------------------------------------------------------------
# Output folder, I/O errors and help texts. The library's entry points are
# replaced by `_must_not_run`: these checks must fail before anything is
# simulated, fitted or optimised (and so the tests compile nothing).

# Each subcommand, an example configuration and the library function it runs.
_COMMANDS = [
    ("simulate", "oscillator_coulomb.toml", (jaxfric, "simulate")),
    ("optimize", "optimize_double_integrator.toml", (jaxfric.optimize, "optimize")),
    ("identify", "identify_stribeck.toml", (jaxfric.identify, "fit")),
]


def _must_not_run(*args, **kwargs):
    raise AssertionError("the library ran before the check")


def _one_line_error(result) -> str:
    """The single `error: ...` line of a failed run (no traceback)."""
    assert result.exit_code == EXIT_BAD_CONFIG, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


@pytest.mark.parametrize(
    "command, config, entry", _COMMANDS, ids=[c[0] for c in _COMMANDS]
)
def test_nonempty_out_folder_is_refused(command, config, entry, tmp_path, monkeypatch):
    monkeypatch.setattr(*entry, _must_not_run)
    out = tmp_path / "mine"
    out.mkdir()
    (out / "summary.json").write_text("my notes")
    args = [command, str(_CONFIGS / config), "--out", str(out), "--no-progress"]
    if command == "simulate":
        args.pop()
    message = _one_line_error(runner.invoke(app, args))
    assert str(out) in message and "not empty" in message
    assert "--overwrite" in message  # says how to allow it
    assert (out / "summary.json").read_text() == "my notes"
    assert [p.name for p in out.iterdir()] == ["summary.json"]


def test_default_out_folder_is_refused_too(tmp_path, monkeypatch):
    # Without --out the results go to results/<config stem>/ of the current
    # folder: a second run does not replace the first one's files either.
    monkeypatch.setattr(jaxfric, "simulate", _must_not_run)
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "osc.toml"
    config.write_text(_CONFIG)
    (tmp_path / "results" / "osc").mkdir(parents=True)
    (tmp_path / "results" / "osc" / "trajectory.csv").write_text("first run")
    message = _one_line_error(runner.invoke(app, ["simulate", str(config)]))
    assert "results/osc" in message and "--overwrite" in message
    assert (tmp_path / "results" / "osc" / "trajectory.csv").read_text() == "first run"


def test_overwrite_writes_into_a_nonempty_folder(tmp_path):
    config = tmp_path / "osc.toml"
    config.write_text(_CONFIG)
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("kept")
    (out / "summary.json").write_text("replaced")
    args = ["simulate", str(config), "--out", str(out), "--overwrite"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert (out / "notes.txt").read_text() == "kept"  # other files are left alone
    summary = json.loads((out / "summary.json").read_text())
    assert summary["success"] is True
    assert (out / "trajectory.npz").exists()


@pytest.mark.parametrize("where", ["is_a_file", "under_a_file"])
def test_out_that_cannot_be_a_folder_fails_before_the_simulation(
    where, tmp_path, monkeypatch
):
    monkeypatch.setattr(jaxfric, "simulate", _must_not_run)
    config = tmp_path / "osc.toml"
    config.write_text(_CONFIG)
    file = tmp_path / "data.txt"
    file.write_text("mine")
    out = file if where == "is_a_file" else file / "sub"
    result = runner.invoke(app, ["simulate", str(config), "--out", str(out)])
    assert result.exit_code == EXIT_BAD_CONFIG, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    assert str(file) in result.output
    assert file.read_text() == "mine"


def test_unwritable_out_fails_before_the_simulation(tmp_path, monkeypatch):
    # File permissions do not bind root (the test machines' user), so the
    # permission answer is replaced: readable, but nothing is writable.
    import os

    monkeypatch.setattr(jaxfric, "simulate", _must_not_run)
    monkeypatch.setattr(os, "access", lambda path, mode: not mode & os.W_OK)
    config = tmp_path / "osc.toml"
    config.write_text(_CONFIG)
    out = tmp_path / "new" / "out"
    message = _one_line_error(
        runner.invoke(app, ["simulate", str(config), "--out", str(out)])
    )
    assert f"{tmp_path} is not writable" in message
    assert not (tmp_path / "new").exists()


def test_unwritable_results_are_one_line_errors(tmp_path, monkeypatch):
    # A disk that fills up (or a folder removed) while the solve runs.
    def full_disk(sol, folder, **kwargs):
        raise OSError(28, "No space left on device", str(folder / "trajectory.npz"))

    monkeypatch.setattr(jaxfric.io.results, "save_solution", full_disk)
    config = tmp_path / "osc.toml"
    config.write_text(_CONFIG)
    out = tmp_path / "out"
    message = _one_line_error(
        runner.invoke(app, ["simulate", str(config), "--out", str(out)])
    )
    assert f"cannot write the results to {out}" in message
    assert "No space left on device" in message


@pytest.mark.parametrize(
    "content, fragment",
    [
        (b"[system\ntype = 1\n", "invalid TOML"),
        (b"\xff\xfe[system]\n", "not UTF-8"),
        (_CONFIG.replace("t1 = 2.0", "t1 = 2.0\nrtol = -1.0").encode(), "`rtol`"),
    ],
    ids=["syntax", "encoding", "range"],
)
def test_config_errors_are_one_line(content, fragment, tmp_path, monkeypatch):
    monkeypatch.setattr(jaxfric, "simulate", _must_not_run)
    config = tmp_path / "bad.toml"
    config.write_bytes(content)
    out = tmp_path / "out"
    message = _one_line_error(
        runner.invoke(app, ["simulate", str(config), "--out", str(out)])
    )
    assert fragment in message
    assert message.count(str(config)) == 1, message  # the file named once
    assert not out.exists()


@pytest.mark.parametrize(
    "args, sections",
    [
        (["simulate", "--help"], ["[system]", "[friction]", "[force]", "[simulate]"]),
        (["optimize", "--help"], ["[objective]", "[[limits]]", "[optimize]"]),
        (["identify", "--help"], ["[identify]", "[[experiments]]", "[synthetic]"]),
        (["--help"], ["[system]", "[objective]", "[identify]"]),
    ],
    ids=["simulate", "optimize", "identify", "app"],
)
def test_help_shows_section_names(args, sections):
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    for section in sections:
        assert section in result.output, (section, result.output)
    assert "--overwrite" in result.output or args == ["--help"]
