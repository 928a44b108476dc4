"""Several robots in one ROS domain, over real DDS: two node processes started with
``-r __ns:=/left`` and ``-r __ns:=/right`` (lockstep, so nothing moves but what is commanded),
each with its own joint_states, commands, services and robot_description; a command or a reset
to one leaves the other alone. /clock is global: the right one is remapped away, as
docs/NODE.md advises for several simulations in one domain."""
from __future__ import annotations

import numpy as np
import pytest
from ros_harness import Client, NodeProcess, arrays, ros_session, warm_kernels

SIDES = {"left": ("-r", "__ns:=/left"),
         "right": ("-r", "__ns:=/right", "-r", "/clock:=/right/clock")}


@pytest.fixture(scope="module")
def robots(tmp_path_factory):
    """{side: (node process, client in that namespace)}."""
    import rclpy

    warm_kernels()
    domain, context = ros_session(__name__)
    log_dir = tmp_path_factory.mktemp("namespaces")
    nodes = {side: NodeProcess(domain, "--config", "config/arm7.yaml", "--ros-args",
                               "-p", "pacing:=lockstep", *remaps, log_dir=log_dir)
             for side, remaps in SIDES.items()}
    clients = {side: Client(context, namespace=f"/{side}") for side in SIDES}
    try:
        for side, client in clients.items():
            try:
                client.wait_for_states(1, timeout=180.0)
            except TimeoutError:
                raise AssertionError(f"/{side}: no joint_states; log:\n{nodes[side].log()}")
        yield {side: (nodes[side], clients[side]) for side in SIDES}
    finally:
        for client in clients.values():
            client.destroy()
        codes = {side: node.stop() for side, node in nodes.items()}
        rclpy.shutdown(context=context)
    assert codes == {"left": 0, "right": 0}, {side: n.log() for side, n in nodes.items()}


def test_each_node_has_its_own_topics_and_services(robots):
    graph = robots["left"][1].node
    for side in SIDES:
        assert graph.count_publishers(f"/{side}/joint_states") == 1
        assert graph.count_publishers(f"/{side}/robot_description") == 1
        assert graph.count_subscribers(f"/{side}/mbsim/joint_commands") == 1
        assert graph.count_subscribers(f"/{side}/mbsim/effort_commands") == 1
    assert graph.count_publishers("/joint_states") == 0
    assert graph.count_publishers("/clock") == 1 and graph.count_publishers("/right/clock") == 1
    services = {name for name, _ in graph.get_service_names_and_types()}
    for side in SIDES:
        assert {f"/{side}/mbsim/{s}" for s in ("reset", "pause", "step")} <= services
        assert graph.count_subscribers(f"/{side}/mbsim/set_state") == 1


def test_a_command_to_one_moves_only_that_one(robots):
    (_, left), (_, right) = robots["left"], robots["right"]
    left.call("reset")
    right.call("reset")
    left.spin_for(0.3)
    right.spin_for(0.3)
    start = {side: arrays(c.states[-1])[0] for side, (_, c) in robots.items()}
    right.states.clear()
    for _ in range(5):
        left.states.clear()
        left.send_efforts(np.full(7, 5.0))
        left.wait_for_states(1)
    right.spin_for(0.3)
    assert right.states == [], "the right robot took no step"
    moved = arrays(left.states[-1])
    assert np.array_equal(moved[2], np.full(7, 5.0)), "the left robot applies its command"
    assert not np.array_equal(moved[0], start["left"])


def test_a_reset_of_one_leaves_the_other(robots):
    (_, left), (_, right) = robots["left"], robots["right"]
    left.states.clear()
    left.send_efforts(np.full(7, 5.0))
    left.wait_for_states(1)
    left_before = arrays(left.states[-1])[0]
    left.states.clear()
    right.states.clear()
    assert right.call("reset").success
    right.wait_for_states(1)  # lockstep republishes its state after a reset
    left.spin_for(0.3)
    assert left.states == [], "the left robot was not reset"
    assert np.array_equal(arrays(right.states[-1])[1], np.zeros(7))
    left.states.clear()
    left.send_efforts(np.zeros(7))
    left.wait_for_states(1)
    assert not np.array_equal(arrays(left.states[-1])[0], arrays(right.states[-1])[0])
    assert np.abs(arrays(left.states[-1])[0] - left_before).max() < 0.1
