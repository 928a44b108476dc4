"""What a simulation published while a test advanced it, as numpy arrays: one row per control
tick, the state as the controller heard it on the node's topics and the command it answered.
``TraceRecorder`` fills preallocated rows from the Simulator (the values the link publishes,
read where it reads them: the encoders' readings on joint_states when configured, the true
base, the contact wrenches in each link's axes); ``Trace`` is the result."""
from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

BASE_POSE = ("x", "y", "z", "qx", "qy", "qz", "qw")
BASE_TWIST = ("vx", "vy", "vz", "wx", "wy", "wz")
WRENCH = ("fx", "fy", "fz", "tx", "ty", "tz")


class Columns:
    """A (ticks, columns) array whose columns have names: ``c["FL_KFE"]`` is one column
    (ticks,), ``c[k]`` / ``c[:, j]`` index the array, ``np.asarray(c)`` is the array."""

    def __init__(self, names, values: np.ndarray) -> None:
        self.names = tuple(names)
        self.values = values
        self._index = {name: k for k, name in enumerate(self.names)}

    def __getitem__(self, key):
        if isinstance(key, str):
            try:
                return self.values[:, self._index[key]]
            except KeyError:
                raise KeyError(f"no column {key!r}; columns: {', '.join(self.names)}") from None
        return self.values[key]

    def __array__(self, dtype=None, copy=None):
        return self.values if dtype is None else self.values.astype(dtype)

    def __len__(self) -> int:
        return len(self.values)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.values.shape

    def __repr__(self) -> str:
        return f"Columns({', '.join(self.names)}; {len(self.values)} ticks)"


@dataclass(frozen=True)
class Trace:
    """One row per control tick: the state published at that tick and the command that
    answered it. ``t[0]`` is the simulated time when the advance began; the state after its
    last step is the first row of the next advance.

    - ``t`` (ticks,): simulated seconds (what /clock and the headers said);
    - ``position``, ``velocity``, ``effort``: joint_states by joint name (the encoders'
      readings when the config has encoders; effort: what the joints got in the step before,
      clamped to the URDF's limits, servos included);
    - ``command``: the efforts the controller commanded at each tick, by joint name (clamped;
      its feed-forward with the joint_commands interface);
    - ``base_pose`` (x y z qx qy qz qw, world) and ``base_twist`` (vx vy vz wx wy wz, base
      frame): a floating base's ~/base_pose and ~/base_twist (None without one);
    - ``contact_wrenches``: link -> (ticks, 6) force and torque in the link's axes, torque
      about its origin (~/contact_wrenches/<link>; zero off contact);
    - ``sensors``: sensor name -> (ticks, width), each sensor's last sample (docs/SENSORS.md:
      an IMU's 13 values, a force-torque sensor's 6, a contact switch's 1).
    """

    t: np.ndarray
    position: Columns
    velocity: Columns
    effort: Columns
    command: Columns
    base_pose: Columns | None = None
    base_twist: Columns | None = None
    contact_wrenches: dict[str, Columns] = field(default_factory=dict)
    sensors: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.position.names

    @property
    def base_height(self) -> np.ndarray:
        """The base's z (m), every tick."""
        if self.base_pose is None:
            raise AttributeError("base_height: the model has no floating base")
        return self.base_pose["z"]

    def in_contact(self, link: str) -> np.ndarray:
        """Whether the link touched anything, every tick (its contact force is non-zero)."""
        return np.any(np.asarray(self.contact_wrenches[link])[:, :3] != 0.0, axis=1)

    def __len__(self) -> int:
        return len(self.t)

    @classmethod
    def concatenate(cls, traces: list["Trace"]) -> "Trace":
        """The traces one after the other (of one simulation)."""
        if len(traces) == 1:
            return traces[0]

        def joined(values):
            if isinstance(values[0], Columns):
                return Columns(values[0].names, np.concatenate([np.asarray(v) for v in values]))
            return np.concatenate(values)

        out = {}
        for spec in fields(cls):
            values = [getattr(trace, spec.name) for trace in traces]
            if values[0] is None:
                out[spec.name] = None
            elif isinstance(values[0], dict):
                out[spec.name] = {key: joined([v[key] for v in values]) for key in values[0]}
            else:
                out[spec.name] = joined(values)
        return cls(**out)


class TraceRecorder:
    """Rows of a Trace filled from a Simulator (and its SensorSuite) at each tick, before the
    step (what the link publishes then) and with the command that answered."""

    def __init__(self, sim, joints, contact_bodies: list[int], suite, ticks: int) -> None:
        self.sim, self.suite, self.joints = sim, suite, joints
        model = sim.model
        self.row = 0
        self.t = np.zeros(ticks)
        n = len(joints)
        self.position, self.velocity, self.effort, self.command = (
            np.zeros((ticks, n)) for _ in range(4))
        free = [i for i, kind in enumerate(model.joint_kinds) if kind == "free_flyer"]
        self.base = None if len(free) != 1 else (int(model.idx_q[free[0]]),
                                                 int(model.idx_v[free[0]]))
        self.base_pose = np.zeros((ticks, 7)) if self.base else None
        self.base_twist = np.zeros((ticks, 6)) if self.base else None
        self.contact_bodies = list(contact_bodies)
        self.links = [model.body_names[b] for b in self.contact_bodies]
        self.wrenches = np.zeros((ticks, len(self.links), 6))
        devices = suite.devices if suite is not None else []
        self.sensor_names = [d.name for d in devices]
        self.sensors = [np.zeros((ticks, suite.reading(k).shape[0]))
                        for k in range(len(devices))]

    def record(self, t_ns: int, command: np.ndarray) -> None:
        """The state published at ``t_ns`` (the Simulator's now) and the command that
        answered it (the CommandSlot's layout: efforts first, nv)."""
        k, sim, suite, joints = self.row, self.sim, self.suite, self.joints
        self.t[k] = t_ns * 1e-9
        q, v = (suite.encoder_q, suite.encoder_v) \
            if suite is not None and suite.encoders is not None else (sim.q, sim.v)
        np.take(q, joints.idx_q, out=self.position[k])
        np.take(v, joints.idx_v, out=self.velocity[k])
        np.take(sim.effort, joints.idx_v, out=self.effort[k])
        np.take(command, joints.idx_v, out=self.command[k])
        if self.base is not None:
            i, j = self.base
            self.base_pose[k] = sim.q[i:i + 7]
            self.base_twist[k] = sim.v[j:j + 6]
        if self.contact_bodies:
            np.take(sim.body_wrenches(axes="body"), self.contact_bodies, axis=0,
                    out=self.wrenches[k])
        for j, values in enumerate(self.sensors):
            values[k] = suite.reading(j)
        self.row += 1

    def trace(self) -> Trace:
        """The rows recorded so far."""
        n, names = self.row, self.joints.names
        return Trace(
            t=self.t[:n],
            position=Columns(names, self.position[:n]),
            velocity=Columns(names, self.velocity[:n]),
            effort=Columns(names, self.effort[:n]),
            command=Columns(names, self.command[:n]),
            base_pose=None if self.base is None else Columns(BASE_POSE, self.base_pose[:n]),
            base_twist=None if self.base is None else Columns(BASE_TWIST, self.base_twist[:n]),
            contact_wrenches={link: Columns(WRENCH, self.wrenches[:n, k])
                              for k, link in enumerate(self.links)},
            sensors={name: values[:n] for name, values in zip(self.sensor_names, self.sensors)})
