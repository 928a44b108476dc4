"""One argument for many arrays (mbsim_ros/layout.py, ArrayTable): the fused steps and the
convenience dynamics functions pass their arrays to the kernels as one table of addresses and
shapes. The views a kernel takes from a Simulator's table are the State's, the Data's, the
integrator's and the Model's arrays themselves; a table refuses an array a kernel could not
read as declared; what the callers check in Python before (lengths, types, finiteness) still
gives the same errors, and any float vector the same answer bit for bit."""
import numpy as np
import pytest

from mbsim_ros import Simulator
from mbsim_ros.dynamics import aba, crba, rnea
from mbsim_ros.dynamics.aba import aba_table
from mbsim_ros.dynamics.crba import crba_table
from mbsim_ros.dynamics.rnea import rnea_table
from mbsim_ros.dynamics.workspace import MODEL_ARRAYS, model_table, workspace
from mbsim_ros.integrators.euler import EULER_ARRAYS
from mbsim_ros.integrators.variational import VARIATIONAL_ARRAYS
from mbsim_ros.layout import ArrayTable
from mbsim_ros.model import load_urdf, shipped_urdf


@pytest.fixture(scope="module")
def arm():
    return load_urdf(shipped_urdf("arm7"))


def address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def expected_arrays(sim: Simulator) -> dict:
    """Each name a step's table declares -> the array of the Simulator it must point into."""
    m, state, data, integrator = sim.model, sim.state, sim.data, sim.integrator
    servos = integrator.servos
    named = {"joint_int": m.joint_int, "joint_real": m.joint_real, "gravity": m.gravity,
             "damping": m.damping, "friction": m.friction, "armature": m.armature,
             "q": state.q, "v": state.v, "acceleration": state.acceleration,
             "effort": state.effort, "q_next": data.q_next, "v_next": data.v_next,
             "bounds": data.bounds.packed, "servo": servos.table, "iq": servos.iq,
             "saturated": servos.saturated, "ws": integrator._ws}
    if sim.integrator_name == "euler":
        named.update(work=integrator._work, matrices=integrator._matrices,
                     ints=integrator._ints)
    else:
        named.update(Yb=integrator.Yb, substeps=integrator.substeps, p=integrator.p,
                     settings=integrator.settings, vws=integrator._vws,
                     p_next=integrator._p_next, stats=integrator._stats,
                     residual_out=integrator._residual)
    return named


@pytest.mark.parametrize("integrator, table", [("euler", EULER_ARRAYS),
                                               ("variational", VARIATIONAL_ARRAYS)])
def test_a_step_tables_views_are_the_simulators_arrays(arm, integrator, table):
    sim = Simulator(arm, 1e-3, integrator)
    views = table.unpack(sim.data.fused(sim.state)[2][0])
    named = expected_arrays(sim)
    assert set(views._fields) == set(named), "every declared array is named here"
    for name in views._fields:
        view, array = getattr(views, name), named[name]
        assert address(view) == address(array) and view.shape == array.shape, name
    sim.step(np.ones(arm.nv))  # the state the step wrote is the State's
    assert np.array_equal(views.q, sim.q) and np.array_equal(views.effort, np.ones(arm.nv))


def test_a_step_is_bound_again_to_a_new_state(arm):
    """set_state writes into the State's arrays (the table stays true); another State object
    gets a table of its own."""
    sim = Simulator(arm, 1e-3, "euler")
    first = sim.data.fused(sim.state)[2][0]
    sim.set_state(sim.get_state())
    assert sim.data.fused(sim.state)[2][0] is first
    sim.state = sim.get_state()
    views = EULER_ARRAYS.unpack(sim.data.fused(sim.state)[2][0])
    assert address(views.q) == address(sim.state.q)


def test_the_model_table_points_at_the_models_arrays(arm):
    views = MODEL_ARRAYS.unpack(model_table(arm))
    for name, array in (("joint_int", arm.joint_int), ("joint_real", arm.joint_real),
                        ("gravity", arm.gravity), ("armature", arm.armature),
                        ("ws", workspace(arm))):
        assert address(getattr(views, name)) == address(array), name


def test_a_table_refuses_what_a_kernel_could_not_read():
    table = ArrayTable("Checked", [("x", "float64", 1), ("k", "int64", 2)], __name__)
    x, k = np.zeros(6), np.zeros((2, 3), dtype=np.int64)
    assert table.table((x, k)).tolist() == [address(x), 6, address(k), 2, 3]
    for bad in ((x[::2], k), (x.astype(np.float32), k), (x, k.T), (x, k.astype(float)),
                (x.reshape(2, 3), k), ([0.0] * 6, k)):
        with pytest.raises(ValueError, match="must be a C-contiguous"):
            table.table(bad)
    with pytest.raises(ValueError, match="2 arrays declared, 1 given"):
        table.table((x,))
    with pytest.raises(ValueError, match="declared twice"):
        ArrayTable("Twice", [("x", "float64", 1), ("x", "int64", 1)], __name__)


def test_any_float_vector_gives_the_same_bits(arm):
    """The convenience functions' kernels take C-contiguous writable float64 vectors; anything
    else (a list, float32, a strided or read-only view) is converted first, same answer."""
    rng = np.random.default_rng(4)
    q, v, tau = rng.uniform(-1, 1, (3, arm.nv))
    a, b, M = aba(arm, q, v, tau), rnea(arm, q, v, tau), crba(arm, q)
    strided = np.zeros(2 * arm.nv)
    strided[::2] = q
    read_only = q.copy()
    read_only.setflags(write=False)
    for q_like in (list(q), strided[::2], read_only, q[::-1][::-1]):
        assert np.array_equal(aba(arm, q_like, v, tau), a)
        assert np.array_equal(rnea(arm, q_like, v, tau), b)
        assert np.array_equal(crba(arm, q_like), M)
    single = q.astype(np.float32)
    assert np.array_equal(aba(arm, single, v, tau), aba(arm, single.astype(float), v, tau))
    assert np.array_equal(crba(arm, single), crba(arm, single.astype(float)))
    for kernel in (aba_table, rnea_table, crba_table):  # nothing compiled for those inputs
        assert len(kernel.signatures) == 1, kernel


def test_bad_lengths_and_values_still_name_the_argument(arm):
    q, v = arm.neutral(), np.zeros(arm.nv)
    for function in (aba, rnea):
        with pytest.raises(ValueError, match=r"^q must have shape \(7,\), got \(8,\)"):
            function(arm, np.zeros(8), v, v)
        with pytest.raises(ValueError, match=r"must have shape \(7,\), got \(6,\)"):
            function(arm, q, v, np.zeros(6))
        bad = v.copy()
        bad[3] = np.nan
        with pytest.raises(ValueError, match="^v contains NaN"):
            function(arm, q, bad, v)
    with pytest.raises(ValueError, match=r"^q must have shape \(7,\)"):
        crba(arm, np.zeros(6))


@pytest.mark.parametrize("integrator", ["euler", "variational"])
def test_a_bad_torque_is_refused_before_the_step(arm, integrator):
    sim = Simulator(arm, 1e-3, integrator)
    q = sim.q.copy()
    for bad, match in ((np.zeros(6), r"tau must have shape \(7,\)"),
                       (np.zeros(8), r"tau must have shape \(7,\)"),
                       (np.zeros((7, 1)), "tau must have shape"),
                       (np.full(7, np.inf), "tau contains NaN or infinity")):
        with pytest.raises(ValueError, match=match):
            sim.step(bad)
    assert sim.steps == 0 and np.array_equal(sim.q, q) and sim.failed is None
    strided = np.zeros(14)
    strided[::2] = 1.0
    other = Simulator(arm, 1e-3, integrator)
    sim.step(strided[::2]), other.step(np.ones(7))
    assert np.array_equal(sim.q, other.q) and np.array_equal(sim.v, other.v)
