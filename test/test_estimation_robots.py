"""The process model through contact on legged robots its tests were not written for
(example-robot-data's Go2 and ANYmal C, in the standing scene of test_standing.py, falling
under zero effort onto their feet and knees, 0.15 and 0.3 s in): ``step`` is
``Simulator.step`` bit for bit, and ``jacobians`` (the implicit function theorem on the
contact solve) agrees with central differences of ``step``.

Where the differences are taken matters, and is why these states: a Hertz contact's force
grows as the penetration to the 3/2, so near first touch its derivative changes over a
distance of the penetration itself, and a difference step larger than that measures the
curvature, not the slope (on A1, 30 ms after its feet touch, the configuration columns differ
by 0.6 at eps 1e-6, 0.25 at 1e-7 and 2e-3 at 1e-8: quadratic in eps, the central difference's
error, the exact Jacobian unchanged). A joint exactly at its limit is a switch: Talos's
gripper at q = 0 matches the one-sided difference of the branch taken (4e-9), the other side
not. Lying still on the floor after the fall, Go2 has points touching by about 1e-7 m, and
a difference step of 1e-7 crosses them (one side differs by 1.1, the other by 0.04, the
central difference by 1e-4 at eps 1e-8 and 3e-5 at 1e-9, where round-off takes over): the
states here are ones where the differences converge, quadratically in eps."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from mbsim_ros.contact.standing import standing_scene
from mbsim_ros.estimation import ProcessModel
from mbsim_ros.model import example_robot_urdf
from mbsim_ros.scenarios import LEGGED
from mbsim_ros.sim import Simulator

DT = 1e-3
EXACT = {"tolerance": 1e-16, "max_iterations": 200}  # the root finder's error out of the way


def falling(label: str, steps: int) -> Simulator:
    with warnings.catch_warnings():  # (the loader's notes on these URDFs)
        warnings.simplefilter("ignore")
        scene = standing_scene(example_robot_urdf(LEGGED[label]))
    sim = Simulator.from_scene(scene, dt=DT)
    for _ in range(steps):
        assert sim.step().converged
    return sim


# (robot, steps of the fall, difference step): the central difference's own error at that
# step, from its decrease with eps (quadratic), is about 3e-8 (Go2) and 4e-8 (ANYmal C) of
# the largest entry; the bound is the acceptance, 1e-6
@pytest.mark.parametrize("label,steps,eps", [("go2", 150, 3e-8), ("anymal_c", 300, 1e-7)])
def test_contact_process_model_on_other_legged_robots(label, steps, eps):
    sim = falling(label, steps)
    nv = sim.model.nv
    u = np.zeros(nv)
    u[6:] = np.linspace(-2.0, 2.0, nv - 6)  # efforts on every joint
    held = sim.get_state().integrator  # the contacts' memory the step starts from
    process = ProcessModel.from_simulator(sim)
    process.hold_memory(held)
    x = process.x_from(sim.q, sim.v)
    x_next = process.step(x, u)
    assert sim.step(u).converged
    np.testing.assert_array_equal(x_next, process.x_from(sim.q, sim.v))
    assert sim.integrator._row_count >= 12  # in contact: the feet at least

    exact = ProcessModel(sim.model, DT, "compliant", **{**sim.integrator.options, **EXACT})
    exact.hold_memory(held)
    A, B = exact.jacobians(x, u)
    A_fd, B_fd = exact.finite_difference_jacobians(x, u, eps=eps, eps_u=1e-3)
    assert np.abs(A - A_fd).max() <= 1e-6 * np.abs(A_fd).max()
    assert np.abs(B - B_fd).max() <= 1e-6 * np.abs(B_fd).max()
    # the contact block is there: the next velocity depends on the base's height (in a free
    # fall it does not at all), by thousands per m per s
    assert np.abs(A[nv:, 2]).max() > 1e3
