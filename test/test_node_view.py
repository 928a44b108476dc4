"""The node's ``view`` parameter over real DDS (the node in a second process importing this
tree's code, a client in this one): the page is served at the port given while joint_states
keep coming one per 1 ms step, a browser draws the robot (when there is a chromium), SIGINT
stops the node and its server (exit 0, the port refuses connections); a port in use is a start-up
error of one line."""
from __future__ import annotations

import os
import socket
import subprocess
import urllib.request

import numpy as np
import pytest
from browser import Browser, free_port, wait_for
from ros_harness import MBSIM, ROOT, node_session, state_time_ns, unique_domain_id
from test_view_browser import _drawn

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}


@pytest.fixture(scope="module")
def viewed(tmp_path_factory):
    """A node (arm7, realtime 1 kHz) with view:=PORT: (port, session, node, client)."""
    port = free_port()
    session = node_session(__name__, tmp_path_factory.mktemp("node_view"), "--config",
                           "config/arm7.yaml", "--ros-args", "-p", f"view:={port}",
                           "-p", "diagnostics_period:=0.5", env=ENV)
    node, client = next(session)
    yield port, node, client
    with pytest.raises(StopIteration):
        next(session)  # the client destroyed, the node stopped by SIGINT: exit 0
    with pytest.raises(ConnectionRefusedError), socket.socket() as s:
        s.connect(("127.0.0.1", port))  # the view's server is gone with the node


def test_the_node_serves_the_view_and_keeps_publishing(viewed):
    port, node, client = viewed
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as reply:
        page = reply.read().decode()
    assert reply.status == 200 and "<html" in page.lower()
    client.states.clear()
    client.diagnostics.clear()
    client.wait_for_states(3000, timeout=120.0)
    stamps = np.array([state_time_ns(s) for s in client.states])
    assert np.all(np.diff(stamps) == 1_000_000), "one joint_states per 1 ms step, none missed"
    rates = [float(client.latest_diagnostic()["rate_hz"])] if client.diagnostics else []
    assert rates and rates[0] > 500.0, f"the loop keeps near its 1000 Hz: {rates}"
    assert "3D view at http://127.0.0.1:" in node.log()


def test_a_browser_draws_the_node_s_robot(viewed):
    port, node, client = viewed
    browser = Browser(f"http://127.0.0.1:{port}")
    try:
        wait_for(lambda: "real-time factor" in (browser.evaluate("document.body.innerText")
                                                or ""), 60, "the status line")
        wait_for(lambda: _drawn(browser.screenshot()), 60, "a drawn robot")
    finally:
        browser.close()
    assert node.alive(), node.log()


def test_a_port_in_use_is_a_start_up_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([MBSIM, "run", "--ros-args", "-p", f"view:={port}"],
                              capture_output=True, text=True, timeout=180, cwd=ROOT,
                              env=dict(ENV, ROS_DOMAIN_ID=str(unique_domain_id())))
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"mbsim_node: error: parameter 'view': port {port} is in use"]
