"""The divergence guard (mbsim_ros/integrators/bounds.py): a step whose result leaves the
physical bounds is refused before it is written, the StepInfo names what left them, and the
State keeps the last sane step; legitimate motion (standing, falling, landing, fast spinning)
is not flagged.

The diverging case: Solo12 standing on its steel floor (config/scenes/solo12_standing.yaml,
compliant) under an explicit joint PD (kp 20 N m/rad, kd 0.5 N m s/rad) on the standing
posture, computed from the state one step old. On legs this light a delayed explicit PD is
unstable (physics, not a fault): the joint speeds grow by a factor per step. Without the guard
the run went on until the base was thousands of km away and the contact solver failed, naming
the solver; with it, the run stops at the first step whose result is outside the bounds."""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from mbsim_ros.codes import OUT_OF_BOUNDS, message
from mbsim_ros.integrators.bounds import (BASE_SPEED, SCENE_MARGIN, SPEED_FACTOR, SPEED_FLOOR,
                                          UNLIMITED_SPEED, PhysicalBounds)
from mbsim_ros.model import load_urdf
from mbsim_ros.contact.scene import load_scene
from mbsim_ros.scenarios import free_body_urdf, stand
from mbsim_ros.sim import Simulator

SCENE = Path(__file__).resolve().parents[1] / "config" / "scenes" / "solo12_standing.yaml"
KP, KD = 20.0, 0.5


def delayed_pd(sim: Simulator, steps: int) -> tuple[int, object, np.ndarray, np.ndarray]:
    """Steps under the joint PD on the previous step's state until a step fails or ``steps``:
    (steps done, the failing StepInfo or None, q and v before the failing step)."""
    q0, joints = sim.q.copy(), np.arange(6, sim.model.nv)
    previous = (sim.q.copy(), sim.v.copy())
    tau = np.zeros(sim.model.nv)
    for k in range(steps):
        q_old, v_old = previous
        tau[joints] = KP * (q0[joints + 1] - q_old[joints + 1]) - KD * v_old[joints]
        previous = (sim.q.copy(), sim.v.copy())
        info = sim.step(tau)
        if not info.converged:
            return k, info, *previous
    return steps, None, *previous


def unguarded(sim: Simulator) -> Simulator:
    """The simulation with its bounds off (numpy.inf), in place."""
    sim.bounds.speed[:] = np.inf
    sim.bounds.lower[:] = -np.inf
    sim.bounds.upper[:] = np.inf
    return sim


@pytest.fixture(scope="module")
def solo():
    return Simulator.from_scene(SCENE)


@pytest.fixture(scope="module")
def twin():
    """The same run with the guard off: where it leaves the bounds, and what came after."""
    sim = unguarded(Simulator.from_scene(SCENE))
    states = [(sim.q.copy(), sim.v.copy())]
    bounds = PhysicalBounds(sim.model, sim.scene)
    q0, joints = sim.q.copy(), np.arange(6, sim.model.nv)
    tau = np.zeros(sim.model.nv)
    for _ in range(120):
        q_old, v_old = states[-2] if len(states) > 1 else states[-1]
        tau[joints] = KP * (q0[joints + 1] - q_old[joints + 1]) - KD * v_old[joints]
        if not sim.step(tau).converged:
            break
        states.append((sim.q.copy(), sim.v.copy()))
    out = next(k for k, (q, v) in enumerate(states)
               if bounds.departure(q, v, k, k * sim.dt) is not None)
    return states, out, sim


@pytest.mark.parametrize("path", ["fused", "general"])
def test_the_delayed_pd_stops_at_the_step_that_leaves_the_bounds(solo, twin, path):
    solo.reset()
    if path == "general":  # the Python step around the integrator (servos, actuators take it)
        solo.data.fused = lambda state: None
    try:
        done, info, q_kept, v_kept = delayed_pd(solo, 200)
    finally:
        solo.data.__dict__.pop("fused", None)
    states, out, _ = twin
    assert info is not None and not info.converged, "the delayed PD diverges"
    assert done + 1 == out, "refused at the first step outside the bounds, not later"
    assert 20 < out < 80, out  # the 32-75 steps: physics, not a fault
    # the State is the last sane step, bit for bit the unguarded run's
    np.testing.assert_array_equal(solo.q, states[out - 1][0])
    np.testing.assert_array_equal(solo.v, states[out - 1][1])
    np.testing.assert_array_equal(solo.q, q_kept)
    assert np.all(np.isfinite(solo.q)) and np.all(np.isfinite(solo.v))
    assert np.all(np.abs(solo.v) <= solo.bounds.speed)
    assert solo.steps == out - 1 and solo.failed is not None
    # what left, its value, its bound, the step
    departure = info.departure
    bad_q, bad_v = states[out]
    # which speed leaves first is the diverging run's (a joint's, or the base flung at km/s
    # once the joints near their bound): the first entry of v outside its bound, named
    k = int(np.argmax(~(np.abs(bad_v) <= solo.bounds.speed)))
    joint = solo.model.joint_names[max(j for j, first in enumerate(solo.model.idx_v)
                                       if first <= k)]
    if k < 6:  # the free flyer: linear (m/s), angular (rad/s), in the base's axes
        assert departure.what.startswith("the ") and f"(joint '{joint}'" in departure.what
        assert departure.unit == ("m/s" if k < 3 else "rad/s")
        assert departure.bound == (BASE_SPEED if k < 3 else UNLIMITED_SPEED)
    else:
        assert departure.what == f"the speed of joint '{joint}'" and departure.unit == "rad/s"
        assert departure.bound == SPEED_FACTOR * 1000.0
    assert departure.value == bad_v[k]
    assert (departure.step, departure.t) == (out, pytest.approx(out * solo.dt))
    assert info.message.startswith(message(OUT_OF_BOUNDS))
    assert f"joint '{joint}'" in info.message and f"at step {out} " in info.message
    with pytest.raises(RuntimeError, match="left its physical bounds"):
        solo.step()


def test_without_the_guard_the_run_goes_far_past_the_departure(twin):
    """What the guard replaces: the unguarded run went on, far out of any sane state."""
    states, out, sim = twin
    assert len(states) > out + 5
    speeds = [np.abs(v).max() for _, v in states[out:]]
    assert max(speeds) > 1e5


def test_bounds_by_joint_kind():
    """Joints: SPEED_FACTOR x the URDF limit, at least SPEED_FLOOR; none: UNLIMITED_SPEED;
    a floating base: BASE_SPEED linear, UNLIMITED_SPEED angular, the scene's box."""
    sim = Simulator.from_scene(SCENE)
    bounds, model = sim.bounds, sim.model
    assert np.all(bounds.speed[:3] == BASE_SPEED) and np.all(bounds.speed[3:6] == UNLIMITED_SPEED)
    assert np.all(bounds.speed[6:] == 1e4)  # Solo12's URDF: 1000 rad/s, 10 x
    assert bounds.lower[2] == pytest.approx(-SCENE_MARGIN)
    assert bounds.upper[2] == pytest.approx(sim.q[2] + SCENE_MARGIN)
    assert np.all(np.isinf(bounds.lower[3:])) and np.all(np.isinf(bounds.upper[3:]))
    limits = model.velocity_limit.copy()
    limits[6:9] = (0.5, np.inf, 0.0)  # slow-rated, none, a zero placeholder
    model.velocity_limit = limits
    speed = PhysicalBounds(model).speed
    assert tuple(speed[6:9]) == (SPEED_FLOOR, UNLIMITED_SPEED, UNLIMITED_SPEED)
    assert np.all(np.isinf(PhysicalBounds(model).upper)), "no scene: no box"


def test_a_base_leaving_the_scene_box_is_named():
    """0.1 mm inside the box's x side at 1 m/s outwards: the first step leaves it."""
    sim = Simulator.from_scene(SCENE)
    q, v = sim.q.copy(), np.zeros(sim.model.nv)
    q[0], v[0] = sim.bounds.upper[0] - 1e-4, 1.0  # (the base's axes are the world's)
    sim.reset(q, v)
    info = sim.step()
    assert not info.converged and info.departure.what.startswith("the x position of the "
                                                                 "floating base 'base_link'")
    assert info.departure.bound == sim.bounds.upper[0] and info.departure.step == 1
    assert sim.bounds.upper[0] < info.departure.value < q[0] + 2.0 * sim.dt  # (at 1 m/s)
    np.testing.assert_array_equal(sim.q, q)


def test_a_start_outside_the_bounds_is_refused_and_changes_nothing():
    """reset and set_state refuse a state the first step would refuse, naming what is out
    (a start 1 cm outside the scene's box; a joint at twice its speed bound); the simulation
    goes on from where it was."""
    sim = Simulator.from_scene(SCENE)
    for _ in range(5):
        sim.step()
    before = sim.get_state()
    q = sim.q.copy()
    q[0] = sim.bounds.upper[0] + 0.01
    with pytest.raises(ValueError, match="reset: the x position of the floating base "
                                         "'base_link'.* is beyond its bound"):
        sim.reset(q)
    saved = sim.get_state()
    saved.v[8] = 2.0 * sim.bounds.speed[8]
    name = sim.model.joint_names[np.flatnonzero(sim.model.idx_v == 8)[0]]
    with pytest.raises(ValueError, match=re.escape(f"set_state: the speed of joint '{name}' "
                                                   f"{saved.v[8]:.4g} rad/s is beyond its")):
        sim.set_state(saved)
    after = sim.get_state()
    np.testing.assert_array_equal(after.q, before.q)
    np.testing.assert_array_equal(after.v, before.v)
    assert after.steps == before.steps == 5
    assert sim.step().converged


@pytest.mark.parametrize("integrator", ["euler", "variational", "compliant"])
def test_fast_legitimate_motion_is_not_flagged_and_a_bound_is_exact(integrator):
    """A free body in zero gravity (no scene) thrown at 0.9 x BASE_SPEED, and spinning about
    its major principal axis at 0.9 x UNLIMITED_SPEED (0.3 x for the variational step, whose
    root finder is not made for 3 rad a step): 300 steps pass, by rollout and by step, keeping
    their speeds; thrown at 1.01 x its bound (lowered in place) it is refused on the first
    step, naming the body and the axis (a start beyond BASE_SPEED itself is refused by reset:
    test_a_start_outside_the_bounds_is_refused_and_changes_nothing)."""
    model = load_urdf(free_body_urdf(0.0), floating_base=True)
    model.gravity = [0.0, 0.0, 0.0]
    sim = Simulator(model, 1e-3, integrator)
    spin = (0.3 if integrator == "variational" else 0.9) * UNLIMITED_SPEED
    for v0 in ([0.9 * BASE_SPEED, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, spin]):
        sim.reset(v=v0)
        Q, _ = sim.rollout(np.zeros((150, 6)))
        assert sim.failed is None and np.all(np.isfinite(Q))
        for _ in range(150):
            assert sim.step().converged
        np.testing.assert_allclose(sim.v, v0, rtol=1e-9, atol=1e-9 * np.max(v0))
    assert sim.q[0] == 0.0
    sim.reset(v=[0.9 * BASE_SPEED, 0, 0, 0, 0, 0])
    sim.bounds.speed[0] = 0.9 / 1.01 * BASE_SPEED  # (edited in place: 1.01 x the bound)
    Q, _ = sim.rollout(np.zeros((3, 6)))
    assert np.all(np.isnan(Q)) and sim.steps == 0
    assert sim.failed.message.startswith(f"{message(OUT_OF_BOUNDS)}: the linear x velocity of "
                                         "the floating base 'body'")
    assert math.isclose(sim.failed.departure.bound, 0.9 / 1.01 * BASE_SPEED)


def test_a_standing_run_is_not_flagged():
    """Solo12 held by the standing controller for 1 s: every step taken."""
    held = stand("solo12", "compliant", 1.0, scene=load_scene(SCENE))
    assert held["finished"], held["message"]


def test_a_falling_and_landing_robot_is_not_flagged():
    """Solo12 dropped from 1 m unpowered onto its steel floor: it falls, lands (the legs fold
    hard) and tumbles on without a refused step (with only its feet colliding the folded legs
    kick it up again, tenths of a metre: what the guard must not take for divergence)."""
    sim = Simulator.from_scene(SCENE)
    q = sim.q.copy()
    q[2] += 1.0
    sim.reset(q)
    fastest, lowest = 0.0, np.inf
    for _ in range(1200):
        info = sim.step()
        assert info.converged, info.message
        fastest = max(fastest, float(np.abs(sim.v).max()))
        lowest = min(lowest, sim.q[2])
    assert fastest > 4.0 and lowest < 0.3  # it fell 1 m (4.4 m/s) and landed


def test_a_campaign_run_that_diverges_fails_its_diverged_check(monkeypatch):
    """The delayed PD as a campaign run (a python controller, a command delay of one step):
    ``failed_check: diverged`` at the refused step, its value the speed that left the bound,
    the message naming the joint; the check is judged without being asked for."""
    from mbsim_ros.campaign.run import prepared, run

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent / "campaign_helpers"))
    spec = {"scene": str(SCENE), "integrator": "compliant", "dt": 0.001, "duration": 0.2,
            "controller": {"type": "python", "function": "campaign_controllers:joint_pd",
                           "factory": True, "options": {"kp": KP, "kd": KD}},
            "randomize": {"delay": {"dist": "choice", "values": [0.001]}}}
    row = run(prepared(spec), 0, 0)
    assert row["failed_check"] == "diverged" and not row["passed"], row
    assert abs(row["failed_value"]) > BASE_SPEED  # the smallest speed bound in the run
    step = round(row["failed_at"] / 0.001)
    assert 20 < step < 80 and row["steps"] == step - 1
    assert row["message"].startswith(message(OUT_OF_BOUNDS)) and "joint '" in row["message"]
    assert f"at step {step} " in row["message"]
