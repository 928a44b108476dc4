"""bench/peers compares like with like: every installed engine, on the models it is given,
has the same energy as ours at a random state (1e-9 relative) and reports back the state it was
set to. Peers that are not installed (CI installs only .[ros,test]) are skipped. Speed is never
asserted here."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from peers import engines as peer_engines  # noqa: E402
from peers import __main__ as peers  # noqa: E402


@pytest.fixture(scope="module")
def descriptions():
    return peers.step_models(quick=True) + [peers.energy_chain()]


@pytest.mark.parametrize("label", list(peer_engines.CONFIGS))
def test_engine_agrees_with_ours_at_t0(label, descriptions):
    module, factory = peer_engines.CONFIGS[label]
    if module is not None:
        pytest.importorskip(module)
    errors = peers.agreement(descriptions, {label: factory})
    assert len(errors) == len(descriptions)
    worst = max(errors.values())
    assert worst <= peers.AGREEMENT_TOLERANCE, errors


QUADRUPED_ENGINES = ["ours compliant", "ours rigid pgs", "ours rigid pivoting", "MuJoCo",
                     "MuJoCo elliptic", "PyBullet", "DART"]


@pytest.mark.parametrize("label", QUADRUPED_ENGINES)
def test_quadruped_starts_with_every_foot_on_the_ground(label):
    from peers import quadruped as peer_quadruped

    if label not in peer_quadruped.ENGINES:
        pytest.skip(f"{label}: its integrator is not registered")
    module, factory = peer_quadruped.ENGINES[label]
    if module is not None:
        pytest.importorskip(module)
    desc = peer_quadruped.solo12()
    assert desc.floating and desc.nv == 12 and len(desc.spheres) == 4
    engine = factory(desc)
    engine.reset(peer_quadruped.standing(desc), np.zeros(desc.nv))
    engine.place_root(peer_quadruped.start_position())
    heights = engine.points()[:, 2]
    assert np.allclose(heights, peer_quadruped.FOOT_RADIUS, atol=1e-6), heights


def test_our_quadruped_scene_is_the_description():
    """Our contact scene is built from the description's URDF: same energy at a random state."""
    from peers import quadruped as peer_quadruped

    if "ours compliant" not in peer_quadruped.ENGINES:
        pytest.skip("the compliant integrator is not registered")
    desc = peer_quadruped.solo12()
    engine = peer_quadruped.ENGINES["ours compliant"][1](desc)
    rng = np.random.default_rng(3)
    q, v = rng.uniform(-1.0, 1.0, desc.nv), rng.normal(size=desc.nv)
    engine.reset(q, v)
    engine.place_root((0.1, -0.2, 0.3))
    assert np.array_equal(engine.state()[0], q)
    full_q, full_v = np.asarray(engine.sim.q), np.asarray(engine.sim.v)
    expected = peer_engines.reference_energy(desc.model(), full_q, full_v)
    assert abs(engine.sim.energy() - expected) <= 1e-9 * abs(expected)


def test_svi_proxy_residual_is_the_gradient_of_the_midpoint_action():
    """The dense (SVI-like) DEL residual of bench/peers/svi_proxy.py is D2 Ld(a, b) + D1 Ld(b, c)
    of its midpoint discrete Lagrangian: central differences of the action agree."""
    from peers import svi_proxy as peer_svi_proxy
    from mbsim_ros.model import chain_urdf

    dense = peer_svi_proxy.DenseDEL(chain_urdf(5))
    a, b, c = np.random.default_rng(1).normal(size=(3, 5))
    h, eps = 1e-2, 1e-6

    def action(x):
        return dense.action(a, x, h) + dense.action(x, c, h)

    fd = np.array([(action(b + eps * e) - action(b - eps * e)) / (2 * eps) for e in np.eye(5)])
    residual = dense.residual(a, b, c, h)
    assert np.abs(residual - fd).max() <= 1e-7 * np.abs(fd).max(), (residual, fd)
