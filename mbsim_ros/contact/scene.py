"""Scenes: a ground plane, static boxes and several models at once (robots from URDF, free
objects), with the contact material, read from YAML or a dict (docs/COMPLIANT.md#scenes).

    ground: {height: 0.0, normal: [0, 0, 1], friction: 0.5,
             youngs_modulus: 2.0e11, poisson_ratio: 0.3,   # Hertz, or a plain stiffness:
             stiffness: 1.0e6, damping: 100.0}
    boxes: [{name: step, size: [x, y, z], position: [...], orientation: [qx, qy, qz, qw]}]
    models:
      - {urdf: arm7, floating_base: false, position: [0, 0, 0], orientation: [0, 0, 0, 1]}
      - {sphere: {radius: 0.05, mass: 1.0}, position: [0.5, 0, 0.3], name: ball}
      - {box: {size: [0.1, 0.2, 0.05], mass: 1.0}, position: [...], name: brick}
      - {box: {size: [0.1, 0.1, 0.1], mass: 1.0}, foundation: {depth: 1.0, elements: 10}}
      - {urdf: solo12, floating_base: true, meshes: false,    # meshes: true (default) loads
         contact_spheres: [{link: FL_FOOT, radius: 0.016}]}  # the collision meshes' hulls
      - {urdf: romeo, balance_inertia: false,                 # load options of load_urdf
         armature: {LFinger21: 1.0e-4},                        # rotor inertia by joint name
         initial_positions: {LShoulderPitch: 0.3}}             # the start posture by name
      - {urdf: quadrotor_base.urdf}   # no movable joint: a static object, its shapes fixed
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..model.model import ConfigError
from ..model.resources import resolve_urdf
from ..model.settings import initial_configuration, set_armature
from ..model import Model, ModelError, load_urdf, merge
from ..model.model import JointSpec
from ..model.urdf import read_urdf
from .geometry import BOX, SPHERE, Shapes, shapes_from_urdf


class SceneError(ValueError):
    """A scene item that cannot be used; the message names it."""


@dataclass
class Material:
    """Contact material of the scene: a Hertz pair (Young's modulus, Poisson ratio; both
    bodies of this material) or a plain stiffness (N/m); damping N s/m (plain) or the
    Hunt-Crossley dissipation (s/m, Hertz); Coulomb friction."""

    friction: float = 0.5
    youngs_modulus: float | None = None
    poisson_ratio: float = 0.3
    stiffness: float | None = None
    damping: float = 0.0
    dissipation: float = 0.0

    @property
    def effective_modulus(self) -> float:
        """E* of two bodies of this material: 1/E* = 2 (1 - nu^2) / E."""
        return self.youngs_modulus / (2.0 * (1.0 - self.poisson_ratio ** 2))


@dataclass
class Scene:
    model: Model
    shapes: Shapes
    q0: np.ndarray
    ground: np.ndarray            # (4,): unit normal, height; zeros: no ground
    boxes: np.ndarray             # (k, 15): R row-major, centre, half extents
    box_names: list
    material: Material
    models: list = field(default_factory=list)   # (name, first joint, number of joints)
    # per model: (name, URDF text, floating, position, rotation matrix), in models' order
    sources: list = field(default_factory=list)


def _number(item: dict, key: str, where: str, default=None, *, positive=False,
            non_negative=False) -> float | None:
    value = item.get(key, default)
    if value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise SceneError(f"{where}.{key}: expected a number, got {value!r}") from None
    if not np.isfinite(value) or (positive and value <= 0) or (non_negative and value < 0):
        need = "positive" if positive else "non-negative" if non_negative else "finite"
        raise SceneError(f"{where}.{key}: must be {need}, got {value}")
    return value


def _vector(item: dict, key: str, where: str, n: int, default) -> np.ndarray:
    value = item.get(key, default)
    try:
        out = np.array(value, dtype=float).reshape(n)
    except (TypeError, ValueError):
        raise SceneError(f"{where}.{key}: expected {n} numbers, got {value!r}") from None
    if not np.all(np.isfinite(out)):
        raise SceneError(f"{where}.{key}: not finite")
    return out


def _unit_quaternion(item: dict, where: str) -> np.ndarray:
    quat = _vector(item, "orientation", where, 4, [0, 0, 0, 1])
    norm = np.linalg.norm(quat)
    if abs(norm - 1.0) > 1e-6:
        raise SceneError(f"{where}.orientation: (qx, qy, qz, qw) must be a unit quaternion, "
                         f"norm {norm:.6g}")
    return quat


def quaternion_to_matrix(quat) -> np.ndarray:
    x, y, z, w = quat
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _material(ground: dict) -> Material:
    where = "ground"
    material = Material(friction=_number(ground, "friction", where, 0.5, non_negative=True))
    material.stiffness = _number(ground, "stiffness", where, positive=True)
    material.youngs_modulus = _number(ground, "youngs_modulus", where, positive=True)
    material.poisson_ratio = _number(ground, "poisson_ratio", where, 0.3, non_negative=True)
    if material.poisson_ratio >= 0.5:
        raise SceneError(f"ground.poisson_ratio: must be below 0.5, got {material.poisson_ratio}")
    material.damping = _number(ground, "damping", where, 0.0, non_negative=True)
    material.dissipation = _number(ground, "dissipation", where, 0.0, non_negative=True)
    if material.stiffness is None and material.youngs_modulus is None:
        material.youngs_modulus = 2.0e11  # steel
    if material.stiffness is not None and material.youngs_modulus is not None:
        raise SceneError("ground: give either stiffness or youngs_modulus, not both")
    return material


def _object_urdf(item: dict, where: str) -> str:
    """The URDF of a free object given as {sphere: {radius, mass}} or {box: {size, mass}}."""
    name = item.get("name", "object")
    if "sphere" in item:
        spec = item["sphere"] or {}
        r = _number(spec, "radius", f"{where}.sphere", positive=True)
        m = _number(spec, "mass", f"{where}.sphere", 1.0, positive=True)
        if r is None:
            raise SceneError(f"{where}.sphere.radius: missing")
        inertia = 0.4 * m * r * r
        geometry = f'<sphere radius="{r!r}"/>'
        ixx = iyy = izz = inertia
    else:
        spec = item["box"] or {}
        size = _vector(spec, "size", f"{where}.box", 3, None)
        if np.any(size <= 0):
            raise SceneError(f"{where}.box.size: must be positive, got {size.tolist()}")
        m = _number(spec, "mass", f"{where}.box", 1.0, positive=True)
        x, y, z = (float(v) for v in size)
        ixx, iyy, izz = m * (y * y + z * z) / 12, m * (x * x + z * z) / 12, m * (x * x + y * y) / 12
        geometry = f'<box size="{x!r} {y!r} {z!r}"/>'
    return (f'<robot name="{name}"><link name="{name}"><inertial><mass value="{m!r}"/>'
            f'<inertia ixx="{ixx!r}" iyy="{iyy!r}" izz="{izz!r}" ixy="0" ixz="0" iyz="0"/>'
            f'</inertial><collision><geometry>{geometry}</geometry></collision></link></robot>')


def _load_model(item: dict, where: str, base_dir) -> tuple[Model, Shapes, bool, str, str]:
    """(model, shapes, floating, name, URDF text) of one models entry."""
    import pinocchio as pin

    urdf_dir = None
    if "sphere" in item or "box" in item:
        xml, floating = _object_urdf(item, where), True
    elif "urdf" in item:
        try:
            path = resolve_urdf(str(item["urdf"]), base_dir)
        except ConfigError as exc:
            raise SceneError(f"{where}.urdf: {exc}") from None
        try:
            xml = read_urdf(path)[0]
        except ModelError as exc:
            raise SceneError(f"{where}.urdf: {exc}") from None
        floating = _flag(item, "floating_base", where)
        urdf_dir = path.resolve().parent
    else:
        raise SceneError(f"{where}: needs 'urdf', 'sphere' or 'box'")
    try:
        model = load_urdf(xml, floating_base=floating,
                          balance_inertia=_flag(item, "balance_inertia", where))
        set_armature(model, item.get("armature"), f"{where}.armature")
        pin_model = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()) \
            if floating else pin.buildModelFromXML(xml)
        shapes = shapes_from_urdf(xml, pin_model, urdf_dir,
                                  meshes=_flag(item, "meshes", where, True))
    except ConfigError as exc:
        raise SceneError(str(exc)) from None
    except ModelError as exc:
        raise SceneError(f"{where}: {exc}") from None
    _add_contact_spheres(item, where, pin_model, shapes)
    return model, shapes, floating, str(item.get("name", model.name)), xml


def _flag(item: dict, key: str, where: str, default: bool = False) -> bool:
    value = item.get(key, default)
    if not isinstance(value, bool):
        raise SceneError(f"{where}.{key}: expected true or false, got {value!r}")
    return value


def _add_contact_spheres(item: dict, where: str, pin_model, shapes: Shapes) -> None:
    """contact_spheres: [{link, radius, position}] added to the URDF's shapes (feet whose
    collision geometry is a mesh)."""
    extra = item.get("contact_spheres") or []
    frames = {f.name: f for f in pin_model.frames}
    for k, sphere in enumerate(extra):
        at = f"{where}.contact_spheres[{k}]"
        link = sphere.get("link")
        if link not in frames:
            raise SceneError(f"{at}.link: no link or frame named {link!r}")
        radius = _number(sphere, "radius", at, positive=True)
        if radius is None:
            raise SceneError(f"{at}.radius: missing")
        frame = frames[link]
        R, p = np.array(frame.placement.rotation), np.array(frame.placement.translation)
        local = _vector(sphere, "position", at, 3, [0, 0, 0])
        shapes.append(frame.parentJoint - 1, SPHERE, R, p + R @ local, [radius, 0, 0], link)


FOUNDATION_KEYS = {"depth", "elements", "damping"}


def _foundation(item: dict, where: str, shapes: Shapes, material: Material) -> Shapes:
    """An elastic foundation (Winkler) under a box's bottom face (-z in the box frame): the box
    touches the ground through an N x N grid of element points (the elements' centres, points of
    radius 0) instead of its corners. Element e is a spring-damper of its own, k_e = E A_e /
    depth (E the ground's Young's modulus), damping the face's ``damping`` (N s/m) shared by
    area; each acts only while compressed (Drumwright 2019, section 5.5)."""
    at = f"{where}.foundation"
    spec = item["foundation"]
    if "box" not in item:
        raise SceneError(f"{at}: only a box model ({{box: ...}}) can rest on a foundation")
    if not isinstance(spec, dict):
        raise SceneError(f"{at}: expected a mapping {{depth, elements, damping}}, got {spec!r}")
    unknown = set(spec) - FOUNDATION_KEYS
    if unknown:
        raise SceneError(f"{at}: unknown key(s) {sorted(unknown)} (expected "
                         f"{sorted(FOUNDATION_KEYS)})")
    depth = _number(spec, "depth", at, positive=True)
    if depth is None:
        raise SceneError(f"{at}.depth: missing")
    elements = spec.get("elements", 10)
    if isinstance(elements, bool) or not isinstance(elements, (int, np.integer)) or elements < 1:
        raise SceneError(f"{at}.elements: must be a whole number >= 1 (elements per side), "
                         f"got {elements!r}")
    face_damping = _number(spec, "damping", at, 0.0, non_negative=True)
    if material.youngs_modulus is None:
        raise SceneError(f"{at}: needs the ground's youngs_modulus (the ground gives a plain "
                         f"stiffness)")
    box = int(np.flatnonzero(shapes.kind == BOX)[0])
    half = shapes.size[box]
    n = int(elements)
    # element centres on the face z = -half_z, in the box frame
    u = (np.arange(n) + 0.5) / n * 2.0 - 1.0
    x, y = np.meshgrid(u * half[0], u * half[1], indexing="ij")
    local = np.stack([x.ravel(), y.ravel(), np.full(n * n, -half[2])], axis=1)
    area = 4.0 * half[0] * half[1] / (n * n)
    out = Shapes(skipped=shapes.skipped)
    out.body = np.full(n * n, shapes.body[box], dtype=np.int64)
    out.kind = np.full(n * n, SPHERE, dtype=np.int64)
    out.R = np.repeat(shapes.R[box][None], n * n, axis=0)
    out.p = shapes.p[box] + local @ shapes.R[box].T
    out.size = np.zeros((n * n, 3))
    out.link = [shapes.link[box]] * (n * n)
    out.stiffness = np.full(n * n, material.youngs_modulus * area / depth)
    out.damping = np.full(n * n, face_damping / (n * n))
    return out


def _place(model: Model, floating: bool, position, rotation, q: np.ndarray) -> Model:
    """Put a model's base at (position, rotation): the free-flyer's q, or the fixed roots'
    placements."""
    if floating:
        i = model.joint_kinds.index("free_flyer")
        iq = model.idx_q[i]
        q[iq:iq + 3] = position
        q[iq + 3:iq + 7] = _matrix_to_quaternion(rotation)
        return model
    specs = []
    for spec in model.joint_specs():
        if spec.parent < 0:
            spec = JointSpec(**{**spec.__dict__, "rotation": rotation @ spec.rotation,
                                "translation": position + rotation @ spec.translation})
        specs.append(spec)
    return Model(specs, name=model.name, fixed_mass=model.fixed_mass, gravity=model.gravity)


def _matrix_to_quaternion(R) -> np.ndarray:
    import pinocchio as pin

    return np.array(pin.Quaternion(np.asarray(R)).coeffs())


def _static_boxes(items: list) -> tuple[np.ndarray, list]:
    rows, names = [], []
    for k, item in enumerate(items or []):
        where = f"boxes[{k}]"
        size = _vector(item, "size", where, 3, None)
        if np.any(size <= 0):
            raise SceneError(f"{where}.size: must be positive, got {size.tolist()}")
        R = quaternion_to_matrix(_unit_quaternion(item, where))
        centre = _vector(item, "position", where, 3, [0, 0, 0])
        rows.append(np.concatenate([R.reshape(9), centre, 0.5 * size]))
        names.append(str(item.get("name", f"box{k}")))
    return (np.array(rows) if rows else np.zeros((0, 15))), names


def load_scene(scene: str | Path | dict) -> Scene:
    """A Scene from a YAML file path or the same structure as a dict; SceneError names the
    item that is wrong."""
    base_dir = None
    if not isinstance(scene, dict):
        import yaml

        path = Path(scene)
        try:
            scene = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise SceneError(f"cannot read scene {path}: {exc}") from None
        base_dir = path.resolve().parent
        if not isinstance(scene, dict):
            raise SceneError(f"scene {path}: expected a mapping at the top level")
    unknown = set(scene) - {"ground", "boxes", "models", "gravity"}
    if unknown:
        raise SceneError(f"scene: unknown key(s) {sorted(unknown)} (expected ground, boxes, "
                         f"models, gravity)")
    ground_item = scene.get("ground")
    ground = np.zeros(4)
    material = _material(ground_item or {})
    if ground_item is not None:
        normal = _vector(ground_item, "normal", "ground", 3, [0, 0, 1])
        if np.linalg.norm(normal) == 0:
            raise SceneError("ground.normal: must not be zero")
        ground[:3] = normal / np.linalg.norm(normal)
        ground[3] = _number(ground_item, "height", "ground", 0.0)
    boxes, box_names = _static_boxes(scene.get("boxes"))
    items = scene.get("models") or []
    if not items:
        raise SceneError("scene: 'models' lists no model")
    models, shapes, q_parts, summary, sources = [], [], [], [], []
    for k, item in enumerate(items):
        where = f"models[{k}]"
        model, model_shapes, floating, name, xml = _load_model(item, where, base_dir)
        if "foundation" in item:
            model_shapes = _foundation(item, where, model_shapes, material)
        try:
            q = initial_configuration(model, item.get("initial_positions"),
                                      key=f"{where}.initial_positions")
        except ConfigError as exc:
            raise SceneError(str(exc)) from None
        rotation = quaternion_to_matrix(_unit_quaternion(item, where))
        position = _vector(item, "position", where, 3, [0, 0, 0])
        model = _place(model, floating, position, rotation, q)
        if not floating:  # fixed roots moved: their shapes on the world move too
            world = model_shapes.body < 0
            model_shapes.p[world] = position + model_shapes.p[world] @ rotation.T
            model_shapes.R[world] = rotation @ model_shapes.R[world]
        models.append(model)
        shapes.append(model_shapes)
        q_parts.append(q)
        summary.append((name, sum(m.njoints for m in models[:-1]), model.njoints))
        sources.append((name, xml, floating, position, rotation))
    names = [s[0] for s in summary]
    if len(set(names)) != len(names):
        raise SceneError(f"models: names must be unique, got {names} (set 'name')")
    prefixes = None if len(models) == 1 else [f"{n}/" for n in names]
    merged = models[0] if len(models) == 1 else merge(models, prefixes=prefixes, name="scene")
    if "gravity" in scene:
        merged.gravity = _vector(scene, "gravity", "scene", 3, None)
    all_shapes = Shapes.concatenate(shapes, [s[1] for s in summary])
    return Scene(model=merged, shapes=all_shapes, q0=np.concatenate(q_parts), ground=ground,
                 boxes=boxes, box_names=box_names, material=material, models=summary,
                 sources=sources)
