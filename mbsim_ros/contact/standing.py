"""A legged robot standing on the ground: the scene that puts a URDF's robot (free-flyer) in a
posture with its lowest collision point just touching the ground plane z = 0
(docs/COMPLIANT.md#standing).

    scene = standing_scene(example_robot_urdf("go2"))   # neutral posture, clamped into limits
    sim = Simulator.from_scene(scene, integrator="compliant")
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..dynamics.closures import ConstraintKinematics
from .geometry import SPHERE, candidate_points
from .scene import Scene, load_scene

STEEL = {"youngs_modulus": 2.0e11, "poisson_ratio": 0.3}


def ground_normal(scene: Scene) -> np.ndarray:
    """The scene's ground normal (z when it has no ground)."""
    return scene.ground[:3] if np.any(scene.ground[:3]) else np.array([0.0, 0.0, 1.0])


def shape_points(scene: Scene, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bodies, points, heights): the moving shapes' lowest candidate points at q, world frame
    (box corners, cylinder rims, mesh hull points; a sphere's point nearest the ground), the
    body of each and its height along the ground normal."""
    shapes = scene.shapes
    normal = ground_normal(scene)
    oR, op, _ = ConstraintKinematics(scene.model).evaluate(q)
    first, local, _ = candidate_points(shapes)
    bodies, points = [], []
    for s in np.flatnonzero(shapes.body >= 0):
        b = shapes.body[s]
        found = (local[first[s]:first[s + 1]] @ shapes.R[s].T + shapes.p[s]) @ oR[b].T + op[b]
        if shapes.kind[s] == SPHERE:
            found = found - shapes.size[s, 0] * normal
        bodies += [b] * len(found)
        points.append(found)
    if not points:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 3)), np.zeros(0)
    points = np.concatenate(points)
    return np.array(bodies, dtype=np.int64), points, points @ normal


def lowest_point(scene: Scene, q: np.ndarray) -> float:
    """The height (along the ground normal) of the lowest point of the scene's moving shapes at
    q: their candidate points (box corners, cylinder rims, mesh hull points) and spheres'
    surfaces."""
    heights = shape_points(scene, q)[2]
    return float(heights.min()) if heights.size else np.inf


def support_points(scene: Scene, q: np.ndarray,
                   within: float = 1e-3) -> tuple[np.ndarray, np.ndarray]:
    """(bodies, points): the candidate points within ``within`` (m) of the ground at q (world
    frame), and the body each belongs to: where a robot standing in posture q rests."""
    bodies, points, heights = shape_points(scene, q)
    near = heights - scene.ground[3] <= within
    return bodies[near], points[near]


def standing_scene(urdf: str | Path, *, q: np.ndarray | None = None, friction: float = 0.8,
                   ground: dict | None = None, meshes: bool = True,
                   clearance: float = 0.0) -> Scene:
    """The robot of ``urdf`` on a floating base over the ground z = 0 (steel unless ``ground``
    gives other keys of a scene's ground), in posture q (default: the neutral configuration
    clamped into the joint limits), its base raised so that its lowest collision point is
    ``clearance`` above the ground. The scene's q0 is that configuration; its collision geometry
    is the URDF's own (``meshes``: the collision meshes' hulls, else primitives only)."""
    spec = {"height": 0.0, "friction": friction, **STEEL, **(ground or {})}
    scene = load_scene({"ground": spec,
                        "models": [{"urdf": str(urdf), "floating_base": True,
                                    "meshes": meshes}]})
    model = scene.model
    start = model.clamped(model.neutral())[0] if q is None else np.array(q, dtype=float)
    if start.shape != (model.nq,):
        raise ValueError(f"q: expected {model.nq} numbers, got shape {start.shape}")
    if not np.isfinite(lowest_point(scene, start)):
        raise ValueError(f"{urdf}: the robot has no collision geometry to stand on")
    start[2] += clearance + scene.ground[3] - lowest_point(scene, start)
    scene.q0[:] = start
    return scene
