"""MJCF import (`jaxfric.io.mjcf`) against MuJoCo itself: the mass matrix
(`mj_fullM`, armature included) and the bias force (``qfrc_bias − qfrc_passive``:
Coriolis, centrifugal, gravity and joint damping) at random states, for a
hand-written model with every mapped feature and for the UR5 and Panda URDFs of
`example-robot-data` compiled by MuJoCo's URDF importer; and every refused
feature, named."""

import pathlib
import re
import sys

import equinox as eqx
import jax
import mujoco
import numpy as np
import pytest

from jaxfric.io.mjcf import build_mjcf, load_mjcf, load_mjcf_string

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "experiments"))
from _common import example_robot_urdf, random_robot_states  # noqa: E402

# max |ours − MuJoCo| / max |MuJoCo| per quantity.
_TOLERANCE = 1e-9
_NUM_STATES = 6

# Body and inertial frames rotated, joint anchors off the body origin, two
# joints (slide then hinge) in one body, a body without joints between two
# with joints, a limited hinge, damping, armature, frictionloss, and gravity
# off the z axis.
_FEATURES = """
<mujoco>
  <option gravity="0.3 -0.2 -9.7"/>
  <worldbody>
    <body name="a" pos="0.1 0.2 0.3" quat="0.9 0.1 0.3 -0.2">
      <inertial pos="0.05 0.01 -0.02" quat="0.8 0.2 -0.1 0.3" mass="1.3"
                diaginertia="0.03 0.02 0.015"/>
      <joint name="j1" pos="0.02 -0.03 0.04" axis="0.3 0.5 0.8" damping="0.4"
             armature="0.01" frictionloss="0.2"/>
      <body name="b" pos="0.3 0 0.1" euler="10 20 30">
        <inertial pos="0.1 0.02 0" mass="0.7"
                  fullinertia="0.02 0.03 0.025 0.001 -0.002 0.003"/>
        <joint name="j2" type="slide" pos="0.1 0 0" axis="1 0.2 0" damping="1.5"
               frictionloss="0.7"/>
        <joint name="j3" pos="0.05 0.05 0" axis="0 0 1" range="-1 1"/>
        <body name="c" pos="0.2 0.1 0">
          <inertial pos="0 0 0.1" mass="0.4" diaginertia="0.004 0.005 0.006"/>
          <body name="d" pos="0.1 0 0.05" quat="0.7 0.7 0 0">
            <inertial pos="0.02 0 0.03" mass="0.3" diaginertia="0.003 0.002 0.002"/>
            <joint name="j4" pos="0 0.03 0" axis="1 0 0" damping="0.1"/>
          </body>
        </body>
      </body>
      <body name="e" pos="-0.1 0 0">
        <inertial pos="0 0 0" mass="0.2" diaginertia="0.001 0.001 0.001"/>
        <joint name="j5" axis="0 1 0" armature="0.02"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def _urdf_model(relative: str):
    """A URDF of `example-robot-data` compiled by MuJoCo, without its meshes
    (they are not shipped) and with mimic joints independent (as
    `jaxfric.io.load_urdf` and Pinocchio's default loader read them)."""
    text = pathlib.Path(example_robot_urdf(relative)).read_text()
    text = re.sub(r"<(visual|collision)>.*?</\1>|<mimic[^>]*/>", "", text, flags=re.S)
    return mujoco.MjModel.from_xml_string(text)


@eqx.filter_jit
def _ours(system, q, qd):
    def one(q, qd):
        return system.mass_matrix(q), system.bias_force(q, qd)

    return jax.vmap(one)(q, qd)


def _mujoco(model, q, qd):
    data = mujoco.MjData(model)
    masses, biases = [], []
    for x, v in zip(q, qd, strict=True):
        data.qpos[:], data.qvel[:] = x, v
        mujoco.mj_forward(model, data)
        mass = np.zeros((model.nv, model.nv))
        try:  # MuJoCo >= 4
            mujoco.mj_fullM(model, data, mass)
        except TypeError:
            mujoco.mj_fullM(model, mass, data.qM)
        masses.append(mass)
        biases.append(data.qfrc_bias - data.qfrc_passive)
    return np.asarray(masses), np.asarray(biases)


@pytest.mark.parametrize(
    "build",
    [
        lambda: mujoco.MjModel.from_xml_string(_FEATURES),
        lambda: _urdf_model("ur_description/urdf/ur5_robot.urdf"),
        lambda: _urdf_model("panda_description/urdf/panda.urdf"),
    ],
    ids=["features", "ur5", "panda"],
)
def test_dynamics_match_mujoco(build):
    model = build()
    system, law = build_mjcf(model)
    assert system.n_dof == model.nv
    q, qd, _, _ = random_robot_states(3, _NUM_STATES, model.nv)
    mass, bias = (np.asarray(x) for x in _ours(system, q, qd))
    mass_ref, bias_ref = _mujoco(model, q, qd)
    assert np.max(np.abs(mass - mass_ref)) <= _TOLERANCE * np.max(np.abs(mass_ref))
    assert np.max(np.abs(bias - bias_ref)) <= _TOLERANCE * np.max(np.abs(bias_ref))
    np.testing.assert_array_equal(np.asarray(law.fc), model.dof_frictionloss)


def test_features_map_by_name(tmp_path):
    path = tmp_path / "arm.xml"
    path.write_text(_FEATURES)
    system, law = load_mjcf(path, friction_joints=["j1", "j2"])
    assert system.model.joint_names[0] == "j1"
    np.testing.assert_array_equal(np.asarray(law.fc), [0.2, 0.7])
    np.testing.assert_array_equal(np.asarray(system.damping), [0.4, 1.5, 0, 0.1, 0])
    np.testing.assert_array_equal(np.asarray(system.armature), [0.01, 0, 0, 0, 0.02])
    # Overrides replace the file's values.
    _, law = load_mjcf(path, friction=0.5)
    np.testing.assert_array_equal(np.asarray(law.fc), np.full(5, 0.5))
    # What MuJoCo's <flag> switches off is off here too.
    flags = '<option><flag gravity="disable" damper="disable" frictionloss="disable"/>'
    off, law = load_mjcf_string(
        _FEATURES.replace("<option", flags + "</option><option")
    )
    np.testing.assert_array_equal(np.asarray(off.model.gravity), 0.0)
    np.testing.assert_array_equal(np.asarray(off.damping), 0.0)
    np.testing.assert_array_equal(np.asarray(law.fc), 0.0)


_BODY = (
    '<body name="link"><inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/>{}</body>'
)


@pytest.mark.parametrize(
    "inner, outside, match",
    [
        ('<freejoint name="f"/>', "", r"joint 'f' is a free joint"),
        ('<joint name="b" type="ball"/>', "", r"joint 'b' is a ball joint"),
        (
            '<joint name="h" ref="0.3"/>',
            "",
            r"joint 'h' has a reference position ref \(qpos0 = 0.00523599",
        ),
        ('<joint name="s" stiffness="2"/>', "", r"joint 's' has stiffness"),
        ('<joint name="h"/>', '<equality><joint joint1="h"/></equality>', "equality"),
        (
            '<joint name="h"/><site name="s"/>',
            '<tendon><spatial><site site="s"/><site site="s"/></spatial></tendon>',
            "tendon",
        ),
    ],
)
def test_refused_features_are_named(inner, outside, match):
    xml = f"<mujoco><worldbody>{_BODY.format(inner)}</worldbody>{outside}</mujoco>"
    with pytest.raises(ValueError, match=match):
        load_mjcf_string(xml)


def test_bad_files_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match="MuJoCo cannot compile"):
        load_mjcf_string("<mujoco><worldbody><body><joint type='hinge2'/>")
    path = tmp_path / "missing.xml"
    with pytest.raises(ValueError, match="missing.xml"):
        load_mjcf(path)
    with pytest.raises(ValueError, match=r"`friction`.*shape \(5,\)"):
        build_mjcf(mujoco.MjModel.from_xml_string(_FEATURES), friction=[1.0, 2.0])
