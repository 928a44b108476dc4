"""The compliant-contact integrator on Drumwright's own examples (Drumwright 2019), with
analytic answers: a pendulum held by a bilateral constraint, a pendulum hitting its
range-of-motion limit, a box sliding or sticking on a 30 degree incline, a stack of spheres."""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from conftest import assert_coulomb_slide

from mbsim_ros import Simulator, load_urdf
from mbsim_ros.contact.scene import SceneError, load_scene, quaternion_to_matrix
from mbsim_ros.model.constraints import PointConstraint
from mbsim_ros.model import shipped_urdf
from mbsim_ros.schema.base import load_yaml
from mbsim_ros.scenarios import DOWNHILL, NORMAL, THETA, G, brick_urdf, incline

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def brick_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("incline") / "brick.urdf"
    path.write_text(brick_urdf())
    return str(path)


@pytest.mark.parametrize("dt", [1e-2, 1e-3])
@pytest.mark.parametrize("friction", [0.0, 0.3, 0.5, 0.55, 0.6, 0.7])
def test_box_on_incline_slides_as_coulomb_says(brick_path, dt, friction):
    sim = incline(brick_path, friction, dt)
    start = sim.q[:3].copy()
    rubbing_steps = pushing_steps = 0
    for _ in range(int(round(1.0 / dt))):
        info = sim.step()
        assert info.converged, info.message
        total = sum((contact.force for contact in sim.contacts()), np.zeros(3))
        tangential = total - (total @ NORMAL) * NORMAL
        pushing_steps += total @ NORMAL > 0.5 * G * math.cos(THETA)  # the feet carry the box
        if friction == 0.0:
            assert np.linalg.norm(tangential) < 1e-9 * max(1.0, np.linalg.norm(total))
        elif np.linalg.norm(tangential) > 1e-9:  # friction opposes the slide
            assert tangential @ DOWNHILL < 0.0
            rubbing_steps += 1
    # the checks above ran on a box in contact: friction acted (holding or braking) throughout
    assert pushing_steps > 0.9 * int(round(1.0 / dt)), pushing_steps
    if friction > 0.0:
        assert rubbing_steps > 0.9 * int(round(1.0 / dt)), rubbing_steps
    assert_coulomb_slide(sim.q[:3] - start, friction)


def test_pyramid_cone_brackets_the_true_cone(brick_path):
    """The pyramid |t1|, |t2| <= mu n (t1 along the slip) allows sqrt(2) mu n on its corners:
    its slide is shorter, by under 10 % at friction 0.55 (measured 8.5 % at 1 ms)."""
    slides = {}
    for cone in ("true", "pyramid"):
        sim = incline(brick_path, 0.55, 1e-3, cone)
        start = sim.q[:3].copy()
        for _ in range(1000):
            sim.step()
        slides[cone] = (sim.q[:3] - start) @ DOWNHILL
    assert 0.9 * slides["true"] < slides["pyramid"] <= slides["true"] * 1.001


def test_bilateral_pendulum_deviation_is_second_order_and_energy_first():
    """A free body held at a point by a rigid bilateral constraint (Drumwright's pendulum): the
    velocity-level constraint lets the pivot drift by O(dt^2) (seed, Fig. 4); the first-order
    scheme loses energy linearly in dt."""
    scene = load_scene({"models": [{"sphere": {"radius": 0.05, "mass": 1.0},
                                    "position": [0.5, 0.0, 1.0], "name": "bob"}]})
    deviations, losses = [], []
    for dt in (2e-3, 1e-3):
        pivot = PointConstraint(0, [-0.5, 0.0, 0.0], [0.0, 0.0, 1.0])
        sim = Simulator(scene.model, dt, "compliant", constraints=[pivot])
        sim.reset(scene.q0)
        e0, worst = sim.energy(), 0.0
        for _ in range(int(round(1.0 / dt))):
            sim.step()
            held = sim.q[:3] + quaternion_to_matrix(sim.q[3:7]) @ pivot.local
            worst = max(worst, np.linalg.norm(held - pivot.target))
        deviations.append(worst)
        losses.append(abs(sim.energy() - e0) / e0)
    assert deviations[1] < 2e-5  # measured 9.8e-6 m at 1 ms
    assert 3.6 < deviations[0] / deviations[1] < 4.4, "second order"
    assert losses[1] < 2e-3
    assert 1.8 < losses[0] / losses[1] < 2.2, "first order"


def test_collapsing_sphere_pile_gains_no_energy():
    """An offset stack topples (an unstable equilibrium) into a pile of rolling, colliding
    spheres: at 10 ms the energy never rises above its start beyond the Hertz springs' settling
    (a body-frame explicit step would feed the spheres' spin into their speed)."""
    r = 0.05
    models = [{"sphere": {"radius": r, "mass": 1.0}, "name": f"s{k}",
               "position": [1e-4 * (-1) ** k, 0.0, r + k * (2 * r + 1e-3)]} for k in range(6)]
    sim = Simulator.from_scene({"ground": {"friction": 0.5}, "models": models}, dt=0.01)
    e0 = sim.energy()
    highest = e0
    for _ in range(150):
        assert sim.step().converged
        highest = max(highest, sim.energy())
    assert highest < e0 + 1e-3
    assert np.all(sim.q[2::7] > r - 1e-3), "no sphere sinks into the ground"


@pytest.fixture(scope="module")
def limited_pendulum():
    text = shipped_urdf("pendulum").read_text().replace('lower="-3.14159" upper="3.14159"',
                                                         'lower="-0.5" upper="0.5"')
    return load_urdf(text)


def swing(model, dt: float, qp_solver: str = "interior") -> tuple[float, float]:
    """(q after 1 s, lowest q) of the pendulum thrown at -4 rad/s into its -0.5 rad limit."""
    sim = Simulator(model, dt, "compliant", solver=qp_solver)
    sim.reset([0.0], [-4.0])
    lowest = 0.0
    for _ in range(int(round(1.0 / dt))):
        assert sim.step().converged
        lowest = min(lowest, sim.q[0])
    return sim.q[0], lowest


def test_range_of_motion_limit_is_stable_and_converges(limited_pendulum):
    reference, _ = swing(limited_pendulum, 1e-4)
    errors = []
    for dt in (1e-2, 1e-3):
        q, lowest = swing(limited_pendulum, dt)
        assert lowest > -0.5 - 1e-9, "the rigid limit holds at any step"
        errors.append(abs(q - reference))
    assert errors[1] < errors[0] / 5 and errors[1] < 2e-3


def test_our_solver_osqp_and_clarabel_agree_on_the_limit_qp(limited_pendulum):
    a = swing(limited_pendulum, 1e-3, "clarabel")
    b = swing(limited_pendulum, 1e-3, "osqp")
    ours = swing(limited_pendulum, 1e-3)
    assert a == pytest.approx(b, abs=1e-6)
    assert ours == pytest.approx(a, abs=1e-6)


def test_stack_of_ten_spheres_stands_at_10ms():
    """Steel spheres dropped 1 mm onto each other and the ground settle into a standing stack
    (aligned: a stack of spheres is an unstable equilibrium; an offset one topples, as it
    should, see docs/COMPLIANT.md for what the collapse does at 10 ms)."""
    r = 0.05
    models = [{"sphere": {"radius": r, "mass": 1.0}, "name": f"s{k}",
               "position": [0.0, 0.0, r + k * (2 * r + 1e-3)]} for k in range(10)]
    sim = Simulator.from_scene({"ground": {"friction": 0.5}, "models": models}, dt=0.01)
    e0 = sim.energy()
    energy = []
    for _ in range(500):
        assert sim.step().converged
        energy.append(sim.energy())
    depths = [c.depth for c in sim.contacts()]
    assert len(depths) == 10 and max(depths) < 1e-4
    assert max(energy) <= e0 + 1e-9, "no energy gain"
    tops = sim.q[7 * 9:7 * 9 + 3]
    assert abs(tops[2] - (r + 9 * 2 * r)) < 1e-3 and np.hypot(tops[0], tops[1]) < 1e-3


def test_resting_sphere_wrench_is_its_weight():
    sim = Simulator.from_scene({"ground": {"friction": 0.5}, "models": [
        {"sphere": {"radius": 0.05, "mass": 2.0}, "position": [0.3, 0.0, 0.05], "name": "ball"}]},
        dt=1e-3)
    for _ in range(200):
        sim.step()
    wrench = sim.contact_wrenches()["ball"]
    assert wrench[:3] == pytest.approx([0.0, 0.0, 2.0 * G], abs=1e-6)
    assert np.abs(wrench[3:]).max() < 1e-9, "force through the centre: no torque about it"


def test_body_wrench_in_the_links_axes_is_its_weight_rotated():
    """A 2 kg brick lying on its side (rolled 90 degrees about x, yawed 0.6 rad): in world axes
    its contact force is (0, 0, m g); in its own axes (what the node publishes with frame_id the
    link) R^T (0, 0, m g) = (0, m g, 0) whatever the yaw, and the torque about its centre 0."""
    quat = Rotation.from_euler("xz", [np.pi / 2, 0.6]).as_quat()  # roll, then yaw (x, y, z, w)
    sim = Simulator.from_scene({"ground": {"friction": 0.5}, "models": [
        {"box": {"size": [0.1, 0.2, 0.05], "mass": 2.0}, "position": [0.0, 0.0, 0.1],
         "orientation": quat.tolist(), "name": "brick"}]}, dt=1e-3)
    for _ in range(300):
        assert sim.step().converged
    body = sim.model.body_names.index("brick")
    world = sim.body_wrenches()[body].copy()
    local = sim.body_wrenches(axes="body")[body]
    # Tolerances: after 300 steps the brick has settled (it starts resting: its 0.2 m side
    # vertical, centre at 0.1 m) and its force is m g within 4e-11 N, its torque within 5e-13
    # N m, in either axes (measured); the bounds below are far above that and far below
    # m g = 19.6 N. R^T against the settled quaternion is one rotation of a ~20 N vector by
    # two roundings of R (the kernel's FK, the formula below): 1e-12 is ~300 ulps of 20 N.
    assert world[:3] == pytest.approx([0.0, 0.0, 2.0 * G], abs=1e-6)
    assert local[:3] == pytest.approx([0.0, 2.0 * G, 0.0], abs=1e-5)
    assert np.abs(local[3:]).max() < 1e-6 and np.abs(world[3:]).max() < 1e-6
    R = quaternion_to_matrix(sim.q[3:7])  # the brick's orientation now (it settled)
    np.testing.assert_allclose(local[:3], R.T @ world[:3], atol=1e-12)
    np.testing.assert_allclose(local[3:], R.T @ world[3:], atol=1e-12)
    with pytest.raises(ValueError, match="axes"):
        sim.body_wrenches(axes="link")


def test_wrenches_in_body_axes_rotate_by_each_links_world_rotation(robot):
    """The kernel behind body_wrenches(axes="body") on every robot of the dynamics list
    (Panda, UR5, Solo12, Talos, HyQ, PR2, ...): arbitrary world wrenches (forces and torques of
    order 1 on every body) come back as R_i^T f_i, R_i^T n_i with R_i pinocchio's oMi rotation
    at a random q, to 1e-13 (a few roundings of a 3x3 product)."""
    import pinocchio as pin
    from conftest import random_configuration, to_pinocchio_q

    from mbsim_ros.dynamics.kinematics import wrenches_in_body_axes
    from mbsim_ros.dynamics.workspace import new_workspace

    _, model, pm = robot
    rng = np.random.default_rng(11)
    q = random_configuration(model, rng)
    world = rng.normal(size=(model.njoints, 6))
    out = np.zeros_like(world)
    wrenches_in_body_axes(model.joint_int, model.joint_real, q, model.nv, new_workspace(model),
                          world, out)
    data = pm.createData()
    pin.forwardKinematics(pm, data, to_pinocchio_q(model, q))
    for i in range(model.njoints):
        R = data.oMi[i + 1].rotation  # pinocchio's joint 0 is the universe
        np.testing.assert_allclose(out[i, :3], R.T @ world[i, :3], rtol=0, atol=1e-13)
        np.testing.assert_allclose(out[i, 3:], R.T @ world[i, 3:], rtol=0, atol=1e-13)


def test_scenes_need_a_contact_integrator():
    with pytest.raises(ValueError, match="does not model contact"):
        Simulator.from_scene({"models": [{"sphere": {"radius": 0.1}}]}, integrator="variational")


@pytest.mark.parametrize("scene, words", [
    ({"ground": {"stiffness": -1.0}, "models": [{"sphere": {"radius": 0.1}}]},
     ["ground.stiffness", "positive"]),
    ({"ground": {"friction": -0.2}, "models": [{"sphere": {"radius": 0.1}}]},
     ["ground.friction", "non-negative"]),
    ({"models": [{"urdf": "arm7", "contact_spheres": [{"link": "hand", "radius": 0.01}]}]},
     ["contact_spheres[0].link", "hand"]),
    ({"models": [{"urdf": "no_such_robot"}]}, ["models[0].urdf", "no_such_robot"]),
    ({"models": [{"sphere": {"radius": 0.1}, "orientation": [0, 0, 0, 2]}]},
     ["models[0].orientation", "unit quaternion"]),
    ({"grund": {}, "models": []}, ["unknown key", "grund"]),
    ({"models": [{"box": {"size": [0.1, -0.2, 0.1]}}]}, ["models[0].box.size"]),
])
def test_bad_scene_input_names_the_item(scene, words):
    with pytest.raises(SceneError) as error:
        load_scene(scene)
    for word in words:
        assert word in str(error.value)


def test_solo12_stands_under_joint_pd_control():
    """The quadruped (example-robot-data Solo12, free-flyer, a contact sphere per foot, steel
    floor) under joint PD control at 1 ms: the base height settles and the feet do not slide
    (1 mm bar over 2 s here; bench/compliant.py runs 10 s)."""
    scene = load_scene("config/scenes/solo12_standing.yaml")
    legs = np.array([0.0, 0.8, -1.6] * 4)
    q0 = scene.q0.copy()
    q0[7:] = legs
    sim = Simulator.from_scene(scene, dt=1e-3)
    sim.reset(q0)
    tau = np.zeros(sim.model.nv)
    heights, feet = [], {}
    for k in range(2000):
        tau[6:] = 30.0 * (legs - sim.q[7:]) - 0.3 * sim.v[6:]
        assert sim.step(tau).converged
        heights.append(sim.q[2])
        if k in (199, 1999):
            feet[k] = {c.link: c.point.copy() for c in sim.contacts() if c.depth > 0}
    assert set(feet[199]) == set(feet[1999]) and len(feet[1999]) == 4, "four feet on the floor"
    slide = max(np.linalg.norm((feet[1999][link] - feet[199][link])[:2]) for link in feet[199])
    assert slide < 1e-3
    assert np.ptp(heights[1000:]) < 5e-4, "the base height has settled"


def test_contact_buffers_grow_instead_of_dropping_contacts():
    """A 12 x 12 foundation face (144 contact points) with room for 16 contacts: the buffers
    double until every element is a row, and the settled box (1 s) carries its weight on all
    of them, evenly."""
    scene = {"ground": {"friction": 0.0, "youngs_modulus": 1e7, "poisson_ratio": 0.3},
             "models": [{"box": {"size": [0.1, 0.1, 0.1], "mass": 1.0}, "name": "cube",
                         "position": [0.0, 0.0, 0.05],
                         "foundation": {"depth": 1.0, "elements": 12, "damping": 100.0}}]}
    sim = Simulator.from_scene(scene, dt=0.01, max_contacts=16)
    for _ in range(100):
        assert sim.step().converged
    forces = np.array([c.force[2] for c in sim.contacts()])
    assert forces.size == 144
    assert forces.sum() == pytest.approx(G, rel=1e-4)
    assert np.ptp(forces) < 1e-3 * forces.mean()


@pytest.mark.parametrize("restitution", [0.9, 0.5, 0.0])
@pytest.mark.parametrize("dt", [1e-3, 1e-4])
def test_dropped_ball_meets_hertz_and_its_restitution(dt, restitution):
    """The steel ball dropped 0.2 m (docs/COMPLIANT.md, "Impacts"): the simulator's step is its
    one-row model written out independently (scenarios.one_row "energy": peak depth and
    rebound equal to rounding); the peak is Hertz's 117.5 um within 1 % at 1 ms and 0.1 ms (the
    target: 10 %); the rebound is e^2 h0 within 2 % (the target: 5 %), and under 0.1 mm for a
    perfectly plastic floor (e = 0)."""
    from mbsim_ros import scenarios as impact

    ours = impact.drop(dt, restitution=restitution)
    model = impact.one_row(dt, "energy", restitution=restitution)
    assert ours["peak"] == pytest.approx(model["peak"], rel=1e-9)
    assert ours["rebound"] == pytest.approx(model["rebound"], rel=1e-9, abs=1e-12)
    assert impact.hertz_peak() == pytest.approx(117.5e-6, rel=1e-3)
    assert ours["peak"] == pytest.approx(impact.hertz_peak(), rel=0.01)
    if restitution:
        assert ours["rebound"] == pytest.approx(restitution ** 2 * impact.DROP, rel=0.02)
    else:
        assert ours["rebound"] < 1e-4


@pytest.mark.parametrize("dt", [1e-3, 1e-4])
def test_the_spring_laws_impact_is_what_the_one_row_model_says(dt):
    """impacts="spring" leaves a Hertz row in an impact on its spring law (the stiffness at
    the step-start depth): the simulator's drop is the one-row model's law "start" (peak and
    rebound equal to rounding), and the figures COMPLIANT.md compares with stand: 265 um deep
    and 3.4 mm of rebound at 1 ms, 76 um and 11.6 mm at 0.1 ms, against Hertz's 117.5 um."""
    from mbsim_ros import scenarios as impact

    ours, model = impact.drop(dt, impacts="spring"), impact.one_row(dt, "start")
    assert ours["peak"] == pytest.approx(model["peak"], rel=1e-9)
    assert ours["rebound"] == pytest.approx(model["rebound"], rel=1e-9)
    peak, rebound = (265.3e-6, 3.38e-3) if dt == 1e-3 else (76.1e-6, 11.60e-3)
    assert model["peak"] == pytest.approx(peak, rel=2e-3)
    assert model["rebound"] == pytest.approx(rebound, rel=2e-3)


def test_the_spring_law_takes_no_restitution():
    with pytest.raises(ValueError, match="impacts='spring' takes no restitution"):
        Simulator.from_scene({"ground": {"restitution": 0.5},
                              "models": [{"sphere": {"radius": 0.05}}]}, dt=1e-3,
                             impacts="spring")


def test_a_restitution_needs_the_hertz_law():
    with pytest.raises(SceneError, match="restitution applies to the Hertz law"):
        Simulator.from_scene({"ground": {"stiffness": 1e6, "restitution": 0.5},
                              "models": [{"sphere": {"radius": 0.05}}]}, dt=1e-3)


@pytest.mark.parametrize("restitution", [0.9, 0.5])
def test_bouncing_stack_and_pile_gain_no_energy_at_10ms(restitution):
    """Ten steel spheres dropped 1 cm onto each other at 10 ms, aligned (they settle into a
    stack) and offset (they topple into a colliding pile): with a restitution the impacts give
    energy back, never more than they took (the energy, without the springs', never above its
    start) and the stack still stands."""
    r = 0.05
    for offset in (0.0, 1e-4):
        models = [{"sphere": {"radius": r, "mass": 1.0}, "name": f"s{k}",
                   "position": [offset * (-1) ** k, 0.0, r + 1e-2 + k * (2 * r + 1e-2)]}
                  for k in range(10)]
        sim = Simulator.from_scene({"ground": {"friction": 0.5, "restitution": restitution},
                                    "models": models}, dt=0.01)
        e0 = sim.energy()
        highest = e0
        for _ in range(400):
            assert sim.step().converged
            highest = max(highest, sim.energy())
        assert highest <= e0 + 1e-9
        assert np.all(sim.q[2::7] > r - 1e-3), "no sphere sinks into the ground"
        if not offset:
            tops = sim.q[7 * 9:7 * 9 + 3]
            assert abs(tops[2] - (r + 9 * 2 * r)) < 1e-3 and np.hypot(*tops[:2]) < 1e-3


def dropped_solo12(restitution: float, height: float) -> dict:
    """The scene of config/scenes/solo12_standing.yaml, its floor of the given restitution,
    Solo12 raised by height (m)."""
    spec = load_yaml((ROOT / "config" / "scenes" / "solo12_standing.yaml").read_text())
    spec["ground"]["restitution"] = restitution
    spec["models"][0]["position"][2] += height
    return spec


@pytest.mark.parametrize("restitution", [0.0, 0.5, 0.9])
@pytest.mark.parametrize("dt", [1e-3, 1e-2])
def test_unpowered_solo12_dropped_on_its_feet_gains_no_energy(dt, restitution):
    """Solo12 dropped 2 cm onto its four feet, unpowered, at 1 ms and 10 ms: the four feet land
    together, four impacts coupled through the legs and the base; until its legs have folded
    (0.15 s), the energy never rises above its start and the feet never sink 1 mm."""
    sim = Simulator.from_scene(dropped_solo12(restitution, 0.02), dt=dt)
    e0 = sim.energy()
    highest, deepest, landed = e0, 0.0, False
    for _ in range(int(round(0.15 / dt))):
        assert sim.step().converged
        highest = max(highest, sim.energy())
        contacts = sim.contacts()
        deepest = max([deepest, *(c.depth for c in contacts)])
        landed = landed or any(c.force[2] > 0.0 for c in contacts)
    assert landed
    assert highest <= e0 + 1e-9
    assert deepest < 1e-3


@pytest.mark.parametrize("restitution", [0.0, 0.5])
def test_solo12_lands_as_its_restitution_says_and_stands(restitution):
    """Solo12 held in its standing posture by scenarios.StandingController, released 2 cm
    above it (0.63 m/s at touchdown), 1 ms (scenarios.land; bench/landing.py runs every legged
    robot): its feet's impacts are set on energy; on a plastic floor (e = 0) the base never
    rises above its touchdown height (measured 0.07 mm), at e = 0.5 it bounces (5.1 mm) but
    less than it fell; its feet never sink 1 mm; after 1 s it stands within 1 % of its
    standing height."""
    from mbsim_ros.scenarios import land

    out = land("solo12", restitution, 0.02)
    assert out["message"] == "" and out["steps"] > 0
    assert out["deepest"] < 1e-3
    if restitution:
        assert 1e-3 < out["rise"] < 0.02
    else:
        assert out["rise"] < 5e-4
    assert abs(out["end"]) < 0.01


def rebound_on(ground: float, ball: float | None = None, box: float | None = None) -> float:
    """The steel ball's rebound (m) after a 0.2 m drop at 1 ms onto the ground (restitution
    `ground`) or, when `box` is not None, onto a static box of that restitution (NaN: none of
    its own); the ball's own restitution `ball` (None: none)."""
    on_box = box is not None
    top = 0.05 + (0.1 if on_box else 0.0)
    ball_entry = {"sphere": {"radius": 0.05, "mass": 1.0}, "name": "ball",
                  "position": [0.0, 0.0, top + 0.2]}
    if ball is not None:
        ball_entry["restitution"] = ball
    spec = {"ground": {"friction": 0.5, "restitution": ground}, "models": [ball_entry]}
    if on_box:
        slab = {"size": [1.0, 1.0, 0.1], "position": [0.0, 0.0, 0.05]}
        spec["boxes"] = [slab if math.isnan(box) else dict(slab, restitution=box)]
    sim = Simulator.from_scene(spec, dt=1e-3)
    apex, touched = 0.0, False
    for _ in range(900):
        assert sim.step().converged
        height = sim.q[2] - top
        touched = touched or height < 0.0
        if touched and height > 0.0:
            apex = max(apex, height)
    return apex


def test_a_contact_takes_the_smaller_restitution_of_its_two_bodies():
    """Restitution per body: a model's or a static box's own, else the ground's; a contact
    takes the smaller of its two (the ball's rebound is e^2 h0 of that e)."""
    h0 = 0.2
    assert rebound_on(ground=0.9) == pytest.approx(0.81 * h0, rel=0.02)
    assert rebound_on(ground=0.0, ball=0.9) < 1e-4, "a plastic floor"
    assert rebound_on(ground=0.5, ball=0.9) == pytest.approx(0.25 * h0, rel=0.02)
    assert rebound_on(ground=0.9, ball=0.5) == pytest.approx(0.25 * h0, rel=0.02)
    assert rebound_on(ground=0.0, ball=0.9, box=0.9) == pytest.approx(0.81 * h0, rel=0.02)
    assert rebound_on(ground=0.5, ball=0.9, box=math.nan) == pytest.approx(0.25 * h0, rel=0.02)


@pytest.mark.parametrize("scene,words", [
    ({"ground": {"stiffness": 1e6}, "models": [{"sphere": {"radius": 0.05},
                                                 "restitution": 0.5}]},
     "models[0]: restitution applies to the Hertz law"),
    ({"ground": {"restitution": 1.5}, "models": [{"sphere": {"radius": 0.05}}]},
     "ground.restitution"),
    ({"models": [{"sphere": {"radius": 0.05}}],
      "boxes": [{"size": [1, 1, 1], "restitution": -0.1}]}, "boxes[0].restitution"),
])
def test_a_restitution_out_of_place_is_refused(scene, words):
    with pytest.raises(SceneError, match=re.escape(words)):
        Simulator.from_scene(scene, dt=1e-3)


def test_the_rigid_integrator_says_it_has_no_restitution():
    scene = {"ground": {"restitution": 0.8}, "models": [{"sphere": {"radius": 0.05}}]}
    with pytest.warns(UserWarning, match="rigid integrator does not model"):
        Simulator.from_scene(scene, dt=1e-3, integrator="rigid")
