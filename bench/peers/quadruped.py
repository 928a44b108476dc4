"""The quadruped standing (workload 4): solo12 from example-robot-data, written for every peer
from one description (bench/peers/models.py: our loader's masses and inertias, fixed feet merged
into the lower legs), with a contact sphere at each foot frame and no other collision geometry.
It starts in the SRDF's "standing" posture with the feet on the ground and is held there by a
joint PD loop (the same gains and code for every engine, efforts held over each 1 ms step).
Measured: how far the feet slide on the ground (friction 1) after settling, how deep they sink,
and the cost of a step including the PD loop's state read-out.

Ours runs the same description (its URDF text, spheres included, through our scene loader) on
a ground plane of friction 1 with the scene's default contact material (Hertz, steel), with
the integrators that model contact: "compliant" (with its defaults, whatever they are when this
runs) and the rigid-LCP baseline "rigid" (ODE's model) with each of its solvers.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from mbsim_ros.integrators import INTEGRATORS
from mbsim_ros.model import example_robot_urdf

from peers.contact import dart_ground, pybullet_ground
from peers.engines import Dart, Engine, MuJoCo, PyBullet, available
from peers.models import Description, describe, urdf
from peers.timing import per_call

FOOT_RADIUS = 0.019  # m
FOOT_HEIGHT = 0.01910275  # m: of the foot frames above the ground at the SRDF's base height
STANDING = {"HAA": (0.1, 0.1, -0.1, -0.1), "HFE": 0.8, "KFE": -1.6}  # SRDF "standing"
BASE_HEIGHT = 0.235
KP, KD = 5.0, 0.1  # N m / rad, N m s / rad
DT = 1e-3
TURN = 250  # steps each engine runs before the next takes its turn (quadruped)


def solo12() -> Description:
    source = str(example_robot_urdf("solo12"))
    pm = pin.buildModelFromXML(open(source).read(), pin.JointModelFreeFlyer())
    feet = []
    for leg in ("FL", "FR", "HL", "HR"):
        frame = pm.frames[pm.getFrameId(f"{leg}_FOOT")]
        body = pm.frames[pm.getFrameId(pm.names[frame.parentJoint].replace("KFE", "LOWER_LEG"))]
        feet.append((body.name, tuple(frame.placement.translation), FOOT_RADIUS))
    return describe(source, "solo12", floating_base=True, spheres=feet)


def standing(desc: Description) -> np.ndarray:
    """Joint angles of the SRDF posture; HAA signs: FL, HL +, FR, HR -."""
    q = np.empty(desc.nv)
    for k, joint in enumerate(desc.hinges):
        leg, kind = joint.name.split("_")
        value = STANDING[kind]
        if kind == "HAA":
            value = value[("FL", "HL", "FR", "HR").index(leg)]
        elif leg.startswith("H"):
            value = -value
        q[k] = value
    return q


def start_position() -> tuple[float, float, float]:
    """The base position that puts the feet on the ground in the standing posture."""
    return 0.0, 0.0, BASE_HEIGHT + FOOT_RADIUS - FOOT_HEIGHT


def _mujoco_elliptic(desc: Description) -> MuJoCo:
    """MuJoCo with the friction settings its documentation advises against slip: elliptic
    cones and impratio 10 (the defaults are pyramidal cones and 1)."""
    import mujoco

    engine = MuJoCo(desc, DT, "Euler")
    engine.model.opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    engine.model.opt.impratio = 10.0
    return engine


class OursStanding(Engine):
    """Our Simulator on the description's URDF (written to a temporary file for the scene
    loader) with a ground plane z = 0 of friction 1; `integrator` is one that models contact
    ("compliant" or "rigid"), `options` go to it. The foot-sphere centres are read from
    pinocchio's forward kinematics of our q (same joint order and free-flyer convention)."""

    def __init__(self, desc: Description, integrator: str, **options) -> None:
        from mbsim_ros import Simulator

        text = urdf(desc)
        with tempfile.NamedTemporaryFile("w", suffix=".urdf", delete=False) as f:
            f.write(text)
        try:
            scene = {"ground": {"friction": 1.0},
                     "models": [{"urdf": f.name, "floating_base": True, "name": desc.name}]}
            self.sim = Simulator.from_scene(scene, dt=DT, integrator=integrator, **options)
        finally:
            os.unlink(f.name)
        model = self.sim.model
        if model.nv != desc.nv + 6:
            raise AssertionError(f"{desc.name}: our scene has {model.nv} dofs, expected "
                                 f"{desc.nv + 6}")
        self.pm = pin.buildModelFromXML(text, pin.JointModelFreeFlyer())
        self.pd = self.pm.createData()
        self.frames = [self.pm.getFrameId(body, pin.FrameType.BODY) for body, _, _ in desc.spheres]
        self.centres = [np.array(centre) for _, centre, _ in desc.spheres]
        self.q = self.sim.model.neutral()
        self.v = np.zeros(model.nv)
        self.tau = np.zeros(model.nv)

    def reset(self, q, v):
        self.q[7:], self.v[6:] = q, v
        self.sim.reset(self.q, self.v)

    def place_root(self, position):
        self.q[:] = self.sim.q
        self.q[:7] = [*position, 0.0, 0.0, 0.0, 1.0]  # x, y, z, quaternion x, y, z, w
        self.v[:] = self.sim.v
        self.sim.reset(self.q, self.v)

    def state(self):
        return self.sim.q[7:].copy(), self.sim.v[6:].copy()

    def apply(self, tau):
        self.tau[6:] = tau

    def step(self):
        info = self.sim.step(self.tau)
        if not info.converged:
            raise RuntimeError(f"ours ({self.sim.integrator_name}): {info.message}")

    def points(self):
        pin.framesForwardKinematics(self.pm, self.pd, np.asarray(self.sim.q))
        return np.array([self.pd.oMf[f].act(c) for f, c in zip(self.frames, self.centres)])


# label -> (None: no peer module needed, factory(desc)); rows of an integrator that is not
# registered are left out.
OURS = {label: (None, factory) for label, integrator, factory in (
    ("ours compliant", "compliant", lambda d: OursStanding(d, "compliant")),
    ("ours rigid pgs", "rigid", lambda d: OursStanding(d, "rigid", solver="pgs")),
    ("ours rigid pivoting", "rigid", lambda d: OursStanding(d, "rigid", solver="pivoting")))
    if integrator in INTEGRATORS}

PEERS = {"MuJoCo": ("mujoco", lambda d: MuJoCo(d, DT, "Euler")),
         "MuJoCo elliptic": ("mujoco", _mujoco_elliptic),
         "PyBullet": ("pybullet", lambda d: PyBullet(d, DT)),
         "DART": ("dartpy", lambda d: Dart(d, DT))}


def _with_ground(label: str, engine):
    """MuJoCo's file has its plane; the others get one here. Friction 1 everywhere (PyBullet's
    URDF links default to 0.5, DART's shapes to 1: both set)."""
    if label == "PyBullet":
        import pybullet

        pybullet_ground(pybullet, engine.client)
        for link, _ in engine.spheres:
            pybullet.changeDynamics(engine.body, link, lateralFriction=1.0,
                                    physicsClientId=engine.client)
    elif label == "DART":
        dart_ground(engine.world, 1.0)
        for node, _ in engine.spheres:
            for shape in node.getShapeNodes():
                if shape.hasDynamicsAspect():
                    shape.getDynamicsAspect().setFrictionCoeff(1.0)
    return engine


@dataclass
class Standing:
    slip: float  # m: largest horizontal foot travel from t = 0.5 s to the end
    sink: float  # m: deepest foot penetration into the ground after 0.5 s
    height: float  # m: lowest foot-centre height after 0.5 s (the radius when just touching)
    step_us: float  # median over the steps of one PD loop iteration: state, efforts, step


class StandingRun:
    """One engine's standing run, advanced a piece at a time so that the engines' runs can
    take turns (quadruped): each then meets the machine's other jobs in the same proportion,
    and the ratio of two medians is not decided by what a neighbour did in one engine's
    window."""

    def __init__(self, label: str, factory, desc: Description) -> None:
        self.q_ref = standing(desc)
        self.engine = _with_ground(label, factory(desc))
        self.engine.reset(self.q_ref, np.zeros(desc.nv))
        self.engine.place_root(start_position())
        self.settle = int(round(0.5 / DT))
        self.steps = 0
        self.feet: list[np.ndarray] = []
        self.times: list[np.ndarray] = []

    def control_step(self) -> None:  # the PD loop's iteration: read-out, efforts, step
        q, v = self.engine.state()
        self.engine.apply(KP * (self.q_ref - q) - KD * v)
        self.engine.step()

    def _after(self, _: int) -> None:  # (untimed) the feet after settling
        if self.steps >= self.settle:
            self.feet.append(self.engine.points())
        self.steps += 1

    def advance(self, steps: int) -> None:
        self.times.append(per_call(self.control_step, steps, after=self._after))

    def result(self) -> Standing:
        feet = np.array(self.feet)
        slip = np.linalg.norm(feet[:, :, :2] - feet[0, :, :2], axis=2).max()
        lowest = feet[:, :, 2].min()
        return Standing(float(slip), float(max(0.0, FOOT_RADIUS - lowest)), float(lowest),
                        float(np.median(np.concatenate(self.times))) * 1e6)


def stand(label: str, factory, desc: Description, seconds: float) -> Standing:
    """One engine's standing run of `seconds`, on its own."""
    run = StandingRun(label, factory, desc)
    run.advance(int(round(seconds / DT)))
    return run.result()


ENGINES = {**OURS, **PEERS}


def quadruped(quick: bool) -> dict[str, Standing]:
    """Ours (every contact integrator) and the installed peers, the same run for each; the
    runs take turns in pieces of TURN steps (StandingRun)."""
    desc = solo12()
    runs = {label: StandingRun(label, factory, desc)
            for label, (module, factory) in ENGINES.items() if available(module)}
    steps = int(round((1.0 if quick else 3.0) / DT))
    for _ in range(steps // TURN):
        for run in runs.values():
            run.advance(TURN)
    return {label: run.result() for label, run in runs.items()}
