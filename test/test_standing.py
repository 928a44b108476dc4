"""Every legged robot of example-robot-data stands on a steel floor in the compliant and the
rigid (PGS) integrator under scenarios.StandingController (docs/COMPLIANT.md#standing): neutral
posture clamped into the joint limits, the lowest collision point on the ground, the feet's
forces of least norm balancing gravity on the floating base (osqp) as a feed-forward, a joint
PD through the implicit servo with gains scaled to the inertia each joint carries. Here 1 s per
robot and integrator (CI time); ``python bench/standing.py`` runs 3 s (where a slow sag or a
creeping foot shows) and times the steps. Asserted, as what standing still means for a user
testing a controller from this posture: every step converges without falling back to clarabel, the
base stays within 5 % of its start height, no foot goes deeper than 1 mm into the floor or
lifts its lowest support point more than 1 mm off it, no support point slides 1 mm; the
feed-forward against pinocchio's RNEA and joint Jacobians. The earlier inertia-scaled PD, under
which the robots fall, is kept for G1 with hands' fall (the contact step's regression test)."""
import math

import numpy as np
import pinocchio as pin
import pytest
from conftest import pinocchio_model, to_pinocchio_q

from mbsim_ros import scenarios as standing
from mbsim_ros.contact.scene import load_scene
from mbsim_ros.contact.standing import lowest_point, standing_scene, support_points
from mbsim_ros.dynamics import rnea
from mbsim_ros.model import example_robot_urdf
from mbsim_ros.scenarios import brick_urdf
from mbsim_ros.sim import Simulator

SECONDS = 1.0
DRIFT, DEPTH, LIFT, SLIDE = 0.05, 1e-3, 1e-3, 1e-3  # standing still: 5 % of the height, 1 mm


@pytest.fixture(scope="module")
def scenes():
    cache = {}

    def get(label):
        if label not in cache:
            cache[label] = standing_scene(example_robot_urdf(standing.LEGGED[label]))
        return cache[label]
    return get


@pytest.mark.parametrize("integrator", list(standing.STANDING_INTEGRATORS))
@pytest.mark.parametrize("label", [label for label in standing.LEGGED
                                   if label not in standing.CANNOT_STAND])
def test_legged_robot_stands(scenes, label, integrator):
    result = standing.stand(label, integrator, SECONDS, scene=scenes(label))
    assert result["finished"], result["message"]
    assert result["fallbacks"] == 0
    assert result["drift"] < DRIFT
    assert result["feet"] > -DEPTH
    assert result["lift"] < LIFT
    assert result["slide"] < SLIDE


@pytest.mark.parametrize("label", ["solo12", "talos"])
def test_feed_forward_balances_gravity_by_pinocchio(scenes, label):
    """pinocchio's g(q0) = rnea(q0, 0, 0) and the support points' world Jacobians (joint
    Jacobians, LOCAL_WORLD_ALIGNED, moved to the points): the forces balance the base's rows and
    the feed-forward is g - J^T f on the joints."""
    scene = scenes(label)
    model = scene.model
    sim = Simulator.from_scene(scene, integrator="compliant")
    controller = standing.StandingController(sim, scene.q0)
    pm = pinocchio_model(example_robot_urdf(standing.LEGGED[label]), True)
    data = pm.createData()
    q = to_pinocchio_q(model, scene.q0)
    gravity = pin.rnea(pm, data, q, np.zeros(pm.nv), np.zeros(pm.nv))
    pin.computeJointJacobians(pm, data, q)
    J = np.zeros((3 * len(controller.bodies), pm.nv))
    for n, (body, point) in enumerate(zip(controller.bodies, controller.points)):
        joint = pm.getJointId(model.joint_names[body])
        Jj = pin.getJointJacobian(pm, data, joint, pin.LOCAL_WORLD_ALIGNED)
        J[3 * n:3 * n + 3] = Jj[:3] - pin.skew(point - data.oMi[joint].translation) @ Jj[3:]
    residual = gravity - J.T @ controller.forces.ravel()
    assert np.abs(residual[:6]).max() < 1e-6 * np.abs(gravity).max()
    np.testing.assert_allclose(controller.tau[6:], residual[6:], atol=1e-8 * np.abs(gravity).max())
    assert controller.forces.sum(axis=0)[2] == pytest.approx(
        sum(inertia.mass for inertia in pm.inertias) * 9.81, rel=1e-6)


def test_bolt_cannot_stand_still(scenes):
    """Bolt (point feet: each foot's support points span 5.6 mm along x) has its centre of
    mass 0.5 mm ahead of them in the start posture: no forces on the feet hold the base, and
    the controller says so (CANNOT_STAND names it; it balances only dynamically)."""
    scene = scenes("bolt")
    model = scene.model
    sim = Simulator.from_scene(scene, integrator="compliant")
    with pytest.raises(ValueError, match="no contact forces hold the base"):
        standing.StandingController(sim, scene.q0)
    _, points = support_points(scene, scene.q0)
    gravity = rnea(model, scene.q0, np.zeros(model.nv), np.zeros(model.nv))
    com_x = -gravity[4] / gravity[2]  # the base's moment about y over its weight
    assert np.ptp(points[:, 0]) < 6e-3
    assert com_x > points[:, 0].max() + 3e-4


def test_brick_rests_evenly_on_its_four_spheres(tmp_path):
    """Drumwright's brick (1 kg, four spherical feet, no joints) on a level floor: the support
    points are the spheres' lowest points, the least-norm forces m g / 4 each, straight up."""
    path = tmp_path / "brick.urdf"
    path.write_text(brick_urdf())
    scene = standing_scene(path)
    sim = Simulator.from_scene(scene, integrator="compliant")
    controller = standing.StandingController(sim, scene.q0)
    assert len(controller.points) == 4
    np.testing.assert_allclose(controller.points[:, 2], 0.0, atol=1e-12)
    np.testing.assert_allclose(controller.forces, [[0.0, 0.0, 9.81 / 4]] * 4, atol=1e-8)


def test_standing_scene_touches_the_ground_inside_the_limits(scenes):
    """go2: its neutral calves (0) lie outside their range; the scene clamps them to the
    nearest limit and puts its lowest collision point on z = 0."""
    scene = scenes("go2")
    model = scene.model
    assert np.any(model.neutral() != model.clamped(model.neutral())[0])
    one_dof = [model.idx_q[i] for i, kind in enumerate(model.joint_kinds) if kind != "free_flyer"]
    q = scene.q0[one_dof]
    assert np.all(q >= model.lower_position_limit[one_dof])
    assert np.all(q <= model.upper_position_limit[one_dof])
    assert lowest_point(scene, scene.q0) == pytest.approx(0.0, abs=1e-12)
    raised = standing_scene(example_robot_urdf(standing.LEGGED["go2"]), clearance=0.01)
    assert raised.q0[2] == pytest.approx(scene.q0[2] + 0.01, abs=1e-12)


def test_g1_with_hands_falls_and_comes_to_rest(scenes):
    """G1 with hands (49 DOF, 20 g finger links) falls over by 1.2 s under the inertia-scaled
    PD and
    lands on its fingers and arms; 2.2 s of it. The compliant step failed at 2.119 s before
    (docs/COMPLIANT.md, "Velocity terms and the G1 fall"): at 1.605 s the remembered active set
    cycled between two sets that each added energy through the penalty (2.4 kJ in one step, a
    finger at 1.1e4 rad/s), and contacts watched within margin + h |v| of every link grew to
    600 rows (0.5-1.5 s steps). Asserted: every step converges, the energy never rises above
    its start (measured: never), no joint reaches 1000 rad/s (measured 163), feet above
    -2 mm."""
    result = standing.stand("g1_hands", "compliant", 2.2, "pd", scene=scenes("g1_hands"))
    assert result["finished"], result["message"]
    assert result["gained"] <= 1e-9
    assert result["speed"] < 1000.0
    assert result["feet"] > -2e-3


# -- terrain (docs/COMPLIANT.md#terrain) --------------------------------------------------------

SLOPE, HOLD = 15.0, 1e-3   # degrees; the base's largest drift while held (m)


def held_run(scene, seconds: float, friction=None) -> tuple:
    """(the base's position after ``seconds``, its largest drift, the Simulator) under
    StandingController (planned with ``friction``, default the scene's), every step converged
    without a fallback."""
    sim = Simulator.from_scene(scene, dt=1e-3, integrator="compliant")
    controller = standing.StandingController(sim, scene.q0, friction=friction)
    drift = 0.0
    for _ in range(int(round(seconds / sim.dt))):
        info = controller.step()
        assert info.converged and not info.fallback, info.message
        drift = max(drift, float(np.linalg.norm(sim.q[:3] - scene.q0[:3])))
    return sim.q[:3].copy(), drift, sim


@pytest.fixture(scope="module")
def slope_hold():
    return {terrain: held_run(standing.slope_scene("solo12", SLOPE, 0.8, heightfield=terrain),
                              1.0)
            for terrain in (True, False)}


def test_solo12_holds_on_a_15_degree_heightfield_ramp_at_friction_0_8(slope_hold):
    """Friction 0.8 > tan 15 deg: the feet stick, the base moves less than 1 mm in 1 s."""
    _, drift, sim = slope_hold[True]
    assert drift < HOLD
    assert {c.other for c in sim.contacts()} == {"world"}


def test_heightfield_ramp_and_tilted_plane_agree(slope_hold):
    """The ramp's triangles and the plane of the same normal: the same hold to 1 um."""
    np.testing.assert_allclose(slope_hold[True][0], slope_hold[False][0], atol=1e-6)
    assert slope_hold[False][1] < HOLD


@pytest.mark.parametrize("terrain", [True, False], ids=["heightfield", "plane"])
def test_solo12_slides_down_a_15_degree_slope_at_friction_0_2(terrain):
    """Friction 0.2 < tan 15 deg = 0.268: no force in the cone holds the base (the controller
    plans with 0.8, believing it could); the robot slides down the slope as a block with
    Coulomb's a = g (sin - mu cos), 0.64 m/s^2: 0.5 a t^2 after 0.5 s, within 10 %."""
    theta, seconds = math.radians(SLOPE), 0.5
    scene = standing.slope_scene("solo12", SLOPE, 0.2, heightfield=terrain)
    end, _, _ = held_run(scene, seconds, friction=0.8)
    moved = end - scene.q0[:3]
    downhill = np.array([-math.cos(theta), 0.0, -math.sin(theta)])
    coulomb = 0.5 * 9.81 * (math.sin(theta) - 0.2 * math.cos(theta)) * seconds ** 2
    assert moved @ downhill == pytest.approx(coulomb, rel=0.1)


def test_solo12_stands_on_a_stairs_landing_of_static_boxes():
    """config/scenes/solo12_stairs.yaml: the feet rest on the landing's top (18 cm), the
    robot held there 1 s within 1 mm, every contact that carries load on the landing."""
    scene = load_scene("config/scenes/solo12_stairs.yaml")
    assert lowest_point(scene, scene.q0) == pytest.approx(0.0, abs=1e-6)
    _, drift, sim = held_run(scene, 1.0)
    assert drift < HOLD
    points = np.array([c.point for c in sim.contacts() if c.force @ c.normal > 0.0])
    assert len(points) and np.all(np.abs(points[:, 2] - 0.18) < 1e-3)
    assert np.all(np.abs(points[:, 0] - 1.45) < 0.35)


def test_slope_example_scene_is_the_slope_scenario():
    """config/scenes/solo12_slope.yaml: its ramp under the robot's feet as slope_scene's."""
    scene = load_scene("config/scenes/solo12_slope.yaml")
    assert lowest_point(scene, scene.q0) == pytest.approx(0.0, abs=1e-6)
    reference = standing.slope_scene("solo12", SLOPE, 0.8)
    np.testing.assert_allclose(scene.q0[:7], reference.q0[:7], atol=1e-6)
