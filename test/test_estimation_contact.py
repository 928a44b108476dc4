"""The process model through contact (mbsim_ros.estimation with the compliant and rigid
integrators): step against Simulator.step bit for bit (the integrator's memory held as the
Simulator's), what holding no memory changes, purity, the batch against single steps."""
import pstats

import numpy as np
import pytest

from mbsim_ros import Simulator
from mbsim_ros.estimation import ProcessModel
from mbsim_ros.scenarios import StandingController, one_dof

DT = 1e-3
SOLO12 = "config/scenes/solo12_standing.yaml"
INTEGRATORS = {"compliant": {}, "rigid": {"solver": "pgs"}}
# a heightfield ramp (5 degrees along x) with a static box, a ball and a brick on it
RAMP = np.tile(np.linspace(-0.5, 0.5, 11) * np.tan(np.radians(5.0)), (5, 1))
TERRAIN = {"ground": {"friction": 0.5, "youngs_modulus": 2.0e11, "poisson_ratio": 0.3},
           "heightfield": {"heights": RAMP.tolist(), "size": [1.0, 1.0]},
           "boxes": [{"size": [0.1, 0.4, 0.1], "position": [-0.3, 0.0, 0.0]}],
           "models": [{"sphere": {"radius": 0.05, "mass": 1.0}, "position": [0.2, 0.1, 0.08],
                       "name": "ball"},
                      {"box": {"size": [0.1, 0.2, 0.05], "mass": 2.0},
                       "position": [0.0, -0.15, 0.03], "name": "brick"}]}
BALL = "config/scenes/bouncing_ball.yaml"  # restitution 0.9: impact phases carried


class Standing:
    """Solo12's effort: StandingController's feed-forward (the feet's share of the weight) and
    a soft joint PD toward the start, as tau (the process model has no servos)."""

    def __init__(self, sim: Simulator) -> None:
        helper = Simulator.from_scene(SOLO12, dt=DT)
        self.ff = StandingController(helper, helper.q.copy()).tau.copy()
        self.q0 = helper.q.copy()
        self.iv, self.iq = one_dof(sim.model)

    def __call__(self, q, v) -> np.ndarray:
        u = self.ff.copy()
        u[self.iv] += 3.0 * (self.q0[self.iq] - q[self.iq]) - 0.05 * v[self.iv]
        return u


def scene_run(label: str, integrator: str):
    """(Simulator, effort(q, v)) of a labelled scene."""
    if label == "solo12":
        sim = Simulator.from_scene(SOLO12, dt=DT, integrator=integrator,
                                   **INTEGRATORS[integrator])
        return sim, Standing(sim)
    scene = TERRAIN if label == "terrain" else BALL
    sim = Simulator.from_scene(scene, dt=DT, integrator=integrator, **INTEGRATORS[integrator])
    return sim, lambda q, v: np.zeros(sim.model.nv)


def state_of(sim: Simulator) -> np.ndarray:
    return np.concatenate([sim.q, sim.v])


@pytest.mark.parametrize("label,integrator,before,steps", [
    ("solo12", "compliant", 0, 60), ("solo12", "rigid", 0, 60), ("terrain", "compliant", 0, 60),
    ("terrain", "rigid", 0, 60), ("ball", "compliant", 190, 40)])
def test_step_is_the_simulators_step_with_its_memory_held(label, integrator, before, steps):
    """From the Simulator's state and memory, ``step`` is its next step bit for bit, step after
    step: Solo12 landing on its feet and standing, a ball and a brick on a heightfield ramp
    beside a static box, the bouncing ball's impacts (restitution 0.9: the impact phases)."""
    sim, effort = scene_run(label, integrator)
    process = ProcessModel.from_simulator(sim)
    assert process.nx == sim.model.nq + sim.model.nv and process.ndx == 2 * sim.model.nv
    for _ in range(before):  # (the ball falls until it is near the floor)
        sim.step()
    touching = impacting = 0
    for _ in range(steps):
        u = effort(sim.q, sim.v)
        process.hold_memory(sim.get_state().integrator)
        x_next = process.step(process.x_from(sim.q, sim.v), u)
        assert sim.step(u).converged
        np.testing.assert_array_equal(x_next, state_of(sim))
        touching += len(sim.contacts()) > 0
        impacting += sim.integrator.impacting_contacts > 0
    assert touching > steps // 4, "the run is in contact"
    if label == "ball":
        assert impacting >= 2, "the run goes through impact phases"


def test_step_without_memory_differs_only_where_contacts_change():
    """Held memory none: Solo12 standing takes the Simulator's step wherever the pushing set
    repeats (the active set settles on the same set from either start): bit for bit where no
    foot slides (the last solve ends on the exact solution of its faces from either start),
    within the solve's tolerance (measured 5e-8) while the feet slide in the landing (Newton
    on a sliding foot's cone ends where its steps stop, from the Simulator's last impulses or
    from the interior-point answer); where the feet land (the first steps) the active set and
    the impact phases the Simulator carries change the step. The rigid step carries nothing:
    identical throughout."""
    for integrator in INTEGRATORS:
        sim, effort = scene_run("solo12", integrator)
        process = ProcessModel.from_simulator(sim)
        differing, identical = [], 0
        for k in range(300):
            u = effort(sim.q, sim.v)
            x_next = process.step(process.x_from(sim.q, sim.v), u)
            sim.step(u)
            identical += np.array_equal(x_next, state_of(sim))
            if not np.allclose(x_next, state_of(sim), rtol=0.0, atol=1e-6):
                differing.append(k)
        if integrator == "rigid":
            assert differing == [] and identical == 300
        else:
            assert len(differing) <= 5 and max(differing) < 50, differing
            assert identical >= 250


def test_step_is_pure_and_from_scene():
    """Two calls give the same bits whatever ran between (other states, another memory);
    ``from_scene`` builds the same process model as ``from_simulator``."""
    sim, _ = scene_run("terrain", "compliant")
    for _ in range(30):
        sim.step()
    process = ProcessModel.from_scene(TERRAIN, dt=DT)
    x = process.x_from(sim.q, sim.v)
    first = process.step(x)
    process.step(process.x_from(process.scene.q0, np.zeros(process.nv)))
    np.testing.assert_array_equal(process.step(x), first)
    process.hold_memory(sim.get_state().integrator)
    np.testing.assert_array_equal(ProcessModel.from_simulator(sim).step(x), first)
    q, v = process.qv_from(first)
    np.testing.assert_array_equal(np.concatenate([q, v]), first)
    dx = process.difference(x, first)
    np.testing.assert_allclose(process.integrate(x, dx), first, atol=1e-15)


def test_strided_vectors_are_read_as_their_elements():
    """x and u taken as views with a stride (a column of a larger array) step as their C-ordered
    copies do: the compiled batch reads its rows as C-ordered, so the checks copy them (read
    as they were, x's view made the step fail)."""
    sim, _ = scene_run("terrain", "compliant")
    for _ in range(30):
        sim.step()
    process = ProcessModel.from_simulator(sim)
    x = process.x_from(sim.q, sim.v)
    u = np.linspace(-0.1, 0.1, process.nv)
    strided_x, strided_u = np.stack([x, -x], axis=1)[:, 0], np.stack([u, -u], axis=1)[:, 0]
    assert not strided_x.flags.c_contiguous and not strided_u.flags.c_contiguous
    expected = process.step(x, u)
    np.testing.assert_array_equal(process.step(strided_x, strided_u), expected)
    np.testing.assert_array_equal(process.step_batch(x[None, :], strided_u)[0], expected)


def test_bad_input_is_named():
    process = ProcessModel.from_scene(TERRAIN, dt=DT)
    with pytest.raises(ValueError, match="hold"):
        process.hold_memory({"p": np.zeros(3)})
    with pytest.raises(ValueError, match="contact integrator"):
        ProcessModel.from_scene(TERRAIN, dt=DT, integrator="euler")
    arm = ProcessModel(process.model, DT, "euler")
    with pytest.raises(ValueError, match="nothing is held"):
        arm.hold_memory(None)


def particles(process, x, count, rng):
    """count states scattered about x in the tangent space (1 mm, 1 mrad, 1e-2 m/s)."""
    scale = np.concatenate([np.full(process.nv, 1e-3), np.full(process.nv, 1e-2)])
    return np.array([process.integrate(x, scale * rng.normal(size=process.ndx))
                     for _ in range(count)])


@pytest.mark.parametrize("integrator,options", [
    ("compliant", {}), ("compliant", {"max_contacts": 2}), ("rigid", {}),
    ("compliant", {"solver": "clarabel"})])
def test_batch_is_step_row_by_row(integrator, options):
    """Solo12 particles about a standing state, each with its own contacts (some feet in
    contact, some not): step_batch equals step row by row, serial and parallel, per-particle
    and shared efforts, in place. The compiled batch (compliant, interior point) hands the
    particles whose contact buffer is full back to the general path, which grows it
    (max_contacts 2, four feet); the rigid LCP and clarabel have no compiled step and run
    row by row."""
    rng = np.random.default_rng(3)
    sim, effort = scene_run("solo12", integrator)
    for _ in range(30):
        sim.step(effort(sim.q, sim.v))
    process = ProcessModel.from_scene(SOLO12, DT, integrator,
                                      **{**INTEGRATORS[integrator], **options})
    X = particles(process, process.x_from(sim.q, sim.v), 12, rng)
    U = effort(sim.q, sim.v) + rng.normal(0.0, 0.1, (12, process.nv))
    rows = np.array([process.step(X[n], U[n]) for n in range(12)])
    # clarabel's solver, kept per row structure and updated with new numbers, rounds apart
    # from a fresh one: pure to its rounding only
    equal = np.testing.assert_array_equal if options.get("solver") != "clarabel" else \
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    for parallel in (False, True):
        equal(process.step_batch(X, U, parallel=parallel), rows)
        shared = process.step_batch(X, U[0], parallel=parallel)
        equal(shared[5], process.step(X[5], U[0]))
    Y = X.copy()
    assert process.step_batch(Y, U, out=Y) is Y
    equal(Y, rows)
    if "max_contacts" in options:  # the same steps as with buffers large enough at once
        plain = ProcessModel.from_scene(SOLO12, DT, integrator, **INTEGRATORS[integrator])
        np.testing.assert_array_equal(plain.step_batch(X, U), rows)


def test_batch_holds_memory_and_allocates_nothing_with_out():
    """Every particle starts from the held memory (the Simulator's: its step bit for bit); with
    out given a call allocates no arrays: its Python heap peak (tracemalloc) does not grow with
    the particles (numba's unboxing of the chunks and the thread hand-over take a few kB, the
    same for 64 particles or 4096, whose result is 1.2 MB), and step, step_batch and the
    Jacobians' compiled calls make no NRT allocation."""
    import tracemalloc

    sim, effort = scene_run("solo12", "compliant")
    for _ in range(30):
        sim.step(effort(sim.q, sim.v))
    process = ProcessModel.from_simulator(sim)
    process.hold_memory(sim.get_state().integrator)
    u = effort(sim.q, sim.v)
    x = process.x_from(sim.q, sim.v)
    sim.step(u)
    for parallel in (False, True):
        peaks = []
        for count in (64, 4096):
            X = np.tile(x, (count, 1))
            out = np.empty_like(X)
            process.step_batch(X, u, out=out, parallel=parallel)
            assert (out == state_of(sim)).all()
            tracemalloc.start()
            process.step_batch(X, u, out=out, parallel=parallel)
            peaks.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
        # An allocation per particle would grow the peak by at least 8 B for each of the 4032
        # more particles (32 kB). What is left does not grow with the count: numba's unboxing
        # (serial 1.6-3.4 kB, for 64 as for 4096) and, in parallel, the thread hand-over
        # (6-15 kB).
        assert max(peaks) < 20_000 and peaks[1] < peaks[0] + 16_000, peaks
    X = np.tile(x, (64, 1))
    out = np.empty_like(X)
    for call in (lambda: process.step(x, u), lambda: process.step_batch(X, u, out=out),
                 lambda: process.jacobians(x, u)):
        assert nrt_allocations(call) == 0  # (the chunk's unboxing made 15 a call with NRT)


def nrt_allocations(call, calls: int = 20) -> int:
    """numba's reference-counted allocations (NRT: arrays and the meminfos that unboxing an
    argument makes where the callee is compiled with NRT) over ``calls`` calls after one, which
    tracemalloc does not see."""
    from numba.core.runtime import _nrt_python

    call()
    enabled = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    try:
        before = (_nrt_python.memsys_get_stats_alloc(), _nrt_python.memsys_get_stats_mi_alloc())
        for _ in range(calls):
            call()
        return (_nrt_python.memsys_get_stats_alloc() - before[0]
                + _nrt_python.memsys_get_stats_mi_alloc() - before[1])
    finally:
        if not enabled:
            _nrt_python.memsys_disable_stats()


# The effort Jacobian through the contact solve against central differences of step, each
# model solved to its rounding floor (tolerance 1e-16: the differences' error is the solve's
# error over the step in u).
EXACT = {"tolerance": 1e-16, "max_iterations": 200}


def solo12_sliding() -> tuple:
    """Solo12 standing on a floor of friction 0.1 (its feet's forces planned for 0.8), pushed
    sideways at 0.5 m/s: every foot slides (|f_t| = 0.1 f_n)."""
    from mbsim_ros.contact.scene import load_scene

    scene = load_scene(SOLO12)
    scene.material.friction = 0.1
    sim = Simulator.from_scene(scene, dt=DT)
    effort = Standing(sim)
    for _ in range(40):
        sim.step(effort(sim.q, sim.v))
    v = sim.v.copy()
    v[1] = 0.5
    sim.reset(sim.q.copy(), v)
    for _ in range(3):
        sim.step(effort(sim.q, sim.v))
    return sim, effort(sim.q, sim.v)


def brick_on_incline(tmp_path, friction: float) -> tuple:
    """scenarios.incline's brick (four steel feet on the 30 degree incline) after 0.1 s: at
    rest with friction 1.0, sliding with 0.3 (tan 30 = 0.577)."""
    from mbsim_ros.scenarios import brick_urdf, incline

    path = tmp_path / "brick.urdf"
    path.write_text(brick_urdf())
    sim = incline(str(path), friction, DT)
    for _ in range(100):
        sim.step()
    return sim, np.zeros(6)


def ball_in_impact() -> tuple:
    """The bouncing ball at its first step in contact (an impact's loading phase)."""
    sim = Simulator.from_scene(BALL, dt=DT)
    while sim.integrator.impacting_contacts == 0:
        sim.step()
    sim.step()  # (the step after: still in the overlap, on its way out)
    return sim, np.zeros(6)


def solo12_standing() -> tuple:
    sim, effort = scene_run("solo12", "compliant")
    for _ in range(60):
        sim.step(effort(sim.q, sim.v))
    return sim, effort(sim.q, sim.v)


@pytest.mark.parametrize("case,bound,eps_u", [
    ("solo12_standing", 1e-6, 1e-3), ("solo12_sliding", 1e-6, 1e-3),
    ("brick_sliding", 1e-6, 1e-2), ("brick_resting", 5e-6, 1e-2), ("ball_in_impact", 1e-6, 1e-3)])
def test_effort_jacobian_through_contact_against_differences(case, bound, eps_u, tmp_path):
    """B = dx'/du by the implicit function theorem on the contact solve against central
    differences of step, with the Simulator's memory held: relative error (max |B - B_fd| /
    max |B_fd|) below 1e-6; dropping the impulses' term (the contact block) is wrong by more
    than 10 %. The resting brick's upper feet hold their friction 0.3 % inside the cone with a
    multiplier of 2e-10 (its four feet's tangential split is set by the solve's barrier, not
    by the contact law: a contact at a switch), so its bound is 5e-6."""
    sim, u = contact_case(case, tmp_path)
    assert sim.contacts(), "in contact"
    process, x = exact_process(sim)
    from mbsim_ros.estimation.contact_jacobians import effort_jacobian

    B = effort_jacobian(process, x, u)
    _, B_fd = process.finite_difference_jacobians(x, u, eps_u=eps_u)
    scale = np.abs(B_fd).max()
    assert np.abs(B - B_fd).max() / scale < bound
    dropped = effort_jacobian(process, x, u, contact_block=False)
    assert np.abs(dropped - B_fd).max() / scale > 0.1
    if case == "solo12_sliding":
        for contact in sim.contacts():  # the sliding branch: on the cone's surface
            assert np.hypot(*contact.force[:2]) == pytest.approx(0.1 * contact.force[2],
                                                                  rel=1e-6)


def test_jacobians_through_contact():
    """jacobians(x, u) on the compliant step: A (its configuration and velocity columns) and
    B the exact ones; the rigid LCP has none yet (a clear error naming the way that works)."""
    sim, u = solo12_standing()
    process = ProcessModel.from_simulator(sim)
    process.hold_memory(sim.get_state().integrator)
    x = process.x_from(sim.q, sim.v)
    A, B = process.jacobians(x, u)
    from mbsim_ros.estimation.contact_jacobians import (configuration_jacobian,
                                                        effort_jacobian, velocity_jacobian)

    np.testing.assert_array_equal(B, effort_jacobian(process, x, u))
    nv = process.nv
    np.testing.assert_array_equal(A[:, :nv], configuration_jacobian(process, x, u))
    np.testing.assert_array_equal(A[:, nv:], velocity_jacobian(process, x, u))
    rigid = ProcessModel.from_scene(SOLO12, DT, "rigid")
    with pytest.raises(NotImplementedError, match="finite_difference_jacobians"):
        rigid.jacobians(x, u)


def ball_loading() -> tuple:
    """The bouncing ball at the step that starts its impact (loading: the target is the
    closing root of the energy balance, which depends on the stiffness)."""
    sim, probe = Simulator.from_scene(BALL, dt=DT), Simulator.from_scene(BALL, dt=DT)
    while True:
        probe.step()
        if probe.integrator.impacting_contacts:
            return sim, np.zeros(6)
        sim.step()


def contact_case(case: str, tmp_path=None) -> tuple:
    """(a Simulator in contact, the effort) of a named case of the Jacobian tests."""
    return {"solo12_standing": solo12_standing, "solo12_sliding": solo12_sliding,
            "ball_in_impact": ball_in_impact, "ball_loading": ball_loading,
            "brick_resting": lambda: brick_on_incline(tmp_path, 1.0),
            "brick_sliding": lambda: brick_on_incline(tmp_path, 0.3),
            "brick_sliding_flat": brick_sliding_flat, "terrain": terrain_resting,
            "brick_straight": lambda: brick_sliding_flat(0.0)}[case]()


def exact_process(sim: Simulator) -> tuple:
    """(the compliant ProcessModel of ``sim`` solved to EXACT, holding its memory; its x)."""
    process = ProcessModel(sim.model, DT, "compliant", **{**sim.integrator.options, **EXACT})
    process.hold_memory(sim.get_state().integrator)
    return process, process.x_from(sim.q, sim.v)


@pytest.mark.parametrize("case", ["solo12_standing", "solo12_sliding", "ball_loading"])
def test_parameter_columns_against_differences(case):
    """jacobians(..., params=["friction", "stiffness"]): the derivatives with respect to the
    floor's friction coefficient and its Hertz modulus E* (the step through the impulses)
    against central differences of step on scenes with the material changed by 1e-3
    (relative): relative error below 2e-6 where the column is not zero (the differences'
    own error: 9e-7 at 1e-3, 3e-6 at 1e-4 on Solo12 standing's stiffness, growing as the step
    shrinks); zero where friction does not act (every foot sticking, the ball's normal
    impact), which the differences confirm to their noise."""
    import dataclasses

    sim, u = {"solo12_standing": solo12_standing, "solo12_sliding": solo12_sliding,
              "ball_loading": ball_loading}[case]()
    options = {k: v for k, v in sim.integrator.options.items() if k != "scene"}

    def model(**change):
        scene = dataclasses.replace(sim.scene, material=dataclasses.replace(sim.scene.material,
                                                                             **change))
        process = ProcessModel.from_scene(scene, DT, **{**options, **EXACT})
        process.hold_memory(sim.get_state().integrator)
        return process

    process = model()
    x = process.x_from(sim.q, sim.v)
    A, B, P = process.jacobians(x, u, params=["friction", "stiffness"])
    assert P.shape == (process.ndx, 2)
    x_next = process.step(x, u)
    material, eps = sim.scene.material, 1e-3
    for column, name, value, unit in ((0, "friction", material.friction, 1.0),
                                      (1, "youngs_modulus", material.youngs_modulus,
                                       material.youngs_modulus / material.effective_modulus)):
        plus = model(**{name: value * (1 + eps)}).step(x, u)
        minus = model(**{name: value * (1 - eps)}).step(x, u)
        fd = (process.difference(x_next, plus) - process.difference(x_next, minus)) \
            / (2 * eps * value / unit)
        exact = P[:, column]
        if column == 0 and case != "solo12_sliding":
            assert not exact.any() and np.abs(fd).max() < 1e-7
        else:
            assert np.abs(exact - fd).max() / np.abs(fd).max() < 2e-6, name


@pytest.mark.parametrize("case,bound,eps", [
    ("solo12_standing", 1e-7, 1e-4), ("solo12_sliding", 1e-7, 1e-4), ("ball_loading", 1e-9, 1e-4),
    ("brick_sliding", 1e-6, 1e-3), ("brick_resting", 1e-5, 1e-4)])
def test_velocity_columns_against_differences(case, bound, eps, tmp_path):
    """A's velocity columns (implicit velocity terms: dv1/dv = 1 + h K^-1 (-B(v1) - D +
    M~ C(v1)) + K^-1 G^T dgamma/dv) against central differences of step in v: Solo12 standing
    5e-9, sliding 1.2e-8, the ball loading in its impact 2e-12, the brick sliding 4.7e-7 (its
    differences at eps 1e-3: 1e-4 and below rounds, 1e-2 crosses a branch), resting 4.6e-6
    (the switch of the effort Jacobian's test)."""
    from mbsim_ros.estimation.contact_jacobians import velocity_jacobian

    sim, u = contact_case(case, tmp_path)
    process, x = exact_process(sim)
    exact = velocity_jacobian(process, x, u)
    fd = state_differences(process, x, u, range(process.nv, process.ndx), eps)
    assert np.abs(exact - fd).max() / np.abs(fd).max() < bound


def terrain_resting() -> tuple:
    """The ball and the brick (its corners) on the heightfield ramp after 60 ms."""
    sim, _ = scene_run("terrain", "compliant")
    for _ in range(60):
        sim.step()
    return sim, np.zeros(sim.model.nv)


def brick_sliding_flat(spin: float = 0.3) -> tuple:
    """scenarios' brick on a flat floor of a softer steel-like material (E = 0.2 GPa: 20-30 um
    deep, so differences in q of 1e-8 stay within the Hertz law's smooth range), pushed at
    0.5 m/s while turning at ``spin`` rad/s: four feet sliding."""
    import tempfile
    from pathlib import Path

    from mbsim_ros.scenarios import brick_urdf

    path = Path(tempfile.mkdtemp()) / "brick.urdf"
    path.write_text(brick_urdf())
    scene = {"ground": {"friction": 0.3, "youngs_modulus": 2.0e8, "poisson_ratio": 0.3},
             "models": [{"urdf": str(path), "floating_base": True,
                         "position": [0.0, 0.0, 0.045]}]}
    sim = Simulator.from_scene(scene, dt=DT)
    for _ in range(50):
        sim.step()
    v = sim.v.copy()
    v[0], v[5] = 0.5, spin
    sim.reset(sim.q.copy(), v)
    for _ in range(3):
        sim.step()
    return sim, np.zeros(6)


@pytest.mark.parametrize("case,bound,eps", [
    ("solo12_standing", 5e-7, 1e-8), ("solo12_sliding", 5e-7, 1e-8), ("ball_loading", 1e-7, 1e-6),
    ("ball_in_impact", 1e-7, 1e-6), ("brick_sliding_flat", 2e-6, 1e-7),
    ("terrain", 5e-7, 1e-8)])
def test_configuration_columns_against_differences(case, bound, eps):
    """A's configuration columns (the rows, the Delassus matrix, the Hertz law, the free
    velocity and the impulses through K, the integration, all moved with q) against central
    differences of step in q, Richardson-extrapolated from eps and eps / 2: the steel
    contacts are a micrometre deep, so the differences must step well below that, where the
    solve's rounding shows (Solo12 standing 8.2e-8, sliding 9.8e-8; the ball's impact 5.8e-9
    and 5.6e-13; the brick on the softer floor, sliding and turning, 4.5e-7 to 8.8e-7; the
    ball and the brick's corners on the heightfield ramp, 1.4e-8)."""
    from mbsim_ros.estimation.contact_jacobians import configuration_jacobian

    sim, u = contact_case(case)
    process, x = exact_process(sim)
    exact = configuration_jacobian(process, x, u)
    assert exact is not None, "ground and terrain contacts only: supported"
    fd = configuration_differences(process, x, u, eps)
    assert np.abs(exact - fd).max() / np.abs(fd).max() < bound


def state_differences(process: ProcessModel, x, u, columns, eps: float) -> np.ndarray:
    """A's ``columns`` by central differences of step (the ProcessModel's own, eps in the
    tangent space)."""
    return process._state_differences(x, u, eps, columns)[:, list(columns)]


def configuration_differences(process: ProcessModel, x, u, eps: float) -> np.ndarray:
    """A's configuration columns by central differences of step in q, Richardson-extrapolated
    from eps and eps / 2."""
    def differences(step):
        return state_differences(process, x, u, range(process.nv), step)

    return (4.0 * differences(eps / 2) - differences(eps)) / 3.0


@pytest.mark.parametrize("case,link,bound", [
    ("solo12_standing", "base_link", 1e-6), ("solo12_standing", "HR_LOWER_LEG", 5e-6),
    ("solo12_sliding", "base_link", 1e-6), ("solo12_sliding", "HR_LOWER_LEG", 1e-6),
    ("ball_loading", "ball", 1e-6)])
def test_mass_column_against_differences(case, link, bound):
    """params=["mass:<link>"]: a link's mass (its centre and rotational inertia held) against
    central differences of step on models with that mass changed by 1e-3 (relative): base
    3.1e-7, a lower leg standing 2.9e-6 (a 0.03 kg link: the differences' own floor, 3e-5 at a
    1e-4 change), sliding 4.5e-7, the ball loading in its impact 1.7e-7."""
    import copy

    from mbsim_ros.model.model import R_MASS

    sim, u = {"solo12_standing": solo12_standing, "solo12_sliding": solo12_sliding,
              "ball_loading": ball_loading}[case]()
    options = {**sim.integrator.options, **EXACT}
    process = ProcessModel(sim.model, DT, "compliant", **options)
    process.hold_memory(sim.get_state().integrator)
    x = process.x_from(sim.q, sim.v)
    _, _, P = process.jacobians(x, u, params=[f"mass:{link}"])
    body = sim.model.body_names.index(link)
    mass, eps = sim.model.joint_real[body, R_MASS], 1e-3
    x_next = process.step(x, u)
    moved = []
    for sign in (1.0, -1.0):
        model = copy.copy(sim.model)
        model.joint_real = sim.model.joint_real.copy()
        model.joint_real[body, R_MASS] = mass * (1.0 + sign * eps)
        other = ProcessModel(model, DT, "compliant", **options)
        other.hold_memory(sim.get_state().integrator)
        moved.append(process.difference(x_next, other.step(x, u)))
    fd = (moved[0] - moved[1]) / (2.0 * eps * mass)
    assert np.abs(P[:, 0] - fd).max() / np.abs(fd).max() < bound
    with pytest.raises(ValueError, match="mass:<link>"):
        process.jacobians(x, u, params=["mass:no_such_link"])


def kkt_point(H, c, gamma, kind, mu, weight, iterations: int = 8) -> np.ndarray:
    """The contact solve's last problem's solution refined to its optimality conditions on the
    branch its solution is on, by Newton's method on them (the Jacobians' own linearisation,
    contact_jacobians.Branch; the cones' multipliers from the normal rows' stationarity)."""
    from mbsim_ros.estimation.contact_jacobians import Branch

    g = gamma.copy()
    weighted = H * weight[None, :]
    for _ in range(iterations):
        branch = Branch(H, c, g, kind, mu, weight)
        residual = (H + weighted @ H) @ g + c + weighted @ c
        cone = np.zeros((len(branch.sliding), 1))
        for s, (i, t, slip, lam) in enumerate(branch.sliding):
            residual[i:i + 3] += lam * np.array([-mu[i], t[0], t[1]])
            cone[s] = slip - mu[i] * g[i]
        g = g + branch.impulses(residual[:, None], cone)[:, 0]
    return g


def solved_step(process: ProcessModel, x, u) -> np.ndarray:
    """process.step(x, u) with its impulses moved to kkt_point: v1 by K^-1 G^T dgamma (the
    step's K and G), x' by the integration's derivative."""
    from mbsim_ros.estimation.contact_jacobians import _Solved, last_problem

    solved = _Solved(process, x, u)
    slot = process._contact.slots[0]  # (where the step wrote)
    x_next = np.concatenate([slot.q_next, slot.v_next])
    problem = last_problem(solved.integrator, solved.m)
    dv1 = solved.solve(solved.G.T @ (kkt_point(*problem) - problem[2]))
    return process.integrate(x_next, solved.state_change(dv1[:, None])[:, 0])


@pytest.mark.parametrize("case,eps_q,eps_v,bound", [
    ("brick_straight", 1e-7, 1e-4, 1e-8), ("brick_sliding", 4e-9, 1e-3, 5e-7)])
def test_sliding_straight_against_differences_of_the_solved_problem(case, eps_q, eps_v, bound,
                                                                    tmp_path):
    """A brick sliding straight (every foot slipping the same way, no spin: on the soft flat
    floor and down the steel incline): the step's own central differences differ from the
    exact A by 2e-5 and 3.5e-5 (its yaw rate's response to a roll, the lateral friction of
    two feet 1 % off), and they are what is wrong there. The interior-point solve's iterate
    at the states q +- eps is off its problem's optimum by ~2e-9 relative (7e-11 in a lateral
    impulse whose change is 8e-9), an error that moves with the state, so the differences
    keep it at every eps; the same steps with their impulses refined to the
    problem's optimality conditions (kkt_point: the step's H and c unchanged) give
    differences that agree with the exact A and B to 4.7e-10 / 8.2e-10 / 6.7e-10 (flat:
    q, v, u columns) and 2.7e-8 / 9.1e-8 / 1.1e-8 (incline; its steel feet 0.2 um deep, so q
    steps of 4e-9)."""
    from mbsim_ros.estimation.contact_jacobians import step_jacobians

    sim, u = contact_case(case, tmp_path)
    process, x = exact_process(sim)
    exact = step_jacobians(process, x, u)
    base = solved_step(process, x, u)
    assert np.abs(process.difference(process.step(x, u), base)).max() < 1e-12  # (a polish)

    def central(k=None, du=None, eps=1.0):
        e = np.zeros(process.ndx)
        if k is not None:
            e[k] = eps
        return (process.difference(base, solved_step(process, process.integrate(x, e),
                                                     u if du is None else u + du))
                - process.difference(base, solved_step(process, process.integrate(x, -e),
                                                       u if du is None else u - du))
                ) / (2.0 * eps)

    nv = process.nv
    configuration = np.array([(4.0 * central(k, eps=eps_q / 2) - central(k, eps=eps_q)) / 3.0
                              for k in range(nv)]).T
    velocity = np.array([central(nv + k, eps=eps_v) for k in range(nv)]).T
    effort = np.array([central(du=1e-2 * np.eye(nv)[k], eps=1e-2) for k in range(nv)]).T
    for block, fd in zip(exact, (configuration, velocity, effort)):
        assert np.abs(block - fd).max() / np.abs(fd).max() < bound


def compiled_calls(profile) -> dict:
    """{name: calls} of our compiled functions in a cProfile run: their entry points called
    directly (built-in methods of mbsim_ros modules) and numba's dispatchers (the profiler
    sees their Python functions' code)."""
    import sys

    from numba.core.dispatcher import Dispatcher

    dispatchers = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("mbsim_ros"):
            for value in vars(module).values():
                if isinstance(value, Dispatcher):
                    code = value.py_func.__code__
                    dispatchers[(code.co_filename, code.co_firstlineno, code.co_name)] = \
                        code.co_name
    calls = {}
    for (file, line, name), (_, count, *_) in pstats.Stats(profile).stats.items():
        if file == "~" and name.startswith("<built-in method mbsim_ros."):
            calls[name[len("<built-in method "):-1]] = count
        elif (file, line, name) in dispatchers:
            calls[name] = count
    return calls


def test_jacobians_cost_one_step_and_one_compiled_call():
    """jacobians(x, u) through contact (Solo12 standing) calls compiled code four times: the
    checks of x and u, the step (``step``'s compiled batch on one row, which restores the held
    memory and runs the compiled step) and jacobian_assembly's one call, which
    does the rest (the step's dynamics in one kinematics pass, the rows' q-derivatives, the
    branch and its factors, the three blocks' columns, the impulses' change and the
    integration's derivatives); no numpy.linalg call (the previous round made 11 compiled
    calls and 133 of numpy functions), no evaluation of inverse dynamics' derivatives from
    Python, and nothing is compiled at the second call."""
    import cProfile

    from numba.core import event

    sim, u = solo12_standing()
    process = ProcessModel.from_simulator(sim)
    process.hold_memory(sim.get_state().integrator)
    x = process.x_from(sim.q, sim.v)
    first = process.jacobians(x, u)
    compiles = []

    class Compiles(event.Listener):
        def on_start(self, ev) -> None:
            compiles.append(ev.data["dispatcher"].py_func.__name__)

        def on_end(self, ev) -> None:
            pass

    profile = cProfile.Profile()
    with event.install_listener("numba:compile", Compiles()):
        profile.enable()
        A, B = process.jacobians(x, u)
        profile.disable()
    assert compiles == []
    assert compiled_calls(profile) == {
        "first_bad_row": 1, "all_finite_kernel": 1,
        "mbsim_ros.estimation.contact_batch.contact_batch": 1,
        "mbsim_ros.estimation.jacobian_assembly.contact_jacobians_kernel": 1}
    called = {(file, name) for file, _, name in pstats.Stats(profile).stats}
    assert not [c for c in called if "linalg" in c[0] or "rnea_derivatives" in c[1]]
    np.testing.assert_array_equal(A, first[0])  # (the buffers are the ProcessModel's: copied)
    assert np.isfinite(A).all() and np.abs(B).max() > 0.0


def test_the_jacobians_table_follows_the_integrators_buffers():
    """The compiled call's arrays are one table of addresses (jacobian_assembly.
    JACOBIAN_ARRAYS): when the integrator replaces its row buffers (here: a held memory of a
    larger capacity), the table is bound again to the new ones and the Jacobians stay the
    same."""
    from mbsim_ros.estimation.jacobian_assembly import JACOBIAN_ARRAYS

    sim, u = solo12_standing()
    process = ProcessModel.from_simulator(sim)
    saved = sim.get_state().integrator
    process.hold_memory(saved)
    x = process.x_from(sim.q, sim.v)
    A, B = process.jacobians(x, u)
    integrator = process._contact.integrators[0]
    before = integrator._buffers
    memory = np.asarray(saved["memory"])
    grown = np.zeros((memory.shape[0], 2 * memory.shape[1] + 8), dtype=np.int64)
    grown[:, :memory.shape[1]] = memory
    process.hold_memory({**saved, "memory": grown})
    A_grown, B_grown = process.jacobians(x, u)
    buffers = integrator._buffers
    assert buffers is not before and buffers.capacity > before.capacity
    views = JACOBIAN_ARRAYS.unpack(process._contact.jacobian_workspace.table())
    for name, array in (("G_all", buffers.G), ("gamma_all", buffers.gamma),
                        ("Z_all", buffers.Z), ("mats", buffers.solver[0])):
        assert (getattr(views, name).__array_interface__["data"][0]
                == array.__array_interface__["data"][0]), name
    np.testing.assert_allclose(A_grown, A, rtol=0.0, atol=1e-12 * np.abs(A).max())
    np.testing.assert_allclose(B_grown, B, rtol=0.0, atol=1e-12 * np.abs(B).max())


def test_the_jacobians_take_the_steps_composites_and_mass_matrix():
    """The compiled call reads what the step left instead of computing it again
    (jacobian_kernels.step_dynamics): the composite inertias in the step's workspace are, to
    the bit, those of a kinematics pass and the composite-rigid-body algorithm at q
    (jacobian_kernels.mass_pass), and M = L^T L from the step's LTL factor of M~ is
    crba(q) + h diag(damping) to 1e-15 of its largest entry (its factor's rounding)."""
    from mbsim_ros.dynamics import crba
    from mbsim_ros.estimation.jacobian_assembly import JACOBIAN_ARRAYS
    from mbsim_ros.estimation.jacobian_kernels import mass_pass

    sim, u = solo12_standing()
    process = ProcessModel.from_simulator(sim)
    process.hold_memory(sim.get_state().integrator)
    x = process.x_from(sim.q, sim.v)
    process.jacobians(x, u)
    views = JACOBIAN_ARRAYS.unpack(process._contact.jacobian_workspace.table())
    model, nv, nj = sim.model, sim.model.nv, sim.model.njoints
    q = x[:model.nq].copy()
    oR, op, oS = np.empty((nj, 3, 3)), np.empty((nj, 3)), np.empty((nv, 6))
    oY, Yc, M = np.empty((nj, 10)), np.empty((nj, 10)), np.empty((nv, nv))
    mass_pass(model.joint_int, model.joint_real, model.armature, model.damping, sim.dt, q, oR,
              op, oS, oY, Yc, np.empty(6), np.empty((3, 3)), np.empty(3), M)
    assert np.array_equal(views.oS_step, oS)
    assert np.array_equal(views.Yc_step, Yc)
    expected = crba(model, q) + sim.dt * np.diag(model.damping)
    np.testing.assert_allclose(views.M, expected, rtol=0.0, atol=1e-15 * np.abs(expected).max())
    np.testing.assert_allclose(views.M, M, rtol=0.0, atol=1e-15 * np.abs(M).max())


# spheres against a static box (on a face and over an edge), a sphere on another sphere, a
# brick on the floor with spheres against its top face and edge, a block on a second static
# box: pairs of shapes
PAIRS = {"ground": {"friction": 0.5, "youngs_modulus": 2.0e8, "poisson_ratio": 0.3},
         "boxes": [{"size": [0.2, 0.2, 0.1], "position": [0.0, 0.0, 0.05]},
                   {"size": [0.2, 0.2, 0.1], "position": [0.0, 0.6, 0.05]}],
         "models": [
             {"sphere": {"radius": 0.05, "mass": 1.0}, "position": [0.12, 0.03, 0.1455],
              "name": "over_edge"},
             {"sphere": {"radius": 0.05, "mass": 1.0}, "position": [0.0, -0.05, 0.1499],
              "name": "on_face"},
             {"sphere": {"radius": 0.05, "mass": 1.0}, "position": [0.4, 0.0, 0.0499],
              "name": "low"},
             {"sphere": {"radius": 0.04, "mass": 0.5}, "position": [0.43, 0.02, 0.13235],
              "name": "high"},
             {"box": {"size": [0.2, 0.2, 0.1], "mass": 2.0}, "position": [-0.5, 0.0, 0.04995],
              "name": "crate"},
             {"sphere": {"radius": 0.05, "mass": 1.0}, "position": [-0.38, 0.0, 0.1455],
              "name": "over_crate_edge"},
             {"sphere": {"radius": 0.05, "mass": 1.0}, "position": [-0.5, 0.05, 0.14985],
              "name": "on_crate"},
             {"box": {"size": [0.1, 0.1, 0.05], "mass": 1.0}, "position": [0.02, 0.57, 0.12497],
              "name": "block"}]}


def test_configuration_columns_of_pairs_of_shapes():
    """A's configuration columns where contacts are pairs of shapes whose normal turns with
    them (contact_jacobians._pair_motion): a sphere on another sphere, spheres against a static
    box's face and over its edge, and against a moving box's top face and edge, a block's
    corners on a static box; against central differences in q (Richardson from 1e-7 and 5e-8;
    3.5e-8 measured, 2.3e-7 from 1e-6, 3.2e-7 from 1e-8 where rounding shows)."""
    from mbsim_ros.contact.geometry import BOX, SPHERE
    from mbsim_ros.estimation.contact_jacobians import configuration_jacobian

    sim = Simulator.from_scene(PAIRS, dt=DT)
    for _ in range(3):
        sim.step()
    it = sim.integrator
    n = int(it._counts[0])
    pairs = it._contact_int[:n][it._contact_int[:n, 3] >= 0]
    kinds = it._shape_arrays[0][2]
    touching = it._contact_real[:n][it._contact_int[:n, 3] >= 0, 6] < 0.0
    assert touching.all() and len(pairs) == 9
    assert {(kinds[s], kinds[s2], other >= 0) for _, other, s, s2 in pairs} == {
        (SPHERE, BOX, False), (SPHERE, SPHERE, True), (SPHERE, BOX, True), (BOX, BOX, False)}
    process, x = exact_process(sim)
    u = np.zeros(process.nu)
    exact = configuration_jacobian(process, x, u)
    fd = configuration_differences(process, x, u, 1e-7)
    assert np.abs(exact - fd).max() / np.abs(fd).max() < 3e-7
