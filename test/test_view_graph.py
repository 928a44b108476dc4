"""The view's scene graph without a browser: every link of the URDF present, with its visual
geometry, and every link's world pose equal to pinocchio's frame placement (the independent
oracle) at random configurations (and the server's batched poses); a missing mesh is a warning
naming the file, not a crash; the live Viewer of a scene-built Simulator."""
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from browser import free_port

from mbsim_ros.build import load_simulated
from mbsim_ros.model.resources import example_robot_urdf
from mbsim_ros.sim import Simulator
from mbsim_ros.view.live import Viewer
from mbsim_ros.view.scene_graph import MeshWarning, scene_graph, urdf_graph, urdf_links
from mbsim_ros.view.server import LinkPlacements


@pytest.mark.parametrize("name, floating", [("panda", False), ("solo12", True)])
def test_link_poses_are_pinocchio_frames(name, floating):
    urdf = example_robot_urdf(name)
    simulated = load_simulated(urdf=urdf, floating_base=floating)
    graph = urdf_graph(simulated.model, urdf)
    oracle = pin.buildModelFromUrdf(str(urdf), pin.JointModelFreeFlyer()) if floating \
        else pin.buildModelFromUrdf(str(urdf))
    data = oracle.createData()
    bodies = {f.name for f in oracle.frames if f.type == pin.FrameType.BODY}
    assert {link.name for link in graph.links} == bodies
    assert not graph.warnings
    assert all(link.visual for link in graph.links if link.name.endswith("link1"))
    for _ in range(3):
        q = pin.randomConfiguration(oracle, -np.ones(oracle.nq), np.ones(oracle.nq))
        pin.framesForwardKinematics(oracle, data, q)
        poses = graph.poses(q)
        for f, frame in enumerate(oracle.frames):
            if frame.type == pin.FrameType.BODY:
                R, p = poses[frame.name]
                np.testing.assert_allclose(R, data.oMf[f].rotation, atol=1e-12)
                np.testing.assert_allclose(p, data.oMf[f].translation, atol=1e-12)


def test_a_missing_mesh_is_a_warning_naming_the_file():
    xml = ('<robot name="r"><link name="a"><visual><geometry><mesh filename="gone.stl"/>'
           '</geometry></visual><collision><geometry><box size="1 1 1"/></geometry>'
           '</collision></link></robot>')
    with warnings.catch_warnings():
        warnings.simplefilter("error", MeshWarning)
        links, messages = urdf_links(xml)
    assert len(messages) == 1 and "gone.stl" in messages[0] and "link 'a'" in messages[0]
    assert not links[0].visual and links[0].collision[0].kind == "box"


def test_a_scene_graph_places_its_models_and_boxes():
    scene = {"ground": {"height": 0.0},
             "boxes": [{"name": "step", "size": [0.4, 0.4, 0.1], "position": [1, 0, 0.05]}],
             "models": [{"name": "ball", "sphere": {"radius": 0.1, "mass": 1.0},
                         "position": [0, 0, 0.5]},
                        {"name": "cube", "box": {"size": [0.2, 0.2, 0.2], "mass": 1.0},
                         "position": [0.5, 0, 0.5]}]}
    simulated = load_simulated(scene=scene)
    graph = scene_graph(simulated.scene)
    assert [link.name for link in graph.links] == ["ball/ball", "cube/cube"]
    poses = graph.poses(simulated.scene.q0)
    np.testing.assert_allclose(poses["cube/cube"][1], [0.5, 0, 0.5])
    assert graph.box_names == ["step"] and graph.ground[2] == 1.0


def test_the_batched_link_poses_are_the_graph_s():
    """The server's vectorised poses (quaternions of every link at once) give the rotations
    and positions SceneGraph.poses gives, at random configurations of the free-flying Solo12."""
    simulated = load_simulated(urdf=example_robot_urdf("solo12"), floating_base=True)
    graph = urdf_graph(simulated.model, simulated.urdf_source)
    placements = LinkPlacements(graph)
    rng = np.random.default_rng(3)
    for _ in range(5):
        q = simulated.model.neutral()
        q[7:] = rng.uniform(-np.pi, np.pi, q.size - 7)
        q[3:7] = rng.normal(size=4)
        q[3:7] /= np.linalg.norm(q[3:7])
        batched = placements.poses(*graph.body_poses(q))
        for link, pose in zip(graph.links, batched):
            R, p = graph.poses(q)[link.name]
            w, x, y, z = pose[:4]
            rotation = pin.Quaternion(w, x, y, z).toRotationMatrix()
            np.testing.assert_allclose(rotation, R, atol=1e-12)
            np.testing.assert_allclose(pose[4:], p, atol=1e-12)


def test_a_scene_built_simulator_is_viewed_without_its_configuration():
    """Viewer(sim) for Simulator.from_scene (the scene keeps its models), sending frames while
    the loop steps; a Simulator from a Model alone is refused naming what is missing."""
    scene = {"ground": {"height": 0.0},
             "models": [{"name": "ball", "sphere": {"radius": 0.1, "mass": 1.0},
                         "position": [0, 0, 0.5]}]}
    sim = Simulator.from_scene(scene, dt=1e-3)
    with Viewer(sim, port=0, rate=200.0) as viewer:
        assert [link.name for link in viewer.view.graph.links] == \
            [link.name for link in scene_graph(sim.scene).links] != []
        while viewer.frames < 3:
            sim.step()
    with pytest.raises(ValueError, match="from_scene"):
        Viewer(Simulator(load_simulated(urdf=example_robot_urdf("panda")).model), port=0)


def test_a_scene_graph_carries_its_heightfield_as_the_detection_mesh():
    """config/scenes/solo12_slope.yaml: 11 x 3 heights give 33 vertices and 40 triangles, on
    the ramp z = x tan 15 deg, facing up; no plane."""
    from mbsim_ros.contact.scene import load_scene

    graph = scene_graph(load_scene("config/scenes/solo12_slope.yaml"))
    vertices, faces = graph.terrain_mesh()
    assert vertices.shape == (33, 3) and faces.shape == (40, 3)
    np.testing.assert_allclose(vertices[:, 2], vertices[:, 0] * np.tan(np.radians(15.0)),
                               atol=1e-6)
    a, b, c = (vertices[faces[:, k]] for k in range(3))
    assert np.all(np.cross(b - a, c - a)[:, 2] > 0.0)
    assert not np.any(graph.ground)


def test_a_recording_s_contact_wrenches_become_force_arrows(tmp_path):
    """A ball resting on the ground off the origin, recorded: the played arrow
    carries the recorded contact force in world axes (the simulator's own contact wrench, to
    the recording's float64), on the vertical line through the ball's centre, where its one
    contact's line of action runs."""
    from mbsim_ros.recording import Recorder
    from mbsim_ros.view.playback import contact_arrows, read_trajectory

    scene = {"ground": {"height": 0.0},
             "models": [{"name": "ball", "sphere": {"radius": 0.1, "mass": 2.0},
                         "position": [0.3, -0.2, 0.1]}]}
    sim = Simulator.from_scene(scene, dt=1e-3)
    path = tmp_path / "ball.mcap"
    with Recorder(path, sim) as recorder:
        for _ in range(200):
            sim.step()
            recorder.record()
    times, q, wrenches = read_trajectory(path, sim.model)
    graph = scene_graph(sim.scene)
    arrows = contact_arrows(*graph.body_poses(q[-1]), wrenches[-1])
    assert arrows.shape == (1, 2, 3)
    np.testing.assert_allclose(arrows[0, 1], sim.contact_wrenches()["ball"][:3], rtol=1e-9)
    assert arrows[0, 1, 2] == pytest.approx(2.0 * 9.81, rel=1e-3)
    np.testing.assert_allclose(arrows[0, 0, :2], sim.q[:2], atol=1e-6)
    assert not contact_arrows(*graph.body_poses(q[0]), np.zeros_like(wrenches[0])).size


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_the_view_server_stops_on_sigint_and_sigterm_even_started_deaf_to_sigint(signum):
    """`mbsim-ros view` started with SIGINT ignored (as `cmd &` in a script starts it) still
    stops, with status 0, on SIGINT and on SIGTERM; no browser needed. The timeouts are
    liveness bounds."""
    root = Path(__file__).resolve().parents[1]
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "mbsim_ros.cli", "view", "--urdf", str(example_robot_urdf("ur5")),
         "--port", str(port)], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        line = ""
        while "mbsim-ros view: http://" not in line and process.poll() is None:
            line = process.stdout.readline()
        assert process.poll() is None, "the view exited before serving"
        process.send_signal(signum)
        assert process.wait(timeout=60) == 0
    finally:
        process.kill()
        process.wait()
