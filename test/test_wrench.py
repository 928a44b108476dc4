"""External wrenches (Simulator.set_wrench) against analytic answers: a free body pushed by a
constant force accelerates at F / m whatever the integrator; a rod held level by the tip force
that balances its weight stays at rest; a pure torque spins a free body at I^-1 tau."""
import numpy as np
import pytest

from mbsim_ros.model import load_urdf
from mbsim_ros.scenarios import free_body_urdf, one_joint_urdf
from mbsim_ros.sim import Simulator


@pytest.mark.parametrize("integrator", ["euler", "variational", "compliant"])
def test_a_free_body_pushed_accelerates_at_f_over_m(integrator):
    model = load_urdf(free_body_urdf(0.0), floating_base=True)
    model.gravity = [0.0, 0.0, 0.0]
    sim = Simulator(model, 1e-3, integrator)
    force = np.array([3.0, -1.5, 6.0])
    sim.set_wrench("body", force)
    for _ in range(100):
        assert sim.step().converged
    np.testing.assert_allclose(sim.v[:3], force / 1.5 * 0.1, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sim.v[3:], 0.0, atol=1e-12)
    sim.clear_wrench()
    v = sim.v.copy()
    sim.step()
    np.testing.assert_allclose(sim.v, v, atol=1e-12)


def test_a_pure_torque_spins_a_free_body():
    model = load_urdf(free_body_urdf(0.0), floating_base=True)
    model.gravity = [0.0, 0.0, 0.0]
    sim = Simulator(model, 1e-3, "euler")
    sim.set_wrench("body", [0, 0, 0], torque=[0.0, 0.0, 0.065])
    sim.step()
    np.testing.assert_allclose(sim.v[3:], [0.0, 0.0, 1e-3], rtol=1e-9, atol=1e-14)


def test_a_rod_held_by_its_tip_force_stays_level():
    """2 kg, centre 0.5 m out: the weight's moment 9.81 N m about the hinge is balanced by
    9.81 N up at the tip (1 m)."""
    sim = Simulator(load_urdf(one_joint_urdf(0.0)), 1e-3, "variational")
    sim.set_wrench("rod", [0.0, 0.0, 9.81], point=[1.0, 0.0, 0.0])
    for _ in range(200):
        sim.step()
    assert abs(sim.q[0]) < 1e-9 and abs(sim.v[0]) < 1e-9
    sim.clear_wrench("rod")
    for _ in range(50):
        sim.step()
    assert sim.v[0] > 0.1  # falls (about +y: x toward -z) once released


def test_an_unknown_link_is_named():
    sim = Simulator(load_urdf(one_joint_urdf(0.0)), 1e-3, "euler")
    with pytest.raises(ValueError, match="no body named 'rood'.*rod"):
        sim.set_wrench("rood", [0, 0, 1])
