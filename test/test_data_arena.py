"""A simulation's arrays in one float64 and one int64 buffer (mbsim_ros/arena.py): every array
a Simulator's compiled step is bound to (its layout.ArrayTable) lies in the Data's arena or in
the Model's; the arena's arrays start on cache lines and do not overlap; the Model's pair is
read-only but for what users tune; two simulations of one Model share nothing mutable; a
buffer that grows past its declared capacity is the one documented exception."""
import numpy as np
import pytest

from mbsim_ros import Simulator
from mbsim_ros.arena import ALIGNMENT, ArenaPlan
from mbsim_ros.estimation import ProcessModel
from mbsim_ros.model import load_urdf, shipped_urdf

BALL = {"ground": {"friction": 0.5}, "gravity": [0.0, 0.0, -9.81],
        "models": [{"sphere": {"radius": 0.05, "mass": 1.0}, "name": "ball",
                    "position": [0.0, 0.0, 0.0499]}]}
BOX = {"ground": {"friction": 0.5}, "gravity": [0.0, 0.0, -9.81],
       "models": [{"box": {"size": [0.2, 0.2, 0.2], "mass": 1.0}, "name": "box",
                   "position": [0.0, 0.0, 0.0999]}]}


@pytest.fixture(scope="module")
def arm():
    return load_urdf(shipped_urdf("arm7"))


def simulators(arm):
    yield Simulator(arm, 1e-3, "euler", velocity_terms="explicit")
    yield Simulator(arm, 1e-3, "euler")
    yield Simulator(arm, 1e-3, "variational", order=4)
    yield Simulator.from_scene(BALL, 1e-3)
    yield Simulator.from_scene(BALL, 1e-3, velocity_terms="explicit")


def bound_arrays(sim: Simulator) -> tuple:
    """The arrays the Simulator's compiled step is bound to (after a step has bound it)."""
    assert sim.data.fused(sim.state) is not None
    return sim.integrator._bound.arrays


def test_every_bound_array_lies_in_the_data_or_the_model_arena(arm):
    for sim in simulators(arm):
        sim.step()
        arrays = bound_arrays(sim)
        assert len(arrays) >= 20
        for array in arrays:
            assert sim.data.arena.holds(array) or sim.model.arena.holds(array), sim.integrator
        state = sim.state
        for array in (state.q, state.v, state.acceleration, state.effort, sim.data.q_next,
                      sim.data.v_next, sim.data.bounds.packed, sim.integrator.servos.table):
            assert sim.data.arena.holds(array)
        # and the arrays that belong to the Model are the Model's
        model_arrays = [a for a in arrays if sim.model.arena.holds(a)]
        assert any(a is sim.model.joint_int for a in model_arrays)
        assert not any(sim.data.arena.holds(a) for a in model_arrays)


def test_arena_arrays_are_disjoint_and_aligned(arm):
    for sim in simulators(arm):
        arena = sim.data.arena
        spans = arena.spans()
        for dtype in ("float64", "int64"):
            taken = sorted((start, end) for kind, start, end in spans.values() if kind == dtype)
            for (_, end), (start, _) in zip(taken, taken[1:]):
                assert end <= start
        for name in arena.names():
            view = arena[name]
            assert view.flags.c_contiguous and arena.holds(view)
            assert view.ctypes.data % ALIGNMENT == 0, name
        # the views are the buffers' memory, not copies: a write shows in the buffer
        q = sim.state.q
        dtype, start, end = spans["state.q"]
        q[0] = 0.25
        assert arena.floats[start] == 0.25 and end - start == q.size


def test_plan_refuses_a_name_twice_and_other_dtypes():
    plan = ArenaPlan("test")
    plan.add("a", (3,))
    with pytest.raises(ValueError, match="declared twice"):
        plan.add("a", (2,))
    with pytest.raises(ValueError, match="dtype"):
        plan.add("b", (2,), "float32")
    plan.add_array("c", np.arange(4, dtype=np.int64))
    arena = plan.allocate()
    assert arena["c"].tolist() == [0, 1, 2, 3] and arena["a"].tolist() == [0.0, 0.0, 0.0]
    assert arena.ints.size == 8 and arena.floats.size == 8  # (whole cache lines)


def test_the_model_pair_is_read_only_but_for_gravity_and_armature(arm):
    arena = arm.arena
    for name in arena.names():
        view = arena[name]
        assert view.flags.writeable == (name in ("gravity", "armature")), name
    for array in (arm.joint_int, arm.joint_real, arm.damping, arm.friction, arm.armature,
                  arm.lower_position_limit, arm.upper_position_limit, arm.effort_limit):
        assert arena.holds(array) and not array.flags.writeable
        with pytest.raises(ValueError):
            array[0] = 0
    assert arena.holds(arm.gravity) and arm.gravity.flags.writeable
    before = arm.armature.copy()
    arm.armature = before + 0.01  # the setter writes the Model's pair in place
    assert arena.holds(arm.armature) and np.array_equal(arm.armature, before + 0.01)
    arm.armature = before


def test_two_simulators_of_one_model_share_nothing_mutable(arm):
    one, two = Simulator(arm, 1e-3, "variational"), Simulator(arm, 1e-3, "variational")
    assert not np.shares_memory(one.data.arena.floats, two.data.arena.floats)
    assert not np.shares_memory(one.data.arena.ints, two.data.arena.ints)
    for buffer in (arm.arena.floats, arm.arena.ints):
        assert not np.shares_memory(buffer, one.data.arena.floats)
    one.step(np.ones(arm.nv))
    two.step(np.ones(arm.nv))
    shared = [a for a in bound_arrays(one) if any(np.shares_memory(a, b)
                                                  for b in bound_arrays(two))]
    assert all(arm.arena.holds(a) for a in shared)  # only the Model's
    assert all(not a.flags.writeable for a in shared if a is not arm.gravity)


def test_state_copies_leave_the_arena_and_set_state_writes_into_it(arm):
    sim = Simulator(arm, 1e-3, "variational")
    for _ in range(5):
        sim.step(np.ones(arm.nv))
    saved = sim.get_state()
    assert not sim.data.arena.holds(saved.q)
    q = sim.state.q
    for _ in range(5):
        sim.step(np.ones(arm.nv))
    sim.set_state(saved)
    assert sim.state.q is q and np.array_equal(q, saved.q)
    assert sim.data.arena.holds(sim.integrator.p)


def test_a_process_models_contact_integrators_have_arenas_of_their_own():
    process = ProcessModel.from_scene(BALL, 1e-3)
    integrators = process._contact.integrators
    for k, integrator in enumerate(integrators):
        assert integrator.arena.holds(integrator._ws)
        assert integrator.arena.holds(integrator.servos.table)
        for other in integrators[k + 1:]:
            assert not np.shares_memory(integrator.arena.floats, other.arena.floats)


def test_contact_buffers_grown_past_their_capacity_leave_the_arena():
    """The documented exception: the compliant step's contact buffers double when a step
    fills them (no allocation per step); the grown ones are the integrator's own, and the
    compiled step is bound to them again (fused_stale)."""
    sim = Simulator.from_scene(BOX, 1e-3, max_contacts=1)
    first = sim.integrator._contact_int
    assert sim.data.arena.holds(first)
    for _ in range(3):
        assert sim.step().converged
    grown = sim.integrator._contact_int
    assert grown is not first and len(grown) >= 4 and not sim.data.arena.holds(grown)
    assert any(a is grown for a in bound_arrays(sim))


def test_the_state_views_are_kept_while_the_state_arrays_are_views_of_the_arena(arm):
    """Simulator.q and .v are read-only views kept from one read to the next (a controller
    reads them every step); their ``base`` is the arena's buffer, not the State's arrays."""
    sim = Simulator(arm, 1e-3, "euler")
    q, v = sim.q, sim.v
    sim.step()
    assert sim.q is q and sim.v is v and not q.flags.writeable
    assert np.array_equal(q, sim.state.q) and sim.data.arena.holds(q)


def test_a_ball_on_the_ground_steps_on_row_buffers_in_the_arena():
    sim = Simulator.from_scene(BALL, 1e-3)
    for _ in range(20):
        assert sim.step().converged
    assert sim.integrator._counts[1] > 0  # (rows this step: the ball touches)
    buffers = sim.integrator._buffers
    for array in (buffers.G, buffers.W, buffers.memory, *buffers.solver):
        assert sim.data.arena.holds(array)
