"""A filter that carries the contact memory itself (ProcessModel.memory): from the scene's start
with no memory, each step held at the memory the process model's own previous step ended with
is the Simulator's step bit for bit through Solo12's touch-downs, where holding none differs
(test_estimation_contact: up to 5 of 300 steps)."""
import numpy as np
import pytest

from test_estimation_contact import INTEGRATORS, scene_run, state_of

from mbsim_ros.estimation import ProcessModel


@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_carried_memory_is_the_simulators(integrator):
    sim, effort = scene_run("solo12", integrator)
    process = ProcessModel.from_simulator(sim)
    x = process.x_from(sim.q, sim.v)
    memory = None  # a fresh Simulator's
    for _ in range(300):
        u = effort(sim.q, sim.v)
        process.hold_memory(memory)
        x = process.step(x, u)
        memory = process.memory()
        sim.step(u)
        np.testing.assert_array_equal(x, state_of(sim))
    saved = sim.get_state().integrator
    np.testing.assert_array_equal(memory["memory"], saved["memory"])


def test_memory_needs_a_contact_integrator():
    sim, _ = scene_run("solo12", "compliant")
    arm = ProcessModel(sim.model, sim.dt, "euler")
    with pytest.raises(ValueError, match="nothing is held"):
        arm.memory()
