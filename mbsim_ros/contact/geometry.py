"""Collision shapes from a URDF's ``<collision>`` elements: spheres, boxes, cylinders and
meshes, each placed in the frame of the joint that carries its link (fixed joints folded in, as
pinocchio's frames give them). A mesh becomes a convex point set: the vertices of its convex
hull, at most ``MESH_POINTS`` of them (farthest-point subset). ``candidate_points`` gives every
shape's contact candidate points in its own frame (box corners, cylinder rims, hull vertices)."""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..model import ModelError
from ..spatial import rpy_matrix

SPHERE, BOX, CYLINDER, MESH = 0, 1, 2, 3
KIND_NAMES = {SPHERE: "sphere", BOX: "box", CYLINDER: "cylinder", MESH: "mesh"}
RIM_POINTS = 8    # per cylinder rim
MESH_POINTS = 64  # hull vertices kept per mesh


@dataclass
class Shapes:
    """Flat arrays, one row per shape. ``body``: the joint index that moves the shape (-1: the
    world); ``R``, ``p``: its pose in that joint's frame; ``size``: sphere (r, 0, 0), box half
    extents, cylinder (r, half length, 0) about its z axis, mesh (bounding radius, 0, 0);
    ``model``: which model of a scene it belongs to (pairs within one model, other than two
    spheres, are not checked); ``hull``: per shape, a mesh's hull points in its frame (m, 3) or
    None; ``stiffness`` (N/m) and ``damping`` (N s/m): the shape's own normal spring-damper
    (elastic-foundation elements), NaN where the scene's material law applies; ``restitution``:
    the shape's own coefficient of restitution in impacts, NaN where the ground's applies."""

    body: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    kind: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    R: np.ndarray = field(default_factory=lambda: np.zeros((0, 3, 3)))
    p: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    size: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    link: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    model: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    hull: list = field(default_factory=list)
    stiffness: np.ndarray = field(default_factory=lambda: np.zeros(0))
    damping: np.ndarray = field(default_factory=lambda: np.zeros(0))
    restitution: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __len__(self) -> int:
        return self.body.shape[0]

    def append(self, body: int, kind: int, R, p, size, link: str, hull=None) -> None:
        """One more shape (of this set's model 0)."""
        self.body = np.append(self.body, body).astype(np.int64)
        self.kind = np.append(self.kind, kind).astype(np.int64)
        self.R = np.concatenate([self.R.reshape(-1, 3, 3), np.asarray(R, float)[None]])
        self.p = np.concatenate([self.p.reshape(-1, 3), np.asarray(p, float).reshape(1, 3)])
        self.size = np.concatenate([self.size.reshape(-1, 3),
                                    np.asarray(size, float).reshape(1, 3)])
        self.model = np.append(self.model, 0).astype(np.int64)
        self.link.append(link)
        self.hull.append(hull)

    def own_law(self, name: str) -> np.ndarray:
        """``stiffness``, ``damping`` or ``restitution`` for every shape, NaN (the material
        law) where unset."""
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
        out.restitution = np.concatenate([s.own_law("restitution") for s in parts])
        out.skipped = [name for s in parts for name in s.skipped]
        models, offset = [], 0   # each part's models numbered after the previous part's
        for s in parts:
            own = s.model if len(s.model) == len(s) else np.zeros(len(s), dtype=np.int64)
            models.append(np.where(own >= 0, own + offset, own))
            offset += int(own.max()) + 1 if len(s) and own.max() >= 0 else 1
        out.model = np.concatenate(models).astype(np.int64)
        out.hull = [h for s in parts for h in (s.hull if len(s.hull) == len(s)
                                               else [None] * len(s))]
        return out


def candidate_points(shapes: Shapes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first (n + 1,), points (P, 3), bound (n,)): shape s's contact candidate points, in its
    own frame, are points[first[s]:first[s + 1]] (sphere: its centre; box: 8 corners; cylinder:
    RIM_POINTS on each rim; mesh: its hull points); bound[s] is the radius of a ball about the
    shape's origin that holds it (a cheap first test between shapes)."""
    blocks, bound = [], np.zeros(len(shapes))
    for s in range(len(shapes)):
        kind, size = shapes.kind[s], shapes.size[s]
        if kind == SPHERE:
            local = np.zeros((1, 3))
            bound[s] = size[0]
        elif kind == BOX:
            signs = np.array([[1 if k & 1 else -1, 1 if k & 2 else -1, 1 if k & 4 else -1]
                              for k in range(8)], dtype=float)
            local = signs * size
            bound[s] = np.linalg.norm(size)
        elif kind == CYLINDER:
            angle = 2.0 * np.pi * np.arange(2 * RIM_POINTS) / RIM_POINTS
            z = np.where(np.arange(2 * RIM_POINTS) >= RIM_POINTS, size[1], -size[1])
            local = np.column_stack([size[0] * np.cos(angle), size[0] * np.sin(angle), z])
            bound[s] = np.hypot(size[0], size[1])
        else:
            local = np.asarray(shapes.hull[s], dtype=float).reshape(-1, 3)
            bound[s] = np.linalg.norm(local, axis=1).max()
        blocks.append(local)
    first = np.concatenate([[0], np.cumsum([len(b) for b in blocks])]).astype(np.int64)
    points = np.concatenate(blocks) if blocks else np.zeros((0, 3))
    return first, np.ascontiguousarray(points), bound


def _floats(text: str | None, n: int, what: str) -> np.ndarray:
    try:
        values = np.array([float(x) for x in (text or "").split()])
    except ValueError:
        raise ModelError(f"{what}: expected {n} numbers, got '{text}'") from None
    if values.shape != (n,) or not np.all(np.isfinite(values)):
        raise ModelError(f"{what}: expected {n} finite numbers, got '{text}'")
    return values


def _geometry(element, what: str) -> tuple[int, np.ndarray] | tuple[str, np.ndarray]:
    """(kind, size) of a primitive <geometry>; (filename, scale) of a mesh."""
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
            if not child.get("filename"):
                raise ModelError(f"{what}: <mesh> has no filename")
            scale = child.get("scale")
            return child.get("filename"), (np.ones(3) if scale is None
                                           else _floats(scale, 3, f"{what} mesh scale"))
    raise ModelError(f"{what}: <geometry> has no sphere, box, cylinder or mesh")


def shapes_from_urdf(xml_text: str, pin_model, urdf_dir: str | Path | None = None,
                     meshes: bool = True) -> Shapes:
    """The collision shapes of a URDF whose pinocchio model (our joint i = pinocchio joint
    i + 1) is given. Mesh file names are resolved (``mesh_path``) against ``urdf_dir``; with
    ``meshes=False`` meshes are listed in ``skipped`` instead of loaded. A mesh that cannot be
    found or read raises ModelError naming the link and the file."""
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
            hull = None
            if isinstance(shape[0], str):
                if not meshes:
                    skipped.append(name)
                    continue
                hull = mesh_hull(mesh_path(shape[0], urdf_dir, what), tuple(shape[1]), what)
                shape = (MESH, np.array([np.linalg.norm(hull, axis=1).max(), 0.0, 0.0]))
            origin = collision.find("origin")
            xyz = _floats(origin.get("xyz", "0 0 0"), 3, f"{what} origin xyz") \
                if origin is not None else np.zeros(3)
            rpy = _floats(origin.get("rpy", "0 0 0"), 3, f"{what} origin rpy") \
                if origin is not None else np.zeros(3)
            frame = frames[name]
            R_frame, p_frame = np.array(frame.placement.rotation), \
                np.array(frame.placement.translation)
            rows.append((frame.parentJoint - 1, shape[0], R_frame @ rpy_matrix(rpy),
                         p_frame + R_frame @ xyz, shape[1], name, hull))
    shapes = Shapes(skipped=skipped)
    if rows:
        shapes.body = np.array([r[0] for r in rows], dtype=np.int64)
        shapes.kind = np.array([r[1] for r in rows], dtype=np.int64)
        shapes.R = np.array([r[2] for r in rows])
        shapes.p = np.array([r[3] for r in rows])
        shapes.size = np.array([r[4] for r in rows])
        shapes.link = [r[5] for r in rows]
        shapes.hull = [r[6] for r in rows]
        shapes.model = np.zeros(len(rows), dtype=np.int64)
    return shapes


def mesh_path(filename: str, urdf_dir: str | Path | None, what: str) -> Path:
    """The file of a URDF mesh reference: ``package://NAME/rest`` looked up in the ROS package
    path, example-robot-data's share folder and robots folder, and the URDF's ancestors named
    NAME; ``file://`` and plain paths absolute or relative to the URDF's folder."""
    if filename.startswith("package://"):
        package, _, rest = filename[len("package://"):].partition("/")
        roots = _package_roots(package, urdf_dir)
        for root in roots:
            if (root / rest).is_file():
                return root / rest
        raise ModelError(f"{what}: mesh file '{filename}' not found (package '{package}' "
                         f"looked up in {[str(r) for r in roots] or 'no folder'})")
    path = Path(filename[len("file://"):] if filename.startswith("file://") else filename)
    if not path.is_absolute() and urdf_dir is not None:
        path = Path(urdf_dir) / path
    if not path.is_file():
        raise ModelError(f"{what}: mesh file '{filename}' not found (looked for {path})")
    return path


def _package_roots(package: str, urdf_dir) -> list[Path]:
    roots = []
    for entry in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep):
        if entry:
            roots += [Path(entry) / package, Path(entry)]
    try:
        from ament_index_python.packages import get_package_share_directory

        roots.append(Path(get_package_share_directory(package)))
    except Exception:  # noqa: BLE001 - not a ROS workspace, or no such package
        pass
    try:
        from ..model.resources import example_robot_data_dir

        robots = example_robot_data_dir()
        roots += [robots.parent.parent / package, robots / package]
    except FileNotFoundError:
        pass
    if urdf_dir is not None:
        roots += [d for d in Path(urdf_dir).resolve().parents if d.name == package]
        if Path(urdf_dir).resolve().name == package:
            roots.append(Path(urdf_dir).resolve())
    return [r for r in roots if r.is_dir()]


def mesh_hull(path: Path, scale, what: str = "mesh") -> np.ndarray:
    """The convex hull vertices of a mesh file (scaled), at most MESH_POINTS of them: a
    farthest-point subset when the hull has more. ModelError (naming ``what`` and the file)
    when the file cannot be read."""
    try:
        return _hull(str(path), tuple(float(x) for x in scale))
    except ValueError as exc:
        raise ModelError(f"{what}: {exc}") from None


@lru_cache(maxsize=256)
def _hull(path: str, scale: tuple) -> np.ndarray:
    from scipy.spatial import ConvexHull, QhullError

    try:
        mesh = _mesh_loader().load(path, np.array(scale))
        vertices = np.array(mesh.vertices(), dtype=float).reshape(-1, 3)
    except Exception as exc:  # noqa: BLE001 - coal raises ValueError/RuntimeError on bad files
        lines = [line for line in str(exc).splitlines() if line.strip()]
        raise ValueError(f"cannot read mesh file '{path}'"
                         + (f": {lines[-1].strip()}" if lines else "")) from None
    if vertices.shape[0] == 0 or not np.all(np.isfinite(vertices)):
        raise ValueError(f"mesh file '{path}' has no (finite) vertices")
    try:
        points = vertices[ConvexHull(vertices).vertices]
    except QhullError:  # flat or degenerate: keep the points themselves
        points = np.unique(vertices, axis=0)
    points = farthest_points(points, MESH_POINTS)
    points.flags.writeable = False
    return points


def _mesh_loader():
    """coal's mesh loader (assimp: STL, OBJ, DAE, ...); coal comes with pin (pinocchio 3),
    older installations name it hppfcl."""
    try:
        import coal
    except ImportError:
        try:
            import hppfcl as coal
        except ImportError:
            raise ValueError("reading mesh files needs coal (installed with pin) or hppfcl; "
                             "or set meshes: false for this model") from None
    return coal.MeshLoader()


def farthest_points(points: np.ndarray, count: int) -> np.ndarray:
    """At most ``count`` of the points: greedily the one farthest from those already taken,
    starting with the one farthest from their centroid."""
    if points.shape[0] <= count:
        return points.copy()
    taken = [int(np.argmax(np.linalg.norm(points - points.mean(axis=0), axis=1)))]
    nearest = np.linalg.norm(points - points[taken[0]], axis=1)
    for _ in range(count - 1):
        k = int(np.argmax(nearest))
        taken.append(k)
        nearest = np.minimum(nearest, np.linalg.norm(points - points[k], axis=1))
    return points[np.sort(taken)]


def _body_frame_type():
    import pinocchio as pin

    return pin.FrameType.BODY


def with_static_boxes(shapes: Shapes, boxes: np.ndarray, names: list | None = None,
                      restitution: np.ndarray | None = None) -> Shapes:
    """The shapes and a scene's static boxes ((k, 15): R row-major, centre, half extents; their
    own restitution, NaN: the ground's) as world shapes of their own model (-1), so that they
    meet every model's shapes."""
    out = Shapes.concatenate([shapes], [0])
    boxes = np.asarray(boxes, dtype=float).reshape(-1, 15)
    for k, box in enumerate(boxes):
        out.append(-1, BOX, box[:9].reshape(3, 3), box[9:12], box[12:15],
                   names[k] if names else f"box{k}")
        out.model[-1] = -1
    own = np.full(len(boxes), np.nan) if restitution is None else restitution
    out.restitution = np.concatenate([out.own_law("restitution")[:len(out) - len(boxes)], own])
    return out
