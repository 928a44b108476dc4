"""The Euler integrator's two treatments of velocity terms (mbsim_ros/integrators/euler.py):
both against their step formulas, the implicit one against closed forms (a heavily damped
joint, a fast-spinning free body), Coulomb impulses, a robot the explicit one loses, bad options
and a singular step matrix."""
import numpy as np
import pytest

from mbsim_ros import Simulator
from mbsim_ros.dynamics import crba, rnea
from mbsim_ros.dynamics.energy import energy
from mbsim_ros.dynamics.rnea_derivative import rnea_derivatives
from mbsim_ros.dynamics.workspace import DYNAMICS, workspace
from mbsim_ros.integrators import make_integrator
from mbsim_ros.model import example_robot_urdf, load_urdf, shipped_urdf
from mbsim_ros.scenarios import one_joint_urdf

DT = 1e-3
MODES = ("explicit", "implicit")


def potential_scale(model, q) -> float:
    """|g| sum m_i |c_i - o|: body masses times their centres' distances from the root joint
    (the potential energy the robot can exchange, in J)."""
    energy(model, q, np.zeros(model.nv))  # leaves the world-frame inertias in the workspace
    _, op, oY = DYNAMICS.views(workspace(model), model.njoints, model.nv)[:3]
    mass = oY[:, 0]
    com = oY[:, 1:4] / np.where(mass > 0.0, mass, 1.0)[:, None]
    return float(np.linalg.norm(model.gravity) * np.sum(mass * np.linalg.norm(com - op[0], axis=1)))


def one_step(model, mode, q, v, tau):
    sim = Simulator(model, dt=DT, integrator="euler", velocity_terms=mode)
    sim.reset(q, v)
    info = sim.step(tau)
    assert info.converged, info.message
    return sim.q.copy(), sim.v.copy()


@pytest.mark.parametrize("mode", MODES)
def test_a_heavily_damped_joint_takes_the_exact_linear_step(mode):
    """One joint, D = 1e4 N m s (h D / I = 10, where explicit damping diverges): no Coriolis
    term, so both treatments solve (I + A + h D) (v' - v) = h (tau - D v - g(q)) exactly."""
    model = load_urdf(one_joint_urdf(damping=1e4))
    model.armature = [0.25]
    q, v, tau = np.array([0.4]), np.array([3.0]), np.array([7.0])
    inertia = crba(model, q)[0, 0]
    assert inertia == pytest.approx(1.25, rel=1e-12)
    gravity = rnea(model, q, np.zeros(1), np.zeros(1))[0]
    expected = v + DT * (tau - 1e4 * v - gravity) / (inertia + DT * 1e4)
    q_next, v_next = one_step(model, mode, q, v, tau)
    assert v_next[0] == pytest.approx(expected[0], rel=1e-14, abs=1e-14)
    assert q_next[0] == pytest.approx(q[0] + DT * v_next[0], rel=1e-15)


def test_explicit_mode_is_the_semi_implicit_formula_on_a_curled_arm():
    """explicit: (M + A + h D) (v' - v) = h (tau - D v - b(q, v)) with b at the old velocity,
    q' = q + h v' (arm7: damping 0.1 on every joint, armature added here)."""
    model = load_urdf(str(shipped_urdf("arm7")))
    model.armature = np.linspace(0.01, 0.07, 7)
    rng = np.random.default_rng(3)
    q, v, tau = rng.uniform(-1, 1, 7), rng.normal(0, 3, 7), rng.normal(0, 5, 7)
    K = crba(model, q) + DT * np.diag(model.damping)
    b = rnea(model, q, v, np.zeros(7))
    v_expected = v + np.linalg.solve(K, DT * (tau - model.damping * v - b))
    q_next, v_next = one_step(model, "explicit", q, v, tau)
    np.testing.assert_allclose(v_next, v_expected, rtol=0, atol=1e-13 * np.abs(v).max())
    np.testing.assert_allclose(q_next, q + DT * v_next, rtol=0, atol=1e-15)


def test_implicit_mode_adds_the_velocity_jacobian_of_the_bias():
    """implicit: (M + A + h D + h dB/dv) (v' - v) = h (tau - D v - b(q, v)), dB/dv from
    rnea_derivatives (checked against finite differences in test_estimation); it differs from
    the explicit step by far more than the tolerance at this speed."""
    model = load_urdf(str(shipped_urdf("arm7")))
    rng = np.random.default_rng(4)
    q, v, tau = rng.uniform(-1, 1, 7), rng.normal(0, 8, 7), rng.normal(0, 5, 7)
    dB = rnea_derivatives(model, q, v, np.zeros(7))[1]
    K = crba(model, q) + DT * np.diag(model.damping) + DT * dB
    b = rnea(model, q, v, np.zeros(7))
    v_expected = v + np.linalg.solve(K, DT * (tau - model.damping * v - b))
    _, v_next = one_step(model, "implicit", q, v, tau)
    _, v_explicit = one_step(model, "explicit", q, v, tau)
    scale = np.abs(v_next - v).max()
    np.testing.assert_allclose(v_next, v_expected, rtol=0, atol=1e-12 * scale)
    assert np.abs(v_explicit - v_next).max() > 1e-3 * scale


def test_a_fast_spinning_free_body_never_gains_energy_when_implicit():
    """A free box (principal moments 0.025, 0.05, 0.065) spinning at 40 rad/s about its
    major axis with a wobble, no gravity. The exact flow keeps the kinetic energy; backward
    Euler in velocity dissipates it (v'^T I (v' - v) = -h v' . (v' x* I v') = 0 gives
    |v'|_I <= |v|_I), and its linearisation here loses energy every step. The explicit
    gyroscopic term gains energy (observed +12 % in 2 s)."""
    model = load_urdf(str(shipped_urdf("box")), floating_base=True)
    model.gravity = [0.0, 0.0, 0.0]
    v0 = np.array([0.3, 0.0, 0.0, 1.0, 0.5, 40.0])
    energies = {}
    for mode in MODES:
        sim = Simulator(model, dt=DT, integrator="euler", velocity_terms=mode)
        sim.reset(model.neutral(), v0)
        e = [sim.energy()]
        for _ in range(2000):
            sim.step()
            e.append(sim.energy())
        energies[mode] = np.array(e)
    implicit, explicit = energies["implicit"], energies["explicit"]
    assert np.diff(implicit).max() <= 1e-12 * implicit[0]
    assert implicit[-1] > 0.99 * implicit[0]  # dissipation at first order only (observed 0.5 %)
    assert explicit.max() > 1.05 * explicit[0]


@pytest.mark.parametrize("mode", MODES)
def test_coulomb_impulse_stops_a_lone_joint_or_slips_by_its_bound(mode):
    """Friction f = 2 N m, gravity along the hinge (no torque): a slow joint stops (its
    stopping impulse d v is within h f); a fast one loses exactly h f / d, d = I + h D."""
    model = load_urdf(one_joint_urdf(damping=0.5, friction=2.0))
    model.gravity = [0.0, -9.81, 0.0]  # along the hinge: no torque
    d = 1.0 + DT * 0.5
    _, v_stopped = one_step(model, mode, np.array([0.1]), np.array([1e-3]), np.zeros(1))
    assert abs(v_stopped[0]) <= 1e-15  # rounding of d and its inverse
    _, v_slipping = one_step(model, mode, np.array([0.1]), np.array([2.0]), np.zeros(1))
    free = 2.0 - DT * 0.5 * 2.0 / d
    assert v_slipping[0] == pytest.approx(free - DT * 2.0 / d, rel=1e-14)


def test_implicit_mode_keeps_the_human_model_that_explicit_loses():
    """example-robot-data's human.urdf (36 DOF, free limbs through light distal links) from
    its neutral posture at rest: the explicit mode diverges at 0.33 s, the implicit one runs
    0.5 s with the energy never above its start by more than a first-order band,
    h |g| sum m_i |c_i| per second of simulated time (potential energy scale times h / 1 s;
    observed: no rise at all)."""
    path = example_robot_urdf("human_description/robots/human.urdf")
    if not path.is_file():
        pytest.skip("example-robot-data is not installed")
    model = load_urdf(str(path))
    q0 = np.clip(model.neutral(), model.lower_position_limit, model.upper_position_limit)
    sim = Simulator(model, dt=DT, integrator="euler", velocity_terms="implicit")
    sim.reset(q0)
    band = DT * potential_scale(model, q0) * 0.5
    e0, highest = sim.energy(), -np.inf
    for _ in range(500):
        assert sim.step().converged
        highest = max(highest, sim.energy())
    assert highest <= e0 + band
    explicit = Simulator(model, dt=DT, integrator="euler", velocity_terms="explicit")
    explicit.reset(q0)
    assert not all(explicit.step().converged for _ in range(500))


def test_unknown_velocity_terms_names_the_valid_ones():
    model = load_urdf(str(shipped_urdf("pendulum")))
    with pytest.raises(ValueError, match=r"velocity_terms: 'semi' is not one of explicit, "
                                         r"implicit"):
        make_integrator("euler", model, DT, velocity_terms="semi")


@pytest.mark.parametrize("mode, message", [("explicit", "singular joint-space inertia"),
                                           ("implicit", "singular step matrix")])
def test_a_singular_step_matrix_fails_the_step_with_a_message(mode, message):
    """Armature -I (past the setter's check) makes M + A exactly zero on one joint."""
    model = load_urdf(one_joint_urdf(damping=0.0))
    integrator = make_integrator("euler", model, DT, velocity_terms=mode)
    model._armature[:] = -crba(model, np.zeros(1))[0, 0]
    q_out, v_out = np.empty(1), np.empty(1)
    info = integrator.step(np.zeros(1), np.zeros(1), np.zeros(1), q_out, v_out)
    assert not info.converged and message in info.message
