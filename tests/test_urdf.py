"""URDF import (`jaxfric.io.urdf`): what is read, the friction it returns, and the
errors malformed files give. (Dynamics of imported robots: test_pinocchio.py.)"""

import ast
import pathlib

import numpy as np
import pytest

import jaxfric as jf
from jaxfric.io.urdf import build_urdf, load_urdf, parse_urdf, parse_urdf_string
from jaxfric.systems import RigidBodyTree
from jaxfric.systems.rigid import rpy_matrix

# Parsing copies numbers; model arrays are products of a few rotations.
_TOLERANCE = 1e-14
_DATA = pathlib.Path(__file__).parent / "data"
_BRANCHED = _DATA / "branched.urdf"


def test_branched_file_structure():
    robot = parse_urdf(_BRANCHED)
    assert robot.name == "branched"
    assert robot.base_name == "world"
    # Depth-first, children in document order (Pinocchio's order).
    assert robot.joint_names == ("mount", "j1", "j2", "tool_fixed", "j4", "j3")
    assert robot.link_names == ("base", "l1", "l2", "tool", "l4", "l3")
    assert robot.joint_types == (
        "fixed",
        "revolute",
        "continuous",
        "fixed",
        "revolute",
        "prismatic",
    )
    assert robot.parents == (-1, 0, 1, 2, 3, 1)
    # The non-unit axis (0 1 1) is normalised.
    np.testing.assert_allclose(robot.axes[2], [0, 2**-0.5, 2**-0.5], atol=_TOLERANCE)
    np.testing.assert_array_equal(
        robot.lower, [-np.inf, -2.5, -np.inf, -np.inf, -1, -0.1]
    )
    np.testing.assert_array_equal(robot.upper, [np.inf, 2.5, np.inf, np.inf, 1, 0.2])
    np.testing.assert_array_equal(robot.effort[[1, 4, 5]], [40, 5, 100])
    np.testing.assert_array_equal(robot.damping, [0, 0.1, 0.05, 0, 0, 0])
    np.testing.assert_array_equal(robot.friction, [0, 0.5, 0.3, 0, 0, 2.0])
    # The inertial frame's rpy rotates the inertia into link axes: R I Rᵀ.
    tensor = np.array(
        [[0.03, 0.002, -0.001], [0.002, 0.025, 0.003], [-0.001, 0.003, 0.02]]
    )
    rot = np.asarray(rpy_matrix(np.array([0.2, -0.1, 0.4])))
    np.testing.assert_allclose(robot.inertia[1], rot @ tensor @ rot.T, atol=_TOLERANCE)
    np.testing.assert_array_equal(robot.com[1], [0.1, 0.02, -0.03])
    # The base link "base" (welded, no inertial) is read as massless.
    assert robot.mass[0] == 0.0


def test_load_returns_damping_and_coulomb_friction():
    system, law = load_urdf(_BRANCHED)
    assert system.joint_names == ("j1", "j2", "j4", "j3")
    assert system.n_dof == system.n_friction == 4
    np.testing.assert_array_equal(system.damping, [0.1, 0.05, 0.0, 0.0])
    assert isinstance(law, jf.Coulomb)
    np.testing.assert_array_equal(law.fc, [0.5, 0.3, 0.0, 2.0])
    np.testing.assert_array_equal(law.fs, law.fc)
    assert "tool" in system.model.link_names


def test_overrides():
    system, law = load_urdf(
        _BRANCHED,
        damping=0.2,
        friction=[1.0, 3.0],
        friction_joints=["j3", "j1"],
        armature=0.01,
        gravity=(0.0, 0.0, -1.62),
    )
    np.testing.assert_array_equal(system.damping, np.full(4, 0.2))
    np.testing.assert_array_equal(system.armature, np.full(4, 0.01))
    assert system.friction_joints == (3, 0)
    np.testing.assert_array_equal(law.fc, [1.0, 3.0])
    np.testing.assert_array_equal(system.model.gravity, [0.0, 0.0, -1.62])
    # Default levels follow the chosen joints.
    _, law = load_urdf(_BRANCHED, friction_joints=["j3", "j2"])
    np.testing.assert_array_equal(law.fc, [2.0, 0.3])


def test_systems_do_not_import_io():
    # URDF loading lives in io/ only: io.urdf builds the tree from parsed data
    # and systems/ never reaches back into io/ (no import cycle).
    systems = pathlib.Path(jf.__file__).parent / "systems"
    for path in systems.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert "io" not in (node.module or "").split("."), path


_TWO_LINK = """
<robot name="arm">
  <link name="base"/>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0.3" rpy="0 0.5 0"/>
    <axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="2"/>
  </joint>
  <link name="upper">
    <inertial>
      <origin xyz="0 0 0.2"/>
      <mass value="2"/>
      <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.001"/>
    </inertial>
  </link>
  <joint name="slide" type="prismatic">
    <parent link="upper"/><child link="lower"/>
    <origin xyz="0 0 0.4"/>
    <axis xyz="0 0 1"/>
    <limit lower="0" upper="0.1" effort="100" velocity="0.1"/>
  </joint>
  <link name="lower">
    <inertial>
      <mass value="0.5"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.0005"/>
    </inertial>
  </link>
</robot>
"""


def _load_text(text):
    return build_urdf(parse_urdf_string(text))


def test_urdf_equals_hand_built_tree():
    """The file's numbers, typed in by hand, give the same model arrays."""
    system, _ = _load_text(_TWO_LINK)
    hand = RigidBodyTree(
        parents=[-1, 0],
        joint_types=["revolute", "prismatic"],
        axes=[[0, 1, 0], [0, 0, 1]],
        origin_translation=[[0, 0, 0.3], [0, 0, 0.4]],
        origin_rotation=[rpy_matrix(np.array([0, 0.5, 0])), np.eye(3)],
        mass=[2.0, 0.5],
        com=[[0, 0, 0.2], [0, 0, 0]],
        inertia=[np.diag([0.02, 0.02, 0.001]), np.diag([0.001, 0.001, 0.0005])],
    )
    for name in ("origin_rotation", "origin_translation", "mass", "first_moment"):
        np.testing.assert_allclose(
            getattr(system.model, name), getattr(hand.model, name), atol=_TOLERANCE
        )
    np.testing.assert_allclose(
        system.model.inertia, hand.model.inertia, atol=_TOLERANCE
    )
    assert system.model.joint_types == hand.model.joint_types
    assert system.model.axes == hand.model.axes


def _replace(old: str, new: str) -> str:
    assert old in _TWO_LINK
    return _TWO_LINK.replace(old, new, 1)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("<robot><link name='a'>", "not well-formed XML"),
        ("<model name='x'/>", "root element must be <robot>"),
        (
            _replace('type="prismatic"', 'type="floating"'),
            "joint 'slide': type 'floating'",
        ),
        (_replace('type="prismatic"', 'type="planar"'), "joint 'slide': type 'planar'"),
        (
            _replace('type="prismatic"', 'type="ball"'),
            "joint 'slide': unknown joint type",
        ),
        (
            _replace('<mass value="0.5"/>', ""),
            "link 'lower': <inertial> has no <mass>",
        ),
        (
            _replace('<mass value="0.5"/>', '<mass value="-0.5"/>'),
            "link 'lower': <mass value> must be >= 0",
        ),
        (
            _replace('<mass value="2"/>', '<mass value="two"/>'),
            "link 'upper': <mass>: attribute 'value' must be a finite number",
        ),
        (
            _replace('<origin xyz="0 0 0.4"/>', '<origin xyz="0 0.4"/>'),
            r"joint 'slide': <origin xyz> must be 3 finite numbers",
        ),
        (
            _replace('<axis xyz="0 0 1"/>', '<axis xyz="0 0 0"/>'),
            "joint 'slide': <axis",
        ),
        (
            _replace('<child link="lower"/>', '<child link="nowhere"/>'),
            "joint 'slide': child link 'nowhere' is not defined",
        ),
        (
            _replace('<parent link="upper"/>', ""),
            "joint 'slide' has no <parent link=...>",
        ),
        (
            _replace('<child link="lower"/>', '<child link="upper"/>'),
            "link 'upper' is already the child of joint 'shoulder'",
        ),
        (
            _replace('<link name="base"/>', '<link name="base"/><link name="extra"/>'),
            "exactly one root link",
        ),
        (
            _replace('<link name="base"/>', '<link name="base"/><link name="base"/>'),
            "link 'base' is defined twice",
        ),
        (
            _replace('lower="0" upper="0.1"', 'lower="0.2" upper="0.1"'),
            "joint 'slide': <limit> lower 0.2 exceeds upper 0.1",
        ),
        (
            _replace('<limit lower="0"', '<dynamics friction="-1"/><limit lower="0"'),
            "joint 'slide': <dynamics friction> must be >= 0",
        ),
        (
            _replace('ixx="0.001" ixy="0"', 'ixx="-0.1" ixy="0"'),
            "inertia of link 'lower' is not physical",
        ),
        # Principal moments (0.001, 0.001, 0.0025): 0.0025 > 0.001 + 0.001.
        (
            _replace('izz="0.0005"', 'izz="0.0025"'),
            r"inertia of link 'lower' is not physical: its principal moments "
            r".*0\.0025.* break the triangle inequality",
        ),
    ],
)
def test_malformed_urdf_raises(text, match):
    with pytest.raises(ValueError, match=match):
        _load_text(text)


_NO_INERTIAL = _replace(
    """    <inertial>
      <mass value="0.5"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.0005"/>
    </inertial>
""",
    "",
)


def test_missing_inertial_is_massless():
    """URDF specification: ``<inertial>`` is optional, zero mass and inertia
    by default (Pinocchio and MuJoCo read it so)."""
    robot = parse_urdf_string(_NO_INERTIAL)
    assert robot.mass[1] == 0.0
    np.testing.assert_array_equal(robot.com[1], np.zeros(3))
    np.testing.assert_array_equal(robot.inertia[1], np.zeros((3, 3)))
    # The slide then moves nothing: the mass matrix would be singular, named.
    with pytest.raises(ValueError, match="joint 'slide': the bodies it moves"):
        build_urdf(robot)
    # With a rotor inertia the joint is fine.
    system, _ = build_urdf(robot, armature=0.1)
    assert system.n_dof == 2


def _chain(inertial_l3: str) -> str:
    """j1 (about z) -> l1 (1 kg) -> j2 (about y) -> l2 (no <inertial>) -> j3
    (about x) -> l3 -> fixed -> tool (no <inertial>)."""
    return f"""
<robot name="chain">
  <link name="base"/>
  <joint name="j1" type="revolute">
    <parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
  </joint>
  <link name="l1">
    <inertial>
      <origin xyz="0.1 0 0"/><mass value="1"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>
    </inertial>
  </link>
  <joint name="j2" type="revolute">
    <parent link="l1"/><child link="l2"/><origin xyz="0.2 0 0"/><axis xyz="0 1 0"/>
  </joint>
  <link name="l2"/>
  <joint name="j3" type="revolute">
    <parent link="l2"/><child link="l3"/><origin xyz="0.2 0 0"/><axis xyz="1 0 0"/>
  </joint>
  <link name="l3">{inertial_l3}</link>
  <joint name="tool_mount" type="fixed">
    <parent link="l3"/><child link="tool"/><origin xyz="0.1 0 0"/>
  </joint>
  <link name="tool"/>
</robot>
"""


def test_massless_chain_names_the_first_joint_moving_nothing():
    """Every link past j2 is massless: j2's whole subtree has no inertia, so is
    j3's; the first of them in the tree is named."""
    robot = parse_urdf_string(_chain(""))
    np.testing.assert_array_equal(robot.mass, [1.0, 0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="joint 'j2': the bodies it moves"):
        build_urdf(robot)


def test_massless_link_inside_a_chain_is_accepted():
    """A massless link between two massive ones is fine: every joint moves some
    inertia. Its tree equals the one typed in by hand with a zero-mass link."""
    inertial = """<inertial><origin xyz="0.05 0 0"/><mass value="0.5"/>
      <inertia ixx="0.002" ixy="0" ixz="0" iyy="0.003" iyz="0" izz="0.004"/>
    </inertial>"""
    system, _ = build_urdf(parse_urdf_string(_chain(inertial)))
    assert system.joint_names == ("j1", "j2", "j3")
    eye = np.eye(3)
    hand = RigidBodyTree(
        parents=[-1, 0, 1],
        joint_types=["revolute"] * 3,
        axes=[[0, 0, 1], [0, 1, 0], [1, 0, 0]],
        origin_translation=[[0, 0, 0], [0.2, 0, 0], [0.2, 0, 0]],
        mass=[1.0, 0.0, 0.5],
        com=[[0.1, 0, 0], [0, 0, 0], [0.05, 0, 0]],
        inertia=[0.01 * eye, 0.0 * eye, np.diag([0.002, 0.003, 0.004])],
    )
    for name in ("mass", "first_moment", "inertia", "origin_translation"):
        np.testing.assert_allclose(
            getattr(system.model, name), getattr(hand.model, name), atol=_TOLERANCE
        )


def test_cycle_is_refused():
    text = _replace(
        "</robot>",
        """<joint name="back" type="fixed">
    <parent link="lower"/><child link="base"/>
  </joint>
</robot>""",
    )
    with pytest.raises(ValueError, match="exactly one root link"):
        parse_urdf_string(text)


def test_missing_file_raises():
    with pytest.raises(FileNotFoundError):
        parse_urdf(_DATA / "no_such_robot.urdf")
