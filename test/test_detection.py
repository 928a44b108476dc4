"""Contact detection between moving bodies and from URDF meshes (mbsim_ros/contact/detection.py,
geometry.py, heightfield.py): the kernel's distances and normals against closed-form geometry
(a heightfield's triangles too), stacks that settle with the weights Hertz and statics
predict, a mesh-shaped link at its analytic height, and the bad-input cases (a missing or
unreadable mesh names the link and the file)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from conftest import box_link_urdf

from mbsim_ros import Simulator
from mbsim_ros.contact.detection import MESH_CONTACTS, detect_contacts
from mbsim_ros.contact.geometry import (BOX, CYLINDER, MESH, MESH_POINTS, SPHERE, Shapes,
                                        candidate_points, mesh_hull)
from mbsim_ros.contact.heightfield import mesh, pack, terrain_gaps
from mbsim_ros.contact.scene import SceneError, load_scene, quaternion_to_matrix
from mbsim_ros.integrators.compliant import CORNER_RADIUS

G = 9.81
E_STAR = 2.0e11 / (2.0 * (1.0 - 0.3 ** 2))   # steel on steel
STEEL = {"friction": 0.5, "youngs_modulus": 2.0e11, "poisson_ratio": 0.3}


def hertz_depth(force: float, radius: float) -> float:
    """delta of F = 4/3 E* sqrt(R) delta^(3/2)."""
    return (force / (4.0 / 3.0 * E_STAR * math.sqrt(radius))) ** (2.0 / 3.0)


# -- the kernel against closed-form geometry ---------------------------------------------------

def detect(shapes: Shapes, poses: list, margin: float = 1.0, ground=(0.0, 0.0, 0.0, 0.0),
           terrain=()) -> tuple[np.ndarray, np.ndarray]:
    """Contacts of shapes on bodies at the given world poses [(R, p)] (no ground unless
    given: normal, height; no terrain unless given: heightfield.pack's vector)."""
    first, local, bound = candidate_points(shapes)
    ns = len(shapes)
    oR = np.array([R for R, _ in poses], dtype=float)
    op = np.array([p for _, p in poses], dtype=float)
    out_int, out_real = np.zeros((64, 4), dtype=np.int64), np.zeros((64, 8))
    n = detect_contacts(oR, op, shapes.body, shapes.model, shapes.kind, shapes.R, shapes.p,
                        shapes.size, first, local, bound, np.array(ground, float),
                        np.array(terrain, float), CORNER_RADIUS, margin,
                        np.zeros((ns, 3, 3)), np.zeros((ns, 3)), np.zeros(3),
                        np.zeros((2, 16, 3)), out_int, out_real)
    return out_int[:n], out_real[:n]


def two_shapes(kind_a: int, size_a, kind_b: int, size_b) -> Shapes:
    """Shape a on body 0 (model 0), shape b on body 1 (model 1), both at their body origins."""
    shapes = Shapes()
    shapes.append(0, kind_a, np.eye(3), np.zeros(3), size_a, "a")
    shapes.append(1, kind_b, np.eye(3), np.zeros(3), size_b, "b")
    shapes.model[1] = 1
    return shapes


def rot_z(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


@pytest.mark.parametrize("centre, distance, normal", [
    ([0.0, 0.0, 0.16], 0.16 - 0.05 - 0.1, [0, 0, 1]),              # above the top face
    ([0.3, 0.0, 0.0], 0.3 - 0.2 - 0.1, [1, 0, 0]),                 # beside
    ([0.3, 0.0, 0.15], math.hypot(0.1, 0.1) - 0.1,                 # off the edge
     [1 / math.sqrt(2), 0, 1 / math.sqrt(2)]),
    ([0.0, 0.27, 0.01], -(0.3 - 0.27) - 0.1, [0, 1, 0]),           # centre inside
])
def test_sphere_against_moving_box_is_exact(centre, distance, normal):
    """A sphere (r 0.1) against a box of half extents (0.2, 0.3, 0.05), yawed 0.4 rad with the
    sphere's offset: the closest point of the box, the face of least penetration inside."""
    yaw = rot_z(0.4)
    shapes = two_shapes(SPHERE, [0.1, 0, 0], BOX, [0.2, 0.3, 0.05])
    box_at = np.array([1.0, -2.0, 0.5])
    ci, cr = detect(shapes, [(np.eye(3), box_at + yaw @ centre), (yaw, box_at)])
    assert ci.tolist() == [[0, 1, 0, 1]]  # bodies, own shape, the other shape
    assert cr[0, 6] == pytest.approx(distance, abs=1e-12)
    assert cr[0, 3:6] == pytest.approx(yaw @ normal, abs=1e-12)
    assert cr[0, 7] == 0.1, "Hertz radius: the sphere's"


@pytest.mark.parametrize("centre, distance, normal", [
    ([0.0, 0.0, 0.35], 0.35 - 0.3 - 0.05, [0, 0, 1]),              # over a cap
    ([0.0, 0.25, 0.1], 0.25 - 0.2 - 0.05, [0, 1, 0]),              # beside the side
    ([0.3, 0.0, 0.4], math.hypot(0.1, 0.1) - 0.05,                 # off the rim
     [1 / math.sqrt(2), 0, 1 / math.sqrt(2)]),
    ([0.0, 0.15, 0.0], -(0.2 - 0.15) - 0.05, [0, 1, 0]),           # inside, nearer the side
])
def test_sphere_against_cylinder_is_exact(centre, distance, normal):
    """A sphere (r 0.05) against a cylinder of radius 0.2 and length 0.6 (axis z)."""
    shapes = two_shapes(SPHERE, [0.05, 0, 0], CYLINDER, [0.2, 0.3, 0])
    ci, cr = detect(shapes, [(np.eye(3), np.array(centre, float)), (np.eye(3), np.zeros(3))])
    assert ci.tolist() == [[0, 1, 0, 1]]  # bodies, own shape, the other shape
    assert cr[0, 6] == pytest.approx(distance, abs=1e-12)
    assert cr[0, 3:6] == pytest.approx(normal, abs=1e-12)


def test_box_on_box_face_is_clipped_to_the_overlap():
    """A 0.2 m cube (a) yawed 45 degrees and 1 mm into a 0.2 x 0.2 x 0.1 box (b) below it:
    the clipped incident face is the octagon where the two squares overlap, every vertex 1 mm
    deep with the normal +z (pushing a up); b's corners are not contacts of a's corners."""
    shapes = two_shapes(BOX, [0.1, 0.1, 0.1], BOX, [0.1, 0.1, 0.05])
    ci, cr = detect(shapes, [(rot_z(math.pi / 4), np.array([0, 0, 0.05 + 0.1 - 1e-3])),
                             (np.eye(3), np.zeros(3))], margin=0.01)
    assert len(ci) == 8 and np.all(ci == [0, 1, 0, 1])
    assert cr[:, 6] == pytest.approx(np.full(8, -1e-3), abs=1e-12)
    assert np.allclose(cr[:, 3:6], [0, 0, 1])
    # the octagon's vertices lie on the lower box's rim |x| or |y| = 0.1, within |x|, |y| <= 0.1
    xy = cr[:, :2]
    assert np.all(np.abs(xy) <= 0.1 + 1e-12)
    assert np.allclose(np.max(np.abs(xy), axis=1), 0.1)
    assert np.allclose(cr[:, 2], 0.05 - 1e-3)


def test_a_mesh_keeps_its_deepest_points_per_pair():
    """A 64-point hull of a ball (r 5 cm) tilted 1 mm into the ground: of the points within
    the margin, the MESH_CONTACTS deepest are contacts, with their exact distances."""
    rng = np.random.default_rng(1)
    points = rng.normal(size=(64, 3))
    hull = 0.05 * points / np.linalg.norm(points, axis=1)[:, None]
    shapes = Shapes()
    shapes.append(0, MESH, np.eye(3), np.zeros(3), [0.05, 0, 0], "ball", hull=hull)
    centre = np.array([0.0, 0.0, 0.05 + 1e-3])
    R = rot_z(0.3) @ np.array([[1, 0, 0], [0, 0.8, -0.6], [0, 0.6, 0.8]])
    ci, cr = detect(shapes, [(R, centre)], margin=0.02, ground=(0, 0, 1, 0))
    heights = np.sort((centre + hull @ R.T)[:, 2])
    assert len(ci) == MESH_CONTACTS and np.sum(heights < 0.02) > MESH_CONTACTS
    assert np.sort(cr[:, 6]) == pytest.approx(heights[:MESH_CONTACTS], abs=1e-15)


def test_boxes_of_one_model_are_not_paired():
    shapes = two_shapes(BOX, [0.1, 0.1, 0.1], BOX, [0.1, 0.1, 0.1])
    shapes.model[1] = 0
    ci, _ = detect(shapes, [(np.eye(3), np.zeros(3)), (np.eye(3), np.array([0, 0, 0.15]))])
    assert len(ci) == 0


# -- stacks between moving bodies settle with the weights statics gives --------------------------

def settle(scene: dict, seconds: float = 0.5, dt: float = 1e-3, **options) -> Simulator:
    sim = Simulator.from_scene(scene, dt=dt, **options)
    for _ in range(int(round(seconds / dt))):
        assert sim.step().converged
    return sim


def forces_between(sim: Simulator, link: str, other: str) -> np.ndarray:
    """The total contact force of other on link (world frame)."""
    total = np.zeros(3)
    for c in sim.contacts():
        if (c.link, c.other) == (link, other):
            total += c.force
        elif (c.link, c.other) == (other, link):
            total -= c.force
    return total


def test_sphere_on_a_free_box_on_the_ground():
    """A 1 kg steel ball (r 5 cm) on a 2 kg free box (0.4 x 0.4 x 0.1 m) on a steel floor: the
    box carries the ball's weight, the floor both; the ball sits Hertz's depth into the box
    (F = m g, R = 5 cm) and the box its corners' depth into the floor (F = 3 g / 4 each)."""
    sim = settle({"ground": STEEL, "models": [
        {"box": {"size": [0.4, 0.4, 0.1], "mass": 2.0}, "position": [0, 0, 0.05], "name": "box"},
        {"sphere": {"radius": 0.05, "mass": 1.0}, "position": [0.05, -0.1, 0.15],
         "name": "ball"}]})
    on_ball = forces_between(sim, "ball/ball", "box/box")
    on_box = forces_between(sim, "box/box", "world")
    # at rest: the weights (1e-5 N: the box's corners sink unequally under the off-centre
    # ball, tilting it by ~1e-7 rad, and the ball still creeps at ~1e-6 m/s^2)
    assert on_ball == pytest.approx([0, 0, 1.0 * G], abs=1e-5)
    assert on_box == pytest.approx([0, 0, 3.0 * G], abs=1e-5)
    corner_depth = hertz_depth(3.0 * G / 4.0, CORNER_RADIUS)
    ball_depth = hertz_depth(1.0 * G, 0.05)
    (ball_contact,) = [c for c in sim.contacts() if c.link == "ball/ball"]
    assert ball_contact.depth == pytest.approx(ball_depth, rel=1e-3)
    # corners carry unequal shares (the ball is off centre): the box's height within their
    # spread, and it tilts by ~5e-7 rad: the ball's centre is r - depth above the box's top
    # face, measured along the box's own z axis
    assert abs(sim.q[2] - (0.05 - corner_depth)) < 2 * corner_depth
    up = quaternion_to_matrix(sim.q[3:7])[:, 2]
    above_top = (sim.q[7:10] - sim.q[:3]) @ up - 0.05
    assert above_top == pytest.approx(0.05 - ball_depth, abs=1e-9)
    assert np.abs(sim.v).max() < 1e-4, "at rest"


def settle_stack(upper, lower, yaw: float = 0.0, shift: float = 0.0,
                 warm_start: bool = True) -> Simulator:
    """A 1 kg box (size upper, turned by yaw about z, moved by shift along x) dropped from 1 mm
    onto a 2 kg box (size lower) on a steel floor, 0.6 s on."""
    top = lower[2] + upper[2] / 2 + 1e-3
    return settle({"ground": STEEL, "models": [
        {"box": {"size": lower, "mass": 2.0}, "position": [0, 0, lower[2] / 2], "name": "low"},
        {"box": {"size": upper, "mass": 1.0}, "position": [shift, 0.0, top],
         "orientation": [0, 0, math.sin(yaw / 2), math.cos(yaw / 2)], "name": "up"}]},
        seconds=0.6, warm_start=warm_start)


def assert_stack_at_rest(sim: Simulator, upper, lower) -> None:
    """The upper box level (tilt below 1e-5 rad), its weight carried by the lower box and the
    sum by the floor to 1e-6 N; heights within a micrometre of the stacked sizes (Hertz
    corners sink < 1 um)."""
    assert forces_between(sim, "up/up", "low/low") == pytest.approx([0, 0, G], abs=1e-6)
    assert forces_between(sim, "low/low", "world") == pytest.approx([0, 0, 3 * G], abs=1e-6)
    qx, qy = sim.q[7 + 3], sim.q[7 + 4]
    assert 2 * math.hypot(qx, qy) < 1e-5, "level"
    assert sim.q[2] == pytest.approx(lower[2] / 2, abs=1e-6)
    assert sim.q[7 + 2] == pytest.approx(lower[2] + upper[2] / 2, abs=2e-6)


FLUSH = ([0.2, 0.2, 0.1], [0.2, 0.2, 0.1])


@pytest.mark.parametrize("warm_start", [True, False])
@pytest.mark.parametrize("upper, lower, yaw", [
    ([0.1, 0.1, 0.1], [0.3, 0.3, 0.1], 0.3),     # small on large, turned
    (*FLUSH, 0.0),                               # equal, edges flush
    ([0.4, 0.3, 0.05], [0.1, 0.1, 0.1], 0.0),    # large on small
])
def test_box_stacked_on_a_box_settles_level(upper, lower, yaw, warm_start):
    """Free boxes, 1 kg on 2 kg, dropped from 1 mm onto each other and a steel floor, with
    either solve: at rest to 1e-6 N (assert_stack_at_rest). Edges flush, the incident face's
    edges lie on the reference face's clipping lines: before box_box dropped the clipped
    vertices within 1e-8 of the face's size of the segment between their neighbours
    (drop_redundant_vertices), state differences of 1e-16 at the landing decided whether it
    found 4 points between the boxes or 6 (a corner a rounding error outside its clipping line
    became two points, and the intersection of the edge lying on that line slid along it with
    the rounding); with 6 the upper box rested tilted 6e-7 rad and the forces jittered by up
    to 4e-5 N. Now the 4 corners, and the forces agree with the weights to ~1e-10 N."""
    assert_stack_at_rest(settle_stack(upper, lower, yaw, warm_start=warm_start), upper, lower)


@pytest.mark.parametrize("warm_start", [True, False])
@pytest.mark.parametrize("yaw, shift", [(1e-14, 0.0), (1e-12, 0.0), (1e-9, 0.0),
                                        (0.0, 1e-15), (0.0, 1e-9), (0.0, 1e-7)])
def test_flush_stack_at_rest_under_perturbations(yaw, shift, warm_start):
    """The flush stack turned or moved by rounding-sized to sub-micrometre amounts (the
    interior-point solve alone rested 2.8e-6 N off after a yaw of 1e-12 rad before): at rest to
    1e-6 N with either solve."""
    assert_stack_at_rest(settle_stack(*FLUSH, yaw, shift, warm_start), *FLUSH)


@pytest.mark.parametrize("yaw, shift", [(0.0, 0.0), (1e-14, 0.0), (1e-12, 0.0), (1e-9, 0.0),
                                        (0.0, 1e-15), (0.0, 1e-9), (0.0, 1e-7), (1e-12, 1e-15)])
def test_flush_boxes_touch_at_the_four_corners(yaw, shift):
    """Equal boxes (0.2 x 0.2 x 0.1) flush, 1e-7 m into each other, the upper turned by up to
    1e-9 rad or moved by up to 1e-7 m: the contacts are the 4 corners of the overlap
    (within 1e-9 m), each 1e-7 m deep (to rounding); at a yaw of 1e-9 rad the clipped
    octagon's edge midpoints lie 5e-11 m off the segments between the corners and are
    dropped (detection.drop_redundant_vertices)."""
    shapes = two_shapes(BOX, [0.1, 0.1, 0.05], BOX, [0.1, 0.1, 0.05])
    ci, cr = detect(shapes, [(rot_z(yaw), np.array([shift, 0, 0.1 - 1e-7])),
                             (np.eye(3), np.zeros(3))], margin=0.01)
    assert len(ci) == 4 and np.all(ci == [0, 1, 0, 1])
    corners = {(sx * 0.1 + (shift if sx < 0 else 0.0), sy * 0.1) for sx in (-1, 1)
               for sy in (-1, 1)}
    for corner in corners:
        assert np.min(np.linalg.norm(cr[:, :2] - corner, axis=1)) < 1e-9
    assert cr[:, 6] == pytest.approx(np.full(4, -1e-7), abs=1e-15)


def test_turned_box_keeps_the_octagon():
    """Beyond the tolerance the clipped polygon's vertices stay: the upper of two flush boxes
    turned by 1e-6 rad touches at 8 points, 4 near the corners and 4 where the edges cross,
    within 0.1 m x 1e-6 of their midpoints (the octagon of two squares turned by a small
    angle)."""
    shapes = two_shapes(BOX, [0.1, 0.1, 0.05], BOX, [0.1, 0.1, 0.05])
    ci, cr = detect(shapes, [(rot_z(1e-6), np.array([0, 0, 0.1 - 1e-7])),
                             (np.eye(3), np.zeros(3))], margin=0.01)
    assert len(ci) == 8
    midpoints = [(0.1, 0.0), (-0.1, 0.0), (0.0, 0.1), (0.0, -0.1)]
    for midpoint in midpoints:
        assert np.min(np.linalg.norm(cr[:, :2] - midpoint, axis=1)) < 1e-7


def rot_x(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


RIDGE = 0.1 * math.sqrt(2.0)  # a 0.2 m cube turned 45 degrees about x or y: its edge's height


@pytest.mark.parametrize("gap", [5e-3, 1e-4, 0.0, -1e-4, -2e-3])
@pytest.mark.parametrize("dx, dy", [(0.0, 0.0), (0.03, -0.02), (-0.07, 0.05)])
def test_crossed_edges_touch_where_they_cross(gap, dx, dy):
    """Two 0.2 m cubes meeting edge to edge: b turned 45 degrees about x (a ridge along x,
    its top edge at height RIDGE), a above it turned 45 degrees about y (its lowest edge along
    y), moved by (dx, dy) and ``gap`` off touching. One contact, exact: at the point of a's
    edge over b's, (dx, 0, RIDGE + gap); normal up; distance ``gap``. With the 6 face axes
    alone (before the edge-edge axes) the least overlap was 67-72 mm, on b's faces at 45
    degrees, and clipping a's face to that face left no point: no contact in any case."""
    shapes = two_shapes(BOX, [0.1, 0.1, 0.1], BOX, [0.1, 0.1, 0.1])
    ci, cr = detect(shapes, [(rot_y(math.pi / 4), np.array([dx, dy, 2 * RIDGE + gap])),
                             (rot_x(math.pi / 4), np.zeros(3))], margin=0.01)
    assert len(ci) == 1 and tuple(ci[0]) == (0, 1, 0, 1)
    np.testing.assert_allclose(cr[0, :3], [dx, 0.0, RIDGE + gap], atol=1e-15)
    np.testing.assert_allclose(cr[0, 3:6], [0.0, 0.0, 1.0], atol=1e-15)
    assert cr[0, 6] == pytest.approx(gap, abs=1e-15)


def test_crossed_edges_apart_beyond_the_margin_make_no_contact():
    shapes = two_shapes(BOX, [0.1, 0.1, 0.1], BOX, [0.1, 0.1, 0.1])
    ci, _ = detect(shapes, [(rot_y(math.pi / 4), np.array([0.0, 0.0, 2 * RIDGE + 0.02])),
                            (rot_x(math.pi / 4), np.zeros(3))], margin=0.01)
    assert len(ci) == 0


def test_a_box_dropped_edge_first_on_a_ridge_lands_on_the_edge():
    """A free 0.2 m cube (1 kg) turned 45 degrees about y, dropped from 1 cm onto a static
    cube turned 45 degrees about x (a ridge): it stops on the crossing edges, Hertz-deep (its
    centre within 0.2 mm of 2 RIDGE while the edges carry it, 40 ms after touching). With the
    face axes alone there was no contact, and it fell through the ridge (50 mm into it 60 ms
    after touching)."""
    half = math.sin(math.pi / 8)
    scene = {"ground": {"friction": 0.5},
             "boxes": [{"size": [0.2, 0.2, 0.2], "position": [0.0, 0.0, 1.0],
                        "orientation": [half, 0.0, 0.0, math.cos(math.pi / 8)]}],
             "models": [{"box": {"size": [0.2, 0.2, 0.2], "mass": 1.0},
                         "position": [0.0, 0.0, 1.0 + 2 * RIDGE + 0.01],
                         "orientation": [0.0, half, 0.0, math.cos(math.pi / 8)],
                         "name": "cube"}]}
    sim = Simulator.from_scene(scene, dt=1e-3)
    touched = None
    for k in range(200):
        assert sim.step().converged
        if touched is None and sim.q[2] < 1.0 + 2 * RIDGE + 1e-4:
            touched = k
        if touched is not None and k == touched + 40:
            break
    assert touched is not None and touched < 60  # a free fall of 1 cm takes 45 ms
    assert sim.q[2] == pytest.approx(1.0 + 2 * RIDGE, abs=2e-4)


def overlap_inset(Ra, pa, ha, Rb, pb, hb) -> float:
    """The largest t such that the two boxes shrunk by t on every face still share a point (a
    linear program, independent of the separating axis test): t > 0 when they overlap."""
    from scipy.optimize import linprog

    rows, bounds = [], []
    for R, p, h in ((Ra, pa, ha), (Rb, pb, hb)):
        for k in range(3):
            for sign in (1.0, -1.0):  # sign R_k . (x - p) + t <= h_k
                rows.append([*(sign * R[:, k]), 1.0])
                bounds.append(h[k] + sign * (R[:, k] @ p))
    result = linprog([0.0, 0.0, 0.0, -1.0], A_ub=np.array(rows), b_ub=np.array(bounds),
                     bounds=[(None, None)] * 4)
    assert result.status == 0, result.message
    return float(result.x[3])


def test_overlapping_boxes_in_random_poses_always_touch():
    """150 pairs of boxes (half sizes 2-20 cm, uniformly random orientations) moved together
    along a random direction until they just touch (bisection on overlap_inset), then 0.1-5 mm
    further: every pair that overlaps gets a contact of negative distance. With the face axes
    alone 12 of 300 such pairs got none (crossed edges: no face vertex inside the other box)."""
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(0)
    tested = 0
    for _ in range(150):
        ha, hb = rng.uniform(0.02, 0.2, 3), rng.uniform(0.02, 0.2, 3)
        Ra = Rotation.random(random_state=rng).as_matrix()
        Rb = Rotation.random(random_state=rng).as_matrix()
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        apart, together = 1.0, 0.0  # a's centre along direction: touching between them
        for _ in range(40):
            middle = 0.5 * (apart + together)
            if overlap_inset(Ra, middle * direction, ha, Rb, np.zeros(3), hb) > 0.0:
                together = middle
            else:
                apart = middle
        pa = (together - rng.uniform(1e-4, 5e-3)) * direction
        if overlap_inset(Ra, pa, ha, Rb, np.zeros(3), hb) <= 1e-6:
            continue
        tested += 1
        ci, cr = detect(two_shapes(BOX, ha, BOX, hb), [(Ra, pa), (Rb, np.zeros(3))],
                        margin=0.01)
        assert len(ci) > 0 and cr[:, 6].min() < 0.0, (ha, hb, Ra, Rb, pa)
    assert tested > 120


def test_a_box_tumbling_off_a_turned_platform_comes_to_rest_on_the_floor():
    """A 1 kg brick (0.2 x 0.12 x 0.08 m) dropped from 0.4 m, turned, half over the edge of a
    static platform (0.6 x 0.6 x 0.2 m, yawed 0.4 rad): it tumbles over the edge onto the
    floor and lies there, never above its start energy. With the face axes alone an
    edge-edge crossing went unseen, the brick sank deep into the platform's edge, and the
    contact that finally caught it threw it out: 74 m away at 230 m/s after 1.5 s, 3.8 kJ
    gained."""
    scene = {"ground": {"friction": 0.5},
             "boxes": [{"size": [0.6, 0.6, 0.2], "position": [0.0, 0.0, 0.1],
                        "orientation": [0.0, 0.0, math.sin(0.2), math.cos(0.2)]}],
             "models": [{"box": {"size": [0.2, 0.12, 0.08], "mass": 1.0},
                         "position": [0.3, 0.1, 0.4],
                         "orientation": [0.431687, -0.213677, 0.857881, -0.178966],
                         "name": "brick"}]}
    sim = Simulator.from_scene(scene, dt=1e-3)
    start = sim.energy()
    for _ in range(1500):
        assert sim.step().converged
        assert sim.energy() <= start
    assert sim.q[2] == pytest.approx(0.04, abs=2e-3)  # on the floor, on its largest face
    assert np.linalg.norm(sim.q[:2] - [0.3, 0.1]) < 0.5
    assert np.abs(sim.v).max() < 1e-6


CAN = [0.05, 0.2, 0.0]  # a cylinder of radius 5 cm and length 40 cm


@pytest.mark.parametrize("gap", [5e-3, 0.0, -1e-3])
@pytest.mark.parametrize("dx, dy", [(0.0, 0.0), (0.07, -0.12)])
def test_crossed_cylinders_touch_where_their_sides_cross(gap, dx, dy):
    """Cylinder b lying along x at the origin, cylinder a along y on top of it, moved by
    (dx, dy) and ``gap`` off touching: one contact, exact, on b's top line under a's axis,
    (dx, 0, 0.05), normal up, distance ``gap`` (the rims are 15 cm and more away). Before
    cylinder pairs were detected: none, and one fell through the other."""
    shapes = two_shapes(CYLINDER, CAN, CYLINDER, CAN)
    ci, cr = detect(shapes, [(rot_x(math.pi / 2), np.array([dx, dy, 0.1 + gap])),
                             (rot_y(math.pi / 2), np.zeros(3))], margin=0.01)
    assert len(ci) == 1 and tuple(ci[0]) == (0, 1, 0, 1)
    np.testing.assert_allclose(cr[0, :3], [dx, 0.0, 0.05], atol=1e-15)
    np.testing.assert_allclose(cr[0, 3:6], [0.0, 0.0, 1.0], atol=1e-15)
    assert cr[0, 6] == pytest.approx(gap, abs=1e-15)
    assert cr[0, 7] == pytest.approx(0.025)  # r_a r_b / (r_a + r_b)


def test_parallel_cylinders_touch_along_their_overlap():
    """Two cylinders along x, one on the other, a shifted 10 cm along x and 1 mm into b: the
    sides touch at the middle of the overlap (x = 0.05), and the rims over the other's side
    or rim touch too, none deeper than 1 mm, every normal pushing a up (those from b's rims
    name b first: pushing b down)."""
    shapes = two_shapes(CYLINDER, CAN, CYLINDER, CAN)
    along_x = rot_y(math.pi / 2)
    ci, cr = detect(shapes, [(along_x, np.array([0.1, 0.0, 0.1 - 1e-3])),
                             (along_x, np.zeros(3))], margin=0.01)
    sides = [k for k in range(len(ci)) if abs(cr[k, 0] - 0.05) < 1e-12]
    assert len(sides) == 1
    assert cr[sides[0], 6] == pytest.approx(-1e-3, abs=1e-15)
    assert cr[:, 6].min() == pytest.approx(-1e-3, abs=1e-12)
    up = np.where(ci[:, 0] == 0, 1.0, -1.0)[:, None] * cr[:, 3:6]  # (body a: 0, or b's rims)
    np.testing.assert_allclose(up, np.tile([0.0, 0.0, 1.0], (len(ci), 1)), atol=1e-12)
    assert len(ci) >= 3


def test_a_box_corner_in_a_cylinder_is_a_contact():
    """A 10 cm cube standing on a corner (turned so its body diagonal is vertical) 1 mm into
    the side of a cylinder lying along x: its lowest corner is a contact, 1 mm deep, normal
    up (before, box corners were not tested against cylinders)."""
    diagonal = corner_down()
    shapes = two_shapes(BOX, [0.05, 0.05, 0.05], CYLINDER, CAN)
    corner = 0.05 * math.sqrt(3.0)
    ci, cr = detect(shapes, [(diagonal, np.array([0.02, 0.0, 0.05 + corner - 1e-3])),
                             (rot_y(math.pi / 2), np.zeros(3))], margin=0.01)
    assert len(ci) == 1
    np.testing.assert_allclose(cr[0, 3:6], [0.0, 0.0, 1.0], atol=1e-12)
    assert cr[0, 6] == pytest.approx(-1e-3, abs=1e-12)


def corner_down() -> np.ndarray:
    """The rotation taking the cube's corner direction (-1, -1, -1)/sqrt(3) to -z."""
    from scipy.spatial.transform import Rotation

    rotation, _ = Rotation.align_vectors([[0.0, 0.0, -1.0]], [[-1.0, -1.0, -1.0]])
    return rotation.as_matrix()


def cylinder_urdf(name: str, mass: float = 1.0) -> str:
    r, half = CAN[0], CAN[1]
    length = 2 * half
    ixx = mass * (3 * r * r + length * length) / 12
    return (f'<robot name="{name}"><link name="{name}"><inertial><mass value="{mass}"/>'
            f'<inertia ixx="{ixx}" iyy="{ixx}" izz="{mass * r * r / 2}" ixy="0" ixz="0" '
            f'iyz="0"/></inertial><collision><geometry><cylinder radius="{r}" '
            f'length="{length}"/></geometry></collision></link></robot>')


def test_a_cylinder_dropped_across_another_rests_on_it(tmp_path):
    """A 1 kg can (r 5 cm, 40 cm) lying along x on the floor, a second dropped across it
    (along y) from 1 cm: it lands on the first and stays on it (its centre within 0.2 mm of
    the 15 cm of two diameters, Hertz-deep) 50 ms after landing. Before, with no contact
    between cylinders, it fell through to the floor."""
    for name in ("lower", "upper"):
        (tmp_path / f"{name}.urdf").write_text(cylinder_urdf(name))
    along_x = [0.0, math.sin(math.pi / 4), 0.0, math.cos(math.pi / 4)]
    along_y = [math.sin(math.pi / 4), 0.0, 0.0, math.cos(math.pi / 4)]
    scene = {"ground": {"friction": 0.8},
             "models": [{"urdf": str(tmp_path / "lower.urdf"), "floating_base": True,
                         "position": [0.0, 0.0, 0.05], "orientation": along_x,
                         "name": "lower"},
                        {"urdf": str(tmp_path / "upper.urdf"), "floating_base": True,
                         "position": [0.0, 0.0, 0.16], "orientation": along_y,
                         "name": "upper"}]}
    sim = Simulator.from_scene(scene, dt=1e-3)
    for _ in range(100):
        assert sim.step().converged
    assert sim.q[7 + 2] == pytest.approx(0.15, abs=2e-4)
    assert abs(sim.q[7]) < 1e-3 and abs(sim.q[7 + 1]) < 1e-3


# -- meshes -----------------------------------------------------------------------------------

CUBE_FACES = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1),
              (2, 3, 7), (2, 7, 6), (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)]


def write_cube_stl(path) -> None:
    """An ASCII STL of the unit cube centred on the origin (corners at +-0.5)."""
    corners = [np.array([x, y, z]) - 0.5 for x in (0, 1) for y in (0, 1) for z in (0, 1)]
    lines = ["solid cube"]
    for face in CUBE_FACES:
        a, b, c = (corners[i] for i in face)
        normal = np.cross(b - a, c - a)
        lines.append(f"facet normal {normal[0]} {normal[1]} {normal[2]}\nouter loop")
        lines += [f"vertex {v[0]} {v[1]} {v[2]}" for v in (a, b, c)]
        lines.append("endloop\nendfacet")
    lines.append("endsolid cube")
    path.write_text("\n".join(lines) + "\n")


def mesh_urdf(filename: str, scale: str = "0.1 0.1 0.1", mass: float = 1.0) -> str:
    return box_link_urdf("cube", mass, (0.1, 0.1, 0.1),
                         f'<collision><geometry><mesh filename="{filename}" scale="{scale}"/>'
                         f'</geometry></collision>')


@pytest.fixture(scope="module")
def cube_urdf(tmp_path_factory):
    """A URDF whose link's collision is a 0.1 m cube mesh (a unit cube STL scaled by 0.1),
    referenced relative to the URDF's folder."""
    folder = tmp_path_factory.mktemp("mesh")
    (folder / "meshes").mkdir()
    write_cube_stl(folder / "meshes" / "cube.stl")
    path = folder / "cube.urdf"
    path.write_text(mesh_urdf("meshes/cube.stl"))
    return path


def test_mesh_hull_is_the_cube_corners(cube_urdf):
    hull = mesh_hull(cube_urdf.parent / "meshes" / "cube.stl", (0.1, 0.2, 0.3))
    expected = {(sx * 0.05, sy * 0.1, sz * 0.15) for sx in (-1, 1) for sy in (-1, 1)
                for sz in (-1, 1)}
    assert {tuple(np.round(p, 12)) for p in hull} == expected


def test_mesh_hull_is_decimated_to_a_bounded_set(tmp_path):
    """A finely faceted sphere (a 40 x 40 latitude-longitude mesh, 1522 hull vertices) keeps
    MESH_POINTS of them, spread over the sphere: every dropped vertex is within 0.35 r of a
    kept one (64 points on a sphere are about 0.3 r apart)."""
    lat, lon = np.meshgrid(np.linspace(0.05, np.pi - 0.05, 40), np.linspace(0, 2 * np.pi, 41)[:-1])
    vertices = np.column_stack([np.sin(lat.ravel()) * np.cos(lon.ravel()),
                                np.sin(lat.ravel()) * np.sin(lon.ravel()), np.cos(lat.ravel())])
    from scipy.spatial import ConvexHull

    hull = ConvexHull(vertices)
    lines = ["solid s"]
    for tri in hull.simplices:
        lines.append("facet normal 0 0 0\nouter loop")
        lines += [f"vertex {v[0]} {v[1]} {v[2]}" for v in vertices[tri]]
        lines.append("endloop\nendfacet")
    (tmp_path / "s.stl").write_text("\n".join(lines + ["endsolid s"]) + "\n")
    kept = mesh_hull(tmp_path / "s.stl", (1.0, 1.0, 1.0))
    assert len(hull.vertices) > 1000 and kept.shape == (MESH_POINTS, 3)
    gaps = np.min(np.linalg.norm(vertices[:, None] - kept[None], axis=2), axis=1)
    assert gaps.max() < 0.35


def test_mesh_link_rests_on_the_ground_at_its_analytic_height(cube_urdf):
    """The 0.1 m mesh cube (1 kg) rests on its 4 lower hull points, each carrying g / 4 at
    Hertz's corner depth: its centre at 0.05 m minus that depth."""
    sim = settle({"ground": STEEL, "models": [
        {"urdf": str(cube_urdf), "floating_base": True, "position": [0, 0, 0.051]}]})
    (shape,) = sim.scene.shapes.kind
    assert shape == MESH
    depth = hertz_depth(G / 4, CORNER_RADIUS)
    assert sim.q[2] == pytest.approx(0.05 - depth, abs=1e-9)
    assert len(sim.contacts()) == 4
    assert sum(c.force for c in sim.contacts()) == pytest.approx([0, 0, G], abs=1e-6)


def test_mesh_link_rests_on_a_free_box(cube_urdf):
    """The mesh cube on a free 2 kg box: its hull points against the moving box carry its
    weight; the box carries both on the floor."""
    sim = settle({"ground": STEEL, "models": [
        {"box": {"size": [0.3, 0.3, 0.1], "mass": 2.0}, "position": [0, 0, 0.05], "name": "box"},
        {"urdf": str(cube_urdf), "floating_base": True, "position": [0.02, 0, 0.151],
         "name": "cube"}]})
    assert forces_between(sim, "cube/cube", "box/box") == pytest.approx([0, 0, G], abs=1e-6)
    assert forces_between(sim, "box/box", "world") == pytest.approx([0, 0, 3 * G], abs=1e-6)
    assert sim.q[7 + 2] == pytest.approx(0.15, abs=2e-6)


def test_missing_mesh_names_the_link_and_the_file(tmp_path):
    path = tmp_path / "robot.urdf"
    path.write_text(mesh_urdf("meshes/nowhere.stl"))
    with pytest.raises(SceneError) as error:
        load_scene({"models": [{"urdf": str(path), "floating_base": True}]})
    assert "link 'cube'" in str(error.value) and "meshes/nowhere.stl" in str(error.value)
    # the same robot without its meshes (meshes: false) loads
    scene = load_scene({"models": [{"urdf": str(path), "floating_base": True, "meshes": False}]})
    assert scene.shapes.skipped == ["cube"]


def test_unreadable_mesh_names_the_link_and_the_file(tmp_path):
    (tmp_path / "junk.stl").write_text("this is not a mesh\n")
    path = tmp_path / "robot.urdf"
    path.write_text(mesh_urdf("junk.stl"))
    with pytest.raises(SceneError, match=r"link 'cube'.*junk\.stl"):
        load_scene({"models": [{"urdf": str(path), "floating_base": True}]})


@pytest.mark.parametrize("robot, floating", [("pr2", False), ("solo12", True),
                                             ("panda", False), ("ur5", False)])
def test_example_robots_load_their_collision_meshes(robot, floating):
    """example-robot-data's collision meshes (package:// references) load as hull points."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PR2's sensor links' inertias
        scene = load_scene({"ground": {}, "models": [{"urdf": robot, "floating_base": floating}]})
    meshes = [h for k, h in zip(scene.shapes.kind, scene.shapes.hull) if k == MESH]
    assert len(meshes) >= 7 and not scene.shapes.skipped
    assert all(4 <= len(h) <= MESH_POINTS for h in meshes)


# -- heightfield terrain (contact/heightfield.py) -----------------------------------------------

def ramp(degrees: float, points: int = 5, extent: float = 2.0) -> np.ndarray:
    """A heightfield ramp z = x tan(degrees) over [-extent / 2, extent / 2]^2."""
    x = np.linspace(-extent / 2, extent / 2, points)
    return pack(np.tile(x * math.tan(math.radians(degrees)), (points, 1)), (extent, extent),
                (0.0, 0.0, 0.0))


def test_sphere_on_a_heightfield_ramp_meets_the_ramps_plane():
    """A sphere over a 15 degree ramp: the normal is the ramp's, the distance the sphere's
    centre's from the ramp's plane minus its radius, the point on the sphere along -normal."""
    theta, r = math.radians(15.0), 0.05
    normal = np.array([-math.sin(theta), 0.0, math.cos(theta)])
    shapes = Shapes()
    shapes.append(0, SPHERE, np.eye(3), np.zeros(3), [r, 0, 0], "ball")
    centre = np.array([0.13, -0.21, 0.13 * math.tan(theta) + 0.06])
    out_int, out_real = detect(shapes, [(np.eye(3), centre)], terrain=ramp(15.0))
    assert len(out_int) == 1 and out_int[0, 1] == -1
    np.testing.assert_allclose(out_real[0, 3:6], normal, atol=1e-15)
    assert out_real[0, 6] == pytest.approx(0.06 * math.cos(theta) - r, abs=1e-15)
    np.testing.assert_allclose(out_real[0, :3], centre - r * normal, atol=1e-15)


def test_heightfield_cell_is_two_triangles_split_on_its_anti_diagonal():
    """One cell, one corner raised 1 m: under the triangle holding the corner (0, 0) the ground
    is flat; under the other it rises to the raised corner (1, 1) with slope 1 along x and y."""
    terrain = pack([[0.0, 0.0], [0.0, 1.0]], (1.0, 1.0), (0.5, 0.5, 0.0))
    points = np.array([[0.3, 0.3, 0.2], [0.75, 0.75, 0.7], [1.5, 0.5, 0.0]])
    gaps, normals = np.zeros(3), np.zeros((3, 3))
    terrain_gaps(terrain, points, gaps, normals)
    assert gaps[0] == pytest.approx(0.2, abs=1e-15)
    np.testing.assert_allclose(normals[0], [0.0, 0.0, 1.0])
    assert gaps[1] == pytest.approx(0.2 / math.sqrt(3.0), abs=1e-15)  # z there: 0.5
    np.testing.assert_allclose(normals[1], np.array([-1.0, -1.0, 1.0]) / math.sqrt(3.0))
    assert gaps[2] == np.inf  # outside the grid: nothing


def test_heightfield_contacts_follow_the_mesh_triangles():
    """A box's 8 corners over rough terrain: each contact is that corner's gap to the triangle
    of heightfield.mesh under it, computed here from the triangle's vertices."""
    heights = np.random.default_rng(3).uniform(0.0, 0.05, (6, 7))
    terrain = pack(heights, (0.6, 0.5), (0.1, -0.1, 0.02))
    vertices, faces = mesh(terrain)
    shapes = Shapes()
    shapes.append(0, BOX, np.eye(3), np.zeros(3), [0.1, 0.07, 0.03], "box")
    R = quaternion_to_matrix([0.1, 0.05, 0.3, 1.0] / np.linalg.norm([0.1, 0.05, 0.3, 1.0]))
    out_int, out_real = detect(shapes, [(R, np.array([0.05, -0.08, 0.06]))], terrain=terrain)
    assert len(out_int) == 8
    for row in out_real:
        x = row[:3]
        found = []
        for a, b, c in vertices[faces]:
            m = np.array([[b[0] - a[0], c[0] - a[0]], [b[1] - a[1], c[1] - a[1]]])
            s, t = np.linalg.solve(m, x[:2] - a[:2])
            if s >= -1e-12 and t >= -1e-12 and s + t <= 1 + 1e-12:
                n = np.cross(b - a, c - a)
                found.append(((x - a) @ n / np.linalg.norm(n), n / np.linalg.norm(n)))
        gap, normal = found[0]
        assert row[6] == pytest.approx(gap, abs=1e-14)
        np.testing.assert_allclose(row[3:6], normal, atol=1e-14)


def test_plane_contacts_unchanged_by_a_terrain_out_of_reach():
    """The terrain pass comes after the plane's and leaves its contacts bit for bit: a
    sphere on the plane with no terrain and with a terrain grid far to its side."""
    shapes = Shapes()
    shapes.append(0, SPHERE, np.eye(3), np.zeros(3), [0.05, 0, 0], "ball")
    pose = [(np.eye(3), np.array([0.01, 0.02, 0.049]))]
    ground = (0.0, 0.0, 1.0, 0.0)
    alone = detect(shapes, pose, ground=ground)
    far = ramp(10.0)
    far[2] += 50.0  # the grid's corner moved 50 m along x
    beside = detect(shapes, pose, ground=ground, terrain=far)
    assert len(alone[0]) == 1
    np.testing.assert_array_equal(alone[0], beside[0])
    np.testing.assert_array_equal(alone[1], beside[1])
