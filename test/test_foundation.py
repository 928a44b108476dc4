"""The elastic-foundation (Winkler) face of a box (Drumwright 2019, section 5.5): a box
settles at the
analytic sinkage with uniform element forces, an off-centre load tilts it by the analytic
Winkler rotation, and bad foundation input names the item.

The implicit spring-damper law holds exactly at rest (lambda = -k phi when G v = 0), so a
settled box must match the statics to the solver's tolerance; the bars below (1e-6 on the
sinkage, 1e-4 on the tilt) leave room for what is left of the settling after 1 s (the slowest
mode decays at about 90/s, plus the scheme's own damping) and for clarabel's 1e-8 tolerance."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mbsim_ros import Simulator
from mbsim_ros.contact.scene import SceneError, load_scene
from mbsim_ros.model.constraints import AppliedForce, Attachment

SIDE, MASS, DEPTH, MODULUS = 0.1, 1.0, 1.0, 1.0e7   # rubber-like: a sinkage of ~0.1 mm
FACE_DAMPING = 1000.0                              # N s/m: heave and rocking near critical
G = 9.81


def cube_scene(elements: int, change: dict | None = None) -> dict:
    foundation = {"depth": DEPTH, "elements": elements, "damping": FACE_DAMPING, **(change or {})}
    return {"ground": {"friction": 0.0, "youngs_modulus": MODULUS},
            "models": [{"box": {"size": [SIDE] * 3, "mass": MASS}, "name": "cube",
                        "position": [0, 0, SIDE / 2],
                        "foundation": foundation}]}


def settle(elements: int, forces=(), seconds: float = 1.0, dt: float = 5e-3) -> Simulator:
    sim = Simulator.from_scene(cube_scene(elements), dt=dt, forces=list(forces))
    tau = np.zeros(sim.model.nv)
    for _ in range(round(seconds / dt)):
        assert sim.step(tau).converged
    return sim


@pytest.mark.parametrize("elements", [3, 6])
def test_box_settles_at_the_winkler_sinkage(elements):
    sim = settle(elements)
    # k_total = E * face area / depth: delta = m g depth / (E a^2), whatever the grid
    sinkage = MASS * G * DEPTH / (MODULUS * SIDE ** 2)
    assert SIDE / 2 - sim.q[2] == pytest.approx(sinkage, rel=1e-6)
    forces = np.array([c.force for c in sim.contacts()])
    assert forces.shape == (elements ** 2, 3)
    assert forces[:, 2].sum() == pytest.approx(MASS * G, rel=1e-6)
    np.testing.assert_allclose(forces[:, 2], MASS * G / elements ** 2, rtol=1e-4)
    np.testing.assert_allclose(forces[:, :2], 0.0, atol=1e-9)


def winkler_tilt(force: float, offset: float, elements: int) -> float:
    """theta with k_theta sin cos = m g (a/2) sin + F (e cos + a sin): the moments about the
    face centre of the foundation (k_theta = E I / depth, I the grid's second moment
    sum A_e x_e^2 = a^4 / 12 (1 - 1/N^2)), the weight at the centre of mass (a/2 above the face)
    and the load on the top face (a above it)."""
    second_moment = SIDE ** 4 / 12 * (1 - 1 / elements ** 2)
    k_theta = MODULUS * second_moment / DEPTH
    theta = 0.0
    for _ in range(50):  # fixed point: converges at once, the right side barely depends on it
        theta = math.asin((MASS * G * SIDE / 2 * math.sin(theta)
                           + force * (offset * math.cos(theta) + SIDE * math.sin(theta)))
                          / (k_theta * math.cos(theta)))
    return theta


def test_off_centre_load_tilts_the_box_by_the_winkler_rotation():
    elements, force, offset = 4, 5.0, SIDE / 4   # below lift-off (F e < m g a / 6 + ...)
    load = AppliedForce(Attachment("load", 0, np.eye(3), np.array([offset, 0, SIDE / 2])),
                        [0, 0, -force])
    sim = settle(elements, forces=[load])
    qx, qy, qz, qw = sim.q[3:7]
    theta = 2 * math.atan2(qy, qw)   # about +y: the loaded +x side goes down
    assert abs(qx) < 1e-9 and abs(qz) < 1e-9
    expected = winkler_tilt(force, offset, elements)
    assert theta == pytest.approx(expected, rel=1e-4)
    # the geometric terms (weight and load above the face) are 1.3 % here: resolved
    assert abs(theta / (force * offset / (MODULUS * SIDE ** 4 / 12 * (1 - 1 / 16))) - 1) > 5e-3
    assert sum(c.force[2] for c in sim.contacts()) == pytest.approx(MASS * G + force, rel=1e-6)
    assert all(c.force[2] > 0 for c in sim.contacts())   # no element lifted off


def test_foundation_replaces_the_box_corners():
    scene = load_scene(cube_scene(5))
    shapes = scene.shapes
    assert len(shapes) == 25
    np.testing.assert_allclose(shapes.size, 0.0)
    np.testing.assert_allclose(shapes.p[:, 2], -SIDE / 2)
    np.testing.assert_allclose(sorted(set(np.round(shapes.p[:, 0], 12))),
                               (np.arange(5) + 0.5) * SIDE / 5 - SIDE / 2)
    np.testing.assert_allclose(shapes.stiffness, MODULUS * SIDE ** 2 / 25 / DEPTH)
    np.testing.assert_allclose(shapes.damping, FACE_DAMPING / 25)


@pytest.mark.parametrize("change, words", [
    ({"elements": 0}, ["models[0].foundation.elements", ">= 1"]),
    ({"elements": 2.5}, ["models[0].foundation.elements"]),
    ({"depth": 0.0}, ["models[0].foundation.depth", "positive"]),
    ({"depth": -1.0}, ["models[0].foundation.depth", "positive"]),
    ({"damping": -1.0}, ["models[0].foundation.damping"]),
    ({"width": 1.0}, ["models[0].foundation", "width"]),
])
def test_bad_foundation_input_names_the_item(change, words):
    with pytest.raises(SceneError) as error:
        load_scene(cube_scene(4, change))
    for word in words:
        assert word in str(error.value)


def test_foundation_needs_a_box_and_a_modulus():
    sphere = {"models": [{"sphere": {"radius": 0.1}, "foundation": {"depth": 1.0}}]}
    with pytest.raises(SceneError, match=r"models\[0\]\.foundation: only a box"):
        load_scene(sphere)
    plain = cube_scene(4)
    plain["ground"] = {"stiffness": 1e5}
    with pytest.raises(SceneError, match=r"models\[0\]\.foundation: needs the ground's young"):
        load_scene(plain)
    missing = cube_scene(4)
    del missing["models"][0]["foundation"]["depth"]
    with pytest.raises(SceneError, match=r"models\[0\]\.foundation\.depth: missing"):
        load_scene(missing)
