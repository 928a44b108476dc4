"""The process model (mbsim_ros.estimation): step against Simulator.step bit for bit, the batch
against single steps, the exact Jacobians (variational and Euler) and the derivatives they are
built from against central finite differences, bad input, and the EKF example's error."""
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from mbsim_ros import Simulator
from mbsim_ros.dynamics import crba, del_residual, integrate, rnea
from mbsim_ros.dynamics.drnea_partials import mass_diagonal_partials, step_partials
from mbsim_ros.dynamics.rnea_derivative import rnea_derivatives
from mbsim_ros.estimation import ProcessModel, StepFailed
from mbsim_ros.model import example_robot_urdf, load_urdf, shipped_urdf

DT = 1e-3
MODELS = {"arm7": ("arm7", False), "box": ("box", True), "arm7_floating": ("arm7", True),
          "arm7_armature": ("arm7", True)}


def model_of(label):
    """The shipped model; "arm7_armature" is the floating arm with rotor inertia 0.01-0.05
    kg m^2 on its joints (comparable to its lightest links' own inertia); "tree" is Solo12."""
    if label == "tree":  # branches: four legs on a floating trunk
        return load_urdf(str(example_robot_urdf("solo12")), floating_base=True)
    name, floating = MODELS[label]
    model = load_urdf(str(shipped_urdf(name)), floating_base=floating)
    if label == "arm7_armature":
        model.set_armature({joint: a for joint, a in zip(model.joint_names[1:],
                                                          np.linspace(0.01, 0.05, 7))})
    return model


def moving_state(model, rng):
    """A random configuration (unit quaternions) and a brisk velocity."""
    q = integrate(model, model.neutral(), rng.uniform(-1.0, 1.0, model.nv))
    return q, rng.normal(0.0, 1.0, model.nv)


def relative(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


@pytest.mark.parametrize("integrator, options", [("variational", {}), ("euler", {}),
                                                  ("euler", {"velocity_terms": "implicit"})])
@pytest.mark.parametrize("label", ["arm7", "box", "arm7_floating"])
def test_step_is_simulator_step_bit_for_bit(label, integrator, options):
    model = model_of(label)
    rng = np.random.default_rng(1)
    q, v = moving_state(model, rng)
    sim = Simulator(model, dt=DT, integrator=integrator, **options)
    sim.reset(q, v)
    process = ProcessModel(model, dt=DT, integrator=integrator, **options)
    x = process.x_from(q, v)
    for _ in range(5):
        u = rng.normal(0.0, 5.0, model.nv)
        sim.step(u)
        x = process.step(x, u)
        second = sim.integrator.p if integrator == "variational" else sim.v
        assert np.array_equal(x[:model.nq], sim.q)
        assert np.array_equal(x[model.nq:], second)
        q_out, v_out = process.qv_from(x)
        assert np.array_equal(q_out, sim.q) and np.array_equal(v_out, sim.v)


def test_step_is_pure_and_from_simulator_uses_its_options():
    model = model_of("arm7")
    sim = Simulator(model, dt=DT, order=4)
    process = ProcessModel.from_simulator(sim)
    q, v = moving_state(model, np.random.default_rng(2))
    sim.reset(q, v)
    x = process.x_from(q, v)
    first = process.step(x, np.ones(model.nv))
    assert np.array_equal(process.step(x, np.ones(model.nv)), first)  # no hidden state
    sim.step(np.ones(model.nv))
    assert np.array_equal(first[:model.nq], sim.q)


@pytest.mark.parametrize("integrator", ["variational", "euler"])
@pytest.mark.parametrize("n", [3, 41])  # below and above the parallel threshold
def test_step_batch_equals_n_steps(integrator, n):
    model = model_of("arm7_floating")
    process = ProcessModel(model, dt=DT, integrator=integrator)
    rng = np.random.default_rng(3)
    X = np.array([process.x_from(*moving_state(model, rng)) for _ in range(n)])
    U = rng.normal(0.0, 5.0, (n, model.nv))
    expected = np.array([process.step(X[k], U[k]) for k in range(n)])
    assert np.array_equal(process.step_batch(X, U), expected)
    shared = np.array([process.step(X[k], U[0]) for k in range(n)])
    assert np.array_equal(process.step_batch(X, U[0]), shared)
    process.step_batch(X, U, out=X)  # in place
    assert np.array_equal(X, expected)


def test_step_batch_allocates_nothing_with_out():
    model = model_of("arm7")
    process = ProcessModel(model, dt=DT)
    rng = np.random.default_rng(4)
    X = np.array([process.x_from(*moving_state(model, rng)) for _ in range(2000)])
    U = rng.normal(0.0, 1.0, (2000, model.nv))
    out = np.empty_like(X)
    process.step_batch(X, U, out=out)  # first call: compiled code, codes buffer
    tracemalloc.start()
    for _ in range(3):
        process.step_batch(X, U, out=out)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 10_000, peak  # the result alone would be 2000 * 14 * 8 = 224 kB


@pytest.mark.parametrize("label", ["arm7", "box", "arm7_floating", "arm7_armature"])
def test_step_partials_match_finite_differences_of_the_del_residual(label):
    """R1 (with respect to q_k+1), P0 (q_k, read from the previous step) and R0 + P1 (the middle
    configuration) against central differences of the two-configuration DEL residual."""
    model = model_of(label)
    rng = np.random.default_rng(5)
    q, _ = moving_state(model, rng)
    q_prev = integrate(model, q, rng.normal(0.0, 2e-3, model.nv))
    q_next = integrate(model, q, rng.normal(0.0, 2e-3, model.nv))
    R0, R1, _, _ = step_partials(model, DT, q, q_next)
    _, _, P0_prev, P1_prev = step_partials(model, DT, q_prev, q)
    eps = 1e-6
    fd = {k: np.empty((model.nv, model.nv)) for k in ("prev", "mid", "next")}
    for k in range(model.nv):
        e = np.zeros(model.nv)
        e[k] = eps
        for key, at in (("prev", 0), ("mid", 1), ("next", 2)):
            plus, minus = [q_prev, q, q_next], [q_prev, q, q_next]
            plus[at], minus[at] = integrate(model, plus[at], e), integrate(model, minus[at], -e)
            fd[key][:, k] = (del_residual(model, DT, *plus) - del_residual(model, DT, *minus)) \
                / (2 * eps)
    assert relative(R1, fd["next"]) < 1e-6
    assert relative(P0_prev, fd["prev"]) < 1e-6
    assert relative(R0 + P1_prev, fd["mid"]) < 1e-6


@pytest.mark.parametrize("label, order", [("arm7", 2), ("box", 2), ("arm7_floating", 2),
                                          ("arm7", 4), ("arm7_armature", 2)])
def test_jacobians_match_central_finite_differences(label, order):
    model = model_of(label)
    rng = np.random.default_rng(6)
    q, v = moving_state(model, rng)
    process = ProcessModel(model, dt=DT, order=order)
    x, u = process.x_from(q, v), rng.normal(0.0, 5.0, model.nv)
    A, B = process.jacobians(x, u)
    # the reference solves the step to its rounding floor (Newton, tolerance 1e-14)
    reference = ProcessModel(model, dt=DT, order=order, solver="newton", tolerance=1e-14)
    A_fd, B_fd = reference.finite_difference_jacobians(x, u, eps=1e-4, eps_u=1e-2)
    assert A.shape == (2 * model.nv, 2 * model.nv) and B.shape == (2 * model.nv, model.nv)
    assert relative(A, A_fd) < 1e-6
    assert relative(B, B_fd) < 1e-6


def test_jacobians_with_friction_follow_the_branch_the_step_took():
    """Coulomb friction 3 N m on every joint of arm7, four joints starting at rest: in this state
    the first-half impulse is inside its bounds on joints 5-7 (the stick estimate, whose
    derivative needs dM_jj and dx*), joint 7 stays stuck (its momentum row is zero) and the
    others slip."""
    text = shipped_urdf("arm7").read_text().replace('friction="0"', 'friction="3.0"')
    model = load_urdf(text)
    rng = np.random.default_rng(8)
    q, v = moving_state(model, rng)
    v[[1, 3, 5, 6]] = 0.0
    process = ProcessModel(model, dt=DT)
    x, u = process.x_from(q, v), rng.normal(0.0, 0.5, model.nv)
    x_next = process.step(x, u)
    assert np.flatnonzero(x_next[model.nq:] == 0.0).tolist() == [6]
    A, B = process.jacobians(x, u)
    reference = ProcessModel(model, dt=DT, solver="newton", tolerance=1e-14)
    A_fd, B_fd = reference.finite_difference_jacobians(x, u, eps=1e-4, eps_u=1e-2)
    assert relative(A, A_fd) < 1e-6
    assert relative(B, B_fd) < 1e-6


def test_mass_diagonal_partials_match_finite_differences():
    model = model_of("arm7_floating")
    q, _ = moving_state(model, np.random.default_rng(9))
    diagonal, D = mass_diagonal_partials(model, q)
    assert np.allclose(diagonal, np.diag(crba(model, q)), rtol=1e-12, atol=1e-12)
    eps = 1e-6
    D_fd = np.empty_like(D)
    for b in range(model.nv):
        e = np.zeros(model.nv)
        e[b] = eps
        D_fd[:, b] = (np.diag(crba(model, integrate(model, q, e)))
                      - np.diag(crba(model, integrate(model, q, -e)))) / (2 * eps)
    assert relative(D, D_fd) < 1e-7


@pytest.mark.parametrize("label", ["arm7", "box", "arm7_floating", "tree"])
def test_rnea_derivatives_match_finite_differences(label):
    model = model_of(label)
    rng = np.random.default_rng(10)
    q, v = moving_state(model, rng)
    a = rng.normal(0.0, 1.0, model.nv)
    dtau_dq, dtau_dv = rnea_derivatives(model, q, v, a)
    eps = 1e-6
    fd_q, fd_v = np.empty_like(dtau_dq), np.empty_like(dtau_dv)
    for k in range(model.nv):
        e = np.zeros(model.nv)
        e[k] = eps
        fd_q[:, k] = (rnea(model, integrate(model, q, e), v, a)
                      - rnea(model, integrate(model, q, -e), v, a)) / (2 * eps)
        fd_v[:, k] = (rnea(model, q, v + e, a) - rnea(model, q, v - e, a)) / (2 * eps)
    assert relative(dtau_dq, fd_q) < 1e-7
    assert relative(dtau_dv, fd_v) < 1e-7


@pytest.mark.parametrize("velocity_terms", ["explicit", "implicit"])
@pytest.mark.parametrize("label", ["arm7", "box", "arm7_floating", "arm7_armature"])
def test_euler_jacobians_match_central_finite_differences(label, velocity_terms):
    model = model_of(label)
    rng = np.random.default_rng(11)
    process = ProcessModel(model, dt=DT, integrator="euler", velocity_terms=velocity_terms)
    q, v = moving_state(model, rng)
    x, u = process.x_from(q, 10.0 * v), rng.normal(0.0, 5.0, model.nv)  # Coriolis matters
    A, B = process.jacobians(x, u)
    # Richardson-extrapolated central differences (fourth order): the Euler step goes through
    # M^-1, whose rounding limits plain central differences to a few 1e-7 on arm7
    (A1, B1), (A2, B2) = (process.finite_difference_jacobians(x, u, eps=eps, eps_u=100 * eps)
                          for eps in (1e-4, 2e-4))
    assert relative(A, (4 * A1 - A2) / 3) < 1e-6
    assert relative(B, (4 * B1 - B2) / 3) < 1e-6
    # the two treatments' Jacobians differ far beyond that tolerance
    other = "explicit" if velocity_terms == "implicit" else "implicit"
    A_other, _ = ProcessModel(model, dt=DT, integrator="euler",
                              velocity_terms=other).jacobians(x, u)
    assert relative(A_other, A) > 1e-4


def test_bad_input_names_the_argument():
    model = model_of("box")
    process = ProcessModel(model, dt=DT)
    x = process.x_from(model.neutral(), np.zeros(6))
    X = np.tile(x, (4, 1))
    for call, name in ((lambda: process.step(x[:-1]), "x"),
                       (lambda: process.step(x, np.zeros(5)), "u"),
                       (lambda: process.step_batch(x), "X"),
                       (lambda: process.step_batch(X, np.zeros((3, 6))), "U"),
                       (lambda: process.step_batch(X, out=np.empty((4, 12))), "out"),
                       (lambda: process.x_from(model.neutral(), np.zeros(7)), "v"),
                       (lambda: process.jacobians(x, [np.nan] * 6), "u")):
        with pytest.raises(ValueError, match=rf"^{name}\b"):
            call()
    bad = x.copy()
    bad[9] = np.nan
    with pytest.raises(ValueError, match=r"^x contains NaN"):
        process.step(bad)
    with pytest.raises(ValueError, match=r"^u contains NaN"):
        process.step(x, [0, 0, np.inf, 0, 0, 0])
    X[2, 9] = np.nan
    with pytest.raises(ValueError, match=r"^X \(row 2\) contains NaN"):
        process.step_batch(X)
    X[2] = x
    with pytest.raises(ValueError, match=r"^U contains NaN"):
        process.step_batch(X, np.full((4, 6), np.nan))
    bad = x.copy()
    bad[3:7] = [0.0, 0.0, 0.0, 2.0]
    with pytest.raises(ValueError, match=r"^x: a free-flyer quaternion"):
        process.step(bad)
    with pytest.raises(ValueError, match="integrator"):
        ProcessModel(model, integrator="rk4")
    with pytest.raises(ValueError, match="solver"):
        ProcessModel(model, solver="secant")


@pytest.mark.parametrize("failure", ["raise", "nan"])
def test_a_failed_step_raises_or_leaves_nan(failure):
    """8 root-finder iterations converge from ordinary states (6 are needed at 1e-10) but not
    for particle 1 spinning every joint at 100 rad/s (16 needed; the step never split): only
    that particle fails; the others are the steps a healthy batch gives."""
    model = model_of("arm7")
    process = ProcessModel(model, dt=DT, failure=failure, max_iterations=8,
                           newton_fallback_iterations=0, split_levels=0, tolerance=1e-10)
    rng = np.random.default_rng(7)
    X = np.array([process.x_from(*moving_state(model, rng)) for _ in range(3)])
    X[1, model.nq:] = process.x_from(model.neutral(), np.full(model.nv, 100.0))[model.nq:]
    if failure == "raise":
        with pytest.raises(StepFailed, match="particles") as caught:
            process.step_batch(X)
        assert list(caught.value.particles) == [1]
    else:
        healthy = process.step_batch(X[[0, 2]])
        out = process.step_batch(X)
        assert np.isnan(out[1]).all()
        assert np.array_equal(out[[0, 2]], healthy)


def test_ekf_example_tracks_the_double_pendulum():
    """The filters of examples/estimation_filters.py on 400 steps (1 ms) with 0.02 rad
    measurement noise, RMS errors after 100 steps. EKF: position below 0.01 rad (half the
    measurement noise; observed 0.003) and velocity below 0.15 rad/s (observed 0.035). The
    particle filter (100 particles) is held to a looser 0.03 rad and 0.5 rad/s (observed 0.011
    and 0.07)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    try:
        import estimation_filters as example
    finally:
        sys.path.pop(0)
    run = example.track(steps=400, particles=100)
    error_q, error_v = example.rms_errors(run, "EKF", after=100)
    assert error_q < 0.01, error_q
    assert error_v < 0.15, error_v
    error_q, error_v = example.rms_errors(run, "particle filter", after=100)
    assert error_q < 0.03, error_q
    assert error_v < 0.5, error_v
