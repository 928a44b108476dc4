"""``mbsim_node``: a thin rclpy shell around ``Simulator``.

Two threads. The simulation loop (its own thread) sleeps to absolute deadlines, takes the
latest command from a lock-free slot, steps the Simulator and publishes joint_states and /clock.
The executor (the main thread) serves subscriptions, services and the 1 Hz diagnostics; it
never runs per tick, except in lockstep pacing, where a command's arrival *is* the tick and the
callback steps the simulation itself. ``self._lock`` serialises stepping against reset.
Topics, parameters and semantics: docs/NODE.md.
"""
from __future__ import annotations

import sys
import threading
import time
import warnings

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.callback_groups import CallbackGroup
from rclpy.event_handler import PublisherEventCallbacks
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool, Trigger
from visualization_msgs.msg import MarkerArray

from .._jit import CompilerActivity
from ..actuators import Actuators, CommandDelay
from ..build import load_simulated, make_simulator, start_configuration
from ..config import ConfigError, read_config, resolve_urdf, set_armature
from ..contact.scene import SceneError
from ..dynamics.closures import ConstraintKinematics, project
from ..integrators import INTEGRATORS
from ..model import DEFAULT_ROBOT, LimitWarning, ModelError, shipped_urdf
from ..model.closures import urdf_frames
from ..recording import Recorder, root_frame
from ..sim import Simulator
from .commands import ActuatedJoints, CommandError, CommandSlot, take_command
from .messages import (LEVEL_ERROR, LEVEL_OK, LEVEL_WARN, contact_markers, diagnostic_array,
                       stamp_ns)
from .pacing import Pacer, TickLog, timing_summary
from .parameters import StartupError, declare_settings, integrator_options, unknown_parameters
from .sensors import SensorPublishers, declare_encoder_parameters, sensor_suite
from .shutdown import until_shutdown
from .state_interfaces import StateInterfaces
from .state_outputs import StateOutputs


class PolledGroup(CallbackGroup):
    """A callback group the executor never runs: its subscriptions are read by the simulation
    loop thread with ``take_message`` (3 us when empty) instead of through the executor, whose
    per-callback cost (0.15-0.9 ms here) would hold the GIL against the loop."""

    def can_execute(self, entity) -> bool:
        return False

    def beginning_execution(self, entity) -> bool:
        return False

    def ending_execution(self, entity) -> None:
        pass


class SimulationNode(Node):
    """The simulation node. Construct it after ``rclpy.init``; ``start()`` begins stepping;
    ``stop()`` ends the loop thread. Raises StartupError for a bad model or parameter."""

    def __init__(self, *, keep_ticks: int = 0, **node_kwargs) -> None:
        super().__init__("mbsim", **node_kwargs)
        self.settings = declare_settings(self)
        self.model = self._load_model()
        self._set_armature()
        self.q0 = self._initial_configuration()
        self.sim = self._make_simulator()
        self._set_gains()
        self._set_actuators()
        self._make_sensors()
        self._check_overrides()
        s = self.settings
        self.dt_ns = int(round(s.dt * 1e9))
        self.timeout_ns = int(s.command_timeout * 1e9)
        self.joints = ActuatedJoints(self.model)
        self.slot = CommandSlot(self.model, self.joints, self.sim.servos.gains)
        self.slot.hold_start(self.q0)
        self.command_delay = CommandDelay(self.slot.latest.size, s.actuators_delay_ticks,
                                          fill=self.slot.initial)
        # the command in force (CommandSlot's layout: efforts, targets, interfaces, stamp), and
        # the one applied this tick (delayed by actuators.delay_ticks) with views of its parts
        self._command = np.zeros(self.slot.latest.size)
        self._applied = np.zeros(self.slot.latest.size)
        nv = self.model.nv
        self._applied_parts = tuple(self._applied[k * nv:(k + 1) * nv] for k in range(4))
        self._warm_up()
        unactuated = [n for n, limit in zip(self.joints.names, self.joints.effort_limit)
                      if limit == 0.0]
        if unactuated:
            self.get_logger().warning(f"the URDF gives {', '.join(unactuated)} an effort limit "
                                      f"of 0: commands to them are clamped to zero")
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._running = threading.Event()  # set: the loop steps; clear: paused
        self._lockstep_paused = False
        self._thread: threading.Thread | None = None
        self.t0_ns = 0
        self.ticks = TickLog(keep=keep_ticks)
        self.pacer = Pacer(int(round(1e9 / s.rate_hz)), s.max_catchup)
        self.counters = dict(accepted=0, rejected=0, fallbacks=0, stale_ticks=0)
        self.stale = False
        self.failure = ""
        self.last_rejection = ""
        self._make_interfaces()
        self.recorder = self._make_recorder()
        self._received: list = []  # (topic, message) taken since the last tick, to record
        self.view = self._make_view()
        # what numba loads or compiles from here on (diagnostics): nothing, when construction
        # loaded every kernel a tick can call (docs/SPEED.md)
        self.compiler = CompilerActivity().__enter__()

    # -- start-up ---------------------------------------------------------------------------

    def _load_model(self):
        """What the parameters simulate (build.load_simulated): the scene, or the URDF
        (robot_description text, urdf_path, or the shipped arm) with closures_file's
        closures."""
        s = self.settings
        try:
            if s.scene:
                self.simulated = load_simulated(scene=s.scene)
            else:
                if s.robot_description.strip():
                    source = s.robot_description
                else:
                    source = resolve_urdf(s.urdf_path) if s.urdf_path \
                        else shipped_urdf(DEFAULT_ROBOT)
                closures = read_config(s.closures_file).model_dump()["closures"] \
                    if s.closures_file else None
                self.simulated = load_simulated(urdf=source, floating_base=s.floating_base,
                                                balance_inertia=s.balance_inertia,
                                                closures=closures)
        except SceneError as exc:
            raise StartupError(f"parameter 'scene': {exc}") from None
        except (ModelError, ConfigError, FileNotFoundError) as exc:
            raise StartupError(" ".join(str(exc).split())) from None
        self.scene = self.simulated.scene
        self.closures = self.simulated.closures
        self.urdf_source = self.simulated.urdf_source  # the URDF file or text (not a scene)
        return self.simulated.model

    def _joint_parameters(self, prefix: str, values: np.ndarray, what: str) -> dict:
        """Declare ``<prefix>.<joint>`` (or the prefix with ``<joint>`` replaced: a key like
        ``gains.<joint>.p``; read-only double) for each one-DOF joint, defaults
        ``values`` (indexed like q or v by the caller); their values by joint name."""
        joints = ActuatedJoints(self.model)
        found = {}
        for name, value in zip(joints.names, values):
            key = prefix.replace("<joint>", name) if "<joint>" in prefix else f"{prefix}.{name}"
            descriptor = ParameterDescriptor(description=f"{what} of {name}", read_only=True)
            try:
                found[name] = self.declare_parameter(key, float(value), descriptor).value
            except ParameterException as exc:
                raise StartupError(f"parameter '{key}': {exc}") from None
        return found

    def _set_armature(self) -> None:
        """armature.<joint> (default: the scene's value or 0) into the model."""
        joints = ActuatedJoints(self.model)
        values = self._joint_parameters("armature", self.model.armature[joints.idx_v],
                                        "armature (rotor inertia reflected to the joint; kg m^2 "
                                        "or kg)")
        try:
            set_armature(self.model, values)
        except ConfigError as exc:
            raise StartupError(f"parameter {exc}") from None

    def _set_gains(self) -> None:
        """gains.<joint>.p / .d / .i / .i_clamp (default 0, 0, 0 and the joint's effort limit)
        into the joint servos."""
        joints = ActuatedJoints(self.model)
        units = {"p": "N m/rad or N/m", "d": "N m s/rad or N s/m", "i": "N m/(rad s) or N/(m s)",
                 "i_clamp": "the most effort the integral gives, N m or N"}
        values = {}
        for gain, unit in units.items():
            defaults = joints.effort_limit if gain == "i_clamp" else np.zeros(len(joints))
            found = self._joint_parameters(f"gains.<joint>.{gain}", defaults,
                                           f"servo gain {gain} ({unit})")
            values[gain] = found
        try:
            self.sim.servos.set_gains(**values)
        except ValueError as exc:
            raise StartupError(f"parameter gains: {exc}") from None

    def _set_actuators(self) -> None:
        """actuators.bandwidth.<joint> and actuators.no_load_speed.<joint> (0: none) with the
        delay and velocity-limit switches into the Simulator's actuator models; the node
        delays its whole command itself (targets too), so the models' own delay is 0."""
        joints = ActuatedJoints(self.model)
        per_joint = {}
        for key, what in (("bandwidth", "torque lag bandwidth (Hz; 0: none)"),
                          ("no_load_speed", "no-load speed of the torque-speed curve (rad/s "
                                            "or m/s; 0: none)")):
            found = self._joint_parameters(f"actuators.{key}", np.zeros(len(joints)), what)
            per_joint[key] = {name: value for name, value in found.items() if value != 0.0}
        s = self.settings
        if not (s.actuators_velocity_limits or any(per_joint.values())):
            return
        try:
            self.sim.actuators = Actuators(self.model, s.dt,
                                           velocity_limits=s.actuators_velocity_limits,
                                           **per_joint)
        except ValueError as exc:
            raise StartupError(f"parameter actuators.{exc}") from None

    def _warm_up(self) -> None:
        """One step under the initial command, then back to the start: binds the compiled step
        now, not on the first tick. Every kernel a later tick can call (contact, impacts,
        limits, a saturating servo, the fallbacks, the sensors, the recorder) is loaded from
        numba's cache when the Simulator, the SensorSuite and the Recorder are built, all
        before the clock starts (a first touchdown stalled 60-150 ms: docs/SPEED.md)."""
        np.copyto(self._applied, self.slot.initial)
        self._step_applied()
        self.sim.reset(self.q0)
        self.sim.servos.release()

    def _step_applied(self):
        """Step the Simulator under self._applied: its interfaces and targets into the servos,
        its efforts as tau (views made once: no allocation per tick)."""
        effort, q_target, v_target, mode = self._applied_parts
        self.sim.servos.load(mode, q_target, v_target)
        return self.sim.step(effort)

    def _initial_configuration(self) -> np.ndarray:
        """The scene's poses (or the neutral configuration) with initial_positions.<joint>,
        clamped into the joint limits (logged, naming the joints)."""
        q = self.scene.q0.copy() if self.scene is not None else self.model.neutral()
        positions = self._joint_parameters("initial_positions",
                                           q[ActuatedJoints(self.model).idx_q],
                                           "initial position (rad or m)")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", LimitWarning)
            try:
                q = start_configuration(self.simulated, positions)
            except ConfigError as exc:
                raise StartupError(str(exc)) from None
        for warning in caught:
            self.get_logger().warning(str(warning.message))
        return q

    def _make_simulator(self) -> Simulator:
        s = self.settings
        options = {}
        for option, default in integrator_options(s.integrator).items():
            key = f"{s.integrator}.{option}"
            descriptor = ParameterDescriptor(
                description=f"option '{option}' of the {s.integrator} integrator", read_only=True)
            try:
                options[option] = self.declare_parameter(key, default, descriptor).value
            except ParameterException as exc:
                raise StartupError(f"parameter '{key}': {exc}") from None
        try:
            sim = make_simulator(self.simulated, self.q0, s.integrator, s.dt, options)
        except ValueError as exc:
            raise StartupError(f"integrator '{s.integrator}': {exc}") from None
        self.q0 = sim.q.copy()  # projected onto the closures
        return sim

    def _make_sensors(self) -> None:
        """The ``sensors_file``'s IMUs, force-torque sensors and contact switches, and the
        ``encoders.*`` parameters (docs/SENSORS.md): self.sensors (None: none) and their
        publishers."""
        try:
            encoders = declare_encoder_parameters(self)
        except ParameterException as exc:
            raise StartupError(f"parameter {exc}") from None
        sensors_file = self.settings.sensors_file
        frames = urdf_frames(self.urdf_source, floating_base=self.settings.floating_base) \
            if self.urdf_source is not None and sensors_file else None
        try:
            self.sensors = sensor_suite(self.sim, sensors_file, encoders, frames)
        except ConfigError as exc:
            where = "parameter" if str(exc).startswith("encoders") else f"{sensors_file}:"
            raise StartupError(f"{where} {exc}") from None
        self.sensor_pubs = None if self.sensors is None else SensorPublishers(
            self, self.sensors, QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))

    def _make_recorder(self) -> Recorder | None:
        """The ``record`` parameter's MCAP recording (None: off): the topics as published
        (joint_states at publish_decimation), the commands as received."""
        s = self.settings
        if not s.record:
            return None
        rate = None if s.publish_decimation == 1 else 1.0 / (s.dt * s.publish_decimation)
        try:
            return Recorder(s.record, self.sim, suite=self.sensors, frame_prefix=s.frame_prefix,
                            rate=rate, root_frame=root_frame(self.simulated),
                            node=self.get_fully_qualified_name())
        except (ValueError, OSError) as exc:
            raise StartupError(f"parameter 'record': {exc}") from None

    def _make_view(self):
        """The ``view`` parameter's live 3D view (None: off): the loop copies q into a buffer
        every round(1 / (30 Hz dt)) ticks; the view's thread reads it and sends."""
        port = self.settings.view
        if not port:
            return None
        from ..view.live import DISPLAY_RATE, LiveView, graph_of

        self._view_every = max(1, round(1.0 / (DISPLAY_RATE * self.settings.dt)))
        self._view_lock = threading.Lock()  # the buffer's: held for a copy of q, never a step
        self._view_q, self._view_shown = self.sim.q.copy(), self.sim.q.copy()
        self._view_t_ns, self._view_fresh = self.t_ns, True
        try:
            view = LiveView(graph_of(self.simulated), self._view_frame, port=port)
        except (ValueError, OSError) as exc:
            raise StartupError(f"parameter 'view': {exc}") from None
        if view.port != port:  # viser moves to the next free port: we promised this one
            view.close()
            raise StartupError(f"parameter 'view': port {port} is in use")
        self.get_logger().info(f"3D view at http://127.0.0.1:{port}")
        return view.start()

    def _offer_view(self) -> None:
        """In the loop, every _view_every ticks: q and t into the view's buffer."""
        with self._view_lock:
            np.copyto(self._view_q, self.sim.q)
            self._view_t_ns, self._view_fresh = self.t_ns, True

    def _view_frame(self):
        """In the view's thread: the loop's last q (None: nothing new), t and, for a scene,
        the last step's contacts (read under the loop's lock, as the contact markers are)."""
        from ..view.live import contacts_of

        with self._view_lock:
            if not self._view_fresh:
                return None
            np.copyto(self._view_shown, self._view_q)
            t_ns, self._view_fresh = self._view_t_ns, False
        contacts = None
        if self.scene is not None:
            with self._lock:
                contacts = contacts_of(self.sim)
        return self._view_shown, t_ns * 1e-9, contacts

    def _record(self) -> None:
        """Write the commands received since the last tick (as received, stamped with the time
        they were taken) and, after the step, the state; with self._lock held."""
        for topic, msg, t_ns in self._received:
            self.recorder.write_serialized(topic, serialize_message(msg), t_ns)
        self._received.clear()  # the same list every tick
        self.recorder.record(t_ns=self.t_ns)

    def _sample_sensors(self) -> None:
        """After a step: read the sensors and publish those due at this step."""
        if self.sensors is not None:
            self.sensors.update()
            self.sensor_pubs.publish(self.t_ns)

    def _reset_sensors(self, noise: bool = True) -> None:
        """After sim.reset: the sensors start from its state (noise: re-seeded, biases zero)."""
        if self.sensors is not None:
            self.sensors.reset(noise)

    def _encoder_readings(self, q: np.ndarray, v: np.ndarray) -> tuple:
        """(q, v) as joint_states shows them: the encoders' readings when configured."""
        if self.sensors is None or self.sensors.encoders is None:
            return q, v
        return self.sensors.encoder_q, self.sensors.encoder_v

    def _check_overrides(self) -> None:
        """A parameter given to the node that it does not declare (a misspelled name, an
        unknown joint or integrator option) is an error naming the nearest declared one."""
        given = getattr(self, "_parameter_overrides", {})
        other_options = {f"{name}.{option}" for name in INTEGRATORS
                         for option in integrator_options(name)}  # valid, not used this run
        lines = unknown_parameters(given, set(self._parameters) | other_options)
        if lines:
            raise StartupError("; ".join(lines))

    def _make_interfaces(self) -> None:
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self.outputs = StateOutputs(
            self, self.sim, self.joints, frame_prefix=self.settings.frame_prefix,
            joint_wrenches=self.settings.publish_joint_wrenches,
            events=PublisherEventCallbacks(matched=self._on_state_subscriber))
        self.base = self.outputs.base
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, "/diagnostics", reliable)
        if self.scene is not None:
            self.marker_pub = self.create_publisher(MarkerArray, "~/contact_markers", reliable)
            self.create_timer(1.0 / 30.0, self._publish_markers)
        # lockstep: the executor delivers commands (each one is a tick); realtime / fast: the
        # loop thread takes them itself right before each step (no executor in the tick path)
        group = None if self.settings.pacing == "lockstep" else PolledGroup()
        subscriptions = [
            (self.create_subscription(Float64MultiArray, "~/effort_commands",
                                      self._on_effort_array, reliable, callback_group=group),
             self._on_effort_array),
            (self.create_subscription(JointState, "~/joint_commands", self._on_joint_commands,
                                      reliable, callback_group=group),
             self._on_joint_commands),
        ]
        self._polled = subscriptions if group is not None else []
        self.create_service(Trigger, "~/reset", self._on_reset)
        self.create_service(SetBool, "~/pause", self._on_pause)
        self.create_service(Trigger, "~/step", self._on_step)
        self.create_timer(self.settings.diagnostics_period, self._publish_diagnostics)
        self._window_start = (time.monotonic_ns(), 0)
        self.state_interfaces = StateInterfaces(self, self.simulated.robot_description())

    # -- the tick ---------------------------------------------------------------------------

    @property
    def t_ns(self) -> int:
        """Simulated time of the current state (integer ns: no accumulated rounding)."""
        return self.t0_ns + self.sim.steps * self.dt_ns

    @property
    def paused(self) -> bool:
        if self.settings.pacing == "lockstep":
            return self._lockstep_paused
        return not self._running.is_set()

    def _advance(self, wake_ns: int = 0) -> bool:
        """One step under the held command, then publish. Call with self._lock held; wake_ns is
        when the tick began (monotonic; default now), recorded for the timing statistics.
        Returns False (and pauses) when the simulation cannot continue."""
        wake_ns = wake_ns or time.monotonic_ns()
        if self._polled:
            self._poll_commands()
        if self.failure:
            return False
        stale = take_command(self.slot, self._command, self.t_ns, self.timeout_ns)
        if stale != self.stale:
            self.stale = stale
            if stale:
                self.get_logger().warning(
                    f"command older than command_timeout ({self.settings.command_timeout} s): "
                    f"applying zero effort")
        self.counters["stale_ticks"] += stale
        np.copyto(self._applied, self.command_delay.push(self._command)
                  if self.command_delay.ticks else self._command)
        info = self._step_applied()
        if not info.converged:
            self.failure = f"stopped at t = {self.t_ns * 1e-9:.6f} s: {info.message}"
            self._running.clear()
            self.get_logger().error(f"simulation {self.failure}; paused (call ~/reset)")
            return False
        self.counters["fallbacks"] += info.fallback
        self.ticks.record(wake_ns, info.iterations)
        self._sample_sensors()
        if self.recorder is not None:
            self._record()
        if self.sim.steps % self.settings.publish_decimation == 0:
            self._publish_state()
        self.outputs.publish_clock(self.t_ns)
        if self.view is not None and self.sim.steps % self._view_every == 0:
            self._offer_view()
        return True

    def _poll_commands(self) -> None:
        """Take, in arrival order, the commands that arrived since the previous step."""
        for subscription, callback in self._polled:
            handle = subscription.handle
            while True:
                with handle:
                    taken = handle.take_message(subscription.msg_type, subscription.raw)
                if taken is None:
                    break
                callback(taken[0])

    def _publish_state(self) -> None:
        self.outputs.publish_state(self.t_ns, self.sim,
                                   *self._encoder_readings(self.sim.q, self.sim.v))

    def _publish_markers(self) -> None:
        with self._lock:
            contacts = self.sim.contacts()
            t_ns = self.t_ns
        self.marker_pub.publish(contact_markers(t_ns, contacts))

    def _loop(self) -> None:
        try:
            self._run_loop()
        except Exception:  # noqa: BLE001 - at shutdown, rcl invalidates publishers under us
            if not (self._stop.is_set() or not self.context.ok()):
                raise

    def _run_loop(self) -> None:
        realtime = self.settings.pacing == "realtime"
        pacer = self.pacer
        pacer.start()
        while not self._stop.is_set():
            if not self._running.is_set():
                self._running.wait(0.05)
                pacer.start()
                continue
            wake_ns = pacer.wait() if realtime else time.monotonic_ns()
            with self._lock:
                self._advance(wake_ns)

    # -- life cycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Publish the initial state and clock; start stepping (not in lockstep)."""
        with self._lock:
            self.outputs.publish_clock(self.t_ns)
            self._publish_state()
            if self.recorder is not None:
                self.recorder.record(t_ns=self.t_ns)
        if self.settings.pacing == "lockstep":
            return
        if self.settings.pacing == "fast":
            sys.setswitchinterval(2e-4)  # let the executor thread in between steps
        self._running.set()
        self._thread = threading.Thread(target=self._loop, name="mbsim-loop", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the loop thread (idempotent)."""
        self._stop.set()
        self._running.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)

    def destroy_node(self) -> None:
        self.stop()  # rclpy's shutdown destroys nodes first: stop publishing before that
        self.close_recording()
        view, self.view = getattr(self, "view", None), None
        if view is not None:
            view.close()
        compiler, self.compiler = getattr(self, "compiler", None), None
        if compiler is not None:
            compiler.__exit__(None, None, None)
        super().destroy_node()

    def close_recording(self) -> None:
        """Finalise the ``record`` file (idempotent; after stop(): no tick writes any more).
        A node whose start-up failed may have none yet."""
        recorder = getattr(self, "recorder", None)
        if recorder is not None:
            with self._lock:
                recorder.close()

    # -- subscriptions ------------------------------------------------------------------------

    def _reject(self, reason: str) -> None:
        self.counters["rejected"] += 1
        self.last_rejection = reason
        self.get_logger().warning(f"command rejected: {reason}; the last good command stays",
                                  throttle_duration_sec=1.0)

    def _lockstep_tick(self) -> None:
        """In lockstep, every received command (accepted or not) advances one step."""
        if self.settings.pacing == "lockstep" and not self._lockstep_paused:
            with self._lock:
                self._advance()

    def _received_command(self, topic: str, msg) -> None:
        """Keep a received command for the recording (written at the next tick)."""
        if self.recorder is not None:
            self._received.append((topic, msg, self.t_ns))

    def _on_effort_array(self, msg: Float64MultiArray) -> None:
        self._received_command("~/effort_commands", msg)
        try:
            self.slot.put_array(msg.data, self.t_ns)
            self.counters["accepted"] += 1
        except CommandError as exc:
            self._reject(f"~/effort_commands: {exc}")
        self._lockstep_tick()

    def _on_joint_commands(self, msg: JointState) -> None:
        self._received_command("~/joint_commands", msg)
        stamp = stamp_ns(msg.header.stamp)
        try:
            self.slot.put_joint_state(msg.name, msg.position, msg.velocity, msg.effort,
                                      stamp if stamp > 0 else self.t_ns)
            self.counters["accepted"] += 1
        except CommandError as exc:
            self._reject(f"~/joint_commands: {exc}")
        self._lockstep_tick()

    def _on_state_subscriber(self, info) -> None:
        """A new joint_states subscriber: in lockstep it may be a controller waiting for its
        first state, so the current one is published again (same stamp; /clock is not)."""
        if self.settings.pacing == "lockstep" and info.current_count_change > 0:
            with self._lock:
                self._publish_state()

    # -- services ---------------------------------------------------------------------------

    def _on_reset(self, request, response):
        with self._lock:
            t_ns = 0 if self.settings.clock_on_reset == "restart" else self.t_ns
            self.sim.reset(self.q0)
            self._reset_sensors()
            self.t0_ns = t_ns
            self.slot.clear()
            self.command_delay.reset(fill=self.slot.initial)
            self._command[:] = 0.0
            self.sim.servos.release()
            self.failure = ""
            self.stale = False
            if self.settings.clock_on_reset == "restart":
                self.outputs.publish_clock(self.t_ns)
            if self.settings.pacing == "lockstep":
                self._publish_state()
        response.success = True
        response.message = f"reset to the initial state at t = {self.t_ns * 1e-9:.6f} s"
        return response

    def _on_pause(self, request, response):
        pause = bool(request.data)
        if not pause and self.failure:
            response.success = False
            response.message = f"cannot resume: {self.failure}; call ~/reset"
            return response
        if self.settings.pacing == "lockstep":
            self._lockstep_paused = pause
        elif pause:
            self._running.clear()
        else:
            self._running.set()
        response.success = True
        response.message = "paused" if pause else "running"
        return response

    def _on_step(self, request, response):
        if self.settings.pacing != "lockstep" and not self.paused:
            response.success = False
            response.message = "the simulation is running; pause it first (~/pause true)"
            return response
        with self._lock:
            ok = self._advance()
        response.success = ok
        response.message = (f"t = {self.t_ns * 1e-9:.6f} s" if ok else self.failure)
        return response

    # -- the robot's description and setting its state (state_interfaces.py) ---------------

    def restart_from(self, write) -> str:
        """While paused: ``write(q, v)`` into copies of the current state (it raises
        CommandError to refuse), then continue from them at the current time. q is clamped
        into the joint limits (a LimitWarning names the joints) and projected onto the
        closures; the servos' integrals restart, the command in force stays, a divergence is
        forgotten. The state is published at once; /clock is not (time did not move)."""
        with self._lock:
            if not self.paused:
                raise CommandError("the simulation is running; pause it first (~/pause true)")
            q, v = self.sim.q.copy(), self.sim.v.copy()
            write(q, v)
            if self.closures:
                q = project(ConstraintKinematics(self.model), self.closures, q)[0]
            t_ns = self.t_ns
            try:
                self.sim.reset(q, v)  # checks before it changes anything
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            self._reset_sensors(noise=False)
            self.t0_ns = t_ns
            self.failure = ""
            self._publish_state()
        return f"state set at t = {t_ns * 1e-9:.6f} s"

    # -- diagnostics --------------------------------------------------------------------------

    def status(self) -> tuple[int, str, dict]:
        """(level, message, values) over the window since the previous call."""
        now = time.monotonic_ns()
        wall0, steps0 = self._window_start
        self._window_start = (now, self.sim.steps)
        times, iterations = self.ticks.since(wall0)
        timing = timing_summary(times, self.pacer.period_ns)
        wall = (now - wall0) * 1e-9
        sim_advanced = max(self.sim.steps - steps0, 0) * self.settings.dt
        values = {
            "pacing": self.settings.pacing, "integrator": self.settings.integrator,
            "sim_time_s": f"{self.t_ns * 1e-9:.6f}", "steps": self.sim.steps,
            "rate_hz": f"{(times.shape[0] / wall) if wall > 0 else 0.0:.2f}",
            "real_time_factor": f"{sim_advanced / wall if wall > 0 else 0.0:.4f}",
            "period_error_p50_ms": f"{timing['p50_s'] * 1e3:.3f}",
            "period_error_p99_ms": f"{timing['p99_s'] * 1e3:.3f}",
            "period_error_max_ms": f"{timing['max_s'] * 1e3:.3f}",
            "missed_ticks": self.pacer.missed,
            "solver_iterations_mean": f"{iterations.mean() if iterations.size else 0.0:.2f}",
            "solver_iterations_max": int(iterations.max()) if iterations.size else 0,
            "solver_fallbacks": self.counters["fallbacks"],
            "commands_accepted": self.counters["accepted"],
            "commands_rejected": self.counters["rejected"],
            "last_rejection": self.last_rejection,
            "command_stale": self.stale, "stale_ticks": self.counters["stale_ticks"],
            "kernels_loaded": self.compiler.loads, "kernels_compiled": self.compiler.compiles,
        }
        if self.failure:
            return LEVEL_ERROR, f"simulation {self.failure}", values
        if self.stale:
            return LEVEL_WARN, "command timed out: applying zero effort", values
        return LEVEL_OK, "paused" if self.paused else "running", values

    def _publish_diagnostics(self) -> None:
        level, message, values = self.status()
        name = self.get_fully_qualified_name().lstrip("/")  # with the namespace: left/mbsim
        self.diagnostics_pub.publish(diagnostic_array(
            self.t_ns, f"{name}: simulation", self.model.name, level, message, values))
        if self.settings.print_status:
            self.get_logger().info(
                f"t {values['sim_time_s']} s | rate {values['rate_hz']} Hz | RTF "
                f"{values['real_time_factor']} | period error p99 "
                f"{values['period_error_p99_ms']} ms | missed {values['missed_ticks']} | "
                f"iterations {values['solver_iterations_mean']} | {message}")


def main(args: list[str] | None = None) -> int:
    """Run the node until SIGINT / SIGTERM (exit 0); a bad start-up exits 1 with one line."""
    rclpy.init(args=args)
    node = None
    try:
        with until_shutdown():
            try:
                node = SimulationNode()
            except StartupError as exc:
                print(f"mbsim_node: error: {exc}", file=sys.stderr)
                return 1
            node.start()
            executor = rclpy.executors.SingleThreadedExecutor()
            executor.add_node(node)
            executor.spin()
    finally:
        if node is not None:
            node.stop()
            node.destroy_node()
        rclpy.try_shutdown()
    return 0
