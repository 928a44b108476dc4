"""The quadruped standing (workload 4): solo12 from example-robot-data, written for every peer
from one description (bench/peer_models.py: our loader's masses and inertias, fixed feet merged
into the lower legs), with a contact sphere at each foot frame and no other collision geometry.
It starts in the SRDF's "standing" posture with the feet on the ground and is held there by a
joint PD loop (the same gains and code for every engine, efforts held over each 1 ms step).
Measured: how far the feet slide on the ground (friction 1) after settling, how deep they sink,
and the cost of a step including the PD loop's state read-out.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from mbsim_ros.model import example_robot_urdf

from peer_contact import dart_ground, pybullet_ground
from peer_engines import Dart, MuJoCo, PyBullet, available
from peer_models import Description, describe

FOOT_RADIUS = 0.019  # m
FOOT_HEIGHT = 0.01910275  # m: of the foot frames above the ground at the SRDF's base height
STANDING = {"HAA": (0.1, 0.1, -0.1, -0.1), "HFE": 0.8, "KFE": -1.6}  # SRDF "standing"
BASE_HEIGHT = 0.235
KP, KD = 5.0, 0.1  # N m / rad, N m s / rad
DT = 1e-3


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
    step_us: float  # median cost of one step with the PD loop


def stand(label: str, factory, desc: Description, seconds: float) -> Standing:
    q_ref = standing(desc)
    engine = _with_ground(label, factory(desc))
    engine.reset(q_ref, np.zeros(desc.nv))
    engine.place_root(start_position())
    steps, settle = int(round(seconds / DT)), int(round(0.5 / DT))
    feet, blocks, start = [], [], time.perf_counter()
    for k in range(steps):
        q, v = engine.state()
        engine.apply(KP * (q_ref - q) - KD * v)
        engine.step()
        if k >= settle:
            feet.append(engine.points())
        if (k + 1) % 50 == 0:
            blocks.append((time.perf_counter() - start) / 50)
            start = time.perf_counter()
    feet = np.array(feet)
    slip = np.linalg.norm(feet[:, :, :2] - feet[0, :, :2], axis=2).max()
    lowest = feet[:, :, 2].min()
    return Standing(float(slip), float(max(0.0, FOOT_RADIUS - lowest)), float(lowest),
                    statistics.median(blocks) * 1e6)


def quadruped(quick: bool) -> dict[str, Standing]:
    desc = solo12()
    return {label: stand(label, factory, desc, 1.0 if quick else 3.0)
            for label, (module, factory) in PEERS.items() if available(module)}
