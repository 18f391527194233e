"""Robot logs in: joint states from ROS 2 bags (sqlite3 or MCAP storage) and ROS 1
bags, read through PyPI ``rosbags`` (the optional extra ``jaxfric[logs]``),
selected by joint name and time window and resampled onto a uniform grid as a
`jaxfric.identify.Record` (`load_joint_states`); and joint states written as a
ROS 2 bag (`write_joint_states`).

A ``sensor_msgs/JointState`` message carries ``name``, ``position``,
``velocity`` and ``effort`` per joint; publishers may send a subset of the
joints, in any order, and leave ``velocity`` or ``effort`` empty. Each joint's
samples are therefore collected on their own and interpolated (linearly) onto
the record's grid; a channel is read only if every selected joint has it.
"""

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..identify import Record, RecordError

_MSGTYPE = "sensor_msgs/msg/JointState"


def _rosbags():
    try:
        from rosbags.highlevel import AnyReader
        from rosbags.typesys import Stores, get_typestore
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(
            "reading robot logs needs the `rosbags` package: "
            "pip install 'jaxfric[logs]'."
        ) from None
    return AnyReader, get_typestore(Stores.ROS2_HUMBLE)


def _series(path, topic: str, joints: Sequence[str], stamp: str):
    """Per joint and channel, ``(times, values)`` over the whole bag."""
    reader_class, typestore = _rosbags()
    where = os.fspath(path)
    series = {j: {c: ([], []) for c in ("q", "qd", "u")} for j in joints}
    try:
        with reader_class([Path(path)], default_typestore=typestore) as reader:
            connections = [c for c in reader.connections if c.topic == topic]
            if not connections:
                topics = sorted({c.topic for c in reader.connections})
                raise RecordError(f"{where}: no topic {topic!r}; it has {topics}.")
            kinds = {c.msgtype for c in connections}
            if kinds != {_MSGTYPE}:
                raise RecordError(
                    f"{where}: topic {topic!r} carries {sorted(kinds)}, not {_MSGTYPE}."
                )
            for connection, received, raw in reader.messages(connections=connections):
                msg = reader.deserialize(raw, connection.msgtype)
                header = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
                t = header if stamp == "header" else 1e-9 * received
                for channel, values in (
                    ("q", msg.position),
                    ("qd", msg.velocity),
                    ("u", msg.effort),
                ):
                    if len(values) != len(msg.name):
                        continue  # an empty (or malformed) channel in this message
                    for name, value in zip(msg.name, values, strict=True):
                        if name in series:
                            series[name][channel][0].append(t)
                            series[name][channel][1].append(float(value))
    except RecordError:
        raise
    except Exception as e:  # rosbags' own errors: not a bag, unreadable storage
        raise RecordError(f"{where}: cannot read the bag: {e}") from e
    return series


def load_joint_states(
    path: str | os.PathLike,
    joints: Sequence[str],
    dt: float,
    *,
    topic: str = "/joint_states",
    t_start: float | None = None,
    t_stop: float | None = None,
    stamp: str = "header",
    effort: bool = True,
) -> Record:
    """Read joint states from a ROS 1 or ROS 2 bag into a `Record`.

    Args:
        path: the bag (a ROS 2 bag folder or its ``.db3``/``.mcap`` file, or a
            ROS 1 ``.bag``).
        joints: the joint names, in the order of the system's ``q``.
        dt: the record's sample interval, s, ``> 0``.
        topic: the ``sensor_msgs/JointState`` topic.
        t_start, t_stop: the time window, s, in the bag's clock; default where
            every selected channel has data.
        stamp: ``"header"`` (the message's header stamp) or ``"receive"`` (the
            time the recorder received it).
        effort: read ``effort`` as the known input `u` (N·m or N) when every
            joint has it.

    Returns:
        A `Record` with ``ts = 0, dt, 2dt, …`` (seconds after `t_start`),
        ``q`` (rad or m), ``qd`` where the bag has velocities, ``u`` where it
        has efforts and `effort` is set; `source` names the bag.

    Raises:
        RecordError: a missing topic or joint, a window outside the data,
            bad arguments, or a bag rosbags cannot read, naming the bag.
    """
    where = os.fspath(path)
    joints = list(joints)
    if not joints or len(set(joints)) != len(joints):
        raise RecordError(f"{where}: `joints` must be distinct names; got {joints}.")
    if not (np.isfinite(dt) and dt > 0):
        raise RecordError(f"{where}: `dt` must be finite and > 0; got {dt}.")
    if stamp not in ("header", "receive"):
        raise RecordError(
            f"{where}: `stamp` must be 'header' or 'receive'; got {stamp!r}."
        )
    series = _series(path, topic, joints, stamp)
    missing = [j for j in joints if not series[j]["q"][0]]
    if missing:
        raise RecordError(f"{where}: no positions of joint(s) {missing} on {topic!r}.")
    channels = ["q"] + [
        c
        for c in ("qd", "u")
        if (c != "u" or effort) and all(series[j][c][0] for j in joints)
    ]
    arrays = {}
    for j in joints:
        for c in channels:
            t, v = (np.asarray(x, dtype=float) for x in series[j][c])
            order = np.argsort(t, kind="stable")
            t, v = t[order], v[order]
            if np.any(np.diff(t) <= 0):
                raise RecordError(
                    f"{where}: joint {j!r} has repeated {stamp} times (e.g. "
                    "unset header stamps: stamp='receive' uses the recording's)."
                )
            arrays[j, c] = (t, v)
    first = max(arrays[key][0][0] for key in arrays)
    last = min(arrays[key][0][-1] for key in arrays)
    lo = first if t_start is None else float(t_start)
    hi = last if t_stop is None else float(t_stop)
    if not (first <= lo < hi <= last):
        raise RecordError(
            f"{where}: the window [{lo}, {hi}] s must lie inside the data "
            f"[{first}, {last}] s of every selected channel."
        )
    num = int(np.floor((hi - lo) / dt + 1e-9)) + 1
    grid = lo + dt * np.arange(num)
    columns = {
        c: np.stack([np.interp(grid, *arrays[j, c]) for j in joints], axis=1)
        for c in channels
    }
    return Record(grid - lo, source=where, **columns)


def write_joint_states(
    path: str | os.PathLike,
    ts,
    joints: Sequence[str],
    q,
    qd=None,
    effort=None,
    *,
    topic: str = "/joint_states",
    storage: str = "mcap",
) -> None:
    """Write joint states as a ROS 2 bag of ``sensor_msgs/JointState`` (e.g.
    a simulated robot's log, for `load_joint_states` or ROS tools).

    Args:
        path: the bag folder to create (must not exist).
        ts: message times, s, shape ``(T,)``, increasing; header stamp and
            receive time both.
        joints: joint names, ``n``.
        q, qd, effort: positions, velocities and efforts, shape ``(T, n)``
            (`qd` and `effort` optional: empty fields).
        topic: the topic.
        storage: ``"mcap"`` or ``"sqlite3"``.

    Raises:
        RecordError: shapes that do not match, or a path that exists.
    """
    from rosbags.rosbag2 import StoragePlugin, Writer

    _, typestore = _rosbags()
    where = os.fspath(path)
    ts = np.asarray(ts, dtype=float)
    n = len(joints)
    arrays = {}
    for name, value in (("q", q), ("qd", qd), ("effort", effort)):
        if value is None:
            arrays[name] = np.zeros((ts.shape[0], 0))
            continue
        value = np.asarray(value, dtype=float)
        if value.shape != (ts.shape[0], n):
            raise RecordError(
                f"{where}: `{name}` must have shape {(ts.shape[0], n)}; got "
                f"{value.shape}."
            )
        arrays[name] = value
    if ts.ndim != 1 or np.any(np.diff(ts) <= 0) or np.any(ts < 0):
        raise RecordError(f"{where}: `ts` must be 1-D, >= 0 and increasing.")
    plugins = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}
    if storage not in plugins:
        raise RecordError(
            f"{where}: `storage` must be 'mcap' or 'sqlite3'; got {storage!r}."
        )
    if os.path.exists(where):
        raise RecordError(f"{where}: exists already; a bag is written to a new folder.")
    msg_type = typestore.types[_MSGTYPE]
    header_type = typestore.types["std_msgs/msg/Header"]
    time_type = typestore.types["builtin_interfaces/msg/Time"]
    with Writer(path, version=9, storage_plugin=plugins[storage]) as writer:
        connection = writer.add_connection(topic, _MSGTYPE, typestore=typestore)
        for k, t in enumerate(ts):
            ns = int(round(t * 1e9))
            stamp = time_type(sec=ns // 10**9, nanosec=ns % 10**9)
            msg = msg_type(
                header=header_type(stamp=stamp, frame_id=""),
                name=list(joints),
                position=arrays["q"][k],
                velocity=arrays["qd"][k],
                effort=arrays["effort"][k],
            )
            writer.write(connection, ns, typestore.serialize_cdr(msg, _MSGTYPE))
