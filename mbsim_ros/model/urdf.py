"""URDF -> Model: checked with ElementTree first (so errors name the element), then parsed by
pinocchio (urdfdom, which merges fixed joints into their parent body) and converted to our arrays.
"""
from __future__ import annotations

import math
import os
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from .model import JointSpec, Model, ModelError

_SUPPORTED_TYPES = {"revolute", "continuous", "prismatic", "fixed", "floating"}
_KNOWN_TYPES = _SUPPORTED_TYPES | {"planar"}
_INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


def load_urdf(source: str | os.PathLike, *, floating_base: bool = False) -> Model:
    """Load a URDF (a file path or the XML text itself, as ROS's ``robot_description``).

    ``floating_base=True`` puts a free-flyer joint named ``root_joint`` under the root link.
    Raises ModelError naming the element (link or joint) and the reason when the URDF is
    malformed, uses an unsupported joint type, or describes a body that cannot move.
    """
    xml_text, label = _read_source(source)
    robot = _check_structure(xml_text, label)
    pin_model = _parse_with_pinocchio(xml_text, label, floating_base and not robot.root_floating)
    model = _convert(pin_model, robot, label)
    _check_mass_matrix(model, label)
    return model


def _read_source(source: str | os.PathLike) -> tuple[str, str]:
    if isinstance(source, str) and source.lstrip().startswith("<"):
        return source, "URDF string"
    path = Path(source)
    if not path.is_file():
        raise ModelError(f"URDF file not found: {path}")
    try:
        return path.read_text(), str(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelError(f"{path}: cannot read: {exc}") from exc


class _RobotOutline:
    """What the structural check learnt about the URDF: joint -> child link and axis (URDF's
    default (1, 0, 0) when absent; pinocchio keeps the URDF's axis and sign), the root link."""

    def __init__(self, name: str, root: str, child_of_joint: dict[str, str],
                 axis_of_joint: dict[str, np.ndarray], root_floating: bool) -> None:
        self.name = name
        self.root = root
        self.child_of_joint = child_of_joint
        self.axis_of_joint = axis_of_joint
        self.root_floating = root_floating


def _check_structure(xml_text: str, label: str) -> _RobotOutline:
    try:
        robot = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise ModelError(f"{label}: not well-formed XML: {exc}") from exc
    if robot.tag != "robot":
        raise ModelError(f"{label}: the root element is <{robot.tag}>, expected <robot>")
    links = {}
    inconsistent: list[str] = []
    for link in robot.findall("link"):
        name = link.get("name")
        if not name:
            raise ModelError(f"{label}: a <link> has no name attribute")
        if name in links:
            raise ModelError(f"{label}: link '{name}' is defined twice")
        links[name] = link
        if not _check_inertial(link, label):
            inconsistent.append(name)
    if inconsistent:
        warnings.warn(f"{label}: the inertias of links {inconsistent} violate the triangle "
                      f"inequality (no rigid body has them); simulated as given", stacklevel=3)
    if not links:
        raise ModelError(f"{label}: the robot has no <link>")
    parent_of: dict[str, str] = {}
    child_of_joint: dict[str, str] = {}
    axis_of_joint: dict[str, np.ndarray] = {}
    joint_type: dict[str, str] = {}
    for joint in robot.findall("joint"):
        name = joint.get("name")
        if not name:
            raise ModelError(f"{label}: a <joint> has no name attribute")
        if name in child_of_joint:
            raise ModelError(f"{label}: joint '{name}' is defined twice")
        jtype = joint.get("type")
        if jtype not in _KNOWN_TYPES:
            raise ModelError(f"{label}: joint '{name}': unknown joint type '{jtype}'")
        if jtype not in _SUPPORTED_TYPES:
            raise ModelError(f"{label}: joint '{name}': joint type '{jtype}' is not supported "
                             f"(supported: revolute, continuous, prismatic, fixed, floating at "
                             f"the root)")
        parent, child = (_link_ref(joint, tag, name, label, links) for tag in ("parent", "child"))
        if child in parent_of:
            raise ModelError(f"{label}: joint '{name}': link '{child}' already has a parent "
                             f"joint (URDF describes trees; use closures for loops)")
        if jtype in ("revolute", "prismatic") and joint.find("limit") is None:
            raise ModelError(f"{label}: joint '{name}': a {jtype} joint needs a <limit> element")
        _check_joint_numbers(joint, name, jtype, label)
        parent_of[child] = parent
        child_of_joint[name] = child
        axis = joint.find("axis")
        axis_of_joint[name] = np.array([float(x) for x in axis.get("xyz").split()]) \
            if axis is not None and axis.get("xyz") else np.array([1.0, 0.0, 0.0])
        joint_type[name] = jtype
    roots = [link for link in links if link not in parent_of]
    if len(roots) != 1:
        raise ModelError(f"{label}: a URDF must have exactly one root link, found "
                         f"{len(roots)}: {roots[:5]} (a kinematic loop has none)")
    root = roots[0]
    root_floating = False
    for name, jtype in joint_type.items():
        if jtype != "floating":
            continue
        if parent_of[child_of_joint[name]] != root or _has_mass(links[root]):
            raise ModelError(f"{label}: joint '{name}': a floating joint is only supported "
                             f"between a massless root link and the base (or use "
                             f"floating_base=True)")
        root_floating = True
    return _RobotOutline(robot.get("name", "robot"), root, child_of_joint, axis_of_joint,
                         root_floating)


def _link_ref(joint: ET.Element, tag: str, joint_name: str, label: str, links: dict) -> str:
    element = joint.find(tag)
    ref = element.get("link") if element is not None else None
    if not ref:
        raise ModelError(f"{label}: joint '{joint_name}': missing <{tag} link=...>")
    if ref not in links:
        raise ModelError(f"{label}: joint '{joint_name}': {tag} link '{ref}' is not defined")
    return ref


def _number(element: ET.Element, key: str, what: str, label: str, default=None) -> float:
    raw = element.get(key)
    if raw is None:
        if default is None:
            raise ModelError(f"{label}: {what}: missing attribute '{key}'")
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ModelError(f"{label}: {what}: attribute {key}='{raw}' is not a number") from None
    if math.isnan(value):
        raise ModelError(f"{label}: {what}: attribute {key} is NaN")
    return value


def _vector(element: ET.Element | None, key: str, what: str, label: str) -> None:
    if element is None or element.get(key) is None:
        return
    parts = element.get(key).split()
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise ModelError(f"{label}: {what}: {key}='{element.get(key)}' is not numbers") from None
    if len(values) != 3 or not all(math.isfinite(v) for v in values):
        raise ModelError(f"{label}: {what}: {key}='{element.get(key)}' must be 3 finite numbers")


def _check_joint_numbers(joint: ET.Element, name: str, jtype: str, label: str) -> None:
    what = f"joint '{name}'"
    _vector(joint.find("origin"), "xyz", what, label)
    _vector(joint.find("origin"), "rpy", what, label)
    axis = joint.find("axis")
    _vector(axis, "xyz", what, label)
    if jtype in ("revolute", "continuous", "prismatic") and axis is not None \
            and axis.get("xyz") is not None:
        if not any(float(v) != 0.0 for v in axis.get("xyz").split()):
            raise ModelError(f"{label}: {what}: the axis is zero")
    limit = joint.find("limit")
    if limit is not None:
        lower = _number(limit, "lower", what, label, 0.0)
        upper = _number(limit, "upper", what, label, 0.0)
        if lower > upper:
            raise ModelError(f"{label}: {what}: limit lower={lower} exceeds upper={upper}")
        for key in ("effort", "velocity"):
            if _number(limit, key, what, label, 0.0) < 0.0:
                raise ModelError(f"{label}: {what}: limit {key} is negative")
    dynamics = joint.find("dynamics")
    if dynamics is not None:
        for key in ("damping", "friction"):
            if _number(dynamics, key, what, label, 0.0) < 0.0:
                raise ModelError(f"{label}: {what}: {key} is negative")


def _has_mass(link: ET.Element) -> bool:
    mass = link.find("inertial/mass")
    return mass is not None and float(mass.get("value", "0")) > 0.0


def _check_inertial(link: ET.Element, label: str) -> bool:
    """Mass >= 0 and a symmetric positive semi-definite rotational inertia, else ModelError.
    Returns False when the principal moments violate the triangle inequality (physically
    impossible, but common in published URDFs, so the caller only warns)."""
    inertial = link.find("inertial")
    if inertial is None:
        return True
    what = f"link '{link.get('name')}'"
    mass_el = inertial.find("mass")
    mass = _number(mass_el, "value", what + " mass", label) if mass_el is not None else 0.0
    if not math.isfinite(mass) or mass < 0.0:
        raise ModelError(f"{label}: {what}: mass {mass} must be finite and non-negative")
    _vector(inertial.find("origin"), "xyz", what, label)
    _vector(inertial.find("origin"), "rpy", what, label)
    inertia_el = inertial.find("inertia")
    if inertia_el is None:
        return True
    xx, xy, xz, yy, yz, zz = (_number(inertia_el, k, what + " inertia", label, 0.0)
                              for k in _INERTIA_KEYS)
    inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    if not np.all(np.isfinite(inertia)):
        raise ModelError(f"{label}: {what}: inertia has non-finite entries")
    eig = np.linalg.eigvalsh(inertia)
    scale = max(float(np.abs(eig).max()), 1e-300)
    if eig[0] < -1e-9 * scale:
        raise ModelError(f"{label}: {what}: inertia is not positive definite "
                         f"(principal moments {eig.tolist()})")
    return bool(eig[0] + eig[1] >= eig[2] * (1.0 - 1e-6) - 1e-12)


def _parse_with_pinocchio(xml_text: str, label: str, add_free_flyer: bool):
    """A URDF that has its own floating root joint already gets a free-flyer from urdfdom."""
    import pinocchio as pin

    try:
        if add_free_flyer:
            return pin.buildModelFromXML(xml_text, pin.JointModelFreeFlyer())
        return pin.buildModelFromXML(xml_text)
    except (RuntimeError, ValueError) as exc:
        raise ModelError(f"{label}: the URDF parser (urdfdom) rejected it: {exc}") from exc


def _joint_kind(short_name: str, joint_name: str, label: str) -> str:
    if short_name == "JointModelFreeFlyer":
        return "free_flyer"
    if "RUB" in short_name or "RevoluteUnbounded" in short_name:
        return "continuous"
    if short_name.startswith("JointModelR"):
        return "revolute"
    if short_name.startswith("JointModelP") and "Planar" not in short_name:
        return "prismatic"
    raise ModelError(f"{label}: joint '{joint_name}': pinocchio joint {short_name} is not "
                     f"supported")


def _convert(pin_model, robot: _RobotOutline, label: str) -> Model:
    # pinocchio's Python accessors copy the whole std::vector on each access: read them once
    # (and no pinocchio Data: it grows quadratically with the number of joints)
    names, joints = list(pin_model.names), list(pin_model.joints)
    placements, inertias = list(pin_model.jointPlacements), list(pin_model.inertias)
    parents, idx_qs, idx_vs = list(pin_model.parents), list(pin_model.idx_qs), \
        list(pin_model.idx_vs)
    lower, upper = np.array(pin_model.lowerPositionLimit), np.array(pin_model.upperPositionLimit)
    velocity, effort = np.array(pin_model.velocityLimit), np.array(pin_model.effortLimit)
    damping, friction = np.array(pin_model.damping), np.array(pin_model.friction)
    specs = []
    for i in range(1, pin_model.njoints):
        name = names[i]
        kind = _joint_kind(joints[i].shortname(), name, label)
        iq, iv = idx_qs[i], idx_vs[i]
        bounded = kind in ("revolute", "prismatic")
        specs.append(JointSpec(
            name=name, kind=kind, parent=parents[i] - 1,
            rotation=np.array(placements[i].rotation),
            translation=np.array(placements[i].translation),
            axis=robot.axis_of_joint[name] if kind != "free_flyer" else np.zeros(3),
            mass=float(inertias[i].mass), com=np.array(inertias[i].lever),
            inertia=np.array(inertias[i].inertia),
            body=robot.child_of_joint.get(name, robot.root),
            lower=float(lower[iq]) if bounded else -np.inf,
            upper=float(upper[iq]) if bounded else np.inf,
            velocity_limit=_limit_or_inf(velocity[iv]), effort_limit=_limit_or_inf(effort[iv]),
            damping=float(damping[iv]), friction=float(friction[iv])))
    return Model(specs, name=robot.name, fixed_mass=float(inertias[0].mass))


def _limit_or_inf(value: float) -> float:
    """URDF writes 'no limit' as 0 or omits it (urdfdom then reports 0 or a huge number)."""
    value = float(value)
    return np.inf if value <= 0.0 or value >= 1e30 else value


def _check_mass_matrix(model: Model, label: str) -> None:
    """A joint whose bodies have no mass or inertia along it makes the mass matrix singular and
    forward dynamics undefined: find the first such joint (Cholesky pivot) and name it.
    (The one call from the model layer down into dynamics: validation needs M(q).)"""
    from ..dynamics.crba import crba

    M = crba(model, model.neutral())
    try:
        np.linalg.cholesky(M)
        return
    except np.linalg.LinAlgError:
        pass
    scale = max(float(np.abs(np.diag(M)).max()), 1e-300)
    L = np.zeros_like(M)
    for k in range(M.shape[0]):
        pivot = M[k, k] - L[k, :k] @ L[k, :k]
        if pivot <= 1e-12 * scale:
            joint = int(np.searchsorted(model.idx_v, k, side="right")) - 1
            raise ModelError(f"{label}: joint '{model.joint_names[joint]}': the bodies it moves "
                             f"have no mass or inertia along it (the mass matrix is singular)")
        L[k, k] = math.sqrt(pivot)
        L[k + 1:, k] = (M[k + 1:, k] - L[k + 1:, :k] @ L[k, :k]) / L[k, k]
