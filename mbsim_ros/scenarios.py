"""The papers' example systems as ready-made scenarios, shared by the tests, the benchmarks
and anyone who wants to see them run (docs/REFERENCES.md):

- Drumwright 2019, Fig. 9: a brick on four spherical steel feet on a 30 degree incline
  (``brick_urdf``, ``incline``; Coulomb's answer: a = g (sin - mu cos));
- the "generalized dynamics solver" post's first example: a point mass on two springs under its
  weight (``two_springs``, and its equations of motion ``two_springs_ode`` for a reference);
- a Grashof crank-rocker four-bar closed on itself (``four_bar``), the post's closed loop;
- a one-joint rod with URDF damping and friction (``one_joint_urdf``);
- every legged robot of example-robot-data standing on a steel floor under inertia-scaled joint
  PD (``LEGGED``, ``stand``: bench/standing.py, docs/COMPLIANT.md#standing);
- a free rigid body spinning about a wobbling axis (``free_body_urdf``, ``spin``: the
  velocity-terms figures, docs/COMPLIANT.md).
"""
from __future__ import annotations

import math
import time

import numpy as np

from .contact.standing import standing_scene
from .dynamics import crba
from .mechanism import Builder, Mechanism
from .model import example_robot_urdf, load_urdf
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


# label -> example-robot-data path: every legged robot that loads (romeo: a singular M without
# armature; romeo_laas_small: an invalid inertia; icub x2: a point-mass inertia; human and
# simple_humanoid_classical: no collision geometry to stand on)
LEGGED = {
    "solo": "solo_description/robots/solo.urdf",
    "solo12": "solo_description/robots/solo12.urdf",
    "go1": "go1_description/urdf/go1.urdf",
    "go2": "go2_description/urdf/go2.urdf",
    "a1": "a1_description/urdf/a1.urdf",
    "b1": "b1_description/urdf/b1.urdf",
    "b1-z1": "b1_description/urdf/b1-z1.urdf",
    "anymal_b": "anymal_b_simple_description/robots/anymal.urdf",
    "anymal_b-kinova": "anymal_b_simple_description/robots/anymal-kinova.urdf",
    "anymal_c": "anymal_c_simple_description/urdf/anymal.urdf",
    "laikago": "laikago_description/urdf/laikago.urdf",
    "hyq": "hyq_description/robots/hyq_no_sensors.urdf",
    "quadruped": "quadruped_description/urdf/quadruped.urdf",
    "bolt": "bolt_description/robots/bolt.urdf",
    "g1": "g1_description/urdf/g1_29dof_rev_1_0.urdf",
    "g1_hands": "g1_description/urdf/g1_29dof_with_hand_rev_1_0.urdf",
    "talos": "talos_data/robots/talos_reduced.urdf",
    "talos_full": "talos_data/robots/talos_full_v2.urdf",
    "romeo_small": "romeo_description/urdf/romeo_small.urdf",
    "simple_humanoid": "simple_humanoid_description/urdf/simple_humanoid.urdf",
    "centauro": "centauro_description/urdf/centauro.urdf",
}
OMEGA, ZETA = 30.0, 0.7
STANDING_INTEGRATORS = {"compliant": {}, "rigid": {"solver": "pgs"}}


class InertiaScaledPD:
    """Joint PD on the one-DOF joints toward q_target with kp_j = M_jj w^2, kd_j = 2 z w M_jj
    (M at the current q): through the integrator's implicit servo, or as tau (explicit)."""

    def __init__(self, sim: Simulator, q_target: np.ndarray, explicit: bool = False) -> None:
        m = sim.model
        self.sim, self.q_target, self.explicit = sim, q_target.copy(), explicit
        self.iv = np.array([m.idx_v[i] for i in range(m.njoints)
                            if m.joint_kinds[i] != "free_flyer"], dtype=int)
        self.iq = np.array([m.idx_q[i] for i in range(m.njoints)
                            if m.joint_kinds[i] != "free_flyer"], dtype=int)
        self.kp, self.kd, self.tau = np.zeros(m.nv), np.zeros(m.nv), np.zeros(m.nv)

    def step(self):
        sim = self.sim
        diagonal = np.diag(crba(sim.model, sim.q))[self.iv]
        self.kp[self.iv] = diagonal * OMEGA ** 2
        self.kd[self.iv] = 2.0 * ZETA * OMEGA * diagonal
        if self.explicit:
            self.tau[self.iv] = self.kp[self.iv] * (self.q_target[self.iq] - sim.q[self.iq]) \
                - self.kd[self.iv] * sim.v[self.iv]
            return sim.step(self.tau)
        sim.servos.set_gains(p=self.kp, d=self.kd)
        if not sim.servos.active:
            sim.servos.command(position=self.q_target)
        return sim.step()


def stand(label: str, integrator: str, seconds: float, explicit: bool = False,
          scene=None, velocity_terms: str = "implicit") -> dict:
    """One robot standing: finished, message, the lowest contact of any link and of the feet
    (the links touching the ground at the start) (m), step times (s), the most energy gained
    over the start (J) and the fastest one-DOF joint (rad/s)."""
    scene = scene if scene is not None else standing_scene(example_robot_urdf(LEGGED[label]))
    sim = Simulator.from_scene(scene, dt=1e-3, integrator=integrator,
                               velocity_terms=velocity_terms, **STANDING_INTEGRATORS[integrator])
    pd = InertiaScaledPD(sim, scene.q0, explicit)
    steps = int(round(seconds / sim.dt))
    times = np.zeros(steps)
    lowest, feet_lowest, message, done, fallbacks = np.inf, np.inf, "", 0, 0
    feet = None  # the links touching the ground in the start posture
    start_energy, gained, speed = sim.energy(), 0.0, 0.0
    for k in range(steps):
        start = time.perf_counter()
        info = pd.step()
        times[k] = time.perf_counter() - start
        if not info.converged:
            message = f"t = {sim.t:.3f} s: {info.message}"
            break
        done += 1
        fallbacks += info.fallback
        gained = max(gained, sim.energy() - start_energy)
        speed = max(speed, float(np.abs(sim.v[pd.iv]).max()))
        contacts = sim.contacts()
        if feet is None:
            feet = {c.link for c in contacts if c.depth > -1e-3}
        for contact in contacts:
            lowest = min(lowest, -contact.depth)
            if contact.link in feet:
                feet_lowest = min(feet_lowest, -contact.depth)
    return {"finished": done == steps, "message": message, "lowest": lowest,
            "feet": feet_lowest,
            "fallbacks": fallbacks, "gained": gained, "speed": speed,
            "times": times[:done + 1], "base": float(sim.q[2]), "start": float(scene.q0[2])}


def free_body_urdf(offset: float) -> str:
    """1.5 kg, principal moments 0.025, 0.05, 0.065 kg m^2, its centre `offset` m from the
    frame origin along x (and the principal axes turned)."""
    pose = f'<origin xyz="{offset} {0.4 * offset} 0" rpy="0.3 0.2 0.1"/>' if offset else ""
    return (f'<robot name="body"><link name="body"><inertial>{pose}<mass value="1.5"/>'
            f'<inertia ixx="0.025" ixy="0" ixz="0" iyy="0.05" iyz="0" izz="0.065"/>'
            f'</inertial></link></robot>')


def spin(offset: float, speed: float, mode: str, steps: int, dt: float = 1e-3) -> np.ndarray:
    """E(t) / E(0) of the free body (zero gravity, compliant integrator with velocity_terms
    `mode`) spinning at `speed` rad/s about a wobbling major axis."""
    model = load_urdf(free_body_urdf(offset), floating_base=True)
    model.gravity = [0.0, 0.0, 0.0]
    w = np.array([1.0, 0.5, 40.0])
    sim = Simulator(model, dt, "compliant", velocity_terms=mode)
    sim.reset(model.neutral(), np.concatenate([[0.3, 0.1, -0.2], w * speed / np.linalg.norm(w)]))
    energies = [sim.energy()]
    for _ in range(steps):
        if not sim.step().converged:
            break
        energies.append(sim.energy())
    return np.array(energies) / energies[0]


# The steel ball dropped on the steel floor (docs/COMPLIANT.md, "Impacts"; bench/impact.py)
RADIUS, MASS, DROP = 0.05, 1.0, 0.2       # m, kg, m
YOUNGS, POISSON, GRAVITY = 2.0e11, 0.3, 9.81


def hertz_peak(drop: float = DROP) -> float:
    """Hertz's peak penetration of the ball dropped from `drop` (m)."""
    e_star = YOUNGS / (2.0 * (1.0 - POISSON ** 2))
    v0 = math.sqrt(2.0 * GRAVITY * drop)
    return (15.0 * MASS * v0 ** 2 / (16.0 * e_star * math.sqrt(RADIUS))) ** 0.4


def drop(dt: float, seconds: float | None = None) -> dict:
    """Drop the ball from DROP (its lowest point) and follow it through its first rebound:
    the deepest penetration, the rebound's apex (lowest point above the floor) and the
    median wall-clock time of the steps in contact (us)."""
    ground = {"friction": 0.5, "youngs_modulus": YOUNGS, "poisson_ratio": POISSON}
    scene = {"ground": ground, "gravity": [0.0, 0.0, -GRAVITY],
             "models": [{"sphere": {"radius": RADIUS, "mass": MASS}, "name": "ball",
                         "position": [0.0, 0.0, RADIUS + DROP]}]}
    sim = Simulator.from_scene(scene, dt=dt)
    fall = math.sqrt(2.0 * DROP / GRAVITY)
    steps = int(round((seconds or 2.2 * fall) / dt))
    tau = np.zeros(sim.model.nv)
    deepest, apex, touched, costs = 0.0, 0.0, False, []
    for _ in range(steps):
        start = time.perf_counter()
        sim.step(tau)
        elapsed = time.perf_counter() - start
        height = sim.q[2] - RADIUS
        if height < 0.0:
            touched = True
            costs.append(elapsed)
        deepest = max(deepest, -height)
        if touched and height > 0.0:
            apex = max(apex, height)
    return {"peak": deepest, "rebound": apex,
            "cost_us": float(np.median(costs)) * 1e6 if costs else float("nan")}


def end_depth(reach: float, compliance: float, hertz: float) -> float:
    """The depth d >= 0 at the step's end under the Hertz force at d, backward Euler:
    d + compliance hertz d^(3/2) = reach (compliance = h^2 / m), by Newton (the left side is
    increasing and convex in d: from d = reach the iterates decrease monotonically)."""
    if reach <= 0.0:
        return 0.0
    d = reach
    for _ in range(100):
        step = (d + compliance * hertz * d ** 1.5 - reach) \
            / (1.0 + 1.5 * compliance * hertz * math.sqrt(d))
        d -= step
        if abs(step) <= 1e-14 * reach:
            break
    return d


def one_row(dt: float, law: str, margin: float = 0.01, reference: float = 1e-8) -> dict:
    """The integrator's step for the lone ball (docs/COMPLIANT.md, "The step we implement"):
    v* = v0 - h g, the speculative normal row (rigid closing law before touching), E^-1 =
    1 / (h^2 k), c = v* + phi0 / h, gamma = max(0, -c / (1/m + E^-1)), v1 = v* + gamma / m,
    x1 = x0 + h v1; k = 4/3 E* sqrt(R d) at d = the step-start depth (law "start") or the
    step-end depth (law "end"), d at least the reference depth."""
    e_star = YOUNGS / (2.0 * (1.0 - POISSON ** 2))
    hertz = 4.0 / 3.0 * e_star * math.sqrt(RADIUS)
    x, v, deepest, apex, touched = DROP, 0.0, 0.0, 0.0, False
    for _ in range(int(round(2.2 * math.sqrt(2.0 * DROP / GRAVITY) / dt))):
        free = v - dt * GRAVITY
        depth = -x if law == "start" else end_depth(-x - dt * free, dt * dt / MASS, hertz)
        k = hertz * math.sqrt(max(depth, reference))
        gamma = 0.0
        if x < margin + dt * abs(v):
            gamma = max(0.0, -(free + x / dt) / (1.0 / MASS + 1.0 / (dt * dt * k)))
        v = free + gamma / MASS
        x += dt * v
        touched = touched or x < 0.0
        deepest = max(deepest, -x)
        if touched and x > 0.0:
            apex = max(apex, x)
    return {"peak": deepest, "rebound": apex}
