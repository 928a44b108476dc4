"""Workload 4, contact, for the peers that have it (MuJoCo, PyBullet, DART), each on its own
default contact model and solver, from one scene description:

- inclined box (Drumwright Fig. 9): a 1 kg box resting on a 30 degree incline (the ground stays
  flat, gravity is tilted), friction swept across tan(30 deg) = 0.577; the measured acceleration
  along the slope against g (sin theta - mu cos theta) (0 when it sticks);
- sphere stack (Drumwright Fig. 10): five 1 kg spheres of radius 0.1 m stacked on the ground,
  2 s at dt = 1 ms and 10 ms: does it stand, and how deep do the spheres sink into each other;
- quadruped standing (bench/peers/quadruped.py): solo12 held by joint PD, feet slip (ours:
  the compliant integrator and the rigid-LCP baseline with each of its solvers).

The box and the stack run ours through the hook `ours_contact` (the compliant integrator, with
its defaults); our rows say "n/a" if that integrator is not registered.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np

from mbsim_ros.integrators import INTEGRATORS

from peers.engines import available
from peers.models import mujoco_friction, numbers
from peers.timing import per_call

THETA = np.radians(30.0)
G = 9.81
FRICTIONS = (0.1, 0.3, 0.5, 0.7, 0.9)
OURS_NOT_LANDED = "n/a (compliant-contact integrator not landed)"
OURS_NOT_WIRED = "n/a (compliant integrator registered; bench/contact.py ours_contact " \
                 "not wired to its scene API yet)"


@dataclass(frozen=True)
class Body:
    """A free rigid body: shape "box" (size = half extents) or "sphere" (size = (radius,))."""

    shape: str
    size: tuple[float, ...]
    mass: float
    position: tuple[float, float, float]

    def inertia(self) -> np.ndarray:
        """Principal moments of the uniform solid."""
        if self.shape == "sphere":
            return np.full(3, 0.4 * self.mass * self.size[0] ** 2)
        a, b, c = (2 * s for s in self.size)
        return self.mass / 12.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])


@dataclass(frozen=True)
class Scene:
    """Free bodies on the ground plane z = 0, one friction coefficient for every pair."""

    bodies: tuple[Body, ...]
    friction: float
    gravity: tuple[float, float, float] = (0.0, 0.0, -G)


class MuJoCoScene:
    label = "MuJoCo"

    def __init__(self, scene: Scene, dt: float) -> None:
        import mujoco

        self.mj = mujoco
        mu = mujoco_friction(scene.friction)
        bodies = "".join(
            f'    <body pos="{numbers(b.position)}"><freejoint/>'
            f'<geom type="{b.shape}" size="{numbers(b.size)}" mass="{numbers(b.mass)}" '
            f'friction="{mu}"/></body>\n' for b in scene.bodies)
        xml = (f'<mujoco><option timestep="{dt!r}" gravity="{numbers(scene.gravity)}"/>'
               f'<worldbody>\n    <geom type="plane" size="0 0 1" friction="{mu}"/>\n'
               f'{bodies}  </worldbody></mujoco>')
        self.model = mujoco.MjModel.from_xml_string(xml)
        self.data = mujoco.MjData(self.model)
        mujoco.mj_forward(self.model, self.data)

    def step(self) -> None:
        self.mj.mj_step(self.model, self.data)

    def positions(self) -> np.ndarray:
        return self.data.xpos[1:].copy()


class PyBulletScene:
    label = "PyBullet"

    def __init__(self, scene: Scene, dt: float) -> None:
        import pybullet as p

        self.p = p
        self.client = c = p.connect(p.DIRECT)
        p.setGravity(*scene.gravity, physicsClientId=c)
        p.setPhysicsEngineParameter(fixedTimeStep=dt, numSubSteps=0, physicsClientId=c)
        pybullet_ground(p, c)
        self.ids = []
        for b in scene.bodies:
            shape = p.createCollisionShape(p.GEOM_BOX, halfExtents=b.size, physicsClientId=c) \
                if b.shape == "box" else \
                p.createCollisionShape(p.GEOM_SPHERE, radius=b.size[0], physicsClientId=c)
            body = p.createMultiBody(b.mass, shape, basePosition=b.position, physicsClientId=c)
            p.changeDynamics(body, -1, lateralFriction=scene.friction, linearDamping=0.0,
                             angularDamping=0.0, physicsClientId=c)
            self.ids.append(body)

    def __del__(self):
        if getattr(self, "client", None) is not None and self.p.isConnected(self.client):
            self.p.disconnect(self.client)

    def step(self) -> None:
        self.p.stepSimulation(physicsClientId=self.client)

    def positions(self) -> np.ndarray:
        return np.array([self.p.getBasePositionAndOrientation(b, physicsClientId=self.client)[0]
                         for b in self.ids])


class DartScene:
    label = "DART"

    def __init__(self, scene: Scene, dt: float) -> None:
        import dartpy as dart

        self.world = dart.simulation.World()
        self.world.setGravity(np.array(scene.gravity))
        self.world.setTimeStep(dt)
        dart_ground(self.world, scene.friction)
        self.bodies = []
        for k, b in enumerate(scene.bodies):
            skel = dart.dynamics.Skeleton(f"body{k}")
            _, node = skel.createFreeJointAndBodyNodePair()
            shape = dart.dynamics.BoxShape(2 * np.array(b.size)) if b.shape == "box" else \
                dart.dynamics.SphereShape(b.size[0])
            dart_shape(node, shape, scene.friction)
            inertia = dart.dynamics.Inertia()
            inertia.setMass(b.mass)
            inertia.setMoment(np.diag(b.inertia()))
            node.setInertia(inertia)
            skel.setPositions(np.concatenate([np.zeros(3), b.position]))
            self.world.addSkeleton(skel)
            self.bodies.append(node)

    def step(self) -> None:
        self.world.step()

    def positions(self) -> np.ndarray:
        return np.array([b.getWorldTransform().translation() for b in self.bodies])


def pybullet_ground(p, client: int) -> None:
    """The plane z = 0; Bullet multiplies the two bodies' coefficients, so the ground's is 1."""
    plane = p.createMultiBody(0, p.createCollisionShape(p.GEOM_PLANE, physicsClientId=client),
                              physicsClientId=client)
    p.changeDynamics(plane, -1, lateralFriction=1.0, physicsClientId=client)


def dart_shape(body, shape, friction: float) -> None:
    node = body.createShapeNode(shape)
    node.createCollisionAspect()
    node.createDynamicsAspect().setFrictionCoeff(friction)


def dart_ground(world, friction: float) -> None:
    """A 50 m x 50 m x 1 m box whose top face is z = 0 (DART's plane shape does not collide
    with every detector)."""
    import dartpy as dart

    ground = dart.dynamics.Skeleton("ground")
    joint, body = ground.createWeldJointAndBodyNodePair()
    transform = dart.math.Isometry3()
    transform.set_translation(np.array([0.0, 0.0, -0.5]))
    joint.setTransformFromParentBodyNode(transform)
    dart_shape(body, dart.dynamics.BoxShape(np.array([50.0, 50.0, 1.0])), friction)
    world.addSkeleton(ground)


PEERS = {"MuJoCo": ("mujoco", MuJoCoScene), "PyBullet": ("pybullet", PyBulletScene),
         "DART": ("dartpy", DartScene)}


class OursScene:
    """Ours: the compliant integrator (true cone) on the same free bodies, steel Hertz ground
    (``options``: the integrator's)."""

    label = "ours compliant"

    def __init__(self, scene: Scene, dt: float, **options) -> None:
        from mbsim_ros import Simulator

        models = [{("sphere" if b.shape == "sphere" else "box"):
                   ({"radius": b.size[0], "mass": b.mass} if b.shape == "sphere"
                    else {"size": [2 * x for x in b.size], "mass": b.mass}),
                   "position": list(b.position), "name": f"body{k}"}
                  for k, b in enumerate(scene.bodies)]
        self.sim = Simulator.from_scene({"ground": {"friction": scene.friction},
                                         "gravity": list(scene.gravity), "models": models},
                                        dt=dt, **options)
        self.count = len(scene.bodies)

    def step(self) -> None:
        info = self.sim.step()
        if not info.converged:
            raise RuntimeError(info.message)

    def positions(self) -> np.ndarray:
        return np.array([self.sim.q[7 * k:7 * k + 3] for k in range(self.count)])


def ours_contact(scene: Scene, dt: float):
    """Our engine for a contact scene (the compliant integrator), None when it is not there."""
    return OursScene(scene, dt) if "compliant" in INTEGRATORS else None


def ours_status() -> str | None:
    """None when the hook is wired (our rows are measured), else why our rows read n/a."""
    if ours_contact(box_scene(0.5), 1e-3) is not None:
        return None
    return OURS_NOT_WIRED if "compliant" in INTEGRATORS else OURS_NOT_LANDED


def scene_engines() -> dict:
    """label -> factory(scene, dt): ours when the hook is wired, and the installed peers."""
    engines = {label: cls for label, (module, cls) in PEERS.items() if available(module)}
    return engines if ours_status() else {"ours compliant": ours_contact, **engines}


def simulate(engine, seconds: float, dt: float) -> tuple[np.ndarray, float]:
    """Positions after every step (steps, bodies, 3) and the median over the steps of the
    time of one step (us; the read-out of the positions not included). Per-step medians,
    rather than blocks of steps, keep the other jobs of a shared machine out of the figure
    for slow and fast engines alike."""
    steps = int(round(seconds / dt))
    out = np.empty((steps, len(engine.positions()), 3))
    times = per_call(engine.step, steps, after=lambda k: out.__setitem__(k, engine.positions()))
    return out, (float(np.median(times)) * 1e6 if steps else float("nan"))


def box_scene(mu: float) -> Scene:
    gravity = (float(G * np.sin(THETA)), 0.0, float(-G * np.cos(THETA)))
    return Scene((Body("box", (0.1, 0.1, 0.05), 1.0, (0.0, 0.0, 0.05)),), mu, gravity)


def analytic_slide(mu: float) -> float:
    """Acceleration down the slope of a box released at rest (0 when friction holds it)."""
    return max(0.0, G * (np.sin(THETA) - mu * np.cos(THETA)))


def measured_slide(x: np.ndarray, dt: float) -> float:
    """Least-squares a of x = x0 + v0 t + a t^2 / 2 over the second half of the run."""
    t = np.arange(1, x.size + 1) * dt
    half = x.size // 2
    return float(np.polyfit(t[half:], x[half:], 2)[0] * 2.0)


def inclined_box(peers: dict, seconds: float, dt: float = 1e-3) -> dict:
    """label -> {mu: (measured a, analytic a, step us)}."""
    out = {}
    for label, cls in peers.items():
        out[label] = {}
        for mu in FRICTIONS:
            path, us = simulate(cls(box_scene(mu), dt), seconds, dt)
            out[label][mu] = (measured_slide(path[:, 0, 0], dt), analytic_slide(mu), us)
    return out


def stack_scene(n: int = 5, radius: float = 0.1) -> Scene:
    return Scene(tuple(Body("sphere", (radius,), 1.0, (0.0, 0.0, radius * (1 + 2 * k)))
                       for k in range(n)), 0.5)


@dataclass
class StackResult:
    stable: bool
    displacement: float  # m, largest distance of a sphere from its start at the end
    penetration: float  # m, deepest overlap (ground or neighbour) over the last half
    step_us: float


def sphere_stack(cls, seconds: float, dt: float) -> StackResult:
    scene = stack_scene()
    radius = scene.bodies[0].size[0]
    start = np.array([b.position for b in scene.bodies])
    path, us = simulate(cls(scene, dt), seconds, dt)
    late = path[path.shape[0] // 2:]
    ground = radius - late[:, 0, 2]
    pairs = 2 * radius - np.linalg.norm(np.diff(late, axis=1), axis=2)
    displacement = float(np.linalg.norm(path[-1] - start, axis=1).max())
    finite = bool(np.all(np.isfinite(path)))
    return StackResult(finite and displacement < radius / 2, displacement if finite else np.inf,
                       float(max(ground.max(), pairs.max(), 0.0)) if finite else np.inf, us)


def contact_workloads(quick: bool) -> dict:
    """Every contact workload for the installed peers (and our status line)."""
    from peers.quadruped import quadruped

    peers = scene_engines()
    seconds = 0.5 if quick else 1.0
    results = {"ours": ours_status(), "box": inclined_box(peers, seconds), "stack": {}}
    for dt in (1e-3, 1e-2):
        results["stack"][dt] = {label: sphere_stack(cls, 0.5 if quick else 2.0, dt)
                                for label, cls in peers.items()}
    results["quadruped"] = quadruped(quick)
    return results


def summary_lines(results: dict) -> list[str]:
    """One line per contact workload: each peer, and ours."""
    lines = []
    ours = f" | ours {results['ours']}" if results["ours"] else ""
    box = results["box"]
    cells = " | ".join(
        f"{label} max |a - a*| {max(abs(m - a) for m, a, _ in row.values()):.2f} m/s^2, "
        f"{statistics.median(us for *_, us in row.values()):.1f} us"
        for label, row in box.items())
    lines.append(f"contact inclined box (mu {', '.join(map(str, FRICTIONS))}): {cells}{ours}")
    for dt, row in results["stack"].items():
        cells = " | ".join(f"{label} {'stable' if r.stable else 'FELL'} "
                           f"pen {r.penetration * 1e3:.2f} mm {r.step_us:.1f} us"
                           for label, r in row.items())
        lines.append(f"contact sphere stack dt {dt * 1e3:g} ms: {cells}{ours}")
    quad = results["quadruped"]
    cells = " | ".join(f"{label} slip {r.slip * 1e3:.2f} mm {r.step_us:.1f} us"
                       for label, r in quad.items())
    lines.append(f"contact solo12 standing: {cells}{quadruped_ratios(quad)}")
    return lines


def quadruped_ratios(quad: dict) -> str:
    """" || ours compliant / best peer: step, slip; best ours / best peer: step", or "" when
    either side is missing. Best: the smallest figure among the peers (or among ours)."""
    ours = {k: r for k, r in quad.items() if k.startswith("ours")}
    peers = {k: r for k, r in quad.items() if not k.startswith("ours")}
    if not (ours and peers):
        return ""
    step = min(r.step_us for r in peers.values())
    slip = min(r.slip for r in peers.values())
    out = " ||"
    if "ours compliant" in ours:
        r = ours["ours compliant"]
        out += f" ours compliant / best peer: step {r.step_us / step:.3g}, slip " \
               f"{r.slip / slip:.3g};"
    return out + f" best ours / best peer: step {min(r.step_us for r in ours.values()) / step:.3g}"
