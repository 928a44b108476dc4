"""The papers' example systems as ready-made scenarios, shared by the tests, the benchmarks
and anyone who wants to see them run (docs/REFERENCES.md):

- Drumwright 2019, Fig. 9: a brick on four spherical steel feet on a 30 degree incline
  (``brick_urdf``, ``incline``; Coulomb's answer: a = g (sin - mu cos));
- the "generalized dynamics solver" post's first example: a point mass on two springs under its
  weight (``two_springs``, and its equations of motion ``two_springs_ode`` for a reference);
- a Grashof crank-rocker four-bar closed on itself (``four_bar``), the post's closed loop;
- a one-joint rod with URDF damping and friction (``one_joint_urdf``).
"""
from __future__ import annotations

import math

import numpy as np

from .mechanism import Builder, Mechanism
from .sim import Simulator

# Drumwright's incline
G = 9.81
THETA = math.radians(30.0)
NORMAL = np.array([math.sin(THETA), 0.0, math.cos(THETA)])
DOWNHILL = np.array([math.cos(THETA), 0.0, -math.sin(THETA)])


def box_link_urdf(name: str, mass: float, size, collisions: str) -> str:
    """A one-link URDF: a solid box's mass and inertia (size: full extents), the given
    <collision> elements."""
    x, y, z = size
    return (f'<robot name="{name}"><link name="{name}"><inertial><mass value="{mass}"/>'
            f'<inertia ixx="{mass * (y * y + z * z) / 12}" iyy="{mass * (x * x + z * z) / 12}" '
            f'izz="{mass * (x * x + y * y) / 12}" ixy="0" ixz="0" iyz="0"/></inertial>'
            f'{collisions}</link></robot>')


def brick_urdf() -> str:
    """Drumwright's incline box: unit mass, 0.1 x 0.2 x 0.05 m, four spherical feet of 1 cm."""
    m, (x, y, z), r = 1.0, (0.1, 0.2, 0.05), 0.01
    feet = "".join(
        f'<collision><origin xyz="{sx * x / 2} {sy * y / 2} {-z / 2 - r}"/>'
        f'<geometry><sphere radius="{r}"/></geometry></collision>'
        for sx in (-1, 1) for sy in (-1, 1))
    return box_link_urdf("brick", m, (x, y, z), feet)


def incline(brick_path: str, friction: float, dt: float, cone: str = "true") -> Simulator:
    """Steel (Hertz, E = 200 GPa) feet resting on the incline."""
    scene = {"ground": {"normal": NORMAL.tolist(), "friction": friction,
                        "youngs_modulus": 2.0e11, "poisson_ratio": 0.3},
             "models": [{"urdf": brick_path, "floating_base": True,
                         "position": (0.045 * NORMAL).tolist(),
                         "orientation": [0.0, math.sin(THETA / 2), 0.0, math.cos(THETA / 2)]}]}
    return Simulator.from_scene(scene, dt=dt, cone=cone)


# the post's two springs
A, B, X0 = np.array([0.25, 0.5, 1.0]), np.array([0.75, 0.5, 1.0]), np.array([0.65, 0.7, 0.5])
K, REST, WEIGHT = 8.0, 0.5, np.array([0.0, 0.0, -1.0])


def two_springs() -> Mechanism:
    """The post's example, in its own words: two fixed points, a 1 kg point, its weight as a
    fixed force, two springs k = 8, natural length 0.5."""
    b = Builder(gravity=(0, 0, 0))
    origin = b.add_point("originpoint", A)
    origin2 = b.add_point("originpoint2", B)
    free = b.add_point("freepoint", X0, mass=1.0)
    b.add_force(free, WEIGHT)
    b.add_spring(origin, free, stiffness=K, damping=0.0, rest_length=REST)
    b.add_spring(origin2, free, stiffness=K, damping=0.0, rest_length=REST)
    return b.build()


def two_springs_ode(t, y):
    x, v = y[:3], y[3:]
    force = WEIGHT.copy()
    for anchor in (A, B):
        d = x - anchor
        length = np.linalg.norm(d)
        force -= K * (length - REST) * d / length
    return np.concatenate([v, force])


# the four-bar
CRANK, COUPLER, ROCKER, GROUND = 0.1, 0.35, 0.3, 0.4   # a Grashof crank-rocker
MASS = {"crank": 0.2, "coupler": 0.5, "rocker": 0.4}
LENGTH = {"crank": CRANK, "coupler": COUPLER, "rocker": ROCKER}
WIDTH = 0.02


def four_bar(directions=("x", "z"), hold_crank: bool = False):
    """Bars along their local x, joints about y, the coupler's end closed on the rocker's
    (``hold_crank``: the crank's turn closed on the world too, a structure)."""
    b = Builder("four_bar")
    for name, mass in MASS.items():
        b.add_body(name, mass, box=(LENGTH[name], WIDTH, WIDTH), com=(LENGTH[name] / 2, 0, 0))
    b.add_joint("crank_joint", "revolute", "world", "crank", axis=(0, 1, 0), position=1.0)
    b.add_joint("coupler_joint", "revolute", "crank", "coupler", origin=(CRANK, 0, 0),
                axis=(0, 1, 0), position=-0.5)
    b.add_joint("rocker_joint", "revolute", "world", "rocker", origin=(GROUND, 0, 0),
                axis=(0, 1, 0), position=1.5)
    b.add_point("coupler_end", [COUPLER, 0, 0], body="coupler")
    b.add_point("rocker_end", [ROCKER, 0, 0], body="rocker")
    b.add_closure("coupler_end", "rocker_end", directions)
    if hold_crank:
        b.add_closure("world", "crank", ["ry"])
    return b.build()


def one_joint_urdf(damping: float, friction: float = 0.0) -> str:
    """A 2 kg rod on a revolute joint about y, its centre 0.5 m out along x (I_yy about the
    joint 0.5 + 2 * 0.25 = 1.0 kg m^2)."""
    return (f'<robot name="one"><link name="base"/><link name="rod"><inertial>'
            f'<origin xyz="0.5 0 0"/><mass value="2"/><inertia ixx="0.01" ixy="0" ixz="0" '
            f'iyy="0.5" iyz="0" izz="0.5"/></inertial></link>'
            f'<joint name="hinge" type="revolute"><parent link="base"/><child link="rod"/>'
            f'<axis xyz="0 1 0"/><limit lower="-10" upper="10" effort="100" velocity="100"/>'
            f'<dynamics damping="{damping}" friction="{friction}"/></joint></robot>')
