"""Simulator.rollout: N steps in one compiled call (euler, variational) give the bits N
``step`` calls give, and the fused step (the step and the state's update in one compiled call)
gives the bits of the general path; a step that fails stops the rollout and says why."""
from __future__ import annotations

import numpy as np
import pytest

from mbsim_ros import Simulator
from mbsim_ros.config import resolve_urdf
from mbsim_ros.model import load_urdf, shipped_urdf

CASES = [("euler", {}), ("euler", {"velocity_terms": "explicit"}), ("variational", {}),
         ("variational", {"order": 4}), ("compliant", {})]


FLOATING = ("talos", "solo12")  # example-robot-data robots on a free-flyer root


def started(integrator: str, options: dict, robot: str = "arm7") -> Simulator:
    model = load_urdf(shipped_urdf() if robot == "arm7" else resolve_urdf(robot),
                      floating_base=robot in FLOATING)
    sim = Simulator(model, 1e-3, integrator, **options)
    rng = np.random.default_rng(4)
    sim.reset(sim.q.copy(), rng.standard_normal(model.nv))
    return sim


def torques(nv: int, steps: int) -> np.ndarray:
    return np.random.default_rng(5).normal(0.0, 2.0, (steps, nv))


@pytest.mark.parametrize("integrator, options", CASES)
def test_rollout_is_the_steps_bit_for_bit(integrator, options):
    rolled, stepped = started(integrator, options), started(integrator, options)
    taus = torques(rolled.model.nv, 300)
    Q, V = rolled.rollout(taus)
    for s, tau in enumerate(taus):
        assert stepped.step(tau).converged
        np.testing.assert_array_equal(Q[s], stepped.q)
        np.testing.assert_array_equal(V[s], stepped.v)
    assert rolled.steps == stepped.steps == 300 and rolled.t == stepped.t
    np.testing.assert_array_equal(rolled.acceleration, stepped.acceleration)
    np.testing.assert_array_equal(rolled.effort, stepped.effort)
    assert np.all(np.isfinite(Q)) and np.abs(Q - Q[0]).max() > 0.1  # it moved


@pytest.mark.parametrize("integrator, options", CASES[:4])
def test_fused_step_is_the_general_path_bit_for_bit(integrator, options):
    """The general path (sim.step's Python update after the integrator's step) is the one
    servos and actuators take; without them the fused step must land on the same bits."""
    fused, general = started(integrator, options, "panda"), started(integrator, options, "panda")
    general.data.fused = lambda state: None
    for tau in torques(fused.model.nv, 200):
        a, b = fused.step(tau), general.step(tau)
        assert a.converged and b.converged
        assert (a.iterations, a.residual, a.substeps) == (b.iterations, b.residual, b.substeps)
    for name in ("q", "v", "acceleration", "effort"):
        np.testing.assert_array_equal(getattr(fused, name), getattr(general, name))
    if integrator == "variational":
        np.testing.assert_array_equal(fused.integrator.p, general.integrator.p)


@pytest.mark.parametrize("robot", ["ur5", *FLOATING])
@pytest.mark.parametrize("integrator", ["euler", "variational"])
def test_rollout_and_fused_step_on_real_robots(robot, integrator):
    """The same bits on example-robot-data robots, free-flyer roots included (the quaternion
    update in the compiled commit): 100 rolled-out steps against 100 fused steps against 100
    steps of the general path, with random torques, falling under gravity."""
    rolled, fused, general = (started(integrator, {}, robot) for _ in range(3))
    general.data.fused = lambda state: None
    taus = torques(rolled.model.nv, 100)
    Q, V = rolled.rollout(taus)
    for s, tau in enumerate(taus):
        assert fused.step(tau).converged and general.step(tau).converged
        np.testing.assert_array_equal(Q[s], fused.q)
        np.testing.assert_array_equal(fused.q, general.q)
        np.testing.assert_array_equal(fused.v, general.v)
    np.testing.assert_array_equal(V[-1], general.v)
    np.testing.assert_array_equal(fused.acceleration, general.acceleration)
    assert np.abs(Q[-1] - Q[0]).max() > 1e-3  # it moved


def test_rollout_with_servos_steps_one_by_one_with_the_same_result():
    rolled, stepped = started("variational", {}), started("variational", {})
    for sim in (rolled, stepped):
        sim.servos.set_gains(p={"joint1": 50.0}, d={"joint1": 5.0})
        sim.servos.command(position={"joint1": 0.3})
    taus = torques(rolled.model.nv, 50)
    Q, _ = rolled.rollout(taus)
    for tau in taus:
        stepped.step(tau)
    np.testing.assert_array_equal(Q[-1], stepped.q)


def test_a_failing_step_stops_the_rollout_and_says_why():
    """Torques of 1e200 N m from step 12 on make the state overflow within two steps: the rows
    from the failed step on are NaN, the Simulator stays at the last good state and reports
    the failure."""
    sim = started("euler", {})
    taus = torques(sim.model.nv, 20)
    taus[12:] = 1e200
    Q, V = sim.rollout(taus)
    done = sim.steps
    assert 12 <= done < 20
    assert np.all(np.isfinite(Q[:done])) and np.all(np.isnan(Q[done:]))
    assert np.all(np.isnan(V[done:]))
    assert sim.failed is not None and not sim.failed.converged
    assert "diverged" in sim.failed.message
    np.testing.assert_array_equal(sim.q, Q[done - 1])
    with pytest.raises(RuntimeError, match="stopped"):
        sim.rollout(taus[:1])


@pytest.mark.parametrize("bad, match", [(np.zeros((3, 2)), "shape"),
                                         (np.full((3, 7), np.nan), "NaN")])
def test_bad_torques_are_refused_before_any_step(bad, match):
    sim = started("euler", {})
    with pytest.raises(ValueError, match=match):
        sim.rollout(bad)
    assert sim.steps == 0
