"""rnea / crba / aba against pinocchio (the oracle), against each other, and at the door."""
import numpy as np
import pinocchio as pin
import pytest

from conftest import random_configuration, relative_error, to_pinocchio_q
from mbsim_ros.dynamics import aba, crba, energy, integrate, rnea
from mbsim_ros.model import chain_urdf, load_urdf, merge, shipped_urdf

SAMPLES = 25
# Our kernels and pinocchio's run the same algorithms in different frames (world vs local), so
# they differ by rounding only: ~1e-13 relative on these models; 1e-9 leaves 4 orders to spare.
TOLERANCE = 1e-9


def states(model, seed):
    rng = np.random.default_rng(seed)
    for _ in range(SAMPLES):
        yield (random_configuration(model, rng), rng.normal(size=model.nv) * 2.0,
               rng.normal(size=model.nv) * 5.0)


def full(M):
    return np.triu(M) + np.triu(M, 1).T


def test_rnea_matches_pinocchio(robot):
    label, model, pm = robot
    data = pm.createData()
    for q, v, a in states(model, 1):
        expected = pin.rnea(pm, data, to_pinocchio_q(model, q), v, a)
        assert relative_error(rnea(model, q, v, a), expected) < TOLERANCE


def test_crba_matches_pinocchio(robot):
    label, model, pm = robot
    data = pm.createData()
    for q, _, _ in states(model, 2):
        expected = full(pin.crba(pm, data, to_pinocchio_q(model, q)))
        M = crba(model, q)
        assert relative_error(M, expected) < TOLERANCE
        np.testing.assert_array_equal(M, M.T)


def test_aba_matches_pinocchio(robot):
    label, model, pm = robot
    data = pm.createData()
    for q, v, tau in states(model, 3):
        expected = pin.aba(pm, data, to_pinocchio_q(model, q), v, tau)
        assert relative_error(aba(model, q, v, tau), expected) < TOLERANCE


def test_algorithms_agree_with_each_other(robot):
    """aba(q, v, rnea(q, v, a)) = a and rnea(q, v, a) - rnea(q, v, 0) = M(q) a."""
    label, model, pm = robot
    for q, v, a in states(model, 4):
        tau = rnea(model, q, v, a)
        scale = np.linalg.cond(crba(model, q))
        assert relative_error(aba(model, q, v, tau), a) < 1e-15 * scale + 1e-10
        assert relative_error(tau - rnea(model, q, v, np.zeros(model.nv)),
                              crba(model, q) @ a) < 1e-10


def test_gravity_is_read_at_call_time():
    model = load_urdf(shipped_urdf("arm7"))
    pm = pin.buildModelFromUrdf(str(shipped_urdf("arm7")))
    q, zero = np.full(7, 0.4), np.zeros(7)
    for g in ([0, 0, -9.81], [0, 0, 0], [1.0, -2.0, -3.7]):
        model.gravity = g
        pm.gravity.linear = np.array(g, dtype=float)
        np.testing.assert_allclose(rnea(model, q, zero, zero),
                                   pin.rnea(pm, pm.createData(), q, zero, zero), atol=1e-12)


def test_energy_matches_pinocchio(robot):
    label, model, pm = robot
    data = pm.createData()
    for q, v, _ in states(model, 5):
        kinetic, potential = energy(model, q, v)
        pq = to_pinocchio_q(model, q)
        expected_kinetic = pin.computeKineticEnergy(pm, data, pq, v)
        expected_potential = pin.computePotentialEnergy(pm, data, pq)  # moving bodies only
        assert kinetic == pytest.approx(expected_kinetic, rel=1e-10, abs=1e-10)
        assert potential == pytest.approx(expected_potential, rel=1e-10, abs=1e-10)
        assert kinetic == pytest.approx(0.5 * v @ crba(model, q) @ v, rel=1e-10, abs=1e-12)


def test_integrate_matches_pinocchio():
    model = load_urdf(shipped_urdf("arm7"), floating_base=True)
    pm = pin.buildModelFromUrdf(str(shipped_urdf("arm7")), pin.JointModelFreeFlyer())
    rng = np.random.default_rng(6)
    for scale in (1e-9, 1e-3, 1.0, 3.0):
        q = random_configuration(model, rng)
        v = rng.normal(size=model.nv) * scale
        np.testing.assert_allclose(integrate(model, q, v, 0.7), pin.integrate(pm, q, 0.7 * v),
                                   atol=1e-12)


def test_forest_is_the_union_of_its_trees():
    arm = load_urdf(shipped_urdf("arm7"))
    flyer = load_urdf(shipped_urdf("double_pendulum"), floating_base=True)
    forest = merge([arm, flyer], prefixes=["arm/", "dp/"])
    rng = np.random.default_rng(8)
    q1, q2 = random_configuration(arm, rng), random_configuration(flyer, rng)
    v1, v2 = rng.normal(size=arm.nv), rng.normal(size=flyer.nv)
    a1, a2 = rng.normal(size=arm.nv), rng.normal(size=flyer.nv)
    q, v, a = np.concatenate([q1, q2]), np.concatenate([v1, v2]), np.concatenate([a1, a2])
    np.testing.assert_allclose(rnea(forest, q, v, a),
                               np.concatenate([rnea(arm, q1, v1, a1), rnea(flyer, q2, v2, a2)]),
                               atol=1e-12)
    M = crba(forest, q)
    np.testing.assert_allclose(M[:7, :7], crba(arm, q1), atol=1e-12)
    np.testing.assert_allclose(M[7:, 7:], crba(flyer, q2), atol=1e-12)
    np.testing.assert_array_equal(M[:7, 7:], 0.0)
    np.testing.assert_allclose(aba(forest, q, v, a),
                               np.concatenate([aba(arm, q1, v1, a1), aba(flyer, q2, v2, a2)]),
                               atol=1e-10)


def test_long_chain_matches_pinocchio():
    """300 links: the deepest chain pinocchio's Data fits in memory comfortably."""
    source = chain_urdf(300)
    model = load_urdf(source)
    pm = pin.buildModelFromXML(source)
    data = pm.createData()
    rng = np.random.default_rng(9)
    q, v, a = rng.uniform(-1, 1, 300), rng.normal(size=300), rng.normal(size=300)
    assert relative_error(rnea(model, q, v, a), pin.rnea(pm, data, q, v, a)) < TOLERANCE
    assert relative_error(aba(model, q, v, a), pin.aba(pm, data, q, v, a)) < 1e-8
    assert relative_error(crba(model, q), full(pin.crba(pm, data, q))) < TOLERANCE


# --- the door ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def arm():
    return load_urdf(shipped_urdf("arm7"), floating_base=True)


@pytest.mark.parametrize("which", ["q", "v", "a"])
def test_wrong_shapes_name_the_argument(arm, which):
    args = {"q": arm.neutral(), "v": np.zeros(arm.nv), "a": np.zeros(arm.nv)}
    args[which] = np.zeros(5)
    with pytest.raises(ValueError, match=f"^{which} must have shape"):
        rnea(arm, **args)
    args[which] = np.zeros((len(args["q" if which == "q" else "v"]), 1))
    with pytest.raises(ValueError, match=f"^{which} must have shape"):
        rnea(arm, **args)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_inputs_name_the_argument(arm, bad):
    q, v = arm.neutral(), np.zeros(arm.nv)
    for fn, names in ((rnea, ("q", "v", "a")), (aba, ("q", "v", "tau"))):
        for k, name in enumerate(names):
            args = [q.copy(), v.copy(), v.copy()]
            args[k][-1] = bad
            with pytest.raises(ValueError, match=f"^{name} contains NaN"):
                fn(arm, *args)
    q_bad = q.copy()
    q_bad[8] = np.nan
    with pytest.raises(ValueError, match="^q contains NaN"):
        crba(arm, q_bad)


def test_non_unit_quaternion_is_rejected(arm):
    q = arm.neutral()
    q[6] = 2.0
    with pytest.raises(ValueError, match="quaternion"):
        aba(arm, q, np.zeros(arm.nv), np.zeros(arm.nv))


def test_lists_and_integers_are_accepted(arm):
    q = [float(x) for x in arm.neutral()]
    tau = [0] * arm.nv
    np.testing.assert_allclose(aba(arm, q, tau, tau), aba(arm, np.array(q), np.zeros(arm.nv),
                                                          np.zeros(arm.nv)))
