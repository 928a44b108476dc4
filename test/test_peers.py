"""bench/peers.py compares like with like: every installed engine, on the models it is given,
has the same energy as ours at a random state (1e-9 relative) and reports back the state it was
set to. Peers that are not installed (CI installs only .[ros,test]) are skipped. Speed is never
asserted here."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import peer_engines  # noqa: E402
import peers  # noqa: E402


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


@pytest.mark.parametrize("label", ["MuJoCo", "MuJoCo elliptic", "PyBullet", "DART"])
def test_quadruped_starts_with_every_foot_on_the_ground(label):
    import peer_quadruped

    module, factory = peer_quadruped.PEERS[label]
    pytest.importorskip(module)
    desc = peer_quadruped.solo12()
    assert desc.floating and desc.nv == 12 and len(desc.spheres) == 4
    engine = factory(desc)
    engine.reset(peer_quadruped.standing(desc), np.zeros(desc.nv))
    engine.place_root(peer_quadruped.start_position())
    heights = engine.points()[:, 2]
    assert np.allclose(heights, peer_quadruped.FOOT_RADIUS, atol=1e-6), heights
