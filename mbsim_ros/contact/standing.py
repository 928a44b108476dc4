"""A legged robot standing on the ground: the scene that puts a URDF's robot (free-flyer) in a
posture with its lowest collision point just touching the ground plane z = 0, a tilted plane
or a heightfield (docs/COMPLIANT.md#standing, #terrain).

    scene = standing_scene(example_robot_urdf("go2"))   # neutral posture, clamped into limits
    sim = Simulator.from_scene(scene, integrator="compliant")
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..dynamics.closures import ConstraintKinematics
from .geometry import SPHERE, candidate_points
from .heightfield import terrain_gaps
from .scene import Scene, load_scene

STEEL = {"youngs_modulus": 2.0e11, "poisson_ratio": 0.3}


def ground_normal(scene: Scene) -> np.ndarray:
    """The scene's ground normal (z when it has no ground)."""
    return scene.ground[:3] if np.any(scene.ground[:3]) else np.array([0.0, 0.0, 1.0])


def surface_gaps(scene: Scene, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(gaps (n,), normals (n, 3)): the signed distance of points (n, 3) to the scene's ground
    and its upward unit normal there: the heightfield's triangle under each point (gap inf
    outside the grid), else the plane (z = 0 without a ground); a static box's top face
    (its +z) instead where a point is over it and nearer to it."""
    points = np.ascontiguousarray(points, dtype=float).reshape(-1, 3)
    if scene.terrain.size:
        gaps, normals = np.zeros(len(points)), np.zeros((len(points), 3))
        terrain_gaps(scene.terrain, points, gaps, normals)
    else:
        normal = ground_normal(scene)
        gaps, normals = points @ normal - scene.ground[3], np.tile(normal, (len(points), 1))
    for box in scene.boxes:
        R, half = box[:9].reshape(3, 3), box[12:15]
        local = (points - box[9:12]) @ R
        top = local[:, 2] - half[2]
        over = np.all(np.abs(local[:, :2]) <= half[:2], axis=1) & (top < gaps)
        gaps[over], normals[over] = top[over], R[:, 2]
    return gaps, normals


def shape_points(scene: Scene,
                 q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(bodies, points, gaps, normals): the moving shapes' lowest candidate points at q, world
    frame (box corners, cylinder rims, mesh hull points; a sphere's point nearest the ground),
    the body of each, its gap to the ground and the ground's normal there (surface_gaps)."""
    shapes = scene.shapes
    oR, op, _ = ConstraintKinematics(scene.model).evaluate(q)
    first, local, _ = candidate_points(shapes)
    bodies, points = [], []
    for s in np.flatnonzero(shapes.body >= 0):
        b = shapes.body[s]
        found = (local[first[s]:first[s + 1]] @ shapes.R[s].T + shapes.p[s]) @ oR[b].T + op[b]
        if shapes.kind[s] == SPHERE:
            found = found - shapes.size[s, 0] * surface_gaps(scene, found)[1]
        bodies += [b] * len(found)
        points.append(found)
    if not points:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 3)), np.zeros(0), np.zeros((0, 3))
    points = np.concatenate(points)
    return (np.array(bodies, dtype=np.int64), points, *surface_gaps(scene, points))


def lowest_point(scene: Scene, q: np.ndarray) -> float:
    """The gap to the ground of the lowest point of the scene's moving shapes at q: their
    candidate points (box corners, cylinder rims, mesh hull points) and spheres' surfaces."""
    gaps = shape_points(scene, q)[2]
    return float(gaps.min()) if gaps.size else np.inf


def support_points(scene: Scene, q: np.ndarray,
                   within: float = 1e-3) -> tuple[np.ndarray, np.ndarray]:
    """(bodies, points): the candidate points within ``within`` (m) of the ground at q (world
    frame), and the body each belongs to: where a robot standing in posture q rests."""
    bodies, points, gaps, _ = shape_points(scene, q)
    near = gaps <= within
    return bodies[near], points[near]


def support_normal(scene: Scene, points: np.ndarray) -> np.ndarray:
    """The ground's normal under support points: theirs when they share one (a plane, a
    planar ramp), else their mean, normalised."""
    normals = surface_gaps(scene, points)[1]
    if np.all(normals == normals[0]):
        return normals[0]
    mean = normals.mean(axis=0)
    return mean / np.linalg.norm(mean)


def standing_scene(urdf: str | Path, *, q: np.ndarray | None = None, friction: float = 0.8,
                   ground: dict | None = None, meshes: bool = True,
                   clearance: float = 0.0, heightfield: dict | None = None,
                   boxes: list | None = None) -> Scene:
    """The robot of ``urdf`` on a floating base over the ground z = 0 (steel unless ``ground``
    gives other keys of a scene's ground; ``heightfield``: a scene's heightfield entry instead
    of the plane; ``boxes``: a scene's static boxes, steps to stand on), in posture q
    (default: the neutral configuration clamped into the joint limits), its base raised so that
    its lowest collision point is ``clearance`` above the ground (surface_gaps). The scene's q0
    is that configuration; its collision geometry is the URDF's own (``meshes``: the collision
    meshes' hulls, else primitives only)."""
    spec = {"friction": friction, **STEEL, **(ground or {})}
    if heightfield is None:
        spec = {"height": 0.0, **spec}
    terrain = {} if heightfield is None else {"heightfield": heightfield}
    scene = load_scene({"ground": spec, **terrain, "boxes": boxes or [],
                        "models": [{"urdf": str(urdf), "floating_base": True,
                                    "meshes": meshes}]})
    model = scene.model
    start = model.clamped(model.neutral())[0] if q is None else np.array(q, dtype=float)
    if start.shape != (model.nq,):
        raise ValueError(f"q: expected {model.nq} numbers, got shape {start.shape}")
    _, _, gaps, normals = shape_points(scene, start)
    if not np.isfinite(gaps.min(initial=np.inf)):
        raise ValueError(f"{urdf}: the robot has no collision geometry over the ground")
    lowest = int(np.argmin(gaps))
    start[2] += (clearance - gaps[lowest]) / normals[lowest, 2]  # raised along z
    scene.q0[:] = start
    return scene
