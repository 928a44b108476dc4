"""Joint servos (integrators/servo.py) in all four integrators: a position step against the
closed form of the linearised joint (with each integrator's order of convergence), gains far
beyond the explicit stability limit, a velocity command held against gravity, interfaces mixed
per joint, effort limits after the law, the integral's anti-windup, and bad input."""
from pathlib import Path

import numpy as np
import pytest

from mbsim_ros.model import load_urdf, shipped_urdf
from mbsim_ros.sim import Simulator

I_PIVOT = 1.000001  # the shipped pendulum: 1 kg at 1 m, 1e-6 kg m^2 about its centre
EFFORT_LIMIT = 50.0  # its URDF effort limit (N m)
INTEGRATORS = [("euler", {}), ("euler", {"velocity_terms": "implicit"}), ("variational", {}),
               ("variational", {"order": 4}), ("compliant", {}), ("rigid", {})]
IDS = ["euler", "euler-implicit", "variational", "variational-o4", "compliant", "rigid"]
# error of the position step (max over 1 s) ~ C h^order: (order, C bound); measured C: Euler,
# compliant, rigid (implicit Euler) 0.51 / 0.46 at 1 / 10 ms; variational (midpoint spring,
# trapezoidal damper) 1.82 / 1.82; order 4 720 / 713
ORDER = {"euler": (1, 0.6), "euler-implicit": (1, 0.6), "variational": (2, 2.5),
         "variational-o4": (4, 1000.0), "compliant": (1, 0.6), "rigid": (1, 0.6)}


def pendulum(gravity: bool = True):
    """The shipped pendulum (joint1) with its limits moved out of reach."""
    model = load_urdf(shipped_urdf("pendulum").read_text().replace(
        'lower="-3.14159" upper="3.14159"', 'lower="-100" upper="100"'))
    if not gravity:
        model.gravity = np.zeros(3)
    return model


def step_response(t, target, omega, zeta):
    """The linear joint I q'' = kp (q* - q) - kd q' from rest at 0 (underdamped)."""
    wd = omega * np.sqrt(1.0 - zeta ** 2)
    return target * (1.0 - np.exp(-zeta * omega * t) * (
        np.cos(wd * t) + zeta / np.sqrt(1.0 - zeta ** 2) * np.sin(wd * t)))


def servoed(model, h, integrator, options, p, d, i=0.0, joint="joint1"):
    sim = Simulator(model, h, integrator, **options)
    sim.servos.set_gains(p={joint: p}, d={joint: d}, i={joint: i})
    return sim


@pytest.mark.parametrize("integrator, options", INTEGRATORS, ids=IDS)
def test_position_step_follows_the_closed_form_at_the_integrators_order(integrator, options):
    """No gravity, kp = 400, kd = 28 on I = 1 (omega 20 rad/s, zeta 0.7), a 0.1 rad step: the
    trajectory's largest error over 1 s is C h^order at h = 1 and 10 ms (bounds above the
    measured constants), and the joint ends on the target."""
    order, bound = ORDER[IDS[INTEGRATORS.index((integrator, options))]]
    kp, kd, target = 400.0, 28.0, 0.1
    omega, zeta = np.sqrt(kp / I_PIVOT), kd / (2.0 * np.sqrt(kp * I_PIVOT))
    errors = []
    for h in (1e-3, 1e-2):
        sim = servoed(pendulum(gravity=False), h, integrator, options, kp, kd)
        sim.servos.command(position={"joint1": target})
        error = 0.0
        for _ in range(round(1.0 / h)):
            assert sim.step().converged
            error = max(error, abs(sim.q[0] - step_response(sim.t, target, omega, zeta)))
        errors.append(error)
        assert error < bound * h ** order
        assert sim.q[0] == pytest.approx(target, abs=1e-6)
    assert errors[1] / errors[0] == pytest.approx(10.0 ** order, rel=0.3)


@pytest.mark.parametrize("integrator, options", INTEGRATORS, ids=IDS)
@pytest.mark.parametrize("h", [1e-3, 1e-2])
def test_gains_ten_times_the_explicit_limit_are_stable(integrator, options, h):
    """omega h = 20, ten times the explicit PD's limit (omega h < 2), zeta 0.7: the servo
    settles on the target within 300 steps (the explicit law, tau from the step start,
    diverges: the divergence guard stops it within 5 steps, last assert). The implicit Euler
    of the law (Euler, compliant, rigid) overshoots less than the closed form's 4.6 %; the
    variational integrator's midpoint spring and trapezoidal damper (Crank-Nicolson on this
    linear joint) ring instead, decaying by |R| = |1 + z/2| / |1 - z/2| = 0.87 per step
    (z = h omega (-zeta +- i sqrt(1 - zeta^2))), within 1.8 times the step."""
    omega, zeta, target = 20.0 / h, 0.7, 0.1
    kp, kd = I_PIVOT * omega ** 2, 2.0 * zeta * omega * I_PIVOT
    sim = servoed(pendulum(gravity=False), h, integrator, options, kp, kd)
    sim.servos.set_effort_limits(lower={"joint1": -np.inf}, upper={"joint1": np.inf})
    sim.servos.command(position={"joint1": target})
    peak = 0.0
    for _ in range(300):
        assert sim.step().converged
        peak = max(peak, sim.q[0])
    assert peak < target * (1.8 if integrator == "variational" else 1.05)
    assert sim.q[0] == pytest.approx(target, abs=1e-6)
    explicit = Simulator(pendulum(gravity=False), h, "euler")
    for _ in range(5):
        info = explicit.step([kp * (target - explicit.q[0]) - kd * explicit.v[0]])
        if not info.converged:
            break
    assert info.departure is not None and "joint 'joint1'" in info.departure.what


@pytest.mark.parametrize("integrator, options", INTEGRATORS, ids=IDS)
def test_velocity_command_holds_against_gravity(integrator, options):
    """The pendulum turning over at 2 rad/s under gravity (m g l = 9.81 N m, the torque it
    must fight changes sign twice a turn): velocity mode with d = 20 and i = 4000 (the
    integral of the velocity error is a stiff spring to the target's angle). Over the last
    turn the speed stays within 1.5 % of the target and its mean within 0.1 %."""
    h, target = 1e-3, 2.0
    turn = round(2.0 * np.pi / target / h)
    sim = servoed(pendulum(), h, integrator, options, 0.0, 20.0, i=4000.0)
    sim.servos.command(velocity={"joint1": target})
    for _ in range(2000):
        assert sim.step().converged
    speeds = np.empty(turn)
    for k in range(turn):
        assert sim.step().converged
        speeds[k] = sim.v[0]
    assert np.max(np.abs(speeds - target)) < 0.015 * target
    assert np.mean(speeds) == pytest.approx(target, rel=1e-3)


@pytest.mark.parametrize("integrator, options", INTEGRATORS[:3] + INTEGRATORS[4:],
                         ids=IDS[:3] + IDS[4:])
def test_interfaces_mix_per_joint(integrator, options):
    """The 7-DOF arm under gravity, three interfaces at once: joint1 (vertical axis) turns at
    0.5 rad/s in velocity mode, joints 2-6 hold positions (p, d and i: the integral removes
    the gravity sag), joint7 takes a plain effort of 0.01 N m. After 3 s: joint1's speed
    within 1e-3 rad/s of its target, joints 2-6 within 2e-3 rad of theirs (the turning base
    drags them), joint7's effort exactly the command (sim.effort) and its velocity the one
    that effort gives (positive, growing), the others' efforts within their URDF limits.
    (Not order 4: Yoshida's negative substep runs the dampers backwards, and joint7's
    inertia, 0.003 kg m^2, is below 1.7 h d / 2: docs/CONTROL.md.)"""
    model = load_urdf(shipped_urdf("arm7"))
    sim = Simulator(model, 1e-3, integrator, **options)
    held = [f"joint{k}" for k in range(2, 7)]
    sim.servos.set_gains(p={j: 3000.0 for j in held}, d={j: 100.0 for j in ["joint1"] + held},
                         i={j: 3000.0 for j in ["joint1"] + held})
    targets = dict(zip(held, [0.4, 0.2, -1.0, 0.3, 0.5]))
    sim.servos.command(position=targets, velocity={"joint1": 0.5})
    tau = np.zeros(7)
    tau[6] = 0.01
    for _ in range(3000):
        assert sim.step(tau).converged
    assert sim.v[0] == pytest.approx(0.5, abs=1e-3)
    for k, joint in enumerate(held, start=1):
        assert sim.q[k] == pytest.approx(targets[joint], abs=2e-3)
    assert sim.effort[6] == 0.01 and sim.v[6] > 0.0
    assert np.all(np.abs(sim.effort) <= model.effort_limit)


@pytest.mark.parametrize("integrator, options", INTEGRATORS, ids=IDS)
def test_effort_limit_applies_after_the_law(integrator, options):
    """A 1 rad step with kp = 1000: the law asks for 1000 N m, the URDF allows 50. While
    saturated the joint moves exactly as under a constant 50 N m effort (the same steps,
    bit for bit), and the reported effort is the bound; near the target the law takes over
    and settles."""
    model = pendulum(gravity=False)
    sim = servoed(model, 1e-3, integrator, options, 1000.0, 60.0)
    sim.servos.command(position={"joint1": 1.0})
    pushed = Simulator(model, 1e-3, integrator, **options)
    for _ in range(100):  # 0.1 s at 50 N m: 0.25 rad, the law still wants > 700 N m
        assert sim.step().converged and pushed.step([EFFORT_LIMIT]).converged
        assert sim.effort[0] == EFFORT_LIMIT
        assert sim.q[0] == pushed.q[0] and sim.v[0] == pushed.v[0]
    for _ in range(2900):
        assert sim.step().converged
        assert abs(sim.effort[0]) <= EFFORT_LIMIT
    assert sim.q[0] == pytest.approx(1.0, abs=1e-6)


def test_integral_is_clamped_and_stops_while_saturated():
    """Gravity on the pendulum held horizontal needs 9.81 N m: with p = 100 and i = 300 but
    i_clamp = 2 N m, the integral gives exactly 2 N m and the joint sags by s = (9.81 cos s
    - 2) / 100 (0.0778 rad); with i_clamp unbounded, the sag goes to zero (the closed loop's
    slowest poles -2.7 +- 3.6i 1/s: 5 s leave e^-13.5 of it)."""
    s = 0.0
    for _ in range(50):
        s = (9.81 * np.cos(s) - 2.0) / 100.0
    for clamp, sag in ((2.0, s), (np.inf, 0.0)):
        sim = Simulator(pendulum(), 1e-3, "euler")
        sim.servos.set_gains(p={"joint1": 100.0}, d={"joint1": 20.0}, i={"joint1": 300.0},
                             i_clamp={"joint1": clamp})
        sim.reset([np.pi / 2])
        sim.servos.command(position={"joint1": np.pi / 2})
        for _ in range(5000):
            assert sim.step().converged
        assert np.pi / 2 - sim.q[0] == pytest.approx(sag, abs=1e-6)


def test_bad_servo_input_is_refused_whole():
    """Each error names the joint and the reason; nothing changes (the joint stays in effort
    mode and the other joint named in the same call is not commanded)."""
    sim = Simulator(load_urdf(shipped_urdf("double_pendulum")), 1e-3, "euler")
    with pytest.raises(ValueError, match="joint 'joint1': a position target needs a position "
                                         r"gain \(gains.joint1.p > 0\)"):
        sim.servos.command(position={"joint1": 0.1})
    sim.servos.set_gains(p={"joint1": 10.0, "joint2": 10.0})
    with pytest.raises(ValueError, match="joint 'joint2': position target must be finite"):
        sim.servos.command(position={"joint1": 0.1, "joint2": np.nan})
    with pytest.raises(ValueError, match="unknown joint 'elbow'"):
        sim.servos.command(position={"elbow": 0.1})
    with pytest.raises(ValueError, match="joint 'joint2': a velocity target needs a damping"):
        sim.servos.command(velocity={"joint2": 1.0})
    with pytest.raises(ValueError, match="joint 'joint1': gain must be >= 0"):
        sim.servos.set_gains(d={"joint1": -1.0})
    assert not sim.servos.active
    sim.servos.command(position={"joint1": 0.1})
    with pytest.raises(ValueError, match="joint 'joint1': a position target needs"):
        sim.servos.set_gains(p={"joint1": 0.0})  # would leave joint1 without its gain
    assert sim.servos.gains[0, 0] == 10.0


@pytest.mark.parametrize("integrator, options", INTEGRATORS[:3] + INTEGRATORS[4:],
                         ids=IDS[:3] + IDS[4:])
def test_a_position_step_on_the_arm_is_the_linearised_joints_response(integrator, options):
    """The 7-DOF arm under gravity, every joint servoed at its start (joints 2-7 stiff, omega
    > 300 rad/s: locked for joint1), joint1 (vertical axis: no gravity torque) stepped by
    0.01 rad with p = 50 M11 and d = 2 zeta sqrt(p M11), zeta 0.5: the linearised joint is
    M11 q'' = p (q* - q) - d q' with M11 the locked arm's inertia about joint1's axis, whose
    closed form the run follows to 2 % of the step (the wrist's finite stiffness and the
    Coriolis terms of a 0.01 rad move)."""
    from mbsim_ros.config import initial_configuration
    from mbsim_ros.dynamics import crba

    model = load_urdf(shipped_urdf("arm7"))
    q0 = initial_configuration(model, {"joint2": 0.6, "joint4": -1.2, "joint6": 0.8})
    inertia = crba(model, q0)[0, 0]
    omega, zeta = np.sqrt(50.0), 0.5
    kp, kd = omega ** 2 * inertia, 2.0 * zeta * omega * inertia
    sim = Simulator(model, 1e-3, integrator, **options)
    sim.reset(q0)
    names = [f"joint{k}" for k in range(1, 8)]
    stiff = np.diag(crba(model, q0)) * 400.0 ** 2
    sim.servos.set_gains(p=dict(zip(names, [kp, *stiff[1:]])),
                         d=dict(zip(names, [kd, *(2.0 * 400.0 * np.diag(crba(model, q0))[1:])])))
    sim.servos.set_effort_limits(lower=dict.fromkeys(names, -np.inf),
                                 upper=dict.fromkeys(names, np.inf))
    target = q0.copy()
    target[0] += 0.01
    sim.servos.command(position=target)
    worst = 0.0
    for _ in range(2000):
        assert sim.step().converged
        expected = q0[0] + step_response(sim.t, 0.01, omega, zeta)
        worst = max(worst, abs(sim.q[0] - expected))
    assert worst < 0.02 * 0.01


def legs_reaching_beyond_their_effort(integrator: str, options: dict) -> Simulator:
    """Solo12 on its feet (config/scenes/solo12_standing.yaml), every leg joint servoed
    (p 60, d 1) towards a crouch far from its start with 1.5 N m of effort: most steps
    saturate one joint or more, and the feet stay on the floor."""
    from mbsim_ros.contact.scene import load_scene

    root = Path(__file__).resolve().parents[1]
    sim = Simulator.from_scene(load_scene(root / "config" / "scenes" / "solo12_standing.yaml"),
                               dt=1e-3, integrator=integrator, **options)
    legs = list(sim.model.joint_names[1:])
    sim.servos.set_gains(p={n: 60.0 for n in legs}, d={n: 1.0 for n in legs})
    sim.servos.set_effort_limits(lower={n: -1.5 for n in legs}, upper={n: 1.5 for n in legs})
    sim.servos.command(position={n: (0.3, 1.2, -2.0)[k % 3] for k, n in enumerate(legs)})
    return sim


@pytest.mark.parametrize("integrator, options", [
    ("compliant", {}), ("compliant", {"velocity_terms": "implicit"}),
    ("rigid", {"solver": "pgs"})], ids=["compliant", "compliant-implicit", "rigid"])
def test_a_saturating_servo_solves_again_without_a_second_whole_step(integrator, options):
    """With contacts, a step whose servos newly saturate is solved again from M~ before the
    servos' terms and the contacts already found (CompliantIntegrator.step): 300 steps of
    Solo12 straining against its effort limits end bit for bit where the same steps end when
    every solve again is a whole step (dynamics and detection again), and more than a hundred
    steps were solved again."""
    ours = legs_reaching_beyond_their_effort(integrator, options)
    whole = legs_reaching_beyond_their_effort(integrator, options)
    first_pass, whole_step = whole.integrator._solve, whole.integrator._step

    def as_whole_step(q, v, tau, q_out, v_out, again):
        if again:
            return whole_step(q, v, tau, q_out, v_out)
        return first_pass(q, v, tau, q_out, v_out, again=False)

    whole.integrator._solve = as_whole_step
    solve, again = ours.integrator._solve, []

    def counted(q, v, tau, q_out, v_out, again_):
        again.append(again_)
        return solve(q, v, tau, q_out, v_out, again=again_)

    ours.integrator._solve = lambda q, v, tau, q_out, v_out, again: counted(
        q, v, tau, q_out, v_out, again)
    for _ in range(300):
        assert ours.step().converged and whole.step().converged
        np.testing.assert_array_equal(ours.q, whole.q)
        np.testing.assert_array_equal(ours.v, whole.v)
    assert sum(again) > 100
