"""Robot logs (`jaxfric.io.logs`): joint states written by `rosbags` itself into
ROS 2 (sqlite3 and MCAP storage) and ROS 1 bags, read back by joint name, time
window and resampled grid, against the analytic signals they were written from.
"""

import numpy as np
import pytest
from rosbags.rosbag1 import Writer as Writer1
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from jaxfric.identify import RecordError
from jaxfric.io.logs import load_joint_states

_MSGTYPE = "sensor_msgs/msg/JointState"
# Messages at 500 Hz from t = 100 s; joint 'a' and 'b' in alternating order,
# plus a joint 'c' that is not asked for, and every fifth message carries only
# 'b' with empty velocities and efforts (a partial publisher).
_T0, _RATE, _COUNT = 100.0, 500.0, 1001


def _signals(t):
    s = t - _T0
    return {
        "a": (np.sin(2 * s), 2 * np.cos(2 * s), 0.5 + 0 * s),
        "b": (s**2, 2 * s, -s),
        "c": (0 * s, 0 * s, 0 * s),
    }


def _messages(typestore, ros1=False):
    JointState = typestore.types[_MSGTYPE]
    Header = typestore.types["std_msgs/msg/Header"]
    Time = typestore.types["builtin_interfaces/msg/Time"]
    for k in range(_COUNT):
        t = _T0 + k / _RATE
        values = _signals(t)
        names = ["b", "c", "a"] if k % 2 else ["a", "b", "c"]
        partial = k % 5 == 4
        if partial:
            names = ["b"]
        sec = int(np.floor(t))
        stamp = Time(sec=sec, nanosec=int(round((t - sec) * 1e9)))

        position, velocity, effort = (
            np.array([values[n][i] for n in names], dtype=float) for i in range(3)
        )

        empty = np.zeros(0)
        header = Header(seq=k, stamp=stamp, frame_id="") if ros1 else None
        msg = JointState(
            header=header or Header(stamp=stamp, frame_id=""),
            name=names,
            position=position,
            velocity=empty if partial else velocity,
            effort=empty if partial else effort,
        )
        # Received 3 ms after the stamp.
        yield int(round((t + 3e-3) * 1e9)), msg


def _write_ros2(path, storage):
    typestore = get_typestore(Stores.ROS2_HUMBLE)
    with Writer(path, version=9, storage_plugin=storage) as writer:
        conn = writer.add_connection("/joint_states", _MSGTYPE, typestore=typestore)
        other = writer.add_connection(
            "/other", "std_msgs/msg/String", typestore=typestore
        )
        String = typestore.types["std_msgs/msg/String"]
        writer.write(other, 1, typestore.serialize_cdr(String(data="x"), other.msgtype))
        for ns, msg in _messages(typestore):
            writer.write(conn, ns, typestore.serialize_cdr(msg, _MSGTYPE))


def _write_ros1(path):
    typestore = get_typestore(Stores.ROS1_NOETIC)
    with Writer1(path) as writer:
        conn = writer.add_connection("/joint_states", _MSGTYPE, typestore=typestore)
        for ns, msg in _messages(typestore, ros1=True):
            writer.write(conn, ns, typestore.serialize_ros1(msg, _MSGTYPE))


@pytest.fixture(scope="module", params=["sqlite3", "mcap", "ros1"])
def bag(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("bags") / (
        "log.bag" if request.param == "ros1" else "log"
    )
    if request.param == "ros1":
        _write_ros1(path)
    else:
        storage = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}
        _write_ros2(path, storage[request.param])
    return path


def test_joint_states_resampled_by_name_and_window(bag):
    record = load_joint_states(bag, ["b", "a"], 0.01, t_start=100.2, t_stop=101.5)
    np.testing.assert_allclose(record.ts, np.arange(131) * 0.01, atol=1e-12)
    expected = _signals(record.ts + 100.2)
    # Linear interpolation between samples at most h = 4 ms apart ('a' skips
    # the partial messages): |error| <= max|f''| h² / 8, f'' from _signals.
    curvature = {("a", 0): 4.0, ("a", 1): 8.0, ("b", 0): 2.0, ("b", 1): 0.0}
    for i, name in enumerate(["b", "a"]):
        q, qd, u = expected[name]
        for channel, got, want in ((0, record.q, q), (1, record.qd, qd)):
            tol = curvature[name, channel] * 4e-3**2 / 8 + 1e-9
            np.testing.assert_allclose(got[:, i], want, rtol=0, atol=tol)
        np.testing.assert_allclose(record.u[:, i], u, rtol=0, atol=1e-9)
    assert str(bag) in record.source


def test_receive_time_and_default_window(bag):
    header = load_joint_states(str(bag), ["a"], 0.05, effort=False)  # str paths too
    receive = load_joint_states(bag, ["a"], 0.05, stamp="receive")
    assert header.u is None and receive.u is not None
    # The whole data (t = 100 ... 102 s): 41 samples, the same signal.
    assert header.ts.shape == (41,) and receive.ts.shape == (41,)
    np.testing.assert_allclose(header.q, receive.q, atol=1e-12)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(joints=["a", "z"]), r"no positions of joint\(s\) \['z'\]"),
        (dict(joints=["a"], topic="/nope"), r"no topic '/nope'"),
        (dict(joints=["a"], t_start=99.0), r"window \[99.0, "),
        (dict(joints=["a"], dt=0.0), r"`dt` must be finite and > 0"),
        (dict(joints=["a", "a"]), r"`joints` must be distinct"),
        (dict(joints=["a"], stamp="wall"), r"`stamp` must be 'header' or 'receive'"),
    ],
)
def test_bad_requests_are_named(bag, kwargs, match):
    kwargs = {"dt": 0.01, **kwargs}
    with pytest.raises(RecordError, match=match):
        load_joint_states(bag, **kwargs)


def test_wrong_topic_type_and_unreadable_file(tmp_path):
    path = tmp_path / "log"
    _write_ros2(path, StoragePlugin.SQLITE3)
    with pytest.raises(RecordError, match="carries .*std_msgs/msg/String"):
        load_joint_states(path, ["a"], 0.01, topic="/other")
    junk = tmp_path / "junk.bag"
    junk.write_text("not a bag")
    with pytest.raises(RecordError, match="junk.bag: cannot read the bag"):
        load_joint_states(junk, ["a"], 0.01)


def test_identify_config_reads_a_log(tmp_path):
    from jaxfric.io import ConfigError
    from jaxfric.io.identify_config import parse_identify_config

    _write_ros2(tmp_path / "run", StoragePlugin.MCAP)
    config = tmp_path / "ident.toml"
    text = """
[system]
type = "TwoMass"
m1 = 1.0
m2 = 1.0
[friction]
type = "Coulomb"
fc = 1.0
[identify]
free = ["friction.fc"]
[[experiments]]
file = "run"
log = {{ joints = ["a", "b"], dt = 0.02, {extra} }}
"""
    config.write_text(text.format(extra="t_stop = 101.0"))
    cfg = parse_identify_config(config)
    direct = load_joint_states(tmp_path / "run", ["a", "b"], 0.02, t_stop=101.0)
    np.testing.assert_array_equal(cfg.records[0].q, direct.q)
    np.testing.assert_array_equal(cfg.records[0].u, direct.u)
    config.write_text(text.format(extra="joint = 1"))
    with pytest.raises(ConfigError, match=r"\[\[experiments\]\] #0 log unknown key"):
        parse_identify_config(config)


def test_written_bag_reads_back(tmp_path):
    from jaxfric.io import write_joint_states

    ts = np.arange(11) * 0.1
    q = np.stack([np.sin(ts), ts**2], axis=1)
    write_joint_states(tmp_path / "w", ts, ["x", "y"], q, effort=2 * q)
    record = load_joint_states(tmp_path / "w", ["y", "x"], 0.1)
    np.testing.assert_allclose(record.q, q[:, ::-1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(record.u, 2 * q[:, ::-1], rtol=0, atol=1e-12)
    assert record.qd is None  # written without velocities
    with pytest.raises(RecordError, match="exists already"):
        write_joint_states(tmp_path / "w", ts, ["x", "y"], q)
    with pytest.raises(RecordError, match=r"`q` must have shape \(11, 3\)"):
        write_joint_states(tmp_path / "v", ts, ["x", "y", "z"], q)


def test_unset_header_stamps_are_named(tmp_path):
    typestore = get_typestore(Stores.ROS2_HUMBLE)
    JointState = typestore.types[_MSGTYPE]
    Header = typestore.types["std_msgs/msg/Header"]
    Time = typestore.types["builtin_interfaces/msg/Time"]
    with Writer(tmp_path / "zero", version=9) as writer:
        conn = writer.add_connection("/joint_states", _MSGTYPE, typestore=typestore)
        for k in range(5):
            msg = JointState(
                header=Header(stamp=Time(sec=0, nanosec=0), frame_id=""),
                name=["a"],
                position=np.array([0.1 * k]),
                velocity=np.zeros(0),
                effort=np.zeros(0),
            )
            writer.write(conn, 10**9 * (k + 1), typestore.serialize_cdr(msg, _MSGTYPE))
    with pytest.raises(RecordError, match="repeated header times.*stamp='receive'"):
        load_joint_states(tmp_path / "zero", ["a"], 0.5)
    record = load_joint_states(tmp_path / "zero", ["a"], 0.5, stamp="receive")
    np.testing.assert_allclose(record.q[:, 0], 0.05 * np.arange(9), atol=1e-12)
