"""The compliant step as one compiled call (integrators/compliant_step.py) gives the general
path's bits: q, v, the step's record and the contact outputs, on scenes that take each of its
branches (Hertz and plain-stiffness contact, implicit and explicit velocity terms, a
free-flyer robot, joint limits without shapes, pyramid cones); a step it hands back (a full
buffer, a failed interior-point solve) is finished by the general path with the same result."""
from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

from mbsim_ros import Simulator, load_urdf
from mbsim_ros.contact.scene import load_scene
from mbsim_ros.contact.standing import standing_scene
from mbsim_ros.integrators.compliant_step import COMPLIANT_ARRAYS
from mbsim_ros.model import example_robot_urdf, shipped_urdf
from mbsim_ros.scenarios import LEGGED
from mbsim_ros.scenarios import brick_urdf, incline
from mbsim_ros.solvers.cone_qp import LIMIT_ITERATIONS, LIMIT_WARM_START

LEGS = np.array([0.0, 0.8, -1.6] * 4)


def general(sim: Simulator) -> Simulator:
    """The same Simulator without its fused step (sim.step takes the general path)."""
    sim.data.fused = lambda state: None
    return sim


def assert_same_runs(make, steps: int, control=None) -> Simulator:
    """Run a fused and a general Simulator side by side: every step's record and state are
    the same bits. Returns the fused one."""
    fused, plain = make(), general(make())
    assert fused.data.fused(fused.state) is not None, "the fused step is offered"
    for k in range(steps):
        tau = None if control is None else control(fused)
        a, b = fused.step(tau), plain.step(None if control is None else control(plain))
        assert (a.converged, a.iterations, a.residual, a.fallback, a.message) == \
            (b.converged, b.iterations, b.residual, b.fallback, b.message), k
        assert np.array_equal(fused.q, plain.q) and np.array_equal(fused.v, plain.v), k
        assert np.array_equal(fused.state.acceleration, plain.state.acceleration), k
    assert np.array_equal(fused.integrator.body_wrenches(), plain.integrator.body_wrenches())
    assert [c.link for c in fused.contacts()] == [c.link for c in plain.contacts()]
    return fused


@pytest.fixture(scope="module")
def brick_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("fused") / "brick.urdf"
    path.write_text(brick_urdf())
    return str(path)


@pytest.mark.parametrize("friction, cone", [(0.3, "true"), (0.7, "true"), (0.3, "pyramid")])
def test_incline_box(brick_path, friction, cone):
    sim = assert_same_runs(lambda: incline(brick_path, friction, 1e-3, cone), 300)
    assert len(sim.contacts()) == 4


@pytest.mark.parametrize("velocity_terms", ["implicit", "explicit"])
def test_solo12_standing(velocity_terms):
    scene = load_scene("config/scenes/solo12_standing.yaml")
    q0 = scene.q0.copy()
    q0[7:] = LEGS

    def make():
        sim = Simulator.from_scene(scene, dt=1e-3, velocity_terms=velocity_terms)
        sim.reset(q0)
        return sim

    def control(sim):
        tau = np.zeros(sim.model.nv)
        tau[6:] = 30.0 * (LEGS - sim.q[7:]) - 0.3 * sim.v[6:]
        return tau

    sim = assert_same_runs(make, 200, control)
    assert len(sim.contacts()) >= 4


@pytest.mark.parametrize("robot", ["go2", "anymal_c"])
def test_legged_robot_on_its_collision_meshes(robot):
    """example-robot-data robots slumping onto their mesh hulls (zero effort): mesh contacts,
    the per-point reach (reachable_contacts) and, with room for four contacts, buffers that
    grow when more points come within reach."""
    scene = standing_scene(example_robot_urdf(LEGGED[robot]))
    sim = assert_same_runs(lambda: Simulator.from_scene(scene, dt=1e-3, max_contacts=4), 150)
    assert len(sim.contacts()) >= 4, "at least the four feet on the ground"


def test_sphere_pile_with_plain_stiffness():
    models = [{"sphere": {"radius": 0.05, "mass": 1.0}, "name": f"s{k}",
               "position": [1e-3 * (-1) ** k, 0.0, 0.05 + k * 0.101]} for k in range(4)]
    scene = {"ground": {"friction": 0.5, "stiffness": 1e5, "damping": 50.0}, "models": models}
    assert_same_runs(lambda: Simulator.from_scene(scene, dt=1e-2), 100)


def test_arm_on_its_joint_limits_without_shapes():
    model = load_urdf(shipped_urdf("arm7"))

    def make():
        sim = Simulator(model, 1e-3, "compliant")
        sim.reset(v=np.full(model.nv, 3.0))  # driven into its limits within the run
        return sim

    sim = assert_same_runs(make, 400, lambda s: np.full(model.nv, 5.0))
    assert sim.integrator._row_count > 0, "limit rows were active"


def test_a_full_contact_buffer_is_grown_by_the_general_path(brick_path):
    scene = {"ground": {"friction": 0.5},
             "models": [{"urdf": brick_path, "floating_base": True, "position": [0, 0, 0.045]}]}

    def make():
        return Simulator.from_scene(scene, dt=1e-3, max_contacts=2)

    sim = assert_same_runs(make, 50)
    assert len(sim.integrator._contact_int) >= 4 and len(sim.contacts()) == 4


def test_a_failed_interior_solve_falls_back_as_the_general_path_does(brick_path):
    """The interior-point solve stopped at once: without the warm start every step falls back
    to clarabel; with it the first (no memory) and a few of the landing's next ones (Newton
    from clarabel's impulses, or through a change of faces, does not converge in
    NEWTON_ITERATIONS), then none: the steps start from their own last impulses. The
    compiled step and the general path alike, bit for bit."""
    sim = assert_same_runs(lambda: incline(brick_path, 0.5, 1e-3), 1)
    for warm in (False, True):
        one_iteration = incline(brick_path, 0.5, 1e-3)
        plain = general(incline(brick_path, 0.5, 1e-3))
        for run in (one_iteration, plain):
            run.integrator.rows.limits[LIMIT_ITERATIONS] = 1.0
            run.integrator.rows.limits[LIMIT_WARM_START] = float(warm)
        for k in range(12):
            a, b = one_iteration.step(), plain.step()
            assert a.fallback == b.fallback and a.message == b.message
            assert a.fallback or (warm and k > 0)
            assert not a.fallback or not warm or k < 6
            assert np.array_equal(one_iteration.q, plain.q)
    assert sim.step().converged


def test_not_offered_where_python_is_in_the_step(brick_path):
    sim = incline(brick_path, 0.5, 1e-3)
    assert sim.data.fused(sim.state) is not None
    scene = load_scene("config/scenes/solo12_standing.yaml")
    for integrator, options in (("compliant", {"solver": "clarabel"}),
                                ("compliant", {"solver": "osqp", "cone": "pyramid"}),
                                ("rigid", {}), ("rigid", {"solver": "pivoting"})):
        other = Simulator.from_scene(scene, dt=1e-3, integrator=integrator, **options)
        assert other.data.fused(other.state) is None, (integrator, options)


def test_box_on_rough_heightfield():
    """A free box dropped on rough terrain (a random heightfield, 5 cm cells): the heightfield
    goes through both paths as the same bits."""
    heights = np.random.default_rng(7).uniform(0.0, 0.02, (9, 9)).tolist()
    scene = load_scene({"ground": {"friction": 0.6, "youngs_modulus": 1e9, "poisson_ratio": 0.3},
                        "heightfield": {"heights": heights, "size": [0.4, 0.4]},
                        "models": [{"box": {"size": [0.1, 0.08, 0.05], "mass": 1.0},
                                    "position": [0.01, -0.02, 0.06],
                                    "orientation": [0.1, 0.05, 0.0, math.sqrt(0.9875)]}]})

    def make():
        return Simulator.from_scene(scene, dt=1e-3)

    sim = assert_same_runs(make, 300)
    assert len(sim.contacts()) >= 3


def address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def test_the_step_table_points_at_the_live_arrays(brick_path):
    """The compiled step takes its arrays as one table (layout.ArrayTable): its views are the
    State's, the Data's and the integrator's arrays, and a buffer the general path grows is
    bound again (the new one's address)."""
    scene = {"ground": {"friction": 0.5},
             "models": [{"urdf": brick_path, "floating_base": True, "position": [0, 0, 0.045]}]}
    sim = Simulator.from_scene(scene, dt=1e-3, max_contacts=2)
    state, integrator = sim.state, sim.integrator

    def live() -> dict:
        return {"q": state.q, "v": state.v, "effort": state.effort,
                "acceleration": state.acceleration, "q_next": sim.data.q_next,
                "bounds": sim.data.bounds.packed, "servo": integrator.servos.table,
                "contact_int": integrator._contact_int, "memory": integrator._buffers.memory,
                "memory_int": integrator._impacts.keys, "stats": integrator._stats,
                "residual_out": integrator._residual, "law": integrator._constants[0]}

    def check():
        views = COMPLIANT_ARRAYS.unpack(sim.data.fused(state)[2][0])
        for name, array in live().items():
            view = getattr(views, name)
            assert address(view) == address(array) and view.shape == array.shape, name

    check()
    small = integrator._contact_int
    for _ in range(20):
        assert sim.step().converged
    assert integrator._contact_int is not small, "the general path grew the contact buffer"
    check()


def test_a_compiled_step_reports_through_its_record_and_allocates_nothing(brick_path):
    """A step on the compiled path returns the integrator's record (base.StepRecord, filled
    in place: what the general path's StepInfo says, ``copy()`` keeps one), and 1000 of them
    allocate nothing that outlives a step and almost nothing within one (tracemalloc's peak:
    the step's count as a Python int; a per-step StepInfo and the argument tuple were
    4.8 kB)."""
    scene = load_scene("config/scenes/solo12_standing.yaml")
    q0 = scene.q0.copy()
    q0[7:] = LEGS
    robot = Simulator.from_scene(scene, dt=1e-3)
    robot.reset(q0)
    hold = np.zeros(robot.model.nv)
    hold[6:] = [0.0, 1.0, -0.5] * 4  # about what holds the legs up (a fixed tau)
    for sim, tau in ((incline(brick_path, 0.3, 1e-3), np.zeros(6)), (robot, hold)):
        plain = general(incline(brick_path, 0.3, 1e-3)) if sim is not robot else None
        for _ in range(300):  # landed (the first steps grow the buffers: the general path)
            sim.step(tau), plain and plain.step(tau)
        kept = []
        for _ in range(5):
            info = sim.step(tau)
            assert info is sim.integrator.record and info.converged
            kept.append(info.copy())
            if plain is not None:
                assert plain.step(tau) == kept[-1]
        assert len({info.residual for info in kept}) > 1, "each copy keeps its own step's"
        tracemalloc.start()
        for _ in range(1000):
            info = sim.step(tau)
        current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert info is sim.integrator.record and info.iterations > 0
        assert current < 256 and peak < 512, (current, peak)
