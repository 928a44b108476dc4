"""The papers' example systems as ready-made scenarios, shared by the tests, the benchmarks
and anyone who wants to see them run (docs/REFERENCES.md):

- Drumwright 2019, Fig. 9: a brick on four spherical steel feet on a 30 degree incline
  (``brick_urdf``, ``incline``; Coulomb's answer: a = g (sin - mu cos));
- the "generalized dynamics solver" post's first example: a point mass on two springs under its
  weight (``two_springs``, and its equations of motion ``two_springs_ode`` for a reference);
- a Grashof crank-rocker four-bar closed on itself (``four_bar``), the post's closed loop;
- a one-joint rod with URDF damping and friction (``one_joint_urdf``);
- every legged robot of example-robot-data standing on a steel floor, its weight on its feet
  (``LEGGED``, ``StandingController``: a gravity feed-forward with the feet's forces from a
  small QP and a load-scaled joint PD; ``stand``: bench/standing.py, docs/COMPLIANT.md#standing);
- a legged robot standing on a slope, a heightfield ramp or a tilted plane (``slope_scene``,
  docs/COMPLIANT.md#terrain);
- a free rigid body spinning about a wobbling axis (``free_body_urdf``, ``spin``: the
  velocity-terms figures, docs/COMPLIANT.md).
"""
from __future__ import annotations

import math
import time

import numpy as np

from .contact.scene import Scene
from .contact.standing import ground_normal, standing_scene, support_normal, support_points
from .dynamics import crba, rnea
from .dynamics.closures import ConstraintKinematics
from .integrators.impacts import (IMPACT_COMPLIANCE, IMPACT_GRAVITY_STEPS, LOADING, TURN_SHARE,
                                  UNLOADING)
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
# the legged robots that cannot stand still in their start posture, and why
CANNOT_STAND = {"bolt": "point feet (a rounded foot's hull, 5.6 mm long) with the centre of mass "
                        "0.5 mm ahead of them in the start posture: no contact forces hold the "
                        "base, it balances only dynamically"}
OMEGA, ZETA = 30.0, 0.7
STANDING_INTEGRATORS = {"compliant": {}, "rigid": {"solver": "pgs"}}


def one_dof(model) -> tuple[np.ndarray, np.ndarray]:
    """(iv, iq): the velocity and configuration indices of the one-DOF joints."""
    joints = [i for i in range(model.njoints) if model.joint_kinds[i] != "free_flyer"]
    return (np.array([model.idx_v[i] for i in joints], dtype=int),
            np.array([model.idx_q[i] for i in joints], dtype=int))


class InertiaScaledPD:
    """Joint PD on the one-DOF joints toward q_target with kp_j = M_jj w^2, kd_j = 2 z w M_jj
    (M at the current q): through the integrator's implicit servo, or as tau (explicit). Too
    weak for a floating base (a knee's M_jj does not see the body it carries): the robots
    fall (test_standing's fall test uses it for that)."""

    def __init__(self, sim: Simulator, q_target: np.ndarray, explicit: bool = False) -> None:
        m = sim.model
        self.sim, self.q_target, self.explicit = sim, q_target.copy(), explicit
        self.iv, self.iq = one_dof(m)
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


def point_jacobian(kinematics: ConstraintKinematics, q: np.ndarray, bodies: np.ndarray,
                   points: np.ndarray) -> np.ndarray:
    """J (3n x nv): the world velocity of each point (fixed to its body, world frame at q) per
    unit joint velocity: column k of a point x on body b is v_k + w_k x x for the joints k
    between b and the root (oS_k = [v_k, w_k], world axes, about the world origin)."""
    _, _, oS = kinematics.evaluate(q)
    J = np.zeros((3 * len(bodies), oS.shape[0]))
    for n, (b, x) in enumerate(zip(bodies, points)):
        k = kinematics.masks[b]
        J[3 * n:3 * n + 3, k] = (oS[k, :3] + np.cross(oS[k, 3:], x)).T
    return J


def tangents(normal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors completing the unit ``normal`` to a right-handed frame."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(normal[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = np.cross(normal, helper)
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(normal, t1)


def distribute_weight(J: np.ndarray, bias: np.ndarray, normal: np.ndarray, mu: float,
                      base: int = 6) -> np.ndarray:
    """The contact forces f (n x 3, world) of least |f|^2 that hold the floating base
    (J[:, :base]^T f = bias[:base]: the unactuated rows of M 0 + h = S^T tau + J^T f) inside
    the friction pyramid inscribed in the cone of ``mu`` (|f.t_i| <= mu / sqrt 2 f.n, f.n >= 0):
    a small QP solved by osqp. ValueError when no such forces exist (the centre of mass outside
    the support polygon, or point feet that cannot hold the base's moments)."""
    import osqp
    import scipy.sparse as sparse

    n = J.shape[0] // 3
    t1, t2 = tangents(normal)
    slope = mu / math.sqrt(2.0)
    cone = np.array([normal, t1 - slope * normal, -t1 - slope * normal,
                     t2 - slope * normal, -t2 - slope * normal])
    A = sparse.vstack([sparse.csc_matrix(J[:, :base].T),
                       sparse.block_diag([cone] * n)], format="csc")
    lower = np.concatenate([bias[:base], np.tile([0.0] + [-np.inf] * 4, n)])
    upper = np.concatenate([bias[:base], np.tile([np.inf] + [0.0] * 4, n)])
    solver = osqp.OSQP()
    solver.setup(sparse.identity(3 * n, format="csc"), np.zeros(3 * n), A, lower, upper,
                 eps_abs=1e-10, eps_rel=1e-10, max_iter=100000, polishing=True, verbose=False)
    result = solver.solve(raise_error=False)
    f = result.x
    if result.info.status_val not in (1, 2) \
            or np.abs(J[:, :base].T @ f - bias[:base]).max() > 1e-6 * max(1.0, abs(bias).max()):
        raise ValueError(f"no contact forces hold the base ({result.info.status})")
    return f.reshape(n, 3)


class StandingController:
    """Holds a legged robot in posture q0 with its full weight on its feet
    (docs/COMPLIANT.md#standing): the feet are the collision points within 1 mm of the
    ground at q0 (contact.standing.support_points); their forces f of least |f|^2 that
    balance gravity on the floating base, inside the friction pyramid (``distribute_weight``,
    osqp), give the feed-forward tau = g(q0) - J^T f on the joints; a joint PD through the
    integrator's implicit servo toward q0 corrects the rest, its gains scaled to the load each
    joint carries: kp_j = I_j w^2, kd_j = 2 z w I_j, with I_j the inertia of the whole robot
    (locked at q0) about joint j's axis for the joints between the base and a foot (the joint
    carries the body), the joint's own M_jj elsewhere (it carries its subtree). All of it at
    q0, once: ``step()`` is sim.step(tau) with no allocation. The forces are planned with the
    scene's friction, or ``friction`` (a controller that believes the ground holds more)."""

    def __init__(self, sim: Simulator, q0: np.ndarray, within: float = 1e-3,
                 omega: float = OMEGA, zeta: float = ZETA,
                 friction: float | None = None) -> None:
        model, scene = sim.model, sim.scene
        self.sim = sim
        self.iv, _ = one_dof(model)
        kinematics = ConstraintKinematics(model)
        self.bodies, self.points = support_points(scene, q0, within)
        if not len(self.bodies):
            raise ValueError("no collision point within {within} m of the ground at q0")
        self.feet = sorted({model.body_names[b] for b in self.bodies})
        J = point_jacobian(kinematics, q0, self.bodies, self.points)
        gravity = rnea(model, q0, np.zeros(model.nv), np.zeros(model.nv))
        mu = scene.material.friction if friction is None else friction
        self.forces = distribute_weight(J, gravity, support_normal(scene, self.points), mu)
        self.tau = np.zeros(model.nv)
        self.tau[self.iv] = (gravity - J.T @ self.forces.ravel())[self.iv]
        self.inertia = self._carried_inertia(kinematics, q0)
        sim.servos.set_gains(p=self.inertia * omega ** 2, d=2.0 * zeta * omega * self.inertia)
        sim.servos.command(position=q0)

    def _carried_inertia(self, kinematics: ConstraintKinematics, q0: np.ndarray) -> np.ndarray:
        """I_j (nv): the locked robot's inertia about joint j's axis for the joints that move
        a foot relative to the base (c^T M_base c, with c the base velocity that turns the
        whole robot about that axis: oS_base^T c = oS_j), M_jj for the others."""
        M = crba(self.sim.model, q0)
        _, _, oS = kinematics.evaluate(q0)
        legs = np.any(kinematics.masks[np.unique(self.bodies)], axis=0)
        inertia = np.diag(M).copy()
        for j in self.iv[legs[self.iv]]:
            c = np.linalg.solve(oS[:6].T, oS[j])
            inertia[j] = c @ M[:6, :6] @ c
        inertia[:6] = 0.0
        return inertia

    def step(self):
        return self.sim.step(self.tau)


def slope_scene(label: str, degrees: float, friction: float, heightfield: bool = True,
                cells: float = 0.1, extent: float = 2.0) -> Scene:
    """The robot LEGGED[label] in its neutral posture (clamped into its limits) on a slope
    rising along +x through the origin, its base turned with the slope and its lowest point on
    it: a heightfield ramp (extent x extent m, square cells of ``cells`` m) or, heightfield
    false, the ground plane of the same normal."""
    theta = math.radians(degrees)
    plain = standing_scene(example_robot_urdf(LEGGED[label]))
    q = plain.q0.copy()
    q[3:7] = [0.0, -math.sin(theta / 2), 0.0, math.cos(theta / 2)]
    material = {"friction": friction, "youngs_modulus": YOUNGS, "poisson_ratio": POISSON}
    if not heightfield:
        normal = [-math.sin(theta), 0.0, math.cos(theta)]
        return standing_scene(example_robot_urdf(LEGGED[label]), q=q,
                              ground={**material, "normal": normal})
    points = int(round(extent / cells)) + 1
    x = np.linspace(-extent / 2, extent / 2, points)
    heights = np.tile(x * math.tan(theta), (points, 1))
    ramp = {"heights": heights.tolist(), "size": [extent, extent]}
    return standing_scene(example_robot_urdf(LEGGED[label]), q=q, ground=material,
                          heightfield=ramp)


class FootWatch:
    """The support points (contact.standing.support_points at q0) followed through a run: the
    largest horizontal travel of any (sliding) and the highest any foot's lowest point rose
    above the ground (lift), m."""

    def __init__(self, sim: Simulator, q0: np.ndarray, within: float = 1e-3) -> None:
        self.kinematics = ConstraintKinematics(sim.model)
        self.sim, self.normal = sim, ground_normal(sim.scene)
        self.height = sim.scene.ground[3]
        self.bodies, points = support_points(sim.scene, q0, within)
        oR, op, _ = self.kinematics.evaluate(q0)
        self.local = np.einsum("nji,nj->ni", oR[self.bodies], points - op[self.bodies])
        self.start = points
        self.feet = [self.bodies == b for b in np.unique(self.bodies)]
        self.slide, self.lift = 0.0, -np.inf

    def update(self) -> None:
        oR, op, _ = self.kinematics.evaluate(self.sim.q)
        points = np.einsum("nij,nj->ni", oR[self.bodies], self.local) + op[self.bodies]
        moved = points - self.start
        moved -= np.outer(moved @ self.normal, self.normal)
        self.slide = max(self.slide, float(np.sqrt((moved ** 2).sum(axis=1)).max()))
        heights = points @ self.normal - self.height
        self.lift = max(self.lift, max(float(heights[foot].min()) for foot in self.feet))


CONTROLLERS = {"standing": StandingController, "pd": InertiaScaledPD}


def stand(label: str, integrator: str, seconds: float, controller: str = "standing",
          scene=None, velocity_terms: str = "implicit", explicit: bool = False) -> dict:
    """One robot held in its start posture by ``controller`` ("standing": StandingController;
    "pd": InertiaScaledPD, ``explicit``: as tau): finished, message, the lowest contact of any
    link and of the feet (the links with collision points within 1 mm of the ground at the
    start) (m), the feet's sliding and lift (FootWatch, m), the base's largest height change
    over its start height (drift), step times (s), the most energy gained over the start (J)
    and the fastest one-DOF joint (rad/s)."""
    scene = scene if scene is not None else standing_scene(example_robot_urdf(LEGGED[label]))
    sim = Simulator.from_scene(scene, dt=1e-3, integrator=integrator,
                               velocity_terms=velocity_terms, **STANDING_INTEGRATORS[integrator])
    hold = StandingController(sim, scene.q0) if controller == "standing" \
        else InertiaScaledPD(sim, scene.q0, explicit)
    watch = FootWatch(sim, scene.q0)
    feet = {sim.model.body_names[b] for b in watch.bodies}
    steps = int(round(seconds / sim.dt))
    times = np.zeros(steps)
    lowest, feet_lowest, message, done, fallbacks, drift = np.inf, np.inf, "", 0, 0, 0.0
    start_energy, gained, speed, iv = sim.energy(), 0.0, 0.0, one_dof(sim.model)[0]
    for k in range(steps):
        start = time.perf_counter()
        info = hold.step()
        times[k] = time.perf_counter() - start
        if not info.converged:
            message = f"t = {sim.t:.3f} s: {info.message}"
            break
        done += 1
        fallbacks += info.fallback
        gained = max(gained, sim.energy() - start_energy)
        speed = max(speed, float(np.abs(sim.v[iv]).max()))
        drift = max(drift, abs(sim.q[2] - scene.q0[2]) / scene.q0[2])
        watch.update()
        for contact in sim.contacts():
            lowest = min(lowest, -contact.depth)
            if contact.link in feet:
                feet_lowest = min(feet_lowest, -contact.depth)
    return {"finished": done == steps, "message": message, "lowest": lowest,
            "feet": feet_lowest, "slide": watch.slide, "lift": watch.lift, "drift": drift,
            "fallbacks": fallbacks, "gained": gained, "speed": speed,
            "times": times[:done + 1], "base": float(sim.q[2]), "start": float(scene.q0[2])}


def land(label: str, restitution: float, height: float, seconds: float = 1.0,
         scene: Scene | None = None) -> dict:
    """The robot LEGGED[label] (or the one of ``scene``, a contact.standing.standing_scene)
    held in its standing posture by StandingController, released
    `height` above it onto a floor of the given restitution, `seconds` at 1 ms, compliant
    (docs/COMPLIANT.md#impacts, bench/landing.py): the failure message (empty: finished), the
    steps with contacts set on energy, the deepest contact (m), the base's rise above its
    touchdown height (m), its end height against the standing height (relative), and the
    step times (s)."""
    scene = scene if scene is not None else standing_scene(example_robot_urdf(LEGGED[label]))
    scene.material.restitution = restitution
    sim = Simulator.from_scene(scene, dt=1e-3)
    controller = StandingController(sim, scene.q0)
    raised = scene.q0.copy()
    raised[2] += height
    sim.reset(raised, np.zeros(sim.model.nv))
    times, touchdown, highest, deepest, set_on_energy, message = [], None, -np.inf, 0.0, 0, ""
    for _ in range(int(round(seconds / sim.dt))):
        start = time.perf_counter()
        info = controller.step()
        times.append(time.perf_counter() - start)
        if not info.converged:
            message = f"t = {sim.t:.3f} s: {info.message}"
            break
        set_on_energy += sim.integrator.impacting_contacts > 0
        contacts = sim.contacts()
        deepest = max([deepest, *(c.depth for c in contacts)])
        if touchdown is None and any(c.force[2] > 0.0 for c in contacts):
            touchdown = sim.q[2]
        if touchdown is not None:
            highest = max(highest, sim.q[2])
    return {"message": message, "steps": set_on_energy, "deepest": deepest,
            "rise": highest - touchdown if touchdown is not None else np.nan,
            "end": sim.q[2] / scene.q0[2] - 1.0, "times": np.array(times)}


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
BALL_RADIUS, BALL_MASS, DROP = 0.05, 1.0, 0.2       # m, kg, m
YOUNGS, POISSON, GRAVITY = 2.0e11, 0.3, 9.81


def hertz_peak(drop: float = DROP) -> float:
    """Hertz's peak penetration of the ball dropped from `drop` (m)."""
    e_star = YOUNGS / (2.0 * (1.0 - POISSON ** 2))
    v0 = math.sqrt(2.0 * GRAVITY * drop)
    return (15.0 * BALL_MASS * v0 ** 2 / (16.0 * e_star * math.sqrt(BALL_RADIUS))) ** 0.4


def drop(dt: float, seconds: float | None = None, restitution: float = 0.0,
         height: float = DROP, impacts: str = "energy") -> dict:
    """Drop the ball from `height` (its lowest point) on a floor of the given restitution and
    follow it through its first rebound (the compliant integrator's ``impacts`` law): the
    deepest penetration, the rebound's apex (lowest point above the floor) and the median
    wall-clock time of the steps in contact (us)."""
    ground = {"friction": 0.5, "youngs_modulus": YOUNGS, "poisson_ratio": POISSON,
              "restitution": restitution}
    scene = {"ground": ground, "gravity": [0.0, 0.0, -GRAVITY],
             "models": [{"sphere": {"radius": BALL_RADIUS, "mass": BALL_MASS}, "name": "ball",
                         "position": [0.0, 0.0, BALL_RADIUS + height]}]}
    sim = Simulator.from_scene(scene, dt=dt, impacts=impacts)
    fall = math.sqrt(2.0 * height / GRAVITY)
    steps = int(round((seconds or 2.2 * fall) / dt))
    tau = np.zeros(sim.model.nv)
    deepest, apex, touched, costs = 0.0, 0.0, False, []
    for _ in range(steps):
        start = time.perf_counter()
        sim.step(tau)
        elapsed = time.perf_counter() - start
        height = sim.q[2] - BALL_RADIUS
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


def _closing_root(w0: float, free: float, depth: float, dt: float, hertz: float) -> float:
    """The lone ball's end velocity that keeps its energy while it loads the floor
    (integrators/impacts.py, written out independently: bisection): the negative root of
    m w^2/2 - m (free - w0) w + U(depth - dt w) - m w0^2/2 - U(depth), U = 2/5 hertz d^(5/2)."""
    def energy(d: float) -> float:
        return 0.4 * hertz * d ** 2.5 if d > 0.0 else 0.0

    def f(w: float) -> float:
        return (0.5 * BALL_MASS * w * w - BALL_MASS * (free - w0) * w
                + energy(depth - dt * w) - energy(depth) - 0.5 * BALL_MASS * w0 * w0)

    near, far = 0.0, -1.0
    while f(far) < 0.0:
        far *= 2.0
    for _ in range(200):
        middle = 0.5 * (near + far)
        near, far = (middle, far) if f(middle) < 0.0 else (near, middle)
    return 0.5 * (near + far)


def one_row(dt: float, law: str, margin: float = 0.01, reference: float = 1e-8,
            restitution: float = 0.0) -> dict:
    """The integrator's step for the lone ball (docs/COMPLIANT.md, "The step we implement"):
    v* = v0 - h g, the speculative normal row (rigid closing law before touching), E^-1 =
    1 / (h^2 k), c = v* + phi0 / h, gamma = max(0, -c / (1/m + E^-1)), v1 = v* + gamma / m,
    x1 = x0 + h v1; k = 4/3 E* sqrt(R d) at d = the step-start depth (law "start") or the
    step-end depth (law "end"), d at least the reference depth. Law "energy": the impacts set
    on energy as the integrator does (integrators/impacts.py: loading, the turn, unloading; the
    ordinary law "start" otherwise)."""
    e_star = YOUNGS / (2.0 * (1.0 - POISSON ** 2))
    hertz = 4.0 / 3.0 * e_star * math.sqrt(BALL_RADIUS)
    impact_speed = IMPACT_GRAVITY_STEPS * dt * GRAVITY
    x, v, deepest, apex, touched, phase, contact_speed = DROP, 0.0, 0.0, 0.0, False, 0, 0.0
    for _ in range(int(round(2.2 * math.sqrt(2.0 * DROP / GRAVITY) / dt))):
        free = v - dt * GRAVITY
        depth = -x if law != "end" else end_depth(-x - dt * free, dt * dt / BALL_MASS, hertz)
        k = hertz * math.sqrt(max(depth, reference))
        gamma = 0.0
        if x < margin + dt * abs(v):
            gamma = max(0.0, -(free + x / dt) / (1.0 / BALL_MASS + 1.0 / (dt * dt * k)))
        before, phase = phase, 0
        if law == "energy":
            kinetic = 0.5 * BALL_MASS * v * v
            stored = 0.4 * hertz * max(-x, 0.0) ** 2.5
            if before == 0 and v < -impact_speed and x + dt * free < 0.0:
                phase = LOADING
                contact_speed = math.sqrt(v * v + 2.0 * GRAVITY * max(x, 0.0))
            elif before == LOADING and v < 0.0 and kinetic >= TURN_SHARE * (kinetic + stored):
                phase = LOADING
            elif before and x < 0.0 and (before == LOADING or v >= 0.0):
                phase = UNLOADING
        if phase == LOADING:
            target = _closing_root(v, free, -x, dt, hertz)
        elif phase == UNLOADING and restitution > 0.0:
            target = restitution * contact_speed
        elif phase == UNLOADING:
            target = min(-x / dt, impact_speed)
        if phase:  # a nearly rigid row with that target velocity
            gamma = max(0.0, (target - free) / ((1.0 + IMPACT_COMPLIANCE) / BALL_MASS))
        v = free + gamma / BALL_MASS
        x += dt * v
        touched = touched or x < 0.0
        deepest = max(deepest, -x)
        if touched and x > 0.0:
            apex = max(apex, x)
    return {"peak": deepest, "rebound": apex}
