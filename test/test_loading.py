"""Loading what urdfdom loads: leading whitespace, inertias within rounding, the opt-in inertia
repair (balance_inertia), zero-DOF models; a singular joint-space inertia refused by the
Simulator and the ProcessModel (not the loader) with the joints named; armature and
balance_inertia as config, scene and node inputs; starts clamped into the joint limits."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import yaml
from conftest import random_configuration

from mbsim_ros import Simulator
from mbsim_ros.cli import main as cli
from mbsim_ros.config import ConfigError, initial_configuration, set_armature
from mbsim_ros.contact.scene import SceneError, load_scene
from mbsim_ros.dynamics.checks import singular_joints
from mbsim_ros.estimation import ProcessModel
from mbsim_ros.integrators import INTEGRATORS
from mbsim_ros.model import LimitWarning, ModelError, load_urdf, shipped_urdf
from mbsim_ros.model.model import R_INERTIA
from mbsim_ros.model.resources import example_robot_urdf
from mbsim_ros.model.urdf import nearest_physical_inertia

HECTOR = "hector_description/robots/quadrotor_base.urdf"
ROMEO = "romeo_description/urdf/romeo.urdf"
A1 = "a1_description/urdf/a1.urdf"
ROMEO_HANDS = [f"{side}{joint}" for side in "LR" for joint in (
    "Finger21", "Finger22", "Finger23", "Finger31", "Finger32", "Finger33", "Hand", "Finger12",
    "Finger13", "Thumb1", "Thumb2", "Thumb3")]


def one_link(inertia: str, extra: str = "") -> str:
    """A base and one link on a revolute joint 'j1'; the link's <inertia> attributes given."""
    return (f'<robot name="r"><link name="base"/><link name="l1"><inertial><mass value="1"/>'
            f'<inertia {inertia}/></inertial></link>{extra}'
            f'<joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>'
            f'<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
            f'</robot>')


def link_inertia(model, joint: int = 0) -> np.ndarray:
    xx, xy, xz, yy, yz, zz = model.joint_real[joint, R_INERTIA]
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def inertia_attributes(matrix) -> str:
    keys = (("ixx", 0, 0), ("ixy", 0, 1), ("ixz", 0, 2), ("iyy", 1, 1), ("iyz", 1, 2),
            ("izz", 2, 2))
    return " ".join(f'{k}="{float(matrix[r, c])!r}"' for k, r, c in keys)


def quiet_load(source, **options):
    """load_urdf with every warning an error (a load that must not warn)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return load_urdf(source, **options)


# --- well-formedness: urdfdom's leniency -----------------------------------------------------

def test_a_blank_line_before_the_xml_declaration_loads(tmp_path):
    text = "\n  \n<?xml version='1.0'?>\n" + one_link(inertia_attributes(np.eye(3)))
    path = tmp_path / "blank.urdf"
    path.write_text(text)
    for source in (text, path):
        assert quiet_load(source).joint_names == ["j1"]
    scene = load_scene({"models": [{"urdf": str(path)}]})  # the scene's pinocchio parse too
    assert scene.model.nv == 1


# --- inertias ----------------------------------------------------------------------------------

def test_a_point_mass_with_noise_in_its_inertia_is_legal():
    """iCub's 'head': zeros and ixz = 2.4e-35 (principal moments -2.4e-35, 0, 2.4e-35)."""
    model = quiet_load(one_link('ixx="0" ixy="0" ixz="2.40741e-35" iyy="0" iyz="0" izz="0"'))
    assert np.abs(link_inertia(model)).max() < 1e-34


def test_a_moment_negative_within_rounding_is_clipped_with_a_warning():
    """TIAGo's antenna inertia (principal moments -3.5e-8, 3.5e-8, 9.1e-8) on a robot whose
    largest moment is 0.1: clipped to zero, the principal axes kept."""
    antenna = np.array([[2.371e-8, 6.119e-8, 1.179e-8], [6.119e-8, 2.833e-8, 0.774e-8],
                        [1.179e-8, 0.774e-8, 3.849e-8]])
    heavy = (f'<link name="heavy"><inertial><mass value="1"/><inertia '
             f'{inertia_attributes(0.1 * np.eye(3))}/></inertial></link>'
             f'<joint name="j0" type="fixed"><parent link="base"/><child link="heavy"/></joint>')
    xml = one_link(inertia_attributes(antenna), heavy)
    with pytest.warns(UserWarning, match=r"clipped to zero: link 'l1' \(-3.535e-08"):
        model = load_urdf(xml)
    w, axes = np.linalg.eigh(antenna)
    expected = axes @ np.diag([0.0, w[1], w[2]]) @ axes.T
    np.testing.assert_allclose(link_inertia(model), expected, rtol=0, atol=1e-20)
    assert np.linalg.eigvalsh(link_inertia(model))[0] > -1e-22


ROMEO_BODY = np.array([[0.0564204, 7.26322e-05, -0.0575115], [7.26322e-05, 0.0521042, -3.39086e-05],
                       [-0.0575115, -3.39086e-05, 0.021185]])


def test_a_grossly_invalid_inertia_names_the_link_moments_and_the_repair():
    with pytest.raises(ModelError, match=r"link 'l1': principal moments \(-0.02135, 0.0521, "
                                         r"0.09895\).*balance_inertia=True"):
        load_urdf(one_link(inertia_attributes(ROMEO_BODY)))


def test_balance_inertia_gives_the_nearest_physical_inertia():
    """romeo_laas_small's 'body': only l1 + l2 >= l3 is violated, so the nearest point of the
    cone is the projection onto the plane l1 + l2 - l3 = 0: l + (l3 - l1 - l2) / 3 (1, 1, -1),
    on the same principal axes; the model pinocchio builds carries it."""
    with pytest.warns(UserWarning, match=r"link 'l1' \(-0.02135, 0.0521, 0.09895\) -> \(0.00138"):
        model = load_urdf(one_link(inertia_attributes(ROMEO_BODY)), balance_inertia=True)
    w, axes = np.linalg.eigh(ROMEO_BODY)
    expected = axes @ np.diag(w + (w[2] - w[0] - w[1]) / 3.0 * np.array([1, 1, -1])) @ axes.T
    np.testing.assert_allclose(link_inertia(model), expected, rtol=0, atol=1e-15)
    np.testing.assert_allclose(nearest_physical_inertia(ROMEO_BODY), expected, atol=1e-15)


def random_physical_inertia(rng) -> np.ndarray:
    """A physical inertia: J = tr(S) I - S for a random second-moment matrix S >= 0."""
    a = rng.normal(size=(3, 3)) * rng.uniform(0.0, 0.3)
    S = a @ a.T
    return np.trace(S) * np.eye(3) - S


@pytest.mark.parametrize("seed", range(5))
def test_the_repair_is_the_projection_onto_the_physical_inertias(seed):
    """X is the projection of I onto a closed convex set C iff X is in C and
    <I - X, P - X> <= 0 for every P in C (Frobenius inner product): checked on 2000 physical P.
    Also: a physical inertia is left as it is."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(3, 3))
    inertia = a + a.T  # symmetric, generally neither semidefinite nor balanced
    X = nearest_physical_inertia(inertia)
    w = np.linalg.eigvalsh(X)
    scale = np.linalg.norm(inertia)  # (a projection onto the cone's apex would give X = 0)
    assert w[0] >= -1e-12 * scale and w[0] + w[1] >= w[2] - 1e-12 * scale
    worst = max(float(np.sum((inertia - X) * (random_physical_inertia(rng) * s - X)))
                for s in (0.1, 1.0, 10.0) for _ in range(700))
    assert worst <= 1e-12 * np.linalg.norm(inertia) ** 2
    P = random_physical_inertia(rng)
    np.testing.assert_allclose(nearest_physical_inertia(P), P, atol=1e-14)


def test_balance_inertia_also_repairs_a_triangle_violation():
    xml = one_link(inertia_attributes(np.diag([0.1, 0.1, 0.5])))
    with pytest.warns(UserWarning, match="violate the triangle inequality"):
        load_urdf(xml)
    with pytest.warns(UserWarning, match=r"balance_inertia.*link 'l1' \(0.1, 0.1, 0.5\) -> "
                                         r"\(0.2, 0.2, 0.4\)"):
        model = load_urdf(xml, balance_inertia=True)
    np.testing.assert_allclose(link_inertia(model), np.diag([0.2, 0.2, 0.4]), atol=1e-16)


@pytest.mark.parametrize("robot, options", [
    ("icub_description/robots/icub.urdf", {}),
    ("tiago_description/robots/tiago.urdf", {}),
    ("romeo_description/urdf/romeo_laas_small.urdf", {"balance_inertia": True}),
    ("iris_description/robots/iris_simple.urdf", {}),
])
def test_example_robots_refused_before_now_load(robot, options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert load_urdf(example_robot_urdf(robot), **options).total_mass > 0


def test_a_urdf_without_links_keeps_its_error():
    with pytest.raises(ModelError, match="no <link>"):
        load_urdf(example_robot_urdf("ur_description/urdf/ur3.urdf"))


# --- zero degrees of freedom -------------------------------------------------------------------

@pytest.fixture(scope="module")
def hector():
    return load_urdf(example_robot_urdf(HECTOR))


@pytest.mark.parametrize("integrator", sorted(INTEGRATORS))
def test_a_zero_dof_model_steps_time_in_every_integrator(hector, integrator):
    assert (hector.nq, hector.nv, hector.njoints) == (0, 0, 0)
    assert hector.total_mass == pytest.approx(hector.fixed_mass) and hector.fixed_mass > 1.0
    sim = Simulator(hector, dt=2e-3, integrator=integrator)
    infos = [sim.step() for _ in range(5)]
    assert all(info.converged for info in infos) and sim.t == pytest.approx(0.01)
    assert sim.q.shape == (0,) and sim.v.shape == (0,)
    assert sim.energy() == 0.0 and sim.contacts() == [] and sim.joint_wrenches() == {}
    sim.reset(t=1.0)
    assert sim.t == 1.0 and sim.steps == 0
    with pytest.raises(ValueError, match="unknown integrator 'rk4'"):
        Simulator(hector, integrator="rk4")
    with pytest.raises(ValueError, match="dt must be"):
        Simulator(hector, dt=0.0, integrator=integrator)


def test_inspect_shows_a_zero_dof_model(capsys):
    path = str(example_robot_urdf(HECTOR))
    assert cli(["inspect", "--urdf", path]) == 0
    assert "nv = 0" in capsys.readouterr().out
    assert cli(["inspect", "--urdf", path, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["nv"] == 0 and summary["joints"] == [] and summary["singular_joints"] == []


def test_a_scene_takes_a_zero_dof_model_as_a_static_object():
    scene = load_scene({"ground": {}, "models": [
        {"urdf": str(example_robot_urdf(HECTOR)), "name": "hector", "position": [1, 2, 0.5]},
        {"sphere": {"radius": 0.1}, "position": [0, 0, 1], "name": "ball"}]})
    assert scene.model.nv == 6 and scene.model.joint_names == ["ball/root_joint"]
    static = [k for k, link in enumerate(scene.shapes.link) if link == "base_link"]
    assert static and np.all(scene.shapes.body[static] == -1)  # fixed in the world
    np.testing.assert_allclose(scene.shapes.p[static[0]], [1, 2, 0.5])
    assert scene.models[0] == ("hector", 0, 0)
    sim = Simulator.from_scene(scene)
    assert sim.step().converged


# --- a singular joint-space inertia: loads, refused by the Simulator ---------------------------

MASSLESS_FINGERS = (
    '<robot name="r"><link name="base"/>'
    f'<link name="arm"><inertial><mass value="1"/><inertia '
    f'{inertia_attributes(0.1 * np.eye(3))}/></inertial></link><link name="f1"/><link name="f2"/>'
    + "".join(f'<joint name="{j}" type="revolute"><parent link="{p}"/><child link="{c}"/>'
              f'<origin xyz="0.1 0 0"/><axis xyz="0 0 1"/>'
              f'<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
              for j, p, c in (("j0", "base", "arm"), ("j1", "arm", "f1"), ("j2", "f1", "f2")))
    + "</robot>")


def test_a_singular_mass_matrix_loads_and_every_integrator_refuses_it_naming_the_joints():
    model = quiet_load(MASSLESS_FINGERS)
    assert singular_joints(model) == ["j1", "j2"]
    for integrator in sorted(INTEGRATORS):
        with pytest.raises(ModelError, match=r"joints j1, j2 move have no mass.*armature.*"
                                             r"set_armature.*config/scene key armature"):
            Simulator(model, integrator=integrator)
    with pytest.raises(ModelError, match="joints j1, j2 move"):
        ProcessModel(model)
    model.set_armature({"j1": 1e-4})
    assert singular_joints(model) == ["j2"]
    model.set_armature({"j2": 1e-4})
    assert singular_joints(model) == []
    for integrator in sorted(INTEGRATORS):
        Simulator(model, integrator=integrator)
    ProcessModel(model)


@pytest.mark.parametrize("integrator,options", [("euler", {}),
                                                 ("euler", {"velocity_terms": "explicit"}),
                                                 ("variational", {}), ("compliant", {})])
def test_the_mass_matrix_each_integrator_checks_is_the_crbas_on_a1(integrator, options):
    """The singular-inertia check takes M from a kernel the integrator compiles anyway
    (Integrator.mass_matrix: variational's momentum; the others the CRBA's own): the same
    matrix as the CRBA (itself pinocchio's to 1e-12, test_dynamics) at a configuration
    off the neutral one, armature included."""
    from mbsim_ros.dynamics.crba import crba
    model = quiet_load(example_robot_urdf(A1), floating_base=True)
    model.set_armature({name: 0.01 * (k + 1) for k, name in enumerate(model.joint_names[1:])})
    integrator_ = Simulator(model, integrator=integrator, **options).integrator
    q = random_configuration(model, np.random.default_rng(5))
    M = integrator_.mass_matrix(q)
    expected = crba(model, q)
    assert M.shape == (model.nv, model.nv) and np.abs(M - M.T).max() <= 1e-13 * np.abs(M).max()
    assert np.abs(M - expected).max() <= 1e-13 * np.abs(expected).max()


def test_romeo_loads_and_its_hands_need_armature():
    model = quiet_load(example_robot_urdf(ROMEO), floating_base=True)
    with pytest.raises(ModelError) as refused:
        Simulator(model)
    message = str(refused.value)
    assert "\n" not in message and all(f" {joint}," in message or f" {joint} " in message
                                       for joint in ROMEO_HANDS)
    assert singular_joints(model) == ROMEO_HANDS
    model.set_armature({joint: 1e-4 for joint in ROMEO_HANDS})
    assert Simulator(model).model is model  # construction only (stepping: the kernels' armature)


# --- armature as input ---------------------------------------------------------------------------

def test_config_armature_lands_in_the_model(tmp_path, capsys):
    model = load_urdf(shipped_urdf("arm7"))
    set_armature(model, {"joint2": 0.25, "joint5": 0.5})
    assert model.armature[model.idx_v[1]] == 0.25 and model.armature[model.idx_v[4]] == 0.5
    for values, words in (({"elbow": 1.0}, "armature: no joint named 'elbow'"),
                          ({"joint1": -1.0}, "armature.joint1: must be >= 0"),
                          ({"joint1": "heavy"}, "armature.joint1: expected a number"),
                          ([1.0], "expected a mapping")):
        with pytest.raises(ConfigError, match=words):
            set_armature(model, values)
    config = tmp_path / "arm.yaml"
    config.write_text(yaml.safe_dump({"urdf_path": "arm7", "armature": {"joint3": 0.125}}))
    assert cli(["inspect", "--config", str(config), "--json"]) == 0
    joints = json.loads(capsys.readouterr().out)["joints"]
    assert [j["armature"] for j in joints] == [0, 0, 0.125, 0, 0, 0, 0]
    config.write_text(yaml.safe_dump({"urdf_path": "arm7", "armature": {"elbow": 0.1}}))
    with pytest.raises(SystemExit) as refused:
        cli(["inspect", "--config", str(config)])
    assert refused.value.code == 2 and "armature: no joint named 'elbow'" in capsys.readouterr().err


def test_config_balance_inertia_reaches_the_loader(tmp_path, capsys):
    urdf = tmp_path / "bad.urdf"
    urdf.write_text(one_link(inertia_attributes(ROMEO_BODY)))
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"urdf_path": str(urdf)}))
    with pytest.raises(SystemExit) as refused:
        cli(["inspect", "--config", str(config)])
    assert refused.value.code == 2 and "balance_inertia=True" in capsys.readouterr().err
    config.write_text(yaml.safe_dump({"urdf_path": str(urdf), "balance_inertia": True}))
    with pytest.warns(UserWarning, match="balance_inertia"):
        assert cli(["inspect", "--config", str(config)]) == 0


def test_scene_armature_and_balance_inertia_per_model(tmp_path):
    bad = tmp_path / "bad.urdf"
    bad.write_text(one_link(inertia_attributes(ROMEO_BODY)))
    arm = {"urdf": "arm7", "name": "arm", "armature": {"joint2": 0.3}}
    with pytest.raises(SceneError, match=r"models\[1\]: .*link 'l1'.*balance_inertia"):
        load_scene({"models": [arm, {"urdf": str(bad), "name": "bad"}]})
    with pytest.warns(UserWarning, match="balance_inertia"):
        scene = load_scene({"models": [arm, {"urdf": str(bad), "name": "bad",
                                             "balance_inertia": True, "armature": {"j1": 0.7}}]})
    model = scene.model
    assert model.armature[model.idx_v[model.joint_index("arm/joint2")]] == 0.3
    assert model.armature[model.idx_v[model.joint_index("bad/j1")]] == 0.7
    assert model.armature.sum() == pytest.approx(1.0)
    with pytest.raises(SceneError, match=r"models\[0\].armature: no joint named 'elbow'"):
        load_scene({"models": [{"urdf": "arm7", "armature": {"elbow": 0.1}}]})
    with pytest.raises(SceneError, match=r"models\[0\].balance_inertia: expected true or false"):
        load_scene({"models": [{"urdf": "arm7", "balance_inertia": "yes"}]})


# --- starts clamped into the joint limits ------------------------------------------------------

@pytest.fixture(scope="module")
def a1():
    return load_urdf(example_robot_urdf(A1), floating_base=True)


CALVES = ["FL_calf_joint", "FR_calf_joint", "RL_calf_joint", "RR_calf_joint"]


def calf_q(model, q) -> np.ndarray:
    return np.array([q[model.idx_q[model.joint_index(name)]] for name in CALVES])


def test_a_neutral_start_outside_the_limits_is_clamped_with_one_warning(a1):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim = Simulator(a1, integrator="euler")
    limit_warnings = [w for w in caught if issubclass(w.category, LimitWarning)]
    assert len(limit_warnings) == 1
    assert all(name in str(limit_warnings[0].message) for name in CALVES)
    upper = a1.upper_position_limit[a1.idx_q[a1.joint_index("FR_calf_joint")]]
    np.testing.assert_array_equal(calf_q(a1, sim.q), upper)
    inside, outside = a1.clamped(sim.q)
    assert outside == [] and np.array_equal(inside, sim.q)
    q = sim.q.copy()
    q[a1.idx_q[a1.joint_index("FL_hip_joint")]] = 5.0
    with pytest.warns(LimitWarning, match=r"1 joint\(s\).*FL_hip_joint 5 -> 0.8"):
        sim.reset(q)
    assert sim.q[a1.idx_q[a1.joint_index("FL_hip_joint")]] == pytest.approx(0.802851455917)


def test_scene_and_config_starts_are_clamped(a1):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim = Simulator.from_scene({"ground": {}, "models": [
            {"urdf": str(example_robot_urdf(A1)), "floating_base": True, "meshes": False,
             "position": [0, 0, 1]}]})
    assert len([w for w in caught if issubclass(w.category, LimitWarning)]) == 1
    assert a1.clamped(sim.q)[1] == [] and sim.q[2] == 1.0
    with pytest.warns(LimitWarning, match="FR_calf_joint"):
        q = initial_configuration(a1, {"FL_calf_joint": -1.5})
    np.testing.assert_allclose(calf_q(a1, q), [-1.5, -0.9162978572970231, -0.9162978572970231,
                                               -0.9162978572970231])


def test_inspect_lists_the_joints_whose_zero_is_outside_their_range(capsys):
    path = str(example_robot_urdf(A1))
    assert cli(["inspect", "--urdf", path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["zero_outside_limits"] == CALVES
    assert cli(["inspect", "--urdf", path]) == 0
    assert "zero outside the limits" in capsys.readouterr().out
    assert cli(["inspect", "--json"]) == 0  # arm7: none
    assert json.loads(capsys.readouterr().out)["zero_outside_limits"] == []


# --- the node ------------------------------------------------------------------------------------

def test_the_node_takes_armature_and_balance_inertia_and_clamps_its_start(tmp_path):
    """In process: armature.<joint> lands in the model; balance_inertia reaches the loader; the
    start (a1's neutral calves, an initial position beyond a limit) is clamped, logged once."""
    pytest.importorskip("rclpy")
    import rclpy
    from rclpy.parameter import Parameter
    from ros_harness import ros_session

    from mbsim_ros.ros.node import SimulationNode, StartupError

    _, context = ros_session(__name__)

    def node(**parameters):
        overrides = [Parameter(k, value=v) for k, v in parameters.items()]
        return SimulationNode(context=context, parameter_overrides=overrides)

    try:
        arm = node(urdf_path="arm7", **{"armature.joint2": 0.25, "integrator": "euler"})
        assert arm.model.armature[1] == 0.25 and arm.model.armature.sum() == 0.25
        assert arm.describe_parameter("armature.joint2").read_only
        arm.destroy_node()
        bad = tmp_path / "bad.urdf"
        bad.write_text(one_link(inertia_attributes(ROMEO_BODY)))
        with pytest.raises(StartupError, match="balance_inertia"):
            node(urdf_path=str(bad))
        with pytest.warns(UserWarning, match="balance_inertia"):
            node(urdf_path=str(bad), balance_inertia=True).destroy_node()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            quadruped = node(urdf_path=str(example_robot_urdf(A1)), floating_base=True,
                             integrator="euler", **{"initial_positions.FL_calf_joint": -3.0})
        assert not [w for w in caught if issubclass(w.category, LimitWarning)]  # logged instead
        np.testing.assert_allclose(calf_q(quadruped.model, quadruped.q0),
                                   [-2.6965336943312392] + [-0.9162978572970231] * 3)
        assert quadruped.model.clamped(quadruped.sim.q)[1] == []
        quadruped.destroy_node()
    finally:
        rclpy.shutdown(context=context)
