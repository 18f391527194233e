"""Identified joint friction written back into URDF and MJCF
(`jaxfric.io.export`): round trips through the real parsers (jaxfric's URDF
loader; MuJoCo's compiler for MJCF), every other byte of the file unchanged,
and the approximations named."""

import pathlib
import re

import equinox as eqx
import numpy as np
import pytest

import jaxfric as jf
from jaxfric.io import export_mjcf, export_urdf, joint_friction, load_mjcf, load_urdf

_DATA = pathlib.Path(__file__).parent / "data"


def _fitted(system, fc, fv, damping):
    """A 'fitted' model: new levels, a viscous term, new system damping."""
    system = eqx.tree_at(lambda s: s.damping, system, np.asarray(damping, float))
    return system, jf.Coulomb(fc, fv=fv)


def test_urdf_round_trip_changes_only_dynamics(tmp_path):
    source = _DATA / "branched.urdf"
    system, _ = load_urdf(source)
    n = system.n_dof
    fc, fv = np.linspace(0.1, 0.5, n), np.full(n, 0.05)
    damping = np.linspace(0.0, 0.3, n)
    fitted, law = _fitted(system, fc, fv, damping)
    out = tmp_path / "fitted.urdf"
    assert export_urdf(source, out, fitted, law) == ()
    back, back_law = load_urdf(out)
    np.testing.assert_array_equal(np.asarray(back_law.fc), fc)
    np.testing.assert_array_equal(np.asarray(back.damping), damping + fv)

    def without_dynamics(text):
        return re.sub(r"\n[ \t]*<dynamics\b[^>]*/>", "", text)

    assert without_dynamics(out.read_text()) == without_dynamics(source.read_text())


_MJCF = """<mujoco model="arm">
  <default><joint damping="0.3"/></default>
  <worldbody>
    <body name="a" pos="0 0 0.1">
      <inertial pos="0.1 0 0" mass="1" diaginertia="0.01 0.01 0.01"/>
      <joint name="shoulder" axis="0 1 0" frictionloss="0.2"/>
      <body name="b" pos="0.2 0 0">
        <inertial pos="0.1 0 0" mass="0.5" diaginertia="0.005 0.005 0.005"/>
        <joint name="elbow" axis='0 1 0' armature="0.01"/>
        <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02" mass="0"/>
      </body>
    </body>
  </worldbody>
  <actuator><motor joint="shoulder"/><motor joint="elbow"/></actuator>
</mujoco>
"""


def test_mjcf_round_trip_through_mujoco(tmp_path):
    source = tmp_path / "arm.xml"
    source.write_text(_MJCF)
    system, law = load_mjcf(source)
    np.testing.assert_array_equal(np.asarray(law.fc), [0.2, 0.0])
    np.testing.assert_array_equal(np.asarray(system.damping), [0.3, 0.3])
    fitted, law = _fitted(system, [0.25, 0.125], [0.0, 0.5], [0.1, 0.0])
    out = tmp_path / "fitted.xml"
    assert export_mjcf(source, out, fitted, law) == ()
    back, back_law = load_mjcf(out)  # compiled by MuJoCo
    np.testing.assert_array_equal(np.asarray(back_law.fc), [0.25, 0.125])
    np.testing.assert_array_equal(np.asarray(back.damping), [0.1, 0.5])
    np.testing.assert_array_equal(np.asarray(back.armature), [0.0, 0.01])

    def without_written(text):
        return re.sub(r"""\s(frictionloss|damping|armature)=(["']).*?\2""", "", text)

    written, original = out.read_text(), source.read_text()
    assert written != original
    # The <default> class's damping is the only attribute also stripped there.
    assert without_written(written) == without_written(original)
    assert '<default><joint damping="0.3"/></default>' in written


def test_approximations_are_named_and_bad_input_refused(tmp_path):
    system, _ = load_urdf(_DATA / "branched.urdf")
    m = system.n_friction
    notes = joint_friction(system, jf.Coulomb(np.ones(m), fs=2 * np.ones(m))).notes
    assert len(notes) == 1 and "static levels" in notes[0]
    stribeck = jf.Stribeck(fc=1.0, fs=1.5, vs=0.1, fv=0.2)
    values = joint_friction(system, stribeck)
    assert "Stribeck curve" in values.notes[0]
    np.testing.assert_array_equal(values.friction, np.ones(system.n_dof))
    asymmetric = jf.CoulombViscous(fc_pos=1.0, fc_neg=3.0)
    assert "mean" in joint_friction(system, asymmetric).notes[0]
    np.testing.assert_array_equal(
        joint_friction(system, asymmetric).friction, np.full(system.n_dof, 2.0)
    )
    with pytest.raises(ValueError, match="`law` Kikuuwe has no URDF/MJCF"):
        joint_friction(system, jf.Kikuuwe(k=1.0, b=1.0, f=1.0))
    with pytest.raises(ValueError, match="`system` must be a RigidBodyTree"):
        joint_friction(jf.systems.Oscillator(1.0, 1.0), jf.Coulomb(1.0))
    # A file without the system's joints.
    other = tmp_path / "other.xml"
    other.write_text(_MJCF)
    with pytest.raises(ValueError, match="no joint element named"):
        export_mjcf(other, tmp_path / "out.xml", system, jf.Coulomb(1.0))


# --- [system] file = "..." in the TOML configurations, and the CLI's export ----

_CONFIGS = pathlib.Path(__file__).resolve().parents[1] / "configs"


def _system_table(text, tmp_path):
    from jaxfric.io.config import build_system, read_toml

    config = tmp_path / "c.toml"
    config.write_text(text)
    return build_system(read_toml(config)["system"], tmp_path)


def test_config_loads_robot_files(tmp_path):
    (tmp_path / "arm.xml").write_text(_MJCF)
    mjcf = _system_table('[system]\nfile = "arm.xml"\ndamping = 0.7\n', tmp_path)
    np.testing.assert_array_equal(np.asarray(mjcf.damping), [0.7, 0.7])
    urdf = _system_table(
        f'[system]\ntype = "RigidBodyTree"\nfile = "{_DATA / "branched.urdf"}"\n',
        tmp_path,
    )
    reference, _ = load_urdf(_DATA / "branched.urdf")
    assert urdf.model.joint_names == reference.model.joint_names
    np.testing.assert_array_equal(np.asarray(urdf.damping), reference.damping)


@pytest.mark.parametrize(
    "table, match",
    [
        ('file = "arm.stl"', r"neither \.urdf nor \.xml"),
        ('file = "nope.urdf"', "no such file"),
        ('file = "arm.xml"\ngravity = [0, 0, 0]', r"unknown key\(s\) \['gravity'\]"),
        ('type = "Oscillator"\nfile = "arm.xml"', "a robot file gives a RigidBodyTree"),
        ("file = 3", "expected a path string"),
    ],
)
def test_config_robot_file_errors_are_named(table, match, tmp_path):
    from jaxfric.io import ConfigError

    (tmp_path / "arm.xml").write_text(_MJCF)
    with pytest.raises(ConfigError, match=match):
        _system_table(f"[system]\n{table}\n", tmp_path)


def test_cli_export_needs_a_matching_robot_file(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import jaxfric.identify
    from jaxfric.cli import app

    def must_not_run(*args, **kwargs):
        raise AssertionError("fitted before the export target was checked")

    monkeypatch.setattr(jaxfric.identify, "fit", must_not_run)
    config = _CONFIGS / "identify_two_link_urdf.toml"
    args = ["identify", str(config), "--out", str(tmp_path / "out"), "--no-progress"]
    result = CliRunner().invoke(app, [*args, "--export-mjcf", str(tmp_path / "a.xml")])
    assert result.exit_code == 2
    assert "--export-mjcf needs [system] file = a MJCF robot file" in result.output
    # A MotionSolve model is an .xml file too, but not MJCF: refused before the fit.
    pendulum = (_CONFIGS.parent / "tests/data/motionsolve_pendulum.xml").resolve()
    ms_config = tmp_path / "ms.toml"
    ms_config.write_text(
        config.read_text().replace(
            'file = "robots/two_link_arm.urdf"', f'file = "{pendulum}"'
        )
    )
    args = ["identify", str(ms_config), "--out", str(tmp_path / "ms"), "--no-progress"]
    result = CliRunner().invoke(app, [*args, "--export-mjcf", str(tmp_path / "b.xml")])
    assert result.exit_code == 2
    assert "needs [system] file = a MJCF robot file" in result.output
    assert "motionsolve_pendulum.xml" in result.output
