"""The compliant step's velocity terms (mbsim_ros/integrators/compliant.py, ``velocity_terms``;
docs/COMPLIANT.md, "Velocity terms"): with no rows the implicit free velocity is Euler
implicit's step, a free-flyer's frame-rate term is linearised with the rest, a damped joint
takes the exact linear step, a fast-spinning free body never gains energy, and the option is
checked (bench/velocity_terms.py has the figures)."""
import numpy as np
import pytest

from mbsim_ros import Simulator
from mbsim_ros.scenarios import spin  # the free body of bench/velocity_terms.py
from mbsim_ros.dynamics import crba, rnea
from mbsim_ros.dynamics.kinematics import (inertia_times_motion, motion_cross_force,
                                           motion_cross_motion)
from mbsim_ros.dynamics.rnea_derivative import coriolis_map, rnea_derivatives
from mbsim_ros.integrators import make_integrator
from mbsim_ros.model import example_robot_urdf, load_urdf, shipped_urdf
from mbsim_ros.scenarios import one_joint_urdf

DT = 1e-3


def one_step(model, integrator, q, v, tau, **options):
    sim = Simulator(model, DT, integrator, **options)
    sim.reset(q, v)
    info = sim.step(tau)
    assert info.converged, info.message
    return sim.q.copy(), sim.v.copy()


def test_with_no_rows_the_free_velocity_is_euler_implicit():
    """arm7 (damping 0.1 on every joint) with armature, fast, away from its limits: no row, so
    the compliant step's v' is Euler implicit's, (M + A + h D + h dB/dv)(v' - v) = h (tau -
    D v - b): the same sums in another order, to rounding."""
    model = load_urdf(str(shipped_urdf("arm7")))
    model.armature = np.linspace(0.01, 0.07, 7)
    rng = np.random.default_rng(5)
    q, v, tau = rng.uniform(-1, 1, 7), rng.normal(0, 8, 7), rng.normal(0, 5, 7)
    q_euler, v_euler = one_step(model, "euler", q, v, tau, velocity_terms="implicit")
    q_ours, v_ours = one_step(model, "compliant", q, v, tau, joint_limits=False)
    scale = np.abs(v_euler - v).max()
    np.testing.assert_allclose(v_ours, v_euler, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(q_ours, q_euler, rtol=0, atol=1e-15)
    _, v_explicit = one_step(model, "compliant", q, v, tau, joint_limits=False,
                             velocity_terms="explicit")
    assert np.abs(v_explicit - v_ours).max() > 1e-3 * scale  # the terms matter at this speed


def skew(a):
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def test_a_free_flyer_takes_its_frame_rate_term_into_the_solve():
    """Solo12 in the air, tumbling: the explicit step adds h w x v_lin to the base's linear
    velocity (its velocity in the step-start axes); the implicit one solves
    (M + h dB/dv - h M dc/dv)(v* - v) = h (tau - b + M c), c = w x v_lin on the base's linear
    rows, dc/dv = [[w]x, -[v_lin]x]. v* from the step's outputs: the base's linear velocity
    comes out turned by exp(-h [w*])."""
    model = load_urdf(str(example_robot_urdf("solo_description/robots/solo12.urdf")),
                      floating_base=True)
    rng = np.random.default_rng(6)
    q = model.neutral()
    q[7:] = rng.uniform(-0.5, 0.5, 12)
    v, tau = rng.normal(0, 4, 18), rng.normal(0, 1, 18)
    tau[:6] = 0.0
    _, v_out = one_step(model, "compliant", q, v, tau, joint_limits=False)
    w_star = v_out[3:6]
    angle = DT * np.linalg.norm(w_star)
    axis = skew(w_star / np.linalg.norm(w_star))
    turn = np.eye(3) + np.sin(angle) * axis + (1 - np.cos(angle)) * axis @ axis  # exp(h [w*])
    v_star = np.concatenate([turn @ v_out[:3], v_out[3:]])
    M = crba(model, q)
    dB = rnea_derivatives(model, q, v, np.zeros(18))[1]
    c = np.zeros(18)
    c[:3] = np.cross(v[3:6], v[:3])
    dc = np.zeros((18, 18))
    dc[:3, :3], dc[:3, 3:6] = skew(v[3:6]), -skew(v[:3])
    K = M + DT * (dB - M @ dc)
    expected = v + DT * np.linalg.solve(K, tau - rnea(model, q, v, np.zeros(18)) + M @ c)
    np.testing.assert_allclose(v_star, expected, rtol=0, atol=1e-12 * np.abs(expected).max())


@pytest.mark.parametrize("mode", ["explicit", "implicit"])
def test_a_heavily_damped_joint_takes_the_exact_linear_step(mode):
    """One joint, D = 1e4 N m s (h D / I = 10): no Coriolis term, so both treatments solve
    (I + A + h D)(v' - v) = h (tau - D v - g(q)) exactly (the compliant step's limit rows are
    out of reach at 0.4 rad from +-10)."""
    model = load_urdf(one_joint_urdf(damping=1e4))
    model.armature = [0.25]
    q, v, tau = np.array([0.4]), np.array([3.0]), np.array([7.0])
    inertia = crba(model, q)[0, 0]
    gravity = rnea(model, q, np.zeros(1), np.zeros(1))[0]
    expected = v + DT * (tau - 1e4 * v - gravity) / (inertia + DT * 1e4)
    q_next, v_next = one_step(model, "compliant", q, v, tau, velocity_terms=mode)
    assert v_next[0] == pytest.approx(expected[0], rel=1e-14, abs=1e-14)
    assert q_next[0] == pytest.approx(q[0] + DT * v_next[0], rel=1e-15)


def test_a_spinning_free_body_never_gains_energy_when_implicit():
    """At h |w| = 0.4 the implicit step loses energy at every step (to rounding) and the
    explicit one diverges; at h |w| = 1.5, where the linearisation is far from the flow, the
    energy still never rises above its start (measured: by 2e-6 per step at most, then back).
    The closed form behind it (bench/velocity_terms.py, 1.): the linearised gyroscopic step is
    bounded to h |w| ~ 0.4 for any inertia."""
    implicit = spin(0.0, 400.0, "implicit", 500)  # E / E0, centre at the frame origin
    assert implicit.size == 501
    assert np.diff(implicit).max() <= 1e-12
    assert implicit[-1] > 0.99  # first-order dissipation (observed 0.1 %)
    explicit = spin(0.0, 400.0, "explicit", 500)
    assert not (explicit.size == 501 and np.all(np.isfinite(explicit)) and explicit.max() < 2.0)
    fast = spin(0.0, 1500.0, "implicit", 500)
    assert fast.size == 501 and fast.max() <= 1.0 + 1e-9


@pytest.mark.parametrize("integrator", ["compliant", "rigid"])
def test_unknown_velocity_terms_names_the_valid_ones(integrator):
    model = load_urdf(str(shipped_urdf("pendulum")))
    with pytest.raises(ValueError, match=r"velocity_terms: 'semi' is not one of explicit, "
                                         r"implicit"):
        make_integrator(integrator, model, DT, velocity_terms="semi")
    assert make_integrator(integrator, model, DT).velocity_terms == "implicit"


def test_the_coriolis_map_is_the_general_products():
    """coriolis_composites' per-body map B y = x x* (Y y) - Y (x x y), written out by blocks
    (coriolis_map), against the general products column by column at random inertias and
    twists: equal to rounding (1e-14 of the entries' scale), and symmetric bit for bit."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        Y, x = rng.normal(0.0, 1.0, 10), rng.normal(0.0, 2.0, 6)
        general, products = np.empty((6, 6)), np.empty((3, 6))
        for k in range(6):
            unit = np.zeros(6)
            unit[k] = 1.0
            inertia_times_motion(Y, unit, products[0])
            motion_cross_force(x, products[0], products[1])
            motion_cross_motion(x, unit, products[0])
            inertia_times_motion(Y, products[0], products[2])
            general[:, k] = products[1] - products[2]
        written = np.empty((6, 6))
        coriolis_map(Y, x, written)
        np.testing.assert_allclose(written, general, rtol=0,
                                   atol=1e-14 * np.abs(general).max())
        assert np.array_equal(written, written.T)
