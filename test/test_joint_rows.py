"""The compliant and rigid integrators' joint rows: Coulomb joint friction as a bounded implicit
row (against the analytic answers), a violated joint limit recovered at a bounded rate (a1's knee
starts outside its range), and the implicit joint servo (against its closed form)."""
import numpy as np
import pytest

from mbsim_ros.model import example_robot_urdf, load_urdf, shipped_urdf
from mbsim_ros.sim import Simulator

INTEGRATORS = [("compliant", {}), ("compliant", {"solver": "clarabel"}), ("rigid", {}),
               ("rigid", {"solver": "pivoting"})]
IDS = ["compliant", "compliant-clarabel", "rigid-pgs", "rigid-pivoting"]
I_PIVOT = 1.000001  # the shipped pendulum: 1 kg at 1 m, 1e-6 kg m^2 about its centre
G = 9.81


def pendulum(friction: float, gravity: bool = True):
    """The shipped pendulum with joint friction (N m) and its limits moved out of reach."""
    text = shipped_urdf("pendulum").read_text().replace(
        'friction="0"', f'friction="{friction!r}"').replace(
        'lower="-3.14159" upper="3.14159"', 'lower="-100" upper="100"')
    model = load_urdf(text)
    if not gravity:
        model.gravity = np.zeros(3)
    return model


@pytest.mark.parametrize("integrator, options", INTEGRATORS, ids=IDS)
def test_friction_holds_a_pendulum_below_its_breakaway_torque(integrator, options):
    """Gravity torque m g l sin(0.3) = 2.90 N m against friction 3 N m: held for 1 s. Our
    solver: the friction row's regularization lets it creep < 1e-9 rad; clarabel: its
    tolerance, < 1e-4 rad; the rigid integrator: its CFM makes the row a compliance, the
    joint creeps at CFM x torque (2.9e-5 rad/s), within 1 %. Friction 2 N m: the first step
    accelerates at (2.90 - 2) / I exactly (clarabel: within its tolerance, 1 %)."""
    theta = 0.3
    torque = G * np.sin(theta)
    sim = Simulator(pendulum(3.0), 1e-3, integrator, **options)
    sim.reset([theta])
    for _ in range(1000):
        assert sim.step().converged
    if integrator == "rigid":
        creep = -sim.integrator.cfm * torque  # rad/s
        assert sim.q[0] - theta == pytest.approx(creep * 1.0, rel=1e-2)
    else:
        assert abs(sim.q[0] - theta) < (1e-4 if options else 1e-9)
    sim = Simulator(pendulum(2.0), 1e-3, integrator, **options)
    sim.reset([theta])
    sim.step()
    # clarabel's default tolerances (1e-8 absolute gap) on an objective of ~1e-6
    tolerance = 1e-2 if options.get("solver") == "clarabel" else 1e-6
    assert sim.v[0] == pytest.approx(-1e-3 * (torque - 2.0) / I_PIVOT, rel=tolerance)


@pytest.mark.parametrize("integrator, options", INTEGRATORS, ids=IDS)
def test_friction_stops_a_spinning_joint_without_reversing(integrator, options):
    """No gravity, 2 rad/s, friction 0.5 N m: v falls by h f / I every step, exactly, to zero
    at t = v0 I / f = 4.0 s, and stays there (the rigid rows: within CFM f; clarabel: within
    its tolerances, 1e-3)."""
    h, f, v0 = 1e-3, 0.5, 2.0
    sim = Simulator(pendulum(f, gravity=False), h, integrator, **options)
    sim.reset([0.0], [v0])
    velocities = []
    for _ in range(4200):
        assert sim.step().converged
        velocities.append(sim.v[0])
    n = np.arange(1, 4201)
    expected = np.maximum(v0 - n * h * f / I_PIVOT, 0.0)
    # the rigid rows' CFM leaves at most CFM f of the stopping step's velocity
    tolerance = sim.integrator.cfm * f if integrator == "rigid" else \
        1e-3 if options else 1e-6  # clarabel: its default tolerances
    assert np.max(np.abs(np.array(velocities) - expected)) < tolerance
    assert min(velocities) >= -1e-9  # no reversal


def test_friction_row_solvers_agree():
    """Our interior-point solver and clarabel give the same trajectory with joint friction
    rows (a double pendulum with 0.5 N m on each joint, 0.5 s) while clarabel solves each step
    (where joint 2 sticks, step 453, clarabel stops at 200 iterations with AlmostSolved, flagged
    in StepInfo.fallback; ours holds the joint); the run differs from the one without
    friction."""
    text = shipped_urdf("double_pendulum").read_text()
    text = text.replace('friction="0"', 'friction="0.5"')
    model = load_urdf(text)
    assert np.all(model.friction == 0.5)
    ours, reference = (Simulator(model, 1e-3, "compliant", solver=solver)
                       for solver in ("interior", "clarabel"))
    compared = 0
    for sim in (ours, reference):
        sim.reset([1.0, -0.5])
    for _ in range(500):
        assert ours.step().converged
        info = reference.step()
        assert info.converged
        if info.fallback:
            break
        compared += 1
        # clarabel's tolerance, carried over the run
        assert np.max(np.abs(np.concatenate([ours.q - reference.q, ours.v - reference.v]))) < 1e-5
    assert compared >= 450
    for _ in range(500 - ours.steps):
        assert ours.step().converged
    sim = Simulator(model, 1e-3, "compliant", joint_friction=False)
    sim.reset([1.0, -0.5])
    for _ in range(500):
        sim.step()
    assert np.max(np.abs(np.concatenate([sim.q - ours.q, sim.v - ours.v]))) > 0.1  # friction


@pytest.fixture(scope="module")
def a1():
    return load_urdf(example_robot_urdf("a1_description/urdf/a1.urdf"), floating_base=True)


@pytest.mark.parametrize("integrator", ["compliant", "rigid"])
def test_a_violated_limit_comes_back_at_a_bounded_rate(a1, integrator):
    """a1 at its neutral configuration, in the air: each calf at 0 is 0.916 rad outside its
    range [-2.70, -0.916]. One step gives every joint at most the recovery cap (1 rad/s; the
    one-step correction gave 916 rad/s); the calves are back inside within violation / cap +
    15 time constants (the exponential tail from cap T = 0.02 rad down to the 1e-6 rad
    deadband: ln(2e4) = 9.9 T) and stop within 1 mrad of the limit (no launch across the
    range)."""
    T, cap = 0.02, 1.0
    sim = Simulator(a1, 1e-3, integrator, limit_recovery=(T, cap))
    q = a1.neutral()
    q[2] = 1.0
    calves = [a1.idx_q[a1.joint_index(f"{leg}_calf_joint")] for leg in ("FL", "FR", "RL", "RR")]
    upper = a1.upper_position_limit[calves]
    assert np.all(q[calves] > upper + 0.9)
    sim.reset(q)
    assert sim.step().converged
    assert np.max(np.abs(sim.v[6:])) <= cap * (1 + 1e-6)
    steps = int((0.916 / cap + 15 * T) / 1e-3)
    for _ in range(steps):
        assert sim.step().converged
        assert np.max(np.abs(sim.v[6:])) <= cap * (1 + 1e-6)
    assert np.all(sim.q[calves] <= upper)
    assert np.all(sim.q[calves] > upper - 1e-3)


@pytest.mark.parametrize("integrator", ["compliant", "rigid"])
def test_servo_is_implicit_euler_of_the_spring_damper(integrator):
    """No gravity, servo kp = 1e6, kd = 1e4 on the pendulum (I = 1): h kd / I = 10, where the
    same gains applied as tau from the step start diverge (the URDF's 50 N m effort limit
    lifted: test_servo.py tests the limits). Each step is the closed form
    (I + h kd + h^2 kp) v1 = I v0 + h kp (q* - q0); the joint settles on the target."""
    h, kp, kd, target = 1e-3, 1e6, 1e4, 0.2
    model = pendulum(0.0, gravity=False)
    sim = Simulator(model, h, integrator)
    sim.servos.set_gains(p={"joint1": kp}, d={"joint1": kd})
    sim.servos.set_effort_limits(lower={"joint1": -np.inf}, upper={"joint1": np.inf})
    sim.servos.command(position={"joint1": target})
    q, v = 0.0, 0.0
    for _ in range(200):
        assert sim.step().converged
        v = (I_PIVOT * v + h * kp * (target - q)) / (I_PIVOT + h * kd + h * h * kp)
        q += h * v
        assert sim.v[0] == pytest.approx(v, rel=1e-9, abs=1e-12)
    assert sim.q[0] == pytest.approx(target, abs=1e-4)
    explicit = Simulator(model, h, "compliant")
    for _ in range(3):
        info = explicit.step([kp * (target - explicit.q[0]) - kd * explicit.v[0]])
    # 200, -1800, then 18000 rad/s: refused by the divergence guard (beyond 2000 rad/s)
    assert not info.converged and abs(info.departure.value) > 1e4
    assert abs(explicit.v[0]) == pytest.approx(1800.0, rel=1e-3)
