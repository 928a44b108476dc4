"""Recorder: a simulation written to an MCAP file as ROS 2 messages (docs/RECORDING.md)."""
from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
from mcap.writer import LIBRARY_IDENTIFIER, CompressionType, Writer

from . import messages
from .definitions import definition, schema_name
from .._jit import load_cached
from .kernels import link_transforms
from .rosbag2 import Qos, TopicCount, serialized_metadata
from .templates import Template
from .topics import NODE, resolve, topic_segment

TF_QOS = Qos(depth=100)
EFFORT_COMMANDS, JOINT_COMMANDS = "~/effort_commands", "~/joint_commands"
COMMAND_TYPES = {EFFORT_COMMANDS: "std_msgs/Float64MultiArray",
                 JOINT_COMMANDS: "sensor_msgs/JointState"}


def checked_path(path: str | os.PathLike) -> Path:
    """``path`` as a Path to a new or existing ``.mcap`` file in an existing folder."""
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise ValueError(f"recording path must be a file name ending in .mcap, got {path!r}")
    found = Path(path)
    if found.suffix != ".mcap":
        raise ValueError(f"recording path '{found}' must end in .mcap")
    if found.is_dir():
        raise ValueError(f"recording path '{found}' is a folder")
    if not found.parent.is_dir():
        raise ValueError(f"recording path '{found}': folder '{found.parent}' does not exist")
    return found


def decimation(rate: float | None, dt: float) -> int:
    """Steps between recorded samples of the heavy topics at ``rate`` Hz (None: every step; a
    rate above 1/dt records every step)."""
    if rate is None:
        return 1
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate) \
            or rate <= 0.0:
        raise ValueError(f"recording rate must be a positive number of Hz, got {rate!r}")
    return max(1, int(round(1.0 / (rate * dt))))


class _Channel:
    """One topic of the file: its MCAP channel and its count (the messages' sequence)."""

    def __init__(self, writer: Writer, schemas: dict, topic: str, kind: str, qos: Qos) -> None:
        name = schema_name(kind)
        if name not in schemas:
            schemas[name] = writer.register_schema(name, "ros2msg", definition(name).encode())
        self.topic = TopicCount(topic, name, qos)
        self.id = writer.register_channel(topic, "cdr", schemas[name],
                                          {"offered_qos_profiles": qos.offered()})
        self._add = writer.add_message

    def write(self, data: bytes, t_ns: int) -> None:
        self._add(self.id, t_ns, data, t_ns, self.topic.count)
        self.topic.count += 1


class Recorder:
    """Writes a Simulator's run to ``path`` (``.mcap``): ROS 2 messages in CDR, in rosbag2's
    MCAP profile, on the topics the node publishes (docs/RECORDING.md).

    ``Recorder(path, sim, *, suite=None, frame_prefix="", rate=None, root_frame="world",
    node="/mbsim")``; ``record(command=None)`` after each ``sim.step``: /clock, and every
    ``1 / (rate dt)`` steps (rate in Hz; None: every step) joint_states, /tf (every joint's
    transform), ``~/odom`` (one free-flyer), ``~/contact_wrenches/<link>`` (a scene's links),
    and each sensor of ``suite`` (a SensorSuite) at its own samples; ``command`` the commands
    applied in that step. ``close()`` (or the ``with`` block's end) finalises the file (summary
    and index). ``root_frame``: the frame of the model's root (a fixed-base URDF's root link;
    a free-flyer's or a scene's: ``world``); ``node``: the node whose ``~/`` topics these are.
    """

    def __init__(self, path: str | os.PathLike, sim, *, suite=None, frame_prefix: str = "",
                 rate: float | None = None, root_frame: str = "world",
                 node: str = NODE) -> None:
        self.path = checked_path(path)
        self.sim = sim
        self.suite = suite
        self.node = node
        self.decimation = decimation(rate, sim.dt)
        if suite is not None and suite.sim is not sim:
            raise ValueError("the sensor suite belongs to another Simulator")
        model = sim.model
        self._one_dof = [i for i, kind in enumerate(model.joint_kinds) if kind != "free_flyer"]
        self.joint_names = [model.joint_names[i] for i in self._one_dof]
        self._idx_q = np.array([model.idx_q[i] for i in self._one_dof], dtype=np.int64)
        self._idx_v = np.array([model.idx_v[i] for i in self._one_dof], dtype=np.int64)
        self._file = open(self.path, "wb")
        try:
            self._open(frame_prefix, root_frame)
        except BaseException:
            self._file.close()
            raise

    # -- construction -------------------------------------------------------------------------

    def _open(self, frame_prefix: str, root_frame: str) -> None:
        """Start the file and register every topic's schema and channel."""
        model, sim, suite = self.sim.model, self.sim, self.suite
        self._writer = Writer(self._file, compression=CompressionType.ZSTD)
        self._writer.start(profile="ros2", library=f"mbsim_ros; {LIBRARY_IDENTIFIER}")
        self._schemas: dict = {}
        self._channels: list[_Channel] = []
        self._commands: dict[str, _Channel] = {}
        self._command_templates: dict = {}
        self._start_ns: int | None = None
        self._end_ns = 0
        self._clock = (self._channel("/clock", "rosgraph_msgs/Clock"), messages.clock())
        self._heavy: list[Callable[[int], None]] = [self._joint_state_writer()]
        self._heavy.append(self._tf_writer(frame_prefix, root_frame))
        free = [i for i, kind in enumerate(model.joint_kinds) if kind == "free_flyer"]
        if len(free) == 1:
            self._heavy.append(self._odometry_writer(free[0], frame_prefix))
        if sim.scene is not None:
            self._heavy.append(self._contact_writer(frame_prefix))
        self._sensors = self._sensor_writers() if suite is not None else []
        load_cached((link_transforms,))  # the one kernel record() calls: loaded now, not then
        self._last_sample = [-self.decimation] * len(self._sensors)

    def _channel(self, topic: str, kind: str, qos: Qos = Qos()) -> _Channel:
        channel = _Channel(self._writer, self._schemas, resolve(topic, self.node), kind, qos)
        self._channels.append(channel)
        return channel

    def _joint_state_writer(self) -> Callable[[int], None]:
        channel = self._channel("joint_states", "sensor_msgs/JointState")
        template = messages.joint_state(self.joint_names)
        n = len(self.joint_names)
        position, velocity, effort = (template.values[k * n:(k + 1) * n] for k in range(3))
        sim, suite = self.sim, self.suite
        encoders = suite is not None and suite.encoders is not None

        def write(t_ns: int) -> None:
            q, v = (suite.encoder_q, suite.encoder_v) if encoders else (sim.q, sim.v)
            np.take(q, self._idx_q, out=position)
            np.take(v, self._idx_v, out=velocity)
            np.take(sim.effort, self._idx_v, out=effort)
            channel.write(template.data(t_ns), t_ns)

        return write

    def _tf_writer(self, prefix: str, root_frame: str) -> Callable[[int], None]:
        model = self.sim.model
        root = root_frame if root_frame == "world" else prefix + root_frame
        parents = [root if p < 0 else prefix + model.body_names[p] for p in model.parent]
        children = [prefix + name for name in model.body_names]
        channel = self._channel("/tf", "tf2_msgs/TFMessage", TF_QOS)
        template = messages.transforms(parents, children)
        out = template.values.reshape(model.njoints, 7)
        scratch = (np.zeros((3, 3)), np.zeros(3), np.zeros((3, 3)))
        joint_int, joint_real, q = model.joint_int, model.joint_real, self.sim.state.q

        def write(t_ns: int) -> None:
            link_transforms(joint_int, joint_real, q, *scratch, out)
            channel.write(template.data(t_ns), t_ns)

        return write

    def _odometry_writer(self, joint: int, prefix: str) -> Callable[[int], None]:
        model, state = self.sim.model, self.sim.state
        channel = self._channel("~/odom", "nav_msgs/Odometry")
        template = messages.odometry("world", prefix + model.body_names[joint])
        iq, iv = int(model.idx_q[joint]), int(model.idx_v[joint])
        pose, twist = template.values[:7], template.values[7:]

        def write(t_ns: int) -> None:
            pose[:] = state.q[iq:iq + 7]
            twist[:] = state.v[iv:iv + 6]
            channel.write(template.data(t_ns), t_ns)

        return write

    def _contact_writer(self, prefix: str) -> Callable[[int], None]:
        """Every link with collision shapes, each step its contact wrench (zero off contact)
        in its own frame, as the node publishes them."""
        sim = self.sim
        bodies = sorted({int(b) for b in sim.scene.shapes.body if b >= 0})
        links = []
        for body in bodies:
            link = sim.model.body_names[body]
            links.append((body, self._channel(f"~/contact_wrenches/{topic_segment(link)}",
                                              "geometry_msgs/WrenchStamped"),
                          messages.wrench(prefix + link)))

        def write(t_ns: int) -> None:
            wrenches = sim.body_wrenches(axes="body")
            for body, channel, template in links:
                template.values[:] = wrenches[body]
                channel.write(template.data(t_ns), t_ns)

        return write

    def _sensor_writers(self) -> list[Callable[[int], None]]:
        """One writer per device of the suite (IMU, force-torque, contact switch) on its topic
        (default ``~/<type>/<name>``)."""
        suite, writers = self.suite, []
        for k, device in enumerate(suite.devices):
            topic = device.topic or f"~/{device.kind}/{topic_segment(device.name)}"
            reading = suite.reading(k)
            if device.kind == "imu":
                writers.append(self._imu_writer(topic, device, reading))
            elif device.kind == "force_torque":
                writers.append(self._wrench_sensor_writer(topic, device, reading))
            else:
                writers.append(self._switch_writer(topic, reading))
        return writers

    def _imu_writer(self, topic: str, device, reading: np.ndarray) -> Callable[[int], None]:
        channel = self._channel(topic, "sensor_msgs/Imu")
        template = messages.imu(device, self.sim.dt)
        columns = slice(3 if device.orientation else 7, 13)

        def write(t_ns: int) -> None:
            template.values[:] = reading[columns]
            channel.write(template.data(t_ns), t_ns)

        return write

    def _wrench_sensor_writer(self, topic: str, device, reading) -> Callable[[int], None]:
        channel = self._channel(topic, "geometry_msgs/WrenchStamped")
        template = messages.wrench(device.frame_id)

        def write(t_ns: int) -> None:
            template.values[:] = reading
            channel.write(template.data(t_ns), t_ns)

        return write

    def _switch_writer(self, topic: str, flag: np.ndarray) -> Callable[[int], None]:
        channel = self._channel(topic, "std_msgs/Bool")
        off, on = messages.switch_messages()

        def write(t_ns: int) -> None:
            channel.write(on if flag[0] else off, t_ns)

        return write

    # -- per step -----------------------------------------------------------------------------

    def record(self, command: dict | None = None, *, t_ns: int | None = None) -> None:
        """Write the Simulator's current state (call after each step; the sensors are updated
        here if they were not yet at this step): /clock, and on the steps due the heavy topics
        and the sensors sampled. ``command``: what the step applied, ``{"effort": efforts}``
        (nv, or one per one-DOF joint) on ``~/effort_commands`` and / or ``{"position":
        {joint: value}, "velocity": {joint: value}}`` on ``~/joint_commands``. ``t_ns``: the
        stamp (default: the simulated time, rounded to whole nanoseconds)."""
        if self._file.closed:
            raise ValueError(f"the recording '{self.path}' is closed")
        sim = self.sim
        t_ns = int(round(sim.t * 1e9)) if t_ns is None else int(t_ns)
        if self._start_ns is None:
            self._start_ns = t_ns
        self._end_ns = max(self._end_ns, t_ns)
        if command:
            self._write_command(command, t_ns)
        steps = sim.steps
        if steps % self.decimation == 0:
            for write in self._heavy:
                write(t_ns)
        if self._sensors:
            self._write_sensors(steps, t_ns)
        channel, template = self._clock
        channel.write(template.data(t_ns), t_ns)

    def _write_sensors(self, steps: int, t_ns: int) -> None:
        suite = self.suite
        suite.update()
        due, last = suite.due, self._last_sample
        for k, write in enumerate(self._sensors):
            if due[k] and steps - last[k] >= self.decimation:
                last[k] = steps
                write(t_ns)

    def write_serialized(self, topic: str, data: bytes, t_ns: int) -> None:
        """Write a command message as received (its CDR bytes, e.g. rclpy's
        ``serialize_message``) on ``topic``: ``~/effort_commands`` or ``~/joint_commands``."""
        self._command_channel(topic).write(bytes(data), int(t_ns))

    def _command_channel(self, topic: str) -> _Channel:
        if topic not in COMMAND_TYPES:
            raise ValueError(f"command topic must be one of {', '.join(COMMAND_TYPES)}, got "
                             f"{topic!r}")
        if topic not in self._commands:  # registered when first used
            self._commands[topic] = self._channel(topic, COMMAND_TYPES[topic])
        return self._commands[topic]

    def _write_command(self, command: dict, t_ns: int) -> None:
        unknown = set(command) - {"effort", "position", "velocity"}
        if unknown:
            raise ValueError(f"command keys must be effort, position, velocity; got "
                             f"{', '.join(sorted(map(str, unknown)))}")
        if command.get("effort") is not None:
            template = self._effort_template(command["effort"])
            self._command_channel(EFFORT_COMMANDS).write(template.data(t_ns), t_ns)
        if command.get("position") or command.get("velocity"):
            template = self._joint_command(command.get("position"), command.get("velocity"))
            self._command_channel(JOINT_COMMANDS).write(template.data(t_ns), t_ns)

    def _effort_template(self, effort) -> Template:
        values = np.asarray(effort, dtype=float).reshape(-1)
        n, nv = len(self.joint_names), self.sim.model.nv
        if values.size == nv:
            values = values[self._idx_v]
        elif values.size != n:
            raise ValueError(f"command effort must have {nv} (nv) or {n} (one per one-DOF "
                             f"joint) entries, got {values.size}")
        if "effort" not in self._command_templates:
            self._command_templates["effort"] = messages.effort_array(n)
        template = self._command_templates["effort"]
        template.values[:] = values
        return template

    def _joint_command(self, position: dict | None, velocity: dict | None) -> Template:
        """The ``~/joint_commands`` message of position and / or velocity targets by joint name
        (both: the same joints), joints in model order."""
        given = [part for part in (position, velocity) if part]
        names = set(given[0])
        if any(set(part) != names for part in given):
            raise ValueError("command position and velocity must name the same joints")
        unknown = names - set(self.joint_names)
        if unknown:
            raise ValueError(f"command names unknown joint(s) {', '.join(sorted(unknown))}")
        ordered = tuple(name for name in self.joint_names if name in names)
        key = (ordered, bool(position), bool(velocity))
        if key not in self._command_templates:
            self._command_templates[key] = messages.joint_command(list(ordered), *key[1:])
        template = self._command_templates[key]
        template.values[:] = [part[name] for part in given for name in ordered]
        return template

    # -- the end --------------------------------------------------------------------------------

    @property
    def topics(self) -> dict[str, int]:
        """Topic -> messages written so far."""
        return {channel.topic.name: channel.topic.count for channel in self._channels}

    def close(self) -> None:
        """Finalise the file: rosbag2's metadata record, the summary and the index (ros2 bag
        info, Foxglove and the mcap reader need them). Idempotent."""
        if self._file.closed:
            return
        try:
            start = self._start_ns or 0
            self._writer.add_metadata("rosbag2", {"serialized_metadata": serialized_metadata(
                self.path.name, [channel.topic for channel in self._channels], start,
                self._end_ns, {"mbsim_ros.model": self.sim.model.name,
                               "mbsim_ros.integrator": str(getattr(self.sim, "integrator_name",
                                                                   "")),
                               "mbsim_ros.dt": repr(self.sim.dt)})})
            self._writer.finish()
        finally:
            self._file.close()

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
