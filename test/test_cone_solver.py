"""Our compiled interior-point solver and the tree-sparse factorization of the compliant step,
checked against the references: clarabel on the same convex problems, numpy on the same linear
algebra, and whole Solo12 trajectories with either solver."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import random_configuration

from mbsim_ros import Simulator
from mbsim_ros.contact.scene import load_scene
from mbsim_ros.dynamics import crba
from mbsim_ros.solvers import cone_solver as cs
from mbsim_ros.integrators.base import StepInfo
from mbsim_ros.integrators.compliant import _RowBuffers
from mbsim_ros.integrators.compliant_kernels import dof_parents, free_velocity, ltl_factor
from mbsim_ros.integrators.row_solvers import RIGID_COMPLIANCE, ConeRows
from mbsim_ros.model import load_urdf

ROOT = Path(__file__).resolve().parents[1]
BILATERAL, UNILATERAL, NORMAL, TANGENT, FIXED = 0, 1, 2, 3, 4


def random_problem(rng, contacts: int, limits: int, bilateral: int):
    """An SPD H like W + E^-1 (condition ~1e6), c, per-row kinds, friction and weights."""
    kind = np.array([NORMAL, TANGENT, TANGENT] * contacts + [UNILATERAL] * limits
                    + [BILATERAL] * bilateral)
    m = kind.size
    A = rng.standard_normal((m, m))
    H = A @ A.T / m + np.diag(np.where(kind == TANGENT, 1e-7, 1e-3))
    c = rng.standard_normal(m)
    mu = np.where(kind == NORMAL, rng.choice([0.0, 0.3, 0.8], m), 0.0)
    weight = np.where((kind != TANGENT) & (rng.random(m) < 0.5), 1e3, 0.0)
    held = (kind == NORMAL) & (rng.random(m) < 0.2)
    for i in np.flatnonzero(held):
        kind[i:i + 3] = FIXED
        weight[i] = 0.0
    return H, c, weight, kind, mu


def objective(H, c, weight, g):
    r = H @ g + c
    return 0.5 * g @ H @ g + c @ g + 0.5 * np.sum(weight * r * r)


def violation(g, kind, mu, pyramid: bool) -> float:
    worst = 0.0
    for i, k in enumerate(kind):
        if k in (UNILATERAL, NORMAL):
            worst = max(worst, -g[i])
        if k == FIXED:
            worst = max(worst, abs(g[i]))
        if k == NORMAL:
            t = g[i + 1:i + 3]
            edge = np.abs(t).max() if pyramid else np.linalg.norm(t)
            worst = max(worst, edge - mu[i] * g[i])
    return worst


@pytest.fixture(scope="module")
def reference():
    """A compliant integrator whose clarabel path solves a given weighted problem."""
    scene = {"ground": {"friction": 0.5},
             "models": [{"sphere": {"radius": 0.05, "mass": 1.0}, "name": "s",
                         "position": [0.0, 0.0, 0.05]}]}
    return Simulator.from_scene(scene, dt=1e-3, solver="clarabel").integrator


@pytest.mark.parametrize("pyramid", [False, True])
def test_weighted_problems_solved_at_least_as_well_as_clarabel(reference, pyramid):
    """Ours is feasible to rounding and its objective is never above clarabel's (whose default
    tolerances leave ~1e-5 relative differences in the solution: it is the less exact one)."""
    rng = np.random.default_rng(7)
    mats, vecs, ints, _ = cs.solver_workspace(64)
    gamma = np.zeros(64)
    for _ in range(12):
        H, c, weight, kind, mu = random_problem(rng, int(rng.integers(1, 8)),
                                                int(rng.integers(0, 4)),
                                                int(rng.integers(0, 3)))
        m = kind.size
        status, steps = cs.weighted_solve(H, c, weight, kind, mu, m, pyramid, cs.solver_limits(),
                                          gamma, mats, vecs, ints)
        assert status == cs.OK and 0 < steps <= 30
        ours = gamma[:m].copy()
        reference._info.fallback = False
        theirs = reference.rows._solve_clarabel(H, c, weight, kind, mu, pyramid)
        scale = np.abs(theirs).max()
        assert violation(ours, kind, mu, pyramid) <= 1e-12 * scale
        f_ours, f_theirs = objective(H, c, weight, ours), objective(H, c, weight, theirs)
        assert f_ours <= f_theirs + 1e-10 * abs(f_theirs)
        assert np.abs(ours - theirs).max() <= 1e-3 * scale  # the same minimizer


def test_indefinite_problem_is_reported_not_solved():
    mats, vecs, ints, memory = cs.solver_workspace(8)
    gamma = np.zeros(8)
    W = -np.eye(3)
    kind = np.array([NORMAL, TANGENT, TANGENT])
    status, _ = cs.solve_rows(W, np.ones(3), np.zeros(3), kind, np.array([1e6, 0, 0]),
                              np.zeros(3), np.array([0.5, 0, 0]), 3, 1e-3, 1e-7, 1e-12, 1e3,
                              False, cs.solver_limits(), memory, gamma, mats, vecs, ints)
    assert status == cs.NOT_POSITIVE


def step_solve(W, u, phi, kind, k, mu, pushing=None) -> tuple[int, np.ndarray]:
    """solve_rows at h = 1 ms with the compliant step's defaults (no damping); pushing: the
    remembered set of the last step (its kinds as now), else none. (Newton steps, gamma)."""
    m = len(u)
    mats, vecs, ints, memory = cs.solver_workspace(m)
    if pushing is not None:
        memory[0, :m], memory[1, :m], memory[2, 0] = kind, pushing, m
    gamma = np.zeros(m)
    status, steps = cs.solve_rows(W.copy(), u, phi, kind, k, np.zeros(m), mu, m, 1e-3, 1e-7,
                                  1e-12, 1e3, False, cs.solver_limits(), memory, gamma, mats, vecs,
                                  ints)
    assert status == cs.OK
    return steps, gamma


def test_a_light_joints_limit_row_keeps_pushing():
    """A rigid limit row on a light joint (W_ii = 1e8) coupled to a heavier closing row: both
    push, gamma = W^-1 (-u), the limit's impulse 1e-8. The pushing test on the impulse (below
    1e-7 of the largest) dropped it, the held row then closed at 1 rad/s and joined again: the
    active set cycled and ended with the limit violated at that rate (a G1 finger). In the
    units of the joining test (its own row's velocity change) it stays: one round."""
    W, u = np.array([[1e8, 1.0], [1.0, 1.0]]), np.array([-2.0, -1.0])
    kind = np.array([UNILATERAL, UNILATERAL])
    steps, gamma = step_solve(W, u, np.zeros(2), kind, np.full(2, np.inf), np.zeros(2))
    np.testing.assert_allclose(gamma, np.linalg.solve(W, -u), rtol=1e-7)
    assert np.abs(u + W @ gamma).max() < 1e-9  # neither row closes
    assert steps < 2 * 40  # the convex form and one round (measured 27 Newton steps)


def test_a_separating_sliding_contact_adds_no_energy():
    """A G1 thumb at t = 1.255 s of its fall (the contact's rows taken alone): 4.2 mm from the
    floor, separating at 3.1 m/s and sliding at 12.7 m/s, its normal and tangent rows strongly
    coupled through the light finger. The convex form's solution dissipates; the weighted one
    with the normal row pushing holds that row's law (land on the floor in this step) by
    pulling with friction: it reversed the slide to -113 m/s and added 82 J (the G1 fall's
    1e4 rad/s fingers). From either start the solve returns impulses that add no kinetic
    energy, gamma.u + 1/2 gamma.W gamma <= 0 (no compressed spring to release: the gap is
    open), and the contact keeps separating."""
    W = np.array([[29.7617432, 42.60306512, 2.95701778],
                  [42.60306512, 126.88766905, 5.56263603],
                  [2.95701778, 5.56263603, 62.89487267]])
    u, phi = np.array([3.1124, 12.7415, -0.1330]), np.array([4.243e-3, 0.0, 0.0])
    kind, k, mu = np.array([NORMAL, TANGENT, TANGENT]), np.array([1.04e6, 0, 0]), \
        np.array([0.8, 0.0, 0.0])
    for pushing in (None, np.array([1, 0, 0])):
        _, gamma = step_solve(W, u, phi, kind, k, mu, pushing)
        assert gamma @ u + 0.5 * gamma @ W @ gamma <= 0.0
        assert (u + W @ gamma)[0] > 0.0


def rows_of(W, u, phi, kind, k, mu, pushing=None):
    """The compliant step's row buffers holding these rows (no damping)."""
    m = len(u)
    rows = _RowBuffers(m, 1)
    rows.W[:] = W
    rows.u[:], rows.phi[:], rows.kind[:], rows.k[:], rows.mu[:] = u, phi, kind, k, mu
    if pushing is not None:
        rows.memory[0, :m], rows.memory[1, :m], rows.memory[2, 0] = kind, pushing, m
    return rows


@pytest.mark.parametrize("pushing", [None, np.array([1, 0, 0])])
@pytest.mark.parametrize("solver", ["clarabel", "osqp"])
def test_python_driven_active_set_ends_where_the_compiled_one_does(solver, pushing):
    """clarabel and osqp drive the same compiled active set (begin_active_set /
    advance_active_set) as our solve: on the G1 thumb's rows (above) they end with the same
    pushing set in memory and the same impulses to their tolerance (1e-5 of the largest)."""
    W = np.array([[29.7617432, 42.60306512, 2.95701778],
                  [42.60306512, 126.88766905, 5.56263603],
                  [2.95701778, 5.56263603, 62.89487267]])
    u, phi = np.array([3.1124, -12.7415, -0.1330]), np.array([-1e-3, 0.0, 0.0])
    kind, k, mu = np.array([NORMAL, TANGENT, TANGENT]), np.array([1.04e6, 0, 0]), \
        np.array([0.8, 0.0, 0.0])
    ours = rows_of(W, u, phi, kind, k, mu, pushing)
    theirs = rows_of(W, u, phi, kind, k, mu, pushing)
    info_ours, info_theirs = StepInfo(), StepInfo()
    assert ConeRows(1e-3, "interior", "pyramid", 1e3, 1e-7).solve(ours, 3, info_ours)
    assert ConeRows(1e-3, solver, "pyramid", 1e3, 1e-7).solve(theirs, 3, info_theirs)
    assert info_theirs.iterations > 0 and not info_theirs.fallback
    np.testing.assert_array_equal(theirs.memory[:3], ours.memory[:3])  # (3: the impulses)
    assert ours.memory[1, 0] == 1  # the contact is violated and closing: it pushes
    scale = np.abs(ours.gamma).max()
    assert np.abs(theirs.gamma - ours.gamma).max() <= 1e-5 * scale


@pytest.mark.parametrize("robot", ["solo12", "talos", "panda"])
def test_tree_sparse_factorization_matches_dense_solve(robot):
    """M = L^T L with the tree's sparsity (RBDA Table 6.3) and v* = v + h M^-1 f, against
    numpy on the same CRBA matrix (floating bases included)."""
    from mbsim_ros.config import resolve_urdf

    model = load_urdf(resolve_urdf(robot), floating_base=robot != "panda")
    rng = np.random.default_rng(3)
    q = random_configuration(model, rng)
    M = crba(model, q)
    L = M.copy()
    assert ltl_factor(L, dof_parents(model.joint_int))
    lower = np.tril(L)
    assert np.abs(lower.T @ lower - M).max() <= 1e-12 * np.abs(M).max()
    force, v = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
    expected = v + 1e-3 * np.linalg.solve(M, force)
    out = np.zeros(model.nv)
    free_velocity(L, dof_parents(model.joint_int), v, force.copy(), 1e-3, out)
    assert np.abs(out - expected).max() <= 1e-10 * np.abs(expected).max()


def test_solo12_trajectory_same_with_either_solver():
    """0.5 s of Solo12 dropping onto its feet and standing under PD: the base with our solver
    (warm-started) and with clarabel ends within 0.1 mm (it travels 26 mm in x
    while settling; clarabel's ~1e-5 relative impulse error, integrated, leaves ~20 um), height
    within 10 um, attitude within 1e-4 (a tenth of the 1 mm a standing foot may slide,
    test_standing.py); with the interior-point method alone (``warm_start=False``)
    within 10 um.
    The warm start takes at most 3 Newton steps per step on average (1.96 measured, landing
    included; 8.3 without)."""
    scene = load_scene(ROOT / "config" / "scenes" / "solo12_standing.yaml")
    legs = np.array([0.0, 0.8, -1.6] * 4)
    finals, steps = [], []
    for options in ({}, {"solver": "clarabel"}, {"warm_start": False}):
        sim = Simulator.from_scene(scene, dt=1e-3, **options)
        q0 = scene.q0.copy()
        q0[7:] = legs
        sim.reset(q0)
        tau = np.zeros(sim.model.nv)
        count = 0
        for _ in range(500):
            tau[6:] = 30.0 * (legs - sim.q[7:]) - 0.3 * sim.v[6:]
            info = sim.step(tau)
            assert info.converged and not info.fallback
            count += info.iterations
        finals.append(sim.q.copy())
        steps.append(count / 500)
    assert np.abs(finals[0][:3] - finals[1][:3]).max() < 1e-4
    assert abs(finals[0][2] - finals[1][2]) < 1e-5
    assert np.abs(finals[0][3:7] - finals[1][3:7]).max() < 1e-4
    assert np.abs(finals[0][:3] - finals[2][:3]).max() < 1e-5
    assert finals[0][2] > 0.2  # standing
    assert steps[0] <= 3.0 < steps[2]


def test_a_warm_start_ends_on_the_exact_solution(reference):
    """From a start near the solution (the solution moved 1e-4 of itself, about what one step
    moves a robot's impulses), face_newton ends on the problem's exact solution in at most 3
    Newton steps (no line search: from 1 % away 3 of 60 such problems still need the
    interior-point method, 20 steps, in its place; face_newton's docstring): the natural
    residual at rounding, the objective not above the interior-point method's, the same
    solution as from the interior-point answer (to 1e-9 of its size: a sliding cone's last
    Newton step), and within clarabel's tolerance of clarabel's."""
    rng = np.random.default_rng(11)
    mats, vecs, ints, _ = cs.solver_workspace(64)
    gamma, cold, alone = np.zeros(64), np.zeros(64), np.zeros(64)
    for _ in range(12):
        H, c, weight, kind, mu = random_problem(rng, int(rng.integers(1, 8)),
                                                int(rng.integers(0, 4)),
                                                int(rng.integers(0, 3)))
        m = kind.size
        args = (H, c, weight, kind, mu, m, False)
        assert cs.weighted_solve(*args, cs.solver_limits(warm_start=False), alone, mats, vecs,
                                 ints)[0] == cs.OK
        assert cs.weighted_solve(*args, cs.solver_limits(), cold, mats, vecs, ints)[0] == cs.OK
        vecs[cs.V_START][:m] = cold[:m] * (1.0 + 1e-4 * rng.standard_normal(m))
        ints[cs.I_ACTIVE][cs.A_HAVE_START] = True
        limits = cs.solver_limits()
        status, steps = cs.weighted_solve(*args, limits, gamma, mats, vecs, ints)
        assert status == cs.OK and 0 < steps <= 3
        assert limits[cs.LIMIT_RESIDUAL] <= 1e-10  # (1e-16 without a sliding cone)
        g, scale = gamma[:m], np.abs(cold[:m]).max()
        assert np.abs(g - cold[:m]).max() <= 1e-9 * scale
        assert violation(g, kind, mu, False) <= 1e-12 * scale
        assert objective(H, c, weight, g) <= objective(H, c, weight, alone[:m]) \
            + 1e-14 * abs(objective(H, c, weight, alone[:m]))
        theirs = reference.rows._solve_clarabel(H, c, weight, kind, mu, False)
        assert np.abs(g - theirs).max() <= 1e-3 * scale


def test_starts_far_from_the_solution_converge_without_the_fallback():
    """From starts 10 % off the solution (a landing's first steps, a robot folding onto the
    floor), face_newton alone solves each of 20 random problems within its NEWTON_ITERATIONS
    (16; with 8, 13 of these 20 fell back to the interior-point method), on the exact
    solution from the interior-point answer to 1e-9 of its size (a sliding cone's last
    Newton step)."""
    rng = np.random.default_rng(3)
    mats, vecs, ints, _ = cs.solver_workspace(64)
    cold = np.zeros(64)
    index, vtype, coupled = ints[cs.I_INDEX], ints[cs.I_VTYPE], ints[cs.I_COUPLED]
    coef, scale, q, y, P = vecs[cs.V_COEF], vecs[cs.V_SCALE], vecs[cs.V_Q], vecs[cs.V_Y], \
        mats[cs.M_P]
    for _ in range(20):
        H, c, weight, kind, mu = random_problem(rng, int(rng.integers(1, 8)),
                                                int(rng.integers(0, 4)),
                                                int(rng.integers(0, 3)))
        m = kind.size
        ints[cs.I_ACTIVE][cs.A_HAVE_START] = False  # the interior-point method, then polish
        assert cs.weighted_solve(H, c, weight, kind, mu, m, False, cs.solver_limits(), cold,
                                 mats, vecs, ints)[0] == cs.OK
        n = cs.reduce_problem(H, c, weight, kind, mu, m, False, index, vtype, coef, scale, P, q,
                              coupled)
        start = cold[:m] * (1.0 + 0.1 * rng.standard_normal(m))
        y[:n] = start[index[:n]] / scale[:n]
        assert cs.face_newton(P, q, vtype, coef, n, y, cs.solver_limits(), mats, vecs,
                              ints)[0] == cs.OK
        g = np.zeros(m)
        g[index[:n]] = scale[:n] * y[:n]
        assert np.abs(g - cold[:m]).max() <= 1e-9 * np.abs(cold[:m]).max()


def test_unconverged_solve_falls_back_to_clarabel_and_says_so():
    """Two interior-point iterations cannot solve a contact step (without the warm start,
    which would solve every step after the first): the step falls back to clarabel, flags it,
    names the reason, and the ball still rests (its weight carried)."""
    scene = {"ground": {"friction": 0.5},
             "models": [{"sphere": {"radius": 0.05, "mass": 1.0}, "name": "ball",
                         "position": [0.0, 0.0, 0.05]}]}
    sim = Simulator.from_scene(scene, dt=1e-3, max_iterations=2, warm_start=False)
    for _ in range(50):
        info = sim.step()
        assert info.converged and info.fallback
        assert "interior-point solver: not converged" in info.message
    force = sim.contact_wrenches()["ball"]
    assert force[2] == pytest.approx(9.81, rel=1e-3)
    with pytest.raises(ValueError, match="max_iterations"):
        Simulator.from_scene(scene, dt=1e-3, max_iterations=0)


def cycling_rows() -> tuple:
    """The rows of talos_full standing (bench/standing.py, StandingController) at t = 2.276 s,
    saved from the compliant step: 16 foot contacts (88 rows with the joint limits) whose
    pushing set alternates between two sets from round to round."""
    data = np.load(ROOT / "test" / "data" / "talos_full_cycling_rows.npz")
    m = len(data["u"])
    rows = _RowBuffers(m, 1)
    rows.W[:] = data["W"]
    for name in ("u", "phi", "kind", "k", "b", "mu"):
        getattr(rows, name)[:] = data[name]
    rows.memory[:3] = data["memory"]  # (saved before the memory held the impulses)
    return rows, m


def drive(rows, m: int, notice_cycles: bool, warm_start: bool = False) -> int:
    """The compiled active set driven from Python, each weighted problem by our interior-point
    solve (cone_solver.weighted_solve); ``notice_cycles`` False hands advance_active_set a
    fresh history each round (it then never sees a set come back), as before the cycle test;
    ``warm_start``: each solve from the last one's answer, ending on the exact solution
    (interior_qp alone without). Returns the number of weighted solves."""
    mats, vecs, ints = rows.solver
    H, c, weight, trial_mu = mats[cs.M_H], vecs[cs.V_C], vecs[cs.V_WEIGHT], vecs[cs.V_TRIAL_MU]
    trial_kind, pushing, active = ints[cs.I_TRIAL_KIND], ints[cs.I_PUSHING], ints[cs.I_ACTIVE]
    limits = cs.solver_limits(100, cs.GAP_TOLERANCE, warm_start)
    cs.prepare_rows(rows.W, rows.u, rows.phi, rows.kind, rows.k, rows.b, m, 1e-3, 1e-7,
                    RIGID_COMPLIANCE, vecs[cs.V_EINV], c, H)
    phase = cs.begin_active_set(rows.kind, rows.mu, m, 1e3, rows.memory, True,
                                cs.ACTIVE_SET_ROUNDS, pushing, active, weight, trial_kind,
                                trial_mu)
    cs.load_start(rows.memory, m, active, vecs[cs.V_START])
    solves = 0
    while phase != cs.DONE:
        status, _ = cs.weighted_solve(H, c, weight, trial_kind, trial_mu, m, False, limits,
                                      rows.gamma, mats, vecs, ints)
        assert status == cs.OK
        solves += 1
        history = ints[cs.I_LAST:cs.I_EARLIER + 1] if notice_cycles \
            else np.full((2, m), -1, dtype=np.int64)
        phase = cs.advance_active_set(H, c, rows.W, rows.u, rows.kind, rows.mu, m, 1e3,
                                      rows.memory, rows.gamma, vecs[cs.V_CONVEX], pushing,
                                      active, history, weight, trial_kind, trial_mu)
    return solves


def test_a_cycling_pushing_set_ends_at_its_first_repeat_with_the_capped_answer():
    """A round's pushing set is a function of the last one, so a set that comes back two rounds
    later cycles to the cap: the active set stops there. On talos_full's cycling rows, solved
    by the interior-point method alone, the rounds from the remembered set and those after the
    convex form both cycle; stopping at the first repeat gives the impulses and the remembered
    set of running to ACTIVE_SET_ROUNDS, bit for bit, in 6 weighted solves instead of
    2 x 8 + 1 = 17; the compiled solve_rows (ConeRows) gives the same."""
    capped, m = cycling_rows()
    assert drive(capped, m, notice_cycles=False) == 2 * cs.ACTIVE_SET_ROUNDS + 1
    early, _ = cycling_rows()
    assert drive(early, m, notice_cycles=True) == 6
    np.testing.assert_array_equal(early.gamma[:m], capped.gamma[:m])
    np.testing.assert_array_equal(early.memory, capped.memory)
    info = compiled_equals(capped, m, warm_start=False)
    assert 0 < info.iterations < 120  # Newton steps: 95 here, 277 to the cap


def compiled_equals(driven, m: int, warm_start: bool) -> StepInfo:
    """The cycling rows solved by the compiled solve_rows (ConeRows): the same impulses and
    memory as ``driven``, bit for bit; its StepInfo."""
    compiled, _ = cycling_rows()
    info = StepInfo()
    assert ConeRows(1e-3, "interior", "true", 1e3, 1e-7, warm_start=warm_start).solve(
        compiled, m, info)
    np.testing.assert_array_equal(compiled.gamma[:m], driven.gamma[:m])
    np.testing.assert_array_equal(compiled.memory, driven.memory)
    return info


def test_exact_solutions_settle_the_cycling_set():
    """The same rows with the warm start (each weighted problem solved exactly, face_newton):
    the set settles in 3 weighted solves, fewer rows pushing than in the interior-point
    method's capped answer, the compiled solve the same bits in 7 Newton steps (95 without).
    The cycle came from the joining and leaving tests on inexact impulses."""
    warm, m = cycling_rows()
    assert drive(warm, m, notice_cycles=True, warm_start=True) == 3
    info = compiled_equals(warm, m, warm_start=True)
    assert 0 < info.iterations <= 12
    capped, _ = cycling_rows()
    drive(capped, m, notice_cycles=True)
    assert warm.memory[1, :m].sum() < capped.memory[1, :m].sum()
