"""Collision shapes from a URDF's ``<collision>`` elements: spheres, boxes and cylinders, each
placed in the frame of the joint that carries its link (fixed joints folded in, as pinocchio's
frames give them). Meshes are listed in ``skipped`` (not checked for contact)."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np

from ..model import ModelError

SPHERE, BOX, CYLINDER = 0, 1, 2
KIND_NAMES = {SPHERE: "sphere", BOX: "box", CYLINDER: "cylinder"}


@dataclass
class Shapes:
    """Flat arrays, one row per shape. ``body``: the joint index that moves the shape (-1: the
    world); ``R``, ``p``: its pose in that joint's frame; ``size``: sphere (r, 0, 0), box half
    extents, cylinder (r, half length, 0) about its z axis; ``stiffness`` (N/m) and ``damping``
    (N s/m): the shape's own normal spring-damper (elastic-foundation elements), NaN where the
    scene's material law applies."""

    body: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    kind: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    R: np.ndarray = field(default_factory=lambda: np.zeros((0, 3, 3)))
    p: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    size: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    link: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    stiffness: np.ndarray = field(default_factory=lambda: np.zeros(0))
    damping: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __len__(self) -> int:
        return self.body.shape[0]

    def own_law(self, name: str) -> np.ndarray:
        """``stiffness`` or ``damping`` for every shape, NaN (the material law) where unset."""
        values = getattr(self, name)
        if values.shape[0] == len(self):
            return values
        return np.concatenate([values, np.full(len(self) - values.shape[0], np.nan)])

    @staticmethod
    def concatenate(parts: list["Shapes"], body_offsets: list[int]) -> "Shapes":
        """The shapes of several models merged into one forest (joint indices offset)."""
        out = Shapes()
        if not parts:
            return out
        out.body = np.concatenate([np.where(s.body >= 0, s.body + off, -1)
                                   for s, off in zip(parts, body_offsets)]).astype(np.int64)
        out.kind = np.concatenate([s.kind for s in parts]).astype(np.int64)
        out.R = np.concatenate([s.R for s in parts]).reshape(-1, 3, 3)
        out.p = np.concatenate([s.p for s in parts]).reshape(-1, 3)
        out.size = np.concatenate([s.size for s in parts]).reshape(-1, 3)
        out.link = [name for s in parts for name in s.link]
        out.stiffness = np.concatenate([s.own_law("stiffness") for s in parts])
        out.damping = np.concatenate([s.own_law("damping") for s in parts])
        out.skipped = [name for s in parts for name in s.skipped]
        return out


def rpy_matrix(rpy) -> np.ndarray:
    """URDF roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _floats(text: str | None, n: int, what: str) -> np.ndarray:
    try:
        values = np.array([float(x) for x in (text or "").split()])
    except ValueError:
        raise ModelError(f"{what}: expected {n} numbers, got '{text}'") from None
    if values.shape != (n,) or not np.all(np.isfinite(values)):
        raise ModelError(f"{what}: expected {n} finite numbers, got '{text}'")
    return values


def _geometry(element, what: str) -> tuple[int, np.ndarray] | None:
    """(kind, size) of a <geometry>, or None for a mesh."""
    for child in element:
        if child.tag == "sphere":
            return SPHERE, np.array([_floats(child.get("radius"), 1, f"{what} radius")[0], 0, 0])
        if child.tag == "box":
            return BOX, 0.5 * _floats(child.get("size"), 3, f"{what} size")
        if child.tag == "cylinder":
            r = _floats(child.get("radius"), 1, f"{what} radius")[0]
            length = _floats(child.get("length"), 1, f"{what} length")[0]
            return CYLINDER, np.array([r, 0.5 * length, 0.0])
        if child.tag == "mesh":
            return None
    raise ModelError(f"{what}: <geometry> has no sphere, box, cylinder or mesh")


def shapes_from_urdf(xml_text: str, pin_model) -> Shapes:
    """The collision shapes of a URDF whose pinocchio model (our joint i = pinocchio joint
    i + 1) is given."""
    root = ET.fromstring(xml_text)
    frames = {f.name: f for f in pin_model.frames if f.type == _body_frame_type()}
    rows = []
    skipped = []
    for link in root.iter("link"):
        name = link.get("name")
        for k, collision in enumerate(link.findall("collision")):
            what = f"link '{name}' <collision> {k}"
            geometry = collision.find("geometry")
            if geometry is None:
                raise ModelError(f"{what}: no <geometry>")
            shape = _geometry(geometry, what)
            if shape is None:
                skipped.append(name)
                continue
            origin = collision.find("origin")
            xyz = _floats(origin.get("xyz", "0 0 0"), 3, f"{what} origin xyz") \
                if origin is not None else np.zeros(3)
            rpy = _floats(origin.get("rpy", "0 0 0"), 3, f"{what} origin rpy") \
                if origin is not None else np.zeros(3)
            frame = frames[name]
            R_frame, p_frame = np.array(frame.placement.rotation), \
                np.array(frame.placement.translation)
            rows.append((frame.parentJoint - 1, shape[0], R_frame @ rpy_matrix(rpy),
                         p_frame + R_frame @ xyz, shape[1], name))
    shapes = Shapes(skipped=skipped)
    if rows:
        shapes.body = np.array([r[0] for r in rows], dtype=np.int64)
        shapes.kind = np.array([r[1] for r in rows], dtype=np.int64)
        shapes.R = np.array([r[2] for r in rows])
        shapes.p = np.array([r[3] for r in rows])
        shapes.size = np.array([r[4] for r in rows])
        shapes.link = [r[5] for r in rows]
    return shapes


def _body_frame_type():
    import pinocchio as pin

    return pin.FrameType.BODY
