"""Armature (rotor inertia on M's diagonal), implicit joint damping and the root finder that does
not give up: against pinocchio, closed forms, finite differences of the discrete action and the
failures the robot zoo showed (the aim: every real robot simulates)."""
import numpy as np
import pinocchio as pin
import pytest

from conftest import (independent_discrete_lagrangian, pinocchio_model, random_configuration,
                      relative_error, to_pinocchio_q)
from mbsim_ros import Simulator
from mbsim_ros.dynamics import (crba, del_jacobian, del_residual, difference, energy, integrate,
                                minv)
from mbsim_ros.model import example_robot_urdf, load_urdf, shipped_urdf
from mbsim_ros.model.model import JointSpec, Model, ModelError

DT = 1e-3


def arm_with_armature(floating: bool = False):
    model = load_urdf(str(shipped_urdf("arm7")), floating_base=floating)
    names = [n for n, kind in zip(model.joint_names, model.joint_kinds) if kind != "free_flyer"]
    armature = dict(zip(names, np.linspace(0.02, 0.08, len(names))))
    model.set_armature(armature)
    pm = pinocchio_model(str(shipped_urdf("arm7")), floating)
    pm.armature = model.armature.copy()
    return model, pm


@pytest.mark.parametrize("floating", [False, True])
def test_minv_energy_and_momentum_include_the_armature(floating):
    """M^-1 against pinocchio's computeMinverse with its armature; kinetic energy is
    1/2 v^T (M + A) v, and the variational integrator's momentum (M + A) v."""
    model, pm = arm_with_armature(floating)
    data = pm.createData()
    rng = np.random.default_rng(3)
    for _ in range(5):
        q, v = random_configuration(model, rng), rng.normal(size=model.nv)
        pq = to_pinocchio_q(model, q)
        Minv = pin.computeMinverse(pm, data, pq)
        Minv = np.triu(Minv) + np.triu(Minv, 1).T
        assert relative_error(minv(model, q, v), Minv @ v) < 1e-10
        M = crba(model, q)
        assert energy(model, q, v)[0] == pytest.approx(0.5 * v @ M @ v, rel=1e-12)
        sim = Simulator(model, DT, "variational")
        sim.reset(q, v)
        assert relative_error(sim.integrator.p, M @ v) < 1e-12


def test_armature_is_checked_and_named():
    model = load_urdf(str(shipped_urdf("arm7")), floating_base=True)
    with pytest.raises(ValueError, match="root_joint.*free flyer"):
        model.set_armature({"root_joint": 0.1})
    with pytest.raises(ValueError, match=f"{model.joint_names[1]}.*>= 0"):
        model.set_armature({model.joint_names[1]: -1.0})
    with pytest.raises(KeyError, match="no joint named 'nope'"):
        model.set_armature({"nope": 0.1})
    with pytest.raises(ValueError, match="nv = 13"):
        model.armature = np.zeros(7)


def test_del_residual_with_armature_is_the_gradient_of_the_discrete_action():
    model, pm = arm_with_armature()
    data = pm.createData()
    rng = np.random.default_rng(5)
    for _ in range(3):
        q = random_configuration(model, rng)
        q_prev = integrate(model, q, rng.normal(size=model.nv) * 2 * DT)
        q_next = integrate(model, q, rng.normal(size=model.nv) * 2 * DT)
        forcing = -0.5 * model.damping * (difference(model, q_prev, q)
                                          + difference(model, q, q_next))
        ours = del_residual(model, DT, q_prev, q, q_next) - forcing
        eps, gradient = 1e-6, np.empty(model.nv)
        for k in range(model.nv):
            e = np.zeros(model.nv)
            e[k] = eps
            plus, minus = integrate(model, q, e), integrate(model, q, -e)
            gradient[k] = sum(
                sign * (independent_discrete_lagrangian(pm, data, q_prev, qq, DT, model)
                        + independent_discrete_lagrangian(pm, data, qq, q_next, DT, model))
                for sign, qq in ((1, plus), (-1, minus))) / (2 * eps)
        assert np.abs(ours - gradient).max() < 1e-6 * np.abs(gradient).max()
        # and Newton's matrix is its derivative
        J = del_jacobian(model, DT, q, q_next)
        J_fd = np.empty_like(J)
        for k in range(model.nv):
            e = np.zeros(model.nv)
            e[k] = 1e-7
            J_fd[:, k] = (del_residual(model, DT, q_prev, q, integrate(model, q_next, e))
                          - del_residual(model, DT, q_prev, q, integrate(model, q_next, -e))) \
                / 2e-7
        assert np.abs(J - J_fd).max() < 1e-6 * np.abs(J_fd).max()


def spinner(damping: float, armature: float = 0.0, inertia: float = 1e-3) -> Model:
    """One hinge about z carrying a disc whose centre is on the axis: no gravity torque, the
    joint-space inertia is the constant inertia + armature."""
    return Model([JointSpec(name="hinge", kind="continuous", parent=-1, rotation=np.eye(3),
                            translation=np.zeros(3), axis=np.array([0.0, 0.0, 1.0]), mass=1.0,
                            com=np.zeros(3), inertia=np.diag([inertia, inertia, inertia]),
                            damping=damping, armature=armature)])


@pytest.mark.parametrize("h_b_over_i", [0.5, 3.0, 1000.0])
def test_euler_damping_is_implicit(h_b_over_i):
    """(I + a + h b) v' = (I + a) v exactly, at any h b / I (explicit damping diverges above 2:
    v' = (1 - h b / I) v)."""
    inertia, armature = 1e-3, 4e-3
    b = h_b_over_i * (inertia + armature) / DT
    sim = Simulator(spinner(b, armature, inertia), DT, "euler")
    sim.reset([0.0], [10.0])
    v = 10.0
    for _ in range(20):
        assert sim.step().converged
        v *= (inertia + armature) / (inertia + armature + DT * b)
        assert sim.v[0] == pytest.approx(v, rel=1e-12, abs=1e-300)
    assert sim.q[0] > 0.0


@pytest.mark.parametrize("h_b_over_i", [0.5, 3.0, 1000.0])
def test_variational_damping_is_preconditioned_away(h_b_over_i):
    """The DEL of the spinner is linear: p_k = ((I + a)/h + b/2) x, p_k+1 = ((I + a)/h - b/2) x.
    RIQN preconditioned with M + a + h b/2 solves it in one iteration at any damping (plain
    RIQN's map x <- x + h M^-1 r contracts only while h b / I < 4). (The trapezoidal damping
    impulses make p alternate in sign above h b / I = 2, decaying by (1 - hb/2I) / (1 + hb/2I)
    per step: stable at any damping, but lightly damped far above 2; docs/VARIATIONAL.md.)"""
    inertia, armature = 1e-3, 4e-3
    m_eff = inertia + armature
    b = h_b_over_i * m_eff / DT
    sim = Simulator(spinner(b, armature, inertia), DT, "variational")
    sim.reset([0.0], [10.0])
    p = m_eff * 10.0
    for _ in range(20):
        info = sim.step()
        assert info.converged and info.iterations <= 1 and not info.fallback
        x = p / (m_eff / DT + 0.5 * b)
        p = (m_eff / DT - 0.5 * b) * x
        # to the root finder's tolerance, relative to the momentum scale
        assert sim.integrator.p[0] == pytest.approx(p, rel=1e-9, abs=1e-9 * m_eff * 10.0)


def test_xarm7_steps_from_the_start_in_few_iterations():
    """The xArm7 (joint damping 10 N m s/rad on links of ~0.005 kg m^2: h b / I ~ 2-3) stopped
    the variational integrator at t = 0 (RIQN diverged, Newton started from the diverged
    iterate) and Euler at 14 ms. Now: 0.5 s, at most 8 iterations on average, no fallback."""
    model = load_urdf(example_robot_urdf("xarm_description/urdf/xarm7.urdf"))
    for integrator in ("variational", "euler"):
        sim = Simulator(model, DT, integrator)
        iterations, fallbacks = 0, 0
        for _ in range(500):
            info = sim.step()
            assert info.converged, info.message
            iterations += info.iterations
            fallbacks += info.fallback
        assert np.all(np.isfinite(sim.q)) and np.abs(sim.v).max() < 20.0
        if integrator == "variational":
            assert iterations / 500 <= 8 and fallbacks == 0


def spinning_arm(**options) -> Simulator:
    """arm7 at 150 rad/s on every joint, solved to 1e-10 (at 1e-9 RIQN just makes it in 50)."""
    model = load_urdf(str(shipped_urdf("arm7")))
    sim = Simulator(model, DT, "variational", **{"tolerance": 1e-10, **options})
    sim.reset(model.neutral(), np.full(model.nv, 150.0))
    return sim


def test_newton_fallback_starts_from_the_best_iterate():
    """At 150 rad/s on every joint RIQN does not converge in 50 iterations (its iterates wander,
    the last one far from the best); Newton from the best iterate finishes the step, which
    agrees with plain Newton's."""
    info = spinning_arm(split_levels=0).step()
    assert info.converged and info.fallback and info.substeps == 1
    riqn_then_newton = spinning_arm(split_levels=0)
    riqn_then_newton.step()
    newton = spinning_arm(solver="newton")
    newton.step()
    np.testing.assert_allclose(riqn_then_newton.q, newton.q, atol=1e-9)


def test_a_step_no_root_finder_solves_is_split_in_halves():
    """With the Newton fallback off and RIQN capped at 8 iterations, the 150 rad/s step fails
    whole; it is solved in 2^k pieces (StepInfo.substeps), the same DEL steps a Simulator at
    dt / 2^k takes, bit for bit; with split_levels=0 it fails and says so."""
    options = dict(max_iterations=8, newton_fallback_iterations=0, tolerance=1e-10)
    info = spinning_arm(split_levels=0, **options).step()
    assert not info.converged and "did not converge" in info.message
    split = spinning_arm(**options)
    info = split.step()
    pieces = info.substeps
    assert info.converged and pieces in (2, 4, 8)
    finer = Simulator(split.model, DT / pieces, "variational", split_levels=0, **options)
    finer.reset(split.model.neutral(), np.full(7, 150.0))
    for _ in range(pieces):
        assert finer.step().converged
    np.testing.assert_array_equal(split.q, finer.q)
    np.testing.assert_array_equal(split.integrator.p, finer.integrator.p)


def test_variational_energy_with_armature_stays_in_its_band():
    """A released 7-DOF arm with rotors (damping removed), flailing at up to ~60 rad/s: the
    discrete Lagrangian includes a x^2 / 2h, so the energy (with 1/2 a v^2) stays in the
    integrator's band (measured 4e-4 |E0| over 3 s; without armature 8e-4) and does not drift."""
    model, _ = arm_with_armature()
    undamped = Model([JointSpec(**{**s.__dict__, "damping": 0.0}) for s in model.joint_specs()])
    sim = Simulator(undamped, DT, "variational", tolerance=1e-12)
    sim.reset(np.full(7, 0.6))
    e0 = sim.energy()
    errors = []
    for _ in range(3000):
        assert sim.step().converged
        errors.append(sim.energy() - e0)
    errors = np.abs(errors)
    assert errors.max() < 1e-3 * abs(e0)
    assert errors[2000:].max() < 1.5 * errors[:1000].max()  # no drift


def test_free_flyer_specs_reject_armature():
    spec = JointSpec(name="base", kind="free_flyer", parent=-1, rotation=np.eye(3),
                     translation=np.zeros(3), axis=np.zeros(3), mass=1.0, com=np.zeros(3),
                     inertia=np.eye(3), armature=0.1)
    with pytest.raises(ModelError, match="base.*1-DOF"):
        Model([spec])
