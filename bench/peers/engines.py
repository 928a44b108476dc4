"""Each engine behind one small interface, on a Description (bench/peers/models.py):
``reset(q, v)``, ``step()``, ``state() -> (q, v)`` in our joint order, and ``own_energy()``,
the engine's own kinetic + gravitational energy computed from its own model (what the agreement
check compares). Every engine is stepped from Python, one call per step.

Defaults that would make the peers dissipative are switched off: PyBullet's link damping (0.04)
and its velocity motors, its 100 rad/s joint-speed clamp; DART's and MuJoCo's joint damping,
spring, friction and armature (zero in the files and set to zero again here).
"""
from __future__ import annotations

import importlib
import os
import tempfile
from typing import Callable

import numpy as np

from mbsim_ros import Simulator
from mbsim_ros.dynamics import energy as our_energy

from peers.models import Description, mjcf, urdf


PYBULLET_MAX_DOF = 128


class Unsupported(Exception):
    """An engine cannot run this model (the message says why); its cell reads n/a."""


class Engine:
    """One engine and integrator on one model (the interface; see the module docstring)."""

    label = "engine"

    def reset(self, q: np.ndarray, v: np.ndarray) -> None:
        raise NotImplementedError

    def step(self) -> None:
        raise NotImplementedError

    def state(self) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def own_energy(self) -> float:
        raise NotImplementedError

    # Contact workloads (peers only): a free-flyer root's position, joint efforts held over the
    # next step, world positions of the description's contact spheres.
    def place_root(self, position) -> None:
        raise NotImplementedError

    def apply(self, tau: np.ndarray) -> None:
        raise NotImplementedError

    def points(self) -> np.ndarray:
        raise NotImplementedError


class Ours(Engine):
    def __init__(self, desc: Description, dt: float, integrator: str = "variational",
                 **options) -> None:
        order = options.get("order", 2)
        suffix = " Suzuki" if options.get("composition") == "suzuki" else ""
        self.label = "ours Euler" if integrator == "euler" \
            else f"ours variational o{order}{suffix}"
        self.sim = Simulator(desc.model(), dt, integrator, **options)

    def reset(self, q, v):
        self.sim.reset(q, v)

    def step(self):
        if not self.sim.step().converged:
            raise FloatingPointError(self.sim.failed.message)

    def state(self):
        return np.array(self.sim.q), np.array(self.sim.v)

    def own_energy(self):
        return self.sim.energy()


class Pinocchio(Engine):
    """ABA + semi-implicit Euler (v += dt a; q = q (+) dt v)."""

    label = "pinocchio ABA+Euler"

    def __init__(self, desc: Description, dt: float) -> None:
        import pinocchio as pin

        self.pin, self.dt = pin, dt
        self.model = pin.buildModelFromXML(urdf(desc))
        self.data = self.model.createData()
        self.zero = np.zeros(self.model.nv)
        self.q, self.v = pin.neutral(self.model), np.zeros(self.model.nv)
        self.index = [self.model.joints[self.model.getJointId(j.name)].idx_q for j in desc.hinges]

    def reset(self, q, v):
        self.q[self.index], self.v[self.index] = q, v

    def step(self):
        pin = self.pin
        self.v += self.dt * pin.aba(self.model, self.data, self.q, self.v, self.zero)
        self.q = pin.integrate(self.model, self.q, self.dt * self.v)

    def state(self):
        return self.q[self.index].copy(), self.v[self.index].copy()

    def own_energy(self):
        pin = self.pin
        return (pin.computeKineticEnergy(self.model, self.data, self.q, self.v)
                + pin.computePotentialEnergy(self.model, self.data, self.q))


class MuJoCo(Engine):
    """integrator: "Euler" (semi-implicit), "RK4", "implicitfast"."""

    def __init__(self, desc: Description, dt: float, integrator: str) -> None:
        import mujoco

        self.mj = mujoco
        self.label = f"MuJoCo {integrator}"
        self.model = mujoco.MjModel.from_xml_string(mjcf(desc, dt, integrator))
        self.data = mujoco.MjData(self.model)
        self.qadr = [self.model.jnt_qposadr[self.model.joint(j.name).id] for j in desc.hinges]
        self.vadr = [self.model.jnt_dofadr[self.model.joint(j.name).id] for j in desc.hinges]
        self.root = self.model.jnt_qposadr[self.model.joint(desc.joints[0].name).id]
        self.geoms = [self.model.geom(f"{body}_sphere{n}").id
                      for n, (body, _, _) in enumerate(desc.spheres)]

    def reset(self, q, v):
        self.mj.mj_resetData(self.model, self.data)
        self.data.qpos[self.qadr], self.data.qvel[self.vadr] = q, v
        self.mj.mj_forward(self.model, self.data)

    def step(self):
        self.mj.mj_step(self.model, self.data)

    def state(self):
        return self.data.qpos[self.qadr].copy(), self.data.qvel[self.vadr].copy()

    def own_energy(self):
        mj, opt = self.mj, self.model.opt
        flags = opt.enableflags
        opt.enableflags = flags | int(mj.mjtEnableBit.mjENBL_ENERGY)
        mj.mj_forward(self.model, self.data)
        opt.enableflags = flags
        return float(self.data.energy.sum())

    def place_root(self, position):
        self.data.qpos[self.root:self.root + 7] = [*position, 1.0, 0.0, 0.0, 0.0]
        self.mj.mj_forward(self.model, self.data)

    def apply(self, tau):
        self.data.qfrc_applied[self.vadr] = tau

    def points(self):
        return self.data.geom_xpos[self.geoms].copy()


class PyBullet(Engine):
    """btMultiBody (reduced coordinates) in a DIRECT client, its default solver settings."""

    label = "PyBullet"

    def __init__(self, desc: Description, dt: float) -> None:
        import pybullet as p

        if desc.nv > PYBULLET_MAX_DOF:
            raise Unsupported(f"PyBullet's API reports at most {PYBULLET_MAX_DOF} joint states "
                              f"(MAX_DEGREE_OF_FREEDOM); {desc.name} has {desc.nv}")
        self.p = p
        self.client = p.connect(p.DIRECT)
        p.setGravity(*desc.gravity, physicsClientId=self.client)
        p.setPhysicsEngineParameter(fixedTimeStep=dt, numSubSteps=0, physicsClientId=self.client)
        with tempfile.NamedTemporaryFile("w", suffix=".urdf", delete=False) as f:
            f.write(urdf(desc))
        try:
            self.body = p.loadURDF(f.name, useFixedBase=not desc.floating,
                                   flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=self.client)
        finally:
            os.unlink(f.name)
        infos = [p.getJointInfo(self.body, k, physicsClientId=self.client)
                 for k in range(p.getNumJoints(self.body, physicsClientId=self.client))]
        names, links = [i[1].decode() for i in infos], [i[12].decode() for i in infos]
        self.index = [names.index(j.name) for j in desc.hinges]
        self.spheres = [(links.index(body), np.array(centre)) for body, centre, _ in desc.spheres]
        for k in [-1] + self.index:
            p.changeDynamics(self.body, k, linearDamping=0.0, angularDamping=0.0,
                             jointDamping=0.0, maxJointVelocity=1e4, physicsClientId=self.client)
        p.setJointMotorControlArray(self.body, self.index, p.VELOCITY_CONTROL,
                                    forces=[0.0] * len(self.index), physicsClientId=self.client)
        self.gravity = np.array(desc.gravity)

    def __del__(self):
        if getattr(self, "client", None) is not None and self.p.isConnected(self.client):
            self.p.disconnect(self.client)

    def reset(self, q, v):
        for k, qk, vk in zip(self.index, q, v):
            self.p.resetJointState(self.body, k, float(qk), float(vk), physicsClientId=self.client)

    def step(self):
        self.p.stepSimulation(physicsClientId=self.client)

    def state(self):
        states = self.p.getJointStates(self.body, self.index, physicsClientId=self.client)
        return np.array([s[0] for s in states]), np.array([s[1] for s in states])

    def own_energy(self):
        """From PyBullet's link states (centre-of-mass frames) and its own masses and
        principal inertias."""
        p, total = self.p, 0.0
        links = p.getLinkStates(self.body, self.index, computeLinkVelocity=1,
                                computeForwardKinematics=1, physicsClientId=self.client)
        for k, link in zip(self.index, links):
            info = p.getDynamicsInfo(self.body, k, physicsClientId=self.client)
            mass, inertia = info[0], np.array(info[2])
            R = np.array(p.getMatrixFromQuaternion(link[1])).reshape(3, 3)
            w = R.T @ np.array(link[7])
            total += 0.5 * mass * np.dot(link[6], link[6]) + 0.5 * w @ (inertia * w)
            total -= mass * self.gravity @ np.array(link[0])
        return float(total)

    def place_root(self, position):
        self.p.resetBasePositionAndOrientation(self.body, position, (0.0, 0.0, 0.0, 1.0),
                                               physicsClientId=self.client)

    def apply(self, tau):
        self.p.setJointMotorControlArray(self.body, self.index, self.p.TORQUE_CONTROL,
                                         forces=tau, physicsClientId=self.client)

    def points(self):
        out = []
        for link, centre in self.spheres:
            state = self.p.getLinkState(self.body, link, computeForwardKinematics=1,
                                        physicsClientId=self.client)
            R = np.array(self.p.getMatrixFromQuaternion(state[5])).reshape(3, 3)
            out.append(np.array(state[4]) + R @ centre)
        return np.array(out)


class Dart(Engine):
    """dartpy's World: semi-implicit Euler (6.x on PyPI has no variational integrator)."""

    label = "DART"

    def __init__(self, desc: Description, dt: float) -> None:
        import dartpy as dart

        loader = dart.utils.DartLoader()
        options = loader.getOptions()
        options.mDefaultRootJointType = dart.utils.DartLoaderRootJointType.FLOATING \
            if desc.floating else dart.utils.DartLoaderRootJointType.FIXED
        loader.setOptions(options)
        self.skel = loader.parseSkeletonString(urdf(desc), "")
        for k in range(self.skel.getNumJoints()):
            joint = self.skel.getJoint(k)
            joint.setLimitEnforcement(False)
            for d in range(joint.getNumDofs()):
                joint.setDampingCoefficient(d, 0.0)
                joint.setSpringStiffness(d, 0.0)
                joint.setCoulombFriction(d, 0.0)
        self.world = dart.simulation.World()
        self.world.setGravity(np.array(desc.gravity))
        self.world.setTimeStep(dt)
        self.world.addSkeleton(self.skel)
        self.index = [self.skel.getJoint(j.name).getIndexInSkeleton(0) for j in desc.hinges]
        self.spheres = [(self.skel.getBodyNode(body), np.append(centre, 1.0))
                        for body, centre, _ in desc.spheres]

    def reset(self, q, v):
        positions, velocities = self.skel.getPositions(), np.zeros(self.skel.getNumDofs())
        positions[self.index], velocities[self.index] = q, v
        self.skel.setPositions(positions)
        self.skel.setVelocities(velocities)

    def step(self):
        self.world.step()

    def state(self):
        return self.skel.getPositions()[self.index], self.skel.getVelocities()[self.index]

    def own_energy(self):
        return float(self.skel.computeKineticEnergy() + self.skel.computePotentialEnergy())

    def place_root(self, position):
        positions = self.skel.getPositions()
        positions[:6] = [0.0, 0.0, 0.0, *position]  # FreeJoint: rotation vector, translation
        self.skel.setPositions(positions)

    def apply(self, tau):
        forces = np.zeros(self.skel.getNumDofs())
        forces[self.index] = tau
        self.skel.setForces(forces)

    def points(self):
        return np.array([(node.getWorldTransform().matrix() @ centre)[:3]
                         for node, centre in self.spheres])


# label -> (module a peer needs, or None for ours; factory(desc, dt) -> Engine)
CONFIGS: dict[str, tuple[str | None, Callable[[Description, float], Engine]]] = {
    "ours variational o2": (None, lambda d, dt: Ours(d, dt)),
    "ours variational o4": (None, lambda d, dt: Ours(d, dt, order=4)),
    "ours variational o4 Suzuki": (None, lambda d, dt: Ours(d, dt, order=4,
                                                            composition="suzuki")),
    "ours Euler": (None, lambda d, dt: Ours(d, dt, "euler", velocity_terms="explicit")),
    "pinocchio ABA+Euler": ("pinocchio", Pinocchio),
    "MuJoCo Euler": ("mujoco", lambda d, dt: MuJoCo(d, dt, "Euler")),
    "MuJoCo RK4": ("mujoco", lambda d, dt: MuJoCo(d, dt, "RK4")),
    "MuJoCo implicitfast": ("mujoco", lambda d, dt: MuJoCo(d, dt, "implicitfast")),
    "PyBullet": ("pybullet", PyBullet),
    "DART": ("dartpy", Dart),
}


def available(module: str | None) -> bool:
    """Whether a peer's Python module imports (ours always does)."""
    if module is None:
        return True
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def installed_configs() -> dict[str, Callable[[Description, float], Engine]]:
    return {label: factory for label, (module, factory) in CONFIGS.items() if available(module)}


def is_ours(label: str) -> bool:
    return label.startswith("ours")


def reference_energy(desc_model, q: np.ndarray, v: np.ndarray) -> float:
    """The one energy function every workload uses: ours, on the description's model."""
    kinetic, potential = our_energy(desc_model, q, v)
    return kinetic + potential
