"""What the 3D view draws, as plain data: one node per URDF link (its name), the link's visual
and collision geometry in the link's frame, the joint (body) that carries the link and the
link's placement in that body's frame (fixed joints folded in, as pinocchio's frames give them),
the ground, a scene's static boxes and its heightfield (a triangle mesh). ``SceneGraph.poses(q)``
is every link's world pose from the Model's forward kinematics. No browser, no server: the
backend (``server.py``) sends this."""
from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._jit import kernel
from ..contact.geometry import mesh_path
from ..contact.heightfield import mesh
from ..dynamics.kinematics import pose_step
from ..model import Model, ModelError
from ..spatial import rpy_matrix

DEFAULT_COLOR = (0.7, 0.7, 0.75, 1.0)


class MeshWarning(UserWarning):
    """A mesh file that cannot be found or read: the link is drawn without it."""


@dataclass
class Geometry:
    """One shape in its link's frame. ``kind``: sphere (size: radius), box (size: full
    extents), cylinder (size: radius, length; about z) or mesh (``mesh``: the file, ``size``:
    its scale)."""

    kind: str
    size: np.ndarray
    R: np.ndarray
    p: np.ndarray
    color: tuple = DEFAULT_COLOR
    mesh: Path | None = None


@dataclass
class LinkNode:
    """A link: ``body`` the Model's joint that moves it (-1: the world), ``R``, ``p`` its
    placement in that joint's frame."""

    name: str
    body: int
    R: np.ndarray
    p: np.ndarray
    visual: list = field(default_factory=list)
    collision: list = field(default_factory=list)


@dataclass
class SceneGraph:
    """The links of a model (or a scene's models), its ground (unit normal, height; zeros:
    none), static boxes ((k, 15): R row-major, centre, half extents), heightfield (the packed
    vector of contact.heightfield; empty: none), the warnings met."""

    model: Model
    links: list
    ground: np.ndarray = field(default_factory=lambda: np.zeros(4))
    boxes: np.ndarray = field(default_factory=lambda: np.zeros((0, 15)))
    box_names: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    terrain: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def terrain_mesh(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(vertices (n, 3), faces (m, 3)) of the heightfield, the triangles detection uses;
        None without one."""
        return mesh(self.terrain) if self.terrain.size else None

    def body_poses(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every joint's (body's) world rotation (nj, 3, 3) and position (nj, 3) at q."""
        nj = self.model.joint_int.shape[0]
        oR, op = np.zeros((nj, 3, 3)), np.zeros((nj, 3))
        body_poses(self.model.joint_int, self.model.joint_real, np.asarray(q, dtype=float),
                   oR, op, np.zeros((3, 3)), np.zeros(3))
        return oR, op

    def poses(self, q: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Every link's world pose (R, p) at q."""
        oR, op = self.body_poses(q)
        out = {}
        for link in self.links:
            if link.body < 0:
                out[link.name] = (link.R, link.p)
            else:
                out[link.name] = (oR[link.body] @ link.R, op[link.body] + oR[link.body] @ link.p)
        return out

    def centre_of_mass(self, q: np.ndarray) -> np.ndarray:
        """The model's centre of mass in the world at q (bodies only; fixed mass excluded)."""
        oR, op = self.body_poses(q)
        mass = self.model.joint_real[:, 15]
        com = self.model.joint_real[:, 16:19]
        points = op + np.einsum("nij,nj->ni", oR, com)
        total = mass.sum()
        return points.T @ mass / total if total > 0 else np.zeros(3)


@kernel
def body_poses(joint_int, joint_real, q, oR, op, Rq, pq):
    """oR, op of every joint at q (parents first, as the Model orders them)."""
    for i in range(joint_int.shape[0]):
        pose_step(i, joint_int, joint_real, q, oR, op, Rq, pq)


def _floats(element: ET.Element | None, key: str, n: int, default: float) -> np.ndarray:
    text = element.get(key) if element is not None else None
    if text is None:
        return np.full(n, default)
    values = np.array([float(x) for x in text.split()])
    if values.shape != (n,):
        raise ModelError(f"'{key}': expected {n} numbers, got '{text}'")
    return values


def _materials(robot: ET.Element) -> dict[str, tuple]:
    """Top-level <material name><color rgba/></material> by name."""
    out = {}
    for material in robot.findall("material"):
        color = material.find("color")
        if color is not None and material.get("name"):
            out[material.get("name")] = tuple(_floats(color, "rgba", 4, 1.0))
    return out


def _color(element: ET.Element, materials: dict) -> tuple:
    material = element.find("material")
    if material is None:
        return DEFAULT_COLOR
    color = material.find("color")
    if color is not None:
        return tuple(_floats(color, "rgba", 4, 1.0))
    return materials.get(material.get("name"), DEFAULT_COLOR)


def _shape(element: ET.Element, what: str, urdf_dir, color: tuple) -> Geometry | None:
    """The Geometry of a <visual> or <collision>; None (and a MeshWarning naming the file)
    for a mesh that cannot be found."""
    origin = element.find("origin")
    R = rpy_matrix(_floats(origin, "rpy", 3, 0.0))
    p = _floats(origin, "xyz", 3, 0.0)
    geometry = element.find("geometry")
    for child in (geometry if geometry is not None else []):
        if child.tag == "sphere":
            return Geometry("sphere", _floats(child, "radius", 1, 0.0), R, p, color)
        if child.tag == "box":
            return Geometry("box", _floats(child, "size", 3, 0.0), R, p, color)
        if child.tag == "cylinder":
            size = np.concatenate([_floats(child, "radius", 1, 0.0),
                                   _floats(child, "length", 1, 0.0)])
            return Geometry("cylinder", size, R, p, color)
        if child.tag == "mesh":
            try:
                path = mesh_path(child.get("filename", ""), urdf_dir, what)
            except ModelError as exc:
                warnings.warn(str(exc), MeshWarning, stacklevel=2)
                return None
            return Geometry("mesh", _floats(child, "scale", 3, 1.0), R, p, color, path)
    warnings.warn(f"{what}: <geometry> has no sphere, box, cylinder or mesh", MeshWarning,
                  stacklevel=2)
    return None


def _frames(xml_text: str, floating: bool) -> dict:
    """pinocchio's body frames of the URDF (our joint i = pinocchio joint i + 1)."""
    import pinocchio as pin

    if floating:
        model = pin.buildModelFromXML(xml_text, pin.JointModelFreeFlyer())
    else:
        model = pin.buildModelFromXML(xml_text)
    return {f.name: f for f in model.frames if f.type == pin.FrameType.BODY}


def urdf_links(xml_text: str, urdf_dir=None, *, floating: bool = False, prefix: str = "",
               body_offset: int = 0) -> tuple[list, list]:
    """The LinkNodes of a URDF (names with ``prefix``, bodies shifted by ``body_offset``) and
    the warnings met (meshes not found): a link whose visual mesh is missing is drawn with its
    collision geometry."""
    robot = ET.fromstring(xml_text)
    materials = _materials(robot)
    frames = _frames(xml_text, floating)
    links, messages = [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MeshWarning)
        for link in robot.findall("link"):
            name = link.get("name")
            frame = frames[name]
            body = frame.parentJoint - 1
            node = LinkNode(prefix + name, body + body_offset if body >= 0 else -1,
                            np.array(frame.placement.rotation),
                            np.array(frame.placement.translation))
            for role in ("visual", "collision"):
                for k, element in enumerate(link.findall(role)):
                    shape = _shape(element, f"link '{name}' <{role}> {k}", urdf_dir,
                                   _color(element, materials) if role == "visual"
                                   else (0.9, 0.5, 0.2, 0.6))
                    if shape is not None:
                        getattr(node, role).append(shape)
            links.append(node)
    messages = [str(w.message) for w in caught if issubclass(w.category, MeshWarning)]
    return links, messages


def urdf_graph(model: Model, urdf_source) -> SceneGraph:
    """The SceneGraph of a Model loaded from a URDF (a file path or XML text)."""
    from ..model.urdf import read_urdf

    xml_text, label = read_urdf(urdf_source)
    urdf_dir = Path(label).resolve().parent if Path(label).is_file() else None
    links, messages = urdf_links(xml_text, urdf_dir, floating="free_flyer" in model.joint_kinds)
    return SceneGraph(model, links, warnings=messages)


def scene_graph(scene) -> SceneGraph:
    """The SceneGraph of a loaded contact Scene: each model's links (prefixed ``<name>/`` when
    there are several, as the scene's Model names them), placed where the scene puts them, the
    ground, the static boxes and the heightfield."""
    several = len(scene.sources) > 1
    links, messages = [], []
    for (name, xml, floating, position, rotation), (_, first, _) in zip(scene.sources,
                                                                        scene.models):
        part, found = urdf_links(xml, None, floating=floating,
                                 prefix=f"{name}/" if several else "", body_offset=first)
        for link in part:
            if link.body < 0:  # on the world: the scene's placement of a fixed model
                link.R, link.p = rotation @ link.R, position + rotation @ link.p
        links += part
        messages += found
    return SceneGraph(scene.model, links, ground=scene.ground.copy(),
                      boxes=np.asarray(scene.boxes, dtype=float).reshape(-1, 15),
                      box_names=list(scene.box_names), warnings=messages,
                      terrain=scene.terrain.copy())
