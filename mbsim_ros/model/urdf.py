"""URDF -> Model: checked with ElementTree first (so errors name the element), then parsed by
pinocchio (urdfdom, which merges fixed joints into their parent body) and converted to our arrays.
"""
from __future__ import annotations

import math
import os
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .model import JointSpec, Model, ModelError

_SUPPORTED_TYPES = {"revolute", "continuous", "prismatic", "fixed", "floating"}
_KNOWN_TYPES = _SUPPORTED_TYPES | {"planar"}
_INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


def load_urdf(source: str | os.PathLike, *, floating_base: bool = False,
              balance_inertia: bool = False) -> Model:
    """Load a URDF (a file path or the XML text itself, as ROS's ``robot_description``).

    ``floating_base=True`` puts a free-flyer joint named ``root_joint`` under the root link.
    Raises ModelError naming the element (link or joint) and the reason when the URDF is
    malformed or uses an unsupported joint type. What urdfdom accepts loads: leading
    whitespace before ``<?xml``, a model without a movable joint (nv = 0: a static object),
    point masses and zero principal moments. Link inertias (docs/MODEL.md#link-inertias):
    a principal moment negative by less than ``INERTIA_ROUNDING`` times the robot's largest
    principal moment is clipped to zero (a warning names the link); a larger negative one is a
    ModelError, unless ``balance_inertia=True`` (MuJoCo's ``balanceinertia``), which replaces
    every inertia that is not physical (not positive semidefinite, or breaking the triangle
    inequality) by the nearest physical one (``nearest_physical_inertia``), with a warning.
    Whether joint-space inertia is singular (a joint that moves no mass) is not checked here:
    the Simulator checks it (dynamics.checks.check_mass_matrix).
    """
    xml_text, label = read_urdf(source)
    element = _parse_xml(xml_text, label)
    robot = _check_structure(element, label)
    if _physical_inertias(element, label, balance_inertia):
        xml_text = ET.tostring(element, encoding="unicode")
    pin_model = _parse_with_pinocchio(xml_text, label, floating_base and not robot.root_floating)
    return _convert(pin_model, robot, label)


def read_urdf(source: str | os.PathLike) -> tuple[str, str]:
    """(XML text, label for messages) of a URDF file path or XML text. Whitespace (and a byte
    order mark) before the first element or ``<?xml ...?>`` is dropped, as urdfdom (TinyXML)
    accepts it and strict XML parsers (ElementTree, pinocchio's) do not."""
    if isinstance(source, str) and source.lstrip().startswith("<"):
        return _without_prolog_space(source), "URDF string"
    path = Path(source)
    if not path.is_file():
        raise ModelError(f"URDF file not found: {path}")
    try:
        return _without_prolog_space(path.read_text()), str(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelError(f"{path}: cannot read: {exc}") from exc


def _without_prolog_space(text: str) -> str:
    return text.lstrip("\ufeff \t\r\n")


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


def _parse_xml(xml_text: str, label: str) -> ET.Element:
    try:
        robot = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise ModelError(f"{label}: not well-formed XML: {exc}") from exc
    if robot.tag != "robot":
        raise ModelError(f"{label}: the root element is <{robot.tag}>, expected <robot>")
    return robot


def _check_structure(robot: ET.Element, label: str) -> _RobotOutline:
    """Names, tree shape, joint types and numbers checked (inertias: _physical_inertias)."""
    links = {}
    for link in robot.findall("link"):
        name = link.get("name")
        if not name:
            raise ModelError(f"{label}: a <link> has no name attribute")
        if name in links:
            raise ModelError(f"{label}: link '{name}' is defined twice")
        links[name] = link
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


INERTIA_ROUNDING = 1e-6  # relative to the robot's largest principal moment
_ZERO = 1e-12  # relative: a moment this small is zero (a point mass written with noise)
_METRE2 = 1.0  # m^2: a link's mass times this is the other scale of "zero" (kg m^2)


@dataclass
class _LinkInertia:
    link: str
    mass: float
    element: ET.Element  # the <inertia> element
    matrix: np.ndarray  # (3, 3) about the centre of mass, the <inertial> frame's axes


def _link_inertias(robot: ET.Element, label: str) -> list[_LinkInertia]:
    """Each link's rotational inertia; ModelError for a negative or non-finite mass or
    non-numeric entries."""
    found = []
    for link in robot.findall("link"):
        inertial = link.find("inertial")
        if inertial is None:
            continue
        what = f"link '{link.get('name')}'"
        mass_el = inertial.find("mass")
        mass = _number(mass_el, "value", what + " mass", label) if mass_el is not None else 0.0
        if not math.isfinite(mass) or mass < 0.0:
            raise ModelError(f"{label}: {what}: mass {mass} must be finite and non-negative")
        _vector(inertial.find("origin"), "xyz", what, label)
        _vector(inertial.find("origin"), "rpy", what, label)
        element = inertial.find("inertia")
        if element is None:
            continue
        xx, xy, xz, yy, yz, zz = (_number(element, k, what + " inertia", label, 0.0)
                                  for k in _INERTIA_KEYS)
        matrix = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        if not np.all(np.isfinite(matrix)):
            raise ModelError(f"{label}: {what}: inertia has non-finite entries")
        found.append(_LinkInertia(link.get("name"), mass, element, matrix))
    return found


def _physical_inertias(robot: ET.Element, label: str, balance: bool) -> bool:
    """Check (and where allowed repair, in the XML tree) every link's rotational inertia
    against the robot's scale s, its largest principal moment: moments above -1e-12 z are
    zeros (legal; z the larger of s and the link's mass times 1 m^2, so that a point mass
    written with noise is legal on its own too); moments down to -INERTIA_ROUNDING s are
    rounding, clipped to zero with a warning; a more negative moment is a ModelError unless
    ``balance``. Inertias that break the triangle inequality (by more than INERTIA_ROUNDING s)
    are warned about and simulated as given, or with ``balance`` replaced by the nearest
    physical inertia.
    Returns True when the tree was changed (pinocchio must parse the rewritten XML)."""
    inertias = _link_inertias(robot, label)
    moments = [np.linalg.eigvalsh(item.matrix) for item in inertias]
    scale = max((float(np.abs(w).max()) for w in moments), default=0.0)
    rounding = INERTIA_ROUNDING * scale
    clipped, gross, unbalanced = [], [], []
    for item, w in zip(inertias, moments):
        zero = _ZERO * max(scale, item.mass * _METRE2)
        if w[0] < -max(rounding, zero):  # beyond rounding
            gross.append((item, w))
        elif w[0] < -zero:
            clipped.append((item, w))
            _write_inertia(item, _with_moments(item.matrix, np.maximum(w, 0.0)))
            w = np.maximum(w, 0.0)
        tolerance = max(rounding, zero)
        if w[0] >= -tolerance and w[0] + w[1] < w[2] - tolerance:
            unbalanced.append((item, w))
    if gross and not balance:
        links = "; ".join(f"link '{item.link}': principal moments {_fmt(w)}"
                          for item, w in gross)
        raise ModelError(f"{label}: {links}: inertia not positive semidefinite (beyond "
                         f"rounding); load with balance_inertia=True (config or scene key "
                         f"balance_inertia, node parameter balance_inertia) to use the "
                         f"nearest physical inertia")
    if clipped:
        warnings.warn(f"{label}: principal moments negative within rounding (below "
                      f"{INERTIA_ROUNDING:g} of the robot's largest, {scale:.3g} kg m^2) "
                      f"clipped to zero: "
                      + "; ".join(f"link '{item.link}' {_fmt(w)}" for item, w in clipped),
                      stacklevel=3)
    if balance and (gross or unbalanced):
        changes = []
        for item, w in gross + unbalanced:
            repaired = nearest_physical_inertia(item.matrix)
            _write_inertia(item, repaired)
            changes.append(f"link '{item.link}' {_fmt(w)} -> "
                           f"{_fmt(np.linalg.eigvalsh(repaired))}")
        warnings.warn(f"{label}: balance_inertia: inertias replaced by the nearest physical "
                      f"ones (principal moments, kg m^2): " + "; ".join(changes), stacklevel=3)
    elif unbalanced:
        warnings.warn(f"{label}: the inertias of links {[item.link for item, _ in unbalanced]} "
                      f"violate the triangle inequality (no rigid body has them); simulated "
                      f"as given (balance_inertia=True replaces them)", stacklevel=3)
    return bool(clipped or (balance and (gross or unbalanced)))


def nearest_physical_inertia(inertia: np.ndarray) -> np.ndarray:
    """The physical rotational inertia nearest to ``inertia`` (3 x 3, symmetric) in the
    Frobenius norm: principal moments (l1, l2, l3) satisfying the triangle inequality
    l_i + l_j >= l_k (which implies l >= 0: positive semidefinite), the principal axes kept.
    The physical inertias form a convex cone whose membership depends on the eigenvalues only,
    so the nearest one keeps the eigenvectors and projects the eigenvalues onto the polyhedral
    cone {l : A l >= 0} (Lewis, 1996, "Convex analysis on the Hermitian matrices"); that
    projection is found exactly by trying each set of active constraints (8 sets). MuJoCo's
    ``balanceinertia`` instead sets every moment to their mean."""
    w, axes = np.linalg.eigh(np.asarray(inertia, dtype=float))
    return axes @ np.diag(_project_on_triangle_cone(w)) @ axes.T


_TRIANGLE = np.array([[1.0, 1.0, -1.0], [1.0, -1.0, 1.0], [-1.0, 1.0, 1.0]])


def _project_on_triangle_cone(w: np.ndarray) -> np.ndarray:
    tolerance = 1e-12 * max(float(np.abs(w).max()), 1e-300)
    best, best_distance = None, np.inf
    for mask in range(8):
        active = _TRIANGLE[[k for k in range(3) if mask >> k & 1]]
        x = w - active.T @ np.linalg.solve(active @ active.T, active @ w) if len(active) else w
        distance = float(np.linalg.norm(x - w))
        if np.all(_TRIANGLE @ x >= -tolerance) and distance < best_distance:
            best, best_distance = x, distance
    return best


def _with_moments(matrix: np.ndarray, moments: np.ndarray) -> np.ndarray:
    axes = np.linalg.eigh(matrix)[1]
    return axes @ np.diag(moments) @ axes.T


def _write_inertia(item: _LinkInertia, matrix: np.ndarray) -> None:
    for key, (r, c) in zip(_INERTIA_KEYS, ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))):
        item.element.set(key, repr(float(matrix[r, c])))


def _fmt(moments: np.ndarray) -> str:
    return "(" + ", ".join(f"{m:.4g}" for m in moments) + ")"


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
