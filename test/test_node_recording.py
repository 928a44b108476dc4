"""The node's ``record`` parameter over real DDS (the node in a second process, a client in this
one): after SIGINT the MCAP file is finalised, decodes with mcap_ros2, and holds the same
joint states the client received, the clock, and the commands the client sent as received."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from ros_harness import MBSIM, ROOT, node_session, state_time_ns, unique_domain_id

EFFORTS = [[0.5 * k, -0.25, 0.0, 1.0, 0.0, 0.0, 0.125] for k in range(1, 6)]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """Run a node with record:=FILE, send commands, collect joint_states, stop it (SIGINT):
    (the file, the states received, the commands sent)."""
    folder = tmp_path_factory.mktemp("node_recording")
    path = folder / "node.mcap"
    session = node_session(__name__, folder, "--config", "config/arm7.yaml", "--ros-args",
                           "-p", f"record:={path}")
    node, client = next(session)
    client.wait_for_states(200, timeout=60.0)
    for effort in EFFORTS:
        client.send_efforts(effort)
        client.spin_for(0.05)
    client.send_named(["joint2"], [], position=[0.3], velocity=[0.0])
    client.wait_for_states(len(client.states) + 200, timeout=60.0)
    received = list(client.states)
    with pytest.raises(StopIteration):
        next(session)  # the client is destroyed and the node stopped by SIGINT (exit 0)
    return path, received


def read(path) -> dict:
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        assert reader.get_header().profile == "ros2"
        assert reader.get_summary().statistics.message_count > 0  # finalised: a summary
        found: dict = {}
        for _, channel, message, decoded in reader.iter_decoded_messages():
            found.setdefault(channel.topic, []).append((message.log_time, decoded))
        return found


def test_the_recording_holds_the_joint_states_received_over_dds(recorded):
    path, received = recorded
    topics = read(path)
    states = {state_time_ns(msg): msg for _, msg in topics["/joint_states"]}
    assert len(states) == len(topics["/joint_states"])  # one per step: no stamp twice
    assert len(received) > 400
    for msg in received:
        found = states[state_time_ns(msg)]
        assert found.name == list(msg.name)
        assert np.array_equal(found.position, msg.position)
        assert np.array_equal(found.velocity, msg.velocity)
        assert np.array_equal(found.effort, msg.effort)
    clock = [t for t, _ in topics["/clock"]]
    assert clock == sorted(clock) and set(states) <= set(clock)


def test_the_recording_holds_the_commands_as_received(recorded):
    path, _ = recorded
    topics = read(path)
    efforts = [list(msg.data) for _, msg in topics["/mbsim/effort_commands"]]
    assert efforts == EFFORTS
    [(_, command)] = topics["/mbsim/joint_commands"]
    assert command.name == ["joint2"] and list(command.position) == [0.3]
    # the last effort command shows on joint_states once it was taken
    assert any(msg.effort[0] == EFFORTS[-1][0] for _, msg in topics["/joint_states"])


def test_a_bad_record_path_is_a_start_up_error(tmp_path):
    done = subprocess.run([MBSIM, "run", "--ros-args", "-p",
                           f"record:={tmp_path / 'missing' / 'run.mcap'}"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env=dict(os.environ, ROS_DOMAIN_ID=str(unique_domain_id())))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"mbsim_node: error: parameter 'record': recording path "
        f"'{tmp_path / 'missing' / 'run.mcap'}': folder '{tmp_path / 'missing'}' does not exist"]
