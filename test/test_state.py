"""The Simulator's State (mbsim_ros/state.py): get_state / set_state resume bit for bit, in
the same Simulator and in a new one, for every integrator (servos, contact and actuators
active); reset() returns to where the Simulator started; every step returns its own StepInfo;
two Simulators on one Model share nothing mutable."""
from pathlib import Path

import numpy as np
import pytest

from mbsim_ros.actuators import Actuators
from mbsim_ros.integrators import StepInfo
from mbsim_ros.model import load_urdf, shipped_urdf
from mbsim_ros.sim import Simulator

ROOT = Path(__file__).resolve().parents[1]
BALL_DROP = ROOT / "config" / "scenes" / "ball_drop.yaml"
FREE = [("euler", {}), ("euler", {"velocity_terms": "explicit"}), ("variational", {}),
        ("variational", {"order": 4})]
CONTACT = [("compliant", {}), ("rigid", {}), ("rigid", {"solver": "pivoting"})]


@pytest.fixture(scope="module")
def arm():
    return load_urdf(shipped_urdf("arm7"))


def driven(sim: Simulator) -> Simulator:
    """A PID servo on the first joint with a saturating effort limit, a delayed and lagged
    command on every joint: every piece of memory a State has to carry."""
    model = sim.model
    first = next(n for n, k in zip(model.joint_names, model.joint_kinds) if k != "free_flyer")
    sim.servos.set_gains(p={first: 400.0}, d={first: 5.0}, i={first: 50.0})
    sim.servos.set_effort_limits({first: 30.0})
    sim.servos.command(position={first: 0.8})
    sim.actuators = Actuators(model, sim.dt, delay_ticks=3,
                              bandwidth={first: 80.0})
    return sim


def run(sim: Simulator, steps: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty((steps, sim.model.nq + sim.model.nv))
    for k in range(steps):
        info = sim.step(rng.normal(0.0, 2.0, sim.model.nv))
        assert info.converged, info.message
        out[k, :sim.model.nq], out[k, sim.model.nq:] = sim.q, sim.v
    return out


def check_round_trip(make) -> None:
    sim = driven(make())
    run(sim, 200, seed=1)
    saved = sim.get_state()
    first = run(sim, 1000, seed=2)
    t_end = sim.t
    sim.set_state(saved)
    assert sim.t == saved.t
    again = run(sim, 1000, seed=2)
    assert np.array_equal(first, again)
    assert sim.t == t_end
    other = driven(make())
    other.set_state(saved)
    elsewhere = run(other, 1000, seed=2)
    assert np.array_equal(first, elsewhere)
    # the saved State is a copy: running on did not change it
    sim.set_state(saved)
    assert np.array_equal(run(sim, 1000, seed=2), first)


@pytest.mark.parametrize("integrator,options", FREE, ids=lambda x: str(x))
def test_round_trip_is_bit_identical_without_contact(arm, integrator, options):
    check_round_trip(lambda: Simulator(arm, 1e-3, integrator, **options))


@pytest.mark.parametrize("integrator,options", CONTACT, ids=lambda x: str(x))
def test_round_trip_is_bit_identical_with_contact(integrator, options):
    def make():
        sim = Simulator.from_scene(BALL_DROP, 1e-3, integrator, **options)
        assert sim.integrator.models_contact
        return sim
    sim = make()
    run(sim, 400, seed=5)
    assert sim.contacts(), "the ball and the brick rest on the floor by now"
    check_round_trip(make)


def test_set_state_refuses_a_state_of_another_model(arm):
    sim = Simulator(arm, 1e-3)
    other = Simulator(load_urdf(shipped_urdf("double_pendulum")), 1e-3)
    with pytest.raises(ValueError, match="shape"):
        other.set_state(sim.get_state())
    with pytest.raises(ValueError, match="dt"):
        Simulator(arm, 2e-3).set_state(sim.get_state())


def test_reset_returns_to_the_scene_pose():
    """A scene's ball and brick start at their poses; reset() goes back there (it used to put
    every model at the neutral configuration: the brick inside the floor, launched at 24 m/s)
    and the run replays bit for bit."""
    sim = Simulator.from_scene(BALL_DROP, 1e-3, "compliant")
    start_q, start_v = sim.q.copy(), sim.v.copy()
    first = run(sim, 300, seed=3)
    assert not np.array_equal(sim.q, start_q)
    sim.reset()
    assert np.array_equal(sim.q, start_q) and np.array_equal(sim.v, start_v)
    assert sim.t == 0.0 and sim.steps == 0
    assert np.array_equal(run(sim, 300, seed=3), first)


def test_reset_without_arguments_returns_to_the_start(arm):
    sim = Simulator(arm, 1e-3, "variational")
    q0 = sim.q.copy()
    for _ in range(100):
        sim.step(np.ones(arm.nv))
    sim.reset()
    assert np.array_equal(sim.q, q0) and not np.any(sim.v)


def test_a_step_info_describes_its_step_and_a_copy_keeps_it(arm):
    """A step that succeeds on the compiled path reports through the Simulator's record of its
    last step (filled in place, no object per step): it reads what the general path's own
    StepInfo says of the same step, and ``copy()`` keeps a step's record from the next."""
    for integrator, options in (("euler", {}), ("variational", {}), ("variational", {"order": 4})):
        fused, general = (Simulator(arm, 1e-3, integrator, **options) for _ in range(2))
        general.data.fused = lambda state: None
        kept, owns = [], []
        for k in range(3):
            tau = np.full(arm.nv, 5.0 * k)
            info, own = fused.step(tau), general.step(tau)
            assert info == own and repr(info) == repr(own)
            kept.append(info.copy())
            owns.append(own)
            assert type(kept[-1]) is StepInfo
        assert kept == owns, "each copy still says what its own step did"
        if integrator == "variational":
            assert all(info.iterations > 0 for info in kept)
        kept[0].iterations = -1
        assert kept[1].iterations != -1


def test_two_simulators_on_one_model_share_nothing_mutable(arm):
    """Interleaved steps of two Simulators on one Model give the results each gives alone."""
    for integrator in ("euler", "variational"):
        alone = [Simulator(arm, 1e-3, integrator) for _ in range(2)]
        v0 = [np.full(arm.nv, 0.3), np.full(arm.nv, -0.7)]
        for sim, v in zip(alone, v0):
            sim.reset(v=v)
        solo = [run(sim, 300, seed=k) for k, sim in enumerate(alone)]
        pair = [Simulator(arm, 1e-3, integrator) for _ in range(2)]
        for sim, v in zip(pair, v0):
            sim.reset(v=v)
        rngs = [np.random.default_rng(k) for k in range(2)]
        together = [np.empty_like(s) for s in solo]
        for step in range(300):
            for k, sim in enumerate(pair):
                sim.step(rngs[k].normal(0.0, 2.0, arm.nv))
                together[k][step] = np.concatenate([sim.q, sim.v])
        for a, b in zip(solo, together):
            assert np.array_equal(a, b)


@pytest.mark.parametrize("integrator,old,new,value", [
    ("variational", "root_finder", "solver", "newton"),
    ("compliant", "qp_solver", "solver", "clarabel"),
    ("compliant", "interior_iterations", "max_iterations", 30),
    ("rigid", "iterations", "max_iterations", 30)])
def test_the_integrators_share_option_names(arm, integrator, old, new, value):
    """One contract (docs/INTEGRATORS.md): solver, max_iterations, tolerance; an old name
    still works with a DeprecationWarning naming the new one; an unknown option is a
    ValueError that lists the valid ones."""
    with pytest.warns(DeprecationWarning, match=f"'{old}' is now '{new}'"):
        old_way = Simulator(arm, 1e-3, integrator, **{old: value})
    new_way = Simulator(arm, 1e-3, integrator, **{new: value})
    for sim in (old_way, new_way):
        for _ in range(20):
            sim.step(np.ones(arm.nv))
    assert np.array_equal(old_way.q, new_way.q)
    for name in ("solver", "max_iterations", "tolerance"):
        assert name in __import__("mbsim_ros.integrators.base", fromlist=["x"]) \
            .integrator_options(integrator)
    with pytest.raises(ValueError,
                       match=r"bogus: unknown option; valid options here: .*max_iterations"):
        Simulator(arm, 1e-3, integrator, bogus=1)
