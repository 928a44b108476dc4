"""Scenes: a ground plane, static boxes and several models at once (robots from URDF, free
objects), with the contact material, read from YAML or a dict (docs/COMPLIANT.md#scenes).

    ground: {height: 0.0, normal: [0, 0, 1], friction: 0.5,
             youngs_modulus: 2.0e11, poisson_ratio: 0.3,   # Hertz, or a plain stiffness:
             stiffness: 1.0e6, damping: 100.0}
    boxes: [{name: step, size: [x, y, z], position: [...], orientation: [qx, qy, qz, qw]}]
    heightfield: {heights: [[0, 0, 0], [0.1, 0.2, 0.1]],  # or file: a .npy or a grey PNG
                  size: [x, y], position: [x, y, z]}      # instead of ground's plane
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

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..model.model import ConfigError
from ..model.resources import resolve_urdf
from ..model.settings import initial_configuration, set_armature
from ..model import Model, ModelError, load_urdf, merge
from ..model.model import JointSpec
from ..model.urdf import read_urdf
from ..schema import SchemaError, load_yaml, nearest, validate
from ..schema.scene import Ground, Heightfield, ModelEntry, SceneSpec, StaticBox, check_grid
from .geometry import BOX, SPHERE, Shapes, shapes_from_urdf
from .heightfield import pack, read_heights


class SceneError(SchemaError):
    """A scene item that cannot be used; the message names it (schema/scene.py is what a
    scene may hold)."""


@dataclass
class Material:
    """Contact material of the scene: a Hertz pair (Young's modulus, Poisson ratio; both
    bodies of this material) or a plain stiffness (N/m); damping N s/m (plain) or the
    Hunt-Crossley dissipation (s/m, Hertz); Coulomb friction; restitution of Hertz impacts."""

    friction: float = 0.5
    youngs_modulus: float | None = None
    poisson_ratio: float = 0.3
    stiffness: float | None = None
    damping: float = 0.0
    dissipation: float = 0.0
    restitution: float = 0.0  # Hertz impacts (integrators/impacts.py)

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
    terrain: np.ndarray = field(default_factory=lambda: np.zeros(0))  # heightfield.pack; empty
    box_restitution: np.ndarray = field(default_factory=lambda: np.zeros(0))  # NaN: the ground's


def quaternion_to_matrix(quat) -> np.ndarray:
    x, y, z, w = quat
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _material(ground: Ground) -> Material:
    """The scene's material from its ground entry (steel when it gives no stiffness)."""
    youngs = ground.youngs_modulus
    if ground.stiffness is None and youngs is None:
        youngs = 2.0e11  # steel
    return Material(friction=ground.friction, youngs_modulus=youngs,
                    poisson_ratio=ground.poisson_ratio, stiffness=ground.stiffness,
                    damping=ground.damping, dissipation=ground.dissipation,
                    restitution=ground.restitution)


def _object_urdf(item: ModelEntry) -> str:
    """The URDF of a free object given as {sphere: {radius, mass}} or {box: {size, mass}}."""
    name = item.name or "object"
    if item.sphere is not None:
        r, m = item.sphere.radius, item.sphere.mass
        ixx = iyy = izz = 0.4 * m * r * r
        geometry = f'<sphere radius="{r!r}"/>'
    else:
        x, y, z = item.box.size
        m = item.box.mass
        ixx, iyy, izz = m * (y * y + z * z) / 12, m * (x * x + z * z) / 12, m * (x * x + y * y) / 12
        geometry = f'<box size="{x!r} {y!r} {z!r}"/>'
    return (f'<robot name="{name}"><link name="{name}"><inertial><mass value="{m!r}"/>'
            f'<inertia ixx="{ixx!r}" iyy="{iyy!r}" izz="{izz!r}" ixy="0" ixz="0" iyz="0"/>'
            f'</inertial><collision><geometry>{geometry}</geometry></collision></link></robot>')


def _load_model(item: ModelEntry, where: str, base_dir) -> tuple[Model, Shapes, bool, str, str]:
    """(model, shapes, floating, name, URDF text) of one models entry."""
    import pinocchio as pin

    urdf_dir = None
    if item.urdf is None:
        xml, floating = _object_urdf(item), True
    else:
        try:
            path = resolve_urdf(item.urdf, base_dir)
            xml = read_urdf(path)[0]
        except (ConfigError, ModelError) as exc:
            raise SceneError(f"{where}.urdf: {exc}") from None
        floating = item.floating_base
        urdf_dir = path.resolve().parent
    try:
        model = load_urdf(xml, floating_base=floating, balance_inertia=item.balance_inertia)
        set_armature(model, item.armature, f"{where}.armature")
        pin_model = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()) \
            if floating else pin.buildModelFromXML(xml)
        shapes = shapes_from_urdf(xml, pin_model, urdf_dir, meshes=item.meshes)
    except ConfigError as exc:
        raise SceneError(str(exc)) from None
    except ModelError as exc:
        raise SceneError(f"{where}: {exc}") from None
    _add_contact_spheres(item, where, pin_model, shapes)
    return model, shapes, floating, item.name or model.name, xml


def _add_contact_spheres(item: ModelEntry, where: str, pin_model, shapes: Shapes) -> None:
    """contact_spheres: [{link, radius, position}] added to the URDF's shapes (feet whose
    collision geometry is a mesh)."""
    frames = {f.name: f for f in pin_model.frames}
    for k, sphere in enumerate(item.contact_spheres):
        if sphere.link not in frames:
            guess = nearest(sphere.link, frames)
            raise SceneError(f"{where}.contact_spheres[{k}].link: no link or frame named "
                             f"{sphere.link!r}" + (f" (did you mean {guess}?)" if guess else ""))
        frame = frames[sphere.link]
        R, p = np.array(frame.placement.rotation), np.array(frame.placement.translation)
        shapes.append(frame.parentJoint - 1, SPHERE, R, p + R @ np.array(sphere.position),
                      [sphere.radius, 0, 0], sphere.link)


def _foundation(item: ModelEntry, where: str, shapes: Shapes, material: Material) -> Shapes:
    """An elastic foundation (Winkler) under a box's bottom face (-z in the box frame): the box
    touches the ground through an N x N grid of element points (the elements' centres, points of
    radius 0) instead of its corners. Element e is a spring-damper of its own, k_e = E A_e /
    depth (E the ground's Young's modulus), damping the face's ``damping`` (N s/m) shared by
    area; each acts only while compressed (Drumwright 2019, section 5.5)."""
    spec = item.foundation
    if material.youngs_modulus is None:
        raise SceneError(f"{where}.foundation: needs the ground's youngs_modulus (the ground "
                         f"gives a plain stiffness)")
    depth, n, face_damping = spec.depth, spec.elements, spec.damping
    box = int(np.flatnonzero(shapes.kind == BOX)[0])
    half = shapes.size[box]
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


def _static_boxes(items: list[StaticBox]) -> tuple[np.ndarray, list, np.ndarray]:
    """(k, 15) boxes (R row-major, centre, half extents), their names and their own
    restitutions (NaN: the ground's)."""
    rows, names = [], []
    for k, item in enumerate(items):
        R = quaternion_to_matrix(item.orientation)
        rows.append(np.concatenate([R.reshape(9), item.position, 0.5 * np.array(item.size)]))
        names.append(item.name or f"box{k}")
    restitution = np.array([math.nan if item.restitution is None else item.restitution
                            for item in items])
    return (np.array(rows) if rows else np.zeros((0, 15))), names, restitution


def _terrain(spec: Heightfield | None, base_dir: Path | None) -> np.ndarray:
    """The heightfield packed for detection (heightfield.pack); empty without one."""
    if spec is None:
        return np.zeros(0)
    if spec.file is None:
        heights = np.array(spec.heights, dtype=float)
    else:
        path = Path(spec.file)
        path = path if path.is_absolute() or base_dir is None else base_dir / path
        try:
            heights = read_heights(path, spec.max_height)
            if heights.ndim != 2:
                raise ValueError(f"{path}: expected a 2-D grid, got shape {heights.shape}")
            check_grid(heights)
        except (OSError, ValueError) as exc:
            raise SceneError(f"heightfield.file: {exc}") from None
    return pack(heights, spec.size, spec.position)


def read_scene(scene: str | Path | dict) -> tuple[SceneSpec, Path | None]:
    """A scene file or dict checked against its schema (SceneError names every problem), and
    the folder its relative URDF paths start from."""
    if isinstance(scene, dict):
        return validate(SceneSpec, scene, "scene", SceneError), None
    import yaml

    path = Path(scene)
    try:
        data = load_yaml(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SceneError(f"cannot read scene {path}: {exc}") from None
    return validate(SceneSpec, data, f"scene {path}", SceneError), path.resolve().parent


def load_scene(scene: str | Path | dict) -> Scene:
    """A Scene from a YAML file path or the same structure as a dict; SceneError names the
    item that is wrong."""
    spec, base_dir = read_scene(scene)
    ground = np.zeros(4)
    material = _material(spec.ground or Ground())
    if spec.ground is not None and spec.heightfield is None:
        normal = np.array(spec.ground.normal)
        ground[:3] = normal / np.linalg.norm(normal)
        ground[3] = spec.ground.height
    boxes, box_names, box_restitution = _static_boxes(spec.boxes)
    models, shapes, q_parts, summary, sources = [], [], [], [], []
    for k, item in enumerate(spec.models):
        where = f"models[{k}]"
        model, model_shapes, floating, name, xml = _load_model(item, where, base_dir)
        if item.foundation is not None:
            model_shapes = _foundation(item, where, model_shapes, material)
        model_shapes.restitution = np.full(
            len(model_shapes), math.nan if item.restitution is None else item.restitution)
        try:
            q = initial_configuration(model, item.initial_positions,
                                      key=f"{where}.initial_positions")
        except ConfigError as exc:
            raise SceneError(str(exc)) from None
        rotation = quaternion_to_matrix(item.orientation)
        position = np.array(item.position)
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
    if spec.gravity is not None:
        merged.gravity = np.array(spec.gravity)
    all_shapes = Shapes.concatenate(shapes, [s[1] for s in summary])
    return Scene(model=merged, shapes=all_shapes, q0=np.concatenate(q_parts), ground=ground,
                 boxes=boxes, box_names=box_names, material=material, models=summary,
                 sources=sources, terrain=_terrain(spec.heightfield, base_dir),
                 box_restitution=box_restitution)
