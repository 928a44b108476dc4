"""Start-up errors exit non-zero with one line; a diverging simulation pauses itself, reports
an error in /diagnostics, publishes no NaN, and comes back with ~/reset; a stop that catches a
callback publishing is still a clean stop."""
from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from ros_harness import (MBSIM, ROOT, arrays, ros_session, start_node, state_time_ns,
                         unique_domain_id, warm_kernels)

from mbsim_ros.model import shipped_urdf


def run_node(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, ROS_DOMAIN_ID=str(unique_domain_id()))
    return subprocess.run([MBSIM, "run", *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=180)


def one_line_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got:\n{result.stderr}"
    return lines[0]


def test_a_bad_urdf_exits_non_zero_naming_the_element(tmp_path):
    bad = tmp_path / "bad.urdf"
    bad.write_text('<robot name="r"><link name="a"/><link name="b"/>'
                   '<joint name="hinge" type="revolute"><parent link="a"/><child link="nope"/>'
                   '<axis xyz="0 0 1"/></joint></robot>')
    line = one_line_error(run_node("--ros-args", "-p", f"urdf_path:={bad}", tmp_path=tmp_path))
    assert "hinge" in line and "nope" in line


@pytest.mark.parametrize("override, words", [
    ("integrator:=rk45", ["integrator", "rk45", "variational"]),
    ("pacing:=sometimes", ["pacing", "lockstep"]),
    ("dt:=-0.001", ["dt"]),
    ("initial_positions.elbow:=1.0", ["initial_positions.elbow", "joint1"]),
    ("armature.elbow:=0.1", ["armature.elbow", "joint1"]),
    ("armature.joint1:=-0.1", ["armature.joint1", ">= 0"]),
    ("variational.tolerance:=2.0", ["tolerance"]),
    ("variational.no_such_option:=1", ["no_such_option", "solver"]),
    ("urdf_path:=/no/such.urdf", ["/no/such.urdf"]),
])
def test_a_bad_parameter_exits_non_zero_with_one_line(tmp_path, override, words):
    line = one_line_error(run_node("--ros-args", "-p", override, tmp_path=tmp_path))
    for word in words:
        assert word in line, line


def test_the_mbsim_node_script_takes_ros_args(tmp_path):
    node = str(Path(sys.executable).with_name("mbsim_node"))
    result = subprocess.run([node, "--ros-args", "-p", "integrator:=rk45"], capture_output=True,
                            text=True, timeout=180,
                            env=dict(os.environ, ROS_DOMAIN_ID=str(unique_domain_id())))
    assert result.returncode == 1 and "rk45" in result.stderr


def unbounded_pendulum() -> str:
    """The shipped pendulum with an effort limit that lets a command blow the state up."""
    text = shipped_urdf("pendulum").read_text()
    return text.replace('effort="50"', 'effort="1e300"')


def test_divergence_pauses_reports_and_publishes_no_nan(tmp_path):
    import rclpy

    warm_kernels()
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"/**": {"ros__parameters": {
        "robot_description": unbounded_pendulum(), "pacing": "lockstep",
        "diagnostics_period": 0.2}}}))
    domain, context = ros_session(__name__)
    node, client = start_node(domain, context, tmp_path, "--ros-args", "--params-file",
                              str(params))
    try:
        client.states.clear()
        client.send_efforts([1.0])
        client.wait_for_state_at(1_000_000)
        client.send_efforts([1e300])
        client.spin_until(lambda: client.diagnostics and
                          client.latest_diagnostic()["level"] == 2, 10.0,
                          "an ERROR in diagnostics")
        message = client.latest_diagnostic()["message"]
        assert "stopped at t = 0.001" in message
        for state in client.states:
            assert all(np.all(np.isfinite(a)) for a in arrays(state))
        assert max(state_time_ns(s) for s in client.states) == 1_000_000, \
            "no state is published for the failed step"
        resume = client.call("pause", False)
        assert not resume.success and "reset" in resume.message
        assert not client.call("step").success
        assert client.call("reset").success
        client.states.clear()
        client.send_efforts([0.5])
        client.wait_for_states(1)
        assert math.isfinite(arrays(client.states[-1])[0][0])
        assert node.alive()
    finally:
        client.destroy()
        code = node.stop()
        rclpy.shutdown(context=context)
    assert code == 0, node.log()


def test_run_config_leaves_no_parameters_file(tmp_path):
    """`mbsim-ros run --config` writes the config as a parameters file in the temporary
    directory and removes it when the node ends: after SIGINT and after a start-up error."""
    import rclpy

    warm_kernels()
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = dict(os.environ, TMPDIR=str(temp))
    domain, context = ros_session(__name__)
    node, client = start_node(domain, context, tmp_path, "--config", "config/arm7.yaml",
                              "--ros-args", "-p", "pacing:=lockstep", env=env)
    try:
        assert len(list(temp.glob("mbsim-params-*.yaml"))) == 1, "while the node runs"
    finally:
        client.destroy()
        code = node.stop()
        rclpy.shutdown(context=context)
    assert code == 0, node.log()
    assert list(temp.iterdir()) == []
    failed = subprocess.run([MBSIM, "run", "--config", "config/arm7.yaml", "--ros-args", "-p",
                             "integrator:=rk45"],
                            env=dict(env, ROS_DOMAIN_ID=str(unique_domain_id())), cwd=ROOT,
                            capture_output=True, text=True, timeout=180)
    assert failed.returncode == 1 and "rk45" in failed.stderr
    assert list(temp.iterdir()) == []


def test_a_publish_cut_off_by_the_stop_ends_the_spin_quietly():
    """until_shutdown (the node's and the examples' spin): Ctrl-C shuts the context down, and a
    callback publishing at that moment raises rclpy's "publisher's context is invalid" (the
    PD example exited 1 with that traceback in a suite run). After the shutdown that error is
    the stop; while the context is up any error propagates."""
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from std_msgs.msg import Float64MultiArray

    from mbsim_ros.ros.shutdown import until_shutdown

    _, context = ros_session(__name__ + ".shutdown")
    node = rclpy.create_node("publisher", context=context)
    publisher = node.create_publisher(Float64MultiArray, "commands", 1)
    with pytest.raises(RuntimeError, match="while running"):
        with until_shutdown(context):
            raise RuntimeError("while running")
    rclpy.shutdown(context=context)
    with pytest.raises(Exception, match="context is invalid|destruction was requested"):
        publisher.publish(Float64MultiArray())  # (which one: how far the shutdown has come)
    with until_shutdown(context):
        publisher.publish(Float64MultiArray())
    with until_shutdown(context):
        raise ExternalShutdownException()
    node.destroy_node()
