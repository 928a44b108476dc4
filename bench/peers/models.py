"""One description, every engine's file: a fixed-base kinematic tree (our Model, loaded from
urdf/arm7.urdf or `chain_urdf`) written out as URDF (us, pinocchio, PyBullet, DART) and MJCF
(MuJoCo) with the same masses, centres of mass, inertias, joint placements and axes.

What the writers leave out on purpose, so that every engine integrates the same conservative
system: joint damping, friction and armature (zero everywhere), position limits (written as
+-LIMIT rad, never reached), visuals, and collision geometry other than the description's
contact spheres (the quadruped's feet).
Numbers are written with repr(), which round-trips a float exactly.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from mbsim_ros.model import JointSpec, Model, load_urdf

LIMIT = 1.0e4  # rad: a position limit that no workload reaches (some engines need one)
# The fixed base: PyBullet warns about a link without inertia; a fixed mass moves nothing.
BASE_LINK = ('  <link name="base"><inertial><mass value="1.0"/>'
             '<inertia ixx="1.0" ixy="0" ixz="0" iyy="1.0" iyz="0" izz="1.0"/></inertial></link>')


@dataclass(frozen=True)
class Description:
    """A named tree of revolute joints, fixed to the world or on a free-flyer root (joint 0),
    with optional contact spheres (body name, centre in the body frame, radius): the single
    source of every engine's model."""

    name: str
    joints: list[JointSpec]
    gravity: tuple[float, float, float] = (0.0, 0.0, -9.81)
    spheres: tuple[tuple[str, tuple[float, float, float], float], ...] = ()

    @property
    def floating(self) -> bool:
        return self.joints[0].kind == "free_flyer"

    @property
    def hinges(self) -> list[JointSpec]:
        """The revolute joints (every joint but a free-flyer root), in order."""
        return self.joints[1:] if self.floating else self.joints

    @property
    def nv(self) -> int:
        return len(self.hinges)

    def model(self) -> Model:
        """Our Model, loaded back from the URDF we write (so we read what the peers read)."""
        return load_urdf(urdf(self), floating_base=self.floating)


def describe(source, name: str, *, floating_base: bool = False, spheres=()) -> Description:
    """The description of a URDF (path or text) through our loader: fixed links merged into
    their parents, joints in depth-first order (pinocchio's, which every writer keeps)."""
    model = load_urdf(source, floating_base=floating_base)
    kinds = set(model.joint_kinds[1:] if floating_base else model.joint_kinds)
    if not kinds <= {"revolute", "continuous"}:
        raise ValueError(f"{name}: only revolute joints can be written for every engine, got "
                         f"{sorted(kinds)}")
    return Description(name, model.joint_specs(), tuple(float(g) for g in model.gravity),
                       tuple(spheres))


def numbers(values) -> str:
    """Space-separated floats, written exactly (repr round-trips)."""
    return " ".join(repr(float(x)) for x in np.atleast_1d(values))


def mujoco_friction(mu: float) -> str:
    """A geom's friction attribute: sliding mu, MuJoCo's default torsional and rolling."""
    return f"{float(mu)!r} 0.005 0.0001"


def _parent_link(desc: Description, j: JointSpec) -> str:
    return "base" if j.parent < 0 else desc.joints[j.parent].body


def _urdf_link(desc: Description, j: JointSpec) -> str:
    i = np.asarray(j.inertia, dtype=float).tolist()
    collisions = "".join(f'\n    <collision><origin xyz="{numbers(centre)}"/><geometry>'
                         f'<sphere radius="{radius!r}"/></geometry></collision>'
                         for body, centre, radius in desc.spheres if body == j.body)
    return (f'  <link name="{j.body}">\n'
            f'    <inertial><origin xyz="{numbers(j.com)}" rpy="0 0 0"/>'
            f'<mass value="{float(j.mass)!r}"/>\n'
            f'      <inertia ixx="{i[0][0]!r}" ixy="{i[0][1]!r}" ixz="{i[0][2]!r}" '
            f'iyy="{i[1][1]!r}" iyz="{i[1][2]!r}" izz="{i[2][2]!r}"/></inertial>{collisions}\n'
            f'  </link>')


def urdf(desc: Description) -> str:
    """URDF text: link frames at the joints, inertial frames at the centres of mass. A
    free-flyer root is written as the root link (the loader adds the free joint)."""
    parts = [f'<?xml version="1.0"?>\n<robot name="{desc.name}">',
             _urdf_link(desc, desc.joints[0]) if desc.floating else BASE_LINK]
    for j in desc.hinges:
        parts.append(
            f'  <joint name="{j.name}" type="revolute">\n'
            f'    <parent link="{_parent_link(desc, j)}"/><child link="{j.body}"/>\n'
            f'    <origin xyz="{numbers(j.translation)}" '
            f'rpy="{numbers(pin.rpy.matrixToRpy(j.rotation))}"/>\n'
            f'    <axis xyz="{numbers(j.axis)}"/>\n'
            f'    <limit lower="{-LIMIT}" upper="{LIMIT}" effort="1e9" velocity="1e9"/>\n'
            f'  </joint>\n{_urdf_link(desc, j)}')
    parts.append("</robot>\n")
    return "\n".join(parts)


def mjcf(desc: Description, dt: float, integrator: str, friction: float = 1.0) -> str:
    """MJCF text: nested bodies with explicit inertials, no damping, armature or friction loss
    (MuJoCo's defaults are zero; written out so that nothing depends on it). Contact is off
    unless the description has spheres; then a ground plane z = 0 is added."""
    children: dict[int, list[int]] = {}
    for k, j in enumerate(desc.joints):
        children.setdefault(j.parent, []).append(k)
    mu = mujoco_friction(friction)

    def body(k: int, indent: str) -> str:
        j = desc.joints[k]
        i = j.inertia
        quat = pin.Quaternion(np.asarray(j.rotation)).coeffs()  # x, y, z, w
        joint = f'{indent}  <freejoint name="{j.name}"/>\n' if j.kind == "free_flyer" else \
            (f'{indent}  <joint name="{j.name}" type="hinge" axis="{numbers(j.axis)}" '
             f'damping="0" armature="0" frictionloss="0" limited="false"/>\n')
        geoms = "".join(f'{indent}  <geom name="{body}_sphere{n}" type="sphere" '
                        f'size="{radius!r}" pos="{numbers(centre)}" mass="0" friction="{mu}"/>\n'
                        for n, (body, centre, radius) in enumerate(desc.spheres)
                        if body == j.body)
        inner = "".join(body(c, indent + "  ") for c in children.get(k, []))
        return (f'{indent}<body name="{j.body}" pos="{numbers(j.translation)}" '
                f'quat="{numbers([quat[3], quat[0], quat[1], quat[2]])}">\n{joint}'
                f'{indent}  <inertial pos="{numbers(j.com)}" mass="{float(j.mass)!r}" '
                f'fullinertia="{numbers([i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[0, 2], i[1, 2]])}"'
                f'/>\n{geoms}{inner}{indent}</body>\n')

    tree = "".join(body(k, "    ") for k in children.get(-1, []))
    ground = f'    <geom type="plane" size="0 0 1" friction="{mu}"/>\n' if desc.spheres else ""
    flag = "" if desc.spheres else '\n    <flag contact="disable"/>\n  '
    return (f'<mujoco model="{desc.name}">\n'
            f'  <compiler angle="radian" inertiafromgeom="false" balanceinertia="false" '
            f'boundmass="0" boundinertia="0"/>\n'
            f'  <option timestep="{dt!r}" integrator="{integrator}" '
            f'gravity="{numbers(desc.gravity)}">{flag}</option>\n'
            f'  <worldbody>\n{ground}{tree}  </worldbody>\n</mujoco>\n')
