"""Recordings (mbsim_ros/recording) read back with the mcap reader and mcap_ros2's decoder (the
writer's encoder is used only once per topic, for its template): every message equals the
simulation it was written from, float64 for float64; the file is in rosbag2's MCAP profile
with the metadata rosbag2 reads; bad arguments are ValueErrors."""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest
import yaml
from conftest import pinocchio_model, to_pinocchio_q
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory

from mbsim_ros.cli import main
from mbsim_ros.model import example_robot_urdf, load_urdf, shipped_urdf
from mbsim_ros.recording import Recorder, root_frame
from mbsim_ros.recording.definitions import MESSAGES, definition
from mbsim_ros.sensors import SensorSuite
from mbsim_ros.build import load_simulated
from mbsim_ros.sim import Simulator

ROOT_CONFIG = shipped_urdf("arm7").parents[1] / "config"
SOLO_SENSORS = [
    {"type": "imu", "name": "base_imu", "link": "base_link", "xyz": [0.0, 0.0, 0.01]},
    {"type": "force_torque", "name": "knee", "joint": "FL_KFE", "rate": 500},
    {"type": "contact", "name": "fl_foot", "link": "FL_LOWER_LEG", "threshold": 1.0},
]


def stamp(msg) -> int:
    return msg.sec * 1_000_000_000 + msg.nanosec


def read(path) -> tuple:
    """(summary, header, metadata records, {topic: [(log_time, decoded)]})."""
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        found: dict = {}
        for _, channel, message, decoded in reader.iter_decoded_messages(log_time_order=False):
            found.setdefault(channel.topic, []).append((message.log_time, decoded))
        return (reader.get_summary(), reader.get_header(), list(reader.iter_metadata()), found)


def run(sim, recorder, steps: int, tau=None, suite=None) -> list[dict]:
    """Step and record; the state at every record (copies)."""
    snapshots = []

    def snapshot():
        snapshots.append({"t_ns": int(round(sim.t * 1e9)), "q": sim.q.copy(), "v": sim.v.copy(),
                          "effort": sim.effort.copy(), "steps": sim.steps,
                          "wrenches": sim.body_wrenches(axes="body").copy(),
                          "world": dict(sim.contact_wrenches()),
                          "sensors": None if suite is None else
                          [(bool(suite.due[k]), suite.reading(k).copy())
                           for k in range(len(suite.devices))]})

    recorder.record()
    snapshot()
    for k in range(steps):
        command = None if tau is None else tau[k]
        assert sim.step(command).converged
        if suite is not None:
            suite.update()
        recorder.record(None if command is None else {"effort": command})
        snapshot()
    recorder.close()
    return snapshots


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    path = tmp_path_factory.mktemp("recording") / "arm7.mcap"
    urdf = shipped_urdf("arm7")
    model = load_urdf(urdf)
    sim = Simulator(model, 1e-3, "variational")
    sim.reset(np.linspace(-0.5, 0.6, model.nv))
    tau = np.random.default_rng(1).normal(size=(60, model.nv)) * 5.0
    simulated = load_simulated(urdf=urdf)
    recorder = Recorder(path, sim, root_frame=root_frame(simulated))
    return path, model, run(sim, recorder, len(tau), tau), tau, urdf


@pytest.fixture(scope="module")
def solo(tmp_path_factory):
    path = tmp_path_factory.mktemp("recording") / "solo12.mcap"
    sim = Simulator.from_scene(str(ROOT_CONFIG / "scenes" / "solo12_standing.yaml"), 1e-3)
    suite = SensorSuite(sim, SOLO_SENSORS)
    recorder = Recorder(path, sim, suite=suite, frame_prefix="solo/")
    return path, sim, suite, run(sim, recorder, 40, suite=suite)


def test_joint_states_and_clock_equal_the_simulation(arm):
    path, model, snapshots, _, _ = arm
    _, _, _, topics = read(path)
    states, clock = topics["/joint_states"], topics["/clock"]
    assert len(states) == len(clock) == len(snapshots) == 61
    for (log_time, msg), (_, tick), snap in zip(states, clock, snapshots):
        assert log_time == stamp(msg.header.stamp) == stamp(tick.clock) == snap["t_ns"]
        assert msg.name == model.joint_names
        assert np.array_equal(msg.position, snap["q"])
        assert np.array_equal(msg.velocity, snap["v"])
        assert np.array_equal(msg.effort, snap["effort"])
    assert [stamp(tick.clock) for _, tick in clock] == [k * 1_000_000 for k in range(61)]


def test_tf_is_the_forward_kinematics(arm):
    path, model, snapshots, _, urdf = arm
    _, _, _, topics = read(path)
    reference = pinocchio_model(str(urdf), floating_base=False)
    data = reference.createData()
    root = root_frame(load_simulated(urdf=urdf))
    assert root != "world"
    for (_, msg), snap in zip(topics["/tf"], snapshots):
        pin.forwardKinematics(reference, data, to_pinocchio_q(model, snap["q"]))
        assert len(msg.transforms) == model.njoints
        for i, transform in enumerate(msg.transforms):
            parent = model.parent[i]
            assert transform.header.frame_id == (root if parent < 0 else model.body_names[parent])
            assert transform.child_frame_id == model.body_names[i]
            assert stamp(transform.header.stamp) == snap["t_ns"]
            assert_transform(transform.transform, data.liMi[i + 1])


def assert_transform(transform, placement) -> None:
    t, r = transform.translation, transform.rotation
    assert np.allclose([t.x, t.y, t.z], placement.translation, atol=1e-12)
    assert math.isclose(r.x ** 2 + r.y ** 2 + r.z ** 2 + r.w ** 2, 1.0, abs_tol=1e-12)
    rotation = pin.Quaternion(r.w, r.x, r.y, r.z).toRotationMatrix()
    assert np.allclose(rotation, placement.rotation, atol=1e-12)


def test_effort_commands_are_the_applied_commands(arm):
    path, _, _, tau, _ = arm
    _, _, _, topics = read(path)
    commands = topics["/mbsim/effort_commands"]
    assert len(commands) == len(tau)
    for k, (log_time, msg) in enumerate(commands):
        assert log_time == (k + 1) * 1_000_000
        assert np.array_equal(msg.data, tau[k]) and msg.layout.dim == []


def test_the_file_is_in_rosbag2s_mcap_profile(arm):
    path, *_ = arm
    summary, header, metadata, topics = read(path)
    assert header.profile == "ros2"
    kinds = {"/clock": "rosgraph_msgs/msg/Clock", "/joint_states": "sensor_msgs/msg/JointState",
             "/tf": "tf2_msgs/msg/TFMessage",
             "/mbsim/effort_commands": "std_msgs/msg/Float64MultiArray"}
    channels = {c.topic: c for c in summary.channels.values()}
    assert set(channels) == set(kinds)
    for topic, channel in channels.items():
        schema = summary.schemas[channel.schema_id]
        assert (channel.message_encoding, schema.encoding, schema.name) == \
            ("cdr", "ros2msg", kinds[topic])
        assert schema.data.decode() == definition(kinds[topic])
        qos = yaml.safe_load(channel.metadata["offered_qos_profiles"])
        assert qos[0]["reliability"] == 1 and qos[0]["depth"] == (100 if topic == "/tf" else 10)
        assert summary.statistics.channel_message_counts[channel.id] == len(topics[topic])
    assert summary.chunk_indexes and summary.statistics.message_count == \
        sum(len(found) for found in topics.values())
    [record] = [m for m in metadata if m.name == "rosbag2"]
    bag = yaml.safe_load(record.metadata["serialized_metadata"])
    assert bag["version"] == 8 and bag["storage_identifier"] == "mcap"
    assert bag["duration"]["nanoseconds"] == 60_000_000
    assert {t["topic_metadata"]["name"]: t["message_count"]
            for t in bag["topics_with_message_count"]} == \
        {topic: len(found) for topic, found in topics.items()}
    assert bag["custom_data"]["mbsim_ros.model"]


def test_floating_base_scene_odometry_contacts_tf_and_sensors(solo):
    path, sim, suite, snapshots = solo
    model = sim.model
    _, _, _, topics = read(path)
    free = model.joint_kinds.index("free_flyer")
    iq, iv = model.idx_q[free], model.idx_v[free]
    base = "solo/" + model.body_names[free]
    odometry = topics["/mbsim/odom"]
    assert len(odometry) == len(snapshots)
    for (_, msg), snap in zip(odometry, snapshots):
        assert (msg.header.frame_id, msg.child_frame_id) == ("world", base)
        p, o = msg.pose.pose.position, msg.pose.pose.orientation
        lin, ang = msg.twist.twist.linear, msg.twist.twist.angular
        assert np.array_equal([p.x, p.y, p.z, o.x, o.y, o.z, o.w], snap["q"][iq:iq + 7])
        assert np.array_equal([lin.x, lin.y, lin.z, ang.x, ang.y, ang.z], snap["v"][iv:iv + 6])
        assert not any(msg.pose.covariance) and not any(msg.twist.covariance)
    reference = pinocchio_model(str(example_robot_urdf("solo12")), floating_base=True)
    data = reference.createData()
    for (_, msg), snap in zip(topics["/tf"], snapshots):
        pin.forwardKinematics(reference, data, to_pinocchio_q(model, snap["q"]))
        assert msg.transforms[free].header.frame_id == "world"
        assert msg.transforms[free].child_frame_id == base
        for i, transform in enumerate(msg.transforms):
            assert_transform(transform.transform, data.liMi[i + 1])
        t, r = msg.transforms[free].transform.translation, msg.transforms[free].transform.rotation
        assert np.array_equal([t.x, t.y, t.z, r.x, r.y, r.z, r.w], snap["q"][iq:iq + 7])
    assert_contact_wrenches(topics, model, snapshots)
    assert_sensors(topics, suite, snapshots)


def assert_contact_wrenches(topics, model, snapshots) -> None:
    feet = ["FL_LOWER_LEG", "FR_LOWER_LEG", "HL_LOWER_LEG", "HR_LOWER_LEG"]
    touching = 0
    for foot in feet:
        body = model.body_names.index(foot)
        found = topics[f"/mbsim/contact_wrenches/{foot}"]
        assert len(found) == len(snapshots)
        for (_, msg), snap in zip(found, snapshots):
            f, n = msg.wrench.force, msg.wrench.torque
            recorded = np.array([f.x, f.y, f.z, n.x, n.y, n.z])
            assert msg.header.frame_id == f"solo/{foot}"
            assert np.array_equal(recorded, snap["wrenches"][body])
            world = snap["world"].get(foot)  # Simulator.contact_wrenches(): world axes
            if world is not None and np.any(world):
                touching += 1
                rotation = pin.Quaternion(*quaternion_wxyz(snap, model, body)).toRotationMatrix()
                assert np.allclose(rotation @ recorded[:3], world[:3], atol=1e-9)
            else:
                assert not recorded.any()
    assert touching > 0


def quaternion_wxyz(snap, model, body) -> tuple:
    """The body's world orientation at the snapshot (pinocchio's forward kinematics)."""
    reference = pinocchio_model(str(example_robot_urdf("solo12")), floating_base=True)
    data = reference.createData()
    pin.forwardKinematics(reference, data, to_pinocchio_q(model, snap["q"]))
    q = pin.Quaternion(data.oMi[body + 1].rotation)
    return q.w, q.x, q.y, q.z


def assert_sensors(topics, suite, snapshots) -> None:
    imus, knees, switches = (topics["/mbsim/imu/base_imu"], topics["/mbsim/force_torque/knee"],
                             topics["/mbsim/contact/fl_foot"])
    due = [[snap for snap in snapshots[1:] if snap["sensors"][k][0]] for k in range(3)]
    assert len(imus) == len(due[0]) == 40 and len(knees) == len(due[1]) == 20
    assert len(switches) == len(due[2])
    for (log_time, msg), snap in zip(imus, due[0]):
        reading = snap["sensors"][0][1]
        o, w, a = msg.orientation, msg.angular_velocity, msg.linear_acceleration
        assert log_time == stamp(msg.header.stamp) == snap["t_ns"]
        assert np.array_equal([o.x, o.y, o.z, o.w, w.x, w.y, w.z, a.x, a.y, a.z], reading[3:])
    for (_, msg), snap in zip(knees, due[1]):
        f, n = msg.wrench.force, msg.wrench.torque
        assert np.array_equal([f.x, f.y, f.z, n.x, n.y, n.z], snap["sensors"][1][1])
    assert [msg.data for _, msg in switches] == [bool(snap["sensors"][2][1][0])
                                                 for snap in due[2]]
    assert any(msg.data for _, msg in switches)


def test_rate_decimates_the_heavy_topics_not_the_clock(tmp_path):
    model = load_urdf(shipped_urdf("arm7"))
    sim = Simulator(model, 1e-3, "euler")
    recorder = Recorder(tmp_path / "decimated.mcap", sim, rate=100.0)
    run(sim, recorder, 30)
    _, _, _, topics = read(tmp_path / "decimated.mcap")
    assert len(topics["/clock"]) == 31
    assert [t for t, _ in topics["/joint_states"]] == [0, 10_000_000, 20_000_000, 30_000_000]
    assert len(topics["/tf"]) == 4


def test_joint_commands_by_name(tmp_path):
    model = load_urdf(shipped_urdf("arm7"))
    sim = Simulator(model, 1e-3, "euler")
    with Recorder(tmp_path / "commands.mcap", sim) as recorder:
        sim.step()
        recorder.record({"position": {"joint3": 0.5, "joint1": -0.25},
                         "velocity": {"joint1": 1.0, "joint3": 2.0}})
        sim.step()
        recorder.record({"velocity": {"joint2": 0.125}})
    _, _, _, topics = read(tmp_path / "commands.mcap")
    (_, first), (t, second) = topics["/mbsim/joint_commands"]
    assert first.name == ["joint1", "joint3"]
    assert list(first.position) == [-0.25, 0.5] and list(first.velocity) == [1.0, 2.0]
    assert second.name == ["joint2"] and list(second.velocity) == [0.125]
    assert not len(second.position) and t == 2_000_000 == stamp(second.header.stamp)


@pytest.mark.parametrize("path, message", [
    ("run.bag", "must end in .mcap"), ("missing/run.mcap", "does not exist"),
    ("", "must be a file name")])
def test_a_bad_path_is_a_value_error(tmp_path, path, message):
    sim = Simulator(load_urdf(shipped_urdf("arm7")), 1e-3, "euler")
    where = tmp_path / path if path else ""
    with pytest.raises(ValueError, match=message):
        Recorder(where, sim)


@pytest.mark.parametrize("rate", [0.0, -5.0, float("nan"), float("inf"), "100"])
def test_a_bad_rate_is_a_value_error(tmp_path, rate):
    sim = Simulator(load_urdf(shipped_urdf("arm7")), 1e-3, "euler")
    with pytest.raises(ValueError, match="positive number of Hz"):
        Recorder(tmp_path / "run.mcap", sim, rate=rate)
    assert not (tmp_path / "run.mcap").exists()


@pytest.mark.parametrize("command, message", [
    ({"effort": [1.0, 2.0]}, "entries"), ({"torque": [0.0]}, "command keys"),
    ({"position": {"elbow": 1.0}}, "unknown joint"),
    ({"position": {"joint1": 1.0}, "velocity": {"joint2": 1.0}}, "same joints")])
def test_a_bad_command_is_a_value_error(tmp_path, command, message):
    sim = Simulator(load_urdf(shipped_urdf("arm7")), 1e-3, "euler")
    with Recorder(tmp_path / "run.mcap", sim) as recorder:
        with pytest.raises(ValueError, match=message):
            recorder.record(command)
    with pytest.raises(ValueError, match="closed"):
        recorder.record()


def test_definitions_are_complete_and_concatenated_as_rosbag2_stores_them():
    text = definition("nav_msgs/msg/Odometry")
    sections = text.split("=" * 80 + "\n")
    assert sections[0] == MESSAGES["nav_msgs/Odometry"] + "\n"
    names = [s.splitlines()[0] for s in sections[1:]]
    assert names == ["MSG: std_msgs/Header", "MSG: builtin_interfaces/Time",
                     "MSG: geometry_msgs/PoseWithCovariance", "MSG: geometry_msgs/Pose",
                     "MSG: geometry_msgs/Point", "MSG: geometry_msgs/Quaternion",
                     "MSG: geometry_msgs/TwistWithCovariance", "MSG: geometry_msgs/Twist",
                     "MSG: geometry_msgs/Vector3"]
    with pytest.raises(ValueError, match="no message definition"):
        definition("sensor_msgs/msg/LaserScan")


def test_simulate_record_writes_the_run(tmp_path, capsys):
    out, bag = tmp_path / "run.npz", tmp_path / "run.mcap"
    config = tmp_path / "arm7_sensors.yaml"
    sensors = yaml.safe_load((ROOT_CONFIG / "sensors" / "arm7.yaml").read_text())
    config.write_text(yaml.safe_dump({"urdf_path": "arm7", **sensors}))
    assert main(["simulate", "--config", str(config), "--steps", "40", "--out", str(out),
                 "--record", str(bag)]) == 0
    assert "recorded" in capsys.readouterr().out
    trajectory = np.load(out)
    _, _, _, topics = read(bag)
    states = topics["/joint_states"]
    assert len(states) == 41
    for (_, msg), t, q, v in zip(states, trajectory["t"], trajectory["q"], trajectory["v"]):
        assert stamp(msg.header.stamp) == int(round(t * 1e9))
        assert np.array_equal(msg.position, q) and np.array_equal(msg.velocity, v)
    imu = topics["/mbsim/imu/tool_imu"]
    assert len(imu) == 8 and len(topics["/mbsim/force_torque/wrist_ft"]) == 20
    readings = trajectory["sensor_tool_imu"][5::5]
    assert np.array_equal([[m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z]
                           for _, m in imu], readings[:, 7:10])
    assert topics["/tf"][0][1].transforms[0].header.frame_id == "base_link"
    with pytest.raises(SystemExit, match="--record"):
        main(["simulate", "--steps", "1", "--out", str(out), "--record", str(tmp_path / "x")])
