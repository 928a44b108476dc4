"""SensorSuite: the simulated sensors of one Simulator, read after each step into preallocated
arrays (docs/SENSORS.md). No allocation per tick: one compiled pass for the true IMU and
force-torque readings, one for their noise, one for the encoders; a numpy Generator per sensor
(seeded: a run repeats bit for bit) fills preallocated standard-normal buffers."""
from __future__ import annotations

import math

import numpy as np

from .._jit import load_cached
from ..model.model import ConfigError
from ..dynamics.workspace import workspace_size
from ..model.constraints import Attachment
from ..model.model import PRISMATIC
from .config import (ContactSwitch, Encoders, ForceTorque, Imu, Sensor, parse_encoders,
                     parse_sensors)
from .kernels import (FRAMES_DUE, IMU_NOISE, IMU_ROW, SWITCHES_DUE, contact_switches,
                      due_flags, encoder_readings, imu_noise, sensor_truth, wrench_noise)


class SensorSuite:
    """The sensors of ``sim``: ``SensorSuite(sim, sensors, encoders=None, frames=None)`` with
    a config's ``sensors:`` list and ``encoders:`` mapping (or parsed Imu / ForceTorque /
    ContactSwitch / Encoders); ``frames``: the links they may name (default: the model's
    bodies; ``model.closures.urdf_frames(urdf)`` adds a URDF's fixed links). Call
    ``update()`` after every step and ``reset()`` after ``sim.reset``.

    ``devices``: the sensors, IMUs first, then force-torque, then contact; ``devices[k]``
    samples at the steps where ``due[k]`` (every ``decimation`` steps from the reset) and
    ``reading(k)`` is its last sample: an IMU's row of 13 (position, quaternion x y z w
    world <- sensor, angular velocity and specific force in the sensor frame), a force-torque
    sensor's wrench (6, joint frame), a contact switch's flag (1 bool). ``encoder_q`` /
    ``encoder_v``: q and v as the encoders read them (free-flyer entries true), every step.
    """

    # the compiled functions update() and reset() call, loaded at construction (as a
    # Simulator loads its integrator's: none is loaded at a later step)
    kernels = (due_flags, sensor_truth, imu_noise, wrench_noise, contact_switches,
               encoder_readings)

    def __init__(self, sim, sensors=(), encoders=None,
                 frames: dict[str, Attachment] | None = None) -> None:
        model = sim.model
        self.sim = sim
        parsed = [d for d in sensors if isinstance(d, Sensor)]
        if len(parsed) != len(sensors):
            parsed = parse_sensors(list(sensors), model, sim.dt, frames)
        self.imus = [d for d in parsed if isinstance(d, Imu)]
        self.wrench_sensors = [d for d in parsed if isinstance(d, ForceTorque)]
        self.switches = [d for d in parsed if isinstance(d, ContactSwitch)]
        self.devices = self.imus + self.wrench_sensors + self.switches
        self.encoders = encoders if isinstance(encoders, Encoders) or encoders is None \
            else parse_encoders(encoders)
        if self.encoders is not None and not self.encoders.active:
            self.encoders = None
        if self.switches and sim.scene is None:
            raise ConfigError(f"sensors: contact sensor '{self.switches[0].name}' needs a "
                              f"scene (contacts) and a contact integrator")
        self.due = np.zeros(len(self.devices), dtype=np.bool_)
        self._decimation = np.array([d.decimation for d in self.devices], dtype=np.int64)
        self._make_imus(sim.dt)
        self._make_wrench_sensors()
        self._make_switches(sim)
        self._make_encoders(model)
        self._ws = np.zeros(workspace_size(model.njoints, model.nv))
        load_cached(self.kernels)
        joints = [d.joint for d in self.imus] + [model.njoints - 1] * bool(self.wrench_sensors)
        self._count = max(joints, default=-1) + 1
        integrator = sim.integrator
        self._from_reactions = bool(getattr(integrator, "constraints", ()) or
                                    getattr(integrator, "springs", ()) or
                                    getattr(integrator, "forces", ()))
        self._body_wrenches = sim.body_wrenches if sim.scene is not None else None
        self._no_contact = np.zeros((model.njoints, 6))
        # read-only views of the Simulator's state arrays, which it updates in place
        self._state = (sim.q, sim.v, sim.acceleration)
        self._updated = None
        self.reset()

    # -- construction -------------------------------------------------------------------------

    def _make_imus(self, dt: float) -> None:
        n = len(self.imus)
        self._imu_joint = np.array([d.joint for d in self.imus], dtype=np.int64)
        self._imu_mount = np.zeros((n, 12))
        self._imu_white = np.zeros((n, 3))
        self._imu_walk = np.zeros((n, 2))
        for k, d in enumerate(self.imus):
            self._imu_mount[k, :9] = d.rotation.ravel()
            self._imu_mount[k, 9:] = d.position
            period = d.decimation * dt
            self._imu_white[k] = (d.orientation_noise,
                                  d.gyroscope_noise_density / math.sqrt(period),
                                  d.accelerometer_noise_density / math.sqrt(period))
            self._imu_walk[k] = (d.gyroscope_random_walk * math.sqrt(period),
                                 d.accelerometer_random_walk * math.sqrt(period))
        self.imu_truth = np.zeros((n, IMU_ROW))
        self.imu_readings = np.zeros((n, IMU_ROW))
        self.imu_bias = np.zeros((n, 6))
        self._imu_z = np.zeros((n, IMU_NOISE))
        self._imu_due = self.due[:n]
        self._imu_noisy = [k for k in range(n)
                           if self._imu_white[k].any() or self._imu_walk[k].any()]

    def _make_wrench_sensors(self) -> None:
        m, first = len(self.wrench_sensors), len(self.imus)
        self._ft_joint = np.array([d.joint for d in self.wrench_sensors], dtype=np.int64)
        self._ft_std = np.array([np.concatenate([d.force_noise, d.torque_noise])
                                 for d in self.wrench_sensors]).reshape((m, 6))
        self.wrench_truth = np.zeros((m, 6))
        self.wrench_readings = np.zeros((m, 6))
        self._ft_z = np.zeros((m, 6))
        self._ft_due = self.due[first:first + m]
        self._ft_noisy = [k for k in range(m) if self._ft_std[k].any()]
        self._frame_sensors = first + m

    def _make_switches(self, sim) -> None:
        bodies = {int(b) for b in sim.scene.shapes.body} if sim.scene is not None else set()
        for d in self.switches:
            if d.body not in bodies:
                raise ConfigError(f"sensors: contact sensor '{d.name}': link '{d.link}' has "
                                  f"no collision shapes in the scene")
        self._switch_body = np.array([d.body for d in self.switches], dtype=np.int64)
        self._threshold2 = np.array([d.threshold ** 2 for d in self.switches])
        self.in_contact = np.zeros(len(self.switches), dtype=np.bool_)
        self._switch_due = self.due[len(self.devices) - len(self.switches):]

    def _make_encoders(self, model) -> None:
        one_dof = [i for i, kind in enumerate(model.joint_kinds) if kind != "free_flyer"]
        self._enc_q = np.array([model.idx_q[i] for i in one_dof], dtype=np.int64)
        self._enc_v = np.array([model.idx_v[i] for i in one_dof], dtype=np.int64)
        e = self.encoders or Encoders()
        self._enc_resolution = np.array([
            (1.0 / e.counts_per_metre if e.counts_per_metre else 0.0)
            if model.joint_type[i] == PRISMATIC else
            (2.0 * math.pi / e.counts_per_revolution if e.counts_per_revolution else 0.0)
            for i in one_dof])
        self._enc_std = np.array([e.noise, e.velocity_noise])
        self._enc_noisy = bool(self._enc_std.any())
        self._enc_z = np.zeros(2 * len(one_dof))
        self._ring_q = np.zeros((e.delay_ticks + 1, len(one_dof)))
        self._ring_v = np.zeros((e.delay_ticks + 1, len(one_dof)))
        self._head = np.zeros(1, dtype=np.int64)
        self.encoder_q = np.zeros(model.nq)
        self.encoder_v = np.zeros(model.nv)

    # -- per step -----------------------------------------------------------------------------

    def reading(self, k: int) -> np.ndarray:
        """devices[k]'s last sample (a view, refilled in place)."""
        imus, wrenches = len(self.imus), len(self.wrench_sensors)
        if k < imus:
            return self.imu_readings[k]
        if k < imus + wrenches:
            return self.wrench_readings[k - imus]
        return self.in_contact[k - imus - wrenches:k - imus - wrenches + 1]

    def reset(self, noise: bool = True) -> None:
        """Start again from the Simulator's current state (after ``sim.reset``): the encoders'
        delay line full of it and read; the IMU and force-torque readings the true ones of the
        state (the reset's zero acceleration), contact switches off; the first samples come
        ``decimation`` steps later. ``noise``: also restart the noise, biases zero and seeded
        generators re-seeded (a run after a reset repeats the first); False keeps both (a
        state set from outside does not reset an IMU's bias)."""
        if noise:
            self._generators = [np.random.default_rng(d.seed) for d in self.devices]
            self._encoder_generator = np.random.default_rng(
                self.encoders.seed if self.encoders else None)
            self.imu_bias[:] = 0.0
        self.in_contact[:] = False
        self.due[:] = False
        sim = self.sim
        if self._frame_sensors:
            self._truth(sim, self._no_contact)  # the integrator's contacts are the old state's
            self.imu_readings[:] = self.imu_truth
            self.wrench_readings[:] = self.wrench_truth
        self._ring_q[:] = sim.q[self._enc_q]
        self._ring_v[:] = sim.v[self._enc_v]
        self._head[0] = 0
        if self.encoders is not None:
            self._sample_encoders(sim)
        self._updated = (sim.steps, sim.t)

    def update(self) -> None:
        """Sample the sensors due at the Simulator's current step (once per step: a second
        call at the same step does nothing)."""
        sim = self.sim
        stamp = (sim.steps, sim.t)
        if stamp == self._updated:
            return
        self._updated = stamp
        flags = due_flags(sim.steps, self._decimation, self._frame_sensors, self.due)
        if flags & FRAMES_DUE:
            self._sample_frames(sim)
        if flags & SWITCHES_DUE:
            self._sample_switches()
        if self.encoders is not None:
            self._sample_encoders(sim)

    def _sample_frames(self, sim) -> None:
        self._truth(sim, self._body_wrenches() if self._body_wrenches is not None
                    else self._no_contact)
        for k in self._imu_noisy:
            if self._imu_due[k]:
                self._generators[k].standard_normal(out=self._imu_z[k])
        imu_noise(self.imu_truth, self._imu_due, self._imu_z, self._imu_white, self._imu_walk,
                  self.imu_bias, self.imu_readings)
        first = len(self.imus)
        for m in self._ft_noisy:
            if self._ft_due[m]:
                self._generators[first + m].standard_normal(out=self._ft_z[m])
        wrench_noise(self.wrench_truth, self._ft_due, self._ft_z, self._ft_std,
                     self.wrench_readings)

    def _truth(self, sim, contact: np.ndarray) -> None:
        """The true IMU and force-torque readings of the current state; contact: the contact
        wrench on each body (joints, 6)."""
        model = sim.model
        q, v, a = self._state
        sensor_truth(model.joint_int, model.joint_real, model.gravity, q, v, a, self._ws,
                     self._count, contact, self._imu_joint,
                     self._imu_mount, self.imu_truth, self._ft_joint, self.wrench_truth)
        if self._from_reactions and self.wrench_sensors:
            wrenches = sim.joint_wrenches()  # closures, springs, applied forces (slow path)
            for m, d in enumerate(self.wrench_sensors):
                self.wrench_truth[m] = wrenches[d.joint_name]

    def _sample_switches(self) -> None:
        contact_switches(self._body_wrenches(), self._switch_body, self._threshold2,
                         self._switch_due, self.in_contact)

    def _sample_encoders(self, sim) -> None:
        if self._enc_noisy:
            self._encoder_generator.standard_normal(out=self._enc_z)
        q, v, _ = self._state
        encoder_readings(q, v, self._enc_q, self._enc_v, self._enc_resolution,
                         self._enc_std, self._enc_z, self._ring_q, self._ring_v, self._head,
                         self.encoder_q, self.encoder_v)
