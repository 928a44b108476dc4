"""The variational integrator: DRNEA against an independently computed discrete action, its
exact Jacobian against finite differences, convergence order, energy, momentum, bad input."""
import numpy as np
import pinocchio as pin
import pytest

from conftest import independent_discrete_lagrangian, pinocchio_model, random_configuration
from mbsim_ros import Simulator
from mbsim_ros.dynamics import del_jacobian, del_residual, difference, energy, integrate
from mbsim_ros.model import chain_urdf, load_urdf, shipped_urdf

DT = 1e-3


def nearby(model, rng, q, scale):
    return integrate(model, q, rng.normal(size=model.nv) * scale)


CASES = [("chain12", lambda: chain_urdf(12), False),
         ("arm7_damped", lambda: str(shipped_urdf("arm7")), False),
         ("arm7_floating", lambda: str(shipped_urdf("arm7")), True)]


@pytest.mark.parametrize("label, source_fn, floating", CASES, ids=[c[0] for c in CASES])
def test_drnea_is_the_gradient_of_the_discrete_action(label, source_fn, floating):
    source = source_fn()
    model = load_urdf(source, floating_base=floating)
    pm = pinocchio_model(source, floating)
    data = pm.createData()
    rng = np.random.default_rng(11)
    for _ in range(4):
        q = random_configuration(model, rng)
        q_prev, q_next = nearby(model, rng, q, 2 * DT), nearby(model, rng, q, 2 * DT)
        ours = del_residual(model, DT, q_prev, q, q_next)
        # forcing is not part of the action: joint damping -c (x_prev + x_next) / 2
        forcing = -0.5 * model.damping * (difference(model, q_prev, q)
                                          + difference(model, q, q_next))
        eps = 1e-6
        gradient = np.empty(model.nv)
        for k in range(model.nv):
            e = np.zeros(model.nv)
            e[k] = eps
            plus, minus = integrate(model, q, e), integrate(model, q, -e)
            action = [independent_discrete_lagrangian(pm, data, q_prev, qq, DT)
                      + independent_discrete_lagrangian(pm, data, qq, q_next, DT)
                      for qq in (plus, minus)]
            gradient[k] = (action[0] - action[1]) / (2 * eps)
        assert np.abs(ours - forcing - gradient).max() < 1e-6 * max(1.0, np.abs(gradient).max())


@pytest.mark.parametrize("label, source_fn, floating", CASES, ids=[c[0] for c in CASES])
def test_exact_jacobian_matches_finite_differences(label, source_fn, floating):
    model = load_urdf(source_fn(), floating_base=floating)
    rng = np.random.default_rng(12)
    for scale in (2 * DT, 0.3):  # a normal step, and a large relative motion
        q = random_configuration(model, rng)
        q_prev, q_next = nearby(model, rng, q, scale), nearby(model, rng, q, scale)
        J = del_jacobian(model, DT, q, q_next)
        eps = 1e-7
        J_fd = np.empty_like(J)
        for k in range(model.nv):
            e = np.zeros(model.nv)
            e[k] = eps
            J_fd[:, k] = (del_residual(model, DT, q_prev, q, integrate(model, q_next, e))
                          - del_residual(model, DT, q_prev, q, integrate(model, q_next, -e))) \
                / (2 * eps)
        assert np.abs(J - J_fd).max() < 1e-6 * np.abs(J_fd).max()


def run(sim, steps, tau=None):
    qs = [sim.q.copy()]
    for _ in range(steps):
        info = sim.step(tau)
        assert info.converged, info.message
        qs.append(sim.q.copy())
    return np.array(qs)


@pytest.mark.parametrize("root_finder", ["riqn", "newton", "broyden"])
def test_converged_steps_satisfy_the_del_equation(root_finder):
    model = load_urdf(shipped_urdf("arm7"))
    sim = Simulator(model, dt=DT, integrator="variational", solver=root_finder,
                    tolerance=1e-11)
    sim.reset(np.full(7, 0.4), np.linspace(-1, 1, 7))
    tau = np.linspace(-3, 3, 7)
    qs = run(sim, 30, tau)
    for k in range(1, 30):
        r = del_residual(model, DT, qs[k - 1], qs[k], qs[k + 1], tau, tau)
        assert np.abs(r).max() < 1e-9  # impulses of ~1e-2 N m s: tolerance 1e-11 relative


def test_root_finders_and_guesses_agree():
    model = load_urdf(chain_urdf(8))
    q0 = np.full(8, 0.3)
    finals = []
    for options in ({"solver": "riqn", "initial_guess": "IG1"},
                    {"solver": "riqn", "initial_guess": "IG3", "anderson": 3},
                    {"solver": "newton"}, {"solver": "broyden"}):
        sim = Simulator(model, dt=DT, integrator="variational", tolerance=1e-12, **options)
        sim.reset(q0)
        finals.append(run(sim, 200)[-1])
    for q in finals[1:]:
        np.testing.assert_allclose(q, finals[0], atol=1e-9)


def rk4_reference(pm, q0, v0, t_end, h):
    """pinocchio ABA with classical RK4 (a reference independent of our code)."""
    data = pm.createData()

    def f(x):
        q, v = x[:pm.nq], x[pm.nq:]
        return np.concatenate([v, pin.aba(pm, data, q, v, np.zeros(pm.nv))])

    x = np.concatenate([q0, v0])
    for _ in range(int(round(t_end / h))):
        k1 = f(x)
        k2 = f(x + 0.5 * h * k1)
        k3 = f(x + 0.5 * h * k2)
        k4 = f(x + h * k3)
        x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return x[:pm.nq]


@pytest.mark.parametrize("order, composition", [(2, "yoshida"), (4, "yoshida"),
                                                (4, "suzuki")])
def test_convergence_order_against_rk4(order, composition):
    source = str(shipped_urdf("double_pendulum"))
    model, pm = load_urdf(source), pin.buildModelFromUrdf(source)
    q0, v0, t_end = np.array([1.2, -0.6]), np.array([0.5, 1.0]), 0.4
    reference = rk4_reference(pm, q0, v0, t_end, 2e-5)
    errors = []
    for dt in (8e-3, 4e-3, 2e-3):
        sim = Simulator(model, dt=dt, integrator="variational", order=order,
                        composition=composition, tolerance=1e-13)
        sim.reset(q0, v0)
        run(sim, int(round(t_end / dt)))
        errors.append(np.abs(sim.q - reference).max())
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    expected = 2.0 ** order
    assert np.all(ratios > 0.8 * expected) and np.all(ratios < 1.25 * expected), ratios


def test_a_later_substep_guesses_from_the_last_one_to_third_order():
    """A substep that starts where the last one (length h_last, increment x_last) ended guesses
    x(h) = h v + (h / h_last)^2 (h_last v - x_last), the parabola through x(-h_last) = -x_last
    (the step is symmetric): on the curled 10-link chain its error shrinks 8x per halving of
    the steps (third order), IG2's h v 4x (second order); at 1 ms it is 13-17x closer."""
    from mbsim_ros.integrators.variational import extrapolate_guess

    model = load_urdf(chain_urdf(10, **CHAIN10))
    ours, ig2 = [], []
    for h in (4e-3, 2e-3, 1e-3):
        first = Simulator(model, dt=h, integrator="variational", tolerance=1e-13)
        first.reset(np.full(10, 0.3), np.linspace(-1.0, 1.0, 10))
        for _ in range(int(round(0.2 / h))):  # under way: ~1 rad/s at every joint
            assert first.step().converged
        q0 = first.q.copy()
        assert first.step().converged
        x_last, v = difference(model, q0, first.q), first.v.copy()
        errors = ([], [])
        for ratio in (1.0, 1.5):  # Suzuki's second substep; a longer one
            second = Simulator(model, dt=ratio * h, integrator="variational", tolerance=1e-13)
            second.reset(first.q, v)  # p = (M + a) v: the momentum the first ended with
            assert second.step().converged
            x = difference(model, first.q, second.q)
            guess = np.empty(model.nv)
            extrapolate_guess(ratio * h, h, v, x_last, guess)
            errors[0].append(np.abs(guess - x).max())
            errors[1].append(np.abs(ratio * h * v - x).max())
        ours.append(errors[0])
        ig2.append(errors[1])
    ours, ig2 = np.array(ours), np.array(ig2)
    assert np.all(ours[-1] < ig2[-1] / 10)
    assert np.all(ours[:-1] / ours[1:] > 6.5) and np.all(ig2[:-1] / ig2[1:] < 4.5)


def energy_errors(model, q0, steps, **options):
    """(E - E0) / (E0 - E_rest) per step: the error relative to the energy the chain was
    released with (potential above the hanging rest configuration)."""
    sim = Simulator(model, dt=DT, **options)
    sim.reset(q0)
    e0 = sim.energy()
    scale = e0 - energy(model, model.neutral(), np.zeros(model.nv))[1]
    errors = np.full(steps, np.inf)
    for k in range(steps):
        if not sim.step().converged:
            break
        errors[k] = (sim.energy() - e0) / scale
    return errors


def assert_bounded_without_drift(errors, band_limit):
    band = np.abs(errors).max()
    assert band < band_limit, band
    n = errors.size
    first_band = np.abs(errors[: n // 10]).max()
    assert abs(errors[-n // 10:].mean() - errors[: n // 10].mean()) < first_band
    return band


CHAIN10 = dict(axes="y", link_length=1.0, link_mass=1.0)  # 10 x (1 m, 1 kg), planar


def test_energy_of_a_released_chain_is_bounded_without_drift():
    """Passive 10-link chain, no damping, gravity on, released straight at 0.3 rad from the
    vertical: 100,000 steps of 1 ms. Measured band 4.8e-7 (docs/VARIATIONAL.md)."""
    model = load_urdf(chain_urdf(10, **CHAIN10))
    q0 = np.r_[0.3, np.zeros(9)]
    assert_bounded_without_drift(energy_errors(model, q0, 100_000, integrator="variational"),
                                 1e-5)


def test_energy_of_a_curled_chain_second_and_fourth_order_and_euler():
    """The same chain curled by 0.3 rad at every joint (3 rad in all): a violent whip whose
    fastest motions make the second-order band 1.1e-3; the fourth-order composition brings it
    to 3e-5; semi-implicit Euler loses it (diverges) within 10 s."""
    model = load_urdf(chain_urdf(10, **CHAIN10))
    q0 = np.full(10, 0.3)
    band2 = assert_bounded_without_drift(
        energy_errors(model, q0, 100_000, integrator="variational"), 2e-3)
    band4 = np.abs(energy_errors(model, q0, 30_000, integrator="variational", order=4)).max()
    assert band4 < 1e-4 and band4 < band2 / 10
    suzuki = energy_errors(model, q0, 30_000, integrator="variational", order=4,
                           composition="suzuki")
    assert np.abs(suzuki).max() < band4  # five substeps, the largest backwards 0.66 dt
    euler = energy_errors(model, q0, 10_000, integrator="euler")
    assert np.abs(euler).max() > 10 * band2  # inf when it diverged


def order_4_simulator(model, dt, given_back=True, **options):
    """An order-4 Simulator; given_back=False switches off the residual given back to the
    momentum (the order-4 step before it did so)."""
    from mbsim_ros.integrators.variational import S_GIVE_BACK

    sim = Simulator(model, dt=dt, integrator="variational", order=4, **options)
    sim.integrator.settings[S_GIVE_BACK] = int(given_back)
    return sim


@pytest.mark.parametrize("composition", ["yoshida", "suzuki"])
def test_order_4_gives_each_substeps_residual_back_to_the_momentum(composition):
    """A substep's x solves the DEL exactly for p_k - r (r: the residual its solve left), so
    p_k+1 + r is its momentum to first order: one step of the curled chain at 4 ms solved to
    1e-6 against the same step solved to 1e-14. Measured: the momentum's error 60x (Yoshida)
    and 130x (Suzuki) smaller with r given back; q's within 3x either way (1e-8 rad)."""
    model = load_urdf(chain_urdf(10, **CHAIN10))
    q0, v0 = np.full(10, 0.3), np.linspace(-1.0, 1.0, 10)
    ends = {}
    for key, tolerance, given_back in (("exact", 1e-14, False), ("kept", 1e-6, False),
                                       ("given back", 1e-6, True)):
        sim = order_4_simulator(model, 4e-3, given_back, composition=composition,
                                tolerance=tolerance)
        sim.reset(q0, v0)
        assert sim.step().converged
        ends[key] = sim.q.copy(), sim.integrator.p.copy()
    (q, p), errors = ends.pop("exact"), {}
    for key, (q_end, p_end) in ends.items():
        errors[key] = np.abs(q_end - q).max(), np.abs(p_end - p).max()
    assert errors["given back"][1] < errors["kept"][1] / 30, errors
    assert errors["given back"][0] < 1e-7 and errors["kept"][0] < 1e-7, errors


def test_order_4_solved_to_1e_8_keeps_the_energy_of_1e_10():
    """Order 4's default tolerance (1e-8) with the residual given back: the released chain at
    4 ms (Suzuki) over 20 s keeps its energy as well as the solve to 1e-10 did without it
    (measured band 4.9e-10 against 9.9e-10), where 1e-8 without it drifts (band 5.0e-8)."""
    model = load_urdf(chain_urdf(10, **CHAIN10))
    q0 = np.r_[0.3, np.zeros(9)]
    bands = {}
    for key, tolerance, given_back in (("default", 0.0, True), ("1e-10 kept", 1e-10, False),
                                       ("1e-8 kept", 1e-8, False)):
        sim = order_4_simulator(model, 4e-3, given_back, composition="suzuki",
                                tolerance=tolerance)
        assert sim.integrator.tolerance == (1e-8 if tolerance == 0.0 else tolerance)
        sim.reset(q0)
        e0 = sim.energy()
        errors = np.empty(5000)
        for k in range(errors.size):
            assert sim.step().converged
            errors[k] = (sim.energy() - e0) / abs(e0)
        bands[key] = np.abs(errors).max()
    assert bands["default"] < bands["1e-10 kept"] and \
        bands["1e-8 kept"] > 30 * bands["default"], bands


def free_box():
    model = load_urdf(shipped_urdf("box"), floating_base=True)
    model.gravity = [0.0, 0.0, 0.0]
    return model


def world_momentum(model, q, v):
    """Ad(T)^-T (G v_body): the box's spatial momentum in the world frame at the origin."""
    T = pin.XYZQUATToSE3(q)
    G = np.diag([6.0, 6.0, 6.0, 0.025, 0.05, 0.065])
    return T.toActionMatrixInverse().T @ (G @ v)


def test_free_body_keeps_its_spatial_momentum():
    model = free_box()
    sim = Simulator(model, dt=DT, integrator="variational", tolerance=1e-12)
    v0 = np.array([0.3, -0.2, 0.1, 2.0, 0.5, -1.0])
    sim.reset(model.neutral(), v0)
    h0 = world_momentum(model, sim.q, sim.v)
    for _ in range(2000):
        assert sim.step().converged
    np.testing.assert_allclose(world_momentum(model, sim.q, sim.v), h0, atol=1e-10)


def test_dzhanibekov_flip():
    """Spin about the intermediate axis (y) with a tiny perturbation: the body flips, and the
    spin about y reverses sign, while the energy stays put."""
    model = free_box()
    sim = Simulator(model, dt=DT, integrator="variational")
    sim.reset(model.neutral(), np.array([0, 0, 0, 1e-3, 5.0, 1e-3]))
    e0 = sim.energy()
    spin = []
    for _ in range(8000):
        assert sim.step().converged
        spin.append(sim.v[4])
    spin = np.array(spin)
    assert spin.min() < -4.5 and spin.max() > 4.5  # it flipped (and back)
    assert abs(sim.energy() - e0) < 1e-6 * e0


def test_newton_fallback_is_counted():
    model = load_urdf(chain_urdf(6))
    sim = Simulator(model, dt=DT, integrator="variational", max_iterations=1,
                    initial_guess="IG1", tolerance=1e-12)
    sim.reset(np.full(6, 0.5), np.ones(6))
    info = sim.step()
    assert info.converged and info.fallback and info.iterations > 1


def test_reported_velocity_is_the_legendre_transform_of_the_momentum():
    model = load_urdf(shipped_urdf("arm7"))
    sim = Simulator(model, dt=DT, integrator="variational")
    v0 = np.linspace(-1, 1, 7)
    sim.reset(np.full(7, 0.2), v0)
    np.testing.assert_allclose(sim.v, v0)
    sim.step()
    from mbsim_ros.dynamics import crba
    np.testing.assert_allclose(crba(model, sim.q) @ sim.v, sim.integrator.p, atol=1e-12)


def test_bad_input_leaves_the_state_alone():
    model = load_urdf(shipped_urdf("arm7"))
    sim = Simulator(model, dt=DT, integrator="variational")
    sim.reset(np.full(7, 0.2))
    sim.step()
    q, v, p, t = sim.q.copy(), sim.v.copy(), sim.integrator.p.copy(), sim.t
    with pytest.raises(ValueError, match="tau contains NaN"):
        sim.step(np.full(7, np.nan))
    with pytest.raises(ValueError, match="tau must have shape"):
        sim.step(np.zeros(8))
    np.testing.assert_array_equal(sim.q, q)
    np.testing.assert_array_equal(sim.v, v)
    np.testing.assert_array_equal(sim.integrator.p, p)
    assert sim.t == t
    for bad in ({"solver": "lbfgs"}, {"initial_guess": "IG4"}, {"tolerance": -1e-10},
                {"max_iterations": 0}, {"order": 3}, {"anderson": 99},
                {"composition": "trotter"}):
        with pytest.raises(ValueError):
            Simulator(model, integrator="variational", **bad)


def pendulum_with_friction(f):
    return load_urdf(shipped_urdf("pendulum").read_text().replace('friction="0"',
                                                                  f'friction="{f}"'))


def test_coulomb_friction_decelerates_a_free_joint_at_f_over_i_and_stops_it():
    """No gravity, I = 1 kg m^2 (+1e-6), f = 2 N m, v0 = 1 rad/s: v = 1 - 2 t until t = 0.5 s,
    then exactly at rest."""
    model = pendulum_with_friction(2.0)
    model.gravity = [0.0, 0.0, 0.0]
    sim = Simulator(model, dt=DT)
    sim.reset([0.0], [1.0])
    v = []
    for _ in range(800):
        assert sim.step().converged
        v.append(sim.v[0])
    v = np.array(v)
    t = np.arange(1, 801) * DT
    sliding = t < 0.499
    np.testing.assert_allclose(v[sliding], 1.0 - 2.0 * t[sliding] / (1 + 1e-6), atol=1e-5)
    np.testing.assert_array_equal(v[t > 0.501], 0.0)
    assert sim.q[0] == pytest.approx(0.25, abs=2e-3)  # 1/2 v0^2 / (f/I)


@pytest.mark.parametrize("friction", [2.0, 1000.0])
def test_coulomb_friction_holds_against_a_smaller_torque(friction):
    """Gravity torque m g l sin(0.1) = 0.98 N m < f: the pendulum does not move at all (also
    with a friction bound 1000x larger than anything acting: no chatter at 1 ms)."""
    sim = Simulator(pendulum_with_friction(friction), dt=DT)
    sim.reset([0.1])
    for _ in range(2000):
        assert sim.step().converged
    assert sim.q[0] == 0.1 and sim.v[0] == 0.0


def test_coulomb_friction_only_dissipates():
    """Released at 1 rad (9.81 sin 1 = 8.3 N m > f = 2 N m): it swings, loses energy at every
    step, and comes to rest where gravity no longer beats friction."""
    sim = Simulator(pendulum_with_friction(2.0), dt=DT)
    sim.reset([1.0])
    energies = [sim.energy()]
    for _ in range(5000):
        assert sim.step().converged
        energies.append(sim.energy())
    assert np.diff(energies).max() <= 1e-12
    assert sim.v[0] == 0.0 and 9.81 * abs(np.sin(sim.q[0])) <= 2.0


def test_friction_on_a_coupled_arm_is_stable_and_dissipative():
    model = load_urdf(shipped_urdf("arm7").read_text().replace('friction="0"', 'friction="1.5"'))
    sim = Simulator(model, dt=DT)
    sim.reset(np.full(7, 0.5), np.linspace(-2, 2, 7))
    energies = [sim.energy()]
    for _ in range(3000):
        assert sim.step().converged
        energies.append(sim.energy())
    assert np.diff(energies).max() < 0.0  # damping 0.1 and friction 1.5 on every joint


@pytest.mark.parametrize("label, options", [("arm7_damped", {}), ("arm7_undamped", {}),
                                            ("arm7_floating", {}), ("arm7_damped", {"order": 4}),
                                            ("arm7_undamped", {"solver": "newton"})])
def test_the_kinematics_a_step_leaves_for_the_next_change_no_bit(label, options):
    """A step ends with the kinematics (and, without damping or servos, the factorisation of
    M + a and the velocity it gave) at its new q in its workspace, and the next step from that
    q (and that momentum, for the velocity) takes them instead of computing them again: that
    step must be the one a fresh Simulator takes from the same state, bit for bit."""
    from mbsim_ros.integrators.variational import (C_FACTOR, C_KINEMATICS, C_VELOCITY, Q_KIN,
                                                   V_ADDED, V_PKEPT, V_VK, VARIATIONAL)

    text = shipped_urdf("arm7").read_text()
    model = load_urdf(text.replace('damping="0.1"', 'damping="0"') if label == "arm7_undamped"
                      else text, floating_base=label == "arm7_floating")
    rng = np.random.default_rng(11)
    taus = rng.normal(0.0, 2.0, (40, model.nv))
    sim = Simulator(model, DT, "variational", **options)
    sim.reset(sim.q.copy(), rng.standard_normal(model.nv))
    for tau in taus[:20]:
        assert sim.step(tau).converged
    for tau in taus[20:]:
        fresh = Simulator(model, DT, "variational", **options)
        fresh.set_state(sim.get_state())
        cache = VARIATIONAL.views(sim.integrator._vws, model.njoints, model.nv, model.nq)
        assert cache.cached[C_KINEMATICS] == 1.0  # the last step left them, at this q:
        np.testing.assert_array_equal(cache.qv[Q_KIN], sim.q)
        if label == "arm7_undamped":  # and the factorisation the next step starts from,
            assert cache.cached[C_FACTOR] == 1.0  # with the velocity it gave
            np.testing.assert_array_equal(cache.vec[V_ADDED], model.armature)
            assert cache.cached[C_VELOCITY] == 1.0
            np.testing.assert_array_equal(cache.vec[V_VK], sim.v)
            np.testing.assert_array_equal(cache.vec[V_PKEPT], sim.integrator.p)
        if tau is taus[30]:  # the same q with another momentum: v_k is not the kept one
            sim.reset(sim.q.copy(), rng.standard_normal(model.nv))
            fresh.set_state(sim.get_state())
        a, b = sim.step(tau), fresh.step(tau)
        assert a.converged and b.converged
        assert (a.iterations, a.residual, a.substeps) == (b.iterations, b.residual, b.substeps)
        for name in ("q", "v"):
            np.testing.assert_array_equal(getattr(sim, name), getattr(fresh, name))
        np.testing.assert_array_equal(sim.integrator.p, fresh.integrator.p)
