"""Simulator with the semi-implicit Euler baseline: analytic pendulum periods, free fall,
divergence handling and bad input."""
import numpy as np
import pytest
from scipy.special import ellipk

from mbsim_ros import Simulator
from mbsim_ros.dynamics import crba
from mbsim_ros.model import load_urdf, shipped_urdf

G, L = 9.81, 1.0  # pendulum.urdf: a 1 kg point mass 1 m below the pivot


def measured_period(sim, q0, seconds):
    sim.reset([q0])
    t, q = [], []
    while sim.t < seconds:
        sim.step()
        t.append(sim.t)
        q.append(sim.q[0])
    t, q = np.array(t), np.array(q)
    # downward zero crossings of q, linearly interpolated
    k = np.flatnonzero((q[:-1] > 0) & (q[1:] <= 0))
    crossings = t[k] + (t[k + 1] - t[k]) * q[k] / (q[k] - q[k + 1])
    return np.diff(crossings).mean()


@pytest.mark.parametrize("amplitude", [0.01, 1.0, 2.5])
def test_pendulum_period_matches_the_elliptic_integral(amplitude):
    """T = 4 sqrt(L/g) K(sin^2(theta0/2)). Symplectic Euler's phase error is O(dt^2): at
    dt = 1e-4 the period is within 1e-5 relative (the URDF's 1e-6 kg m^2 rotational inertia
    adds 1e-6)."""
    sim = Simulator(load_urdf(shipped_urdf("pendulum")), dt=1e-4, integrator="euler")
    expected = 4.0 * np.sqrt(L / G) * ellipk(np.sin(amplitude / 2) ** 2)
    assert measured_period(sim, amplitude, 3.2 * expected) == pytest.approx(expected, rel=1e-5)


def test_euler_energy_is_bounded_on_the_pendulum():
    """The pendulum's Hamiltonian is separable (constant inertia), so semi-implicit Euler is
    symplectic there: its energy error oscillates at O(dt) and does not drift. (With a
    configuration-dependent mass matrix it is not symplectic; that comparison is the
    variational integrator's.)"""
    sim = Simulator(load_urdf(shipped_urdf("pendulum")), dt=1e-3, integrator="euler")
    sim.reset([1.0])
    e0 = sim.energy()
    energies = np.empty(60000)
    for k in range(energies.size):
        sim.step()
        energies[k] = sim.energy()
    error = np.abs(energies - e0)
    period = 2100  # steps in one period (2.09 s), so the window means average whole cycles
    assert 1e-4 < error.max() < 0.02 * G * L  # O(dt g L), never exactly zero
    assert abs(energies[-period:].mean() - energies[:period].mean()) < 0.02 * error.max()


@pytest.mark.parametrize("integrator", ["euler", "variational"])
def test_free_flyer_falls_with_g(integrator):
    model = load_urdf(shipped_urdf("pendulum"), floating_base=True)
    sim = Simulator(model, dt=1e-3, integrator=integrator)
    sim.reset(model.neutral(), np.zeros(model.nv))
    n = 1000
    for _ in range(n):
        sim.step()
    # the whole body falls (joint1 at rest). Symplectic Euler: -g dt^2 n (n+1) / 2; the
    # trapezoidal variational integrator is exact for constant forces: -g t^2 / 2
    expected = -G * 1e-6 * n * (n + 1) / 2 if integrator == "euler" else -G / 2
    assert sim.q[2] == pytest.approx(expected, rel=1e-10)
    assert sim.t == pytest.approx(1.0, abs=1e-15)


def test_damping_removes_energy():
    model = load_urdf(shipped_urdf("arm7"))
    sim = Simulator(model, dt=1e-3, integrator="euler")
    model.gravity = [0, 0, 0]
    v0 = np.full(7, 0.5)
    sim.reset(v=v0)
    e0 = sim.energy()
    assert e0 == pytest.approx(0.5 * v0 @ crba(model, model.neutral()) @ v0)
    for _ in range(500):
        sim.step()
    assert sim.energy() < 0.9 * e0  # damping 0.1 N m s on every joint


@pytest.mark.parametrize("integrator, dt, failure", [("euler", 1e3, "diverged"),
                                                      ("variational", 1e-3, "did not converge")])
def test_a_failed_step_stops_and_keeps_the_last_good_state(integrator, dt, failure):
    model = load_urdf(shipped_urdf("pendulum"))
    sim = Simulator(model, dt=dt, integrator=integrator)  # Euler: dt * a overflows below
    sim.bounds.speed[:] = np.inf  # the step whose result is not finite (the divergence guard,
    sim.reset([0.3])              # which would stop a 1000 s step first: test_divergence.py)
    assert sim.step().converged
    q_good, t_good = sim.q.copy(), sim.t
    model.gravity = [0.0, 0.0, -1e306]
    info = sim.step()
    assert not info.converged and failure in info.message
    np.testing.assert_array_equal(sim.q, q_good)
    assert np.all(np.isfinite(sim.v)) and sim.t == t_good
    with pytest.raises(RuntimeError, match=f"stopped.*{failure}"):
        sim.step()
    model.gravity = [0.0, 0.0, -9.81]
    sim.reset([0.3])
    assert sim.step().converged


def test_state_views_are_read_only():
    sim = Simulator(load_urdf(shipped_urdf("pendulum")))
    with pytest.raises(ValueError):
        sim.q[0] = 1.0


def test_bad_input():
    model = load_urdf(shipped_urdf("arm7"))
    with pytest.raises(ValueError, match="dt must be"):
        Simulator(model, dt=0.0)
    with pytest.raises(ValueError, match="unknown integrator 'rk4'.*euler"):
        Simulator(model, integrator="rk4")
    with pytest.raises(ValueError,
                       match=r"tolerance: unknown option; valid options here: velocity_terms"):
        Simulator(model, integrator="euler", tolerance=1e-9)
    sim = Simulator(model)
    with pytest.raises(ValueError, match="tau must have shape"):
        sim.step(np.zeros(6))
    with pytest.raises(ValueError, match="tau contains NaN"):
        sim.step(np.full(7, np.nan))
    with pytest.raises(ValueError, match="q must have shape"):
        sim.reset(np.zeros(3))
    with pytest.raises(ValueError, match="v contains NaN"):
        sim.reset(None, np.full(7, np.nan))
    assert sim.steps == 0 and sim.step().converged
