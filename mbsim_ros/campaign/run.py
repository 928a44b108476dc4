"""One run: (spec, campaign seed, run seed) -> a table row, pure (no Ray, no files): draw the
parameters, build the run's own Simulator, drive it with the controller through the command
delay, push, sense, judge. ``Prepared`` holds what the runs of one spec share in one process
(the loaded model and scene, the trajectory, the checked names), made once per worker."""
from __future__ import annotations

import hashlib
import json
import math
import time
from pathlib import Path

import numpy as np

from ..actuators import Actuators
from ..build import Simulated, load_simulated, start_configuration
from ..model.closures import urdf_frames
from ..model.resources import resolve_urdf
from ..recording import Recorder
from ..schema import SchemaError, nearest
from ..sensors import SensorSuite
from ..sensors.config import Encoders, parse_encoders, parse_sensors
from . import ticks
from .apply import make_run_simulator
from .checks import CHECKS, CONTROLLER, Monitor
from .controllers import CommandLine, ControllerFailure, import_callable, joint_dofs, \
    load_trajectory, make_controller
from .sampling import SENSOR_SEED, Names, sample
from .spec import METRICS, SOURCE, CampaignSpec, load_spec

RESULT_COLUMNS = ("passed", "failed_check", "failed_at", "failed_value", "message", "steps")
LOG_KEY = "controller_log"  # a row's controller output: DIR/logs/seed-S.log, not a column


class Prepared:
    """A spec checked against its model, with what every run of it shares (read-only)."""

    def __init__(self, spec: CampaignSpec, data: dict) -> None:
        self.spec, self.data = spec, data
        try:
            self.urdf = None if spec.urdf is None else str(resolve_urdf(spec.urdf, None))
            self.simulated: Simulated = load_simulated(scene=spec.scene, urdf=self.urdf,
                                                       floating_base=spec.floating_base)
            self.q0 = start_configuration(self.simulated, spec.initial_positions)
        except ValueError as exc:
            where = "scene" if spec.scene is not None else "urdf"
            raise SchemaError(SOURCE, [f"{where}: {exc}"]) from None
        model = self.simulated.model
        self.names = Names(joints=list(joint_dofs(model)), bodies=list(model.body_names))
        self.links = self._links()
        self.trajectory = None
        problems = self._check_names() + self._check_controller() + self._check_sensors()
        if problems:
            raise SchemaError(SOURCE, problems)
        checks = spec.checks
        self.feet = None if checks.only_feet_touch is None \
            else sorted({self.links[name] for name in checks.only_feet_touch.feet})
        tracking = checks.tracking_rms or checks.tracking_max
        self.tracked = None if tracking is None or tracking.joints is None \
            else [joint_dofs(model)[name][1] for name in tracking.joints]
        self.metric_names = [m for m in METRICS if m in spec.metrics or m in {
            CHECKS[c][0] for c in CHECKS if getattr(checks, c) is not None}]

    def _links(self) -> dict[str, int]:
        """Link name -> body index: the bodies, and the scene's collision links (a link fixed
        to a body, Solo's FL_FOOT, is that body)."""
        links = {name: k for k, name in enumerate(self.simulated.model.body_names)}
        scene = self.simulated.scene
        if scene is not None:
            for name, body in zip(scene.shapes.link, scene.shapes.body):
                if body >= 0:
                    links.setdefault(name, int(body))
        return links

    def _check_names(self) -> list[str]:
        spec, joints = self.spec, self.names.joints
        found = []
        randomize = spec.randomize
        for key in ("joint_positions", "joint_velocities", "joint_damping", "joint_friction",
                    "armature"):
            entry = getattr(randomize, key)
            found += _unknown(f"randomize.{key}.joints", entry and entry.joints, joints, "joint")
        for key in ("link_mass", "link_inertia"):
            entry = getattr(randomize, key)
            found += _unknown(f"randomize.{key}.links", entry and entry.links,
                              self.names.bodies, "link")
        for k, push in enumerate(randomize.pushes):
            found += _unknown(f"randomize.pushes[{k}].link", [push.link], list(self.links),
                              "link")
        controller = spec.controller
        for key in ("kp", "kd", "posture"):
            value = getattr(controller, key)
            if isinstance(value, dict):
                found += _unknown(f"controller.{key}", list(value), joints, "joint")
        for key in ("tracking_rms", "tracking_max"):
            entry = getattr(spec.checks, key)
            found += _unknown(f"checks.{key}.joints", entry and entry.joints, joints, "joint")
        feet = spec.checks.only_feet_touch
        found += _unknown("checks.only_feet_touch.feet", feet and feet.feet, list(self.links),
                          "link")
        if spec.checks.base_height or spec.checks.base_tilt or randomize.base_position \
                or randomize.base_orientation:
            if "free_flyer" not in self.simulated.model.joint_kinds:
                found.append("checks / randomize: base_* needs a floating base")
        return found

    def _check_controller(self) -> list[str]:
        controller = self.spec.controller
        try:
            if controller.type == "python":
                import_callable(controller.function)
            elif controller.type == "trajectory":
                self.trajectory = load_trajectory(controller.file)
        except (OSError, ValueError) as exc:
            key = "function" if controller.type == "python" else "file"
            return [f"controller.{key}: {exc}"]
        if self.trajectory is not None:
            return _unknown("controller.file", list(self.trajectory[1]), self.names.joints,
                            "joint")
        return []

    def _check_sensors(self) -> list[str]:
        sensors = self.spec.sensors
        if sensors is None:
            return []
        try:
            self.devices(0)
            parse_encoders(sensors.encoders) if sensors.encoders else None
        except ValueError as exc:
            return [f"sensors: {exc}"]
        return []

    def devices(self, seed: int | None) -> list:
        """The sensors parsed afresh (each device its own seed, seed + k, when given)."""
        model, spec = self.simulated.model, self.spec
        frames = urdf_frames(self.urdf, floating_base=spec.floating_base) if self.urdf \
            else None
        devices = parse_sensors([dict(d) for d in spec.sensors.devices], model, spec.dt, frames)
        for k, device in enumerate(devices if seed is not None else ()):
            device.seed = seed + k
        return devices

    def encoders(self, seed: int | None) -> Encoders | None:
        """The encoders parsed afresh (None: none); when ``seed`` is given their noise is
        seeded after the devices' (seed + the number of devices), as each device's is."""
        encoders = parse_encoders(self.spec.sensors.encoders)
        if encoders is not None and seed is not None:
            encoders.seed = seed + len(self.spec.sensors.devices)
        return encoders


def _unknown(where: str, given, valid: list[str], what: str) -> list[str]:
    """One problem per name in ``given`` that is not in ``valid``, worded as a SchemaError's."""
    out = []
    for name in given or ():
        if name not in valid:
            guess = nearest(name, valid)
            out.append(f"{where}: no {what} named {name!r}; valid: {', '.join(valid)}"
                       + (f" (did you mean {guess}?)" if guess else ""))
    return out


_PREPARED: dict[str, Prepared] = {}


def spec_digest(data: dict) -> str:
    """A digest of a spec mapping (its canonical JSON): the key of a campaign's identity."""
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def prepared(data: dict) -> Prepared:
    """The Prepared of a spec mapping, made once per process."""
    key = spec_digest(data)
    if key not in _PREPARED:
        spec, data = load_spec(data)
        _PREPARED[key] = Prepared(spec, data)
    return _PREPARED[key]


def run(prep: Prepared, campaign_seed: int, seed: int, record: str | Path | None = None,
        compiled: bool = True) -> dict:
    """One run's row: seed, the drawn parameters, the metrics, passed, the first failed check
    (its time and value), the message of a solver failure or an exception, steps done and
    wall time. ``record``: an MCAP file to record the run into (mbsim_ros.recording: the
    state, the sensors and the efforts applied, every step). ``compiled``: the steps in one
    compiled loop where the run allows it (ticks.py; False: a Python loop over sim.step, the
    same row)."""
    began = time.perf_counter()
    params = sample(prep.spec, prep.names, campaign_seed, seed)
    row: dict = {"seed": int(seed), **params}
    log = None
    try:
        monitor, steps, message, log = _simulate(prep, params, record, seed, compiled)
    except Exception as exc:  # noqa: BLE001 - a run that raises is a failed run, named
        monitor, steps, message = None, 0, f"{type(exc).__name__}: {exc}"
    if monitor is None:
        row.update({m: math.nan for m in prep.metric_names})
        failed = ("exception", 0.0, math.nan)
    else:
        metrics = monitor.metrics()
        row.update({m: metrics[m] for m in prep.metric_names})
        failed = monitor.failed
    row.update({"passed": failed is None, "failed_check": failed[0] if failed else "",
                "failed_at": failed[1] if failed else math.nan,
                "failed_value": failed[2] if failed else math.nan, "message": message,
                "steps": steps, "wall_time": time.perf_counter() - began})
    if log is not None:
        row[LOG_KEY] = log
    return row


def _simulate(prep: Prepared, params: dict, record, seed: int,
              compiled: bool = True) -> tuple[Monitor, int, str, str | None]:
    """(the judged run, its steps, the message of what stopped it, the controller process's
    output: None for an in-process controller)."""
    spec = prep.spec
    sim = _simulator(prep, params)
    sensor_seed = params.get(SENSOR_SEED)  # drawn only with randomize.sensor_noise
    suite = SensorSuite(sim, prep.devices(sensor_seed), prep.encoders(sensor_seed)) \
        if spec.sensors is not None else None
    monitor = Monitor(spec, sim.model, prep.feet, prep.tracked)
    controller = _controller(prep, sim, seed)
    try:
        message = _drive(prep, params, sim, suite, controller, monitor, record, compiled)
    finally:
        controller.close(failed=monitor.failed is not None and monitor.failed[0] == CONTROLLER)
    return monitor, sim.steps, message, getattr(controller, "log", None)


def _controller(prep: Prepared, sim, seed: int):
    spec = prep.spec
    if spec.controller.type == "ros":
        from .ros_controller import RosController

        return RosController(spec.controller, sim.model, prep.q0, spec_digest(prep.data), seed,
                             prep.simulated.robot_description())
    return make_controller(spec.controller, sim.model, prep.q0, spec.dt, spec.duration,
                           prep.trajectory)


def _drive(prep: Prepared, params: dict, sim, suite, controller, monitor: Monitor,
           record, compiled: bool = True) -> str:
    """Step the run to its end (or its failure), judging each step; the failure's message.
    ``compiled``: through ticks.drive where it takes the run."""
    spec = prep.spec
    try:
        controller.attach(sim, suite)
    except ControllerFailure as exc:
        monitor.fail_controller(sim.t)
        return str(exc)
    line = CommandLine(sim.model.nv, int(round(params.get("delay", 0.0) / spec.dt)))
    monitor.start(sim)
    decimation = max(1, int(round(1.0 / (spec.controller.rate * spec.dt)))) \
        if spec.controller.rate else 1
    pushes = Pushes(spec, params)
    steps = int(round(spec.duration / spec.dt))
    if compiled and ticks.takes(sim, suite, controller, record):
        message = ticks.drive(sim, controller, line, monitor, pushes, decimation, steps)
        monitor.finish(sim.t)
        return message
    message, command = "", None
    recorder = None if record is None else Recorder(record, sim, suite=suite)
    for k in range(steps):
        pushes.apply(sim, k * spec.dt)
        if k % decimation == 0:
            try:
                command = controller(k, sim, suite)
            except ControllerFailure as exc:
                monitor.fail_controller(sim.t)
                message = str(exc)
                break
        info = sim.step(line.apply(command, sim))
        if not info.converged:
            if info.departure is not None:  # the divergence guard refused the step
                monitor.fail_diverged(info.departure)
            else:
                monitor.fail_solver(sim.t)
            message = info.message
            break
        if suite is not None:
            suite.update()
        monitor.observe(sim, command.q_target, controller.tracked)
        if recorder is not None:
            recorder.record({"effort": sim.effort})
    if recorder is not None:
        recorder.close()
    monitor.finish(sim.t)
    return message


def _simulator(prep: Prepared, params: dict):
    spec = prep.spec
    sim = make_run_simulator(prep.simulated, prep.q0, spec.integrator, spec.dt,
                             dict(spec.integrator_options), params)
    if "lag" in params:
        sim.actuators = Actuators(sim.model, spec.dt,
                                  bandwidth={name: params["lag"] for name in prep.names.joints})
        sim.reset()
    return sim


class Pushes:
    """The drawn pushes: each link's wrench set at its start and cleared at its end."""

    def __init__(self, spec: CampaignSpec, params: dict) -> None:
        self.items = []
        for k, push in enumerate(spec.randomize.pushes):
            p = {key: params[f"push[{k}].{key}"] for key in
                 ("start", "duration", "fx", "fy", "fz", "tx", "ty", "tz")}
            self.items.append((push.link, p["start"], p["start"] + p["duration"],
                               np.array([p["fx"], p["fy"], p["fz"]]),
                               np.array([p["tx"], p["ty"], p["tz"]]), np.array(push.point)))
        self._on = [False] * len(self.items)

    def apply(self, sim, t: float) -> None:
        for k, (link, start, end, force, torque, point) in enumerate(self.items):
            on = start <= t < end
            if on and not self._on[k]:
                sim.set_wrench(_body_name(sim, link), force, torque, point)
            elif self._on[k] and not on:
                sim.clear_wrench(_body_name(sim, link))
            self._on[k] = on


def _body_name(sim, link: str) -> str:
    """The body a link belongs to (a collision link fixed to a body names that body)."""
    if link in sim.model.body_names:
        return link
    shapes = sim.scene.shapes
    return sim.model.body_names[int(shapes.body[shapes.link.index(link)])]
